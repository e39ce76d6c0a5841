/*
 * stress_fork URL THREADS FORKS: THREADS threads fetch URL/item/N in a loop
 * (under the shim: taking the destination's lock, waiting for a slot,
 * transferring) while the main thread forks FORKS times, 5 ms apart (once
 * every thread has made its handle: see main); each
 * child fetches URL/item/999 with a new handle, checks status and body and
 * leaves with _exit.  The parent waits for each child at most 10 s
 * (child_wait.h: a lock inherited held would hang it; the hung pid is
 * printed, examined with gdb under BO_HUNG_GDB, killed, and the fork counts
 * as failed).  Prints
 * "forks ok N of N; thread calls N failures N" and exits 0 when every child
 * and every thread request succeeded.  The flags the threads share are
 * atomics, so a ThreadSanitizer build reports only the shim's races.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../demo/item_body.h"
#include "child_wait.h"

#define CHILD_LIMIT_S 10

#define MAX_THREADS 64
#define THREAD_MAX_REQUESTS 1000000

static const char *g_url;
static atomic_int g_stop, g_ready;
static atomic_long g_calls, g_failures;

typedef struct body {
    char data[256];
    size_t len;
} body;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    size_t room = sizeof b->data - b->len;
    size_t k = n < room ? n : room;
    memcpy(b->data + b->len, p, k);
    b->len += k;
    return n;
}

/* GET URL/item/n on h; 0 when the status is 200 and the body is the item's. */
static int fetch(CURL *h, uint64_t n)
{
    char url[512], unit[BO_ITEM_UNIT_MAX], want[BO_ITEM_DEFAULT_SIZE];
    body b = {.len = 0};
    long status = 0;

    snprintf(url, sizeof url, "%s/item/%llu", g_url, (unsigned long long)n);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    bo_item_fill(unit, bo_item_unit(n, unit), 0, want, sizeof want);
    return status == 200 && b.len == sizeof want && memcmp(b.data, want, b.len) == 0 ? 0 : -1;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    CURL *h = curl_easy_init();
    atomic_fetch_add(&g_ready, 1);
    for (int i = 0; h != NULL && !atomic_load(&g_stop) && i < THREAD_MAX_REQUESTS; i++) {
        atomic_fetch_add(&g_calls, 1);
        if (fetch(h, (uint64_t)(id * 1000 + i % 1000)) != 0)
            atomic_fetch_add(&g_failures, 1);
    }
    curl_easy_cleanup(h);
    return NULL;
}

static int child(void)
{
    CURL *h = curl_easy_init();
    int rc = h != NULL && fetch(h, 999) == 0 ? 0 : 1;
    curl_easy_cleanup(h);
    return rc;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    int nthreads, nforks, ok = 0, started = 0;
    struct timespec pause = {0, 5 * 1000 * 1000};

    if (argc != 4) {
        fprintf(stderr, "usage: stress_fork URL THREADS FORKS\n");
        return 2;
    }
    g_url = argv[1];
    nthreads = atoi(argv[2]);
    nforks = atoi(argv[3]);
    if (nthreads < 1 || nthreads > MAX_THREADS || nforks < 1 || nforks > 100000)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (long i = 0; i < nthreads; i++) {
        if (pthread_create(&th[started], NULL, worker, (void *)(i + 1)) == 0)
            started++;
    }
    /* No fork before every thread has its handle: curl_easy_init takes
     * libcurl's global init lock, a spinlock (easy.c, 7.84 and later), and a
     * child forked while another thread held it spun there for good, with
     * or without the shim (seen once in 1,500 runs of fork 0). */
    for (int w = 0; atomic_load(&g_ready) < started && w < 10000; w++)
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    for (int i = 0; i < nforks; i++) {
        nanosleep(&pause, NULL);
        if (child_fork_wait(i, child, CHILD_LIMIT_S) == 0)
            ok++;
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    curl_global_cleanup();
    printf("forks ok %d of %d; thread calls %ld failures %ld\n", ok, nforks,
           atomic_load(&g_calls), atomic_load(&g_failures));
    return ok == nforks && started == nthreads && atomic_load(&g_failures) == 0 ? 0 : 1;
}
