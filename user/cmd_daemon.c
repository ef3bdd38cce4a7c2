// SPDX-License-Identifier: GPL-2.0
/*
 * `taskprobe daemon`: one collector for the host, and a session per task that a worker
 * starts and ends over the control socket (`taskprobe task start|end`).
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "api.h"
#include "cgroup.h"
#include "collector.h"
#include "commands.h"
#include "config.h"
#include "control.h"
#include "hostinfo.h"
#include "json.h"
#include "loop.h"
#include "rules.h"
#include "session.h"
#include "store.h"
#include "util.h"

#define DAEMON_TASKS_MAX 256

const char daemon_usage[] =
	"usage: taskprobe daemon [--config PATH] [--db PATH] [--socket PATH]\n"
	"                        [--listen ADDR:PORT|off]\n"
	"One collector for the host: tracks the cgroups that 'taskprobe task start' names\n"
	"until 'taskprobe task end', and stores their records.\n"
	"  --config PATH   config file (default /etc/taskprobe/taskprobe.conf)\n"
	"  --db PATH       the task database (default: the config's db)\n"
	"  --socket PATH   the control socket (default " CONTROL_SOCKET ")\n"
	"  --listen A:P    the HTTP API (default: the config's listen, " API_LISTEN_DEFAULT ");\n"
	"                  off: none. Not loopback: needs api_token in the config\n"
	"SIGTERM or SIGINT ends every task still tracked as 'interrupted', then exits 0;\n"
	"SIGHUP reads the config and its rules again, for tasks started from then on.\n";

/* A task of the daemon's: its session, and the strings its parameters point to. */
struct dtask {
	struct session s;
	struct config cfg; /* the config when it started: a reload is for new tasks */
	char id[TP_ID_MAX + 1];
	char cgroup[PATH_MAX];
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	struct label labels[TP_LABELS_MAX];
};

struct daemon {
	struct config cfg;
	const char *config_path;
	char root[PATH_MAX];
	struct collector *c;
	struct store *store;
	struct loop loop;
	int lfd;
	int sfd;
	struct loop_handler listen_h, sig_h;
	struct dtask *tasks[DAEMON_TASKS_MAX];
	int ntasks;
	int exit_code;
	bool capture_args; /* the collector copies argv (an exec rule needed it at start) */
	char *config_text; /* the config file as last loaded: new tasks' rules */
};

const char *control_path(const char *opt)
{
	const char *env = getenv("TASKPROBE_CONTROL");

	return opt ? opt : env && *env ? env : CONTROL_SOCKET;
}

static int tasks_running(void *ctx)
{
	return ((struct daemon *)ctx)->ntasks;
}

static struct dtask *find_task(struct daemon *d, const char *id)
{
	for (int i = 0; i < d->ntasks; i++)
		if (!strcmp(d->tasks[i]->id, id))
			return d->tasks[i];
	return NULL;
}

static void drop_task(struct daemon *d, struct dtask *t)
{
	for (int i = 0; i < d->ntasks; i++) {
		if (d->tasks[i] != t)
			continue;
		d->tasks[i] = d->tasks[--d->ntasks];
		break;
	}
	session__fini(&t->s);
	free(t);
}

static void answer(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, (size_t)n) < 0)
		return;
}

static void start_task(struct daemon *d, int fd, char **f, int nf)
{
	struct session_params p = { 0 };
	const char *why;
	struct dtask *t;
	int err;

	if (nf < 3 || !tp_valid_id(f[1])) {
		answer(fd, "error\tinvalid task id: use " TP_ID_RULE);
		return;
	}
	if (find_task(d, f[1])) {
		answer(fd, "error\ttask '%s' is tracked already; 'taskprobe task end %s' first",
		       f[1], f[1]);
		return;
	}
	if (d->ntasks >= DAEMON_TASKS_MAX || nf - 3 > TP_LABELS_MAX) {
		answer(fd, "error\t%s",
		       nf - 3 > TP_LABELS_MAX ? "at most 64 labels"
					      : "the daemon's task table is full");
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		answer(fd, "error\tout of memory");
		return;
	}
	snprintf(t->id, sizeof(t->id), "%s", f[1]);
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", f[2]);
	for (int i = 3; i < nf; i++) {
		struct label *l = &t->labels[i - 3];

		snprintf(t->kv[i - 3], sizeof(t->kv[0]), "%s", f[i]);
		if (tp_parse_label(t->kv[i - 3], &l->key, &l->val, &why)) {
			answer(fd, "error\tinvalid label '%.64s': %s", f[i], why);
			free(t);
			return;
		}
		if (hostinfo_is_label(l->key)) {
			answer(fd, "error\tlabel '%.64s' names a host label", l->key);
			free(t);
			return;
		}
	}
	p.id = t->id;
	p.labels = t->labels;
	p.nlabels = nf - 3;
	t->cfg = d->cfg;
	p.cfg = &t->cfg;
	p.config_path = d->config_path;
	p.config_text = d->config_text;
	p.root = d->root;
	p.cgroup = t->cgroup;
	p.interval_ms = 1000;
	err = session__init(&t->s, &p);
	if (!err)
		err = session__start(&t->s, d->c, d->store, &d->loop);
	if (err) {
		answer(fd, "error\tcannot track %s as task '%s': %s (the daemon's log says more)",
		       t->cgroup, t->id, strerror(-err));
		session__fini(&t->s);
		free(t);
		return;
	}
	d->tasks[d->ntasks++] = t;
	answer(fd, "ok\t%s", t->s.msock.fd >= 0 ? t->s.msock.path : "");
}

/* The record of a task, written to fd and stored; end is how it ended. */
static void end_task(struct daemon *d, struct dtask *t, enum task_end end, int fd)
{
	struct task_record *rec = session__finish(&t->s);
	FILE *f;

	rec->end = end;
	if (fd >= 0) {
		answer(fd, "ok");
		f = fdopen(dup(fd), "w");
		if (f) {
			struct jw w;

			jw_init(&w, f, false);
			task_write_json(&w, rec);
			fputc('\n', f);
			fclose(f);
		}
	}
	session__store(&t->s);
	drop_task(d, t);
}

static void on_request(struct daemon *d, int fd)
{
	static char line[CONTROL_LINE_MAX];
	char *f[3 + TP_LABELS_MAX + 1], *p = line, *nl;
	struct timeval tv = { .tv_sec = 2 };
	size_t len = 0;
	int nf = 0;

	/* One short line: a client that does not send it in time is dropped. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < sizeof(line) - 1 && !memchr(line, '\n', len)) {
		ssize_t n = read(fd, line + len, sizeof(line) - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
	}
	line[len] = '\0';
	nl = strchr(line, '\n');
	if (!nl) {
		answer(fd, "error\tthe request is not one line of at most %d bytes",
		       CONTROL_LINE_MAX - 1);
		return;
	}
	*nl = '\0';
	while (p && nf < (int)ARRAY_SIZE(f)) {
		f[nf++] = p;
		p = strchr(p, '\t');
		if (p)
			*p++ = '\0';
	}
	if (!strcmp(f[0], "start")) {
		start_task(d, fd, f, nf);
	} else if (!strcmp(f[0], "end") && nf == 2) {
		struct dtask *t = find_task(d, f[1]);

		if (!t) {
			answer(fd, "error\tno task '%.128s' is tracked", f[1]);
			return;
		}
		/* Every CPU switched since the request: the task's figures are final. */
		collector__sync(d->c);
		end_task(d, t, TASK_ENDED, fd);
	} else {
		answer(fd, "error\tunknown request '%.32s'", f[0]);
	}
}

static void on_listen(struct loop *l, void *ctx, int fd, uint32_t events)
{
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	(void)l, (void)events;
	if (c < 0)
		return;
	on_request(ctx, c);
	close(c);
}

/*
 * The config and its rules, checked, and the file's text for the tasks' rules (NULL
 * when there is no file): 0, or -EINVAL after the line saying what is wrong.
 */
static int load_config(const char *path, struct config *cfg, bool *needs_args, char **text)
{
	const char *file = path ? path : TP_DEFAULT_CONFIG;
	struct session probe;
	char *buf;
	ssize_t n;
	int err;

	*text = NULL;
	config_defaults(cfg);
	buf = malloc(RULES_FILE_MAX);
	if (!buf)
		return -ENOMEM;
	/* One read for the keys and the rules: a save in between cannot split them. */
	n = tp_read_file(file, buf, RULES_FILE_MAX);
	if (n < 0 && (n != -ENOENT || path)) {
		free(buf);
		err = config_load(cfg, file, path != NULL);
		return err ? err : (int)n;
	}
	if (n < 0)
		buf[0] = '\0';
	err = config_parse(cfg, file, buf);
	if (err) {
		free(buf);
		return err;
	}
	err = session__init(&probe,
			    &(struct session_params){ .config_path = path, .config_text = buf });
	*needs_args = !err && session__needs_args(&probe);
	session__fini(&probe);
	if (err)
		free(buf);
	else
		*text = buf;
	return err;
}

/*
 * SIGHUP: the config and its rules again, for tasks started from now on; a bad file
 * keeps the one in use (said in the log). What the collector loaded stays: a new exec
 * rule sees no arguments until the daemon restarts, if none needed them before.
 */
static void reload(struct daemon *d)
{
	struct config cfg;
	bool needs_args;
	char *text;

	if (load_config(d->config_path, &cfg, &needs_args, &text)) {
		tp_err("reload: %s has errors; the config in use is kept",
		       d->config_path ? d->config_path : TP_DEFAULT_CONFIG);
		return;
	}
	if (needs_args && !d->capture_args)
		tp_err("warning: exec rules read arguments only after a restart of the daemon");
	d->cfg = cfg;
	free(d->config_text);
	d->config_text = text;
	fprintf(stderr, "taskprobe: config reloaded, for new tasks\n");
}

static void on_signalfd(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)events;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			loop__stop(l);
		else if (si.ssi_signo == SIGHUP)
			reload(ctx);
	}
}

/* The control socket: 0660, root's and the config's group (db_group). */
static int listen_on(struct daemon *d, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], *slash;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		tp_err("control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			tp_err("cannot make %s: %s", dir, strerror(errno));
			return -errno;
		}
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a daemon that died: nobody answers on it. */
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		tp_err("a daemon is running already on %s", path);
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(path, 0660) ||
	    (d->cfg.db_gid != (gid_t)-1 && chown(path, 0, d->cfg.db_gid)) || listen(fd, 64)) {
		int err = -errno;

		tp_err("cannot listen on %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	d->lfd = fd;
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "db", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *db = NULL, *sock = NULL, *listen_at = NULL;
	struct api *api = NULL;
	struct collector_opts copts = { 0 };
	struct daemon d = { .lfd = -1, .sfd = -1 };
	sigset_t mask;
	int opt, err;

	d.loop.ep = d.loop.tick_fd = -1;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'L':
			listen_at = optarg;
			break;
		case 'h':
			fputs(daemon_usage, stdout);
			return 0;
		default:
			tp_err("daemon: %s option '%s'; see 'taskprobe daemon --help'",
			       opt == ':' ? "missing value for" : "unknown", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		tp_err("daemon: unexpected argument '%.64s'", argv[optind]);
		return 2;
	}
	/* The config and its rules, checked once: a bad line stops the daemon here. */
	if (load_config(d.config_path, &d.cfg, &d.capture_args, &d.config_text))
		return 1;
	if (cgroup2_mount(d.root, sizeof(d.root))) {
		tp_err("no cgroup2 hierarchy is mounted; mount one with 'mount -t cgroup2 none "
		       "/sys/fs/cgroup'");
		return 1;
	}
	copts.capture_args = d.capture_args;
	d.c = collector__open(&copts);
	if (!d.c) {
		tp_err("cannot load the BPF collector: %s", strerror(errno));
		return 1;
	}
	err = 1;
	db = db							 ? db
	     : getenv("TASKPROBE_DB") && *getenv("TASKPROBE_DB") ? getenv("TASKPROBE_DB")
								 : d.cfg.db;
	d.store = store__open(db, true, d.cfg.db_gid);
	if (!d.store || loop__init(&d.loop, COLLECTOR_DRAIN_MS) ||
	    listen_on(&d, control_path(sock)))
		goto out;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d.listen_h = (struct loop_handler){ d.lfd, EPOLLIN, on_listen, &d };
	d.sig_h = (struct loop_handler){ d.sfd, EPOLLIN, on_signalfd, &d };
	if (d.sfd < 0 || loop__add(&d.loop, &d.listen_h) || loop__add(&d.loop, &d.sig_h) ||
	    collector__watch(d.c, &d.loop)) {
		tp_err("cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	listen_at = listen_at ? listen_at : d.cfg.listen;
	if (strcmp(listen_at, "off")) {
		struct api_source src = { d.store, d.c, tasks_running, &d };

		api = api__open(listen_at, d.cfg.api_token, &src, &d.loop);
		if (!api)
			goto out;
	}
	fprintf(stderr, "taskprobe: daemon listening on %s%s%s\n", control_path(sock),
		api ? ", HTTP on " : "", api ? listen_at : "");
	if (loop__run(&d.loop))
		goto out;
	/* Stopped: what the tasks still tracked did so far is kept, said interrupted. */
	collector__sync(d.c);
	while (d.ntasks)
		end_task(&d, d.tasks[0], TASK_INTERRUPTED, -1);
	err = 0;
out:
	api__close(api);
	while (d.ntasks)
		drop_task(&d, d.tasks[0]);
	if (d.lfd >= 0) {
		close(d.lfd);
		unlink(control_path(sock));
	}
	if (d.sfd >= 0)
		close(d.sfd);
	loop__fini(&d.loop);
	store__close(d.store);
	collector__free(d.c);
	free(d.config_text);
	return err;
}
