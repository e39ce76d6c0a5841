/*
 * shim_bench URL N [multi]: N sequential GETs of URL on one easy handle
 * (keep-alive), after 20 warm-up requests.  Prints "calls N us_per_call X"
 * and exits 0 when every request answered 200; the overhead benchmark
 * (demo/bench-overhead.sh) runs it with and without the shim.  With
 * `multi`, each GET is one transfer of a multi handle driven as curl's
 * parallel mode drives it: add, curl_multi_perform + curl_multi_poll until
 * done, curl_multi_info_read, remove.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t sink(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    *(size_t *)ud += size * nmemb;
    return size * nmemb;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static CURLM *g_multi; /* NULL: curl_easy_perform */

/* One transfer through the multi handle; its CURLcode. */
static CURLcode multi_get(CURL *h)
{
    CURLcode code = CURLE_RECV_ERROR;
    int running = 1, left;
    CURLMsg *m;

    if (curl_multi_add_handle(g_multi, h) != CURLM_OK)
        return CURLE_FAILED_INIT;
    while (running) {
        if (curl_multi_perform(g_multi, &running) != CURLM_OK)
            break;
        if (running && curl_multi_poll(g_multi, NULL, 0, 1000, NULL) != CURLM_OK)
            break;
    }
    while ((m = curl_multi_info_read(g_multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE && m->easy_handle == h)
            code = m->data.result;
    curl_multi_remove_handle(g_multi, h);
    return code;
}

/* One GET; 0 when it answered 200. */
static int get(CURL *h)
{
    long status = 0;
    if ((g_multi != NULL ? multi_get(h) : curl_easy_perform(h)) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? 0 : -1;
}

int main(int argc, char **argv)
{
    size_t bytes = 0;
    long n;
    int bad = 0;
    CURL *h;

    if ((argc != 3 && argc != 4) || (n = atol(argv[2])) <= 0)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (argc == 4)
        g_multi = curl_multi_init();
    h = curl_easy_init();
    if (h == NULL)
        return 1;
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
    for (int i = 0; i < 20; i++)
        bad += get(h) != 0;
    double t0 = now_us();
    for (long i = 0; i < n; i++)
        bad += get(h) != 0;
    double t1 = now_us();
    curl_easy_cleanup(h);
    if (g_multi != NULL)
        curl_multi_cleanup(g_multi);
    curl_global_cleanup();
    printf("calls %ld us_per_call %.3f bytes %zu failures %d\n", n, (t1 - t0) / (double)n, bytes,
           bad);
    return bad == 0 ? 0 : 1;
}
