/*
 * callers.h: which copy of an interposed library an exported hook's caller
 * means (callers.c), for every hook family (libcurl, libssl, libgnutls):
 * the global scope's copy when there is one (a program or library that
 * links it), else the one the caller's own object reaches (a module that
 * loads it RTLD_LOCAL: python3-pycurl, Python's _ssl, Perl's SSLeay.so).
 * Each call site is resolved once and kept in a table shared by the threads (no
 * thread-locals: the library's static TLS stays small): an entry is
 * claimed with one atomic exchange, its slot written, its address
 * published (release), never changed; readers take no lock, and nothing
 * of it is held across fork().
 */
#ifndef BO_LOADER_CALLERS_H
#define BO_LOADER_CALLERS_H

#include <stddef.h>
#include <stdint.h>

#include "loader/loader.h"

#define BO_LIB_CALLERS_TABLE 256
#define BO_LIB_CALLERS_PROBE 8

/*
 * A family's table, zero at load (in .bss: a 6 KB table with pointers in its
 * initializer would be a page written by the dynamic linker at every
 * program's start); the family's ask_global, passed with each lookup, fills
 * family and global_slot on the first.
 */
typedef struct bo_lib_callers {
    const bo_lib_family *family; /* set by ask_global */
    int global_known;            /* the global scope was asked (bo_core_once) */
    int global_slot;             /* its copy's slot, -1: none (read once known) */
    struct {
        int claimed;
        const void *ret;
        int slot;
    } tab[BO_LIB_CALLERS_TABLE];
} bo_lib_callers;

/* The slow way: the global copy (ask_global, once: it sets t->family and
 * t->global_slot from bo_lib_slot_global), else the caller's; aborts loudly
 * when no copy is loaded (continuing would crash later). */
int bo_lib_callers_find(bo_lib_callers *t, void (*ask_global)(void), const void *ret);

static inline size_t bo_lib_callers_hash(const void *ret)
{
    return (size_t)(((uintptr_t)ret * 0x9E3779B97F4A7C15ULL) >> 56) % BO_LIB_CALLERS_TABLE;
}

/* The slot of the copy the caller at ret means: a load or two once known. */
static inline int bo_lib_caller_slot(bo_lib_callers *t, void (*ask_global)(void),
                                     const void *ret)
{
    if (__builtin_expect(__atomic_load_n(&t->global_known, __ATOMIC_ACQUIRE), 1) &&
        t->global_slot >= 0)
        return t->global_slot;
    size_t i = bo_lib_callers_hash(ret);
    for (size_t k = 0; k < BO_LIB_CALLERS_PROBE; k++, i = (i + 1) % BO_LIB_CALLERS_TABLE) {
        const void *r = __atomic_load_n(&t->tab[i].ret, __ATOMIC_ACQUIRE);
        if (r == ret)
            return t->tab[i].slot;
        if (r == NULL && !__atomic_load_n(&t->tab[i].claimed, __ATOMIC_RELAXED))
            break;
    }
    return bo_lib_callers_find(t, ask_global, ret);
}

#endif
