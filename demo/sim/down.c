/*
 * down (beyond the articles): `clients` programs fetch `ops` items between
 * them, each one item after another (processes sharing the destination's
 * host-wide state), from a server that answers 503 without Retry-After from
 * outage_at_s for outage_for_s, and 200 after service_ms otherwise; a
 * request travels travel_ms each way.  The outage: 8 programs x 100
 * items, down 5 s from the start.  An item fails when its call is handed
 * back failed and the program does not try it again (--program-retries N:
 * the program retries a call handed back failed N times, after 1, 2, 4...
 * s, as curl --retry does).  With --clients 1 --ops 1 and an outage longer
 * than the run: how a lone call to a dead server ends, and when.
 *
 * Columns: the common ones (completion: when the last item ended, failed or
 * not; optimum: the outage's end, when it starts at 0, plus a client's
 * items one round trip each; throttled: the 503s), and failed.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_REPLY };

typedef struct down_state {
    long next_op, finished, failed, throttled;
    int64_t last;
    double *latency;
} down_state;

static bool is_down(const sim_params *p, int64_t t)
{
    double s = (double)t / SIM_NS_PER_S;
    return s >= p->outage_at_s && s < p->outage_at_s + p->outage_for_s;
}

static void down_send(sim *s, int c)
{
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void down_done(sim *s, int c, bool ok)
{
    down_state *st = s->sc;

    st->latency[st->finished++] = (double)(s->now - s->calls[c].began_ns) / SIM_NS_PER_S;
    if (!ok)
        st->failed++;
    st->last = s->now;
    if (st->next_op < s->p->ops) {
        st->next_op++;
        sim_call_start(s, c, 0);
    }
}

/* Arg of a reply: attempt id, and bit 40 for a 503. */
static void at_server(sim *s, const sim_event *ev)
{
    down_state *st = s->sc;
    const sim_params *p = s->p;
    int64_t back = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    bool down = is_down(p, s->now);

    if (down)
        st->throttled++;
    else
        back += (int64_t)(p->service_ms * SIM_NS_PER_MS);
    if (sim_heap_push(&s->heap, s->now + back, EV_REPLY, ev->who,
                      ev->arg | (down ? (int64_t)1 << 40 : 0)) != 0)
        abort();
}

int sim_run_down(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    down_state st = {0};
    int clients = p->clients < p->ops ? p->clients : (int)p->ops;
    int rc = -1;

    if (sim_init(&s, cfg, p, 1, clients) != 0)
        return -1;
    st.latency = calloc((size_t)p->ops, sizeof(double));
    if (st.latency == NULL)
        goto fail;
    s.sc = &st;
    s.send = down_send;
    s.done = down_done;
    st.next_op = clients;
    for (int c = 0; c < clients; c++)
        sim_call_start(&s, c, 0);
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev)) {
        s.now = ev.t;
        if (s.now > (int64_t)(p->duration_s * SIM_NS_PER_S))
            break; /* the run's bound: items not ended by then count as not ended */
        if (sim_handle(&s, &ev))
            continue;
        if (ev.kind == EV_AT_SERVER) {
            at_server(&s, &ev);
        } else if (ev.kind == EV_REPLY) {
            uint32_t id = (uint32_t)(ev.arg & 0xffffffffu);
            bool down = (ev.arg >> 40) & 1;
            if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                continue;
            sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, down ? 503 : 200), -1);
        }
        if (s.attempts > (uint64_t)100 * (uint64_t)p->ops)
            break;
    }
    double rtt = (2 * p->travel_ms + p->service_ms) / 1000.0;
    r->ops = (double)p->ops;
    r->attempts = (double)s.attempts;
    r->throttled = (double)st.throttled;
    r->failed = (double)st.failed + (double)(p->ops - st.finished); /* not ended: failed too */
    r->wasted_pct = s.attempts ? 100.0 * (double)st.throttled / (double)s.attempts : 0;
    r->completion_s = st.finished == p->ops ? (double)st.last / SIM_NS_PER_S : INFINITY;
    r->optimum_s = (p->outage_at_s == 0 ? p->outage_for_s : 0) +
                   ceil((double)p->ops / clients) * rtt;
    r->ratio = r->completion_s / r->optimum_s;
    r->p50_s = sim_percentile(st.latency, (size_t)st.finished, 50);
    r->p99_s = sim_percentile(st.latency, (size_t)st.finished, 99);
    rc = 0;
fail:
    free(st.latency);
    sim_free(&s);
    return rc;
}
