// SPDX-License-Identifier: GPL-2.0
/*
 * The pin directory: the maps and links pinned there outlive this process, so that
 * the next collector (a daemon handing over) adopts them and misses no event.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector/collector.h"
#include "collector/collector_int.h"
#include "taskprobe.skel.h"

/* dir/maps/NAME and dir/links/PROGRAM: the pins of this collector's objects. */
static int pin_path(char *buf, size_t len, const char *dir, const char *kind, const char *name)
{
	return (size_t)snprintf(buf, len, "%s/%s/%s", dir, kind, name) < len ? 0 : -ENAMETOOLONG;
}

/* The .bss map: the per-slot switches (capture_args) old and new programs share. */
static bool is_bss(const struct bpf_map *m)
{
	const char *n = bpf_map__name(m);
	size_t len = strlen(n);

	return len >= 4 && !strcmp(n + len - 4, ".bss");
}

/* A map's name in the pin directory: bpffs takes no '.' in a name (".bss" is "bss"). */
static const char *pin_name(const struct bpf_map *m)
{
	return is_bss(m) ? "bss" : bpf_map__name(m);
}

/*
 * A link's name in the pin directory: its hook's, for the program of which one of two
 * is loaded (the switch with or without the run-queue histogram), so that a collector
 * whose config chose the other one adopts the one running, and never runs both.
 */
static const char *link_pin_name(const char *prog)
{
	return !strcmp(prog, "tp_sched_switch_runq") ? "tp_sched_switch" : prog;
}

/* Whether the pinned map fd has m's shape: another version's map is never taken. */
static bool map_fits(const struct bpf_map *m, int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) && info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) &&
	       info.map_flags == bpf_map__map_flags(m);
}

/*
 * The maps a collector before us pinned under dir, used in place of new ones, all or
 * none: the new programs and the old links then count into the same maps.
 */
int coll__reuse_pins(struct collector *c, const char *dir)
{
	char path[PATH_MAX];
	struct bpf_map *m;

	bpf_object__for_each_map(m, c->skel->obj)
	{
		int fd, err;

		if (bpf_map__is_internal(m) && !is_bss(m))
			continue;
		if (pin_path(path, sizeof(path), dir, "maps", pin_name(m)))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			snprintf(c->adopt_why, sizeof(c->adopt_why), "no map %s: %s", path,
				 strerror(errno));
			return err;
		}
		err = map_fits(m, fd) ? bpf_map__reuse_fd(m, fd) : -EPROTO;
		close(fd);
		if (err) {
			snprintf(
				c->adopt_why, sizeof(c->adopt_why),
				"map %s is not this version's (ABI %d) or this config's (max_tasks)",
				bpf_map__name(m), TP_ABI_VERSION);
			return err;
		}
	}
	return 0;
}

/*
 * The links pinned under dir for the programs this collector runs: kept attached (the
 * new programs of those hooks stay loaded, unattached), so that no event is missed or
 * counted twice while the collector changes hands. The others are attached anew.
 */
void coll__adopt_links(struct collector *c, const char *dir)
{
	const struct bpf_object_skeleton *sk = c->skel->skeleton;
	char path[PATH_MAX];

	for (int i = 0; i < sk->prog_cnt; i++) {
		if (!bpf_program__autoload(*sk->progs[i].prog) ||
		    pin_path(path, sizeof(path), dir, "links", link_pin_name(sk->progs[i].name)) ||
		    access(path, F_OK))
			continue;
		*sk->progs[i].link = bpf_link__open(path);
	}
}

/*
 * DIR/SUB made, or emptied: what is there was pinned by a collector that died, and a
 * link's programs stay attached until its pin goes (whatever its version named them).
 */
static int make_dir(const char *dir, const char *sub)
{
	char path[PATH_MAX], entry[PATH_MAX + 256];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (!sub || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(entry, sizeof(entry), "%s/%s", path, e->d_name);
			unlink(entry);
		}
	closedir(d);
	return 0;
}

/* Walks the pinnable objects: fn(c, kind, name, map or link, ctx) for each. */
static int each_pinnable(struct collector *c,
			 int (*fn)(const char *kind, const char *name, struct bpf_map *m,
				   struct bpf_link *l, void *ctx),
			 void *ctx)
{
	const struct bpf_object_skeleton *sk = c->skel->skeleton;
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_map(m,
				 c->skel->obj) if ((!bpf_map__is_internal(m) || is_bss(m)) && !err)
		err = fn("maps", pin_name(m), m, NULL, ctx);
	for (int i = 0; i < sk->prog_cnt && !err; i++)
		if (*sk->progs[i].link)
			err = fn("links", link_pin_name(sk->progs[i].name), NULL,
				 *sk->progs[i].link, ctx);
	return err;
}

static int pin_one(const char *kind, const char *name, struct bpf_map *m, struct bpf_link *l,
		   void *ctx)
{
	const char *dir = ctx;
	char path[PATH_MAX];
	int err = pin_path(path, sizeof(path), dir, kind, name);

	if (err)
		return err;
	/*
	 * libbpf pins no internal map, and no link it opened from a pin (an adopted one,
	 * whose old pin make_dir removed): those are pinned by their fd.
	 */
	if (m && bpf_map__is_internal(m))
		return bpf_obj_pin(bpf_map__fd(m), path) ? -errno : 0;
	if (l && bpf_link__pin_path(l))
		return bpf_obj_pin(bpf_link__fd(l), path) ? -errno : 0;
	return m ? bpf_map__pin(m, path) : bpf_link__pin(l, path);
}

static int unpin_one(const char *kind, const char *name, struct bpf_map *m, struct bpf_link *l,
		     void *ctx)
{
	char path[PATH_MAX];

	if (m && bpf_map__is_internal(m) && !pin_path(path, sizeof(path), ctx, kind, name))
		unlink(path);
	else if (m)
		bpf_map__unpin(m, NULL);
	else if (bpf_link__pin_path(l))
		bpf_link__unpin(l);
	return 0;
}

int coll__pin_late_link(struct collector *c, const char *name, struct bpf_link *l)
{
	return c->pin_dir[0] ? pin_one("links", name, NULL, l, c->pin_dir) : 0;
}

int collector__pin(struct collector *c, const char *dir)
{
	int err = make_dir(dir, NULL);

	if (!err)
		err = make_dir(dir, "maps");
	if (!err)
		err = make_dir(dir, "links");
	if (err)
		return err;
	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", dir);
	err = each_pinnable(c, pin_one, (void *)dir);
	if (err)
		collector__unpin(c);
	return err;
}

void collector__unpin(struct collector *c)
{
	char path[PATH_MAX];

	if (!c->pin_dir[0] || !c->skel)
		return;
	each_pinnable(c, unpin_one, c->pin_dir);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->pin_dir, i ? "links" : "maps");
		rmdir(path);
	}
	rmdir(c->pin_dir);
	c->pin_dir[0] = '\0';
}

bool collector__adopted(const struct collector *c, const char **why)
{
	if (why)
		*why = c && c->adopt_why[0] ? c->adopt_why : NULL;
	return c && c->adopted;
}

void collector__keep_pins(struct collector *c)
{
	if (c)
		c->keep_pins = true;
}
