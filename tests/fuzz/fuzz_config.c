// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the config file parser, and the series block decoder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
#include "model/config.h"
#include "model/rules.h"
#include "model/series.h"
#include "store/sink.h"

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
	config__defaults(&c);
	config__parse(&c, "fuzz.conf", text);
	if (c.retain_days < 1 || c.max_db_mb < 1 || c.db[0] != '/')
		__builtin_trap();
	/* A sink the parser took is one the shipper takes: never one with a password. */
	{
		char why[320];

		if (c.sink[0] && conninfo_check(c.sink, NULL, 0, why, sizeof(why)))
			__builtin_trap();
	}
	/* The same text as a rule line, compiled or refused; then matched against itself. */
	{
		static struct rules rs;
		static struct um_table um;
		static int ready;

		if (!ready && !um_table__init(&um))
			ready = 1;
		rules__init(&rs);
		if (strlen(text) < 512 && !rules__add(&rs, "fuzz", 1, text) &&
		    !rules__finish(&rs) && ready) {
			rules__output_line(&rs, text, strlen(text), &um);
			rules__exec(&rs, text, strlen(text), &um);
		}
		rules__fini(&rs);
	}
	/* The same bytes as a stored series block: refused or decoded, never a crash. */
	series_decode(data, size, &pts, &n);
	free(pts);
	free(text);
	return 0;
}
