/*
 * outage (003): `clients` clients each think for an exponential time (mean
 * think_ms), then make one call, over and over.  The server answers after
 * service_ms while at most 30 requests are being served, and after
 * service_ms x 1.05^((c - 30) / 15) with c requests being served; the
 * latency is fixed when a request starts being served.  The client gives an
 * attempt timeout_ms; a timed-out request still occupies the server until it
 * is served (as with 003's SIGSTOP backlog).  The server is stopped from
 * outage_at_s for outage_for_s: requests arriving meanwhile wait, and all
 * start being served at once when it resumes, up to `backlog` of them
 * (default 1000); later ones never reach it (a stopped process accepts
 * nothing: only requests on connections that already exist, plus the
 * kernel's accept queue, are waiting).  003's server log shows about 1,040
 * concurrent requests in the first second after SIGCONT, hence 1000.
 *
 * Measures (successes are counted when the client receives them, in 1 s
 * buckets):
 *   pre_rate   mean successes per second from 5 s to the outage;
 *   recovery_s seconds from the server's return to the start of the first
 *              bucket whose successes reach 90% of pre_rate and stay there:
 *              the mean of it and every later bucket is >= 90% of pre_rate
 *              and no later bucket falls below 50% of it (Poisson noise of
 *              about 10% per bucket rules out "every bucket >= 90%");
 *              -1 ("never") when no bucket qualifies;
 *   post_rate  mean successes per second over the last 10 s;
 *   peak_concurrency, down_attempts_per_s (attempts sent while stopped,
 *   per second of the outage).
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_THINK_DONE = SIM_EV_SCENARIO, EV_ARRIVE, EV_SERVED, EV_TIMEOUT, EV_RESUME };

#define CONC_LIMIT 30
#define MAX_LATENCY_S 1e6

typedef struct outage_state {
    int conc, peak;
    int *stopped;          /* requests waiting while the server is stopped: (client) */
    int64_t *stopped_arg;
    size_t nstopped, capstopped;
    long *buckets;         /* successes per second */
    int nbuckets;
    long down_attempts;
    double *latency;
    size_t nlat, caplat;
    int64_t down_from, down_to, end;
} outage_state;

static void push_or_die(sim *s, int64_t t, int kind, int who, int64_t arg)
{
    if (sim_heap_push(&s->heap, t, kind, who, arg) != 0)
        abort();
}

static void think(sim *s, int c)
{
    double ms = bo_rng_exponential(&s->rng, s->p->think_ms);
    push_or_die(s, s->now + (int64_t)(ms * SIM_NS_PER_MS), EV_THINK_DONE, c, 0);
}

static void outage_send(sim *s, int c)
{
    outage_state *st = s->sc;
    uint32_t id = s->calls[c].attempt_id;

    if (s->now >= st->down_from && s->now < st->down_to)
        st->down_attempts++;
    push_or_die(s, s->now, EV_ARRIVE, c, id);
    push_or_die(s, s->now + (int64_t)(s->p->timeout_ms * SIM_NS_PER_MS), EV_TIMEOUT, c, id);
}

static void outage_done(sim *s, int c, bool ok)
{
    outage_state *st = s->sc;

    if (ok) {
        int b = (int)(s->now / SIM_NS_PER_S);
        if (b < st->nbuckets)
            st->buckets[b]++;
        if (st->nlat < st->caplat)
            st->latency[st->nlat++] = (double)(s->now - s->calls[c].began_ns) / SIM_NS_PER_S;
    }
    think(s, c);
}

/* The server starts serving a request now; its latency is fixed here. */
static void serve(sim *s, int c, int64_t arg)
{
    outage_state *st = s->sc;
    double lat_s = s->p->service_ms / 1000.0;

    st->conc++;
    if (st->conc > st->peak)
        st->peak = st->conc;
    if (st->conc > CONC_LIMIT)
        lat_s *= pow(1.05, (double)(st->conc - CONC_LIMIT) / 15.0);
    if (!(lat_s < MAX_LATENCY_S))
        lat_s = MAX_LATENCY_S;
    push_or_die(s, s->now + (int64_t)(lat_s * SIM_NS_PER_S), EV_SERVED, c, arg);
}

static int stop_queue(outage_state *st, int c, int64_t arg)
{
    if (st->nstopped == st->capstopped) {
        size_t cap = st->capstopped ? st->capstopped * 2 : 4096;
        int *a = realloc(st->stopped, cap * sizeof(int));
        if (a == NULL)
            return -1;
        st->stopped = a;
        int64_t *b = realloc(st->stopped_arg, cap * sizeof(int64_t));
        if (b == NULL)
            return -1;
        st->stopped_arg = b;
        st->capstopped = cap;
    }
    st->stopped[st->nstopped] = c;
    st->stopped_arg[st->nstopped++] = arg;
    return 0;
}

static void measure(const outage_state *st, const sim_params *p, sim_result *r)
{
    int from = p->outage_at_s > 5 ? 5 : 0;
    int to = (int)p->outage_at_s;
    int back = (int)ceil(p->outage_at_s + p->outage_for_s);
    int end = st->nbuckets;
    double pre = 0, post = 0;

    for (int b = from; b < to; b++)
        pre += (double)st->buckets[b];
    pre = to > from ? pre / (to - from) : 0;
    int tail = end - 10 > back ? end - 10 : back;
    for (int b = tail; b < end; b++)
        post += (double)st->buckets[b];
    post = end > tail ? post / (end - tail) : 0;
    r->pre_rate = pre;
    r->post_rate = post;
    r->recovery_s = -1;
    for (int b = back; b < end && pre > 0; b++) {
        if ((double)st->buckets[b] < 0.9 * pre)
            continue;
        double sum = 0;
        bool low = false;
        for (int k = b; k < end; k++) {
            sum += (double)st->buckets[k];
            if ((double)st->buckets[k] < 0.5 * pre)
                low = true;
        }
        if (!low && sum / (end - b) >= 0.9 * pre) {
            r->recovery_s = b - (p->outage_at_s + p->outage_for_s);
            if (r->recovery_s < 0)
                r->recovery_s = 0;
            break;
        }
    }
}

int sim_run_outage(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    outage_state st = {0};
    int n = p->clients;
    int rc = -1;

    if (sim_init(&s, cfg, p, p->independent ? n : 1, n) != 0)
        return -1;
    st.nbuckets = (int)ceil(p->duration_s);
    st.buckets = calloc((size_t)st.nbuckets, sizeof(long));
    st.caplat = (size_t)(p->duration_s * n / (p->think_ms / 1000.0 + 0.001) * 2 + 1000);
    st.latency = calloc(st.caplat, sizeof(double));
    if (st.buckets == NULL || st.latency == NULL)
        goto fail;
    st.down_from = (int64_t)(p->outage_at_s * SIM_NS_PER_S);
    st.down_to = (int64_t)((p->outage_at_s + p->outage_for_s) * SIM_NS_PER_S);
    st.end = (int64_t)(p->duration_s * SIM_NS_PER_S);
    s.sc = &st;
    s.send = outage_send;
    s.done = outage_done;
    for (int c = 0; c < n; c++)
        think(&s, c);
    push_or_die(&s, st.down_to, EV_RESUME, 0, 0);
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev) && ev.t < st.end) {
        s.now = ev.t;
        if (sim_handle(&s, &ev))
            continue;
        uint32_t id = (uint32_t)ev.arg;
        sim_call *call = &s.calls[ev.who];
        switch (ev.kind) {
        case EV_THINK_DONE:
            sim_call_start(&s, ev.who, p->independent ? ev.who : 0);
            break;
        case EV_ARRIVE:
            if (s.now >= st.down_from && s.now < st.down_to) {
                if (st.nstopped < (size_t)p->backlog && stop_queue(&st, ev.who, ev.arg) != 0)
                    goto fail;
            } else {
                serve(&s, ev.who, ev.arg);
            }
            break;
        case EV_RESUME:
            for (size_t i = 0; i < st.nstopped; i++)
                serve(&s, st.stopped[i], st.stopped_arg[i]);
            st.nstopped = 0;
            break;
        case EV_SERVED:
            st.conc--;
            if (call->active && id == call->attempt_id && call->call.phase == BO_PHASE_ATTEMPT)
                sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, 200), -1);
            break;
        case EV_TIMEOUT:
            if (call->active && id == call->attempt_id && call->call.phase == BO_PHASE_ATTEMPT)
                sim_attempt_done(&s, ev.who, sim_outcome_timeout(cfg), -1);
            break;
        default:
            break;
        }
    }
    measure(&st, p, r);
    r->ops = (double)st.nlat;
    r->attempts = (double)s.attempts;
    r->wasted_pct =
        s.attempts ? 100.0 * ((double)s.attempts - (double)st.nlat) / (double)s.attempts : 0;
    r->completion_s = p->duration_s;
    r->optimum_s = p->duration_s;
    r->ratio = 1;
    r->p50_s = sim_percentile(st.latency, st.nlat, 50);
    r->p99_s = sim_percentile(st.latency, st.nlat, 99);
    r->peak_concurrency = st.peak;
    r->down_attempts_per_s = p->outage_for_s > 0 ? (double)st.down_attempts / p->outage_for_s : 0;
    rc = 0;
fail:
    free(st.buckets);
    free(st.latency);
    free(st.stopped);
    free(st.stopped_arg);
    sim_free(&s);
    return rc;
}
