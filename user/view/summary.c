// SPDX-License-Identifier: GPL-2.0
/* The human summary of a task's record, at most 80 columns wide. */
#include <stdio.h>
#include <string.h>

#include "model/collect_kinds.h"
#include "view/summary.h"

#define SUMMARY_WIDTH 80
#define TOP_PROGRAMS 5

static double avg_cores(const struct task_record *t)
{
	return t->wall_ns ? (double)t->fig.cpu.cpu_ns / (double)t->wall_ns : 0.0;
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
			task_record__exit_status(t));
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
		tp_fmt_bytes(b, sizeof(b), g->ioac.write_bytes), (unsigned long long)g->io.read_ops,
		(unsigned long long)g->io.write_ops);
	/* Two lines: with long figures, one would pass 80 columns. */
	if (g->io.lat.count)
		fprintf(f, "             latency p50 %s, p99 %s\n",
			tp_fmt_dur(a, sizeof(a), tp_hist__quantile(&g->io.lat, 0.50)),
			tp_fmt_dur(b, sizeof(b), tp_hist__quantile(&g->io.lat, 0.99)));
	fprintf(f, "             syscalls read %s, wrote %s\n",
		tp_fmt_bytes(c, sizeof(c), g->ioac.rchar),
		tp_fmt_bytes(d, sizeof(d), g->ioac.wchar));
	tp_fmt_bytes(a, sizeof(a), task_record__mem_peak(t, &src));
	fprintf(f, "  memory     peak %s (%s), %llu OOM kills\n", a, src,
		(unsigned long long)g->mem.oom_kills);
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
		tp_fmt_bytes(a, sizeof(a), task_record__mem_peak(t, &src));
		fprintf(f, "  memory     peak %s (%s)\n", a, src);
	}
	print_phases(f, t);
	print_leftovers(f, t);
	fprintf(f, "  not known  processes, disk, network, programs: no BPF collector\n");
	print_faults(f, t);
}

/* word after the others on the line at *col, on a new indented line when it would not fit. */
static void wrap_word(FILE *f, size_t *col, const char *word)
{
	size_t n = strlen(word);

	if (*col > 13 && *col + 1 + n >= SUMMARY_WIDTH) {
		fputs("\n             ", f);
		*col = 13;
	} else if (*col > 13) {
		fputc(' ', f);
		(*col)++;
	}
	fputs(word, f);
	*col += n;
}

/* The rest of the host while the task ran, and its largest other consumers. */
static void print_host(FILE *f, const struct task_record *t)
{
	const struct host_context *h = &t->hctx;
	char word[SUMMARY_WIDTH], a[32], b[32], c[32];
	size_t col = 13;

	if (h->have_cpu) {
		fputs("  host       ", f);
		snprintf(word, sizeof(word), "the rest used %.2f cores on average (%s)%s",
			 t->wall_ns ? (double)h->other_cpu_ns / (double)t->wall_ns : 0.0,
			 tp_fmt_dur(a, sizeof(a), h->other_cpu_ns), h->nothers ? ":" : "");
		wrap_word(f, &col, word);
		for (int i = 0; i < h->nothers; i++) {
			const struct host_other *o = &h->others[i];

			snprintf(word, sizeof(word), "%s%.40s %s%s",
				 o->kind == HOST_OTHER_TASK	 ? "task "
				 : o->kind == HOST_OTHER_PROGRAM ? "program "
								 : "",
				 o->name, tp_fmt_dur(a, sizeof(a), o->cpu_ns),
				 i + 1 < h->nothers ? "," : "");
			wrap_word(f, &col, word);
		}
		fputc('\n', f);
	}
	if (h->psi.have & 1)
		fprintf(f, "  pressure   cpu %s some, %s full; memory %s; io %s (some)\n",
			tp_fmt_dur(a, sizeof(a), h->psi.some_us[0] * 1000),
			tp_fmt_dur(b, sizeof(b), h->psi.full_us[0] * 1000),
			tp_fmt_dur(c, sizeof(c), h->psi.some_us[1] * 1000),
			tp_fmt_dur(word, sizeof(word), h->psi.some_us[2] * 1000));
	if (h->host_psi.have & 1)
		fprintf(f, "             the host's: cpu %s, memory %s, io %s (some)\n",
			tp_fmt_dur(a, sizeof(a), h->host_psi.some_us[0] * 1000),
			tp_fmt_dur(b, sizeof(b), h->host_psi.some_us[1] * 1000),
			tp_fmt_dur(c, sizeof(c), h->host_psi.some_us[2] * 1000));
	if (h->note[0])
		fprintf(f, "             %.66s\n", h->note);
}

void task_record__print_summary(FILE *f, const struct task_record *t)
{
	char cmd[SUMMARY_WIDTH], a[32], b[32], c[32];
	const struct task_figures *g = &t->fig;

	print_end(f, t);
	format_command(cmd, SUMMARY_WIDTH - 14, t->argv, t->argc);
	fprintf(f, "  command    %s\n", cmd);
	fprintf(f, "  cpu        %s on CPU, %.2f cores on average, %.2f at peak\n",
		tp_fmt_dur(a, sizeof(a), g->cpu.cpu_ns), avg_cores(t), t->peak_cores);
	if (t->have_cpu_stat)
		fprintf(f, "             user %s, system %s (cgroup cpu.stat)\n",
			tp_fmt_dur(b, sizeof(b), t->cpu_stat.user_us * 1000),
			tp_fmt_dur(c, sizeof(c), t->cpu_stat.system_us * 1000));
	if (t->cpu_stat_note)
		fprintf(f, "             %s%.60s\n",
			t->have_cpu_stat ? "cpu.stat " : "no user/system: ", t->cpu_stat_note);
	print_host(f, t);
	if (t->collect & COLLECT_CGROUP_ONLY) {
		print_cgroup_only(f, t);
		return;
	}
	fprintf(f, "  processes  %llu started, %llu execs, %llu failed, at most %lld alive\n",
		(unsigned long long)g->proc.forks, (unsigned long long)g->proc.execs,
		(unsigned long long)g->proc.failed_exits, (long long)g->proc.max_alive);
	if (g->proc.exec_failures)
		fprintf(f,
			"             %llu execs failed (not found along PATH, not executable)\n",
			(unsigned long long)g->proc.exec_failures);
	if (g->proc.left_task)
		fprintf(f,
			"             %llu left the task (moved to another cgroup): counted until "
			"then\n",
			(unsigned long long)g->proc.left_task);
	print_io_mem(f, t);
	net_figures__print_summary(f, &t->net, t->all_endpoints);
	print_phases(f, t);
	if (t->um && (t->um->n || t->um->accepted || um_table__rejected_total(t->um)))
		fprintf(f,
			"  socket     %llu lines taken, %llu refused; %zu metrics of the task's own\n",
			(unsigned long long)t->um->accepted,
			(unsigned long long)um_table__rejected_total(t->um), t->um->n);
	print_leftovers(f, t);
	print_programs(f, t);
	if (task_record__collected(t, "cpu.runq_wait_ns"))
		fprintf(f, "  run queue  %s waiting for a CPU (%.1f%% of its CPU time)\n",
			tp_fmt_dur(a, sizeof(a), g->cpu.wait_ns),
			g->cpu.cpu_ns ? 100.0 * (double)g->cpu.wait_ns / (double)g->cpu.cpu_ns
				      : 0.0);
	if (task_record__collected(t, "cpu.runq_latency")) {
		fprintf(f, "  run queue  %llu waits, p50 %s, p99 %s\n",
			(unsigned long long)g->cpu.runq.count,
			tp_fmt_dur(a, sizeof(a), tp_hist__quantile(&g->cpu.runq, 0.50)),
			tp_fmt_dur(b, sizeof(b), tp_hist__quantile(&g->cpu.runq, 0.99)));
		if (g->cpu.runq.count)
			tp_hist__print(f, &g->cpu.runq, 1, "nsecs");
	}
	if (g->proc.lost_events || t->lost_total)
		fprintf(f,
			"  WARNING    %llu events lost (ring buffer full); program figures are "
			"incomplete\n",
			(unsigned long long)(g->proc.lost_events ? g->proc.lost_events
								 : t->lost_total));
	else
		fprintf(f, "  lost       0 events\n");
	if (t->skipped_runs)
		fprintf(f,
			"  WARNING    %llu probe runs skipped by the kernel (nested on a CPU);\n"
			"             figures may be short\n",
			(unsigned long long)t->skipped_runs);
	print_faults(f, t);
}
