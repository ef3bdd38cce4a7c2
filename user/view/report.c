// SPDX-License-Identifier: GPL-2.0
/* A task's report: HTML with inline SVG timelines, or Markdown for a CI job summary. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/task.h"
#include "store/query.h"
#include "view/report.h"

#define CHART_W 960
#define CHART_H 110
#define MARGIN_L 78
#define MARGIN_R 12
#define PLOT_W (CHART_W - MARGIN_L - MARGIN_R)
/* Half the width of the time axis's widest label, "hh:mm:ss" (about 45 px), and some. */
#define TICK_HALF_W 28

/* Text for HTML and SVG: & < > " escaped. */
static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

static double metric(const struct json *rec, const char *name)
{
	return json_num(json_get(rec, "metrics"), name);
}

/* A value on a chart's axis: cores, bytes or bytes/s, in a few characters. */
static void axis_value(char *buf, size_t len, double v, int kind)
{
	if (kind == 0)
		snprintf(buf, len, "%.2g", v);
	else if (kind == 3)
		snprintf(buf, len, "%.0f", v);
	else
		tp_fmt_bytes(buf, len, v > 0 ? (__u64)v : 0);
	if (kind == 2)
		strncat(buf, "/s", len - strlen(buf) - 1);
}

struct chart {
	const char *title;
	int field[2]; /* series fields drawn, -1: none */
	const char *color[2];
	const char *name[2];
	double scale; /* value = stored * scale */
	int kind;     /* 0 cores, 1 bytes, 2 bytes/s, 3 count */
	double ref;   /* a reference line (the host's cores), 0: none */
	const char *ref_name;
	double peak;	      /* a marked peak (the record's), 0: none */
	const char *peak_src; /* where the record's peak comes from */
	bool named_bands;     /* the phases' names on their bands (the first chart) */
};

static double x_of(__u64 t_ms, __u64 span_ms)
{
	return MARGIN_L + (double)PLOT_W * (double)t_ms / (double)(span_ms ? span_ms : 1);
}

/*
 * Phases as bands across a chart, each with its name and times as a tooltip;
 * neighbours in turn darker and lighter, a line where each begins. named: the
 * outermost phases' names written on their bands, clipped to them.
 */
static void bands(FILE *f, const struct json *phases, __u64 span_ms, int y, int h, bool named)
{
	int outer = 0;

	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);
		__u64 s = (__u64)json_num(p, "start_ms");
		__u64 e = s + (__u64)json_num(p, "wall_ns") / 1000000;
		double x0 = x_of(s, span_ms), x1 = x_of(e, span_ms);
		double w = x1 - x0 > 0.5 ? x1 - x0 : 0.5;
		int depth = (int)json_num(p, "depth");
		char dur[32];

		if (!depth)
			outer++;
		fprintf(f,
			"<rect class=\"band d%d%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\"><title>phase ",
			depth % 3, !depth && outer % 2 == 0 ? " alt" : "", x0, y, w, h);
		esc(f, json_str(p, "name"));
		fprintf(f, ": %.3f s to %.3f s (%s)</title></rect>\n", s / 1e3, e / 1e3,
			tp_fmt_dur(dur, sizeof(dur), (__u64)json_num(p, "wall_ns")));
		fprintf(f,
			"<line class=\"band-edge\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			x0, y, x0, y + h);
		/* The name where it fits: a nested viewport clips it to its band. */
		if (named && !depth && w >= 24) {
			fprintf(f,
				"<svg x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"14\">"
				"<text class=\"band-name\" x=\"3\" y=\"11\">",
				x0, y, w - 2);
			esc(f, json_str(p, "name"));
			fputs("</text></svg>\n", f);
		}
	}
}

static void chart(FILE *f, const struct chart *c, const struct series_bucket *bk, int cols,
		  const struct json *rec, __u64 span_ms)
{
	double top = c->ref > c->peak ? c->ref : c->peak;
	char a[32], b[32];

	for (int k = 0; k < 2; k++)
		for (int i = 0; c->field[k] >= 0 && i < cols; i++)
			if (bk[i].count && bk[i].max[c->field[k]] * c->scale > top)
				top = bk[i].max[c->field[k]] * c->scale;
	top = top > 0 ? top * 1.1 : 1;
	fprintf(f, "<figure><figcaption>");
	esc(f, c->title);
	for (int k = 0; k < 2; k++)
		if (c->field[k] >= 0 && c->name[k])
			fprintf(f, " <span style=\"color:%s\">&#9632; %s</span>", c->color[k],
				c->name[k]);
	fprintf(f,
		"</figcaption>\n<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
		"%d\" role=\"img\">\n",
		CHART_W, CHART_H + 4, CHART_W, CHART_H + 4);
	bands(f, json_get(rec, "phases"), span_ms, 2, CHART_H - 2, c->named_bands);
	axis_value(a, sizeof(a), top, c->kind);
	axis_value(b, sizeof(b), 0, c->kind);
	fprintf(f,
		"<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		"<text class=\"tick\" x=\"%d\" y=\"12\" text-anchor=\"end\">%s</text>"
		"<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
		MARGIN_L, CHART_H, CHART_W - MARGIN_R, CHART_H, MARGIN_L - 4, a, MARGIN_L - 4,
		CHART_H, b);
	for (int k = 0; k < 2; k++) {
		int fd = c->field[k];

		if (fd < 0)
			continue;
		/* The min..max envelope, then the mean: a one-sample spike stays visible. */
		fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.25\" stroke=\"none\" points=\"",
			c->color[k]);
		for (int i = 0; i < cols; i++)
			if (bk[i].count)
				fprintf(f, "%.1f,%.1f ", x_of(bk[i].t_ms, span_ms),
					CHART_H - bk[i].max[fd] * c->scale / top * (CHART_H - 4));
		for (int i = cols - 1; i >= 0; i--)
			if (bk[i].count)
				fprintf(f, "%.1f,%.1f ", x_of(bk[i].t_ms, span_ms),
					CHART_H - bk[i].min[fd] * c->scale / top * (CHART_H - 4));
		fprintf(f,
			"\"/>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
			c->color[k]);
		for (int i = 0; i < cols; i++)
			if (bk[i].count)
				fprintf(f, "%.1f,%.1f ", x_of(bk[i].t_ms, span_ms),
					CHART_H - bk[i].mean[fd] * c->scale / top * (CHART_H - 4));
		fputs("\"/>\n", f);
	}
	if (c->ref > 0) {
		double y = CHART_H - c->ref / top * (CHART_H - 4);

		fprintf(f,
			"<line class=\"ref\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"><title>%s: "
			"%g</title></line><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\">%s %g</text>\n",
			MARGIN_L, y, CHART_W - MARGIN_R, y, c->ref_name, c->ref,
			CHART_W - MARGIN_R - 2,
			/* below its line, clear of the phases' names at the top */
			y + 11, c->ref_name, c->ref);
	}
	if (c->peak > 0) {
		double y = CHART_H - c->peak / top * (CHART_H - 4);

		axis_value(a, sizeof(a), c->peak, c->kind);
		fprintf(f,
			"<line class=\"peak\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
			"<text class=\"tick peak-label\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">peak "
			"%s (the record's, %s)</text>\n",
			MARGIN_L, y, CHART_W - MARGIN_R, y, CHART_W - MARGIN_R - 2,
			/* above its line, or below it where the line is near the top */
			y - 3 < 24 ? y + 11 : y - 3, a, c->peak_src ? c->peak_src : "");
	}
	/* Notable events as markers on every timeline, each with its tooltip. */
	for (size_t i = 0; i < json_len(json_get(rec, "events")); i++) {
		const struct json *e = json_at(json_get(rec, "events"), i);
		double x = x_of((__u64)json_num(e, "t_ms"), span_ms);

		fprintf(f, "<path class=\"event\" d=\"M%.1f 2 l4 7 h-8 z\"><title>%.3f s: %s: ", x,
			json_num(e, "t_ms") / 1e3, json_str(e, "kind"));
		esc(f, json_str(e, "detail"));
		fputs("</title></path>\n", f);
	}
	fputs("</svg></figure>\n", f);
}

/* The shared time axis: seconds since the start, and the UTC clock. */
static void time_axis(FILE *f, const struct json *rec, __u64 span_ms)
{
	__u64 start_ns = (__u64)json_num(rec, "start_ns");
	static const double steps[] = { 0.1, 0.2, 0.5, 1,   2,	 5,    10,   15,   30,
					60,  120, 300, 600, 900, 1800, 3600, 7200, 14400 };
	double step = steps[ARRAY_SIZE(steps) - 1];
	char when[40];

	/* At most 10 ticks, at a round number of seconds. */
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		if (span_ms / 1000.0 / steps[i] <= 10) {
			step = steps[i];
			break;
		}
	fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"34\" viewBox=\"0 0 %d 34\">\n",
		CHART_W, CHART_W);
	for (double t = 0; t * 1000 <= span_ms; t += step) {
		double x = x_of((__u64)(t * 1000), span_ms);
		/*
		 * Centred on its tick, unless that would cross the chart's right edge (a tick
		 * in the right margin's reach, as when the span is about a whole number of
		 * steps): then it ends at the edge.
		 */
		bool at_edge = x + TICK_HALF_W > CHART_W;
		double tx = at_edge ? CHART_W - 2 : x;
		const char *anchor = at_edge ? "end" : "middle";

		tp_fmt_time(when, sizeof(when), start_ns + (__u64)(t * 1e9));
		/* hh:mm:ss of the ISO time, UTC */
		fprintf(f,
			"<line class=\"axis\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"5\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"16\" text-anchor=\"%s\">%gs</text>"
			"<text class=\"tick\" x=\"%.1f\" y=\"30\" text-anchor=\"%s\">%.8s</text>\n",
			x, x, tx, anchor, t, tx, anchor, when + 11);
	}
	fputs("<text class=\"tick\" x=\"2\" y=\"30\">UTC</text></svg>\n", f);
}

/* A log2 histogram as bars: its non-empty buckets, each with its range and count. */
static void hist_svg(FILE *f, const char *name, const struct json *h)
{
	const struct json *b = json_get(h, "buckets");
	double max = 0;
	size_t n = json_len(b);
	char lo[32], hi[32];

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		max = json_num(json_at(b, i), "count") > max ? json_num(json_at(b, i), "count")
							     : max;
	fprintf(f, "<figure><figcaption>");
	esc(f, name);
	fprintf(f, ": %.0f samples, p50 %s, p99 %s</figcaption>\n", json_num(h, "count"),
		tp_fmt_dur(lo, sizeof(lo), (__u64)json_num(h, "p50")),
		tp_fmt_dur(hi, sizeof(hi), (__u64)json_num(h, "p99")));
	fprintf(f, "<svg class=\"hist\" width=\"%zu\" height=\"90\" viewBox=\"0 0 %zu 90\">\n",
		n * 38 + 4, n * 38 + 4);
	for (size_t i = 0; i < n; i++) {
		const struct json *e = json_at(b, i);
		double c = json_num(e, "count"), hgt = max > 0 ? c / max * 60 : 0;

		tp_fmt_dur(lo, sizeof(lo), (__u64)json_num(e, "low"));
		tp_fmt_dur(hi, sizeof(hi), (__u64)json_num(e, "high"));
		fprintf(f,
			"<rect class=\"bar\" x=\"%zu\" y=\"%.1f\" width=\"32\" height=\"%.1f\"><title>%s "
			"to %s: %.0f</title></rect><text class=\"tick\" x=\"%zu\" y=\"84\" "
			"text-anchor=\"middle\">%s</text>\n",
			i * 38 + 4, 70 - hgt, hgt > 0.5 ? hgt : 0.5, lo, hi, c, i * 38 + 20, lo);
	}
	fputs("</svg></figure>\n", f);
}

static void row2(FILE *f, const char *k, const char *v)
{
	fputs("<tr><th>", f);
	esc(f, k);
	fputs("</th><td class=\"l\">", f);
	esc(f, v);
	fputs("</td></tr>\n", f);
}

static const char css[] =
	"body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px}"
	"figure{margin:0 0 6px}figcaption{font-size:12px;color:#444}"
	"table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;"
	"border-bottom:1px solid #e2e5ea;text-align:right;vertical-align:top}"
	"th{text-align:left;font-weight:600}.l{text-align:left}"
	".axis{stroke:#888;stroke-width:1}.tick{font-size:10px;fill:#555}"
	".band{fill:#d6e2fa;fill-opacity:.8}.band.alt{fill:#eef3fd}.band.d1{fill:#c2d3f5}"
	".band.d2{fill:#a9c0ef}.band-edge{stroke:#8aa3d6;stroke-width:1}"
	".band-name{font-size:10px;fill:#2b3f6b;font-weight:600}"
	".ref{stroke:#b33;stroke-dasharray:4 3}.peak{stroke:#7a3;stroke-dasharray:2 2}"
	".peak-label{fill:#4a6b1f}.event{fill:#d23}.bar{fill:#5b7fd6}"
	".meta{color:#444;margin:0 0 8px}";

#define REPORT_PROCS 20

static double proc_span(const struct json *p)
{
	return json_num(p, "end_ms") - json_num(p, "start_ms");
}

static int longer_first(const void *a, const void *b)
{
	double x = proc_span(*(const struct json *const *)a);
	double y = proc_span(*(const struct json *const *)b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The longest-lived processes (REPORT_PROCS of the record's), longest first. */
static void procs_table(FILE *f, const struct json *ps, __u64 dropped)
{
	size_t all = json_len(ps), n = all < REPORT_PROCS ? all : REPORT_PROCS;
	const struct json **top = all ? malloc(all * sizeof(*top)) : NULL;
	char a[32], b[32];

	if (!top)
		return;
	for (size_t i = 0; i < all; i++)
		top[i] = json_at(ps, i);
	qsort(top, all, sizeof(*top), longer_first);
	fputs("<h2>Longest processes</h2>\n<table><tr><th>command</th><th>pid</th><th>parent</th>"
	      "<th>start</th><th>wall</th><th>CPU</th><th>end</th></tr>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		const struct json *p = top[i];

		fputs("<tr><th>", f);
		esc(f, json_str(p, "command"));
		fprintf(f,
			"</th><td>%.0f</td><td>%.0f</td><td>%.3f s</td><td>%s</td><td>%s</td><td>",
			json_num(p, "pid"), json_num(p, "ppid"), json_num(p, "start_ms") / 1e3,
			tp_fmt_dur(a, sizeof(a), (__u64)(proc_span(p) * 1e6)),
			tp_fmt_dur(b, sizeof(b), (__u64)json_num(p, "cpu_ns")));
		if (json_get(p, "exit"))
			fprintf(f, "exit %.0f", json_num(p, "exit"));
		else
			esc(f, json_str(p, "end"));
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "</table>\n<p class=\"meta\">%zu of %zu processes listed", n,
		json_len(ps) + (size_t)dropped);
	if (dropped)
		fprintf(f, " (the record keeps the %zu longest-lived)", json_len(ps));
	fputs("</p>\n", f);
	free(top);
}

/* The head, the title and the table of the figures that matter most. */
static void html_summary(FILE *f, const struct json *rec)
{
	const struct json *cmd = json_get(rec, "command");
	char a[64], b[64], c[64];

	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		   "<meta name=\"generator\" content=\"taskprobe " TP_VERSION "\">\n"
		   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		   "style-src 'unsafe-inline'\">\n<title>task ");
	esc(f, json_str(rec, "id"));
	fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>task ", css);
	esc(f, json_str(rec, "id"));
	fputs("</h1>\n<p class=\"meta\"><code>", f);
	for (size_t i = 0; i < json_len(cmd); i++) {
		esc(f, json_at(cmd, i)->type == JSON_STR ? json_at(cmd, i)->str : "");
		fputc(' ', f);
	}
	fprintf(f, "</code><br>%s, exit status %.0f, %s on ", json_str(rec, "status"),
		json_num(rec, "exit_status"),
		tp_fmt_dur(a, sizeof(a), (__u64)json_num(rec, "wall_ns")));
	esc(f, json_str(rec, "host"));
	fputs(", started ", f);
	esc(f, json_str(rec, "start"));
	fputs(" (UTC)</p>\n<table>\n", f);
	tp_fmt_dur(a, sizeof(a), (__u64)metric(rec, "cpu.time_ns"));
	snprintf(b, sizeof(b), "%s, %.2f cores on average, %.2f at peak", a,
		 metric(rec, "cpu.avg_cores"), metric(rec, "cpu.peak_cores"));
	row2(f, "CPU", b);
	tp_fmt_bytes(a, sizeof(a), (__u64)metric(rec, "mem.peak_bytes"));
	snprintf(b, sizeof(b), "peak %s, %.0f OOM kills", a, metric(rec, "proc.oom_kills"));
	row2(f, "memory", b);
	tp_fmt_bytes(a, sizeof(a), (__u64)metric(rec, "io.read_bytes"));
	tp_fmt_bytes(c, sizeof(c), (__u64)metric(rec, "io.write_bytes"));
	snprintf(b, sizeof(b), "read %s, wrote %s", a, c);
	row2(f, "disk", b);
	snprintf(b, sizeof(b), "%.0f execs, %.0f failed exits, at most %.0f alive",
		 metric(rec, "proc.execs"), metric(rec, "proc.failed_exits"),
		 metric(rec, "proc.max_alive"));
	row2(f, "processes", b);
	tp_fmt_bytes(a, sizeof(a), (__u64)metric(rec, "net.tx_bytes"));
	tp_fmt_bytes(c, sizeof(c), (__u64)metric(rec, "net.rx_bytes"));
	snprintf(b, sizeof(b), "sent %s, received %s, %.0f connect failures, %.0f HTTP failures", a,
		 c, metric(rec, "net.tcp.connect_failures"), metric(rec, "http.failures"));
	row2(f, "network", b);
	fputs("</table>\n", f);
}

/* The timelines from the series' buckets, one chart a figure, and their time axis. */
static void html_timelines(FILE *f, const struct json *rec, const struct series_bucket *bk,
			   __u64 span_ms, const char *ncpu)
{
	char a[64];

	{
		struct chart charts[] = {
			{ "CPU cores in use",
			  { 0, SERIES_HOST_OTHER },
			  { "#3461c9", "#9a9a9a" },
			  { "the task", "the rest of the host" },
			  0.001,
			  0,
			  ncpu ? atof(ncpu) : 0,
			  "host cores",
			  0,
			  NULL,
			  true },
			{ "memory (resident, as sampled)",
			  { 1, -1 },
			  { "#3d8b37", NULL },
			  { NULL, NULL },
			  1,
			  1,
			  0,
			  NULL,
			  metric(rec, "mem.peak_bytes"),
			  json_str(json_get(rec, "sources"), "mem.peak_bytes"),
			  false },
			{ "disk (block layer)",
			  { 2, 3 },
			  { "#8a4bc4", "#d2691e" },
			  { "read", "write" },
			  1,
			  2,
			  0,
			  NULL,
			  0,
			  NULL,
			  false },
			{ "processes alive",
			  { 4, -1 },
			  { "#555", NULL },
			  { NULL, NULL },
			  1,
			  3,
			  0,
			  NULL,
			  0,
			  NULL,
			  false },
			{ "network (TCP payload)",
			  { 6, 7 },
			  { "#1f8a8a", "#c23b6b" },
			  { "received", "sent" },
			  1,
			  2,
			  0,
			  NULL,
			  0,
			  NULL,
			  false },
		};

		for (size_t i = 0; i < ARRAY_SIZE(charts); i++)
			chart(f, &charts[i], bk, REPORT_COLUMNS, rec, span_ms);
		time_axis(f, rec, span_ms);
	}
	fprintf(f,
		"<p class=\"meta\">Each column is %s: its band spans the samples' min to max, "
		"the line is their mean.</p>\n",
		tp_fmt_dur(a, sizeof(a), span_ms * 1000000ULL / REPORT_COLUMNS));
}

/* A pressure object's some (or full) stall of resource r, ns. */
static double stall(const struct json *p, const char *r, const char *which)
{
	char key[32];

	snprintf(key, sizeof(key), "%s_%s_ns", r, which);
	return json_num(p, key);
}

/* The rest of the host while the task ran: who used it, and the pressure stalls. */
static void html_host(FILE *f, const struct json *rec)
{
	const struct json *h = json_get(rec, "host_context"), *o = json_get(h, "others");
	const struct json *tp = json_get(h, "pressure"), *hp = json_get(h, "host_pressure");
	double wall = json_num(rec, "wall_ns");
	static const char *const res[] = { "cpu", "memory", "io" };
	char a[64], b[64], c[64];

	if (!h || h->type != JSON_OBJ)
		return;
	fputs("<h2>The host around it</h2>\n", f);
	if (json_get(h, "other_cpu_ns")) {
		fprintf(f,
			"<p>The rest of the host used %s of CPU, %.2f cores on average, while "
			"the task ran.</p>\n",
			tp_fmt_dur(a, sizeof(a), json_u64(h, "other_cpu_ns")),
			wall > 0 ? json_num(h, "other_cpu_ns") / wall : 0.0);
		if (json_len(o)) {
			fputs("<table><tr><th>other</th><th>kind</th><th>CPU</th>"
			      "<th>cores on average</th></tr>\n",
			      f);
			for (size_t i = 0; i < json_len(o); i++) {
				const struct json *e = json_at(o, i);

				fputs("<tr><td><code>", f);
				esc(f, json_str(e, "name"));
				fprintf(f, "</code></td><td>%s</td><td>%s</td><td>%.2f</td></tr>\n",
					json_str(e, "kind"),
					tp_fmt_dur(a, sizeof(a), json_u64(e, "cpu_ns")),
					wall > 0 ? json_num(e, "cpu_ns") / wall : 0.0);
			}
			fputs("</table>\n", f);
		}
	}
	if (json_get(tp, "cpu_some_ns") || json_get(hp, "cpu_some_ns")) {
		fputs("<table><tr><th>pressure stall</th><th>the task: some</th><th>the task: "
		      "full</th><th>the host: some</th></tr>\n",
		      f);
		for (size_t r = 0; r < ARRAY_SIZE(res); r++)
			fprintf(f, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				res[r], tp_fmt_dur(a, sizeof(a), (__u64)stall(tp, res[r], "some")),
				tp_fmt_dur(b, sizeof(b), (__u64)stall(tp, res[r], "full")),
				tp_fmt_dur(c, sizeof(c), (__u64)stall(hp, res[r], "some")));
		fputs("</table>\n<p class=\"meta\">some: at least one runnable thread waited for "
		      "the resource; full: all of them did.</p>\n",
		      f);
	}
	if (*json_str(h, "note")) {
		fputs("<p class=\"meta\">", f);
		esc(f, json_str(h, "note"));
		fputs("</p>\n", f);
	}
}

static void html_phases(FILE *f, const struct json *phases)
{
	if (!json_len(phases))
		return;
	fputs("<h2>Phases</h2>\n<table><tr><th>phase</th><th>start</th><th>wall</th>"
	      "<th>CPU</th><th>execs</th><th>read</th><th>written</th><th>peak memory</th>"
	      "</tr>\n",
	      f);
	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);
		char d[32], e[32], r[32], w[32], pk[32];

		fputs("<tr><th>", f);
		for (int k = 0; k < (int)json_num(p, "depth"); k++)
			fputs("&nbsp;&nbsp;", f);
		esc(f, json_str(p, "name"));
		fprintf(f,
			"%s</th><td>%.3f s</td><td>%s</td><td>%s</td><td>%.0f</td><td>%s</td>"
			"<td>%s</td><td>%s</td></tr>\n",
			json_get(p, "unfinished") && json_get(p, "unfinished")->b ? " (unfinished)"
										  : "",
			json_num(p, "start_ms") / 1e3,
			tp_fmt_dur(d, sizeof(d), (__u64)json_num(p, "wall_ns")),
			tp_fmt_dur(e, sizeof(e), (__u64)json_num(p, "cpu_ns")),
			json_num(p, "execs"),
			tp_fmt_bytes(r, sizeof(r), (__u64)json_num(p, "read_bytes")),
			tp_fmt_bytes(w, sizeof(w), (__u64)json_num(p, "write_bytes")),
			tp_fmt_bytes(pk, sizeof(pk), (__u64)json_num(p, "peak_mem_bytes")));
	}
	fputs("</table>\n", f);
}

static void html_programs(FILE *f, const struct json *rec)
{
	char a[64];

	const struct json *progs = json_get(rec, "programs");
	size_t n = json_len(progs) < 20 ? json_len(progs) : 20;

	fprintf(f, "<h2>Programs by CPU</h2>\n<table><tr><th>program</th><th>CPU</th>"
		   "<th>execs</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct json *p = json_at(progs, i);

		fputs("<tr><th>", f);
		esc(f, json_str(p, "path"));
		fprintf(f, "</th><td>%s</td><td>%.0f</td></tr>\n",
			tp_fmt_dur(a, sizeof(a), (__u64)json_num(p, "cpu_ns")),
			json_num(p, "execs"));
	}
	fprintf(f, "</table>%s\n",
		json_len(progs) > n ? "<p class=\"meta\">(the 20 that used most)</p>" : "");
}

static void html_network(FILE *f, const struct json *net)
{
	char a[64], b[64];

	const struct json *eps = json_get(net, "endpoints"), *hosts = json_get(net, "http_hosts");

	if (json_len(eps) || json_len(hosts))
		fputs("<h2>Network</h2>\n", f);
	if (json_len(eps)) {
		fputs("<table><tr><th>endpoint</th><th>names</th><th>connects</th>"
		      "<th>failures</th><th>sent</th><th>received</th></tr>\n",
		      f);
		for (size_t i = 0; i < json_len(eps); i++) {
			const struct json *e = json_at(eps, i);

			fputs("<tr><th>", f);
			esc(f, json_str(e, "address"));
			fputs("</th><td class=\"l\">", f);
			esc(f, json_str(e, "names"));
			fprintf(f, "</td><td>%.0f</td><td>%.0f</td><td>%s</td><td>%s</td></tr>\n",
				json_num(e, "tcp.connects"), json_num(e, "tcp.connect_failures"),
				tp_fmt_bytes(a, sizeof(a), (__u64)json_num(e, "tx_bytes")),
				tp_fmt_bytes(b, sizeof(b), (__u64)json_num(e, "rx_bytes")));
		}
		fputs("</table>\n", f);
	}
	if (json_len(hosts)) {
		fputs("<table><tr><th>HTTP host</th><th>requests</th><th>failures</th></tr>\n", f);
		for (size_t i = 0; i < json_len(hosts); i++) {
			const struct json *h = json_at(hosts, i);

			fputs("<tr><th>", f);
			esc(f, json_str(h, "host"));
			fprintf(f, "</th><td>%.0f</td><td>%.0f</td></tr>\n",
				json_num(h, "requests"), json_num(h, "failures"));
		}
		fputs("</table>\n", f);
	}
}

static void html_events(FILE *f, const struct json *ev)
{
	if (!json_len(ev))
		return;
	fputs("<h2>Notable events</h2>\n<table><tr><th>time</th><th>kind</th>"
	      "<th>what</th></tr>\n",
	      f);
	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);

		fprintf(f, "<tr><td>%.3f s</td><td class=\"l\">%s</td><td class=\"l\">",
			json_num(e, "t_ms") / 1e3, json_str(e, "kind"));
		esc(f, json_str(e, "detail"));
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

int report_html(FILE *f, const struct report_input *in)
{
	const struct json *rec = in->rec;
	__u64 span_ms = (__u64)json_num(rec, "wall_ns") / 1000000;
	struct series_bucket *bk = calloc(REPORT_COLUMNS, sizeof(*bk));
	const struct json *hists = json_get(rec, "histograms");

	if (!bk)
		return -ENOMEM;
	series_buckets(in->pts, in->n, span_ms, REPORT_COLUMNS, bk);
	html_summary(f, rec);
	fputs("<h2>Timelines</h2>\n", f);
	html_timelines(f, rec, bk, span_ms, query_label(in->labels, in->nlabels, "ncpu"));
	html_phases(f, json_get(rec, "phases"));
	html_host(f, rec);
	html_programs(f, rec);
	procs_table(f, json_get(rec, "processes"), (__u64)json_num(rec, "processes_dropped"));
	fputs("<h2>Latency</h2>\n", f);
	for (const struct json *h = hists ? hists->child : NULL; h; h = h->next)
		hist_svg(f, h->key, h);
	html_network(f, json_get(rec, "network"));
	html_events(f, json_get(rec, "events"));
	fputs("<h2>Labels and host</h2>\n<table>\n", f);
	for (int i = 0; i < in->nlabels; i++)
		row2(f, in->labels[i].key, in->labels[i].val);
	fputs("</table>\n<p class=\"meta\">taskprobe " TP_VERSION
	      "; times in UTC and in seconds since the task started.</p>\n</body></html>\n",
	      f);
	free(bk);
	return ferror(f) ? -EIO : 0;
}

/* A phase name as Mermaid gantt text: ':' ends a task's name and '#' starts a comment. */
static void mermaid_name(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == ':')
			fputs("\xe2\x88\xb6", f); /* RATIO, which looks like one */
		else if (*s == '#')
			fputs("\xef\xbc\x83", f); /* FULLWIDTH NUMBER SIGN */
		else if (*s == ';' || *s == '\n' || *s == '\r')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

void report_md_cell(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', f);
		else if (*s == '<')
			fputs("&lt;", f);
		else
			fputc(*s, f);
	}
}

/* Columns of the job page's charts: readable on a narrow page, each a bucket's mean. */
#define MD_CHART_POINTS 60

/*
 * One Mermaid xychart of field (scaled by div) over the task's time: a bucket with no
 * sample carries the one before it (a chart line has no gaps).
 */
static void md_chart(FILE *f, const char *title, const char *unit, const struct series_bucket *bk,
		     __u64 span_ms, const int *fields, int nfields, double div)
{
	double top = 0;

	for (int k = 0; k < nfields; k++)
		for (int i = 0; i < MD_CHART_POINTS; i++)
			if (bk[i].count && bk[i].mean[fields[k]] / div > top)
				top = bk[i].mean[fields[k]] / div;
	fprintf(f,
		"```mermaid\nxychart-beta\n    title \"%s\"\n"
		"    x-axis \"seconds since the start\" 0 --> %.1f\n"
		"    y-axis \"%s\" 0 --> %.3g\n",
		title, span_ms / 1e3, unit, top > 0 ? top * 1.1 : 1);
	for (int k = 0; k < nfields; k++) {
		double last = 0;

		/* Before the first sample: its value, not a zero no sample said. */
		for (int i = MD_CHART_POINTS - 1; i >= 0; i--)
			if (bk[i].count)
				last = bk[i].mean[fields[k]] / div;
		fputs("    line [", f);
		for (int i = 0; i < MD_CHART_POINTS; i++) {
			if (bk[i].count)
				last = bk[i].mean[fields[k]] / div;
			fprintf(f, "%s%.3g", i ? ", " : "", last);
		}
		fputs("]\n", f);
	}
	fputs("```\n\n", f);
}

/* CPU cores and memory over time, from the series, when it has two samples or more. */
static void md_charts(FILE *f, const struct report_input *in)
{
	__u64 span_ms = (__u64)json_num(in->rec, "wall_ns") / 1000000;
	struct series_bucket *bk;

	if (in->n < 2 || !span_ms)
		return;
	bk = calloc(MD_CHART_POINTS, sizeof(*bk));
	if (!bk)
		return;
	series_buckets(in->pts, in->n, span_ms, MD_CHART_POINTS, bk);
	if (json_get(json_get(in->rec, "host_context"), "other_cpu_ns"))
		md_chart(f,
			 "CPU cores in use: the task, and the rest of the host (the second line)",
			 "cores", bk, span_ms, (const int[]){ 0, SERIES_HOST_OTHER }, 2, 1000);
	else
		md_chart(f, "CPU cores in use", "cores", bk, span_ms, (const int[]){ 0 }, 1, 1000);
	md_chart(f, "memory (resident, MiB)", "MiB", bk, span_ms, (const int[]){ 1 }, 1,
		 1024 * 1024);
	free(bk);
}

/* The rest of the host and the task's CPU pressure, in the host's cell. */
static void md_host(FILE *f, const struct json *rec)
{
	const struct json *h = json_get(rec, "host_context"), *o = json_get(h, "others");
	double wall = json_num(rec, "wall_ns");
	char a[64];

	if (json_get(h, "other_cpu_ns")) {
		fprintf(f, "; the rest of it used %.2f cores on average",
			wall > 0 ? json_num(h, "other_cpu_ns") / wall : 0.0);
		for (size_t i = 0; i < json_len(o) && i < 3; i++) {
			fputs(i ? ", " : " (most: ", f);
			report_md_cell(f, json_str(json_at(o, i), "name"));
			fprintf(f, " %s",
				tp_fmt_dur(a, sizeof(a), json_u64(json_at(o, i), "cpu_ns")));
		}
		fputs(json_len(o) ? ")" : "", f);
	}
	if (json_get(json_get(h, "pressure"), "cpu_some_ns"))
		fprintf(f, "; the task waited %s for a CPU (pressure)",
			tp_fmt_dur(a, sizeof(a), json_u64(json_get(h, "pressure"), "cpu_some_ns")));
}

int report_markdown(FILE *f, const struct report_input *in)
{
	const struct json *rec = in->rec;
	const struct json *phases = json_get(rec, "phases"), *progs = json_get(rec, "programs");
	const struct json *ev = json_get(rec, "events");
	__u64 start_ms = (__u64)json_num(rec, "start_ns") / 1000000;
	char a[64], b[64];

	fputs("### taskprobe: task `", f);
	report_md_cell(f, json_str(rec, "id"));
	fprintf(f, "`\n\n| | |\n| --- | --- |\n| status | %s, exit status %.0f |\n",
		json_str(rec, "status"), json_num(rec, "exit_status"));
	fprintf(f, "| wall | %s (started %s UTC) |\n",
		tp_fmt_dur(a, sizeof(a), (__u64)json_num(rec, "wall_ns")), json_str(rec, "start"));
	fprintf(f, "| CPU | %s, %.2f cores on average, %.2f at peak |\n",
		tp_fmt_dur(a, sizeof(a), (__u64)metric(rec, "cpu.time_ns")),
		metric(rec, "cpu.avg_cores"), metric(rec, "cpu.peak_cores"));
	fprintf(f, "| memory | peak %s |\n",
		tp_fmt_bytes(a, sizeof(a), (__u64)metric(rec, "mem.peak_bytes")));
	fprintf(f, "| disk | read %s, wrote %s |\n",
		tp_fmt_bytes(a, sizeof(a), (__u64)metric(rec, "io.read_bytes")),
		tp_fmt_bytes(b, sizeof(b), (__u64)metric(rec, "io.write_bytes")));
	fprintf(f, "| processes | %.0f execs, %.0f failed exits |\n", metric(rec, "proc.execs"),
		metric(rec, "proc.failed_exits"));
	fprintf(f, "| network | %.0f connect failures, %.0f HTTP failures |\n",
		metric(rec, "net.tcp.connect_failures"), metric(rec, "http.failures"));
	fputs("| host | ", f);
	report_md_cell(f, json_str(rec, "host"));
	md_host(f, rec);
	fputs(" |\n\n", f);
	md_charts(f, in);
	if (json_len(phases)) {
		/* dateFormat x: milliseconds since the epoch, UTC. */
		fputs("```mermaid\ngantt\n    dateFormat x\n    axisFormat %H:%M:%S\n"
		      "    title Phases (UTC)\n    section task\n",
		      f);
		for (size_t i = 0; i < json_len(phases); i++) {
			const struct json *p = json_at(phases, i);
			__u64 s = start_ms + (__u64)json_num(p, "start_ms");
			__u64 d = (__u64)json_num(p, "wall_ns") / 1000000;

			fputs("    ", f);
			mermaid_name(f, json_str(p, "name"));
			fprintf(f, " :p%zu, %llu, %llu\n", i, (unsigned long long)s,
				(unsigned long long)(s + (d ? d : 1)));
		}
		fputs("```\n\n", f);
		fprintf(f,
			"<details><summary>%zu phases</summary>\n\n"
			"| phase | start | wall | CPU | execs |\n| --- | ---: | ---: | ---: | ---: |\n",
			json_len(phases));
		for (size_t i = 0; i < json_len(phases); i++) {
			const struct json *p = json_at(phases, i);

			fputs("| ", f);
			report_md_cell(f, json_str(p, "name"));
			fprintf(f, " | %.3f s | %s | %s | %.0f |\n", json_num(p, "start_ms") / 1e3,
				tp_fmt_dur(a, sizeof(a), (__u64)json_num(p, "wall_ns")),
				tp_fmt_dur(b, sizeof(b), (__u64)json_num(p, "cpu_ns")),
				json_num(p, "execs"));
		}
		fputs("\n</details>\n\n", f);
	}
	if (json_len(progs)) {
		size_t n = json_len(progs) < 20 ? json_len(progs) : 20;

		fprintf(f,
			"<details><summary>programs by CPU (%zu)</summary>\n\n"
			"| program | CPU | execs |\n| --- | ---: | ---: |\n",
			json_len(progs));
		for (size_t i = 0; i < n; i++) {
			const struct json *p = json_at(progs, i);

			fputs("| ", f);
			report_md_cell(f, json_str(p, "path"));
			fprintf(f, " | %s | %.0f |\n",
				tp_fmt_dur(a, sizeof(a), (__u64)json_num(p, "cpu_ns")),
				json_num(p, "execs"));
		}
		fputs("\n</details>\n\n", f);
	}
	if (json_len(ev)) {
		fprintf(f,
			"<details><summary>notable events (%zu)</summary>\n\n"
			"| time | kind | what |\n| ---: | --- | --- |\n",
			json_len(ev));
		for (size_t i = 0; i < json_len(ev); i++) {
			const struct json *e = json_at(ev, i);

			fprintf(f, "| %.3f s | %s | ", json_num(e, "t_ms") / 1e3,
				json_str(e, "kind"));
			report_md_cell(f, json_str(e, "detail"));
			fputs(" |\n", f);
		}
		fputs("\n</details>\n\n", f);
	}
	return ferror(f) ? -EIO : 0;
}
