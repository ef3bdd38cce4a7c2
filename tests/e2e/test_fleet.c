// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests of the fleet store: hosts (UTS namespaces with their own names and
 * local stores) ship to one PostgreSQL of the test's own, and the fleet's answers are
 * the hosts' answers added up, whatever the sink did meanwhile.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "compare_data.h"
#include "harness.h"
#include "store/store.h"
#include "testutil.h"

/* The ports a connect to which is an HTTP failure: one nothing listens on. */
#define DEAD_HTTP_PORT "29998"

struct host {
	const char *name;
	char db[512];
	char conf[512];
};

struct lab {
	const char *dir;
	int port;
	char conninfo[512]; /* the unix socket, keyword form */
	char uri[256];	    /* 127.0.0.1:port, URI form */
	char pw[128];
};

static bool lab_up(struct lab *l)
{
	char path[600];

	memset(l, 0, sizeof(*l));
	/* Each host's store is its config's db. */
	unsetenv("TASKPROBE_DB");
	l->dir = tu_pglab(&l->port);
	if (!l->dir)
		return false;
	snprintf(l->conninfo, sizeof(l->conninfo), "host=%s/sock port=%d user=tp dbname=fleet",
		 l->dir, l->port);
	snprintf(l->uri, sizeof(l->uri), "postgresql://tp@127.0.0.1:%d/fleet", l->port);
	snprintf(path, sizeof(path), "%s/pw", l->dir);
	return tp_read_file(path, l->pw, sizeof(l->pw)) > 0;
}

/* A worker host: its own store and config, the lab its sink (the lab's pgpass unless given). */
static void host_init(struct host *h, const struct lab *l, const char *name, const char *type,
		      const char *passfile, const char *sink)
{
	char text[2048], pass[600];

	h->name = name;
	snprintf(h->db, sizeof(h->db), "%s.db", tu_tmp(name));
	snprintf(h->conf, sizeof(h->conf), "%s.conf", tu_tmp(name));
	snprintf(pass, sizeof(pass), "%s/pgpass", l->dir);
	snprintf(text, sizeof(text),
		 "db = %s\ninstance_type = %s\nhttp_ports = 80,443," DEAD_HTTP_PORT "\n"
		 "sink = %s\nsink_passfile = %s\n",
		 h->db, type, sink ? sink : l->conninfo, passfile ? passfile : pass);
	tu_write_file(h->conf, text);
}

/*
 * `taskprobe ARGS...` on host h: in a UTS namespace named after it, with its config.
 * The task runs n /bin/true and makes fails refused connects to the HTTP port.
 */
static void on_host(const struct host *h, struct tu_result *r, char *const args[])
{
	char *argv[40];
	int n = 0;

	argv[n++] = "unshare";
	argv[n++] = "-u";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = "hostname \"$0\" && exec \"$@\"";
	argv[n++] = (char *)h->name;
	argv[n++] = (char *)tu_bin();
	for (int i = 0; args[i] && n < 38; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_run(argv, r, 120);
}

static int run_task(const struct host *h, const char *id, int n, int fails, struct tu_result *r)
{
	char script[256];

	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done; i=0;"
		 " while [ $i -lt %d ]; do (exec 3<>/dev/tcp/127.0.0.1/" DEAD_HTTP_PORT
		 ") 2>/dev/null; i=$((i+1)); done; true",
		 n, fails);
	on_host(h, r,
		(char *[]){ "run", "--quiet", "--config", (char *)h->conf, "--id", (char *)id,
			    "--label", "job=fleet", "--", "bash", "-c", script, NULL });
	return r->status;
}

/* `count METRIC --json [--by B] [--host G]` over db: the total sum and tasks. */
static bool count(const char *db, const char *conf, const char *metric, const char *by,
		  const char *host, double *sum, double *tasks, const struct json **res)
{
	char *argv[20];
	struct tu_result r;
	int n = 0;
	const struct json *j;

	argv[n++] = (char *)tu_bin();
	argv[n++] = "count";
	argv[n++] = (char *)metric;
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = "--config";
	argv[n++] = (char *)conf;
	argv[n++] = "--json";
	if (by) {
		argv[n++] = "--by";
		argv[n++] = (char *)by;
	}
	if (host) {
		argv[n++] = "--host";
		argv[n++] = (char *)host;
	}
	argv[n] = NULL;
	tu_run(argv, &r, 60);
	if (!CHECK(r.status == 0, "count %s over %s: %d %s", metric, db, r.status, r.err))
		return false;
	j = tu_parse_json(r.out);
	if (!j)
		return false;
	*sum = tu_num(j, "sum");
	*tasks = tu_num(j, "tasks");
	if (res)
		*res = j;
	return true;
}

static long psql_num(const struct lab *l, const char *sql)
{
	struct tu_result r;

	tu_psql(l->dir, sql, &r);
	if (!CHECK(r.status == 0, "psql %s: %s", sql, r.err))
		return -1;
	return atol(r.out);
}

static double group_sum(const struct json *res, const char *value)
{
	const struct json *g = tu_find(json_get(res, "groups"), "value", value);

	return g ? tu_num(g, "sum") : -1;
}

TEST(TIER_E2E, fleet_count_is_the_sum_of_the_hosts)
{
	struct host a, b;
	struct lab l;
	struct tu_result r;
	double fa, ta, fb, tb, ff, tf;
	const struct json *res;
	static const char *const metrics[] = { "proc.execs", "cpu.time_ns", "http.failures" };

	if (!lab_up(&l))
		return;
	host_init(&a, &l, "worker-a", "m5.large", NULL, NULL);
	host_init(&b, &l, "worker-b", "c5.xlarge", NULL, NULL);
	ASSERT_EQ(run_task(&a, "a-1", 2, 1, &r), 0, "a-1");
	ASSERT_EQ(run_task(&a, "a-2", 3, 0, &r), 0, "a-2");
	ASSERT_EQ(run_task(&a, "a-3", 4, 2, &r), 0, "a-3");
	ASSERT_EQ(run_task(&b, "b-1", 5, 3, &r), 0, "b-1");
	ASSERT_EQ(run_task(&b, "b-2", 6, 0, &r), 0, "b-2");
	ASSERT_STREQ(r.err, "", "a run that ships says nothing");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 5, "every task shipped");

	/* Ground truth first: each task execs bash and its n /bin/true. */
	ASSERT_TRUE(count(a.db, a.conf, "proc.execs", NULL, NULL, &fa, &ta, NULL), "a execs");
	ASSERT_EQ(fa, 3 + 4 + 5, "host a's execs");
	ASSERT_TRUE(count(b.db, b.conf, "proc.execs", NULL, NULL, &fb, &tb, NULL), "b execs");
	ASSERT_EQ(fb, 6 + 7, "host b's execs");

	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++) {
		const char *host = !strcmp(metrics[i], "http.failures") ? "127.0.0.*" : NULL;

		if (!count(a.db, a.conf, metrics[i], NULL, host, &fa, &ta, NULL) ||
		    !count(b.db, b.conf, metrics[i], NULL, host, &fb, &tb, NULL) ||
		    !count(l.conninfo, a.conf, metrics[i], NULL, host, &ff, &tf, NULL))
			return;
		CHECK(ff == fa + fb, "%s: fleet %.0f, hosts %.0f + %.0f", metrics[i], ff, fa, fb);
		CHECK(tf == ta + tb, "%s tasks: fleet %.0f, hosts %.0f + %.0f", metrics[i], tf, ta,
		      tb);
		/* By host and by instance type: each group is its host's own total. */
		if (!count(l.conninfo, a.conf, metrics[i], "host", host, &ff, &tf, &res))
			return;
		CHECK(group_sum(res, "worker-a") == fa && group_sum(res, "worker-b") == fb,
		      "%s by host: %.0f and %.0f, hosts %.0f and %.0f", metrics[i],
		      group_sum(res, "worker-a"), group_sum(res, "worker-b"), fa, fb);
		if (!count(l.conninfo, a.conf, metrics[i], "instance_type", host, &ff, &tf, &res))
			return;
		CHECK(group_sum(res, "m5.large") == fa && group_sum(res, "c5.xlarge") == fb,
		      "%s by instance_type", metrics[i]);
	}
	ASSERT_EQ(fa, 3, "host a's HTTP failures, counted by the test");
	ASSERT_EQ(fb, 3, "host b's");
	/* --host on a worker metric: the worker's name, a glob. */
	ASSERT_TRUE(count(l.conninfo, a.conf, "proc.execs", NULL, "worker-[b]", &ff, &tf, NULL),
		    "--host worker-[b]");
	ASSERT_EQ(ff, 13, "--host worker-[b]: host b's execs");
	ASSERT_TRUE(count(l.conninfo, a.conf, "http.failures", NULL, "10.*", &ff, &tf, NULL),
		    "--host 10.*");
	ASSERT_EQ(tf, 0, "no task talked to 10.*");

	/* The other queries answer from the fleet as they do locally. */
	tu_tp(&r, 60, "list", "--db", l.uri, "--config", a.conf, "--json", NULL);
	ASSERT_EQ(r.status, 0, "list over TCP");
	res = tu_parse_json(r.out);
	ASSERT_EQ(json_len(res), 5, "list: every host's tasks");
	ASSERT_STREQ(json_str(json_at(res, 0), "id"), "b-2", "newest first");
	tu_tp(&r, 60, "list", "--db", l.uri, "--config", a.conf, "--label", "host=worker-a",
	      "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 3, "list --label host=worker-a");
	{
		struct tu_result local;

		tu_tp(&local, 60, "show", "a-3", "--db", a.db, "--json", NULL);
		tu_tp(&r, 60, "show", "a-3", "--db", l.conninfo, "--config", a.conf, "--json",
		      NULL);
		ASSERT_EQ(r.status, 0, "show from the fleet");
		ASSERT_STREQ(r.out, local.out, "show --json: the record as the host stored it");
		tu_tp(&local, 60, "hist", "a-3", "--db", a.db, "--json", NULL);
		tu_tp(&r, 60, "hist", "a-3", "--db", l.conninfo, "--config", a.conf, "--json",
		      NULL);
		ASSERT_STREQ(r.out, local.out, "hist --json");
		tu_tp(&local, 60, "series", "b-1", "--db", b.db, "--points", "7", "--json", NULL);
		tu_tp(&r, 60, "series", "b-1", "--db", l.conninfo, "--config", a.conf, "--points",
		      "7", "--json", NULL);
		ASSERT_STREQ(r.out, local.out, "series --json: the same blocks");
		tu_tp(&local, 60, "show", "b-1", "--db", b.db, NULL);
		tu_tp(&r, 60, "show", "b-1", "--db", l.conninfo, "--config", a.conf, NULL);
		ASSERT_STREQ(r.out, local.out, "show: the same summary");
		tu_tp(&local, 60, "export", "b-1", "--format", "csv", "--db", b.db, NULL);
		tu_tp(&r, 60, "export", "b-1", "--format", "csv", "--db", l.conninfo, "--config",
		      a.conf, NULL);
		ASSERT_EQ(r.status, 0, "export from the fleet");
		ASSERT_STREQ(r.out, local.out, "export --format csv: the same series");
	}
	tu_tp(&r, 60, "show", "no-such", "--db", l.conninfo, "--config", a.conf, NULL);
	ASSERT_EQ(r.status, 1, "an unknown id in the fleet");
	tu_tp(&r, 60, "count", "no.such.metric", "--db", l.conninfo, "--config", a.conf, NULL);
	ASSERT_EQ(r.status, 1, "an unknown metric in the fleet");
	tu_tp(&r, 60, "list", "--db", l.conninfo, "--config", a.conf, "--json", NULL);
	res = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(tu_find(res, "id", "a-3"), "host"), "worker-a", "list: a-3's host");
	ASSERT_STREQ(json_str(tu_find(res, "id", "b-1"), "host"), "worker-b", "list: b-1's host");
	tu_tp(&r, 60, "list", "--db", l.conninfo, "--config", a.conf, NULL);
	CHECK(!strncmp(r.out, "HOST ", 5) && strstr(r.out, "\nworker-b ") &&
		      strstr(r.out, "\nworker-a "),
	      "a fleet's list has a HOST column: %s", r.out);
	tu_tp(&r, 60, "list", "--db", a.db, NULL);
	CHECK(!strncmp(r.out, "ID ", 3), "a host's list has none: %s", r.out);
}

/* `show ID --json [--host H]` over db: the task's proc.execs, its stderr in r. */
static double show_execs(const char *db, const char *conf, const char *id, const char *host,
			 struct tu_result *r)
{
	char *argv[] = { (char *)tu_bin(), "show",     (char *)id,
			 "--db",	   (char *)db, "--config",
			 (char *)conf,	   "--json",   host ? "--host" : NULL,
			 (char *)host,	   NULL };
	const struct json *j;

	tu_run(argv, r, 60);
	j = r->status ? NULL : tu_parse_json(r->out);
	return j ? tu_num(json_get(j, "metrics"), "proc.execs") : -1;
}

/* Default ids are unique per host only: a fleet tells the hosts' tasks apart. */
TEST(TIER_E2E, fleet_hosts_reusing_an_id_are_told_apart)
{
	struct host a, b;
	struct lab l;
	struct tu_result r, local;

	if (!lab_up(&l))
		return;
	host_init(&a, &l, "worker-a", "m5.large", NULL, NULL);
	host_init(&b, &l, "worker-b", "c5.xlarge", NULL, NULL);
	ASSERT_EQ(run_task(&a, "dup", 1, 0, &r), 0, "dup on a: bash and 1 /bin/true");
	ASSERT_EQ(run_task(&b, "dup", 2, 0, &r), 0, "dup on b: bash and 2 /bin/true");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks WHERE id = 'dup'"), 2,
		  "two tasks, one id");

	ASSERT_EQ(show_execs(l.conninfo, a.conf, "dup", NULL, &r), 3, "show dup: b's, the newest");
	ASSERT_STREQ(r.err,
		     "taskprobe: 2 hosts have a task 'dup': this is worker-b's, the newest; "
		     "--host NAME picks another\n",
		     "one line says whose it is");
	ASSERT_EQ(show_execs(l.conninfo, a.conf, "dup", "worker-a", &r), 2, "show dup --host a");
	ASSERT_STREQ(r.err, "", "a host chosen: nothing to say");
	tu_tp(&local, 60, "show", "dup", "--db", a.db, "--json", NULL);
	ASSERT_STREQ(r.out, local.out, "--host worker-a: a's record as a stored it");
	ASSERT_EQ(show_execs(l.conninfo, a.conf, "dup", "*-[b]", &r), 3, "a glob picks b's");
	ASSERT_EQ(show_execs(l.conninfo, a.conf, "dup", "worker-c", &r), -1, "no such host");
	ASSERT_EQ(r.status, 1, "an unknown host's task is a runtime failure");
	CHECK(strstr(r.err, "no stored task 'dup' of a host 'worker-c'") != NULL, "says so: %s",
	      r.err);
	ASSERT_EQ(show_execs(a.db, a.conf, "dup", NULL, &r), 2, "locally: a's own");
	ASSERT_STREQ(r.err, "", "one host: nothing to say");
	ASSERT_EQ(show_execs(a.db, a.conf, "dup", "worker-b", &r), -1, "locally, not b's");

	/* The other per-task commands take --host alike. */
	tu_tp(&local, 60, "hist", "dup", "--db", a.db, "--json", NULL);
	tu_tp(&r, 60, "hist", "dup", "--db", l.conninfo, "--config", a.conf, "--host", "worker-a",
	      "--json", NULL);
	ASSERT_STREQ(r.out, local.out, "hist --host");
	tu_tp(&local, 60, "export", "dup", "--format", "csv", "--db", a.db, NULL);
	tu_tp(&r, 60, "export", "dup", "--format", "csv", "--db", l.conninfo, "--config", a.conf,
	      "--host", "worker-a", NULL);
	ASSERT_STREQ(r.out, local.out, "export --host");
	tu_tp(&r, 60, "series", "dup", "--db", l.conninfo, "--config", a.conf, "--host", "w[",
	      NULL);
	ASSERT_EQ(r.status, 2, "a bad glob is a usage error");
}

/* The one number of a query over a local store, or -1. */
static long local_num(const char *db, const char *sql)
{
	sqlite3 *s;
	sqlite3_stmt *st;
	long n = -1;

	if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(s);
	return n;
}

/* The local outbox: tasks waiting for the sink, by the store's own column. */
static long waiting(const char *db)
{
	return local_num(db, "SELECT COUNT(*) FROM tasks WHERE ship = 1");
}

/*
 * The lab and host h with one task shipped (the schema made), then the sink stopped
 * for n tasks named PREFIX-i (each making fails refused connects), and started again
 * unless keep_stopped. Every run must end as usual and say, in one line, that its
 * task waits.
 */
static bool tasks_while_away(struct lab *l, struct host *h, const char *prefix, int n, int fails,
			     bool keep_stopped)
{
	struct tu_result r;
	char id[32];

	if (!lab_up(l))
		return false;
	host_init(h, l, "worker-a", "m5.large", NULL, NULL);
	if (!ASSERT_EQ(run_task(h, "before", 1, 0, &r), 0, "a task before the outage") ||
	    !ASSERT_OK(tu_pglab_ctl(l->dir, "stop"), "PostgreSQL stopped"))
		return false;
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d", prefix, i);
		ASSERT_EQ(run_task(h, id, 2, fails, &r), 0, "a task ends as usual");
		CHECK(strstr(r.err, "kept locally") && strchr(r.err, '\n') == strrchr(r.err, '\n'),
		      "one line says the task waits: %s", r.err);
	}
	return keep_stopped || !tu_pglab_ctl(l->dir, "start");
}

static int ship(const struct host *h, struct tu_result *r)
{
	on_host(h, r, (char *[]){ "ship", "--config", (char *)h->conf, NULL });
	return r->status;
}

TEST(TIER_E2E, fleet_outage_keeps_tasks_and_ships_each_once)
{
	struct tu_result r;
	struct host a;
	struct lab l;

	if (!tasks_while_away(&l, &a, "during", 4, 0, true))
		return;
	ASSERT_EQ(waiting(a.db), 4, "four tasks in the outbox");
	tu_tp(&r, 30, "doctor", "--json", "--config", a.conf, NULL);
	ASSERT_TRUE(strstr(r.out, "; 4 waiting") != NULL, "doctor shows the backlog");
	CHECK(strstr(r.out, "/fleet: cannot connect: ") != NULL, "doctor tried it now: %s", r.out);
	ASSERT_TRUE(strstr(r.out, "last error: cannot connect") != NULL,
		    "doctor shows the last error");
	/* Retention never takes a waiting task, even one past retain_days. */
	{
		sqlite3 *s;

		ASSERT_TRUE(sqlite3_open(a.db, &s) == SQLITE_OK, "open the local store");
		sqlite3_exec(s,
			     "UPDATE tasks SET start_ns = start_ns - 400 * 86400000000000"
			     " WHERE id IN ('before', 'during-0')",
			     NULL, NULL, NULL);
		sqlite3_close(s);
	}
	ASSERT_EQ(run_task(&a, "during-4", 2, 0, &r), 0, "one more, with retention");
	tu_tp(&r, 30, "list", "--db", a.db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 5,
		  "the shipped old task went, waiting ones stay");
	ASSERT_TRUE(!tu_find(tu_parse_json(r.out), "id", "before"), "'before' was retired");
	ASSERT_TRUE(tu_find(tu_parse_json(r.out), "id", "during-0") != NULL,
		    "old but waiting: kept");

	ASSERT_OK(tu_pglab_ctl(l.dir, "start"), "PostgreSQL started again");
	ASSERT_EQ(ship(&a, &r), 0, "ship the backlog");
	CHECK(strstr(r.out, "shipped 5 tasks") != NULL, "five shipped: %s", r.out);
	ASSERT_EQ(waiting(a.db), 0, "the outbox is empty");
	ASSERT_EQ(ship(&a, &r), 0, "ship again");
	CHECK(strstr(r.out, "shipped 0 tasks") != NULL, "nothing twice: %s", r.out);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 6, "every task once");
	ASSERT_EQ(psql_num(&l, "SELECT count(DISTINCT (host, id)) FROM taskprobe.tasks"), 6,
		  "no task twice");
	tu_tp(&r, 30, "doctor", "--json", "--config", a.conf, NULL);
	{
		const struct json *c =
			tu_find(json_get(tu_parse_json(r.out), "checks"), "name", "sink");

		CHECK(c && json_get(c, "ok")->b &&
			      strstr(json_str(c, "detail"), ": answers, schema 1; 0 waiting") &&
			      !strstr(json_str(c, "detail"), "error"),
		      "doctor: the sink is well again: %s", r.out);
	}
}

/* Waits (secs at most) until the SQL's one number is at least want. */
static bool wait_num_for(const struct lab *l, const char *sql, long want, int secs)
{
	__u64 end = tp_now_ns() + (__u64)secs * 1000000000ULL;

	while (tp_now_ns() < end) {
		if (psql_num(l, sql) >= want)
			return true;
		usleep(50000);
	}
	return false;
}

static bool wait_num(const struct lab *l, const char *sql, long want)
{
	return wait_num_for(l, sql, want, 20);
}

TEST(TIER_E2E, fleet_shipper_killed_mid_transaction_loses_nothing)
{
	struct tu_result r;
	struct host a;
	struct lab l;
	char ship_sh[1024];
	pid_t shipper;
	sqlite3 *s;

	if (!tasks_while_away(&l, &a, "t", 3, 1, false))
		return;
	snprintf(ship_sh, sizeof(ship_sh),
		 "exec unshare -u sh -c 'hostname worker-a && exec %s ship --config %s' >/dev/null",
		 tu_bin(), a.conf);

	/*
	 * 1. Killed inside its transaction, the task's row written (the transaction has an
	 * id): a trigger of the test's own holds the remote-host rows that come after it.
	 */
	tu_psql(l.dir,
		"CREATE FUNCTION public.hold() RETURNS trigger LANGUAGE plpgsql AS"
		" 'BEGIN PERFORM pg_sleep(30); RETURN NEW; END';"
		" CREATE TRIGGER hold BEFORE INSERT ON taskprobe.net FOR EACH ROW"
		" EXECUTE FUNCTION public.hold()",
		&r);
	CHECK(r.status == 0, "the test's trigger: %s", r.err);
	shipper = tu_spawn((char *[]){ "/bin/sh", "-c", ship_sh, NULL });
	ASSERT_TRUE(wait_num(&l,
			     "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
			     " 'taskprobe' AND wait_event = 'PgSleep' AND backend_xid IS NOT NULL",
			     1),
		    "the shipper waits inside its transaction, its task's row written");
	/* sh, unshare and sh exec: the pid is taskprobe's own. */
	kill(shipper, SIGKILL);
	waitpid(shipper, NULL, 0);
	/* A backend in pg_sleep notices its client gone only later: ended now. */
	tu_psql(l.dir,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name ="
		" 'taskprobe'",
		&r);
	ASSERT_TRUE(wait_num(&l,
			     "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
			     " 'taskprobe'",
			     0),
		    "the killed shipper's backend is gone");
	tu_psql(l.dir, "DROP TRIGGER hold ON taskprobe.net; DROP FUNCTION public.hold()", &r);
	CHECK(r.status == 0, "dropping the test's trigger: %s", r.err);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 1,
		  "the killed transaction left nothing");
	ASSERT_EQ(waiting(a.db), 3, "all three still wait");

	/* 2. Killed after the fleet committed, before the host marked the task shipped. */
	ASSERT_TRUE(sqlite3_open(a.db, &s) == SQLITE_OK, "open the local store");
	sqlite3_busy_timeout(s, 5000);
	ASSERT_TRUE(sqlite3_exec(s, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK,
		    "the test holds the local store's write lock");
	shipper = tu_spawn((char *[]){ "/bin/sh", "-c", ship_sh, NULL });
	ASSERT_TRUE(wait_num(&l, "SELECT count(*) FROM taskprobe.tasks", 2),
		    "the fleet committed a task");
	usleep(200000);
	kill(shipper, SIGKILL);
	waitpid(shipper, NULL, 0);
	tu_psql(l.dir,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name ="
		" 'taskprobe'",
		&r);
	sqlite3_exec(s, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(s);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 2,
		  "one task in the fleet, not marked here");
	ASSERT_EQ(ship(&a, &r), 0, "the shipper again");
	CHECK(strstr(r.out, "shipped 2 tasks") && strstr(r.out, "1 already there"),
	      "the rest shipped, the committed one found there: %s", r.out);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 4, "every task once");
	ASSERT_EQ(psql_num(&l, "SELECT count(DISTINCT id) FROM taskprobe.tasks"), 4,
		  "no duplicate");
	ASSERT_EQ(waiting(a.db), 0, "the outbox is empty");
	/* Whole: each task's figures in the fleet are the host's. */
	{
		double fa, ta, ff, tf;

		ASSERT_TRUE(
			count(a.db, a.conf, "proc.execs", NULL, NULL, &fa, &ta, NULL) &&
				count(l.conninfo, a.conf, "proc.execs", NULL, NULL, &ff, &tf, NULL),
			"counts");
		ASSERT_EQ(ff, fa, "execs: fleet and host");
		ASSERT_EQ(fa, 2 + 3 * 3, "execs: bash and its /bin/true in each task");
		ASSERT_TRUE(count(a.db, a.conf, "http.failures", NULL, "127.*", &fa, &ta, NULL) &&
				    count(l.conninfo, a.conf, "http.failures", NULL, "127.*", &ff,
					  &tf, NULL),
			    "counts");
		ASSERT_EQ(ff, 3, "HTTP failures in the fleet: one per task while away");
		ASSERT_EQ(fa, 3, "and on the host");
	}
}

static bool no_secret(const struct tu_result *r, const char *pw, const char *what)
{
	return CHECK(!strstr(r->out ? r->out : "", pw) && !strstr(r->err ? r->err : "", pw),
		     "%s: the password shows: %s %s", what, r->out, r->err);
}

static bool one_error_line(const struct tu_result *r, const char *has, const char *what)
{
	const char *e = r->err ? r->err : "";

	return CHECK(!strncmp(e, "taskprobe: ", 11) && strchr(e, '\n') == e + strlen(e) - 1 &&
			     strstr(e, has),
		     "%s: expected one line with '%s', got '%s'", what, has, e);
}

TEST(TIER_E2E, fleet_bad_sinks_say_one_line_and_never_the_password)
{
	char sink[512], wrongpass[600], text[1200], bad_uri[512];
	struct tu_result r;
	struct host a, w;
	struct lab l;

	if (!lab_up(&l))
		return;
	/* A password in the string: refused by the config, and by --db. */
	snprintf(sink, sizeof(sink), "postgresql://tp:%s@127.0.0.1:%d/fleet", l.pw, l.port);
	host_init(&a, &l, "worker-a", "m5.large", NULL, sink);
	ASSERT_EQ(run_task(&a, "pw", 1, 0, &r), 125, "a config with a password in the sink");
	one_error_line(&r, "holds a password", "run");
	no_secret(&r, l.pw, "run");
	tu_tp(&r, 30, "list", "--db", sink, NULL);
	ASSERT_EQ(r.status, 1, "--db with a password");
	one_error_line(&r, "holds a password", "list --db");
	no_secret(&r, l.pw, "list --db");
	snprintf(bad_uri, sizeof(bad_uri), "host=%s/sock user=tp password=%s junk", l.dir, l.pw);
	tu_tp(&r, 30, "count", "proc.execs", "--db", bad_uri, NULL);
	ASSERT_EQ(r.status, 1, "an unparsable string");
	one_error_line(&r, "not a valid connection string", "count --db");
	no_secret(&r, l.pw, "an unparsable string with a password in it");
	tu_tp(&r, 30, "list", "--db", "postgresql://tp@[::1/fleet", NULL);
	one_error_line(&r, "not a valid connection string", "a bad URI");
	host_init(&a, &l, "worker-a", "m5.large", NULL, "sink-of-nonsense");
	ASSERT_EQ(run_task(&a, "bad", 1, 0, &r), 125, "a sink that is no connection string");
	one_error_line(&r, ":4: sink: not a PostgreSQL connection string", "config");

	/* A wrong password (in its passfile): the task is kept, the sink named, once. */
	snprintf(wrongpass, sizeof(wrongpass), "%s", tu_tmp("wrong.pgpass"));
	tu_write_file(wrongpass, "*:*:*:tp:not-the-password-XYZZY\n");
	chmod(wrongpass, 0600);
	host_init(&w, &l, "worker-w", "m5.large", wrongpass, NULL);
	ASSERT_EQ(run_task(&w, "w-1", 1, 0, &r), 0, "the task ends as usual");
	one_error_line(&r, "password authentication failed", "wrong password");
	CHECK(strstr(r.err, "sink postgresql://tp@") != NULL, "names the sink: %s", r.err);
	no_secret(&r, "XYZZY", "wrong password");
	no_secret(&r, l.pw, "wrong password");
	ASSERT_EQ(waiting(w.db), 1, "kept for later");
	tu_tp(&r, 30, "doctor", "--config", w.conf, NULL);
	CHECK(strstr(r.out, "password authentication failed") != NULL, "doctor: %s", r.out);
	no_secret(&r, "XYZZY", "doctor");
	tu_tp(&r, 30, "list", "--db", l.uri, "--config", w.conf, NULL);
	ASSERT_EQ(r.status, 1, "list with the wrong password");
	one_error_line(&r, "fleet postgresql://tp@127.0.0.1", "list, wrong password");
	/* Nothing listening: refused at once, and said so. */
	snprintf(text, sizeof(text), "postgresql://tp@127.0.0.1:%d/fleet", 1);
	tu_tp(&r, 30, "list", "--db", text, NULL);
	ASSERT_EQ(r.status, 1, "a port where nothing listens");
	one_error_line(&r, "cannot connect", "refused");
	/* The right password from the passfile, after all that. */
	host_init(&w, &l, "worker-w", "m5.large", NULL, NULL);
	ASSERT_EQ(ship(&w, &r), 0, "with the right passfile");
	CHECK(strstr(r.out, "shipped 1 task") != NULL, "%s", r.out);
	no_secret(&r, l.pw, "ship");
}

/* Another host's session holding advisory lock key for secs: its pid once held, or -1. */
static pid_t hold_lock(const struct lab *l, const char *key, int secs)
{
	char sql[160];
	pid_t p;

	snprintf(sql, sizeof(sql),
		 "BEGIN; SELECT pg_advisory_xact_lock(%s); SELECT pg_sleep(%d); COMMIT", key, secs);
	p = tu_spawn((char *[]){ "scripts/pglab/pglab.sh", "psql", (char *)l->dir, sql, NULL });
	if (!wait_num(l, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted",
		      1))
		return -1;
	return p;
}

TEST(TIER_E2E, fleet_migration_waits_for_another_host)
{
	struct tu_result r;
	struct host a, b;
	struct lab l;
	pid_t locker, pa, pb;
	int sta, stb;
	char sa[1024], sb[1024];

	if (!lab_up(&l))
		return;
	/* Tasks stored while the sink was a closed port: both hosts have one waiting. */
	host_init(&a, &l, "worker-a", "m5.large", NULL, "postgresql://tp@127.0.0.1:1/fleet");
	host_init(&b, &l, "worker-b", "m5.large", NULL, "postgresql://tp@127.0.0.1:1/fleet");
	ASSERT_EQ(run_task(&a, "a", 1, 0, &r), 0, "a");
	ASSERT_EQ(run_task(&b, "b", 1, 0, &r), 0, "b");
	host_init(&a, &l, "worker-a", "m5.large", NULL, NULL);
	host_init(&b, &l, "worker-b", "m5.large", NULL, NULL);
	/* Another host "migrating": the migration lock held for a while. */
	locker = hold_lock(&l, "8386112019568947810", 3);
	ASSERT_TRUE(locker > 0, "the lock is held");
	snprintf(sa, sizeof(sa),
		 "exec unshare -u sh -c 'hostname worker-a && exec %s ship --config %s' >/dev/null",
		 tu_bin(), a.conf);
	snprintf(sb, sizeof(sb),
		 "exec unshare -u sh -c 'hostname worker-b && exec %s ship --config %s' >/dev/null",
		 tu_bin(), b.conf);
	pa = fork();
	if (pa == 0) {
		execl("/bin/sh", "sh", "-c", sa, (char *)NULL);
		_exit(127);
	}
	pb = fork();
	if (pb == 0) {
		execl("/bin/sh", "sh", "-c", sb, (char *)NULL);
		_exit(127);
	}
	tu_track_pid(pa);
	tu_track_pid(pb);
	ASSERT_TRUE(
		wait_num(&l,
			 "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
			 " 'taskprobe' AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
			 2),
		"both shippers wait for the migration lock");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM pg_tables WHERE schemaname = 'taskprobe'"), 0,
		  "no table made while the lock is held");
	waitpid(locker, NULL, 0);
	waitpid(pa, &sta, 0);
	waitpid(pb, &stb, 0);
	ASSERT_TRUE(WIFEXITED(sta) && WEXITSTATUS(sta) == 0, "host a shipped");
	ASSERT_TRUE(WIFEXITED(stb) && WEXITSTATUS(stb) == 0, "host b shipped");
	ASSERT_EQ(psql_num(&l, "SELECT max(version) FROM taskprobe.schema_version"), 1,
		  "schema version 1");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.schema_version"), 1, "one row");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 2, "both tasks");
}

TEST(TIER_E2E, fleet_daemon_ships_and_shows_its_backlog)
{
	char sock[512], log[512], listen[64], cmd[3072], id[32];
	struct tu_result r;
	struct host h;
	struct lab l;
	const char *m;
	pid_t d;
	int hport = tu_free_port();

	if (!lab_up(&l))
		return;
	host_init(&h, &l, "worker-d", "m5.large", NULL, NULL);
	snprintf(sock, sizeof(sock), "%s", tu_tmp("daemon.sock"));
	snprintf(log, sizeof(log), "%s", tu_tmp("daemon.log"));
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", hport);
	snprintf(cmd, sizeof(cmd), "exec %s daemon --config %s --socket=%s --listen=%s 2>%s",
		 tu_bin(), h.conf, sock, listen, log);
	d = tu_spawn((char *[]){ "/bin/sh", "-c", cmd, NULL });
	for (int i = 0; i < 1000 && access(sock, F_OK); i++)
		usleep(10000);
	ASSERT_OK(access(sock, F_OK), "the daemon listens");
	/* Before any task or round: the sink's families are there, for absent() alerts. */
	for (int i = 0; i < 100 && !strstr(tu_metrics_of(hport, &r), "taskprobe_tasks_running");
	     i++)
		usleep(50000);
	m = tu_metrics_of(hport, &r);
	ASSERT_EQ(tu_prom_value(m, "taskprobe_sink_backlog_tasks"), 0,
		  "/metrics at start: no backlog");
	ASSERT_EQ(tu_prom_value(m, "taskprobe_sink_shipped_total"), 0,
		  "/metrics at start: none yet");
	setenv("TASKPROBE_CONTROL", sock, 1);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "d-%d", i);
		tu_tp(&r, 60, "run", "--quiet", "--id", id, "--", "/bin/true", NULL);
		ASSERT_EQ(r.status, 0, "a run through the daemon");
	}
	CHECK(wait_num(&l, "SELECT count(*) FROM taskprobe.tasks", 3),
	      "the daemon's shipper sent its tasks: %ld",
	      psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"));
	/* The round adds to the shipped count at its end, after the rows went. */
	for (int i = 0; i < 200; i++) {
		m = tu_metrics_of(hport, &r);
		if (tu_prom_value(m, "taskprobe_sink_shipped_total") == 3)
			break;
		usleep(50000);
	}
	ASSERT_EQ(tu_prom_value(m, "taskprobe_sink_backlog_tasks"), 0, "/metrics: no backlog");
	ASSERT_EQ(tu_prom_value(m, "taskprobe_sink_shipped_total"), 3, "/metrics: shipped");

	ASSERT_OK(tu_pglab_ctl(l.dir, "stop"), "PostgreSQL stopped");
	for (int i = 3; i < 5; i++) {
		snprintf(id, sizeof(id), "d-%d", i);
		tu_tp(&r, 60, "run", "--quiet", "--id", id, "--", "/bin/true", NULL);
		ASSERT_EQ(r.status, 0, "a run while the sink is away");
	}
	for (int i = 0; i < 200; i++) {
		m = tu_metrics_of(hport, &r);
		if (tu_prom_value(m, "taskprobe_sink_backlog_tasks") == 2 &&
		    strstr(m, "taskprobe_sink_last_error_info{"))
			break;
		usleep(50000);
	}
	ASSERT_EQ(tu_prom_value(m, "taskprobe_sink_backlog_tasks"), 2, "/metrics: the backlog");
	CHECK(strstr(m, "taskprobe_sink_last_error_info{sink=\"postgresql://tp@") &&
		      strstr(m, "cannot connect"),
	      "/metrics: the last error: %s", m);
	no_secret(&r, l.pw, "/metrics");

	ASSERT_OK(tu_pglab_ctl(l.dir, "start"), "PostgreSQL back");
	/* The shipper retries on its own, after its backoff (at most 60 s). */
	CHECK(wait_num_for(&l, "SELECT count(*) FROM taskprobe.tasks", 5, 70),
	      "every task arrived: %ld", psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"));
	ASSERT_EQ(psql_num(&l, "SELECT count(DISTINCT id) FROM taskprobe.tasks"), 5, "each once");
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	unsetenv("TASKPROBE_CONTROL");
	{
		char *text = NULL;

		ASSERT_TRUE(tp_slurp(log, "log", true, &text) >= 0, "the daemon's log");
		CHECK(text && !strstr(text, l.pw), "the daemon's log has no password: %s", text);
		CHECK(text && strstr(text, "kept locally"), "the log says tasks wait: %s", text);
		free(text);
	}
	ASSERT_EQ(waiting(h.db), 0, "the outbox is empty");
}

/* The shipped Prometheus files load in Prometheus' own checker, paths made the test's. */
TEST(TIER_E2E, fleet_prometheus_configs_check)
{
	char dir[512], cmd[4096];
	struct tu_result r;

	if (access("/usr/bin/promtool", X_OK)) {
		tp_skip("no /usr/bin/promtool: scripts/deps.sh installs Debian's prometheus");
		return;
	}
	snprintf(dir, sizeof(dir), "%s", tu_tmp("prom"));
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p %s/hosts; echo token-of-the-test > %s/token;"
		 " echo '[{\"targets\": [\"127.0.0.1:9464\"]}]' > %s/hosts/a.json;"
		 " sed -e 's|/etc/prometheus/taskprobe.token|%s/token|'"
		 " -e 's|/etc/prometheus/taskprobe-hosts|%s/hosts|' scripts/prometheus/fleet.yml"
		 " > %s/fleet.yml; cp scripts/prometheus/taskprobe-rules.yml %s/;"
		 " promtool check config %s/fleet.yml; promtool check config"
		 " scripts/prometheus/federate.yml; promtool check rules %s/taskprobe-rules.yml",
		 dir, dir, dir, dir, dir, dir, dir, dir, dir);
	tu_run((char *[]){ "/bin/sh", "-c", cmd, NULL }, &r, 60);
	CHECK(r.status == 0, "promtool: %s %s", r.out, r.err);
	CHECK(strstr(r.out, "SUCCESS: 4 rules found") != NULL, "the rules: %s", r.out);
}

TEST(TIER_E2E, fleet_backfill_ships_tasks_stored_before_the_sink)
{
	struct tu_result r;
	struct host h, nosink;
	struct lab l;
	char text[1024];

	if (!lab_up(&l))
		return;
	host_init(&h, &l, "worker-f", "m5.large", NULL, NULL);
	/* The same store, before the sink was in its config. */
	nosink = h;
	snprintf(nosink.conf, sizeof(nosink.conf), "%s", tu_tmp("nosink.conf"));
	snprintf(text, sizeof(text), "db = %s\n", h.db);
	tu_write_file(nosink.conf, text);
	ASSERT_EQ(run_task(&nosink, "old-1", 1, 0, &r), 0, "a task before the sink");
	ASSERT_EQ(run_task(&nosink, "old-2", 2, 0, &r), 0, "another");
	ASSERT_EQ(waiting(h.db), 0, "without a sink nothing waits");
	tu_tp(&r, 30, "doctor", "--json", "--config", h.conf, NULL);
	{
		const struct json *c =
			tu_find(json_get(tu_parse_json(r.out), "checks"), "name", "sink");

		CHECK(c && json_get(c, "ok")->b &&
			      strstr(json_str(c, "detail"),
				     "/fleet: answers, no tables yet (the first shipment makes "
				     "them); 0 waiting"),
		      "doctor: a fleet not shipped to yet is well: %s", r.out);
	}
	ASSERT_EQ(ship(&h, &r), 0, "ship without --backfill");
	CHECK(strstr(r.out, "shipped 0 tasks") != NULL, "the old ones stay local: %s", r.out);
	on_host(&h, &r, (char *[]){ "ship", "--backfill", "--config", (char *)h.conf, NULL });
	ASSERT_EQ(r.status, 0, "ship --backfill");
	CHECK(strstr(r.out, "2 tasks stored before the sink now wait too") &&
		      strstr(r.out, "shipped 2 tasks"),
	      "both shipped: %s", r.out);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks WHERE host = 'worker-f'"), 2,
		  "in the fleet");
	ASSERT_EQ(
		psql_num(&l, "SELECT sum(value) FROM taskprobe.metrics WHERE name = 'proc.execs'"),
		2 + 3, "their execs: bash and its /bin/true");
}

/*
 * A task whose data the fleet refuses (a CHECK of the test's own): the run ends as
 * usual and says so in one line, the task stays local and is not retried on its own,
 * the tasks after it ship; once the fleet is fixed, `ship --refused` sends it once.
 */
TEST(TIER_E2E, fleet_refused_task_stays_local_and_the_rest_ship)
{
	const struct json *c;
	struct tu_result r;
	struct host h;
	struct lab l;

	if (!lab_up(&l))
		return;
	host_init(&h, &l, "worker-r", "m5.large", NULL, NULL);
	ASSERT_EQ(run_task(&h, "good-1", 1, 0, &r), 0, "a task, the schema made");
	tu_psql(l.dir,
		"ALTER TABLE taskprobe.tasks ADD CONSTRAINT no_bad CHECK (id NOT LIKE 'bad-%')",
		&r);
	ASSERT_EQ(r.status, 0, "the test's constraint");
	ASSERT_EQ(run_task(&h, "bad-1", 4, 0, &r), 0, "the refused task's own status");
	one_error_line(&r, "the fleet refused 1 task (", "a refused task");
	CHECK(strstr(r.err, "no_bad") && strstr(r.err, "ship --refused"),
	      "the line names the reason and the way back: %s", r.err);
	ASSERT_EQ(run_task(&h, "good-2", 2, 0, &r), 0, "a task after it");
	CHECK(!r.err[0], "nothing to say this time: %s", r.err);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 2, "the good ones shipped");
	ASSERT_EQ(
		psql_num(&l, "SELECT sum(value) FROM taskprobe.metrics WHERE name = 'proc.execs'"),
		2 + 3, "and nothing of the refused one: bash and its /bin/true in each");
	ASSERT_EQ(local_num(h.db, "SELECT COUNT(*) FROM tasks"), 3, "all three kept locally");
	ASSERT_EQ(local_num(h.db, "SELECT COUNT(*) FROM tasks WHERE ship = 2"), 1, "one refused");
	ASSERT_EQ(waiting(h.db), 0, "not retried on its own");
	tu_tp(&r, 30, "doctor", "--json", "--config", h.conf, NULL);
	c = tu_find(json_get(tu_parse_json(r.out), "checks"), "name", "sink");
	CHECK(c && !json_get(c, "ok")->b && strstr(json_str(c, "detail"), "; 0 waiting, 1 refused"),
	      "doctor: the refusal shows: %s", r.out);

	/* Still refused: the same line, exit 1. */
	on_host(&h, &r, (char *[]){ "ship", "--refused", "--config", (char *)h.conf, NULL });
	ASSERT_EQ(r.status, 1, "ship --refused, the fleet unchanged");
	CHECK(strstr(r.out, "1 task the fleet refused waits again") &&
		      strstr(r.err, "the fleet refused 1 task ("),
	      "refused again: %s %s", r.out, r.err);
	tu_psql(l.dir, "ALTER TABLE taskprobe.tasks DROP CONSTRAINT no_bad", &r);
	ASSERT_EQ(r.status, 0, "the fleet fixed");
	on_host(&h, &r, (char *[]){ "ship", "--refused", "--config", (char *)h.conf, NULL });
	ASSERT_EQ(r.status, 0, "ship --refused");
	CHECK(strstr(r.out, "1 task the fleet refused waits again") &&
		      strstr(r.out, "shipped 1 task to") && !r.err[0],
	      "sent once: %s %s", r.out, r.err);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks WHERE id = 'bad-1'"), 1,
		  "in the fleet once");
	ASSERT_EQ(
		psql_num(&l, "SELECT sum(value) FROM taskprobe.metrics WHERE name = 'proc.execs'"),
		2 + 3 + 5, "whole: its execs too");
	ASSERT_EQ(local_num(h.db, "SELECT COUNT(*) FROM tasks WHERE ship != 0"), 0,
		  "every task shipped");
	tu_tp(&r, 30, "doctor", "--json", "--config", h.conf, NULL);
	c = tu_find(json_get(tu_parse_json(r.out), "checks"), "name", "sink");
	CHECK(c && json_get(c, "ok")->b && strstr(json_str(c, "detail"), "; 0 waiting, 0 refused"),
	      "doctor: well again: %s", r.out);
}

/* h's config with one more line. */
static void conf_add(const struct host *h, const char *line)
{
	FILE *f = fopen(h->conf, "a");

	if (CHECK(f != NULL, "open %s", h->conf)) {
		fputs(line, f);
		fclose(f);
	}
}

#define DAY_NS "86400000000000"

/*
 * sink_retain_days: `ship` deletes the fleet's tasks that started before it, with
 * all their rows, and none after; never while another host prunes (its lock held);
 * the host's own store keeps everything; the daemon prunes on its own.
 */
TEST(TIER_E2E, fleet_retention_prunes_old_tasks_one_host_at_a_time)
{
	char sock[512], log[512], cmd[2048], id[16];
	long metrics, net, hists;
	struct tu_result r;
	pid_t locker, d;
	struct host h;
	struct lab l;

	if (!lab_up(&l))
		return;
	host_init(&h, &l, "worker-p", "m5.large", NULL, NULL);
	conf_add(&h, "sink_retain_days = 7\n");
	for (int i = 1; i <= 4; i++) {
		snprintf(id, sizeof(id), "p-%d", i);
		ASSERT_EQ(run_task(&h, id, i, 1, &r), 0, "a task");
	}
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 4, "all four shipped");
	tu_psql(l.dir,
		"UPDATE taskprobe.tasks SET start_ns = start_ns - 8 * " DAY_NS
		" WHERE id IN ('p-1', 'p-2');"
		" UPDATE taskprobe.tasks SET start_ns = start_ns - 6 * " DAY_NS " WHERE id = 'p-3'",
		&r);
	ASSERT_EQ(r.status, 0, "two tasks 8 days old, one 6");
	metrics = psql_num(&l, "SELECT count(*) FROM taskprobe.metrics m JOIN taskprobe.tasks t"
			       " ON t.tid = m.task WHERE t.id IN ('p-3', 'p-4')");
	net = psql_num(&l, "SELECT count(*) FROM taskprobe.net m JOIN taskprobe.tasks t"
			   " ON t.tid = m.task WHERE t.id IN ('p-3', 'p-4')");
	hists = psql_num(&l, "SELECT count(*) FROM taskprobe.histograms m JOIN taskprobe.tasks t"
			     " ON t.tid = m.task WHERE t.id IN ('p-3', 'p-4')");
	ASSERT_TRUE(metrics > 0 && net > 0 && hists > 0, "the kept tasks have rows");

	/* Another host pruning: its lock held, this one leaves it alone. */
	locker = hold_lock(&l, "8386112019568947811", 30);
	ASSERT_TRUE(locker > 0, "the lock is held");
	ASSERT_EQ(ship(&h, &r), 0, "ship while another host prunes");
	CHECK(strstr(r.out, "another host prunes the fleet now"), "said: %s", r.out);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 4, "nothing pruned");
	kill(locker, SIGTERM);
	waitpid(locker, NULL, 0);
	tu_psql(l.dir, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'",
		&r);
	ASSERT_TRUE(wait_num(&l,
			     "SELECT (count(*) = 0)::int FROM pg_locks WHERE locktype = 'advisory'",
			     1),
		    "the lock is free");

	ASSERT_EQ(ship(&h, &r), 0, "ship");
	CHECK(strstr(r.out, "pruned 2 tasks that started over 7 days ago from the fleet"),
	      "said: %s", r.out);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks WHERE id IN ('p-3', 'p-4')"),
		  2, "the newer two stay");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 2, "the older two went");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.metrics"), metrics,
		  "their metrics went with them, the others' stayed");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.net"), net, "their remote hosts");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.histograms"), hists,
		  "their histograms");
	ASSERT_EQ(local_num(h.db, "SELECT COUNT(*) FROM tasks"), 4, "the host keeps its own");
	ASSERT_EQ(ship(&h, &r), 0, "ship again");
	CHECK(strstr(r.out, "pruned 0 tasks"), "nothing more: %s", r.out);

	/* The daemon prunes as it starts, then hourly. */
	tu_psql(l.dir,
		"UPDATE taskprobe.tasks SET start_ns = start_ns - 2 * " DAY_NS " WHERE id = 'p-3'",
		&r);
	snprintf(sock, sizeof(sock), "%s", tu_tmp("prune.sock"));
	snprintf(log, sizeof(log), "%s", tu_tmp("prune.log"));
	snprintf(cmd, sizeof(cmd), "exec %s daemon --config %s --socket=%s --listen=off 2>%s",
		 tu_bin(), h.conf, sock, log);
	d = tu_spawn((char *[]){ "/bin/sh", "-c", cmd, NULL });
	CHECK(wait_num(&l, "SELECT (count(*) = 1)::int FROM taskprobe.tasks", 1),
	      "the daemon pruned the third: %ld tasks left",
	      psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"));
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks WHERE id = 'p-4'"), 1,
		  "the newest stays");
}

/*
 * A sink that answers nothing (a listener that never accepts) and one whose table is
 * locked: the run still ends with its task's status within its few seconds of
 * shipping, the task kept; a passfile others may read is refused up front.
 */
TEST(TIER_E2E, fleet_slow_sink_delays_a_run_a_few_seconds_at_most)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char sink[128], open_pass[600];
	struct tu_result r;
	struct host h;
	struct lab l;
	pid_t locker;
	int fd;

	if (!lab_up(&l))
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(fd, 8) &&
			    !getsockname(fd, (struct sockaddr *)&sa, &len),
		    "a listener that never answers");
	snprintf(sink, sizeof(sink), "postgresql://tp@127.0.0.1:%d/fleet", ntohs(sa.sin_port));
	host_init(&h, &l, "worker-s", "m5.large", NULL, sink);
	ASSERT_EQ(run_task(&h, "silent", 1, 0, &r), 0, "the task's own status");
	one_error_line(&r, "cannot connect", "a silent server");
	CHECK(r.wall_ns < 12ULL * 1000000000, "the run took %.1f s", r.wall_ns / 1e9);
	ASSERT_EQ(waiting(h.db), 1, "kept");
	close(fd);

	/* The lab, its metrics table locked by another session. */
	host_init(&h, &l, "worker-s", "m5.large", NULL, NULL);
	ASSERT_EQ(ship(&h, &r), 0, "the schema made, the first task shipped");
	locker = tu_spawn((char *[]){ "scripts/pglab/pglab.sh", "psql", (char *)l.dir,
				      "BEGIN; LOCK TABLE taskprobe.metrics IN SHARE MODE;"
				      " SELECT pg_sleep(40); COMMIT",
				      NULL });
	ASSERT_TRUE(wait_num(&l,
			     "SELECT count(*) FROM pg_locks WHERE mode = 'ShareLock' AND granted"
			     " AND relation = 'taskprobe.metrics'::regclass",
			     1),
		    "the table is locked");
	ASSERT_EQ(run_task(&h, "locked", 1, 0, &r), 0, "the task's own status");
	one_error_line(&r, "kept locally", "a locked table");
	CHECK(strstr(r.err, "statement timeout") || strstr(r.err, "no answer within"),
	      "the statement timed out: %s", r.err);
	CHECK(r.wall_ns < 15ULL * 1000000000, "the run took %.1f s", r.wall_ns / 1e9);
	ASSERT_EQ(waiting(h.db), 1, "kept");
	tu_psql(l.dir,
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE "
		"'%pg_sleep(40)%' AND pid != pg_backend_pid()",
		&r);
	waitpid(locker, NULL, 0);
	ASSERT_EQ(ship(&h, &r), 0, "shipped once the lock is gone");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), 2, "both tasks, once");

	/* A passfile others may read: libpq would skip it; we say so. */
	snprintf(open_pass, sizeof(open_pass), "%s", tu_tmp("open.pgpass"));
	tu_write_file(open_pass, "*:*:*:tp:whatever\n");
	chmod(open_pass, 0644);
	host_init(&h, &l, "worker-s", "m5.large", open_pass, NULL);
	ASSERT_EQ(ship(&h, &r), 1, "ship with a readable passfile");
	one_error_line(&r, "others may read it", "a passfile of mode 0644");
}

/*
 * stats and compare answer the same over the fleet (PostgreSQL's percentile_cont) as
 * over the host's store (quantile_cont in C), text and JSON, byte for byte.
 */
TEST(TIER_E2E, fleet_stats_and_compare_answer_as_the_local_store)
{
	static const char *const queries[][7] = {
		{ "stats", "cpu.time_ns" },
		{ "stats", "cpu.time_ns", "--by", "job" },
		{ "stats", "cpu.time_ns", "--by", "job", "--json" },
		{ "stats", "wall_ns", "--by", "job", "--json" },
		{ "stats", "mem.peak_bytes", "--label", "job=build", "--json" },
		{ "stats", "cpu.peak_cores", "--by", "ncpu", "--json" },
		{ "stats", "--sizing" },
		{ "stats", "--sizing", "--json" },
		{ "compare", CD_TARGET, "--json" },
		{ "compare", CD_TARGET, "--format", "markdown" },
		{ "compare", CD_TARGET, "--last", "3" },
		{ "compare", "b-1" },
	};
	struct tu_result r, local;
	struct store *s;
	struct host h;
	struct lab l;

	if (!lab_up(&l))
		return;
	host_init(&h, &l, "worker-s", "m5.large", NULL, NULL);
	s = cd_store(h.db);
	if (!s)
		return;
	store__close(s);
	tu_tp(&r, 60, "ship", "--backfill", "--config", h.conf, NULL);
	ASSERT_EQ(r.status, 0, "ship --backfill");
	ASSERT_EQ(psql_num(&l, "SELECT count(*) FROM taskprobe.tasks"), CD_TASKS,
		  "every task in the fleet");
	for (size_t i = 0; i < ARRAY_SIZE(queries); i++) {
		char *argv[16], line[128] = "";
		int n = 0;

		argv[n++] = (char *)tu_bin();
		for (int k = 0; k < 7 && queries[i][k]; k++) {
			argv[n++] = (char *)queries[i][k];
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s",
				 queries[i][k]);
		}
		argv[n++] = "--db";
		argv[n++] = h.db;
		argv[n] = NULL;
		tu_run(argv, &local, 60);
		argv[n - 1] = l.conninfo;
		argv[n++] = "--config";
		argv[n++] = h.conf;
		argv[n] = NULL;
		tu_run(argv, &r, 60);
		CHECK(local.status == 0 && r.status == 0, "%s: local %d, fleet %d: %s%s", line,
		      local.status, r.status, local.err, r.err);
		CHECK(!strcmp(r.out, local.out), "%s: the fleet answers\n%s\nthe host\n%s", line,
		      r.out, local.out);
	}
	/* A real answer, not two empty ones. */
	tu_tp(&r, 60, "stats", "cpu.time_ns", "--by", "job", "--db", l.conninfo, "--config", h.conf,
	      NULL);
	CHECK(strstr(r.out, "\nbuild ") != NULL, "build's row: %s", r.out);
}
