// SPDX-License-Identifier: GPL-2.0
/*
 * The exec storm's worker: execs itself N times over, a chain in one process (no
 * fork, so the rate is the exec path's), then exits 0.
 *   execloop N
 * On x86-64 it is built without libc (-nostdlib -static): a few KiB that map nothing
 * and run no start-up code, so that the kernel's exec path is what is measured.
 */
#if defined(__x86_64__) && defined(EXECLOOP_NOLIBC)
typedef unsigned long ulong;

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

#define SYS_write 1
#define SYS_execve 59
#define SYS_exit 60

static void say(const char *s)
{
	ulong n = 0;

	while (s[n])
		n++;
	sys3(SYS_write, 2, (long)s, (long)n);
}

/* The kernel's initial stack: argc, argv[], NULL, envp[], NULL. */
__attribute__((used)) void start_c(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	char num[24], *p = num + sizeof(num) - 1;
	ulong n = 0;
	char *args[3];

	if (argc != 2) {
		say("usage: execloop N\n");
		sys3(SYS_exit, 2, 0, 0);
	}
	for (const char *s = argv[1]; *s >= '0' && *s <= '9'; s++)
		n = n * 10 + (ulong)(*s - '0');
	if (n == 0)
		sys3(SYS_exit, 0, 0, 0);
	n--;
	*p = '\0';
	do {
		*--p = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	args[0] = argv[0];
	args[1] = p;
	args[2] = 0;
	sys3(SYS_execve, (long)"/proc/self/exe", (long)args, (long)envp);
	say("execloop: exec failed\n");
	sys3(SYS_exit, 1, 0, 0);
}

__asm__(".globl _start\n"
	"_start:\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call start_c\n"
	"	hlt\n");
#else
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char next[24];
	long n;

	if (argc != 2 || (n = atol(argv[1])) < 0) {
		fprintf(stderr, "usage: execloop N\n");
		return 2;
	}
	if (n == 0)
		return 0;
	snprintf(next, sizeof(next), "%ld", n - 1);
	execl("/proc/self/exe", argv[0], next, (char *)NULL);
	perror("execloop: exec");
	return 1;
}
#endif
