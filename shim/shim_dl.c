/*
 * shim_dl: reaching libcurl however the program loads it.
 *
 *   dlsym, dlvsym    a lookup of a hooked libcurl function (curl_easy_perform,
 *                    _setopt, _reset, _duphandle, _cleanup, and the
 *                    curl_multi_* functions of shim_multi.c), through any
 *                    handle, answers the shim's wrapper bound to the libcurl
 *                    the lookup found; every other lookup is glibc's own;
 *   dlopen with RTLD_DEEPBIND, dlmopen
 *                    after the load, the GOT entries (JUMP_SLOT, GLOB_DAT)
 *                    of the loaded objects that bound a hooked name straight
 *                    to a libcurl are rewritten to that libcurl's wrapper
 *                    (PHP 8.2 loads its extensions, curl.so among them, with
 *                    RTLD_DEEPBIND); nothing else in them changes;
 *   the libcurl registry
 *                    one slot per libcurl object seen (OpenSSL and GnuTLS
 *                    flavours, a plugin's private copy), each with its own
 *                    real functions, so a wrapper never calls into another
 *                    libcurl than the one it stands for.
 *
 * glibc's dlsym, dlvsym, dlopen and dlmopen act on behalf of their caller,
 * found from their return address (RTLD_NEXT and RTLD_DEFAULT lookups, the
 * caller's namespace and DT_RUNPATH).  The hooks are therefore small
 * assembly trampolines: a call that needs nothing from the shim jumps to
 * glibc's function with the stack untouched; a call whose result the shim
 * must see gets as return address a `ret` byte inside the caller's own
 * object, which returns on into the shim's post-processing: glibc sees the
 * caller it would have seen without the shim.  x86_64 only; elsewhere (and
 * with BO_DL_NO_HOOKS: the fuzz target, a program of its own) the hooks are
 * not built and only the registry remains.
 *
 * The real functions are found by reading libc's dynamic symbol table
 * (calling dlsym would come back here).  Locks: g_walk_lock (every walk of
 * the loaded objects: bo_dl_iterate), then g_slot_lock (the registry, a leaf
 * lock, never held across a call into the dynamic loader, taken inside
 * walks).
 */
#include "bo_shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const bo_curl_fn_names[BO_CURL_NFNS] = {
    [BO_CURL_PERFORM] = "curl_easy_perform",
    [BO_CURL_SETOPT] = "curl_easy_setopt",
    [BO_CURL_RESET] = "curl_easy_reset",
    [BO_CURL_DUPHANDLE] = "curl_easy_duphandle",
    [BO_CURL_CLEANUP] = "curl_easy_cleanup",
    [BO_CURL_M_ADD] = "curl_multi_add_handle",
    [BO_CURL_M_REMOVE] = "curl_multi_remove_handle",
    [BO_CURL_M_PERFORM] = "curl_multi_perform",
    [BO_CURL_M_INFO_READ] = "curl_multi_info_read",
    [BO_CURL_M_WAIT] = "curl_multi_wait",
    [BO_CURL_M_POLL] = "curl_multi_poll",
    [BO_CURL_M_TIMEOUT] = "curl_multi_timeout",
    [BO_CURL_M_SOCKET_ACTION] = "curl_multi_socket_action",
    [BO_CURL_M_SETOPT] = "curl_multi_setopt",
    [BO_CURL_M_CLEANUP] = "curl_multi_cleanup",
    [BO_CURL_GETINFO] = "curl_easy_getinfo",
    [BO_CURL_URL] = "curl_url",
    [BO_CURL_URL_SET] = "curl_url_set",
    [BO_CURL_URL_GET] = "curl_url_get",
    [BO_CURL_URL_CLEANUP] = "curl_url_cleanup",
    [BO_CURL_FREE] = "curl_free",
};

/*
 * The hooks run before anything else can (the sanitizer runtimes look up
 * their interceptors with dlsym during their own start), so the code on
 * the path of every dl call calls no library function: these compare
 * strings by hand.
 */
static bool str_eq(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static bool has_prefix(const char *s, const char *prefix)
{
    while (*prefix != '\0' && *s == *prefix) {
        s++;
        prefix++;
    }
    return *prefix == '\0';
}

/* The index of a hooked libcurl function named `name`, or -1. */
static int hooked_index(const char *name)
{
    if (name == NULL || name[0] != 'c' || !has_prefix(name, "curl_"))
        return -1;
    if (has_prefix(name, "curl_easy_")) {
        for (int i = 0; i < BO_CURL_M_FIRST; i++)
            if (str_eq(name + 10, bo_curl_fn_names[i] + 10))
                return i;
    } else if (has_prefix(name, "curl_multi_")) {
        for (int i = BO_CURL_M_FIRST; i < BO_CURL_NHOOKED; i++)
            if (str_eq(name + 11, bo_curl_fn_names[i] + 11))
                return i;
    }
    return -1;
}

/* ---- reading loaded ELF objects -------------------------------------- */

typedef struct elf_obj {
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
} elf_obj;

/* glibc relocates the dynamic section's addresses in place, except where it
 * is read-only (the vDSO): an address below the base is still relative. */
static const void *dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
    return (const void *)(p < base ? base + p : p);
}

static int elf_parse(elf_obj *o, uintptr_t base, const ElfW(Dyn) *dyn)
{
    bool plt_rela = true;

    *o = (elf_obj){.base = base};
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
static bool sym_matches(const elf_obj *o, uint32_t i, const char *name)
{
    const ElfW(Sym) *s = &o->symtab[i];
    if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
        return false;
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC && ELF64_ST_TYPE(s->st_info) != STT_OBJECT)
        return false;
    if (o->versym != NULL && (o->versym[i] & 0x8000) != 0)
        return false; /* a hidden, non-default version */
    return str_eq(o->strtab + s->st_name, name);
}

/* The address the object defines for `name` (default version), or NULL. */
static void *elf_sym(const elf_obj *o, const char *name)
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

static const ElfW(Dyn) *phdr_dynamic(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

static bool name_is(const char *path, const char *prefix)
{
    const char *base = path;
    if (path == NULL)
        return false;
    for (const char *c = path; *c != '\0'; c++)
        if (*c == '/')
            base = c + 1;
    return has_prefix(base, prefix);
}

/* ---- the real dl functions ------------------------------------------- */

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);

/* Read by the trampolines; written once (every writer writes the same). */
dlsym_fn bo_dl_real_dlsym;
dlvsym_fn bo_dl_real_dlvsym;
dlopen_fn bo_dl_real_dlopen;
dlmopen_fn bo_dl_real_dlmopen;

/* The shim's own address range: a hook called from here, or a lookup
 * answering a function of the shim, is left as glibc does it. */
static uintptr_t g_self_lo, g_self_hi;

static int self_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uintptr_t self = (uintptr_t)data, lo = 0, hi = 0;
    bool mine = false;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        mine = mine || (self >= a && self < a + ph->p_memsz);
        if (lo == 0 || a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (!mine)
        return 0;
    g_self_lo = lo;
    __atomic_store_n(&g_self_hi, hi, __ATOMIC_RELEASE);
    return 1;
}

/* Held by every walk (bo_dl_iterate, bo_shim.h) and across fork(). */
static pthread_mutex_t g_walk_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

int bo_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data)
{
    pthread_mutex_lock(&g_walk_lock);
    int r = dl_iterate_phdr(cb, data);
    pthread_mutex_unlock(&g_walk_lock);
    return r;
}

static bool in_self(uintptr_t a)
{
    if (__atomic_load_n(&g_self_hi, __ATOMIC_ACQUIRE) == 0)
        bo_dl_iterate(self_cb, (void *)(uintptr_t)self_cb);
    return a >= g_self_lo && a < g_self_hi;
}

static void die(const char *what)
{
    char line[200];
    int n = snprintf(line, sizeof line, "backoff: cannot find libc's %s; cannot continue\n", what);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    abort();
}

/*
 * Find the real functions in libc's dynamic symbol table, walking the
 * dynamic linker's list of objects (_r_debug): no library call, so it may
 * run from the first dl call of the process, inside a sanitizer runtime's
 * start.  Idempotent and lock-free: two threads that race find the same.
 */
static void dl_init(void)
{
    if (__atomic_load_n((void **)&bo_dl_real_dlsym, __ATOMIC_ACQUIRE) != NULL)
        return;
    for (const struct link_map *l = _r_debug.r_map; l != NULL; l = l->l_next) {
        elf_obj o;
        if (!name_is(l->l_name, "libc.so") || elf_parse(&o, l->l_addr, l->l_ld) != 0)
            continue;
        *(void **)&bo_dl_real_dlvsym = elf_sym(&o, "dlvsym");
        *(void **)&bo_dl_real_dlopen = elf_sym(&o, "dlopen");
        *(void **)&bo_dl_real_dlmopen = elf_sym(&o, "dlmopen");
        __atomic_store_n((void **)&bo_dl_real_dlsym, elf_sym(&o, "dlsym"), __ATOMIC_RELEASE);
        break;
    }
    if (bo_dl_real_dlsym == NULL || bo_dl_real_dlvsym == NULL || bo_dl_real_dlopen == NULL ||
        bo_dl_real_dlmopen == NULL)
        die("dlsym, dlvsym, dlopen or dlmopen");
}

static int seen_cb(struct dl_phdr_info *info, size_t size, void *data);

/* At load: the objects of the program's start are not new to any walk. */
__attribute__((constructor)) static void dl_ctor(void)
{
    dl_init();
    in_self(0);
    bo_dl_iterate(seen_cb, NULL);
}

/* ---- the libcurl registry -------------------------------------------- */

typedef struct curl_slot {
    const void *dyn;           /* the libcurl object's dynamic section: its identity */
    void *fn[BO_CURL_NFNS];
} curl_slot;

static curl_slot g_slots[BO_MAX_CURLS];
static int g_nslots;           /* slots below it are complete (release/acquire) */
static pthread_mutex_t g_slot_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_full_warned;

/*
 * Fork (called by shim_fork.c): the walk lock, then the registry lock (a
 * leaf, taken inside walks); in the child both are initialised anew.
 */
void bo_shim_dl_prepare_fork(void)
{
    pthread_mutex_lock(&g_walk_lock);
    pthread_mutex_lock(&g_slot_lock);
}

void bo_shim_dl_parent_fork(void)
{
    pthread_mutex_unlock(&g_slot_lock);
    pthread_mutex_unlock(&g_walk_lock);
}

void bo_shim_dl_child_fork(void)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_walk_lock, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_mutex_init(&g_slot_lock, NULL);
}

static int slot_find(const void *dyn)
{
    int n = __atomic_load_n(&g_nslots, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (g_slots[i].dyn == dyn)
            return i;
    return -1;
}

/*
 * The slot of the object at (base, dyn), created on first sight when the
 * object defines every libcurl function the shim uses; -1 when it does not
 * (it is not a libcurl) or the table is full (its calls then pass through).
 * Reads only the object's memory and takes only g_slot_lock, so it may run
 * inside dl_iterate_phdr.
 */
static int slot_for_object(uintptr_t base, const void *dyn)
{
    void *fn[BO_CURL_NFNS];
    elf_obj o;
    int s = slot_find(dyn);

    if (s >= 0)
        return s;
    if (elf_parse(&o, base, dyn) != 0)
        return -1;
    for (int i = 0; i < BO_CURL_NFNS; i++)
        if ((fn[i] = elf_sym(&o, bo_curl_fn_names[i])) == NULL || in_self((uintptr_t)fn[i]))
            return -1;
    pthread_mutex_lock(&g_slot_lock);
    s = slot_find(dyn);
    if (s < 0 && g_nslots < BO_MAX_CURLS) {
        s = g_nslots;
        g_slots[s].dyn = dyn;
        memcpy(g_slots[s].fn, fn, sizeof fn);
        bo_curl_bind(s, fn);
        __atomic_store_n(&g_nslots, s + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_slot_lock);
    if (s < 0 && !__atomic_exchange_n(&g_full_warned, 1, __ATOMIC_RELAXED)) {
        static const char msg[] = "backoff: more than 8 libcurl copies in one process: "
                                  "calls into the others pass through without retries\n";
        (void)!write(2, msg, sizeof msg - 1);
    }
    return s;
}

/* The slot of the libcurl that holds address p, or -1. */
static int slot_for_addr(const void *p)
{
    Dl_info info;
    struct link_map *lm = NULL;

    if (dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
        return -1;
    return slot_for_object(lm->l_addr, lm->l_ld);
}

/* The wrapper standing for real function p (hooked index i), or p itself. */
static void *wrap(void *p, int i)
{
    int s;
    if (p == NULL || i < 0 || in_self((uintptr_t)p) || (s = slot_for_addr(p)) < 0 ||
        g_slots[s].fn[i] != p)
        return p;
    return bo_curl_wrapper(s, i);
}

static int first_libcurl_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (!name_is(info->dlpi_name, "libcurl"))
        return 0;
    int s = slot_for_object(info->dlpi_addr, phdr_dynamic(info));
    if (s < 0)
        return 0;
    *(int *)data = s;
    return 1;
}

/*
 * The libcurl a program's call to the exported hooks meant: the first one
 * in the global scope after the shim, as the dynamic linker would have
 * bound it; -1 when the global scope has none.
 */
int bo_curl_slot_global(void)
{
    void *p;
    dl_init();
    p = bo_dl_real_dlsym(RTLD_NEXT, bo_curl_fn_names[BO_CURL_PERFORM]);
    return p != NULL ? slot_for_addr(p) : -1;
}

/*
 * With no libcurl in the global scope, the one in the calling object's own
 * dependencies (python3-pycurl's module, loaded RTLD_LOCAL), else the first
 * libcurl loaded; -1 when there is none.
 */
int bo_curl_slot_for_caller(const void *ret)
{
    Dl_info info;
    struct link_map *lm = NULL;
    int s = -1;

    dl_init();
    if (dladdr1(ret, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0 && lm != NULL) {
        void *p = bo_dl_real_dlsym(lm, bo_curl_fn_names[BO_CURL_PERFORM]);
        if (p != NULL && !in_self((uintptr_t)p))
            s = slot_for_addr(p);
    }
    if (s < 0)
        bo_dl_iterate(first_libcurl_cb, &s);
    return s;
}

/* ---- rewriting the GOT of deep-bound objects ------------------------- */

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
    int fi;
} lazy_entry;

typedef struct walk_state {
    obj_view *objs;
    size_t n, cap;
    lazy_entry *lazy;
    size_t nlazy, lazy_cap;
    unsigned rewritten;
    bool done;
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
    seen_add(phdr_dynamic(info));
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
        ssize_t got = read(fd, buf + len, sizeof buf - 1 - len);
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
    close(fd);
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

/* The shim's own dl hooks, by the names below (the trampolines' addresses). */
extern const char bo_tramp_dlsym[], bo_tramp_dlvsym[], bo_tramp_dlopen[], bo_tramp_dlmopen[];

/*
 * A deep-bound object binds the dl functions to libc as well, past the
 * shim: its references to a real one are routed to the shim's hook, so that
 * what it loads and looks up in turn is reached too.  Returns the hook for
 * value v of a reference to `name`, or NULL.
 */
static void *dl_hook_for(const char *name, uintptr_t v)
{
#if defined(__x86_64__) && !defined(BO_DL_NO_HOOKS)
    static const char *const dl_names[] = {"dlsym", "dlvsym", "dlopen", "dlmopen"};
    void *real[] = {(void *)bo_dl_real_dlsym, (void *)bo_dl_real_dlvsym, (void *)bo_dl_real_dlopen,
                    (void *)bo_dl_real_dlmopen};
    void *hook[] = {(void *)bo_tramp_dlsym, (void *)bo_tramp_dlvsym, (void *)bo_tramp_dlopen,
                    (void *)bo_tramp_dlmopen};
    if (name[0] != 'd' || name[1] != 'l')
        return NULL;
    for (size_t i = 0; i < sizeof dl_names / sizeof dl_names[0]; i++)
        if (str_eq(name, dl_names[i]) && v == (uintptr_t)real[i])
            return hook[i];
#else
    (void)name;
    (void)v;
#endif
    return NULL;
}

static void lazy_add(walk_state *w, void **slot, uintptr_t stub, int fi)
{
    if (w->nlazy == w->lazy_cap) {
        size_t cap = w->lazy_cap ? w->lazy_cap * 2 : 16;
        lazy_entry *nl = realloc(w->lazy, cap * sizeof *nl);
        if (nl == NULL)
            return;
        w->lazy = nl;
        w->lazy_cap = cap;
    }
    w->lazy[w->nlazy++] = (lazy_entry){.slot = slot, .stub = stub, .fi = fi};
}

/*
 * A lazy entry of an object the load brought in binds, at its first call,
 * to the first definition in the object's own scope (RTLD_DEEPBIND: its
 * dependencies first; a dlmopen namespace: that namespace).  Resolved here,
 * outside the loader's lock, with a lookup in that scope; when it is a
 * libcurl, the entry gets the wrapper now.
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
        p = bo_dl_real_dlsym(lm, bo_curl_fn_names[e->fi]);
        if (p == NULL) {
            (void)dlerror(); /* leave no error of ours for the program's dlerror() */
            continue;
        }
        if (in_self((uintptr_t)p) || (s = slot_for_addr(p)) < 0 || g_slots[s].fn[e->fi] != p ||
            (uintptr_t)__atomic_load_n(e->slot, __ATOMIC_ACQUIRE) != e->stub)
            continue;
        if (patch_entry(e->slot, bo_curl_wrapper(s, e->fi)))
            w->rewritten++;
    }
}

/* Route one object's references to hooked names that bound to a libcurl. */
static void rewrite_object(walk_state *w, const obj_view *ov)
{
    elf_obj o;
    const ElfW(Rela) *tables[2];
    size_t sizes[2];

    if (ov->dyn == NULL || in_self(ov->lo) || name_is(ov->name, "linux-vdso") ||
        elf_parse(&o, ov->base, ov->dyn) != 0)
        return;
    if (elf_sym(&o, bo_curl_fn_names[BO_CURL_PERFORM]) != NULL)
        return; /* a libcurl itself: its own references stay its own */
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
            int fi = hooked_index(name);
            void **slot = (void **)(ov->base + r->r_offset);
            uintptr_t v;
            const obj_view *to;
            void *hook;
            int s;
            if (fi < 0 && name[0] != 'd')
                continue;
            v = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (fi < 0) {
                if ((hook = dl_hook_for(name, v)) != NULL && patch_entry(slot, hook))
                    w->rewritten++;
                continue;
            }
            if (type == R_X86_64_JUMP_SLOT && ov->is_new && v != 0 && obj_holding(w, v) == ov) {
                lazy_add(w, slot, v, fi); /* a lazy PLT entry, not bound yet */
                continue;
            }
            if (v == 0 || in_self(v) || (to = obj_holding(w, v)) == NULL || to == ov ||
                (s = slot_for_object(to->base, to->dyn)) < 0 || (uintptr_t)g_slots[s].fn[fi] != v)
                continue; /* unbound yet (lazy), already ours, or not a libcurl */
            if (patch_entry(slot, bo_curl_wrapper(s, fi)))
                w->rewritten++;
        }
    }
}

static int collect_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    walk_state *w = data;
    obj_view v = {.base = info->dlpi_addr, .dyn = phdr_dynamic(info), .name = info->dlpi_name};
    (void)size;
    v.is_new = v.dyn != NULL && seen_add(v.dyn);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        if (v.lo == 0 || a < v.lo)
            v.lo = a;
        if (a + ph->p_memsz > v.hi)
            v.hi = a + ph->p_memsz;
    }
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

/* After a deep-bound load: route every loaded object's libcurl references. */
static unsigned rewrite_all(void)
{
    walk_state w = {0};
    bo_dl_iterate(walk_cb, &w);
    resolve_lazy(&w);
    free(w.objs);
    free(w.lazy);
    return w.rewritten;
}

/* ---- the hooks -------------------------------------------------------- */

/* The hooked function a dlsym in flight looks up (+1; 0: none). */
static __thread int tl_pending;

static int gadget_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uintptr_t *want = data, a = *want;
    bool inside = false;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum && !inside; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        inside = ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz;
    }
    if (!inside)
        return 0;
    *want = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & (PF_R | PF_X)) != (PF_R | PF_X))
            continue;
        const unsigned char *c = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        void *ret = memchr(c, 0xc3, ph->p_filesz);
        if (ret != NULL) {
            *want = (uintptr_t)ret;
            break;
        }
    }
    return 1;
}

/* A `ret` instruction of the shim: the gadget when the caller has none. */
extern const char bo_dl_self_ret[];

/*
 * A `ret` byte (0xc3) in an executable segment of the object holding the
 * caller's return address: glibc then takes that object for the caller.
 * Falls back to one of the shim's (the caller is then the shim, as for any
 * plain wrapper).
 */
static uintptr_t gadget_for(const void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    bo_dl_iterate(gadget_cb, &a);
    return a != 0 && a != (uintptr_t)caller ? a : (uintptr_t)bo_dl_self_ret;
}

/* Before dlsym/dlvsym: 0 to leave the call to glibc, else the gadget. */
uintptr_t bo_dl_sym_pre(uintptr_t handle, uintptr_t name, uintptr_t version, const void *caller);
uintptr_t bo_dl_sym_pre(uintptr_t handle, uintptr_t name, uintptr_t version, const void *caller)
{
    int saved = errno, i;
    uintptr_t g = 0;
    (void)handle;
    (void)version;
    dl_init();
    if ((i = hooked_index((const char *)name)) >= 0 && !in_self((uintptr_t)caller)) {
        tl_pending = i + 1;
        g = gadget_for(caller);
    }
    errno = saved;
    return g;
}

/* After dlsym/dlvsym of a hooked name: the wrapper in place of the function. */
void *bo_dl_sym_post(void *p);
void *bo_dl_sym_post(void *p)
{
    int saved = errno, i = tl_pending - 1;
    tl_pending = 0;
    p = wrap(p, i);
    errno = saved;
    return p;
}

/* Before dlopen: post-process only what may bind around the shim. */
uintptr_t bo_dl_open_pre(uintptr_t file, uintptr_t flags, uintptr_t unused, const void *caller);
uintptr_t bo_dl_open_pre(uintptr_t file, uintptr_t flags, uintptr_t unused, const void *caller)
{
    int saved = errno;
    uintptr_t g = 0;
    (void)file;
    (void)unused;
    dl_init();
    if (((int)flags & RTLD_DEEPBIND) != 0 && !((int)flags & RTLD_NOLOAD))
        g = gadget_for(caller);
    errno = saved;
    return g;
}

/* Before dlmopen: its objects live in another namespace, without the shim. */
uintptr_t bo_dl_mopen_pre(uintptr_t lmid, uintptr_t file, uintptr_t flags, const void *caller);
uintptr_t bo_dl_mopen_pre(uintptr_t lmid, uintptr_t file, uintptr_t flags, const void *caller)
{
    int saved = errno;
    uintptr_t g = 0;
    (void)lmid;
    (void)file;
    dl_init();
    if (!((int)flags & RTLD_NOLOAD))
        g = gadget_for(caller);
    errno = saved;
    return g;
}

/* After a load the shim must see: route the new objects' libcurl references. */
void *bo_dl_open_post(void *handle);
void *bo_dl_open_post(void *handle)
{
    int saved = errno;
    if (handle != NULL)
        rewrite_all();
    errno = saved;
    return handle;
}

/*
 * The trampolines.  On entry [rsp] is the caller's return address.  The
 * argument registers are kept around the call of PRE(a0, a1, a2, caller);
 * a zero answer jumps to glibc's function as if the shim were not there;
 * otherwise glibc's function is entered with the gadget as its return
 * address and POST's thunk under it: glibc returns to the gadget's `ret`,
 * which returns into the thunk, which calls POST(result) and returns to the
 * caller.  The stack is 16-byte aligned at every call, as the ABI wants.
 */
#define BO_TRAMPOLINE(name, pre, real, post)                                          \
    __asm__(".text\n"                                                                 \
            ".globl " #name "\n"                                                      \
            ".type " #name ", @function\n"                                           \
            ".globl bo_tramp_" #name "\n"                                             \
            ".hidden bo_tramp_" #name "\n"                                            \
            "bo_tramp_" #name ":\n" #name ":\n"                                       \
            ".cfi_startproc\n"                                                        \
            "endbr64\n"                                                               \
            "push %rdi\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rsi\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rdx\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rcx\n.cfi_adjust_cfa_offset 8\n"                                   \
            "sub $8, %rsp\n.cfi_adjust_cfa_offset 8\n"                                \
            "mov 40(%rsp), %rcx\n"                                                    \
            "call " #pre "\n"                                                         \
            "add $8, %rsp\n.cfi_adjust_cfa_offset -8\n"                               \
            "pop %rcx\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rdx\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rsi\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rdi\n.cfi_adjust_cfa_offset -8\n"                                   \
            "test %rax, %rax\n"                                                       \
            "jnz 1f\n"                                                                \
            "jmp *" #real "(%rip)\n"                                                  \
            "1:\n"                                                                    \
            "lea " #name "_post(%rip), %r11\n"                                        \
            "push %r11\n"                                                             \
            "push %rax\n"                                                             \
            "jmp *" #real "(%rip)\n"                                                  \
            ".cfi_endproc\n"                                                          \
            ".size " #name ", .-" #name "\n"                                          \
            ".type " #name "_post, @function\n" #name "_post:\n"                      \
            "sub $8, %rsp\n"                                                          \
            "mov %rax, %rdi\n"                                                        \
            "call " #post "\n"                                                        \
            "add $8, %rsp\n"                                                          \
            "ret\n"                                                                   \
            ".size " #name "_post, .-" #name "_post\n")

#if defined(__x86_64__) && !defined(BO_DL_NO_HOOKS)
BO_TRAMPOLINE(dlsym, bo_dl_sym_pre, bo_dl_real_dlsym, bo_dl_sym_post);
BO_TRAMPOLINE(dlvsym, bo_dl_sym_pre, bo_dl_real_dlvsym, bo_dl_sym_post);
BO_TRAMPOLINE(dlopen, bo_dl_open_pre, bo_dl_real_dlopen, bo_dl_open_post);
BO_TRAMPOLINE(dlmopen, bo_dl_mopen_pre, bo_dl_real_dlmopen, bo_dl_open_post);
__asm__(".text\n"
        ".hidden bo_dl_self_ret\n"
        ".globl bo_dl_self_ret\n"
        "bo_dl_self_ret:\n"
        "ret\n");
#else
const char bo_dl_self_ret[1] = {0};
#endif
