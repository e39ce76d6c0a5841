/*
 * fuzz_shim_parse: the libcurl room's own parsing of what crosses it,
 * through its headers (shim/libcurl/options.h, held.h; the room's objects
 * are linked, nothing of libcurl is called): bo_curl_origin_prefix on any
 * URL string, and bo_curl_status_of_line on any header line, given as an
 * exactly sized buffer so that ASan sees a read one byte past it.
 * Promises checked: the origin is a prefix made of "scheme://authority"
 * that ends where the path, query or fragment starts; a status is taken
 * only from "HTTP/... DDD" and is the three digits there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcurl/held.h"
#include "libcurl/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_origin(const uint8_t *data, size_t size)
{
    char *url = malloc(size + 1);
    if (!url)
        return;
    memcpy(url, data, size);
    url[size] = '\0';
    size_t n = bo_curl_origin_prefix(url);
    size_t len = strlen(url);
    if (n > len)
        abort();
    if (n > 0) {
        const char *sep = strstr(url, "://");
        if (sep == NULL || (size_t)(sep - url) + 3 > n || sep == url)
            abort();
        if (url[n] != '\0' && url[n] != '/' && url[n] != '?' && url[n] != '#')
            abort();
        for (const char *c = sep + 3; c < url + n; c++) {
            if (*c == '/' || *c == '?' || *c == '#')
                abort();
        }
    }
    free(url);
}

static void check_status(const uint8_t *data, size_t size)
{
    char *line = malloc(size ? size : 1);
    if (!line)
        return;
    memcpy(line, data, size);
    int status = bo_curl_status_of_line(line, size);
    if (status != -1) {
        const char *sp = memchr(line, ' ', size);
        if (size < 12 || memcmp(line, "HTTP/", 5) != 0 || sp == NULL)
            abort();
        int want = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
        if (status != want || status < 0 || status > 999)
            abort();
    }
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_origin(data, size);
    check_status(data, size);
    return 0;
}
