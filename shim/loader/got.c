/*
 * got.c: after a deep-bound load (RTLD_DEEPBIND, dlmopen), the GOT entries
 * (JUMP_SLOT, GLOB_DAT) of the loaded objects that bound a hooked name
 * straight to a copy of its family are rewritten to that copy's wrapper
 * (PHP 8.2 loads its extensions, curl.so among them, with RTLD_DEEPBIND),
 * and their references to libc's dl functions to the dl hooks; nothing
 * else in them changes (got.h).
 */
#include "loader/got.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "loader/elf.h"
#include "loader/registry.h"

typedef struct obj_view {
    uintptr_t base, lo, hi;
    const ElfW(Dyn) *dyn;
    const char *name;
    bool is_new;               /* not listed by any earlier walk */
} obj_view;

/* A lazy PLT entry of a new object, resolved after the walk. */
typedef struct lazy_entry {
    void **slot;
    uintptr_t stub;            /* its value when seen: the PLT stub */
    const bo_lib_family *f;
    int fi;
} lazy_entry;

typedef struct walk_state {
    obj_view *objs;
    size_t n, cap;
    lazy_entry *lazy;
    size_t nlazy, lazy_cap;
    unsigned rewritten;
    bool done;
    const bo_got_dl_hooks *hooks;
} walk_state;

/*
 * The objects listed by earlier walks (their dynamic sections), so that a
 * walk knows which objects the load just brought in.  Written only inside
 * dl_iterate_phdr, whose lock serializes the walks.
 */
#define MAX_SEEN 4096
static const void *g_seen[MAX_SEEN];
static size_t g_nseen;

static bool seen_add(const void *dyn)
{
    for (size_t i = 0; i < g_nseen; i++)
        if (g_seen[i] == dyn)
            return false;
    if (g_nseen < MAX_SEEN)
        g_seen[g_nseen++] = dyn;
    else
        return false; /* full: no object counts as new, lazy entries stay */
    return true;
}

static int seen_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    seen_add(bo_elf_dynamic(info));
    return 0;
}

/* The protection of the mapping holding addr (from /proc/self/maps), or -1. */
static int page_prot(uintptr_t addr)
{
    char buf[4096];
    size_t len = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), prot = -1;

    if (fd < 0)
        return -1;
    for (;;) {
        ssize_t got = bo_core_sys_read(fd, buf + len, sizeof buf - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        buf[len] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            unsigned long lo, hi;
            char perms[5];
            *nl = '\0';
            if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi) {
                prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                       (perms[2] == 'x' ? PROT_EXEC : 0);
                goto out;
            }
            line = nl + 1;
        }
        len = (size_t)(buf + len - line);
        memmove(buf, line, len);
    }
out:
    bo_core_sys_close(fd);
    return prot;
}

/* Write one GOT entry, lifting RELRO's read-only protection for the moment. */
static bool patch_entry(void **slot, void *value)
{
    long pagesz = sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)slot & ~((uintptr_t)pagesz - 1);
    int prot = page_prot((uintptr_t)slot);

    if (prot < 0)
        return false;
    if (!(prot & PROT_WRITE) && mprotect((void *)page, (size_t)pagesz, prot | PROT_WRITE) != 0)
        return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (!(prot & PROT_WRITE))
        mprotect((void *)page, (size_t)pagesz, prot);
    return true;
}

static const obj_view *obj_holding(const walk_state *w, uintptr_t a)
{
    for (size_t i = 0; i < w->n; i++)
        if (a >= w->objs[i].lo && a < w->objs[i].hi)
            return &w->objs[i];
    return NULL;
}

/*
 * A deep-bound object binds the dl functions to libc as well, past the
 * hooks: its references to a real one are routed to the hook, so that what
 * it loads and looks up in turn is reached too.  Returns the hook for value
 * v of a reference to `name`, or NULL.
 */
static void *dl_hook_for(const bo_got_dl_hooks *h, const char *name, uintptr_t v)
{
    if (h == NULL || name[0] != 'd' || name[1] != 'l')
        return NULL;
    for (int i = 0; i < h->n; i++)
        if (bo_str_eq(name, h->names[i]) && v == (uintptr_t)h->real[i])
            return h->hook[i];
    return NULL;
}

static void lazy_add(walk_state *w, void **slot, uintptr_t stub, const bo_lib_family *f, int fi)
{
    if (w->nlazy == w->lazy_cap) {
        size_t cap = w->lazy_cap ? w->lazy_cap * 2 : 16;
        lazy_entry *nl = realloc(w->lazy, cap * sizeof *nl);
        if (nl == NULL)
            return;
        w->lazy = nl;
        w->lazy_cap = cap;
    }
    w->lazy[w->nlazy++] = (lazy_entry){.slot = slot, .stub = stub, .f = f, .fi = fi};
}

/*
 * A lazy entry of an object the load brought in binds, at its first call,
 * to the first definition in the object's own scope (RTLD_DEEPBIND: its
 * dependencies first; a dlmopen namespace: that namespace).  Resolved here,
 * outside the loader's lock, with a lookup in that scope; when it is a copy
 * of the family, the entry gets the copy's wrapper now.
 */
static void resolve_lazy(walk_state *w)
{
    for (size_t i = 0; i < w->nlazy; i++) {
        const lazy_entry *e = &w->lazy[i];
        Dl_info info;
        struct link_map *lm = NULL;
        void *p;
        int s;
        if (dladdr1(e->slot, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
            continue;
        void *h = bo_dl_handle_of(lm); /* (its link map is no handle: elf.h) */
        if (h == NULL)
            continue;
        p = bo_dl_real_dlsym(h, e->f->fns[e->fi]);
        dlclose(h);
        if (p == NULL) {
            (void)dlerror(); /* leave no error of ours for the program's dlerror() */
            continue;
        }
        if (bo_elf_in_self((uintptr_t)p) || (s = bo_lib_slot_for_addr(e->f, p)) < 0 ||
            bo_lib_real(e->f, s, e->fi) != p ||
            (uintptr_t)__atomic_load_n(e->slot, __ATOMIC_ACQUIRE) != e->stub)
            continue;
        if (patch_entry(e->slot, e->f->wrapper(s, e->fi)))
            w->rewritten++;
    }
}

/* Route one object's references to hooked names that bound to a copy. */
static void rewrite_object(walk_state *w, const obj_view *ov)
{
    bo_elf o;
    const ElfW(Rela) *tables[2];
    size_t sizes[2];

    if (ov->dyn == NULL || bo_elf_in_self(ov->lo) || bo_elf_name_is(ov->name, "linux-vdso") ||
        bo_elf_parse(&o, ov->base, ov->dyn) != 0)
        return;
    if (bo_lib_defines_family(&o))
        return; /* a copy itself: its own references stay its own */
    tables[0] = o.rela;
    sizes[0] = o.relasz;
    tables[1] = o.jmprel;
    sizes[1] = o.pltrelsz;
    for (int t = 0; t < 2; t++) {
        if (tables[t] == NULL)
            continue;
        for (size_t k = 0; k < sizes[t] / sizeof(ElfW(Rela)); k++) {
            const ElfW(Rela) *r = &tables[t][k];
            unsigned long type = ELF64_R_TYPE(r->r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
                continue;
            const char *name = o.strtab + o.symtab[ELF64_R_SYM(r->r_info)].st_name;
            int fi = -1;
            const bo_lib_family *f = bo_lib_hooked(name, &fi);
            void **slot = (void **)(ov->base + r->r_offset);
            uintptr_t v;
            const obj_view *to;
            void *hook;
            int s;
            if (f == NULL && name[0] != 'd')
                continue;
            v = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (f == NULL) {
                if ((hook = dl_hook_for(w->hooks, name, v)) != NULL && patch_entry(slot, hook))
                    w->rewritten++;
                continue;
            }
            if (type == R_X86_64_JUMP_SLOT && ov->is_new && v != 0 && obj_holding(w, v) == ov) {
                lazy_add(w, slot, v, f, fi); /* a lazy PLT entry, not bound yet */
                continue;
            }
            if (v == 0 || bo_elf_in_self(v) || (to = obj_holding(w, v)) == NULL || to == ov ||
                (s = bo_lib_slot_for_object(f, to->base, to->dyn)) < 0 ||
                (uintptr_t)bo_lib_real(f, s, fi) != v)
                continue; /* unbound yet (lazy), already ours, or not a copy */
            if (patch_entry(slot, f->wrapper(s, fi)))
                w->rewritten++;
        }
    }
}

static int collect_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    walk_state *w = data;
    obj_view v = {.base = info->dlpi_addr, .dyn = bo_elf_dynamic(info), .name = info->dlpi_name};
    (void)size;
    v.is_new = v.dyn != NULL && seen_add(v.dyn);
    bo_elf_range(info, &v.lo, &v.hi);
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 128;
        obj_view *nv = realloc(w->objs, cap * sizeof *nv);
        if (nv == NULL)
            return 1;
        w->objs = nv;
        w->cap = cap;
    }
    w->objs[w->n++] = v;
    return 0;
}

/*
 * Runs inside dl_iterate_phdr, whose lock (recursive) keeps every listed
 * object mapped: a second iteration lists them all, then each is rewritten.
 */
static int walk_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    walk_state *w = data;
    (void)info;
    (void)size;
    if (w->done)
        return 1;
    w->done = true;
    bo_dl_iterate(collect_cb, w);
    for (size_t i = 0; i < w->n; i++)
        rewrite_object(w, &w->objs[i]);
    return 1;
}

unsigned bo_got_rewrite_all(const bo_got_dl_hooks *hooks)
{
    walk_state w = {.hooks = hooks};
    bo_dl_iterate(walk_cb, &w);
    resolve_lazy(&w);
    free(w.objs);
    free(w.lazy);
    return w.rewritten;
}

void bo_got_mark_loaded(void)
{
    bo_dl_iterate(seen_cb, NULL);
}
