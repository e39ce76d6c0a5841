/*
 * core.c: once and the init lock, the clocks, the re-entry flag, the
 * library's own system calls, the one writer of stderr lines, the real
 * functions of the hooks, a socket address as text (core.h).
 */
#include "core/core.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct timespec bo_core_wall_ts_in(int64_t ns)
{
    int64_t at = bo_core_wall_ns() + (ns > 0 ? ns : 0);
    return (struct timespec){.tv_sec = (time_t)(at / BO_NS_PER_S),
                             .tv_nsec = (long)(at % BO_NS_PER_S)};
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

int bo_core_sys_shutdown(int fd, int how)
{
    return (int)syscall(SYS_shutdown, fd, how);
}

int bo_core_sys_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    return (int)syscall(SYS_connect, fd, sa, len);
}

int bo_core_sys_dup3(int oldfd, int newfd, int flags)
{
    return (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

int bo_core_sys_poll(struct pollfd *fds, nfds_t n, int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    return (int)syscall(SYS_ppoll, fds, n, ms < 0 ? NULL : &ts, NULL, (size_t)8);
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

void *bo_core_next_fn_opt(const char *name, const void *self)
{
    void *p = dlsym(RTLD_NEXT, name);
    return p == self ? NULL : p;
}

void *bo_core_next_fn(const char *name, const void *self)
{
    void *p = bo_core_next_fn_opt(name, self);
    if (p == NULL)
        bo_core_die("backoff: cannot find libc's %s; cannot continue", name);
    return p;
}

int bo_core_addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap,
                      size_t *n, unsigned *port)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (len < sizeof *in || inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)cap) == NULL)
            return -1;
        *n = strlen(buf);
        *port = ntohs(in->sin_port);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (len < sizeof *in6 || cap < 3 ||
            inet_ntop(AF_INET6, &in6->sin6_addr, buf + 1, (socklen_t)(cap - 2)) == NULL)
            return -1;
        buf[0] = '[';
        *n = strlen(buf);
        buf[(*n)++] = ']';
        *port = ntohs(in6->sin6_port);
        return 0;
    }
    return -1;
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
