/*
 * burst (000) and fairness: `ops` operations arrive at `rate` per second
 * at one or more clients; the server admits max_busy requests at once; a
 * request travels travel_ms each way; a success holds a slot service_ms, a
 * rejection holds a slot error_ms (000: errors cost the server too) and is
 * answered 429 without Retry-After.
 *
 * Calibration: 000 says "the connection/request time is 100ms"; the
 * simulator charges travel_ms (100) on each way, so a success takes 700 ms
 * end to end.  That choice reproduces 000's AIMD figures (25 s, 2,085
 * attempts) within 10%; see tests/integration/test_sim_articles.sh.
 *
 * Clients: with --clients 1 (burst) all operations go through one
 * destination, as 000's single client; with several clients the operations
 * are dealt round-robin and --independent gives each its own bo_dest
 * (fairness: separate processes), otherwise they share one (threads).
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum { EV_ARRIVE = SIM_EV_SCENARIO, EV_AT_SERVER, EV_FREE, EV_REPLY };

typedef struct burst_state {
    int busy;
    double *latency;       /* per op, s */
    int64_t *arrival;      /* per op, ns */
    int64_t *finish;       /* per client: last completion, ns */
    long *done_per_client;
    long successes, throttled, finished;
    int64_t last_done;
    int clients;
} burst_state;

static void burst_send(sim *s, int op)
{
    int64_t travel = (int64_t)(s->p->travel_ms * SIM_NS_PER_MS);
    if (sim_heap_push(&s->heap, s->now + travel, EV_AT_SERVER, op, s->calls[op].attempt_id) != 0)
        abort();
}

static void burst_done(sim *s, int op, bool ok)
{
    burst_state *b = s->sc;
    int client = op % b->clients;

    (void)ok;
    b->latency[b->finished++] = (double)(s->now - b->arrival[op]) / SIM_NS_PER_S;
    b->last_done = s->now;
    b->finish[client] = s->now;
    b->done_per_client[client]++;
}

static void at_server(sim *s, const sim_event *ev)
{
    burst_state *b = s->sc;
    const sim_params *p = s->p;
    int64_t travel = (int64_t)(p->travel_ms * SIM_NS_PER_MS);
    bool ok = b->busy < p->max_busy;
    int64_t hold = (int64_t)((ok ? p->service_ms : p->error_ms) * SIM_NS_PER_MS);

    b->busy++;
    if (ok)
        b->successes++;
    else
        b->throttled++;
    if (sim_heap_push(&s->heap, s->now + hold, EV_FREE, 0, 0) != 0 ||
        sim_heap_push(&s->heap, s->now + hold + travel, EV_REPLY, ev->who,
                      ev->arg | (ok ? 0 : (int64_t)1 << 40)) != 0)
        abort();
}

/* Runs one burst-like simulation; fills r.  With p->warm the burst runs
 * twice, the second a second after the first ended, on the destination
 * state the first left, and r is the second's.  Returns 0, or -1 on failure. */
static int run(const bo_config *cfg, const sim_params *p, sim_result *r, int clients)
{
    sim s;
    burst_state b = {0};
    int ndests = p->independent ? clients : 1;
    int rc = -1;
    int64_t t0 = 0;

    if (sim_init(&s, cfg, p, ndests, (int)p->ops) != 0)
        return -1;
    b.clients = clients;
    b.latency = calloc((size_t)p->ops, sizeof(double));
    b.arrival = calloc((size_t)p->ops, sizeof(int64_t));
    b.finish = calloc((size_t)clients, sizeof(int64_t));
    b.done_per_client = calloc((size_t)clients, sizeof(long));
    if (!b.latency || !b.arrival || !b.finish || !b.done_per_client)
        goto fail;
    s.sc = &b;
    s.send = burst_send;
    s.done = burst_done;
    for (int pass = p->warm ? 0 : 1; pass < 2; pass++) {
        if (pass == 1 && p->warm) {
            t0 = s.now + SIM_NS_PER_S;
            b.successes = b.throttled = b.finished = 0;
            b.last_done = t0;
            for (int c = 0; c < clients; c++) {
                b.finish[c] = 0;
                b.done_per_client[c] = 0;
            }
            s.attempts = 0;
        }
        for (long i = 0; i < p->ops; i++) {
            b.arrival[i] = t0 + (int64_t)((double)i / p->rate * SIM_NS_PER_S);
            if (sim_heap_push(&s.heap, b.arrival[i], EV_ARRIVE, (int)i, 0) != 0)
                goto fail;
        }
        sim_event ev;
        while (sim_heap_pop(&s.heap, &ev)) {
            s.now = ev.t;
            if (sim_handle(&s, &ev))
                continue;
            switch (ev.kind) {
            case EV_ARRIVE:
                sim_call_start(&s, ev.who, p->independent ? ev.who % clients : 0);
                break;
            case EV_AT_SERVER:
                at_server(&s, &ev);
                break;
            case EV_FREE:
                b.busy--;
                break;
            case EV_REPLY: {
                bool rejected = (ev.arg >> 40) & 1;
                uint32_t id = (uint32_t)(ev.arg & 0xffffffffu);
                if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                    break;
                sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, rejected ? 429 : 200), -1);
                break;
            }
            default:
                break;
            }
            /* Bounded: an hour of virtual time, or a set number of attempts per operation. */
            if (s.now - t0 > (int64_t)3600 * SIM_NS_PER_S ||
                s.attempts > (uint64_t)100 * (uint64_t)p->ops)
                break;
        }
    }
    r->ops = (double)p->ops;
    r->attempts = (double)s.attempts;
    r->wasted_pct =
        s.attempts ? 100.0 * (double)(s.attempts - (uint64_t)b.successes) / (double)s.attempts : 0;
    r->completion_s = (double)(b.last_done - t0) / SIM_NS_PER_S;
    if (b.finished != p->ops)
        r->completion_s = INFINITY; /* not every op finished within the bound */
    r->optimum_s = (double)p->ops / p->max_busy * p->service_ms / 1000.0;
    r->ratio = r->optimum_s > 0 ? r->completion_s / r->optimum_s : 0;
    r->p50_s = sim_percentile(b.latency, (size_t)b.finished, 50);
    r->p99_s = sim_percentile(b.latency, (size_t)b.finished, 99);
    r->throttled = (double)b.throttled;
    {
        double sum = 0, sq = 0;
        for (int c = 0; c < clients; c++) {
            double x = b.finish[c] > t0 ? (double)b.done_per_client[c] /
                                              ((double)(b.finish[c] - t0) / SIM_NS_PER_S)
                                        : 0;
            sum += x;
            sq += x * x;
        }
        r->jain = sq > 0 ? sum * sum / (clients * sq) : 0;
    }
    rc = 0;
fail:
    free(b.latency);
    free(b.arrival);
    free(b.finish);
    free(b.done_per_client);
    sim_free(&s);
    return rc;
}

int sim_run_burst(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    return run(cfg, p, r, p->clients > 0 ? p->clients : 1);
}

int sim_run_fairness(const bo_config *cfg, const sim_params *p, sim_result *r)
{
    return run(cfg, p, r, p->clients > 0 ? p->clients : 4);
}
