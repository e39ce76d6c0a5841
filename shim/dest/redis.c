/*
 * redis.c: the fleet's part of each destination in Redis (the contract is
 * in redis.h and docs/DESIGN.md, "A fleet of hosts through Redis").
 *
 * Keys, for destination D in namespace N (both of one destination in one
 * Redis Cluster slot through the {D} hash tag), both expiring ttl_ms after
 * their last use, so that an idle destination leaves nothing:
 *   backoff:N:{D}         hash: cwnd, ssth (the fleet window), rate (the
 *                         fleet pace in Hz, 0: none), next (the pace's next
 *                         send), cut (time of the last cut), b/ok0/ok1
 *                         (successes in this and the previous second);
 *   backoff:N:{D}:leases  sorted set: one member per attempt in flight,
 *                         "host:pid:nonce:seq", scored by its expiry; a host
 *                         that died holding leases loses them then.
 * Times are Redis's own clock (TIME, microseconds): hosts' clocks never meet.
 *
 * The script (fleet.lua, one, three operations, atomic as every Redis
 * script is) runs policies/bo_fleet.c's rules, with their constants passed
 * in (bo_fleet_rules):
 *   a (admit)    expired leases go; wait while the pace's next send is
 *                ahead; wait while the leases fill the window; else lease.
 *   c (complete) the lease goes and the fleet's window and pace learn from
 *                the outcome (bo_fleet.h);
 *   r (release)  the lease goes, nothing learnt (an attempt that never ran).
 */
#include "dest/redis.h"

#include "bo_fleet.h"
#include "bo_time.h"
#include "bo_window.h"
#include "core/core.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The script (fleet.lua, made a C string at build time: k_fleet_script). */
#include "fleet_script.h"

/* How often a call refused for a full fleet window asks again. */
#define FLEET_POLL_NS (20 * BO_NS_PER_MS)
#define RETRY_FIRST_NS (1000 * BO_NS_PER_MS)
/* A process whose very first contact failed tries again sooner: at a
 * fleet's start many processes connect and load the script at once, and
 * on a busy host the first answer can miss the bound by a little (the
 * fleet bench: 10 of 32 processes, each then alone for a whole second,
 * unseen by the fleet's window: 78 rejections in 100 ms).  Doubling from
 * here, a Redis that is really away costs a few bounded tries more. */
#define RETRY_JOIN_NS (100 * BO_NS_PER_MS)
/* How often a call asks again while another thread makes the first connection. */
#define JOIN_POLL_NS (2 * BO_NS_PER_MS)
#define RETRY_MAX_NS (30000 * BO_NS_PER_MS)

/*
 * hiredis is loaded on the first connection (dlopen, RTLD_LOCAL), not linked:
 * every process of a command's tree loads the library, and few of them ever
 * reach the fleet.  Its soname is the one the build linked against
 * (BO_HIREDIS_SONAME, from the Makefile), so the structures read here
 * (redisContext, redisReply) are the headers' own.  Under g_mu.
 */
#ifndef BO_HIREDIS_SONAME
#error "BO_HIREDIS_SONAME: the Makefile passes the soname of the hiredis the build found"
#endif
#ifndef BO_HIREDIS_PKG
#define BO_HIREDIS_PKG "libhiredis"
#endif
static struct {
    __typeof__(redisConnectWithTimeout) *connect;
    __typeof__(redisSetTimeout) *set_timeout;
    __typeof__(redisCommand) *command;
    __typeof__(redisCommandArgv) *command_argv;
    __typeof__(freeReplyObject) *free_reply;
    __typeof__(redisFree) *free_ctx;
    __typeof__(redisFreeKeepFd) *free_keep_fd;
} H;
static int g_hiredis; /* 0: not tried yet, 1: loaded, -1: missing (the fleet is off) */

/* Set once by bo_redis_init (before the first destination is used). */
static int g_on;
static bo_redis_url g_url;
static char g_ns[BO_REDIS_NS_LEN];
static char g_user[128], g_pass[256];
static bool g_verbose;
static unsigned g_window;
static double g_beta;
static char g_rules[512]; /* bo_fleet_rules, as the script reads them */

/* The connection and what goes with it, guarded by g_mu. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static redisContext *g_ctx;
static uint64_t g_sock_dev, g_sock_ino; /* g_ctx's socket, as fstat named it at connect */
static int64_t g_retry_ns;   /* no connection attempt before this */
static int64_t g_backoff_ns = RETRY_JOIN_NS; /* RETRY_FIRST_NS once joined */
static bool g_down;          /* in an outage (said once under BACKOFF_VERBOSE) */
static bool g_joined;        /* joined once in this process */
static char g_sha[48];
static char g_procid[128];   /* "host:pid:nonce", made anew in a fork child */
static uint64_t g_seq;

/* Leases Redis may hold though their command got no answer in time (a
 * busy machine: Redis ran it after the bound): given back on reconnection,
 * else they would fill the fleet's window until their expiry. */
#define ORPHANS 16
static struct {
    char key[BO_DEST_KEY_LEN];
    uint64_t seq;
} g_orphans[ORPHANS];
static unsigned g_norphans;
/* Guards g_orphans alone, never held across I/O: a completion that cannot
 * have the connection in time leaves its lease here without waiting. */
static pthread_mutex_t g_orph_mu = PTHREAD_MUTEX_INITIALIZER;

static void orphan_push(const char *key, uint64_t seq)
{
    pthread_mutex_lock(&g_orph_mu);
    bool known = false;
    for (unsigned i = 0; i < g_norphans; i++)
        known |= g_orphans[i].seq == seq && strcmp(g_orphans[i].key, key) == 0;
    if (!known && g_norphans < ORPHANS) {
        snprintf(g_orphans[g_norphans].key, sizeof g_orphans[0].key, "%s", key);
        g_orphans[g_norphans++].seq = seq;
    }
    pthread_mutex_unlock(&g_orph_mu);
}

static bool orphan_pop(char *key, uint64_t *seq)
{
    bool got = false;
    pthread_mutex_lock(&g_orph_mu);
    if (g_norphans > 0) {
        g_norphans--;
        memcpy(key, g_orphans[g_norphans].key, BO_DEST_KEY_LEN);
        *seq = g_orphans[g_norphans].seq;
        got = true;
    }
    pthread_mutex_unlock(&g_orph_mu);
    return got;
}

bool bo_redis_active(void)
{
    return __atomic_load_n(&g_on, __ATOMIC_ACQUIRE) != 0;
}

/* One line under BACKOFF_VERBOSE. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;

    if (!g_verbose)
        return;
    va_start(ap, fmt);
    bo_core_vline(fmt, ap);
    va_end(ap);
}

static int g_inited; /* bo_core_once */
static const bo_config *g_init_cfg;

static void init_once(void)
{
    const bo_config *cfg = __atomic_load_n(&g_init_cfg, __ATOMIC_RELAXED);

    if (cfg->share != BO_SHARE_REDIS || cfg->policy != BO_POLICY_AIMD)
        return;
    g_url = cfg->redis;
    snprintf(g_ns, sizeof g_ns, "%s", g_url.ns[0] != '\0' ? g_url.ns : cfg->redis_ns);
    snprintf(g_user, sizeof g_user, "%s", g_url.user);
    snprintf(g_pass, sizeof g_pass, "%s", g_url.pass);
    if (g_pass[0] == '\0') { /* redis-cli's own variable: the password stays out of argv */
        const char *env = getenv("REDISCLI_AUTH");
        if (env != NULL)
            snprintf(g_pass, sizeof g_pass, "%s", env);
    }
    g_verbose = cfg->verbose;
    g_window = cfg->window;
    g_beta = cfg->beta > 0 ? cfg->beta : bo_window_default_beta();
    bo_fleet_rules rules;
    bo_fleet_rules_default(&rules);
    bo_fleet_rules_format(&rules, g_rules, sizeof g_rules);
    __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
}

void bo_redis_init(const bo_config *cfg)
{
    if (__atomic_load_n(&g_inited, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&g_init_cfg, cfg, __ATOMIC_RELAXED); /* every caller passes the same */
    bo_core_once(&g_inited, init_once);
}

/* The connection's lock, waited for at most the bound: false means go alone. */
static bool lock_bounded(void)
{
    struct timespec ts = bo_core_wall_ts_in((int64_t)g_url.timeout_ms * BO_NS_PER_MS);
    return pthread_mutex_timedlock(&g_mu, &ts) == 0;
}

/*
 * Under g_mu: g_ctx's descriptor is still the socket it connected (the same
 * device and inode).  A program may close every descriptor it did not open
 * (daemons do) and get the number again for a file of its own: the library
 * then never writes to it, nor closes it.
 */
static bool ctx_ours(void)
{
    struct stat st;
    return g_ctx != NULL && g_ctx->fd >= 0 && fstat(g_ctx->fd, &st) == 0 &&
           (uint64_t)st.st_dev == g_sock_dev && (uint64_t)st.st_ino == g_sock_ino;
}

/* Under g_mu: the connection freed, its descriptor closed only while it is
 * still ours (else left to whoever has the number now). */
static void drop_ctx(void)
{
    if (g_ctx == NULL)
        return;
    if (ctx_ours())
        H.free_ctx(g_ctx);
    else
        H.free_keep_fd(g_ctx);
    g_ctx = NULL;
}

/* Under g_mu: the connection failed (why); alone until the next try. */
static void went_down(const char *why)
{
    drop_ctx();
    __atomic_store_n(&g_retry_ns, bo_core_now_ns() + g_backoff_ns, __ATOMIC_RELAXED);
    if (!g_down)
        say("backoff: BACKOFF_SHARE=%s: %s; this host goes on with its host-wide state alone "
            "and tries Redis again in %" PRId64 " ms",
            g_url.shown, why, (int64_t)(g_backoff_ns / BO_NS_PER_MS));
    g_down = true;
    g_backoff_ns = g_backoff_ns * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : g_backoff_ns * 2;
}

/* A reply that is an error, as text for went_down. */
static void reply_error(const char *what, redisReply *r)
{
    char why[300];
    snprintf(why, sizeof why, "%s: %.200s", what,
             r == NULL ? (g_ctx != NULL && g_ctx->errstr[0] ? g_ctx->errstr : "no answer")
                       : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    if (r != NULL)
        H.free_reply(r);
    went_down(why);
}

static bool load_script(void)
{
    redisReply *r = H.command(g_ctx, "SCRIPT LOAD %s", k_fleet_script);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= sizeof g_sha) {
        reply_error("SCRIPT LOAD", r);
        return false;
    }
    memcpy(g_sha, r->str, r->len);
    g_sha[r->len] = '\0';
    H.free_reply(r);
    return true;
}

static redisReply *run(char op, const char *key, uint64_t seq, char outcome);

/* Under g_mu, connected: give back the leases of commands that went unanswered. */
static void release_orphans(void)
{
    char key[BO_DEST_KEY_LEN];
    uint64_t seq;

    while (g_ctx != NULL && orphan_pop(key, &seq)) {
        redisReply *r = run('r', key, seq, '-');
        if (r == NULL)
            return; /* down again: run kept it for the next connection */
        H.free_reply(r);
    }
}

/*
 * Under g_mu: hiredis's functions, loaded on the first call that needs them.
 * A missing library says so in one line (whatever BACKOFF_VERBOSE says: it
 * is the installation that is wrong, not an outage) and turns the fleet off
 * for this process, which goes on with its host-wide state as it does
 * whenever Redis cannot be used.
 */
static bool hiredis_loaded(void)
{
    static const char *const names[] = {"redisConnectWithTimeout", "redisSetTimeout",
                                        "redisCommand",            "redisCommandArgv",
                                        "freeReplyObject",         "redisFree",
                                        "redisFreeKeepFd"};
    void **slot[] = {(void **)&H.connect,      (void **)&H.set_timeout, (void **)&H.command,
                     (void **)&H.command_argv, (void **)&H.free_reply,  (void **)&H.free_ctx,
                     (void **)&H.free_keep_fd};
    _Static_assert(sizeof names / sizeof names[0] == sizeof H / sizeof(void *),
                   "a name for every function of H");
    const char *why = NULL;

    if (g_hiredis != 0)
        return g_hiredis > 0;
    void *h = dlopen(BO_HIREDIS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        why = dlerror();
    for (size_t i = 0; h != NULL && i < sizeof names / sizeof names[0]; i++) {
        *slot[i] = dlsym(h, names[i]);
        if (*slot[i] == NULL) {
            why = dlerror();
            h = NULL; /* left loaded: nothing else of it is used */
        }
    }
    if (h == NULL) {
        g_hiredis = -1;
        __atomic_store_n(&g_on, 0, __ATOMIC_RELEASE);
        bo_core_line("backoff: BACKOFF_SHARE=%s: the fleet needs %s, which cannot be loaded "
                     "(%s; Debian: apt-get install %s); this process goes on with its "
                     "host-wide state alone",
                     g_url.shown, BO_HIREDIS_SONAME, why != NULL ? why : "?", BO_HIREDIS_PKG);
        return false;
    }
    g_hiredis = 1;
    return true;
}

/* Under g_mu: connected, or connect now if the time has come. */
static bool ready(int64_t now)
{
    struct timeval tv = {(time_t)(g_url.timeout_ms / 1000),
                         (suseconds_t)(g_url.timeout_ms % 1000) * 1000};
    redisReply *r;

    if (g_ctx != NULL) {
        if (__builtin_expect(ctx_ours(), 1))
            return true;
        /* The program closed the socket (and may have the number again):
         * a new connection, quietly, as if this were the first. */
        drop_ctx();
    }
    if (now < g_retry_ns || !hiredis_loaded())
        return false;
    if (g_procid[0] == '\0') {
        char host[64] = "?";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(g_procid, sizeof g_procid, "%s:%d:%" PRIx64, host, (int)getpid(),
                 (uint64_t)now ^ ((uint64_t)getpid() << 20));
    }
    g_ctx = H.connect(g_url.host, g_url.port, tv);
    if (g_ctx == NULL || g_ctx->err) {
        char why[200];
        snprintf(why, sizeof why, "cannot connect: %.150s",
                 g_ctx != NULL ? g_ctx->errstr : "out of memory");
        went_down(why);
        return false;
    }
    int fl = fcntl(g_ctx->fd, F_GETFD);
    if (fl >= 0)
        fcntl(g_ctx->fd, F_SETFD, fl | FD_CLOEXEC); /* never leaked into an exec */
    struct stat st;
    if (fstat(g_ctx->fd, &st) != 0) {
        went_down("cannot connect: its socket is gone");
        return false;
    }
    g_sock_dev = (uint64_t)st.st_dev;
    g_sock_ino = (uint64_t)st.st_ino;
    H.set_timeout(g_ctx, tv);
    if (g_pass[0] != '\0') {
        r = g_user[0] != '\0' ? H.command(g_ctx, "AUTH %s %s", g_user, g_pass)
                              : H.command(g_ctx, "AUTH %s", g_pass);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            reply_error("AUTH refused", r);
            return false;
        }
        H.free_reply(r);
    }
    if (g_url.db != 0) {
        r = H.command(g_ctx, "SELECT %u", g_url.db);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            reply_error("SELECT", r);
            return false;
        }
        H.free_reply(r);
    }
    if (!load_script())
        return false;
    if (g_down)
        say("backoff: BACKOFF_SHARE=%s: Redis answers again; this host rejoins the fleet "
            "(namespace %s)", g_url.shown, g_ns);
    else if (!g_joined)
        say("backoff: BACKOFF_SHARE=%s: this host joins the fleet (namespace %s)", g_url.shown,
            g_ns);
    g_down = false;
    __atomic_store_n(&g_joined, true, __ATOMIC_RELEASE);
    g_backoff_ns = RETRY_FIRST_NS;
    release_orphans();
    return g_ctx != NULL;
}

/*
 * Under g_mu: one run of the script, op on destination key for lease seq.
 * Returns the reply (an array), or NULL after went_down.
 */
static redisReply *run(char op, const char *key, uint64_t seq, char outcome)
{
    char k[BO_DEST_KEY_LEN + 96], lk[BO_DEST_KEY_LEN + 104], qk[BO_DEST_KEY_LEN + 104],
        qlk[BO_DEST_KEY_LEN + 104], member[160], lease[24], ttl[24], win[16], beta[24];
    char ops[2] = {op, 0}, out[2] = {outcome, 0};

    snprintf(k, sizeof k, "backoff:%s:{%s}", g_ns, key);
    snprintf(lk, sizeof lk, "%s:leases", k);
    snprintf(qk, sizeof qk, "%s:queue", k);
    snprintf(qlk, sizeof qlk, "%s:polled", k);
    snprintf(member, sizeof member, "%s:%" PRIu64, g_procid, seq);
    snprintf(lease, sizeof lease, "%" PRId64, g_url.lease_ms * 1000);
    snprintf(ttl, sizeof ttl, "%" PRId64, g_url.ttl_ms);
    snprintf(win, sizeof win, "%u", g_window);
    snprintf(beta, sizeof beta, "%.3f", g_beta);
    const char *argv[] = {"EVALSHA", g_sha, "4", k,   lk,  qk,   qlk,    ops,
                          member,    lease, ttl, out, win, beta, g_rules};
    const int argc = sizeof argv / sizeof argv[0];
    redisReply *r = H.command_argv(g_ctx, argc, argv, NULL);
    if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* the cache lost it (Redis restarted, SCRIPT FLUSH): EVAL runs the
         * text and caches it again under the same SHA1, one round trip */
        H.free_reply(r);
        argv[0] = "EVAL";
        argv[1] = k_fleet_script;
        r = H.command_argv(g_ctx, argc, argv, NULL);
    }
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER)
        return r;
    if (r == NULL) /* no answer: Redis may still run it and hold the lease */
        orphan_push(key, seq);
    reply_error("the fleet script failed", r);
    return NULL;
}

bo_fleet_answer bo_redis_admit(const char *key, int64_t now_ns, uint64_t *lease,
                               uint64_t *ticket, int64_t *until_ns)
{
    bo_fleet_answer a = BO_FLEET_ALONE;
    int saved = errno, busy = bo_core_busy;

    *lease = 0;
    if (!bo_redis_active())
        return BO_FLEET_ALONE;
    if (!lock_bounded()) {
        /*
         * Another thread holds the connection.  While it is making the
         * process's first one (each of its steps bounded), ask again soon
         * rather than go alone: at a fleet's start, the other threads of
         * every process would otherwise all send unseen by the fleet (the
         * bench: 96 unleased attempts against a cap of 50).  Once joined,
         * a busy connection means a slow Redis: alone, as the bound says.
         */
        if (__atomic_load_n(&g_joined, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&g_retry_ns, __ATOMIC_RELAXED) != 0)
            return BO_FLEET_ALONE;
        *until_ns = now_ns + JOIN_POLL_NS;
        return BO_FLEET_WAIT;
    }
    bo_core_busy = 1; /* hiredis's own connect() passes straight through */
    if (ready(now_ns)) {
        release_orphans(); /* usually none: one load under a lock */
        /* The call keeps its place in the fleet's queue from one ask to the next. */
        uint64_t seq = *ticket != 0 ? *ticket : ++g_seq;
        *ticket = 0;
        redisReply *r = run('a', key, seq, '-');
        if (r != NULL) {
            if (r->element[0]->integer == 1) {
                *lease = seq;
                a = BO_FLEET_GO;
            } else {
                *ticket = seq;
                long long us = r->element[1]->integer;
                *until_ns = now_ns + (us > 0 ? (int64_t)us * 1000 : FLEET_POLL_NS);
                a = BO_FLEET_WAIT;
            }
            H.free_reply(r);
        }
    }
    bo_core_busy = busy;
    pthread_mutex_unlock(&g_mu);
    errno = saved;
    return a;
}

/* Give a lease (or queue ticket) back; callers skip this without one. */
__attribute__((noinline)) static void finish(const char *key, uint64_t *lease, char op,
                                             char outcome)
{
    int saved = errno, busy = bo_core_busy;
    uint64_t seq = *lease;

    *lease = 0;
    if (!bo_redis_active())
        return;
    if (!lock_bounded()) { /* given back by the next call that has the connection */
        orphan_push(key, seq);
        return;
    }
    bo_core_busy = 1;
    if (ready(bo_core_now_ns())) {
        redisReply *r = run(op, key, seq, outcome);
        if (r != NULL)
            H.free_reply(r);
    } else {
        orphan_push(key, seq); /* given back on reconnection (or it expires) */
    }
    bo_core_busy = busy;
    pthread_mutex_unlock(&g_mu);
    errno = saved;
}

/* No lease or ticket (always so unless BACKOFF_SHARE=redis): nothing to do,
 * checked before anything is read or saved. */
void bo_redis_complete(const char *key, uint64_t *lease, const bo_outcome *o)
{
    if (*lease == 0)
        return;
    char c = o->verdict == BO_VERDICT_SUCCESS      ? 's'
             : o->signal == BO_SIGNAL_THROTTLE ? 't'
             : o->signal == BO_SIGNAL_LOSS     ? 'l'
                                               : 'o';
    finish(key, lease, 'c', c);
}

void bo_redis_cancel(const char *key, uint64_t *lease)
{
    if (*lease == 0)
        return;
    finish(key, lease, 'r', '-');
}

void bo_redis_leave_queue(const char *key, uint64_t *ticket)
{
    if (*ticket == 0)
        return;
    finish(key, ticket, 'r', '-');
}

/* The locks are leaves (g_orph_mu is taken under g_mu, nothing under it):
 * innermost across fork. */
void bo_redis_prepare_fork(void)
{
    pthread_mutex_lock(&g_mu);
    pthread_mutex_lock(&g_orph_mu);
}

void bo_redis_parent_fork(void)
{
    pthread_mutex_unlock(&g_orph_mu);
    pthread_mutex_unlock(&g_mu);
}

/* The child's calls must never write to the parent's connection (the
 * replies would cross): it frees its copy (closing only its own descriptor,
 * and only while that is still the socket) and connects anew, as itself,
 * on its first call. */
void bo_redis_child_fork(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_mutex_init(&g_orph_mu, NULL);
    drop_ctx();
    g_procid[0] = '\0'; /* the parent's leases (and orphans) are the parent's */
    g_norphans = 0;
    __atomic_store_n(&g_retry_ns, 0, __ATOMIC_RELAXED);
}
