/*
 * family.c: the libcurl family, declared to the loader (loader.h): the
 * functions a copy of libcurl defines (curl_easy_perform marks one), the
 * hooked ones first, and each copy's wrappers (easy.c, multi.c), so that a
 * dlsym of a hooked name, or a deep-bound object's GOT, gets the wrapper
 * bound to the copy it found.
 */
#include "libcurl/easy.h"
#include "libcurl/multi.h"
#include "libcurl/real.h"
#include "loader/loader.h"

static void *wrapper(int slot, int fn)
{
    return fn < BO_CURL_M_FIRST ? bo_curl_easy_wrapper(slot, fn) : bo_multi_wrapper(slot, fn);
}

bo_lib_copies bo_curl_copies;

static const bo_lib_family g_curl_family = {
    .name = BO_CURL_FAMILY_NAME,
    .soname = "libcurl",
    .prefix = "curl_",
    .fns = bo_curl_fn_names,
    .nfns = BO_CURL_NFNS,
    .nhooked = BO_CURL_NHOOKED,
    .bind = bo_curl_bind,
    .wrapper = wrapper,
    .copies = &bo_curl_copies,
};
BO_LIB_FAMILY(g_curl_family);

_Static_assert(BO_CURL_NFNS <= BO_LIB_MAX_FNS, "the registry holds every function of a copy");
