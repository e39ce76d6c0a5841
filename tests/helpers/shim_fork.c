/*
 * shim_fork URL THREADS FORKS: THREADS threads fetch URL/item/N in a loop
 * (inside the shim: waiting for a window slot or transferring) while the
 * main thread forks FORKS times; each child fetches URL/item/999 with a new
 * handle and checks status and body, under a 10 s alarm (a lock inherited
 * held would hang it).  Prints "forks ok N" and exits 0 when every child
 * and every thread request succeeded.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define THREAD_MAX_REQUESTS 100000

static const char *g_url;
static atomic_int g_stop;
static int g_thread_failures;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct buf {
    char data[256];
    size_t len;
} buf;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    buf *b = ud;
    size_t n = size * nmemb;
    size_t room = sizeof b->data - 1 - b->len;
    memcpy(b->data + b->len, p, n < room ? n : room);
    b->len += n < room ? n : room;
    return n;
}

/* GET URL/item/n on h; 0 when the status is 200 and the body is the item's. */
static int fetch(CURL *h, int n)
{
    char url[512], want[128];
    buf b = {.len = 0};
    long status = 0;
    size_t wl = 0;

    snprintf(url, sizeof url, "%s/item/%d", g_url, n);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    while (wl < 64) {
        int k = snprintf(want + wl, sizeof want - wl, "item=%d;", n);
        if (k <= 0)
            break;
        wl += (size_t)k;
    }
    want[64] = '\0';
    b.data[b.len] = '\0';
    return status == 200 && strcmp(b.data, want) == 0 ? 0 : -1;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    CURL *h = curl_easy_init();
    for (int i = 0; h != NULL && !g_stop && i < THREAD_MAX_REQUESTS; i++) {
        if (fetch(h, id * 1000 + i % 1000) != 0) {
            pthread_mutex_lock(&g_lock);
            g_thread_failures++;
            pthread_mutex_unlock(&g_lock);
        }
    }
    curl_easy_cleanup(h);
    return NULL;
}

static int child(void)
{
    alarm(10);
    CURL *h = curl_easy_init();
    int rc = h != NULL && fetch(h, 999) == 0 ? 0 : 1;
    curl_easy_cleanup(h);
    return rc;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    int nthreads, nforks, ok = 0;
    struct timespec pause = {0, 30 * 1000 * 1000};

    if (argc != 4)
        return 2;
    g_url = argv[1];
    nthreads = atoi(argv[2]);
    nforks = atoi(argv[3]);
    if (nthreads < 1 || nthreads > MAX_THREADS || nforks < 1)
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, worker, (void *)(long)(i + 1));
    for (int i = 0; i < nforks; i++) {
        nanosleep(&pause, NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(child());
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) {
            fprintf(stderr, "fork %d: fork/wait failed\n", i);
            continue;
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
        else if (WIFSIGNALED(st))
            fprintf(stderr, "fork %d: child killed by signal %d (hung?)\n", i, WTERMSIG(st));
        else
            fprintf(stderr, "fork %d: child exited %d\n", i, WEXITSTATUS(st));
    }
    g_stop = 1;
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    curl_global_cleanup();
    printf("forks ok %d of %d; thread failures %d\n", ok, nforks, g_thread_failures);
    return ok == nforks && g_thread_failures == 0 ? 0 : 1;
}
