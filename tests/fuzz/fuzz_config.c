// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the config file parser, and the series block decoder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "series.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct series_point *pts = NULL;
	char *text = malloc(size + 1);
	struct config c;
	size_t n = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	config_defaults(&c);
	config_parse(&c, "fuzz.conf", text);
	if (c.retain_days < 1 || c.max_db_mb < 1 || c.db[0] != '/')
		__builtin_trap();
	/* The same bytes as a stored series block: refused or decoded, never a crash. */
	series_decode(data, size, &pts, &n);
	free(pts);
	free(text);
	return 0;
}
