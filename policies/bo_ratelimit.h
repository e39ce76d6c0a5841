/*
 * bo_ratelimit: the server's own quota, read from its rate-limit response
 * headers, and the per-destination pacing built on it (bo_quota).
 *
 * Three dialects are read:
 *   x-ratelimit-limit / -remaining / -reset   GitHub; reset = epoch seconds
 *   RateLimit-Limit / -Remaining / -Reset     early IETF drafts, GitLab;
 *                                             reset = seconds from now
 *   RateLimit / RateLimit-Policy              draft-ietf-httpapi-ratelimit-
 *                                             headers-11, structured fields:
 *                                             RateLimit: "n";r=R;t=T;pk=:..:
 *                                             RateLimit-Policy: "n";q=Q;w=W
 * When several dialects come on one response the draft wins, then
 * RateLimit-*, then x-ratelimit-*.  Bad values are ignored field by field
 * (see bo_rl_headers_quota).  Pure: nothing reads a clock; the caller
 * passes the monotonic time and, for epoch resets, the wall-clock time.
 */
#ifndef BO_RATELIMIT_H
#define BO_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bo_rng.h"

/* Largest limit or remaining count believed, and the furthest reset (31 days). */
#define BO_RL_MAX_COUNT 1000000000LL
#define BO_RL_MAX_RESET_S (31LL * 86400)
#define BO_RL_POLICIES 4

/*
 * The relevant header values of one response, collected line by line.
 * Each numeric field is -1 when absent or bad.  Fixed size, no allocation:
 * the shim keeps one in each handle record.
 */
typedef struct bo_rl_headers {
    int64_t x_limit, x_remaining, x_reset_epoch;   /* x-ratelimit-* */
    int64_t limit, remaining, reset_s;             /* RateLimit-* */
    /* RateLimit (draft): the most restrictive item */
    int64_t d_remaining, d_reset_s;
    uint64_t d_name, d_pk;                         /* hashes; 0 = none */
    /* RateLimit-Policy (draft) */
    struct {
        uint64_t name, pk;
        int64_t quota, window_s;
    } pol[BO_RL_POLICIES];
    unsigned npol;
    bool from_cache;                               /* Age > 0 */
    bool seen;                                     /* any rate-limit field seen */
} bo_rl_headers;

/* What one response says about the quota. */
typedef struct bo_rl_quota {
    int64_t limit;        /* requests per window; -1 unknown */
    int64_t remaining;    /* requests left in this window (>= 0) */
    int64_t reset_ns;     /* time until the window resets (>= 0) */
    int64_t window_ns;    /* window length; -1 unknown */
    uint64_t pk;          /* partition key hash; 0 = none */
} bo_rl_quota;

void bo_rl_headers_reset(bo_rl_headers *h);

/*
 * Feed one raw header line ("Name: value\r\n", not NUL-terminated).
 * Returns true when the line was one of the fields read here.  Cheap for
 * other lines: the first letter decides before any comparison.
 */
bool bo_rl_header_line(bo_rl_headers *h, const char *line, size_t len);

/*
 * The quota the collected headers give, or false when they give none
 * (absent, bad, or the response came from a cache).  wall_ns is the
 * wall-clock time (CLOCK_REALTIME) for x-ratelimit-reset.
 */
bool bo_rl_headers_quota(const bo_rl_headers *h, int64_t wall_ns, bo_rl_quota *q);

/* ---- pacing: one destination's quota state --------------------------- */

#define BO_QUOTA_SLOTS 4

#define BO_QUOTA_RATE_SPAN_NS (2LL * 1000000000LL)
/* Tokens a bucket's pace leaves unspent: a send made early by the pace's
 * jitter (+-10%) then finds one instead of a 429. */
#define BO_QUOTA_BUCKET_RESERVE 1

typedef struct bo_quota_slot {
    uint64_t pk;             /* partition key hash (0 = none) */
    bool used;
    int64_t reset_at_ns;     /* earliest known end of the current window */
    int64_t gap_ns;          /* spacing between admissions in this window */
    int64_t after_gap_ns;    /* spacing once the window has reset; 0 = unknown */
    int64_t last_gap_ns;     /* last non-zero pace, when after_gap_ns is unknown */
    int64_t next_ns;         /* earliest next admission */
    int64_t window_ns;       /* longest window seen (or advertised) */
    int64_t noted_ns;        /* last response with headers */
    int64_t last_remaining;  /* remaining of the last response (-1: none yet) */
    bool refills;            /* remaining rose before the reset: a token bucket */
    /* A bucket's refill rate, measured: over at least BO_QUOTA_RATE_SPAN_NS,
     * the tokens that came back are the rise of remaining plus the answers
     * that spent one.  Whole-second reset fields cannot give it: an epoch
     * reset rounds the time to full up by as much as a second. */
    int64_t mark_ns;         /* start of the current measurement (0: none) */
    int64_t mark_remaining;
    int64_t mark_reset_at_ns; /* the reset the mark's answer announced */
    int64_t mark_answers;    /* answers with headers since the mark */
    int64_t mark_fresh_answers; /* of those, to requests sent after the mark */
    int64_t refill_gap_ns;   /* measured time per token; 0 = not yet known */
} bo_quota_slot;

typedef struct bo_quota {
    bo_quota_slot slot[BO_QUOTA_SLOTS];
    bo_rng rng;              /* jitter for admissions, seeded by the first note */
    bool seeded;
} bo_quota;

void bo_quota_init(bo_quota *q);

/*
 * A response carried quota `rl` at now_ns, to a request sent at sent_ns
 * (`spent`: it used one of the quota; a 429 did not);
 * `inflight` other attempts are under way (their answers will spend quota
 * the headers do not show yet).  Spreads the remaining quota evenly until
 * the reset (for a token bucket, with what comes back meanwhile).
 */
void bo_quota_note_answer(bo_quota *q, const bo_rl_quota *rl, unsigned inflight,
                          int64_t sent_ns, bool spent, int64_t now_ns, bo_rng *rng);

/* bo_quota_note_answer for an answer that spent quota, to a request sent
 * after every earlier answer came (one client's sequential requests). */
void bo_quota_note(bo_quota *q, const bo_rl_quota *rl, unsigned inflight, int64_t now_ns,
                   bo_rng *rng);

/*
 * Earliest admission the quota allows (<= now_ns: now), never more than
 * cap_ns ahead (cap_ns <= 0: no cap).  Once a window's reset has passed
 * with no fresh headers, the slot stops holding anything back.
 */
int64_t bo_quota_next_send(const bo_quota *q, int64_t now_ns, int64_t cap_ns);

/* An attempt was admitted at now_ns: each live slot's next admission moves one gap on, with jitter.
 */
void bo_quota_on_send(bo_quota *q, int64_t now_ns);

#endif
