// SPDX-License-Identifier: GPL-2.0
/* A task against its history as text, JSON or Markdown (view/compare.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "model/metric_descs.h"
#include "view/compare.h"
#include "view/report.h"

static bool ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), k = strlen(sfx);

	return n >= k && !strcmp(s + n - k, sfx);
}

/* A built-in metric's unit (io.rchar is bytes); else by the name's ending. */
static const char *unit_of(const char *name)
{
	for (size_t i = 0; i < metric_descs_n; i++)
		if (!strcmp(metric_descs[i].name, name))
			return metric_descs[i].unit;
	if (ends_with(name, "_ns"))
		return "ns";
	if (ends_with(name, "_bytes"))
		return "bytes";
	return "";
}

char *compare_fmt(char *buf, size_t len, const char *name, double v)
{
	const char *unit = unit_of(name);

	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v >= 0 && !strcmp(unit, "ns"))
		tp_fmt_dur(buf, len, (__u64)llround(v));
	else if (v >= 0 && !strcmp(unit, "bytes"))
		tp_fmt_bytes(buf, len, (__u64)llround(v));
	else
		snprintf(buf, len, "%.4g", v);
	return buf;
}

static const char *flag_word(int flag)
{
	return flag < 0 ? "below" : flag > 0 ? "above" : "";
}

/* A figure zero in the task and throughout its history says nothing: people skip it. */
static bool all_zero(const struct compare_figure *g)
{
	return !g->value && !g->p10 && !g->p90;
}

static void text_fig(FILE *f, const char *indent, const struct compare_figure *g)
{
	char v[32], a[32], b[32], c[32];
	int w = 36 - (int)strlen(indent);

	fprintf(f, "%s%-*.*s %10s %10s %10s %10s %6ld%s%s\n", indent, w, w, g->name,
		compare_fmt(v, sizeof(v), g->name, g->value),
		compare_fmt(a, sizeof(a), g->name, g->p50),
		compare_fmt(b, sizeof(b), g->name, g->p10),
		compare_fmt(c, sizeof(c), g->name, g->p90), g->n, g->flag ? "  " : "",
		flag_word(g->flag));
}

int compare_text(FILE *f, const struct compare *c)
{
	size_t zero = 0;

	if (!c->history) {
		fprintf(f, "task %s: no history (%s=%s): %s\n", c->id, c->by,
			c->value[0] ? c->value : "(none)", c->why);
		return ferror(f) ? -1 : 0;
	}
	fprintf(f,
		"task %s against the last %ld tasks with %s=%s (median, 10th-90th percentiles)\n",
		c->id, c->history, c->by, c->value);
	fprintf(f, "%-36s %10s %10s %10s %10s %6s\n", "FIGURE", "TASK", "MEDIAN", "P10", "P90",
		"TASKS");
	for (size_t i = 0; i < c->nfigs; i++) {
		if (all_zero(&c->figs[i]))
			zero++;
		else
			text_fig(f, "", &c->figs[i]);
	}
	for (size_t i = 0; i < c->nphases; i++) {
		fprintf(f, "phase %s (%ld tasks ran it)\n", c->phases[i].name, c->phases[i].n);
		for (int k = 0; k < c->phases[i].nfigs; k++) {
			if (all_zero(&c->phases[i].figs[k]))
				zero++;
			else
				text_fig(f, "  ", &c->phases[i].figs[k]);
		}
	}
	if (zero)
		fprintf(f,
			"(%zu figures 0 in the task and all its history left out; --format json "
			"has them)\n",
			zero);
	return ferror(f) ? -1 : 0;
}

static void json_figs(struct jw *w, const struct compare_figure *g, size_t n)
{
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "name", g[i].name);
		jw_kdouble(w, "value", g[i].value);
		jw_ku64(w, "tasks", (__u64)g[i].n);
		jw_kdouble(w, "p10", g[i].p10);
		jw_kdouble(w, "p50", g[i].p50);
		jw_kdouble(w, "p90", g[i].p90);
		jw_key(w, "flag");
		g[i].flag ? jw_str(w, flag_word(g[i].flag)) : jw_null(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

int compare_json(FILE *f, const struct compare *c)
{
	struct jw w;

	jw_init(&w, f, true);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", c->id);
	jw_kstr(&w, "host", c->host);
	jw_kstr(&w, "by", c->by);
	jw_key(&w, "value");
	c->value[0] ? jw_str(&w, c->value) : jw_null(&w);
	jw_ku64(&w, "last", (__u64)c->last);
	jw_ku64(&w, "history", (__u64)c->history);
	jw_key(&w, "reason");
	c->history ? jw_null(&w) : jw_str(&w, c->why);
	jw_key(&w, "figures");
	json_figs(&w, c->figs, c->history ? c->nfigs : 0);
	jw_key(&w, "phases");
	jw_arr_begin(&w);
	for (size_t i = 0; c->history && i < c->nphases; i++) {
		jw_obj_begin(&w);
		jw_kstr(&w, "name", c->phases[i].name);
		jw_ku64(&w, "tasks", (__u64)c->phases[i].n);
		jw_key(&w, "figures");
		json_figs(&w, c->phases[i].figs, (size_t)c->phases[i].nfigs);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	return ferror(f) ? -1 : 0;
}

/* One row: a value outside the band is bold, with which side it is on. */
static void md_fig(FILE *f, const char *phase, const struct compare_figure *g)
{
	char v[32], a[32], b[32], c[32];
	const char *em = g->flag ? "**" : "";

	fputs("| ", f);
	if (phase) {
		report_md_cell(f, phase);
		fputs(" | ", f);
	}
	fprintf(f, "`%s` | %s%s%s | %s | %s – %s | %ld | %s |\n", g->name, em,
		compare_fmt(v, sizeof(v), g->name, g->value), em,
		compare_fmt(a, sizeof(a), g->name, g->p50),
		compare_fmt(b, sizeof(b), g->name, g->p10),
		compare_fmt(c, sizeof(c), g->name, g->p90), g->n,
		g->flag < 0   ? "▼ below"
		: g->flag > 0 ? "▲ above"
			      : "");
}

int compare_markdown(FILE *f, const struct compare *c)
{
	size_t flagged = 0, shown = 0, phase_rows = 0;

	fputs("### taskprobe: `", f);
	report_md_cell(f, c->id);
	fputs("` against its history\n\n", f);
	if (!c->history) {
		fputs("No history: ", f);
		report_md_cell(f, c->why);
		fputs(" (`", f);
		report_md_cell(f, c->by);
		fputs("` = `", f);
		report_md_cell(f, c->value[0] ? c->value : "(none)");
		fputs("`).\n\n", f);
		return ferror(f) ? -1 : 0;
	}
	for (size_t i = 0; i < c->nfigs; i++) {
		flagged += c->figs[i].flag != 0;
		shown += !all_zero(&c->figs[i]);
	}
	fprintf(f, "Beside the last %ld tasks with `", c->history);
	report_md_cell(f, c->by);
	fputs("` = `", f);
	report_md_cell(f, c->value);
	fprintf(f,
		"` that ran to their end before it: their median and 10th to 90th "
		"percentiles. %zu of %zu figures outside that band, in bold (those 0 throughout "
		"left out).\n\n"
		"| figure | this task | median | p10 – p90 | tasks | |\n"
		"| --- | ---: | ---: | ---: | ---: | --- |\n",
		flagged, shown);
	for (size_t i = 0; i < c->nfigs; i++)
		if (!all_zero(&c->figs[i]))
			md_fig(f, NULL, &c->figs[i]);
	for (size_t i = 0; i < c->nphases; i++)
		for (int k = 0; k < c->phases[i].nfigs; k++)
			phase_rows += !all_zero(&c->phases[i].figs[k]);
	if (phase_rows) {
		fprintf(f,
			"\n<details><summary>%zu phase%s against the same tasks' phases</summary>\n\n"
			"| phase | figure | this task | median | p10 – p90 | tasks | |\n"
			"| --- | --- | ---: | ---: | ---: | ---: | --- |\n",
			c->nphases, c->nphases > 1 ? "s" : "");
		for (size_t i = 0; i < c->nphases; i++)
			for (int k = 0; k < c->phases[i].nfigs; k++)
				if (!all_zero(&c->phases[i].figs[k]))
					md_fig(f, c->phases[i].name, &c->phases[i].figs[k]);
		fputs("\n</details>\n", f);
	}
	fputc('\n', f);
	return ferror(f) ? -1 : 0;
}
