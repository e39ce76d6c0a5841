/*
 * held.h: the bytes of an attempt that may still be retried, within the
 * libcurl room (held.c).  The shim's write and header callbacks stand in
 * front of the program's: while the attempt may be retried its bytes are
 * held; the first body byte of a response that will not be retried
 * commits it (held bytes go out, the rest passes through).  The program
 * thus sees only the bytes of the attempt that is finally returned.
 */
#ifndef BO_CURL_HELD_H
#define BO_CURL_HELD_H

#include "libcurl/handle.h"

/* Held response bytes of one attempt: at most this much, then pass through. */
#define BO_HOLD_MAX (64 * 1024)

typedef enum bo_seg_kind { BO_SEG_BODY = 0, BO_SEG_HEADER = 1 } bo_seg_kind;

/* The shim's callbacks (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION, with
 * the record as their data). */
size_t bo_curl_held_write(char *p, size_t size, size_t nmemb, void *rec);
size_t bo_curl_held_header(char *p, size_t size, size_t nmemb, void *rec);

/* Keep n bytes for later; -1 when they would pass BO_HOLD_MAX (or memory
 * runs out): the caller commits and passes them through instead. */
int bo_curl_hold(bo_curl_rec *r, bo_seg_kind kind, const char *p, size_t n);

/* Stop holding: the held bytes go to the program in arrival order, one
 * callback per recorded callback; -1 when the program refused bytes. */
int bo_curl_commit(bo_curl_rec *r);

/* A new attempt starts: hold its bytes when the handle is managed. */
void bo_curl_attempt_reset(bo_curl_rec *r);

/* The status of an HTTP status line ("HTTP/x ddd ..."), or -1 when the
 * line is not one. */
int bo_curl_status_of_line(const char *p, size_t n);

#endif
