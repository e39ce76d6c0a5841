/*
 * shim_dl_client MODE URL N [ARG]: libcurl reached in the ways that bypass
 * plain interposition, for test_shim_dlopen.sh.  Each mode GETs URL/item/1
 * .. URL/item/N in a row and prints every body it received on stdout, then
 * a last line "ok=K/N" (K: bodies equal to ratelimit-server's item body).
 *
 *   dlsym       dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL), every
 *               function through dlsym(handle, ...)
 *   dlvsym      the same, through dlvsym(handle, name, "CURL_OPENSSL_4")
 *   plugin SO   dlopen(SO, RTLD_NOW | RTLD_DEEPBIND); SO's plugin_get()
 *               calls libcurl itself; prints "tag=T" with T from SO's
 *               plugin_tag() when it has one
 *   lazy SO     the same with dlopen(SO, RTLD_LAZY | RTLD_DEEPBIND)
 *   two         libcurl.so.4 and libcurl-gnutls.so.4 both dlopen()ed
 *               RTLD_LOCAL: items alternate between them, each handle made
 *               and performed by its own copy; also prints "distinct=1" when
 *               the two copies' curl_easy_perform lookups differ
 *   threads     four threads perform through the dlsym()ed functions of
 *               libcurl.so.4 while two others dlopen/dlsym/dlclose
 *               libcurl-gnutls.so.4 and the dlsym copy in a loop
 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CURL *(*init_fn)(void);
typedef CURLcode (*setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*perform_fn)(CURL *);
typedef void (*cleanup_fn)(CURL *);
typedef int (*plugin_fn)(const char *url, char *buf, size_t cap, size_t *len);

typedef struct api {
    init_fn init;
    setopt_fn setopt;
    perform_fn perform;
    cleanup_fn cleanup;
} api;

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

static void want(int n, char *out, size_t len)
{
    char unit[32];
    int u = snprintf(unit, sizeof unit, "item=%d;", n);
    for (size_t i = 0; i < len; i++)
        out[i] = unit[i % (size_t)u];
}

static void *must(void *p, const char *what)
{
    if (p == NULL) {
        fprintf(stderr, "shim_dl_client: %s: %s\n", what, dlerror());
        exit(2);
    }
    return p;
}

static void bind_api(api *a, void *lib, const char *version)
{
    if (version != NULL) {
        *(void **)&a->init = must(dlvsym(lib, "curl_easy_init", version), "curl_easy_init");
        *(void **)&a->setopt = must(dlvsym(lib, "curl_easy_setopt", version), "setopt");
        *(void **)&a->perform = must(dlvsym(lib, "curl_easy_perform", version), "perform");
        *(void **)&a->cleanup = must(dlvsym(lib, "curl_easy_cleanup", version), "cleanup");
        return;
    }
    *(void **)&a->init = must(dlsym(lib, "curl_easy_init"), "curl_easy_init");
    *(void **)&a->setopt = must(dlsym(lib, "curl_easy_setopt"), "curl_easy_setopt");
    *(void **)&a->perform = must(dlsym(lib, "curl_easy_perform"), "curl_easy_perform");
    *(void **)&a->cleanup = must(dlsym(lib, "curl_easy_cleanup"), "curl_easy_cleanup");
}

/* One GET through a; the body in *b; 0 when it is item n's exact body. */
static int fetch(const api *a, const char *base, int n, buf *b)
{
    char url[1024], expect[64];
    CURL *h = a->init();
    if (h == NULL)
        return -1;
    snprintf(url, sizeof url, "%s/item/%d", base, n);
    b->len = 0;
    a->setopt(h, CURLOPT_URL, url);
    a->setopt(h, CURLOPT_WRITEFUNCTION, into);
    a->setopt(h, CURLOPT_WRITEDATA, (void *)b);
    CURLcode code = a->perform(h);
    a->cleanup(h);
    want(n, expect, sizeof expect);
    return code == CURLE_OK && b->len == sizeof expect &&
                   memcmp(b->data, expect, sizeof expect) == 0
               ? 0
               : -1;
}

static void emit(const buf *b)
{
    fwrite(b->data, 1, b->len, stdout);
    fputc('\n', stdout);
}

/* ---- threads mode ---- */

static api g_api;
static const char *g_base;
static int g_n, g_ok;
static int g_stop; /* atomic */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void *performer(void *arg)
{
    int first = (int)(long)arg;
    buf *b = malloc(sizeof *b);
    for (int i = first; i <= g_n; i += 4) {
        if (fetch(&g_api, g_base, i, b) == 0) {
            pthread_mutex_lock(&g_mu);
            g_ok++;
            pthread_mutex_unlock(&g_mu);
        }
    }
    free(b);
    return NULL;
}

static void *loader(void *arg)
{
    const char *name = arg;
    while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL)
            continue;
        api a;
        bind_api(&a, lib, NULL);
        dlclose(lib);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode, *base;
    int n, ok = 0;
    buf *b = malloc(sizeof *b);

    if (argc < 4 || b == NULL) {
        fprintf(stderr, "usage: shim_dl_client dlsym|dlvsym|plugin|lazy|two|threads URL N [SO]\n");
        return 2;
    }
    mode = argv[1];
    base = argv[2];
    n = atoi(argv[3]);
    if (strcmp(mode, "dlsym") == 0 || strcmp(mode, "dlvsym") == 0) {
        api a;
        void *lib = must(dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL), "libcurl.so.4");
        bind_api(&a, lib, strcmp(mode, "dlvsym") == 0 ? "CURL_OPENSSL_4" : NULL);
        for (int i = 1; i <= n; i++) {
            ok += fetch(&a, base, i, b) == 0;
            emit(b);
        }
    } else if ((strcmp(mode, "plugin") == 0 || strcmp(mode, "lazy") == 0) && argc > 4) {
        int how = strcmp(mode, "lazy") == 0 ? RTLD_LAZY : RTLD_NOW;
        void *lib = must(dlopen(argv[4], how | RTLD_DEEPBIND), argv[4]);
        plugin_fn get;
        char url[1024], expect[64];
        const char *(*tag)(void);
        *(void **)&get = must(dlsym(lib, "plugin_get"), "plugin_get");
        *(void **)&tag = dlsym(lib, "plugin_tag");
        if (tag != NULL)
            printf("tag=%s\n", tag());
        for (int i = 1; i <= n; i++) {
            snprintf(url, sizeof url, "%s/item/%d", base, i);
            b->len = 0;
            int code = get(url, b->data, sizeof b->data, &b->len);
            want(i, expect, sizeof expect);
            ok +=
                code == 0 && b->len == sizeof expect && memcmp(b->data, expect, sizeof expect) == 0;
            emit(b);
        }
    } else if (strcmp(mode, "two") == 0) {
        api a[2];
        void *lib0 = must(dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL), "libcurl.so.4");
        void *lib1 =
            must(dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL), "libcurl-gnutls.so.4");
        bind_api(&a[0], lib0, NULL);
        bind_api(&a[1], lib1, NULL);
        for (int i = 1; i <= n; i++) {
            ok += fetch(&a[i % 2], base, i, b) == 0;
            emit(b);
        }
        printf("distinct=%d\n", (void *)a[0].perform != (void *)a[1].perform);
    } else if (strcmp(mode, "threads") == 0) {
        pthread_t t[6];
        void *lib = must(dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL), "libcurl.so.4");
        bind_api(&g_api, lib, NULL);
        g_base = base;
        g_n = n;
        pthread_create(&t[4], NULL, loader, (void *)"libcurl-gnutls.so.4");
        pthread_create(&t[5], NULL, loader, (void *)"libcurl.so.4");
        for (long i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, performer, (void *)(i + 1));
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
        pthread_join(t[4], NULL);
        pthread_join(t[5], NULL);
        ok = g_ok;
    } else {
        fprintf(stderr, "shim_dl_client: unknown mode %s\n", mode);
        return 2;
    }
    printf("ok=%d/%d\n", ok, n);
    free(b);
    return 0;
}
