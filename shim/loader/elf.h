/*
 * elf.h: reading loaded ELF objects, within the loader room (elf.c).  The
 * dl hooks run before anything else can (the sanitizer runtimes look up
 * their interceptors with dlsym during their own start), so what their
 * path calls here calls no library function: strings are compared by hand.
 */
#ifndef BO_LOADER_ELF_H
#define BO_LOADER_ELF_H

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* What the library reads of one loaded object's dynamic section. */
typedef struct bo_elf {
    uintptr_t base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    const ElfW(Half) *versym;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
    const ElfW(Rela) *rela;
    size_t relasz;
    const ElfW(Rela) *jmprel;
    size_t pltrelsz;
} bo_elf;

bool bo_str_eq(const char *a, const char *b);
bool bo_has_prefix(const char *s, const char *prefix);
/* The file name (after the last '/') of path starts with prefix. */
bool bo_elf_name_is(const char *path, const char *prefix);

/* Read the object at base with dynamic section dyn; 0, or -1 when it has
 * no symbol table. */
int bo_elf_parse(bo_elf *o, uintptr_t base, const ElfW(Dyn) *dyn);
/* The address the object defines for `name` (default version), or NULL. */
void *bo_elf_sym(const bo_elf *o, const char *name);
/* A walked object's dynamic section, or NULL. */
const ElfW(Dyn) *bo_elf_dynamic(const struct dl_phdr_info *info);
/* A walked object's address range [*lo, *hi), its PT_LOAD segments. */
void bo_elf_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

/* Is address a inside this library?  (A hook called from here, or a lookup
 * answering a function of ours, is left as glibc does it.) */
bool bo_elf_in_self(uintptr_t a);

/* libc's real dl functions, read from its dynamic symbol table (calling
 * dlsym would come back to the hooks); bo_dl_init finds them, once,
 * lock-free (two threads that race find the same), and aborts loudly when
 * one is missing. */
typedef void *(*bo_dlsym_fn)(void *, const char *);
typedef void *(*bo_dlvsym_fn)(void *, const char *, const char *);
typedef void *(*bo_dlopen_fn)(const char *, int);
typedef void *(*bo_dlmopen_fn)(Lmid_t, const char *, int);
extern bo_dlsym_fn bo_dl_real_dlsym;
extern bo_dlvsym_fn bo_dl_real_dlvsym;
extern bo_dlopen_fn bo_dl_real_dlopen;
extern bo_dlmopen_fn bo_dl_real_dlmopen;
void bo_dl_init(void);

/*
 * A dlsym handle of the loaded object lm (to dlclose after use), or NULL.
 * A link map is such a handle only when its object was dlopen()ed itself
 * (its search list is made then): dlsym through that of an object loaded
 * at start-up or as another's dependency crashes in glibc.  The object is
 * opened again by name in its namespace with RTLD_NOLOAD (nothing loaded,
 * its search list made); a failure leaves no dlerror() of ours.
 */
struct link_map;
void *bo_dl_handle_of(struct link_map *lm);

#endif
