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
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "uprobe.h"

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

static long find_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (s && !strcmp(s, name))
			return vaddr_to_offset(elf, sym.st_value);
	}
	return -ENOENT;
}

long uprobe_func_offset(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long off = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	/* Exported functions are in .dynsym; .symtab (when not stripped) has the rest. */
	while (off < 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			off = find_in(elf, scn, &sh, name);
	}
	for (scn = NULL; off < 0 && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			off = find_in(elf, scn, &sh, name);
	}
	elf_end(elf);
	close(fd);
	return off;
}

bool uprobe_multi_supported(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	/* uprobe_multi came with 6.6; the load of the programs confirms it. */
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 6);
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
