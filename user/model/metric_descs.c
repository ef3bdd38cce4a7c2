// SPDX-License-Identifier: GPL-2.0
/* The built-in figures' descriptors (docs/task-record.md lists the same, for users). */
#include <stddef.h>
#include <string.h>

#include "model/metric_descs.h"

#define FIG(field) offsetof(struct task_figures, field)

static bool get_user(const struct task_record *t, double *v)
{
	*v = (double)t->cpu_stat.user_us * 1000;
	return t->have_cpu_stat;
}

static bool get_system(const struct task_record *t, double *v)
{
	*v = (double)t->cpu_stat.system_us * 1000;
	return t->have_cpu_stat;
}

static bool get_avg_cores(const struct task_record *t, double *v)
{
	*v = t->wall_ns ? (double)t->fig.cpu.cpu_ns / (double)t->wall_ns : 0.0;
	return true;
}

static bool get_peak_cores(const struct task_record *t, double *v)
{
	*v = t->peak_cores;
	return true;
}

static void set_peak_cores(struct task_record *t, double v)
{
	t->peak_cores = v;
}

static bool get_max_alive(const struct task_record *t, double *v)
{
	*v = t->fig.proc.max_alive > 0 ? (double)t->fig.proc.max_alive : 0;
	return true;
}

static void set_max_alive(struct task_record *t, double v)
{
	t->fig.proc.max_alive = (__s64)v;
}

static bool get_mem_peak(const struct task_record *t, double *v)
{
	const char *src;

	*v = (double)task_record__mem_peak(t, &src);
	return true;
}

/* The reader sets the kernel's charge apart once it knows the source (task.c). */
static void set_mem_peak(struct task_record *t, double v)
{
	t->fig.mem.peak_rss_bytes = (__s64)v;
}

static bool get_host_cpu(const struct task_record *t, double *v)
{
	*v = (double)t->hctx.host_cpu_ns;
	return t->hctx.have_cpu;
}

static bool get_other_cpu(const struct task_record *t, double *v)
{
	*v = (double)t->hctx.other_cpu_ns;
	return t->hctx.have_cpu;
}

static bool get_other_cores(const struct task_record *t, double *v)
{
	*v = t->wall_ns ? (double)t->hctx.other_cpu_ns / (double)t->wall_ns : 0.0;
	return t->hctx.have_cpu;
}

/* A pressure total of the task (host false) or the host, resource r, some or full. */
static bool get_psi(const struct psi_totals *p, int r, bool full, double *v)
{
	*v = (double)(full ? p->full_us[r] : p->some_us[r]) * 1000;
	return (p->have & (1u << r)) != 0;
}

#define PSI_GET(name, who, r, full)                                                                \
	static bool name(const struct task_record *t, double *v)                                   \
	{                                                                                          \
		return get_psi(&t->hctx.who, r, full, v);                                          \
	}
PSI_GET(get_psi_cpu_some, psi, 0, false)
PSI_GET(get_psi_cpu_full, psi, 0, true)
PSI_GET(get_psi_mem_some, psi, 1, false)
PSI_GET(get_psi_mem_full, psi, 1, true)
PSI_GET(get_psi_io_some, psi, 2, false)
PSI_GET(get_psi_io_full, psi, 2, true)
PSI_GET(get_hpsi_cpu_some, host_psi, 0, false)
PSI_GET(get_hpsi_cpu_full, host_psi, 0, true)
PSI_GET(get_hpsi_mem_some, host_psi, 1, false)
PSI_GET(get_hpsi_mem_full, host_psi, 1, true)
PSI_GET(get_hpsi_io_some, host_psi, 2, false)
PSI_GET(get_hpsi_io_full, host_psi, 2, true)
#undef PSI_GET

#define CNT(n, u, key, src, field)                                                                 \
	{                                                                                          \
		n, u, METRIC_COUNTER, key, src, FIG(field), NULL, NULL, false                      \
	}
#define FN(n, u, k, key, src, get, set, real)                                                      \
	{                                                                                          \
		n, u, k, key, src, -1, get, set, real                                              \
	}

static const char SRC_SCHED[] = "bpf:sched_process_exit,sched_switch,iter/task";
static const char SRC_PROC[] = "bpf:sched_process_fork,exec,exit";
static const char SRC_IOAC[] = "bpf:task ioac at thread exit";
static const char SRC_BLOCK[] = "bpf:block_io_start,block_bio_backmerge";
static const char SRC_MERGE[] = "bpf:block_bio_backmerge,block_bio_frontmerge";
static const char SRC_EXECVE[] = "bpf:uretprobe libc execve";
static const char SRC_ATTACH[] = "bpf:cgroup_attach_task";
static const char SRC_OOM[] = "bpf:mark_victim";
static const char SRC_HOST[] = "cgroup:cpu.stat of the root and of every cgroup, /proc/PID/stat";
static const char SRC_PSI[] = "cgroup:cpu.pressure,memory.pressure,io.pressure";
static const char SRC_HOST_PSI[] = "/proc/pressure/cpu,memory,io";

const struct metric_desc metric_descs[] = {
	CNT("cpu.time_ns", "ns", "cpu.time_ns", SRC_SCHED, cpu.cpu_ns),
	CNT("cpu.runq_wait_ns", "ns", NULL, SRC_SCHED, cpu.wait_ns),
	FN("cpu.user_ns", "ns", METRIC_COUNTER, "cpu.user_ns", "cgroup:cpu.stat", get_user, NULL,
	   false),
	FN("cpu.system_ns", "ns", METRIC_COUNTER, "cpu.system_ns", "cgroup:cpu.stat", get_system,
	   NULL, false),
	FN("cpu.avg_cores", "cores", METRIC_GAUGE, NULL, NULL, get_avg_cores, NULL, true),
	FN("cpu.peak_cores", "cores", METRIC_GAUGE, NULL, NULL, get_peak_cores, set_peak_cores,
	   true),
	CNT("proc.forks", "count", "proc", SRC_PROC, proc.forks),
	CNT("proc.execs", "count", NULL, SRC_PROC, proc.execs),
	CNT("proc.exits", "count", NULL, SRC_PROC, proc.exits),
	CNT("proc.failed_exits", "count", NULL, SRC_PROC, proc.failed_exits),
	FN("proc.max_alive", "count", METRIC_GAUGE, NULL, SRC_PROC, get_max_alive, set_max_alive,
	   false),
	CNT("proc.threads", "count", NULL, SRC_PROC, proc.threads),
	CNT("proc.exec_failures", "count", "proc.exec_failures", SRC_EXECVE, proc.exec_failures),
	CNT("proc.left_task", "count", "proc.left_task", SRC_ATTACH, proc.left_task),
	CNT("proc.oom_kills", "count", "proc.oom_kills", SRC_OOM, mem.oom_kills),
	CNT("io.read_bytes", "bytes", "io.read_bytes", SRC_IOAC, ioac.read_bytes),
	CNT("io.write_bytes", "bytes", "io.write_bytes", SRC_IOAC, ioac.write_bytes),
	CNT("io.cancelled_write_bytes", "bytes", NULL, SRC_IOAC, ioac.cancelled_write_bytes),
	CNT("io.rchar", "bytes", NULL, SRC_IOAC, ioac.rchar),
	CNT("io.wchar", "bytes", NULL, SRC_IOAC, ioac.wchar),
	CNT("io.read_ops", "count", "io.ops", SRC_BLOCK, io.read_ops),
	CNT("io.write_ops", "count", NULL, SRC_BLOCK, io.write_ops),
	CNT("io.blk_read_bytes", "bytes", NULL, SRC_BLOCK, io.read_bytes),
	CNT("io.blk_write_bytes", "bytes", NULL, SRC_BLOCK, io.write_bytes),
	CNT("io.merged_bios", "count", "io.merged_bios", SRC_MERGE, io.merged_bios),
	FN("mem.peak_bytes", "bytes", METRIC_GAUGE, "mem.peak_bytes", NULL, get_mem_peak,
	   set_mem_peak, false),
	CNT("lost_events", "count", NULL, NULL, proc.lost_events),
	/* The host around the task (model/hostctx.h): kept in the record's host_context. */
	FN("host.cpu_ns", "ns", METRIC_COUNTER, "host", SRC_HOST, get_host_cpu, NULL, false),
	FN("host.other_cpu_ns", "ns", METRIC_COUNTER, NULL, NULL, get_other_cpu, NULL, false),
	FN("host.other_avg_cores", "cores", METRIC_GAUGE, NULL, NULL, get_other_cores, NULL, true),
	FN("psi.cpu.some_ns", "ns", METRIC_COUNTER, "psi", SRC_PSI, get_psi_cpu_some, NULL, false),
	FN("psi.cpu.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_psi_cpu_full, NULL, false),
	FN("psi.memory.some_ns", "ns", METRIC_COUNTER, NULL, NULL, get_psi_mem_some, NULL, false),
	FN("psi.memory.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_psi_mem_full, NULL, false),
	FN("psi.io.some_ns", "ns", METRIC_COUNTER, NULL, NULL, get_psi_io_some, NULL, false),
	FN("psi.io.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_psi_io_full, NULL, false),
	FN("host.psi.cpu.some_ns", "ns", METRIC_COUNTER, "host.psi", SRC_HOST_PSI,
	   get_hpsi_cpu_some, NULL, false),
	FN("host.psi.cpu.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_hpsi_cpu_full, NULL,
	   false),
	FN("host.psi.memory.some_ns", "ns", METRIC_COUNTER, NULL, NULL, get_hpsi_mem_some, NULL,
	   false),
	FN("host.psi.memory.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_hpsi_mem_full, NULL,
	   false),
	FN("host.psi.io.some_ns", "ns", METRIC_COUNTER, NULL, NULL, get_hpsi_io_some, NULL, false),
	FN("host.psi.io.full_ns", "ns", METRIC_COUNTER, NULL, NULL, get_hpsi_io_full, NULL, false),
};

const size_t metric_descs_n = sizeof(metric_descs) / sizeof(metric_descs[0]);

static struct tp_hist *runq_at(struct task_record *t)
{
	return &t->fig.cpu.runq;
}

static struct tp_hist *io_at(struct task_record *t)
{
	return &t->fig.io.lat;
}

static struct tp_hist *connect_at(struct task_record *t)
{
	return &t->net.connect_latency;
}

const struct hist_desc hist_descs[] = {
	{ "cpu.runq_latency", "runq", "ns", "bpf:sched_switch", runq_at },
	{ "io.latency", "io", "ns", NULL, io_at },
	{ "net.tcp.connect_latency", "tcp_connect", "ns", NULL, connect_at },
};

const size_t hist_descs_n = sizeof(hist_descs) / sizeof(hist_descs[0]);

__u64 metric_desc__fig(const struct metric_desc *d, const struct task_record *t)
{
	return *(const __u64 *)((const char *)&t->fig + d->fig_off);
}

bool metric_desc__get(const struct metric_desc *d, const struct task_record *t, double *v)
{
	if (d->fig_off >= 0) {
		*v = (double)metric_desc__fig(d, t);
		return true;
	}
	return d->get(t, v);
}

void metric_desc__set(const struct metric_desc *d, struct task_record *t, double v)
{
	if (d->fig_off >= 0)
		*(__u64 *)((char *)&t->fig + d->fig_off) = (__u64)v;
	else if (d->set)
		d->set(t, v);
}

const struct hist_desc *hist_desc_find(const char *name)
{
	for (size_t i = 0; name && i < hist_descs_n; i++)
		if (!strcmp(name, hist_descs[i].name) || !strcmp(name, hist_descs[i].alias))
			return &hist_descs[i];
	return NULL;
}

bool metric_is_builtin(const char *name)
{
	for (size_t i = 0; i < metric_descs_n; i++)
		if (!strcmp(metric_descs[i].name, name))
			return true;
	/* The network and HTTP counters (net_figures.c): the record's own, not the task's. */
	return !strncmp(name, "net.", 4) || !strncmp(name, "http.", 5);
}
