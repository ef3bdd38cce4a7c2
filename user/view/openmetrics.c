// SPDX-License-Identifier: GPL-2.0
/* A task's figures as an OpenMetrics text file (openmetrics.h, docs/storage.md). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "model/metric_descs.h"
#include "view/openmetrics.h"

#define OM_NAME_MAX 160

/* A figure's OpenMetrics name and unit: dots and dashes are underscores, ns are seconds. */
static void om_name(char *out, size_t len, const char *prefix, const char *name, const char **unit,
		    double *scale)
{
	size_t n = strlen(name), o;

	*unit = NULL;
	*scale = 1;
	o = (size_t)snprintf(out, len, "%s", prefix);
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		char c = name[i];

		out[o++] =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
				? c
				: '_';
	}
	out[o] = '\0';
	if (o > 3 && !strcmp(out + o - 3, "_ns")) {
		snprintf(out + o - 3, len - (o - 3), "_seconds");
		*unit = "seconds";
		*scale = 1e-9;
	} else if (o > 6 && !strcmp(out + o - 6, "_bytes")) {
		*unit = "bytes";
	}
}

static void om_family(FILE *f, const char *name, const char *unit, const char *help)
{
	fprintf(f, "# TYPE %s gauge\n", name);
	if (unit)
		fprintf(f, "# UNIT %s %s\n", name, unit);
	fprintf(f, "# HELP %s %s\n", name, help);
}

void om_label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* " VALUE\n" after name: integers exactly, ns as seconds to the ns, the rest to 9 digits. */
static void om_value(FILE *f, const char *name, const struct json *v, double scale)
{
	if (!v || v->type != JSON_NUM)
		fprintf(f, "%s NaN\n", name);
	else if (scale != 1 && v->exact && v->num >= 0)
		fprintf(f, "%s %llu.%09llu\n", name, (unsigned long long)(v->u / 1000000000),
			(unsigned long long)(v->u % 1000000000));
	else if (v->exact && v->num >= 0)
		fprintf(f, "%s %llu\n", name, (unsigned long long)v->u);
	else
		fprintf(f, "%s %.9g\n", name, v->num * scale);
}

static const struct {
	const char *key;
	const char *help;
} phase_figures[] = {
	{ "wall_ns", "the phase's wall time" },
	{ "cpu_ns", "on-CPU time of the task's threads during the phase" },
	{ "runq_wait_ns", "time runnable but waiting for a CPU during the phase" },
	{ "read_bytes", "block-layer bytes read during the phase" },
	{ "write_bytes", "block-layer bytes written during the phase" },
	{ "execs", "successful execs during the phase" },
	{ "peak_mem_bytes", "the most memory in use during the phase" },
};

int openmetrics_write(FILE *f, const struct json *rec)
{
	const struct json *m = json_get(rec, "metrics"), *phases = json_get(rec, "phases");
	char name[OM_NAME_MAX];
	const char *unit;
	double scale;

	om_family(f, "taskprobe_wall_seconds", "seconds", "the task's wall time");
	om_value(f, "taskprobe_wall_seconds", json_get(rec, "wall_ns"), 1e-9);
	om_family(f, "taskprobe_exit_status", NULL, "what the task exited with (128 + signal)");
	fprintf(f, "taskprobe_exit_status %.0f\n", json_num(rec, "exit_status"));
	for (const struct json *v = m ? m->child : NULL; v; v = v->next) {
		if (v->type != JSON_NUM || !metric_is_builtin(v->key))
			continue;
		om_name(name, sizeof(name), "taskprobe_", v->key, &unit, &scale);
		fprintf(f, "# TYPE %s gauge\n", name);
		if (unit)
			fprintf(f, "# UNIT %s %s\n", name, unit);
		fprintf(f, "# HELP %s the record's %s (docs/task-record.md)\n", name, v->key);
		om_value(f, name, v, scale);
	}
	for (size_t k = 0; json_len(phases) && k < sizeof(phase_figures) / sizeof(phase_figures[0]);
	     k++) {
		om_name(name, sizeof(name), "taskprobe_phase_", phase_figures[k].key, &unit,
			&scale);
		om_family(f, name, unit, phase_figures[k].help);
		for (size_t i = 0; i < json_len(phases); i++) {
			const struct json *p = json_at(phases, i);
			const char *pn = json_str(p, "name");
			int seen = 1;

			/* A phase run again is a series of its own: NAME.2, NAME.3, ... */
			for (size_t j = 0; j < i; j++)
				seen += !strcmp(json_str(json_at(phases, j), "name"), pn);
			fprintf(f, "%s{phase=\"", name);
			om_label_value(f, pn);
			if (seen > 1)
				fprintf(f, ".%d", seen);
			fputs("\"}", f);
			om_value(f, "", json_get(p, phase_figures[k].key), scale);
		}
	}
	fputs("# EOF\n", f);
	return ferror(f) ? -EIO : 0;
}
