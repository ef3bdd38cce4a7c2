// SPDX-License-Identifier: GPL-2.0
/* Uprobe attachment: ELF function offsets and uprobe_multi links (see uprobe.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "collector/uprobe.h"

/* From the kernel's uapi (6.6+); Debian's headers predate it. */
#define TP_BPF_LINK_CREATE 28
#define TP_BPF_TRACE_UPROBE_MULTI 48
#define TP_BPF_F_UPROBE_MULTI_RETURN 1

/* union bpf_attr as BPF_LINK_CREATE reads it for a uprobe_multi link. */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t um_flags;
	uint32_t pid;
	uint32_t pad;
};

/* The file offset of vaddr: through the loadable segment that maps it. */
static long vaddr_to_offset(Elf *elf, GElf_Addr vaddr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			return (long)(vaddr - ph.p_vaddr + ph.p_offset);
	}
	return -ENOENT;
}

/* Fills out[i] for each name of names found in this symbol table (still < 0). */
static void find_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *const *names, size_t n,
		    long *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nsyms = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < nsyms; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(elf, sh->sh_link, sym.st_name);
		for (size_t k = 0; s && k < n; k++)
			if (out[k] < 0 && !strcmp(s, names[k]))
				out[k] = vaddr_to_offset(elf, sym.st_value);
	}
}

int uprobe_func_offsets(const char *path, const char *const *names, size_t n, long *out)
{
	/* Exported functions are in .dynsym; .symtab (when not stripped) has the rest. */
	static const Elf64_Word tables[] = { SHT_DYNSYM, SHT_SYMTAB };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	for (size_t k = 0; k < n; k++)
		out[k] = -ENOENT;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == tables[t])
				find_in(elf, scn, &sh, names, n, out);
		}
	}
	elf_end(elf);
	close(fd);
	return 0;
}

bool uprobe_multi_supported(void)
{
	/* uprobe_multi came with 6.6; the load of the programs confirms it. */
	return tp_kernel_at_least(6, 6);
}

int uprobe_multi_attach(const struct bpf_program *prog, const char *path,
			const unsigned long *offsets, size_t n, bool retprobe)
{
	struct uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(prog);
	a.attach_type = TP_BPF_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cnt = (uint32_t)n;
	a.um_flags = retprobe ? TP_BPF_F_UPROBE_MULTI_RETURN : 0;
	fd = (int)syscall(__NR_bpf, TP_BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}
