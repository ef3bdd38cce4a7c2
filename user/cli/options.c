// SPDX-License-Identifier: GPL-2.0
/* The commands' shared options and their one error line (options.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "cli/options.h"
#include "store/query.h"

#define MAX_OPTIONS 40

static const struct {
	unsigned bit;
	struct option opt;
} shared[] = {
	{ SHARED_DB, { "db", required_argument, NULL, OPT_S_DB } },
	{ SHARED_CONFIG, { "config", required_argument, NULL, OPT_S_CONFIG } },
	{ SHARED_HOST, { "host", required_argument, NULL, OPT_S_HOST } },
	{ SHARED_JSON, { "json", no_argument, NULL, OPT_S_JSON } },
	{ SHARED_VERBOSE, { "verbose", no_argument, NULL, 'v' } },
	{ SHARED_OUTPUT, { "output", required_argument, NULL, OPT_S_OUTPUT } },
	{ 0, { "help", no_argument, NULL, 'h' } }, /* every command's */
};

void cli_option_error(const char *cmd, int opt, const char *arg)
{
	if (opt == ':')
		tp_err("%s: option '%.64s' needs a value; see 'taskprobe %s --help'", cmd, arg,
		       cmd);
	else
		tp_err("%s: unknown option '%.64s'; see 'taskprobe %s --help'", cmd, arg, cmd);
}

int cli_parse(int argc, char **argv, const struct cli_cmd *c, struct shared_opts *s)
{
	struct option opts[MAX_OPTIONS];
	char shorts[32];
	size_t n = 0;
	int opt, err;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; c->own && c->own[i].name && n < MAX_OPTIONS - ARRAY_SIZE(shared) - 1;)
		opts[n++] = c->own[i++];
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++)
		if (!shared[i].bit || (shared[i].bit & c->shared))
			opts[n++] = shared[i].opt;
	memset(&opts[n], 0, sizeof(opts[n]));
	snprintf(shorts, sizeof(shorts), ":h%s%s%s", c->shared & SHARED_VERBOSE ? "v" : "",
		 c->shared & SHARED_OUTPUT ? "o:" : "", c->own_short ? c->own_short : "");
	/* Errors in JSON too when --json is anywhere on the line, even after a bad option. */
	for (int i = 1; (c->shared & SHARED_JSON) && i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			tp_json_errors = 1;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		/* -o is --output where the command takes it; else it may be one of its own. */
		if (opt == 'o' && (c->shared & SHARED_OUTPUT))
			opt = OPT_S_OUTPUT;
		switch (opt) {
		case OPT_S_DB:
			s->db = optarg;
			break;
		case OPT_S_CONFIG:
			s->config = optarg;
			break;
		case OPT_S_HOST:
			if (!query_host_option(c->name, optarg))
				return -EINVAL;
			s->host = optarg;
			break;
		case OPT_S_JSON:
			s->json = true;
			break;
		case OPT_S_OUTPUT:
			s->output = optarg;
			break;
		case 'v':
			tp_verbose = 1;
			break;
		case 'h':
			fputs(c->usage, stdout);
			return 1;
		case ':':
		case '?':
			cli_option_error(c->name, opt, argv[optind - 1]);
			return -EINVAL;
		default:
			err = c->own_opt ? c->own_opt(c->ctx, opt, optarg) : -EINVAL;
			if (err)
				return err;
		}
	}
	return 0;
}
