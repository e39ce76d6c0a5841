/*
 * multi_threads BASE_URL THREADS TRANSFERS: THREADS threads, each with its
 * own multi handle, each running TRANSFERS GETs of BASE_URL/item/N (N the
 * transfer's own number) with up to 8 at once, driven by curl_multi_perform
 * + curl_multi_poll, the finished ones read with curl_multi_info_read and
 * removed.  Every body is checked against ratelimit-server's "item=N;"
 * bytes.  Prints "transfers T bad B" and exits 0 when every transfer
 * answered 200 with its exact body.  Under the shim the threads share one
 * destination's window through the multi hooks (the multi interface's TSan case).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARALLEL 8

typedef struct xfer {
    CURL *h;
    long n;
    char body[128];
    size_t len;
} xfer;

static const char *g_base;
static long g_transfers;
static int g_bad;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->len + n > sizeof x->body)
        return 0;
    memcpy(x->body + x->len, p, n);
    x->len += n;
    return n;
}

static void start(CURLM *m, xfer *x, long n)
{
    char url[512];
    snprintf(url, sizeof url, "%s/item/%ld", g_base, n);
    x->n = n;
    x->len = 0;
    curl_easy_setopt(x->h, CURLOPT_URL, url);
    curl_multi_add_handle(m, x->h);
}

static bool good(xfer *x, CURLcode code)
{
    char want[64 + 32];
    size_t w = 0;
    long status = 0;
    while (w < 64)
        w += (size_t)snprintf(want + w, sizeof want - w, "item=%ld;", x->n);
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
    return code == CURLE_OK && status == 200 && x->len == 64 && memcmp(x->body, want, 64) == 0;
}

static void *run(void *arg)
{
    long first = (long)arg * g_transfers, next = 0, done = 0;
    int bad = 0, running = 0;
    xfer xs[PARALLEL];
    CURLM *m = curl_multi_init();

    for (int i = 0; i < PARALLEL; i++) {
        xs[i].h = curl_easy_init();
        curl_easy_setopt(xs[i].h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(xs[i].h, CURLOPT_WRITEDATA, &xs[i]);
        curl_easy_setopt(xs[i].h, CURLOPT_PRIVATE, &xs[i]);
        if (next < g_transfers)
            start(m, &xs[i], first + ++next);
    }
    while (done < g_transfers) {
        CURLMsg *msg;
        int left;
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        while ((msg = curl_multi_info_read(m, &left)) != NULL) {
            xfer *x;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode code = msg->data.result;
            curl_multi_remove_handle(m, x->h); /* msg is gone from here on */
            bad += !good(x, code);
            done++;
            if (next < g_transfers)
                start(m, x, first + ++next);
        }
        if (done < g_transfers && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK)
            break;
    }
    bad += (int)(g_transfers - done);
    for (int i = 0; i < PARALLEL; i++)
        curl_easy_cleanup(xs[i].h);
    curl_multi_cleanup(m);
    pthread_mutex_lock(&g_mu);
    g_bad += bad;
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

int main(int argc, char **argv)
{
    long threads;
    pthread_t t[64];

    if (argc != 4 || (threads = atol(argv[2])) <= 0 || threads > 64 ||
        (g_transfers = atol(argv[3])) <= 0) {
        fprintf(stderr, "usage: multi_threads BASE_URL THREADS(1-64) TRANSFERS\n");
        return 2;
    }
    g_base = argv[1];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, run, (void *)i);
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    curl_global_cleanup();
    printf("transfers %ld bad %d\n", threads * g_transfers, g_bad);
    return g_bad == 0 ? 0 : 1;
}
