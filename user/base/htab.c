// SPDX-License-Identifier: GPL-2.0
/* An open-addressing hash table from u64 keys to fixed-size values, for userspace aggregates. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"

static size_t slot_of(const struct htab *h, __u64 key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (h->cap - 1);
}

static int alloc_arrays(struct htab *h, size_t cap)
{
	h->keys = calloc(cap, sizeof(*h->keys));
	h->used = calloc(cap, 1);
	h->vals = calloc(cap, h->val_size);
	h->cap = cap;
	h->len = 0;
	if (!h->keys || !h->used || !h->vals) {
		free(h->keys);
		free(h->used);
		free(h->vals);
		memset(h, 0, offsetof(struct htab, val_size));
		return -ENOMEM;
	}
	return 0;
}

int htab__init(struct htab *h, size_t val_size)
{
	memset(h, 0, sizeof(*h));
	h->val_size = val_size;
	return alloc_arrays(h, 64);
}

void htab__fini(struct htab *h)
{
	if (!h)
		return;
	free(h->keys);
	free(h->used);
	free(h->vals);
	memset(h, 0, sizeof(*h));
}

static size_t find(const struct htab *h, __u64 key, bool *found)
{
	size_t i = slot_of(h, key);

	while (h->used[i]) {
		if (h->keys[i] == key) {
			*found = true;
			return i;
		}
		i = (i + 1) & (h->cap - 1);
	}
	*found = false;
	return i;
}

void *htab__get(const struct htab *h, __u64 key)
{
	bool found;
	size_t i;

	if (!h->cap)
		return NULL;
	i = find(h, key, &found);
	return found ? h->vals + i * h->val_size : NULL;
}

static int grow(struct htab *h)
{
	struct htab old = *h;

	if (alloc_arrays(h, old.cap * 2)) {
		*h = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		bool found;
		size_t j;

		if (!old.used[i])
			continue;
		j = find(h, old.keys[i], &found);
		h->used[j] = 1;
		h->keys[j] = old.keys[i];
		memcpy(h->vals + j * h->val_size, old.vals + i * old.val_size, h->val_size);
		h->len++;
	}
	free(old.keys);
	free(old.used);
	free(old.vals);
	return 0;
}

void *htab__put(struct htab *h, __u64 key)
{
	bool found;
	size_t i;

	if (!h->cap)
		return NULL;
	i = find(h, key, &found);
	if (found)
		return h->vals + i * h->val_size;
	if ((h->len + 1) * 10 > h->cap * 7) {
		if (grow(h))
			return NULL;
		i = find(h, key, &found);
	}
	h->used[i] = 1;
	h->keys[i] = key;
	memset(h->vals + i * h->val_size, 0, h->val_size);
	h->len++;
	return h->vals + i * h->val_size;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
void htab__del(struct htab *h, __u64 key)
{
	bool found;
	size_t i, j;

	if (!h->cap)
		return;
	i = find(h, key, &found);
	if (!found)
		return;
	h->used[i] = 0;
	h->len--;
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & (h->cap - 1);
		if (!h->used[j])
			return;
		home = slot_of(h, h->keys[j]);
		/* Move j back into the hole unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			h->used[i] = 1;
			h->keys[i] = h->keys[j];
			memcpy(h->vals + i * h->val_size, h->vals + j * h->val_size, h->val_size);
			h->used[j] = 0;
			i = j;
		}
	}
}

void *htab__next(const struct htab *h, size_t *pos, __u64 *key)
{
	for (; *pos < h->cap; (*pos)++) {
		if (h->used[*pos]) {
			*key = h->keys[*pos];
			return h->vals + (*pos)++ * h->val_size;
		}
	}
	return NULL;
}

/* FNV-1a, 64 bit. */
__u64 tp_hash_str(const char *s)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}
