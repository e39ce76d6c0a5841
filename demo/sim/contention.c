/*
 * contention (001): the AWS study's optimistic-concurrency model
 * (aws-samples/aws-arch-backoff-simulator).  One row with a version; each
 * of N clients reads the version, then writes with it, once; a write with a
 * stale version fails and that client backs off (the policy's delay) and
 * starts over with a new read.  Every message takes abs(normal(mean, sd)).
 * The counted "calls" are writes, as in the original; the time is when the
 * last write's answer arrives.
 *
 * One attempt (read + write) is one engine attempt.  A stale write means
 * another client got there first: for aimd sharing one window (clients as
 * threads) that is a throttle signal, the destination has less room than
 * the window assumed.
 *
 * Differences from the original, kept on purpose: the original's backoff
 * gets attempt numbers from 1 (first delay 2 x base); bo_schedule counts
 * retries from 0 (first delay base), as docs/DESIGN.md's schedules do.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_READ = SIM_EV_SCENARIO, EV_READ_RSP, EV_WRITE, EV_WRITE_RSP };

typedef struct cont_state {
    int64_t version;
    long calls, finished;
    int64_t last;
    double *latency;
} cont_state;

static int64_t net(sim *s)
{
    double ms = fabs(s->p->net_mean_ms + s->p->net_sd_ms * bo_rng_normal(&s->rng));
    return (int64_t)(ms * SIM_NS_PER_MS);
}

/* Packs an attempt id and a value into an event argument. */
static int64_t pack(uint32_t id, int64_t v)
{
    return (int64_t)id | (v << 32);
}

static void push_or_die(sim *s, int64_t t, int kind, int who, int64_t arg)
{
    if (sim_heap_push(&s->heap, t, kind, who, arg) != 0)
        abort();
}

static void cont_send(sim *s, int c)
{
    push_or_die(s, s->now + net(s), EV_READ, c, pack(s->calls[c].attempt_id, 0));
}

static void cont_done(sim *s, int c, bool ok)
{
    cont_state *st = s->sc;
    (void)ok;
    st->latency[st->finished++] = (double)(s->now - s->calls[c].began_ns) / SIM_NS_PER_S;
}

int sim_run_contention(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    cont_state st = {0};
    int n = p->clients;
    int rc = -1;

    if (sim_init(&s, cfg, p, p->independent ? n : 1, n) != 0)
        return -1;
    st.latency = calloc((size_t)n, sizeof(double));
    if (st.latency == NULL)
        goto fail;
    s.sc = &st;
    s.send = cont_send;
    s.done = cont_done;
    for (int c = 0; c < n; c++)
        sim_call_start(&s, c, p->independent ? c : 0);
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev)) {
        s.now = ev.t;
        if (sim_handle(&s, &ev))
            continue;
        uint32_t id = (uint32_t)(ev.arg & 0xffffffff);
        int64_t v = ev.arg >> 32;
        if (id != s.calls[ev.who].attempt_id)
            continue;
        switch (ev.kind) {
        case EV_READ: /* the server reads the row */
            push_or_die(&s, s.now + net(&s), EV_READ_RSP, ev.who, pack(id, st.version));
            break;
        case EV_READ_RSP: /* the client writes with the version it read */
            push_or_die(&s, s.now + net(&s), EV_WRITE, ev.who, pack(id, v));
            break;
        case EV_WRITE: {
            bool ok = v == st.version;
            st.calls++;
            if (ok)
                st.version++;
            push_or_die(&s, s.now + net(&s), EV_WRITE_RSP, ev.who, pack(id, ok));
            break;
        }
        case EV_WRITE_RSP: {
            bo_outcome o = {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
            if (!v) {
                o.verdict = BO_VERDICT_RETRY;
                o.signal = BO_SIGNAL_THROTTLE;
            }
            st.last = s.now;
            sim_attempt_done(&s, ev.who, o, -1);
            break;
        }
        default:
            break;
        }
        /* Bounded: an hour of virtual time, or a set number of attempts per operation. */
        if (s.now > (int64_t)3600 * SIM_NS_PER_S || s.attempts > (uint64_t)1000 * (uint64_t)n)
            break;
    }
    r->ops = n;
    r->calls = (double)st.calls;
    r->attempts = (double)s.attempts;
    r->throttled = (double)(st.calls - st.finished);
    r->wasted_pct = st.calls ? 100.0 * (double)(st.calls - st.finished) / (double)st.calls : 0;
    r->completion_s = st.finished == n ? (double)st.last / SIM_NS_PER_S : INFINITY;
    /* Writes succeed one after another: a read answer and a write between them. */
    r->optimum_s = (2.0 * n + 2.0) * p->net_mean_ms / 1000.0;
    r->ratio = r->optimum_s > 0 ? r->completion_s / r->optimum_s : 0;
    r->p50_s = sim_percentile(st.latency, (size_t)st.finished, 50);
    r->p99_s = sim_percentile(st.latency, (size_t)st.finished, 99);
    rc = 0;
fail:
    free(st.latency);
    sim_free(&s);
    return rc;
}
