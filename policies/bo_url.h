/*
 * bo_url: a destination's key, the one name every hook family gives a
 * destination (bo_url_dest_key and its two forms), and the origin
 * (scheme, host, port) of the plain URL that nearly
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
#include <stddef.h>

#include "bo_config.h"

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

/*
 * The key of the destination reached by scheme, host and port, as every
 * hook family names it (a libcurl URL, an HTTP request's Host or peer, a
 * connect()): "scheme://host:port", scheme and host in lower case, an IPv6
 * literal in its brackets as given ("[::1]"), the port in decimal, so that
 * a curl loop and a Python script calling one API share one state.
 * BACKOFF_HOSTS (cfg's hosts) is matched against the host without its
 * brackets.  Writes key (NUL-terminated) and returns 0; -1 when
 * BACKOFF_HOSTS leaves it out or it does not fit keylen.  Built without
 * snprintf: it runs for every URL of a new origin.
 */
int bo_url_dest_key(const bo_config *cfg, const char *scheme, size_t scheme_len, const char *host,
                    size_t host_len, unsigned port, char *key, size_t keylen);

/*
 * The same from an authority as an HTTP request's Host field gives it
 * ("host", "host:port", "[IPv6]", "[IPv6]:port"; no port: default_port):
 * -1 as above, and when it is no such value (a character outside a host
 * name's, a port that is not 1 to 65535, an empty host).
 */
int bo_url_authority_key(const bo_config *cfg, const char *scheme, unsigned default_port,
                         const char *auth, size_t len, char *key, size_t keylen);

/*
 * The key of a UNIX socket's path (len bytes of sun_path; a leading NUL is
 * an abstract name, written '@'): "unix:PATH"; -1 when BACKOFF_HOSTS names
 * hosts (a UNIX socket has no host to match) or it does not fit.
 */
int bo_url_unix_key(const bo_config *cfg, const char *path, size_t len, char *key, size_t keylen);

#endif
