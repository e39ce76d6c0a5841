/*
 * fork: the one list of the library's fork handlers, in lock order.
 *
 * Every lock of the library is held across fork() and, in the child (where
 * only the forking thread exists), initialised anew: never unlocked, since
 * a lock that records its owner (recursive, error-checking) cannot be
 * unlocked by the child's thread, which has a new thread id.  Each room's
 * header declares its handlers; this list alone says in which order they
 * run: outer locks first.  prepare runs the list top to bottom, the parent
 * bottom to top (locks released in the reverse order), the child top to
 * bottom (the child's identity in the host-wide file before the blocks
 * attach to their slots as the child).  The order:
 *
 *   the init lock (core.c), outermost: nobody takes it holding another;
 *   the count of forks, by which the child reseeds (config.c);
 *   the host-wide file: no process lock of its own; the child is a new
 *     process for it (share.c);
 *   the destination table's shards, then every block's mutex (table.c);
 *   the lineage table (lineage.c), then the stats' waiting time
 *     (report.c);
 *   the fleet's connection lock and its orphan lock (redis.c): its code
 *     may load a resolver module (getaddrinfo -> dlopen) while holding it,
 *     so it comes before the walk lock;
 *   the walk lock, held by every dl_iterate_phdr of the library (elf.c:
 *     glibc does not reset the dynamic loader's lock for those walks in a
 *     fork child), then the registry of copies (registry.c, taken inside
 *     walks);
 *   the easy handles' records (options.c), the multi handles' records
 *     (multi.c) and the http room's table of connections (http/fdtab.c),
 *     leaves: never held while another lock is taken.
 *
 * vfork() and posix_spawn() (which system() and popen() use) run no atfork
 * handlers and need none: their child only execs, and the new program loads
 * the library afresh.
 */
#include <pthread.h>
#include <stddef.h>

#include "call/call.h"
#include "core/core.h"
#include "libcurl/libcurl.h"
#include "dest/dest.h"
#include "dest/redis.h"
#include "dest/share.h"
#include "http/http.h"
#include "loader/loader.h"

typedef struct fork_step {
    void (*prepare)(void);
    void (*parent)(void);
    void (*child)(void);
} fork_step;

static const fork_step k_order[] = {
    {bo_core_prepare_fork, bo_core_parent_fork, bo_core_child_fork},
    {bo_core_rng_prepare_fork, NULL, bo_core_rng_child_fork},
    {NULL, NULL, bo_share_child_fork},
    {bo_block_table_prepare_fork, bo_block_table_parent_fork, bo_block_table_child_fork},
    {bo_lineage_prepare_fork, bo_lineage_parent_fork, bo_lineage_child_fork},
    {NULL, NULL, bo_report_child_fork},
    {bo_redis_prepare_fork, bo_redis_parent_fork, bo_redis_child_fork},
    {bo_dl_walk_prepare_fork, bo_dl_walk_parent_fork, bo_dl_walk_child_fork},
    {bo_lib_registry_prepare_fork, bo_lib_registry_parent_fork, bo_lib_registry_child_fork},
    {bo_curl_records_prepare_fork, bo_curl_records_parent_fork, bo_curl_records_child_fork},
    {bo_multi_prepare_fork, bo_multi_parent_fork, bo_multi_child_fork},
    {bo_http_prepare_fork, bo_http_parent_fork, bo_http_child_fork},
};

#define NSTEPS (sizeof k_order / sizeof k_order[0])

static void prepare_fork(void)
{
    for (size_t i = 0; i < NSTEPS; i++)
        if (k_order[i].prepare != NULL)
            k_order[i].prepare();
}

static void parent_fork(void)
{
    for (size_t i = NSTEPS; i-- > 0;)
        if (k_order[i].parent != NULL)
            k_order[i].parent();
}

static void child_fork(void)
{
    for (size_t i = 0; i < NSTEPS; i++)
        if (k_order[i].child != NULL)
            k_order[i].child();
}

/* At load, while the process has one thread (never from inside a prepare
 * handler: glibc holds its atfork lock while those run). */
__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(prepare_fork, parent_fork, child_fork);
}
