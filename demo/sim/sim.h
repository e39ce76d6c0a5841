/*
 * backoff-sim: a deterministic discrete-event simulator of docs/DESIGN.md's
 * scenarios, driving policies/ (bo_dest_admit / bo_dest_complete) in
 * virtual time.  One event heap, virtual time in ns, all randomness from
 * one bo_rng seeded by --seed.
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_engine.h"

#define SIM_NS_PER_MS BO_NS_PER_MS
#define SIM_NS_PER_S BO_NS_PER_S

/* ---- event heap (heap.c) ---- */

typedef struct sim_event {
    int64_t t;          /* virtual time, ns */
    uint64_t seq;       /* insertion order: ties leave in FIFO order */
    int kind;           /* SIM_EV_* or a scenario's own kind */
    int who;            /* call, client or destination index */
    int64_t arg;        /* kind-specific */
} sim_event;

typedef struct sim_heap {
    sim_event *v;
    size_t n, cap;
    uint64_t next_seq;
} sim_heap;

int sim_heap_push(sim_heap *h, int64_t t, int kind, int who, int64_t arg);
bool sim_heap_pop(sim_heap *h, sim_event *out);
void sim_heap_free(sim_heap *h);

/* ---- scenario parameters (main.c fills them, presets first) ---- */

typedef struct sim_params {
    const char *scenario;
    uint64_t seed;
    bool independent;
    int runs;
    long ops;
    int max_busy;
    double service_ms, error_ms, travel_ms, rate;
    int clients;
    double duration_s, outage_at_s, outage_for_s, timeout_ms, think_ms;
    double bucket_rate, bucket_burst;
    double net_mean_ms, net_sd_ms;
    long backlog;          /* outage: requests a stopped server holds */
    int limiter;           /* headers: SIM_LIMITER_* */
    int dialect;           /* headers: RL_DIALECT_* (demo/rl_lines.h) */
    int wait_form;         /* headers: how a rejection's wait is written (RL_WAIT_*) */
    int reject_status;     /* headers: 429, 403 or 503 */
    double window_requests, window_s; /* headers: the fixed window */
    double phase_s;        /* headers: the clients start this far into a window */
    int held;              /* room: requests the server holds held_s (0: none) */
    double held_s;
    bool abandon;          /* room: the held requests never end as far as the policy knows */
    bool warm;             /* burst, room: measure a second run on the destination's state
                              as the first left it (the host already knows the window) */
    int program_retries;   /* the program itself retries a call handed back failed this
                              many times, after 1, 2, 4... s (curl --retry), continuing
                              its logical request (bo_call_continue); 0: never */
} sim_params;

enum { SIM_LIMITER_BUCKET = 0, SIM_LIMITER_WINDOW, SIM_LIMITER_CAP };

/* ---- one policy's results (one TSV row) ---- */

typedef struct sim_result {
    double ops, attempts, wasted_pct, completion_s, optimum_s, ratio, p50_s, p99_s;
    double throttled;        /* attempts answered 429 (or conflicts) */
    double calls;            /* contention: write calls */
    double recovery_s;       /* outage: < 0 = not recovered */
    double peak_concurrency, down_attempts_per_s, pre_rate, post_rate;
    double jain;             /* fairness */
    /* capacity: after the halving, the time to settle and the refusals until then, the
     * attempts in flight when it came; after the doubling, the time to use 90% of it;
     * each third's successes as a fraction of its capacity */
    double settle_s, extra_rej, window, up_s, use_1, use_2, use_3;
    /* room: the longest wait for admission of a quick request behind held ones, s */
    double held_wait_s;
    double failed;           /* down: items whose call was handed back failed for good */
} sim_result;

/* ---- the client driver shared by every scenario (driver.c) ---- */

enum {
    SIM_EV_ADMIT = 1,   /* who = call: seek admission (first try or after a delay) */
    SIM_EV_WAKE,        /* who = dest: re-check the waiters of a destination */
    SIM_EV_PROGRAM,     /* who = call: the program retries it on its own */
    SIM_EV_SCENARIO     /* first kind free for scenarios */
};

typedef struct sim sim;

typedef struct sim_call {
    bo_call call;
    int dest;               /* index into sim.dests */
    int next_waiter;        /* FIFO link, -1 = none */
    bool waiting;           /* queued on its destination */
    bool active;            /* a call is under way */
    uint32_t attempt_id;    /* bumps at every attempt: stale events are dropped */
    int64_t began_ns;       /* when the program made the call */
    int program_tries;      /* the program's own retries of it so far */
    bo_lineage lineage;     /* its logical request, for the program's next try */
} sim_call;

typedef struct sim_dest {
    bo_dest d;
    int head, tail;         /* waiters, FIFO */
    int64_t timer_ns;       /* earliest pending WAKE event; INT64_MAX = none */
} sim_dest;

struct sim {
    sim_heap heap;
    int64_t now;
    bo_rng rng;
    const bo_config *cfg;
    const sim_params *p;
    sim_dest *dests;
    int ndests;
    sim_call *calls;
    int ncalls;
    uint64_t attempts;
    /* scenario hooks */
    void (*send)(sim *s, int call);              /* start one attempt of call */
    void (*done)(sim *s, int call, bool ok);     /* the call finished */
    void *sc;                                    /* scenario state */
};

int sim_init(sim *s, const bo_config *cfg, const sim_params *p, int ndests, int ncalls);
void sim_free(sim *s);
/* The program makes call `call` on destination `dest` now. */
void sim_call_start(sim *s, int call, int dest);
/* The attempt in flight for `call` ended. */
void sim_attempt_done(sim *s, int call, bo_outcome outcome, int64_t retry_after_ns);
/* Handle a driver event; returns false for a scenario's own kind. */
bool sim_handle(sim *s, const sim_event *ev);

/* Outcomes the scenarios report (via bo_classify where a status exists). */
bo_outcome sim_outcome_http(const bo_config *cfg, int status);
bo_outcome sim_outcome_timeout(const bo_config *cfg);

/* ---- scenarios ---- */

int sim_run_burst(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_fairness(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_contention(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_outage(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_pacing(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_headers(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_capacity(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_room(const bo_config *cfg, const sim_params *p, sim_result *r);
int sim_run_down(const bo_config *cfg, const sim_params *p, sim_result *r);

/* Robustness matrix (matrix.c): prints TSV; returns an exit status. */
int sim_matrix(const sim_params *p, const char **pols, int npol, const char *server,
               const char *hint, const char *client);
/* A policy's configuration from the BACKOFF_* variables (main.c); 0 or -1 with a message. */
int sim_load_cfg(const char *name, const char *scenario, bo_config *cfg);

/* ---- helpers (driver.c) ---- */

/* p-th percentile (0..100) of n values (sorted in place). */
double sim_percentile(double *v, size_t n, double p);

#endif
