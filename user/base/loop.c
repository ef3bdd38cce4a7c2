// SPDX-License-Identifier: GPL-2.0
/* The event loop: epoll over registered handlers, and one periodic tick. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "base/loop.h"
#include "base/util.h"

int loop__init(struct loop *l, unsigned tick_ms)
{
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };

	memset(l, 0, sizeof(*l));
	l->tick_ms = tick_ms;
	l->tick_fd = -1;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0)
		return -errno;
	l->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->tick_fd < 0)
		goto fail;
	its.it_interval.tv_sec = tick_ms / 1000;
	its.it_interval.tv_nsec = (long)(tick_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	/* data.ptr NULL: the tick, not a handler. */
	ev.data.ptr = NULL;
	if (timerfd_settime(l->tick_fd, 0, &its, NULL) ||
	    epoll_ctl(l->ep, EPOLL_CTL_ADD, l->tick_fd, &ev))
		goto fail;
	return 0;
fail : {
	int err = -errno;

	loop__fini(l);
	return err;
}
}

void loop__fini(struct loop *l)
{
	if (l->tick_fd >= 0)
		close(l->tick_fd);
	if (l->ep >= 0)
		close(l->ep);
	l->tick_fd = l->ep = -1;
	free(l->ticks);
	l->ticks = NULL;
	l->nticks = l->cap_ticks = 0;
}

int loop__add(struct loop *l, struct loop_handler *h)
{
	struct epoll_event ev = { .events = h->events, .data.ptr = h };

	return epoll_ctl(l->ep, EPOLL_CTL_ADD, h->fd, &ev) ? -errno : 0;
}

/* Where an event of a removed handler was: skipped, not dispatched. */
static struct loop_handler removed;

void loop__del(struct loop *l, struct loop_handler *h)
{
	epoll_ctl(l->ep, EPOLL_CTL_DEL, h->fd, NULL);
	for (int i = 0; i < l->batch_n; i++)
		if (l->batch[i].data.ptr == h)
			l->batch[i].data.ptr = &removed;
}

int loop__on_tick(struct loop *l, loop_tick_fn fn, void *ctx)
{
	if (l->nticks == l->cap_ticks) {
		int cap = l->cap_ticks ? l->cap_ticks * 2 : 8;
		struct loop_tick *t = realloc(l->ticks, (size_t)cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		l->ticks = t;
		l->cap_ticks = cap;
	}
	l->ticks[l->nticks].fn = fn;
	l->ticks[l->nticks].ctx = ctx;
	l->nticks++;
	return 0;
}

void loop__off_tick(struct loop *l, loop_tick_fn fn, void *ctx)
{
	for (int i = 0; i < l->nticks; i++) {
		if (l->ticks[i].fn != fn || l->ticks[i].ctx != ctx)
			continue;
		memmove(&l->ticks[i], &l->ticks[i + 1],
			(size_t)(l->nticks - i - 1) * sizeof(l->ticks[0]));
		l->nticks--;
		return;
	}
}

static void run_tick(struct loop *l)
{
	__u64 expirations, now;

	if (read(l->tick_fd, &expirations, sizeof(expirations)) <= 0)
		return;
	now = tp_now_ns();
	for (int i = 0; i < l->nticks && !l->stop; i++)
		l->ticks[i].fn(l, l->ticks[i].ctx, now);
}

int loop__run(struct loop *l)
{
	struct epoll_event evs[16];

	l->stop = false;
	while (!l->stop) {
		int n = epoll_wait(l->ep, evs, ARRAY_SIZE(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* A handler may stop the loop, or remove another (whose event is dropped). */
		l->batch = evs;
		l->batch_n = n;
		for (int i = 0; i < n && !l->stop; i++) {
			struct loop_handler *h = evs[i].data.ptr;

			if (!h)
				run_tick(l);
			else if (h != &removed)
				h->fn(l, h->ctx, h->fd, evs[i].events);
		}
		l->batch_n = 0;
		if (l->after_fn)
			l->after_fn(l, l->after_ctx);
	}
	return 0;
}

void loop__stop(struct loop *l)
{
	l->stop = true;
}
