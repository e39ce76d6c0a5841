/*
 * many_dests PORT DESTS CALLS [THREADS]: CALLS sequential GETs on one easy
 * handle, call i to destination i % DESTS, "http://dN.test:PORT/item/1", each
 * routed to 127.0.0.1:PORT by CURLOPT_CONNECT_TO, so one ratelimit-server
 * serves any number of destinations (the shim keys them by host name).
 * The first DESTS calls (each destination once) are a warm-up; the rest are
 * timed.  Prints "dests D calls N us_per_call X failures F" (failures: calls
 * that did not answer 200, warm-up included) and exits 0 when there were
 * none.  With THREADS > 1, each thread does the same on a handle of its own,
 * starting at its own offset among the destinations, so threads meet on
 * the same destinations while others are being created and evicted.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t sink(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    (void)ud;
    return size * nmemb;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int get(CURL *h, long port, long dest)
{
    char url[128];
    long status = 0;

    snprintf(url, sizeof url, "http://d%ld.test:%ld/item/1", dest, port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? 0 : -1;
}

typedef struct job {
    long port, dests, calls, offset, bad;
    double us;
} job;

static void *run(void *arg)
{
    job *j = arg;
    char connect_to[64];
    struct curl_slist *ct;
    CURL *h = curl_easy_init();

    if (h == NULL) {
        j->bad = 1;
        return NULL;
    }
    snprintf(connect_to, sizeof connect_to, "::127.0.0.1:%ld", j->port);
    ct = curl_slist_append(NULL, connect_to);
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, ct);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    for (long i = 0; i < j->dests; i++)
        j->bad += get(h, j->port, (i + j->offset) % j->dests) != 0;
    double t0 = now_us();
    for (long i = 0; i < j->calls; i++)
        j->bad += get(h, j->port, (i + j->offset) % j->dests) != 0;
    j->us = now_us() - t0;
    curl_easy_cleanup(h);
    curl_slist_free_all(ct);
    return NULL;
}

int main(int argc, char **argv)
{
    long port, dests, calls, threads = 1, bad = 0;
    double us = 0;
    job jobs[64];
    pthread_t tid[64];

    if ((argc != 4 && argc != 5) || (port = atol(argv[1])) <= 0 ||
        (dests = atol(argv[2])) <= 0 || (calls = atol(argv[3])) < 0 ||
        (argc == 5 && ((threads = atol(argv[4])) < 1 || threads > 64))) {
        fprintf(stderr, "usage: many_dests PORT DESTS CALLS [THREADS 1..64]\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (long t = 0; t < threads; t++) {
        jobs[t] = (job){port, dests, calls, t * dests / threads, 0, 0};
        if (threads == 1)
            run(&jobs[t]);
        else if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0)
            return 1;
    }
    for (long t = 0; t < threads; t++) {
        if (threads > 1)
            pthread_join(tid[t], NULL);
        bad += jobs[t].bad;
        us += jobs[t].us;
    }
    curl_global_cleanup();
    printf("dests %ld calls %ld us_per_call %.3f failures %ld\n", dests, calls * threads,
           calls > 0 ? us / (double)(calls * threads) : 0.0, bad);
    return bad == 0 ? 0 : 1;
}
