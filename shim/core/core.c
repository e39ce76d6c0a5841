/*
 * core.c: once and the init lock, the clocks, the re-entry flag, the
 * library's own system calls for its I/O and the one writer of stderr
 * lines (core.h).
 */
#include "core/core.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bo_time.h"

BO_TLS int bo_core_busy;

/* Guards every lazy initialization (bo_core_once); held across fork(). */
static pthread_mutex_t g_init_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void bo_core_once(int *done, void (*fn)(void))
{
    if (__atomic_load_n(done, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&g_init_lock);
    if (!__atomic_load_n(done, __ATOMIC_RELAXED)) {
        fn();
        __atomic_store_n(done, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_init_lock);
}

int64_t bo_core_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * BO_NS_PER_S + ts.tv_nsec;
}

int64_t bo_core_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * BO_NS_PER_S + ts.tv_nsec;
}

ssize_t bo_core_sys_write(int fd, const void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}

ssize_t bo_core_sys_read(int fd, void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_read, fd, buf, n);
}

int bo_core_sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

void bo_core_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = bo_core_sys_write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

void bo_core_vline(const char *fmt, va_list ap)
{
    char line[4096 + 512]; /* a path and a reason fit */
    int saved = errno;
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);

    if (n >= 0) {
        size_t m = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
        line[m++] = '\n';
        bo_core_write_all(2, line, m);
    }
    errno = saved;
}

void bo_core_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
}

void bo_core_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
    abort();
}

void *bo_core_next_fn(const char *name, const void *self)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL || p == self)
        bo_core_die("backoff: cannot find libc's %s; cannot continue", name);
    return p;
}

/*
 * Fork: the init lock is the outermost of the library's locks (nobody takes
 * it while holding another).  In the child, where only the forking thread
 * exists, it is made anew, never unlocked: a recursive mutex records its
 * owner, and the child's thread has another id (an unlock there fails with
 * EPERM and leaves the lock held for good).
 */
void bo_core_prepare_fork(void)
{
    pthread_mutex_lock(&g_init_lock);
}

void bo_core_parent_fork(void)
{
    pthread_mutex_unlock(&g_init_lock);
}

void bo_core_mutex_init(pthread_mutex_t *mu, int type)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, type);
    pthread_mutex_init(mu, &ma);
    pthread_mutexattr_destroy(&ma);
}

void bo_core_child_fork(void)
{
    bo_core_mutex_init(&g_init_lock, PTHREAD_MUTEX_RECURSIVE);
}
