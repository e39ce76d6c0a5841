/*
 * pacing (002): one sequential client makes `ops` requests, each after the
 * previous one finished, against a token bucket of bucket_rate per second
 * holding at most bucket_burst tokens (full at the start).  A request that
 * finds no token is answered 429 with Retry-After: the whole seconds until
 * the next token, rounded up (at least 1), as HTTP allows no fractions.
 * Optimum: ops / bucket_rate.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_REPLY };

typedef struct pacing_state {
    double tokens;
    int64_t refilled_ns;
    long next_op, finished, throttled;
    int64_t last;
    double *latency;
} pacing_state;

static void pacing_send(sim *s, int c)
{
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void pacing_done(sim *s, int c, bool ok)
{
    pacing_state *st = s->sc;
    (void)ok;
    st->latency[st->finished++] = (double)(s->now - s->calls[c].began_ns) / SIM_NS_PER_S;
    st->last = s->now;
    if (st->next_op < s->p->ops) {
        st->next_op++;
        sim_call_start(s, c, 0);
    }
}

/* Arg of a reply: attempt id, and Retry-After in whole seconds (0: success). */
static void at_server(sim *s, const sim_event *ev)
{
    pacing_state *st = s->sc;
    const sim_params *p = s->p;
    int64_t travel = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    int64_t ra = 0;

    st->tokens += (double)(s->now - st->refilled_ns) / SIM_NS_PER_S * p->bucket_rate;
    if (st->tokens > p->bucket_burst)
        st->tokens = p->bucket_burst;
    st->refilled_ns = s->now;
    if (st->tokens >= 1.0) {
        st->tokens -= 1.0;
        travel += (int64_t)(p->service_ms * SIM_NS_PER_MS);
    } else {
        ra = (int64_t)ceil((1.0 - st->tokens) / p->bucket_rate);
        if (ra < 1)
            ra = 1;
        st->throttled++;
    }
    if (sim_heap_push(&s->heap, s->now + travel, EV_REPLY, ev->who, ev->arg | (ra << 32)) != 0)
        abort();
}

int sim_run_pacing(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    pacing_state st = {0};
    int rc = -1;

    if (sim_init(&s, cfg, p, 1, 1) != 0)
        return -1;
    st.latency = calloc((size_t)p->ops, sizeof(double));
    if (st.latency == NULL)
        goto fail;
    st.tokens = p->bucket_burst;
    s.sc = &st;
    s.send = pacing_send;
    s.done = pacing_done;
    st.next_op = 1;
    sim_call_start(&s, 0, 0);
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev)) {
        s.now = ev.t;
        if (sim_handle(&s, &ev))
            continue;
        if (ev.kind == EV_AT_SERVER) {
            at_server(&s, &ev);
        } else if (ev.kind == EV_REPLY) {
            uint32_t id = (uint32_t)(ev.arg & 0xffffffff);
            int64_t ra = ev.arg >> 32;
            if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                continue;
            sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, ra ? 429 : 200),
                             ra ? ra * SIM_NS_PER_S : -1);
        }
        /* Bounded: an hour of virtual time, or a set number of attempts per operation. */
        if (s.now > (int64_t)3600 * SIM_NS_PER_S || s.attempts > (uint64_t)100 * (uint64_t)p->ops)
            break;
    }
    r->ops = (double)p->ops;
    r->attempts = (double)s.attempts;
    r->throttled = (double)st.throttled;
    r->wasted_pct =
        s.attempts ? 100.0 * (double)(s.attempts - (uint64_t)st.finished) / (double)s.attempts : 0;
    r->completion_s = st.finished == p->ops ? (double)st.last / SIM_NS_PER_S : INFINITY;
    r->optimum_s = (double)p->ops / p->bucket_rate;
    r->ratio = r->completion_s / r->optimum_s;
    r->p50_s = sim_percentile(st.latency, (size_t)st.finished, 50);
    r->p99_s = sim_percentile(st.latency, (size_t)st.finished, 99);
    rc = 0;
fail:
    free(st.latency);
    sim_free(&s);
    return rc;
}
