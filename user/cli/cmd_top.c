// SPDX-License-Identifier: GPL-2.0
/*
 * `taskprobe top`: the running tasks, refreshed each second. From the daemon when one
 * answers (figures now, rates between refreshes), else from the database: the running
 * tasks of embedded runs, as their last flushed series sample says.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/config.h"
#include "session/control.h"
#include "store/query.h"
#include "store/store.h"

#define TOP_ROWS_MAX 8192

const char top_usage[] =
	"usage: taskprobe top [--once] [--socket PATH] [--db PATH] [--config PATH]\n"
	"The running tasks, refreshed each second: CPU cores, memory, disk and network\n"
	"rates, the phase open now, failures so far. From the daemon when one answers;\n"
	"else the running tasks of embedded runs in the database (their last series\n"
	"sample, flushed every 5 s). q or Ctrl-C quits; not a terminal: a plain table\n"
	"per refresh.\n"
	"  --once          one table, a second after the first look (rates need two), then exit\n"
	"  --socket PATH   the daemon's control socket (default " CONTROL_SOCKET ",\n"
	"                  or TASKPROBE_CONTROL)\n"
	"  --db PATH       with no daemon: the database (default: the config's db)\n"
	"  --config PATH   config file (default /etc/taskprobe/taskprobe.conf)\n";

/* One running task at one look: totals from the daemon, or a sample from the store. */
struct top_row {
	char id[TP_ID_MAX + 1];
	char phase[64];
	__u64 wall_ns;
	__u64 cpu_ns, rd, wr, rx, tx, fails;
	__s64 mem, procs;
	/* what is shown: rates over the last refresh (or since the start, at first sight) */
	double cores, rd_s, wr_s, rx_s, tx_s;
	bool have_net; /* the daemon's: network and failures known */
};

struct top {
	const char *sock;
	const char *db_path;
	const char *config_path;
	bool from_daemon;
	struct store *store;
	struct top_row *rows, *prev;
	int n, nprev;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const struct top_row *find_prev(const struct top *t, const char *id)
{
	for (int i = 0; i < t->nprev; i++)
		if (!strcmp(t->prev[i].id, id))
			return &t->prev[i];
	return NULL;
}

static double per_s(__u64 now, __u64 then, double dt_s)
{
	return now >= then && dt_s > 0 ? (double)(now - then) / dt_s : 0;
}

/* Rates: since the previous look at the same task, or since its start when new. */
static void rates(struct top *t, struct top_row *r)
{
	const struct top_row *p = find_prev(t, r->id);
	struct top_row zero = { 0 };
	double dt;

	if (!p || p->wall_ns >= r->wall_ns)
		p = &zero;
	dt = (double)(r->wall_ns - p->wall_ns) / 1e9;
	r->cores = per_s(r->cpu_ns, p->cpu_ns, dt) / 1e9;
	r->rd_s = per_s(r->rd, p->rd, dt);
	r->wr_s = per_s(r->wr, p->wr, dt);
	r->rx_s = per_s(r->rx, p->rx, dt);
	r->tx_s = per_s(r->tx, p->tx, dt);
}

/* One look through the daemon's `tasks` answer; -1 when it failed (said). */
static int look_daemon(struct top *t)
{
	char *ans, *line, *next;
	size_t len;

	ans = control_ask(control_path(t->sock), "tasks\n", &len, "top");
	if (!ans)
		return -1;
	t->n = 0;
	for (line = strchr(ans, '\n'); line && *++line && t->n < TOP_ROWS_MAX; line = next) {
		struct top_row *r = &t->rows[t->n];
		char *f[11];
		int nf = 0;

		next = strchr(line, '\n');
		if (next)
			*next = '\0';
		for (char *p = line; p && nf < 11; nf++) {
			f[nf] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = '\0';
		}
		if (nf != 11)
			continue;
		memset(r, 0, sizeof(*r));
		snprintf(r->id, sizeof(r->id), "%s", f[0]);
		r->wall_ns = strtoull(f[1], NULL, 10);
		r->cpu_ns = strtoull(f[2], NULL, 10);
		r->mem = strtoll(f[3], NULL, 10);
		r->rd = strtoull(f[4], NULL, 10);
		r->wr = strtoull(f[5], NULL, 10);
		r->rx = strtoull(f[6], NULL, 10);
		r->tx = strtoull(f[7], NULL, 10);
		r->procs = strtoll(f[8], NULL, 10);
		r->fails = strtoull(f[9], NULL, 10);
		snprintf(r->phase, sizeof(r->phase), "%s", f[10]);
		r->have_net = true;
		rates(t, r);
		t->n++;
		if (!next)
			break;
	}
	free(ans);
	return 0;
}

static int store_row(void *ctx, const struct store_task_row *row)
{
	struct top *t = ctx;
	struct series_point *pts = NULL;
	struct store_task st;
	struct top_row *r;
	size_t n = 0;
	int damaged;

	if (t->n >= TOP_ROWS_MAX)
		return 1;
	r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", row->id);
	if (!store__find(t->store, row->id, NULL, &st)) {
		r->wall_ns = st.wall_ns;
		if (!store__series(t->store, st.tid, &pts, &n, &damaged) && n) {
			const __s64 *v = pts[n - 1].v;

			r->cores = (double)v[0] / 1000.0;
			r->mem = v[1];
			r->rd_s = (double)v[2];
			r->wr_s = (double)v[3];
			r->procs = v[4];
		}
		free(st.record);
	}
	free(pts);
	snprintf(r->phase, sizeof(r->phase), "%s", n ? "" : "(no sample yet)");
	t->n++;
	return 0;
}

/* One look at the database's running tasks; -1 when it failed (said). */
static int look_store(struct top *t)
{
	struct store_filter f = { .status = "running" };

	t->n = 0;
	return store__list(t->store, &f, TOP_ROWS_MAX, store_row, t) ? -1 : 0;
}

static int look(struct top *t)
{
	struct top_row *swap = t->prev;
	int err;

	t->prev = t->rows;
	t->nprev = t->n;
	t->rows = swap;
	err = t->from_daemon ? look_daemon(t) : look_store(t);
	return err;
}

static void rate_cell(char *buf, size_t len, double v, bool known)
{
	if (!known)
		snprintf(buf, len, "-");
	else
		tp_fmt_bytes(buf, len, (__u64)v);
}

static void draw(const struct top *t, bool tty, int width)
{
	char when[40], mem[16], rd[16], wr[16], rx[16], tx[16], age[16], fails[16], line[512];

	if (tty)
		fputs("\033[H\033[J", stdout);
	printf("taskprobe top  %s  %d running task%s (%s)\n",
	       tp_fmt_time(when, sizeof(when), tp_realtime_ns()), t->n, t->n == 1 ? "" : "s",
	       t->from_daemon ? "the daemon's" : "the database's last samples");
	snprintf(line, sizeof(line), "%-24s %-14s %6s %9s %9s %9s %9s %9s %5s %4s %8s", "ID",
		 "PHASE", "CORES", "MEM", "READ/s", "WRITE/s", "RX/s", "TX/s", "PROCS", "FAIL",
		 "AGE");
	printf("%.*s\n", width, line);
	for (int i = 0; i < t->n; i++) {
		const struct top_row *r = &t->rows[i];

		tp_fmt_bytes(mem, sizeof(mem), r->mem > 0 ? (__u64)r->mem : 0);
		rate_cell(rd, sizeof(rd), r->rd_s, true);
		rate_cell(wr, sizeof(wr), r->wr_s, true);
		rate_cell(rx, sizeof(rx), r->rx_s, r->have_net);
		rate_cell(tx, sizeof(tx), r->tx_s, r->have_net);
		snprintf(fails, sizeof(fails), r->have_net ? "%llu" : "-",
			 (unsigned long long)r->fails);
		tp_fmt_dur(age, sizeof(age), r->wall_ns);
		snprintf(line, sizeof(line),
			 "%-24.24s %-14.14s %6.2f %9s %9s %9s %9s %9s %5lld %4s %8s", r->id,
			 r->phase[0] ? r->phase : "-", r->cores, mem, rd, wr, rx, tx,
			 (long long)r->procs, fails, age);
		printf("%.*s\n", width, line);
	}
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

struct top_args {
	struct top *t;
	bool *once;
};

static int top_opt(void *ctx, int opt, char *arg)
{
	struct top_args *a = ctx;

	if (opt == 'o')
		*a->once = true;
	else
		a->t->sock = arg;
	return 0;
}

static int parse(int argc, char **argv, struct top *t, bool *once)
{
	static const struct option own[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "socket", required_argument, NULL, 's' },
		{ 0 },
	};
	struct top_args a = { t, once };
	const struct cli_cmd cmd = {
		.name = "top",
		.usage = top_usage,
		.shared = SHARED_DB | SHARED_CONFIG,
		.own = own,
		.own_opt = top_opt,
		.ctx = &a,
	};
	struct shared_opts so;
	int rc = cli_parse(argc, argv, &cmd, &so);

	if (rc)
		return rc > 0 ? 0 : 2;
	t->db_path = so.db;
	t->config_path = so.config;
	if (optind < argc) {
		tp_err("top: unexpected argument '%.64s'", argv[optind]);
		return 2;
	}
	return -1;
}

int cmd_top(int argc, char **argv)
{
	struct top t = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct termios saved, raw;
	bool once = false, tty, raw_on = false;
	int fd, ret, width = 511;
	struct winsize ws;

	ret = parse(argc, argv, &t, &once);
	if (ret >= 0)
		return ret;
	t.rows = calloc(TOP_ROWS_MAX, sizeof(*t.rows));
	t.prev = calloc(TOP_ROWS_MAX, sizeof(*t.prev));
	if (!t.rows || !t.prev) {
		tp_err("top: out of memory");
		ret = 1;
		goto out;
	}
	/* The daemon if one answers; --db asks for the database itself. */
	fd = t.db_path ? -1 : control_connect(control_path(t.sock));
	t.from_daemon = fd >= 0;
	if (fd >= 0)
		close(fd);
	else if (!(t.store = query_open_store(t.db_path, t.config_path))) {
		ret = 1;
		goto out;
	}
	tty = isatty(STDOUT_FILENO) && !once;
	if (tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		width = ws.ws_col < 511 ? ws.ws_col : 511;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty && isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		raw_on = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	ret = 1;
	if (look(&t))
		goto out;
	for (int round = 0; !stop; round++) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		__u64 due = tp_now_ns() + 1000000000ULL;

		if (!once || round == 1)
			draw(&t, tty, width);
		if (once && round == 1)
			break;
		/* A second to the next look; q on a terminal quits at once. */
		while (!stop && tp_now_ns() < due) {
			int ms = (int)((due - tp_now_ns()) / 1000000) + 1;
			char c;

			if (!raw_on) {
				poll(NULL, 0, ms);
				continue;
			}
			if (poll(&p, 1, ms) > 0 && read(STDIN_FILENO, &c, 1) == 1 &&
			    (c == 'q' || c == 'Q'))
				stop = 1;
		}
		if (!stop && look(&t))
			goto out;
	}
	ret = 0;
out:
	if (raw_on)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	store__close(t.store);
	free(t.rows);
	free(t.prev);
	return ret;
}
