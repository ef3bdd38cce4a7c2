// SPDX-License-Identifier: GPL-2.0
/* The host around a task, from the kernel's files (hostread.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/hostread.h"

#define CGROUPS_MAX 16384
#define CGROUP_DEPTH_MAX 32
#define PROCS_MAX 65536
#define TOP_CGROUPS 6
#define TOP_PROGRAMS 6
/* Less than this over the task's life is not named. */
#define OTHER_MIN_NS 1000000ULL

int host_read_busy_us(const char *root, __u64 *us)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	struct cg_cpu_stat cs;
	char buf[512];

	if (root && !cgroup_read_cpu_stat(root, &cs)) {
		*us = cs.usage_us;
		return 0;
	}
	/* Before Linux 5.8 the root has no cpu.stat: the busy ticks of /proc/stat. */
	if (tp_read_file("/proc/stat", buf, sizeof(buf)) < 0 || hz <= 0 ||
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		return -ENODATA;
	/* user nice system (idle iowait) irq softirq steal */
	*us = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000000ULL / (unsigned long long)hz;
	return 0;
}

int host_read_usage(const char *root, __u64 *root_us, __u64 *level1_us)
{
	char dir[PATH_MAX + 300];
	struct dirent *e;
	DIR *d;

	*level1_us = 0;
	if (host_read_busy_us(root, root_us))
		return -ENODATA;
	d = opendir(root);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct cg_cpu_stat cs;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
		if (!cgroup_read_cpu_stat(dir, &cs))
			*level1_us += cs.usage_us;
	}
	closedir(d);
	return 0;
}

void psi_read(const char *dir, struct psi_totals *out)
{
	char file[PATH_MAX], buf[512];

	memset(out, 0, sizeof(*out));
	for (int r = 0; r < PSI_RESOURCES; r++) {
		if (dir)
			snprintf(file, sizeof(file), "%s/%s.pressure", dir, psi_resource_names[r]);
		else
			snprintf(file, sizeof(file), "/proc/pressure/%s", psi_resource_names[r]);
		if (tp_read_file(file, buf, sizeof(buf)) >= 0 &&
		    !psi_parse(buf, &out->some_us[r], &out->full_us[r]))
			out->have |= 1u << r;
	}
}

struct walk {
	struct cg_usage *cgs;
	size_t n, cap;
	size_t root_len;
};

/* The cgroup dir path's usage, then each below it's, depth first, to CGROUP_DEPTH_MAX. */
static void walk_usage(struct walk *w, char *path, size_t len, int depth)
{
	struct cg_cpu_stat cs;
	struct dirent *e;
	DIR *d;

	if (w->n >= CGROUPS_MAX)
		return;
	if (!cgroup_read_cpu_stat(path, &cs)) {
		if (w->n == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 64;
			struct cg_usage *n = realloc(w->cgs, cap * sizeof(*n));

			if (!n)
				return;
			w->cgs = n;
			w->cap = cap;
		}
		w->cgs[w->n].rel = strdup(path + w->root_len);
		w->cgs[w->n].usage_us = cs.usage_us;
		if (w->cgs[w->n].rel)
			w->n++;
	}
	if (depth >= CGROUP_DEPTH_MAX || !(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);

		if (e->d_type != DT_DIR || e->d_name[0] == '.' || len + 1 + nl >= PATH_MAX)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, nl + 1);
		walk_usage(w, path, len + 1 + nl, depth + 1);
		path[len] = '\0';
	}
	closedir(d);
}

/* Paths in tree order: '/' before every other byte, so a subtree follows its root. */
static int by_rel(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)((const struct cg_usage *)a)->rel;
	const unsigned char *y = (const unsigned char *)((const struct cg_usage *)b)->rel;

	for (; *x && *x == *y; x++, y++)
		;
	return (*x == '/' ? 1 : *x) - (*y == '/' ? 1 : *y);
}

static int by_pid(const void *a, const void *b)
{
	int x = ((const struct proc_cpu *)a)->pid, y = ((const struct proc_cpu *)b)->pid;

	return (x > y) - (x < y);
}

/* /proc/PID/stat (dir the open /proc): comm, start time and CPU ticks. */
static int read_proc(int dir, int pid, struct proc_cpu *p)
{
	char file[32], buf[1024], *close_paren;
	unsigned long long ut, st, start;
	ssize_t n;

	int fd;

	snprintf(file, sizeof(file), "%d/stat", pid);
	fd = openat(dir, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	if (!close_paren || !strchr(buf, '('))
		return -EINVAL;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
	 * cutime cstime priority nice threads itrealvalue starttime */
	if (sscanf(close_paren + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %llu",
		   &ut, &st, &start) != 3)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->cpu_ticks = ut + st;
	p->start_ticks = start;
	snprintf(p->comm, sizeof(p->comm), "%.*s", (int)(close_paren - strchr(buf, '(') - 1),
		 strchr(buf, '(') + 1);
	return 0;
}

struct pidset {
	int *pids;
	size_t n, cap;
};

/* A process of the task into the set of those skipped. */
static int take_pid(pid_t pid, void *ctx)
{
	struct pidset *ps = ctx;

	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 64;
		int *np = realloc(ps->pids, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		ps->pids = np;
		ps->cap = cap;
	}
	ps->pids[ps->n++] = pid;
	return 0;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Every process's CPU but the task's (the processes of its subtree now). */
static void scan_procs(struct host_snap *s, const char *task)
{
	DIR *d = opendir("/proc");
	struct pidset skip = { 0 };
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return;
	if (task) {
		cgroup_for_each_proc(task, take_pid, &skip);
		if (skip.n)
			qsort(skip.pids, skip.n, sizeof(*skip.pids), int_cmp);
	}
	while ((e = readdir(d)) && s->nprocs < PROCS_MAX) {
		struct proc_cpu p;
		int pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = atoi(e->d_name);
		if ((skip.n && bsearch(&pid, skip.pids, skip.n, sizeof(int), int_cmp)) ||
		    read_proc(dirfd(d), pid, &p))
			continue;
		if (s->nprocs == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct proc_cpu *n = realloc(s->procs, ncap * sizeof(*n));

			if (!n)
				break;
			s->procs = n;
			cap = ncap;
		}
		s->procs[s->nprocs++] = p;
	}
	closedir(d);
	free(skip.pids);
	if (s->nprocs)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), by_pid);
}

int host_snap__take(struct host_snap *s, const char *root, bool full, const char *task)
{
	memset(s, 0, sizeof(*s));
	s->t_ns = tp_now_ns();
	s->have_busy = !host_read_busy_us(root, &s->busy_us);
	psi_read(NULL, &s->psi);
	if (full && root) {
		char path[PATH_MAX];
		struct walk w = { .root_len = strlen(root) };

		snprintf(path, sizeof(path), "%s", root);
		walk_usage(&w, path, strlen(path), 0);
		s->cgs = w.cgs;
		s->ncgs = w.n;
		if (s->ncgs)
			qsort(s->cgs, s->ncgs, sizeof(*s->cgs), by_rel);
	}
	if (full)
		scan_procs(s, task);
	return s->have_busy || s->psi.have || s->ncgs ? 0 : -ENODATA;
}

void host_snap__free(struct host_snap *s)
{
	for (size_t i = 0; i < s->ncgs; i++)
		free(s->cgs[i].rel);
	free(s->cgs);
	free(s->procs);
	memset(s, 0, sizeof(*s));
}

/* Whether rel is dir or below it. */
static bool within(const char *rel, const char *dir)
{
	size_t n = strlen(dir);

	if (!*dir || !strcmp(dir, "/"))
		return true;
	return !strncmp(rel, dir, n) && (rel[n] == '\0' || rel[n] == '/');
}

static const struct cg_usage *find_cg(const struct host_snap *s, const char *rel)
{
	struct cg_usage key = { .rel = (char *)rel };

	return s->ncgs ? bsearch(&key, s->cgs, s->ncgs, sizeof(*s->cgs), by_rel) : NULL;
}

/* A cgroup's CPU from a to b (one made since: all of its CPU). */
static __u64 cg_delta(const struct host_snap *a, const struct cg_usage *c)
{
	const struct cg_usage *was = find_cg(a, c->rel);

	if (!was)
		return c->usage_us;
	return c->usage_us > was->usage_us ? c->usage_us - was->usage_us : 0;
}

/* A task's cgroup: named by the daemon, or one of taskprobe's own (.../taskprobe/ID). */
static bool task_cgroup(const char *rel, const struct host_tasks *tasks, char *id, size_t len)
{
	const char *slash = strrchr(rel, '/');

	if (tasks && tasks->name && tasks->name(tasks->ctx, rel, id, len))
		return true;
	if (!slash || slash == rel)
		return false;
	if (slash - rel >= 10 && !strncmp(slash - 10, "/taskprobe", 10)) {
		snprintf(id, len, "%s", slash + 1);
		return true;
	}
	return false;
}

static void add_other(struct host_other *top, int *n, int max, const struct host_other *o)
{
	int at = *n;

	if (o->cpu_ns < OTHER_MIN_NS)
		return;
	while (at > 0 && top[at - 1].cpu_ns < o->cpu_ns)
		at--;
	if (at >= max)
		return;
	memmove(&top[at + 1], &top[at], (size_t)((*n < max ? *n : max - 1) - at) * sizeof(*top));
	top[at] = *o;
	if (*n < max)
		(*n)++;
}

/*
 * Each cgroup's own CPU (less its children's), or a task's whole subtree as one; the
 * measured task's subtree left out (its ancestors' own CPU does not hold it).
 */
static __u64 top_cgroups(struct host_other *top, int *n, const struct host_snap *a,
			 const struct host_snap *b, const char *task_rel,
			 const struct host_tasks *tasks)
{
	char id[HOST_OTHER_NAME];
	__u64 total = 0;
	const char *unit = NULL; /* a task's subtree being summed as one */

	for (size_t i = 0; i < b->ncgs; i++) {
		const struct cg_usage *c = &b->cgs[i];
		struct host_other o = { .kind = HOST_OTHER_CGROUP };
		__u64 us = cg_delta(a, c);

		if (within(c->rel, task_rel) && *task_rel)
			continue;
		if (unit && within(c->rel, unit))
			continue;
		unit = NULL;
		if (task_cgroup(c->rel, tasks, id, sizeof(id))) {
			/* A task's whole subtree, unless the measured task is inside it. */
			if (!within(task_rel, c->rel)) {
				o.kind = HOST_OTHER_TASK;
				snprintf(o.name, sizeof(o.name), "%s", id);
				o.cpu_ns = us * 1000;
				add_other(top, n, TOP_CGROUPS, &o);
				total += us;
				unit = c->rel;
				continue;
			}
		}
		/* Less what its children used: sorted, they follow it directly. */
		for (size_t j = i + 1; j < b->ncgs && within(b->cgs[j].rel, c->rel); j++) {
			const char *rest = b->cgs[j].rel + strlen(c->rel) + 1;
			__u64 child;

			if (strchr(rest, '/'))
				continue; /* a grandchild: in its parent's */
			child = cg_delta(a, &b->cgs[j]);
			us = us > child ? us - child : 0;
		}
		snprintf(o.name, sizeof(o.name), "%s", *c->rel ? c->rel : "/");
		o.cpu_ns = us * 1000;
		add_other(top, n, TOP_CGROUPS, &o);
		total += us;
	}
	return total;
}

/* Processes outside the task, summed by program (comm). */
static void top_programs(struct host_other *top, int *n, const struct host_snap *a,
			 const struct host_snap *b)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct host_other *progs = NULL;
	size_t np = 0, cap = 0, j = 0;

	if (hz <= 0)
		return;
	for (size_t i = 0; i < b->nprocs; i++) {
		const struct proc_cpu *p = &b->procs[i];
		__u64 ticks = p->cpu_ticks;
		size_t k;

		while (j < a->nprocs && a->procs[j].pid < p->pid)
			j++;
		if (j < a->nprocs && a->procs[j].pid == p->pid &&
		    a->procs[j].start_ticks == p->start_ticks)
			ticks = ticks > a->procs[j].cpu_ticks ? ticks - a->procs[j].cpu_ticks : 0;
		if (!ticks)
			continue;
		for (k = 0; k < np && strcmp(progs[k].name, p->comm); k++)
			;
		if (k == np) {
			if (np == cap) {
				size_t ncap = cap ? cap * 2 : 32;
				struct host_other *nn = realloc(progs, ncap * sizeof(*nn));

				if (!nn)
					break;
				progs = nn;
				cap = ncap;
			}
			memset(&progs[np], 0, sizeof(progs[np]));
			progs[np].kind = HOST_OTHER_PROGRAM;
			snprintf(progs[np].name, sizeof(progs[np].name), "%s", p->comm);
			np++;
		}
		progs[k].cpu_ns += ticks * (1000000000ULL / (__u64)hz);
		progs[k].processes++;
	}
	for (size_t k = 0; k < np; k++)
		add_other(top, n, TOP_PROGRAMS, &progs[k]);
	free(progs);
}

#define GONE_MAX 256

/*
 * b with the tasks' cgroups removed since a (each with its last usage) put back, so
 * that a task that ended meanwhile is named, not folded into its parent: *merged is
 * the caller's to free (NULL: b as it is).
 */
static struct host_snap with_gone(const struct host_snap *a, const struct host_snap *b,
				  const struct host_tasks *tasks, struct cg_usage **merged)
{
	struct cg_usage gone[GONE_MAX];
	struct host_snap m = *b;
	size_t n = 0, k;

	*merged = NULL;
	if (tasks && tasks->gone)
		n = tasks->gone(tasks->ctx, a->t_ns, gone, GONE_MAX);
	if (!n || !(*merged = calloc(b->ncgs + n, sizeof(**merged))))
		return m;
	if (b->ncgs)
		memcpy(*merged, b->cgs, b->ncgs * sizeof(**merged));
	k = b->ncgs;
	for (size_t i = 0; i < n; i++)
		if (!find_cg(b, gone[i].rel))
			(*merged)[k++] = gone[i];
	qsort(*merged, k, sizeof(**merged), by_rel);
	m.cgs = *merged;
	m.ncgs = k;
	return m;
}

void host_context__compute(struct host_context *out, const struct host_snap *a,
			   const struct host_snap *b, const char *task_rel, __u64 task_cpu_ns,
			   const struct host_tasks *tasks)
{
	struct host_other cgs[TOP_CGROUPS], progs[TOP_PROGRAMS];
	struct cg_usage *merged;
	struct host_snap bm = with_gone(a, b, tasks, &merged);
	int ncg = 0, nprog = 0;
	__u64 others_us;

	out->host_psi = psi_totals__delta(&a->psi, &b->psi);
	others_us = top_cgroups(cgs, &ncg, a, &bm, task_rel ? task_rel : "", tasks);
	free(merged);
	/*
	 * The others' CPU is the sum of every cgroup's own but the task's: each cgroup's
	 * usage is the scheduler's clock, as the task's is. Only the root's own (kernel
	 * threads, processes in no cgroup) comes from its ticks, less its children's.
	 */
	if (a->ncgs && b->ncgs) {
		out->have_cpu = true;
		out->other_cpu_ns = others_us * 1000;
		out->host_cpu_ns = out->other_cpu_ns + task_cpu_ns;
	} else if (a->have_busy && b->have_busy) {
		out->have_cpu = true;
		out->host_cpu_ns = b->busy_us > a->busy_us ? (b->busy_us - a->busy_us) * 1000 : 0;
		out->other_cpu_ns =
			out->host_cpu_ns > task_cpu_ns ? out->host_cpu_ns - task_cpu_ns : 0;
	}
	top_programs(progs, &nprog, a, b);
	out->nothers = 0;
	for (int i = 0; i < ncg && out->nothers < HOST_OTHERS_MAX; i++)
		out->others[out->nothers++] = cgs[i];
	for (int i = 0; i < nprog && out->nothers < HOST_OTHERS_MAX; i++)
		out->others[out->nothers++] = progs[i];
}
