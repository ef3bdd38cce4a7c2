/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by every module: messages, validation, time and number formatting. */
#ifndef TP_UTIL_H
#define TP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#define TP_ID_MAX 128
#define TP_LABELS_MAX 64
#define TP_LABEL_KEY_MAX 64
#define TP_LABEL_VAL_MAX 256

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern int tp_verbose;
/* Set by --json: errors are also written to stdout as {"error": "..."}. */
extern int tp_json_errors;

/* Every user-facing error: one line, prefixed "taskprobe: ". */
void tp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * From now on this thread's tp_err and tp_note lines are kept, the first one in buf
 * (without the "taskprobe: " prefix), not printed; tp_catch(NULL, 0) ends it, back to
 * the catch around it (they nest), or to printing.
 * For a fault the caller says once, in its own words, as one line.
 */
void tp_catch(char *buf, size_t len);
/* "taskprobe: warning: ..." on stderr, caught or not: a fault said while work goes on. */
void tp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line worth knowing that is no error ("taskprobe: ...", stderr only, never in --json). */
void tp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A "taskprobe: ..." line on stderr under -v only: what was skipped, and why. */
void tp_verbose_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tp_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What tp_valid_id takes, in words for messages and help (docs/task-record.md, `id`). */
#define TP_ID_RULE "1 to 128 of A-Z a-z 0-9 . _ : @ - (not . or ..)"
bool tp_valid_id(const char *id);
/* Splits "K=V" in place into key and value; -EINVAL with a reason when malformed. */
int tp_parse_label(char *kv, char **key, char **val, const char **why);
/* Parses a whole non-negative decimal number no larger than max. */
int tp_parse_u64(const char *s, __u64 max, __u64 *out);

/* "90s", "30m", "12h", "7d", "2w" (a bare number is seconds) into ns. */
int tp_parse_duration(const char *s, __u64 *ns);
__u64 tp_now_ns(void);	    /* CLOCK_MONOTONIC */
__u64 tp_realtime_ns(void); /* CLOCK_REALTIME */
/* "1.52 s", "340 ms", "12 us": a duration in a few characters. */
char *tp_fmt_dur(char *buf, size_t len, __u64 ns);
/* "64.0 MiB", "512 B": a size in a few characters. */
char *tp_fmt_bytes(char *buf, size_t len, __u64 bytes);
/* ISO 8601 UTC with milliseconds. */
char *tp_fmt_time(char *buf, size_t len, __u64 realtime_ns);
/* A path's last component ("a/b" -> "b"); the path itself when it ends in '/' or has none. */
const char *tp_base_name(const char *path);

/* Reads a small file whole into buf (NUL-terminated); returns bytes or -errno. */
ssize_t tp_read_file(const char *path, char *buf, size_t len);
/*
 * A config or rules file whole: its length, *out a malloc'd NUL-terminated copy; a
 * missing file that is not required reads as empty. Else -errno, said as "cannot read
 * WHAT PATH: ..." (-EFBIG: TP_TEXT_FILE_MAX bytes or more).
 */
#define TP_TEXT_FILE_MAX (256 * 1024)
ssize_t tp_slurp(const char *path, const char *what, bool required, char **out);
int tp_write_file(const char *path, const char *s);
/* Is the running kernel's release (uname) at least major.minor? */
bool tp_kernel_at_least(int major, int minor);
/*
 * path written whole or not at all: fn writes a temporary file beside it, renamed over
 * path once fn and the flush succeed. 0, fn's -errno, or the write's.
 */
int tp_write_whole(const char *path, int (*fn)(FILE *f, void *ctx), void *ctx);

/* Base64 (RFC 4648, padded): the bytes tp_base64 writes for len bytes, its NUL included. */
size_t tp_base64_len(size_t len);
void tp_base64(const void *in, size_t len, char *out);

#endif /* TP_UTIL_H */
