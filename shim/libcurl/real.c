/*
 * real.c: the libcurl copies' real functions, which copy a caller means
 * and whether the caller is inside one (real.h).  libbackoff.so does not
 * link libcurl: the program's own copies (the OpenSSL or the GnuTLS
 * flavour, linked or dlopen()ed later) are found by the loader's registry
 * and bound here.
 */
#include "libcurl/real.h"

#include <errno.h>
#include <stdint.h>

#include "core/core.h"

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

bo_curl_real bo_curl_reals[BO_LIB_MAX_COPIES];

void bo_curl_bind(int slot, void *const *fn)
{
    bo_curl_real *c = &bo_curl_reals[slot];
    *(void **)&c->perform = fn[BO_CURL_PERFORM];
    *(void **)&c->setopt = fn[BO_CURL_SETOPT];
    *(void **)&c->reset = fn[BO_CURL_RESET];
    *(void **)&c->duphandle = fn[BO_CURL_DUPHANDLE];
    *(void **)&c->cleanup = fn[BO_CURL_CLEANUP];
    *(void **)&c->getinfo = fn[BO_CURL_GETINFO];
    *(void **)&c->url = fn[BO_CURL_URL];
    *(void **)&c->url_set = fn[BO_CURL_URL_SET];
    *(void **)&c->url_get = fn[BO_CURL_URL_GET];
    *(void **)&c->url_cleanup = fn[BO_CURL_URL_CLEANUP];
    *(void **)&c->free = fn[BO_CURL_FREE];
    *(void **)&c->m_remove = fn[BO_CURL_M_REMOVE];
    *(void **)&c->m_perform = fn[BO_CURL_M_PERFORM];
    *(void **)&c->m_info_read = fn[BO_CURL_M_INFO_READ];
    *(void **)&c->m_wait = fn[BO_CURL_M_WAIT];
    *(void **)&c->m_poll = fn[BO_CURL_M_POLL];
    *(void **)&c->m_timeout = fn[BO_CURL_M_TIMEOUT];
    *(void **)&c->m_socket_action = fn[BO_CURL_M_SOCKET_ACTION];
    *(void **)&c->m_setopt = fn[BO_CURL_M_SETOPT];
    *(void **)&c->m_cleanup = fn[BO_CURL_M_CLEANUP];
    /* last: a bound m_add says the slot is complete (multi.c's search) */
    __atomic_store_n((void **)&c->m_add, fn[BO_CURL_M_ADD], __ATOMIC_RELEASE);
}

/* The libcurl family (declared by family.c), by name. */
static const bo_lib_family *family(void)
{
    return bo_lib_family_named(BO_CURL_FAMILY_NAME);
}

bo_lib_callers bo_curl_callers;

/* The global scope's copy, asked once (bo_lib_caller_slot's ask_global). */
void bo_curl_ask_global(void)
{
    bo_curl_callers.family = family();
    bo_curl_callers.global_slot = bo_lib_slot_global(bo_curl_callers.family);
}

/*
 * The libcurl a hook's caller means.  A call from inside a libcurl (its
 * curl_easy_perform driving a private multi handle, ~7 calls a transfer)
 * is that libcurl's own: *internal tells the hook to pass it straight
 * through.  Any other caller means the libcurl bo_curl_caller_real finds
 * for it (the global scope's at once, else the callers table).
 */
__attribute__((noinline)) bo_curl_real *bo_curl_slot_search(const void *ret, bool *internal)
{
    int s = bo_lib_copy_holding(&bo_curl_copies, ret);
    *internal = s >= 0;
    return s >= 0 ? &bo_curl_reals[s] : bo_curl_caller_real(ret);
}
