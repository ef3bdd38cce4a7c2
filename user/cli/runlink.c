// SPDX-License-Identifier: GPL-2.0
/* `run` through the host daemon: the client side of a run's connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "base/util.h"
#include "cli/commands.h"
#include "cli/runlink.h"
#include "model/rules.h"
#include "session/control.h"

bool runlink__wanted(const struct run_opts *o)
{
	const char *db = getenv("TASKPROBE_DB");

	return !o->no_daemon && !o->db_path && !o->no_db && !o->config_path && !(db && *db);
}

/* The --rules file, checked here so that a bad line is our error line, as embedded. */
static char *rules_text(const char *path)
{
	struct rules rs;
	char *text, *copy;
	ssize_t n;
	int err;

	n = tp_slurp(path, "rules", true, &text);
	if (n < 0)
		return NULL;
	copy = strdup(text);
	rules__init(&rs);
	err = !copy || rules__parse(&rs, path, copy, false) || rules__finish(&rs);
	rules__fini(&rs);
	free(copy);
	if (err) {
		free(text);
		return NULL;
	}
	return text;
}

/* The run request, one line. */
static char *request(const struct run_opts *o, const char *rules, size_t *len)
{
	char *req = NULL;
	FILE *f = open_memstream(&req, len);

	if (!f)
		return NULL;
	fprintf(f, "run\t%s\t%llu\t%llu\t%d\t%u", o->id, (unsigned long long)o->interval_ms,
		(unsigned long long)o->grace_s, o->keep_leftovers, o->collect);
	control_put_field(f, rules ? rules : "");
	fprintf(f, "\t%d", o->argc);
	for (int i = 0; i < o->argc; i++)
		control_put_field(f, o->argv[i]);
	for (int i = 0; i < o->nlabels; i++)
		fprintf(f, "\t%s=%s", o->labels[i].key, o->labels[i].val);
	fputc('\n', f);
	if (fclose(f)) {
		free(req);
		return NULL;
	}
	return req;
}

static int send_all(struct runlink *rl, const struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
	size_t want = 0;
	ssize_t sent;

	if (rl->fd < 0 || rl->broken)
		return -EPIPE;
	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	/* Messages are short: one sendmsg each, a partial one only on a broken link. */
	do
		sent = sendmsg(rl->fd, &m, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent != (ssize_t)want) {
		rl->broken = true;
		return -EPIPE;
	}
	return 0;
}

/*
 * One read of what the daemon sent into rl->buf (grown as needed, kept NUL-terminable):
 * the byte count, 0 and closed set at its end or on an error, or -1 when nothing is there
 * yet (MSG_DONTWAIT) or the receive timeout passed (the caller decides).
 */
static ssize_t fill(struct runlink *rl, int flags)
{
	ssize_t n;

	if (rl->len + 4096 + 1 > rl->cap) {
		size_t cap = rl->cap * 2 + 8192;
		char *b = realloc(rl->buf, cap);

		if (!b) {
			rl->closed = true;
			return 0;
		}
		rl->buf = b;
		rl->cap = cap;
	}
	do
		n = recv(rl->fd, rl->buf + rl->len, rl->cap - rl->len - 1, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	if (n <= 0) {
		rl->closed = true;
		return 0;
	}
	rl->len += (size_t)n;
	return n;
}

static void wait_up_to(struct runlink *rl, time_t s)
{
	struct timeval tv = { .tv_sec = s };

	setsockopt(rl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* The first line of the daemon's answer, up to its newline (what follows is kept). */
static char *answer_line(struct runlink *rl)
{
	char *nl;

	wait_up_to(rl, 10);
	while (!(nl = rl->len ? memchr(rl->buf, '\n', rl->len) : NULL))
		if (fill(rl, 0) <= 0)
			return NULL;
	*nl = '\0';
	return rl->buf;
}

static void take(struct runlink *rl, size_t n)
{
	memmove(rl->buf, rl->buf + n, rl->len - n);
	rl->len -= n;
}

int runlink__open(struct runlink *rl, const struct run_opts *o)
{
	const char *path = control_path(NULL);
	char *rules = NULL, *req, *ans, *f[4];
	size_t len;
	int fd, nf = 0;

	fd = control_connect(path);
	if (fd == -ETIMEDOUT) {
		tp_err("the daemon on %s took no connection for %d s", path, CONTROL_CONNECT_S);
		return -1;
	}
	if (fd < 0) {
		tp_debug("no daemon on %s (%s): the collector is embedded", path, strerror(-fd));
		return 0;
	}
	rl->fd = fd;
	if (o->rules_path && !(rules = rules_text(o->rules_path)))
		return -EINVAL;
	req = request(o, rules, &len);
	free(rules);
	if (!req || send_all(rl, &(struct iovec){ req, len }, 1)) {
		tp_err("cannot send the task to the daemon on %s: %s", path,
		       req ? strerror(errno) : "out of memory");
		free(req);
		return -1;
	}
	free(req);
	ans = answer_line(rl);
	if (!ans) {
		tp_err("the daemon on %s did not answer", path);
		return -1;
	}
	for (char *p = ans; p && nf < 4; nf++) {
		f[nf] = p;
		p = strchr(p, '\t');
		if (p)
			*p++ = '\0';
	}
	if (strcmp(f[0], "ok") || nf != 4) {
		tp_err("the daemon on %s refused the task: %s", path,
		       !strcmp(f[0], "error") && nf > 1 ? f[1] : "a malformed answer");
		return -1;
	}
	snprintf(rl->cgroup, sizeof(rl->cgroup), "%s", f[1]);
	snprintf(rl->memcg, sizeof(rl->memcg), "%s", f[2]);
	snprintf(rl->msock, sizeof(rl->msock), "%s", f[3]);
	take(rl, (size_t)(f[3] + strlen(f[3]) + 1 - rl->buf));
	return 1;
}

int runlink__reattach(struct runlink *rl, const char *id)
{
	const char *path = control_path(NULL);
	char req[TP_ID_MAX + 16], *ans;
	int fd = control_connect(path), n;

	if (fd < 0)
		return 0; /* no daemon yet */
	if (rl->fd >= 0)
		close(rl->fd);
	rl->fd = fd;
	rl->len = 0;
	rl->closed = rl->broken = rl->empty = false;
	n = snprintf(req, sizeof(req), "reattach\t%s\n", id);
	if (send_all(rl, &(struct iovec){ req, (size_t)n }, 1) || !(ans = answer_line(rl))) {
		rl->closed = true;
		return 0;
	}
	if (strncmp(ans, "ok\t", 3)) {
		rl->closed = true;
		return -1; /* that daemon has no such task: it did not adopt it */
	}
	take(rl, strlen(ans) + 1);
	return 1;
}

bool runlink__has_record(const struct runlink *rl)
{
	return rl->len >= 3 && !memcmp(rl->buf, "ok\n", 3);
}

void runlink__line(void *ctx, const char *line, size_t len)
{
	struct iovec iov[3] = { { "o\t", 2 }, { (void *)line, len }, { "\n", 1 } };

	/* A line holding a newline of its own cannot be one (OUTPUT_LINE_MAX cuts them). */
	if (!memchr(line, '\n', len))
		send_all(ctx, iov, 3);
}

void runlink__exited(struct runlink *rl, int wstatus, int exec_err)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "x\t%d\t%d\n", wstatus, exec_err);

	send_all(rl, &(struct iovec){ msg, (size_t)n }, 1);
}

void runlink__interrupt(struct runlink *rl)
{
	send_all(rl, &(struct iovec){ "i\n", 2 }, 1);
}

void runlink__read(struct runlink *rl)
{
	while (rl->fd >= 0 && !rl->closed && fill(rl, MSG_DONTWAIT) > 0)
		;
	if (!rl->empty && rl->len >= 2 && !memcmp(rl->buf, "e\n", 2)) {
		rl->empty = true;
		take(rl, 2);
	}
}

const char *runlink__finish(struct runlink *rl)
{
	if (!rl->closed && !rl->broken) {
		send_all(rl, &(struct iovec){ "f\n", 2 }, 1);
		wait_up_to(rl, RUNLINK_FINISH_S);
		while (!rl->closed && fill(rl, 0) > 0)
			;
		runlink__read(rl);
	}
	if (rl->len < 3 || memcmp(rl->buf, "ok\n", 3))
		return NULL;
	rl->buf[rl->len] = '\0';
	return rl->buf + 3;
}

void runlink__close(struct runlink *rl)
{
	if (rl->fd >= 0)
		close(rl->fd);
	rl->fd = -1;
	free(rl->buf);
	rl->buf = NULL;
}
