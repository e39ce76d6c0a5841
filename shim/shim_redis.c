/*
 * shim_redis: the fleet's part of each destination in Redis (issue 14; the
 * contract is in shim_redis.h and docs/DESIGN.md, "The fleet").
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
 * The script (one, three operations, atomic as every Redis script is):
 *   a (admit)    expired leases go; wait while the pace's next send is
 *                ahead; wait while the leases fill the window; else lease.
 *   c (complete) the lease goes; a success grows the window (slow start,
 *                then +1/cwnd, only while it was nearly full) and the pace
 *                (+max(1/rate, rate/500) Hz); a throttle of an attempt sent
 *                after the last cut cuts: the window by beta while it is above
 *                4 (a concurrency limit), else the pace (a metered rate,
 *                which a small window cannot hold when answers are quick):
 *                to 0.9 x the successes of the last second the first time,
 *                then x 0.9, and the next send waits one gap; a loss leaves
 *                one lease.
 *   r (release)  the lease goes, nothing learnt (an attempt that never ran).
 */
#include "shim_redis.h"

#include "bo_shim.h"
#include "bo_time.h"
#include "bo_window.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char k_script[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local k, lk, qk, qlk = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n"
    "local op, id = ARGV[1], ARGV[2]\n"
    "local lease_us, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local beta = tonumber(ARGV[7])\n"
    "local f = redis.call('HMGET', k, 'cwnd', 'ssth', 'rate', 'next', 'cut', 'b', 'ok0', "
    "'ok1', 'ceil', 'rtt', 'pw', 'ps', 'pf')\n"
    "local cwnd = tonumber(f[1]) or tonumber(ARGV[6])\n"
    "local ssth = tonumber(f[2]) or 1e9\n"
    "local rate = tonumber(f[3]) or 0\n"
    "local nxt = tonumber(f[4]) or 0\n"
    "local cut = tonumber(f[5]) or 0\n"
    "local b = tonumber(f[6]) or now\n"
    "local ok0 = tonumber(f[7]) or -1\n"
    "local ok1 = tonumber(f[8]) or 0\n"
    "local ceil = tonumber(f[9]) or 0\n"
    "local rtt = tonumber(f[10]) or 0\n"
    "local pw = tonumber(f[11]) or 0\n"
    "local ps = tonumber(f[12]) or -1\n"
    "local pf = tonumber(f[13]) or 0\n"
    "local soon = math.max(300000, 4 * rtt)\n"
    "redis.call('ZREMRANGEBYSCORE', lk, '-inf', now)\n"
    "local gone = redis.call('ZRANGEBYSCORE', qlk, '-inf', now - 150000, 'LIMIT', 0, 64)\n"
    "if #gone > 0 then\n"
    "  redis.call('ZREM', qk, unpack(gone)); redis.call('ZREM', qlk, unpack(gone))\n"
    "end\n"
    "local res = {1, 0}\n"
    "if now - b >= 1e6 then\n"
    "  if now - b < 2e6 then ok0 = ok1 else ok0 = 0 end\n"
    "  ok1 = 0; b = now\n"
    "end\n"
    "if op == 'a' then\n"
    "  local n = redis.call('ZCARD', lk)\n"
    "  if rate > 0 and nxt > now then\n"
    "    res = {0, math.floor(nxt - now)}\n"
    "  else\n"
    "    local rank = redis.call('ZRANK', qk, id)\n"
    "    local ahead = rank or redis.call('ZCARD', qk)\n"
    "    local free = math.floor(cwnd) - n\n"
    "    if free <= ahead then\n"
    "      if not rank then redis.call('ZADD', qk, now, id) end\n"
    "      redis.call('ZADD', qlk, now, id)\n"
    "      local w = 20000\n"
    "      if rtt > 0 then w = math.min(w, math.max(1000, (ahead - free + 1) * rtt / cwnd)) end\n"
    "      res = {0, math.floor(w)}\n"
    "    else\n"
    "      if rank then redis.call('ZREM', qk, id); redis.call('ZREM', qlk, id) end\n"
    "      redis.call('ZADD', lk, now + lease_us, id)\n"
    "      if rate > 0 then\n"
    "        local gap = 1e6 / rate\n"
    "        nxt = math.max(nxt, now - gap) + gap\n"
    "      end\n"
    "      res = {1, n + 1}\n"
    "    end\n"
    "  end\n"
    "else\n"
    "  if op == 'r' then redis.call('ZREM', qk, id); redis.call('ZREM', qlk, id) end\n"
    "  local sent = redis.call('ZSCORE', lk, id)\n"
    "  redis.call('ZREM', lk, id)\n"
    "  local n = redis.call('ZCARD', lk)\n"
    "  local o = ARGV[5]\n"
    "  if op == 'c' and sent then\n"
    "    sent = tonumber(sent) - lease_us\n"
    "    if o == 's' then\n"
    "      ok1 = ok1 + 1\n"
    "      if rtt > 0 then rtt = 0.875 * rtt + 0.125 * (now - sent) else rtt = now - sent end\n"
    "      if n + 2 >= cwnd or redis.call('EXISTS', qk) == 1 then\n"
    "        local inc = 1 / cwnd\n"
    "        if cwnd < ssth then inc = 0.75 end\n"
    "        if cwnd + 1 >= ceil and cwnd < ceil + 1 and now - cut < 2e6 then inc = inc / 8 end\n"
    "        if cwnd >= ssth and cut > 0 and rtt > 0 then\n"
    "          if ps < 0 and now - cut >= pw then ps = now; pf = cwnd end\n"
    "          if ps >= 0 then\n"
    "            local g = math.min(0.75, 0.25 * 2 ^ math.floor((now - ps) / rtt))\n"
    "            if g > inc then inc = g end\n"
    "          end\n"
    "        end\n"
    "        cwnd = cwnd + inc\n"
    "      end\n"
    "      if rate > 0 then rate = rate + math.max(1 / rate, rate / 500) end\n"
    "    elseif o == 't' and sent >= cut then\n"
    "      cut = now\n"
    "      local okr = ok0\n"
    "      if okr < 0 then okr = ok1 * 1e6 / math.max(now - b, 50000) end\n"
    "      if cwnd > 4 and (rtt == 0 or okr >= 0.1 * cwnd * 1e6 / rtt) then\n"
    "        ceil = cwnd\n"
    "        local c = math.max(1, cwnd * beta, math.min(cwnd, n))\n"
    "        if ps >= 0 then\n"
    "          if c > pf * 1.1 then pw = soon else pw = math.min(2 * pw, 8e6) end\n"
    "          ps = -1\n"
    "        elseif c < cwnd * 0.7 then pw = soon\n"
    "        elseif pw == 0 then pw = math.max(2e6, 20 * rtt) end\n"
    "        cwnd = c; ssth = c\n"
    "      else\n"
    "        local meas = ok0\n"
    "        if meas < 0 then meas = ok1 end\n"
    "        if rate > 0 then rate = rate * 0.9\n"
    "        else rate = math.max(meas, 1) * 0.9 end\n"
    "        if rate < 0.1 then rate = 0.1 end\n"
    "        nxt = math.max(nxt, now + 1e6 / rate)\n"
    "      end\n"
    "    elseif o == 'l' and sent >= cut then\n"
    "      cut = now; ssth = math.max(2, cwnd * beta); cwnd = 1\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('HSET', k, 'cwnd', cwnd, 'ssth', ssth, 'rate', rate, 'next', nxt, 'cut', cut,"
    " 'b', b, 'ok0', ok0, 'ok1', ok1, 'ceil', ceil, 'rtt', rtt, 'pw', pw, 'ps', ps, 'pf', pf)\n"
    "redis.call('PEXPIRE', k, ttl)\n"
    "redis.call('PEXPIRE', lk, ttl)\n"
    "redis.call('PEXPIRE', qk, ttl)\n"
    "redis.call('PEXPIRE', qlk, ttl)\n"
    "return res\n";

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

/* Set once by bo_redis_configure (load_config, before any call). */
static int g_on;
static bo_redis_url g_url;
static char g_ns[BO_REDIS_NS_LEN];
static char g_user[128], g_pass[256];
static bool g_verbose;
static unsigned g_window;
static double g_beta;

/* The connection and what goes with it, guarded by g_mu. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static redisContext *g_ctx;
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

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[600];
    va_list ap;
    int saved = errno;

    if (!g_verbose)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(2, line, (size_t)n);
    (void)w;
    errno = saved;
}

void bo_redis_configure(const bo_config *cfg)
{
    if (cfg->share_warning[0] != '\0') {
        char line[BO_ERR_LEN + 2];
        int n = snprintf(line, sizeof line, "%s\n", cfg->share_warning);
        if (n > 0) {
            ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
            (void)w;
        }
    }
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
    __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * BO_NS_PER_S + ts.tv_nsec;
}

/* The connection's lock, waited for at most the bound: false means go alone. */
static bool lock_bounded(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(g_url.timeout_ms / 1000);
    ts.tv_nsec += (long)(g_url.timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_mutex_timedlock(&g_mu, &ts) == 0;
}

/* Under g_mu: the connection failed (why); alone until the next try. */
static void went_down(const char *why)
{
    if (g_ctx != NULL) {
        redisFree(g_ctx);
        g_ctx = NULL;
    }
    __atomic_store_n(&g_retry_ns, mono_ns() + g_backoff_ns, __ATOMIC_RELAXED);
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
        freeReplyObject(r);
    went_down(why);
}

static bool load_script(void)
{
    redisReply *r = redisCommand(g_ctx, "SCRIPT LOAD %s", k_script);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= sizeof g_sha) {
        reply_error("SCRIPT LOAD", r);
        return false;
    }
    memcpy(g_sha, r->str, r->len);
    g_sha[r->len] = '\0';
    freeReplyObject(r);
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
        freeReplyObject(r);
    }
}

/* Under g_mu: connected, or connect now if the time has come. */
static bool ready(int64_t now)
{
    struct timeval tv = {(time_t)(g_url.timeout_ms / 1000),
                         (suseconds_t)(g_url.timeout_ms % 1000) * 1000};
    redisReply *r;

    if (g_ctx != NULL)
        return true;
    if (now < g_retry_ns)
        return false;
    if (g_procid[0] == '\0') {
        char host[64] = "?";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(g_procid, sizeof g_procid, "%s:%d:%" PRIx64, host, (int)getpid(),
                 (uint64_t)now ^ ((uint64_t)getpid() << 20));
    }
    g_ctx = redisConnectWithTimeout(g_url.host, g_url.port, tv);
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
    redisSetTimeout(g_ctx, tv);
    if (g_pass[0] != '\0') {
        r = g_user[0] != '\0' ? redisCommand(g_ctx, "AUTH %s %s", g_user, g_pass)
                              : redisCommand(g_ctx, "AUTH %s", g_pass);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            reply_error("AUTH refused", r);
            return false;
        }
        freeReplyObject(r);
    }
    if (g_url.db != 0) {
        r = redisCommand(g_ctx, "SELECT %u", g_url.db);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            reply_error("SELECT", r);
            return false;
        }
        freeReplyObject(r);
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
    const char *argv[] = {"EVALSHA", g_sha, "4",  k,   lk,  qk,  qlk,
                          ops,       member, lease, ttl, out, win, beta};
    redisReply *r = redisCommandArgv(g_ctx, 14, argv, NULL);
    if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        /* the cache lost it (Redis restarted, SCRIPT FLUSH): EVAL runs the
         * text and caches it again under the same SHA1, one round trip */
        freeReplyObject(r);
        argv[0] = "EVAL";
        argv[1] = k_script;
        r = redisCommandArgv(g_ctx, 14, argv, NULL);
    }
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER)
        return r;
    if (r == NULL) /* no answer: Redis may still run it and hold the lease */
        orphan_push(key, seq);
    reply_error("the fleet script failed", r);
    return NULL;
}

bo_redis_answer bo_redis_admit(const char *key, int64_t now_ns, uint64_t *lease,
                               uint64_t *ticket, int64_t *until_ns)
{
    bo_redis_answer a = BO_REDIS_ALONE;
    int saved = errno, busy = bo_shim_busy;

    *lease = 0;
    if (!bo_redis_active())
        return BO_REDIS_ALONE;
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
            return BO_REDIS_ALONE;
        *until_ns = now_ns + JOIN_POLL_NS;
        return BO_REDIS_WAIT;
    }
    bo_shim_busy = 1; /* hiredis's own connect() passes straight through */
    if (ready(now_ns)) {
        release_orphans(); /* usually none: one load under a lock */
        /* The call keeps its place in the fleet's queue from one ask to the next. */
        uint64_t seq = *ticket != 0 ? *ticket : ++g_seq;
        *ticket = 0;
        redisReply *r = run('a', key, seq, '-');
        if (r != NULL) {
            if (r->element[0]->integer == 1) {
                *lease = seq;
                a = BO_REDIS_GO;
            } else {
                *ticket = seq;
                long long us = r->element[1]->integer;
                *until_ns = now_ns + (us > 0 ? (int64_t)us * 1000 : FLEET_POLL_NS);
                a = BO_REDIS_WAIT;
            }
            freeReplyObject(r);
        }
    }
    bo_shim_busy = busy;
    pthread_mutex_unlock(&g_mu);
    errno = saved;
    return a;
}

/* Give a lease (or queue ticket) back; callers skip this without one. */
__attribute__((noinline)) static void finish(const char *key, uint64_t *lease, char op,
                                             char outcome)
{
    int saved = errno, busy = bo_shim_busy;
    uint64_t seq = *lease;

    *lease = 0;
    if (!bo_redis_active())
        return;
    if (!lock_bounded()) { /* given back by the next call that has the connection */
        orphan_push(key, seq);
        return;
    }
    bo_shim_busy = 1;
    if (ready(mono_ns())) {
        redisReply *r = run(op, key, seq, outcome);
        if (r != NULL)
            freeReplyObject(r);
    } else {
        orphan_push(key, seq); /* given back on reconnection (or it expires) */
    }
    bo_shim_busy = busy;
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
 * replies would cross): it frees its copy (closing only its own descriptor)
 * and connects anew, as itself, on its first call. */
void bo_redis_child_fork(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_mutex_init(&g_orph_mu, NULL);
    if (g_ctx != NULL) {
        redisFree(g_ctx);
        g_ctx = NULL;
    }
    g_procid[0] = '\0'; /* the parent's leases (and orphans) are the parent's */
    g_norphans = 0;
    __atomic_store_n(&g_retry_ns, 0, __ATOMIC_RELAXED);
}
