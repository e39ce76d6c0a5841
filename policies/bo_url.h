/*
 * bo_url: the origin (scheme, host, port) of the plain URL that nearly
 * every program sets, "http[s]://host[:port][/...]", read without
 * libcurl's URL parser.  For each URL a new destination needs, libcurl's
 * parser (curl_url_set, then three curl_url_get that each allocate) cost
 * the shim about 8,000 instructions, the biggest part of a call to a new
 * origin (demo/bench-overhead.sh, row per_call_dests).
 *
 * It answers only when it is sure to give what libcurl would: any URL of
 * another shape (user info, an IPv6 literal, a percent sign, a host whose
 * labels could be read as a number in libcurl's IPv4 forms such as
 * "127.1" or "0x7f.1", a port with a leading zero, bytes outside printable
 * ASCII, another scheme) returns false, and the caller asks libcurl.
 * tests/fuzz/fuzz_url_origin.c checks the two against each other.  Pure.
 */
#ifndef BO_URL_H
#define BO_URL_H

#include <stdbool.h>

#define BO_URL_HOST_MAX 253 /* longest host name read here (DNS's limit) */

typedef struct bo_url_origin {
    char scheme[6];                 /* "http" or "https", lower case */
    char host[BO_URL_HOST_MAX + 1]; /* as written (case kept) */
    unsigned host_len;              /* strlen(host) */
    unsigned prefix_len;            /* of "scheme://authority" at the URL's start */
    unsigned port;                  /* as written, or the scheme's default */
} bo_url_origin;

/* True and *o filled when url has the plain shape above; false otherwise. */
bool bo_url_plain_origin(const char *url, bo_url_origin *o);

#endif
