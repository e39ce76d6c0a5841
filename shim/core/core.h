/*
 * core: what every room of libbackoff.so may use, and nothing else: the
 * configuration (parsed once), the clocks, the calling thread's random
 * generator, the re-entry flag, a fork-safe once, and the one writer of
 * stderr lines.  It depends on policies/ only.
 *
 *   core.c     once and its lock, clocks, the re-entry flag, stderr lines;
 *   config.c   BACKOFF_* parsed at load, the seed, per-thread generators.
 */
#ifndef BO_CORE_H
#define BO_CORE_H

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "bo_config.h"
#include "bo_rng.h"

/* The hooks' one mark of export (the objects are built -fvisibility=hidden;
 * shim/exports.map lists the same names). */
#define BO_EXPORT __attribute__((visibility("default")))

/*
 * The shim's thread-locals on its hot paths use the initial-exec model: an
 * access is one %fs-relative load instead of a call to __tls_get_addr
 * (the general- and local-dynamic models of -fPIC code).  The library is
 * loaded at start-up (LD_PRELOAD, the wrapper), so its thread-locals are
 * in the static TLS block; the whole block is some 350 bytes, within the
 * 512 bytes glibc keeps for such a library loaded later by dlopen.  The
 * declaration every file sees must carry the model: a file that sees a
 * plain `extern __thread` still calls __tls_get_addr.
 */
#define BO_TLS __thread __attribute__((tls_model("initial-exec")))

/* Thread-local re-entry flag: true while the shim is inside itself, so that
 * every hook passes straight through. */
extern BO_TLS int bo_core_busy;

/*
 * The configuration, loaded once; NULL while pass-through (bad config).
 * Every call path asks for it: once loaded, it is two loads inline.
 */
const bo_config *bo_core_config_load(void);
extern int bo_core_config_loaded;       /* set (release) once loaded */
extern const bo_config *bo_core_config_ptr; /* NULL: pass-through */

static inline const bo_config *bo_core_config(void)
{
    if (__builtin_expect(__atomic_load_n(&bo_core_config_loaded, __ATOMIC_ACQUIRE), 1))
        return bo_core_config_ptr;
    return bo_core_config_load();
}

/* The configuration if anything has asked for it yet, else NULL: at exit,
 * a process whose hooks never needed it has nothing to write or let go. */
static inline const bo_config *bo_core_config_if_loaded(void)
{
    if (__atomic_load_n(&bo_core_config_loaded, __ATOMIC_ACQUIRE))
        return bo_core_config_ptr;
    return NULL;
}

/* Monotonic and wall clocks, in ns. */
int64_t bo_core_now_ns(void);
int64_t bo_core_wall_ns(void);

/* The wall clock ns from now (none when ns <= 0), as the absolute timespec
 * pthread_mutex_timedlock reads (CLOCK_REALTIME). */
struct timespec bo_core_wall_ts_in(int64_t ns);

/* The calling thread's generator, seeded on first use (BACKOFF_SEED). */
bo_rng *bo_core_rng(void);

/*
 * The calling thread's generator of values that must never repeat across
 * processes (an Idempotency-Key: a repeat would be answered with another
 * request's stored result): seeded with BACKOFF_SEED, the process id, its
 * start and the thread, so BACKOFF_SEED does not make these repeat.
 */
bo_rng *bo_core_rng_unique(void);

/*
 * A fork-safe once: fn runs at most once, under the shim's init lock, which
 * the fork handlers hold across fork() so that a child never inherits an
 * initialization half done.  (pthread_once is not enough: ThreadSanitizer's
 * replaces glibc's and does not notice a fork, so a child forked while
 * another thread was inside one waited forever.)  *done is set when fn
 * returns; fn must not call pthread_atfork (glibc holds its atfork lock
 * while the prepare handlers run).
 */
void bo_core_once(int *done, void (*fn)(void));

/* A process-local mutex of the given type (PTHREAD_MUTEX_RECURSIVE, ...)
 * as at its first initialization: a fork child makes its locks anew so. */
void bo_core_mutex_init(pthread_mutex_t *mu, int type);

/*
 * The library's own I/O (its stderr lines, its state, metrics, trace and
 * stats files, its timerfds, what it reads of /proc): the system calls
 * themselves, never through the write, read and close the library exports
 * as hooks (shim/http/sock.c), which would look its descriptors up as the
 * program's.  Every file of the library but the http room's own hooks does
 * its I/O on descriptors through these.  -1 and errno as the system call.
 */
ssize_t bo_core_sys_write(int fd, const void *buf, size_t n);
ssize_t bo_core_sys_read(int fd, void *buf, size_t n);
int bo_core_sys_close(int fd);
/* ... and the moves of the http room on sockets it made or took over (its
 * shutdown, connect and dup3 hooks are the program's), its own waits (its
 * ppoll hook is the program's: ms < 0 waits for ever). */
int bo_core_sys_shutdown(int fd, int how);
int bo_core_sys_connect(int fd, const struct sockaddr *sa, socklen_t len);
int bo_core_sys_dup3(int oldfd, int newfd, int flags);
int bo_core_sys_poll(struct pollfd *fds, nfds_t n, int ms);

/* Write the whole buffer to fd (bo_core_sys_write), retrying short writes
 * and EINTR. */
void bo_core_write_all(int fd, const char *buf, size_t len);

/*
 * One line on stderr, formatted, with one write() so that lines of several
 * threads and processes never mix; the newline is added, errno kept.
 * Messages start with "backoff: ".  bo_core_die writes its line and aborts:
 * for the few things the library cannot run without.
 */
__attribute__((format(printf, 1, 2))) void bo_core_line(const char *fmt, ...);
__attribute__((format(printf, 1, 0))) void bo_core_vline(const char *fmt, va_list ap);
__attribute__((format(printf, 1, 2), noreturn)) void bo_core_die(const char *fmt, ...);

/* The definition of name the program would have reached without the
 * library (dlsym RTLD_NEXT: libc's, for a hook); bo_core_die when there is
 * none, or when it is self (the hook itself).  _opt: NULL then (a function
 * an older libc lacks). */
void *bo_core_next_fn(const char *name, const void *self);
void *bo_core_next_fn_opt(const char *name, const void *self);

/*
 * A hook family's real functions: the member f of the table tab, which
 * resolve fills under bo_core_once the first time (a library's constructor
 * may call a hook before ours runs): one load on every call.
 */
#define BO_CORE_REAL(tab, bound, resolve, f)                                   \
    (__builtin_expect(__atomic_load_n(&(bound), __ATOMIC_ACQUIRE), 1)          \
         ? (tab).f                                                             \
         : (bo_core_once(&(bound), (resolve)), (tab).f))

/*
 * An IPv4 or IPv6 socket address as a destination key's host (the dotted
 * quad, or the IPv6 address in brackets) into buf (INET6_ADDRSTRLEN + 2
 * bytes at least), its length in *n and its port in *port: 0, or -1 (another
 * family, or len too short).
 */
int bo_core_addr_text(const struct sockaddr *sa, socklen_t len, char *buf, size_t cap,
                      size_t *n, unsigned *port);

/* Fork (the one list in fork/fork.c): the init lock (core.c); the count of
 * forks, by which a child reseeds its generators apart from its parent's
 * (config.c). */
void bo_core_prepare_fork(void);
void bo_core_parent_fork(void);
void bo_core_child_fork(void);
void bo_core_rng_prepare_fork(void);
void bo_core_rng_child_fork(void);

#endif
