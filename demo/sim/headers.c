/*
 * headers (issue 13): `clients` sequential clients share `ops` requests to
 * one server that meters them with a token bucket (bucket_rate per second,
 * bucket_burst tokens, full at the start) or a fixed window
 * (window_requests per window_s seconds, windows aligned to the epoch as
 * GitHub's reset instants are whole seconds), and tells its quota on every
 * answer in one dialect (none, x-ratelimit, ratelimit, draft), exactly as
 * ratelimit-server does: whole seconds, formatted as header lines and read
 * back through bo_ratelimit's parser.  A 429 carries Retry-After (whole
 * seconds until a token or the window's end, at least 1).
 * Optimum: bucket (ops - burst) / rate; window ops / (requests / window).
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_ratelimit.h"

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_REPLY };

/* Virtual time 0 is this epoch second (a multiple of every window tried). */
#define EPOCH0_S 1800000000LL

typedef struct hdr_state {
    double tokens;
    int64_t refilled_ns;
    int64_t window_start_ns, window_len_ns;
    long used;                 /* in the current window */
    long next_op, finished, throttled;
    int64_t last;
    double *latency;
    bo_rl_quota *reply_quota;  /* per call: what the last answer said */
    bool *reply_has_quota;
} hdr_state;

static void hdr_send(sim *s, int c)
{
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void hdr_done(sim *s, int c, bool ok)
{
    hdr_state *st = s->sc;
    (void)ok;
    st->latency[st->finished++] = (double)(s->now - s->calls[c].began_ns) / SIM_NS_PER_S;
    st->last = s->now;
    if (st->next_op < s->p->ops) {
        st->next_op++;
        sim_call_start(s, c, 0);
    }
}

static int64_t ceil_s(int64_t ns)
{
    return (ns + SIM_NS_PER_S - 1) / SIM_NS_PER_S;
}

/* The header lines ratelimit-server sends, read back through the parser. */
static bool quota_headers(const sim_params *p, int64_t now, long limit, long remaining,
                          int64_t reset_ns, long window_s, bo_rl_quota *q)
{
    char l[4][128];
    int n = 0;
    int64_t reset = ceil_s(reset_ns);

    switch (p->dialect) {
    case SIM_DIALECT_X:
        snprintf(l[n++], sizeof l[0], "x-ratelimit-limit: %ld\r\n", limit);
        snprintf(l[n++], sizeof l[0], "x-ratelimit-remaining: %ld\r\n", remaining);
        snprintf(l[n++], sizeof l[0], "x-ratelimit-reset: %lld\r\n",
                 (long long)(EPOCH0_S + ceil_s(now + reset_ns)));
        break;
    case SIM_DIALECT_RATELIMIT:
        snprintf(l[n++], sizeof l[0], "RateLimit-Limit: %ld\r\n", limit);
        snprintf(l[n++], sizeof l[0], "RateLimit-Remaining: %ld\r\n", remaining);
        snprintf(l[n++], sizeof l[0], "RateLimit-Reset: %lld\r\n", (long long)reset);
        break;
    case SIM_DIALECT_DRAFT:
        snprintf(l[n++], sizeof l[0], "RateLimit-Policy: \"default\";q=%ld;w=%ld\r\n", limit,
                 window_s);
        snprintf(l[n++], sizeof l[0], "RateLimit: \"default\";r=%ld;t=%lld\r\n", remaining,
                 (long long)reset);
        break;
    default:
        return false;
    }
    bo_rl_headers h;
    bo_rl_headers_reset(&h);
    for (int i = 0; i < n; i++)
        bo_rl_header_line(&h, l[i], strlen(l[i]));
    return bo_rl_headers_quota(&h, EPOCH0_S * SIM_NS_PER_S + now, q);
}

static void at_server(sim *s, const sim_event *ev)
{
    hdr_state *st = s->sc;
    const sim_params *p = s->p;
    int64_t travel = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    int64_t ra = 0, reset_ns;
    long limit, remaining, window_s;

    if (p->limiter == SIM_LIMITER_WINDOW) {
        while (s->now >= st->window_start_ns + st->window_len_ns) {
            st->window_start_ns += st->window_len_ns;
            st->used = 0;
        }
        reset_ns = st->window_start_ns + st->window_len_ns - s->now;
        if (st->used < (long)p->window_requests) {
            st->used++;
            travel += (int64_t)(p->service_ms * SIM_NS_PER_MS);
        } else {
            ra = ceil_s(reset_ns);
            st->throttled++;
        }
        limit = (long)p->window_requests;
        remaining = limit - st->used;
        window_s = (long)p->window_s;
    } else {
        st->tokens += (double)(s->now - st->refilled_ns) / SIM_NS_PER_S * p->bucket_rate;
        if (st->tokens > p->bucket_burst)
            st->tokens = p->bucket_burst;
        st->refilled_ns = s->now;
        if (st->tokens >= 1.0) {
            st->tokens -= 1.0;
            travel += (int64_t)(p->service_ms * SIM_NS_PER_MS);
        } else {
            ra = (int64_t)ceil((1.0 - st->tokens) / p->bucket_rate);
            st->throttled++;
        }
        if (ra < 0)
            ra = 0;
        if (ra == 0 && st->tokens < 0)
            ra = 1;
        limit = (long)p->bucket_burst;
        remaining = (long)floor(st->tokens);
        reset_ns = (int64_t)((p->bucket_burst - st->tokens) / p->bucket_rate * SIM_NS_PER_S);
        window_s = (long)ceil(p->bucket_burst / p->bucket_rate);
    }
    if (ra != 0 && ra < 1)
        ra = 1;
    int c = ev->who;
    st->reply_has_quota[c] = quota_headers(p, s->now, limit, remaining, reset_ns, window_s,
                                           &st->reply_quota[c]);
    if (sim_heap_push(&s->heap, s->now + travel, EV_REPLY, c, ev->arg | (ra << 32)) != 0)
        abort();
}

int sim_run_headers(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    hdr_state st = {0};
    int rc = -1;
    int n = p->clients;

    if (sim_init(&s, cfg, p, 1, n) != 0)
        return -1;
    st.latency = calloc((size_t)p->ops, sizeof(double));
    st.reply_quota = calloc((size_t)n, sizeof(bo_rl_quota));
    st.reply_has_quota = calloc((size_t)n, sizeof(bool));
    if (st.latency == NULL || st.reply_quota == NULL || st.reply_has_quota == NULL)
        goto fail;
    st.tokens = p->bucket_burst;
    st.window_len_ns = (int64_t)(p->window_s * SIM_NS_PER_S);
    s.sc = &st;
    s.send = hdr_send;
    s.done = hdr_done;
    for (int c = 0; c < n && st.next_op < p->ops; c++) {
        st.next_op++;
        sim_call_start(&s, c, 0);
    }
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
            sim_call *sc = &s.calls[ev.who];
            if (id != sc->attempt_id || !sc->active)
                continue;
            int64_t ra_ns = ra ? ra * SIM_NS_PER_S : -1;
            if (st.reply_has_quota[ev.who])
                bo_dest_note_quota(&s.dests[sc->dest].d, cfg, &sc->call, &st.reply_quota[ev.who],
                                   sim_outcome_http(cfg, ra ? 429 : 200), ra_ns, s.now, &s.rng);
            sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, ra ? 429 : 200), ra_ns);
        }
        if (s.now > (int64_t)3600 * SIM_NS_PER_S || s.attempts > (uint64_t)100 * (uint64_t)p->ops)
            break;
    }
    r->ops = (double)p->ops;
    r->attempts = (double)s.attempts;
    r->throttled = (double)st.throttled;
    r->wasted_pct =
        s.attempts ? 100.0 * (double)(s.attempts - (uint64_t)st.finished) / (double)s.attempts : 0;
    r->completion_s = st.finished == p->ops ? (double)st.last / SIM_NS_PER_S : INFINITY;
    if (p->limiter == SIM_LIMITER_WINDOW)
        r->optimum_s = (double)p->ops / (p->window_requests / p->window_s);
    else
        r->optimum_s = ((double)p->ops - p->bucket_burst) / p->bucket_rate;
    r->ratio = r->completion_s / r->optimum_s;
    r->p50_s = sim_percentile(st.latency, (size_t)st.finished, 50);
    r->p99_s = sim_percentile(st.latency, (size_t)st.finished, 99);
    rc = 0;
fail:
    free(st.latency);
    free(st.reply_quota);
    free(st.reply_has_quota);
    sim_free(&s);
    return rc;
}
