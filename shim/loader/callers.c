/*
 * callers.c: the copy of an interposed library an exported hook's caller
 * means (callers.h).
 */
#include "loader/callers.h"

#include <errno.h>

#include "core/core.h"

int bo_lib_callers_find(bo_lib_callers *t, void (*ask_global)(void), const void *ret)
{
    int saved = errno;

    bo_core_once(&t->global_known, ask_global);
    if (t->global_slot >= 0) {
        errno = saved;
        return t->global_slot;
    }
    int s = bo_lib_slot_for_caller(t->family, ret);
    errno = saved;
    if (s < 0)
        bo_core_die("backoff: cannot find the program's %s for a call of its; cannot continue",
                    t->family->name);
    size_t i = bo_lib_callers_hash(ret);
    for (size_t k = 0; k < BO_LIB_CALLERS_PROBE; k++, i = (i + 1) % BO_LIB_CALLERS_TABLE) {
        if (__atomic_load_n(&t->tab[i].ret, __ATOMIC_ACQUIRE) == ret)
            break;
        if (!__atomic_exchange_n(&t->tab[i].claimed, 1, __ATOMIC_ACQ_REL)) {
            t->tab[i].slot = s;
            __atomic_store_n(&t->tab[i].ret, ret, __ATOMIC_RELEASE);
            break;
        }
    }
    return s;
}
