// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: metrics-socket lines, parsed and aggregated as the collector does. */
#include <stdint.h>
#include <string.h>

#include "model/user_metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct um_table t;
	static int ready;
	const char *p = (const char *)data, *end = p + size;
	struct um_line l;

	if (!ready) {
		if (um_table__init(&t))
			return 0;
		ready = 1;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);

		if (um_parse_line(p, len, &l) == UM_OK && l.kind <= UM_TIMER) {
			if (strlen(l.key) >= UM_KEY_MAX)
				__builtin_trap();
			um_table__add(&t, &l);
		}
		p += len + 1;
	}
	/* The table keeps its bound whatever arrives. */
	if (t.n > UM_NAMES_MAX)
		__builtin_trap();
	return 0;
}
