/*
 * share.c: the host-wide backend of the destination table (see share.h for
 * the interface and the file's layout).
 *
 * The file: $XDG_RUNTIME_DIR/backoff.shm, else /dev/shm/backoff-UID.shm.
 * It is made whole under a temporary name (mkostemp: O_EXCL, 0600), then
 * linked into place, so nobody ever maps a half-made file.  A file that is
 * a symlink, not a regular file, not ours or open to others is never
 * touched: the process keeps its state to itself and says so (one
 * BACKOFF_VERBOSE line).  A file of ours that is the wrong size or has
 * another magic or layout (another build, a 32-bit process, a crash of an
 * older version) is replaced when no process holds it (every user holds a
 * shared flock for its lifetime), else left alone with the same fallback.
 *
 * Crash safety: the locks are robust (a holder's death is repaired: dead
 * processes' leases are given back and the in-flight count is summed anew
 * from the leases; a death inside the file's lock rebuilds the hash chains
 * and the pool's free list), attempts in flight are leases naming their
 * process (pid, start time, and a nonce of the library's image, since exec
 * keeps both), reaped when a waiter or a new process finds the process gone
 * (checked at most every BO_SHARE_REAP_NS per slot, and waiters wake at
 * least every 200 ms, so within a second).  Waiting is a futex on the
 * slot's sequence number, woken by completions, always bounded.
 *
 * Process entries: a slot's own chunk of BO_SHARE_CHUNK_PROCS, then chunks
 * of the file's pool chained to it, taken under the file's lock when a
 * newcomer finds no free entry (and no dead process's to reap) and given
 * back when the slot is dropped or two chunks' worth stand empty.  So the
 * processes of one destination are bounded by the pool only; a process
 * that finds none holds nothing here and asks again (block.c).
 *
 * Lock order: the file's lock, then a slot's; never the other way.
 */
#include "dest/share.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "dest/dest.h"

_Static_assert(BO_SHARE_KEY_LEN == BO_DEST_KEY_LEN, "a slot holds any key a block holds");

static bo_share_file *g_file;   /* NULL: process-local */
static int g_file_fd = -1;      /* g_file's descriptor (it holds the shared flock) */
static int g_opened;            /* bo_core_once */
static const bo_config *g_cfg;  /* for repairs and stale resets */
static uint64_t g_cfg_hash;     /* config_hash(g_cfg), made once */
static int32_t g_pid;           /* this process as the leases name it */
static uint64_t g_start, g_nonce;

/* The key's hash (bo_share_key_hash), then the configuration's. */
static uint64_t hash_key(uint64_t key_hash, uint64_t cfg_hash)
{
    return (key_hash ^ cfg_hash) * 0x100000001b3ULL;
}

static void mix(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ c[i]) * 0x100000001b3ULL;
}

/* What shapes a destination's state: processes that differ here never share. */
static uint64_t config_hash(const bo_config *cfg)
{
    uint64_t h = 0xcbf29ce484222325ULL;
#define M(f) mix(&h, &cfg->f, sizeof cfg->f)
    M(policy); M(base_ms); M(cap_ms); M(factor); M(jitter); M(window); M(window_max);
    M(beta); M(aimd_mode); M(up); M(down); M(down_after); M(pacing); M(ratelimit_headers);
#undef M
    return h;
}

/*
 * A process's start time (/proc/PID/stat field 22); false when the process
 * is gone or a zombie (killed, not yet reaped by its parent: it holds
 * nothing any more).
 */
static bool proc_start(int32_t pid, uint64_t *start)
{
    char path[64], buf[1024];
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return false;
    p += 2;
    if (*p == 'Z' || *p == 'X' || *p == 'x')
        return false;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return false;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return true;
}

static void self_identity(void)
{
    g_pid = (int32_t)getpid();
    if (!proc_start(g_pid, &g_start))
        g_start = 0;
    if (g_nonce == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g_nonce = ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^
                  ((uint64_t)g_pid << 40) ^ (uint64_t)(uintptr_t)&g_nonce;
        g_nonce |= 1;
    }
}

static bool is_self(const bo_share_proc *p)
{
    return p->pid == g_pid && p->start == g_start && p->nonce == g_nonce;
}

static bool proc_alive(const bo_share_proc *p)
{
    uint64_t start;

    if (p->pid == g_pid && p->start == g_start)
        return p->nonce == g_nonce; /* another nonce: our image before an exec */
    if (p->pid <= 0 || (kill(p->pid, 0) != 0 && errno == ESRCH))
        return false;
    return proc_start(p->pid, &start) && start == p->start;
}

/* ---- entries ------------------------------------------------------------ */

#define CHUNK BO_SHARE_CHUNK_PROCS

/* The chunks of s, its own first; n counts them (a chain never loops: it
 * is walked at most once per chunk of the pool). */
#define FOR_CHUNKS(s, c, n)                                                                   \
    for ((c) = &(s)->m.own, (n) = 0; (c) != NULL && (n) <= BO_SHARE_POOL_CHUNKS;            \
         (c) = bo_share_chunk_next(g_file, (s), (c)), (n)++)

static uint32_t slot_ref(const bo_share_slot *s)
{
    return (uint32_t)(s - g_file->slots) + 1;
}

/* The chunk of entry idx of s (idx valid for an attachment of s). */
static bo_share_chunk *chunk_of(bo_share_slot *s, unsigned idx)
{
    if (idx < CHUNK)
        return &s->m.own;
    return &g_file->pool[(idx - CHUNK) / CHUNK];
}

static bo_share_proc *entry_at(bo_share_slot *s, unsigned idx)
{
    if (idx < CHUNK)
        return &s->m.own.procs[idx];
    idx -= CHUNK;
    return &g_file->pool[idx / CHUNK].procs[idx % CHUNK];
}

static uint64_t entry_bit(const bo_share_chunk *c, const bo_share_proc *p)
{
    return 1ULL << (p - c->procs);
}

static uint32_t entry_refs(const bo_share_proc *p)
{
    return __atomic_load_n(&p->refs, __ATOMIC_ACQUIRE);
}

/* An entry that holds nothing: no block of its process in use, no lease, no waiter. */
static bool entry_idle(const bo_share_proc *p)
{
    return entry_refs(p) == 0 && p->inflight == 0 && p->waiters == 0;
}

/* Under the slot's lock: one more block of the entry's process in use. */
static void entry_ref(bo_share_chunk *c, bo_share_proc *p)
{
    if (__atomic_fetch_add(&p->refs, 1, __ATOMIC_RELAXED) == 0)
        __atomic_fetch_or(&c->busy, entry_bit(c, p), __ATOMIC_RELAXED);
}

/* Take a free entry of c for this process (under the slot's lock). */
static void claim_entry(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    __atomic_add_fetch(&s->m.nattached, 1, __ATOMIC_RELAXED);
    c->nattached++;
    __atomic_store_n(&p->refs, 0, __ATOMIC_RELAXED);
    p->inflight = p->waiters = 0;
    p->wait_ns = 0;
    p->pid = g_pid;
    p->start = g_start;
    p->nonce = g_nonce;
}

/* Free an entry (under the slot's lock). */
static void free_entry(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    if (p->pid != 0) {
        __atomic_sub_fetch(&s->m.nattached, 1, __ATOMIC_RELAXED);
        if (c->nattached > 0)
            c->nattached--;
    }
    __atomic_fetch_and(&c->busy, ~entry_bit(c, p), __ATOMIC_RELAXED);
    __atomic_store_n(&p->refs, 0, __ATOMIC_RELAXED);
    p->pid = 0;
    p->start = p->nonce = 0;
    p->inflight = p->waiters = 0;
    p->wait_ns = 0;
}

/* Some process uses the slot: a busy bit in one of its chunks.  Read
 * without the slot's lock by the eviction's sampling, which holds the
 * file's (the chain does not change); slot_idle tells under the slot's. */
static bool slot_busy(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n)
        if (__atomic_load_n(&c->busy, __ATOMIC_ACQUIRE) != 0)
            return true;
    return false;
}

/* Under the slot's lock: no entry busy, nothing in flight (eviction, --reset). */
static bool slot_idle(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    if (slot_busy(s))
        return false;
    FOR_CHUNKS(s, c, n) {
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            const bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (!entry_idle(p))
                return false;
        }
    }
    return true;
}

/* Under the slot's lock (and the file's, which the chunks go back to),
 * slot_idle: drop the idle entries of processes that may come back; their
 * next reuse sees the new generation. */
static void release_chunks(bo_share_slot *s, bool all);
static void drop_idle(bo_share_slot *s)
{
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++)
            if (c->procs[i].pid != 0)
                free_entry(s, c, &c->procs[i]);
    release_chunks(s, true);
    s->gen++;
}

static void set_used_ns(bo_share_slot *s, int64_t now)
{
    __atomic_store_n(&s->last_used_ns, now, __ATOMIC_RELAXED);
}

/* Give back a dead process's leases and waiters; free its entry. */
static void drop_proc(bo_share_slot *s, bo_share_chunk *c, bo_share_proc *p)
{
    unsigned *in = &s->d.window.inflight;
    *in = *in > p->inflight ? *in - p->inflight : 0;
    s->waiters = s->waiters > p->waiters ? s->waiters - p->waiters : 0;
    free_entry(s, c, p);
}

/* Gone for sure: no such process any more (kill's answer only: a zombie or
 * a process whose pid was reused still looks alive; proc_alive tells). */
static bool proc_gone(const bo_share_proc *p)
{
    if (p->pid == g_pid && p->start == g_start)
        return p->nonce != g_nonce;
    return p->pid <= 0 || (kill(p->pid, 0) != 0 && errno == ESRCH);
}

/*
 * Dead processes' entries go, with their leases and waiters.  Forced (a
 * newcomer, a repair, --status, eviction): every entry is checked fully
 * (/proc: zombies and reused pids).  Else at most every BO_SHARE_REAP_NS
 * (a waiting call): entries with leases fully, since their slots are what
 * the others wait for, busy ones by kill() alone, idle ones not at all
 * (they hold nothing; a newcomer takes them over), so that a slot of
 * thousands of processes costs a waiter one system call per busy process.
 */
void bo_share_reap(bo_share_slot *s, int64_t now, bool force)
{
    if (!force && now - s->reaped_ns < BO_SHARE_REAP_NS && now >= s->reaped_ns)
        return;
    s->reaped_ns = now;
    int saved = errno;
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n) {
        /* entries in use are counted: stop once all were seen */
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            bool dead;
            if (force || p->inflight > 0)
                dead = !proc_alive(p);
            else if (entry_refs(p) != 0 || p->waiters != 0)
                dead = proc_gone(p);
            else
                continue;
            if (dead)
                drop_proc(s, c, p);
        }
    }
    errno = saved;
}

/* Under the slot's lock: a newcomer found no entry free.  Entries of
 * processes gone (kill's answer) go, at most every BO_SHARE_REAP_NS: a
 * slot of thousands costs one system call a process, not four. */
static void reap_gone(bo_share_slot *s, int64_t now)
{
    if (now - s->reaped_ns < BO_SHARE_REAP_NS && now >= s->reaped_ns)
        return;
    s->reaped_ns = now;
    int saved = errno;
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n)
        for (unsigned i = 0, left = c->nattached; i < CHUNK && left > 0; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (proc_gone(p) || (p->inflight > 0 && !proc_alive(p)))
                drop_proc(s, c, p);
        }
    errno = saved;
}

static void init_shared_mutex(pthread_mutex_t *mu)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mu, &ma);
    pthread_mutexattr_destroy(&ma);
}

/*
 * A holder died inside the slot: its leases go back, the counts are summed
 * anew from the leases (the only record a death cannot half-write), and a
 * window left unusable starts fresh.
 */
static void repair_slot(bo_share_slot *s)
{
    unsigned inflight = 0, waiters = 0, attached = 0, chunks = 0;
    const bo_config *cfg = __atomic_load_n(&g_cfg, __ATOMIC_RELAXED);
    bo_share_chunk *c;
    unsigned n;

    /* the counts of entries in use first: reap and self_entry rely on them;
     * then the busy bits from the refs.  A process going idle meanwhile
     * (bo_share_idle, no lock) clears its refs, then its bit: a bit is set
     * first and the refs read again after, so neither order leaves it set. */
    FOR_CHUNKS(s, c, n) {
        unsigned in_chunk = 0;
        chunks += c != &s->m.own;
        for (unsigned i = 0; i < CHUNK; i++) {
            bo_share_proc *p = &c->procs[i];
            in_chunk += p->pid != 0;
            if (p->pid != 0 && entry_refs(p) != 0) {
                __atomic_fetch_or(&c->busy, 1ULL << i, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(&p->refs, __ATOMIC_SEQ_CST) != 0)
                    continue;
            }
            __atomic_fetch_and(&c->busy, ~(1ULL << i), __ATOMIC_SEQ_CST);
        }
        c->nattached = in_chunk;
        attached += in_chunk;
    }
    __atomic_store_n(&s->m.nattached, attached, __ATOMIC_RELAXED);
    s->m.nchunks = chunks;
    bo_share_reap(s, bo_core_now_ns(), true);
    FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++) {
            inflight += c->procs[i].inflight;
            waiters += c->procs[i].waiters;
        }
    s->waiters = waiters;
    if ((!isfinite(s->d.window.cwnd) || s->d.window.cwnd < 1.0) && cfg != NULL)
        bo_dest_init(&s->d, cfg, bo_core_now_ns());
    s->d.window.inflight = inflight;
    s->key[BO_SHARE_KEY_LEN - 1] = '\0';
}

/* mu, repaired when its holder died; with until (CLOCK_REALTIME, as
 * pthread_mutex_timedlock reads it, which ThreadSanitizer knows, unlike
 * pthread_mutex_clocklock), waiting at most until then: false when it was
 * not taken. */
static bool lock_repair(pthread_mutex_t *mu, void (*repair)(void *), void *arg,
                        const struct timespec *until)
{
    int rc = until != NULL ? pthread_mutex_timedlock(mu, until) : pthread_mutex_lock(mu);
    if (rc == ENOTRECOVERABLE) {
        /* Only when a repairer died half-way: every locker fails alike, so
         * the lock is made anew and the state repaired. */
        init_shared_mutex(mu);
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

static void repair_slot_v(void *arg)
{
    repair_slot(arg);
}

static void chain_link(bo_share_file *f, bo_share_slot *s);

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
            chain_link(f, s);
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

void bo_share_lock(bo_share_slot *s)
{
    lock_repair(&s->mu, repair_slot_v, s, NULL);
}

bool bo_share_lock_until(bo_share_slot *s, int64_t until_ns)
{
    struct timespec ts;
    int64_t left = until_ns - bo_core_now_ns();
    int saved = errno;

    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t at = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + (left > 0 ? left : 0);
    ts.tv_sec = (time_t)(at / 1000000000LL);
    ts.tv_nsec = (long)(at % 1000000000LL);
    bool ok = lock_repair(&s->mu, repair_slot_v, s, &ts);
    errno = saved;
    return ok;
}

void bo_share_unlock(bo_share_slot *s)
{
    pthread_mutex_unlock(&s->mu);
}

static void lock_file(bo_share_file *f)
{
    lock_repair(&f->mu, repair_file_v, f, NULL);
}

/* ---- the file ---------------------------------------------------------- */

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

/* A new file under a temporary name, linked into place; -1 with *why. */
static bo_share_file *create_file(const char *path, int *fdp, char *why, size_t len)
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
    f->version = BO_SHARE_VERSION;
    f->dest_size = sizeof(bo_dest);
    f->slot_size = sizeof(bo_share_slot);
    f->nslots = BO_SHARE_SLOTS;
    f->nprocs = BO_SHARE_CHUNK_PROCS;
    f->pool_chunks = BO_SHARE_POOL_CHUNKS;
    f->mutex_size = sizeof(pthread_mutex_t);
    f->ptr_size = sizeof(void *);
    f->file_size = sizeof(bo_share_file);
    init_shared_mutex(&f->mu); /* a slot's lock is made when it is first handed out */
    __atomic_store_n(&f->magic, BO_SHARE_MAGIC, __ATOMIC_RELEASE);
    flock(fd, LOCK_SH);
    if (link(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        munmap(f, sizeof *f);
        close(fd);
        errno = e;
        return NULL; /* EEXIST: another process made it first; open that one */
    }
    unlink(tmp);
    *fdp = fd;
    return f;
fail:
    WHY("it cannot be created: %s", strerror(errno));
    if (f != NULL)
        munmap(f, sizeof *f);
    unlink(tmp);
    close(fd);
    errno = 0;
    return NULL;
}

/*
 * Map the user's file, creating or replacing it as the header comment says.
 * NULL with a reason in why (empty: there is nothing to say, e.g. the file
 * does not exist and create is false).  replaced: set when a bad file of
 * ours was replaced (its reason stays in why).
 */
static bo_share_file *map_file(bool create, char *why, size_t len, bool *replaced)
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
            f = create_file(path, &fd, why, len);
            if (f != NULL) {
                g_file_fd = fd; /* stays open: it holds the shared flock */
                return f;
            }
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
            close(fd);
            return NULL;
        }
        if (st.st_uid != geteuid()) {
            WHY("%s belongs to uid %u, not to this user (uid %u)", path,
                     (unsigned)st.st_uid, (unsigned)geteuid());
            close(fd);
            return NULL;
        }
        if ((st.st_mode & 077) != 0) {
            WHY("%s is open to other users (mode %03o, expected 600)", path,
                     (unsigned)(st.st_mode & 0777));
            close(fd);
            return NULL;
        }
        flock(fd, LOCK_SH);
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
                close(fd);
                return NULL;
            }
            problem = header_problem(f, reason, sizeof reason);
            if (problem == NULL) {
                g_file_fd = fd; /* stays open: it holds the shared flock */
                return f;
            }
            munmap(f, sizeof *f);
        }
        /* Ours but not usable: replace it when no process holds it. */
        if (!create || flock(fd, LOCK_EX | LOCK_NB) != 0) {
            WHY("%s is in use and %s", path, problem);
            close(fd);
            return NULL;
        }
        if (lstat(path, &lst) == 0 && lst.st_dev == st.st_dev && lst.st_ino == st.st_ino) {
            unlink(path);
            WHY("%s: %s", path, problem);
            *replaced = true;
        }
        close(fd);
    }
    if (why[0] == '\0')
        WHY("%s keeps changing under us", path);
    return NULL;
}

/* One line under BACKOFF_VERBOSE. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    const bo_config *cfg = __atomic_load_n(&g_cfg, __ATOMIC_RELAXED);
    va_list ap;

    if (cfg == NULL || !cfg->verbose)
        return;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
}

static void open_once(void)
{
    char why[PATH_MAX + 256];
    bool replaced;
    int saved = errno;

    self_identity();
    g_cfg_hash = config_hash(__atomic_load_n(&g_cfg, __ATOMIC_RELAXED));
    g_file = map_file(true, why, sizeof why, &replaced);
    if (replaced && g_file != NULL)
        say("backoff: BACKOFF_SHARE=host: replaced the shared state file: %s", why);
    else if (g_file == NULL)
        say("backoff: BACKOFF_SHARE=host: shared state not used, this process keeps its "
            "own (%s; `backoff --reset` makes a new file)", why);
    errno = saved;
}

/* ---- slots ------------------------------------------------------------ */

/*
 * A chunk of the pool for s, under the file's lock and s's: a free one,
 * else one never handed out (its pages allocated first: on a full tmpfs,
 * writing an unallocated page of a shared mapping raises SIGBUS in the
 * program), linked at the head of s's chain; NULL when there is none.
 */
static bo_share_chunk *grow(bo_share_slot *s)
{
    bo_share_file *f = g_file;
    bo_share_chunk *c = NULL;
    uint32_t ref = f->pool_free;
    unsigned fresh = bo_share_pool_hiwater(f);

    if (ref != 0 && ref <= fresh && f->pool[ref - 1].owner == 0) {
        c = &f->pool[ref - 1];
        f->pool_free = c->next;
    } else {
        f->pool_free = 0; /* a list a death left wrong is made anew by repair_file_v */
        if (fresh >= BO_SHARE_POOL_CHUNKS)
            return NULL;
        int saved = errno;
        off_t at = (off_t)((char *)&f->pool[fresh] - (char *)f);
        bool room = g_file_fd < 0 || fallocate(g_file_fd, 0, at, (off_t)sizeof *c) == 0 ||
                    errno == EOPNOTSUPP || errno == ENOSYS;
        errno = saved;
        if (!room)
            return NULL;
        c = &f->pool[fresh];
        ref = fresh + 1;
        __atomic_store_n(&f->pool_hiwater, fresh + 1, __ATOMIC_RELEASE);
    }
    memset(c->procs, 0, sizeof c->procs);
    c->busy = 0;
    c->nattached = 0;
    /* named first, then linked: a death between leaves it off the chain,
     * which repair_file_v gives back */
    __atomic_store_n(&c->owner, slot_ref(s), __ATOMIC_RELAXED);
    c->next = s->m.own.next;
    __atomic_store_n(&s->m.own.next, ref, __ATOMIC_RELEASE);
    s->m.nchunks++;
    return c;
}

/*
 * Under the file's lock and s's: s's pool chunks with no entry in use go
 * back to the pool (all of them: the slot is dropped, its entries freed).
 * Unlinked first, then named free: a death between leaves a chunk off
 * every chain, which repair_file_v gives back.  A process whose idle
 * attachment named an entry there finds it is not its own any more
 * (own_entry checks the chunk's slot) and attaches anew.
 */
static void release_chunks(bo_share_slot *s, bool all)
{
    bo_share_file *f = g_file;
    bo_share_chunk *prev = &s->m.own;
    for (unsigned n = 0; n < BO_SHARE_POOL_CHUNKS; n++) {
        bo_share_chunk *c = bo_share_chunk_next(f, s, prev);
        if (c == NULL) {
            prev->next = 0; /* a link that named no chunk of s */
            break;
        }
        if (!all && c->nattached != 0) {
            prev = c;
            continue;
        }
        uint32_t ref = (uint32_t)(c - f->pool) + 1;
        __atomic_store_n(&prev->next, c->next, __ATOMIC_RELEASE);
        if (s->m.nchunks > 0)
            s->m.nchunks--;
        __atomic_store_n(&c->owner, 0, __ATOMIC_RELAXED);
        c->busy = 0;
        c->nattached = 0;
        c->next = f->pool_free;
        f->pool_free = ref;
    }
}

/* Under the file's lock and s's: chunks emptied by processes gone go back
 * while at least two chunks' worth of entries are free (not on every
 * departure: a slot at a chunk's edge would take and give one each time). */
static void trim_chunks(bo_share_slot *s)
{
    unsigned room = CHUNK * (1 + s->m.nchunks);
    if (s->m.nchunks > 0 && s->m.nattached + 2 * CHUNK <= room)
        release_chunks(s, false);
}

/* Under the slot's lock: an idle entry of another process, whose process
 * may come back to it (its reuse then finds the entry not its own and
 * attaches anew); its busy bit is clear, so its process is done with it. */
static bool idle_entry(bo_share_slot *s, bo_share_chunk **cp, bo_share_proc **pp)
{
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n) {
        uint64_t busy = __atomic_load_n(&c->busy, __ATOMIC_ACQUIRE);
        if ((unsigned)__builtin_popcountll(busy) >= c->nattached)
            continue; /* every entry in use is busy */
        for (unsigned i = 0; i < CHUNK; i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid != 0 && !(busy & (1ULL << i)) && entry_idle(p)) {
                *cp = c;
                *pp = p;
                return true;
            }
        }
    }
    return false;
}

/* A free entry of s (the chunks with one, first). */
static bool free_entry_of(bo_share_slot *s, bo_share_chunk **cp, bo_share_proc **pp)
{
    bo_share_chunk *c;
    unsigned n;
    if (__atomic_load_n(&s->m.nattached, __ATOMIC_RELAXED) >= CHUNK * (1 + s->m.nchunks))
        return false;
    FOR_CHUNKS(s, c, n) {
        if (c->nattached >= CHUNK)
            continue;
        for (unsigned i = 0; i < CHUNK; i++)
            if (c->procs[i].pid == 0) {
                *cp = c;
                *pp = &c->procs[i];
                return true;
            }
    }
    return false;
}

/*
 * This process's entry in s (created), or -1 when there is none to have:
 * the slot's chunks all taken by live processes using the destination (a
 * dead one's is reaped, an idle one's taken over) and, with the file's
 * lock held (grow), no chunk left in the pool.  Our image before an exec
 * (same pid and start, another nonce) is gone: its entries are dropped.
 */
static int self_entry(bo_share_slot *s, int64_t now, bool can_grow)
{
    bo_share_chunk *c, *fc = NULL;
    bo_share_proc *fp = NULL;
    unsigned n;

    FOR_CHUNKS(s, c, n) {
        /* Entries in use are counted: once all were seen and a free one
         * found, stop. */
        unsigned left = c->nattached;
        for (unsigned i = 0; i < CHUNK && (left > 0 || fp == NULL); i++) {
            bo_share_proc *p = &c->procs[i];
            if (p->pid == 0) {
                if (fp == NULL) {
                    fc = c;
                    fp = p;
                }
                continue;
            }
            if (left > 0)
                left--;
            if (p->pid == g_pid) {
                if (is_self(p))
                    return (int)bo_share_entry_index(g_file, s, c, i);
                if (p->start == g_start)
                    drop_proc(s, c, p); /* our image before an exec: gone */
            }
        }
    }
    if (fp == NULL) {
        reap_gone(s, now);
        free_entry_of(s, &fc, &fp);
    }
    if (fp == NULL && can_grow && (fc = grow(s)) != NULL)
        fp = &fc->procs[0];
    if (fp == NULL && idle_entry(s, &fc, &fp))
        free_entry(s, fc, fp);
    if (fp == NULL)
        return -1;
    claim_entry(s, fc, fp);
    return (int)bo_share_entry_index(g_file, s, fc, (unsigned)(fp - fc->procs));
}

/* Hash chains, under the file's lock. */
static void chain_link(bo_share_file *f, bo_share_slot *s)
{
    uint32_t *head = &f->heads[s->hash % BO_SHARE_SLOTS];
    s->hnext = *head;
    *head = (uint32_t)(s - f->slots) + 1;
}

static void chain_unlink(bo_share_file *f, bo_share_slot *s)
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

static bo_share_slot *chain_find(bo_share_file *f, const char *key, uint64_t h, uint64_t ch)
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

/* Slots looked at for the least recently used one (as Redis samples). */
#define EVICT_SAMPLE 32

/*
 * A slot for a new key, under the file's lock: one never used while there
 * are some (in order, so the file's pages are touched as it fills), else a
 * free one, else the least
 * recently used of EVICT_SAMPLE slots nobody is using (no busy entry: the
 * idle entries of processes that may come back are dropped, the slot's
 * generation bumped), from a cursor that goes round the file (an
 * approximate LRU that costs the same at any size; all slots when the
 * sample has none).  Sampled without the slots' locks, then checked under
 * the victim's: a process going idle takes no lock, but one going busy
 * again takes the slot's.  When every slot is busy, the dead processes'
 * entries are reaped once (a lock and a /proc look per entry) and the
 * choice made again.  Returned locked, out of its hash chain.
 */
static bo_share_slot *take_slot(bo_share_file *f, int64_t now)
{
    unsigned fresh = bo_share_hiwater(f);
    if (fresh < BO_SHARE_SLOTS) { /* never used: its pages are touched from now on */
        bo_share_slot *s = &f->slots[fresh];
        /* Its pages first: on a full tmpfs, writing an unallocated page of a
         * shared mapping raises SIGBUS in the program.  No room: this
         * destination stays process-local (NULL), as when every slot is held. */
        int saved = errno;
        off_t at = (off_t)((char *)s - (char *)f);
        bool room = g_file_fd < 0 || fallocate(g_file_fd, 0, at, (off_t)sizeof *s) == 0 ||
                    errno == EOPNOTSUPP || errno == ENOSYS;
        errno = saved;
        if (!room)
            return NULL;
        init_shared_mutex(&s->mu);
        __atomic_store_n(&f->hiwater, fresh + 1, __ATOMIC_RELEASE);
        bo_share_lock(s);
        return s;
    }
    for (int pass = 0; pass < 2; pass++) {
        bo_share_slot *victim = NULL;
        int64_t oldest = INT64_MAX;
        unsigned start = f->cursor % BO_SHARE_SLOTS;
        for (unsigned k = 0; k < BO_SHARE_SLOTS; k++) {
            if (k >= EVICT_SAMPLE && victim != NULL)
                break;
            bo_share_slot *s = &f->slots[(start + k) % BO_SHARE_SLOTS];
            if (!s->used) {
                victim = s;
                break;
            }
            int64_t t = __atomic_load_n(&s->last_used_ns, __ATOMIC_RELAXED);
            if (!slot_busy(s) && t < oldest) {
                victim = s;
                oldest = t;
            }
        }
        f->cursor = start + EVICT_SAMPLE;
        if (victim != NULL) {
            bo_share_lock(victim);
            if (slot_idle(victim)) { /* a process may have gone busy again since */
                drop_idle(victim);
                if (victim->used)
                    chain_unlink(f, victim);
                return victim;
            }
            bo_share_unlock(victim);
        }
        if (pass == 0) {
            for (unsigned i = 0; i < BO_SHARE_SLOTS; i++) { /* all handed out */
                bo_share_lock(&f->slots[i]);
                bo_share_reap(&f->slots[i], now, true);
                bo_share_unlock(&f->slots[i]);
            }
        }
    }
    return NULL;
}

/* Under the slot's lock: the counts start from zero (a new key, --reset);
 * wait_ns is added to without the lock. */
static void counts_clear(bo_share_slot *s)
{
    memset(s->counts.throttled, 0, sizeof s->counts.throttled);
    s->counts.calls = s->counts.attempts = s->counts.retries = 0;
    s->counts.failed = s->counts.gave_up = s->counts.budget_refused = 0;
    s->counts.last_throttle_ns = 0;
    __atomic_store_n(&s->counts.wait_ns, 0, __ATOMIC_RELAXED);
}

/* The state of a destination as new (leases, if any, stay counted). */
static void fresh_state(bo_share_slot *s, const bo_config *cfg, int64_t now)
{
    unsigned inflight = 0;
    bo_share_chunk *c;
    unsigned n;
    FOR_CHUNKS(s, c, n)
        for (unsigned i = 0; i < CHUNK; i++)
            inflight += c->procs[i].inflight;
    bo_dest_init(&s->d, cfg, now);
    s->d.window.inflight = inflight;
    s->last_throttle_ns = s->last_success_ns = 0;
    s->attempts = s->throttled = s->successes = 0;
}

void bo_share_init(const bo_config *cfg)
{
    if (cfg->share == BO_SHARE_PROCESS || __atomic_load_n(&g_opened, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&g_cfg, cfg, __ATOMIC_RELAXED); /* every caller passes the same */
    bo_core_once(&g_opened, open_once);
}

/* Under the slot's lock: nobody used it for long (or its clock is from
 * before a reboot), and nobody uses it now: its state starts fresh. */
static void fresh_if_stale(bo_share_slot *s, const bo_config *cfg, int64_t now)
{
    int64_t used = __atomic_load_n(&s->last_used_ns, __ATOMIC_RELAXED);
    if ((now - used > BO_SHARE_STALE_NS || used > now) && !slot_busy(s))
        fresh_state(s, cfg, now);
}

bo_share_slot *bo_share_attach(const char *key, size_t len, uint64_t key_hash,
                               const bo_config *cfg, unsigned *idx, uint32_t *gen, bool *wait)
{
    bo_share_file *f;
    bo_share_slot *s = NULL;
    uint64_t ch, h;
    int64_t now;

    *wait = false;
    if (cfg->share == BO_SHARE_PROCESS || len >= BO_SHARE_KEY_LEN ||
        !__atomic_load_n(&g_opened, __ATOMIC_ACQUIRE))
        return NULL;
    f = g_file;
    if (f == NULL)
        return NULL;
    ch = cfg == __atomic_load_n(&g_cfg, __ATOMIC_RELAXED) ? g_cfg_hash : config_hash(cfg);
    h = hash_key(key_hash, ch);
    now = bo_core_now_ns();
    lock_file(f);
    s = chain_find(f, key, h, ch);
    bool fresh = s == NULL;
    if (fresh) {
        if ((s = take_slot(f, now)) == NULL)
            goto out;
    } else {
        bo_share_lock(s);
    }
    if (fresh) {
        s->used = 1;
        s->gen++; /* another key: whoever held it idle attaches anew */
        s->hash = h;
        s->cfg_hash = ch;
        memcpy(s->key, key, len + 1);
        chain_link(f, s);
        fresh_state(s, cfg, now);
        counts_clear(s);
    } else {
        bo_share_reap(s, now, false);
        fresh_if_stale(s, cfg, now);
    }
    int i = self_entry(s, now, true);
    if (i < 0) {
        bo_share_unlock(s);
        s = NULL;
        *wait = true; /* the slot is there, its entries are not: ask again */
        goto out;
    }
    entry_ref(chunk_of(s, (unsigned)i), entry_at(s, (unsigned)i));
    trim_chunks(s);
    set_used_ns(s, now);
    *idx = (unsigned)i;
    *gen = s->gen;
    bo_share_unlock(s);
out:
    pthread_mutex_unlock(&f->mu);
    return s;
}

/* Our entry of the attachment (idx, gen), under the slot's lock; NULL:
 * it was dropped (eviction, --reset, taken over while idle, its chunk
 * given back to the pool). */
static bo_share_proc *own_entry(bo_share_slot *s, unsigned idx, uint32_t gen)
{
    if (s->gen != gen || idx >= BO_SHARE_MAX_ENTRIES)
        return NULL;
    if (idx >= CHUNK && __atomic_load_n(&chunk_of(s, idx)->owner, __ATOMIC_RELAXED) !=
                            slot_ref(s))
        return NULL;
    bo_share_proc *p = entry_at(s, idx);
    return is_self(p) ? p : NULL;
}

void bo_share_idle(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = entry_at(s, idx);
    uint32_t n = __atomic_load_n(&p->refs, __ATOMIC_RELAXED);

    /* The entry is busy, so nobody else drops or changes it: the refs
     * first, then the bit, which lets eviction and takeover see it idle. */
    while (n > 0 && !__atomic_compare_exchange_n(&p->refs, &n, n - 1, false,
                                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    if (n == 1) {
        bo_share_chunk *c = chunk_of(s, idx);
        __atomic_fetch_and(&c->busy, ~entry_bit(c, p), __ATOMIC_SEQ_CST);
    }
}

bool bo_share_reuse(bo_share_slot *s, unsigned idx, uint32_t gen, const bo_config *cfg)
{
    int64_t now = bo_core_now_ns();
    bo_share_proc *p;

    bo_share_lock(s);
    p = own_entry(s, idx, gen);
    if (p != NULL) {
        fresh_if_stale(s, cfg, now);
        entry_ref(chunk_of(s, idx), p);
        set_used_ns(s, now);
    }
    bo_share_unlock(s);
    return p != NULL;
}

void bo_share_detach(bo_share_slot *s, unsigned idx, uint32_t gen, int64_t until_ns)
{
    if (s == NULL)
        return;
    if (until_ns == 0)
        bo_share_lock(s);
    else if (!bo_share_lock_until(s, until_ns))
        return; /* the entry names this process: reaped once it is gone */
    bo_share_proc *p = own_entry(s, idx, gen);
    if (p != NULL && entry_idle(p))
        free_entry(s, chunk_of(s, idx), p);
    bo_share_unlock(s);
}

void bo_share_lease_take(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = entry_at(s, idx);
    p->inflight++;
    p->wait_ns = 0;
}

void bo_share_lease_drop(bo_share_slot *s, unsigned idx)
{
    bo_share_proc *p = entry_at(s, idx);
    if (p->inflight > 0)
        p->inflight--;
}

void bo_share_waiting(bo_share_slot *s, unsigned idx, int64_t now)
{
    entry_at(s, idx)->wait_ns = now;
    bo_share_reap(s, now, false);
}

/* The futex bits: calls waiting for room in the window, and for a time. */
#define WAIT_ROOM 1u
#define WAIT_TIME 2u

/* Requests the window lets in flight now (a window below one still lets
 * one out). */
static double window_room(const bo_dest *d)
{
    double limit = d->window.cwnd < 1 ? 1 : d->window.cwnd;
    return limit - (double)d->window.inflight;
}

void bo_share_wait(bo_share_slot *s, unsigned idx, int64_t until_ns)
{
    /* a call that waits for room in the window is what a completion wakes;
     * one that waits for a time (a retry's, the pace's) wakes then */
    bool room = window_room(&s->d) < 1;
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    bo_share_proc *p = entry_at(s, idx);
    struct timespec ts = {.tv_sec = (time_t)(until_ns / 1000000000LL),
                          .tv_nsec = (long)(until_ns % 1000000000LL)};
    int saved = errno;

    s->waiters++;
    p->waiters++;
    bo_share_unlock(s);
    /* Absolute CLOCK_MONOTONIC deadline; shared (not private) futex. */
    syscall(SYS_futex, &s->seq, FUTEX_WAIT_BITSET, seq, &ts, NULL, room ? WAIT_ROOM : WAIT_TIME);
    bo_share_lock(s);
    if (is_self(p) && p->waiters > 0) {
        p->waiters--;
        if (s->waiters > 0)
            s->waiters--;
    }
    errno = saved;
}

/*
 * A completion wakes the calls waiting for room in the window, all of them:
 * they race for the room, as a thread of this process would.  Waking only
 * as many as the window has room for starved a process: a woken call that
 * lost the room to a call that never waited (the completing thread's next
 * one) waited again at the back of the futex's queue, and a forked child
 * behind 16 threads on a window of one waited 10 s and more (test_shim_fork).
 * The calls waiting for a time (a retry's, the pace's) are not woken: they
 * wake then.
 */
void bo_share_wake(bo_share_slot *s)
{
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    if (s->waiters > 0) {
        int saved = errno;
        syscall(SYS_futex, &s->seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, WAIT_ROOM);
        errno = saved;
    }
}

void bo_share_note(bo_share_slot *s, bool success, bool throttle, int64_t now)
{
    s->attempts++;
    set_used_ns(s, now);
    if (success) {
        s->successes++;
        s->last_success_ns = now;
    }
    if (throttle) {
        s->throttled++;
        s->last_throttle_ns = now;
    }
}

bo_share_file *bo_share_mapped(void)
{
    return __atomic_load_n(&g_opened, __ATOMIC_ACQUIRE) ? g_file : NULL;
}

void bo_share_child_fork(void)
{
    self_identity(); /* a new pid; the nonce stays: the same image */
}

bool bo_share_child_reattach(bo_share_slot *s, const char *key, uint32_t gen, unsigned *idx)
{
    int i = -1;

    bo_share_lock(s);
    /* The parent may have let the slot go since fork, and it may hold
     * another destination now: then the child attaches anew.  No chunk of
     * the pool without the file's lock: a child short of one, too. */
    if (s->used && s->gen == gen && strcmp(s->key, key) == 0)
        i = self_entry(s, bo_core_now_ns(), false);
    if (i >= 0)
        entry_ref(chunk_of(s, (unsigned)i), entry_at(s, (unsigned)i));
    bo_share_unlock(s);
    if (i < 0)
        return false;
    *idx = (unsigned)i;
    return true;
}

/* ---- backoff --status / --reset ---------------------------------------- */

/* Under the slot's lock: its view (see bo_share_view).  Processes: those
 * using it now (busy entries) and those that used it and may come back
 * (idle); of the busy, those with an attempt in flight (holding) and those
 * with a call waiting for admission (on the slot's futex, or told to wait
 * within BO_SHARE_WAIT_SEEN_NS and not admitted since). */
static void view_of(bo_share_slot *s, bo_share_view *v, int64_t now)
{
    bo_share_chunk *ch;
    unsigned nch;

    memcpy(v->key, s->key, sizeof v->key);
    v->key[sizeof v->key - 1] = '\0';
    const bo_share_counts *c = &s->counts; /* field by field: wait_ns is added unlocked */
    memcpy(v->counts.throttled, c->throttled, sizeof v->counts.throttled);
    v->counts.calls = c->calls;
    v->counts.attempts = c->attempts;
    v->counts.retries = c->retries;
    v->counts.failed = c->failed;
    v->counts.gave_up = c->gave_up;
    v->counts.budget_refused = c->budget_refused;
    v->counts.last_throttle_ns = c->last_throttle_ns;
    v->counts.wait_ns = __atomic_load_n(&c->wait_ns, __ATOMIC_RELAXED);
    v->busy = v->idle = v->holding = v->waiting = 0;
    FOR_CHUNKS(s, ch, nch)
        for (unsigned i = 0, left = ch->nattached; i < CHUNK && left > 0; i++) {
            const bo_share_proc *p = &ch->procs[i];
            if (p->pid == 0)
                continue;
            left--;
            if (entry_idle(p))
                v->idle++;
            else
                v->busy++;
            v->holding += p->inflight > 0;
            v->waiting += p->waiters > 0 ||
                          (p->wait_ns != 0 && now - p->wait_ns <= BO_SHARE_WAIT_SEEN_NS);
        }
    v->window = s->d.window.cwnd;
    v->pace_hz = s->d.window.rate_limit_hz;
    if (v->pace_hz <= 0 && s->d.pacing.interval_ns > 0)
        v->pace_hz = 1e9 / (double)s->d.pacing.interval_ns;
    if (!(v->pace_hz > 0))
        v->pace_hz = 0;
    v->in_flight = s->d.window.inflight;
    v->throttle_age_ns = s->last_throttle_ns == 0 || s->last_throttle_ns > now
                             ? -1 : now - s->last_throttle_ns;
    v->success_age_ns = s->last_success_ns == 0 || s->last_success_ns > now
                            ? -1 : now - s->last_success_ns;
}

int bo_share_views(bo_share_file *f, bo_share_view **views, size_t *n, int64_t until_ns,
                   char *why, size_t len)
{
    bool mine = f == NULL, replaced;
    int rc = 0, fd_before = g_file_fd;
    bo_share_view *v = NULL;
    size_t k = 0;

    *views = NULL;
    *n = 0;
    why[0] = '\0';
    if (g_pid == 0)
        self_identity();
    if (mine && (f = map_file(false, why, len, &replaced)) == NULL)
        return why[0] == '\0' ? 1 : 2;
    /* A slot's pool chunks are found through g_file: a mapping of the
     * wrapper's own (mine, one thread) stands in for it during the walk. */
    bo_share_file *process_file = g_file;
    if (mine)
        g_file = f;
    unsigned hi = bo_share_hiwater(f);
    if (hi > 0 && (v = calloc(hi, sizeof *v)) == NULL) {
        WHY("no memory for %u destinations", hi);
        rc = 2;
        goto out;
    }
    int64_t now = bo_core_now_ns();
    for (unsigned i = 0; i < hi; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE))
            continue;
        if (until_ns == 0) {
            bo_share_lock(s);
        } else if (!bo_share_lock_until(s, until_ns)) {
            WHY("the lock of a destination was held too long (a process stopped in it?)");
            free(v);
            v = NULL;
            k = 0;
            rc = 2;
            goto out;
        }
        if (s->used) {
            /* the wrapper reaps now; a process writing its metrics file at
             * most every 250 ms per slot, as its waiters do */
            bo_share_reap(s, now, mine);
            view_of(s, &v[k++], now);
        }
        bo_share_unlock(s);
    }
out:
    if (mine) { /* the mapping and the descriptor (its shared flock) were this call's */
        g_file = process_file;
        munmap(f, sizeof *f);
        if (g_file_fd >= 0 && g_file_fd != fd_before)
            close(g_file_fd);
        g_file_fd = fd_before;
    }
    *views = v;
    *n = k;
    return rc;
}

static void ago(char *buf, size_t len, int64_t age_ns)
{
    if (age_ns < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1fs", (double)age_ns / 1e9);
}

int bo_share_status(FILE *out)
{
    char why[PATH_MAX + 256], thr[32], suc[32], pace[32];
    bo_share_view *v;
    size_t n;

    int rc = bo_share_views(NULL, &v, &n, 0, why, sizeof why);
    if (rc == 1) {
        fprintf(out, "backoff: no shared state yet (no file)\n");
        return 1;
    }
    if (rc != 0) {
        fprintf(out, "backoff: shared state not readable: %s\n", why);
        return 2;
    }
    fprintf(out, "# destination window pace_per_s in_flight processes last_throttle "
                 "last_success holding waiting\n");
    for (size_t i = 0; i < n; i++) {
        if (v[i].pace_hz > 0)
            snprintf(pace, sizeof pace, "%.1f", v[i].pace_hz);
        else
            snprintf(pace, sizeof pace, "-");
        ago(thr, sizeof thr, v[i].throttle_age_ns);
        ago(suc, sizeof suc, v[i].success_age_ns);
        fprintf(out, "%s %.1f %s %u %u %s %s %u %u\n", v[i].key, v[i].window, pace,
                v[i].in_flight, v[i].busy, thr, suc, v[i].holding, v[i].waiting);
    }
    free(v);
    return 0;
}

int bo_share_reset(FILE *out, const bo_config *cfg)
{
    char why[PATH_MAX + 256], path[PATH_MAX];
    bool replaced;
    int64_t now = bo_core_now_ns();
    unsigned freed = 0, kept = 0;

    if (g_pid == 0)
        self_identity();
    __atomic_store_n(&g_cfg, cfg, __ATOMIC_RELAXED);
    bo_share_file *f = map_file(false, why, sizeof why, &replaced);
    if (f == NULL) {
        if (why[0] == '\0') {
            fprintf(out, "backoff: no shared state to reset\n");
            return 0;
        }
        /* Not usable: remove it if it is ours and a plain file (not a link). */
        struct stat st;
        if (bo_share_path(path, sizeof path) == 0 && lstat(path, &st) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid() && unlink(path) == 0) {
            fprintf(out, "backoff: removed %s (%s)\n", path, why);
            return 0;
        }
        fprintf(out, "backoff: cannot reset: %s\n", why);
        return 2;
    }
    bo_share_file *mine = g_file;
    g_file = f; /* the slots are read through this mapping */
    lock_file(f);
    for (unsigned i = 0, n = bo_share_hiwater(f); i < n; i++) {
        bo_share_slot *s = &f->slots[i];
        if (!s->used)
            continue;
        bo_share_lock(s);
        bo_share_reap(s, now, true);
        counts_clear(s);
        if (!slot_idle(s)) {
            fresh_state(s, cfg, now); /* its processes' leases stay counted */
            release_chunks(s, false);
            kept++;
        } else {
            drop_idle(s);
            chain_unlink(f, s);
            s->used = 0;
            s->key[0] = '\0';
            freed++;
        }
        bo_share_unlock(s);
    }
    pthread_mutex_unlock(&f->mu);
    g_file = mine;
    munmap(f, sizeof *f);
    fprintf(out, "backoff: reset %u destination(s) (%u in use started fresh)\n", freed + kept,
            kept);
    return 0;
}
