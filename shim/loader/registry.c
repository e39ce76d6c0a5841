/*
 * registry.c: the copies of each interposed library family loaded in the
 * process (loader.h).  One slot per copy (the OpenSSL and GnuTLS flavours
 * of libcurl, a plugin's private copy), each with its own real functions,
 * so that a wrapper never calls into another copy than the one it stands
 * for.  The families are those declared with BO_LIB_FAMILY, found in the
 * library's own section: the loader depends on none of them.
 */
#include "loader/registry.h"

#include <pthread.h>
#include <string.h>

#include "core/core.h"
#include "loader/elf.h"

/* The families declared (BO_LIB_FAMILY): the section's bounds (weak: a
 * program of the loader alone, a test, declares none). */
extern const bo_lib_family *const __start_bo_lib_families[] __attribute__((weak));
extern const bo_lib_family *const __stop_bo_lib_families[] __attribute__((weak));

/* Guards every family's slots (a leaf: taken inside walks, never across a
 * call into the dynamic loader). */
static pthread_mutex_t g_slot_lock = PTHREAD_MUTEX_INITIALIZER;

const bo_lib_family *bo_lib_hooked(const char *name, int *index)
{
    if (name == NULL)
        return NULL;
    for (const bo_lib_family *const *f = __start_bo_lib_families; f < __stop_bo_lib_families;
         f++) {
        if (!bo_has_prefix(name, (*f)->prefix))
            continue;
        for (int i = 0; i < (*f)->nhooked; i++) {
            if (bo_str_eq(name, (*f)->fns[i])) {
                *index = i;
                return *f;
            }
        }
    }
    return NULL;
}

const bo_lib_family *bo_lib_family_named(const char *name)
{
    for (const bo_lib_family *const *f = __start_bo_lib_families; f < __stop_bo_lib_families;
         f++)
        if (bo_str_eq((*f)->name, name))
            return *f;
    return NULL;
}

bool bo_lib_defines_family(const bo_elf *o)
{
    for (const bo_lib_family *const *f = __start_bo_lib_families; f < __stop_bo_lib_families;
         f++)
        if (bo_elf_sym(o, (*f)->fns[0]) != NULL)
            return true;
    return false;
}

static int slot_find(const bo_lib_copies *c, const void *dyn)
{
    int n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (c->dyn[i] == dyn)
            return i;
    return -1;
}

/*
 * Reads only the object's memory and takes only the registry's lock, so it
 * may run inside dl_iterate_phdr.
 */
int bo_lib_slot_for_object(const bo_lib_family *f, uintptr_t base, const void *dyn)
{
    void *fn[BO_LIB_MAX_FNS];
    bo_lib_copies *c = f->copies;
    bo_elf o;
    int s = slot_find(c, dyn);

    if (s >= 0)
        return s;
    if (bo_elf_parse(&o, base, dyn) != 0)
        return -1;
    for (int i = 0; i < f->nfns; i++)
        if ((fn[i] = bo_elf_sym(&o, f->fns[i])) == NULL || bo_elf_in_self((uintptr_t)fn[i]))
            return -1;
    pthread_mutex_lock(&g_slot_lock);
    s = slot_find(c, dyn);
    if (s < 0 && c->n < BO_LIB_MAX_COPIES) {
        s = c->n;
        c->dyn[s] = dyn;
        memcpy(c->fn[s], fn, (size_t)f->nfns * sizeof fn[0]);
        f->bind(s, fn);
        __atomic_store_n(&c->n, s + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_slot_lock);
    if (s < 0 && !__atomic_exchange_n(&c->full_warned, 1, __ATOMIC_RELAXED))
        bo_core_line("backoff: more than %d %s copies in one process: calls into the others "
                     "pass through without retries",
                     BO_LIB_MAX_COPIES, f->name);
    return s;
}

int bo_lib_slot_for_addr(const bo_lib_family *f, const void *p)
{
    Dl_info info;
    struct link_map *lm = NULL;

    if (dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
        return -1;
    return bo_lib_slot_for_object(f, lm->l_addr, lm->l_ld);
}

void *bo_lib_real(const bo_lib_family *f, int slot, int i)
{
    return f->copies->fn[slot][i];
}

void *bo_lib_wrap(const bo_lib_family *f, void *p, int i)
{
    int s;
    if (p == NULL || f == NULL || bo_elf_in_self((uintptr_t)p) ||
        (s = bo_lib_slot_for_addr(f, p)) < 0 || f->copies->fn[s][i] != p)
        return p;
    return f->wrapper(s, i);
}

typedef struct first_query {
    const bo_lib_family *f;
    int slot;
} first_query;

static int first_copy_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    first_query *q = data;
    (void)size;
    if (!bo_elf_name_is(info->dlpi_name, q->f->soname))
        return 0;
    int s = bo_lib_slot_for_object(q->f, info->dlpi_addr, bo_elf_dynamic(info));
    if (s < 0)
        return 0;
    q->slot = s;
    return 1;
}

/* As the dynamic linker would have bound a program's call to the exported
 * hooks: the first copy in the global scope after this library. */
int bo_lib_slot_global(const bo_lib_family *f)
{
    void *p;
    bo_dl_init();
    p = bo_dl_real_dlsym(RTLD_NEXT, f->fns[0]);
    return p != NULL ? bo_lib_slot_for_addr(f, p) : -1;
}

int bo_lib_slot_for_caller(const bo_lib_family *f, const void *ret)
{
    Dl_info info;
    struct link_map *lm = NULL;
    first_query q = {.f = f, .slot = -1};

    bo_dl_init();
    if (dladdr1(ret, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0 && lm != NULL) {
        void *h = bo_dl_handle_of(lm); /* (its link map is no handle: elf.h) */
        if (h != NULL) {
            void *p = bo_dl_real_dlsym(h, f->fns[0]);
            if (p != NULL && !bo_elf_in_self((uintptr_t)p))
                q.slot = bo_lib_slot_for_addr(f, p);
            dlclose(h);
        }
    }
    if (q.slot < 0)
        bo_dl_iterate(first_copy_cb, &q);
    return q.slot;
}

/* Fork: the registry's lock is a leaf, taken after the walk lock. */
void bo_lib_registry_prepare_fork(void)
{
    pthread_mutex_lock(&g_slot_lock);
}

void bo_lib_registry_parent_fork(void)
{
    pthread_mutex_unlock(&g_slot_lock);
}

void bo_lib_registry_child_fork(void)
{
    pthread_mutex_init(&g_slot_lock, NULL);
}

__attribute__((noinline, cold)) void bo_lib_find_range(bo_lib_copies *c, int s)
{
    uintptr_t lo, hi;
    (void)bo_dl_object_range(c->fn[s][0], &lo, &hi);
    /* atomic: two threads that race here both store, the same values */
    __atomic_store_n(&c->lo[s], lo, __ATOMIC_RELAXED);
    __atomic_store_n(&c->hi[s], hi, __ATOMIC_RELAXED);
    __atomic_store_n(&c->range_done[s], 1, __ATOMIC_RELEASE);
}

int bo_lib_copy_search(bo_lib_copies *c, const void *ret)
{
    int n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
    for (int s = 0; s < n; s++)
        if (bo_lib_inside(c, s, ret))
            return s;
    return -1;
}
