// SPDX-License-Identifier: GPL-2.0
/* The spool: records a store could not take, as whole files, stored once it can. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/util.h"
#include "model/task_json.h"
#include "store/spool.h"
#include "store/store.h"

/* A spool file is read whole: a record with a day of 1 s series is far below this. */
#define SPOOL_FILE_MAX (64 << 20)
#define SPOOL_SUFFIX ".task"

/* The spool directory k (0: beside the database, 1: in memory) of db_path. */
static int spool_dir(const char *db_path, int k, char *out, size_t len)
{
	char abs[PATH_MAX], esc[PATH_MAX * 3];
	size_t o = 0;

	if (k == 0)
		return (size_t)snprintf(out, len, "%s.spool", db_path) >= len ? -ENAMETOOLONG : 0;
	if (db_path[0] == '/')
		snprintf(abs, sizeof(abs), "%s", db_path);
	else if (!getcwd(abs, sizeof(abs)) ||
		 (size_t)snprintf(abs + strlen(abs), sizeof(abs) - strlen(abs), "/%s", db_path) >=
			 sizeof(abs) - strlen(abs))
		return -ENAMETOOLONG;
	/* One directory name for the whole path: '/' and '%' escaped as in a URL. */
	for (const char *p = abs; *p && o + 4 < sizeof(esc); p++)
		o += (size_t)(*p == '/' || *p == '%'
				      ? snprintf(esc + o, sizeof(esc) - o, "%%%02X",
						 (unsigned char)*p)
				      : snprintf(esc + o, sizeof(esc) - o, "%c", *p));
	return (size_t)snprintf(out, len, "%s/%s", SPOOL_FALLBACK_DIR, esc) >= len ? -ENAMETOOLONG
										   : 0;
}

static int make_dirs(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	/* Records hold command lines: root's alone, as the database is. */
	if (mkdir(p, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static bool is_spooled(const char *name)
{
	size_t n = strlen(name), s = strlen(SPOOL_SUFFIX);

	return name[0] != '.' && n > s && !strcmp(name + n - s, SPOOL_SUFFIX);
}

static int dir_stat(const char *dir, struct spool_stats *out)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)))
		if (is_spooled(de->d_name) && !fstatat(dirfd(d), de->d_name, &st, 0)) {
			out->files++;
			out->bytes += (__u64)st.st_size;
		}
	closedir(d);
	return 0;
}

int spool__stat(const char *db_path, struct spool_stats *out)
{
	char dir[PATH_MAX];
	int err = 0;

	memset(out, 0, sizeof(*out));
	for (int k = 0; k < 2 && !err; k++)
		err = spool_dir(db_path, k, dir, sizeof(dir)) ?: dir_stat(dir, out);
	return err;
}

/* The header line, the record's line and the series block, into one buffer. */
static char *file_text(const struct task_record *rec, const struct label *host, int nhost,
		       const void *blob, size_t blen, size_t npts, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	struct jw w;

	if (!f)
		return NULL;
	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_ku64(&w, "spool", 1);
	jw_ku64(&w, "series_points", npts);
	jw_ku64(&w, "series_bytes", blen);
	jw_key(&w, "host_labels");
	jw_obj_begin(&w);
	for (int i = 0; i < nhost; i++)
		jw_kstr(&w, host[i].key, host[i].val);
	jw_obj_end(&w);
	jw_obj_end(&w);
	fputc('\n', f);
	jw_init(&w, f, false);
	task_record__write_json(&w, rec);
	fputc('\n', f);
	if (blen)
		fwrite(blob, 1, blen, f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* text into dir as name, whole or not at all (synced before the rename). */
static int write_file(const char *dir, const char *name, const char *text, size_t len)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd, err = 0;
	ssize_t n;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, name, (int)getpid()) >=
		    sizeof(tmp) ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && !err; off += (size_t)n) {
		n = write(fd, text + off, len - off);
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
	}
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int spool__save(const char *db_path, const struct task_record *rec, const struct label *host,
		int nhost, const struct series_point *pts, size_t npts, __u64 max_bytes,
		char *where, size_t wlen, char *why, size_t ylen)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	void *blob = NULL;
	size_t blen = 0, len = 0;
	char *text;
	int err = -EIO;

	if (npts && series_encode(pts, npts, &blob, &blen)) {
		blob = NULL;
		blen = npts = 0;
	}
	text = file_text(rec, host, nhost, blob, blen, npts, &len);
	free(blob);
	if (!text) {
		snprintf(why, ylen, "out of memory");
		return -ENOMEM;
	}
	snprintf(name, sizeof(name), "%llu-%s%s", (unsigned long long)rec->start_real_ns, rec->id,
		 SPOOL_SUFFIX);
	snprintf(why, ylen, "no spool directory");
	for (int k = 0; k < 2; k++) {
		struct spool_stats st = { 0 };
		int e = spool_dir(db_path, k, dir, sizeof(dir));

		if (!e)
			e = make_dirs(dir);
		if (!e)
			e = dir_stat(dir, &st);
		if (!e && st.bytes + len > max_bytes)
			e = -EDQUOT;
		if (!e)
			e = write_file(dir, name, text, len);
		if (!e) {
			snprintf(where, wlen, "%s/%s", dir, name);
			err = 0;
			break;
		}
		/* The first directory's reason is the one to fix; the fallback's is added. */
		if (k == 0)
			snprintf(why, ylen, "%s: %s", dir,
				 e == -EDQUOT ? "the spool is full (spool_max_mb)" : strerror(-e));
		else
			snprintf(why + strlen(why), ylen - strlen(why), "; %s: %s", dir,
				 e == -EDQUOT ? "full" : strerror(-e));
		err = e;
	}
	free(text);
	return err;
}

/* A spool file's parts, pointing into text (NUL-terminated lines). */
struct spooled {
	struct json *head;
	struct json *rec_json;
	const char *blob;
	size_t blen;
	size_t npts;
};

static int parse_file(char *text, size_t len, struct spooled *sp)
{
	char *nl1 = memchr(text, '\n', len), *nl2;
	size_t rest;

	memset(sp, 0, sizeof(*sp));
	if (!nl1)
		return -EINVAL;
	nl2 = memchr(nl1 + 1, '\n', len - (size_t)(nl1 + 1 - text));
	if (!nl2)
		return -EINVAL;
	sp->head = json_parse(text, (size_t)(nl1 - text), NULL, 0);
	sp->rec_json = json_parse(nl1 + 1, (size_t)(nl2 - nl1 - 1), NULL, 0);
	if (!sp->head || !sp->rec_json || json_num(sp->head, "spool") != 1)
		return -EINVAL;
	rest = len - (size_t)(nl2 + 1 - text);
	sp->blen = (size_t)json_num(sp->head, "series_bytes");
	sp->npts = (size_t)json_num(sp->head, "series_points");
	sp->blob = nl2 + 1;
	/* A file cut short is damaged: renames are whole, so this is not a torn write. */
	return rest == sp->blen && (sp->npts != 0) == (sp->blen != 0) ? 0 : -EINVAL;
}

/* One spool file into the store: 0 stored (or stored before), -EINVAL damaged, else -errno. */
static int store_file(struct store *st, int dfd, const char *name)
{
	struct task_record rec;
	struct label host[32];
	struct spooled sp;
	struct stat stt;
	char *text = NULL;
	int fd, err, nhost = 0;
	ssize_t n = 0;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Another drain holds it: its turn. */
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -EAGAIN;
	}
	err = fstat(fd, &stt) ? -errno : stt.st_size > SPOOL_FILE_MAX ? -EINVAL : 0;
	if (!err && stt.st_nlink == 0)
		err = -ENOENT; /* stored and removed by the drain before us */
	if (!err) {
		text = malloc((size_t)stt.st_size + 1);
		err = text ? 0 : -ENOMEM;
	}
	for (size_t off = 0; !err && off < (size_t)stt.st_size; off += (size_t)n) {
		n = read(fd, text + off, (size_t)stt.st_size - off);
		if (n <= 0)
			err = n < 0 ? -errno : -EINVAL;
	}
	if (!err) {
		text[stt.st_size] = '\0';
		err = parse_file(text, (size_t)stt.st_size, &sp);
	} else {
		memset(&sp, 0, sizeof(sp));
	}
	if (!err && task_record__from_json(&rec, sp.rec_json)) {
		task_record__fini(&rec);
		err = -EINVAL;
	}
	if (!err) {
		const struct json *h = json_get(sp.head, "host_labels");

		for (const struct json *l = h ? h->child : NULL; l && nhost < 32; l = l->next)
			if (l->type == JSON_STR)
				host[nhost++] = (struct label){ l->key, l->str };
		err = store__restore(st, &rec, host, nhost, sp.npts ? sp.blob : NULL, sp.blen,
				     sp.npts);
		task_record__fini(&rec);
	}
	if (!err && unlinkat(dfd, name, 0) && errno != ENOENT)
		err = -errno;
	if (err == -ENOENT)
		err = 0;
	json_free(sp.head);
	json_free(sp.rec_json);
	free(text);
	close(fd);
	return err;
}

/* The spooled names of dir, oldest first (their names begin with the start time). */
static int cmp_names(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strspn(x, "0123456789"), ly = strspn(y, "0123456789");

	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static int drain_dir(struct store *st, const char *dir, int max, __u64 deadline, int *stored)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!is_spooled(de->d_name))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap * 2 + 16) * sizeof(*nn));

			if (!nn)
				break;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n && !err && *stored < max && tp_now_ns() < deadline; i++) {
		int e = store_file(st, dirfd(d), names[i]);
		char bad[NAME_MAX + 8];

		if (!e) {
			(*stored)++;
		} else if (e == -EINVAL) {
			snprintf(bad, sizeof(bad), "%s.bad", names[i]);
			renameat(dirfd(d), names[i], dirfd(d), bad);
			tp_err("warning: spool file %s/%s is damaged: kept as %s, not stored", dir,
			       names[i], bad);
		} else if (e != -EAGAIN) {
			err = e; /* the store failed: the rest waits for the next drain */
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return err;
}

int spool__drain(struct store *st, const char *db_path, int max, __u64 budget_ns)
{
	__u64 deadline = tp_now_ns() + budget_ns;
	char dir[PATH_MAX];
	int stored = 0, err = 0;

	for (int k = 0; k < 2 && !err; k++)
		err = spool_dir(db_path, k, dir, sizeof(dir))
			      ?: drain_dir(st, dir, max, deadline, &stored);
	return err ? err : stored;
}
