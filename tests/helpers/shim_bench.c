/*
 * shim_bench URL N: N sequential GETs of URL on one easy handle (keep-alive),
 * after 20 warm-up requests.  Prints "calls N us_per_call X" and exits 0
 * when every request answered 200; the overhead benchmark
 * (demo/bench-overhead.sh) runs it with and without the shim.
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

/* One GET; 0 when it answered 200. */
static int get(CURL *h)
{
    long status = 0;
    if (curl_easy_perform(h) != CURLE_OK)
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

    if (argc != 3 || (n = atol(argv[2])) <= 0)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
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
    curl_global_cleanup();
    printf("calls %ld us_per_call %.3f bytes %zu failures %d\n", n, (t1 - t0) / (double)n, bytes,
           bad);
    return bad == 0 ? 0 : 1;
}
