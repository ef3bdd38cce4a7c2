// SPDX-License-Identifier: GPL-2.0
/*
 * The host daemon's service (session/daemon.h): its open, loop and close, the config
 * and its reload, the pins, and the control socket's requests read as they arrive; the
 * tasks are daemon_tasks.c's, those a daemon before left daemon_adopt.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/un.h>

#include "base/loop.h"
#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "model/config.h"
#include "session/control.h"
#include "session/daemon.h"
#include "session/daemon_int.h"
#include "session/handover.h"
#include "session/session.h"
#include "store/ship.h"
#include "store/spool.h"
#include "store/store.h"

/* How long a request may take to arrive whole. */
#define CONTROL_READ_MS 2000

/* The spool is looked into this often, and each look is kept short. */
#define SPOOL_DRAIN_EVERY_NS (10ULL * 1000 * 1000 * 1000)
#define SPOOL_DRAIN_MAX 20
#define SPOOL_DRAIN_NS (200ULL * 1000 * 1000)

/*
 * The sink and otlp_endpoint of d->cfg: each one's outbox on, and the shipper
 * (re)started while either is set; neither: no shipper.
 */
static void apply_sink(struct daemon *d)
{
	bool any = false;

	shipper__stop(&d->ship);
	for (int q = 0; q < STORE_QUEUES; q++) {
		bool on = ship_configured(q, &d->cfg);

		store__set_outbox(d->store, q, on);
		if (on)
			ship_name_sink(d->store, q, &d->cfg);
		any |= on;
	}
	if (any && shipper__start(&d->ship, d->db, &d->cfg))
		tp_err("cannot start the shipper: %s; tasks wait in the outbox", strerror(errno));
}

static void pending_free(struct daemon *d, struct pending *pc, bool close_fd)
{
	if (pc->h.fd >= 0)
		loop__del(&d->loop, &pc->h);
	for (int i = 0; i < d->npending; i++)
		if (d->pending[i] == pc) {
			d->pending[i] = d->pending[--d->npending];
			break;
		}
	if (close_fd && pc->h.fd >= 0)
		close(pc->h.fd);
	free(pc->buf);
	free(pc);
	/* A slot is free: the clients waiting in the backlog are accepted again. */
	if (d->listen_paused && !loop__add(&d->loop, &d->listen_h))
		d->listen_paused = false;
}

/*
 * What a connection has sent, read without waiting: once its line is whole it is
 * answered, and pc is gone. True while the line is not whole yet.
 */
static bool pending_read(struct daemon *d, struct pending *pc)
{
	int fd = pc->h.fd;
	char *nl = NULL;

	for (;;) {
		ssize_t n;

		if (pc->len + 1 >= pc->cap) {
			size_t cap = pc->cap ? pc->cap * 4 : 4096;
			char *b;

			if (pc->cap >= CONTROL_LINE_MAX) {
				daemon_answer(
					fd,
					"error\tthe request is not one line of at most %d bytes",
					CONTROL_LINE_MAX - 1);
				pending_free(d, pc, true);
				return false;
			}
			b = realloc(pc->buf, cap < CONTROL_LINE_MAX ? cap : CONTROL_LINE_MAX);
			if (!b) {
				pending_free(d, pc, true);
				return false;
			}
			pc->buf = b;
			pc->cap = cap < CONTROL_LINE_MAX ? cap : CONTROL_LINE_MAX;
		}
		n = read(fd, pc->buf + pc->len, pc->cap - 1 - pc->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			pending_free(d, pc, true);
			return false;
		}
		nl = memchr(pc->buf + pc->len, '\n', (size_t)n);
		pc->len += (size_t)n;
		if (nl)
			break;
	}
	*nl = '\0';
	/* The request is whole: answered as before, on a blocking socket. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	loop__del(&d->loop, &pc->h);
	pc->h.fd = -1;
	if (!daemon__on_request(d, fd, pc->buf))
		close(fd);
	pending_free(d, pc, false);
	return false;
}

/* A connection's request, read as it arrives: the loop never waits for a client. */
static void on_pending(struct loop *l, void *ctx, int fd, uint32_t events)
{
	(void)l, (void)fd, (void)events;
	pending_read(((struct pending *)ctx)->d, ctx);
}

/*
 * Requests not whole within CONTROL_READ_MS are refused: the client is too slow. What
 * it sent is read first: a daemon busy with other tasks past the deadline may not have
 * read yet a line that came in time (the tick can come before its event).
 */
static void expire_pending(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;

	(void)l;
	/* pending_read and pending_free move the last entry into i: one seen already. */
	for (int i = d->npending - 1; i >= 0; i--) {
		struct pending *pc = d->pending[i];

		if (now < pc->deadline_ns || !pending_read(d, pc))
			continue;
		daemon_answer(pc->h.fd, "error\tno whole request line within %d ms",
			      CONTROL_READ_MS);
		pending_free(d, pc, true);
	}
}

/*
 * What the spool holds (tasks the store could not take when they ended) goes into the
 * store once it works again: a few at a time, so that the loop is never held long.
 */
static void drain_spool(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;
	int n;

	(void)l;
	if (now < d->spool_next_ns)
		return;
	d->spool_next_ns = now + SPOOL_DRAIN_EVERY_NS;
	n = spool__drain(d->store, d->db, SPOOL_DRAIN_MAX, SPOOL_DRAIN_NS);
	if (n > 0)
		tp_note("%d spooled task%s stored in %s", n, n == 1 ? "" : "s", d->db);
}

static void on_listen(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct daemon *d = ctx;
	int c;

	(void)events;
	/*
	 * With every pending slot taken, clients are not refused: they wait in the listen
	 * backlog (then in connect) until a slot frees. Each slot is freed within
	 * CONTROL_READ_MS, so a burst of runs is slowed, never failed.
	 */
	while (d->npending < PENDING_MAX &&
	       (c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct pending *pc = calloc(1, sizeof(*pc));

		if (!pc) {
			daemon_answer(c, "error\tthe daemon is out of memory");
			close(c);
			continue;
		}
		pc->d = d;
		pc->h = (struct loop_handler){ c, EPOLLIN, on_pending, pc };
		pc->deadline_ns = tp_now_ns() + CONTROL_READ_MS * 1000000ULL;
		if (loop__add(l, &pc->h)) {
			close(c);
			free(pc);
			continue;
		}
		d->pending[d->npending++] = pc;
	}
	if (d->npending == PENDING_MAX) {
		loop__del(l, &d->listen_h);
		d->listen_paused = true;
	}
}

/*
 * The config and its rules, checked, and the file's text for the tasks' rules (NULL
 * when there is no file): 0, or -EINVAL after the line saying what is wrong.
 */
static int load_config(const char *path, struct config *cfg, char **text)
{
	const char *file = path ? path : TP_DEFAULT_CONFIG;
	struct session probe;
	char *buf;
	ssize_t n;
	int err;

	*text = NULL;
	config__defaults(cfg);
	/* One read for the keys and the rules: a save in between cannot split them. */
	n = tp_slurp(file, "config", path != NULL, &buf);
	if (n < 0)
		return (int)n;
	err = config__parse(cfg, file, buf);
	if (err) {
		free(buf);
		return err;
	}
	err = session__init(&probe,
			    &(struct session_params){ .config_path = path, .config_text = buf });
	session__fini(&probe);
	if (err)
		free(buf);
	else
		*text = buf;
	return err;
}

/*
 * SIGHUP: the config and its rules again, for tasks started from now on; a bad file
 * keeps the one in use (said in the log). What the collector loaded stays (collect,
 * max_tasks); exec rules get arguments per task, whenever they come.
 */
static void reload(struct daemon *d)
{
	struct config cfg;
	char *text;

	if (load_config(d->config_path, &cfg, &text)) {
		tp_err("reload: %s has errors; the config in use is kept",
		       d->config_path ? d->config_path : TP_DEFAULT_CONFIG);
		return;
	}
	if (cfg.collect != collector__collects(d->c))
		tp_err("warning: collect takes effect at a restart of the daemon");
	if (cfg.max_tasks != d->max_tasks)
		tp_err("warning: max_tasks = %d takes effect at a restart of the daemon; %d until "
		       "then",
		       cfg.max_tasks, d->max_tasks);
	bool sink_changed =
		strcmp(cfg.sink, d->cfg.sink) || strcmp(cfg.sink_passfile, d->cfg.sink_passfile) ||
		cfg.sink_retain_days != d->cfg.sink_retain_days ||
		strcmp(cfg.otlp_endpoint, d->cfg.otlp_endpoint) ||
		strcmp(cfg.otlp_headers_file, d->cfg.otlp_headers_file) ||
		cfg.otlp_metrics != d->cfg.otlp_metrics || cfg.notlp_attrs != d->cfg.notlp_attrs ||
		memcmp(cfg.otlp_attrs, d->cfg.otlp_attrs, sizeof(cfg.otlp_attrs));

	d->cfg = cfg;
	free(d->config_text);
	d->config_text = text;
	if (sink_changed)
		apply_sink(d);
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

/*
 * The maps and links pinned for bpftool and for after a crash (TASKPROBE_PIN_DIR, else
 * the config's pin_dir); bpffs mounted at /sys/fs/bpf for the default one if need be.
 * Not fatal: the daemon works without pins. The directory is "" when none.
 */
static const char *pin_dir_of(const struct daemon *d)
{
	const char *env = getenv("TASKPROBE_PIN_DIR");
	const char *want = env && *env ? env : d->cfg.pin_dir;

	return strcmp(want, "off") ? want : NULL;
}

static void pin(struct daemon *d, char *dir, size_t len)
{
	const char *want = pin_dir_of(d) ? pin_dir_of(d) : "off";
	struct statfs fs;
	int err;

	dir[0] = '\0';
	if (!strcmp(want, "off"))
		return;
	if (!strcmp(want, TP_DEFAULT_PIN_DIR) &&
	    (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC) &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		tp_err("warning: cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
	err = collector__pin(d->c, want);
	if (err) {
		tp_err("warning: maps and links not pinned under %s: %s (is it on a bpffs?)", want,
		       strerror(-err));
		return;
	}
	snprintf(dir, len, "%s", want);
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

struct daemon *daemon__open(const struct daemon_opts *o)
{
	struct collector_opts copts = { 0 };
	const char *db, *why = NULL;
	struct daemon *d;
	bool adopted;
	sigset_t mask;

	d = calloc(1, sizeof(*d));
	if (!d) {
		tp_err("out of memory");
		return NULL;
	}
	d->sock = o->sock;
	d->lfd = d->sfd = d->held = -1;
	d->loop.ep = d->loop.tick_fd = -1;
	d->config_path = o->config_path;
	d->keep_tasks = o->keep_tasks;
	/* The config and its rules, checked once: a bad line stops the daemon here. */
	if (load_config(d->config_path, &d->cfg, &d->config_text))
		goto fail;
	if (cgroup2_mount(d->root, sizeof(d->root))) {
		tp_err("no cgroup2 hierarchy is mounted; mount one with 'mount -t cgroup2 none "
		       "/sys/fs/cgroup'");
		goto fail;
	}
	d->keep_tasks |= d->cfg.keep_tasks;
	db = o->db						 ? o->db
	     : getenv("TASKPROBE_DB") && *getenv("TASKPROBE_DB") ? getenv("TASKPROBE_DB")
								 : d->cfg.db;
	snprintf(d->db, sizeof(d->db), "%s", db);
	/* One daemon a store: a second one must not take the tasks of a live one. */
	if (!handover__dir(d->db, d->handover, sizeof(d->handover)) &&
	    (d->held = handover__lock(d->handover)) == -EBUSY) {
		tp_err("daemon: a daemon is running already on the store %s (it holds %s); stop "
		       "it first",
		       d->db, d->handover);
		d->held = -1;
		goto fail;
	}
	/* The tasks a daemon before us left, to adopt with its pinned maps and links. */
	if (d->held < 0 || handover__load(d->handover, &d->left, &d->nleft))
		d->handover[0] = '\0';
	/* Another version's programs would go on writing what this one cannot read. */
	for (int i = 0; i < d->nleft && !why; i++)
		if (d->left[i].abi != TP_ABI_VERSION)
			why = "the daemon before was of another version (its ABI)";
	copts.adopt_dir = d->nleft && !why ? pin_dir_of(d) : NULL;
	copts.max_tasks = d->max_tasks = d->cfg.max_tasks;
	copts.collect = d->cfg.collect;
	d->tasks = calloc((size_t)d->max_tasks, sizeof(*d->tasks));
	if (!d->tasks) {
		tp_err("out of memory for %d tasks", d->max_tasks);
		goto fail;
	}
	d->c = collector__open(&copts);
	if (!d->c) {
		tp_err("cannot load the BPF collector: %s", strerror(errno));
		goto fail;
	}
	/* Before the socket answers: a client that finds the daemon finds its pins. */
	pin(d, d->pinned, sizeof(d->pinned));
	d->store = store__open(db, true, d->cfg.db_gid);
	if (d->store)
		apply_sink(d);
	if (!d->store || loop__init(&d->loop, COLLECTOR_DRAIN_MS))
		goto fail;
	adopted = collector__adopted(d->c, why ? NULL : &why);
	daemon__adopt_tasks(d, d->left, d->nleft, adopted, why);
	/* Empty task cgroups of runs and daemons that died before removing them. */
	cgroup_sweep(d->root);
	if (listen_on(d, control_path(o->sock)))
		goto fail;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->listen_h = (struct loop_handler){ d->lfd, EPOLLIN, on_listen, d };
	d->sig_h = (struct loop_handler){ d->sfd, EPOLLIN, on_signalfd, d };
	d->loop.after_fn = daemon__finish_runs;
	if (loop__on_tick(&d->loop, expire_pending, d) || loop__on_tick(&d->loop, drain_spool, d) ||
	    loop__on_tick(&d->loop, daemon__expire_orphans, d))
		goto fail;
	d->loop.after_ctx = d;
	if (d->sfd < 0 || loop__add(&d->loop, &d->listen_h) || loop__add(&d->loop, &d->sig_h) ||
	    collector__watch(d->c, &d->loop)) {
		tp_err("cannot set up the event loop: %s", strerror(errno));
		goto fail;
	}
	return d;
fail:
	daemon__close(d);
	return NULL;
}

const struct config *daemon__config(const struct daemon *d)
{
	return &d->cfg;
}

struct store *daemon__store(struct daemon *d)
{
	return d->store;
}

struct collector *daemon__collector(struct daemon *d)
{
	return d->c;
}

struct loop *daemon__loop(struct daemon *d)
{
	return &d->loop;
}

const char *daemon__db(const struct daemon *d)
{
	return d->db;
}

int daemon__serve(struct daemon *d, const char *http)
{
	fprintf(stderr, "taskprobe: daemon listening on %s%s%s%s%s\n", control_path(d->sock),
		http ? ", HTTP on " : "", http ? http : "",
		d->pinned[0] ? ", BPF pinned under " : "", d->pinned);
	if (loop__run(&d->loop))
		return 1;
	if (d->keep_tasks) {
		/* Handed over: the next daemon adopts the tasks, their maps and links. */
		tp_note("handing %d task%s over to the next daemon (maps and links stay pinned "
			"under %s)",
			d->ntasks, d->ntasks == 1 ? "" : "s", d->pinned[0] ? d->pinned : "nothing");
		d->handing_over = true;
		collector__keep_pins(d->c);
	} else {
		/* Stopped: what the tasks still tracked did so far is kept, said interrupted. */
		collector__sync(d->c);
		while (d->ntasks)
			daemon__end_task(d, d->tasks[0], TASK_INTERRUPTED, d->tasks[0]->conn);
	}
	return 0;
}

void daemon__close(struct daemon *d)
{
	if (!d)
		return;
	shipper__stop(&d->ship);
	while (d->npending)
		pending_free(d, d->pending[0], true);
	while (d->ntasks)
		daemon__drop_task(d, d->tasks[0]);
	if (d->lfd >= 0) {
		close(d->lfd);
		unlink(control_path(d->sock));
	}
	if (d->sfd >= 0)
		close(d->sfd);
	loop__fini(&d->loop);
	store__close(d->store);
	collector__free(d->c);
	handover__free(d->left, d->nleft);
	free(d->left);
	if (d->held >= 0)
		close(d->held);
	free(d->tasks);
	free(d->ended);
	free(d->config_text);
	free(d);
}
