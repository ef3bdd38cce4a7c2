// SPDX-License-Identifier: GPL-2.0
/* A task's record as JSON: written by the table of metrics, and read back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/collect_kinds.h"
#include "model/metric_descs.h"
#include "model/task_json.h"

static const char *const leftover_names[] = {
	[LEFTOVER_NONE] = "none",
	[LEFTOVER_EXITED] = "exited",
	[LEFTOVER_KILLED] = "killed",
	[LEFTOVER_KEPT] = "kept",
};

static void write_hist(struct jw *w, const char *name, const struct tp_hist *h, const char *unit)
{
	jw_key(w, name);
	jw_obj_begin(w);
	jw_kstr(w, "unit", unit);
	jw_ku64(w, "count", h->count);
	jw_ku64(w, "sum", h->sum);
	jw_ku64(w, "p50", tp_hist__quantile(h, 0.50));
	jw_ku64(w, "p99", tp_hist__quantile(h, 0.99));
	jw_key(w, "buckets");
	jw_arr_begin(w);
	for (unsigned i = 0; i < TP_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		jw_obj_begin(w);
		jw_ku64(w, "low", hist_slot_low(i));
		jw_ku64(w, "high", hist_slot_high(i));
		jw_ku64(w, "count", h->slots[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static const char *const um_kind_names[] = { "counter", "gauge", "timer" };

/* Counters by their total, gauges by their last value, timers by total ms and count. */
static void write_user_metric_values(struct jw *w, const struct um_table *um)
{
	char key[UM_KEY_MAX + 8];

	for (size_t i = 0; um && i < um->n; i++) {
		const struct um_metric *m = &um->m[i];

		jw_kdouble(w, m->key, m->kind == UM_GAUGE ? m->last : m->sum);
		if (m->kind == UM_TIMER) {
			snprintf(key, sizeof(key), "%s.count", m->key);
			jw_ku64(w, key, m->count);
		}
	}
}

static void write_user_metrics(struct jw *w, const struct um_table *um)
{
	jw_key(w, "user_metrics");
	jw_arr_begin(w);
	for (size_t i = 0; um && i < um->n; i++) {
		const struct um_metric *m = &um->m[i];

		jw_obj_begin(w);
		jw_kstr(w, "name", m->key);
		jw_kstr(w, "type", um_kind_names[m->kind]);
		jw_ku64(w, "count", m->count);
		jw_kdouble(w, "sum", m->sum);
		jw_kdouble(w, "last", m->last);
		jw_kdouble(w, "min", m->min);
		jw_kdouble(w, "max", m->max);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "metrics_socket");
	jw_obj_begin(w);
	jw_ku64(w, "accepted", um ? um->accepted : 0);
	jw_ku64(w, "rejected", um ? um_table__rejected_total(um) : 0);
	jw_key(w, "rejected_by_reason");
	jw_obj_begin(w);
	for (int r = 1; um && r < UM_REJECT_KINDS; r++)
		if (um->rejected[r])
			jw_ku64(w, um_reject_names[r], um->rejected[r]);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* A figure of a category the collector did not collect is left out of the record. */
static void write_metrics(struct jw *w, const struct task_record *t)
{
	const char *mem_src;

	task_record__mem_peak(t, &mem_src);
	jw_key(w, "metrics");
	jw_obj_begin(w);
	for (size_t i = 0; i < metric_descs_n; i++) {
		const struct metric_desc *d = &metric_descs[i];
		double v;

		if (!task_record__collected(t, d->name))
			continue;
		if (d->fig_off >= 0)
			jw_ku64(w, d->name, metric_desc__fig(d, t));
		else if (!metric_desc__get(d, t, &v))
			continue;
		else if (d->real)
			jw_kdouble(w, d->name, v);
		else
			jw_ku64(w, d->name, (__u64)v);
	}
	net_figures__write_metrics(w, &t->net, task_record__collected(t, "net."),
				   task_record__collected(t, "http."));
	write_user_metric_values(w, t->um);
	jw_obj_end(w);

	jw_key(w, "sources");
	jw_obj_begin(w);
	if (t->collect & COLLECT_CGROUP_ONLY) {
		/* No BPF: the cgroup's files are all there is. */
		jw_kstr(w, "cpu.time_ns", "cgroup:cpu.stat usage_usec");
		jw_kstr(w, "cpu.user_ns", "cgroup:cpu.stat");
		if (t->have_memory_peak)
			jw_kstr(w, "mem.peak_bytes", mem_src);
		jw_obj_end(w);
		return;
	}
	for (size_t i = 0; i < metric_descs_n; i++) {
		const struct metric_desc *d = &metric_descs[i];
		double v;

		if (d->source_key && task_record__collected(t, d->name) &&
		    metric_desc__get(d, t, &v))
			jw_kstr(w, d->source_key, d->source ? d->source : mem_src);
	}
	for (size_t i = 0; i < hist_descs_n; i++)
		if (hist_descs[i].source)
			jw_kstr(w, hist_descs[i].name, hist_descs[i].source);
	jw_kstr(w, "net.tcp",
		"bpf:inet_sock_set_state,tcp_receive_reset,tcp_send_reset,"
		"tcp_retransmit_skb");
	jw_kstr(w, "net.dns", "bpf:uprobe getaddrinfo");
	jw_kstr(w, "http",
		"bpf:cgroup_skb (plaintext), uprobes SSL_read/write(_ex), "
		"gnutls_record_recv/send (TLS); HTTP/1.x only");
	jw_obj_end(w);
}

void task_record__write_json(struct jw *w, const struct task_record *t)
{
	char when[40], what[64];

	jw_obj_begin(w);
	jw_ku64(w, "schema", TASK_RECORD_SCHEMA);
	jw_kstr(w, "id", t->id);
	jw_key(w, "command");
	jw_arr_begin(w);
	for (int i = 0; i < t->argc; i++)
		jw_str(w, t->argv[i]);
	jw_arr_end(w);
	jw_key(w, "labels");
	jw_obj_begin(w);
	for (int i = 0; i < t->nlabels; i++)
		jw_kstr(w, t->labels[i].key, t->labels[i].val);
	jw_obj_end(w);
	jw_kstr(w, "host", t->host);
	jw_kstr(w, "cgroup", t->cgroup);
	jw_kstr(w, "start", tp_fmt_time(when, sizeof(when), t->start_real_ns));
	jw_ku64(w, "start_ns", t->start_real_ns);
	jw_ku64(w, "wall_ns", t->wall_ns);
	jw_ku64(w, "main_wall_ns", t->main_wall_ns);
	jw_kstr(w, "status", task_status_names[t->end]);
	jw_key(w, "exit_code");
	if (t->end == TASK_EXITED)
		jw_i64(w, t->exit_code);
	else
		jw_null(w);
	jw_key(w, "signal");
	if (t->end == TASK_SIGNALED)
		jw_i64(w, t->signal);
	else
		jw_null(w);
	jw_key(w, "exit_status");
	if (t->end == TASK_RUNNING)
		jw_null(w);
	else
		jw_u64(w, (__u64)task_record__exit_status(t));

	write_metrics(w, t);
	if (t->have_cpu_stat) {
		jw_key(w, "cgroup_cpu_stat");
		jw_obj_begin(w);
		jw_ku64(w, "usage_usec", t->cpu_stat.usage_us);
		jw_ku64(w, "user_usec", t->cpu_stat.user_us);
		jw_ku64(w, "system_usec", t->cpu_stat.system_us);
		if (t->cpu_stat_note)
			jw_kstr(w, "note", t->cpu_stat_note);
		jw_obj_end(w);
	} else if (t->cpu_stat_note) {
		jw_key(w, "cgroup_cpu_stat");
		jw_null(w);
		jw_kstr(w, "cgroup_cpu_stat_note", t->cpu_stat_note);
	}
	jw_key(w, "leftovers");
	jw_obj_begin(w);
	jw_ku64(w, "count", (__u64)t->leftovers);
	jw_kstr(w, "action", leftover_names[t->leftover_action]);
	jw_obj_end(w);

	jw_key(w, "programs");
	jw_arr_begin(w);
	for (size_t i = 0; i < t->nprogs; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "path", t->progs[i].path);
		jw_ku64(w, "execs", t->progs[i].execs);
		jw_ku64(w, "cpu_ns", t->progs[i].cpu_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "log_anchors");
	jw_arr_begin(w);
	for (int i = 0; t->rules && i < t->rules->nanchors; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "rule", t->rules->r[t->rules->anchors[i].rule].name);
		jw_ku64(w, "line", t->rules->anchors[i].line);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "exec_args_truncated", t->exec_args_truncated);
	jw_key(w, "phases");
	if (t->phases)
		phases__write_json(w, t->phases);
	else
		jw_null(w);
	write_user_metrics(w, t->um);
	jw_key(w, "network");
	net_figures__write_json(w, &t->net);
	notes__write_json(w, &t->notes);
	procs__write_json(w, &t->procs);
	host_context__write_json(w, &t->hctx);

	jw_key(w, "histograms");
	jw_obj_begin(w);
	for (size_t i = 0; i < hist_descs_n; i++)
		if (task_record__collected(t, hist_descs[i].name))
			write_hist(w, hist_descs[i].name, hist_descs[i].at((struct task_record *)t),
				   hist_descs[i].unit);
	jw_obj_end(w);

	jw_key(w, "collector");
	jw_obj_begin(w);
	jw_kstr(w, "version", TP_VERSION);
	jw_ku64(w, "abi", TP_ABI_VERSION);
	jw_ku64(w, "lost_events_total", t->lost_total);
	jw_ku64(w, "skipped_runs", t->skipped_runs);
	jw_kstr(w, "mode", t->by_daemon ? "daemon" : "embedded");
	jw_kstr(w, "collect",
		collect_format(t->collect ? t->collect : COLLECT_ALL, what, sizeof(what)));
	jw_key(w, "faults");
	jw_arr_begin(w);
	for (int i = 0; i < t->nfaults; i++)
		jw_str(w, t->faults[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
}

static int write_record(FILE *f, void *ctx)
{
	struct jw w;

	jw_init(&w, f, true);
	task_record__write_json(&w, ctx);
	return 0;
}

int task_save_json(const char *path, const struct task_record *t)
{
	return tp_write_whole(path, write_record, (void *)t);
}

/* Buckets back into log2 slots: a bucket's slot follows from its low bound. */
static void hist_from_json(struct tp_hist *h, const struct json *j)
{
	const struct json *b = json_get(j, "buckets");

	h->count = (__u64)json_num(j, "count");
	h->sum = (__u64)json_num(j, "sum");
	for (size_t i = 0; i < json_len(b); i++) {
		const struct json *e = json_at(b, i);
		__u64 low = (__u64)json_num(e, "low");
		unsigned slot = low ? 64 - (unsigned)__builtin_clzll(low) : 0;

		if (slot < TP_HIST_SLOTS)
			h->slots[slot] = (__u64)json_num(e, "count");
	}
}

static int phases_from_json(struct task_record *t, const struct json *arr)
{
	struct phases *ph;

	if (!json_len(arr))
		return 0;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	t->phases_owned = ph;
	t->phases = ph;
	return phases__from_json(ph, arr);
}

/* The metrics socket's harvest as the record kept it: user_metrics, metrics_socket. */
static int um_from_json(struct task_record *t, const struct json *arr, const struct json *sock)
{
	const struct json *why = json_get(sock, "rejected_by_reason");
	struct um_table *um = calloc(1, sizeof(*um));

	if (!um || um_table__init(um)) {
		free(um);
		return -ENOMEM;
	}
	t->um_owned = um;
	t->um = um;
	for (size_t i = 0; i < json_len(arr); i++) {
		const struct json *e = json_at(arr, i);
		struct um_metric m = { 0 };

		snprintf(m.key, sizeof(m.key), "%s", json_str(e, "name"));
		for (int k = 0; k < (int)ARRAY_SIZE(um_kind_names); k++)
			if (!strcmp(json_str(e, "type"), um_kind_names[k]))
				m.kind = (enum um_kind)k;
		m.count = (__u64)json_num(e, "count");
		m.sum = json_num(e, "sum");
		m.last = json_num(e, "last");
		m.min = json_num(e, "min");
		m.max = json_num(e, "max");
		if (m.key[0] && um_table__put(um, &m))
			break;
	}
	um->accepted = (__u64)json_num(sock, "accepted");
	for (int r = 1; r < UM_REJECT_KINDS; r++)
		um->rejected[r] = (__u64)json_num(why, um_reject_names[r]);
	return 0;
}

/* Log anchors name their rule: a table of those names only, no pattern compiled. */
static int anchors_from_json(struct task_record *t, const struct json *arr)
{
	size_t n = json_len(arr);
	struct rules *rs;

	if (!n)
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	t->rules_owned = rs;
	t->rules = rs;
	for (size_t i = 0; i < n && rs->nanchors < ANCHORS_MAX; i++) {
		const struct json *e = json_at(arr, i);
		int r;

		if (!rules__named(rs, json_str(e, "rule"), &r))
			break;
		rules__anchor(rs, r, (__u64)json_num(e, "line"));
	}
	return 0;
}

int task_record__from_json(struct task_record *t, const struct json *j)
{
	const struct json *cmd = json_get(j, "command"), *labels = json_get(j, "labels");
	const struct json *m = json_get(j, "metrics"), *progs = json_get(j, "programs");
	const struct json *hists = json_get(j, "histograms"), *cs = json_get(j, "cgroup_cpu_stat");
	const struct json *left = json_get(j, "leftovers"), *srcs = json_get(j, "sources");
	size_t n = json_len(cmd);

	memset(t, 0, sizeof(*t));
	if (!j || j->type != JSON_OBJ || !m)
		return -EINVAL;
	snprintf(t->id, sizeof(t->id), "%s", json_str(j, "id"));
	t->argv_owned = calloc(n + 1, sizeof(char *));
	if (!t->argv_owned)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		t->argv_owned[i] = json_at(cmd, i)->type == JSON_STR ? json_at(cmd, i)->str : "";
	t->argv = t->argv_owned;
	t->argc = (int)n;
	for (const struct json *l = labels ? labels->child : NULL; l && t->nlabels < TP_LABELS_MAX;
	     l = l->next) {
		t->labels[t->nlabels].key = l->key;
		t->labels[t->nlabels++].val = l->type == JSON_STR ? l->str : "";
	}
	snprintf(t->host, sizeof(t->host), "%s", json_str(j, "host"));
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", json_str(j, "cgroup"));
	t->start_real_ns = json_u64(j, "start_ns");
	t->wall_ns = json_u64(j, "wall_ns");
	t->main_wall_ns = json_u64(j, "main_wall_ns");
	t->end = TASK_EXITED;
	for (int e = 0; e < TASK_END_KINDS; e++)
		if (!strcmp(json_str(j, "status"), task_status_names[e]))
			t->end = (enum task_end)e;
	t->exit_code = (int)json_num(j, "exit_code");
	t->signal = (int)json_num(j, "signal");
	for (size_t i = 0; i < metric_descs_n; i++)
		metric_desc__set(&metric_descs[i], t, json_num(m, metric_descs[i].name));
	host_context__from_json(&t->hctx, json_get(j, "host_context"));
	if (!strncmp(json_str(srcs, "mem.peak_bytes"), "cgroup", 6)) {
		t->have_memory_peak = true;
		t->memory_peak_source = json_str(srcs, "mem.peak_bytes");
		t->memory_peak = (__u64)json_num(m, "mem.peak_bytes");
	}
	t->cpu_stat_note = json_get(j, "cgroup_cpu_stat_note") ? json_str(j, "cgroup_cpu_stat_note")
			   : json_get(cs, "note")	       ? json_str(cs, "note")
							       : NULL;
	if (cs && cs->type == JSON_OBJ) {
		t->have_cpu_stat = true;
		t->cpu_stat.usage_us = (__u64)json_num(cs, "usage_usec");
		t->cpu_stat.user_us = (__u64)json_num(cs, "user_usec");
		t->cpu_stat.system_us = (__u64)json_num(cs, "system_usec");
	}
	t->leftovers = (int)json_num(left, "count");
	for (int a = LEFTOVER_NONE; a <= LEFTOVER_KEPT; a++)
		if (!strcmp(json_str(left, "action"), leftover_names[a]))
			t->leftover_action = (enum leftover_action)a;
	if (net_figures__from_json(&t->net, m, json_get(j, "network")))
		return -ENOMEM;
	for (size_t i = 0; i < hist_descs_n; i++)
		hist_from_json(hist_descs[i].at(t), json_get(hists, hist_descs[i].name));
	t->lost_total = (__u64)json_num(json_get(j, "collector"), "lost_events_total");
	t->skipped_runs = (__u64)json_num(json_get(j, "collector"), "skipped_runs");
	t->by_daemon = !strcmp(json_str(json_get(j, "collector"), "mode"), "daemon");
	{
		const char *why;

		const char *what = json_str(json_get(j, "collector"), "collect");
		const struct json *faults = json_get(json_get(j, "collector"), "faults");

		/* Records from before collect: everything. */
		if (!strcmp(what, "cgroup"))
			t->collect = COLLECT_CGROUP_ONLY;
		else if (collect_parse(what, &t->collect, &why))
			t->collect = COLLECT_ALL;
		for (size_t i = 0; i < json_len(faults); i++)
			if (json_at(faults, i)->type == JSON_STR)
				task_record__add_fault(t, "%s", json_at(faults, i)->str);
	}
	t->exec_args_truncated = (__u64)json_num(j, "exec_args_truncated");
	if (phases_from_json(t, json_get(j, "phases")) ||
	    um_from_json(t, json_get(j, "user_metrics"), json_get(j, "metrics_socket")) ||
	    anchors_from_json(t, json_get(j, "log_anchors")))
		return -ENOMEM;
	if (notes__from_json(&t->notes, json_get(j, "events"),
			     (__u64)json_num(j, "events_dropped")) ||
	    procs__from_json(&t->procs, json_get(j, "processes"),
			     (__u64)json_num(j, "processes_dropped")))
		return -EINVAL;
	n = json_len(progs);
	if (n) {
		t->progs = calloc(n, sizeof(*t->progs));
		if (!t->progs)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			const struct json *p = json_at(progs, i);

			snprintf(t->progs[i].path, TP_PATH_LEN, "%s", json_str(p, "path"));
			t->progs[i].execs = (__u64)json_num(p, "execs");
			t->progs[i].cpu_ns = (__u64)json_num(p, "cpu_ns");
		}
		t->nprogs = n;
	}
	return 0;
}
