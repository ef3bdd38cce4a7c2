// SPDX-License-Identifier: GPL-2.0
/* The task's output: passed through byte for byte, its lines read for phase markers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/output.h"

static bool same_file(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int output__open(struct output *o, bool enable, output_line_fn fn, void *ctx)
{
	int p[2];

	memset(o, 0, sizeof(*o));
	o->child_out = o->child_err = -1;
	o->s[0].in_fd = o->s[1].in_fd = -1;
	o->on_line = fn;
	o->ctx = ctx;
	if (!enable || isatty(STDOUT_FILENO))
		return 0;
	for (int i = 0; i < (same_file(STDOUT_FILENO, STDERR_FILENO) ? 1 : 2); i++) {
		if (pipe2(p, O_CLOEXEC)) {
			output__close(o);
			return -errno;
		}
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		o->s[i].in_fd = p[0];
		o->s[i].out_fd = i ? STDERR_FILENO : STDOUT_FILENO;
		if (i)
			o->child_err = p[1];
		else
			o->child_out = p[1];
		o->n++;
	}
	if (o->n == 1)
		o->child_err = o->child_out;
	return 0;
}

void output__child(const struct output *o)
{
	if (!o->n)
		return;
	dup2(o->child_out, STDOUT_FILENO);
	dup2(o->child_err, STDERR_FILENO);
}

void output__started(struct output *o)
{
	if (o->child_err >= 0 && o->child_err != o->child_out)
		close(o->child_err);
	if (o->child_out >= 0)
		close(o->child_out);
	o->child_out = o->child_err = -1;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };

				poll(&pf, 1, 100);
				continue;
			}
			return; /* our own output is gone: keep reading, so the task never blocks */
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Lines for the parser; bytes were already passed on untouched. */
static void scan(struct output *o, struct out_stream *s, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (!s->skipping && s->len + take < sizeof(s->line)) {
			memcpy(s->line + s->len, p, take);
			s->len += take;
		} else {
			s->skipping = true;
		}
		if (!nl)
			return;
		if (!s->skipping) {
			size_t len = s->len;

			if (len && s->line[len - 1] == '\r')
				len--;
			o->on_line(o->ctx, s->line, len);
		}
		s->len = 0;
		s->skipping = false;
		p += take + 1;
		n -= take + 1;
	}
}

int output__pump(struct output *o, int i)
{
	struct out_stream *s = &o->s[i];
	char buf[65536];

	for (;;) {
		ssize_t n = s->in_fd >= 0 ? read(s->in_fd, buf, sizeof(buf)) : 0;

		if (n > 0) {
			write_all(s->out_fd, buf, (size_t)n);
			o->bytes += (__u64)n;
			if (o->on_line)
				scan(o, s, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (s->in_fd >= 0)
			close(s->in_fd);
		s->in_fd = -1;
		return -1;
	}
}

void output__drain(struct output *o, bool wait)
{
	for (int i = 0; i < o->n; i++) {
		while (o->s[i].in_fd >= 0 && output__pump(o, i) == 0 && wait) {
			struct pollfd pf = { .fd = o->s[i].in_fd, .events = POLLIN };

			if (poll(&pf, 1, 1000) <= 0)
				break;
		}
	}
}

void output__close(struct output *o)
{
	output__started(o);
	for (int i = 0; i < 2; i++) {
		if (o->s[i].in_fd >= 0)
			close(o->s[i].in_fd);
		o->s[i].in_fd = -1;
	}
	o->n = 0;
}
