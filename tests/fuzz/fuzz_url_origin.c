/*
 * fuzz_url_origin: bo_url_plain_origin (policies/bo_url.c) against
 * libcurl's own URL parser, called the way the shim calls it
 * (CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME, CURLU_DEFAULT_PORT).
 * Whenever the plain reader answers, libcurl must accept the URL and give
 * the same scheme, the same host and the same port: otherwise the shim
 * would file a call under another destination than the libcurl path does.
 * The input is the URL; a "http://" prefix is added to half of the inputs
 * so that the fuzzer spends its time on hosts and ports.
 */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bo_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void mismatch(const char *url, const char *what, const char *mine, const char *curls)
{
    fprintf(stderr, "fuzz_url_origin: \"%s\": %s: plain reader \"%s\", libcurl \"%s\"\n", url,
            what, mine, curls != NULL ? curls : "(refused)");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 600)
        return 0;
    const char *prefix = (data[0] & 1) ? "http://" : "";
    char *url = malloc(strlen(prefix) + size);
    if (url == NULL)
        return 0;
    strcpy(url, prefix);
    size_t n = strlen(prefix);
    for (size_t i = 1; i < size; i++)
        if (data[i] != '\0')
            url[n++] = (char)data[i];
    url[n] = '\0';

    bo_url_origin o;
    if (bo_url_plain_origin(url, &o)) {
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL;
        char mine[16];
        if (u == NULL)
            abort();
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) !=
            CURLUE_OK)
            mismatch(url, "accepted", "yes", NULL);
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            strcasecmp(scheme, o.scheme) != 0)
            mismatch(url, "scheme", o.scheme, scheme);
        if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || strcmp(host, o.host) != 0)
            mismatch(url, "host", o.host, host);
        snprintf(mine, sizeof mine, "%u", o.port);
        if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
            strcmp(port, mine) != 0)
            mismatch(url, "port", mine, port);
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
    }
    free(url);
    return 0;
}
