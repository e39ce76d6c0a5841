/*
 * kept.h: the answer of an attempt that was retried, kept until the call
 * ends, within the libcurl room (kept.c).  When the retry ends with no
 * answer of its own (its new connection refused, reset, past the
 * program's deadline, or showing a certificate the program does not
 * trust), the program gets the answer it would have had without the
 * library: the kept attempt's bytes, its CURLcode, and what
 * curl_easy_getinfo says of it (status, sizes, Content-Type, Retry-After),
 * until the handle's next transfer starts.
 */
#ifndef BO_CURL_KEPT_H
#define BO_CURL_KEPT_H

#include <stdbool.h>

#include "libcurl/handle.h"

/* A call begins: nothing is kept. */
void bo_curl_kept_forget(bo_curl_rec *r);

/* Did the attempt that ended with `code` get an answer that can be kept
 * (a final HTTP status, all its bytes still held)? */
bool bo_curl_kept_worth(const bo_curl_rec *r, int code);

/* The next attempt starts: keep the retried attempt's held bytes (its
 * result `code`, worth keeping) and what getinfo says of them now. */
void bo_curl_kept_keep(bo_curl_rec *r, int code);

/* The call ends with `code`: when its last attempt got no answer and one
 * is kept, the kept one goes back into the held bytes (to be committed)
 * and its code is returned; else `code`. */
int bo_curl_kept_use(bo_curl_rec *r, int code);

/* A transfer starts on the handle (or it is reset, or gone): getinfo
 * speaks of libcurl's own transfer again. */
void bo_curl_kept_unshow(bo_curl_rec *r);

/* curl_easy_getinfo on a handle whose kept answer was handed over: true
 * when *arg was answered from it. */
bool bo_curl_kept_info_of(const bo_curl_rec *r, CURLINFO info, void *arg);

/* Is any handle's kept answer shown?  (getinfo's fast path: no.) */
extern int bo_curl_kept_shown_count;
static inline bool bo_curl_kept_any_shown(void)
{
    return __atomic_load_n(&bo_curl_kept_shown_count, __ATOMIC_RELAXED) != 0;
}

#endif
