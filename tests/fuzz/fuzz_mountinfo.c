// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the /proc/self/mountinfo parser that finds the cgroup2 mount. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collector/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[256];
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (!cgroup2_mount_from(f, buf, sizeof(buf)) && strlen(buf) >= sizeof(buf))
		__builtin_trap();
	fclose(f);
	return 0;
}
