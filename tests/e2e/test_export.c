// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: a stored task exported as chrome-trace, csv, json and perfherder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

/*
 * A task with nested phases, a CPU burst and a failed exit, at a 100 ms interval:
 * the chrome-trace export is checked by Python's json against the record and the CSV
 * (tests/helpers/check_trace.py); the CSV has a row per stored sample; json is the
 * record `show --json` gives; perfherder is the line run --perfherder printed.
 */
TEST(TIER_E2E, export_formats_match_the_record)
{
	const char *db = tu_tmp("x.db"), *trace = tu_tmp("t.json"), *csv = tu_tmp("s.csv");
	const char *rec_path = tu_tmp("rec.json"), *ph = tu_tmp("ph.json");
	char script[2048];
	const struct json *rec;
	struct tu_result r;
	char *line, *nl;
	int rows = 0;

	snprintf(script, sizeof(script),
		 "echo BEGIN_PHASE build; echo BEGIN_PHASE compile.c; %s 1 600;"
		 " echo END_PHASE compile.c; sh -c 'exit 3'; sleep 0.3; echo END_PHASE build",
		 tu_helper("burn"));
	tu_tp(&r, 60, "run", "--id", "x1", "--db", db, "--interval", "100", "--perfherder",
	      "--quiet", "--json", rec_path, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the task");
	line = r.out ? strstr(r.out, "PERFHERDER_DATA: ") : NULL;
	rec = tu_load_json(rec_path);
	if (!ASSERT_TRUE(line && rec, "the perfherder line and the record"))
		return;
	ASSERT_EQ(json_len(json_get(rec, "phases")), 2, "two phases");
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
	/* The CSV: a header, then one row per sample the series says it holds. */
	tu_tp(&r, 30, "export", "x1", "--db", db, "--format", "csv", NULL);
	for (const char *p = r.out; p && (p = strchr(p, '\n')); p++)
		rows++;
	{
		struct tu_result s;

		tu_tp(&s, 30, "series", "x1", "--db", db, "--json", NULL);
		ASSERT_EQ(rows - 1, tu_num(tu_parse_json(s.out), "samples"), "a row per sample");
	}
	ASSERT_TRUE(strstr(r.out, ",compile.c\n") != NULL, "a sample's phase by its name");
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
	ASSERT_TRUE(strstr(r.err, "taskprobe: export: --format is chrome-trace") != NULL,
		    "one line");
	tu_tp(&r, 30, "export", "nosuch", "--db", db, "--format", "json", NULL);
	ASSERT_EQ(r.status, 1, "an unknown task");
}
