/*
 * options.h: the records of the easy handles and what the program set on
 * them, within the libcurl room (options.c).  The options the shim tracks
 * are listed once, in options.c's table: each says how it is recorded and
 * whether it may change what is retried; every other option goes straight
 * to libcurl.
 */
#ifndef BO_CURL_OPTIONS_H
#define BO_CURL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "libcurl/handle.h"

/* The record of h, or NULL (cheap for the handle a thread used last). */
bo_curl_rec *bo_curl_rec_find(const CURL *h);
/* The record of h, made on first sight with the shim's callbacks installed
 * in front of the program's; NULL when memory runs out. */
bo_curl_rec *bo_curl_rec_get(const bo_curl_real *real, CURL *h);
/* curl_easy_reset: libcurl's defaults again, the shim's callbacks in front. */
void bo_curl_rec_reset(bo_curl_rec *r);
/* curl_easy_duphandle: the copy gets its own record (the recorded options,
 * its own references and buffers, the callbacks pointing at it); NULL when
 * memory runs out. */
bo_curl_rec *bo_curl_rec_dup(const bo_curl_rec *r, CURL *dup);
/* curl_easy_cleanup: the record of h leaves the table (NULL: none), before
 * the handle is freed (its address may be reused at once), and is freed
 * after. */
bo_curl_rec *bo_curl_rec_take(const CURL *h);
void bo_curl_rec_free(bo_curl_rec *r);

/* One option's value, read by its type's range (docs/STYLE.md). */
typedef union bo_curl_optval {
    long l;
    void *p;
    void (*f)(void);
    curl_off_t o;
} bo_curl_optval;

/* The option is one the record mirrors. */
bool bo_curl_opt_tracked(CURLoption opt);
/* Record a tracked option (bo_curl_opt_tracked), then set it on the handle
 * unless the shim keeps it in front (the write and header callbacks and
 * their data); libcurl's answer, or CURLE_OK for a kept one. */
CURLcode bo_curl_opt_set(bo_curl_rec *r, CURLoption opt, bo_curl_optval v);

/* Length of "scheme://authority" at the start of url, or 0 when it has none. */
size_t bo_curl_origin_prefix(const char *url);

#endif
