// SPDX-License-Identifier: GPL-2.0
/* The metrics socket: datagrams with the sender's kernel credentials. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "collector/metrics_socket.h"

#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif
#define PIDFS_MAGIC 0x50494446
#include "base/util.h"

/* Whether a socket listens at path (a datagram's connect succeeds only then). */
static bool bound(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Sockets of collectors that died without closing theirs (SIGKILL): their pid is gone. */
static void sweep_stale(void)
{
	struct dirent *de;
	DIR *d = opendir(MSOCK_DIR);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
		int pid;

		/* run-PID.sock or run-PID-N.sock */
		if (sscanf(de->d_name, "run-%d", &pid) != 1 || pid <= 0)
			continue;
		if (kill(pid, 0) && errno == ESRCH) {
			snprintf(path, sizeof(path), "%s/%s", MSOCK_DIR, de->d_name);
			/* Bound again by a daemon that adopted its task: alive, kept. */
			if (!bound(path))
				unlink(path);
		}
	}
	closedir(d);
}

int msock__open(struct msock *m)
{
	return msock__open_at(m, NULL);
}

int msock__open_at(struct msock *m, const char *at)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int one = 1, rcvbuf = 4 << 20;
	static unsigned seq;

	m->fd = -1;
	memset(&m->senders, 0, sizeof(m->senders));
	if (mkdir(MSOCK_DIR, 0755) && errno != EEXIST)
		return -errno;
	sweep_stale();
	/* The pid first, for the sweep; then which of this process's tasks (a daemon's many). */
	if (at && strncmp(at, MSOCK_DIR "/", strlen(MSOCK_DIR) + 1))
		return -EINVAL;
	if (at)
		snprintf(m->path, sizeof(m->path), "%s", at);
	else if (seq++)
		snprintf(m->path, sizeof(m->path), "%s/run-%d-%u.sock", MSOCK_DIR, (int)getpid(),
			 seq);
	else
		snprintf(m->path, sizeof(m->path), "%s/run-%d.sock", MSOCK_DIR, (int)getpid());
	unlink(m->path);
	m->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (m->fd < 0)
		return -errno;
	/* A larger queue absorbs bursts; senders block when it is full, nothing drops. */
	setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(m->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)))
		goto fail;
	/* Older kernels refuse it: senders are then checked only while alive. */
	m->pidfds = !setsockopt(m->fd, SOL_SOCKET, SO_PASSPIDFD, &one, sizeof(one));
	if (htab__init(&m->senders, sizeof(__u8)))
		goto fail;
	memcpy(sa.sun_path, m->path, sizeof(m->path));
	if (bind(m->fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	/* Any user's process in the task may report; processes outside it are refused. */
	chmod(m->path, 0666);
	return 0;
fail:
	close(m->fd);
	m->fd = -1;
	return -errno;
}

ssize_t msock__recv(struct msock *m, char *buf, size_t len, pid_t *pid, int *pidfd,
		    struct sockaddr_un *from, socklen_t *from_len)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_name = from,
			      .msg_namelen = sizeof(*from),
			      .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;

	*pid = 0;
	*pidfd = -1;
	*from_len = 0;
	n = recvmsg(m->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	/* Only a bound sender (sun_path beyond the family) can be answered. */
	*from_len = msg.msg_namelen > sizeof(sa_family_t) ? msg.msg_namelen : 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			*pid = cred.pid;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_PIDFD) {
			memcpy(pidfd, CMSG_DATA(c), sizeof(int));
		}
	}
	/* A truncated datagram is refused whole, as an over-long line. */
	if (msg.msg_flags & MSG_TRUNC) {
		if (*pidfd >= 0)
			close(*pidfd);
		*pidfd = -1;
		return -EMSGSIZE;
	}
	return n;
}

void msock__ack(struct msock *m, const struct sockaddr_un *to, socklen_t to_len, const char *answer)
{
	if (to_len)
		sendto(m->fd, answer, strlen(answer), MSG_DONTWAIT, (const struct sockaddr *)to,
		       to_len);
}

/* The pidfs inode of a pidfd: unique to one process for the machine's life. */
static __u64 pidfs_id(int pidfd)
{
	struct statfs sfs;
	struct stat st;

	if (pidfd < 0 || fstatfs(pidfd, &sfs) || (unsigned long)sfs.f_type != PIDFS_MAGIC ||
	    fstat(pidfd, &st))
		return 0;
	return (__u64)st.st_ino;
}

bool msock__sender_in(struct msock *m, pid_t pid, int pidfd, const char *rel)
{
	__u64 id = pidfs_id(pidfd);
	__u8 *known = id ? htab__get(&m->senders, id) : NULL, *v;
	bool in;

	if (known)
		return *known == 1;
	if (pid <= 0)
		return false;
	in = pid_in_cgroup(pid, rel);
	/* Alive after the check: /proc/PID was that process, not a reuse of its pid. */
	if (id && !syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0)) {
		v = htab__put(&m->senders, id);
		if (v)
			*v = in ? 1 : 2;
	}
	return in;
}

void msock__close(struct msock *m)
{
	htab__fini(&m->senders);
	if (m->fd < 0)
		return;
	close(m->fd);
	unlink(m->path);
	m->fd = -1;
}

int msock_send(const char *text, size_t len, char *answer, size_t alen)
{
	const char *path = getenv("TASKPROBE_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX }, self = { 0 };
	int fd, err = 0;

	if (!path || !*path)
		return -ENOTCONN;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* An autobound (abstract) address, so that the collector can answer. */
	self.sun_family = AF_UNIX;
	if (bind(fd, (struct sockaddr *)&self, sizeof(sa_family_t)) ||
	    sendto(fd, text, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
	} else {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 2000) != 1 || (n = recv(fd, answer, alen - 1, 0)) <= 0)
			err = -ETIMEDOUT;
		else
			answer[n] = '\0';
	}
	close(fd);
	return err;
}

int pid_in_cgroup(pid_t pid, const char *rel)
{
	char file[64], buf[4096], *line, *save;
	size_t n = strlen(rel);

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (tp_read_file(file, buf, sizeof(buf)) <= 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		line += 3;
		return !strncmp(line, rel, n) && (line[n] == '\0' || line[n] == '/');
	}
	return 0;
}
