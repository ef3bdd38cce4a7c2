// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's life: the BPF programs opened, loaded (or taken over from a
 * collector before us) and attached; task cgroups tracked in slots; all of it freed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/htab.h"
#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "collector/collector_int.h"
#include "collector/uprobe.h"
#include "model/collect_kinds.h"
#include "model/net_figures.h"
#include "model/notes.h"
#include "model/procs.h"
#include "taskprobe.skel.h"

#define DEFAULT_RINGBUF_BYTES (4u << 20)

_Static_assert(sizeof(struct tp_cgroup_info) == 8, "ABI: tp_cgroup_info");
_Static_assert(sizeof(struct tp_event_hdr) == 32, "ABI: tp_event_hdr");
_Static_assert(sizeof(struct tp_exec_event) ==
		       32 + 16 + TP_COMM_LEN + TP_PATH_LEN + 8 + TP_ARGS_LEN,
	       "ABI: tp_exec_event");
_Static_assert(sizeof(struct tp_exit_event) == 32 + 24 + TP_COMM_LEN, "ABI: tp_exit_event");
_Static_assert(sizeof(struct tp_cpu_stats) == (4 + TP_HIST_SLOTS) * 8, "ABI: tp_cpu_stats");
_Static_assert(sizeof(struct tp_proc_stats) == 10 * 8, "ABI: tp_proc_stats");
_Static_assert(sizeof(struct tp_io_stats) == (7 + TP_HIST_SLOTS) * 8, "ABI: tp_io_stats");
_Static_assert(sizeof(struct tp_ioac_stats) == 5 * 8, "ABI: tp_ioac_stats");
_Static_assert(sizeof(struct tp_mem_stats) == 3 * 8, "ABI: tp_mem_stats");
_Static_assert(sizeof(struct tp_net_counters) == (8 + TP_CONN_FAILURE_KINDS) * 8,
	       "ABI: tp_net_counters");
_Static_assert(sizeof(struct tp_net_stats) ==
		       sizeof(struct tp_net_counters) + (7 + TP_HIST_SLOTS) * 8,
	       "ABI: tp_net_stats");
_Static_assert(sizeof(struct tp_endpoint_key) == 32, "ABI: tp_endpoint_key");
_Static_assert(sizeof(struct tp_addr) == 20, "ABI: tp_addr");
_Static_assert(sizeof(struct tp_dns_event) ==
		       32 + 16 + TP_DNS_NAME_LEN + TP_DNS_ADDRS * sizeof(struct tp_addr),
	       "ABI: tp_dns_event");
_Static_assert(sizeof(struct tp_http_event) == 32 + 8 + TP_HTTP_METHOD_LEN + TP_HTTP_HOST_LEN,
	       "ABI: tp_http_event");
_Static_assert(sizeof(struct tp_http_conn) == 56 + TP_HTTP_METHOD_LEN + TP_HTTP_HOST_LEN,
	       "ABI: tp_http_conn");

/* The largest per-CPU value read through percpu_buf. */
#define PERCPU_VALUE_MAX                                                                           \
	(sizeof(struct tp_cpu_stats) > sizeof(struct tp_io_stats) ? sizeof(struct tp_cpu_stats)    \
								  : sizeof(struct tp_io_stats))

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own lines are for -v; our errors say what failed in one line. */
	if (!tp_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/*
 * Does the kernel stamp queued threads (CONFIG_SCHED_INFO)? /proc/PID/schedstat
 * exists exactly then. Checked this way, not through BTF, to keep start-up short:
 * parsing vmlinux BTF costs ~50 ms here, and libbpf parses it once anyway.
 */
static bool kernel_stamps_queueing(void)
{
	return access("/proc/self/schedstat", R_OK) == 0;
}

static void slot_reset(struct slot *s)
{
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(s->skb_links[i]);
	net_acc__fini(&s->net);
	notes__fini(&s->notes);
	procs__fini(&s->done);
	free(s->progs);
	htab__fini(&s->prog_index);
	htab__fini(&s->procs);
	memset(s, 0, sizeof(*s));
}

/* The maps indexed by slot get max_tasks entries: the slot table's size is the config's. */
static int size_slot_maps(struct collector *c)
{
	struct bpf_map *maps[] = { c->skel->maps.cpu_stats, c->skel->maps.proc_stats,
				   c->skel->maps.io_stats,  c->skel->maps.ioac_stats,
				   c->skel->maps.mem_stats, c->skel->maps.phase_peak,
				   c->skel->maps.slot_gen,  c->skel->maps.net_stats };

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		int err = bpf_map__set_max_entries(maps[i], (__u32)c->max_tasks);

		if (err)
			return err;
	}
	return 0;
}

/* What is not collected is not loaded: its programs are neither verified nor attached. */
static void drop_uncollected(struct collector *c)
{
	struct taskprobe_bpf *k = c->skel;
	struct {
		unsigned bit;
		struct bpf_program *p;
	} progs[] = {
		{ COLLECT_RUNQ, k->progs.tp_sched_wakeup },
		{ COLLECT_RUNQ, k->progs.tp_sched_wakeup_new },
		{ COLLECT_IO, k->progs.tp_block_bio_backmerge },
		{ COLLECT_IO, k->progs.tp_block_bio_frontmerge },
		{ COLLECT_IO, k->progs.tp_block_rq_merge },
		{ COLLECT_IO, k->progs.tp_block_io_start },
		{ COLLECT_IO, k->progs.tp_block_rq_complete },
		{ COLLECT_MEM, k->progs.tp_rss_stat },
		{ COLLECT_MEM, k->progs.tp_mark_victim },
		{ COLLECT_NET, k->progs.tp_inet_sock_set_state },
		{ COLLECT_NET, k->progs.tp_inet_sk_error_report },
		{ COLLECT_NET, k->progs.tp_tcp_receive_reset },
		{ COLLECT_NET, k->progs.tp_tcp_send_reset },
		{ COLLECT_NET, k->progs.tp_tcp_retransmit_skb },
		{ COLLECT_NET, k->progs.tp_getaddrinfo },
		{ COLLECT_NET, k->progs.tp_getaddrinfo_ret },
		/* the packets: DNS answers of any resolver (net), plaintext HTTP (http) */
		{ COLLECT_NET, k->progs.tp_http_egress },
		{ COLLECT_NET, k->progs.tp_http_ingress },
		{ COLLECT_HTTP, k->progs.tp_tcp_sendmsg_locked },
		{ COLLECT_HTTP, k->progs.tp_ssl_write },
		{ COLLECT_HTTP, k->progs.tp_ssl_read },
		{ COLLECT_HTTP, k->progs.tp_ssl_read_ex },
		{ COLLECT_HTTP, k->progs.tp_tls_read_ret },
		{ COLLECT_HTTP, k->progs.tp_ssl_free },
		{ COLLECT_HTTP, k->progs.tp_gnutls_send },
		{ COLLECT_HTTP, k->progs.tp_gnutls_recv },
		{ COLLECT_HTTP, k->progs.tp_gnutls_deinit },
	};

	for (size_t i = 0; i < ARRAY_SIZE(progs); i++)
		if (!(c->collect & progs[i].bit))
			bpf_program__set_autoload(progs[i].p, false);
}

int collector__capture_args(struct collector *c, int slot, bool on)
{
	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	c->skel->bss->capture_args[slot] = on;
	return 0;
}

int collector__need_rss(struct collector *c)
{
	struct taskprobe_bpf *k;
	struct bpf_link *l;

	if (!c)
		return 0;
	k = c->skel;
	/* Not loaded (memory not collected), or attached already (maybe adopted). */
	if (!bpf_program__autoload(k->progs.tp_rss_stat) || k->links.tp_rss_stat)
		return 0;
	l = bpf_program__attach(k->progs.tp_rss_stat);
	if (!l)
		return -errno;
	k->links.tp_rss_stat = l;
	return coll__pin_late_link(c, bpf_program__name(k->progs.tp_rss_stat), l);
}

unsigned collector__collects(const struct collector *c)
{
	return c ? c->collect : COLLECT_CGROUP_ONLY;
}

/* Opens, configures and loads the skeleton; the uprobe programs for uprobe_multi. */
static int load_skel(struct collector *c, const struct collector_opts *opts, __u32 rb_bytes,
		     const char *adopt)
{
	struct taskprobe_bpf *k;
	int err;

	c->skel = k = taskprobe_bpf__open();
	if (!k)
		return -errno;
	err = bpf_map__set_max_entries(k->maps.events, rb_bytes);
	if (err)
		return err;
	err = size_slot_maps(c);
	if (err)
		return err;
	k->rodata->wakeup_bytes = rb_bytes / 4;
	c->stage_nrecs = coll__stage_size(c->ncpus, rb_bytes);
	k->rodata->stage_cpus = (__u32)c->ncpus;
	k->rodata->stage_nrecs = c->stage_nrecs;
	err = bpf_map__set_max_entries(k->maps.stage_pos, (__u32)c->ncpus);
	if (!err)
		err = bpf_map__set_max_entries(k->maps.stage_recs,
					       (__u32)c->ncpus * c->stage_nrecs);
	if (err)
		return err;
	drop_uncollected(c);
	/* One switch program: the one with the run-queue histogram only when collected. */
	bpf_program__set_autoload((c->collect & COLLECT_RUNQ) ? k->progs.tp_sched_switch
							      : k->progs.tp_sched_switch_runq,
				  false);
	/* The exit's work with the tracepoint's group_dead (6.16 on), or without it. */
	bpf_program__set_autoload(tp_kernel_at_least(6, 16) ? k->progs.tracked_exit_live
							    : k->progs.tracked_exit,
				  false);
	/* The lifecycle's tail-called programs: loaded, never attached (fill_lifecycle). */
	bpf_program__set_autoattach(k->progs.tracked_fork, false);
	bpf_program__set_autoattach(k->progs.tracked_exec, false);
	bpf_program__set_autoattach(k->progs.tracked_exit, false);
	bpf_program__set_autoattach(k->progs.tracked_exit_live, false);
	/*
	 * The socket under a TLS connection is learnt from tcp_sendmsg_locked (6.11 on):
	 * before that, a reset ends a TLS request as the client's freeing the session does.
	 */
	if (!tp_kernel_at_least(6, 11))
		bpf_program__set_autoload(k->progs.tp_tcp_sendmsg_locked, false);
	/* Loaded (its maps adoptable), attached when a task needs it (collector__need_rss). */
	bpf_program__set_autoattach(k->progs.tp_rss_stat, false);
	if (kernel_stamps_queueing()) {
		/* Run-queue latency comes from the kernel's own stamps: no wakeup hooks. */
		k->rodata->use_sched_info = true;
		bpf_program__set_autoload(k->progs.tp_sched_wakeup, false);
		bpf_program__set_autoload(k->progs.tp_sched_wakeup_new, false);
	}
	if (c->uprobe_multi) {
		struct bpf_program *up[] = { k->progs.tp_getaddrinfo,  k->progs.tp_getaddrinfo_ret,
					     k->progs.tp_execve_ret,   k->progs.tp_ssl_write,
					     k->progs.tp_ssl_read,     k->progs.tp_ssl_read_ex,
					     k->progs.tp_tls_read_ret, k->progs.tp_gnutls_send,
					     k->progs.tp_gnutls_recv,  k->progs.tp_ssl_free,
					     k->progs.tp_gnutls_deinit };

		for (size_t i = 0; i < ARRAY_SIZE(up); i++)
			bpf_program__set_expected_attach_type(up[i], 48 /* TRACE_UPROBE_MULTI */);
	}
	if (adopt) {
		err = coll__reuse_pins(c, adopt);
		if (err)
			return err;
	}
	return taskprobe_bpf__load(k);
}

/*
 * The programs the lifecycle hooks tail-call for a task's thread, each in its hook's
 * array (bpf/proc.bpf.c): without them a task's forks, execs and exits would go
 * uncounted, so a failure here fails the collector's start. Arrays adopted from a
 * collector before us (pins.c) get this collector's programs, which the adopted links'
 * programs then call: the arrays' owner is the hook, whose programs both are.
 */
static int fill_lifecycle(struct collector *c)
{
	struct taskprobe_bpf *k = c->skel;
	struct bpf_program *exit_prog = bpf_program__autoload(k->progs.tracked_exit)
						? k->progs.tracked_exit
						: k->progs.tracked_exit_live;
	const struct {
		struct bpf_map *map;
		struct bpf_program *prog;
	} tails[] = { { k->maps.tail_fork, k->progs.tracked_fork },
		      { k->maps.tail_exec, k->progs.tracked_exec },
		      { k->maps.tail_exit, exit_prog } };
	__u32 slot = 0;

	for (size_t i = 0; i < ARRAY_SIZE(tails); i++) {
		int fd = bpf_program__fd(tails[i].prog);

		if (fd < 0)
			return fd;
		if (bpf_map_update_elem(bpf_map__fd(tails[i].map), &slot, &fd, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * The skeleton loaded, with uprobe_multi where the kernel takes it, and the lifecycle's
 * arrays filled (adopted ones too: if they take none of ours, the maps are not adopted).
 */
static int load_any(struct collector *c, const struct collector_opts *opts, __u32 rb_bytes,
		    const char *adopt)
{
	int err = load_skel(c, opts, rb_bytes, adopt);

	if (err && c->uprobe_multi && !c->adopt_why[0]) {
		/* A kernel that says 6.6 but lacks them: per-function uprobes instead. */
		tp_verbose_log("uprobe_multi programs do not load (%s): plain uprobes",
			       strerror(-err));
		taskprobe_bpf__destroy(c->skel);
		c->skel = NULL;
		c->uprobe_multi = false;
		err = load_skel(c, opts, rb_bytes, adopt);
	}
	if (err)
		return err;
	err = fill_lifecycle(c);
	if (err && adopt)
		snprintf(c->adopt_why, sizeof(c->adopt_why),
			 "its program arrays do not take this version's programs: %s",
			 strerror(-err));
	return err;
}

struct collector *collector__open(const struct collector_opts *opts)
{
	__u32 rb_bytes = opts && opts->ringbuf_bytes ? opts->ringbuf_bytes : DEFAULT_RINGBUF_BYTES;
	const char *adopt;
	struct collector *c;
	int err;

	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		errno = ENOENT;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_tasks = opts && opts->max_tasks ? opts->max_tasks : TP_MAX_TASKS;
	c->collect = opts && opts->collect ? opts->collect & COLLECT_ALL : COLLECT_DEFAULT;
	if (c->max_tasks < 1 || c->max_tasks > TP_MAX_TASKS_LIMIT) {
		err = -EINVAL;
		goto cleanup;
	}
	c->slots = calloc((size_t)c->max_tasks, sizeof(*c->slots));
	if (!c->slots) {
		err = -ENOMEM;
		goto cleanup;
	}
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0) {
		err = c->ncpus ? c->ncpus : -EINVAL;
		goto cleanup;
	}
	c->percpu_buf = calloc((size_t)c->ncpus, PERCPU_VALUE_MAX);
	if (!c->percpu_buf) {
		err = -ENOMEM;
		goto cleanup;
	}

	c->uprobe_multi = uprobe_multi_supported();
	adopt = opts && opts->adopt_dir && opts->adopt_dir[0] ? opts->adopt_dir : NULL;
	err = load_any(c, opts, rb_bytes, adopt);
	if (err && adopt) {
		/* Not adoptable (another version, another max_tasks): a collector anew. */
		if (!c->adopt_why[0])
			snprintf(c->adopt_why, sizeof(c->adopt_why), "its maps do not load: %s",
				 strerror(-err));
		taskprobe_bpf__destroy(c->skel);
		c->skel = NULL;
		c->uprobe_multi = uprobe_multi_supported();
		adopt = NULL;
		err = load_any(c, opts, rb_bytes, NULL);
	}
	if (err)
		goto cleanup;
	c->adopted = adopt != NULL;
	if (c->adopted)
		coll__adopt_links(c, adopt);
	/* Slot uses numbered from the clock: never one a collector before us gave out. */
	c->next_gen = (__u32)(tp_realtime_ns() / 1000000000ULL);
	err = taskprobe_bpf__attach(c->skel);
	if (err)
		goto cleanup;
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), coll__collect_event, c, NULL);
	if (!c->rb) {
		err = -errno;
		goto cleanup;
	}
	err = coll__stage_map(c);
	if (err)
		goto cleanup;
	coll__attach_host_libs(c);
	return c;

cleanup:
	collector__free(c);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	if (!c->keep_pins)
		collector__unpin(c);
	ring_buffer__free(c->rb);
	if (c->skel)
		coll__stage_unmap(c);
	for (int i = 0; c->slots && i < c->max_tasks; i++)
		slot_reset(&c->slots[i]);
	free(c->slots);
	coll__release_libs(c);
	taskprobe_bpf__destroy(c->skel);
	free(c->percpu_buf);
	free(c);
}

static int zero_slot_maps(struct collector *c, __u32 slot)
{
	struct bpf_map *percpu[] = { c->skel->maps.cpu_stats, c->skel->maps.io_stats };
	struct bpf_map *shared[] = { c->skel->maps.proc_stats, c->skel->maps.ioac_stats,
				     c->skel->maps.mem_stats, c->skel->maps.phase_peak,
				     c->skel->maps.net_stats };
	char zero[sizeof(struct tp_net_stats)] = { 0 };

	_Static_assert(sizeof(struct tp_net_stats) >= sizeof(struct tp_proc_stats) &&
			       sizeof(struct tp_net_stats) >= sizeof(struct tp_ioac_stats) &&
			       sizeof(struct tp_net_stats) >= sizeof(struct tp_mem_stats),
		       "zero buffer too small");
	memset(c->percpu_buf, 0, (size_t)c->ncpus * PERCPU_VALUE_MAX);
	for (size_t i = 0; i < ARRAY_SIZE(percpu); i++)
		if (bpf_map_update_elem(bpf_map__fd(percpu[i]), &slot, c->percpu_buf, 0))
			return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++)
		if (bpf_map_update_elem(bpf_map__fd(shared[i]), &slot, zero, 0))
			return -errno;
	return 0;
}

/* Adds path and every cgroup below it; descendants made later come from cgroup_mkdir. */
static int add_cgroup_tree(struct collector *c, const char *path, const struct tp_cgroup_info *ci,
			   int depth)
{
	int fd = bpf_map__fd(c->skel->maps.cgroups);
	char child[PATH_MAX];
	struct dirent *de;
	__u64 id;
	DIR *d;
	int err;

	if (depth > 64)
		return -ELOOP;
	err = cgroup_id(path, &id);
	if (err)
		return err;
	if (bpf_map_update_elem(fd, &id, ci, BPF_ANY))
		return -errno;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		err = add_cgroup_tree(c, child, ci, depth + 1);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

/* Plaintext HTTP is read from the task cgroup's own packets (and its descendants'). */
static void attach_skb(struct collector *c, struct slot *s, const char *path)
{
	struct bpf_program *progs[2] = { c->skel->progs.tp_http_egress,
					 c->skel->progs.tp_http_ingress };
	int fd;

	if (!(c->collect & COLLECT_NET))
		return;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (int i = 0; i < 2; i++) {
		s->skb_links[i] = bpf_program__attach_cgroup(progs[i], fd);
		if (!s->skb_links[i])
			tp_verbose_log("cannot attach %s to %s: %s", bpf_program__name(progs[i]),
				       path, strerror(errno));
	}
	close(fd);
}

int collector__track(struct collector *c, const char *path)
{
	struct tp_cgroup_info ci;
	struct tp_proc_stats ps = { 0 };
	struct slot *s = NULL;
	int slot, err, procs;

	for (slot = 0; slot < c->max_tasks; slot++)
		if (!c->slots[slot].used) {
			s = &c->slots[slot];
			break;
		}
	if (!s)
		return -ENOSPC;
	memset(s, 0, sizeof(*s));
	err = htab__init(&s->prog_index, sizeof(__u32));
	if (!err)
		err = htab__init(&s->procs, sizeof(struct proc_info));
	if (!err)
		err = cgroup_id(path, &s->cgid);
	if (!err)
		err = zero_slot_maps(c, (__u32)slot);
	if (err)
		goto fail;
	/* Processes already there are alive; ones forked later are counted by BPF. */
	procs = cgroup_count_procs(path);
	if (procs > 0) {
		ps.alive = ps.max_alive = procs;
		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.proc_stats), &slot, &ps, 0)) {
			err = -errno;
			goto fail;
		}
	}
	s->used = true;
	s->gen = ++c->next_gen ? c->next_gen : ++c->next_gen; /* 0 means free */
	ci.slot = (__u32)slot;
	ci.gen = s->gen;
	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &s->gen, 0)) {
		err = -errno;
		collector__untrack(c, slot);
		return err;
	}
	err = add_cgroup_tree(c, path, &ci, 0);
	if (err) {
		collector__untrack(c, slot);
		return err;
	}
	attach_skb(c, s, path);
	/* Its threads already there are adopted now, not at the next read. */
	if (procs > 0 && (err = coll__refresh(c)))
		tp_verbose_log("cannot adopt the threads in %s: %s", path, strerror(-err));
	return slot;

fail:
	slot_reset(s);
	return err;
}

int collector__retrack(struct collector *c, int slot, const char *path)
{
	struct slot *s;
	__u32 gen = 0;
	int err;

	if (!c || slot < 0 || slot >= c->max_tasks || c->slots[slot].used)
		return -EINVAL;
	/* Freed by the collector before us (its task ended): nothing to adopt there. */
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &gen) || !gen)
		return -ENOENT;
	s = &c->slots[slot];
	memset(s, 0, sizeof(*s));
	err = htab__init(&s->prog_index, sizeof(__u32));
	if (!err)
		err = htab__init(&s->procs, sizeof(struct proc_info));
	if (err) {
		slot_reset(s);
		return err;
	}
	/* A cgroup removed in the gap: its figures are in the maps all the same. */
	cgroup_id(path, &s->cgid);
	s->used = true;
	s->gen = gen;
	attach_skb(c, s, path);
	return slot;
}

int collector__untrack(struct collector *c, int slot)
{
	struct tp_cgroup_info ci;
	__u32 free_gen = 0;
	__u64 key, next;
	int fd, err;

	if (!coll__slot_ok(c, slot))
		return -EINVAL;
	fd = bpf_map__fd(c->skel->maps.cgroups);
	/* Threads still holding this slot (kept leftovers) stop counting at once. */
	bpf_map_update_elem(bpf_map__fd(c->skel->maps.slot_gen), &slot, &free_gen, 0);
	c->skel->bss->capture_args[slot] = 0;
	/* Collect first: deleting while walking would restart the walk. */
	for (;;) {
		bool found = false;

		err = bpf_map_get_next_key(fd, NULL, &next);
		while (!err) {
			key = next;
			if (!bpf_map_lookup_elem(fd, &key, &ci) && ci.slot == (__u32)slot) {
				bpf_map_delete_elem(fd, &key);
				found = true;
				break;
			}
			err = bpf_map_get_next_key(fd, &key, &next);
		}
		if (!found)
			break;
	}
	coll__delete_endpoints(c, (__u32)slot, c->slots[slot].gen);
	slot_reset(&c->slots[slot]);
	return 0;
}
