// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the pressure (PSI) file parser of the host context. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/hostctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	__u64 some = 1, full = 1;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	/* Refused: both zero. Taken: a "some" line with a total was there. */
	if (psi_parse(text, &some, &full) && (some || full))
		__builtin_trap();
	if (!psi_parse(text, &some, &full) && !strstr(text, "some "))
		__builtin_trap();
	free(text);
	return 0;
}
