// SPDX-License-Identifier: GPL-2.0
/* The host labels recorded with every task (SPEC section 6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hostinfo.h"

/* The value after "key" and a colon in a /proc text file, trimmed. */
static void proc_field(const char *file, const char *key, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(file, "re");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *v, *e;

		if (!colon || strncmp(line, key, strlen(key)))
			continue;
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		e = v + strcspn(v, "\n");
		*e = '\0';
		snprintf(out, len, "%s", v);
		break;
	}
	fclose(f);
}

static char *put(char **p, char *end, const char *s)
{
	char *start = *p;
	size_t n = strlen(s);

	if (*p + n + 1 > end)
		n = (size_t)(end - *p) - 1;
	memcpy(*p, s, n);
	(*p)[n] = '\0';
	*p += n + 1;
	return start;
}

void hostinfo_labels(const struct config *cfg, struct label out[HOST_LABELS], char *store,
		     size_t store_len)
{
	char *p = store, *end = store + store_len, buf[256];
	const char *it = getenv("TASKPROBE_INSTANCE_TYPE");
	struct utsname u;
	size_t i = 0;

	gethostname(buf, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	out[i].key = "host";
	out[i++].val = put(&p, end, buf);
	out[i].key = "kernel";
	out[i++].val = put(&p, end, uname(&u) ? "unknown" : u.release);
	proc_field("/proc/cpuinfo", "model name", buf, sizeof(buf));
	out[i].key = "cpu_model";
	out[i++].val = put(&p, end, buf);
	snprintf(buf, sizeof(buf), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	out[i].key = "ncpu";
	out[i++].val = put(&p, end, buf);
	proc_field("/proc/meminfo", "MemTotal", buf, sizeof(buf));
	snprintf(buf, sizeof(buf), "%llu", strtoull(buf, NULL, 10) * 1024ULL);
	out[i].key = "mem_total";
	out[i++].val = put(&p, end, buf);
	/* Config first, then the environment, then what the firmware calls the machine. */
	if (cfg->instance_type[0])
		snprintf(buf, sizeof(buf), "%s", cfg->instance_type);
	else if (it && *it)
		snprintf(buf, sizeof(buf), "%.200s", it);
	else if (tp_read_file("/sys/class/dmi/id/product_name", buf, sizeof(buf)) > 0)
		buf[strcspn(buf, "\n")] = '\0';
	else
		snprintf(buf, sizeof(buf), "unknown");
	out[i].key = "instance_type";
	out[i++].val = put(&p, end, buf[0] ? buf : "unknown");
	out[i].key = "worker_pool";
	out[i++].val = put(&p, end, cfg->worker_pool[0] ? cfg->worker_pool : "default");
}
