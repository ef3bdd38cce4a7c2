// SPDX-License-Identifier: GPL-2.0
/* `taskprobe run`: runs a command as a task in its own cgroup, with the collector embedded. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/loop.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/runlink.h"
#include "collector/cgroup.h"
#include "model/collect_kinds.h"
#include "model/config.h"
#include "model/task_json.h"
#include "session/control.h"
#include "session/hostinfo.h"
#include "session/output.h"
#include "session/session.h"
#include "store/compare.h"
#include "store/ship.h"
#include "store/query.h"
#include "store/spool.h"
#include "store/store.h"
#include "view/perfherder.h"
#include "view/report.h"
#include "view/compare.h"
#include "view/summary.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
/* A daemon gone during the task: how long a new one is waited for, and how often asked. */
#define REATTACH_NS (30ULL * 1000 * 1000 * 1000)
#define REATTACH_EVERY_NS (200ULL * 1000 * 1000)
/* What a run stores from the spool at its end, at most, once its own task is stored. */
#define SPOOL_AT_END_MAX 100
#define SPOOL_AT_END_NS (2ULL * 1000 * 1000 * 1000)
/* What a run ships at its end, at most: its own task and some of the backlog. */
#define SHIP_AT_END_MAX 1000
#define SHIP_AT_END_NS (5ULL * 1000 * 1000 * 1000)

const char run_usage[] =
	"usage: taskprobe run [OPTIONS] [--] CMD [ARG...]\n"
	"Runs CMD as a task in a cgroup of its own and prints what the task used.\n"
	"\n"
	"  --id ID           task id, [A-Za-z0-9._:@-]{1,128}, not . or ..\n"
	"                    (default: generated, unique on this host)\n"
	"  --label K=V       label the task (repeatable, at most 64)\n"
	"  --json FILE       write the task record to FILE as JSON\n"
	"  --grace SECS      how long processes may outlive CMD before they are killed\n"
	"                    through cgroup.kill (default 5; 0 kills at once)\n"
	"  --keep-leftovers  leave processes that outlive CMD running; stop counting\n"
	"  --quiet           print no summary\n"
	"  --db PATH         the task database (default: the config's db, else\n"
	"                    /var/lib/taskprobe/taskprobe.db)\n"
	"  --no-db           do not store the task\n"
	"  --no-daemon       embed the collector even when the host daemon runs (it is\n"
	"                    used when it answers on " CONTROL_SOCKET " or\n"
	"                    TASKPROBE_CONTROL; --db, --no-db, --config and TASKPROBE_DB\n"
	"                    name a store or config of this run's own, and embed it too)\n"
	"  --interval MS     series sampling interval, 100 to 60000 (default 1000)\n"
	"  --collect LIST    collect only these: cpu,io,mem,net,http (default: all the\n"
	"                    config's collect; the rest is neither loaded nor recorded)\n"
	"  --config PATH     config file (default /etc/taskprobe/taskprobe.conf)\n"
	"  --perfherder      print a PERFHERDER_DATA line of the figures at the end\n"
	"  --perfherder-file F  write Treeherder's performance artifact to F at the end\n"
	"                    (Treeherder reads artifacts named *perfherder-data*.json)\n"
	"  --summary-file F  append the task's Markdown report to F at its end (a runner\n"
	"                    passes $GITHUB_STEP_SUMMARY); with a job label and earlier\n"
	"                    tasks of that job stored, 'compare --format markdown' too\n"
	"  --rules FILE      counting rules (output|exec NAME [anchor] REGEX per line)\n"
	"  --strict          fail (125, CMD not run) when the collector cannot work,\n"
	"                    rather than run CMD measured as far as possible\n"
	"  -v, --verbose     debug output, libbpf's included\n"
	"  -h, --help        this help\n"
	"\n"
	"Whatever fails on taskprobe's side (BPF, cgroups, the store, the daemon), CMD\n"
	"runs: the fault is one 'taskprobe: warning:' line and a note in the record.\n"
	"Exit status: CMD's own; 128+N if CMD was killed by signal N; 125 for a bad\n"
	"command line (or, with --strict, a collector that cannot work); 126 if CMD could\n"
	"not be executed; 127 if CMD was not found.\n";

enum {
	OPT_ID = 0x100,
	OPT_LABEL,
	OPT_JSON,
	OPT_GRACE,
	OPT_KEEP,
	OPT_QUIET,
	OPT_DB,
	OPT_NO_DB,
	OPT_INTERVAL,
	OPT_CONFIG,
	OPT_PERFHERDER,
	OPT_SUMMARY_FILE,
	OPT_RULES,
	OPT_NO_DAEMON,
	OPT_COLLECT,
	OPT_STRICT,
	OPT_PERFHERDER_FILE,
};

int run_parse_args(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{ "id", required_argument, NULL, OPT_ID },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "keep-leftovers", no_argument, NULL, OPT_KEEP },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "db", required_argument, NULL, OPT_DB },
		{ "no-db", no_argument, NULL, OPT_NO_DB },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "perfherder", no_argument, NULL, OPT_PERFHERDER },
		{ "perfherder-file", required_argument, NULL, OPT_PERFHERDER_FILE },
		{ "summary-file", required_argument, NULL, OPT_SUMMARY_FILE },
		{ "rules", required_argument, NULL, OPT_RULES },
		{ "no-daemon", no_argument, NULL, OPT_NO_DAEMON },
		{ "collect", required_argument, NULL, OPT_COLLECT },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *why;
	int opt;

	memset(o, 0, sizeof(*o));
	o->grace_s = RUN_GRACE_DEFAULT;
	o->interval_ms = RUN_INTERVAL_DEFAULT;
	/* 0, not 1: glibc then forgets its position inside a previous argv. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hvq", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_ID:
			if (!tp_valid_id(optarg)) {
				tp_err("run: invalid task id '%.*s': use " TP_ID_RULE, 64, optarg);
				return -EINVAL;
			}
			snprintf(o->id, sizeof(o->id), "%s", optarg);
			break;
		case OPT_LABEL:
			if (o->nlabels >= TP_LABELS_MAX) {
				tp_err("run: more than %d labels", TP_LABELS_MAX);
				return -EINVAL;
			}
			if (tp_parse_label(optarg, &o->labels[o->nlabels].key,
					   &o->labels[o->nlabels].val, &why)) {
				tp_err("run: invalid label '%.*s': %s", 64, optarg, why);
				return -EINVAL;
			}
			if (hostinfo_is_label(o->labels[o->nlabels].key)) {
				tp_err("run: label '%s' is a host label, recorded by taskprobe "
				       "itself; use another key (instance_type comes from the config "
				       "or TASKPROBE_INSTANCE_TYPE, worker_pool from the config)",
				       o->labels[o->nlabels].key);
				return -EINVAL;
			}
			for (int i = 0; i < o->nlabels; i++)
				if (!strcmp(o->labels[i].key, o->labels[o->nlabels].key)) {
					tp_err("run: label '%s' given twice", o->labels[i].key);
					return -EINVAL;
				}
			o->nlabels++;
			break;
		case OPT_JSON:
			o->json_path = optarg;
			break;
		case OPT_GRACE:
			if (tp_parse_u64(optarg, RUN_GRACE_MAX, &o->grace_s)) {
				tp_err("run: invalid --grace '%.*s': whole seconds from 0 to %d",
				       32, optarg, RUN_GRACE_MAX);
				return -EINVAL;
			}
			break;
		case OPT_KEEP:
			o->keep_leftovers = true;
			break;
		case OPT_DB:
			o->db_path = optarg;
			break;
		case OPT_NO_DB:
			o->no_db = true;
			break;
		case OPT_NO_DAEMON:
			o->no_daemon = true;
			break;
		case OPT_CONFIG:
			o->config_path = optarg;
			break;
		case OPT_COLLECT:
			if (collect_parse(optarg, &o->collect, &why)) {
				tp_err("run: invalid --collect '%.*s': %s", 64, optarg, why);
				return -EINVAL;
			}
			break;
		case OPT_PERFHERDER:
			o->perfherder = true;
			break;
		case OPT_PERFHERDER_FILE:
			o->perfherder_path = optarg;
			break;
		case OPT_STRICT:
			o->strict = true;
			break;
		case OPT_SUMMARY_FILE:
			o->summary_path = optarg;
			break;
		case OPT_RULES:
			o->rules_path = optarg;
			break;
		case OPT_INTERVAL:
			if (tp_parse_u64(optarg, RUN_INTERVAL_MAX, &o->interval_ms) ||
			    o->interval_ms < RUN_INTERVAL_MIN) {
				tp_err("run: invalid --interval '%.*s': milliseconds from %d to %d",
				       32, optarg, RUN_INTERVAL_MIN, RUN_INTERVAL_MAX);
				return -EINVAL;
			}
			break;
		case 'q':
		case OPT_QUIET:
			o->quiet = true;
			break;
		case 'v':
			tp_verbose = 1;
			break;
		case 'h':
			o->help = true;
			return 0;
		default:
			cli_option_error("run", opt, argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		tp_err("run: no command given; usage: taskprobe run [OPTIONS] -- CMD [ARG...]");
		return -EINVAL;
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	return 0;
}

/* A default id, unique on this host: start time and our pid. */
static void default_id(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	char when[32];

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(buf, len, "tp-%s-%d", when, (int)getpid());
}

struct clone_args_v2 {
	__u64 flags;
	__u64 pidfd;
	__u64 child_tid;
	__u64 parent_tid;
	__u64 exit_signal;
	__u64 stack;
	__u64 stack_size;
	__u64 tls;
	__u64 set_tid;
	__u64 set_tid_size;
	__u64 cgroup;
};

/*
 * execvp's search, without its failed execve calls: each would count as one of the
 * task's proc.exec_failures (a PATH of three directories before /usr/bin made every
 * task show three). Candidates are looked at with access(); one execve is made.
 */
static int exec_path(char **argv)
{
	const char *path = getenv("PATH"), *p;
	char file[PATH_MAX];
	int err = ENOENT;

	if (strchr(argv[0], '/')) {
		execv(argv[0], argv);
		return errno;
	}
	for (p = path && *path ? path : "/bin:/usr/bin"; p;
	     p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL) {
		size_t n = strcspn(p, ":");
		struct stat st;

		if ((size_t)snprintf(file, sizeof(file), "%.*s%s%s", (int)n, n ? p : ".", "/",
				     argv[0]) >= sizeof(file) ||
		    stat(file, &st) || !S_ISREG(st.st_mode))
			continue;
		if (access(file, X_OK)) {
			err = EACCES;
			continue;
		}
		execv(file, argv);
		return errno;
	}
	return err;
}

/* In the child: exec CMD, or report errno on the close-on-exec pipe. */
static void __attribute__((noreturn)) child_exec(char **argv, const sigset_t *mask, int errfd,
						 const struct output *out, const char *memcg)
{
	char procs[PATH_MAX];
	int err;

	sigprocmask(SIG_SETMASK, mask, NULL);
	output__child(out);
	/* The v1 memory mirror (hybrid hosts): joined before the command's first page. */
	if (memcg[0]) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", memcg);
		tp_write_file(procs, "0");
	}
	err = exec_path(argv);
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(EXIT_NOT_FOUND);
	_exit(EXIT_NOT_FOUND);
}

/*
 * Starts CMD inside the task's cgroup from its first instruction (CLONE_INTO_CGROUP),
 * so that even its first fork is the task's. Before Linux 5.7, it moves itself in.
 * cgroup NULL: a plain fork (the command runs unmeasured).
 */
static pid_t spawn(char **argv, const char *cgroup, const char *memcg, const sigset_t *mask,
		   int *pidfd, int *exec_err, const struct output *out)
{
	struct clone_args_v2 ca = { 0 };
	int pipefd[2], cgfd, err = 0;
	char procs[PATH_MAX];
	pid_t pid;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	*pidfd = -1;
	if (!cgroup) {
		/* Unmeasured: no cgroup of the task's own. */
		cgfd = -1;
		pid = fork();
		if (pid == 0)
			child_exec(argv, mask, pipefd[1], out, memcg);
		goto started;
	}
	cgfd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0) {
		err = -errno;
		goto out;
	}
	ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	ca.pidfd = (__u64)(unsigned long)pidfd;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (__u64)cgfd;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
		pid = fork();
		if (pid == 0) {
			/* Not in the task's cgroup: the command runs all the same, unmeasured. */
			if (tp_write_file(procs, "0"))
				tp_err("warning: the command is not in its task's cgroup %s: %s",
				       cgroup, strerror(errno));
			child_exec(argv, mask, pipefd[1], out, memcg);
		}
	}
	if (pid == 0)
		child_exec(argv, mask, pipefd[1], out, memcg);
started:
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	/* EOF: exec succeeded. An int: exec failed with that errno. */
	do
		n = read(pipefd[0], exec_err, sizeof(*exec_err));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(*exec_err))
		*exec_err = 0;
	err = pid;
out:
	if (cgfd >= 0)
		close(cgfd);
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return err;
}

/*
 * What `run` adds to its task's session: the main process, its output, the loop. When
 * the daemon holds the task, there is no session or collector here but its link.
 */
struct run_state {
	const struct run_opts *o;
	struct session s;
	struct collector *c;
	struct runlink rl;
	bool linked; /* the daemon's task */
	/* The daemon went away: a new one is asked for the task until reattach_until. */
	bool reattaching;
	__u64 reattach_until;
	__u64 reattach_next;
	bool bare;   /* no task at all: the command runs unmeasured */
	bool strict; /* --strict or strict = true: a fault is 125 */
	/* Faults before the session started: its record gets them. */
	char faults[TASK_FAULTS_MAX][TASK_FAULT_LEN];
	int nfaults;
	struct output out;
	struct loop loop;
	struct loop_handler sig_h, out_h[2], rl_h;
	pid_t pid;
	int pidfd;
	int wstatus;
	int exec_err; /* CMD could not be executed: errno of its execvp */
	bool main_done;
};

/*
 * The task against the last tasks of its job (compare), after its report in the job
 * summary: only when it has a job label and the store a history for it.
 */
static void append_compare(FILE *f, const struct run_opts *o, const struct json *rec)
{
	const char *job = json_str(json_get(rec, "labels"), "job");
	struct compare c;
	struct store *s;

	if (o->no_db || !*job)
		return;
	s = query_open_store(o->db_path, o->config_path);
	if (!s)
		return;
	if (!compare__build(&c, s, rec, "job", job, COMPARE_LAST_DEFAULT) && c.history)
		compare_markdown(f, &c);
	compare__free(&c);
	store__close(s);
}

/*
 * The task's Markdown report appended to path (a job page's summary): its charts from
 * the series, which an embedded run holds and a daemon's task has in the store.
 */
static void append_summary(struct run_state *st, const char *path, const struct task_record *rec)
{
	struct report_input in = { 0 };
	struct query_task q = { 0 };
	char *text = NULL;
	size_t len = 0;
	struct json *j = NULL;
	FILE *m = open_memstream(&text, &len), *f;
	struct jw w;
	bool bad;

	if (m) {
		jw_init(&w, m, false);
		task_record__write_json(&w, rec);
		if (!fclose(m))
			j = json_parse(text, len, NULL, 0);
	}
	in.rec = j;
	if (!st->linked) {
		in.pts = st->s.sampler.pts;
		in.n = st->s.sampler.n;
	} else if (!st->o->no_db && !query_task__load(&q, st->o->db_path, st->o->config_path,
						      st->o->id, NULL, false, "run")) {
		in.pts = q.pts;
		in.n = q.n;
	}
	f = j ? fopen(path, "ae") : NULL;
	bad = !f;
	if (f) {
		bad = report_markdown(f, &in) != 0;
		if (!bad)
			append_compare(f, st->o, j);
		bad = (fclose(f) != 0) || bad;
	}
	if (bad)
		tp_err("cannot append the summary to %s: %s", path,
		       j ? strerror(errno ? errno : EIO) : "out of memory");
	query_task__free(&q);
	json_free(j);
	free(text);
}

static void reap(struct run_state *st)
{
	int status;
	pid_t pid;

	/* We are the subreaper: orphans of the task come to us and are reaped here too. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != st->pid || st->main_done)
			continue;
		st->main_done = true;
		st->wstatus = status;
		if (st->bare) {
			loop__stop(&st->loop);
			continue;
		}
		if (!st->linked) {
			session__main_exited(&st->s);
			continue;
		}
		runlink__exited(&st->rl, status, st->exec_err);
		if (st->rl.closed && !st->reattaching)
			loop__stop(&st->loop);
	}
}

/*
 * The cgroup empties when its last process has passed cgroup_exit, a moment before that
 * process is a zombie we can reap. Orphans of the task are our children (subreaper): reap
 * them before we exit, or they would linger as zombies of init after taskprobe returned.
 * Bounded, because a process that left the task may still be our child and alive.
 */
static void reap_orphans(struct run_state *st)
{
	__u64 deadline = tp_now_ns() + 1000000000ULL;

	if (st->bare || (st->linked ? st->o->keep_leftovers : st->s.action == LEFTOVER_KEPT))
		return;
	while (tp_now_ns() < deadline) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0)
			return; /* ECHILD: none left */
		if (pid == 0)
			usleep(1000);
	}
}

static void on_signal(struct run_state *st, const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;

	if (sig == SIGCHLD) {
		reap(st);
		return;
	}
	if (st->main_done) {
		/* Interrupted during the grace period: do not wait any longer. */
		if (st->bare)
			return;
		if (st->linked)
			runlink__interrupt(&st->rl);
		else
			session__interrupt(&st->s);
		return;
	}
	/* A terminal's signal (SI_KERNEL) reached the task's process group already. */
	if (si->ssi_code == SI_KERNEL)
		return;
	if (st->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, st->pidfd, sig, NULL, 0);
	else
		kill(st->pid, sig);
}

static void on_signalfd(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)l, (void)events;
	while (read(fd, &si, sizeof(si)) == sizeof(si))
		on_signal(ctx, &si);
}

static void on_output(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct run_state *st = ctx;
	int i = fd == st->out.s[0].in_fd ? 0 : 1;

	(void)events;
	if (output__pump(&st->out, i) < 0)
		loop__del(l, &st->out_h[i]);
}

static void on_link(struct loop *l, void *ctx, int fd, uint32_t events);

/*
 * The daemon that went away is asked for again (a new one adopts the task), every
 * REATTACH_EVERY_NS until REATTACH_NS passed; the command runs on meanwhile.
 */
static void on_reattach_tick(struct loop *l, void *ctx, __u64 now)
{
	struct run_state *st = ctx;
	int r;

	if (!st->reattaching || now < st->reattach_next)
		return;
	st->reattach_next = now + REATTACH_EVERY_NS;
	r = runlink__reattach(&st->rl, st->o->id);
	if (r > 0) {
		st->reattaching = false;
		st->rl_h.fd = st->rl.fd;
		if (loop__add(l, &st->rl_h))
			st->rl.closed = true;
		else if (st->main_done)
			runlink__exited(&st->rl, st->wstatus, st->exec_err);
		tp_debug("the daemon now on the socket took the task over");
		/* Its "e" may have come with its answer: no event will say so. */
		if (st->rl.fd >= 0)
			on_link(l, st, st->rl.fd, 0);
	} else if (r < 0 || now >= st->reattach_until) {
		st->reattaching = false;
		if (st->main_done)
			loop__stop(l);
	}
}

/*
 * The daemon said the cgroup is empty, or closed the link: with the record (it stopped
 * and ended the task), or without (it died, or handed the task over): then a new one
 * is waited for, and the command runs on.
 */
static void on_link(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct run_state *st = ctx;

	(void)fd, (void)events;
	runlink__read(&st->rl);
	if (st->rl.closed)
		loop__del(l, &st->rl_h);
	if (st->rl.closed && !runlink__has_record(&st->rl)) {
		__u64 now = tp_now_ns();

		st->reattaching = true;
		st->reattach_until = now + REATTACH_NS;
		st->reattach_next = now + REATTACH_EVERY_NS;
		return;
	}
	if (st->rl.empty || (st->rl.closed && st->main_done))
		loop__stop(l);
}

static void on_task_done(void *ctx, struct session *s)
{
	struct run_state *st = ctx;

	(void)s;
	loop__stop(&st->loop);
}

/* The signalfd and the task's output. */
static int watch(struct run_state *st, int sfd)
{
	int err;

	st->sig_h = (struct loop_handler){ sfd, EPOLLIN, on_signalfd, st };
	err = loop__add(&st->loop, &st->sig_h);
	for (int i = 0; i < st->out.n && !err; i++) {
		st->out_h[i] = (struct loop_handler){ st->out.s[i].in_fd, EPOLLIN, on_output, st };
		err = loop__add(&st->loop, &st->out_h[i]);
	}
	return err;
}

/*
 * A fault of taskprobe's side before the command started: with --strict, the error
 * (125, the command not run); else one warning line "WHAT: OUTCOME", kept for the
 * record. 0: go on.
 */
static int __attribute__((format(printf, 3, 4)))
run_fault(struct run_state *st, const char *outcome, const char *fmt, ...)
{
	char what[TASK_FAULT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (st->strict) {
		tp_err("%s (--strict: the command is not run)", what);
		return -ECANCELED;
	}
	tp_warn("%s: %s", what, outcome);
	if (st->nfaults < TASK_FAULTS_MAX)
		snprintf(st->faults[st->nfaults++], TASK_FAULT_LEN, "%s: %s", what, outcome);
	return 0;
}

/* The store the task goes to (--db, TASKPROBE_DB, the config's), or NULL: --no-db. */
static const char *db_path(struct run_opts *o, const struct config *cfg)
{
	if (o->no_db)
		return NULL;
	if (!o->db_path)
		o->db_path = getenv("TASKPROBE_DB");
	return o->db_path && *o->db_path ? o->db_path : cfg->db;
}

/*
 * The task's database, or NULL: --no-db, or one that cannot be used (its reason in
 * why, said once the task is known to have a record to spool).
 */
static struct store *open_store(struct run_opts *o, const struct config *cfg, char *why, size_t len)
{
	const char *path = db_path(o, cfg);
	struct store *store;

	why[0] = '\0';
	if (!path)
		return NULL;
	tp_catch(why, len);
	store = store__open(path, true, cfg->db_gid);
	tp_catch(NULL, 0);
	if (!store && !why[0])
		snprintf(why, len, "%s cannot be opened", path);
	for (int q = 0; store && q < STORE_QUEUES; q++)
		store__set_outbox(store, q, ship_configured(q, cfg));
	return store;
}

/*
 * The task is stored: it goes to the fleet and the OTLP collector now, with what
 * waited before it, within a few seconds each; what does not fit, or fails, waits
 * for the next run or the daemon.
 */
static void ship_at_end(struct store *store, enum store_queue q, const struct config *cfg)
{
	struct ship_result res;

	if (ship_round(store, q, cfg, SHIP_AT_END_MAX, SHIP_AT_END_NS, false, &res))
		tp_err("%s %s: %s; %ld task%s kept locally, to be shipped later", ship_queue_key(q),
		       res.sink, res.error, res.waiting, res.waiting == 1 ? "" : "s");
	else if (res.skipped && res.waiting)
		tp_err("%s %s: retrying later after '%s'; %ld task%s kept locally",
		       ship_queue_key(q), res.sink, res.error, res.waiting,
		       res.waiting == 1 ? "" : "s");
}

/* Why the BPF collector could not be loaded, and the fix. */
static const char *bpf_why(int err)
{
	switch (err) {
	case EPERM:
		return "no permission to load BPF programs; run as root, or grant CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_ADMIN";
	case ENOENT:
		return "kernel BTF is missing (/sys/kernel/btf/vmlinux); use a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y";
	default:
		return "libbpf could not load it; 'taskprobe run -v' shows its log";
	}
}

/*
 * TASKPROBE_RINGBUF_BYTES, for tests: a ring buffer that small (a power of two of at
 * least a page), so that an overflow can be forced; 0 (the default) otherwise.
 */
static __u32 test_ringbuf_bytes(void)
{
	const char *v = getenv("TASKPROBE_RINGBUF_BYTES");
	__u64 n;

	if (!v || !*v)
		return 0;
	if (tp_parse_u64(v, 1U << 30, &n) || n < (__u64)sysconf(_SC_PAGESIZE) || (n & (n - 1))) {
		tp_warn("TASKPROBE_RINGBUF_BYTES=%.32s is no power of two from the page size to "
			"1 GiB: ignored",
			v);
		return 0;
	}
	return (__u32)n;
}

/* No cgroup, no collector: the command runs as a plain child, unmeasured. */
static int prepare_bare(struct run_state *st)
{
	int err = st->loop.ep >= 0 ? 0 : loop__init(&st->loop, COLLECTOR_DRAIN_MS);

	if (err) {
		tp_err("cannot set up the event loop: %s", strerror(-err));
		return err;
	}
	st->bare = true;
	return 0;
}

/*
 * The task's session started, its collector (or none) and store (or none) open; what
 * cannot work is a fault (run_fault), and the command runs measured as far as still
 * possible. 0, or the error already said (125).
 */
static int prepare(struct run_state *st, struct run_opts *o, struct config *cfg,
		   struct store **store, char *root, size_t root_len)
{
	struct session_params p = {
		.id = o->id,
		.argv = o->argv,
		.argc = o->argc,
		.labels = o->labels,
		.nlabels = o->nlabels,
		.cfg = cfg,
		.config_path = o->config_path,
		.rules_path = o->rules_path,
		.root = root,
		.interval_ms = o->interval_ms,
		.collect = o->collect,
		.grace_s = o->grace_s,
		.keep_leftovers = o->keep_leftovers,
		.db_path = db_path(o, cfg),
		.done_fn = on_task_done,
		.done_ctx = st,
	};
	struct collector_opts copts = { 0 };
	char why[512], store_why[512];
	int err;

	/* The rules first: a bad line is the command line's, whatever else works. */
	err = session__init(&st->s, &p);
	if (err)
		return err;
	if (cgroup2_mount(root, root_len))
		return run_fault(
			       st, "the command runs unmeasured, with no record",
			       "no cgroup2 hierarchy is mounted (mount one with 'mount -t cgroup2 "
			       "none /sys/fs/cgroup')")
			       ?: prepare_bare(st);
	copts.max_tasks = 1; /* this run's task: one slot in the per-task maps */
	copts.collect = o->collect ? o->collect : cfg->collect;
	copts.ringbuf_bytes = test_ringbuf_bytes();
	st->c = collector__open(&copts);
	if (!st->c && run_fault(st, "CPU and memory come from the cgroup's own files only",
				"no BPF collector (%s)", bpf_why(errno)))
		return -ECANCELED;
	*store = open_store(o, cfg, store_why, sizeof(store_why));
	err = loop__init(&st->loop, COLLECTOR_DRAIN_MS);
	/* The collector's tick before the session's: a sample reads what was just drained. */
	if (!err && st->c)
		err = collector__watch(st->c, &st->loop);
	if (err) {
		tp_err("cannot set up the event loop: %s", strerror(-err));
		return err;
	}
	tp_catch(why, sizeof(why));
	err = session__start(&st->s, st->c, *store, &st->loop);
	tp_catch(NULL, 0);
	/* The id in use is the command line's to change, unless a stuck daemon holds it. */
	if ((err == -EEXIST || err == -ENOTDIR) && !st->nfaults) {
		tp_err("%s", why);
		return err;
	}
	if (err) {
		/* Untracked and its cgroup removed; what it opened is closed. */
		session__fini(&st->s);
		session__clear(&st->s);
		return run_fault(st, "the command runs unmeasured, with no record",
				 "the task could not be set up (%s)", why[0] ? why : strerror(-err))
			       ?: prepare_bare(st);
	}
	/* The store's fault, now that there is a record to keep for it. */
	if (store_why[0] && run_fault(st, "the record is kept to be stored later",
				      "the store cannot be used (%s)", store_why))
		return -ECANCELED;
	for (int i = 0; i < st->nfaults; i++)
		task_record__add_fault(&st->s.rec, "%s", st->faults[i]);
	if (st->s.msock.fd >= 0)
		setenv("TASKPROBE_SOCKET", st->s.msock.path, 1);
	if (output__open(&st->out, true, session__output_line, &st->s)) {
		tp_err("cannot set up the task's output: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* The daemon holds the task: its cgroup and socket are the daemon's; 0 or said. */
static int prepare_linked(struct run_state *st)
{
	int err = loop__init(&st->loop, COLLECTOR_DRAIN_MS);

	st->rl_h = (struct loop_handler){ st->rl.fd, EPOLLIN, on_link, st };
	if (!err)
		err = loop__add(&st->loop, &st->rl_h);
	if (!err)
		err = loop__on_tick(&st->loop, on_reattach_tick, st);
	if (err) {
		tp_err("cannot set up the event loop: %s", strerror(-err));
		return err;
	}
	if (st->rl.msock[0])
		setenv("TASKPROBE_SOCKET", st->rl.msock, 1);
	if (output__open(&st->out, true, runlink__line, &st->rl)) {
		tp_err("cannot set up the task's output: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * The daemon's task when one answers and takes it (1); 0 to embed the collector (no
 * daemon, or one that refused or is stuck: a fault); -1 when the run must stop (a bad
 * rules file, or a fault under --strict), said.
 */
static int link_daemon(struct run_state *st, const struct run_opts *o)
{
	char why[512];
	int r;

	if (!runlink__wanted(o))
		return 0;
	tp_catch(why, sizeof(why));
	r = runlink__open(&st->rl, o);
	tp_catch(NULL, 0);
	if (r == -EINVAL)
		tp_err("%s", why);
	if (r >= 0 || r == -EINVAL)
		return r > 0 ? 1 : r;
	runlink__close(&st->rl);
	st->rl = (struct runlink)RUNLINK_CLOSED;
	return run_fault(st, "this run embeds a collector of its own", "%s", why) ? -1 : 0;
}

/*
 * The daemon went away as it ended the task (after "f", before its record reached us):
 * the next one adopts the task and is asked for it, as during the run (the loop again,
 * for the same REATTACH_NS). True once one took the task over and its cgroup is empty,
 * or sent the record.
 */
static bool await_next_daemon(struct run_state *st)
{
	__u64 now = tp_now_ns();

	if (!st->rl.closed && !st->rl.broken)
		return false; /* stuck, not gone: its wait was waited already */
	loop__del(&st->loop, &st->rl_h);
	st->rl.closed = true;
	st->rl.empty = false;
	st->reattaching = true;
	st->reattach_until = now + REATTACH_NS;
	st->reattach_next = now + REATTACH_EVERY_NS;
	if (loop__run(&st->loop))
		return false;
	return !st->reattaching && (st->rl.empty || runlink__has_record(&st->rl));
}

/* The record: made here, or sent by the daemon (parsed into *doc, freed by the caller). */
static struct task_record *finish(struct run_state *st, struct task_record *t, struct json **doc)
{
	const char *text;
	struct task_record *rec;

	if (st->bare)
		return NULL;
	if (!st->linked) {
		collector__sync(st->c);
		rec = session__finish(&st->s);
		task_record__set_end(rec, st->wstatus, st->exec_err);
		return rec;
	}
	while (!(text = runlink__finish(&st->rl)) && await_next_daemon(st))
		;
	if (!text) {
		if (st->rl.closed || st->rl.broken)
			tp_err("warning: the daemon went away during the task and none took it "
			       "over in time: no record here (the next daemon stores it as "
			       "interrupted, or has it stored already: taskprobe show %s)",
			       st->o->id);
		else
			tp_err("warning: the daemon sent no record of task '%s' in %d s: no "
			       "record here",
			       st->o->id, RUNLINK_FINISH_S);
		return NULL;
	}
	*doc = json_parse(text, strlen(text), NULL, 0);
	if (!*doc || task_record__from_json(t, *doc)) {
		tp_err("warning: the daemon's record of task '%s' is damaged: no record here",
		       st->o->id);
		return NULL;
	}
	return t;
}

/* Stored (or spooled), then what waited in the spool and the outbox goes on. */
static void store_record(struct run_state *st, struct store *store, const struct config *cfg)
{
	int n;

	if (session__store(&st->s) || !store)
		return;
	/* The store works: what earlier tasks left in its spool goes in now, briefly. */
	n = spool__drain(store, st->s.p.db_path, SPOOL_AT_END_MAX, SPOOL_AT_END_NS);
	if (n > 0)
		tp_debug("%d spooled task%s stored", n, n == 1 ? "" : "s");
	for (int q = 0; q < STORE_QUEUES; q++)
		if (ship_configured(q, cfg))
			ship_at_end(store, q, cfg);
}

static int run_task(struct run_opts *o)
{
	struct run_state st = { .o = o, .out = OUTPUT_CLOSED, .pidfd = -1, .rl = RUNLINK_CLOSED };
	char root[PATH_MAX];
	struct store *store = NULL;
	struct task_record *rec, got = { 0 }, how = { 0 };
	struct json *doc = NULL;
	sigset_t mask, oldmask;
	struct config cfg;
	int sfd = -1, exec_err = 0, err, ret = EXIT_TP_FAILED;

	st.loop.ep = st.loop.tick_fd = -1;
	session__clear(&st.s);
	/* The config is the command line's: a bad line stops us before anything runs. */
	if (config__read(&cfg, o->config_path))
		goto out;
	st.strict = o->strict || cfg.strict;
	err = link_daemon(&st, o);
	st.linked = err > 0;
	if (err < 0 ||
	    (st.linked ? prepare_linked(&st) : prepare(&st, o, &cfg, &store, root, sizeof(root))))
		goto out;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	err = sfd < 0 ? -errno : watch(&st, sfd);
	if (err) {
		tp_err("cannot set up the event loop: %s", strerror(-err));
		goto out_mask;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	setenv("TASKPROBE_TASK_ID", o->id, 1);

	st.pid = spawn(o->argv,
		       st.bare	   ? NULL
		       : st.linked ? st.rl.cgroup
				   : st.s.cgroup,
		       st.linked ? st.rl.memcg : st.s.memcg, &oldmask, &st.pidfd, &exec_err,
		       &st.out);
	/* Not into the task's cgroup (gone, refused): the command runs unmeasured. */
	if (st.pid < 0 && !st.bare &&
	    !run_fault(&st, "the command runs unmeasured, with no record",
		       "the command could not be started in its task's cgroup (%s)",
		       strerror(-st.pid))) {
		st.bare = true;
		st.linked = false;
		st.pid = spawn(o->argv, NULL, "", &oldmask, &st.pidfd, &exec_err, &st.out);
	}
	output__started(&st.out);
	if (st.pid < 0) {
		tp_err("cannot start '%s': %s", o->argv[0], strerror(-st.pid));
		goto out_mask;
	}
	/* The command runs: the host around it is read now, not before it. */
	if (!st.bare && !st.linked)
		session__host_begin(&st.s);
	/* Not found or not executable: the task still ends with a record, as any other. */
	if (exec_err == ENOENT)
		tp_err("%s: command not found", o->argv[0]);
	else if (exec_err)
		tp_err("%s: cannot execute: %s", o->argv[0], strerror(exec_err));
	st.exec_err = exec_err;

	/* The child may have exited before we listened for SIGCHLD. */
	reap(&st);
	err = st.s.done || (st.bare && st.main_done) ? 0 : loop__run(&st.loop);
	if (err)
		tp_err("event loop failed: %s; the figures may be incomplete", strerror(-err));
	reap_orphans(&st);
	/* What the task wrote before it ended counts. */
	output__drain(&st.out, st.linked ? !o->keep_leftovers : st.s.action != LEFTOVER_KEPT);
	/* The command's own status, whatever became of the record. */
	task_record__set_end(&how, st.wstatus, st.exec_err);
	ret = task_record__exit_status(&how);
	rec = finish(&st, &got, &doc);
	if (!rec)
		goto out_mask;

	/* A command that never ran: its one line above says it all. */
	if (!o->quiet && !st.exec_err)
		task_record__print_summary(stderr, rec);
	if (o->perfherder)
		task_record__print_perfherder(stdout, rec, cfg.perfherder_framework);
	if (o->perfherder_path) {
		err = task_record__save_perfherder(o->perfherder_path, rec,
						   cfg.perfherder_framework);
		if (err)
			tp_err("warning: cannot write %s: %s", o->perfherder_path, strerror(-err));
	}
	if (o->json_path) {
		err = task_save_json(o->json_path, rec);
		if (err)
			tp_err("cannot write %s: %s", o->json_path, strerror(-err));
	}
	if (o->summary_path)
		append_summary(&st, o->summary_path, rec);
	if (!st.linked)
		store_record(&st, store, &cfg);

out_mask:
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
out:
	session__fini(&st.s);
	task_record__fini(&got);
	json_free(doc);
	runlink__close(&st.rl);
	if (sfd >= 0)
		close(sfd);
	loop__fini(&st.loop);
	store__close(store);
	output__close(&st.out);
	if (st.pidfd >= 0)
		close(st.pidfd);
	collector__free(st.c);
	return ret;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o;

	if (run_parse_args(argc, argv, &o))
		return EXIT_TP_FAILED;
	if (o.help) {
		fputs(run_usage, stdout);
		return 0;
	}
	if (!o.id[0])
		default_id(o.id, sizeof(o.id));
	return run_task(&o);
}
