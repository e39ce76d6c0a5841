/*
 * fork_tree MODE URL [N]: a process that forks the way real programs do,
 * every process of the tree making curl calls through the shim (when it is
 * preloaded).  Each process arms alarm(20) before it waits, so a lock that
 * a child inherited held (the old hang) kills it with SIGALRM and the tree
 * reports a failure instead of hanging; each parent also bounds its wait
 * for a child (child_wait.h: the hung pid is printed, and with BO_HUNG_GDB
 * set, when the processes arm no alarm, its stacks are printed by gdb
 * before it is killed); the test's timeout bounds the rest.
 *
 *   deep URL N     N levels: each level GETs URL/item/<level>, checks body
 *                  and status, forks, and its child does the same; the
 *                  deepest level also forks a leaf that only exits.  Prints
 *                  "deep ok N".
 *   threads URL N  16 threads call URL in a loop (against a throttling
 *                  server: they are inside retries and waiting on the
 *                  window); N times, a non-main thread forks while they run;
 *                  the child makes a call, forks again, and the grandchild
 *                  makes a call.  Prints "threads ok N of N; calls C".
 *   spawn URL N    16 threads call URL in a loop while the main thread, N
 *                  times, runs "echo" by posix_spawn, vfork+exec, system()
 *                  and popen(), checking each one's output and status.
 *                  Prints "spawn ok N of N; calls C".
 *
 * Thread calls may end throttled (429 after the shim gave up): only transport
 * failures and wrong bodies count as failures there; the calls of the forked
 * processes (made after the threads are gone from their process) must
 * return the item.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../demo/item_body.h"
#include "child_wait.h"

#define NTHREADS 16
#define CHILD_ALARM_S 20
/* A parent's bound per generation below it: beyond the child's own alarm. */
#define GENERATION_LIMIT_S (CHILD_ALARM_S + 5)

extern char **environ;

static const char *g_url;
static atomic_int g_stop;
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

/*
 * GET URL/item/n with a new handle.  Returns 0 for 200 with the item's body,
 * 1 for a rejection (429/503, the shim gave up), -1 otherwise.
 */
static int fetch(uint64_t n)
{
    char url[512], unit[BO_ITEM_UNIT_MAX], want[BO_ITEM_DEFAULT_SIZE];
    body b = {.len = 0};
    long status = 0;
    CURL *h = curl_easy_init();
    CURLcode code;

    if (h == NULL)
        return -1;
    snprintf(url, sizeof url, "%s/item/%llu", g_url, (unsigned long long)n);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (code != CURLE_OK)
        return -1;
    if (status == 429 || status == 503)
        return 1;
    bo_item_fill(unit, bo_item_unit(n, unit), 0, want, sizeof want);
    return status == 200 && b.len == sizeof want && memcmp(b.data, want, b.len) == 0 ? 0 : -1;
}

/* A call that must succeed: retries a rejection itself for up to 10 s (the
 * server may still be busy with the parent's threads). */
static int fetch_ok(uint64_t n)
{
    for (int i = 0; i < 500; i++) {
        int rc = fetch(n);
        if (rc <= 0)
            return rc;
        usleep(20 * 1000);
    }
    return -1;
}

/* The process's own bound; none under BO_HUNG_GDB, so that a hung process
 * stays alive for its parent's gdb. */
static void arm_alarm(void)
{
    if (getenv("BO_HUNG_GDB") == NULL)
        alarm(CHILD_ALARM_S);
}

/*
 * Waits for pid, whose process tree is `generations` deep, at most
 * GENERATION_LIMIT_S per generation; 0 when it exited 0, else prints why
 * and returns 1.
 */
static int reap(pid_t pid, const char *what, int generations)
{
    int st = 0;

    if (child_wait(pid, GENERATION_LIMIT_S * generations, what, &st) != 0)
        return 1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "%s: pid %d killed by signal %d%s\n", what, (int)pid, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (hung)" : "");
    else
        fprintf(stderr, "%s: pid %d exited %d\n", what, (int)pid, WEXITSTATUS(st));
    return 1;
}

/* ---- deep ------------------------------------------------------------- */

static int deep(int level, int levels)
{
    arm_alarm();
    if (fetch_ok((uint64_t)level) != 0) {
        fprintf(stderr, "deep: level %d (pid %d): call failed\n", level, (int)getpid());
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0)
        _exit(level < levels ? deep(level + 1, levels) : 0);
    return reap(pid, "deep", levels - level + 1);
}

/* ---- threads mid-retry ------------------------------------------------- */

static void *caller(void *arg)
{
    long id = (long)arg;
    for (long i = 0; !atomic_load(&g_stop); i++) {
        atomic_fetch_add(&g_calls, 1);
        if (fetch((uint64_t)(id * 1000 + i % 1000)) < 0)
            atomic_fetch_add(&g_failures, 1);
    }
    return NULL;
}

static int start_callers(pthread_t *th)
{
    int started = 0;
    for (long i = 0; i < NTHREADS; i++) {
        if (pthread_create(&th[started], NULL, caller, (void *)(i + 1)) == 0)
            started++;
    }
    /* Let them get inside the shim (admitted, retrying, waiting). */
    while (atomic_load(&g_calls) < 2 * NTHREADS)
        usleep(1000);
    return started;
}

static void stop_callers(pthread_t *th, int started)
{
    atomic_store(&g_stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* In the child of a forking thread: call, fork, the grandchild calls. */
static int second_generation(void)
{
    arm_alarm();
    if (fetch_ok(7001) != 0) {
        fprintf(stderr, "threads: child %d: call failed\n", (int)getpid());
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        arm_alarm();
        if (fetch_ok(7002) != 0) {
            fprintf(stderr, "threads: grandchild %d: call failed\n", (int)getpid());
            _exit(1);
        }
        _exit(0);
    }
    if (pid < 0)
        return 1;
    return reap(pid, "threads: grandchild", 1);
}

static void *forker(void *arg)
{
    int n = *(int *)arg, ok = 0;
    struct timespec pause = {0, 7 * 1000 * 1000};
    for (int i = 0; i < n; i++) {
        nanosleep(&pause, NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(second_generation());
        if (pid < 0) {
            perror("fork");
            continue;
        }
        ok += reap(pid, "threads: child", 2) == 0;
    }
    *(int *)arg = ok;
    return NULL;
}

static int threads_mode(int n)
{
    pthread_t th[NTHREADS], f;
    int started = start_callers(th), result = n;

    if (pthread_create(&f, NULL, forker, &result) != 0)
        return 1;
    pthread_join(f, NULL);
    stop_callers(th, started);
    printf("threads ok %d of %d; calls %ld failures %ld\n", result, n,
           atomic_load(&g_calls), atomic_load(&g_failures));
    return result == n && started == NTHREADS && atomic_load(&g_failures) == 0 ? 0 : 1;
}

/* ---- spawn ------------------------------------------------------------ */

/* Reads fd to EOF into buf (NUL-terminated). */
static void read_all(int fd, char *buf, size_t size)
{
    size_t len = 0;
    ssize_t k;
    while (len + 1 < size && ((k = read(fd, buf + len, size - 1 - len)) > 0 ||
                              (k < 0 && errno == EINTR)))
        len += k > 0 ? (size_t)k : 0;
    buf[len] = '\0';
}

/* argv run with stdout to a pipe, by posix_spawn or vfork; output must be want. */
static int run_piped(bool use_vfork, char *const argv[], const char *want)
{
    int p[2];
    pid_t pid;
    char out[256];

    if (pipe(p) != 0)
        return 1;
    if (use_vfork) {
        pid = vfork();
        if (pid == 0) {
            dup2(p[1], 1);
            execve(argv[0], argv, environ);
            _exit(127);
        }
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
            pid = -1;
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return 1;
    }
    read_all(p[0], out, sizeof out);
    close(p[0]);
    if (reap(pid, use_vfork ? "vfork" : "posix_spawn", 1) != 0)
        return 1;
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "%s: output '%s', want '%s'\n", use_vfork ? "vfork" : "posix_spawn",
                out, want);
        return 1;
    }
    return 0;
}

static int spawn_round(int i)
{
    char want[64], cmd[128], out[256];
    char arg[32];
    snprintf(arg, sizeof arg, "round%d", i);
    snprintf(want, sizeof want, "%s\n", arg);
    char *argv_echo[] = {"/bin/echo", arg, NULL};
    int bad = 0;

    bad += run_piped(false, argv_echo, want);
    bad += run_piped(true, argv_echo, want);

    /* system(): a shell with a subshell and a command substitution. */
    snprintf(cmd, sizeof cmd, "x=$( (echo %s) ); test \"$x\" = %s && exit 3", arg, arg);
    int st = system(cmd);
    if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3)) {
        fprintf(stderr, "system: status %d\n", st);
        bad++;
    }
    /* popen(): a pipeline. */
    snprintf(cmd, sizeof cmd, "echo %s | (read y; echo $y)", arg);
    FILE *f = popen(cmd, "r");
    if (f == NULL) {
        bad++;
    } else {
        size_t k = fread(out, 1, sizeof out - 1, f);
        out[k] = '\0';
        st = pclose(f);
        if (strcmp(out, want) != 0 || st != 0) {
            fprintf(stderr, "popen: output '%s' status %d\n", out, st);
            bad++;
        }
    }
    return bad;
}

static int spawn_mode(int n)
{
    pthread_t th[NTHREADS];
    int started = start_callers(th), ok = 0;

    for (int i = 0; i < n; i++)
        ok += spawn_round(i) == 0;
    stop_callers(th, started);
    printf("spawn ok %d of %d; calls %ld failures %ld\n", ok, n, atomic_load(&g_calls),
           atomic_load(&g_failures));
    return ok == n && started == NTHREADS && atomic_load(&g_failures) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int n = argc > 3 ? atoi(argv[3]) : 3;

    if (argc < 3 || n < 1 || n > 10000) {
        fprintf(stderr, "usage: fork_tree deep|threads|spawn URL [N]\n");
        return 2;
    }
    g_url = argv[2];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc;
    if (strcmp(argv[1], "deep") == 0) {
        rc = deep(1, n);
        if (rc == 0)
            printf("deep ok %d\n", n);
    } else if (strcmp(argv[1], "threads") == 0) {
        rc = threads_mode(n);
    } else if (strcmp(argv[1], "spawn") == 0) {
        rc = spawn_mode(n);
    } else {
        fprintf(stderr, "fork_tree: unknown mode '%s' (deep, threads or spawn)\n", argv[1]);
        rc = 2;
    }
    curl_global_cleanup();
    return rc;
}
