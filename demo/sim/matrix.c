/*
 * matrix: every policy against servers that throttle differently
 * from ours, with the policy's own defaults (BACKOFF_MAX_ATTEMPTS 8 unless
 * the variable is set).
 *
 * Servers (a request travels 0.1 ms each way, as on loopback):
 *   cap-0ms     concurrency cap 50, 100 ms per request, 429 at once;
 *   cap-10ms    the same, a 429 takes 10 ms and holds a slot meanwhile;
 *   bucket-b20  token bucket 20/s, burst 20, 10 ms per success, 429 at once;
 *   bucket-b1   the same with burst 1;
 *   latency     003's model: 100 ms x 1.05^((c - 30) / 15) past 30 served
 *               at once, never rejects (no optimum: "-");
 *   schedule    concurrency cap 50 for 1 s, 10 until 3 s, 50 after; 100 ms
 *               per request, 429 at once.
 * Hints on a 429: none; fixed (Retry-After: 1 whatever the state);
 * accurate (the exact time until a slot frees, or the next token, in ms; a
 * real server rounds up to whole seconds, which is what `fixed` tests).
 * Clients: fresh-seq (100 requests one after the other, a process per
 * request, attached to the host-wide state of BACKOFF_SHARE=host, the
 * default); fresh-8 (200 requests, 8 such processes at once); threads-8
 * (200 requests, 8 threads sharing state); threads-200 (1000 requests, 200
 * threads); fresh-seq-alone and fresh-8-alone (the same fresh processes
 * under BACKOFF_SHARE=process: each call starts from empty state, as every
 * process did before host sharing; shown, not judged by sim-matrix.sh).
 * Columns: ratio = completion / optimum (optimum = what the server's
 * capacity and the clients' concurrency allow, no retry ever wasted);
 * attempts per request; calls that gave up (returned a 429); the most
 * rejected attempts that reached the server in any one second (sliding,
 * 100 ms steps), and that as a fraction of the server's capacity over the
 * same second; attempts per request again with the program itself retrying
 * each failed call 3 times on top (after 1, 2 and 4 s, as curl --retry 3;
 * the retry budget: the two layers must not multiply).
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_AT_SERVER = SIM_EV_SCENARIO, EV_FREE, EV_REPLY };

/*
 * Beyond the matrix, only when named with --server / --client: `flap`
 * (test_fault_server.sh's flapping server: a cap of 8 x 5 ms, closed
 * (cap 0) every odd second until 16 s, 429 at once) and `threads-32`
 * (3000 requests, 32 threads).
 */
enum {
    SRV_CAP0,
    SRV_CAP10,
    SRV_B20,
    SRV_B1,
    SRV_LATENCY,
    SRV_SCHEDULE,
    SRV_COUNT,
    SRV_FLAP = SRV_COUNT,
    SRV_ALL
};
enum { HINT_NONE, HINT_FIXED, HINT_ACCURATE, HINT_COUNT };
enum {
    CL_FRESH_SEQ,
    CL_FRESH_8,
    CL_THREADS_8,
    CL_THREADS_200,
    CL_FRESH_SEQ_ALONE,
    CL_FRESH_8_ALONE,
    CL_COUNT,
    CL_THREADS_32 = CL_COUNT,
    CL_ALL
};

static const char *const srv_names[] = {"cap-0ms", "cap-10ms", "bucket-b20", "bucket-b1",
                                        "latency", "schedule", "flap"};
static const char *const hint_names[] = {"none", "fixed", "accurate"};
static const char *const cl_names[] = {"fresh-seq",       "fresh-8",       "threads-8",
                                       "threads-200",     "fresh-seq-alone", "fresh-8-alone",
                                       "threads-32"};

/*
 * A fresh process per request: with BACKOFF_SHARE=host (the default) it
 * attaches to the destination's host-wide state, which the processes
 * before it and beside it left; "-alone" is BACKOFF_SHARE=process, where
 * every process starts from nothing (each call a new bo_dest).
 */
static bool cl_alone(int cl)
{
    return cl == CL_FRESH_SEQ_ALONE || cl == CL_FRESH_8_ALONE;
}

#define TRAVEL_NS (SIM_NS_PER_MS / 10)
#define BIN_NS (100 * SIM_NS_PER_MS)
#define MAX_BINS 36000

typedef struct mx {
    int srv, hint, cl;
    int workers;
    long ops, next_op, finished, gave_up;
    int busy;
    int64_t *ends;          /* min-heap of the times busy slots free */
    int nends;
    double tokens;
    int64_t refilled_ns;
    int64_t last_done;
    int *rej_bins;
} mx;

static void heap_add(mx *m, int64_t t)
{
    int i = m->nends++;
    while (i > 0 && m->ends[(i - 1) / 2] > t) {
        m->ends[i] = m->ends[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->ends[i] = t;
}

static void heap_pop(mx *m)
{
    int64_t t = m->ends[--m->nends];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= m->nends)
            break;
        if (c + 1 < m->nends && m->ends[c + 1] < m->ends[c])
            c++;
        if (m->ends[c] >= t)
            break;
        m->ends[i] = m->ends[c];
        i = c;
    }
    m->ends[i] = t;
}

static int cap_at(int srv, int64_t t)
{
    if (srv == SRV_SCHEDULE && t >= SIM_NS_PER_S && t < 3 * SIM_NS_PER_S)
        return 10;
    if (srv == SRV_FLAP)
        return t < 16 * SIM_NS_PER_S && (t / SIM_NS_PER_S) % 2 == 1 ? 0 : 8;
    return 50;
}

/* A success holds a slot this long. */
static int64_t service_ns(int srv)
{
    return srv == SRV_FLAP ? 5 * SIM_NS_PER_MS : 100 * SIM_NS_PER_MS;
}

/* Server capacity in requests per second at time t (0: no limit). */
static double capacity_hz(int srv, int64_t t)
{
    if (srv == SRV_B20 || srv == SRV_B1)
        return 20;
    if (srv == SRV_LATENCY)
        return 0;
    return cap_at(srv, t) * (double)SIM_NS_PER_S / (double)service_ns(srv);
}

static void mx_send(sim *s, int c)
{
    if (sim_heap_push(&s->heap, s->now + TRAVEL_NS, EV_AT_SERVER, c, s->calls[c].attempt_id) != 0)
        abort();
}

static void mx_done(sim *s, int c, bool ok)
{
    mx *m = s->sc;

    m->finished++;
    if (!ok)
        m->gave_up++;
    m->last_done = s->now;
    if (m->next_op < m->ops) {
        int op = (int)m->next_op++;
        bool alone = cl_alone(m->cl);
        if (alone)
            bo_dest_init(&s->dests[op].d, s->cfg, s->now); /* a new process, on its own */
        sim_call_start(s, op, alone ? op : 0);
    }
    (void)c;
}

static void reply(sim *s, int c, int64_t id, int64_t at, int64_t ra_ms, bool rejected)
{
    int64_t arg = (id & 0xffffffff) | (rejected ? (int64_t)1 << 62 : 0) | ((ra_ms + 1) << 32);
    if (sim_heap_push(&s->heap, at, EV_REPLY, c, arg) != 0)
        abort();
}

static void at_server(sim *s, const sim_event *ev)
{
    mx *m = s->sc;
    int64_t now = s->now;

    if (m->srv == SRV_LATENCY) {
        double lat = 0.1;
        m->busy++;
        if (m->busy > 30)
            lat *= pow(1.05, (double)(m->busy - 30) / 15.0);
        int64_t d = (int64_t)(lat * SIM_NS_PER_S);
        if (sim_heap_push(&s->heap, now + d, EV_FREE, 0, 0) != 0)
            abort();
        reply(s, ev->who, ev->arg, now + d + TRAVEL_NS, -1, false);
        return;
    }
    bool ok;
    int64_t hold, wait_ns = 0;
    if (m->srv == SRV_B20 || m->srv == SRV_B1) {
        double burst = m->srv == SRV_B20 ? 20 : 1;
        m->tokens += (double)(now - m->refilled_ns) / SIM_NS_PER_S * 20.0;
        if (m->tokens > burst)
            m->tokens = burst;
        m->refilled_ns = now;
        ok = m->tokens >= 1.0;
        if (ok)
            m->tokens -= 1.0;
        else
            wait_ns = (int64_t)ceil((1.0 - m->tokens) / 20.0 * SIM_NS_PER_S);
        hold = ok ? 10 * SIM_NS_PER_MS : 0;
    } else {
        int limit = cap_at(m->srv, now);
        ok = m->busy < limit;
        hold = ok ? service_ns(m->srv) : (m->srv == SRV_CAP10 ? 10 * SIM_NS_PER_MS : 0);
        if (!ok) {
            wait_ns = m->nends > 0 ? m->ends[0] - now : 0;
            if (m->srv == SRV_SCHEDULE && now < 3 * SIM_NS_PER_S && now >= SIM_NS_PER_S &&
                3 * SIM_NS_PER_S - now < wait_ns)
                wait_ns = 3 * SIM_NS_PER_S - now;
        }
        if (hold > 0) {
            m->busy++;
            heap_add(m, now + hold);
            if (sim_heap_push(&s->heap, now + hold, EV_FREE, 0, 0) != 0)
                abort();
        }
    }
    int64_t ra_ms = -1;
    if (!ok) {
        int64_t b = now / BIN_NS;
        if (b < MAX_BINS)
            m->rej_bins[b]++;
        if (m->hint == HINT_FIXED)
            ra_ms = 1000;
        else if (m->hint == HINT_ACCURATE)
            ra_ms = (wait_ns + SIM_NS_PER_MS - 1) / SIM_NS_PER_MS;
    }
    reply(s, ev->who, ev->arg, now + hold + TRAVEL_NS, ra_ms, !ok);
}

/* Best possible completion for the cell, s; 0 = not defined. */
static double optimum_s(const mx *m)
{
    if (m->srv == SRV_LATENCY)
        return 0;
    double per =
        m->srv == SRV_B20 || m->srv == SRV_B1 ? 0.010 : (double)service_ns(m->srv) / SIM_NS_PER_S;
    per += 2.0 * TRAVEL_NS / SIM_NS_PER_S;
    if (m->srv == SRV_B20 || m->srv == SRV_B1) {
        double burst = m->srv == SRV_B20 ? 20 : 1;
        double t_srv = ((double)m->ops - burst) / 20.0 + per;
        double t_cl = ceil((double)m->ops / m->workers) * per;
        return t_srv > t_cl ? t_srv : t_cl;
    }
    /* Concurrency: min(workers, cap) requests every `per` seconds. */
    double served = 0, t = 0, dt = 0.001;
    while (served < (double)m->ops) {
        int c = cap_at(m->srv, (int64_t)(t * SIM_NS_PER_S));
        double conc = m->workers < c ? m->workers : c;
        served += conc * dt / per;
        t += dt;
    }
    double t_cl = ceil((double)m->ops / m->workers) * per;
    return t > t_cl ? t : t_cl;
}

typedef struct mx_result {
    double completion_s, optimum_s, ratio, attempts_per_req, peak_rej, peak_rej_frac;
    long gave_up;
} mx_result;

static int run_cell(const bo_config *cfg, const sim_params *p, int srv, int hint, int cl,
                    mx_result *r)
{
    static const long ops[] = {100, 200, 200, 1000, 100, 200, 3000};
    static const int workers[] = {1, 8, 8, 200, 1, 8, 32};
    mx m;
    sim s;
    bool alone = cl_alone(cl);
    int rc = -1;

    memset(&m, 0, sizeof(m));
    m.srv = srv;
    m.hint = hint;
    m.cl = cl;
    m.ops = ops[cl];
    m.workers = workers[cl];
    m.tokens = srv == SRV_B1 ? 1 : 20;
    if (sim_init(&s, cfg, p, alone ? (int)m.ops : 1, (int)m.ops) != 0)
        return -1;
    m.ends = calloc((size_t)m.ops * 200 + 64, sizeof(int64_t));
    m.rej_bins = calloc(MAX_BINS, sizeof(int));
    if (m.ends == NULL || m.rej_bins == NULL)
        goto out;
    s.sc = &m;
    s.send = mx_send;
    s.done = mx_done;
    for (int w = 0; w < m.workers; w++) {
        int op = (int)m.next_op++;
        sim_call_start(&s, op, alone ? op : 0);
    }
    sim_event ev;
    while (sim_heap_pop(&s.heap, &ev)) {
        s.now = ev.t;
        if (sim_handle(&s, &ev))
            continue;
        if (ev.kind == EV_AT_SERVER) {
            at_server(&s, &ev);
        } else if (ev.kind == EV_FREE) {
            m.busy--;
            if (m.nends > 0 && srv != SRV_LATENCY)
                heap_pop(&m);
        } else if (ev.kind == EV_REPLY) {
            uint32_t id = (uint32_t)(ev.arg & 0xffffffff);
            bool rejected = (ev.arg >> 62) & 1;
            int64_t ra_ms = ((ev.arg >> 32) & 0x3fffffff) - 1;
            if (id != s.calls[ev.who].attempt_id || !s.calls[ev.who].active)
                continue;
            sim_attempt_done(&s, ev.who, sim_outcome_http(cfg, rejected ? 429 : 200),
                             ra_ms >= 0 ? ra_ms * SIM_NS_PER_MS : -1);
        }
        if (s.now > (int64_t)3600 * SIM_NS_PER_S || s.attempts > (uint64_t)100 * (uint64_t)m.ops ||
            (size_t)m.nends >= (size_t)m.ops * 200)
            break;
    }
    r->optimum_s = optimum_s(&m);
    r->completion_s = m.finished == m.ops ? (double)m.last_done / SIM_NS_PER_S : INFINITY;
    r->ratio = r->optimum_s > 0 ? r->completion_s / r->optimum_s : NAN;
    r->attempts_per_req = (double)s.attempts / (double)m.ops;
    r->gave_up = m.gave_up + (m.ops - m.finished);
    r->peak_rej = 0;
    r->peak_rej_frac = 0;
    for (int b = 0; b + 10 <= MAX_BINS; b++) {
        int sum = 0;
        double capsum = 0;
        for (int k = 0; k < 10; k++) {
            sum += m.rej_bins[b + k];
            capsum += capacity_hz(srv, (int64_t)(b + k) * BIN_NS) / 10.0;
        }
        if (sum > r->peak_rej)
            r->peak_rej = sum;
        if (capsum > 0 && sum / capsum > r->peak_rej_frac)
            r->peak_rej_frac = sum / capsum;
    }
    rc = 0;
out:
    free(m.ends);
    free(m.rej_bins);
    sim_free(&s);
    return rc;
}

static int find(const char *const *names, int n, const char *v)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], v) == 0)
            return i;
    return -1;
}

int sim_matrix(const sim_params *p, const char **pols, int npol, const char *srv_f,
               const char *hint_f, const char *cl_f)
{
    int srv_only = srv_f ? find(srv_names, SRV_ALL, srv_f) : -1;
    int hint_only = hint_f ? find(hint_names, HINT_COUNT, hint_f) : -1;
    int cl_only = cl_f ? find(cl_names, CL_ALL, cl_f) : -1;

    if ((srv_f && srv_only < 0) || (hint_f && hint_only < 0) || (cl_f && cl_only < 0)) {
        fprintf(stderr, "backoff-sim: matrix filter not valid: --server is one of cap-0ms cap-10ms "
                "bucket-b20 bucket-b1 latency schedule flap; --hint none fixed accurate; "
                "--client fresh-seq fresh-8 threads-8 threads-200 fresh-seq-alone "
                "fresh-8-alone threads-32\n");
        return 2;
    }
    bo_config *cfgs = calloc((size_t)npol, sizeof(*cfgs));
    if (cfgs == NULL)
        return 1;
    for (int i = 0; i < npol; i++)
        if (sim_load_cfg(pols[i], "matrix", &cfgs[i]) != 0) {
            free(cfgs);
            return 2;
        }
    printf("server\thint\tclients\tpolicy\tcompletion_s\toptimum_s\tratio\tattempts_per_req\t"
           "gave_up\tpeak_rejected_per_s\tpeak_rejected_frac\tattempts_per_req_own3\n");
    sim_params own = *p;
    own.program_retries = 3;
    for (int sv = 0; sv < SRV_ALL; sv++) {
        if (sv >= SRV_COUNT && sv != srv_only)
            continue;
        if (srv_only >= 0 && sv != srv_only)
            continue;
        for (int h = 0; h < HINT_COUNT; h++) {
            if ((hint_only >= 0 && h != hint_only) || (sv == SRV_LATENCY && h != HINT_NONE))
                continue;
            for (int c = 0; c < CL_ALL; c++) {
                if ((cl_only >= 0 && c != cl_only) || (c >= CL_COUNT && c != cl_only))
                    continue;
                for (int i = 0; i < npol; i++) {
                    mx_result r, r3;
                    memset(&r, 0, sizeof(r));
                    memset(&r3, 0, sizeof(r3));
                    if (run_cell(&cfgs[i], p, sv, h, c, &r) != 0 ||
                        run_cell(&cfgs[i], &own, sv, h, c, &r3) != 0) {
                        free(cfgs);
                        fprintf(stderr, "backoff-sim: out of memory\n");
                        return 1;
                    }
                    printf("%s\t%s\t%s\t%s\t", srv_names[sv],
                           sv == SRV_LATENCY ? "-" : hint_names[h], cl_names[c], pols[i]);
                    if (isinf(r.completion_s))
                        printf("never\t");
                    else
                        printf("%.3f\t", r.completion_s);
                    if (r.optimum_s > 0)
                        printf("%.3f\t%.3f\t", r.optimum_s, r.ratio);
                    else
                        printf("-\t-\t");
                    printf("%.3f\t%ld\t%.0f\t", r.attempts_per_req, r.gave_up, r.peak_rej);
                    if (sv == SRV_LATENCY)
                        printf("-\t");
                    else
                        printf("%.3f\t", r.peak_rej_frac);
                    printf("%.3f\n", r3.attempts_per_req);
                    fflush(stdout);
                }
            }
        }
    }
    free(cfgs);
    return 0;
}
