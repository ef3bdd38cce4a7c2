// SPDX-License-Identifier: GPL-2.0
/* /etc/taskprobe/taskprobe.conf: "key = value" lines; a bad line is an error with its number. */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "model/collect_kinds.h"
#include "model/config.h"
#include "taskprobe.h"

void config__defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->db, sizeof(c->db), "%s", TP_DEFAULT_DB);
	c->db_gid = (gid_t)-1;
	c->retain_days = 30;
	snprintf(c->listen, sizeof(c->listen), "%s", "127.0.0.1:9464");
	c->max_db_mb = 1024;
	c->spool_max_mb = TP_DEFAULT_SPOOL_MAX_MB;
	c->max_tasks = TP_MAX_TASKS;
	c->collect = COLLECT_DEFAULT;
	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", TP_DEFAULT_PIN_DIR);
	snprintf(c->perfherder_framework, sizeof(c->perfherder_framework), "%s",
		 PERFHERDER_FRAMEWORK_DEFAULT);
	snprintf(c->phase_begin_marker, sizeof(c->phase_begin_marker), "BEGIN_PHASE");
	snprintf(c->phase_end_marker, sizeof(c->phase_end_marker), "END_PHASE");
	http_ports__default(&c->http_ports);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int set_int(int *out, const char *v, int min, int max)
{
	__u64 n;

	if (tp_parse_u64(v, (__u64)max, &n) || (long long)n < min)
		return -EINVAL;
	*out = (int)n;
	return 0;
}

static int set_str(char *out, size_t len, const char *v)
{
	if (!*v || strlen(v) >= len)
		return -EINVAL;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20)
			return -EINVAL;
	snprintf(out, len, "%s", v);
	return 0;
}

static bool prom_label_name(const char *v)
{
	static const char *const own[] = { "worker_pool", "instance_type", "reason",
					   "kind",	  "status",	   "program" };

	if (!*v || strlen(v) > 63 || isdigit((unsigned char)*v) || !strncmp(v, "__", 2))
		return false;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		if (!strcmp(v, own[i]))
			return false;
	return true;
}

static int set_bool(bool *out, const char *v)
{
	if (strcmp(v, "true") && strcmp(v, "false"))
		return -EINVAL;
	*out = !strcmp(v, "true");
	return 0;
}

/* The keys whose value needs more than a range or a length. */
static int key_metrics_label(struct config *c, const char *val, const char **why)
{
	return prom_label_name(val) ? set_str(c->metrics_label, sizeof(c->metrics_label), val)
				    : -EINVAL;
}

static int key_collect(struct config *c, const char *val, const char **why)
{
	return collect_parse(val, &c->collect, why);
}

static int key_http_ports(struct config *c, const char *val, const char **why)
{
	return http_ports__parse(&c->http_ports, val, why);
}

static int key_perfherder_framework(struct config *c, const char *val, const char **why)
{
	return val[strspn(val, "abcdefghijklmnopqrstuvwxyz0123456789_-")] || !val[0]
		       ? -EINVAL
		       : set_str(c->perfherder_framework, sizeof(c->perfherder_framework), val);
}

static int key_pin_dir(struct config *c, const char *val, const char **why)
{
	return val[0] == '/' || !strcmp(val, "off") ? set_str(c->pin_dir, sizeof(c->pin_dir), val)
						    : -EINVAL;
}

static int key_db_group(struct config *c, const char *val, const char **why)
{
	struct group *g = getgrnam(val);

	if (!g)
		return -EINVAL;
	c->db_gid = g->gr_gid;
	return 0;
}

static int key_phase_begin(struct config *c, const char *val, const char **why)
{
	return strchr(val, ' ') || strchr(val, '\t')
		       ? -EINVAL
		       : set_str(c->phase_begin_marker, sizeof(c->phase_begin_marker), val);
}

static int key_phase_end(struct config *c, const char *val, const char **why)
{
	return strchr(val, ' ') || strchr(val, '\t')
		       ? -EINVAL
		       : set_str(c->phase_end_marker, sizeof(c->phase_end_marker), val);
}

static int key_listen(struct config *c, const char *val, const char **why)
{
	return strchr(val, ' ') ? -EINVAL : set_str(c->listen, sizeof(c->listen), val);
}

static int key_api_token(struct config *c, const char *val, const char **why)
{
	return strlen(val) < 16 || strchr(val, ' ')
		       ? -EINVAL
		       : set_str(c->api_token, sizeof(c->api_token), val);
}

/*
 * http:// or https://, a host, an optional port and path; no user or password (a
 * secret goes in otlp_headers_file), no query. "off": none.
 */
static int key_otlp_endpoint(struct config *c, const char *val, const char **why)
{
	const char *rest = !strncmp(val, "http://", 7)	  ? val + 7
			   : !strncmp(val, "https://", 8) ? val + 8
							  : NULL;
	size_t host = rest ? strcspn(rest, "/") : 0;

	if (!strcmp(val, "off")) {
		c->otlp_endpoint[0] = '\0';
		return 0;
	}
	if (!rest || !host || memchr(rest, '@', host) || strpbrk(val, "?# "))
		return -EINVAL;
	return set_str(c->otlp_endpoint, sizeof(c->otlp_endpoint), val);
}

static int key_sink(struct config *c, const char *val, const char **why)
{
	static char sink_why[320] = "sink: ";

	*why = sink_why;
	if (!strcmp(val, "off")) {
		c->sink[0] = '\0';
		return 0;
	}
	if (strlen(val) >= sizeof(c->sink)) {
		snprintf(sink_why, sizeof(sink_why), "sink: longer than %zu bytes",
			 sizeof(c->sink) - 1);
		return -EINVAL;
	}
	if (conninfo_check(val, NULL, 0, sink_why + 6, sizeof(sink_why) - 6))
		return -EINVAL;
	return set_str(c->sink, sizeof(c->sink), val);
}

/* otlp_attribute ATTR = LABEL, one mapping a line: key is "otlp_attribute ATTR". */
static int key_otlp_attribute(struct config *c, const char *key, const char *val)
{
	const char *attr = key + strlen("otlp_attribute");

	attr += strspn(attr, " ");
	if (!*attr || attr[strspn(attr, "abcdefghijklmnopqrstuvwxyz0123456789._")] ||
	    strlen(attr) >= sizeof(c->otlp_attrs[0].attr) || !*val ||
	    strlen(val) >= sizeof(c->otlp_attrs[0].label) || c->notlp_attrs >= CONFIG_OTLP_ATTRS)
		return -EINVAL;
	for (int i = 0; i < c->notlp_attrs; i++)
		if (!strcmp(c->otlp_attrs[i].attr, attr))
			return -EINVAL;
	snprintf(c->otlp_attrs[c->notlp_attrs].attr, sizeof(c->otlp_attrs[0].attr), "%s", attr);
	snprintf(c->otlp_attrs[c->notlp_attrs].label, sizeof(c->otlp_attrs[0].label), "%s", val);
	c->notlp_attrs++;
	return 0;
}

enum key_kind { KEY_INT, KEY_BOOL, KEY_TEXT, KEY_PATH, KEY_FN };

/* Every key of the file, what its value may be, and the line a bad one gets. */
static const struct config_key {
	const char *name;
	enum key_kind kind;
	size_t off;   /* of the field in struct config */
	size_t len;   /* KEY_TEXT, KEY_PATH: its size */
	int min, max; /* KEY_INT */
	int (*fn)(struct config *c, const char *val, const char **why);
	const char *why;
} keys[] = {
#define INT(k, lo, hi, w)                                                                          \
	{                                                                                          \
#k, KEY_INT, offsetof(struct config, k), 0, lo, hi, NULL, w                        \
	}
#define BOOL(k)                                                                                    \
	{                                                                                          \
#k, KEY_BOOL, offsetof(struct config, k), 0, 0, 0, NULL, #k " takes true or false" \
	}
#define TEXT(k, w)                                                                                 \
	{                                                                                          \
#k, KEY_TEXT, offsetof(struct config, k), sizeof(((struct config *)0)->k), 0, 0,   \
			NULL, w                                                                    \
	}
#define PATH(k, w)                                                                                 \
	{                                                                                          \
#k, KEY_PATH, offsetof(struct config, k), sizeof(((struct config *)0)->k), 0, 0,   \
			NULL, w                                                                    \
	}
#define FN(k, f, w)                                                                                \
	{                                                                                          \
		k, KEY_FN, 0, 0, 0, 0, f, w                                                        \
	}
	PATH(db, "db takes an absolute path"),
	FN("db_group", key_db_group, "db_group takes the name of an existing group"),
	INT(retain_days, 1, 36500, "retain_days takes whole days from 1 to 36500"),
	INT(max_db_mb, 1, 1048576, "max_db_mb takes whole MiB from 1 to 1048576"),
	TEXT(instance_type, "instance_type takes 1 to 127 printable characters"),
	TEXT(worker_pool, "worker_pool takes 1 to 127 printable characters"),
	FN("phase_begin_marker", key_phase_begin,
	   "a phase marker takes 1 to 63 characters without spaces"),
	FN("phase_end_marker", key_phase_end,
	   "a phase marker takes 1 to 63 characters without spaces"),
	FN("http_ports", key_http_ports, NULL),
	FN("listen", key_listen, "listen takes ADDR:PORT (127.0.0.1:9464, [::1]:9464) or off"),
	FN("api_token", key_api_token,
	   "api_token takes 16 to 256 printable characters without spaces"),
	INT(max_tasks, 1, TP_MAX_TASKS_LIMIT,
	    "max_tasks takes a whole number of tasks from 1 to 8192"),
	FN("metrics_label", key_metrics_label,
	   "metrics_label takes a task label key that is a Prometheus label name "
	   "([a-zA-Z_][a-zA-Z0-9_]*, no __ prefix) and none of /metrics' own "
	   "(worker_pool, instance_type, reason, kind, status, program)"),
	FN("pin_dir", key_pin_dir, "pin_dir takes an absolute path on a bpffs, or off"),
	FN("collect", key_collect, NULL),
	FN("sink", key_sink, NULL),
	PATH(sink_passfile, "sink_passfile takes the absolute path of a .pgpass file "
			    "(host:port:database:user:password lines, mode 0600)"),
	INT(sink_retain_days, 0, 36500,
	    "sink_retain_days takes whole days from 0 (the fleet keeps every task) to 36500"),
	INT(spool_max_mb, 1, 1048576, "spool_max_mb takes whole MiB from 1 to 1048576"),
	BOOL(strict),
	BOOL(keep_tasks),
	FN("otlp_endpoint", key_otlp_endpoint,
	   "otlp_endpoint takes an OTLP/HTTP base URL (http://HOST:4318 or https://...; "
	   "no user, password or query: headers go in otlp_headers_file), or off"),
	PATH(otlp_headers_file, "otlp_headers_file takes the absolute path of a file of "
				"'Name: value' lines (mode 0600)"),
	PATH(otlp_ca_file, "otlp_ca_file takes the absolute path of a PEM file of the CAs an "
			   "https otlp_endpoint's certificate is checked against"),
	BOOL(otlp_metrics),
	FN("perfherder_framework", key_perfherder_framework,
	   "perfherder_framework takes the name of a framework Treeherder has registered "
	   "([a-z0-9_-], at most 63): its artifacts of another are dropped"),
#undef INT
#undef BOOL
#undef TEXT
#undef PATH
#undef FN
};

/* "unknown key (known: db, db_group, ...)", from the table. */
static const char *unknown_key(void)
{
	static char line[1024];
	size_t used;

	if (line[0])
		return line;
	used = (size_t)snprintf(line, sizeof(line), "unknown key (known:");
	for (size_t i = 0; i < ARRAY_SIZE(keys) && used < sizeof(line); i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, " %s,", keys[i].name);
	snprintf(line + used, sizeof(line) - used, " otlp_attribute ATTRIBUTE)");
	return line;
}

static int apply(struct config *c, const char *key, const char *val, const char **why)
{
	if (!strncmp(key, "otlp_attribute ", 15)) {
		*why = "otlp_attribute takes 'otlp_attribute ATTRIBUTE = LABEL': an attribute name "
		       "([a-z0-9._], at most 63) and a task label key, at most 16 of them";
		return key_otlp_attribute(c, key, val);
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct config_key *k = &keys[i];
		char *field = (char *)c + k->off;

		if (strcmp(key, k->name))
			continue;
		*why = k->why ? k->why : "";
		switch (k->kind) {
		case KEY_INT:
			return set_int((int *)field, val, k->min, k->max);
		case KEY_BOOL:
			return set_bool((bool *)field, val);
		case KEY_PATH:
			if (val[0] != '/')
				return -EINVAL;
			return set_str(field, k->len, val);
		case KEY_TEXT:
			return set_str(field, k->len, val);
		case KEY_FN:
			return k->fn(c, val, why);
		}
	}
	*why = unknown_key();
	return -EINVAL;
}

int config__parse(struct config *c, const char *path, const char *text)
{
	const char *p = text;
	bool in_section = false;
	int lineno = 0;

	while (*p) {
		const char *nl = strchr(p, '\n'), *why = "";
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[4096], *eq, *s;

		lineno++;
		if (len >= sizeof(line)) {
			tp_err("%s:%d: line longer than %zu bytes", path, lineno, sizeof(line) - 1);
			return -EINVAL;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		/* Sections ([rules]) are read by their own modules (rules.c). */
		if (*s == '[' && s[strlen(s) - 1] == ']') {
			in_section = true;
			continue;
		}
		if (in_section)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			tp_err("%s:%d: expected 'key = value'", path, lineno);
			return -EINVAL;
		}
		*eq = '\0';
		if (apply(c, trim(s), trim(eq + 1), &why)) {
			tp_err("%s:%d: %s", path, lineno, why);
			return -EINVAL;
		}
	}
	return 0;
}

int config__load(struct config *c, const char *path, int required)
{
	ssize_t n;
	char *buf;
	int err;

	n = tp_slurp(path, "config", required, &buf);
	if (n < 0)
		return (int)n;
	err = config__parse(c, path, buf);
	free(buf);
	return err;
}

int config__read(struct config *c, const char *option)
{
	config__defaults(c);
	return config__load(c, option ? option : TP_DEFAULT_CONFIG, option != NULL);
}
