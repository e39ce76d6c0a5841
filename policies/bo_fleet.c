/*
 * bo_fleet: the fleet's window and pace, step for step as
 * shim/dest/fleet.lua runs them in Redis (see bo_fleet.h).  Every number is
 * a double, as Lua's, and every operation is made in the script's order,
 * so that both give the same bits.
 */
#include "bo_fleet.h"
#include "bo_math.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bo_window.h"

void bo_fleet_rules_default(bo_fleet_rules *r)
{
    *r = (bo_fleet_rules){
        .ss_inc = BO_SS_INC,
        .plateau_slow = BO_PLATEAU_SLOW,
        .plateau_us = (double)(BO_PLATEAU_NS / 1000),
        .probe_soon_us = (double)(BO_PROBE_SOON_NS / 1000),
        .probe_soon_rtts = BO_PROBE_RTTS,
        .probe_late_us = (double)(BO_PROBE_LATE_NS / 1000),
        .probe_late_rtts = BO_PROBE_LATE_RTTS,
        .probe_max_us = (double)(BO_PROBE_MAX_NS / 1000),
        .probe_deep = BO_PROBE_DEEP,
        .probe_gain = BO_PROBE_GAIN_FIRST,
        .probe_found = BO_PROBE_FOUND,
        .rate_decay = BO_RATE_DECAY,
        /* The fleet's own: a queued call asks again within 20 ms and leaves
         * the queue once silent for 150 ms (a call that ended, a process
         * that died); a throttle cuts the window only above 4 and when the
         * fleet delivered at least a tenth of what the window could at the
         * smoothed round trip (a concurrency limit), else the pace. */
        .queue_poll_us = 20000,
        .queue_drop_us = 150000,
        .min_window = 4,
        .cap_fraction = 0.1,
    };
}

int bo_fleet_rules_format(const bo_fleet_rules *r, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "%.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g "
                    "%.17g %.17g %.17g %.17g",
                    r->ss_inc, r->plateau_slow, r->plateau_us, r->probe_soon_us,
                    r->probe_soon_rtts, r->probe_late_us, r->probe_late_rtts, r->probe_max_us,
                    r->probe_deep, r->probe_gain, r->probe_found, r->rate_decay,
                    r->queue_poll_us, r->queue_drop_us, r->min_window, r->cap_fraction);
}

void bo_fleet_init(bo_fleet *f)
{
    memset(f, 0, sizeof *f);
}

/* ---- sorted sets, as Redis orders them ---------------------------------- */

static int member_cmp(const bo_fleet_member *a, double score, const char *id)
{
    if (a->score != score)
        return a->score < score ? -1 : 1;
    return strcmp(a->id, id);
}

static int zfind(const bo_fleet_member *z, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(z[i].id, id) == 0)
            return i;
    return -1;
}

static void zrem_at(bo_fleet_member *z, int *n, int i)
{
    memmove(&z[i], &z[i + 1], (size_t)(*n - i - 1) * sizeof z[0]);
    (*n)--;
}

static void zrem(bo_fleet_member *z, int *n, const char *id)
{
    int i = zfind(z, *n, id);
    if (i >= 0)
        zrem_at(z, n, i);
}

/* ZADD: a member's score set (it moves to its place); false: full. */
static bool zadd(bo_fleet_member *z, int *n, double score, const char *id)
{
    zrem(z, n, id);
    if (*n >= BO_FLEET_MEMBERS)
        return false;
    int at = 0;
    while (at < *n && member_cmp(&z[at], score, id) < 0)
        at++;
    memmove(&z[at + 1], &z[at], (size_t)(*n - at) * sizeof z[0]);
    snprintf(z[at].id, sizeof z[at].id, "%s", id);
    z[at].score = score;
    (*n)++;
    return true;
}

/* ZREMRANGEBYSCORE -inf max. */
static void zrem_upto(bo_fleet_member *z, int *n, double max)
{
    int k = 0;
    while (k < *n && z[k].score <= max)
        k++;
    memmove(&z[0], &z[k], (size_t)(*n - k) * sizeof z[0]);
    *n -= k;
}

/* ---- the script --------------------------------------------------------- */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* x in [lo, hi]; false for NaN. */
static bool within(double x, double lo, double hi)
{
    return x >= lo && x <= hi;
}

/*
 * Every value read is checked against what the rules can leave there (keys
 * anyone with access may write: a window below 1, a number that is not
 * finite, a pace's next send or a time stamp further ahead than the rules
 * ever set): one that is not counts as absent, its default used.  The
 * leases and the last asks: below, in sweep.
 */
static void sane(bo_fleet *f, const bo_fleet_args *a, double now)
{
    double ahead = now + a->lease_us;
    if (!within(f->cwnd, 1, 1e9))
        f->cwnd = a->window;
    if (!within(f->ssth, 1, 1e9))
        f->ssth = 1e9;
    if (!(f->rate == 0 || within(f->rate, 0.1, DBL_MAX)))
        f->rate = 0;
    if (!within(f->next, 0, now + 1e7)) /* the pace's longest gap: 1 / 0.1 Hz */
        f->next = 0;
    if (!within(f->cut, 0, ahead))
        f->cut = 0;
    if (!within(f->b, 0, ahead))
        f->b = now;
    if (!within(f->ok0, -1, DBL_MAX))
        f->ok0 = -1;
    if (!within(f->ok1, 0, DBL_MAX))
        f->ok1 = 0;
    if (!within(f->ceil, 0, 1e9))
        f->ceil = 0;
    if (!within(f->rtt, 0, a->lease_us))
        f->rtt = 0;
    if (!within(f->pw, 0, DBL_MAX))
        f->pw = 0;
    if (!(f->ps == -1 || within(f->ps, 0, ahead)))
        f->ps = -1;
    if (!within(f->pf, 0, 1e9))
        f->pf = 0;
}

/* The queued calls of ids (both sets). */
static void unqueue(bo_fleet *f, char (*ids)[BO_FLEET_MEMBER_LEN], int n)
{
    for (int i = 0; i < n; i++) {
        zrem(f->queue, &f->nqueue, ids[i]);
        zrem(f->polled, &f->npolled, ids[i]);
    }
}

/* The start of every run: expired leases go, and leases that end further
 * ahead than a lease's life; queued calls silent too long, those whose
 * last ask is further ahead than a lease's life (at most 64 of each at a
 * time, in the order Redis lists them), and queued calls that never asked
 * (the first 64 of the queue looked at). */
static void sweep(bo_fleet *f, const bo_fleet_rules *r, const bo_fleet_args *a, double now)
{
    double ahead = now + a->lease_us;
    zrem_upto(f->leases, &f->nleases, now);
    while (f->nleases > 0 && f->leases[f->nleases - 1].score > ahead)
        f->nleases--;
    char ids[64][BO_FLEET_MEMBER_LEN];
    int n = 0;
    for (int i = 0; i < f->npolled && n < 64; i++)
        if (f->polled[i].score <= now - r->queue_drop_us)
            snprintf(ids[n++], BO_FLEET_MEMBER_LEN, "%s", f->polled[i].id);
    unqueue(f, ids, n);
    n = 0;
    for (int i = 0; i < f->npolled && n < 64; i++)
        if (f->polled[i].score > ahead)
            snprintf(ids[n++], BO_FLEET_MEMBER_LEN, "%s", f->polled[i].id);
    unqueue(f, ids, n);
    if (f->nqueue > f->npolled) {
        n = 0;
        for (int i = 0; i < f->nqueue && i < 64; i++)
            if (zfind(f->polled, f->npolled, f->queue[i].id) < 0)
                snprintf(ids[n++], BO_FLEET_MEMBER_LEN, "%s", f->queue[i].id);
        for (int i = 0; i < n; i++)
            zrem(f->queue, &f->nqueue, ids[i]);
    }
}

static bool admit(bo_fleet *f, const bo_fleet_rules *r, const bo_fleet_args *a, const char *id,
                  double now, int64_t res[2])
{
    double n = f->nleases;
    if (f->rate > 0 && f->next > now) {
        res[0] = 0;
        res[1] = (int64_t)bo_math_floor(f->next - now);
        return true;
    }
    int rank = zfind(f->queue, f->nqueue, id);
    double ahead = rank >= 0 ? rank : f->nqueue;
    double free_slots = bo_math_floor(f->cwnd) - n;
    if (free_slots <= ahead) {
        if (rank < 0 && !zadd(f->queue, &f->nqueue, now, id))
            return false;
        if (!zadd(f->polled, &f->npolled, now, id))
            return false;
        double w = r->queue_poll_us;
        if (f->rtt > 0)
            w = dmin(w, dmax(1000, (ahead - free_slots + 1) * f->rtt / f->cwnd));
        res[0] = 0;
        res[1] = (int64_t)bo_math_floor(w);
        return true;
    }
    if (rank >= 0) {
        zrem(f->queue, &f->nqueue, id);
        zrem(f->polled, &f->npolled, id);
    }
    if (!zadd(f->leases, &f->nleases, now + a->lease_us, id))
        return false;
    if (f->rate > 0) {
        double gap = 1e6 / f->rate;
        f->next = dmax(f->next, now - gap) + gap;
    }
    res[0] = 1;
    res[1] = (int64_t)(n + 1);
    return true;
}

static void on_success(bo_fleet *f, const bo_fleet_rules *r, double sent, double n, double now)
{
    f->ok1 = f->ok1 + 1;
    if (f->rtt > 0)
        f->rtt = 0.875 * f->rtt + 0.125 * (now - sent);
    else
        f->rtt = now - sent;
    if (n + 2 >= f->cwnd || f->nqueue > 0) {
        double inc = 1 / f->cwnd;
        if (f->cwnd < f->ssth)
            inc = r->ss_inc;
        if (f->cwnd + 1 >= f->ceil && f->cwnd < f->ceil + 1 && now - f->cut < r->plateau_us)
            inc = inc / r->plateau_slow;
        if (f->cwnd >= f->ssth && f->cut > 0 && f->rtt > 0) {
            if (f->ps < 0 && now - f->cut >= f->pw) {
                f->ps = now;
                f->pf = f->cwnd;
            }
            if (f->ps >= 0) {
                double rounds = bo_math_floor((now - f->ps) / f->rtt);
                double g = dmin(r->ss_inc, r->probe_gain * bo_math_exp2i(rounds));
                if (g > inc)
                    inc = g;
            }
        }
        f->cwnd = f->cwnd + inc;
    }
    if (f->rate > 0)
        f->rate = f->rate + dmax(1 / f->rate, f->rate / 500);
}

static void on_throttle(bo_fleet *f, const bo_fleet_rules *r, const bo_fleet_args *a, double n,
                        double now)
{
    double soon = dmax(r->probe_soon_us, r->probe_soon_rtts * f->rtt);
    f->cut = now;
    double okr = f->ok0;
    if (okr < 0)
        okr = f->ok1 * 1e6 / dmax(now - f->b, 50000);
    if (f->cwnd > r->min_window &&
        (f->rtt == 0 || okr >= r->cap_fraction * f->cwnd * 1e6 / f->rtt)) {
        f->ceil = f->cwnd;
        double c = dmax(dmax(1, f->cwnd * a->beta), dmin(f->cwnd, n));
        if (f->ps >= 0) {
            if (c > f->pf * r->probe_found)
                f->pw = soon;
            else
                f->pw = dmin(2 * f->pw, r->probe_max_us);
            f->ps = -1;
        } else if (c < f->cwnd * r->probe_deep) {
            f->pw = soon;
        } else if (f->pw == 0) {
            f->pw = dmax(r->probe_late_us, r->probe_late_rtts * f->rtt);
        }
        f->cwnd = c;
        f->ssth = c;
        return;
    }
    double meas = f->ok0;
    if (meas < 0)
        meas = f->ok1;
    if (f->rate > 0)
        f->rate = f->rate * r->rate_decay;
    else
        f->rate = dmax(meas, 1) * r->rate_decay;
    if (f->rate < 0.1)
        f->rate = 0.1;
    f->next = dmax(f->next, now + 1e6 / f->rate);
}

bool bo_fleet_run(bo_fleet *f, const bo_fleet_rules *r, const bo_fleet_args *a, char op,
                  const char *id, char outcome, double now, int64_t res[2])
{
    if (!f->exists) { /* the hash's fields' defaults */
        f->cwnd = a->window;
        f->ssth = 1e9;
        f->rate = f->next = f->cut = 0;
        f->b = now;
        f->ok0 = -1;
        f->ok1 = f->ceil = f->rtt = f->pw = 0;
        f->ps = -1;
        f->pf = 0;
    }
    sane(f, a, now);
    sweep(f, r, a, now);
    res[0] = 1;
    res[1] = 0;
    if (now - f->b >= 1e6) {
        f->ok0 = now - f->b < 2e6 ? f->ok1 : 0;
        f->ok1 = 0;
        f->b = now;
    }
    if (op == 'a') {
        if (!admit(f, r, a, id, now, res))
            return false;
    } else {
        if (op == 'r') {
            zrem(f->queue, &f->nqueue, id);
            zrem(f->polled, &f->npolled, id);
        }
        int i = zfind(f->leases, f->nleases, id);
        double sent = i >= 0 ? f->leases[i].score : 0;
        if (i >= 0)
            zrem_at(f->leases, &f->nleases, i);
        double n = f->nleases;
        if (op == 'c' && i >= 0) {
            sent = sent - a->lease_us;
            if (outcome == 's') {
                on_success(f, r, sent, n, now);
            } else if (outcome == 't' && sent >= f->cut) {
                on_throttle(f, r, a, n, now);
            } else if (outcome == 'l' && sent >= f->cut) {
                f->cut = now;
                f->ssth = dmax(2, f->cwnd * a->beta);
                f->cwnd = 1;
            }
        }
    }
    f->exists = true;
    return true;
}
