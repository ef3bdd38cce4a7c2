// SPDX-License-Identifier: GPL-2.0
/* A task's record: its end, its programs, its faults, and freeing it. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/collect_kinds.h"
#include "model/task.h"

const char *const task_status_names[TASK_END_KINDS] = {
	[TASK_EXITED] = "exited",	[TASK_SIGNALED] = "signaled",
	[TASK_NOT_FOUND] = "not_found", [TASK_EXEC_FAILED] = "exec_failed",
	[TASK_ENDED] = "ended",		[TASK_INTERRUPTED] = "interrupted",
	[TASK_RUNNING] = "running",
};

int task_record__exit_status(const struct task_record *t)
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

void task_record__set_end(struct task_record *t, int wstatus, int exec_err)
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

__u64 task_record__mem_peak(const struct task_record *t, const char **source)
{
	if (t->have_memory_peak) {
		*source = t->memory_peak_source ? t->memory_peak_source : "cgroup:memory.peak";
		return t->memory_peak;
	}
	*source = "bpf:rss_stat";
	return t->fig.mem.peak_rss_bytes > 0 ? (__u64)t->fig.mem.peak_rss_bytes : 0;
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

int task_record__set_programs(struct task_record *t, const struct program_stat *p, size_t n)
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

void task_record__fini(struct task_record *t)
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
	net_figures__fini(&t->net);
}
void task_record__add_fault(struct task_record *t, const char *fmt, ...)
{
	va_list ap;

	if (t->nfaults >= TASK_FAULTS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(t->faults[t->nfaults++], TASK_FAULT_LEN, fmt, ap);
	va_end(ap);
}

bool task_record__collected(const struct task_record *t, const char *name)
{
	return collect_has(t->collect ? t->collect : COLLECT_ALL, name, t->have_memory_peak);
}
