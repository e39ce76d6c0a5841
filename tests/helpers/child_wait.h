/*
 * child_wait.h: the forking helpers' bounded wait for a child (header only,
 * included by stress_fork.c and fork_tree.c).
 *
 * child_wait(pid, limit_s, what, &status) waits for pid at most limit_s
 * seconds.  A child still alive then is hung: its pid is printed
 * ("WHAT: pid N hung, alive after L s"), and when BO_HUNG_GDB is set in the
 * environment gdb is run on it (every thread's backtrace on stderr) before it
 * is killed with SIGKILL and reaped.  BO_HUNG_LEAVE=1 leaves the hung child
 * alive (stopped with SIGSTOP, so that it can be examined at leisure) instead
 * of killing it.  The bound is the parent's, not an alarm in the child: a
 * child that hangs before it could arm an alarm (inside fork's own child
 * handlers) is caught as well.
 *
 * Returns 0 when the child ended (its wait status in *status), -1 when it
 * was hung or could not be waited for.
 *
 * child_fork_wait(i, fn, limit_s) forks a child that leaves with
 * _exit(fn()) and waits for it as "fork I": 0 when it exited 0, 1 when it
 * ended otherwise (said on stderr), -1 when it could not be forked or hung.
 */
#ifndef BO_CHILD_WAIT_H
#define BO_CHILD_WAIT_H

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t child_wait_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * gdb -p PID: every thread's backtrace, on stdout and stderr (to the
 * helper's stderr).  gdb runs without LD_PRELOAD: a sanitized shim preloaded
 * into gdb would crash it.
 */
static void child_wait_gdb(pid_t pid)
{
    char spid[32];
    char *argv[] = {"gdb", "-p", spid, "-batch", "-nx", "-ex", "info threads",
                    "-ex", "thread apply all bt", NULL};
    char *env[256];
    size_t n = 0;
    posix_spawn_file_actions_t fa;
    pid_t g;
    int st, rc;

    for (char **e = environ; *e != NULL && n + 1 < sizeof env / sizeof env[0]; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            env[n++] = *e;
    env[n] = NULL;
    snprintf(spid, sizeof spid, "%d", (int)pid);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    rc = posix_spawnp(&g, "gdb", &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "child_wait: gdb could not be started\n");
        return;
    }
    while (waitpid(g, &st, 0) < 0 && errno == EINTR) {
    }
}

static int child_wait(pid_t pid, int limit_s, const char *what, int *status)
{
    int64_t deadline = child_wait_now_ms() + (int64_t)limit_s * 1000;
    long pause_ns = 100 * 1000;
    pid_t r;

    for (;;) {
        r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "%s: waitpid %d: %s\n", what, (int)pid, strerror(errno));
            return -1;
        }
        if (child_wait_now_ms() >= deadline)
            break;
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 10 * 1000 * 1000)
            pause_ns *= 2;
    }
    fprintf(stderr, "%s: pid %d hung, alive after %d s\n", what, (int)pid, limit_s);
    fflush(stderr);
    if (getenv("BO_HUNG_GDB") != NULL)
        child_wait_gdb(pid);
    if (getenv("BO_HUNG_LEAVE") != NULL) {
        kill(pid, SIGSTOP);
        fprintf(stderr, "%s: pid %d left stopped for examination\n", what, (int)pid);
        return -1;
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

__attribute__((unused)) static int child_fork_wait(int i, int (*fn)(void), int limit_s)
{
    char what[32];
    int st = 0;
    pid_t pid = fork();

    if (pid == 0)
        _exit(fn());
    snprintf(what, sizeof what, "fork %d", i);
    if (pid < 0) {
        fprintf(stderr, "%s: fork failed\n", what);
        return -1;
    }
    if (child_wait(pid, limit_s, what, &st) != 0)
        return -1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "%s: child killed by signal %d\n", what, WTERMSIG(st));
    else
        fprintf(stderr, "%s: child exited %d\n", what, WEXITSTATUS(st));
    return 1;
}

#endif
