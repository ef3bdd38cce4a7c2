// SPDX-License-Identifier: GPL-2.0
/* A task's memory figures from its cgroup's files, or from BPF where it has none. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "collector/memsrc.h"

/* memory.peak opened for reading and for resets of its own: -errno where it takes none. */
static int open_v2_peak(const char *cgroup)
{
	char path[PATH_MAX];
	__u64 v;
	int fd, err;

	snprintf(path, sizeof(path), "%s/memory.peak", cgroup);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Before 6.12 the file is read-only: the write fails, and BPF keeps the peaks. */
	if (pwrite(fd, "reset\n", 6, 0) != 6) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	err = cgroup_read_fd_u64(fd, &v);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

void memsrc__open(struct memsrc *m, const char *cgroup, const char *memcg)
{
	memset(m, 0, sizeof(*m));
	m->peak_fd = -1;
	m->kind = MEMSRC_BPF;
	if (cgroup && cgroup[0]) {
		int fd = open_v2_peak(cgroup);

		if (fd >= 0) {
			m->kind = MEMSRC_V2;
			m->peak_fd = fd;
			snprintf(m->dir, sizeof(m->dir), "%s", cgroup);
			return;
		}
	}
	if (memcg && memcg[0] &&
	    !cgroup_read_u64(memcg, "memory.max_usage_in_bytes", &(__u64){ 0 })) {
		m->kind = MEMSRC_V1;
		snprintf(m->dir, sizeof(m->dir), "%s", memcg);
	}
}

void memsrc__close(struct memsrc *m)
{
	if (m->peak_fd >= 0)
		close(m->peak_fd);
	m->peak_fd = -1;
}

int memsrc__now(const struct memsrc *m, __u64 *bytes)
{
	switch (m->kind) {
	case MEMSRC_V2:
		return cgroup_read_u64(m->dir, "memory.current", bytes);
	case MEMSRC_V1:
		return cgroup_read_u64(m->dir, "memory.usage_in_bytes", bytes);
	default:
		return -ENOTSUP;
	}
}

int memsrc__take_peak(struct memsrc *m, __u64 *bytes)
{
	char path[PATH_MAX];
	int err;

	switch (m->kind) {
	case MEMSRC_V2:
		err = cgroup_read_fd_u64(m->peak_fd, bytes);
		if (!err && pwrite(m->peak_fd, "reset\n", 6, 0) != 6)
			err = -errno;
		return err;
	case MEMSRC_V1:
		/*
		 * Read, then reset to the usage now: a peak reached between the two
		 * (microseconds) is in neither the phase before nor the one after.
		 */
		err = cgroup_read_u64(m->dir, "memory.max_usage_in_bytes", bytes);
		if (err)
			return err;
		if (*bytes > m->v1_peak)
			m->v1_peak = *bytes;
		snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", m->dir);
		return tp_write_file(path, "0");
	default:
		return -ENOTSUP;
	}
}

int memsrc__v1_task_peak(const struct memsrc *m, __u64 *bytes)
{
	int err;

	if (m->kind != MEMSRC_V1)
		return -ENOTSUP;
	err = cgroup_read_u64(m->dir, "memory.max_usage_in_bytes", bytes);
	if (err)
		return err;
	if (m->v1_peak > *bytes)
		*bytes = m->v1_peak;
	return 0;
}
