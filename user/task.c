// SPDX-License-Identifier: GPL-2.0
/* A finished task's record: its identity, its figures, and how it is printed and saved. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metrics.h"
#include "collect.h"
#include "task.h"

#define SUMMARY_WIDTH 80
#define TOP_PROGRAMS 5

static const char *const leftover_names[] = {
	[LEFTOVER_NONE] = "none",
	[LEFTOVER_EXITED] = "exited",
	[LEFTOVER_KILLED] = "killed",
	[LEFTOVER_KEPT] = "kept",
};

const char *const task_status_names[TASK_END_KINDS] = {
	[TASK_EXITED] = "exited",	[TASK_SIGNALED] = "signaled",
	[TASK_NOT_FOUND] = "not_found", [TASK_EXEC_FAILED] = "exec_failed",
	[TASK_ENDED] = "ended",		[TASK_INTERRUPTED] = "interrupted",
	[TASK_RUNNING] = "running",
};

int task_exit_status(const struct task_record *t)
{
	switch (t->end) {
	case TASK_SIGNALED:
		return 128 + t->signal;
	case TASK_NOT_FOUND:
		return 127;
	case TASK_EXEC_FAILED:
		return 126;
	case TASK_ENDED:
	case TASK_INTERRUPTED:
		return 0;
	default:
		return t->exit_code;
	}
}

void task_set_end(struct task_record *t, int wstatus, int exec_err)
{
	t->exit_code = t->signal = 0;
	if (exec_err) {
		t->end = exec_err == ENOENT ? TASK_NOT_FOUND : TASK_EXEC_FAILED;
	} else if (WIFSIGNALED(wstatus)) {
		t->end = TASK_SIGNALED;
		t->signal = WTERMSIG(wstatus);
	} else {
		t->end = TASK_EXITED;
		t->exit_code = WEXITSTATUS(wstatus);
	}
}

__u64 task_mem_peak(const struct task_record *t, const char **source)
{
	if (t->have_memory_peak) {
		*source = t->memory_peak_source ? t->memory_peak_source : "cgroup:memory.peak";
		return t->memory_peak;
	}
	*source = "bpf:rss_stat";
	return t->fig.peak_rss_bytes > 0 ? (__u64)t->fig.peak_rss_bytes : 0;
}

static int by_cpu_desc(const void *a, const void *b)
{
	const struct program_stat *x = a, *y = b;

	if (x->cpu_ns != y->cpu_ns)
		return x->cpu_ns < y->cpu_ns ? 1 : -1;
	if (x->execs != y->execs)
		return x->execs < y->execs ? 1 : -1;
	return strcmp(x->path, y->path);
}

int task_set_programs(struct task_record *t, const struct program_stat *p, size_t n)
{
	free(t->progs);
	t->progs = NULL;
	t->nprogs = 0;
	if (!n)
		return 0;
	t->progs = malloc(n * sizeof(*p));
	if (!t->progs)
		return -ENOMEM;
	memcpy(t->progs, p, n * sizeof(*p));
	t->nprogs = n;
	qsort(t->progs, n, sizeof(*p), by_cpu_desc);
	return 0;
}

void task_record_fini(struct task_record *t)
{
	free(t->argv_owned);
	t->argv_owned = NULL;
	if (t->phases_owned) {
		phases__fini(t->phases_owned);
		free(t->phases_owned);
		t->phases_owned = NULL;
		t->phases = NULL;
	}
	free(t->progs);
	t->progs = NULL;
	t->nprogs = 0;
	if (t->um_owned) {
		um_table__fini(t->um_owned);
		free(t->um_owned);
		t->um_owned = NULL;
		t->um = NULL;
	}
	if (t->rules_owned)
		rules__fini(t->rules_owned);
	free(t->rules_owned);
	t->rules_owned = NULL;
	notes__fini(&t->notes);
	procs__fini(&t->procs);
	net_figures_fini(&t->net);
}

static double avg_cores(const struct task_record *t)
{
	return t->wall_ns ? (double)t->fig.cpu_ns / (double)t->wall_ns : 0.0;
}

/* argv joined by spaces, cut with "..." to fit width. */
static void format_command(char *buf, size_t width, char *const *argv, int argc)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < argc && len < width; i++)
		len += (size_t)snprintf(buf + len, width + 1 - len, "%s%s", i ? " " : "", argv[i]);
	if (len >= width && width > 3)
		strcpy(buf + width - 3, "...");
	/* Control characters would break the one-line layout. */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = *p == '\n' || *p == '\t' ? ' ' : '?';
}

/* Keeps the tail of a long path: the program name matters most. */
static const char *tail_fit(char *buf, size_t width, const char *path)
{
	size_t n = strlen(path);

	if (n <= width)
		return path;
	snprintf(buf, width + 1, "...%s", path + n - (width - 3));
	return buf;
}

static void print_end(FILE *f, const struct task_record *t)
{
	char wall[32], id[SUMMARY_WIDTH];

	tp_fmt_dur(wall, sizeof(wall), t->wall_ns);
	if (t->end == TASK_SIGNALED)
		fprintf(f, "taskprobe: task killed by signal %d (%s) after %s\n", t->signal,
			strsignal(t->signal), wall);
	else if (t->end == TASK_NOT_FOUND || t->end == TASK_EXEC_FAILED)
		fprintf(f, "taskprobe: task never ran: its command %s (exit status %d)\n",
			t->end == TASK_NOT_FOUND ? "was not found" : "could not be executed",
			task_exit_status(t));
	else if (t->end == TASK_ENDED || t->end == TASK_INTERRUPTED)
		fprintf(f, "taskprobe: task %s after %s\n",
			t->end == TASK_ENDED ? "ended" : "interrupted (the daemon stopped)", wall);
	else
		fprintf(f, "taskprobe: task exited %d after %s\n", t->exit_code, wall);
	/* Ids may be 128 characters: keep their tail, where CI systems put the number. */
	fprintf(f, "  id         %s\n", tail_fit(id, SUMMARY_WIDTH - 14, t->id));
	fprintf(f, "  collector  %s\n",
		t->by_daemon ? "the host daemon's" : "embedded (no daemon was used)");
	if (t->collect && (t->collect & COLLECT_ALL) != COLLECT_ALL) {
		char what[64];

		fprintf(f, "  collected  %s only (the rest was not measured)\n",
			collect_format(t->collect, what, sizeof(what)));
	}
}

static void print_leftovers(FILE *f, const struct task_record *t)
{
	const char *what;

	switch (t->leftover_action) {
	case LEFTOVER_EXITED:
		what = "exited by themselves";
		break;
	case LEFTOVER_KILLED:
		what = "killed after the grace period";
		break;
	case LEFTOVER_KEPT:
		what = "left running, not counted further";
		break;
	default:
		fprintf(f, "  leftovers  none\n");
		return;
	}
	fprintf(f, "  leftovers  %d process%s %s\n", t->leftovers, t->leftovers == 1 ? "" : "es",
		what);
}

static void print_programs(FILE *f, const struct task_record *t)
{
	char cpu[32], path[64];

	if (!t->nprogs)
		return;
	fprintf(f, "  programs   %9s %8s  %s\n", "CPU", "EXECS", "PATH");
	for (size_t i = 0; i < t->nprogs && i < TOP_PROGRAMS; i++) {
		const struct program_stat *p = &t->progs[i];

		/* 13 + 9 + 1 + 8 + 2 columns before the path leave 47 of 80. */
		fprintf(f, "             %9s %8llu  %s\n", tp_fmt_dur(cpu, sizeof(cpu), p->cpu_ns),
			(unsigned long long)p->execs, tail_fit(path, 46, p->path));
	}
	if (t->nprogs > TOP_PROGRAMS)
		fprintf(f, "             (%zu more in the JSON record)\n",
			t->nprogs - TOP_PROGRAMS);
}

#define TOP_PHASES 12

static void print_phases(FILE *f, const struct task_record *t)
{
	const struct phases *ph = t->phases;
	char a[32], b[32], c[32], d[32], name[40];

	if (!ph || !ph->n)
		return;
	fprintf(f, "  phases     %-20s %8s %8s %9s %9s%s\n", "NAME", "WALL", "CPU", "DISK",
		"PEAK MEM", "");
	for (size_t i = 0; i < ph->n && i < TOP_PHASES; i++) {
		const struct phase *p = &ph->p[i];
		int indent = p->depth < 4 ? p->depth * 2 : 8, room = 19 - indent - !!p->unfinished;
		int len = (int)strlen(p->name), cols;

		/* A name cut to fit ends in "…" (one column, three bytes): padded by hand. */
		if (len > room)
			cols = snprintf(name, sizeof(name), "%*s%.*s\u2026%s", indent, "", room - 1,
					p->name, p->unfinished ? "*" : "") -
			       2;
		else
			cols = snprintf(name, sizeof(name), "%*s%s%s", indent, "", p->name,
					p->unfinished ? "*" : "");
		fprintf(f, "             %s%*s %8s %8s %9s %9s\n", name, cols < 20 ? 20 - cols : 0,
			"", tp_fmt_dur(a, sizeof(a), p->wall_ns),
			tp_fmt_dur(b, sizeof(b), p->cpu_ns),
			tp_fmt_bytes(c, sizeof(c), p->read_bytes + p->write_bytes),
			tp_fmt_bytes(d, sizeof(d),
				     p->peak_mem_bytes > 0 ? (__u64)p->peak_mem_bytes : 0));
	}
	if (ph->n > TOP_PHASES)
		fprintf(f, "             (%zu more in the JSON record)\n", ph->n - TOP_PHASES);
	for (size_t i = 0; i < ph->n; i++)
		if (ph->p[i].unfinished) {
			fprintf(f, "             * still open when the task ended\n");
			break;
		}
}

static void print_io_mem(FILE *f, const struct task_record *t)
{
	const struct task_figures *g = &t->fig;
	char a[32], b[32], c[32], d[32];
	const char *src;

	fprintf(f, "  disk       read %s, wrote %s; %llu reads, %llu writes\n",
		tp_fmt_bytes(a, sizeof(a), g->ioac.read_bytes),
		tp_fmt_bytes(b, sizeof(b), g->ioac.write_bytes), (unsigned long long)g->io_read_ops,
		(unsigned long long)g->io_write_ops);
	/* Two lines: with long figures, one would pass 80 columns. */
	if (g->io_latency.count)
		fprintf(f, "             latency p50 %s, p99 %s\n",
			tp_fmt_dur(a, sizeof(a), hist_quantile(&g->io_latency, 0.50)),
			tp_fmt_dur(b, sizeof(b), hist_quantile(&g->io_latency, 0.99)));
	fprintf(f, "             syscalls read %s, wrote %s\n",
		tp_fmt_bytes(c, sizeof(c), g->ioac.rchar),
		tp_fmt_bytes(d, sizeof(d), g->ioac.wchar));
	tp_fmt_bytes(a, sizeof(a), task_mem_peak(t, &src));
	fprintf(f, "  memory     peak %s (%s), %llu OOM kills\n", a, src,
		(unsigned long long)g->oom_kills);
}

void task_add_fault(struct task_record *t, const char *fmt, ...)
{
	va_list ap;

	if (t->nfaults >= TASK_FAULTS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(t->faults[t->nfaults++], TASK_FAULT_LEN, fmt, ap);
	va_end(ap);
}

bool task_collected(const struct task_record *t, const char *name)
{
	return collect_has(t->collect ? t->collect : COLLECT_ALL, name, t->have_memory_peak);
}

/* The collector's faults, each wrapped at word boundaries to the summary's width. */
static void print_faults(FILE *f, const struct task_record *t)
{
	const int width = SUMMARY_WIDTH - 14;

	for (int i = 0; i < t->nfaults; i++) {
		const char *p = t->faults[i];
		bool first = true;

		while (*p) {
			int n = (int)strlen(p);

			if (n > width) {
				n = width;
				while (n > width / 2 && p[n] != ' ')
					n--;
				if (p[n] != ' ')
					n = width;
			}
			fprintf(f, "  %-10s %.*s\n", first && !i ? "FAULT" : "", n, p);
			first = false;
			p += n;
			while (*p == ' ')
				p++;
		}
	}
}

/* No BPF: what the cgroup's own files said, and no more. */
static void print_cgroup_only(FILE *f, const struct task_record *t)
{
	char a[32];
	const char *src;

	if (t->have_memory_peak) {
		tp_fmt_bytes(a, sizeof(a), task_mem_peak(t, &src));
		fprintf(f, "  memory     peak %s (%s)\n", a, src);
	}
	print_phases(f, t);
	print_leftovers(f, t);
	fprintf(f, "  not known  processes, disk, network, programs: no BPF collector\n");
	print_faults(f, t);
}

void task_print_summary(FILE *f, const struct task_record *t)
{
	char cmd[SUMMARY_WIDTH], a[32], b[32], c[32];
	const struct task_figures *g = &t->fig;

	print_end(f, t);
	format_command(cmd, SUMMARY_WIDTH - 14, t->argv, t->argc);
	fprintf(f, "  command    %s\n", cmd);
	fprintf(f, "  cpu        %s on CPU, %.2f cores on average, %.2f at peak\n",
		tp_fmt_dur(a, sizeof(a), g->cpu_ns), avg_cores(t), t->peak_cores);
	if (t->have_cpu_stat)
		fprintf(f, "             user %s, system %s (cgroup cpu.stat)\n",
			tp_fmt_dur(b, sizeof(b), t->cpu_stat.user_us * 1000),
			tp_fmt_dur(c, sizeof(c), t->cpu_stat.system_us * 1000));
	if (t->cpu_stat_note)
		fprintf(f, "             %s%.60s\n",
			t->have_cpu_stat ? "cpu.stat " : "no user/system: ", t->cpu_stat_note);
	if (t->collect & COLLECT_CGROUP_ONLY) {
		print_cgroup_only(f, t);
		return;
	}
	fprintf(f, "  processes  %llu started, %llu execs, %llu failed, at most %lld alive\n",
		(unsigned long long)g->forks, (unsigned long long)g->execs,
		(unsigned long long)g->failed_exits, (long long)g->max_alive);
	if (g->exec_failures)
		fprintf(f,
			"             %llu execs failed (not found along PATH, not executable)\n",
			(unsigned long long)g->exec_failures);
	if (g->left_task)
		fprintf(f,
			"             %llu left the task (moved to another cgroup): counted until "
			"then\n",
			(unsigned long long)g->left_task);
	print_io_mem(f, t);
	net_print_summary(f, &t->net, t->all_endpoints);
	print_phases(f, t);
	if (t->um && (t->um->n || t->um->accepted || um_table__rejected_total(t->um)))
		fprintf(f,
			"  socket     %llu lines taken, %llu refused; %zu metrics of the task's own\n",
			(unsigned long long)t->um->accepted,
			(unsigned long long)um_table__rejected_total(t->um), t->um->n);
	print_leftovers(f, t);
	print_programs(f, t);
	if (task_collected(t, "cpu.runq_wait_ns"))
		fprintf(f, "  run queue  %s waiting for a CPU (%.1f%% of its CPU time)\n",
			tp_fmt_dur(a, sizeof(a), g->runq_wait_ns),
			g->cpu_ns ? 100.0 * (double)g->runq_wait_ns / (double)g->cpu_ns : 0.0);
	if (task_collected(t, "cpu.runq_latency")) {
		fprintf(f, "  run queue  %llu waits, p50 %s, p99 %s\n",
			(unsigned long long)g->runq.count,
			tp_fmt_dur(a, sizeof(a), hist_quantile(&g->runq, 0.50)),
			tp_fmt_dur(b, sizeof(b), hist_quantile(&g->runq, 0.99)));
		if (g->runq.count)
			hist_print(f, &g->runq, 1, "nsecs");
	}
	if (g->lost_events || t->lost_total)
		fprintf(f,
			"  WARNING    %llu events lost (ring buffer full); program figures are "
			"incomplete\n",
			(unsigned long long)(g->lost_events ? g->lost_events : t->lost_total));
	else
		fprintf(f, "  lost       0 events\n");
	if (t->skipped_runs)
		fprintf(f,
			"  WARNING    %llu probe runs skipped by the kernel (nested on a CPU);\n"
			"             figures may be short\n",
			(unsigned long long)t->skipped_runs);
	print_faults(f, t);
}

static void write_hist(struct jw *w, const char *name, const struct tp_hist *h, const char *unit)
{
	jw_key(w, name);
	jw_obj_begin(w);
	jw_kstr(w, "unit", unit);
	jw_ku64(w, "count", h->count);
	jw_ku64(w, "sum", h->sum);
	jw_ku64(w, "p50", hist_quantile(h, 0.50));
	jw_ku64(w, "p99", hist_quantile(h, 0.99));
	jw_key(w, "buckets");
	jw_arr_begin(w);
	for (unsigned i = 0; i < TP_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		jw_obj_begin(w);
		jw_ku64(w, "low", hist_slot_low(i));
		jw_ku64(w, "high", hist_slot_high(i));
		jw_ku64(w, "count", h->slots[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static const char *const um_kind_names[] = { "counter", "gauge", "timer" };

/* Counters by their total, gauges by their last value, timers by total ms and count. */
static void write_user_metric_values(struct jw *w, const struct um_table *um)
{
	char key[UM_KEY_MAX + 8];

	for (size_t i = 0; um && i < um->n; i++) {
		const struct um_metric *m = &um->m[i];

		jw_kdouble(w, m->key, m->kind == UM_GAUGE ? m->last : m->sum);
		if (m->kind == UM_TIMER) {
			snprintf(key, sizeof(key), "%s.count", m->key);
			jw_ku64(w, key, m->count);
		}
	}
}

static void write_user_metrics(struct jw *w, const struct um_table *um)
{
	jw_key(w, "user_metrics");
	jw_arr_begin(w);
	for (size_t i = 0; um && i < um->n; i++) {
		const struct um_metric *m = &um->m[i];

		jw_obj_begin(w);
		jw_kstr(w, "name", m->key);
		jw_kstr(w, "type", um_kind_names[m->kind]);
		jw_ku64(w, "count", m->count);
		jw_kdouble(w, "sum", m->sum);
		jw_kdouble(w, "last", m->last);
		jw_kdouble(w, "min", m->min);
		jw_kdouble(w, "max", m->max);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "metrics_socket");
	jw_obj_begin(w);
	jw_ku64(w, "accepted", um ? um->accepted : 0);
	jw_ku64(w, "rejected", um ? um_table__rejected_total(um) : 0);
	jw_key(w, "rejected_by_reason");
	jw_obj_begin(w);
	for (int r = 1; um && r < UM_REJECT_KINDS; r++)
		if (um->rejected[r])
			jw_ku64(w, um_reject_names[r], um->rejected[r]);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* A figure of a category the collector did not collect is left out of the record. */
static void write_metrics(struct jw *w, const struct task_record *t)
{
	const char *mem_src;

	task_mem_peak(t, &mem_src);
	jw_key(w, "metrics");
	jw_obj_begin(w);
	for (size_t i = 0; i < metric_descs_n; i++) {
		const struct metric_desc *d = &metric_descs[i];
		double v;

		if (!task_collected(t, d->name))
			continue;
		if (d->fig_off >= 0)
			jw_ku64(w, d->name, metric_fig(d, t));
		else if (!metric_get(d, t, &v))
			continue;
		else if (d->real)
			jw_kdouble(w, d->name, v);
		else
			jw_ku64(w, d->name, (__u64)v);
	}
	net_write_metrics(w, &t->net, task_collected(t, "net."), task_collected(t, "http."));
	write_user_metric_values(w, t->um);
	jw_obj_end(w);

	jw_key(w, "sources");
	jw_obj_begin(w);
	if (t->collect & COLLECT_CGROUP_ONLY) {
		/* No BPF: the cgroup's files are all there is. */
		jw_kstr(w, "cpu.time_ns", "cgroup:cpu.stat usage_usec");
		jw_kstr(w, "cpu.user_ns", "cgroup:cpu.stat");
		if (t->have_memory_peak)
			jw_kstr(w, "mem.peak_bytes", mem_src);
		jw_obj_end(w);
		return;
	}
	for (size_t i = 0; i < metric_descs_n; i++) {
		const struct metric_desc *d = &metric_descs[i];
		double v;

		if (d->source_key && metric_get(d, t, &v))
			jw_kstr(w, d->source_key, d->source ? d->source : mem_src);
	}
	for (size_t i = 0; i < hist_descs_n; i++)
		if (hist_descs[i].source)
			jw_kstr(w, hist_descs[i].name, hist_descs[i].source);
	jw_kstr(w, "net.tcp",
		"bpf:inet_sock_set_state,tcp_receive_reset,tcp_send_reset,"
		"tcp_retransmit_skb");
	jw_kstr(w, "net.dns", "bpf:uprobe getaddrinfo");
	jw_kstr(w, "http",
		"bpf:cgroup_skb (plaintext), uprobes SSL_read/write(_ex), "
		"gnutls_record_recv/send (TLS); HTTP/1.x only");
	jw_obj_end(w);
}

void task_write_json(struct jw *w, const struct task_record *t)
{
	char when[40], what[64];

	jw_obj_begin(w);
	jw_ku64(w, "schema", TASK_RECORD_SCHEMA);
	jw_kstr(w, "id", t->id);
	jw_key(w, "command");
	jw_arr_begin(w);
	for (int i = 0; i < t->argc; i++)
		jw_str(w, t->argv[i]);
	jw_arr_end(w);
	jw_key(w, "labels");
	jw_obj_begin(w);
	for (int i = 0; i < t->nlabels; i++)
		jw_kstr(w, t->labels[i].key, t->labels[i].val);
	jw_obj_end(w);
	jw_kstr(w, "host", t->host);
	jw_kstr(w, "cgroup", t->cgroup);
	jw_kstr(w, "start", tp_fmt_time(when, sizeof(when), t->start_real_ns));
	jw_ku64(w, "start_ns", t->start_real_ns);
	jw_ku64(w, "wall_ns", t->wall_ns);
	jw_ku64(w, "main_wall_ns", t->main_wall_ns);
	jw_kstr(w, "status", task_status_names[t->end]);
	jw_key(w, "exit_code");
	if (t->end == TASK_EXITED)
		jw_i64(w, t->exit_code);
	else
		jw_null(w);
	jw_key(w, "signal");
	if (t->end == TASK_SIGNALED)
		jw_i64(w, t->signal);
	else
		jw_null(w);
	jw_key(w, "exit_status");
	if (t->end == TASK_RUNNING)
		jw_null(w);
	else
		jw_u64(w, (__u64)task_exit_status(t));

	write_metrics(w, t);
	if (t->have_cpu_stat) {
		jw_key(w, "cgroup_cpu_stat");
		jw_obj_begin(w);
		jw_ku64(w, "usage_usec", t->cpu_stat.usage_us);
		jw_ku64(w, "user_usec", t->cpu_stat.user_us);
		jw_ku64(w, "system_usec", t->cpu_stat.system_us);
		if (t->cpu_stat_note)
			jw_kstr(w, "note", t->cpu_stat_note);
		jw_obj_end(w);
	} else if (t->cpu_stat_note) {
		jw_key(w, "cgroup_cpu_stat");
		jw_null(w);
		jw_kstr(w, "cgroup_cpu_stat_note", t->cpu_stat_note);
	}
	jw_key(w, "leftovers");
	jw_obj_begin(w);
	jw_ku64(w, "count", (__u64)t->leftovers);
	jw_kstr(w, "action", leftover_names[t->leftover_action]);
	jw_obj_end(w);

	jw_key(w, "programs");
	jw_arr_begin(w);
	for (size_t i = 0; i < t->nprogs; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "path", t->progs[i].path);
		jw_ku64(w, "execs", t->progs[i].execs);
		jw_ku64(w, "cpu_ns", t->progs[i].cpu_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "log_anchors");
	jw_arr_begin(w);
	for (int i = 0; t->rules && i < t->rules->nanchors; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "rule", t->rules->r[t->rules->anchors[i].rule].name);
		jw_ku64(w, "line", t->rules->anchors[i].line);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "exec_args_truncated", t->exec_args_truncated);
	jw_key(w, "phases");
	if (t->phases)
		phases__write_json(w, t->phases);
	else
		jw_null(w);
	write_user_metrics(w, t->um);
	jw_key(w, "network");
	net_write_json(w, &t->net);
	notes__write_json(w, &t->notes);
	procs__write_json(w, &t->procs);

	jw_key(w, "histograms");
	jw_obj_begin(w);
	for (size_t i = 0; i < hist_descs_n; i++)
		if (task_collected(t, hist_descs[i].name))
			write_hist(w, hist_descs[i].name, hist_descs[i].at((struct task_record *)t),
				   hist_descs[i].unit);
	jw_obj_end(w);

	jw_key(w, "collector");
	jw_obj_begin(w);
	jw_kstr(w, "version", TP_VERSION);
	jw_ku64(w, "abi", TP_ABI_VERSION);
	jw_ku64(w, "lost_events_total", t->lost_total);
	jw_ku64(w, "skipped_runs", t->skipped_runs);
	jw_kstr(w, "mode", t->by_daemon ? "daemon" : "embedded");
	jw_kstr(w, "collect",
		collect_format(t->collect ? t->collect : COLLECT_ALL, what, sizeof(what)));
	jw_key(w, "faults");
	jw_arr_begin(w);
	for (int i = 0; i < t->nfaults; i++)
		jw_str(w, t->faults[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
}

static int write_record(FILE *f, void *ctx)
{
	struct jw w;

	jw_init(&w, f, true);
	task_write_json(&w, ctx);
	return 0;
}

int task_save_json(const char *path, const struct task_record *t)
{
	return tp_write_whole(path, write_record, (void *)t);
}

/* Buckets back into log2 slots: a bucket's slot follows from its low bound. */
static void hist_from_json(struct tp_hist *h, const struct json *j)
{
	const struct json *b = json_get(j, "buckets");

	h->count = (__u64)json_num(j, "count");
	h->sum = (__u64)json_num(j, "sum");
	for (size_t i = 0; i < json_len(b); i++) {
		const struct json *e = json_at(b, i);
		__u64 low = (__u64)json_num(e, "low");
		unsigned slot = low ? 64 - (unsigned)__builtin_clzll(low) : 0;

		if (slot < TP_HIST_SLOTS)
			h->slots[slot] = (__u64)json_num(e, "count");
	}
}

static int phases_from_json(struct task_record *t, const struct json *arr)
{
	struct phases *ph;

	if (!json_len(arr))
		return 0;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	t->phases_owned = ph;
	t->phases = ph;
	return phases__from_json(ph, arr);
}

/* The metrics socket's harvest as the record kept it: user_metrics, metrics_socket. */
static int um_from_json(struct task_record *t, const struct json *arr, const struct json *sock)
{
	const struct json *why = json_get(sock, "rejected_by_reason");
	struct um_table *um = calloc(1, sizeof(*um));

	if (!um || um_table__init(um)) {
		free(um);
		return -ENOMEM;
	}
	t->um_owned = um;
	t->um = um;
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct json *e = json_at(arr, i);
		struct um_metric m = { 0 };

		snprintf(m.key, sizeof(m.key), "%s", json_str(e, "name"));
		for (int k = 0; k < (int)ARRAY_SIZE(um_kind_names); k++)
			if (!strcmp(json_str(e, "type"), um_kind_names[k]))
				m.kind = (enum um_kind)k;
		m.count = (__u64)json_num(e, "count");
		m.sum = json_num(e, "sum");
		m.last = json_num(e, "last");
		m.min = json_num(e, "min");
		m.max = json_num(e, "max");
		if (m.key[0] && um_table__put(um, &m))
			break;
	}
	um->accepted = (__u64)json_num(sock, "accepted");
	for (int r = 1; r < UM_REJECT_KINDS; r++)
		um->rejected[r] = (__u64)json_num(why, um_reject_names[r]);
	return 0;
}

/* Log anchors name their rule: a table of those names only, no pattern compiled. */
static int anchors_from_json(struct task_record *t, const struct json *arr)
{
	size_t n = json_len(arr);
	struct rules *rs;

	if (!n)
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	t->rules_owned = rs;
	t->rules = rs;
	for (size_t i = 0; i < n && rs->nanchors < ANCHORS_MAX; i++) {
		const struct json *e = json_at(arr, i);
		int r;

		if (!rules__named(rs, json_str(e, "rule"), &r))
			break;
		rules__anchor(rs, r, (__u64)json_num(e, "line"));
	}
	return 0;
}

int task_from_json(struct task_record *t, const struct json *j)
{
	const struct json *cmd = json_get(j, "command"), *labels = json_get(j, "labels");
	const struct json *m = json_get(j, "metrics"), *progs = json_get(j, "programs");
	const struct json *hists = json_get(j, "histograms"), *cs = json_get(j, "cgroup_cpu_stat");
	const struct json *left = json_get(j, "leftovers"), *srcs = json_get(j, "sources");
	size_t n = json_len(cmd);

	memset(t, 0, sizeof(*t));
	if (!j || j->type != JSON_OBJ || !m)
		return -EINVAL;
	snprintf(t->id, sizeof(t->id), "%s", json_str(j, "id"));
	t->argv_owned = calloc(n + 1, sizeof(char *));
	if (!t->argv_owned)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		t->argv_owned[i] = json_at(cmd, i)->type == JSON_STR ? json_at(cmd, i)->str : "";
	t->argv = t->argv_owned;
	t->argc = (int)n;
	for (const struct json *l = labels ? labels->child : NULL; l && t->nlabels < TP_LABELS_MAX;
	     l = l->next) {
		t->labels[t->nlabels].key = l->key;
		t->labels[t->nlabels++].val = l->type == JSON_STR ? l->str : "";
	}
	snprintf(t->host, sizeof(t->host), "%s", json_str(j, "host"));
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", json_str(j, "cgroup"));
	t->start_real_ns = json_u64(j, "start_ns");
	t->wall_ns = json_u64(j, "wall_ns");
	t->main_wall_ns = json_u64(j, "main_wall_ns");
	t->end = TASK_EXITED;
	for (int e = 0; e < TASK_END_KINDS; e++)
		if (!strcmp(json_str(j, "status"), task_status_names[e]))
			t->end = (enum task_end)e;
	t->exit_code = (int)json_num(j, "exit_code");
	t->signal = (int)json_num(j, "signal");
	for (size_t i = 0; i < metric_descs_n; i++)
		metric_set(&metric_descs[i], t, json_num(m, metric_descs[i].name));
	if (!strncmp(json_str(srcs, "mem.peak_bytes"), "cgroup", 6)) {
		t->have_memory_peak = true;
		t->memory_peak_source = json_str(srcs, "mem.peak_bytes");
		t->memory_peak = (__u64)json_num(m, "mem.peak_bytes");
	}
	t->cpu_stat_note = json_get(j, "cgroup_cpu_stat_note") ? json_str(j, "cgroup_cpu_stat_note")
			   : json_get(cs, "note")	       ? json_str(cs, "note")
							       : NULL;
	if (cs && cs->type == JSON_OBJ) {
		t->have_cpu_stat = true;
		t->cpu_stat.usage_us = (__u64)json_num(cs, "usage_usec");
		t->cpu_stat.user_us = (__u64)json_num(cs, "user_usec");
		t->cpu_stat.system_us = (__u64)json_num(cs, "system_usec");
	}
	t->leftovers = (int)json_num(left, "count");
	for (int a = LEFTOVER_NONE; a <= LEFTOVER_KEPT; a++)
		if (!strcmp(json_str(left, "action"), leftover_names[a]))
			t->leftover_action = (enum leftover_action)a;
	if (net_from_json(&t->net, m, json_get(j, "network")))
		return -ENOMEM;
	for (size_t i = 0; i < hist_descs_n; i++)
		hist_from_json(hist_descs[i].at(t), json_get(hists, hist_descs[i].name));
	t->lost_total = (__u64)json_num(json_get(j, "collector"), "lost_events_total");
	t->skipped_runs = (__u64)json_num(json_get(j, "collector"), "skipped_runs");
	t->by_daemon = !strcmp(json_str(json_get(j, "collector"), "mode"), "daemon");
	{
		const char *why;

		const char *what = json_str(json_get(j, "collector"), "collect");
		const struct json *faults = json_get(json_get(j, "collector"), "faults");

		/* Records from before collect: everything. */
		if (!strcmp(what, "cgroup"))
			t->collect = COLLECT_CGROUP_ONLY;
		else if (collect_parse(what, &t->collect, &why))
			t->collect = COLLECT_ALL;
		for (size_t i = 0; i < json_len(faults); i++)
			if (json_at(faults, i)->type == JSON_STR)
				task_add_fault(t, "%s", json_at(faults, i)->str);
	}
	t->exec_args_truncated = (__u64)json_num(j, "exec_args_truncated");
	if (phases_from_json(t, json_get(j, "phases")) ||
	    um_from_json(t, json_get(j, "user_metrics"), json_get(j, "metrics_socket")) ||
	    anchors_from_json(t, json_get(j, "log_anchors")))
		return -ENOMEM;
	if (notes__from_json(&t->notes, json_get(j, "events"),
			     (__u64)json_num(j, "events_dropped")) ||
	    procs__from_json(&t->procs, json_get(j, "processes"),
			     (__u64)json_num(j, "processes_dropped")))
		return -EINVAL;
	n = json_len(progs);
	if (n) {
		t->progs = calloc(n, sizeof(*t->progs));
		if (!t->progs)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			const struct json *p = json_at(progs, i);

			snprintf(t->progs[i].path, TP_PATH_LEN, "%s", json_str(p, "path"));
			t->progs[i].execs = (__u64)json_num(p, "execs");
			t->progs[i].cpu_ns = (__u64)json_num(p, "cpu_ns");
		}
		t->nprogs = n;
	}
	return 0;
}

static void perf_subtests(struct jw *w, __u64 cpu_ns, __u64 wall_ns, __u64 rd, __u64 wr, __s64 peak,
			  __u64 execs)
{
	static const char *const names[] = { "cpu_time",       "cpu_avg_cores",	 "io_read_bytes",
					     "io_write_bytes", "peak_mem_bytes", "execs" };
	static const char *const units[] = { "s", "cores", "bytes", "bytes", "bytes", "count" };
	double v[] = { cpu_ns / 1e9,
		       wall_ns ? (double)cpu_ns / (double)wall_ns : 0,
		       (double)rd,
		       (double)wr,
		       peak > 0 ? (double)peak : 0,
		       (double)execs };

	jw_key(w, "subtests");
	jw_arr_begin(w);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		jw_obj_begin(w);
		jw_kstr(w, "name", names[i]);
		jw_kdouble(w, "value", v[i]);
		jw_kstr(w, "unit", units[i]);
		jw_key(w, "lowerIsBetter");
		jw_bool(w, true);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void task_print_perfherder(FILE *f, const struct task_record *t)
{
	fputs(PERFHERDER_PREFIX, f);
	task_write_perfherder(f, t);
	fputc('\n', f);
	fflush(f);
}

void task_write_perfherder(FILE *f, const struct task_record *t)
{
	const struct task_figures *g = &t->fig;
	const char *src;
	char name[UM_NAME_MAX + 8];
	struct jw w;

	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_key(&w, "framework");
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "job_resource_usage");
	jw_obj_end(&w);
	jw_key(&w, "suites");
	jw_arr_begin(&w);
	/* The suite's value is its wall time in seconds. */
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "task");
	jw_kdouble(&w, "value", t->wall_ns / 1e9);
	jw_kstr(&w, "unit", "s");
	perf_subtests(&w, g->cpu_ns, t->wall_ns, g->ioac.read_bytes, g->ioac.write_bytes,
		      (__s64)task_mem_peak(t, &src), g->execs);
	jw_obj_end(&w);
	for (size_t i = 0; t->phases && i < t->phases->n; i++) {
		const struct phase *p = &t->phases->p[i];

		snprintf(name, sizeof(name), "phase.%s", p->name);
		jw_obj_begin(&w);
		jw_kstr(&w, "name", name);
		jw_kdouble(&w, "value", p->wall_ns / 1e9);
		jw_kstr(&w, "unit", "s");
		perf_subtests(&w, p->cpu_ns, p->wall_ns, p->read_bytes, p->write_bytes,
			      p->peak_mem_bytes, p->execs);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
}
