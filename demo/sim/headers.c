/*
 * headers: `clients` sequential clients share `ops`
 * requests (one destination's state, as threads or processes sharing it
 * host-wide; --independent: each its own, as processes with
 * BACKOFF_SHARE=process) to one server that meters them with a token bucket (bucket_rate
 * per second, bucket_burst tokens, full at the start) or a fixed window
 * (window_requests per window_s seconds, windows aligned to the epoch as
 * GitHub's reset instants are whole seconds), and tells its quota on every
 * answer in one dialect, exactly as ratelimit-server does (demo/rl_lines.h:
 * formatted as header lines and read back through bo_ratelimit's parser).
 * A rejection (--reject-status: 429, 403 or 503) carries its wait in one
 * form (--retry-after-form), read back through bo_rl_headers_retry_after;
 * the answer is classified by bo_classify (a 403 whose headers say the
 * quota is spent is a throttle).
 * Optimum, the quota's own: bucket (ops - burst) / rate; window: the last
 * request's window start plus the round trips its clients need for that
 * window's share (windows start at 0, a window's requests go at once);
 * --phase-s P starts the clients P seconds into a window (the optimum then
 * counts from the start of that window).
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_ratelimit.h"
#include "../rl_lines.h"

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_REPLY };

/* Virtual time 0 is this epoch second (a multiple of every window tried). */
#define EPOCH0_S 1800000000LL

/* What one answer said, per call: the quota, the wait, the status. */
typedef struct hdr_reply {
    bo_rl_quota quota;
    bool has_quota;
    bool exhausted;
    int status;
    int64_t hint_ns;        /* < 0: none */
} hdr_reply;

typedef struct hdr_state {
    double tokens;
    int64_t refilled_ns;
    int64_t window_start_ns, window_len_ns;
    long used;                 /* in the current window */
    long next_op, finished, throttled;
    int64_t last;
    double *latency;
    hdr_reply *reply;          /* per call: the last answer */
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
        sim_call_start(s, c, s->p->independent ? c : 0);
    }
}

/* The answer's header lines as the server writes them, read back through the parser. */
static void read_back(const sim_params *p, int64_t now, const rl_quota_state *st, bool rejected,
                      double wait_s, hdr_reply *out)
{
    rl_line l[2 * RL_LINES_MAX];
    int64_t wall_ns = EPOCH0_S * SIM_NS_PER_S + now;
    int n = rl_quota_lines(p->dialect, st, l);
    bo_rl_headers h;

    if (rejected && wait_s >= 0)
        n += rl_wait_lines(p->wait_form, wait_s, st->wall_ms, l + n);
    bo_rl_headers_reset(&h);
    for (int i = 0; i < n; i++) {
        char line[160];
        int k = snprintf(line, sizeof line, "%s: %s\r\n", l[i].name, l[i].value);
        bo_rl_header_line(&h, line, (size_t)k);
    }
    out->has_quota = bo_rl_headers_quota(&h, wall_ns, &out->quota);
    out->hint_ns = rejected ? bo_rl_headers_retry_after(&h, wall_ns) : -1;
    out->exhausted = bo_rl_headers_exhausted(&h);
    out->status = rejected ? p->reject_status : 200;
}

static void at_server(sim *s, const sim_event *ev)
{
    hdr_state *st = s->sc;
    const sim_params *p = s->p;
    int64_t travel = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    double wait_s = -1;
    bool rejected = false;
    rl_quota_state q = {0};

    q.wall_ms = (EPOCH0_S * SIM_NS_PER_S + s->now) / SIM_NS_PER_MS;
    if (p->limiter == SIM_LIMITER_WINDOW) {
        while (s->now >= st->window_start_ns + st->window_len_ns) {
            st->window_start_ns += st->window_len_ns;
            st->used = 0;
        }
        q.reset_s = (double)(st->window_start_ns + st->window_len_ns - s->now) / SIM_NS_PER_S;
        if (st->used < (long)p->window_requests) {
            st->used++;
            travel += (int64_t)(p->service_ms * SIM_NS_PER_MS);
        } else {
            rejected = true;
            wait_s = q.reset_s;
        }
        q.limit = (long)p->window_requests;
        q.remaining = q.limit - st->used;
        q.window_s = (long)p->window_s;
        q.name = "window";
    } else {
        st->tokens += (double)(s->now - st->refilled_ns) / SIM_NS_PER_S * p->bucket_rate;
        if (st->tokens > p->bucket_burst)
            st->tokens = p->bucket_burst;
        st->refilled_ns = s->now;
        if (st->tokens >= 1.0) {
            st->tokens -= 1.0;
            travel += (int64_t)(p->service_ms * SIM_NS_PER_MS);
        } else {
            rejected = true;
            wait_s = (1.0 - st->tokens) / p->bucket_rate;
        }
        q.limit = (long)p->bucket_burst;
        q.remaining = (long)floor(st->tokens);
        q.reset_s = (p->bucket_burst - st->tokens) / p->bucket_rate;
        q.window_s = (long)ceil(p->bucket_burst / p->bucket_rate);
        q.name = "bucket";
    }
    st->throttled += rejected;
    int c = ev->who;
    read_back(p, s->now, &q, rejected, wait_s, &st->reply[c]);
    if (sim_heap_push(&s->heap, s->now + travel, EV_REPLY, c, ev->arg) != 0)
        abort();
}

/* The answer's outcome, as the shim classifies it (the 403 rule included). */
static bo_outcome reply_outcome(const bo_config *cfg, const hdr_reply *r)
{
    bo_attempt a;
    memset(&a, 0, sizeof a);
    a.curl_code = BO_CURLE_OK;
    a.http_status = r->status;
    a.method = "GET";
    a.request_sent = true;
    a.quota_exhausted = r->exhausted;
    return bo_classify(cfg, &a);
}

int sim_run_headers(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    hdr_state st = {0};
    int rc = -1;
    int n = p->clients;

    if (sim_init(&s, cfg, p, p->independent ? n : 1, n) != 0)
        return -1;
    st.latency = calloc((size_t)p->ops, sizeof(double));
    st.reply = calloc((size_t)n, sizeof(hdr_reply));
    if (st.latency == NULL || st.reply == NULL)
        goto fail;
    st.tokens = p->bucket_burst;
    st.window_len_ns = (int64_t)(p->window_s * SIM_NS_PER_S);
    st.window_start_ns = -(int64_t)(p->phase_s * SIM_NS_PER_S);
    s.sc = &st;
    s.send = hdr_send;
    s.done = hdr_done;
    for (int c = 0; c < n && st.next_op < p->ops; c++) {
        st.next_op++;
        sim_call_start(&s, c, p->independent ? c : 0);
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
            sim_call *sc = &s.calls[ev.who];
            const hdr_reply *rep = &st.reply[ev.who];
            if (id != sc->attempt_id || !sc->active)
                continue;
            bo_outcome out = reply_outcome(cfg, rep);
            if (rep->has_quota)
                bo_dest_note_quota(&s.dests[sc->dest].d, cfg, &sc->call, &rep->quota, out,
                                   rep->hint_ns, s.now, &s.rng);
            sim_attempt_done(&s, ev.who, out, rep->hint_ns);
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
    if (p->limiter == SIM_LIMITER_WINDOW) {
        /* the last request goes in window (ops - 1) / W, after its share of
         * that window's requests, a round trip each per client */
        long w = (long)p->window_requests, last = (p->ops - 1) % w + 1;
        double rtt = 2 * p->travel_ms / 1000.0 + p->service_ms / 1000.0;
        r->optimum_s = (double)((p->ops - 1) / w) * p->window_s +
                       ceil((double)last / n) * rtt - p->phase_s;
    } else {
        r->optimum_s = ((double)p->ops - p->bucket_burst) / p->bucket_rate;
    }
    r->ratio = r->completion_s / r->optimum_s;
    r->p50_s = sim_percentile(st.latency, (size_t)st.finished, 50);
    r->p99_s = sim_percentile(st.latency, (size_t)st.finished, 99);
    rc = 0;
fail:
    free(st.latency);
    free(st.reply);
    sim_free(&s);
    return rc;
}
