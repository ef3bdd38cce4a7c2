// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: a stored task exported as chrome-trace, csv, json and perfherder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

/*
 * A loopback connection of its own: the client sends 4 MiB in 64 paced writes, then
 * the server sends 1 MiB back in 16. Only connected sockets are counted (the task's
 * endpoints), so the task sent 4 MiB and received 1 MiB.
 */
static const char xfer_py[] = "import socket, threading, time\n"
			      "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
			      "def serve():\n"
			      "    c, _ = s.accept(); got = 0\n"
			      "    while got < 4 << 20:\n"
			      "        b = c.recv(65536)\n"
			      "        if not b: break\n"
			      "        got += len(b)\n"
			      "    for i in range(16):\n"
			      "        c.sendall(b'y' * 65536); time.sleep(0.02)\n"
			      "    c.close()\n"
			      "t = threading.Thread(target=serve); t.start()\n"
			      "k = socket.create_connection(s.getsockname())\n"
			      "for i in range(64):\n"
			      "    k.sendall(b'x' * 65536); time.sleep(0.008)\n"
			      "got = 0\n"
			      "while got < 1 << 20:\n"
			      "    b = k.recv(65536)\n"
			      "    if not b: break\n"
			      "    got += len(b)\n"
			      "k.close(); t.join()\n";

#define XFER_SENT (4 << 20)
#define XFER_RECEIVED (1 << 20)

/* The bytes a rate column of the CSV adds up to: each sample's rate over its interval. */
static double csv_integral(const char *csv, int col)
{
	double sum = 0, prev_t = 0;
	const char *line = strchr(csv, '\n');

	for (; line && line[1]; line = strchr(line + 1, '\n')) {
		const char *f = line + 1;
		double t = atof(f);

		for (int k = 0; k < col && f; k++) {
			f = strchr(f, ',');
			f = f ? f + 1 : NULL;
		}
		if (f)
			sum += atof(f) * (t - prev_t) / 1000.0;
		prev_t = t;
	}
	return sum;
}

/* The value of the line "NAME VALUE" (labels included in NAME) in text, or -1. */
static double om_value(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return atof(p + n + 1);
	return -1;
}

/*
 * export --format openmetrics, for GitLab's merge-request metrics: promtool takes it,
 * each figure is the record's (ns as seconds, to the ns), each phase's labelled.
 */
static void openmetrics_of(const char *db, const struct json *rec)
{
	const char *om = tu_tmp("metrics.txt");
	char cmd[4200];
	struct tu_result r;
	static char text[262144];
	ssize_t len;

	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "openmetrics", "-o", om, NULL);
	ASSERT_EQ(r.status, 0, "export openmetrics");
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", om);
	tu_run((char *[]){ "sh", "-c", cmd, NULL }, &r, 60);
	ASSERT_EQ(r.status, 0, "promtool check metrics");
	if (r.status)
		fprintf(stderr, "    %s%s", r.out ? r.out : "", r.err ? r.err : "");
	len = tp_read_file(om, text, sizeof(text));
	if (!ASSERT_TRUE(len > 0, "the metrics file"))
		return;
	ASSERT_TRUE(len > 6 && !strcmp(text + len - 6, "# EOF\n"), "OpenMetrics' # EOF, last");
	ASSERT_EQ(om_value(text, "taskprobe_proc_execs"), tu_metric(rec, "proc.execs"), "execs");
	ASSERT_NEAR(om_value(text, "taskprobe_cpu_time_seconds"),
		    tu_metric(rec, "cpu.time_ns") / 1e9, 1e-6, "CPU time, in seconds");
	ASSERT_EQ(om_value(text, "taskprobe_io_write_bytes"), tu_metric(rec, "io.write_bytes"),
		  "bytes written");
	ASSERT_TRUE(strstr(text, "# UNIT taskprobe_cpu_time_seconds seconds\n") != NULL,
		    "its unit");
	ASSERT_NEAR(om_value(text, "taskprobe_phase_wall_seconds{phase=\"compile.c\"}"),
		    tu_num(tu_find(json_get(rec, "phases"), "name", "compile.c"), "wall_ns") / 1e9,
		    1e-6, "a phase's figure, labelled by phase");
	ASSERT_EQ(om_value(text, "taskprobe_phase_execs{phase=\"build\"}"),
		  tu_num(tu_find(json_get(rec, "phases"), "name", "build"), "execs"),
		  "the outer phase's execs");
}

/*
 * export --format otlp: the trace a collector would take, decoded strictly with the
 * official opentelemetry-proto definitions (an unknown field or a wrong type refused),
 * every span, attribute and timestamp against the record; the config's otlp_attribute
 * maps the job label to cicd.pipeline.task.name.
 */
static void otlp_of(const char *db, const char *rec_path)
{
	const char *otlp = tu_tmp("otlp.json"), *conf = tu_tmp("otlp.conf");
	struct tu_result r;

	tu_write_file(conf, "otlp_attribute cicd.pipeline.task.name = job\n");
	tu_tp(&r, 30, "export", "x1", "--db", db, "--config", conf, "--format", "otlp", "-o", otlp,
	      NULL);
	ASSERT_EQ(r.status, 0, "export otlp");
	tu_run((char *[]){ "node", "tests/helpers/check_otlp.js", (char *)otlp, (char *)rec_path,
			   "cicd.pipeline.task.name=export-test", NULL },
	       &r, 60);
	ASSERT_EQ(r.status, 0, "check_otlp.js: decoded strictly, the record's spans and figures");
	if (r.status)
		fprintf(stderr, "    %s%s", r.out ? r.out : "", r.err ? r.err : "");
	ASSERT_TRUE(r.out && strstr(r.out, "3 spans"), "the task and its two phases as spans");
}

/*
 * A task with nested phases, a CPU burst, a failed exit and a loopback transfer (4 MiB
 * out, 1 MiB in), at a 100 ms interval:
 * the chrome-trace export is checked by Python's json against the record and the CSV
 * (tests/helpers/check_trace.py); the CSV has a row per stored sample; json is the
 * record `show --json` gives; perfherder is the line run --perfherder printed.
 */
TEST(TIER_E2E, export_formats_match_the_record)
{
	const char *db = tu_tmp("x.db"), *trace = tu_tmp("t.json"), *csv = tu_tmp("s.csv");
	const char *fx = tu_tmp("fx.json");
	const char *rec_path = tu_tmp("rec.json"), *ph = tu_tmp("ph.json"), *py = tu_tmp("x.py");
	char script[2048];
	const struct json *rec;
	struct tu_result r;
	char *line, *nl;
	int rows = 0;

	snprintf(script, sizeof(script),
		 "echo BEGIN_PHASE build; echo BEGIN_PHASE compile.c; %s 1 600;"
		 " echo END_PHASE compile.c; sh -c 'exit 3'; python3 %s; sleep 0.3;"
		 " echo END_PHASE build",
		 tu_helper("burn"), py);
	tu_write_file(py, xfer_py);
	tu_tp(&r, 60, "run", "--id", "x1", "--label", "job=export-test", "--db", db, "--interval",
	      "100", "--perfherder", "--quiet", "--json", rec_path, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the task");
	line = r.out ? strstr(r.out, "PERFHERDER_DATA: ") : NULL;
	rec = tu_load_json(rec_path);
	if (!ASSERT_TRUE(line && rec, "the perfherder line and the record"))
		return;
	ASSERT_EQ(json_len(json_get(rec, "phases")), 2, "two phases");
	ASSERT_GE(json_len(json_get(rec, "processes")), 6, "its processes listed");
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "chrome-trace", "-o", trace, NULL);
	ASSERT_EQ(r.status, 0, "export chrome-trace");
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "csv", "-o", csv, NULL);
	ASSERT_EQ(r.status, 0, "export csv");
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "json", "-o", ph, NULL);
	ASSERT_EQ(r.status, 0, "export json");
	ASSERT_EQ(tu_metric(tu_load_json(ph), "cpu.time_ns"), tu_metric(rec, "cpu.time_ns"),
		  "json: the record's figures");
	ASSERT_STREQ(json_str(tu_load_json(ph), "id"), "x1", "json: the record");
	tu_run((char *[]){ "python3", "tests/helpers/check_trace.py", (char *)trace, (char *)ph,
			   (char *)csv, NULL },
	       &r, 60);
	ASSERT_EQ(r.status, 0, "check_trace.py");
	if (r.status)
		fprintf(stderr, "    %s", r.out);
	/* The Firefox Profiler's processed profile, against the format read off its source. */
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "firefox-profiler", "-o", fx, NULL);
	ASSERT_EQ(r.status, 0, "export firefox-profiler");
	tu_run((char *[]){ "python3", "tests/helpers/check_profile.py", (char *)fx, (char *)ph,
			   (char *)csv, "tests/helpers/fxprofile-ref.json", NULL },
	       &r, 60);
	ASSERT_EQ(r.status, 0, "check_profile.py");
	if (r.status)
		fprintf(stderr, "    %s", r.out);
	/* The CSV: a header, then one row per sample the series says it holds. */
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "csv", NULL);
	for (const char *p = r.out; p && (p = strchr(p, '\n')); p++)
		rows++;
	{
		struct tu_result s;

		tu_tp(&s, 30, "series", "x1", "--db", db, "--json", NULL);
		ASSERT_EQ(rows - 1, tu_num(tu_parse_json(s.out), "samples"), "a row per sample");
	}
	ASSERT_TRUE(strstr(r.out, ",compile.c,") != NULL, "a sample's phase by its name");
	/* The network columns add up to what the task sent itself (KiB/s stored). */
	ASSERT_EQ(tu_metric(rec, "net.rx_bytes"), XFER_RECEIVED, "received: the 1 MiB sent back");
	ASSERT_EQ(tu_metric(rec, "net.tx_bytes"), XFER_SENT, "sent: the 4 MiB, acked");
	ASSERT_NEAR(csv_integral(r.out, 7), XFER_RECEIVED, 0.03,
		    "the rx rates add up to the bytes received");
	ASSERT_NEAR(csv_integral(r.out, 8), XFER_SENT, 0.03,
		    "the tx rates add up to the bytes sent");
	/* perfherder: the same data run --perfherder printed, without the prefix. */
	nl = strchr(line, '\n');
	if (nl)
		*nl = '\0';
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "perfherder", NULL);
	ASSERT_EQ(r.status, 0, "export perfherder");
	ASSERT_TRUE(r.out && !strncmp(r.out, line + strlen("PERFHERDER_DATA: "),
				      strlen(line + strlen("PERFHERDER_DATA: "))),
		    "perfherder: the run's own line");
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "svg", NULL);
	ASSERT_EQ(r.status, 2, "an unknown format");
	ASSERT_TRUE(strstr(r.err,
			   "taskprobe: export: --format is chrome-trace, csv, json, "
			   "perfherder, firefox-profiler, openmetrics, otlp or otlp-metrics;") !=
			    NULL,
		    "one line");
	tu_tp(&r, 30, "export", "nosuch", "--db", db, "--format", "json", NULL);
	ASSERT_EQ(r.status, 1, "an unknown task");
	openmetrics_of(db, rec);
	otlp_of(db, rec_path);
}

/* Chromium, headless, networking off: its DOM, a screenshot, and what it fetched. */
struct page {
	char *dom;
	char *log; /* its stderr: console messages among it */
	char *net; /* its net log */
	long png_bytes;
};

static char *slurp(const char *path)
{
	char *text = NULL;

	if (tp_slurp(path, "file", true, &text) < 0)
		return NULL;
	return text;
}

static bool open_in_chromium(const char *html, struct page *pg)
{
	const char *png = tu_tmp("shot.png"), *net = tu_tmp("net.json"), *prof = tu_tmp("profile");
	char url[4200], shot[4300], log[4300], udd[4300];
	struct tu_result r;
	struct stat st;

	memset(pg, 0, sizeof(*pg));
	snprintf(url, sizeof(url), "file://%s", html);
	snprintf(shot, sizeof(shot), "--screenshot=%s", png);
	snprintf(log, sizeof(log), "--log-net-log=%s", net);
	snprintf(udd, sizeof(udd), "--user-data-dir=%s", prof);
	/* The flags of env: no background services; a proxy nobody answers, no names. */
#define CHROMIUM(...)                                                                              \
	(char *[]){ "chromium",                                                                    \
		    "--headless",                                                                  \
		    "--no-sandbox",                                                                \
		    "--disable-gpu",                                                               \
		    "--disable-quic",                                                              \
		    "--no-first-run",                                                              \
		    "--disable-background-networking",                                             \
		    "--disable-component-update",                                                  \
		    "--disable-sync",                                                              \
		    udd,                                                                           \
		    "--proxy-server=http://127.0.0.1:9",                                           \
		    "--host-resolver-rules=MAP * ~NOTFOUND",                                       \
		    "--enable-logging=stderr",                                                     \
		    "--v=0",                                                                       \
		    "--window-size=1040,1600",                                                     \
		    __VA_ARGS__,                                                                   \
		    NULL }
	tu_run(CHROMIUM(shot, url), &r, 120);
	if (!CHECK(r.status == 0, "chromium --screenshot: status %d: %.300s", r.status, r.err))
		return false;
	pg->png_bytes = stat(png, &st) ? -1 : (long)st.st_size;
	tu_run(CHROMIUM(log, "--dump-dom", url), &r, 120);
	if (!CHECK(r.status == 0, "chromium --dump-dom: status %d", r.status))
		return false;
#undef CHROMIUM
	pg->dom = r.out ? strdup(r.out) : NULL;
	pg->log = r.err ? strdup(r.err) : NULL;
	pg->net = slurp(net);
	return pg->dom && pg->log && pg->net;
}

/* Every URL the net log has: the page itself, or the browser's own (blocked) services. */
static int foreign_requests(const char *net, const char *html)
{
	int n = 0;

	for (const char *p = net; (p = strstr(p, "\"url\":\"")); p += 7) {
		const char *u = p + 7;
		char host[256] = "";

		if (!strncmp(u, "file://", 7)) {
			n += strncmp(u + 7, html, strlen(html)) != 0;
			continue;
		}
		sscanf(u, "%*[a-z]://%255[^/:\"]", host);
		/* Chromium's own: time, updates, accounts (refused by the proxy anyway). */
		if (strstr(host, ".google.com") || strstr(host, ".googleapis.com") ||
		    !strcmp(host, "google.com"))
			continue;
		CHECK(false, "the page requested %.120s", u);
		n++;
	}
	return n;
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (; s && (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/*
 * Treeherder's performance artifact: `run --perfherder-file` writes it whole at the
 * task's end, as Treeherder's own schema, framework list and artifact-name rule take it
 * (tests/helpers/perfherder-ref.json, read off its source), with the record's figures
 * for the task and each phase (one run twice is two suites); the log line and
 * `export --format perfherder` are the same document; the framework is the config's,
 * and a name Treeherder would not read is said.
 */
TEST(TIER_E2E, perfherder_artifact_is_what_treeherder_ingests)
{
	const char *db = tu_tmp("p.db"), *art = tu_tmp("perfherder-data.json");
	const char *rec_path = tu_tmp("rec.json"), *other = tu_tmp("resources.json");
	const char *conf = tu_tmp("talos.conf"), *bad = tu_tmp("bad.conf");
	static char doc[65536];
	char script[1024], *line;
	const struct json *j;
	struct tu_result r, c;
	ssize_t len;

	snprintf(script, sizeof(script),
		 "echo BEGIN_PHASE fetch; /bin/true; echo END_PHASE fetch;"
		 " echo BEGIN_PHASE build; %s 1 300; echo END_PHASE build;"
		 " echo BEGIN_PHASE fetch; /bin/true; /bin/true; echo END_PHASE fetch",
		 tu_helper("burn"));
	tu_tp(&r, 60, "run", "--id", "p1", "--db", db, "--perfherder", "--perfherder-file", art,
	      "--quiet", "--json", rec_path, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the task");
	ASSERT_TRUE(!r.err || !strstr(r.err, "Treeherder ingests only"), "a name it reads");
	tu_run((char *[]){ "python3", "tests/helpers/check_perfherder.py",
			   "tests/helpers/perfherder-ref.json", (char *)art, (char *)rec_path,
			   "build_metrics", NULL },
	       &c, 60);
	ASSERT_EQ(c.status, 0, "check_perfherder.py: schema, framework, name, figures");
	if (c.status)
		fprintf(stderr, "    %s", c.out);
	len = tp_read_file(art, doc, sizeof(doc));
	line = r.out ? strstr(r.out, "PERFHERDER_DATA: ") : NULL;
	if (!ASSERT_TRUE(len > 0 && line, "the artifact and the log line"))
		return;
	ASSERT_TRUE(!strncmp(line + 17, doc, (size_t)len), "the log line is the artifact");
	tu_tp(&r, 30, "export", "p1", "--db", db, "--format", "perfherder", NULL);
	ASSERT_TRUE(r.out && !strcmp(r.out, doc), "export --format perfherder is the artifact");
	/* The config's framework; a file Treeherder's job loader would pass over, said. */
	tu_write_file(conf, "perfherder_framework = talos\n");
	tu_tp(&r, 30, "run", "--config", conf, "--no-db", "--quiet", "--perfherder-file", other,
	      "--", "true", NULL);
	ASSERT_EQ(r.status, 0, "a run with another framework");
	ASSERT_TRUE(r.err && strstr(r.err, "taskprobe: warning: Treeherder ingests only artifacts "
					   "named *perfherder-data*.json, not resources.json\n"),
		    "the name Treeherder would not read, said once");
	j = tu_load_json(other);
	ASSERT_STREQ(j ? json_str(json_get(j, "framework"), "name") : NULL, "talos",
		     "the config's framework");
	tu_write_file(bad, "perfherder_framework = Job Resource Usage\n");
	tu_tp(&r, 30, "run", "--config", bad, "--no-db", "--", "true", NULL);
	ASSERT_EQ(r.status, 125, "a framework name Treeherder could not have");
	ASSERT_TRUE(r.err && strstr(r.err, "perfherder_framework takes"), "says what it takes");
}

/*
 * A ten-second task's HTML report opened in headless Chromium with networking off:
 * a screenshot, no console message, nothing fetched but the file, its SVG timelines
 * drawn, the phase names and the record's peak memory in the rendered text.
 */
TEST(TIER_E2E, report_opens_offline_in_chromium)
{
	const char *db = tu_tmp("r.db"), *html = tu_tmp("r.html"), *json = tu_tmp("r.json");
	char script[2048], peak[64], want[96];
	const struct json *rec;
	struct tu_result r;
	struct page pg;
	struct stat st;

	snprintf(script, sizeof(script),
		 "echo BEGIN_PHASE fetch; sleep 2; echo END_PHASE fetch; echo BEGIN_PHASE build;"
		 " %s 1 2000; %s 64 /dev/null; sh -c 'exit 2'; sleep 5; echo END_PHASE build",
		 tu_helper("burn"), tu_helper("memtouch"));
	tu_tp(&r, 60, "run", "--id", "r10", "--db", db, "--quiet", "--json", json, "--", "sh", "-c",
	      script, NULL);
	ASSERT_EQ(r.status, 0, "the ten-second task");
	rec = tu_load_json(json);
	tu_tp(&r, 60, "report", "r10", "--db", db, "-o", html, NULL);
	if (!ASSERT_EQ(r.status, 0, "report") || !ASSERT_OK(stat(html, &st), "the file"))
		return;
	ASSERT_LE(st.st_size, 1 << 20, "under 1 MiB");
	if (!open_in_chromium(html, &pg))
		return;
	ASSERT_GE(pg.png_bytes, 20000, "a screenshot of it");
	ASSERT_EQ(count_of(pg.log, "CONSOLE"), 0, "no console message");
	ASSERT_EQ(foreign_requests(pg.net, html), 0, "nothing fetched but the file");
	{
		/* The check itself, on a page that does fetch: it must see the request. */
		const char *bad = tu_tmp("fetches.html");
		struct page ctl;

		tu_write_file(bad, "<!DOCTYPE html><html><body>"
				   "<img src=\"http://fetch.example.test/x.png\"></body></html>\n");
		if (open_in_chromium(bad, &ctl)) {
			ASSERT_GE(count_of(ctl.net, "fetch.example.test"), 1,
				  "the net log records a page's fetch");
			free(ctl.dom);
			free(ctl.log);
			free(ctl.net);
		}
	}
	ASSERT_EQ(count_of(pg.dom, "<svg class=\"chart\""), 6, "five timelines and their axis");
	ASSERT_GE(count_of(pg.dom, "<polyline"), 5, "their lines drawn");
	ASSERT_TRUE(strstr(pg.dom, ">fetch<") && strstr(pg.dom, ">build<"),
		    "the phase names in the rendered text");
	/* Laid out: each phase named on its band, every chart's text inside its chart. */
	tu_run((char *[]){ "python3", "tests/helpers/check_layout.py", (char *)html, "fetch",
			   "build", NULL },
	       &r, 120);
	ASSERT_EQ(r.status, 0, "check_layout.py: names on the bands, labels inside the charts");
	if (r.status)
		fprintf(stderr, "    %s", r.out);
	tp_fmt_bytes(peak, sizeof(peak), (__u64)tu_metric(rec, "mem.peak_bytes"));
	snprintf(want, sizeof(want), "peak %s", peak);
	CHECK(strstr(pg.dom, want) != NULL, "the record's peak memory, %s", want);
	ASSERT_TRUE(strstr(pg.dom, "sh exited 2") != NULL, "the failed exit as a marker");
	{
		/* The longest process is the task's shell: its pid in the processes table. */
		const struct json *first = json_at(json_get(rec, "processes"), 0);

		snprintf(want, sizeof(want), "<th>%.40s</th><td>%.0f</td>",
			 json_str(first, "command"), tu_num(first, "pid"));
		CHECK(first && strstr(pg.dom, want) != NULL, "the shell's row, %s", want);
	}
	free(pg.dom);
	free(pg.log);
	free(pg.net);
}

/*
 * A synthetic three-hour task (1 s series, 10 800 samples, phases, a phase named
 * "a:b #1"): its HTML report stays under 1 MiB and opens; its Markdown has a Mermaid
 * gantt whose every task line parses, the ':' and '#' of the name made harmless.
 */
TEST(TIER_E2E, report_of_a_three_hour_task)
{
	const char *db = tu_tmp("big.db"), *html = tu_tmp("big.html"), *md = tu_tmp("s.md");
	const char *synth = getenv("TASKPROBE_SYNTH");
	struct tu_result r;
	struct page pg;
	struct stat st;
	int tasks = 0;

	/* scripts/bench/synth_task.c: a record and 10 800 samples, as a run stores them */
	tu_run((char *[]){ (char *)(synth ? synth : "build/bench/synth-task"), (char *)db, "long",
			   "3", NULL },
	       &r, 60);
	if (!ASSERT_EQ(r.status, 0, "a synthetic three-hour task"))
		return;
	tu_tp(&r, 60, "report", "long", "--db", db, "-o", html, NULL);
	if (!ASSERT_EQ(r.status, 0, "report") || !ASSERT_OK(stat(html, &st), "the file"))
		return;
	ASSERT_LE(st.st_size, 1 << 20, "three hours, under 1 MiB");
	if (open_in_chromium(html, &pg)) {
		ASSERT_EQ(count_of(pg.log, "CONSOLE"), 0, "no console message");
		ASSERT_EQ(count_of(pg.dom, "<svg class=\"chart\""), 6, "its timelines");
		ASSERT_TRUE(strstr(pg.dom, "a:b #1") != NULL, "the odd phase name, as text");
		free(pg.dom);
		free(pg.log);
		free(pg.net);
	}
	tu_tp(&r, 60, "report", "long", "--db", db, "--format", "markdown", NULL);
	ASSERT_EQ(r.status, 0, "report --format markdown");
	{
		const char *g = r.out ? strstr(r.out, "```mermaid\ngantt\n") : NULL;
		const char *end = g ? strstr(g + 3, "```") : NULL;
		char line[512];

		if (!ASSERT_TRUE(g && end, "a closed Mermaid block"))
			return;
		for (const char *p = g; p < end; p = strchr(p, '\n') + 1) {
			unsigned long long a, b;
			int id, n = 0;

			snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
			if (strncmp(line, "    ", 4) || !strncmp(line, "    dateFormat", 14) ||
			    !strncmp(line, "    axisFormat", 14) ||
			    !strncmp(line, "    title", 9) || !strncmp(line, "    section", 11))
				continue;
			/* NAME :pI, START, END: one ':' only, no '#' to start a comment */
			CHECK(count_of(line, ":") == 1 && !strchr(line, '#') &&
				      sscanf(strchr(line, ':'), ":p%d, %llu, %llu%n", &id, &a, &b,
					     &n) == 3 &&
				      !line[strchr(line, ':') - line + n] && b > a,
			      "a gantt task line: '%s'", line);
			tasks++;
		}
		ASSERT_EQ(tasks, 3, "a task line per phase");
		ASSERT_TRUE(strstr(g, "a\xe2\x88\xb6"
				      "b \xef\xbc\x83"
				      "1 :p1,") != NULL,
			    "a:b #1 with look-alikes of ':' and '#'");
	}
	/* Every Mermaid block of it rendered by Mermaid itself, as a job page would. */
	{
		const char *mdl = tu_tmp("long.md");
		struct tu_result c;

		tu_write_file(mdl, r.out);
		tu_run((char *[]){ "python3", "tests/helpers/check_mermaid.py", (char *)mdl,
				   "gantt", "xychart-beta", NULL },
		       &c, 180);
		ASSERT_EQ(c.status, 0, "check_mermaid.py: the three-hour task's charts and gantt");
		if (c.status)
			fprintf(stderr, "    %s", c.out);
	}
	/* Its profile: the 10 800 samples as CPU markers and counters, as the format says. */
	{
		const char *fx = tu_tmp("big.fx.json"), *rec = tu_tmp("big.rec.json");
		const char *csv = tu_tmp("big.csv");

		tu_tp(&r, 60, "export", "long", "--db", db, "--format", "firefox-profiler", "-o",
		      fx, NULL);
		ASSERT_EQ(r.status, 0, "export firefox-profiler");
		tu_tp(&r, 60, "export", "long", "--db", db, "--format", "json", "-o", rec, NULL);
		tu_tp(&r, 60, "export", "long", "--db", db, "--format", "csv", "-o", csv, NULL);
		tu_run((char *[]){ "python3", "tests/helpers/check_profile.py", (char *)fx,
				   (char *)rec, (char *)csv, "tests/helpers/fxprofile-ref.json",
				   NULL },
		       &r, 120);
		ASSERT_EQ(r.status, 0, "check_profile.py, three hours");
		if (r.status)
			fprintf(stderr, "    %s", r.out);
		ASSERT_TRUE(r.out && strstr(r.out, "10800 CPU"), "a CPU marker a sample");
	}
	/* run --summary-file appends the same kind of report, task after task. */
	for (int i = 0; i < 2; i++) {
		tu_tp(&r, 60, "run", "--quiet", "--no-db", "--interval", "100", "--summary-file",
		      md, "--", "sh", "-c", "echo BEGIN_PHASE x; sleep 0.5; echo END_PHASE x",
		      NULL);
		ASSERT_EQ(r.status, 0, "run --summary-file");
	}
	{
		char *text = slurp(md);
		struct tu_result c;

		ASSERT_EQ(count_of(text, "### taskprobe: task"), 2, "two reports appended");
		ASSERT_EQ(count_of(text, "```mermaid\ngantt"), 2, "each with its gantt");
		ASSERT_EQ(count_of(text, "```mermaid\nxychart-beta"), 4,
			  "each with its CPU and memory charts");
		free(text);
		tu_run((char *[]){ "python3", "tests/helpers/check_mermaid.py", (char *)md, "gantt",
				   "xychart-beta", NULL },
		       &c, 180);
		ASSERT_EQ(c.status, 0, "check_mermaid.py: the job page's summary");
		if (c.status)
			fprintf(stderr, "    %s", c.out);
	}
}

/* The record's process with this pid, or NULL. */
static const struct json *process(const struct json *rec, long pid)
{
	const struct json *ps = json_get(rec, "processes");

	for (size_t i = 0; i < json_len(ps); i++)
		if ((long)tu_num(json_at(ps, i), "pid") == pid)
			return json_at(ps, i);
	return NULL;
}

static long pid_line(const char *text, int n)
{
	for (; text && n > 0; n--) {
		text = strchr(text, '\n');
		text = text ? text + 1 : NULL;
	}
	return text ? atol(text) : -1;
}

/*
 * The record's processes against what the task made: 6 processes (the shell, burn
 * and its 2 children, a shell that exits 5 after sleep 0.4), each pid the shell's $!,
 * parents, exit codes and spans as made; the children's CPU is burn's rusage of them.
 */
TEST(TIER_E2E, processes_listed_with_their_spans)
{
	const char *j = tu_tmp("p.json"), *truth = tu_tmp("truth"), *pids = tu_tmp("pids");
	const struct json *rec, *ps, *b, *x, *main_p = NULL;
	double children, self, child_cpu = 0, sum = 0, progs = 0;
	char script[2048], *text = NULL;
	struct tu_result r;

	snprintf(script, sizeof(script),
		 "%s 2 300 %s & echo $! > %s; sh -c 'sleep 0.4; exit 5' & echo $! >> %s;"
		 " echo $$ >> %s; wait",
		 tu_helper("burn"), truth, pids, pids, pids);
	tu_tp(&r, 60, "run", "--quiet", "--no-db", "--json", j, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the task");
	rec = tu_load_json(j);
	if (!ASSERT_TRUE(rec && tp_slurp(pids, "pids", true, &text) > 0, "record and pids") ||
	    !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	ps = json_get(rec, "processes");
	ASSERT_EQ(json_len(ps), 6, "six processes");
	ASSERT_EQ(tu_num(rec, "processes_dropped"), 0, "none dropped");
	b = process(rec, pid_line(text, 0));
	x = process(rec, pid_line(text, 1));
	main_p = process(rec, pid_line(text, 2));
	if (!ASSERT_TRUE(b && x && main_p, "burn, the exiting shell and the main shell by pid")) {
		free(text);
		return;
	}
	ASSERT_TRUE(strstr(json_str(b, "command"), "/burn") != NULL, "burn's command");
	ASSERT_EQ(tu_num(b, "ppid"), pid_line(text, 2), "burn's parent: the shell");
	ASSERT_EQ(tu_num(x, "ppid"), pid_line(text, 2), "the other's parent: the shell");
	ASSERT_EQ(tu_num(x, "exit"), 5, "exit 5");
	ASSERT_STREQ(json_str(x, "end"), "exited", "ended by exit");
	ASSERT_GE(tu_num(x, "end_ms") - tu_num(x, "start_ms"), 400, "it lived 0.4 s at least");
	ASSERT_LE(tu_num(x, "end_ms") - tu_num(x, "start_ms"), 1000, "and not much more");
	ASSERT_LE(tu_num(main_p, "start_ms"), tu_num(b, "start_ms"), "the shell started first");
	ASSERT_GE(tu_num(main_p, "end_ms"), tu_num(x, "end_ms"), "and ended last");
	for (size_t i = 0; i < json_len(ps); i++) {
		const struct json *p = json_at(ps, i);

		sum += tu_num(p, "cpu_ns");
		if (tu_num(p, "ppid") == tu_num(b, "pid")) {
			child_cpu += tu_num(p, "cpu_ns");
			ASSERT_EQ(tu_num(p, "exit"), 0, "burn's child exit 0");
		}
	}
	ASSERT_NEAR(child_cpu, children, 0.03, "burn's children: their rusage");
	for (size_t i = 0; i < json_len(json_get(rec, "programs")); i++)
		progs += tu_num(json_at(json_get(rec, "programs"), i), "cpu_ns");
	ASSERT_EQ((long long)sum, (long long)progs, "processes' CPU = programs' CPU");
	free(text);
}

/* 700 short processes and one long: the 512 longest are kept, the long one among them. */
TEST(TIER_E2E, processes_list_keeps_the_longest)
{
	const char *j = tu_tmp("p.json");
	const struct json *rec, *ps;
	struct tu_result r;
	int sleeps = 0;

	tu_tp(&r, 120, "run", "--quiet", "--no-db", "--json", j, "--", "sh", "-c",
	      "sleep 0.5 & i=0; while [ $i -lt 700 ]; do /bin/true; i=$((i+1)); done; wait", NULL);
	ASSERT_EQ(r.status, 0, "the task");
	rec = tu_load_json(j);
	if (!ASSERT_TRUE(rec != NULL, "the record"))
		return;
	ps = json_get(rec, "processes");
	ASSERT_EQ(json_len(ps), 512, "512 kept");
	ASSERT_EQ(tu_num(rec, "processes_dropped"), 702 - 512, "the rest counted");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 702, "702 execs");
	for (size_t i = 0; i < json_len(ps); i++)
		sleeps += strstr(json_str(json_at(ps, i), "command"), "sleep") != NULL;
	ASSERT_EQ(sleeps, 1, "the sleep is kept");
	for (size_t i = 1; i < json_len(ps); i++)
		if (!CHECK(tu_num(json_at(ps, i), "start_ms") >=
				   tu_num(json_at(ps, i - 1), "start_ms"),
			   "sorted by start"))
			break;
}
