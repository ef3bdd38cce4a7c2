// SPDX-License-Identifier: GPL-2.0
/*
 * Loads and attaches the empty programs of floor.bpf.o, says "ready" on stdout, and
 * keeps them attached until stdin closes or SIGTERM/SIGINT.
 *   floor FLOOR.bpf.o
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	int err, n = 0;
	char c;

	if (argc != 2) {
		fprintf(stderr, "usage: floor FLOOR.bpf.o\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "floor: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "floor: cannot load %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	bpf_object__for_each_program(prog, obj)
	{
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "floor: cannot attach %s: %s\n", bpf_program__name(prog),
				strerror(errno));
			return 1;
		}
		n++;
	}
	/* No SA_RESTART: a signal ends the read below. */
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	sigaction(SIGINT, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	printf("ready %d\n", n);
	fflush(stdout);
	while (!stop && read(0, &c, 1) > 0)
		;
	bpf_object__close(obj);
	return 0;
}
