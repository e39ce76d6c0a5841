/*
 * fuzz_shim_parse: the shim's own parsing of what crosses it, compiled
 * from shim/shim_curl.c itself (included, so its static functions are
 * reachable; nothing of libcurl is called): origin_prefix on any URL
 * string, the cache key of a destination, and note_status_line on any
 * header line, given as an exactly sized buffer so that ASan sees a read
 * one byte past it.  Promises checked: the origin is a prefix made of
 * "scheme://authority" that ends where the path, query or fragment starts;
 * a status is taken only from "HTTP/... DDD" and is the three digits there.
 */
#include "../../shim/shim_curl.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_origin(const uint8_t *data, size_t size)
{
    char *url = malloc(size + 1);
    if (!url)
        return;
    memcpy(url, data, size);
    url[size] = '\0';
    size_t n = origin_prefix(url);
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
    handle_rec r;
    if (!line)
        return;
    memcpy(line, data, size);
    memset(&r, 0, sizeof r);
    r.block_status = -1;
    note_status_line(&r, line, size);
    if (r.block_status != -1) {
        const char *sp = memchr(line, ' ', size);
        if (size < 12 || memcmp(line, "HTTP/", 5) != 0 || sp == NULL)
            abort();
        int want = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
        if (r.block_status != want || r.block_status < 0 || r.block_status > 999)
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
