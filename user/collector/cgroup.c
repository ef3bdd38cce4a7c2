// SPDX-License-Identifier: GPL-2.0
/* cgroup v2 helpers: find the mount, make a task's cgroup, read and kill it, remove it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/mount.h>

#include "base/util.h"
#include "collector/cgroup.h"

/* Where the host mounts cgroup2, when we reach it through a mount of our own. */
static char display_root[PATH_MAX];

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

int cgroup2_mount_from(FILE *mountinfo, char *buf, size_t len)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	while (getline(&line, &cap, mountinfo) > 0) {
		char *sep = strstr(line, " - "), *save, *mnt, *fstype;
		int field = 0;

		if (!sep)
			continue;
		fstype = strtok_r(sep + 3, " ", &save);
		if (!fstype || strcmp(fstype, "cgroup2"))
			continue;
		*sep = '\0';
		mnt = NULL;
		for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++field == 5) {
				mnt = tok;
				break;
			}
		if (!mnt)
			continue;
		unescape_octal(mnt);
		if (strlen(mnt) >= len) {
			err = -ENAMETOOLONG;
			continue;
		}
		strcpy(buf, mnt);
		err = 0;
		break;
	}
	free(line);
	return err;
}

static int mount_from(const char *mountinfo, char *buf, size_t len)
{
	FILE *f = fopen(mountinfo, "re");
	int err;

	if (!f)
		return -errno;
	err = cgroup2_mount_from(f, buf, len);
	fclose(f);
	return err;
}

/*
 * A cgroup2 mount of our own, attached nowhere (fsopen/fsmount, Linux 5.2+): the same
 * hierarchy, reached through its fd, kept open for the process's life.
 */
static int detached_cgroup2(void)
{
	static int fd = -1;
	int fs;

	if (fd >= 0)
		return fd;
	fs = (int)syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (!syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
		fd = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	close(fs);
	return fd >= 0 ? fd : -errno;
}

int cgroup2_mount(char *buf, size_t len)
{
	char mnt[PATH_MAX];
	int err = mount_from("/proc/self/mountinfo", buf, len), fd;

	if (err != -ENOENT)
		return err;
	/*
	 * Not in this mount namespace, though the host has it: `ip netns exec` remounts
	 * /sys, and cgroup2 with it. The hierarchy is the same one; mount it where only
	 * this process sees it.
	 */
	if (mount_from("/proc/1/mountinfo", mnt, sizeof(mnt)))
		return -ENOENT;
	fd = detached_cgroup2();
	if (fd < 0)
		return -ENOENT;
	snprintf(display_root, sizeof(display_root), "%s", mnt);
	return (size_t)snprintf(buf, len, "/proc/self/fd/%d", fd) >= len ? -ENAMETOOLONG : 0;
}

const char *cgroup_display(const char *path, char *buf, size_t len)
{
	const char *rel;

	if (!display_root[0] || strncmp(path, "/proc/self/fd/", 14))
		return path;
	rel = strchr(path + 14, '/');
	snprintf(buf, len, "%s%s", display_root, rel ? rel : "");
	return buf;
}

int cgroup_id(const char *path, __u64 *id)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	*id = st.st_ino;
	return 0;
}

/*
 * Where cgroup2 has the memory controller (unified hosts), turn it on down to task
 * cgroups so that memory.peak exists. A hybrid host binds it to v1: nothing to do.
 */
static void enable_memory(const char *root, const char *parent)
{
	char file[PATH_MAX], buf[512];

	snprintf(file, sizeof(file), "%s/cgroup.controllers", root);
	if (tp_read_file(file, buf, sizeof(buf)) <= 0 || !strstr(buf, "memory"))
		return;
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", root);
	tp_write_file(file, "+memory");
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", parent);
	tp_write_file(file, "+memory");
}

/* Where the v1 memory controller is mounted (hybrid hosts), from a mountinfo stream. */
static int memory_v1_mount(FILE *f, char *buf, size_t len)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	while (err && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - "), *save, *fstype, *opts, *mnt = NULL;
		int field = 0;

		if (!sep)
			continue;
		fstype = strtok_r(sep + 3, " ", &save);
		strtok_r(NULL, " ", &save); /* source */
		opts = strtok_r(NULL, " \n", &save);
		if (!fstype || strcmp(fstype, "cgroup") || !opts ||
		    (strncmp(opts, "memory,", 7) && strcmp(opts, "memory") &&
		     !strstr(opts, ",memory,") &&
		     (strlen(opts) < 7 || strcmp(opts + strlen(opts) - 7, ",memory"))))
			continue;
		*sep = '\0';
		for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++field == 5) {
				mnt = tok;
				break;
			}
		if (mnt && strlen(mnt) < len) {
			unescape_octal(mnt);
			strcpy(buf, mnt);
			err = 0;
		}
	}
	free(line);
	return err;
}

/* Our own v1 memory cgroup's directory (the mirrors go below it), or -ENOENT. */
static int v1_memory_parent(char *path, size_t len)
{
	char mnt[PATH_MAX], own[4096], *line, *save;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err;

	if (!f)
		return -errno;
	err = memory_v1_mount(f, mnt, sizeof(mnt));
	fclose(f);
	if (err)
		return err;
	/* Under our own memory cgroup: the limits set on us stay on the task. */
	if (tp_read_file("/proc/self/cgroup", own, sizeof(own)) <= 0)
		return -ENOENT;
	for (line = strtok_r(own, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *rel = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!rel)
			continue;
		*rel = '\0';
		if (strcmp(ctl + 1, "memory"))
			continue;
		return (size_t)snprintf(path, len, "%s%s", mnt,
					strcmp(rel + 1, "/") ? rel + 1 : "") >= len
			       ? -ENAMETOOLONG
			       : 0;
	}
	return -ENOENT;
}

int cgroup_v1_memory_make(const char *id, char *path, size_t len)
{
	char parent[PATH_MAX];
	int err = v1_memory_parent(parent, sizeof(parent));

	if (err)
		return err;
	if ((size_t)snprintf(path, len, "%s/taskprobe-%s", parent, id) >= len)
		return -ENAMETOOLONG;
	if (!mkdir(path, 0755))
		return 0;
	/* Left by a run that died: empty, so it can go (a populated one is another's). */
	if (errno != EEXIST || rmdir(path) || mkdir(path, 0755))
		return -errno;
	return 0;
}

/* The number a cgroup file starts with: -ENODATA when it starts with none. */
static int parse_u64(const char *buf, __u64 *v)
{
	char *end;

	*v = strtoull(buf, &end, 10);
	return end == buf ? -ENODATA : 0;
}

int cgroup_read_u64(const char *path, const char *file, __u64 *v)
{
	char full[PATH_MAX], buf[64];
	ssize_t n;

	snprintf(full, sizeof(full), "%s/%s", path, file);
	n = tp_read_file(full, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return parse_u64(buf, v);
}

int cgroup_read_fd_u64(int fd, __u64 *v)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return parse_u64(buf, v);
}

int cgroup_lock_task(const char *path, bool exclusive)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB)) {
		close(fd);
		return -EBUSY;
	}
	/* Removed between our open and our lock (by a sweep): its files are gone. */
	if (fstatat(fd, "cgroup.procs", &st, 0)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

int cgroup_make_task(const char *root, const char *id, char *path, size_t len, int *lock_fd)
{
	char parent[PATH_MAX];
	struct stat st;
	int fd;

	*lock_fd = -1;
	if ((size_t)snprintf(parent, sizeof(parent), "%s/taskprobe", root) >= sizeof(parent) ||
	    (size_t)snprintf(path, len, "%s/%s", parent, id) >= len)
		return -ENAMETOOLONG;
	/* A concurrent run may remove an empty parent between our mkdirs (or a sweep our
	 * new cgroup before we hold it): retry. */
	for (int tries = 0; tries < 10; tries++) {
		if (mkdir(parent, 0755) && errno != EEXIST)
			return -errno;
		enable_memory(root, parent);
		if (!mkdir(path, 0755)) {
			fd = cgroup_lock_task(path, false);
			if (fd == -ENOENT)
				continue;
			if (fd < 0)
				return fd;
			*lock_fd = fd;
			return 0;
		}
		if (errno == ENOENT)
			continue;
		if (errno != EEXIST)
			return -errno;
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		/* Held by a live run or daemon (it may not have started its command yet). */
		fd = cgroup_lock_task(path, true);
		if (fd == -EBUSY || cgroup_populated(path) != 0) {
			if (fd >= 0)
				close(fd);
			return -EEXIST;
		}
		/* Left by a run that died: nothing runs there, so it can go. */
		if (fd >= 0 && rmdir(path) && errno != ENOENT) {
			close(fd);
			return -EEXIST;
		}
		if (fd >= 0)
			close(fd);
	}
	return -EAGAIN;
}

/* rmdir can fail with EBUSY while exiting tasks still pin the cgroup: wait a little. */
static int rmdir_patient(const char *path)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 200; i++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

static int remove_tree(const char *path, int depth)
{
	char child[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (depth > 64)
		return -ELOOP;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, de->d_name) >=
		    sizeof(child))
			continue;
		if (!err)
			err = remove_tree(child, depth + 1);
	}
	closedir(d);
	if (err)
		return err;
	return rmdir_patient(path);
}

int cgroup_remove_task(const char *path)
{
	char parent[PATH_MAX];
	char *slash;
	int err;

	err = remove_tree(path, 0);
	if (err)
		return err;
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		/* Fails harmlessly while other tasks run. */
		if (!strcmp(strrchr(parent, '/') ? strrchr(parent, '/') + 1 : parent, "taskprobe"))
			rmdir(parent);
	}
	return 0;
}

static int read_key_values(const char *path, const char *const *keys, __u64 *vals, int n)
{
	char buf[4096];
	ssize_t len = tp_read_file(path, buf, sizeof(buf));
	int found = 0;

	if (len < 0)
		return (int)len;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		for (int i = 0; i < n; i++)
			if (!strcmp(line, keys[i])) {
				vals[i] = strtoull(sp + 1, NULL, 10);
				found++;
			}
	}
	return found;
}

int cgroup_read_cpu_stat(const char *path, struct cg_cpu_stat *st)
{
	static const char *const keys[] = { "usage_usec", "user_usec", "system_usec" };
	char file[PATH_MAX];
	__u64 vals[3] = { 0 };
	int n;

	snprintf(file, sizeof(file), "%s/cpu.stat", path);
	n = read_key_values(file, keys, vals, 3);
	if (n < 0)
		return n;
	if (n < 3)
		return -ENODATA;
	st->usage_us = vals[0];
	st->user_us = vals[1];
	st->system_us = vals[2];
	return 0;
}

int cgroup_populated(const char *path)
{
	static const char *const keys[] = { "populated" };
	char file[PATH_MAX];
	__u64 v = 0;
	int n;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	n = read_key_values(file, keys, &v, 1);
	if (n < 0)
		return n;
	return n == 1 ? v != 0 : -ENODATA;
}

static int for_each_proc(const char *path, int depth, int (*fn)(pid_t, void *), void *arg)
{
	char file[PATH_MAX], *line = NULL;
	size_t cap = 0;
	struct dirent *de;
	FILE *f;
	DIR *d;
	int err = 0;

	if (depth > 64)
		return -ELOOP;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	f = fopen(file, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (!err && getline(&line, &cap, f) > 0)
		err = fn((pid_t)atoi(line), arg);
	free(line);
	fclose(f);
	if (err)
		return err;
	d = opendir(path);
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		err = for_each_proc(file, depth + 1, fn, arg);
	}
	closedir(d);
	return err;
}

static int count_one(pid_t pid, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

int cgroup_for_each_proc(const char *path, int (*fn)(pid_t pid, void *arg), void *arg)
{
	return for_each_proc(path, 0, fn, arg);
}

int cgroup_count_procs(const char *path)
{
	int n = 0, err = for_each_proc(path, 0, count_one, &n);

	return err ? err : n;
}

static int kill_one(pid_t pid, void *arg)
{
	if (pid > 0)
		kill(pid, SIGKILL);
	return 0;
}

int cgroup_kill(const char *path)
{
	char file[PATH_MAX];
	int err;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	err = tp_write_file(file, "1");
	if (err != -ENOENT)
		return err;
	return for_each_proc(path, 0, kill_one, NULL);
}

int cgroup_events_fd(const char *path)
{
	char file[PATH_MAX];
	int fd;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A v1 mirror is swept once this old: it is made empty, a moment before the command. */
#define SWEEP_V1_AGE_S 60

/* Our empty v1 memory mirrors whose task's cgroup2 directory is gone. */
static int sweep_v1(const char *root)
{
	char parent[PATH_MAX], path[PATH_MAX], twin[PATH_MAX], buf[16];
	struct dirent *de;
	struct stat st;
	int n = 0;
	DIR *d;

	if (v1_memory_parent(parent, sizeof(parent)))
		return 0;
	d = opendir(parent);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		const char *id = de->d_name + strlen("taskprobe-");

		if (de->d_type != DT_DIR || strncmp(de->d_name, "taskprobe-", 10) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) >=
			    sizeof(path) ||
		    (size_t)snprintf(twin, sizeof(twin), "%s/taskprobe/%s", root, id) >=
			    sizeof(twin))
			continue;
		if (stat(path, &st) || time(NULL) - st.st_mtime < SWEEP_V1_AGE_S ||
		    !access(twin, F_OK))
			continue;
		/* An empty cgroup.procs: nobody is charged there now. */
		snprintf(twin, sizeof(twin), "%s/cgroup.procs", path);
		if (tp_read_file(twin, buf, sizeof(buf)) == 0 && !rmdir(path))
			n++;
	}
	closedir(d);
	return n;
}

int cgroup_sweep(const char *root)
{
	char parent[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *d;

	if ((size_t)snprintf(parent, sizeof(parent), "%s/taskprobe", root) >= sizeof(parent))
		return -ENAMETOOLONG;
	d = opendir(parent);
	if (!d)
		return errno == ENOENT ? sweep_v1(root) : -errno;
	while ((de = readdir(d))) {
		int fd;

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) >=
			    sizeof(path))
			continue;
		/* Held: a live run's or daemon's. Free and empty: its owner died. */
		fd = cgroup_lock_task(path, true);
		if (fd < 0)
			continue;
		if (cgroup_populated(path) == 0 && !remove_tree(path, 0))
			n++;
		close(fd);
	}
	closedir(d);
	rmdir(parent); /* fails harmlessly while tasks run */
	return n + sweep_v1(root);
}
