/*
 * elf.c: reading the loaded objects (elf.h): their dynamic sections,
 * symbols and segments, the one lock every walk of them takes, the
 * library's own range, and libc's real dl functions.
 */
#include "loader/elf.h"

#include <pthread.h>
#include <stddef.h>

#include "core/core.h"
#include "loader/loader.h"

bool bo_str_eq(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

bool bo_has_prefix(const char *s, const char *prefix)
{
    while (*prefix != '\0' && *s == *prefix) {
        s++;
        prefix++;
    }
    return *prefix == '\0';
}


/* glibc relocates the dynamic section's addresses in place, except where it
 * is read-only (the vDSO): an address below the base is still relative. */
static const void *dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
    return (const void *)(p < base ? base + p : p);
}

int bo_elf_parse(bo_elf *o, uintptr_t base, const ElfW(Dyn) *dyn)
{
    bool plt_rela = true;

    *o = (bo_elf){.base = base};
    if (dyn == NULL)
        return -1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            o->symtab = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            o->strtab = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_VERSYM:
            o->versym = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_GNU_HASH:
            o->gnu_hash = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_HASH:
            o->sysv_hash = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_RELA:
            o->rela = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            o->relasz = d->d_un.d_val;
            break;
        case DT_JMPREL:
            o->jmprel = dyn_ptr(base, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            o->pltrelsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            plt_rela = d->d_un.d_val == DT_RELA;
            break;
        default:
            break;
        }
    }
    if (!plt_rela)
        o->jmprel = NULL;
    return o->symtab != NULL && o->strtab != NULL ? 0 : -1;
}

/* Is symbol i a definition of `name` at its default version? */
static bool sym_matches(const bo_elf *o, uint32_t i, const char *name)
{
    const ElfW(Sym) *s = &o->symtab[i];
    if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
        return false;
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC && ELF64_ST_TYPE(s->st_info) != STT_OBJECT)
        return false;
    if (o->versym != NULL && (o->versym[i] & 0x8000) != 0)
        return false; /* a hidden, non-default version */
    return bo_str_eq(o->strtab + s->st_name, name);
}

/* The address the object defines for `name` (default version), or NULL. */
void *bo_elf_sym(const bo_elf *o, const char *name)
{
    if (o->gnu_hash != NULL) {
        const uint32_t *h = o->gnu_hash;
        uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&h[4] + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t hash = 5381;
        for (const unsigned char *c = (const unsigned char *)name; *c; c++)
            hash = hash * 33 + *c;
        if (nbuckets == 0)
            return NULL;
        uint32_t i = buckets[hash % nbuckets];
        if (i < symoffset)
            return NULL;
        for (;; i++) {
            uint32_t ch = chain[i - symoffset];
            if ((ch | 1) == (hash | 1) && sym_matches(o, i, name))
                return (void *)(o->base + o->symtab[i].st_value);
            if (ch & 1)
                return NULL;
        }
    }
    if (o->sysv_hash != NULL) {
        uint32_t nbucket = o->sysv_hash[0];
        const uint32_t *bucket = o->sysv_hash + 2, *chain = bucket + nbucket;
        uint32_t hash = 0, g;
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
            hash = (hash << 4) + *c;
            g = hash & 0xf0000000u;
            if (g)
                hash ^= g >> 24;
            hash &= ~g;
        }
        if (nbucket == 0)
            return NULL;
        for (uint32_t i = bucket[hash % nbucket]; i != 0; i = chain[i])
            if (sym_matches(o, i, name))
                return (void *)(o->base + o->symtab[i].st_value);
    }
    return NULL;
}

const ElfW(Dyn) *bo_elf_dynamic(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

void bo_elf_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    *lo = *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        if (*lo == 0 || a < *lo)
            *lo = a;
        if (a + ph->p_memsz > *hi)
            *hi = a + ph->p_memsz;
    }
}

bool bo_elf_name_is(const char *path, const char *prefix)
{
    const char *base = path;
    if (path == NULL)
        return false;
    for (const char *c = path; *c != '\0'; c++)
        if (*c == '/')
            base = c + 1;
    return bo_has_prefix(base, prefix);
}

/* Read by the trampolines; written once (every writer writes the same). */
bo_dlsym_fn bo_dl_real_dlsym;
bo_dlvsym_fn bo_dl_real_dlvsym;
bo_dlopen_fn bo_dl_real_dlopen;
bo_dlmopen_fn bo_dl_real_dlmopen;

/* The shim's own address range: a hook called from here, or a lookup
 * answering a function of the shim, is left as glibc does it. */
static uintptr_t g_self_lo, g_self_hi;

static int self_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uintptr_t self = (uintptr_t)data, lo, hi;
    (void)size;
    bo_elf_range(info, &lo, &hi);
    if (self < lo || self >= hi)
        return 0;
    g_self_lo = lo;
    __atomic_store_n(&g_self_hi, hi, __ATOMIC_RELEASE);
    return 1;
}

/* Held by every walk (bo_dl_iterate, loader.h) and across fork(). */
static pthread_mutex_t g_walk_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

int bo_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data)
{
    pthread_mutex_lock(&g_walk_lock);
    int r = dl_iterate_phdr(cb, data);
    pthread_mutex_unlock(&g_walk_lock);
    return r;
}

bool bo_elf_in_self(uintptr_t a)
{
    if (__atomic_load_n(&g_self_hi, __ATOMIC_ACQUIRE) == 0)
        bo_dl_iterate(self_cb, (void *)(uintptr_t)self_cb);
    return a >= g_self_lo && a < g_self_hi;
}

/*
 * Find the real functions in libc's dynamic symbol table, walking the
 * dynamic linker's list of objects (_r_debug): no library call, so it may
 * run from the first dl call of the process, inside a sanitizer runtime's
 * start.  Idempotent and lock-free: two threads that race find the same.
 */
void bo_dl_init(void)
{
    if (__atomic_load_n((void **)&bo_dl_real_dlsym, __ATOMIC_ACQUIRE) != NULL)
        return;
    for (const struct link_map *l = _r_debug.r_map; l != NULL; l = l->l_next) {
        bo_elf o;
        if (!bo_elf_name_is(l->l_name, "libc.so") || bo_elf_parse(&o, l->l_addr, l->l_ld) != 0)
            continue;
        *(void **)&bo_dl_real_dlvsym = bo_elf_sym(&o, "dlvsym");
        *(void **)&bo_dl_real_dlopen = bo_elf_sym(&o, "dlopen");
        *(void **)&bo_dl_real_dlmopen = bo_elf_sym(&o, "dlmopen");
        __atomic_store_n((void **)&bo_dl_real_dlsym, bo_elf_sym(&o, "dlsym"), __ATOMIC_RELEASE);
        break;
    }
    if (bo_dl_real_dlsym == NULL || bo_dl_real_dlvsym == NULL || bo_dl_real_dlopen == NULL ||
        bo_dl_real_dlmopen == NULL)
        bo_core_die("backoff: cannot find libc's dlsym, dlvsym, dlopen or dlmopen; cannot "
                    "continue");
}

/* The object holding the address given: its range. */
typedef struct range_query {
    uintptr_t addr, lo, hi;
} range_query;

static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    range_query *q = data;
    uintptr_t lo, hi;
    (void)size;
    bo_elf_range(info, &lo, &hi);
    if (q->addr < lo || q->addr >= hi)
        return 0;
    q->lo = lo;
    q->hi = hi;
    return 1;
}

bool bo_dl_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    range_query q = {.addr = (uintptr_t)addr};
    bo_dl_iterate(range_cb, &q);
    *lo = q.lo;
    *hi = q.hi;
    return q.hi != 0;
}

/* Fork: the walk lock is held across fork(), and made anew in the child. */
void bo_dl_walk_prepare_fork(void)
{
    pthread_mutex_lock(&g_walk_lock);
}

void bo_dl_walk_parent_fork(void)
{
    pthread_mutex_unlock(&g_walk_lock);
}

void bo_dl_walk_child_fork(void)
{
    bo_core_mutex_init(&g_walk_lock, PTHREAD_MUTEX_RECURSIVE);
}

void *bo_dl_handle_of(struct link_map *lm)
{
    Lmid_t ns = LM_ID_BASE;
    void *h;

    if (lm == NULL)
        return NULL;
    bo_dl_init();
    if (dlinfo(lm, RTLD_DI_LMID, &ns) != 0) {
        (void)dlerror();
        ns = LM_ID_BASE;
    }
    const char *name = lm->l_name != NULL && lm->l_name[0] != '\0' ? lm->l_name : NULL;
    if (ns == LM_ID_BASE || name == NULL)
        h = bo_dl_real_dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    else
        h = bo_dl_real_dlmopen(ns, name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        (void)dlerror();
    return h;
}
