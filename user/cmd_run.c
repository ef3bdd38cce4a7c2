// SPDX-License-Identifier: GPL-2.0
/* `taskprobe run`: runs a command as a task in its own cgroup, with the collector embedded. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "hostinfo.h"
#include "msock.h"
#include "output.h"
#include "phases.h"
#include "rules.h"
#include "sampler.h"
#include "store.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

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
	"  --interval MS     series sampling interval, 100 to 60000 (default 1000)\n"
	"  --config PATH     config file (default /etc/taskprobe/taskprobe.conf)\n"
	"  --perfherder      print a PERFHERDER_DATA line of the figures at the end\n"
	"  --rules FILE      counting rules (output|exec NAME [anchor] REGEX per line)\n"
	"  -v, --verbose     debug output, libbpf's included\n"
	"  -h, --help        this help\n"
	"\n"
	"Exit status: CMD's own; 128+N if CMD was killed by signal N; 125 if taskprobe\n"
	"failed; 126 if CMD could not be executed; 127 if CMD was not found.\n";

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
	OPT_RULES,
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
		{ "rules", required_argument, NULL, OPT_RULES },
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
		case OPT_CONFIG:
			o->config_path = optarg;
			break;
		case OPT_PERFHERDER:
			o->perfherder = true;
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
		case ':':
			tp_err("run: option '%s' needs a value; see 'taskprobe run --help'",
			       argv[optind - 1]);
			return -EINVAL;
		default:
			tp_err("run: unknown option '%s'; see 'taskprobe run --help'",
			       argv[optind - 1]);
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
	cgfd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0) {
		err = -errno;
		goto out;
	}
	*pidfd = -1;
	ca.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	ca.pidfd = (__u64)(unsigned long)pidfd;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (__u64)cgfd;
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
		pid = fork();
		if (pid == 0) {
			if (tp_write_file(procs, "0"))
				_exit(EXIT_TP_FAILED);
			child_exec(argv, mask, pipefd[1], out, memcg);
		}
	}
	if (pid == 0)
		child_exec(argv, mask, pipefd[1], out, memcg);
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

struct run_state {
	const struct run_opts *o;
	char cgroup[PATH_MAX];
	char memcg[PATH_MAX]; /* v1 memory mirror on hybrid hosts, or "" */
	pid_t pid;
	int pidfd;
	int events_fd;
	int timer_fd;
	int tick_fd;
	int series_fd;
	struct sampler *sampler;
	struct collector *c;
	int slot;
	const char *cg_rel; /* the task's cgroup below the cgroup2 mount */
	struct msock msock;
	struct um_table um;
	struct phases phases;
	struct output out;
	const struct config *cfg;
	struct rules rules;
	__u64 args_truncated; /* execs whose argv was cut before the rules saw it */
	bool main_done;
	bool done;
	int wstatus;
	int exec_err; /* CMD could not be executed: errno of its execvp */
	__u64 start_ns;
	__u64 main_end_ns;
	int leftovers;
	enum leftover_action action;
};

static int populated_from_fd(int fd)
{
	char buf[256], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	p = strstr(buf, "populated ");
	return p ? p[10] != '0' : -ENODATA;
}

/* The main process is gone: decide what happens to what it left behind. */
static void on_main_exit(struct run_state *st)
{
	struct itimerspec its = { 0 };
	int n = cgroup_count_procs(st->cgroup);

	st->main_done = true;
	st->main_end_ns = tp_now_ns();
	st->leftovers = n > 0 ? n : 0;
	if (st->leftovers == 0)
		return;
	if (st->o->keep_leftovers) {
		st->action = LEFTOVER_KEPT;
		st->done = true;
	} else if (st->o->grace_s == 0) {
		st->action = LEFTOVER_KILLED;
		cgroup_kill(st->cgroup);
	} else {
		st->action = LEFTOVER_EXITED;
		its.it_value.tv_sec = (time_t)st->o->grace_s;
		timerfd_settime(st->timer_fd, 0, &its, NULL);
	}
}

static void reap(struct run_state *st)
{
	int status;
	pid_t pid;

	/* We are the subreaper: orphans of the task come to us and are reaped here too. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == st->pid && !st->main_done) {
			st->wstatus = status;
			on_main_exit(st);
		}
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

	if (st->action == LEFTOVER_KEPT)
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
		if (st->leftovers && !st->o->keep_leftovers) {
			st->action = LEFTOVER_KILLED;
			cgroup_kill(st->cgroup);
		}
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

/* The task's live figures now, for a phase boundary. */
static void snapshot(struct run_state *st, struct phase_snap *snap)
{
	struct task_figures f;
	struct cg_cpu_stat cs;

	collector__poll(st->c, 0);
	memset(snap, 0, sizeof(*snap));
	snap->t_ns = tp_now_ns();
	if (collector__read(st->c, st->slot, &f))
		return;
	/* cpu.stat is current to the tick; BPF charges a running thread at switch-out. */
	snap->cpu_ns = cgroup_read_cpu_stat(st->cgroup, &cs) ? f.cpu_ns : cs.usage_us * 1000;
	snap->execs = f.execs;
	snap->read_bytes = f.io_blk_read_bytes;
	snap->write_bytes = f.io_blk_write_bytes;
	snap->runq = f.runq;
}

/* One line of the task's metrics language: taken, or refused and counted (the reason). */
static enum um_reject on_line(struct run_state *st, const char *line, size_t len)
{
	static const char *const reserved[] = { "cpu.", "proc.", "io.",	       "mem.",
						"net.", "http.", "lost_events" };
	struct phase_snap snap;
	struct um_line l;
	enum um_reject r = um_parse_line(line, len, &l);

	if (!r && (l.kind == UM_PHASE_BEGIN || l.kind == UM_PHASE_END)) {
		snapshot(st, &snap);
		if (l.kind == UM_PHASE_BEGIN)
			r = phases__begin(&st->phases, l.key, &snap,
					  collector__take_peak(st->c, st->slot))
				    ? UM_TOO_MANY_NAMES
				    : UM_OK;
		else
			r = phases__end(&st->phases, l.key, &snap,
					collector__take_peak(st->c, st->slot))
				    ? UM_UNKNOWN_PHASE
				    : UM_OK;
	} else if (!r) {
		/* The built-in figures' names are not the task's to write. */
		for (size_t i = 0; i < ARRAY_SIZE(reserved) && !r; i++)
			if (!strncmp(l.key, reserved[i], strlen(reserved[i])))
				r = UM_BAD_NAME;
		if (!r)
			r = um_table__add(&st->um, &l);
	}
	if (r)
		st->um.rejected[r]++;
	else
		st->um.accepted++;
	return r;
}

/* Every datagram waiting on the metrics socket; each line is accepted or counted. */
static void drain_socket(struct run_state *st)
{
	static char buf[MSOCK_DGRAM_MAX];
	enum um_reject first;
	struct sockaddr_un from;
	socklen_t from_len;
	char answer[64];
	ssize_t n;
	pid_t pid;
	int pidfd;

	if (st->msock.fd < 0)
		return;
	while ((n = msock__recv(&st->msock, buf, sizeof(buf), &pid, &pidfd, &from, &from_len)) !=
	       -EAGAIN) {
		bool ours;

		if (n == -EMSGSIZE) {
			st->um.rejected[UM_TOO_LONG]++;
			msock__ack(&st->msock, &from, from_len, "refused too_long");
			continue;
		}
		if (n < 0)
			break;
		/* Who sent it, from the kernel's credentials: never a claim in the text. */
		ours = msock__sender_in(&st->msock, pid, pidfd, st->cg_rel);
		if (pidfd >= 0)
			close(pidfd);
		first = UM_OK;
		for (char *p = buf, *end = buf + n; p < end;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t len = (size_t)((nl ? nl : end) - p);
			enum um_reject r = UM_NOT_IN_TASK;

			if (len) {
				if (ours)
					r = on_line(st, p, len);
				else
					st->um.rejected[UM_NOT_IN_TASK]++;
				if (!first)
					first = r;
			}
			p += len + 1;
		}
		snprintf(answer, sizeof(answer), first ? "refused %s" : "ok",
			 um_reject_names[first]);
		msock__ack(&st->msock, &from, from_len, answer);
	}
}

/* Exec rules see "path arg1 arg2 ...": the resolved path in place of argv[0]. */
static void on_exec(void *ctx, int slot, const char *path, const char *args, size_t len,
		    bool truncated)
{
	struct run_state *st = ctx;
	char cmd[TP_PATH_LEN + TP_ARGS_LEN + 8];
	size_t n = (size_t)snprintf(cmd, sizeof(cmd), "%s", path), i = 0;
	int nargs = 0;

	if (slot != st->slot)
		return;
	/* Skip argv[0], then at most TP_ARGS_MAX - 1 more arguments. */
	while (i < len && args[i])
		i++;
	for (i++; i < len && n + 2 < sizeof(cmd); i++) {
		if (args[i] == '\0') {
			if (++nargs == TP_ARGS_MAX - 1) {
				truncated |= i + 1 < len;
				break;
			}
			continue;
		}
		if (i == 0 || args[i - 1] == '\0')
			cmd[n++] = ' ';
		cmd[n++] = args[i];
	}
	cmd[n] = '\0';
	/* Counted with or without rules: the record says when argv was cut. */
	st->args_truncated += truncated;
	rules__exec(&st->rules, cmd, n, &st->um);
}

/* A phase rule matched an output line: the same path as markers and the socket. */
static void on_phase_rule(void *ctx, bool begin, const char *name, size_t len)
{
	char msg[UM_LINE_MAX + 1];

	snprintf(msg, sizeof(msg), "phase:%s:%.*s", begin ? "begin" : "end", (int)len, name);
	on_line(ctx, msg, strlen(msg));
}

/* "BEGIN_PHASE name" / "END_PHASE name" in the output: the same path as the socket's. */
static void on_output_line(void *ctx, const char *line, size_t len)
{
	struct run_state *st = ctx;
	const char *markers[2] = { st->cfg->phase_begin_marker, st->cfg->phase_end_marker };
	size_t plen = strlen(PERFHERDER_PREFIX);
	char msg[UM_LINE_MAX + 1];

	rules__output_line(&st->rules, line, len, &st->um);
	if (len > plen && !memcmp(line, PERFHERDER_PREFIX, plen)) {
		/* Passed through whatever it holds; taken only if it is an artifact. */
		if (um_add_perfherder(&st->um, line + plen, len - plen) < 0)
			st->um.rejected[UM_BAD_PERFHERDER]++;
		else
			st->um.accepted++;
		return;
	}

	for (int k = 0; k < 2; k++) {
		size_t m = strlen(markers[k]);
		const char *name;
		size_t n;

		if (len <= m + 1 || memcmp(line, markers[k], m) || line[m] != ' ')
			continue;
		name = line + m + 1;
		n = len - m - 1;
		while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
			n--;
		snprintf(msg, sizeof(msg), "phase:%s:%.*s", k ? "end" : "begin", (int)n, name);
		on_line(st, msg, strlen(msg));
		return;
	}
}

static int event_loop(struct collector *c, struct run_state *st, int sfd)
{
	struct epoll_event ev, evs[8];
	int ep, err = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -errno;
	ev.events = EPOLLIN;
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = st->timer_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, st->timer_fd, &ev);
	ev.data.fd = st->tick_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, st->tick_fd, &ev);
	ev.data.fd = st->series_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, st->series_fd, &ev);
	if (st->msock.fd >= 0) {
		ev.data.fd = st->msock.fd;
		epoll_ctl(ep, EPOLL_CTL_ADD, st->msock.fd, &ev);
	}
	for (int i = 0; i < st->out.n; i++) {
		ev.data.fd = st->out.s[i].in_fd;
		epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	ev.data.fd = collector__epoll_fd(c);
	epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.events = EPOLLPRI;
	ev.data.fd = st->events_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, st->events_fd, &ev);

	/* The child may have exited before we listened for SIGCHLD. */
	reap(st);
	while (!st->done) {
		int n = epoll_wait(ep, evs, ARRAY_SIZE(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == sfd) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == sizeof(si))
					on_signal(st, &si);
			} else if (fd == st->timer_fd) {
				__u64 ticks;

				if (read(st->timer_fd, &ticks, sizeof(ticks)) > 0 &&
				    populated_from_fd(st->events_fd) > 0) {
					st->action = LEFTOVER_KILLED;
					cgroup_kill(st->cgroup);
				}
			} else if (fd == st->series_fd) {
				__u64 ticks;

				if (read(st->series_fd, &ticks, sizeof(ticks)) > 0) {
					collector__poll(c, 0);
					/* A full disk must not stop the task: the next flush retries. */
					sampler__sample(st->sampler, tp_now_ns());
				}
			} else if (fd == st->msock.fd) {
				drain_socket(st);
			} else if (st->out.n && (fd == st->out.s[0].in_fd ||
						 (st->out.n > 1 && fd == st->out.s[1].in_fd))) {
				int i = fd == st->out.s[0].in_fd ? 0 : 1;

				if (output__pump(&st->out, i) < 0)
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
			} else if (fd == st->tick_fd) {
				__u64 ticks;

				if (read(st->tick_fd, &ticks, sizeof(ticks)) > 0)
					collector__poll(c, 0);
			} else if (fd == st->events_fd) {
				populated_from_fd(st->events_fd); /* re-arms EPOLLPRI */
			} else {
				collector__poll(c, 0);
			}
		}
		if (st->main_done && !st->done && populated_from_fd(st->events_fd) <= 0)
			st->done = true;
	}
	close(ep);
	return err;
}

/* What is known before the task starts: enough for its row in the store. */
static void fill_identity(struct task_record *t, const struct run_opts *o,
			  const struct run_state *st)
{
	snprintf(t->id, sizeof(t->id), "%s", o->id);
	t->argv = o->argv;
	t->argc = o->argc;
	memcpy(t->labels, o->labels, sizeof(o->labels));
	t->nlabels = o->nlabels;
	char shown[PATH_MAX];

	snprintf(t->cgroup, sizeof(t->cgroup), "%s",
		 cgroup_display(st->cgroup, shown, sizeof(shown)));
	if (gethostname(t->host, sizeof(t->host) - 1))
		strcpy(t->host, "unknown");
}

static void fill_end(struct task_record *t, const struct run_state *st)
{
	if (st->exec_err) {
		t->end = st->exec_err == ENOENT ? TASK_NOT_FOUND : TASK_EXEC_FAILED;
	} else if (WIFSIGNALED(st->wstatus)) {
		t->end = TASK_SIGNALED;
		t->signal = WTERMSIG(st->wstatus);
	} else {
		t->end = TASK_EXITED;
		t->exit_code = WEXITSTATUS(st->wstatus);
	}
	t->leftovers = st->leftovers;
	t->leftover_action = st->action;
}

/* The task's database: an unusable one stops us before the task starts. */
static int open_store(struct run_opts *o, const struct config *cfg, struct store **store)
{
	*store = NULL;
	if (o->no_db)
		return 0;
	/* --db, then TASKPROBE_DB (for a whole CI job at once), then the config's db. */
	if (!o->db_path)
		o->db_path = getenv("TASKPROBE_DB");
	*store = store__open(o->db_path && *o->db_path ? o->db_path : cfg->db, true, cfg->db_gid);
	return *store ? 0 : -EIO;
}

static void report_open_error(int err)
{
	switch (err) {
	case EPERM:
		tp_err("no permission to load BPF programs; run as root, or grant CAP_BPF, "
		       "CAP_PERFMON and CAP_SYS_ADMIN");
		break;
	case ENOENT:
		tp_err("kernel BTF is missing (/sys/kernel/btf/vmlinux); use a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y");
		break;
	default:
		tp_err("cannot load the BPF collector: %s; 'taskprobe run -v' shows libbpf's log",
		       strerror(err));
	}
}

static void report_cgroup_error(int err, const struct run_opts *o, const char *root)
{
	if (err == -EEXIST)
		tp_err("task id '%s' is in use: %s/taskprobe/%s still has processes; choose "
		       "another --id",
		       o->id, root, o->id);
	else if (err == -ENOTDIR)
		tp_err("task id '%s' clashes with a file in %s/taskprobe; choose another --id",
		       o->id, root);
	else
		tp_err("cannot create the task's cgroup under %s/taskprobe: %s%s", root,
		       strerror(-err), err == -EACCES ? "; run as root" : "");
}

static int run_task(struct run_opts *o)
{
	struct run_state st = {
		.o = o, .pidfd = -1, .events_fd = -1, .timer_fd = -1, .tick_fd = -1
	};
	struct itimerspec tick = { .it_interval.tv_nsec = COLLECTOR_DRAIN_MS * 1000000L,
				   .it_value.tv_nsec = COLLECTOR_DRAIN_MS * 1000000L };
	struct itimerspec every = { 0 };
	struct task_record rec = { 0 };
	struct label host_labels[HOST_LABELS];
	const struct program_stat *progs;
	char root[PATH_MAX], host_store[1024];
	struct sampler sampler = { 0 };
	struct store *store = NULL;
	sigset_t mask, oldmask;
	struct collector_opts copts = { 0 };
	struct collector *c = NULL;
	struct config cfg;
	int slot = -1, sfd = -1, exec_err = 0, err, ret = EXIT_TP_FAILED;
	__s64 tid = -1;
	size_t nprogs;

	st.series_fd = -1;
	st.sampler = &sampler;
	st.msock.fd = -1;
	rules__init(&st.rules);
	if (um_table__init(&st.um))
		return EXIT_TP_FAILED;

	err = cgroup2_mount(root, sizeof(root));
	if (err) {
		tp_err("no cgroup2 hierarchy is mounted; mount one with 'mount -t cgroup2 none "
		       "/sys/fs/cgroup' (or /sys/fs/cgroup/unified on a hybrid host)");
		goto out;
	}
	/* Config and rules first: a bad line stops us before anything is loaded. */
	config_defaults(&cfg);
	if (config_load(&cfg, o->config_path ? o->config_path : TP_DEFAULT_CONFIG,
			o->config_path != NULL) ||
	    rules__load(&st.rules, o->config_path ? o->config_path : TP_DEFAULT_CONFIG, true,
			false) ||
	    (o->rules_path && rules__load(&st.rules, o->rules_path, false, true)) ||
	    rules__finish(&st.rules))
		goto out;
	/* argv is copied in BPF only when an exec rule will read it. */
	copts.capture_args = rules__has(&st.rules, RULE_EXEC);
	c = collector__open(&copts);
	if (!c) {
		report_open_error(errno);
		goto out;
	}
	if (open_store(o, &cfg, &store))
		goto out;
	collector__on_exec(c, on_exec, &st);
	st.rules.phase_fn = on_phase_rule;
	st.rules.phase_ctx = &st;
	err = cgroup_make_task(root, o->id, st.cgroup, sizeof(st.cgroup));
	if (err) {
		report_cgroup_error(err, o, root);
		st.cgroup[0] = '\0'; /* not ours: never remove it */
		goto out;
	}
	/*
	 * No memory controller on cgroup2 (hybrid hosts): the kernel's charge comes from
	 * a v1 memory cgroup of the task's own; else the BPF sum of resident pages.
	 */
	if (cgroup_read_u64(st.cgroup, "memory.peak", &(__u64){ 0 }) &&
	    cgroup_v1_memory_make(o->id, st.memcg, sizeof(st.memcg)))
		st.memcg[0] = '\0';
	slot = collector__track(c, st.cgroup);
	if (slot < 0) {
		tp_err("cannot track cgroup %s: %s", st.cgroup, strerror(-slot));
		goto out;
	}
	st.c = c;
	st.slot = slot;
	st.cg_rel = st.cgroup + strlen(root);
	/* Without the socket the task still runs, only its own metrics are not taken. */
	err = msock__open(&st.msock);
	if (err)
		tp_err("warning: no metrics socket (%s: %s); the task runs without it", MSOCK_DIR,
		       strerror(-err));
	else
		setenv("TASKPROBE_SOCKET", st.msock.path, 1);
	st.cfg = &cfg;
	if (output__open(&st.out, true, on_output_line, &st)) {
		tp_err("cannot set up the task's output: %s", strerror(errno));
		goto out;
	}
	st.events_fd = cgroup_events_fd(st.cgroup);
	st.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	st.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (st.tick_fd >= 0)
		timerfd_settime(st.tick_fd, 0, &tick, NULL);
	st.series_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	every.it_interval.tv_sec = (time_t)(o->interval_ms / 1000);
	every.it_interval.tv_nsec = (long)(o->interval_ms % 1000) * 1000000L;
	every.it_value = every.it_interval;
	if (st.series_fd >= 0)
		timerfd_settime(st.series_fd, 0, &every, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (st.events_fd < 0 || st.timer_fd < 0 || st.tick_fd < 0 || st.series_fd < 0 || sfd < 0) {
		tp_err("cannot set up the event loop: %s", strerror(errno));
		goto out_mask;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	setenv("TASKPROBE_TASK_ID", o->id, 1);

	st.start_ns = tp_now_ns();
	rec.start_real_ns = tp_realtime_ns();
	fill_identity(&rec, o, &st);
	if (store) {
		hostinfo_labels(&cfg, host_labels, host_store, sizeof(host_store));
		if (store__task_begin(store, &rec, host_labels, HOST_LABELS, &tid))
			goto out_mask;
	}
	sampler__init(&sampler, c, slot, st.cgroup, st.start_ns, store, tid);
	phases__init(&st.phases, st.start_ns);
	sampler.phases = &st.phases;
	st.pid = spawn(o->argv, st.cgroup, st.memcg, &oldmask, &st.pidfd, &exec_err, &st.out);
	output__started(&st.out);
	if (st.pid < 0) {
		tp_err("cannot start '%s': %s", o->argv[0], strerror(-st.pid));
		goto out_mask;
	}
	/* Not found or not executable: the task still ends with a record, as any other. */
	if (exec_err == ENOENT)
		tp_err("%s: command not found", o->argv[0]);
	else if (exec_err)
		tp_err("%s: cannot execute: %s", o->argv[0], strerror(exec_err));
	st.exec_err = exec_err;

	err = event_loop(c, &st, sfd);
	if (err)
		tp_err("event loop failed: %s; the figures may be incomplete", strerror(-err));
	rec.wall_ns = tp_now_ns() - st.start_ns;
	rec.main_wall_ns = st.main_end_ns - st.start_ns;
	reap_orphans(&st);

	collector__sync(c);
	/* What the task wrote and sent before it ended counts, then open phases end. */
	output__drain(&st.out, st.action != LEFTOVER_KEPT);
	drain_socket(&st);
	{
		struct phase_snap snap;

		snapshot(&st, &snap);
		phases__close_all(&st.phases, &snap, collector__take_peak(c, slot));
	}
	rec.phases = &st.phases;
	rec.um = &st.um;
	rec.rules = &st.rules;
	rec.exec_args_truncated = st.args_truncated;
	fill_end(&rec, &st);
	sampler__sample(&sampler, tp_now_ns());
	if (sampler__compact(&sampler))
		sampler__flush(&sampler);
	rec.peak_cores = (double)sampler.peak_millicores / 1000.0;
	collector__read(c, slot, &rec.fig);
	collector__net(c, slot, &cfg.http_ports, &rec.net);
	progs = collector__programs(c, slot, &nprogs);
	task_set_programs(&rec, progs, nprogs);
	rec.lost_total = collector__lost_total(c);
	rec.skipped_runs = collector__skipped_runs(c);
	err = cgroup_read_cpu_stat(st.cgroup, &rec.cpu_stat);
	rec.have_cpu_stat = !err;
	/* Removed from outside (its processes moved away first): what was read is kept. */
	if (err == -ENOENT && sampler.have_cs) {
		rec.cpu_stat = sampler.last_cs;
		rec.have_cpu_stat = true;
		rec.cpu_stat_note = "last read before the task's cgroup was removed";
	} else if (err == -ENOENT) {
		rec.cpu_stat_note = "the task's cgroup was removed before cpu.stat was read";
	}
	rec.have_memory_peak = !cgroup_read_u64(st.cgroup, "memory.peak", &rec.memory_peak);
	if (rec.have_memory_peak)
		rec.memory_peak_source = "cgroup:memory.peak";
	else if (st.memcg[0] &&
		 !cgroup_read_u64(st.memcg, "memory.max_usage_in_bytes", &rec.memory_peak)) {
		rec.have_memory_peak = true;
		rec.memory_peak_source = "cgroup1:memory.max_usage_in_bytes";
	}

	/* A command that never ran: its one line above says it all. */
	if (!o->quiet && !st.exec_err)
		task_print_summary(stderr, &rec);
	if (o->perfherder)
		task_print_perfherder(stdout, &rec);
	ret = task_exit_status(&rec);
	if (o->json_path) {
		err = task_save_json(o->json_path, &rec);
		if (err)
			tp_err("cannot write %s: %s", o->json_path, strerror(-err));
	}
	/* The task ran: a store that fails now is reported, not turned into 125. */
	if (store && tid >= 0 && !store__task_end(store, tid, &rec)) {
		/* Housekeeping, after the task's own write so that it cannot delay it. */
		store__mark_lost(store);
		store__retain(store, cfg.retain_days, cfg.max_db_mb);
	}
	task_record_fini(&rec);

out_mask:
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
out:
	if (slot >= 0)
		collector__untrack(c, slot);
	if (st.memcg[0] && st.action != LEFTOVER_KEPT)
		cgroup_remove_task(st.memcg);
	if (st.cgroup[0] && st.action != LEFTOVER_KEPT)
		cgroup_remove_task(st.cgroup);
	if (sfd >= 0)
		close(sfd);
	if (st.events_fd >= 0)
		close(st.events_fd);
	if (st.timer_fd >= 0)
		close(st.timer_fd);
	if (st.tick_fd >= 0)
		close(st.tick_fd);
	if (st.series_fd >= 0)
		close(st.series_fd);
	sampler__fini(&sampler);
	store__close(store);
	msock__close(&st.msock);
	output__close(&st.out);
	rules__fini(&st.rules);
	phases__fini(&st.phases);
	um_table__fini(&st.um);
	if (st.pidfd >= 0)
		close(st.pidfd);
	collector__free(c);
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
