// SPDX-License-Identifier: GPL-2.0
/* What a collector collects: the names, and which figures each one gives. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/collect_kinds.h"

static const struct {
	const char *name;
	unsigned bit;
} kinds[] = {
	{ "cpu", COLLECT_CPU }, { "io", COLLECT_IO },	  { "mem", COLLECT_MEM },
	{ "net", COLLECT_NET }, { "http", COLLECT_HTTP }, { "runq", COLLECT_RUNQ },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

int collect_parse(const char *s, unsigned *mask, const char **why)
{
	unsigned m = 0;

	*why = "collect takes cpu, io, mem, net, http and runq, comma-separated, or all (http "
	       "needs net)";
	if (!strcmp(s, "all")) {
		*mask = COLLECT_ALL;
		return 0;
	}
	while (*s) {
		size_t n = strcspn(s, ","), k = 0;

		while (k < NKINDS && (strlen(kinds[k].name) != n || strncmp(s, kinds[k].name, n)))
			k++;
		if (k == NKINDS)
			return -EINVAL;
		m |= kinds[k].bit;
		s += n;
		if (*s == ',' && !*++s)
			return -EINVAL;
	}
	if (!m || ((m & COLLECT_HTTP) && !(m & COLLECT_NET)))
		return -EINVAL;
	*mask = m;
	return 0;
}

const char *collect_format(unsigned mask, char *buf, size_t len)
{
	size_t used = 0;

	if (mask & COLLECT_CGROUP_ONLY) {
		snprintf(buf, len, "cgroup");
		return buf;
	}
	if ((mask & COLLECT_ALL) == COLLECT_ALL) {
		snprintf(buf, len, "all");
		return buf;
	}
	buf[0] = '\0';
	for (size_t k = 0; k < NKINDS; k++)
		if ((mask & kinds[k].bit) && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						 kinds[k].name);
	if (!buf[0])
		snprintf(buf, len, "none");
	return buf;
}

bool collect_has(unsigned mask, const char *name, bool mem_from_cgroup)
{
	static const struct {
		const char *prefix;
		unsigned bit;
	} needs[] = {
		/* cpu.user_ns, cpu.system_ns and cpu.peak_cores are the cgroup's cpu.stat */
		{ "cpu.time_ns", COLLECT_CPU },
		{ "cpu.avg_cores", COLLECT_CPU },
		{ "cpu.runq_latency", COLLECT_RUNQ },
		{ "cpu.runq_wait_ns", COLLECT_CPU },
		/* io.read_bytes, write_bytes, rchar, wchar: each thread's ioac at its exit */
		{ "io.read_ops", COLLECT_IO },
		{ "io.write_ops", COLLECT_IO },
		{ "io.blk_", COLLECT_IO },
		{ "io.merged_bios", COLLECT_IO },
		{ "io.latency", COLLECT_IO },
		{ "proc.oom_kills", COLLECT_MEM },
		{ "net.", COLLECT_NET },
		{ "http.", COLLECT_HTTP },
	};

	/* cpu.stat's usage stands for the sched_switch sum; the series has its cores. */
	static const char *const from_cgroup[] = { "cpu.time_ns", "cpu.avg_cores", "cpu.user_ns",
						   "cpu.system_ns", "cpu.peak_cores" };

	if (!strcmp(name, "mem.peak_bytes"))
		return mem_from_cgroup || (mask & COLLECT_MEM && !(mask & COLLECT_CGROUP_ONLY));
	/* The host around the task and pressure: the kernel's files, with or without BPF. */
	if (!strncmp(name, "host.", 5) || !strncmp(name, "psi.", 4))
		return true;
	if (mask & COLLECT_CGROUP_ONLY) {
		for (size_t i = 0; i < sizeof(from_cgroup) / sizeof(from_cgroup[0]); i++)
			if (!strcmp(name, from_cgroup[i]))
				return true;
		return false;
	}
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (!strncmp(name, needs[i].prefix, strlen(needs[i].prefix)))
			return (mask & needs[i].bit) != 0;
	return true;
}
