// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: `run` argument parsing, ids, labels and numbers from arbitrary words. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "cli/commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[34], *save, *tok;
	struct run_opts o;
	int argc = 0;
	__u64 v;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[argc++] = "run";
	/* Words separated by NUL-free newlines become arguments. */
	for (tok = strtok_r(copy, "\n", &save); tok && argc < 33; tok = strtok_r(NULL, "\n", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	tp_valid_id(argc > 1 ? argv[1] : "");
	tp_parse_u64(argc > 1 ? argv[1] : "", 86400, &v);
	/* Errors go to stderr: keep the fuzzer's output readable. */
	fflush(stderr);
	run_parse_args(argc, argv, &o);
	free(copy);
	return 0;
}
