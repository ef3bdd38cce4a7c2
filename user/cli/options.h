/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The options the commands share (--db, --config, --host, --json, --help, -v), parsed
 * once for all of them, and the one line a bad option gets.
 */
#ifndef TP_OPTIONS_H
#define TP_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>

/* Which shared options a command takes (--help always). */
#define SHARED_DB (1u << 0)
#define SHARED_CONFIG (1u << 1)
#define SHARED_HOST (1u << 2)	 /* a fleet's host glob (query_host_option) */
#define SHARED_JSON (1u << 3)	 /* --json as a switch: output, and errors, as JSON */
#define SHARED_VERBOSE (1u << 4) /* -v, --verbose */
#define SHARED_OUTPUT (1u << 5)	 /* -o, --output FILE: written whole, or not at all */

/* getopt values of the shared options; a command's own stay below OPT_SHARED. */
enum { OPT_SHARED = 0x1000, OPT_S_DB, OPT_S_CONFIG, OPT_S_HOST, OPT_S_JSON, OPT_S_OUTPUT };

struct shared_opts {
	const char *db;
	const char *config;
	const char *host;
	const char *output; /* NULL: stdout */
	bool json;
};

struct cli_cmd {
	const char *name;	  /* "export": what its messages start with */
	const char *usage;	  /* printed by --help */
	unsigned shared;	  /* SHARED_* */
	const struct option *own; /* the command's own long options, { 0 }-ended, or NULL */
	const char *own_short;	  /* its short ones for getopt ("o:"), or NULL */
	/* One of its own options: 0, or -EINVAL once its one error line is said. */
	int (*own_opt)(void *ctx, int opt, char *arg);
	void *ctx;
};

/*
 * getopt_long over argv (argv[0] the command's name): the shared options into s, the
 * command's own to c->own_opt. 0 with optind at the first operand; 1 once --help has
 * printed the usage; -EINVAL once one error line has been said.
 */
int cli_parse(int argc, char **argv, const struct cli_cmd *c, struct shared_opts *s);
/* The one line for an option getopt refused: opt is ':' (no value) or '?' (unknown). */
void cli_option_error(const char *cmd, int opt, const char *arg);

#endif /* TP_OPTIONS_H */
