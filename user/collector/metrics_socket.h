/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metrics socket: a Unix datagram socket whose path the task gets as
 * TASKPROBE_SOCKET. The sender is known from the kernel's credentials of each
 * datagram (SCM_CREDENTIALS), never from anything it says.
 */
#ifndef TP_MSOCK_H
#define TP_MSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/types.h>

#include "base/htab.h"

#define MSOCK_DIR "/run/taskprobe"
/* One datagram: many lines, each at most 4 KiB. */
#define MSOCK_DGRAM_MAX 65536

struct msock {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool pidfds;	     /* the kernel attaches a pidfd of the sender (SO_PASSPIDFD, 6.5+) */
	struct htab senders; /* pidfs inode of a checked sender -> 1 in the task, 2 not */
};

/* Binds a socket for this run under MSOCK_DIR (anyone may send; senders are checked). */
int msock__open(struct msock *m);
/* The same at path (under MSOCK_DIR): a task's socket bound again by the daemon adopting it. */
int msock__open_at(struct msock *m, const char *path);
/*
 * One datagram into buf; the sender's pid (0 when the kernel gave none) and address
 * (for msock__ack; from_len 0 when the sender has none). *pidfd is a pidfd of the
 * sender, or -1; the caller closes it.
 */
ssize_t msock__recv(struct msock *m, char *buf, size_t len, pid_t *pid, int *pidfd,
		    struct sockaddr_un *from, socklen_t *from_len);
/*
 * Is the sender inside the cgroup rel? Checked once per sender process while it is
 * alive and remembered by its pidfs identity (never reused), so that datagrams it
 * sent before exiting are still its own. Without pidfds, only a live sender passes.
 */
bool msock__sender_in(struct msock *m, pid_t pid, int pidfd, const char *rel);
/*
 * Tells a waiting sender what became of its datagram (the `phase` and `emit` commands
 * wait for it): "ok", or "refused REASON" for its first refused line.
 */
void msock__ack(struct msock *m, const struct sockaddr_un *to, socklen_t to_len,
		const char *answer);
void msock__close(struct msock *m);
/*
 * Sends one datagram to the socket in TASKPROBE_SOCKET and waits (up to 2 s) for the
 * collector's answer ("ok" or "refused REASON", into answer), so that the sender is
 * still alive, and its cgroup known, when the collector checks who sent it.
 */
int msock_send(const char *text, size_t len, char *answer, size_t alen);
/* Is pid's cgroup v2 the cgroup rel (relative to the cgroup2 mount) or below it? */
int pid_in_cgroup(pid_t pid, const char *rel);

#endif /* TP_MSOCK_H */
