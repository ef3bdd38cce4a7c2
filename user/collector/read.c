// SPDX-License-Identifier: GPL-2.0
/*
 * A slot's figures read from the maps (charging live threads first, at most once per
 * REFRESH_NS), its aggregates handed out, and the collector's own counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector/collector.h"
#include "collector/collector_int.h"
#include "model/figures.h"
#include "model/net_figures.h"
#include "taskprobe.skel.h"

/*
 * Live threads are charged what they ran and waited when the task iterator runs
 * (tp_iter_charge), and threads of a task without state adopted: once per REFRESH_NS
 * however many tasks are read, at a sync, and when a cgroup with processes in it is
 * tracked. One pass costs ~0.2-0.3 us per thread on the host.
 */
#define REFRESH_NS 20000000ull

int coll__refresh(struct collector *c)
{
	struct bpf_link *l = c->skel->links.tp_iter_charge;
	char buf[64];
	ssize_t n;
	int fd;

	if (!l)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(l));
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	c->refreshed_ns = coll_mono_ns();
	return (int)n;
}

_Static_assert(sizeof(struct tp_cpu_stats) % 8 == 0 && sizeof(struct tp_io_stats) % 8 == 0,
	       "per-CPU figures are __u64 only (sum_percpu)");

/* Sum a per-CPU map's values, made of __u64 only, into out (size bytes). */
static int sum_percpu(struct collector *c, struct bpf_map *map, __u32 key, void *out, size_t size)
{
	const __u64 *v = c->percpu_buf;
	__u64 *sum = out;
	size_t n = size / sizeof(__u64);
	/* libbpf lays the CPUs' values out 8-byte aligned. */
	size_t stride = (size + 7) / 8;

	if (bpf_map_lookup_elem(bpf_map__fd(map), &key, c->percpu_buf))
		return -errno;
	memset(out, 0, size);
	for (int cpu = 0; cpu < c->ncpus; cpu++)
		for (size_t i = 0; i < n; i++)
			sum[i] += v[(size_t)cpu * stride + i];
	return 0;
}

int collector__read(struct collector *c, int slot, struct task_figures *out)
{
	struct tp_net_stats ns;
	__u32 key = (__u32)slot;
	int fd;

	memset(out, 0, sizeof(*out));
	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	if (coll_mono_ns() - c->refreshed_ns > REFRESH_NS)
		coll__refresh(c);
	if (sum_percpu(c, c->skel->maps.cpu_stats, key, &out->cpu, sizeof(out->cpu)) ||
	    sum_percpu(c, c->skel->maps.io_stats, key, &out->io, sizeof(out->io)))
		return -errno;
	fd = bpf_map__fd(c->skel->maps.proc_stats);
	if (bpf_map_lookup_elem(fd, &key, &out->proc))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.ioac_stats), &key, &out->ioac))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.mem_stats), &key, &out->mem))
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.net_stats), &key, &ns))
		return -errno;
	out->net_rx_bytes = ns.tcp.rx_bytes;
	out->net_tx_bytes = ns.tcp.tx_bytes;
	out->events_received = c->slots[slot].events;
	return 0;
}

__s64 collector__take_peak(struct collector *c, int slot)
{
	struct tp_mem_stats ms;
	__u32 key = (__u32)slot;
	__s64 peak = 0, now;
	int fd;

	if (!coll__slot_ok(c, slot))
		return 0;
	fd = bpf_map__fd(c->skel->maps.phase_peak);

	if (bpf_map_lookup_elem(fd, &key, &peak) ||
	    bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.mem_stats), &key, &ms))
		return 0;
	now = ms.rss_bytes > 0 ? ms.rss_bytes : 0;
	bpf_map_update_elem(fd, &key, &now, 0);
	return peak > now ? peak : now;
}

const struct program_stat *collector__programs(const struct collector *c, int slot, size_t *n)
{
	if (!coll__slot_ok(c, slot)) {
		*n = 0;
		return NULL;
	}
	*n = c->slots[slot].nprogs;
	return c->slots[slot].progs;
}

const struct notes *collector__notes(const struct collector *c, int slot)
{
	static const struct notes none;

	if (!coll__slot_ok(c, slot))
		return &none;
	return &c->slots[slot].notes;
}

/* The endpoint rows of one use of a slot, read in one walk of the table. */
struct ep_list {
	struct tp_endpoint_key *keys;
	struct tp_net_counters *vals;
	size_t n;
};

static void ep_list_free(struct ep_list *l)
{
	free(l->keys);
	free(l->vals);
}

static int read_endpoints(struct collector *c, __u32 slot, __u32 gen, struct ep_list *l)
{
	int fd = bpf_map__fd(c->skel->maps.endpoints);
	struct tp_endpoint_key key, next;
	struct tp_net_counters v;
	int err = bpf_map_get_next_key(fd, NULL, &next);

	memset(l, 0, sizeof(*l));
	while (!err) {
		key = next;
		err = bpf_map_get_next_key(fd, &key, &next);
		if (key.slot != slot || key.gen != gen || bpf_map_lookup_elem(fd, &key, &v))
			continue;
		if (!coll_grow((void **)&l->keys, l->n, sizeof(*l->keys)) ||
		    !coll_grow((void **)&l->vals, l->n, sizeof(*l->vals))) {
			ep_list_free(l);
			return -ENOMEM;
		}
		l->keys[l->n] = key;
		l->vals[l->n++] = v;
	}
	return 0;
}

void coll__delete_endpoints(struct collector *c, __u32 slot, __u32 gen)
{
	struct ep_list l;

	if (read_endpoints(c, slot, gen, &l))
		return;
	for (size_t i = 0; i < l.n; i++)
		bpf_map_delete_elem(bpf_map__fd(c->skel->maps.endpoints), &l.keys[i]);
	ep_list_free(&l);
}

/* Requests still waiting on the task's HTTP connections: one walk of the table. */
static void add_unanswered(struct collector *c, __u32 slot, __u32 gen, struct net_figures *nf)
{
	int fd = bpf_map__fd(c->skel->maps.http_conns);
	struct tp_http_key key, next;
	struct tp_http_conn hc;
	char host[TP_HTTP_HOST_LEN];
	int err = bpf_map_get_next_key(fd, NULL, &next);

	while (!err) {
		key = next;
		err = bpf_map_get_next_key(fd, &key, &next);
		if (bpf_map_lookup_elem(fd, &key, &hc) || hc.slot != slot || hc.gen != gen ||
		    !hc.pending)
			continue;
		memcpy(host, hc.host, sizeof(host));
		host[sizeof(host) - 1] = '\0';
		/* Its headers came: answered, by its status (the client went, unread). */
		if (hc.headers && hc.status) {
			net_figures__add_answered(nf, host, hc.host_cut, hc.status);
			hc.pending--;
		}
		if (hc.pending)
			net_figures__add_unanswered(nf, host, hc.host_cut, hc.pending);
	}
}

int collector__net(struct collector *c, int slot, const struct http_ports *ports,
		   struct net_figures *out)
{
	struct tp_net_stats st;
	struct ep_list l;
	__u32 key = (__u32)slot;
	struct slot *s;
	int err;

	memset(out, 0, sizeof(*out));
	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	s = &c->slots[slot];
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.net_stats), &key, &st))
		return -errno;
	err = read_endpoints(c, key, s->gen, &l);
	if (err)
		return err;
	err = net_figures__build(out, &st, l.keys, l.vals, l.n, &s->net, ports);
	ep_list_free(&l);
	if (!err)
		add_unanswered(c, key, s->gen, out);
	return err;
}

void collector__prog_stats(struct collector *c, collector_prog_fn fn, void *ctx)
{
	struct bpf_program *prog;

	if (!c)
		return;

	bpf_object__for_each_program(prog, c->skel->obj)
	{
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);
		struct collector_prog_stat st;

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		st.name = bpf_program__name(prog);
		st.run_time_ns = info.run_time_ns;
		st.run_cnt = info.run_cnt;
		st.recursion_misses = info.recursion_misses;
		fn(ctx, &st);
	}
}

static void add_misses(void *ctx, const struct collector_prog_stat *st)
{
	*(__u64 *)ctx += st->recursion_misses;
}

__u64 collector__skipped_runs(struct collector *c)
{
	__u64 total = 0;

	collector__prog_stats(c, add_misses, &total);
	return total;
}

__u64 collector__lost_total(struct collector *c)
{
	struct tp_global_stats *gs = c ? c->percpu_buf : NULL;
	__u32 zero = 0;
	__u64 total = 0;

	if (!c || bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.global_stats), &zero, gs))
		return 0;
	for (int cpu = 0; cpu < c->ncpus; cpu++)
		total += gs[cpu].lost_events;
	return total;
}
