/*
 * shim_fork: the one set of fork handlers of libbackoff.so.
 *
 * Every lock of the library is held across fork() and, in the child (where
 * only the forking thread exists), initialised anew: never unlocked, since a
 * lock that records its owner (recursive, error-checking) cannot be unlocked
 * by the child's thread, which has a new thread id.  The order is stated
 * here rather than left to the order in which the modules registered
 * handlers: outer locks first (shim_state: the init lock, the destination
 * table, each destination), then shim_dl's walk lock (held by every
 * dl_iterate_phdr of the library: glibc does not reset the dynamic loader's
 * lock for those walks in a fork child), leaf locks last (shim_dl: the
 * registry of libcurl copies; shim_curl: the handle records; shim_multi: the
 * multi handles' records; none is ever held while another lock is taken);
 * the parent releases in the reverse order.
 *
 * vfork() and posix_spawn() (which system() and popen() use) run no atfork
 * handlers and need none: their child only execs, and the new program loads
 * the library afresh.
 */
#include "bo_shim.h"

static void prepare_fork(void)
{
    bo_shim_state_prepare_fork();
    bo_shim_dl_prepare_fork();
    bo_shim_curl_prepare_fork();
    bo_shim_multi_prepare_fork();
}

static void parent_fork(void)
{
    bo_shim_multi_parent_fork();
    bo_shim_curl_parent_fork();
    bo_shim_dl_parent_fork();
    bo_shim_state_parent_fork();
}

static void child_fork(void)
{
    bo_shim_multi_child_fork();
    bo_shim_curl_child_fork();
    bo_shim_dl_child_fork();
    bo_shim_state_child_fork();
}

/* At load, while the process has one thread (never from inside a prepare
 * handler: glibc holds its atfork lock while those run). */
__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(prepare_fork, parent_fork, child_fork);
}
