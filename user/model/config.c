// SPDX-License-Identifier: GPL-2.0
/* /etc/taskprobe/taskprobe.conf: "key = value" lines; a bad line is an error with its number. */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
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

static int apply(struct config *c, const char *key, const char *val, const char **why)
{
	if (!strcmp(key, "retain_days")) {
		*why = "retain_days takes whole days from 1 to 36500";
		return set_int(&c->retain_days, val, 1, 36500);
	}
	if (!strcmp(key, "max_db_mb")) {
		*why = "max_db_mb takes whole MiB from 1 to 1048576";
		return set_int(&c->max_db_mb, val, 1, 1048576);
	}
	if (!strcmp(key, "max_tasks")) {
		*why = "max_tasks takes a whole number of tasks from 1 to 8192";
		return set_int(&c->max_tasks, val, 1, TP_MAX_TASKS_LIMIT);
	}
	if (!strcmp(key, "metrics_label")) {
		*why = "metrics_label takes a task label key that is a Prometheus label name "
		       "([a-zA-Z_][a-zA-Z0-9_]*, no __ prefix) and none of /metrics' own "
		       "(worker_pool, instance_type, reason, kind, status, program)";
		return prom_label_name(val)
			       ? set_str(c->metrics_label, sizeof(c->metrics_label), val)
			       : -EINVAL;
	}
	if (!strcmp(key, "collect"))
		return collect_parse(val, &c->collect, why);
	if (!strcmp(key, "spool_max_mb")) {
		*why = "spool_max_mb takes whole MiB from 1 to 1048576";
		return set_int(&c->spool_max_mb, val, 1, 1048576);
	}
	if (!strcmp(key, "keep_tasks")) {
		*why = "keep_tasks takes true or false";
		if (strcmp(val, "true") && strcmp(val, "false"))
			return -EINVAL;
		c->keep_tasks = !strcmp(val, "true");
		return 0;
	}
	if (!strcmp(key, "strict")) {
		*why = "strict takes true or false";
		if (strcmp(val, "true") && strcmp(val, "false"))
			return -EINVAL;
		c->strict = !strcmp(val, "true");
		return 0;
	}
	if (!strncmp(key, "otlp_attribute ", 15)) {
		const char *attr = key + 15;

		attr += strspn(attr, " ");
		*why = "otlp_attribute takes 'otlp_attribute ATTRIBUTE = LABEL': an attribute name "
		       "([a-z0-9._], at most 63) and a task label key, at most 16 of them";
		if (!*attr || attr[strspn(attr, "abcdefghijklmnopqrstuvwxyz0123456789._")] ||
		    strlen(attr) >= sizeof(c->otlp_attrs[0].attr) || !*val ||
		    strlen(val) >= sizeof(c->otlp_attrs[0].label) ||
		    c->notlp_attrs >= CONFIG_OTLP_ATTRS)
			return -EINVAL;
		for (int i = 0; i < c->notlp_attrs; i++)
			if (!strcmp(c->otlp_attrs[i].attr, attr))
				return -EINVAL;
		snprintf(c->otlp_attrs[c->notlp_attrs].attr, sizeof(c->otlp_attrs[0].attr), "%s",
			 attr);
		snprintf(c->otlp_attrs[c->notlp_attrs].label, sizeof(c->otlp_attrs[0].label), "%s",
			 val);
		c->notlp_attrs++;
		return 0;
	}
	if (!strcmp(key, "perfherder_framework")) {
		*why = "perfherder_framework takes the name of a framework Treeherder has "
		       "registered ([a-z0-9_-], at most 63): its artifacts of another are dropped";
		return val[strspn(val, "abcdefghijklmnopqrstuvwxyz0123456789_-")] || !val[0]
			       ? -EINVAL
			       : set_str(c->perfherder_framework, sizeof(c->perfherder_framework),
					 val);
	}
	if (!strcmp(key, "pin_dir")) {
		*why = "pin_dir takes an absolute path on a bpffs, or off";
		return val[0] == '/' || !strcmp(val, "off")
			       ? set_str(c->pin_dir, sizeof(c->pin_dir), val)
			       : -EINVAL;
	}
	if (!strcmp(key, "db")) {
		*why = "db takes an absolute path";
		return val[0] == '/' ? set_str(c->db, sizeof(c->db), val) : -EINVAL;
	}
	if (!strcmp(key, "db_group")) {
		struct group *g = getgrnam(val);

		*why = "db_group takes the name of an existing group";
		if (!g)
			return -EINVAL;
		c->db_gid = g->gr_gid;
		return 0;
	}
	if (!strcmp(key, "http_ports"))
		return http_ports__parse(&c->http_ports, val, why);
	if (!strcmp(key, "instance_type")) {
		*why = "instance_type takes 1 to 127 printable characters";
		return set_str(c->instance_type, sizeof(c->instance_type), val);
	}
	if (!strcmp(key, "worker_pool")) {
		*why = "worker_pool takes 1 to 127 printable characters";
		return set_str(c->worker_pool, sizeof(c->worker_pool), val);
	}
	if (!strcmp(key, "phase_begin_marker") || !strcmp(key, "phase_end_marker")) {
		char *out = key[6] == 'b' ? c->phase_begin_marker : c->phase_end_marker;

		*why = "a phase marker takes 1 to 63 characters without spaces";
		if (strchr(val, ' ') || strchr(val, '\t'))
			return -EINVAL;
		return set_str(out, sizeof(c->phase_begin_marker), val);
	}
	if (!strcmp(key, "listen")) {
		*why = "listen takes ADDR:PORT (127.0.0.1:9464, [::1]:9464) or off";
		return strchr(val, ' ') ? -EINVAL : set_str(c->listen, sizeof(c->listen), val);
	}
	if (!strcmp(key, "api_token")) {
		*why = "api_token takes 16 to 256 printable characters without spaces";
		if (strlen(val) < 16 || strchr(val, ' '))
			return -EINVAL;
		return set_str(c->api_token, sizeof(c->api_token), val);
	}
	if (!strcmp(key, "sink")) {
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
	if (!strcmp(key, "sink_retain_days")) {
		*why = "sink_retain_days takes whole days from 0 (the fleet keeps every task) to "
		       "36500";
		return set_int(&c->sink_retain_days, val, 0, 36500);
	}
	if (!strcmp(key, "sink_passfile")) {
		*why = "sink_passfile takes the absolute path of a .pgpass file "
		       "(host:port:database:user:password lines, mode 0600)";
		return val[0] == '/' ? set_str(c->sink_passfile, sizeof(c->sink_passfile), val)
				     : -EINVAL;
	}
	*why = "unknown key (known: db, db_group, retain_days, max_db_mb, instance_type, "
	       "worker_pool, phase_begin_marker, phase_end_marker, http_ports, listen, "
	       "api_token, max_tasks, metrics_label, pin_dir, collect, sink, sink_passfile, "
	       "sink_retain_days, spool_max_mb, strict, keep_tasks, perfherder_framework, "
	       "otlp_attribute ATTRIBUTE)";
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
