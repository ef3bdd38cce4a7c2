/* SPDX-License-Identifier: GPL-2.0 */
/* cgroup v2 helpers: find the mount, make a task's cgroup, read and kill it, remove it. */
#ifndef TP_CGROUP_H
#define TP_CGROUP_H

#include <stdbool.h>
#include <sys/types.h>
#include <stdio.h>
#include <linux/types.h>

#include "model/figures.h"

/*
 * Where the cgroup2 hierarchy is, from /proc/self/mountinfo; in a mount namespace
 * without it (`ip netns exec`), a mount of our own reached as /proc/self/fd/N.
 * -ENOENT if the host has none.
 */
int cgroup2_mount(char *buf, size_t len);
/* A cgroup's path as the host's mount shows it (for records and messages). */
const char *cgroup_display(const char *path, char *buf, size_t len);
/* The same over any mountinfo stream (for tests). */
int cgroup2_mount_from(FILE *mountinfo, char *buf, size_t len);

/* The cgroup id BPF sees (bpf_get_current_cgroup_id()): the directory's inode number. */
int cgroup_id(const char *path, __u64 *id);

/*
 * Creates ROOT/taskprobe/ID for a new task, held (a shared flock on the directory, in
 * *lock_fd) until its owner closes it: a sweep never takes a held cgroup. A leftover,
 * empty and unheld directory of a dead run with the same id is replaced; a populated
 * or held one is -EEXIST.
 */
int cgroup_make_task(const char *root, const char *id, char *path, size_t len, int *lock_fd);
/* The flock of a task's cgroup (shared, or exclusive for a sweep): the fd, or -EBUSY, -errno. */
int cgroup_lock_task(const char *path, bool exclusive);
/*
 * Removes what dead runs and daemons left: ROOT/taskprobe/ID directories nobody holds
 * and nothing runs in, and our empty v1 memory mirrors whose ID is gone. How many.
 */
int cgroup_sweep(const char *root);
/*
 * Hybrid hosts, whose memory controller is v1: a memory cgroup for the task below
 * this process's own (taskprobe-ID), whose memory.max_usage_in_bytes is the kernel's
 * charge. -ENOENT where v1 has no memory controller.
 */
int cgroup_v1_memory_make(const char *id, char *path, size_t len);
/* Removes the task's cgroup, its descendants first, then ROOT/taskprobe when empty. */
int cgroup_remove_task(const char *path);

int cgroup_read_cpu_stat(const char *path, struct cg_cpu_stat *st);
/* A file holding one number (memory.peak); -ENOENT where the controller is off. */
int cgroup_read_u64(const char *path, const char *file, __u64 *v);
/* The same from a cgroup file held open, read from its start. */
int cgroup_read_fd_u64(int fd, __u64 *v);
/* 1 if any process is in the subtree, 0 if none, or -errno. */
int cgroup_populated(const char *path);
/* Processes in the subtree (threads not counted). */
int cgroup_count_procs(const char *path);
/* fn(pid, arg) for each process in the subtree, stopping at a non-zero return: 0 or it. */
int cgroup_for_each_proc(const char *path, int (*fn)(pid_t pid, void *arg), void *arg);
/* SIGKILL every process of the subtree: cgroup.kill, or one by one before Linux 5.14. */
int cgroup_kill(const char *path);
/* Opens cgroup.events for polling (EPOLLPRI signals a change of "populated"). */
int cgroup_events_fd(const char *path);

#endif /* TP_CGROUP_H */
