/*
 * share_file.c: the host-wide state file (share_file.h), its guard and
 * its robust locks.
 *
 * The file: $XDG_RUNTIME_DIR/backoff.shm, else /dev/shm/backoff-UID.shm.
 * It is made whole under a temporary name (mkostemp: O_EXCL, 0600), then
 * linked into place, so nobody ever maps a half-made file.  A file that is
 * a symlink, not a regular file, not ours or open to others is never
 * touched: the process keeps its state to itself and says so (one
 * BACKOFF_VERBOSE line).  A file of ours that is the wrong size or has
 * another magic or layout (another build, a 32-bit process, a crash of an
 * older version) is replaced when no process holds it, else left alone
 * with the same fallback.  Every process holds a shared flock on it for as
 * long as it maps it, with no descriptor: the lock belongs to the open
 * file, which the mapping keeps open once the descriptor is closed (and a
 * fork child's copy of the mapping with it).  No descriptor of the library
 * outlives the call that opened it: a program that closes every
 * descriptor, as daemons do, and opens files of its own never meets one.
 *
 * A file that shrinks under the mapping (someone truncated it) would make
 * the next touch of a lost page a SIGBUS in the program: the guard, a
 * SIGBUS handler installed with the first mapping, puts zero memory of the
 * process's own over the whole mapping when the fault is inside it (the
 * access then goes on harmlessly) and chains to the handler it found for
 * any other fault; the process goes on with its own state from its next
 * attach (bo_share_lost).
 *
 * Crash safety: the locks are robust (bo_share_lock_mend), and a death
 * inside the file's lock rebuilds the hash chains and the pool's free list;
 * a slot's repair is its entries' (share_entry.c).
 */
#include "dest/share_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

/* ThreadSanitizer's build (gcc says so by __SANITIZE_THREAD__, clang by
 * __has_feature). */
#if defined(__SANITIZE_THREAD__)
#define BO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BO_TSAN 1
#endif
#endif
#ifdef BO_TSAN
#include <sanitizer/tsan_interface.h>
#endif

bo_share_this bo_share_me;

/* ---- the guard: a file that shrinks under a mapping --------------------- */

/* The mappings guarded: the process's, and a walk's of its own (the
 * wrapper's --status and --reset).  Read by the handler. */
#define GUARDS 4
static bo_share_file *g_guarded[GUARDS];
int bo_share_lost_flag;  /* a guarded mapping was lost (atomic) */
static int g_lost_said;  /* the first caller said so */
static int g_bus_installed; /* bo_core_once */
static struct sigaction g_prev_bus;

/* A fault at addr inside a guarded mapping: zero memory of the process's
 * own in its place, the whole of it (async-signal-safe: one mmap). */
static bool guard_fix(const void *addr)
{
    const char *a = addr;
    for (int i = 0; i < GUARDS; i++) {
        char *m = (char *)__atomic_load_n(&g_guarded[i], __ATOMIC_ACQUIRE);
        if (m == NULL || a < m || a >= m + sizeof(bo_share_file))
            continue;
        if (mmap(m, sizeof(bo_share_file), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
            return false;
        __atomic_store_n(&bo_share_lost_flag, 1, __ATOMIC_RELEASE);
        return true;
    }
    return false;
}

/* Any other SIGBUS goes where it would have gone without the library: the
 * handler found at installation, or the default (a fault then comes again
 * and kills as it would have; a SIGBUS sent is raised again, delivered
 * when this handler returns). */
static void chain_sigbus(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *p = &g_prev_bus;
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction != NULL)
            p->sa_sigaction(sig, si, uc);
    } else if (p->sa_handler == SIG_DFL) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        if (si == NULL || si->si_code <= 0)
            raise(sig);
    } else if (p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
    }
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    if (si == NULL || si->si_code <= 0 || !guard_fix(si->si_addr))
        chain_sigbus(sig, si, uc);
    errno = saved;
}

static void install_guard(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_prev_bus);
}

static void guard(bo_share_file *f)
{
    bo_core_once(&g_bus_installed, install_guard);
    for (int i = 0; i < GUARDS; i++) {
        bo_share_file *none = NULL;
        if (__atomic_compare_exchange_n(&g_guarded[i], &none, f, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
    }
}

void bo_share_unmap(bo_share_file *f)
{
    for (int i = 0; i < GUARDS; i++) {
        bo_share_file *me = f;
        __atomic_compare_exchange_n(&g_guarded[i], &me, NULL, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
    }
    munmap(f, sizeof *f);
}

bool bo_share_lost(const bo_share_file *f)
{
    /* the header's page is touched: a file truncated since is found now */
    return __atomic_load_n(&bo_share_lost_flag, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != BO_SHARE_MAGIC;
}

bool bo_share_lost_first(void)
{
    return __atomic_exchange_n(&g_lost_said, 1, __ATOMIC_RELAXED) == 0;
}

/* ---- a new slot's or chunk's pages -------------------------------------- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* A kernel before 5.14: the file opened by its path for one fallocate,
 * when it is still the file mapped. */
static bool reserve_by_path(bo_share_file *f, off_t off, size_t len)
{
    char path[PATH_MAX];
    struct stat st;
    bool ok = false;

    if (f != bo_share_me.file || bo_share_path(path, sizeof path) != 0)
        return false;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_dev == bo_share_me.dev &&
        (uint64_t)st.st_ino == bo_share_me.ino)
        ok = fallocate(fd, 0, off, (off_t)len) == 0 || errno == EOPNOTSUPP || errno == ENOSYS;
    bo_core_sys_close(fd);
    return ok;
}

/*
 * MADV_POPULATE_WRITE faults the pages in as a write would, and where that
 * write would raise SIGBUS (a full tmpfs, a file shrunk) it fails instead
 * (EFAULT): no descriptor at all.
 */
bool bo_share_reserve(bo_share_file *f, void *at, size_t len)
{
    int saved = errno;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)at & ~(pg - 1);
    uintptr_t to = ((uintptr_t)at + len + pg - 1) & ~(pg - 1);
    bool ok = madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0;

    if (!ok && errno == EINVAL)
        ok = reserve_by_path(f, (off_t)((char *)at - (char *)f), len);
    errno = saved;
    return ok;
}

/* ---- the locks ---------------------------------------------------------- */

/* A held lock's wait: a slice, then the mutex is touched again. */
#define LOCK_SLICE_NS 100000000LL

void bo_share_timedlock_owned(pthread_mutex_t *mu, int rc)
{
#ifdef BO_TSAN
    if (rc == EOWNERDEAD) {
        __tsan_mutex_pre_lock(mu, __tsan_mutex_try_lock);
        __tsan_mutex_post_lock(mu, __tsan_mutex_try_lock, 0);
    }
#else
    (void)mu;
    (void)rc;
#endif
}

int bo_share_mutex_lock(pthread_mutex_t *mu)
{
    int rc = pthread_mutex_trylock(mu);
    while (rc == EBUSY || rc == ETIMEDOUT) {
        struct timespec ts;
        /* CLOCK_REALTIME, as pthread_mutex_timedlock reads it (and
         * ThreadSanitizer knows it, unlike pthread_mutex_clocklock) */
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t at = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + LOCK_SLICE_NS;
        ts.tv_sec = (time_t)(at / 1000000000LL);
        ts.tv_nsec = (long)(at % 1000000000LL);
        rc = pthread_mutex_timedlock(mu, &ts);
        bo_share_timedlock_owned(mu, rc);
    }
    return rc;
}

void bo_share_mutex_init(pthread_mutex_t *mu)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mu, &ma);
    pthread_mutexattr_destroy(&ma);
}


/*
 * After a lock of mu failed with rc: when its holder died (EOWNERDEAD), or a
 * repairer did (ENOTRECOVERABLE: every locker fails alike, so the lock is
 * made anew and taken), repair(arg) runs and mu is consistent again: true,
 * mu held; false for any other error (a timed lock's ETIMEDOUT), mu not
 * held.  The common case, a lock taken, never calls it: robust locks cost
 * their holders nothing more.
 */
bool bo_share_lock_mend(pthread_mutex_t *mu, int rc, void (*repair)(void *), void *arg)
{
    if (rc == ENOTRECOVERABLE) {
        bo_share_mutex_init(mu);
        rc = pthread_mutex_lock(mu);
        if (rc == 0)
            rc = EOWNERDEAD;
    }
    if (rc == EOWNERDEAD) {
        repair(arg);
        pthread_mutex_consistent(mu);
        rc = 0;
    }
    return rc == 0;
}


static void repair_file_v(void *arg)
{
    bo_share_file *f = arg;
    unsigned nchunks = bo_share_pool_hiwater(f);
    uint64_t held[(BO_SHARE_POOL_CHUNKS + 63) / 64] = {0};

    /* A holder died inside: the chains are made anew from the slots, and
     * the pool's free list from the chunks: a chunk is a slot's when it is
     * on the slot's chain and names it (bo_share_chunk_next), free when it
     * names none.  One a holder left half taken or half given back (named
     * but off its chain) is free again. */
    memset(f->heads, 0, sizeof f->heads);
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        s->key[BO_SHARE_KEY_LEN - 1] = '\0';
        if (s->used)
            bo_share_chain_link(f, s);
        const bo_share_chunk *c = &s->m.own;
        for (unsigned k = 0; k < nchunks && (c = bo_share_chunk_next(f, s, c)) != NULL; k++)
            held[(c - f->pool) / 64] |= 1ULL << ((c - f->pool) % 64);
    }
    f->pool_free = 0;
    for (unsigned k = nchunks; k-- > 0;) {
        bo_share_chunk *c = &f->pool[k];
        if (!(held[k / 64] & (1ULL << (k % 64))))
            c->owner = 0;
        if (c->owner == 0) {
            c->next = f->pool_free;
            f->pool_free = k + 1;
        }
    }
}


void bo_share_lock_file(bo_share_file *f)
{
    int rc = bo_share_mutex_lock(&f->mu);
    if (rc != 0)
        bo_share_lock_mend(&f->mu, rc, repair_file_v, f);
}

/* Hash chains, under the file's lock. */
void bo_share_chain_link(bo_share_file *f, bo_share_slot *s)
{
    uint32_t *head = &f->heads[s->hash % BO_SHARE_SLOTS];
    s->hnext = *head;
    *head = (uint32_t)(s - f->slots) + 1;
}

void bo_share_chain_unlink(bo_share_file *f, bo_share_slot *s)
{
    uint32_t me = (uint32_t)(s - f->slots) + 1;
    uint32_t *pp = &f->heads[s->hash % BO_SHARE_SLOTS];
    for (unsigned n = 0; *pp != 0 && *pp <= BO_SHARE_SLOTS && n < BO_SHARE_SLOTS; n++) {
        if (*pp == me) {
            *pp = s->hnext;
            break;
        }
        pp = &f->slots[*pp - 1].hnext;
    }
    s->hnext = 0;
}

bo_share_slot *bo_share_chain_find(bo_share_file *f, const char *key, uint64_t h, uint64_t ch)
{
    uint32_t j = f->heads[h % BO_SHARE_SLOTS];
    for (unsigned n = 0; j != 0 && j <= BO_SHARE_SLOTS && n < BO_SHARE_SLOTS; n++) {
        bo_share_slot *c = &f->slots[j - 1];
        if (c->used && c->hash == h && c->cfg_hash == ch && strcmp(c->key, key) == 0)
            return c;
        j = c->hnext;
    }
    return NULL;
}

int bo_share_path(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;

    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(buf, len, "%s/backoff.shm", xdg);
    else
        n = snprintf(buf, len, "/dev/shm/backoff-%u.shm", (unsigned)geteuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* A reason, cut to the caller's buffer (a cut reason still says enough). */
__attribute__((format(printf, 3, 4))) static void why_set(char *why, size_t len, const char *fmt,
                                                          ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}
#define WHY(...) why_set(why, len, __VA_ARGS__)

static const char *header_problem(const bo_share_file *f, char *why, size_t len)
{
    if (f->magic != BO_SHARE_MAGIC)
        return "it is not a backoff state file (bad magic)";
    if (f->version != BO_SHARE_VERSION || f->dest_size != sizeof(bo_dest) ||
        f->slot_size != sizeof(bo_share_slot) || f->nslots != BO_SHARE_SLOTS ||
        f->nprocs != BO_SHARE_CHUNK_PROCS || f->pool_chunks != BO_SHARE_POOL_CHUNKS ||
        f->mutex_size != sizeof(pthread_mutex_t) ||
        f->ptr_size != sizeof(void *) || f->file_size != sizeof(bo_share_file)) {
        WHY(
                 "its layout (version %u, state %u bytes, %u-bit) is not this library's "
                 "(version %u, state %zu bytes, %zu-bit)",
                 f->version, f->dest_size, f->ptr_size * 8, BO_SHARE_VERSION, sizeof(bo_dest),
                 sizeof(void *) * 8);
        return why;
    }
    return NULL;
}

/* The file's identity, for bo_share_reserve's fallback. */
static void identify(int fd, uint64_t *dev, uint64_t *ino)
{
    struct stat st;
    if (dev == NULL || ino == NULL || fstat(fd, &st) != 0)
        return;
    *dev = (uint64_t)st.st_dev;
    *ino = (uint64_t)st.st_ino;
}

/* A new file under a temporary name, linked into place, mapped and
 * guarded, its descriptor closed; NULL with *why. */
static bo_share_file *create_file(const char *path, char *why, size_t len, uint64_t *dev,
                                  uint64_t *ino)
{
    char tmp[PATH_MAX];
    bo_share_file *f = NULL;
    int fd;

    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return NULL;
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        WHY("it cannot be created: %s", strerror(errno));
        return NULL;
    }
    /* The file is sparse: the header's pages are allocated now, a slot's when it is
     * first handed out (take_slot), a pool chunk's likewise (grow), so a full
     * tmpfs is an error, never a SIGBUS. */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, sizeof(bo_share_file)) != 0 ||
        fallocate(fd, 0, 0, (off_t)offsetof(bo_share_file, slots)) != 0 ||
        fallocate(fd, 0, (off_t)offsetof(bo_share_file, exports),
                  (off_t)sizeof(((bo_share_file *)NULL)->exports)) != 0)
        goto fail;
    f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) {
        f = NULL;
        goto fail;
    }
    guard(f);
    f->version = BO_SHARE_VERSION;
    f->dest_size = sizeof(bo_dest);
    f->slot_size = sizeof(bo_share_slot);
    f->nslots = BO_SHARE_SLOTS;
    f->nprocs = BO_SHARE_CHUNK_PROCS;
    f->pool_chunks = BO_SHARE_POOL_CHUNKS;
    f->mutex_size = sizeof(pthread_mutex_t);
    f->ptr_size = sizeof(void *);
    f->file_size = sizeof(bo_share_file);
    bo_share_mutex_init(&f->mu); /* a slot's lock is made when it is first handed out */
    __atomic_store_n(&f->magic, BO_SHARE_MAGIC, __ATOMIC_RELEASE);
    flock(fd, LOCK_SH); /* held through the mapping once fd is closed */
    if (link(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        bo_share_unmap(f);
        bo_core_sys_close(fd);
        errno = e;
        return NULL; /* EEXIST: another process made it first; open that one */
    }
    unlink(tmp);
    identify(fd, dev, ino);
    bo_core_sys_close(fd);
    return f;
fail:
    WHY("it cannot be created: %s", strerror(errno));
    if (f != NULL)
        bo_share_unmap(f);
    unlink(tmp);
    bo_core_sys_close(fd);
    errno = 0;
    return NULL;
}

/*
 * Map the user's file, creating or replacing it as the header comment says.
 * NULL with a reason in why (empty: there is nothing to say, e.g. the file
 * does not exist and create is false).  replaced: set when a bad file of
 * ours was replaced (its reason stays in why).
 */
bo_share_file *bo_share_map_file(bool create, char *why, size_t len, bool *replaced,
                                 uint64_t *dev, uint64_t *ino)
{
    char path[PATH_MAX], reason[256];
    bo_share_file *f;
    struct stat st, lst;

    why[0] = '\0';
    *replaced = false;
    if (bo_share_path(path, sizeof path) != 0) {
        WHY("its path is too long");
        return NULL;
    }
    for (int tries = 0; tries < 4; tries++) {
        int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
            if (!create)
                return NULL;
            f = create_file(path, why, len, dev, ino);
            if (f != NULL)
                return f;
            if (why[0] != '\0')
                return NULL;
            continue;
        }
        if (fd < 0) {
            if (errno == ELOOP)
                WHY("%s is a symbolic link", path);
            else
                WHY("%s cannot be opened: %s", path, strerror(errno));
            return NULL;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            WHY("%s is not a regular file", path);
            bo_core_sys_close(fd);
            return NULL;
        }
        if (st.st_uid != geteuid()) {
            WHY("%s belongs to uid %u, not to this user (uid %u)", path,
                     (unsigned)st.st_uid, (unsigned)geteuid());
            bo_core_sys_close(fd);
            return NULL;
        }
        if ((st.st_mode & 077) != 0) {
            WHY("%s is open to other users (mode %03o, expected 600)", path,
                     (unsigned)(st.st_mode & 0777));
            bo_core_sys_close(fd);
            return NULL;
        }
        flock(fd, LOCK_SH); /* held through the mapping once fd is closed */
        const char *problem = NULL;
        f = NULL;
        if ((uint64_t)st.st_size != sizeof(bo_share_file)) {
            snprintf(reason, sizeof reason, "it is %jd bytes, not %zu", (intmax_t)st.st_size,
                     sizeof(bo_share_file));
            problem = reason;
        } else {
            f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (f == MAP_FAILED) {
                WHY("%s cannot be mapped: %s", path, strerror(errno));
                bo_core_sys_close(fd);
                return NULL;
            }
            guard(f); /* before the first touch: the file may shrink at any time */
            problem = header_problem(f, reason, sizeof reason);
            if (problem == NULL) {
                identify(fd, dev, ino);
                bo_core_sys_close(fd);
                return f;
            }
            bo_share_unmap(f);
        }
        /* Ours but not usable: replace it when no process holds it. */
        if (!create || flock(fd, LOCK_EX | LOCK_NB) != 0) {
            WHY("%s is in use and %s", path, problem);
            bo_core_sys_close(fd);
            return NULL;
        }
        if (lstat(path, &lst) == 0 && lst.st_dev == st.st_dev && lst.st_ino == st.st_ino) {
            unlink(path);
            WHY("%s: %s", path, problem);
            *replaced = true;
        }
        bo_core_sys_close(fd);
    }
    if (why[0] == '\0')
        WHY("%s keeps changing under us", path);
    return NULL;
}
