// SPDX-License-Identifier: GPL-2.0
/* `taskprobe doctor`: what this host has and lacks for taskprobe, and how to fix each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "collector/cgroup.h"
#include "collector/collector.h"
#include "model/config.h"
#include "store/otlp_sink.h"
#include "store/ship.h"
#include "store/sink.h"
#include "store/spool.h"
#include "store/store.h"

#define TRACEFS_MAGIC 0x74726163
#define BPF_FS_MAGIC 0xcafe4a11

const char doctor_usage[] = "usage: taskprobe doctor [--json] [--config PATH]\n"
			    "Checks BTF, BPF permission, cgroup2, tracefs, bpffs and the kernel\n"
			    "features taskprobe uses; says what is missing and how to fix it;\n"
			    "with a sink in the config, its backlog and last error.\n";

struct check {
	const char *name;
	bool ok;
	bool required;
	char detail[768];
	const char *fix; /* the command that mends it, when there is one */
};

/* Columns before a check's detail ("FAIL btf        "), and the width it wraps at. */
#define DETAIL_COL 16
#define DOCTOR_WIDTH 80

/*
 * One check: status, name, then the detail wrapped at spaces so that no line passes
 * DOCTOR_WIDTH whatever this host puts in it (paths, errors); the fix on a line of its
 * own below.
 */
static void print_check(const struct check *c)
{
	const char *p = c->detail;
	size_t room = DOCTOR_WIDTH - DETAIL_COL;

	printf("%-4s %-10s ", c->ok ? "ok" : c->required ? "FAIL" : "--", c->name);
	for (bool first = true; first || *p; first = false) {
		size_t n = strlen(p);

		if (n > room) {
			n = room;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = room;
		}
		printf("%s%.*s\n", first ? "" : "                ", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
	if (c->fix && !c->ok)
		printf("%*sfix: %.*s\n", DETAIL_COL, "", (int)(room - 5), c->fix);
}

/*
 * The fleet sink: off, or its backlog, last shipment and last error, as the
 * shippers recorded them in the local store. -1 when the config is bad (said).
 */
static int sink_check_fill(struct check *c, const char *config)
{
	const char *env = getenv("TASKPROBE_DB");
	char name[256], last[40] = "never", now[512];
	struct store_sink_state st;
	struct sink k;
	struct config cfg;
	struct store *s;

	*c = (struct check){ "sink", false, false, "", NULL };
	if (config__read(&cfg, config))
		return -1;
	if (!cfg.sink[0]) {
		snprintf(c->detail, sizeof(c->detail), "off: tasks stay on this host ('sink =')");
		return 0;
	}
	if (conninfo_check(cfg.sink, name, sizeof(name), c->detail, sizeof(c->detail)))
		return 0;
	s = store__open(env && *env ? env : cfg.db, false, cfg.db_gid);
	if (!s || store__sink_state(s, STORE_Q_FLEET, &st)) {
		snprintf(c->detail, sizeof(c->detail), "%s: the local store cannot be read", name);
		store__close(s);
		return 0;
	}
	store__close(s);
	/* Whether it answers now, as a shipper would connect (5 s at most). */
	if (sink__open(&k, cfg.sink, cfg.sink_passfile, false, 5) && k.schema)
		snprintf(now, sizeof(now), "%s", k.err);
	else if (k.schema == 0)
		snprintf(now, sizeof(now),
			 "answers, no tables yet (the first shipment makes them)");
	else
		snprintf(now, sizeof(now), "answers, schema %ld", k.schema);
	c->ok = !st.error[0] && !st.refused && k.schema >= 0 && k.schema <= SINK_SCHEMA;
	sink__close(&k);
	if (st.shipped_ns)
		tp_fmt_time(last, sizeof(last), st.shipped_ns);
	snprintf(c->detail, sizeof(c->detail),
		 "%s: %s; %ld waiting, %ld refused, %ld shipped (last %s)%s%s", name, now,
		 st.waiting, st.refused, st.shipped, last, st.error[0] ? "; last error: " : "",
		 st.error);
	return 0;
}

/*
 * The OpenTelemetry collector: off, or whether it answers an empty export now, and
 * the backlog, last send and last error the shippers recorded. -1: a bad config.
 */
static int otlp_check_fill(struct check *c, const char *config)
{
	const char *env = getenv("TASKPROBE_DB");
	char last[40] = "never", now[560];
	struct store_sink_state st;
	struct otlp_sink k;
	struct config cfg;
	struct store *s;

	*c = (struct check){ "otlp", false, false, "", NULL };
	if (config__read(&cfg, config))
		return -1;
	if (!cfg.otlp_endpoint[0]) {
		snprintf(c->detail, sizeof(c->detail),
			 "off: no OpenTelemetry export ('otlp_endpoint =')");
		return 0;
	}
	s = store__open(env && *env ? env : cfg.db, false, cfg.db_gid);
	if (!s || store__sink_state(s, STORE_Q_OTLP, &st)) {
		snprintf(c->detail, sizeof(c->detail), "%s: the local store cannot be read",
			 cfg.otlp_endpoint);
		store__close(s);
		return 0;
	}
	store__close(s);
	/* An empty export: the collector's answer, and no data made. */
	if (otlp_sink__open(&k, cfg.otlp_endpoint, cfg.otlp_headers_file, cfg.otlp_ca_file, 5) ||
	    otlp_sink__post(&k, "/v1/traces", "{}"))
		snprintf(now, sizeof(now), "%s", k.err);
	else
		snprintf(now, sizeof(now), "answers");
	c->ok = !st.error[0] && !st.refused && !strcmp(now, "answers");
	otlp_sink__close(&k);
	if (st.shipped_ns)
		tp_fmt_time(last, sizeof(last), st.shipped_ns);
	snprintf(c->detail, sizeof(c->detail),
		 "%s: %s; %ld waiting, %ld refused, %ld sent (last %s)%s%s", k.name, now,
		 st.waiting, st.refused, st.shipped, last, st.error[0] ? "; last error: " : "",
		 st.error);
	return 0;
}

/* The spool: records the store could not take, waiting for it (none: ok). */
static int spool_check_fill(struct check *c, const char *config)
{
	const char *env = getenv("TASKPROBE_DB");
	struct spool_stats sp;
	struct config cfg;
	char size[32];

	*c = (struct check){ "spool", false, false, "",
			     "free the store's disk or fix it; the next run or the daemon "
			     "stores them" };
	if (config__read(&cfg, config))
		return -1;
	if (spool__stat(env && *env ? env : cfg.db, &sp)) {
		snprintf(c->detail, sizeof(c->detail), "cannot be read");
		return 0;
	}
	c->ok = sp.files == 0;
	if (c->ok)
		snprintf(c->detail, sizeof(c->detail), "empty: every task reached %s",
			 env && *env ? env : cfg.db);
	else
		snprintf(c->detail, sizeof(c->detail), "%ld task%s (%s) waiting to be stored in %s",
			 sp.files, sp.files == 1 ? "" : "s",
			 tp_fmt_bytes(size, sizeof(size), sp.bytes), env && *env ? env : cfg.db);
	return 0;
}

static bool fs_is(const char *path, unsigned long magic)
{
	struct statfs s;

	return !statfs(path, &s) && (unsigned long)s.f_type == magic;
}

int cmd_doctor(int argc, char **argv)
{
	struct check c[13];
	struct collector *col;
	char mnt[4096];
	struct utsname u;
	const struct cli_cmd cmd = { .name = "doctor",
				     .usage = doctor_usage,
				     .shared = SHARED_CONFIG | SHARED_JSON };
	struct shared_opts so;
	const char *config;
	bool json, bad = false;
	int rc;
	int n = 0;

	rc = cli_parse(argc, argv, &cmd, &so);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (optind < argc) {
		tp_err("doctor: unexpected argument '%.64s'; see 'taskprobe doctor --help'",
		       argv[optind]);
		return 2;
	}
	config = so.config;
	json = so.json;
	memset(c, 0, sizeof(c));
	uname(&u);
	c[n] = (struct check){ "kernel", true, false, "", NULL };
	snprintf(c[n++].detail, sizeof(c[0].detail), "%s %s", u.sysname, u.release);

	c[n] = (struct check){ "btf", !access("/sys/kernel/btf/vmlinux", R_OK), true, "", NULL };
	snprintf(c[n].detail, sizeof(c[0].detail), "%s",
		 c[n].ok ? "/sys/kernel/btf/vmlinux"
			 : "missing: use a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	n++;

	c[n] = (struct check){ "cgroup2", !cgroup2_mount(mnt, sizeof(mnt)), true, "",
			       "mount -t cgroup2 none /sys/fs/cgroup" };
	snprintf(c[n].detail, sizeof(c[0].detail), "%s", c[n].ok ? mnt : "not mounted");
	n++;

	/* The real test of permission and kernel support: load and attach everything. */
	col = collector__open(NULL);
	c[n] = (struct check){ "bpf", col != NULL, true, "", NULL };
	if (col)
		snprintf(c[n].detail, sizeof(c[0].detail),
			 "programs load and attach (tp_btf, task storage, ring buffer)");
	else if (errno == EPERM)
		snprintf(c[n].detail, sizeof(c[0].detail),
			 "no permission: run as root (or CAP_BPF+CAP_PERFMON+CAP_SYS_ADMIN)");
	else
		snprintf(c[n].detail, sizeof(c[0].detail), "cannot load: %s; run -v shows why",
			 strerror(errno));
	n++;
	c[n] = (struct check){ "libraries", col != NULL, false, "", NULL };
	if (col)
		snprintf(c[n].detail, sizeof(c[0].detail),
			 "probed: libssl.so.3 x%d, libgnutls.so.30 x%d, libc.so.6 x%d",
			 collector__probed_libs(col, "libssl.so.3"),
			 collector__probed_libs(col, "libgnutls.so.30"),
			 collector__probed_libs(col, "libc.so.6"));
	else
		snprintf(c[n].detail, sizeof(c[0].detail), "not probed: BPF does not load");
	n++;
	collector__free(col);

	c[n] = (struct check){ "sched_info", !access("/proc/self/schedstat", R_OK), false, "",
			       NULL };
	snprintf(c[n].detail, sizeof(c[0].detail), "%s",
		 c[n].ok ? "run-queue latency from the kernel's stamps"
			 : "absent (CONFIG_SCHED_INFO): wakeup programs stamp threads instead");
	n++;

	c[n] = (struct check){ "tracefs", fs_is("/sys/kernel/tracing", TRACEFS_MAGIC), false, "",
			       "mount -t tracefs nodev /sys/kernel/tracing" };
	snprintf(c[n].detail, sizeof(c[0].detail), "%s",
		 c[n].ok ? "/sys/kernel/tracing" : "not mounted (not needed: tp_btf only)");
	n++;

	c[n] = (struct check){ "bpffs", fs_is("/sys/fs/bpf", BPF_FS_MAGIC), false, "",
			       "mount -t bpf bpf /sys/fs/bpf" };
	snprintf(c[n].detail, sizeof(c[0].detail), "%s",
		 c[n].ok ? "/sys/fs/bpf" : "not mounted (not needed by run)");
	n++;

	if (sink_check_fill(&c[n], config))
		return 2;
	n++;
	if (otlp_check_fill(&c[n], config))
		return 2;
	n++;
	if (spool_check_fill(&c[n], config))
		return 2;
	n++;

	for (int i = 0; i < n; i++)
		bad |= c[i].required && !c[i].ok;
	if (json) {
		struct jw w;

		jw_init(&w, stdout, true);
		jw_obj_begin(&w);
		jw_key(&w, "ok");
		jw_bool(&w, !bad);
		jw_key(&w, "checks");
		jw_arr_begin(&w);
		for (int i = 0; i < n; i++) {
			jw_obj_begin(&w);
			jw_kstr(&w, "name", c[i].name);
			jw_key(&w, "ok");
			jw_bool(&w, c[i].ok);
			jw_key(&w, "required");
			jw_bool(&w, c[i].required);
			jw_kstr(&w, "detail", c[i].detail);
			if (c[i].fix && !c[i].ok)
				jw_kstr(&w, "fix", c[i].fix);
			jw_obj_end(&w);
		}
		jw_arr_end(&w);
		jw_obj_end(&w);
	} else {
		for (int i = 0; i < n; i++)
			print_check(&c[i]);
		printf("%s\n", bad ? "taskprobe cannot run here: fix the FAIL lines above"
				   : "taskprobe can run here");
	}
	return bad ? 1 : 0;
}
