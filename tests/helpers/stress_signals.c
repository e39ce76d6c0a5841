/*
 * stress_signals URL THREADS CALLS RESTART: a storm of signals while threads
 * sleep in the shim's backoff.  SIGALRM arrives every millisecond
 * (setitimer, interval 1 ms) with a handler installed with SA_RESTART when
 * RESTART is 1 and without it when 0, so every blocking call of every
 * thread is interrupted again and again.  THREADS threads each make CALLS
 * sequential GETs of URL/item/N and check the status (200) and the whole
 * body.  Prints "calls N ok N failed N signals N" and exits 0 only when
 * every call succeeded: a call that fails because a sleep or a transfer
 * saw EINTR counts as failed.  The main thread blocks SIGALRM once the
 * workers run, so that the storm lands on them.  The elapsed-vs-delay check
 * is made by the caller from BACKOFF_TRACE.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "../../demo/item_body.h"

#define MAX_THREADS 256
#define BODY_MAX 4096

static const char *g_url;
static int g_calls;
static atomic_long g_ok, g_failed, g_signals;

typedef struct body {
    char data[BODY_MAX];
    size_t len;
    int overflow;
} body;

static void on_alarm(int sig)
{
    (void)sig;
    atomic_fetch_add(&g_signals, 1);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    if (n > sizeof b->data - b->len) {
        b->overflow = 1;
        return n;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return n;
}

/* One GET of item n; 0 when it ended 200 with exactly the item's body. */
static int fetch(CURL *h, uint64_t n)
{
    char url[512], unit[BO_ITEM_UNIT_MAX], want[BO_ITEM_DEFAULT_SIZE];
    body b = {.len = 0, .overflow = 0};
    long status = 0;

    snprintf(url, sizeof url, "%s/item/%llu", g_url, (unsigned long long)n);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        fprintf(stderr, "item %llu: %s\n", (unsigned long long)n, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    bo_item_fill(unit, bo_item_unit(n, unit), 0, want, sizeof want);
    if (status != 200 || b.overflow || b.len != sizeof want || memcmp(b.data, want, b.len) != 0) {
        fprintf(stderr, "item %llu: status %ld, %zu body bytes%s\n", (unsigned long long)n,
                status, b.len, b.overflow ? " (too many)" : "");
        return -1;
    }
    return 0;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    CURL *h = curl_easy_init();
    if (!h) {
        atomic_fetch_add(&g_failed, g_calls);
        return NULL;
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    for (int i = 0; i < g_calls; i++) {
        if (fetch(h, (uint64_t)(id * 100000 + i)) == 0)
            atomic_fetch_add(&g_ok, 1);
        else
            atomic_fetch_add(&g_failed, 1);
    }
    curl_easy_cleanup(h);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    struct sigaction sa;
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    struct itimerval off = {{0, 0}, {0, 0}};
    int nthreads;

    if (argc != 5) {
        fprintf(stderr, "usage: stress_signals URL THREADS CALLS RESTART(0|1)\n");
        return 2;
    }
    g_url = argv[1];
    nthreads = atoi(argv[2]);
    g_calls = atoi(argv[3]);
    if (nthreads < 1 || nthreads > MAX_THREADS || g_calls < 1 || g_calls > 100000)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = atoi(argv[4]) ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &every_ms, NULL) != 0) {
        perror("stress_signals: sigaction/setitimer");
        return 2;
    }
    int started = 0;
    for (long i = 0; i < nthreads; i++) {
        if (pthread_create(&th[i], NULL, worker, (void *)(i + 1)) != 0) {
            atomic_fetch_add(&g_failed, g_calls);
            continue;
        }
        started++;
    }
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    setitimer(ITIMER_REAL, &off, NULL);
    curl_global_cleanup();
    printf("calls %ld ok %ld failed %ld signals %ld\n", (long)nthreads * g_calls,
           atomic_load(&g_ok), atomic_load(&g_failed), atomic_load(&g_signals));
    return atomic_load(&g_failed) == 0 && atomic_load(&g_ok) == (long)nthreads * g_calls ? 0 : 1;
}
