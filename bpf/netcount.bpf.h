/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The network counters of a task and of its endpoints, shared by the socket programs
 * (net.bpf.c) and the TLS probes (tls.bpf.c, a reset its read came to).
 */
#ifndef TP_NETCOUNT_BPF_H
#define TP_NETCOUNT_BPF_H

#include "maps.bpf.h"

#ifndef E2BIG
#define E2BIG 7
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_net_stats);
} net_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tp_endpoint_key);
	__type(value, struct tp_net_counters);
} endpoints SEC(".maps") __weak;

static __always_inline void add(__u64 *p, __u64 n)
{
	__sync_fetch_and_add(p, n);
}

/* Adds to the task's totals and to the endpoint's row (made on first use). */
#define NET_ADD(ep, field, n)                                                                      \
	do {                                                                                       \
		__u32 __slot = (ep)->slot;                                                         \
		struct tp_net_stats *__ns = bpf_map_lookup_elem(&net_stats, &__slot);              \
		struct tp_net_counters *__c = bpf_map_lookup_elem(&endpoints, (ep));               \
		if (__ns)                                                                          \
			add(&__ns->tcp.field, (n));                                                \
		if (!__c) {                                                                        \
			struct tp_net_counters __z = {};                                           \
			if (bpf_map_update_elem(&endpoints, (ep), &__z, BPF_NOEXIST) == -E2BIG &&  \
			    __ns)                                                                  \
				add(&__ns->endpoints_dropped, 1);                                  \
			__c = bpf_map_lookup_elem(&endpoints, (ep));                               \
		}                                                                                  \
		if (__c)                                                                           \
			add(&__c->field, (n));                                                     \
	} while (0)

#endif /* TP_NETCOUNT_BPF_H */
