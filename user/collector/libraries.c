// SPDX-License-Identifier: GPL-2.0
/*
 * The calls of libc, OpenSSL and GnuTLS probed in every copy of those libraries that
 * the host or a traced process maps (a container brings its own), and let go at free.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "collector/collector.h"
#include "collector/collector_int.h"
#include "collector/uprobe.h"
#include "taskprobe.skel.h"

/* The libraries whose calls are probed, by file name as the dynamic linker maps them. */
static const char *const lib_names[LIB_KINDS] = { "libc.so.6", "libssl.so.3", "libgnutls.so.30" };

/*
 * A new program maps its libraries after the exec event, and may dlopen one much
 * later: its mappings are looked at 50 ms, 300 ms and 2 s after the exec.
 */
void coll__queue_lib_scan(struct collector *c, int tgid)
{
	if (c->nscans >= MAX_SCANS)
		return;
	c->scans[c->nscans++] = (struct lib_scan){ coll_mono_ns() + 50000000ull, tgid, 3 };
}

struct probe {
	enum lib_kind lib;
	const char *func;
	bool ret;
};

static const struct probe probes[] = {
	{ LIB_C, "getaddrinfo", false },
	{ LIB_C, "getaddrinfo", true },
	{ LIB_C, "execve", true },
	{ LIB_SSL, "SSL_write", false },
	{ LIB_SSL, "SSL_write_ex", false },
	{ LIB_SSL, "SSL_read", false },
	{ LIB_SSL, "SSL_read", true },
	{ LIB_SSL, "SSL_read_ex", false },
	{ LIB_SSL, "SSL_read_ex", true },
	{ LIB_SSL, "SSL_free", false },
	{ LIB_GNUTLS, "gnutls_record_send", false },
	{ LIB_GNUTLS, "gnutls_record_recv", false },
	{ LIB_GNUTLS, "gnutls_record_recv", true },
	{ LIB_GNUTLS, "gnutls_deinit", false },
};

static struct bpf_program *probe_prog(struct collector *c, const struct probe *p)
{
	struct taskprobe_bpf *k = c->skel;

	if (p->ret && !strcmp(p->func, "execve"))
		return k->progs.tp_execve_ret;
	if (p->ret)
		return p->lib == LIB_C ? k->progs.tp_getaddrinfo_ret : k->progs.tp_tls_read_ret;
	if (p->lib == LIB_C)
		return k->progs.tp_getaddrinfo;
	if (!strcmp(p->func, "SSL_free"))
		return k->progs.tp_ssl_free;
	if (!strcmp(p->func, "gnutls_deinit"))
		return k->progs.tp_gnutls_deinit;
	if (p->lib == LIB_GNUTLS)
		return strstr(p->func, "send") ? k->progs.tp_gnutls_send : k->progs.tp_gnutls_recv;
	if (strstr(p->func, "write"))
		return k->progs.tp_ssl_write;
	return strstr(p->func, "_ex") ? k->progs.tp_ssl_read_ex : k->progs.tp_ssl_read;
}

/* One uprobe_multi link per program: all its functions in this copy at once. */
static void attach_lib_multi(struct collector *c, enum lib_kind lib, const char *path)
{
	const char *names[ARRAY_SIZE(probes)];
	long off[ARRAY_SIZE(probes)];
	bool done[ARRAY_SIZE(probes)] = { false };

	for (size_t i = 0; i < ARRAY_SIZE(probes); i++)
		names[i] = probes[i].lib == lib ? probes[i].func : "";
	if (uprobe_func_offsets(path, names, ARRAY_SIZE(probes), off))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		struct bpf_program *prog = probe_prog(c, &probes[i]);
		unsigned long offs[ARRAY_SIZE(probes)];
		size_t n = 0;
		int fd;

		if (probes[i].lib != lib || done[i] || bpf_program__fd(prog) < 0)
			continue;
		/* This probe and every later one of the same program and direction. */
		for (size_t k = i; k < ARRAY_SIZE(probes); k++) {
			if (probes[k].lib != lib || probes[k].ret != probes[i].ret ||
			    probe_prog(c, &probes[k]) != prog)
				continue;
			done[k] = true;
			if (off[k] < 0) {
				c->lib_attach_errors++;
				tp_verbose_log("no %s in %s", probes[k].func, path);
				continue;
			}
			offs[n++] = (unsigned long)off[k];
		}
		if (!n)
			continue;
		fd = uprobe_multi_attach(prog, path, offs, n, probes[i].ret);
		if (fd < 0) {
			c->lib_attach_errors++;
			tp_verbose_log("cannot probe %s in %s: %s", probes[i].func, path,
				       strerror(-fd));
			continue;
		}
		if (!coll_grow((void **)&c->ufds, c->nufds, sizeof(*c->ufds))) {
			close(fd);
			continue;
		}
		c->ufds[c->nufds++] = fd;
	}
}

/* Probes one copy of a library (a path that opens it); each copy once, by inode. */
static void attach_lib(struct collector *c, enum lib_kind lib, const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	for (int i = 0; i < c->nlibs; i++)
		if (c->libs[i].dev == st.st_dev && c->libs[i].ino == st.st_ino)
			return;
	if (c->nlibs >= MAX_LIBS) {
		c->lib_attach_errors++;
		return;
	}
	c->libs[c->nlibs++] = (struct lib_copy){ st.st_dev, st.st_ino, lib };
	if (c->uprobe_multi) {
		attach_lib_multi(c, lib, path);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = probes[i].func,
			    .retprobe = probes[i].ret);
		struct bpf_link *l;

		if (probes[i].lib != lib || bpf_program__fd(probe_prog(c, &probes[i])) < 0)
			continue;
		l = bpf_program__attach_uprobe_opts(probe_prog(c, &probes[i]), -1, path, 0, &uo);
		if (!l) {
			c->lib_attach_errors++;
			tp_verbose_log("cannot probe %s in %s: %s", probes[i].func, path,
				       strerror(errno));
			continue;
		}
		if (!coll_grow((void **)&c->links, c->nlinks, sizeof(*c->links))) {
			bpf_link__destroy(l);
			continue;
		}
		c->links[c->nlinks++] = l;
	}
}

static int lib_kind_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (int k = 0; k < LIB_KINDS; k++)
		if (!strcmp(base, lib_names[k]))
			return k;
	return -1;
}

/* The library copies a process has mapped, reached through its root (containers). */
static void scan_process_libs(struct collector *c, int tgid)
{
	char maps[64], line[PATH_MAX + 128], path[PATH_MAX + 64];
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", tgid);
	f = fopen(maps, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		int kind;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		kind = lib_kind_of(p);
		if (kind < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/root%s", tgid, p);
		attach_lib(c, (enum lib_kind)kind, path);
	}
	fclose(f);
}

/* The host's own copies, and the one this process uses, probed at start. */
void coll__attach_host_libs(struct collector *c)
{
	static const char *const dirs[] = { "/lib/x86_64-linux-gnu",
					    "/usr/lib/x86_64-linux-gnu",
					    "/lib/aarch64-linux-gnu",
					    "/usr/lib/aarch64-linux-gnu",
					    "/lib64",
					    "/usr/lib64",
					    "/lib",
					    "/usr/lib" };
	char path[PATH_MAX];

	scan_process_libs(c, getpid());
	for (int k = 0; k < LIB_KINDS; k++)
		for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
			snprintf(path, sizeof(path), "%s/%s", dirs[d], lib_names[k]);
			attach_lib(c, (enum lib_kind)k, path);
		}
}

void collector__tick(struct collector *c, __u64 now)
{
	for (int i = 0; i < c->nscans;) {
		struct lib_scan *s = &c->scans[i];

		if (s->due_ns > now) {
			i++;
			continue;
		}
		scan_process_libs(c, s->tgid);
		if (--s->left > 0) {
			s->due_ns = now + (s->left == 2 ? 250000000ull : 1700000000ull);
			i++;
		} else {
			*s = c->scans[--c->nscans];
		}
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* In a child: closes every fd but the n in keep (sorted here). */
static void close_all_but(int *keep, size_t n)
{
	int lo = 0;

	qsort(keep, n, sizeof(*keep), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] > lo)
			close_range((unsigned)lo, (unsigned)keep[i] - 1, 0);
		lo = keep[i] + 1;
	}
	close_range((unsigned)lo, ~0u, 0);
}

/*
 * Detaching a uprobe waits for the kernel's tracing grace periods, one after another
 * (~80 ms each on this VM, ~0.9 s for all of them). A detached grandchild holds the
 * links until this process has dropped its own references, then lets them go and
 * waits; this process goes on at once. The probes drop every call meanwhile (no
 * cgroup is tracked any more).
 */
static void release_links(struct bpf_link **links, size_t n, int *fds, size_t nfds)
{
	int p[2] = { -1, -1 };
	pid_t pid = n + nfds && !pipe2(p, O_CLOEXEC) ? fork() : -1;

	if (pid == 0) {
		if (fork() == 0) {
			int *keep = calloc(n + nfds + 1, sizeof(*keep));
			char b;

			if (keep) {
				for (size_t i = 0; i < n; i++)
					keep[i] = bpf_link__fd(links[i]);
				for (size_t i = 0; i < nfds; i++)
					keep[n + i] = fds[i];
				keep[n + nfds] = p[0];
				/* Nothing else: not stdio, the database or its lock, pipes. */
				close_all_but(keep, n + nfds + 1);
				/* EOF: the parent's references are gone; ours are the last. */
				while (read(p[0], &b, 1) > 0)
					;
			}
			_exit(0);
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	for (size_t i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
}

void coll__release_libs(struct collector *c)
{
	release_links(c->links, c->nlinks, c->ufds, c->nufds);
	free(c->links);
	free(c->ufds);
}

int collector__probed_libs(const struct collector *c, const char *name)
{
	int n = 0;

	for (int i = 0; i < c->nlibs; i++)
		n += !strcmp(lib_names[c->libs[i].kind], name);
	return n;
}
