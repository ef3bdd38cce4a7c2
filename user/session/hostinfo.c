// SPDX-License-Identifier: GPL-2.0
/* The host labels recorded with every task (docs/storage.md, table `labels`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "session/hostinfo.h"

const char *const host_label_keys[HOST_LABELS] = { "host",	 "kernel",    "cpu_model",
						   "ncpu",	 "mem_total", "instance_type",
						   "worker_pool" };

bool hostinfo_is_label(const char *key)
{
	for (int i = 0; i < HOST_LABELS; i++)
		if (!strcmp(key, host_label_keys[i]))
			return true;
	return false;
}

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
	out[i].key = (char *)host_label_keys[0];
	out[i++].val = put(&p, end, buf);
	out[i].key = (char *)host_label_keys[1];
	out[i++].val = put(&p, end, uname(&u) ? "unknown" : u.release);
	proc_field("/proc/cpuinfo", "model name", buf, sizeof(buf));
	out[i].key = (char *)host_label_keys[2];
	out[i++].val = put(&p, end, buf);
	snprintf(buf, sizeof(buf), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	out[i].key = (char *)host_label_keys[3];
	out[i++].val = put(&p, end, buf);
	proc_field("/proc/meminfo", "MemTotal", buf, sizeof(buf));
	snprintf(buf, sizeof(buf), "%llu", strtoull(buf, NULL, 10) * 1024ULL);
	out[i].key = (char *)host_label_keys[4];
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
	out[i].key = (char *)host_label_keys[5];
	out[i++].val = put(&p, end, buf[0] ? buf : "unknown");
	out[i].key = (char *)host_label_keys[6];
	out[i++].val = put(&p, end, cfg->worker_pool[0] ? cfg->worker_pool : "default");
}
