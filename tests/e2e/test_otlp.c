// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests of the OTLP export to a collector (otlp_endpoint): a stand-in
 * OTLP/HTTP receiver on loopback (tests/helpers/otlp_receiver.js) keeps each request
 * and answers as the test says; what it got is decoded strictly with the official
 * definitions (tests/helpers/check_otlp.js) and checked against the stored records.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

#define TOKEN "Bearer otlp-test-9f2c41"

/*
 * The receiver on port, keeping requests in dir, answering codes ("" : 200s), over
 * https with cert and key (NULL: http); 0 if it does not listen.
 */
static pid_t receiver_tls(int port, const char *dir, const char *codes, const char *cert,
			  const char *key)
{
	char p[16], ready[4200];
	pid_t pid;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	unlink(ready);
	pid = tu_spawn((char *[]){ "node", "tests/helpers/otlp_receiver.js", p, (char *)dir,
				   (char *)codes, (char *)cert, (char *)key, NULL });
	if (pid <= 0)
		return 0;
	tu_track_pid(pid);
	for (int i = 0; i < 500 && access(ready, F_OK); i++)
		usleep(20000);
	return access(ready, F_OK) ? 0 : pid;
}

static pid_t receiver(int port, const char *dir, const char *codes)
{
	return receiver_tls(port, dir, codes, NULL, NULL);
}

static void receiver_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* The requests the receiver kept of kind ("traces", "metrics"), in order: how many. */
static int kept(const char *dir, const char *kind, char names[][64], int max)
{
	struct dirent **ents;
	char suffix[32];
	int n = scandir(dir, &ents, NULL, alphasort), got = 0;

	snprintf(suffix, sizeof(suffix), "-%s.json", kind);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name);

		if (len > strlen(suffix) &&
		    !strcmp(ents[i]->d_name + len - strlen(suffix), suffix) && got < max)
			snprintf(names[got++], 64, "%s", ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	return got;
}

/* The file dir/name's text ("" if none); the caller frees it. */
static char *text_of(const char *dir, const char *name)
{
	char path[4200], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (tp_slurp(path, "file", false, &text) < 0 || !text)
		return strdup("");
	return text;
}

/* The task id of a kept OTLP document ("" if none). */
static void doc_task(const char *dir, const char *name, char *id, size_t len)
{
	static const char key[] = "\"cicd.pipeline.task.run.id\",\"value\":{\"stringValue\":\"";
	char *text = text_of(dir, name), *p;

	id[0] = '\0';
	p = strstr(text, key);
	if (p) {
		p += strlen(key);
		snprintf(id, len, "%.*s", (int)strcspn(p, "\""), p);
	}
	free(text);
}

/* A kept document checked against task id's record (its JSON export): check_otlp.js's status. */
static int check_doc(const char *db, const char *dir, const char *name, const char *id,
		     bool metrics)
{
	char path[4200], rec[4200];
	struct tu_result r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(rec, sizeof(rec), "%s/rec-%s.json", dir, id);
	tu_tp(&r, 30, "export", id, "--db", db, "--format", "json", "-o", rec, NULL);
	if (r.status) {
		fprintf(stderr, "    export %s: %s", id, r.err ? r.err : "");
		return -1;
	}
	if (metrics)
		tu_run((char *[]){ "node", "tests/helpers/check_otlp.js", "--metrics", path, rec,
				   "cicd.pipeline.task.name=otlp-job", NULL },
		       &r, 60);
	else
		tu_run((char *[]){ "node", "tests/helpers/check_otlp.js", path, rec,
				   "cicd.pipeline.task.name=otlp-job", NULL },
		       &r, 60);
	if (r.status)
		fprintf(stderr, "    %s: %s%s", name, r.out ? r.out : "", r.err ? r.err : "");
	return r.status;
}

static void write_config(const char *conf, const char *db, int port, const char *headers,
			 bool metrics)
{
	char text[8192];

	snprintf(text, sizeof(text),
		 "db = %s\n"
		 "otlp_endpoint = http://127.0.0.1:%d/\n"
		 "otlp_headers_file = %s\n"
		 "otlp_metrics = %s\n"
		 "otlp_attribute cicd.pipeline.task.name = job\n",
		 db, port, headers, metrics ? "true" : "false");
	tu_write_file(conf, text);
}

/*
 * Injected: the collector is down while two runs end, then answers 503 (retryable) to
 * the first request, then refuses a third task with 400.
 * Recovered: each run kept its exit status and said one line; both tasks waited and
 * doctor showed them; the 503 left them waiting; the next `ship` sent each once, the
 * trace and the metrics, checked whole against the records, with the headers file's
 * token; the refused task stayed stored, counted, and `ship --refused` sent it.
 */
TEST(TIER_E2E, otlp_tasks_reach_a_collector_that_was_down)
{
	const char *db = tu_tmp("otlp.db"), *conf = tu_tmp("otlp.conf"), *hdr = tu_tmp("otlp.h");
	const char *dir = tu_tmp("collector"), *dir2 = tu_tmp("collector-2");
	char names[16][64], id[64], *text;
	int port = tu_free_port();
	struct tu_result r;
	pid_t rcv;

	mkdir(dir, 0700);
	mkdir(dir2, 0700);
	tu_write_file(hdr,
		      "# the collector's token\nAuthorization: " TOKEN "\n\nX-Scope-OrgID: ci\n");
	chmod(hdr, 0644);
	write_config(conf, db, port, hdr, true);
	/* This test's own store (each test runs in a process of its own). */
	setenv("TASKPROBE_DB", db, 1);
	/* A headers file others can read is refused: it holds a secret. */
	tu_tp(&r, 60, "run", "--quiet", "--id", "o0", "--config", conf, "--", "true", NULL);
	ASSERT_EQ(r.status, 0, "a run with a bad headers file");
	CHECK(r.err && strstr(r.err, "readable by group or others") && !strstr(r.err, "otlp-test"),
	      "one line, no secret: %s", r.err ? r.err : "");
	chmod(hdr, 0600);

	tu_tp(&r, 60, "run", "--quiet", "--id", "o1", "--label", "job=otlp-job", "--config", conf,
	      "--", "sh", "-c", "echo BEGIN_PHASE build; ls / >/dev/null; echo END_PHASE build",
	      NULL);
	ASSERT_EQ(r.status, 0, "the run while the collector is down");
	CHECK(r.err && strstr(r.err, "taskprobe: otlp_endpoint http://127.0.0.1:") &&
		      strstr(r.err, "kept locally"),
	      "one line says it waits: %s", r.err ? r.err : "");
	tu_tp(&r, 60, "run", "--quiet", "--id", "o2", "--label", "job=otlp-job", "--config", conf,
	      "--", "sh", "-c", "exit 3", NULL);
	ASSERT_EQ(r.status, 3, "a failing task keeps its exit status");
	tu_tp(&r, 30, "doctor", "--json", "--config", conf, NULL);
	CHECK(r.out && strstr(r.out, "Couldn't connect to server; 3 waiting, 0 refused, 0 sent"),
	      "doctor shows the backlog: %s", r.out ? r.out : "");

	rcv = receiver(port, dir, "503");
	if (!ASSERT_TRUE(rcv > 0, "the receiver listens"))
		return;
	tu_tp(&r, 60, "ship", "--config", conf, NULL);
	ASSERT_EQ(r.status, 1, "ship: the collector answered 503");
	CHECK(r.err && strstr(r.err, "HTTP 503") && strstr(r.err, "3 tasks kept locally"),
	      "one line: %s", r.err ? r.err : "");
	tu_tp(&r, 60, "ship", "--config", conf, NULL);
	ASSERT_EQ(r.status, 0, "ship again");
	CHECK(r.out && strstr(r.out, "sent 3 tasks") && strstr(r.out, "0 waiting"),
	      "all three sent: %s", r.out ? r.out : "");
	/* The 503'd request, then each task's trace once, in order. */
	ASSERT_EQ(kept(dir, "traces", names, 16), 4, "four trace requests");
	ASSERT_EQ(kept(dir, "metrics", names, 16), 3, "a metrics request a task");
	kept(dir, "traces", names, 16);
	for (int i = 1; i < 4; i++) {
		doc_task(dir, names[i], id, sizeof(id));
		ASSERT_STREQ(id, i == 1 ? "o0" : i == 2 ? "o1" : "o2", "each task once, in order");
		if (strcmp(id, "o0"))
			ASSERT_EQ(check_doc(db, dir, names[i], id, false), 0,
				  "the trace against the record");
	}
	kept(dir, "metrics", names, 16);
	for (int i = 1; i < 3; i++) {
		doc_task(dir, names[i], id, sizeof(id));
		ASSERT_EQ(check_doc(db, dir, names[i], id, true), 0,
			  "the metrics against the record");
	}
	text = text_of(dir, "002.headers.json");
	CHECK(strstr(text, "\"authorization\":\"" TOKEN "\"") &&
		      strstr(text, "\"x-scope-orgid\":\"ci\"") &&
		      strstr(text, "\"content-type\":\"application/json\""),
	      "the headers file's headers: %s", text);
	free(text);
	receiver_stop(rcv);

	/* A collector that refuses the data (400): kept, counted, sent again on demand. */
	rcv = receiver(port, dir2, "400");
	if (!ASSERT_TRUE(rcv > 0, "the receiver again"))
		return;
	tu_tp(&r, 60, "run", "--quiet", "--id", "o3", "--label", "job=otlp-job", "--config", conf,
	      "--", "true", NULL);
	ASSERT_EQ(r.status, 0, "a run the collector refuses");
	CHECK(r.err && strstr(r.err, "the collector refused 1 task") && strstr(r.err, "HTTP 400"),
	      "one line: %s", r.err ? r.err : "");
	tu_tp(&r, 30, "doctor", "--json", "--config", conf, NULL);
	CHECK(r.out && strstr(r.out, "answers; 0 waiting, 1 refused, 3 sent"),
	      "doctor counts it: %s", r.out ? r.out : "");
	tu_tp(&r, 60, "ship", "--refused", "--config", conf, NULL);
	ASSERT_EQ(r.status, 0, "ship --refused");
	CHECK(r.out && strstr(r.out, "1 task the collector refused waits again") &&
		      strstr(r.out, "sent 1 task"),
	      "sent again: %s", r.out ? r.out : "");
	/* The refused one, doctor's probe (an empty export: no data), the one sent again. */
	ASSERT_EQ(kept(dir2, "traces", names, 16), 3, "three requests");
	text = text_of(dir2, names[1]);
	ASSERT_STREQ(text, "{}", "doctor's probe is an empty export");
	free(text);
	doc_task(dir2, names[2], id, sizeof(id));
	ASSERT_STREQ(id, "o3", "the refused task");
	ASSERT_EQ(check_doc(db, dir2, names[2], id, false), 0, "the trace against the record");
	receiver_stop(rcv);
}

/*
 * Injected: the daemon's collector is down while two tasks end, then comes back.
 * Recovered: /metrics shows the backlog of 2 and the last error; the shipper retries
 * on its own after its backoff and sends each task once; the backlog is 0 again.
 */
TEST(TIER_E2E, otlp_daemon_sends_and_shows_its_backlog)
{
	const char *db = tu_tmp("otlpd.db"), *conf = tu_tmp("otlpd.conf"), *hdr = tu_tmp("otlpd.h");
	const char *dir = tu_tmp("collector-d"), *sock = tu_tmp("otlpd.sock");
	char listen[64], cmd[8192], names[16][64], id[64];
	int port = tu_free_port(), hport = tu_free_port();
	struct tu_result r;
	const char *m = "";
	pid_t d, rcv;

	mkdir(dir, 0700);
	tu_write_file(hdr, "Authorization: " TOKEN "\n");
	chmod(hdr, 0600);
	write_config(conf, db, port, hdr, false);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", hport);
	snprintf(cmd, sizeof(cmd), "exec %s daemon --config %s --socket=%s --listen=%s 2>%s",
		 tu_bin(), conf, sock, listen, tu_tmp("otlpd.log"));
	/* Runs go through the daemon, to its store (a TASKPROBE_DB would embed a collector). */
	unsetenv("TASKPROBE_DB");
	d = tu_spawn((char *[]){ "/bin/sh", "-c", cmd, NULL });
	tu_track_pid(d);
	for (int i = 0; i < 1000 && access(sock, F_OK); i++)
		usleep(10000);
	if (!ASSERT_OK(access(sock, F_OK), "the daemon listens"))
		return;
	setenv("TASKPROBE_CONTROL", sock, 1);
	for (int i = 0; i < 2; i++) {
		snprintf(id, sizeof(id), "od-%d", i);
		tu_tp(&r, 60, "run", "--quiet", "--id", id, "--label", "job=otlp-job", "--", "true",
		      NULL);
		ASSERT_EQ(r.status, 0, "a run through the daemon, the collector down");
	}
	unsetenv("TASKPROBE_CONTROL");
	for (int i = 0; i < 200; i++) {
		m = tu_metrics_of(hport, &r);
		if (tu_prom_value(m, "taskprobe_otlp_backlog_tasks") == 2 &&
		    strstr(m, "taskprobe_otlp_last_error_info{"))
			break;
		usleep(50000);
	}
	ASSERT_EQ(tu_prom_value(m, "taskprobe_otlp_backlog_tasks"), 2, "/metrics: the backlog");
	ASSERT_EQ(tu_prom_value(m, "taskprobe_otlp_shipped_total"), 0, "/metrics: none sent");
	CHECK(strstr(m, "taskprobe_otlp_last_error_info{otlp=\"http://127.0.0.1:") &&
		      strstr(m, "connect"),
	      "/metrics: the last error: %s", m);
	CHECK(!strstr(m, "otlp-test-9f2c41"), "/metrics has no token");

	rcv = receiver(port, dir, "");
	if (!ASSERT_TRUE(rcv > 0, "the collector is back"))
		return;
	/*
	 * The shipper retries on its own, after its backoff (at most 60 s). A round marks
	 * each task shipped as it goes and adds to the shipped count at its end: a scrape
	 * between the two sees the backlog gone and nothing counted yet.
	 */
	for (int i = 0; i < 1400; i++) {
		m = tu_metrics_of(hport, &r);
		if (tu_prom_value(m, "taskprobe_otlp_backlog_tasks") == 0 &&
		    tu_prom_value(m, "taskprobe_otlp_shipped_total") == 2)
			break;
		usleep(50000);
	}
	ASSERT_EQ(tu_prom_value(m, "taskprobe_otlp_backlog_tasks"), 0, "/metrics: no backlog");
	ASSERT_EQ(tu_prom_value(m, "taskprobe_otlp_shipped_total"), 2, "/metrics: two sent");
	ASSERT_EQ(kept(dir, "traces", names, 16), 2, "each task's trace once");
	for (int i = 0; i < 2; i++) {
		doc_task(dir, names[i], id, sizeof(id));
		ASSERT_EQ(check_doc(db, dir, names[i], id, false), 0,
			  "the trace against the record");
	}
	ASSERT_EQ(kept(dir, "metrics", names, 16), 0, "no metrics: otlp_metrics is off");
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	receiver_stop(rcv);
}

/*
 * Injected: a collector over https whose certificate a CA of the test's own signed
 * (made now, for 127.0.0.1); first without otlp_ca_file, then with it.
 * Recovered: without it the certificate is refused, in one line, and the task waits;
 * with it, that task and the next are sent, each checked against its record.
 */
TEST(TIER_E2E, otlp_over_https_with_a_private_ca)
{
	const char *db = tu_tmp("otlps.db"), *conf = tu_tmp("otlps.conf"), *dir = tu_tmp("tls");
	const char *ca = tu_tmp("ca.pem"), *cert = tu_tmp("srv.pem"), *key = tu_tmp("srv.key");
	char script[8192], text[8192], names[8][64], id[64];
	int port = tu_free_port();
	struct tu_result r;
	pid_t rcv;

	mkdir(dir, 0700);
	snprintf(script, sizeof(script),
		 "set -e; cd %s; printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext;"
		 " openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=taskprobe-test-ca"
		 " -keyout ca.key -out %s 2>/dev/null;"
		 " openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout %s -out srv.csr"
		 " 2>/dev/null;"
		 " openssl x509 -req -in srv.csr -CA %s -CAkey ca.key -CAcreateserial -days 1"
		 " -extfile san.ext -out %s 2>/dev/null",
		 dir, ca, key, ca, cert);
	tu_run((char *[]){ "sh", "-c", script, NULL }, &r, 60);
	if (!ASSERT_EQ(r.status, 0, "a CA and a certificate for 127.0.0.1, made now"))
		return;
	rcv = receiver_tls(port, dir, "", cert, key);
	if (!ASSERT_TRUE(rcv > 0, "the https receiver listens"))
		return;
	snprintf(text, sizeof(text),
		 "db = %s\notlp_endpoint = https://127.0.0.1:%d\n"
		 "otlp_attribute cicd.pipeline.task.name = job\n",
		 db, port);
	tu_write_file(conf, text);
	tu_tp(&r, 60, "run", "--quiet", "--id", "s1", "--db", db, "--label", "job=otlp-job",
	      "--config", conf, "--", "true", NULL);
	ASSERT_EQ(r.status, 0, "a run, the collector's CA unknown");
	CHECK(r.err && strstr(r.err, "otlp_endpoint https://127.0.0.1:") &&
		      strstr(r.err, "kept locally") && strstr(r.err, "certificate"),
	      "one line: the certificate refused: %s", r.err ? r.err : "");
	ASSERT_EQ(kept(dir, "traces", names, 8), 0, "nothing reached the collector");

	snprintf(text + strlen(text), sizeof(text) - strlen(text), "otlp_ca_file = %s\n", ca);
	tu_write_file(conf, text);
	tu_tp(&r, 60, "run", "--quiet", "--id", "s2", "--db", db, "--label", "job=otlp-job",
	      "--config", conf, "--", "true", NULL);
	ASSERT_EQ(r.status, 0, "a run, the collector's CA given");
	/* The first waited out its backoff: ship sends it now, whatever the backoff. */
	tu_tp(&r, 60, "ship", "--db", db, "--config", conf, NULL);
	ASSERT_EQ(r.status, 0, "ship");
	ASSERT_EQ(kept(dir, "traces", names, 8), 2, "both tasks sent over https");
	for (int i = 0; i < 2; i++) {
		doc_task(dir, names[i], id, sizeof(id));
		ASSERT_EQ(check_doc(db, dir, names[i], id, false), 0,
			  "the trace against the record");
	}
	receiver_stop(rcv);
}
