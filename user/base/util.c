// SPDX-License-Identifier: GPL-2.0
/* Small helpers shared by every module: messages, validation, time and number formatting. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/util.h"

int tp_verbose;
int tp_json_errors;

void tp_verbose_log(const char *fmt, ...)
{
	va_list ap;

	if (!tp_verbose)
		return;
	va_start(ap, fmt);
	fputs("taskprobe: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * A message is one line whatever the values in it hold: control characters come out
 * escaped (\n, \t, \x1b), never raw.
 */
static void escape_line(char *out, size_t len, const char *in)
{
	size_t o = 0;

	for (; *in && o + 5 < len; in++) {
		unsigned char c = (unsigned char)*in;

		if (c >= 0x20 && c != 0x7f)
			out[o++] = (char)c;
		else if (c == '\n' || c == '\t' || c == '\r')
			o += (size_t)snprintf(out + o, len - o, "\\%c",
					      c == '\n'	  ? 'n'
					      : c == '\t' ? 't'
							  : 'r');
		else
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

/* tp_catch's buffer on this thread, or NULL: lines go to stderr. Catches nest. */
#define CATCH_DEPTH 4
static __thread char *caught;
static __thread size_t caught_len;
static __thread struct {
	char *buf;
	size_t len;
} outer[CATCH_DEPTH];
static __thread int depth;

void tp_catch(char *buf, size_t len)
{
	if (buf && len) {
		if (depth < CATCH_DEPTH)
			outer[depth++] = (typeof(outer[0])){ caught, caught_len };
		caught = buf;
		caught_len = len;
		caught[0] = '\0';
	} else if (depth > 0) {
		depth--;
		caught = outer[depth].buf;
		caught_len = outer[depth].len;
	} else {
		caught = NULL;
	}
}

static void say(char *msg, size_t len, const char *fmt, va_list ap)
{
	char raw[1024];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	escape_line(msg, len, raw);
	if (!caught)
		fprintf(stderr, "taskprobe: %s\n", msg);
	else if (!caught[0])
		snprintf(caught, caught_len, "%s", msg);
}

void tp_note(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	say(msg, sizeof(msg), fmt, ap);
	va_end(ap);
}

void tp_warn(const char *fmt, ...)
{
	char raw[1024], msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	escape_line(msg, sizeof(msg), raw);
	fprintf(stderr, "taskprobe: warning: %s\n", msg);
}

void tp_err(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	say(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (tp_json_errors && !caught) {
		fputs("{\"error\": \"", stdout);
		for (const char *p = msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				fputc('\\', stdout);
			fputc(*p, stdout);
		}
		fputs("\"}\n", stdout);
	}
}

void tp_debug(const char *fmt, ...)
{
	va_list ap;

	if (!tp_verbose)
		return;
	fputs("taskprobe: debug: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
}

/*
 * A task id: [A-Za-z0-9._:@-]{1,128}, except "." and "..", which would name the
 * cgroup directory itself or its parent.
 */
bool tp_valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > TP_ID_MAX || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!id_char(id[i]))
			return false;
	return true;
}

int tp_parse_label(char *kv, char **key, char **val, const char **why)
{
	char *eq = strchr(kv, '=');
	size_t klen;

	if (!eq) {
		*why = "expected K=V";
		return -EINVAL;
	}
	klen = (size_t)(eq - kv);
	if (klen == 0 || klen > TP_LABEL_KEY_MAX) {
		*why = "the key must be 1 to 64 characters";
		return -EINVAL;
	}
	for (size_t i = 0; i < klen; i++) {
		char c = kv[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-')) {
			*why = "the key may hold only A-Z a-z 0-9 _ . -";
			return -EINVAL;
		}
	}
	if (strlen(eq + 1) > TP_LABEL_VAL_MAX) {
		*why = "the value is longer than 256 bytes";
		return -EINVAL;
	}
	for (const char *p = eq + 1; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*why = "the value holds a control character";
			return -EINVAL;
		}
	}
	*eq = '\0';
	*key = kv;
	*val = eq + 1;
	return 0;
}

int tp_parse_u64(const char *s, __u64 max, __u64 *out)
{
	__u64 v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (max - (__u64)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (__u64)(*s - '0');
	}
	*out = v;
	return 0;
}

int tp_parse_duration(const char *s, __u64 *ns)
{
	static const struct {
		char unit;
		__u64 secs;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 604800 } };
	char num[32];
	size_t len = strlen(s);
	__u64 n, mult = 1;

	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len + 1);
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (num[len - 1] == units[i].unit) {
			mult = units[i].secs;
			num[--len] = '\0';
			break;
		}
	/* At most 100 years: the product stays far from overflow. */
	if (tp_parse_u64(num, 100ULL * 365 * 86400 / mult, &n))
		return -EINVAL;
	*ns = n * mult * 1000000000ULL;
	return 0;
}

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

__u64 tp_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__u64 tp_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

char *tp_fmt_dur(char *buf, size_t len, __u64 ns)
{
	if (ns >= 100000000000ULL)
		snprintf(buf, len, "%.0f s", ns / 1e9);
	else if (ns >= 1000000000ULL)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%.0f ms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%.0f us", ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

char *tp_fmt_bytes(char *buf, size_t len, __u64 bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

char *tp_fmt_time(char *buf, size_t len, __u64 realtime_ns)
{
	time_t secs = (time_t)(realtime_ns / 1000000000ULL);
	struct tm tm;
	char tmp[32];

	gmtime_r(&secs, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03lluZ", tmp,
		 (unsigned long long)(realtime_ns % 1000000000ULL / 1000000ULL));
	return buf;
}

ssize_t tp_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)total < len - 1) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		total += n;
	}
	buf[total] = '\0';
	close(fd);
	return total;
}

ssize_t tp_slurp(const char *path, const char *what, bool required, char **out)
{
	char *buf = malloc(TP_TEXT_FILE_MAX);
	ssize_t n;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	n = tp_read_file(path, buf, TP_TEXT_FILE_MAX);
	if (n == -ENOENT && !required) {
		buf[0] = '\0';
		n = 0;
	} else if (n == TP_TEXT_FILE_MAX - 1) {
		tp_err("cannot read %s %s: larger than %d bytes", what, path, TP_TEXT_FILE_MAX - 1);
		n = -EFBIG;
	} else if (n < 0) {
		tp_err("cannot read %s %s: %s", what, path, strerror((int)-n));
	}
	if (n < 0)
		free(buf);
	else
		*out = buf;
	return n;
}

int tp_write_whole(const char *path, int (*fn)(FILE *f, void *ctx), void *ctx)
{
	char tmp[PATH_MAX];
	FILE *f;
	int err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	err = fn(f, ctx);
	if (!err && (fflush(f) || ferror(f)))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

bool tp_kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

int tp_write_file(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

const char *tp_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

size_t tp_base64_len(size_t len)
{
	return (len + 2) / 3 * 4 + 1;
}

void tp_base64(const void *in, size_t len, char *out)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = in;
	size_t i = 0;

	for (; i + 2 < len; i += 3) {
		*out++ = abc[p[i] >> 2];
		*out++ = abc[(p[i] & 3) << 4 | p[i + 1] >> 4];
		*out++ = abc[(p[i + 1] & 15) << 2 | p[i + 2] >> 6];
		*out++ = abc[p[i + 2] & 63];
	}
	if (i < len) {
		*out++ = abc[p[i] >> 2];
		if (i + 1 < len) {
			*out++ = abc[(p[i] & 3) << 4 | p[i + 1] >> 4];
			*out++ = abc[(p[i + 1] & 15) << 2];
		} else {
			*out++ = abc[(p[i] & 3) << 4];
			*out++ = '=';
		}
		*out++ = '=';
	}
	*out = '\0';
}
