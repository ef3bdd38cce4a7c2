// SPDX-License-Identifier: GPL-2.0
/* Loads empty.bpf.o, runs a workload (argv[2]) and prints ns per event of each program. */
#include <stdio.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *p;

	if (argc < 3)
		return 2;
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj))
		return 1;
	bpf_object__for_each_program(p, obj)
		if (!bpf_program__attach(p))
			return 1;
	if (system(argv[2]) != 0)
		return 1;
	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len);
		printf("%-26s %10llu events %8.1f ns/event\n", bpf_program__name(p),
		       (unsigned long long)info.run_cnt,
		       info.run_cnt ? (double)info.run_time_ns / info.run_cnt : 0.0);
	}
	return 0;
}
