/*
 * bo_budget: what keeps the program's own retries and the shim's from
 * multiplying.  Pure: the caller passes the time.
 *
 * 1. The retry budget of a destination (gRPC's retry throttling, Envoy's
 *    retry budget, Finagle's RetryBudget): over a sliding window of
 *    BO_BUDGET_WINDOW_NS the shim grants a retry only while
 *        retries + 1 <= BO_BUDGET_RESERVE + pct/100 * firsts + successes
 *    where firsts are the first attempts of new logical requests, retries
 *    every other attempt (the shim's and the program's own, which are
 *    counted though never held back) and successes the answers that were
 *    not failures.  The budget decides when a retry goes, never whether: a
 *    retry it does not allow waits for it (bo_budget_next_retry_ns: the
 *    oldest attempts leaving the window; a success adds credit sooner), and
 *    while nothing of the destination is in flight one retry beyond it may
 *    go as a probe, spaced as the window's probes are (bo_budget_may_probe),
 *    so that a server that comes back is seen within about a second.  A
 *    destination that answers nothing but failures thus sees at most
 *    (1 + pct/100) times the program's own load plus the reserve and one
 *    probe a second; one that answers, at most one extra attempt per
 *    success on top.  A retry after a 429 (bo_outcome.rate_limited: the
 *    server is up and limits this client) is counted but never held: the
 *    aimd window and Retry-After pace those.  A plain fixed-size struct (it
 *    lives in bo_dest, which may be shared host-wide).
 *
 * 2. The logical request (bo_lineage): a call that the program makes again
 *    after the shim handed back a retryable failure (the same key: method
 *    and URL for libcurl, address and port for connect(), within
 *    BO_LINEAGE_WINDOW_NS of that failure) continues the first call's
 *    attempts, throttle count and start time, so BACKOFF_MAX_ATTEMPTS and
 *    BACKOFF_MAX_TIME_MS bound the logical request whichever layer spends
 *    them.  The program's own attempt always goes out; only the shim's
 *    retries are withheld once the logical request's budget is spent.
 */
#ifndef BO_BUDGET_H
#define BO_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_hash.h"
#include "bo_idem.h"

#define BO_BUDGET_WINDOW_NS (10LL * 1000000000LL) /* 10 s sliding window */
#define BO_BUDGET_RESERVE 3                       /* retries always allowed per window */

typedef struct bo_budget {
    int64_t epoch_ns;       /* start of the current bucket */
    uint32_t firsts[2];     /* [0]: current bucket, [1]: the previous one */
    uint32_t retries[2];
    uint32_t successes[2];
    int64_t probe_ns;       /* no retry beyond the budget before this (INT64_MIN: any time) */
    uint32_t probes;        /* retries beyond the budget since the last success */
} bo_budget;

void bo_budget_init(bo_budget *b, int64_t now_ns);

/* An attempt went out: the first of a new logical request, or any other. */
void bo_budget_on_attempt(bo_budget *b, bool first, int64_t now_ns);

/* An attempt was answered with success. */
void bo_budget_on_success(bo_budget *b, int64_t now_ns);

/*
 * May the shim add one more retry now?  pct: BACKOFF_RETRY_BUDGET (0: no
 * budget, always true).
 */
bool bo_budget_allows_retry(bo_budget *b, unsigned pct, int64_t now_ns);

/*
 * The earliest time, now_ns or later, at which bo_budget_allows_retry will
 * say yes if nothing else is counted meanwhile: the attempts of the window
 * leave it (a success or a first attempt counted meanwhile brings it
 * sooner).  Always within two windows of now_ns.
 */
int64_t bo_budget_next_retry_ns(bo_budget *b, unsigned pct, int64_t now_ns);

/*
 * Is the destination's window of the budget one logical request's alone: no
 * other began within it (the first attempts it counts are at most one),
 * nothing succeeded (a destination that served within the window is in an
 * outage, which others' work will see the end of), and no retry in it but
 * the call's own (own_retries: its logical request's attempts but the
 * first; calls that began earlier and wait out the same outage retry too)?
 * Then a retry it does not fund has nothing to wait for but its own
 * retries (the engine hands the failure back, bo_engine.c).
 */
bool bo_budget_lone(bo_budget *b, unsigned own_retries, int64_t now_ns);
/*
 * A retry the budget does not allow may still go now as a probe: nothing
 * of the destination is in flight (the caller knows) and the last probe's
 * gap has passed.  bo_budget_on_probe counts it and spaces the next one
 * gap_ns later (the caller's schedule: the window's probe spacing).
 */
bool bo_budget_may_probe(const bo_budget *b, int64_t now_ns);
void bo_budget_on_probe(bo_budget *b, int64_t now_ns, int64_t gap_ns);

/* ---- logical requests ------------------------------------------------ */

#define BO_LINEAGE_WINDOW_NS (30LL * 1000000000LL) /* 30 s after the failure */
#define BO_LINEAGE_SLOTS 64

/* What a logical request has spent so far. */
typedef struct bo_lineage {
    uint64_t key;           /* 0: free slot */
    int64_t start_ns;       /* when its first call began */
    int64_t failed_ns;      /* when the shim last handed back its failure */
    unsigned attempts;      /* attempts spent by every call so far */
    unsigned throttles;
    /* the Idempotency-Key the shim sent with it ("": none), for the
     * program's next try to send again, and the fingerprint of the body it was
     * made for (bo_idem_body_fp; 0: not known); bo_idem_key_reusable decides */
    char idem[BO_IDEM_VALUE_SIZE];
    uint64_t idem_body;
} bo_lineage;

/* A small table of logical requests that ended in a retryable failure. */
typedef struct bo_lineages {
    bo_lineage slot[BO_LINEAGE_SLOTS];
    unsigned used;          /* slots with a key */
} bo_lineages;

/* A string folded into the key h (start with BO_KEY_INIT); never 0. */
#define BO_KEY_INIT BO_FNV_INIT
uint64_t bo_key_add(uint64_t h, const char *s);

/* bo_key_add(BO_KEY_INIT, s), with strlen(s) in *len (the destination tables' hash). */
uint64_t bo_key_of(const char *s, size_t *len);

/*
 * The logical request `key` continues, if its failure was handed back
 * within BO_LINEAGE_WINDOW_NS before now: copies it to *out and returns
 * true.  Expired entries are dropped on the way.
 */
bool bo_lineage_find(bo_lineages *t, uint64_t key, int64_t now_ns, bo_lineage *out);

/* The logical request `key` was handed back a retryable failure now (the
 * oldest entry makes room when the table is full). */
void bo_lineage_failed(bo_lineages *t, const bo_lineage *l, int64_t now_ns);

/* The logical request `key` ended (success, or a final answer). */
void bo_lineage_forget(bo_lineages *t, uint64_t key);

#endif
