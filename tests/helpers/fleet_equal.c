/*
 * fleet_equal: the fleet's Redis script (shim/dest/fleet.lua, as the
 * library builds it in) and its C model (policies/bo_fleet.c) driven
 * through the same events against a real redis-server, with the same
 * times: after every event the script's answer and the whole state (the
 * hash's fields, the leases, the queue and its last asks) must be equal,
 * to the bit.
 *
 *   fleet_equal PORT SEQUENCES EVENTS SEED
 *
 * Each sequence is a destination of its own with up to 6, 12 or 24 calls at
 * once from 3 "hosts": calls ask for admission (queued while the window is
 * full, asking again when told), leased attempts end as successes,
 * throttles, losses or other failures after a round trip of 2 to 42 ms, or
 * are released unrun; calls give up waiting; time moves on to the next
 * call's time, by up to 5 ms a step, now and then by seconds (the rules'
 * plateau, probes and one-second bins) and past a lease's expiry.  One
 * sequence in three starts from keys poisoned alike in Redis and in the
 * model (a window of 0 or -1e308, NaN and infinite fields, 50 eternal
 * leases, a pace of 1e-300 Hz whose next send is 1e300, a queue that never
 * leaves, time stamps far ahead): both must treat them as absent alike.
 * Exit 0 and one line "N events equal"; else the first difference.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_fleet.h"
#include "fleet_script.h"

#define CALLS 24

static uint64_t g_rng;

static uint64_t next(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(next() % n);
}

static redisContext *g_ctx;
static char g_sha[48];
static char g_rules[512];
static bo_fleet_args g_args = {.lease_us = 10000000, .window = 20, .beta = 0.9};

static void die(const char *what, redisReply *r)
{
    fprintf(stderr, "fleet_equal: %s: %s\n", what,
            r != NULL && r->type == REDIS_REPLY_ERROR ? r->str
            : g_ctx->errstr[0]                      ? g_ctx->errstr
                                                    : "unexpected reply");
    exit(2);
}

/* One run of the script; res as it answers. */
static void run_script(const char *dest, char op, const char *id, char outcome, double now,
                       int64_t res[2])
{
    char k[128], lk[136], qk[136], qlk[136], ops[2] = {op, 0}, out[2] = {outcome, 0};
    char lease[32], win[32], beta[32], at[32];

    snprintf(k, sizeof k, "backoff:eq:{%s}", dest);
    snprintf(lk, sizeof lk, "%s:leases", k);
    snprintf(qk, sizeof qk, "%s:queue", k);
    snprintf(qlk, sizeof qlk, "%s:polled", k);
    snprintf(lease, sizeof lease, "%.17g", g_args.lease_us);
    snprintf(win, sizeof win, "%.17g", g_args.window);
    snprintf(beta, sizeof beta, "%.17g", g_args.beta);
    snprintf(at, sizeof at, "%.17g", now);
    const char *argv[] = {"EVALSHA", g_sha, "4", k, lk, qk, qlk, ops, id, lease, "600000",
                          out, win, beta, g_rules, at};
    redisReply *r = redisCommandArgv(g_ctx, 16, argv, NULL);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        die("the script", r);
    res[0] = r->element[0]->integer;
    res[1] = r->element[1]->integer;
    freeReplyObject(r);
}

static bool same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* The hash's fields and the sorted sets, compared with the model. */
static int compare(const char *dest, const bo_fleet *f, long event)
{
    static const char *const names[] = {"cwnd", "ssth", "rate", "next", "cut", "b", "ok0",
                                        "ok1",  "ceil", "rtt",  "pw",   "ps",  "pf"};
    const double vals[] = {f->cwnd, f->ssth, f->rate, f->next, f->cut, f->b, f->ok0,
                           f->ok1,  f->ceil, f->rtt,  f->pw,   f->ps,  f->pf};
    redisReply *r = redisCommand(g_ctx, "HMGET backoff:eq:{%s} cwnd ssth rate next cut b ok0 ok1 "
                                        "ceil rtt pw ps pf", dest);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 13)
        die("HMGET", r);
    for (size_t i = 0; i < 13; i++) {
        double v = r->element[i]->type == REDIS_REPLY_STRING ? strtod(r->element[i]->str, NULL)
                                                             : NAN;
        if (!same(v, vals[i])) {
            fprintf(stderr, "fleet_equal: event %ld, %s: %s is %.17g in Redis, %.17g in C\n",
                    event, dest, names[i], v, vals[i]);
            freeReplyObject(r);
            return 1;
        }
    }
    freeReplyObject(r);
    static const char *const sets[] = {"leases", "queue", "polled"};
    const bo_fleet_member *zs[] = {f->leases, f->queue, f->polled};
    const int ns[] = {f->nleases, f->nqueue, f->npolled};
    for (int s = 0; s < 3; s++) {
        r = redisCommand(g_ctx, "ZRANGE backoff:eq:{%s}:%s 0 -1 WITHSCORES", dest, sets[s]);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY)
            die("ZRANGE", r);
        bool ok = r->elements == (size_t)ns[s] * 2;
        for (int i = 0; ok && i < ns[s]; i++)
            ok = strcmp(r->element[2 * i]->str, zs[s][i].id) == 0 &&
                 same(strtod(r->element[2 * i + 1]->str, NULL), zs[s][i].score);
        if (!ok) {
            fprintf(stderr, "fleet_equal: event %ld, %s: the %s differ (%zu in Redis, %d in C)\n",
                    event, dest, sets[s], r->elements / 2, ns[s]);
            freeReplyObject(r);
            return 1;
        }
        freeReplyObject(r);
    }
    return 0;
}

static void command(const char *what, redisReply *r)
{
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        die(what, r);
    freeReplyObject(r);
}

/* One field of the hash, in Redis and in the model: value as Redis keeps
 * it (the script reads it with tonumber: "nan" and "inf" are numbers). */
static void poison_field(const char *dest, const char *name, const char *value, double *field)
{
    command("HSET", redisCommand(g_ctx, "HSET backoff:eq:{%s} %s %s", dest, name, value));
    *field = strtod(value, NULL);
}

/* n members of set (leases, queue or polled) scored score, in Redis and
 * in the model (which the first run empties of them, in any order). */
static void poison_set(const char *dest, const char *set, const char *prefix, int n, double score,
                       bo_fleet_member *z, int *nz)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%s:%d", prefix, i);
        command("ZADD", redisCommand(g_ctx, "ZADD backoff:eq:{%s}:%s %.17g %s", dest, set,
                                     score, id));
        snprintf(z[*nz].id, sizeof z[0].id, "%s", id);
        z[(*nz)++].score = score;
    }
}

/*
 * A sequence's keys poisoned before its first event (kind 0 to 5), alike
 * in Redis and in the model; the other fields as the script's defaults
 * would read them (the model's state exists from here).
 */
static void poison(const char *dest, bo_fleet *f, unsigned kind, double now)
{
    *f = (bo_fleet){.exists = true, .cwnd = g_args.window, .ssth = 1e9, .b = now, .ok0 = -1,
                    .ps = -1};
    static const char *const names[] = {"cwnd", "ssth", "rate", "next", "cut", "b", "ok0",
                                        "ok1",  "ceil", "rtt",  "pw",   "ps",  "pf"};
    double *fields[] = {&f->cwnd, &f->ssth, &f->rate, &f->next, &f->cut, &f->b, &f->ok0,
                        &f->ok1,  &f->ceil, &f->rtt,  &f->pw,   &f->ps,  &f->pf};
    for (int i = 0; i < 13; i++) { /* every field there, as the model has it */
        char v[32];
        snprintf(v, sizeof v, "%.17g", *fields[i]);
        poison_field(dest, names[i], v, fields[i]);
    }
    switch (kind) {
    case 0:
        poison_field(dest, "cwnd", "0", &f->cwnd);
        break;
    case 1:
        poison_field(dest, "cwnd", "-1e308", &f->cwnd);
        poison_field(dest, "ssth", "nan", &f->ssth);
        break;
    case 2:
        poison_set(dest, "leases", "evil", 50, 1e18, f->leases, &f->nleases);
        break;
    case 3:
        poison_field(dest, "rate", "1e-300", &f->rate);
        poison_field(dest, "next", "1e300", &f->next);
        break;
    case 4: /* last asks far ahead; queued calls that never asked */
        poison_set(dest, "queue", "evil", 30, now - 1, f->queue, &f->nqueue);
        poison_set(dest, "polled", "evil", 30, 1e18, f->polled, &f->npolled);
        poison_set(dest, "queue", "mute", 10, now - 1, f->queue, &f->nqueue);
        break;
    default:
        poison_field(dest, "b", "1e300", &f->b);
        poison_field(dest, "cut", "1e300", &f->cut);
        poison_field(dest, "ps", "1e300", &f->ps);
        poison_field(dest, "rtt", "-5", &f->rtt);
        poison_field(dest, "pw", "inf", &f->pw);
        poison_field(dest, "ok0", "-7", &f->ok0);
        poison_field(dest, "ok1", "nan", &f->ok1);
        poison_field(dest, "ceil", "1e300", &f->ceil);
        poison_field(dest, "pf", "-1", &f->pf);
        break;
    }
}

typedef enum { FE_CALL_IDLE, FE_CALL_ASKING, FE_CALL_LEASED } call_state;

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fleet_equal PORT SEQUENCES EVENTS SEED\n");
        return 2;
    }
    int port = atoi(argv[1]);
    long sequences = atol(argv[2]), events = atol(argv[3]), total = 0;
    g_rng = strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
    struct timeval tv = {5, 0};
    g_ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (g_ctx == NULL || g_ctx->err) {
        fprintf(stderr, "fleet_equal: cannot connect to 127.0.0.1:%d\n", port);
        return 2;
    }
    redisReply *r = redisCommand(g_ctx, "FLUSHDB"); /* the test's own Redis: start empty */
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        die("FLUSHDB", r);
    freeReplyObject(r);
    r = redisCommand(g_ctx, "SCRIPT LOAD %s", k_fleet_script);
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        die("SCRIPT LOAD", r);
    snprintf(g_sha, sizeof g_sha, "%s", r->str);
    freeReplyObject(r);
    bo_fleet_rules rules;
    bo_fleet_rules_default(&rules);
    bo_fleet_rules_format(&rules, g_rules, sizeof g_rules);

    for (long s = 0; s < sequences; s++) {
        char dest[64], id[CALLS][64];
        call_state st[CALLS] = {FE_CALL_IDLE};
        unsigned seq[CALLS] = {0};
        double due[CALLS] = {0};
        bo_fleet f;
        double now = 1764000000000000.0 + (double)s * 1e9;
        /* a throttle in 2%, 10%, 25% or 94% (all) of the completions: long quiet
         * spells (probes), a limit found often (cuts, the plateau), a pace
         * cut down to its floor */
        unsigned throttles = s % 4 == 0 ? 2 : s % 4 == 1 ? 10 : s % 4 == 2 ? 25 : 94;
        unsigned calls = s % 4 == 0 ? 6 : s % 4 == 3 ? 12 : 24;
        g_args.window = s % 5 < 2 ? 2 : 20; /* a small first window grows and probes */
        g_args.beta = s % 7 < 2 ? 0.5 : 0.9;  /* a deep cut */
        snprintf(dest, sizeof dest, "https://dest-%ld.test:443", s);
        bo_fleet_init(&f);
        if (s % 3 == 2)
            poison(dest, &f, (unsigned)(s / 3) % 6, now);
        for (long e = 0; e < events; e++, total++) {
            /* mostly the call whose time came first (an answer after its
             * round trip, a queued call's next ask), else any call */
            unsigned c = pick(calls);
            if (pick(10) < 7) {
                for (unsigned k = 0; k < calls; k++)
                    if (st[k] != FE_CALL_IDLE && (st[c] == FE_CALL_IDLE || due[k] < due[c]))
                        c = k;
                if (st[c] != FE_CALL_IDLE && due[c] > now)
                    now = due[c];
            }
            char op = 'a', outcome = '-';
            if (st[c] == FE_CALL_IDLE) {
                seq[c]++;
                snprintf(id[c], sizeof id[c], "host%u:%u:7f:%u", c % 3, c, seq[c]);
                st[c] = FE_CALL_ASKING;
            } else if (st[c] == FE_CALL_ASKING) {
                if (pick(20) == 0) {
                    op = 'r'; /* gives up waiting: leaves the queue */
                    st[c] = FE_CALL_IDLE;
                } else if (due[c] > now && pick(3) != 0) {
                    continue; /* asks again when told, mostly */
                }
            } else {
                unsigned o = pick(100);
                op = o < 3 ? 'r' : 'c';
                outcome = o < 94 - throttles ? 's' : o < 94 ? 't' : o < 97 ? 'l' : 'o';
                st[c] = FE_CALL_IDLE;
            }
            int64_t want[2], got[2];
            if (!bo_fleet_run(&f, &rules, &g_args, op, id[c], outcome, now, want)) {
                fprintf(stderr, "fleet_equal: the model is full\n");
                return 2;
            }
            run_script(dest, op, id[c], outcome, now, got);
            if (want[0] != got[0] || want[1] != got[1]) {
                fprintf(stderr,
                        "fleet_equal: event %ld (%c %s %c): Redis answered {%" PRId64
                        ", %" PRId64 "}, C {%" PRId64 ", %" PRId64 "}\n",
                        total, op, id[c], outcome, got[0], got[1], want[0], want[1]);
                return 1;
            }
            if (op == 'a') {
                if (got[0] == 1) {
                    st[c] = FE_CALL_LEASED;
                    due[c] = now + 2000 + (double)pick(40000); /* its round trip */
                } else {
                    due[c] = now + (double)got[1];
                }
            }
            if (compare(dest, &f, total) != 0)
                return 1;
            unsigned step = pick(100);
            now += step < 20   ? 0 /* calls at one instant: ties in the sets */
                   : step < 90 ? (double)pick(5000)
                   : step < 98 ? 1e6 + (double)pick(2000000)
                               : 11e6; /* past a lease */
        }
    }
    printf("%ld events equal\n", total);
    redisFree(g_ctx);
    return 0;
}
