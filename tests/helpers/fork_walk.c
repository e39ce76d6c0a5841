/*
 * fork_walk THREADS FORKS: THREADS threads look up curl_easy_perform with
 * dlsym in a loop (under the shim each lookup of a hooked name walks the
 * loaded objects with dl_iterate_phdr to find the caller's object) while
 * the main thread forks FORKS times, 1 ms apart; each child walks the
 * loaded objects itself, as a program's C++ exception or its own
 * dl_iterate_phdr would, and leaves with _exit.
 *
 * glibc (2.36) does not re-initialise the lock dl_iterate_phdr holds in a
 * fork child: a child forked during one of the shim's walks would wait on it
 * for good.  The shim holds its walks back across fork(); this helper is the
 * test of that.  The parent waits for each child at most 10 s
 * (child_wait.h) and stops forking at the first that hangs (or fails).  Prints
 * "forks ok N of N; lookups N" and exits 0 when every child succeeded.
 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_wait.h"

#define CHILD_LIMIT_S 10
#define MAX_THREADS 64
#define THREAD_MAX_LOOKUPS 100000000L

static atomic_int g_stop;
static atomic_long g_lookups;

static void *looker(void *arg)
{
    (void)arg;
    for (long i = 0; !atomic_load(&g_stop) && i < THREAD_MAX_LOOKUPS; i++) {
        if (dlsym(RTLD_DEFAULT, "curl_easy_perform") == NULL)
            break;
        atomic_fetch_add(&g_lookups, 1);
    }
    return NULL;
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

/* The child walks the loaded objects itself. */
static int walk_child(void)
{
    int objects = 0;
    dl_iterate_phdr(count_cb, &objects);
    return objects > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    int nthreads, nforks, ok = 0, started = 0;
    struct timespec pause = {0, 1000 * 1000};

    if (argc != 3) {
        fprintf(stderr, "usage: fork_walk THREADS FORKS\n");
        return 2;
    }
    nthreads = atoi(argv[1]);
    nforks = atoi(argv[2]);
    if (nthreads < 1 || nthreads > MAX_THREADS || nforks < 1 || nforks > 100000)
        return 2;
    /* libcurl is linked in: the lookups find it (and the shim wraps it). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&th[started], NULL, looker, NULL) == 0)
            started++;
    }
    for (int w = 0; atomic_load(&g_lookups) == 0 && w < 10000; w++)
        nanosleep(&pause, NULL);
    for (int i = 0; i < nforks; i++) {
        nanosleep(&pause, NULL);
        int r = child_fork_wait(i, walk_child, CHILD_LIMIT_S);
        if (r < 0)
            break; /* one hung child is the answer: no 10 s for each fork */
        ok += r == 0;
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    curl_global_cleanup();
    printf("forks ok %d of %d; lookups %ld\n", ok, nforks, atomic_load(&g_lookups));
    return ok == nforks && started == nthreads ? 0 : 1;
}
