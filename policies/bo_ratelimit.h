/*
 * bo_ratelimit: the server's own quota, read from its rate-limit response
 * headers, the wait its throttling answers ask for, and the per-destination
 * pacing built on the quota (bo_quota).
 *
 * Quota dialects read (on one answer the first of these that gives a
 * remaining count and a reset wins):
 *   RateLimit / RateLimit-Policy              draft-ietf-httpapi-ratelimit-
 *                                             headers-11, structured fields:
 *                                             RateLimit: "n";r=R;t=T;pk=:..:
 *                                             RateLimit-Policy: "n";q=Q;w=W
 *   RateLimit-Limit / -Remaining / -Reset     early IETF drafts, GitLab;
 *                                             reset = seconds from now
 *   x-ratelimit-limit / -remaining / -reset   GitHub: reset = epoch seconds;
 *                                             Discord: the epoch with
 *                                             decimals, X-RateLimit-Reset-After
 *                                             (seconds with decimals, wins over
 *                                             the epoch) and X-RateLimit-Bucket
 *                                             (the partition key)
 *   x-ratelimit-{limit,remaining,reset}-{requests,tokens}
 *                                             OpenAI: reset = a duration
 *                                             ("850ms", "1s", "6m0s",
 *                                             "1m30.5s"); the stricter of the
 *                                             two quotas is paced
 *   x-rate-limit-limit / -remaining / -reset  X (Twitter): reset = epoch seconds
 * Hints (bo_rl_headers_retry_after): retry-after-ms and x-ms-retry-after-ms
 * (milliseconds: OpenAI's clients, Azure Cosmos DB), else Retry-After as
 * delta-seconds or as an HTTP-date (RFC 9110 section 5.6.7: IMF-fixdate,
 * RFC 850, asctime), measured against the same answer's Date.
 * Bad values are ignored field by field (see bo_rl_headers_quota).  Pure:
 * nothing reads a clock; the caller passes the monotonic time and, for
 * epoch resets and dates, the wall-clock time.
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
/* Room for a Date value: the longest HTTP-date form (RFC 850's with
 * "Wednesday") is 33 bytes. */
#define BO_RL_DATE_MAX 40
#define BO_RL_DATE_BAD 255

/* An HTTP-date as read (RFC 9110 section 5.6.7); a two-digit year (RFC 850)
 * is placed in its century against the clock when it is used. */
typedef struct bo_rl_date {
    int16_t year;            /* -1: absent; -2: bad or given twice differently */
    int8_t mon, day, hour, min, sec;
    bool two_digit;
} bo_rl_date;

/*
 * The relevant header values of one response, collected line by line.
 * Each numeric field is -1 when absent (-2 when bad: dropped).  Fixed size,
 * no allocation: the shim keeps one in each handle record.
 */
typedef struct bo_rl_headers {
    /* x-ratelimit-*: GitHub, and Discord's additions */
    int64_t x_limit, x_remaining;
    int64_t x_reset_ms;                            /* x-ratelimit-reset: epoch, in ms */
    int64_t x_reset_after_ns;                      /* X-RateLimit-Reset-After */
    uint64_t x_bucket;                             /* X-RateLimit-Bucket hash; 0 = none */
    /* x-rate-limit-*: X (Twitter) */
    int64_t t_limit, t_remaining, t_reset_ms;      /* reset: epoch, in ms */
    /* OpenAI: [0] requests, [1] tokens */
    int64_t o_limit[2], o_remaining[2], o_reset_ns[2];
    /* RateLimit-* */
    int64_t limit, remaining, reset_s;
    /* RateLimit (draft): the most restrictive item */
    int64_t d_remaining, d_reset_s;
    uint64_t d_name, d_pk;                         /* hashes; 0 = none */
    /* RateLimit-Policy (draft) */
    struct {
        uint64_t name, pk;
        int64_t quota, window_s;
    } pol[BO_RL_POLICIES];
    unsigned npol;
    /* hints */
    int64_t ra_ms_ns;                              /* retry-after-ms */
    int64_t ms_ra_ns;                              /* x-ms-retry-after-ms */
    int64_t ra_s;                                  /* Retry-After: delta-seconds */
    bo_rl_date ra_date;                            /* Retry-After: HTTP-date */
    /* Date, as sent (it comes on every answer: parsed only when a date-form
     * Retry-After needs it); date_len 0: absent, BO_RL_DATE_BAD: too long or
     * given twice differently */
    char date[BO_RL_DATE_MAX];
    uint8_t date_len;
    bool from_cache;                               /* Age > 0 */
    bool seen;                                     /* any quota field seen */
    bool untouched; /* as reset left it (no line read since): a reset is free */
} bo_rl_headers;

/* What one response says about the quota. */
typedef struct bo_rl_quota {
    int64_t limit;        /* requests per window; -1 unknown */
    int64_t remaining;    /* requests left in this window (>= 0) */
    int64_t reset_ns;     /* time until the window resets (>= 0) */
    int64_t window_ns;    /* window length; -1 unknown */
    uint64_t pk;          /* partition key hash; 0 = none */
    bool reset_exact;     /* the reset is told to the millisecond (Discord's decimals,
                             OpenAI's durations), not rounded to a whole second */
} bo_rl_quota;

void bo_rl_headers_reset(bo_rl_headers *h);

/*
 * The same for h reset before or zeroed (a handle's, once per answer): free
 * when no line was read since its last reset, as for most answers.
 */
static inline void bo_rl_headers_reuse(bo_rl_headers *h)
{
    if (!h->untouched)
        bo_rl_headers_reset(h);
}

/*
 * Feed one raw header line ("Name: value\r\n", not NUL-terminated).
 * Returns true when the line was one of the fields read here.  Cheap for
 * other lines: the first letter decides before any comparison (x, r, a or
 * d; bo_rl_first_letter).
 */
bool bo_rl_header_line(bo_rl_headers *h, const char *line, size_t len);

/* Could a header line starting with c be one bo_rl_header_line reads? */
bool bo_rl_first_letter(char c);

/*
 * The quota the collected headers give, or false when they give none
 * (absent, bad, or the response came from a cache).  wall_ns is the
 * wall-clock time (CLOCK_REALTIME) for the epoch resets.
 */
bool bo_rl_headers_quota(const bo_rl_headers *h, int64_t wall_ns, bo_rl_quota *q);

/*
 * The wait the answer's own header lines ask for, in ns, or -1 when they
 * ask none (absent, bad, zero or in the past): retry-after-ms, else
 * x-ms-retry-after-ms, else Retry-After: delta-seconds (saturated, never
 * wrapped), or an HTTP-date waited to that instant as the answer's Date
 * tells it (wall_ns only when there is no valid Date), neither rounded.
 */
int64_t bo_rl_headers_retry_after(const bo_rl_headers *h, int64_t wall_ns);

/*
 * The answer's wait as an instant rather than a span: true when
 * bo_rl_headers_retry_after would read it from a Retry-After HTTP-date
 * against a valid Date (no millisecond or delta-seconds hint), with both in
 * epoch seconds, *at_s after *date_s (else false: the span, if any, is all
 * there is).  bo_rl_clock_wait turns them into a wait.
 */
bool bo_rl_headers_retry_date(const bo_rl_headers *h, int64_t wall_ns, int64_t *at_s,
                              int64_t *date_s);

/*
 * How far one server's clock is known to run ahead of ours (CLOCK_REALTIME;
 * negative: behind), at least.  An answer's Date is the second the server
 * made it in (RFC 9110 section 6.6.1), so an answer read at our wall time w
 * with Date D says the server's clock was ahead by at least D - w (it made
 * the answer before we read it, in second D or later) and by less than
 * D + 1 - w plus the answer's time on the way.  The most of the first over
 * the answers seen is the bound kept; an answer whose second bound falls
 * below it (one of the clocks was set back) starts the bound again from its
 * own.  Waiting to an HTTP-date by our clock less this bound is never early
 * by the server's, and, once one answer came early in its second, at most
 * the answer's transit late, where measuring the date against that one
 * answer's Date alone waits up to a second more.
 */
typedef struct bo_rl_clock {
    int64_t ahead_ns;
    bool known;
} bo_rl_clock;

/*
 * The wait, in ns, until at_s by the server's clock, for an answer read at
 * wall_ns with Date date_s (at_s after it, as bo_rl_headers_retry_date
 * gives them): the answer's Date is noted in *c first.  Never more than
 * (at_s - date_s) seconds, less than one second below that, so above 0.
 */
int64_t bo_rl_clock_wait(bo_rl_clock *c, int64_t at_s, int64_t date_s, int64_t wall_ns);

/*
 * The headers say no request is left (a remaining count of 0 in any
 * dialect): GitHub's primary rate limit answers 403 with
 * x-ratelimit-remaining: 0, which is a throttle, not a refusal
 * (bo_attempt.quota_exhausted).
 */
bool bo_rl_headers_exhausted(const bo_rl_headers *h);

/* ---- pacing: one destination's quota state --------------------------- */

#define BO_QUOTA_SLOTS 4

#define BO_QUOTA_RATE_SPAN_NS (2LL * 1000000000LL)
/* How far later one answer's reset instant may lie than another's within
 * one window: the headers' one-second rounding, and 10 ms more for the
 * instants an epoch reset gives through two clocks (wall and monotonic,
 * read apart): a bucket's epoch "full at" moving one second on is the same
 * window, not a coin flip. */
#define BO_QUOTA_ROUNDING_NS (1000000000LL + 10000000LL)
/* Half of it: how late a reset rounded to the nearest second can be. */
#define BO_QUOTA_HALF_ROUNDING_NS (500000000LL + 10000000LL)
/* Tokens a bucket's pace leaves unspent: a send made early by the pace's
 * jitter (+-10%) then finds one instead of a 429. */
#define BO_QUOTA_BUCKET_RESERVE 1
/* Requests a drop of remaining may exceed this destination's own before it
 * is taken for others spending the quota (a server's own count may be off
 * by one: a request counted twice, a retry of ours it saw first). */
#define BO_QUOTA_SHARED_SLACK 1
/* An exact reset instant moving later by more than this within one window
 * is a token bucket's "full at" (a fixed window's instant stays put but for
 * the answers' own latency jitter). */
#define BO_QUOTA_EXACT_SLACK_NS (50LL * 1000000LL)

/*
 * Spend, then wait: while the server says requests remain, admissions go at
 * the program's own pace (each send spends one of `avail`); once they are
 * spent the destination is held until the reset (a little jitter after it)
 * or, for a token bucket, until the next token at its refill pace.  The
 * quota is spread evenly until its reset only while the evidence says
 * others spend it too (`shared_until_ns`): remaining fell faster than this
 * destination's own requests account for, a throttle came while requests
 * were left by our own count, or the partition key changed.
 */
typedef struct bo_quota_slot {
    uint64_t pk;             /* partition key hash (0 = none) */
    bool used;
    int64_t reset_at_ns;     /* earliest known end of the current window */
    int64_t gap_ns;          /* spacing between admissions in this window (spread) */
    int64_t after_gap_ns;    /* spacing once the window has reset; 0 = unknown */
    int64_t last_gap_ns;     /* last non-zero pace, when after_gap_ns is unknown */
    int64_t next_ns;         /* earliest next admission */
    int64_t window_ns;       /* longest window seen (or advertised) */
    int64_t noted_ns;        /* last response with headers */
    int64_t last_remaining;  /* remaining of the last response (-1: none yet) */
    int64_t limit;           /* the last known limit (-1: unknown) */
    bool refills;            /* remaining rose before the reset: a token bucket */
    /* A bucket's refill rate, measured: over at least BO_QUOTA_RATE_SPAN_NS,
     * the tokens that came back are the rise of remaining plus the answers
     * that spent one.  Whole-second reset fields cannot give it: an epoch
     * reset rounds the time to full up by as much as a second. */
    int64_t mark_ns;         /* start of the current measurement (0: none) */
    int64_t mark_remaining;
    int64_t mark_reset_at_ns; /* the reset the mark's answer announced */
    int64_t mark_answers;    /* answers with headers since the mark */
    bool mark_exact;         /* the mark's reset was told to the millisecond */
    /* remaining values of the answers to requests sent after the mark (bit
     * k: mark_remaining - k was seen): in a fixed window each request the
     * server counts gets its own value, whatever order the answers come in;
     * one seen twice (or at or above the mark's) means tokens came back */
    uint64_t mark_seen[4];
    int64_t refill_gap_ns;   /* measured time per token; 0 = not yet known */
    /* Spend, then wait */
    int64_t avail;           /* sends this window still allows by our own count: the
                                answer's remaining less what was in flight then, less
                                the sends since */
    bool avail_answered;     /* avail comes from an answer of this window, not from
                                the limit assumed once the known reset passed */
    bool rolled;             /* the known reset passed and avail was set from the limit */
    int64_t last_send_ns;    /* the last admission (a spent bucket's pace counts from it) */
    /* Evidence of others: from the mark (the lowest remaining of this window
     * so far) the server may have counted `ev_owed` of our requests: those
     * in flight at the mark and those sent since.  A larger drop is others'. */
    int64_t ev_remaining;    /* -1: no mark */
    int64_t ev_owed;
    int64_t shared_until_ns; /* others spend this quota: spread it evenly until then */
    /* Hints that proved wrong (bo_quota_note_throttle): */
    int64_t late_ns;         /* a refusal came after the reset the headers gave: they round
                                it, so every reset is read as up to this much later */
    unsigned wrong_tokens;   /* refusals of sends a bucket's refill paced */
    bool not_bucket;         /* two of those: the quota is read as a window from then on */
} bo_quota_slot;

typedef struct bo_quota {
    bo_quota_slot slot[BO_QUOTA_SLOTS];
    bo_rng rng;              /* jitter for admissions, seeded by the first note */
    bool seeded;
    bool have_pk;            /* last_pk holds the partition key of the last answer */
    uint64_t last_pk;
    bo_rl_clock server_clock; /* the server's clock against ours, from its Date */
} bo_quota;

void bo_quota_init(bo_quota *q);

/*
 * A response carried quota `rl` at now_ns, to a request sent at sent_ns
 * (`spent`: it used one of the quota; a 429 did not);
 * `inflight` other attempts are under way (their answers will spend quota
 * the headers do not show yet).  Spend, then wait (above); the remaining
 * quota is spread evenly until the reset (for a token bucket, with what
 * comes back meanwhile) while others are known to share it.
 */
void bo_quota_note_answer(bo_quota *q, const bo_rl_quota *rl, unsigned inflight,
                          int64_t sent_ns, bool spent, int64_t now_ns, bo_rng *rng);

/* bo_quota_note_answer for an answer that spent quota, to a request sent
 * after every earlier answer came (one client's sequential requests). */
void bo_quota_note(bo_quota *q, const bo_rl_quota *rl, unsigned inflight, int64_t now_ns,
                   bo_rng *rng);

/*
 * The destination was throttled at now_ns, for a request sent at sent_ns.
 * Call it before the throttle's own quota headers, if any, are noted: when
 * our own count says requests were left in the current window, others
 * spend the quota, and it is spread evenly from now on (for two windows).
 * The server's answers win over its headers: a refusal of a request sent
 * once the reset the headers gave had passed says they round it (OpenAI's
 * "2s"), so the destination waits half a second past it (rounded to the
 * nearest), a whole one at the next such refusal (rounded down), and reads
 * every later reset as that much later; the second refusal of a send a bucket's
 * refill paced says the quota is a fixed window, read as one from then on.
 */
void bo_quota_note_throttle(bo_quota *q, int64_t sent_ns, int64_t now_ns);

/*
 * Earliest admission the quota allows (<= now_ns: now), or BO_QUOTA_BEYOND
 * when it lies past limit_ns (absolute; INT64_MAX: no limit): a reset is a
 * prediction, and one past the bound of a wait the program did not ask
 * for (bo_call_wait_limit: BACKOFF_CAP_MS, the call's deadline) is not
 * waited for at all (a first attempt goes now and its answer teaches; a
 * retry is not worth making).  Once a window's reset has passed with no
 * fresh headers, the slot stops holding anything back.
 */
#define BO_QUOTA_BEYOND INT64_MAX
int64_t bo_quota_next_send(const bo_quota *q, int64_t now_ns, int64_t limit_ns);

/* An attempt was admitted at now_ns: each live slot's count of what is left
 * goes down one; a spent slot's next admission moves on (the reset, or one
 * gap with jitter). */
void bo_quota_on_send(bo_quota *q, int64_t now_ns);

#endif
