/* cg_archive.c — reading and writing static archives (`ar` files) without binutils.
 *
 * `--emit lib` ships one archive holding the model's object and every member of libflowrt, so users link
 * a single file. Writing the format here keeps flowc independent of an `ar` program (only --emit exe
 * needs a toolchain) and works for any target flowc generates for.
 *
 * Reading accepts what toolchains write: the System V/GNU layout ("!<arch>\n", `name/` short names, a
 * `//` table for long names, `/` or `/SYM64/` symbol indexes, which are skipped), BSD names (`#1/LEN`,
 * the name at the start of the data) and GNU thin archives ("!<thin>\n", whose members stay in their own
 * files, named relative to the archive — meson writes uninstalled static libraries that way). Every header
 * field and offset is checked against the file's size; files are mapped, not read, so a model object of
 * gigabytes of weights is never copied into memory.
 *
 * Writing produces the GNU layout with deterministic headers (time, uid and gid 0, mode 644): a symbol
 * index, which linkers require (GNU ld refuses an archive without one), then the long-name table, then
 * the members, each padded to an even offset. The index lists the global symbols each ELF member defines,
 * read from its .symtab (ELF32/64, either byte order); it uses 32-bit offsets, or the `/SYM64/` form when
 * the archive grows beyond 4 GiB.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cg_emit.h"

#define AR_MAGIC "!<arch>\n"
#define AR_THIN_MAGIC "!<thin>\n"
#define AR_HDR 60

/* A file mapped read-only (size 0: data NULL, nothing mapped). */
typedef struct Mapping {
  void *data;
  size_t size;
} Mapping;

struct FcArchive {
  FcArchiveMember *members;
  int n, cap;
  Mapping *maps;
  int n_maps, cap_maps;
};

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) fc_die(__FILE__, __LINE__, "out of memory");
  return q;
}

static FcStatus map_file(FcArchive *a, const char *path, Mapping *out, FcDiag *diag) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fc_error(diag, FC_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fc_error(diag, FC_ERR_IO, "'%s' is not a regular file", path);
  }
  out->size = (size_t)st.st_size;
  out->data = NULL;
  if (out->size) {
    out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (out->data == MAP_FAILED) {
      int e = errno;
      close(fd);
      return fc_error(diag, FC_ERR_IO, "cannot map '%s': %s", path, strerror(e));
    }
  }
  close(fd);
  if (a->n_maps == a->cap_maps) {
    a->cap_maps = a->cap_maps ? 2 * a->cap_maps : 8;
    a->maps = xrealloc(a->maps, (size_t)a->cap_maps * sizeof *a->maps);
  }
  a->maps[a->n_maps++] = *out;
  return FC_OK;
}

static void add_member(FcArchive *a, const char *name, size_t name_len, const unsigned char *data, size_t size) {
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 16;
    a->members = xrealloc(a->members, (size_t)a->cap * sizeof *a->members);
  }
  char *nm = strndup(name, name_len);
  if (!nm) fc_die(__FILE__, __LINE__, "out of memory");
  /* Names end up in messages and in the archive flowc writes: printable ASCII only. */
  for (char *c = nm; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
  a->members[a->n++] = (FcArchiveMember){.name = nm, .data = data, .size = size};
}

/* A decimal header field (space padded); false if it holds anything else or overflows. */
static bool parse_field(const char *f, size_t n, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && f[i] == ' ') i++;
  size_t start = i;
  for (; i < n && f[i] >= '0' && f[i] <= '9'; i++) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(f[i] - '0');
  }
  if (i == start) return false;
  for (; i < n; i++)
    if (f[i] != ' ') return false;
  *out = v;
  return true;
}

static bool is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ') return false;
  return true;
}

FcStatus fc_archive_open(const char *path, FcArchive **out, FcDiag *diag) {
  *out = NULL;
  FcArchive *a = calloc(1, sizeof *a);
  if (!a) fc_die(__FILE__, __LINE__, "out of memory");
  Mapping file;
  FcStatus st = map_file(a, path, &file, diag);
  if (st != FC_OK) {
    fc_archive_close(a);
    return st;
  }
  const unsigned char *p = file.data;
  size_t size = file.size;
  bool thin = size >= 8 && memcmp(p, AR_THIN_MAGIC, 8) == 0;
  if (size < 8 || (!thin && memcmp(p, AR_MAGIC, 8) != 0)) {
    fc_archive_close(a);
    return fc_error(diag, FC_ERR_IO, "'%s' is not an ar archive", path);
  }
  /* Thin members are named relative to the archive's folder. */
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  const char *longnames = NULL;
  size_t longnames_size = 0;
  size_t off = 8;
  while (off < size) {
    if (size - off < AR_HDR) {
      st = fc_error(diag, FC_ERR_IO, "'%s': truncated member header at offset %zu", path, off);
      break;
    }
    const char *h = (const char *)p + off;
    uint64_t msize;
    if (memcmp(h + 58, "`\n", 2) != 0 || !parse_field(h + 48, 10, &msize)) {
      st = fc_error(diag, FC_ERR_IO, "'%s': corrupt member header at offset %zu", path, off);
      break;
    }
    size_t data_off = off + AR_HDR;
    const char *name = h;
    size_t name_len = 16;
    bool special = false; /* an index or the long-name table: its data is present even in a thin archive */
    if (memcmp(h, "/               ", 16) == 0 || memcmp(h, "/SYM64/         ", 16) == 0 ||
        memcmp(h, "__.SYMDEF", 9) == 0) {
      special = true;
      name_len = 0;
    } else if (memcmp(h, "//              ", 16) == 0) {
      special = true;
      name_len = 0;
      if (msize > size - data_off) {
        st = fc_error(diag, FC_ERR_IO, "'%s': the long-name table runs past the end of the file", path);
        break;
      }
      longnames = (const char *)p + data_off;
      longnames_size = (size_t)msize;
    } else if (h[0] == '/' && h[1] >= '0' && h[1] <= '9') {
      uint64_t at;
      if (!parse_field(h + 1, 15, &at) || !longnames || at >= longnames_size) {
        st = fc_error(diag, FC_ERR_IO, "'%s': bad long member name at offset %zu", path, off);
        break;
      }
      name = longnames + at;
      const char *nl = memchr(name, '\n', longnames_size - (size_t)at);
      name_len = nl ? (size_t)(nl - name) : longnames_size - (size_t)at;
      if (name_len && name[name_len - 1] == '/') name_len--;
    } else if (memcmp(h, "#1/", 3) == 0) {
      uint64_t n;
      if (thin || !parse_field(h + 3, 13, &n) || n > msize || msize > size - data_off) {
        st = fc_error(diag, FC_ERR_IO, "'%s': bad BSD member name at offset %zu", path, off);
        break;
      }
      name = (const char *)p + data_off;
      name_len = strnlen(name, (size_t)n);
      data_off += (size_t)n; /* the name's bytes count in the member's size */
      msize -= n;
    } else {
      while (name_len && h[name_len - 1] == ' ') name_len--;
      if (name_len && h[name_len - 1] == '/') name_len--;
      if (is_blank(h, 16) || name_len == 0) {
        st = fc_error(diag, FC_ERR_IO, "'%s': member without a name at offset %zu", path, off);
        break;
      }
    }
    if (thin && !special) {
      /* The member's bytes are in its own file. */
      char *mpath = malloc(dir_len + name_len + 1);
      if (!mpath) fc_die(__FILE__, __LINE__, "out of memory");
      if (name_len && name[0] == '/') {
        memcpy(mpath, name, name_len);
        mpath[name_len] = '\0';
      } else {
        memcpy(mpath, path, dir_len);
        memcpy(mpath + dir_len, name, name_len);
        mpath[dir_len + name_len] = '\0';
      }
      Mapping mm;
      st = map_file(a, mpath, &mm, diag);
      if (st == FC_OK && mm.size != msize)
        st = fc_error(diag, FC_ERR_IO, "'%s': member '%s' changed size since the archive was made (rebuild it)",
                      path, mpath);
      free(mpath);
      if (st != FC_OK) break;
      const char *base = memrchr(name, '/', name_len);
      size_t skip = base ? (size_t)(base - name) + 1 : 0;
      add_member(a, name + skip, name_len - skip, mm.data, mm.size);
      off = data_off;
      continue;
    }
    if (msize > size - data_off) {
      st = fc_error(diag, FC_ERR_IO, "'%s': member at offset %zu runs past the end of the file", path, off);
      break;
    }
    if (!special) add_member(a, name, name_len, p + data_off, (size_t)msize);
    off = data_off + (size_t)msize;
    if (off & 1) off++;
  }
  if (st != FC_OK) {
    fc_archive_close(a);
    return st;
  }
  *out = a;
  return FC_OK;
}

FcStatus fc_archive_of_file(const char *path, const char *member_name, FcArchive **out, FcDiag *diag) {
  *out = NULL;
  FcArchive *a = calloc(1, sizeof *a);
  if (!a) fc_die(__FILE__, __LINE__, "out of memory");
  Mapping mm;
  FcStatus st = map_file(a, path, &mm, diag);
  if (st != FC_OK) {
    fc_archive_close(a);
    return st;
  }
  add_member(a, member_name, strlen(member_name), mm.data, mm.size);
  *out = a;
  return FC_OK;
}

int fc_archive_count(const FcArchive *a) { return a->n; }
const FcArchiveMember *fc_archive_member(const FcArchive *a, int i) {
  FC_ASSERT(i >= 0 && i < a->n);
  return &a->members[i];
}

void fc_archive_close(FcArchive *a) {
  if (!a) return;
  for (int i = 0; i < a->n; i++) free((char *)a->members[i].name);
  for (int i = 0; i < a->n_maps; i++)
    if (a->maps[i].size) munmap(a->maps[i].data, a->maps[i].size);
  free(a->members);
  free(a->maps);
  free(a);
}

/* ---- ELF ------------------------------------------------------------------------------------------------ */

typedef struct Elf {
  const unsigned char *p;
  size_t size;
  bool is64, big;
} Elf;

static uint64_t rd(const Elf *e, size_t off, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) {
    unsigned b = e->p[off + (size_t)(e->big ? i : n - 1 - i)];
    v = v << 8 | b;
  }
  return v;
}

static bool elf_open(const unsigned char *p, size_t size, Elf *e) {
  if (size < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG) != 0) return false;
  if (p[EI_CLASS] != ELFCLASS32 && p[EI_CLASS] != ELFCLASS64) return false;
  if (p[EI_DATA] != ELFDATA2LSB && p[EI_DATA] != ELFDATA2MSB) return false;
  *e = (Elf){.p = p, .size = size, .is64 = p[EI_CLASS] == ELFCLASS64, .big = p[EI_DATA] == ELFDATA2MSB};
  return size >= (e->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr));
}

int fc_elf_machine(const unsigned char *data, size_t size) {
  Elf e;
  if (!elf_open(data, size, &e)) return -1;
  return (int)rd(&e, offsetof(Elf64_Ehdr, e_machine), 2); /* same offset in ELF32 */
}

/* True if [off, off + n) lies inside the file. */
static bool in_file(const Elf *e, uint64_t off, uint64_t n) { return off <= e->size && n <= e->size - off; }

typedef struct Section {
  uint32_t type, link;
  uint64_t offset, size, entsize;
} Section;

static bool elf_section(const Elf *e, uint64_t shoff, uint64_t shentsize, uint64_t i, Section *s) {
  uint64_t at = shoff + i * shentsize;
  if (!in_file(e, at, shentsize)) return false;
  size_t o = (size_t)at;
  if (e->is64) {
    s->type = (uint32_t)rd(e, o + offsetof(Elf64_Shdr, sh_type), 4);
    s->link = (uint32_t)rd(e, o + offsetof(Elf64_Shdr, sh_link), 4);
    s->offset = rd(e, o + offsetof(Elf64_Shdr, sh_offset), 8);
    s->size = rd(e, o + offsetof(Elf64_Shdr, sh_size), 8);
    s->entsize = rd(e, o + offsetof(Elf64_Shdr, sh_entsize), 8);
  } else {
    s->type = (uint32_t)rd(e, o + offsetof(Elf32_Shdr, sh_type), 4);
    s->link = (uint32_t)rd(e, o + offsetof(Elf32_Shdr, sh_link), 4);
    s->offset = rd(e, o + offsetof(Elf32_Shdr, sh_offset), 4);
    s->size = rd(e, o + offsetof(Elf32_Shdr, sh_size), 4);
    s->entsize = rd(e, o + offsetof(Elf32_Shdr, sh_entsize), 4);
  }
  return true;
}

/* Calls add(ctx, name, defined) for each global or weak symbol the object defines or references. False
 * if the ELF structure is inconsistent. */
static bool elf_global_symbols(const Elf *e, void (*add)(void *ctx, const char *name, bool defined), void *ctx) {
  uint64_t shoff, shentsize, shnum;
  if (e->is64) {
    shoff = rd(e, offsetof(Elf64_Ehdr, e_shoff), 8);
    shentsize = rd(e, offsetof(Elf64_Ehdr, e_shentsize), 2);
    shnum = rd(e, offsetof(Elf64_Ehdr, e_shnum), 2);
  } else {
    shoff = rd(e, offsetof(Elf32_Ehdr, e_shoff), 4);
    shentsize = rd(e, offsetof(Elf32_Ehdr, e_shentsize), 2);
    shnum = rd(e, offsetof(Elf32_Ehdr, e_shnum), 2);
  }
  size_t min_sh = e->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
  if (shoff == 0) return true; /* no section table, no symbols */
  if (shentsize < min_sh) return false;
  if (shnum == 0) { /* more than SHN_LORESERVE sections: the count is section 0's sh_size */
    Section s0;
    if (!elf_section(e, shoff, shentsize, 0, &s0)) return false;
    shnum = s0.size;
  }
  if (shnum > e->size / shentsize || !in_file(e, shoff, shnum * shentsize)) return false;
  size_t symsz = e->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
  for (uint64_t i = 0; i < shnum; i++) {
    Section sym;
    if (!elf_section(e, shoff, shentsize, i, &sym)) return false;
    if (sym.type != SHT_SYMTAB) continue;
    Section str;
    if (sym.link >= shnum || !elf_section(e, shoff, shentsize, sym.link, &str) || str.type != SHT_STRTAB) return false;
    if (sym.entsize < symsz || !in_file(e, sym.offset, sym.size) || !in_file(e, str.offset, str.size)) return false;
    const char *strtab = (const char *)e->p + str.offset;
    uint64_t n = sym.size / sym.entsize;
    for (uint64_t k = 1; k < n; k++) { /* entry 0 is the null symbol */
      size_t o = (size_t)(sym.offset + k * sym.entsize);
      uint64_t name;
      unsigned info;
      uint64_t shndx;
      if (e->is64) {
        name = rd(e, o + offsetof(Elf64_Sym, st_name), 4);
        info = (unsigned)rd(e, o + offsetof(Elf64_Sym, st_info), 1);
        shndx = rd(e, o + offsetof(Elf64_Sym, st_shndx), 2);
      } else {
        name = rd(e, o + offsetof(Elf32_Sym, st_name), 4);
        info = (unsigned)rd(e, o + offsetof(Elf32_Sym, st_info), 1);
        shndx = rd(e, o + offsetof(Elf32_Sym, st_shndx), 2);
      }
      unsigned bind = ELF64_ST_BIND(info);
      if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
      if (name >= str.size || !memchr(strtab + name, '\0', (size_t)(str.size - name))) return false;
      if (strtab[name]) add(ctx, strtab + name, shndx != SHN_UNDEF);
    }
  }
  return true;
}

static void note_sanitizer(void *ctx, const char *name, bool defined) {
  unsigned *mask = ctx;
  if (defined || strncmp(name, "__", 2) != 0) return;
  if (strncmp(name, "__asan_", 7) == 0) *mask |= FC_SANITIZE_ADDRESS;
  else if (strncmp(name, "__ubsan_", 8) == 0) *mask |= FC_SANITIZE_UNDEFINED;
  else if (strncmp(name, "__tsan_", 7) == 0) *mask |= FC_SANITIZE_THREAD;
}

unsigned fc_archive_sanitizers(const FcArchive *a) {
  unsigned mask = 0;
  for (int i = 0; i < a->n; i++) {
    Elf e;
    if (elf_open(a->members[i].data, a->members[i].size, &e)) elf_global_symbols(&e, note_sanitizer, &mask);
  }
  return mask;
}

/* ---- writing ------------------------------------------------------------------------------------------- */

typedef struct SymList {
  const char **names;
  int *member;
  int n, cap;
  size_t name_bytes;
  int current;
} SymList;

static void sym_add(void *ctx, const char *name, bool defined) {
  SymList *s = ctx;
  if (!defined) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->names = xrealloc(s->names, (size_t)s->cap * sizeof *s->names);
    s->member = xrealloc(s->member, (size_t)s->cap * sizeof *s->member);
  }
  s->names[s->n] = name;
  s->member[s->n++] = s->current;
  s->name_bytes += strlen(name) + 1;
}

/* Writes a 60-byte member header. */
static void put_header(FILE *f, const char *name, uint64_t size) {
  char h[128];
  int n = snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10llu`\n", name, "0", "0", "0", "644", (unsigned long long)size);
  FC_ASSERT(n == AR_HDR); /* names have at most 16 bytes and sizes at most 10 digits (checked) */
  fwrite(h, 1, AR_HDR, f);
}

static void put_be(FILE *f, uint64_t v, int n) {
  unsigned char b[8];
  for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
  fwrite(b, 1, (size_t)n, f);
}

static uint64_t padded(uint64_t n) { return n + (n & 1); }

/* A name fits in the header's 16 bytes as "name/" when it has at most 15 bytes and no '/'. */
static bool short_name(const char *name) { return strlen(name) <= 15 && !strchr(name, '/'); }

FcStatus fc_archive_write(const char *path, const FcArchiveMember *members, int n, FcDiag *diag) {
  SymList syms = {0};
  uint64_t longnames_size = 0;
  FcStatus st = FC_OK;
  for (int i = 0; i < n && st == FC_OK; i++) {
    Elf e;
    syms.current = i;
    if (!members[i].name[0] || strchr(members[i].name, '\n'))
      st = fc_error(diag, FC_ERR_INTERNAL, "archive member %d has an unusable name", i);
    else if (members[i].size > 9999999999ull)
      st = fc_error(diag, FC_ERR_LIMIT, "archive member '%s' is larger than the ar format allows", members[i].name);
    else if (!elf_open(members[i].data, members[i].size, &e))
      st = fc_error(diag, FC_ERR_IO, "archive member '%s' is not an ELF object (libraries are written for ELF targets)",
                    members[i].name);
    else if (!elf_global_symbols(&e, sym_add, &syms))
      st = fc_error(diag, FC_ERR_IO, "archive member '%s' has a corrupt ELF symbol table", members[i].name);
    if (st == FC_OK && !short_name(members[i].name)) longnames_size += strlen(members[i].name) + 2; /* "name/\n" */
  }
  if (st != FC_OK) {
    free(syms.names);
    free(syms.member);
    return st;
  }
  /* Layout: magic, index, long names, members. The index's size depends on its entry width, which
   * depends on the offsets it holds: try 32-bit entries first. */
  uint64_t *offsets = xrealloc(NULL, (size_t)(n ? n : 1) * sizeof *offsets);
  int width = 4;
  for (;;) {
    uint64_t index_size = (uint64_t)width * (1 + (uint64_t)syms.n) + syms.name_bytes;
    uint64_t at = 8 + AR_HDR + padded(index_size);
    if (longnames_size) at += AR_HDR + padded(longnames_size);
    for (int i = 0; i < n; i++) {
      offsets[i] = at;
      at += AR_HDR + padded(members[i].size);
    }
    if (width == 8 || n == 0 || offsets[n - 1] <= UINT32_MAX) break;
    width = 8;
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    int e = errno;
    free(offsets);
    free(syms.names);
    free(syms.member);
    return fc_error(diag, FC_ERR_IO, "cannot write: %s", strerror(e));
  }
  fwrite(AR_MAGIC, 1, 8, f);
  uint64_t index_size = (uint64_t)width * (1 + (uint64_t)syms.n) + syms.name_bytes;
  put_header(f, width == 4 ? "/" : "/SYM64/", index_size);
  put_be(f, (uint64_t)syms.n, width);
  for (int k = 0; k < syms.n; k++) put_be(f, offsets[syms.member[k]], width);
  for (int k = 0; k < syms.n; k++) fwrite(syms.names[k], 1, strlen(syms.names[k]) + 1, f);
  if (index_size & 1) fputc('\n', f);
  uint64_t *name_at = xrealloc(NULL, (size_t)(n ? n : 1) * sizeof *name_at);
  if (longnames_size) {
    put_header(f, "//", longnames_size);
    uint64_t pos = 0;
    for (int i = 0; i < n; i++) {
      if (short_name(members[i].name)) continue;
      name_at[i] = pos;
      fprintf(f, "%s/\n", members[i].name);
      pos += strlen(members[i].name) + 2;
    }
    if (longnames_size & 1) fputc('\n', f);
  }
  for (int i = 0; i < n; i++) {
    char hname[32];
    if (short_name(members[i].name)) snprintf(hname, sizeof hname, "%s/", members[i].name);
    else snprintf(hname, sizeof hname, "/%llu", (unsigned long long)name_at[i]);
    FC_ASSERT(ferror(f) || ftell(f) < 0 || (uint64_t)ftell(f) == offsets[i]); /* after an error, ftell is moot */
    put_header(f, hname, members[i].size);
    if (members[i].size) fwrite(members[i].data, 1, members[i].size, f);
    if (members[i].size & 1) fputc('\n', f);
  }
  free(name_at);
  free(offsets);
  free(syms.names);
  free(syms.member);
  return fc_emit_close_file(f, path, "", diag);
}
