// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload: sends TEXT as one datagram COUNT times to the socket in
 * TASKPROBE_SOCKET (or PATH), then one "sendlines.done:1|c" that waits for the
 * collector's "ok", so that everything before it was taken while we were alive.
 *   sendlines [-s PATH] COUNT TEXT      (TEXT's "\n" sequences become newlines)
 *   sendlines -f COUNT TEXT             fire and forget: one datagram, a 300 ms pause,
 *                                       the rest, and exit at once without waiting
 * The bulk goes from an unbound socket (no answers to pile up), the last datagram
 * from a bound one; both queue in order on the collector's socket.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un to = { .sun_family = AF_UNIX }, self = { .sun_family = AF_UNIX };
	const char *path = getenv("TASKPROBE_SOCKET"), *done = "sendlines.done:1|c";
	struct pollfd p;
	char *text, ack[8];
	long count;
	int fd, bulk, a = 1;
	size_t len = 0;

	int forget = 0;

	if (argc > 3 && !strcmp(argv[1], "-s")) {
		path = argv[2];
		a = 3;
	} else if (argc > 2 && !strcmp(argv[1], "-f")) {
		forget = 1;
		a = 2;
	}
	if (argc - a != 2 || !path || strlen(path) >= sizeof(to.sun_path)) {
		fprintf(stderr, "usage: sendlines [-s PATH] COUNT TEXT\n");
		return 2;
	}
	count = atol(argv[a]);
	text = malloc(strlen(argv[a + 1]) + 1);
	for (const char *s = argv[a + 1]; *s; s++) {
		if (s[0] == '\\' && s[1] == 'n') {
			text[len++] = '\n';
			s++;
		} else {
			text[len++] = *s;
		}
	}
	strcpy(to.sun_path, path);
	bulk = socket(AF_UNIX, SOCK_DGRAM, 0);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (bulk < 0 || fd < 0 || bind(fd, (struct sockaddr *)&self, sizeof(sa_family_t)))
		return 1;
	for (long i = 0; i < count; i++) {
		if (sendto(bulk, text, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len)
			return 1;
		if (forget && i == 0)
			usleep(300000);
	}
	if (forget)
		return 0;
	if (sendto(fd, done, strlen(done), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return 1;
	p.fd = fd;
	p.events = POLLIN;
	return poll(&p, 1, 10000) == 1 && recv(fd, ack, sizeof(ack), 0) > 0 ? 0 : 3;
}
