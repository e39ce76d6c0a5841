/*
 * real.h: the libcurl copies' real functions, within the libcurl room
 * (real.c).  One slot per copy loaded (the loader's registry binds it, the
 * family is curl/family.c); an exported hook's caller means the copy the
 * dynamic linker would have bound it to.
 */
#ifndef BO_CURL_REAL_H
#define BO_CURL_REAL_H

#define CURL_DISABLE_TYPECHECK 1
#define CURL_DISABLE_DEPRECATION 1 /* CURLOPT_HTTPPOST is still recorded */
#include <curl/curl.h>
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt

#include <stdbool.h>
#include <stdint.h>

#include "loader/callers.h"
#include "loader/loader.h"

/* The libcurl functions each copy is bound for; the hooked ones first. */
enum {
    BO_CURL_PERFORM,
    BO_CURL_SETOPT,
    BO_CURL_RESET,
    BO_CURL_DUPHANDLE,
    BO_CURL_CLEANUP,
    BO_CURL_GETINFO,
    /* the multi interface (multi.c) */
    BO_CURL_M_ADD,
    BO_CURL_M_REMOVE,
    BO_CURL_M_PERFORM,
    BO_CURL_M_INFO_READ,
    BO_CURL_M_WAIT,
    BO_CURL_M_POLL,
    BO_CURL_M_TIMEOUT,
    BO_CURL_M_SOCKET_ACTION,
    BO_CURL_M_SETOPT,
    BO_CURL_M_CLEANUP,
    BO_CURL_NHOOKED,
    BO_CURL_M_FIRST = BO_CURL_M_ADD,
    BO_CURL_URL = BO_CURL_NHOOKED,
    BO_CURL_URL_SET,
    BO_CURL_URL_GET,
    BO_CURL_URL_CLEANUP,
    BO_CURL_FREE,
    BO_CURL_NFNS
};
extern const char *const bo_curl_fn_names[BO_CURL_NFNS];
/* The family's name in the loader's registry (family.c declares it). */
#define BO_CURL_FAMILY_NAME "libcurl"

/* One libcurl copy's real functions. */
typedef struct bo_curl_real {
    CURLcode (*perform)(CURL *);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    void (*reset)(CURL *);
    CURL *(*duphandle)(CURL *);
    void (*cleanup)(CURL *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    CURLU *(*url)(void);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*url_cleanup)(CURLU *);
    void (*free)(void *);
    /* the multi interface */
    CURLMcode (*m_add)(CURLM *, CURL *);
    CURLMcode (*m_remove)(CURLM *, CURL *);
    CURLMcode (*m_perform)(CURLM *, int *);
    CURLMsg *(*m_info_read)(CURLM *, int *);
    CURLMcode (*m_wait)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*m_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*m_timeout)(CURLM *, long *);
    CURLMcode (*m_socket_action)(CURLM *, curl_socket_t, int, int *);
    CURLMcode (*m_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*m_cleanup)(CURLM *);
} bo_curl_real;

/* One per libcurl copy of the process (the slots of the loader's registry),
 * and the registry's record of them (family.c: their code's ranges). */
extern bo_curl_real bo_curl_reals[BO_LIB_MAX_COPIES];
extern bo_lib_copies bo_curl_copies;

/* Bind slot's real functions (the family's bind: under the registry's lock,
 * once per copy; a bound m_add says the slot is complete). */
void bo_curl_bind(int slot, void *const *fn);

/*
 * The copy an exported hook's caller (its return address) was bound to
 * without the shim, as the loader's callers table says for every family
 * (loader/callers.h): the global scope's, else the one of the caller's
 * own object (a module loaded RTLD_LOCAL, such as python3-pycurl's).
 * Aborts loudly when no libcurl is loaded: continuing would crash later.
 * Once the global scope's copy is known, it is every caller's: two loads.
 */
extern bo_lib_callers bo_curl_callers;
void bo_curl_ask_global(void); /* the global scope's copy, asked once */
static inline bo_curl_real *bo_curl_caller_real(const void *ret)
{
    return &bo_curl_reals[bo_lib_caller_slot(&bo_curl_callers, bo_curl_ask_global, ret)];
}

/*
 * Which copy, if any, a hook's caller lives in (the loader's ranges): a
 * call from inside a libcurl (its curl_easy_perform driving a private
 * multi handle, ~7 calls a transfer) is that libcurl's own and passes
 * straight through.  bo_curl_slot_search: the copy a caller means,
 * *internal when the caller is inside one.
 */
bo_curl_real *bo_curl_slot_search(const void *ret, bool *internal);

/* Is `ret` inside real's (bound) libcurl?  Then the call comes from
 * libcurl itself (curl_easy_perform's private multi handle). */
static inline bool bo_curl_from_libcurl(bo_curl_real *real, const void *ret)
{
    return bo_lib_inside(&bo_curl_copies, (int)(real - bo_curl_reals), ret);
}

/* A call from inside the first slot's libcurl, the common case: a compare
 * or two (a range is known only for a bound slot). */
static inline bool bo_curl_internal0(const void *ret)
{
    return bo_lib_inside_known(&bo_curl_copies, 0, ret);
}

#endif
