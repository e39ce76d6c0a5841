/*
 * loader: reaching a library's functions however the program loads it.
 *
 *   elf.c       reading the loaded objects: dynamic sections, symbols,
 *               segments; the one lock every walk of them takes; libc's
 *               real dl functions;
 *   registry.c  the copies of each interposed library family (libcurl,
 *               libssl, libgnutls): one slot of real functions per copy
 *               loaded, so that a wrapper never calls into another copy,
 *               and each copy's code range (is a caller inside it?);
 *   callers.c   which copy a hook's caller means (callers.h);
 *   got.c       after a deep-bound load (RTLD_DEEPBIND, dlmopen), the GOT
 *               entries that bound a hooked name straight to a copy are
 *               rewritten to that copy's wrapper;
 *   dl_hooks.c  the dlsym, dlvsym, dlopen and dlmopen hooks (x86_64
 *               trampolines) that answer wrappers and trigger the rewrite.
 *
 * A family is declared by its own room (curl/family.c) with
 * BO_LIB_FAMILY: the loader finds every declared family in a section of the
 * library, so it depends on no family and the families depend on it.
 */
#ifndef BO_LOADER_H
#define BO_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies of one family per process; beyond this, calls into others pass through. */
#define BO_LIB_MAX_COPIES 8
/* X(i) for each slot i of a family's copies, 0 to BO_LIB_MAX_COPIES - 1 (a family's
 * wrappers, one set a copy); BO_LIB_SLOT_LIST the same separated by commas (the rows
 * of its table of wrappers). */
#define BO_LIB_EACH_SLOT(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define BO_LIB_SLOT_LIST(X) X(0), X(1), X(2), X(3), X(4), X(5), X(6), X(7)
_Static_assert(BO_LIB_MAX_COPIES == 8, "BO_LIB_EACH_SLOT and BO_LIB_SLOT_LIST name every slot");
/* Functions a family's copies are bound for, at most. */
#define BO_LIB_MAX_FNS 32

/* The registry's record of one family's copies (storage the family gives). */
typedef struct bo_lib_copies {
    const void *dyn[BO_LIB_MAX_COPIES];          /* a copy's dynamic section: its identity */
    void *fn[BO_LIB_MAX_COPIES][BO_LIB_MAX_FNS];
    int n;                                       /* slots below it are complete */
    int full_warned;
    /* each copy's code, [lo, hi), found on first need (bo_lib_find_range) */
    uintptr_t lo[BO_LIB_MAX_COPIES], hi[BO_LIB_MAX_COPIES];
    int range_done[BO_LIB_MAX_COPIES];
} bo_lib_copies;

/*
 * An interposed library family.  A copy is an object that defines every
 * function of fns (at its default version, not in this library); the
 * first nhooked are the ones the library hooks (exported by a room, and
 * answered to dlsym and rewritten in deep-bound GOTs as the copy's
 * wrapper); fns[0] marks a copy (an object defining it is one: its own
 * references to the family stay its own).
 */
typedef struct bo_lib_family {
    const char *name;            /* for messages: "libcurl" */
    const char *soname;          /* a copy's file name starts so: "libcurl" */
    const char *prefix;          /* every hooked name starts so: "curl_" */
    const char *const *fns;
    int nfns, nhooked;
    /* A new copy's real functions, fn[nfns], in slot (under the registry's
     * lock, once per copy; fast readers see the slot once it is bound). */
    void (*bind)(int slot, void *const *fn);
    /* The wrapper of hooked function i bound to slot's copy. */
    void *(*wrapper)(int slot, int i);
    bo_lib_copies *copies;
} bo_lib_family;

/* Declares a family to the loader (at file scope, once per family). */
#define BO_LIB_FAMILY(fam)                                                                  \
    __attribute__((used, section("bo_lib_families"))) static const bo_lib_family *const   \
        fam##_entry = &(fam)

/*
 * Is a hook's caller inside a copy of the family itself (libcurl's
 * curl_easy_perform driving a private multi handle, ~7 calls a transfer;
 * libcurl writing its own requests on its sockets)?  A copy's address
 * range is found on first need, then a compare or two.  bo_lib_inside:
 * inside slot s's copy (bound); bo_lib_inside_known: the same, false while
 * its range is not known yet (the common case first, inline);
 * bo_lib_copy_holding: the slot of the copy that holds ret, -1 when none
 * (bo_lib_copy_search: its loop over every copy).
 */
void bo_lib_find_range(bo_lib_copies *c, int s);
static inline bool bo_lib_inside_known(const bo_lib_copies *c, int s, const void *ret)
{
    if (!__atomic_load_n(&c->range_done[s], __ATOMIC_ACQUIRE))
        return false;
    uintptr_t lo = __atomic_load_n(&c->lo[s], __ATOMIC_RELAXED);
    uintptr_t hi = __atomic_load_n(&c->hi[s], __ATOMIC_RELAXED);
    return (uintptr_t)ret - lo < hi - lo;
}
static inline bool bo_lib_inside(bo_lib_copies *c, int s, const void *ret)
{
    if (!__atomic_load_n(&c->range_done[s], __ATOMIC_ACQUIRE))
        bo_lib_find_range(c, s);
    return bo_lib_inside_known(c, s, ret);
}
int bo_lib_copy_search(bo_lib_copies *c, const void *ret);
static inline int bo_lib_copy_holding(bo_lib_copies *c, const void *ret)
{
    /* the common case inline: one copy, its range known */
    if (__atomic_load_n(&c->n, __ATOMIC_ACQUIRE) == 1 &&
        __atomic_load_n(&c->range_done[0], __ATOMIC_ACQUIRE))
        return bo_lib_inside_known(c, 0, ret) ? 0 : -1;
    return bo_lib_copy_search(c, ret);
}

/* The declared family of that name ("libcurl"), or NULL: how a family's own
 * files reach its descriptor without depending on the file that declares
 * it (whose wrappers depend on them). */
const bo_lib_family *bo_lib_family_named(const char *name);

/* The slot of f's copy that the global scope binds after this library, or -1. */
int bo_lib_slot_global(const bo_lib_family *f);

/*
 * The slot of f's copy that a caller (a return address of an exported
 * hook) means when the global scope has none: its own object's dependency
 * (a module loaded RTLD_LOCAL, such as python3-pycurl's), else the first
 * copy loaded; -1 when none is loaded.
 */
int bo_lib_slot_for_caller(const bo_lib_family *f, const void *ret);

/*
 * dl_iterate_phdr for the library's own walks: every one is made under a
 * lock the fork handlers hold across fork().  glibc (2.36) re-initialises
 * the dynamic loader's dl_load_lock in a fork child but not
 * dl_load_write_lock, which dl_iterate_phdr holds during its walk: a child
 * forked while one of our threads walked inherited it held and hung at its
 * first walk, ours or the program's own (C++ exceptions unwind through
 * dl_iterate_phdr).  Callbacks may walk again (the lock is recursive) and
 * may take the registry's lock, nothing else of ours.
 */
struct dl_phdr_info;
int bo_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data);

/* The address range [*lo, *hi) of the loaded object that holds addr (its
 * PT_LOAD segments); false (and 0, 0) when none does. */
bool bo_dl_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

/*
 * Fork (the one list in fork/fork.c): the walk lock (elf.c), then the
 * registry's (registry.c, a leaf taken inside walks); in the child both
 * are made anew.
 */
void bo_dl_walk_prepare_fork(void);
void bo_dl_walk_parent_fork(void);
void bo_dl_walk_child_fork(void);
void bo_lib_registry_prepare_fork(void);
void bo_lib_registry_parent_fork(void);
void bo_lib_registry_child_fork(void);

#endif
