/*
 * handle.h: the record the libcurl room keeps of each easy handle it
 * manages: what the program set (options.c records it), the held bytes of
 * the attempt under way (held.c), the rate-limit headers of its answer.
 * Only the handle's own thread touches a record while a call runs on it
 * (libcurl's rule); the table of records has a lock of its own (options.c).
 */
#ifndef BO_CURL_HANDLE_H
#define BO_CURL_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_idem.h"
#include "bo_ratelimit.h"
#include "libcurl/real.h"
#include "dest/dest.h"

/* What curl_easy_getinfo says of a kept answer (kept.c). */
#define BO_KEPT_NLONG 9
#define BO_KEPT_NOFF 5
typedef struct bo_curl_kept_info {
    int code;                   /* its CURLcode: CURLE_OK, or 22 under FAILONERROR */
    unsigned have;              /* which of l[] and off[] libcurl answered (bits) */
    long l[BO_KEPT_NLONG];      /* status, HTTP version, sizes... (kept.c's list) */
    curl_off_t off[BO_KEPT_NOFF];
    bool type_set;              /* it had a Content-Type that fits */
    char type[128];
} bo_curl_kept_info;

typedef enum bo_curl_method {
    BO_METHOD_GET = 0,
    BO_METHOD_HEAD,
    BO_METHOD_POST,
    BO_METHOD_MIME,
    BO_METHOD_PUT
} bo_curl_method;

/* While an attempt may still be retried its bytes are held (BO_HOLD_HOLD);
 * once one is committed, everything passes through (BO_HOLD_PASS). */
typedef enum bo_hold_mode { BO_HOLD_PASS = 0, BO_HOLD_HOLD } bo_hold_mode;

typedef struct bo_curl_rec {
    CURL *h;
    const bo_curl_real *real;   /* the libcurl copy that made the record */
    struct bo_curl_rec *next;   /* hash chain */
    bo_block *dest;             /* NULL: pass straight through; a reference */
    /* "scheme://authority" of the last parsed URL and its destination, so a
     * program that sets a new URL per request on the same origin does not
     * pay for a parse each time */
    char origin[BO_DEST_KEY_LEN];
    size_t origin_len;          /* 0: none */
    bo_block *origin_dest;      /* a reference of its own */
    uint64_t url_key;           /* bo_key_add of CURLOPT_URL's string, 0: none (CURLU) */
    /* CURLOPT_UNIX_SOCKET_PATH or CURLOPT_ABSTRACT_UNIX_SOCKET: the transfers
     * go to that socket, a destination of its own ("unix:PATH", as the
     * connect() hook keys it), whatever the URL's host says */
    bool unix_sock;
    bo_block *unix_dest;        /* its destination (a reference); NULL: not managed */
    /* request, as recorded from setopt */
    bo_curl_method method;
    bool custom_set;
    char custom[32];
    bool postfields;            /* POSTFIELDS / COPYPOSTFIELDS: in memory */
    const char *post_data;      /* POSTFIELDS: libcurl reads it at perform time */
    long long post_size;        /* POSTFIELDSIZE(_LARGE); -1: strlen(post_data) */
    uint64_t post_fp;           /* COPYPOSTFIELDS: the copy's fingerprint (bo_idem_body_fp) */
    struct curl_slist *headers; /* CURLOPT_HTTPHEADER as the program set it */
    bool follow;                /* FOLLOWLOCATION */
    bool include_header;        /* CURLOPT_HEADER: headers in the write stream */
    bool fresh_connect;         /* CURLOPT_FRESH_CONNECT as the program set it */
    bool fresh_forced;          /* ... set to 1 by the shim for a retry over HTTP/2 */
    /* the program's callbacks and their data */
    curl_write_callback write_fn;
    void *write_data;
    curl_write_callback header_fn;
    void *header_data;
    curl_read_callback read_fn;
    void *read_data;
    curl_seek_callback seek_fn;
    void *seek_data;
    /* the program's limits and cancel */
    long timeout_ms;            /* CURLOPT_TIMEOUT(_MS): 0 none */
    long connect_timeout_ms;    /* CURLOPT_CONNECTTIMEOUT(_MS): 0 libcurl's default */
    long low_speed_limit, low_speed_time; /* CURLOPT_LOW_SPEED_*: 0 none */
    bool stall_forced;          /* ... the shim's stall bound set for a retry (xfer.c) */
    bool noprogress;            /* CURLOPT_NOPROGRESS (libcurl's default: 1) */
    curl_xferinfo_callback xferinfo_fn;
    curl_progress_callback progress_fn;
    void *progress_data;        /* XFERINFODATA and PROGRESSDATA are one option */
    /* per attempt */
    bo_hold_mode mode;
    int block_status;           /* status of the header block being received */
    bool block_hold;            /* that status may still be retried: keep holding */
    int cached_status;          /* status_may_retry(cached_status) == cached_hold; */
    bool cached_hold;           /* cached_status 0: nothing cached (options changed) */
    uint64_t delivered;         /* bytes handed to the program in this attempt */
    bool deliver_failed;        /* the program's callback refused bytes */
    char *held;
    size_t held_len, held_cap;
    bo_rl_headers rl;           /* rate-limit headers of the last header block */
    /* the answer of an attempt that was retried, kept until the call ends
     * (kept.c): handed over instead of a later attempt that got none */
    char *kept;
    size_t kept_len, kept_cap;
    bool kept_valid;            /* an answer is kept for this call */
    bool kept_shown;            /* it was handed over: getinfo reports it */
    bo_curl_kept_info kept_info;
    /* Idempotency-Key: the call's request carries one (the program's, or the
     * shim's under BACKOFF_IDEMPOTENCY_KEY: it is then retried like an
     * idempotent one); the shim's is a node put in front of the program's
     * header list for the call (idem_added), the list set back after. */
    bool idem_key, idem_added;
    struct curl_slist idem_node;
    char idem_line[BO_IDEM_LINE_SIZE];
} bo_curl_rec;

/* Where the handle's transfers go: the UNIX socket's destination when one
 * is set, else the URL's (NULL: pass straight through). */
static inline bo_block *bo_curl_rec_dest(const bo_curl_rec *r)
{
    return r->unix_sock ? r->unix_dest : r->dest;
}

/* The request's method as the classification reads it. */
static inline const char *bo_curl_method_name(const bo_curl_rec *r)
{
    static const char *const names[] = {"GET", "HEAD", "POST", "POST", "PUT"};
    return r->custom_set ? r->custom : names[r->method];
}

/* The request sends a body. */
static inline bool bo_curl_has_upload(const bo_curl_rec *r)
{
    return r->method == BO_METHOD_POST || r->method == BO_METHOD_MIME ||
           r->method == BO_METHOD_PUT;
}

#endif
