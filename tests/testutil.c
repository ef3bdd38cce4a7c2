// SPDX-License-Identifier: GPL-2.0
/* What tests share: temporary files, running commands, task records, test cgroups. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "model/phases.h"
#include "model/task.h"
#include "store/store.h"
#include "harness.h"
#include "testutil.h"

#define MAX_TRACKED 64

#define TMPDIR_BASE "/var/tmp"
static char tmpdir[PATH_MAX];
static char paths[MAX_TRACKED][PATH_MAX];
static int npaths;
static char cgroups[MAX_TRACKED][PATH_MAX];
static int ncgroups;
static pid_t pids[MAX_TRACKED];
static int npids;
static void *allocs[MAX_TRACKED * 4];
static int nallocs;
static struct json *jsons[MAX_TRACKED];
static int njsons;
static int cg_seq;
/* Who the next tu_run's command runs as (tu_run_as), or -1: as the test. */
static uid_t run_uid = (uid_t)-1;
static gid_t run_gid = (gid_t)-1;

static void *keep(void *p)
{
	if (p && nallocs < (int)ARRAY_SIZE(allocs))
		allocs[nallocs++] = p;
	return p;
}

const char *tu_tmp(const char *name)
{
	if (!tmpdir[0]) {
		/* The test's pid in the name: the harness removes it after a crash. */
		snprintf(tmpdir, sizeof(tmpdir), TMPDIR_BASE "/taskprobe-test.%d.XXXXXX",
			 (int)getpid());
		if (!mkdtemp(tmpdir)) {
			tmpdir[0] = '\0';
			return "/nonexistent";
		}
	}
	if (npaths >= MAX_TRACKED)
		npaths = 0;
	snprintf(paths[npaths], PATH_MAX, "%s/%s", tmpdir, name);
	return paths[npaths++];
}

const char *tu_bin(void)
{
	const char *b = getenv("TASKPROBE_BIN");

	return b ? b : "build/taskprobe";
}

const char *tu_helper(const char *name)
{
	const char *dir = getenv("TASKPROBE_HELPERS");
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "build/tests/helpers", name);
	return keep(strdup(buf));
}

static char *slurp(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	return buf;
}

/* Forks argv (searched in PATH) with stdin from /dev/null and the given out/err fds. */
static pid_t spawn_fds(char *const argv[], int out, int err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 0);
		dup2(out >= 0 ? out : devnull, 1);
		dup2(err >= 0 ? err : devnull, 2);
		if (run_uid != (uid_t)-1 &&
		    (setgroups(0, NULL) || setgid(run_gid) || setuid(run_uid)))
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		tu_track_pid(pid);
	return pid;
}

int tu_run(char *const argv[], struct tu_result *r, int timeout_s)
{
	char outp[PATH_MAX], errp[PATH_MAX];
	__u64 start = tp_now_ns(), deadline = start + (__u64)timeout_s * 1000000000ULL;
	int ofd, efd, status;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	snprintf(outp, sizeof(outp), "%s", tu_tmp("run.out"));
	snprintf(errp, sizeof(errp), "%s", tu_tmp("run.err"));
	ofd = open(outp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	efd = open(errp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ofd < 0 || efd < 0)
		return -errno;
	pid = spawn_fds(argv, ofd, efd);
	if (pid < 0)
		return -errno;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		if (w == pid)
			break;
		if (tp_now_ns() > deadline) {
			CHECK(false, "%s: still running after %d s: killed", argv[0], timeout_s);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		nanosleep(&ts, NULL);
	}
	r->wall_ns = tp_now_ns() - start;
	r->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	r->out = keep(slurp(ofd));
	r->err = keep(slurp(efd));
	close(ofd);
	close(efd);
	return 0;
}

int tu_run_as(uid_t uid, gid_t gid, char *const argv[], struct tu_result *r, int timeout_s)
{
	int err;

	run_uid = uid;
	run_gid = gid;
	err = tu_run(argv, r, timeout_s);
	run_uid = (uid_t)-1;
	run_gid = (gid_t)-1;
	return err;
}

pid_t tu_spawn(char *const argv[])
{
	return spawn_fds(argv, -1, -1);
}

pid_t tu_spawn_fds(char *const argv[], int out, int err)
{
	return spawn_fds(argv, out, err);
}

int tu_tp(struct tu_result *r, int timeout_s, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)tu_bin();
	va_start(ap, timeout_s);
	while (argc < 63 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return tu_run(argv, r, timeout_s);
}

const struct json *tu_parse_json(const char *text)
{
	char err[128];
	struct json *j;

	if (!CHECK(text != NULL, "no JSON text"))
		return NULL;
	j = json_parse(text, strlen(text), err, sizeof(err));
	if (!CHECK(j != NULL, "bad JSON: %s: %.200s", err, text))
		return NULL;
	if (njsons < MAX_TRACKED)
		jsons[njsons++] = j;
	return j;
}

const struct json *tu_load_json(const char *path)
{
	char *text;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (!CHECK(fd >= 0, "open %s: %s", path, strerror(errno)))
		return NULL;
	text = keep(slurp(fd));
	close(fd);
	return tu_parse_json(text);
}

void tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (CHECK(f != NULL, "cannot write %s: %s", path, strerror(errno))) {
		fputs(text, f);
		fclose(f);
	}
}

double tu_num(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_NUM ? v->num : -1;
}

double tu_metric(const struct json *rec, const char *name)
{
	return tu_num(json_get(rec, "metrics"), name);
}

int tu_events(const struct json *rec, const char *kind, const char *detail_has)
{
	const struct json *ev = json_get(rec, "events");
	__u64 last = 0, wall_ms = (__u64)tu_num(rec, "wall_ns") / 1000000;
	int n = 0;

	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);
		__u64 t = (__u64)json_num(e, "t_ms");

		/* Each in the task's life, in the order they happened. */
		CHECK(t <= wall_ms + 1 && t + 1 >= last,
		      "event %zu at %llu ms (task %llu ms, last %llu)", i, (unsigned long long)t,
		      (unsigned long long)wall_ms, (unsigned long long)last);
		last = t > last ? t : last;
		if (!strcmp(json_str(e, "kind"), kind) &&
		    (!detail_has || strstr(json_str(e, "detail"), detail_has)))
			n++;
	}
	return n;
}

const struct json *tu_find(const struct json *arr, const char *key, const char *value)
{
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct json *v = json_get(json_at(arr, i), key);

		if (v && v->type == JSON_STR && !strcmp(v->str, value))
			return json_at(arr, i);
	}
	return NULL;
}

const struct json *tu_program(const struct json *rec, const char *path)
{
	return tu_find(json_get(rec, "programs"), "path", path);
}

int tu_read_truth(const char *path, double *children_ns, double *self_ns)
{
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%lf %lf", children_ns, self_ns);
	fclose(f);
	return n == 2 ? 0 : -EINVAL;
}

const char *tu_cgroup_root(void)
{
	static char root[PATH_MAX];

	if (!root[0] && cgroup2_mount(root, sizeof(root)))
		tp_skip("no cgroup2 mount");
	return root;
}

#define NETLAB "scripts/netlab/netlab.sh"

static bool netlab_up, pglab_up;

static void netlab_down(pid_t test_pid)
{
	char id[32];
	char *argv[] = { NETLAB, "down-id", id, NULL };
	struct tu_result r;

	snprintf(id, sizeof(id), "tpl%d", (int)test_pid);
	tu_run(argv, &r, 30);
}

const char *tu_netlab(const char *statuses)
{
	const char *dir = tu_tmp("lab");
	char id[32];
	char *argv[] = { NETLAB, "up", (char *)dir, id, (char *)statuses, NULL };
	struct tu_result r;

	snprintf(id, sizeof(id), "tpl%d", (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST)
		return NULL;
	netlab_up = true;
	tu_run(argv, &r, 60);
	if (!ASSERT_EQ(r.status, 0, "netlab up")) {
		fprintf(stderr, "%s%s", r.out ? r.out : "", r.err ? r.err : "");
		dir = NULL;
	}
	return dir;
}

#define PGLAB "scripts/pglab/pglab.sh"

static void pglab_down(pid_t test_pid)
{
	char dir[64];
	char *argv[] = { PGLAB, "down", dir, NULL };
	struct tu_result r;

	snprintf(dir, sizeof(dir), "/var/tmp/taskprobe-pg-%d", (int)test_pid);
	if (!access(dir, F_OK))
		tu_run(argv, &r, 60);
}

const char *tu_metrics_of(int port, struct tu_result *r)
{
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	tu_run((char *[]){ "curl", "-s", "--max-time", "10", url, NULL }, r, 30);
	return r->out ? r->out : "";
}

double tu_prom_value(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

int tu_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

const char *tu_pglab(int *port)
{
	static char dir[64];
	char pw[128], portbuf[16];
	char *argv[] = { PGLAB, "up", dir, portbuf, NULL };
	struct tu_result r;
	unsigned seed = (unsigned)tp_now_ns() ^ (unsigned)getpid();

	snprintf(dir, sizeof(dir), "/var/tmp/taskprobe-pg-%d", (int)getpid());
	*port = tu_free_port();
	snprintf(portbuf, sizeof(portbuf), "%d", *port);
	pglab_down(getpid());
	if (mkdir(dir, 0755))
		return NULL;
	/* A password made now, never written anywhere but the lab. */
	snprintf(pw, sizeof(pw), "pw-%08x%08x", rand_r(&seed), rand_r(&seed));
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/pw", dir);
		tu_write_file(path, pw);
	}
	pglab_up = true;
	tu_run(argv, &r, 120);
	if (!ASSERT_EQ(r.status, 0, "pglab up")) {
		fprintf(stderr, "%s%s", r.out ? r.out : "", r.err ? r.err : "");
		return NULL;
	}
	return dir;
}

int tu_pglab_ctl(const char *dir, const char *verb)
{
	char *argv[] = { PGLAB, (char *)verb, (char *)dir, NULL };
	struct tu_result r;

	tu_run(argv, &r, 120);
	if (r.status)
		fprintf(stderr, "pglab %s: %s%s", verb, r.out ? r.out : "", r.err ? r.err : "");
	return r.status;
}

int tu_psql(const char *dir, const char *sql, struct tu_result *r)
{
	char *argv[] = { PGLAB, "psql", (char *)dir, (char *)sql, NULL };

	return tu_run(argv, r, 120);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

/* This process's temporary directory, with what is in it. */
static void rm_tmpdir(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
	npaths = 0;
}

void tu_cleanup_orphans(pid_t test_pid)
{
	char path[PATH_MAX], prefix[64];
	struct dirent *e;
	DIR *dir;

	netlab_down(test_pid);
	pglab_down(test_pid);
	/* Its temporary directory, which a crashed test did not remove. */
	snprintf(prefix, sizeof(prefix), "taskprobe-test.%d.", (int)test_pid);
	dir = opendir(TMPDIR_BASE);
	while (dir && (e = readdir(dir))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), TMPDIR_BASE "/%s", e->d_name);
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (dir)
		closedir(dir);
	/* The harness's own, where netlab_down and pglab_down ran their commands. */
	rm_tmpdir();
	for (int seq = 1; seq <= MAX_TRACKED; seq++) {
		snprintf(path, sizeof(path), "%s/taskprobe-test-%d-%d", tu_cgroup_root(),
			 (int)test_pid, seq);
		if (access(path, F_OK))
			continue;
		cgroup_kill(path);
		for (int t = 0; t < 200 && cgroup_populated(path) > 0; t++)
			usleep(10000);
		cgroup_remove_task(path);
	}
}

int tu_cgroup_make(char *path, size_t len)
{
	snprintf(path, len, "%s/taskprobe-test-%d-%d", tu_cgroup_root(), (int)getpid(), ++cg_seq);
	if (mkdir(path, 0755))
		return -errno;
	if (ncgroups < MAX_TRACKED)
		snprintf(cgroups[ncgroups++], PATH_MAX, "%s", path);
	return 0;
}

void tu_track_pid(pid_t pid)
{
	if (npids < MAX_TRACKED)
		pids[npids++] = pid;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int tu_count_long_lines(const char *s, size_t width)
{
	int n = 0;

	while (s && *s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s), cols = 0;

		/* Columns, not bytes: UTF-8 continuation bytes ("…" is three) take none. */
		for (size_t i = 0; i < len; i++)
			cols += ((unsigned char)s[i] & 0xc0) != 0x80;
		if (cols > width) {
			fprintf(stderr, "    long line (%zu): %.*s\n", len, (int)len, s);
			n++;
		}
		s += len + (nl ? 1 : 0);
	}
	return n;
}

void tu_cleanup(void)
{
	for (int i = 0; i < npids; i++) {
		/* Only pids we started, and only while they are still our unreaped children. */
		if (waitpid(pids[i], NULL, WNOHANG) == 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
	npids = 0;
	if (netlab_up)
		netlab_down(getpid());
	netlab_up = false;
	if (pglab_up)
		pglab_down(getpid());
	pglab_up = false;
	for (int i = ncgroups - 1; i >= 0; i--) {
		if (cgroup_populated(cgroups[i]) > 0) {
			cgroup_kill(cgroups[i]);
			for (int t = 0; t < 200 && cgroup_populated(cgroups[i]) > 0; t++)
				usleep(10000);
		}
		cgroup_remove_task(cgroups[i]);
	}
	ncgroups = 0;
	for (int i = 0; i < njsons; i++)
		json_free(jsons[i]);
	njsons = 0;
	for (int i = 0; i < nallocs; i++)
		free(allocs[i]);
	nallocs = 0;
	rm_tmpdir();
}

bool tu_wait_socket(const char *sock, pid_t daemon)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	for (int i = 0; i < 1000; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));
		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		if (waitpid(daemon, NULL, WNOHANG) == daemon)
			return false;
		usleep(10000);
	}
	return false;
}

pid_t tu_daemon(const char *db, const char *sock)
{
	char sock_opt[4200];
	pid_t d;

	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", "--db", (char *)db, sock_opt,
				 "--listen=off", NULL });
	if (d <= 0 || !tu_wait_socket(sock, d))
		return -1;
	/* TASKPROBE_DB names a store of the run's own, which embeds the collector. */
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	return d;
}

int tu_store_task(struct store *s, const struct tu_task *t)
{
	static char *argv[] = { "make", "check" };
	struct label host[2];
	struct phase_snap at = { 0 };
	struct task_record r;
	struct phases ph;
	int nhost = 0, err;
	__s64 tid;

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", t->id);
	snprintf(r.host, sizeof(r.host), "%s", t->host ? t->host : "worker-1");
	r.argv = argv;
	r.argc = 2;
	if (t->job) {
		r.labels[0].key = "job";
		r.labels[0].val = (char *)t->job;
		r.nlabels = 1;
	}
	if (t->ncpu) {
		host[nhost].key = "ncpu";
		host[nhost++].val = (char *)t->ncpu;
	}
	if (t->mem_total) {
		host[nhost].key = "mem_total";
		host[nhost++].val = (char *)t->mem_total;
	}
	r.start_real_ns = t->start_ns;
	r.wall_ns = t->wall_ns;
	r.main_wall_ns = t->wall_ns;
	r.fig.cpu.cpu_ns = t->cpu_ns;
	r.fig.proc.execs = t->execs;
	r.fig.mem.peak_rss_bytes = t->mem_bytes;
	r.peak_cores = t->peak_cores;
	r.end = TASK_EXITED;
	for (int e = 0; t->status && e < TASK_END_KINDS; e++)
		if (!strcmp(t->status, task_status_names[e]))
			r.end = (enum task_end)e;
	phases__init(&ph, 0);
	for (int i = 0; i < t->nphases && i < 4; i++) {
		phases__begin(&ph, t->phase[i], &at, 0);
		at.t_ns += t->phase_wall_ns[i];
		at.cpu_ns += t->phase_cpu_ns[i];
		phases__end(&ph, t->phase[i], &at, 0);
	}
	r.phases = &ph;
	err = store__task_begin(s, &r, host, nhost, &tid);
	if (!err)
		err = store__task_end(s, tid, &r);
	phases__fini(&ph);
	return err;
}
