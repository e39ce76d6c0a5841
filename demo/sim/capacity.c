/*
 * capacity: a server whose capacity halves, then doubles back, under a
 * steady crowd: `clients` threads sharing one destination, each sending its
 * next request as soon as the last one is answered, for duration_s.  The
 * capacity is full for the first third, half for the second, full again for
 * the last:
 *   --limiter cap     a concurrency cap of max_busy (100), then max_busy / 2,
 *                     each success holding a slot service_ms (100);
 *   --limiter bucket  a token bucket of bucket_rate (100/s), then half,
 *                     holding bucket_burst tokens (10), a success taking
 *                     service_ms (10).
 * A refusal is answered 429 at once, without Retry-After; a request
 * travels travel_ms (5) each way.
 *
 * What it measures, from 100 ms bins of what the server saw:
 *   settle_s    after the capacity halved: time until the refusals of
 *               every 1 s that follows stay at the policy's own steady state
 *               (1.5 x the refusals per second of the last half of the halved
 *               third, plus one) or under 5% of the new capacity, whichever is
 *               more: the storm is over (never: not within the third);
 *   extra_rej   the refusals between the halving and the settling;
 *   window      the attempts in flight at the halving (what "one window of
 *               extra refusals" is measured against);
 *   up_s        after the capacity doubled back: time until the successes of
 *               a 1 s span first reach 90% of it (never: not within the phase);
 *   phase rates the successes per second of each third, as a fraction of
 *               its capacity (use_1, use_2, use_3).
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_FREE, EV_REPLY };

#define BIN_NS (100 * SIM_NS_PER_MS)

typedef struct capacity_state {
    int busy;
    double tokens;
    int64_t refilled_ns;
    int64_t end_ns, third_ns;
    long nbins;
    long *ok_bins, *rej_bins;
    long inflight;          /* attempts sent and not yet answered (the clients' view) */
    long inflight_at_cut;
    bool cut_seen;
} capacity_state;

/* The capacity's share at time t: 1, then 0.5, then 1. */
static double share_at(const capacity_state *st, int64_t t)
{
    return t >= st->third_ns && t < 2 * st->third_ns ? 0.5 : 1.0;
}

/* Requests per second the server can take at time t. */
static double capacity_hz(const sim_params *p, const capacity_state *st, int64_t t)
{
    if (p->limiter == SIM_LIMITER_CAP)
        return floor(p->max_busy * share_at(st, t)) * 1000.0 / p->service_ms;
    return p->bucket_rate * share_at(st, t);
}

static void capacity_send(sim *s, int c)
{
    capacity_state *st = s->sc;
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);

    st->inflight++;
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void capacity_done(sim *s, int c, bool ok)
{
    capacity_state *st = s->sc;

    (void)ok;
    if (s->now < st->end_ns)
        sim_call_start(s, c, 0); /* the thread's next request */
}

static void at_server(sim *s, const sim_event *ev)
{
    capacity_state *st = s->sc;
    const sim_params *p = s->p;
    int64_t travel = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    int64_t hold = 0;
    bool ok;

    if (p->limiter == SIM_LIMITER_CAP) {
        ok = st->busy < (int)floor(p->max_busy * share_at(st, s->now));
        if (ok) {
            hold = (int64_t)(p->service_ms * SIM_NS_PER_MS);
            st->busy++;
            if (sim_heap_push(&s->heap, s->now + hold, EV_FREE, 0, 0) != 0)
                abort();
        }
    } else {
        double rate = p->bucket_rate * share_at(st, s->now);
        st->tokens += (double)(s->now - st->refilled_ns) / SIM_NS_PER_S * rate;
        if (st->tokens > p->bucket_burst)
            st->tokens = p->bucket_burst;
        st->refilled_ns = s->now;
        ok = st->tokens >= 1.0;
        if (ok) {
            st->tokens -= 1.0;
            hold = (int64_t)(p->service_ms * SIM_NS_PER_MS);
        }
    }
    long bin = s->now / BIN_NS;
    if (bin < st->nbins)
        (ok ? st->ok_bins : st->rej_bins)[bin]++;
    if (sim_heap_push(&s->heap, s->now + hold + travel, EV_REPLY, ev->who,
                      ev->arg | (ok ? 0 : (int64_t)1 << 40)) != 0)
        abort();
}

/* Sum of bins [from, from + n) of v. */
static long bins_sum(const long *v, long nbins, long from, long n)
{
    long sum = 0;
    for (long b = from; b < from + n && b < nbins; b++)
        sum += v[b];
    return sum;
}

int sim_run_capacity(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    capacity_state st = {0};
    int rc = -1;
    int clients = p->clients > 0 ? p->clients : 200;

    if (sim_init(&s, cfg, p, 1, clients) != 0)
        return -1;
    st.end_ns = (int64_t)(p->duration_s * SIM_NS_PER_S);
    st.third_ns = st.end_ns / 3;
    st.nbins = (long)(st.end_ns / BIN_NS) + 20;
    st.ok_bins = calloc((size_t)st.nbins, sizeof(long));
    st.rej_bins = calloc((size_t)st.nbins, sizeof(long));
    if (st.ok_bins == NULL || st.rej_bins == NULL)
        goto fail;
    st.tokens = p->bucket_burst;
    s.sc = &st;
    s.send = capacity_send;
    s.done = capacity_done;
    for (int c = 0; c < clients; c++)
        sim_call_start(&s, c, 0);
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev)) {
        s.now = ev.t;
        if (s.now > st.end_ns + 60 * SIM_NS_PER_S)
            break; /* bounded: a minute past the end */
        if (!st.cut_seen && s.now >= st.third_ns) {
            st.cut_seen = true;
            st.inflight_at_cut = st.inflight;
        }
        if (sim_handle(&s, &ev))
            continue;
        if (ev.kind == EV_AT_SERVER) {
            at_server(&s, &ev);
        } else if (ev.kind == EV_FREE) {
            st.busy--;
        } else if (ev.kind == EV_REPLY) {
            bool rejected = (ev.arg >> 40) & 1;
            uint32_t id = (uint32_t)(ev.arg & 0xffffffff);
            if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                continue;
            st.inflight--;
            sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, rejected ? 429 : 200), -1);
        }
    }
    long third = (long)(st.third_ns / BIN_NS), per_s = SIM_NS_PER_S / BIN_NS;
    double half = capacity_hz(p, &st, st.third_ns), full = capacity_hz(p, &st, 0);
    /* settled: from this bin on, every 1 s refuses no more than the policy's own steady
     * state (the last half of the halved third, with room for one more) or 5% of the
     * halved capacity, whichever is more */
    double steady = (double)bins_sum(st.rej_bins, st.nbins, third + third / 2, third - third / 2) /
                    ((double)(third - third / 2) / per_s);
    double calm = 1.5 * steady + 1 > 0.05 * half ? 1.5 * steady + 1 : 0.05 * half;
    long settle = -1;
    for (long b = third; b + per_s <= 2 * third; b++) {
        bool quiet = true;
        for (long k = b; k + per_s <= 2 * third && quiet; k++)
            quiet = (double)bins_sum(st.rej_bins, st.nbins, k, per_s) <= calm;
        if (quiet) {
            settle = b;
            break;
        }
    }
    r->settle_s = settle >= 0 ? (double)(settle - third) * BIN_NS / SIM_NS_PER_S : INFINITY;
    r->extra_rej = (double)bins_sum(st.rej_bins, st.nbins, third,
                                    (settle >= 0 ? settle : 2 * third) - third);
    r->window = (double)st.inflight_at_cut;
    long up = -1;
    for (long b = 2 * third; b + per_s <= 3 * third; b++)
        if ((double)bins_sum(st.ok_bins, st.nbins, b, per_s) >= 0.9 * full) {
            up = b + per_s;
            break;
        }
    r->up_s = up >= 0 ? (double)(up - 2 * third) * BIN_NS / SIM_NS_PER_S : INFINITY;
    double span = (double)st.third_ns / SIM_NS_PER_S;
    r->use_1 = (double)bins_sum(st.ok_bins, st.nbins, 0, third) / span / full;
    r->use_2 = (double)bins_sum(st.ok_bins, st.nbins, third, third) / span / half;
    r->use_3 = (double)bins_sum(st.ok_bins, st.nbins, 2 * third, third) / span / full;
    r->attempts = (double)s.attempts;
    r->ops = (double)(bins_sum(st.ok_bins, st.nbins, 0, st.nbins));
    r->throttled = (double)bins_sum(st.rej_bins, st.nbins, 0, st.nbins);
    r->wasted_pct = s.attempts ? 100.0 * r->throttled / (double)s.attempts : 0;
    rc = 0;
fail:
    free(st.ok_bins);
    free(st.rej_bins);
    sim_free(&s);
    return rc;
}
