// SPDX-License-Identifier: GPL-2.0
/* The control socket's client side and its field escapes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "base/util.h"
#include "session/control.h"

const char *control_path(const char *opt)
{
	const char *env = getenv("TASKPROBE_CONTROL");

	return opt ? opt : env && *env ? env : CONTROL_SOCKET;
}

int control_connect(const char *path)
{
	struct timeval wait = { .tv_sec = CONTROL_CONNECT_S };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A daemon with a full backlog is waited for, but a stuck one not forever. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){ 0 },
			   sizeof(struct timeval));
		return fd;
	}
	err = errno == EAGAIN ? -ETIMEDOUT : -errno;
	close(fd);
	return err;
}

void control_put_field(FILE *f, const char *s)
{
	fputc('\t', f);
	for (; *s; s++) {
		if (*s == '\\' || *s == '\t' || *s == '\n')
			fputc('\\', f);
		fputc(*s == '\t' ? 't' : *s == '\n' ? 'n' : *s, f);
	}
}

char *control_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (*r == '\\' && (r[1] == '\\' || r[1] == 't' || r[1] == 'n')) {
			r++;
			*w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : '\\';
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return s;
}

char *control_ask(const char *path, const char *req, size_t *len, const char *who)
{
	size_t cap = 0, want = strlen(req);
	char *buf = NULL;
	int fd = control_connect(path);

	*len = 0;
	if (fd < 0) {
		tp_err("%s: no daemon answers on %s (%s); start one with 'taskprobe daemon'", who,
		       path, strerror(-fd));
		return NULL;
	}
	/* A stuck daemon is not waited for forever (an end stores its task: seconds). */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = CONTROL_ANSWER_S },
		   sizeof(struct timeval));
	if (write(fd, req, want) != (ssize_t)want) {
		tp_err("%s: cannot send to the daemon: %s", who, strerror(errno));
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (*len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap * 2 + 8192);

			if (!nb)
				break;
			buf = nb;
		}
		n = read(fd, buf + *len, cap - *len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			tp_err("%s: the daemon on %s did not answer within %d s", who, path,
			       CONTROL_ANSWER_S);
			close(fd);
			free(buf);
			return NULL;
		}
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	if (!buf || !*len) {
		tp_err("%s: the daemon closed the connection without an answer", who);
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	if (strncmp(buf, "ok", 2) || (buf[2] != '\n' && buf[2] != '\t')) {
		char *nl = strchr(buf, '\n');

		if (nl)
			*nl = '\0';
		tp_err("%s: %s", who, !strncmp(buf, "error\t", 6) ? buf + 6 : buf);
		free(buf);
		return NULL;
	}
	return buf;
}
