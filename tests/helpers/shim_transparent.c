/*
 * shim_transparent MODE URL: one libcurl program per way a program can
 * receive a response, for the shim's transparency test.  Everything the
 * program receives goes to stdout, then a last line "code=C status=S".
 *
 *   stdout      no write callback: libcurl's default fwrite() to stdout
 *   header      CURLOPT_HEADER=1, default write: headers and body on stdout
 *   headerdata  a write callback and HEADERDATA but no header callback:
 *               libcurl sends headers to the write callback with HEADERDATA
 *   callbacks   write and header callbacks, tagged [H] and [B]
 *   dup         callbacks set, then curl_easy_duphandle; the copy fetches
 *               URL/2, the original URL/1, each into its own buffer
 *   reset       a transfer with callbacks, curl_easy_reset, then URL again
 *               with the default write
 *   fail        CURLOPT_FAILONERROR with callbacks
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

static size_t tagged(char *p, size_t size, size_t nmemb, void *ud)
{
    size_t n = size * nmemb;
    printf("[%s]", (const char *)ud);
    fwrite(p, 1, n, stdout);
    return n;
}

typedef struct buf {
    char data[4096];
    size_t len;
} buf;

static size_t into(char *p, size_t size, size_t nmemb, void *ud)
{
    buf *b = ud;
    size_t n = size * nmemb;
    if (n > sizeof b->data - b->len)
        return 0;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return n;
}

static int finish(CURL *h, CURLcode code)
{
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    fflush(stdout);
    printf("\ncode=%d status=%ld\n", (int)code, status);
    return 0;
}

int main(int argc, char **argv)
{
    char url[1024];
    CURL *h;
    CURLcode code;
    const char *mode;

    if (argc != 3)
        return 2;
    mode = argv[1];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    h = curl_easy_init();
    if (h == NULL)
        return 1;
    curl_easy_setopt(h, CURLOPT_URL, argv[2]);
    if (strcmp(mode, "stdout") == 0) {
        code = curl_easy_perform(h);
    } else if (strcmp(mode, "header") == 0) {
        curl_easy_setopt(h, CURLOPT_HEADER, 1L);
        code = curl_easy_perform(h);
    } else if (strcmp(mode, "headerdata") == 0) {
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tagged);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, "B");
        curl_easy_setopt(h, CURLOPT_HEADERDATA, "H");
        code = curl_easy_perform(h);
    } else if (strcmp(mode, "callbacks") == 0 || strcmp(mode, "fail") == 0) {
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tagged);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, "B");
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, tagged);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, "H");
        if (strcmp(mode, "fail") == 0)
            curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
        code = curl_easy_perform(h);
    } else if (strcmp(mode, "dup") == 0) {
        buf a = {.len = 0}, b = {.len = 0};
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, into);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
        CURL *d = curl_easy_duphandle(h);
        if (d == NULL)
            return 1;
        snprintf(url, sizeof url, "%s/2", argv[2]);
        curl_easy_setopt(d, CURLOPT_URL, url);
        curl_easy_setopt(d, CURLOPT_WRITEDATA, &b);
        snprintf(url, sizeof url, "%s/1", argv[2]);
        curl_easy_setopt(h, CURLOPT_URL, url);
        code = curl_easy_perform(h);
        CURLcode c2 = curl_easy_perform(d);
        printf("orig=%.*s\ncopy=%.*s\ncopy_code=%d", (int)a.len, a.data, (int)b.len, b.data,
               (int)c2);
        curl_easy_cleanup(d);
    } else if (strcmp(mode, "reset") == 0) {
        buf a = {.len = 0};
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, into);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
        code = curl_easy_perform(h);
        printf("first=%.*s code=%d\n", (int)a.len, a.data, (int)code);
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, argv[2]);
        code = curl_easy_perform(h);
    } else {
        return 2;
    }
    finish(h, code);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return 0;
}
