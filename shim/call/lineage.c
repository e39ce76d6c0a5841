/*
 * lineage.c: the program's own retries (call.h): a call that continues a
 * logical request the shim handed back as a retryable failure, recognised
 * by its key within BO_LINEAGE_WINDOW_NS (policies/bo_budget.h decides).
 * One table per process; its lock is a leaf.
 */
#include <pthread.h>
#include <stdio.h>

#include "call/call.h"
#include "core/core.h"

/* The logical requests that failed retryably.  g_used is read without the
 * lock to skip them all while none is pending. */
static bo_lineages g_lineages;
static unsigned g_used; /* g_lineages.used, published atomically */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

bool bo_lineage_pending(void)
{
    return __atomic_load_n(&g_used, __ATOMIC_RELAXED) != 0;
}

bool bo_lineage_call_begin(uint64_t key, bo_call *call, bo_lineage *found)
{
    bo_lineage l;
    bool continues;

    if (key == 0 || __atomic_load_n(&g_used, __ATOMIC_RELAXED) == 0)
        return false;
    pthread_mutex_lock(&g_lock);
    continues = bo_lineage_find(&g_lineages, key, call->start_ns, &l);
    __atomic_store_n(&g_used, g_lineages.used, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    if (continues) {
        bo_call_continue(call, &l);
        if (found != NULL)
            *found = l;
    }
    return continues;
}

void bo_lineage_call_end(uint64_t key, const bo_call *call, bool failed_retryable,
                         const char *idem, uint64_t idem_body)
{
    bo_lineage l;

    if (key == 0)
        return;
    if (!failed_retryable && __atomic_load_n(&g_used, __ATOMIC_RELAXED) == 0)
        return;
    bo_call_lineage(call, key, &l);
    if (idem != NULL)
        snprintf(l.idem, sizeof l.idem, "%s", idem);
    l.idem_body = idem_body;
    pthread_mutex_lock(&g_lock);
    if (failed_retryable)
        bo_lineage_failed(&g_lineages, &l, bo_core_now_ns());
    else
        bo_lineage_forget(&g_lineages, key);
    __atomic_store_n(&g_used, g_lineages.used, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
}

void bo_lineage_prepare_fork(void)
{
    pthread_mutex_lock(&g_lock);
}

void bo_lineage_parent_fork(void)
{
    pthread_mutex_unlock(&g_lock);
}

void bo_lineage_child_fork(void)
{
    pthread_mutex_init(&g_lock, NULL);
}
