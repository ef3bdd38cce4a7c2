// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the JSON parser, the writer re-reading what it parsed, and a
 * stored task record read back and summarised (as `show` does with a damaged row).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "model/task.h"
#include "model/task_json.h"
#include "view/summary.h"

static void write_value(struct jw *w, const struct json *j)
{
	switch (j->type) {
	case JSON_NULL:
		jw_null(w);
		break;
	case JSON_BOOL:
		jw_bool(w, j->b);
		break;
	case JSON_NUM:
		jw_double(w, j->num);
		break;
	case JSON_STR:
		jw_str(w, j->str);
		break;
	case JSON_ARR:
	case JSON_OBJ:
		if (j->type == JSON_ARR)
			jw_arr_begin(w);
		else
			jw_obj_begin(w);
		for (const struct json *m = j->child; m; m = m->next) {
			if (j->type == JSON_OBJ)
				jw_key(w, m->key);
			write_value(w, m);
		}
		if (j->type == JSON_ARR)
			jw_arr_end(w);
		else
			jw_obj_end(w);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128], *buf = NULL;
	size_t len = 0;
	struct json *j = json_parse((const char *)data, size, err, sizeof(err));
	struct json *again;
	struct jw w;
	FILE *f;

	if (!j)
		return 0;
	/* Whatever parses must survive a round trip through the writer. */
	f = open_memstream(&buf, &len);
	jw_init(&w, f, false);
	write_value(&w, j);
	fclose(f);
	again = json_parse(buf, len, err, sizeof(err));
	if (!again)
		abort();
	json_free(again);
	{
		struct task_record t;
		FILE *nul = fopen("/dev/null", "w");

		if (!task_record__from_json(&t, j) && nul)
			task_record__print_summary(nul, &t);
		if (nul)
			fclose(nul);
		task_record__fini(&t);
	}
	json_free(j);
	free(buf);
	return 0;
}
