/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The task's output, passed through byte for byte while its lines are read for
 * phase markers. Only when taskprobe's own stdout is not a terminal (a CI log): a
 * terminal keeps the task's output on the terminal itself, untouched and unread.
 */
#ifndef TP_OUTPUT_H
#define TP_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define OUTPUT_LINE_MAX 4096

typedef void (*output_line_fn)(void *ctx, const char *line, size_t len);

struct out_stream {
	int in_fd;  /* read end of the task's pipe, -1 once it is closed */
	int out_fd; /* our own stdout or stderr */
	char line[OUTPUT_LINE_MAX];
	size_t len;
	bool skipping; /* inside a line longer than OUTPUT_LINE_MAX: passed, not parsed */
};

struct output {
	struct out_stream s[2];
	int n;	       /* streams read: 0 (not intercepting), 1 (merged) or 2 */
	int child_out; /* write ends the task gets as its stdout and stderr */
	int child_err;
	output_line_fn on_line;
	void *ctx;
	__u64 bytes;
};

/* An output not opened yet: output__close may be called on it (no fd 0 closed). */
#define OUTPUT_CLOSED                                                                              \
	{                                                                                          \
		.s = { { .in_fd = -1 }, { .in_fd = -1 } }, .child_out = -1, .child_err = -1        \
	}

/*
 * Sets up interception unless disabled or stdout is a terminal. When stdout and
 * stderr are one file (2>&1), one pipe carries both, so their order is kept.
 */
int output__open(struct output *o, bool enable, output_line_fn fn, void *ctx);
/* In the child, before exec: the pipes become its stdout and stderr. */
void output__child(const struct output *o);
/* In the parent, after the child started: drops the write ends. */
void output__started(struct output *o);
/* Copies what waits on stream i; 0, or -1 at its end (the stream is then closed). */
int output__pump(struct output *o, int i);
/* Copies everything left; with wait, until every writer is gone. */
void output__drain(struct output *o, bool wait);
void output__close(struct output *o);

#endif /* TP_OUTPUT_H */
