// SPDX-License-Identifier: GPL-2.0
/* The test runner: runs every registered test (or those named), prints one closing line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

#define MAX_TESTS 256
#define TEST_TIMEOUT_S 300

static const struct tp_test *tests[MAX_TESTS];
static int ntests;
static bool cur_failed;
static jmp_buf skip_jmp;
static const char *skip_reason;

static const char *const tier_names[] = { "unit", "bpf", "e2e" };

void tp_register(const struct tp_test *t)
{
	if (ntests < MAX_TESTS)
		tests[ntests++] = t;
}

bool tp_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return true;
	cur_failed = true;
	fprintf(stderr, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return false;
}

bool tp_test_failed(void)
{
	return cur_failed;
}

void tp_skip(const char *why)
{
	skip_reason = why;
	longjmp(skip_jmp, 1);
}

/* setjmp lives in a frame of its own so that no caller's locals can be clobbered. */
static void run_one(const struct tp_test *t)
{
	if (!setjmp(skip_jmp))
		t->fn();
}

enum { RES_PASS = 0, RES_FAIL = 1, RES_SKIP = 77 };

/* In a child process of its own: a crash or a hang fails one test, not the run. */
static int run_isolated(const struct tp_test *t, const char **why)
{
	static char reason[256];
	int pipefd[2], status;
	__u64 deadline;
	pid_t pid;

	*why = NULL;
	if (pipe(pipefd))
		return RES_FAIL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		setpgid(0, 0);
		cur_failed = false;
		skip_reason = NULL;
		run_one(t);
		tu_cleanup();
		if (skip_reason && write(pipefd[1], skip_reason, strlen(skip_reason)) < 0)
			_exit(RES_FAIL);
		fflush(NULL);
		_exit(skip_reason ? RES_SKIP : cur_failed ? RES_FAIL : RES_PASS);
	}
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		return RES_FAIL;
	}
	deadline = tp_now_ns() + TEST_TIMEOUT_S * 1000000000ULL;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (tp_now_ns() > deadline) {
			fprintf(stderr, "    timed out after %d s\n", TEST_TIMEOUT_S);
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			tu_cleanup_orphans(pid);
			close(pipefd[0]);
			return RES_FAIL;
		}
		usleep(10000);
	}
	/* Whatever the test started in its process group goes with it. */
	kill(-pid, SIGKILL);
	memset(reason, 0, sizeof(reason));
	if (read(pipefd[0], reason, sizeof(reason) - 1) > 0)
		*why = reason;
	close(pipefd[0]);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "    crashed: %s\n", strsignal(WTERMSIG(status)));
		tu_cleanup_orphans(pid);
		return RES_FAIL;
	}
	return WEXITSTATUS(status);
}

static bool selected(const struct tp_test *t, int argc, char **argv)
{
	if (argc <= 1)
		return true;
	for (int i = 1; i < argc; i++)
		if (strstr(t->name, argv[i]) || !strcmp(argv[i], tier_names[t->tier]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	bool allow_skip =
		getenv("TASKPROBE_ALLOW_SKIP") && !strcmp(getenv("TASKPROBE_ALLOW_SKIP"), "1");
	int passed = 0, failed = 0, skipped = 0;

	char dbdir[] = "/var/tmp/taskprobe-test-db.XXXXXX", db[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * Tasks the tests run go to a database of the run's own, never the host's, and no
	 * run finds the host's daemon: only one that a test starts itself.
	 */
	if (mkdtemp(dbdir)) {
		snprintf(db, sizeof(db), "%s/tp.db", dbdir);
		setenv("TASKPROBE_DB", db, 0);
		snprintf(db, sizeof(db), "%s/control.sock", dbdir);
		setenv("TASKPROBE_CONTROL", db, 0);
		/* A daemon pins nothing on the host's bpffs (nor mounts one); the pin test's own. */
		setenv("TASKPROBE_PIN_DIR", "off", 0);
	} else {
		dbdir[0] = '\0';
	}
	for (int tier = TIER_UNIT; tier <= TIER_E2E; tier++) {
		for (int i = 0; i < ntests; i++) {
			const struct tp_test *t = tests[i];

			if ((int)t->tier != tier || !selected(t, argc, argv))
				continue;
			const char *why = NULL;
			int res;

			if (t->tier != TIER_UNIT && geteuid() != 0) {
				res = RES_SKIP;
				why = "needs root";
			} else {
				res = run_isolated(t, &why);
			}
			if (res == RES_SKIP) {
				printf("%s %s/%s: %s\n", allow_skip ? "SKIP" : "FAIL (skipped)",
				       tier_names[t->tier], t->name, why ? why : "skipped");
				if (allow_skip)
					skipped++;
				else
					failed++;
			} else if (res != RES_PASS) {
				printf("FAIL %s/%s\n", tier_names[t->tier], t->name);
				failed++;
			} else {
				printf("ok   %s/%s\n", tier_names[t->tier], t->name);
				passed++;
			}
		}
	}
	if (dbdir[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dbdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dbdir);
	}
	if (skipped)
		printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	else
		printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
