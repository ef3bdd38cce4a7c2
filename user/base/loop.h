/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One event loop (epoll) for everything a process waits on: each fd has a registered
 * handler, and one periodic tick runs whatever is due by time (drains, scans,
 * sampling, deadlines), so that no module keeps a schedule of its own out of sight.
 */
#ifndef TP_LOOP_H
#define TP_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <linux/types.h>

struct loop;

/* An fd is ready with events (EPOLLIN, EPOLLPRI, ...). */
typedef void (*loop_fd_fn)(struct loop *l, void *ctx, int fd, uint32_t events);
/* The tick: now is CLOCK_MONOTONIC in ns. */
typedef void (*loop_tick_fn)(struct loop *l, void *ctx, __u64 now);

/* Registered by the caller, which owns it until it is removed. */
struct loop_handler {
	int fd;
	uint32_t events;
	loop_fd_fn fn;
	void *ctx;
};

struct loop {
	int ep;
	int tick_fd;
	unsigned tick_ms;
	struct loop_tick {
		loop_tick_fn fn;
		void *ctx;
	} * ticks; /* in the order added (a daemon: one per task) */
	int nticks;
	int cap_ticks;
	/* Run after each batch of events, when no handler is on the stack (frees). */
	void (*after_fn)(struct loop *l, void *ctx);
	void *after_ctx;
	struct epoll_event *batch; /* the events being dispatched, for loop__del */
	int batch_n;
	bool stop;
};

/* Epoll set and tick timer (every tick_ms); 0 or -errno. */
int loop__init(struct loop *l, unsigned tick_ms);
void loop__fini(struct loop *l);
/* Watches h->fd for h->events; 0 or -errno. */
int loop__add(struct loop *l, struct loop_handler *h);
/* Stops watching; an event of h already taken in the batch is dropped: h may be freed. */
void loop__del(struct loop *l, struct loop_handler *h);
/* Adds fn to the tick, after the ones added before it; 0 or -ENOMEM. */
int loop__on_tick(struct loop *l, loop_tick_fn fn, void *ctx);
/* Takes fn with ctx off the tick. */
void loop__off_tick(struct loop *l, loop_tick_fn fn, void *ctx);
/* Runs handlers until loop__stop(); 0, or -errno if waiting failed. */
int loop__run(struct loop *l);
void loop__stop(struct loop *l);

#endif /* TP_LOOP_H */
