/*
 * room: a server that never refuses, where a policy can only cost time.
 *
 * Without --held: `clients` threads share one destination and make `ops`
 * requests in all, each thread its next as soon as the last is answered;
 * every request takes service_ms at the server (200) and travel_ms (0.1)
 * each way.  Optimum: the threads' own pace, ceil(ops / clients) requests
 * of service + 2 x travel each, which is also what `none` takes.  With
 * --warm the same run a second time on the state the first left.
 *
 * With --held N: N requests that the server holds for held_s (25 s: long
 * polls, slow answers) leave at once; from 50 ms on, one quick request
 * (service_ms) every 250 ms until the held ones end.  held_wait_s is the
 * longest a quick request waited for admission.  --abandon: the held
 * requests never end as far as the policy knows (a program that closed
 * their sockets behind the library's back), and the quick ones go on for
 * held_s all the same.  With --warm, 20 quick requests first, one after
 * the other, so that the destination knows its round trip.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_REPLY, EV_QUICK };

typedef struct room_state {
    long next_op, finished;
    int64_t last_done, t0;
    int held;               /* calls [0, held) are the held ones */
    bool abandon;
    int64_t held_ns, quick_every_ns;
    int64_t max_wait;       /* longest admission wait of a quick request */
    int nquick, quick_next; /* quick calls: [held, held + nquick) */
    int warmups;            /* quick requests left to learn the round trip */
} room_state;

static bool is_held(const room_state *st, int c)
{
    return c < st->held;
}

static void room_send(sim *s, int c)
{
    room_state *st = s->sc;
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);

    if (st->held > 0 && !is_held(st, c)) {
        int64_t waited = s->now - s->calls[c].began_ns;
        if (st->warmups == 0 && waited > st->max_wait)
            st->max_wait = waited;
    }
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void room_done(sim *s, int c, bool ok)
{
    room_state *st = s->sc;

    (void)ok;
    st->finished++;
    st->last_done = s->now;
    if (st->held > 0) {
        if (st->warmups > 0 && --st->warmups > 0)
            sim_call_start(s, c, 0); /* the next warm-up request, on the same slot */
        return;
    }
    if (st->next_op < s->p->ops) {
        st->next_op++;
        sim_call_start(s, c, 0);
    }
}

static void at_server(sim *s, const sim_event *ev)
{
    room_state *st = s->sc;
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);
    int64_t hold = (int64_t)(s->p->service_ms * SIM_NS_PER_MS);

    if (is_held(st, ev->who)) {
        if (st->abandon)
            return; /* the answer never reaches the policy */
        hold = st->held_ns;
    }
    if (sim_heap_push(&s->heap, s->now + hold + travel, EV_REPLY, ev->who, ev->arg) != 0)
        abort();
}

/* The held requests, then the quick ones every quick_every_ns from 50 ms on. */
static void start_held(sim *s, room_state *st)
{
    st->t0 = s->now;
    for (int c = 0; c < st->held; c++)
        sim_call_start(s, c, 0);
    if (sim_heap_push(&s->heap, s->now + 50 * SIM_NS_PER_MS, EV_QUICK, 0, 0) != 0)
        abort();
}

int sim_run_room(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    sim s;
    room_state st = {0};
    int rc = -1;
    int clients = p->clients > 0 ? p->clients : 1;
    int ncalls;

    st.held = p->held;
    st.abandon = p->abandon;
    st.held_ns = (int64_t)(p->held_s * SIM_NS_PER_S);
    st.quick_every_ns = 250 * SIM_NS_PER_MS;
    if (st.held > 0) {
        st.nquick = (int)(st.held_ns / st.quick_every_ns) + 2;
        ncalls = st.held + st.nquick + 1;
    } else {
        ncalls = clients;
    }
    if (sim_init(&s, cfg, p, 1, ncalls) != 0)
        return -1;
    s.sc = &st;
    s.send = room_send;
    s.done = room_done;
    for (int pass = p->warm && st.held == 0 ? 0 : 1; pass < 2; pass++) {
        if (st.held > 0) {
            if (p->warm) {
                st.warmups = 20;
                sim_call_start(&s, ncalls - 1, 0);
            } else {
                start_held(&s, &st);
            }
        } else {
            st.t0 = s.now;
            st.next_op = 0;
            st.finished = 0;
            s.attempts = 0;
            for (int c = 0; c < clients && st.next_op < p->ops; c++, st.next_op++)
                sim_call_start(&s, c, 0);
        }
        sim_event ev;
        while (sim_heap_pop(&s.heap, &ev)) {
            s.now = ev.t;
            if (s.now - st.t0 > (int64_t)3600 * SIM_NS_PER_S)
                break; /* bounded: an hour of virtual time */
            if (sim_handle(&s, &ev))
                continue;
            if (ev.kind == EV_AT_SERVER) {
                at_server(&s, &ev);
            } else if (ev.kind == EV_QUICK) {
                if (st.quick_next < st.nquick && s.now - st.t0 < st.held_ns) {
                    sim_call_start(&s, st.held + st.quick_next++, 0);
                    if (sim_heap_push(&s.heap, s.now + st.quick_every_ns, EV_QUICK, 0, 0) != 0)
                        abort();
                }
            } else if (ev.kind == EV_REPLY) {
                uint32_t id = (uint32_t)(ev.arg & 0xffffffff);
                if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                    continue;
                sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, 200), -1);
            }
            if (st.held > 0 && p->warm && st.warmups == 0 && st.t0 == 0 && st.quick_next == 0 &&
                s.calls[ncalls - 1].active == false) {
                start_held(&s, &st); /* the round trip is known: now the held ones */
            }
        }
        if (st.held == 0 && pass == 0)
            s.now += SIM_NS_PER_S; /* the second run a second after the first */
    }
    int per_client = (int)ceil((double)p->ops / clients);
    double per = (p->service_ms + 2 * p->travel_ms) / 1000.0;
    r->ops = st.held > 0 ? (double)st.quick_next : (double)p->ops;
    r->attempts = (double)s.attempts;
    if (st.held > 0) {
        r->held_wait_s = (double)st.max_wait / SIM_NS_PER_S;
        for (int c = st.held; c < st.held + st.quick_next; c++)
            if (s.calls[c].active && s.calls[c].call.attempts == 0)
                r->held_wait_s = INFINITY; /* still not admitted an hour later */
        r->completion_s = NAN;
    } else {
        r->completion_s = st.finished == p->ops ? (double)(st.last_done - st.t0) / SIM_NS_PER_S
                                                : INFINITY;
        r->optimum_s = per_client * per;
        r->ratio = r->completion_s / r->optimum_s;
    }
    rc = 0;
    sim_free(&s);
    return rc;
}
