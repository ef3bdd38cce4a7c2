// SPDX-License-Identifier: GPL-2.0
/* The control socket's client side and its field escapes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control.h"

const char *control_path(const char *opt)
{
	const char *env = getenv("TASKPROBE_CONTROL");

	return opt ? opt : env && *env ? env : CONTROL_SOCKET;
}

int control_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return fd;
	err = -errno;
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
