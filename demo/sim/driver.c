/*
 * The client side shared by every scenario: a call seeks admission from its
 * destination's bo_dest, waits (FIFO, woken by completions or by the time
 * the engine gave) when refused, runs attempts through the scenario's send
 * hook, and hands each attempt's outcome back to bo_dest_complete.  This is
 * exactly the loop the shim runs under its mutex, on a virtual clock.
 *
 * Policy `none` never retries inside the engine; in the simulator the
 * *program* then retries at once (001's "no backoff"), as a fresh call.
 * With sim_params.program_retries (the matrix's last column) a program of
 * any other policy retries a failed call on its own, as curl --retry does.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_init(sim *s, const bo_config *cfg, const sim_params *p, int ndests, int ncalls)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->p = p;
    bo_rng_seed(&s->rng, p->seed);
    s->dests = calloc((size_t)ndests, sizeof(*s->dests));
    s->calls = calloc((size_t)ncalls, sizeof(*s->calls));
    if (s->dests == NULL || s->calls == NULL)
        goto fail;
    s->ndests = ndests;
    s->ncalls = ncalls;
    for (int i = 0; i < ndests; i++) {
        bo_dest_init(&s->dests[i].d, cfg, 0);
        s->dests[i].head = s->dests[i].tail = -1;
        s->dests[i].timer_ns = INT64_MAX;
    }
    for (int i = 0; i < ncalls; i++)
        s->calls[i].next_waiter = -1;
    return 0;
fail:
    free(s->dests);
    free(s->calls);
    s->dests = NULL;
    s->calls = NULL;
    return -1;
}

void sim_free(sim *s)
{
    sim_heap_free(&s->heap);
    free(s->dests);
    free(s->calls);
    s->dests = NULL;
    s->calls = NULL;
}

static void push(sim *s, int64_t t, int kind, int who, int64_t arg)
{
    if (sim_heap_push(&s->heap, t, kind, who, arg) != 0)
        abort(); /* out of memory: a simulator cannot go on without its events */
}

static void enqueue(sim *s, int id)
{
    sim_call *c = &s->calls[id];
    sim_dest *sd = &s->dests[c->dest];

    if (c->waiting)
        return;
    c->waiting = true;
    c->next_waiter = -1;
    if (sd->tail < 0)
        sd->head = id;
    else
        s->calls[sd->tail].next_waiter = id;
    sd->tail = id;
}

/* Take waiter id, whose predecessor in the queue is prev (-1: it is the head), out. */
static void dequeue(sim *s, sim_dest *sd, int prev, int id)
{
    sim_call *c = &s->calls[id];

    if (prev < 0)
        sd->head = c->next_waiter;
    else
        s->calls[prev].next_waiter = c->next_waiter;
    if (sd->tail == id)
        sd->tail = prev;
    c->waiting = false;
    c->next_waiter = -1;
}

static void arm(sim *s, int dest, int64_t t)
{
    sim_dest *sd = &s->dests[dest];

    if (t < s->now)
        t = s->now;
    if (t < sd->timer_ns) {
        sd->timer_ns = t;
        push(s, t, SIM_EV_WAKE, dest, 0);
    }
}

static void go(sim *s, int id)
{
    sim_call *c = &s->calls[id];

    if (c->call.phase != BO_PHASE_ATTEMPT)
        abort(); /* the engine admitted it: the machine must say so */
    c->attempt_id++;
    s->attempts++;
    s->send(s, id);
}

/*
 * Admit waiters in FIFO order until one must wait; arm a timer for it.  A
 * retry held by the retry budget alone keeps its place and the ones behind
 * it are asked (in the shim every waiter asks for itself: a first attempt
 * is not held behind a retry the budget holds).
 */
static void serve_waiters(sim *s, int dest)
{
    sim_dest *sd = &s->dests[dest];
    int prev = -1, id = sd->head;

    while (id >= 0) {
        int64_t until = s->now;
        bo_admit a = bo_dest_admit(&sd->d, s->cfg, &s->calls[id].call, s->now, &until);
        if (a == BO_ADMIT_WAIT) {
            arm(s, dest, until);
            if (!s->calls[id].call.budget_waiting)
                return;
            prev = id;
            id = s->calls[id].next_waiter;
            continue;
        }
        dequeue(s, sd, prev, id);
        if (a == BO_ADMIT_GO) {
            go(s, id);
        } else {
            s->calls[id].active = false;
            s->done(s, id, false); /* may queue new calls: start again from the head */
        }
        prev = -1;
        id = sd->head;
    }
}

/* A call asks for admission: behind any waiters, else straight to the engine. */
static void seek(sim *s, int id)
{
    sim_call *c = &s->calls[id];
    sim_dest *sd = &s->dests[c->dest];

    enqueue(s, id);
    if (sd->head == id)
        serve_waiters(s, c->dest);
}

void sim_call_start(sim *s, int id, int dest)
{
    sim_call *c = &s->calls[id];

    bo_call_begin(&c->call, s->now);
    c->dest = dest;
    c->active = true;
    c->began_ns = s->now;
    c->program_tries = 0;
    seek(s, id);
}

void sim_attempt_done(sim *s, int id, bo_outcome outcome, int64_t retry_after_ns)
{
    sim_call *c = &s->calls[id];
    sim_dest *sd = &s->dests[c->dest];
    int64_t until = s->now;
    bo_next n = bo_dest_complete(&sd->d, s->cfg, &c->call, outcome, retry_after_ns,
                                 s->now, &s->rng, &until);
    static int trace = -1; /* SIM_TRACE=1: one line per answer on stderr, for tuning */
    if (trace < 0)
        trace = getenv("SIM_TRACE") != NULL;
    if (trace) {
        const bo_window *w = &sd->d.window;
        fprintf(stderr,
                "%9.4f call %d %s att %u cwnd %.2f ss %.2f infl %u rate %.2f ok %.2f bad %.2f cuts "
                "%u next %.4f dest %.4f\n",
                (double)s->now / 1e9, id, outcome.verdict == BO_VERDICT_SUCCESS ? "OK " : "REJ",
                c->call.attempts, w->cwnd, w->ssthresh, w->inflight, w->rate_limit_hz,
                w->rate_ok_hz, w->rate_bad_hz, w->cuts_in_row,
                n == BO_NEXT_RETRY ? (double)(until - s->now) / 1e9 : -1.0,
                (double)(sd->d.next_send_ns) / 1e9);
    }

    /* the call's phase says what n does: WAIT until until_ns, or DONE */
    if (c->call.phase == BO_PHASE_WAIT) {
        push(s, c->call.until_ns, SIM_EV_ADMIT, id, 0);
    } else if (s->cfg->policy == BO_POLICY_NONE && bo_call_failed_retryable(&c->call)) {
        /* The program itself retries at once: a new call, same operation. */
        bo_call_begin(&c->call, s->now);
        enqueue(s, id);
    } else if (bo_call_failed_retryable(&c->call) && c->program_tries < s->p->program_retries) {
        /* The program retries on its own after 1, 2, 4... s (curl --retry's
         * waits): the next call continues this logical request. */
        bo_call_lineage(&c->call, 1, &c->lineage);
        push(s, s->now + (SIM_NS_PER_S << c->program_tries), SIM_EV_PROGRAM, id, 0);
        c->program_tries++;
    } else {
        c->active = false;
        s->done(s, id, outcome.verdict == BO_VERDICT_SUCCESS);
    }
    serve_waiters(s, c->dest);
}

bool sim_handle(sim *s, const sim_event *ev)
{
    switch (ev->kind) {
    case SIM_EV_ADMIT:
        if (s->calls[ev->who].active && bo_call_due(&s->calls[ev->who].call, s->now))
            seek(s, ev->who);
        return true;
    case SIM_EV_PROGRAM:
        if (s->calls[ev->who].active) {
            bo_call_begin(&s->calls[ev->who].call, s->now);
            bo_call_continue(&s->calls[ev->who].call, &s->calls[ev->who].lineage);
            seek(s, ev->who);
        }
        return true;
    case SIM_EV_WAKE:
        if (ev->t == s->dests[ev->who].timer_ns)
            s->dests[ev->who].timer_ns = INT64_MAX;
        serve_waiters(s, ev->who);
        return true;
    default:
        return false;
    }
}

bo_outcome sim_outcome_http(const bo_config *cfg, int status)
{
    bo_attempt a;

    memset(&a, 0, sizeof(a));
    a.curl_code = BO_CURLE_OK;
    a.http_status = status;
    a.method = "GET";
    a.request_sent = true;
    return bo_classify(cfg, &a);
}

bo_outcome sim_outcome_timeout(const bo_config *cfg)
{
    bo_attempt a;

    memset(&a, 0, sizeof(a));
    a.curl_code = BO_CURLE_OPERATION_TIMEDOUT;
    a.method = "GET";
    a.request_sent = true;
    return bo_classify(cfg, &a);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sim_percentile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}
