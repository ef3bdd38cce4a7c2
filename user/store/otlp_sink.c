// SPDX-License-Identifier: GPL-2.0
/* OTLP/HTTP with JSON bodies, over libcurl (otlp_sink.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/json.h"
#include "base/util.h"
#include "store/otlp_sink.h"

#define HEADERS_FILE_MAX (64 * 1024)
#define ANSWER_MAX (64 * 1024)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int otlp_header_line(const char *line, char *out, size_t len)
{
	const char *colon = strchr(line, ':'), *v;
	size_t n;

	if (!colon || colon == line)
		return -1;
	for (const char *p = line; p < colon; p++)
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p))
			return -1;
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return -1;
	n = (size_t)(colon - line);
	if (!*v || n + 2 + strlen(v) >= len)
		return -1;
	snprintf(out, len, "%.*s: %s", (int)n, line, v);
	return 0;
}

/* The headers file, a header a line: 0, or -1 with k->err. */
static int read_headers(struct otlp_sink *k, const char *path)
{
	char *text = NULL, *line, *save = NULL, hdr[4096];
	struct stat st;
	int fd, lineno = 0, rc = 0;
	ssize_t got;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(k->err, sizeof(k->err), "otlp_headers_file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_mode & 077) {
		snprintf(k->err, sizeof(k->err),
			 "otlp_headers_file %s: readable by group or others; it holds secrets "
			 "(chmod 600)",
			 path);
		close(fd);
		return -1;
	}
	text = calloc(1, HEADERS_FILE_MAX + 1);
	got = text ? read(fd, text, HEADERS_FILE_MAX + 1) : -1;
	close(fd);
	if (got < 0 || got > HEADERS_FILE_MAX) {
		snprintf(k->err, sizeof(k->err), "otlp_headers_file %s: %s", path,
			 got < 0 ? "cannot be read" : "over 64 KiB");
		free(text);
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);
		struct curl_slist *more;

		lineno++;
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		if (otlp_header_line(line, hdr, sizeof(hdr))) {
			/* The value may be a secret: only where it is. */
			snprintf(k->err, sizeof(k->err),
				 "otlp_headers_file %s:%d: not a 'Name: value' header", path,
				 lineno);
			rc = -1;
			break;
		}
		more = curl_slist_append(k->hdr, hdr);
		if (!more) {
			snprintf(k->err, sizeof(k->err), "out of memory");
			rc = -1;
			break;
		}
		k->hdr = more;
	}
	explicit_bzero(text, HEADERS_FILE_MAX + 1);
	explicit_bzero(hdr, sizeof(hdr));
	free(text);
	return rc;
}

int otlp_sink__open(struct otlp_sink *k, const char *endpoint, const char *headers_file,
		    const char *ca_file, int timeout_s)
{
	CURL *c;

	memset(k, 0, sizeof(*k));
	snprintf(k->base, sizeof(k->base), "%s", endpoint);
	while (*k->base && k->base[strlen(k->base) - 1] == '/')
		k->base[strlen(k->base) - 1] = '\0';
	snprintf(k->name, sizeof(k->name), "%s", k->base);
	k->conn_lost = true;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK || !(c = curl_easy_init())) {
		snprintf(k->err, sizeof(k->err), "libcurl cannot start");
		return -1;
	}
	k->curl = c;
	k->hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (!k->hdr) {
		snprintf(k->err, sizeof(k->err), "out of memory");
		return -1;
	}
	if (headers_file && *headers_file && read_headers(k, headers_file))
		return -1;
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(timeout_s > 0 ? timeout_s : 30));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, k->hdr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "taskprobe/" TP_VERSION);
	if (ca_file && *ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
	k->conn_lost = false;
	return 0;
}

void otlp_sink__close(struct otlp_sink *k)
{
	if (k->curl)
		curl_easy_cleanup(k->curl);
	curl_slist_free_all(k->hdr);
	k->curl = NULL;
	k->hdr = NULL;
}

struct answer {
	char buf[ANSWER_MAX + 1];
	size_t len;
};

static size_t take_answer(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t room = ANSWER_MAX - a->len, got = size * n;

	memcpy(a->buf + a->len, data, got < room ? got : room);
	a->len += got < room ? got : room;
	a->buf[a->len] = '\0';
	return got;
}

/* The answer's words, one line, at most 160 bytes. */
static void one_line(char *out, size_t len, const char *text)
{
	size_t j = 0;

	for (size_t i = 0; text[i] && j + 1 < len && j < 160; i++)
		out[j++] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
	out[j] = '\0';
}

/* A 200's body: what a partial success rejected, if anything (-1 with k->err). */
static int partial_success(struct otlp_sink *k, const struct answer *a)
{
	static const char *const rejected[] = { "rejectedSpans", "rejectedDataPoints" };
	struct json *doc = a->len ? json_parse(a->buf, a->len, NULL, 0) : NULL;
	const struct json *ps = json_get(doc, "partialSuccess");
	char msg[200];
	int rc = 0;

	for (size_t i = 0; ps && i < ARRAY_SIZE(rejected); i++) {
		const struct json *v = json_get(ps, rejected[i]);
		/* int64 in OTLP/JSON: a decimal string, or a number from lenient encoders */
		long long n = !v		    ? 0
			      : v->type == JSON_STR ? strtoll(v->str, NULL, 10)
						    : (long long)json_num(ps, rejected[i]);

		if (n > 0) {
			one_line(msg, sizeof(msg), json_str(ps, "errorMessage"));
			snprintf(k->err, sizeof(k->err), "the collector rejected %lld of %s (%s)",
				 n, i ? "the data points" : "the spans",
				 msg[0] ? msg : "no reason given");
			rc = -1;
		}
	}
	json_free(doc);
	return rc;
}

int otlp_sink__post(struct otlp_sink *k, const char *path, const char *body)
{
	struct answer *a = calloc(1, sizeof(*a));
	char url[1200], words[200];
	CURLcode rc;
	long code = 0;

	k->conn_lost = false;
	if (!a) {
		snprintf(k->err, sizeof(k->err), "out of memory");
		k->conn_lost = true;
		return -1;
	}
	snprintf(url, sizeof(url), "%s%s", k->base, path);
	curl_easy_setopt(k->curl, CURLOPT_URL, url);
	curl_easy_setopt(k->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(k->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, take_answer);
	curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, a);
	rc = curl_easy_perform(k->curl);
	if (rc != CURLE_OK) {
		snprintf(k->err, sizeof(k->err), "%s: %s", path, curl_easy_strerror(rc));
		k->conn_lost = true;
		free(a);
		return -1;
	}
	curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300) {
		int err = partial_success(k, a);

		free(a);
		return err;
	}
	one_line(words, sizeof(words), a->buf);
	snprintf(k->err, sizeof(k->err), "%s: HTTP %ld%s%s", path, code, words[0] ? ": " : "",
		 words);
	/* OTLP/HTTP's retryable answers; any other refuses the data (kept locally). */
	k->conn_lost = code == 429 || code == 502 || code == 503 || code == 504 || code < 200;
	free(a);
	return -1;
}
