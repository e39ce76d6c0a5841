/*
 * bo_window: 000's AIMD congestion window for requests, plus the
 * improvements the simulator proves (see the README).  It decides how many
 * attempts to one destination may be in flight at once.
 *
 *   - on success: slow start (cwnd < ssthresh) +1, else +1/cwnd, and never
 *     above in-flight + 1 (000's bound against boundless growth) nor
 *     window_max;
 *   - on a throttle signal: ssthresh = cwnd * beta, cwnd = ssthresh (reno) or
 *     the initial window (tahoe); on a loss signal (no answer) cwnd = 1, a
 *     single probe at a time;
 *   - signals from attempts sent before the last decrease are ignored: every
 *     decrease starts a new epoch and each attempt carries the epoch it was
 *     sent in (O(1), no sets copied);
 *   - a destination that has not throttled opens its window by the
 *     concurrency its answers prove, and attempts held longer than its round
 *     trips allow stop counting (bo_window.c).
 * Time is passed in (ns); nothing here reads a clock.
 */
#ifndef BO_WINDOW_H
#define BO_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_classify.h"
#include "bo_config.h"

/*
 * The rules bo_window shares with the fleet's window (bo_fleet.c, and the
 * Redis script proven equal to it).
 *
 * Growth per round trip: 0.75 in slow start (x1.75 a round trip instead of
 * x2, so the overshoot when the limit is found is smaller), 1/8 in
 * congestion avoidance (the window sits just under the measured capacity;
 * touching the limit costs a cascade of rejections, so touch it rarely).
 */
#define BO_SS_INC 0.75
#define BO_CA_INC 0.125

/* Near the window a throttle came at, growth is this much slower for this
 * long after (CUBIC's plateau). */
#define BO_PLATEAU_SLOW 8.0
#define BO_PLATEAU_NS 2000000000LL

/*
 * Probing for a limit that rose (BBR's ProbeBW up-phase): once the window
 * has gone a while without a cut, it grows multiplicatively again: +25%
 * over a round trip, then +50%, then slow start's +75%.  How long a while:
 * after a deep cut (the window fell below BO_PROBE_DEEP of what it was: the
 * limit moved) BO_PROBE_SOON, at least BO_PROBE_RTTS round trips; after
 * the first cut, when shallow (slow start touched the limit), BO_PROBE_LATE,
 * at least BO_PROBE_LATE_RTTS round trips; other shallow cuts keep the wait
 * as it is.  A probe that found no room (the
 * cut it drew landed below BO_PROBE_FOUND x where it began) doubles the
 * wait, up to BO_PROBE_MAX; one that found room waits BO_PROBE_SOON.
 * Without it a cap that fell 50 -> 10 and rose again was climbed back at
 * +1/8 a round trip; probing a stable limit often costs rejections, and
 * with a `Retry-After: 1` each one costs its call a second.
 */
#define BO_PROBE_SOON_NS 300000000LL
#define BO_PROBE_RTTS 4
#define BO_PROBE_LATE_NS 2000000000LL
#define BO_PROBE_LATE_RTTS 20
#define BO_PROBE_MAX_NS 8000000000LL
#define BO_PROBE_DEEP 0.7
#define BO_PROBE_GAIN_FIRST 0.25
#define BO_PROBE_FOUND 1.1

/* Delivery-rate estimate (and the fleet's pace) decays by this factor per decrease. */
#define BO_RATE_DECAY 0.9

/*
 * Attempts in flight by the time they were sent: BO_HELD_BINS bins of
 * BO_HELD_BIN_NS, a ring (see bo_window.c, "held requests").
 */
#define BO_HELD_BINS 32
#define BO_HELD_BIN_NS 125000000LL

typedef struct bo_ticket {
    uint64_t epoch;           /* window epoch when the attempt was admitted */
    int64_t sent_ns;          /* admission time */
    uint64_t delivered;       /* window's delivered count at admission */
    unsigned inflight;        /* attempts in flight before this one */
} bo_ticket;

typedef struct bo_window {
    double cwnd;
    double ssthresh;
    double initial;           /* BACKOFF_WINDOW */
    double max;               /* BACKOFF_WINDOW_MAX */
    double beta;
    bo_aimd_mode mode;
    unsigned inflight;
    uint64_t epoch;
    uint64_t delivered;       /* successes so far */
    int64_t min_rtt_ns;       /* smallest success round trip seen; 0 = none yet */
    double delivery_rate;     /* best recent successes per ns; 0 = unknown */
    int64_t next_send_ns;     /* pacing: earliest next admission */
    /* The improvements (BACKOFF_PACING=1, see bo_window.c): */
    bool improved;            /* cfg->pacing: pacing, BDP sizing, rate evidence */
    double rate_limit_hz;     /* paced rate learnt from evidence of a metered rate; 0 = none */
    double rate_ok_hz;        /* highest pace held a whole step without a throttle; 0 = none */
    double rate_bad_hz;       /* pace that drew the last throttle; 0 = unknown */
    double rate_bad_margin;   /* rate_bad_hz is a bucket's rate measured from refusals: the
                                 pace stays this fraction of it at most; 0 = not measured */
    double rate_growth;       /* per-step growth while no upper bound is known */
    int64_t rate_step_ns;     /* start of the current probing step */
    int64_t blocked_ns;       /* last time an admission waited on the window */
    /* Successes in the last second, in BO_WINDOW_BINS bins (the rate evidence). */
    uint32_t bins[10];
    int64_t bin_ns;           /* start of the newest bin; -1 = none yet */
    int64_t first_send_ns;    /* -1 = nothing sent yet */
    int64_t rate_cut_ns;      /* last cut of the pace; -1 = none */
    uint64_t rate_cut_delivered; /* delivered at the last cut of the pace */
    int64_t rate_throttle_ns; /* last throttle seen while paced; -1 = none */
    unsigned rate_quiet;      /* probing steps in a row without a cut of the pace */
    uint32_t rate_step_sends; /* sends since the current probing step began */
    /* A metered rate's bucket (see rate_evidence): its burst, and the run of sends since
     * the last throttle, whose successes beyond the burst tell the refill rate. */
    double burst_est;         /* successes before the first throttle that set a pace; 0 = none */
    int64_t run_ns;           /* first send after the last throttle; -1 = none yet */
    uint64_t run_delivered;   /* delivered at run_ns */
    double run_pace_hz;       /* the pace the whole run went at; -1 = it changed */
    int64_t ceiling_ns;       /* when ceiling was set */
    unsigned ceiling;         /* in-flight + 1 of the last throttle that cut; 0 = none */
    unsigned cuts_in_row;     /* throttle cuts with no success in between */
    unsigned ok_inflight;     /* most in flight before a success sent since the last cut */
    /* Probing for a limit that rose (improved mode, see bo_window.c): */
    int64_t cut_ns;           /* last throttle cut; -1 = none */
    int64_t probe_ns;         /* start of the probe under way; -1 = none */
    int64_t probe_every_ns;   /* quiet time after a cut before the next probe */
    double probe_from;        /* window when the probe began */
    int64_t hint_ns;          /* Retry-After of the last throttle (0: it had none) */
    /* Room and held requests (improved mode, see bo_window.c): */
    int64_t signal_ns;        /* last throttle or loss signal, ignored ones too; -1 = none */
    int64_t srtt_ns;          /* smoothed success round trip; 0 = none yet */
    uint32_t held_n[BO_HELD_BINS];   /* attempts in flight sent in bin held_bin[i] */
    int64_t held_bin[BO_HELD_BINS];  /* send time / BO_HELD_BIN_NS of what held_n[i] counts */
    uint32_t held_young;      /* attempts in flight in bins not aged yet: the ones that count
                                 while aging applies (the sum of held_n of those bins) */
    int64_t held_aged;        /* bins before this one are aged: their attempts count no more */
    int64_t answered_sent_ns; /* send time of the latest-sent attempt that ended */
    double room_cap;          /* after the first cut that ended room: what late successes of
                                 attempts sent before it may bring the window back to */
} bo_window;

/* Successes over the last second (per second); 0 = none yet. */
double bo_window_measured_rate(const bo_window *w, int64_t now_ns);

/* beta = cfg->beta when set, else the policy's own default. */
void bo_window_init(bo_window *w, const bo_config *cfg);

/*
 * The window holds what its own rules can leave there at now_ns: a window,
 * threshold, initial window and bound that are finite and at least 1, a
 * beta in (0, 1), a pace that is finite and not negative, and when paced
 * (aimd, whose admissions wait for it: other policies let its next send
 * run ahead unread) a next send at most the longest gap it sets ahead.  A
 * window read from a state file others can write (a bug, another build, a
 * hand) is checked before it is obeyed (bo_dest_sane).
 */
bool bo_window_sane(const bo_window *w, int64_t now_ns, bool paced);

/* A slot is free and pacing allows a send at now_ns. */
bool bo_window_can_send(bo_window *w, int64_t now_ns);

/*
 * The attempts in flight that hold the window at now_ns: all of them once
 * the destination has throttled recently; otherwise those younger than a
 * bound from its own round trips (bo_window.c: held requests are not
 * throttling).
 */
unsigned bo_window_counted(bo_window *w, int64_t now_ns);

/*
 * When a full window next frees a slot without a completion (an attempt
 * in flight ages out of the count); INT64_MAX when none will.
 */
int64_t bo_window_next_room_ns(const bo_window *w, int64_t now_ns);

/* Earliest time at which pacing allows the next send (<= now: now). */
int64_t bo_window_next_send_ns(const bo_window *w, int64_t now_ns);

/*
 * A pace whose next send lies past limit_ns (a degenerate rate, or state
 * another process wrote) is not waited for: the next send may go at now_ns
 * (and the one after it a gap later, as paced).
 */
void bo_window_bound_pace(bo_window *w, int64_t limit_ns, int64_t now_ns);

/* Admit one attempt: in-flight +1, ticket stamped. */
void bo_window_on_send(bo_window *w, int64_t now_ns, bo_ticket *t);

/* The attempt succeeded: in-flight -1, window grows. */
void bo_window_on_success(bo_window *w, const bo_ticket *t, int64_t now_ns);

/*
 * The attempt ended with a congestion signal: in-flight -1 and, unless the
 * ticket predates the last decrease, a decrease.  Returns true when it
 * decreased the window.
 */
bool bo_window_on_signal(bo_window *w, const bo_ticket *t, bo_signal sig, int64_t now_ns);

/*
 * The last throttle told the program to wait hint_ns (its Retry-After; 0:
 * none).  Every throttle of the destination then costs the call it hits
 * that long, so congestion avoidance touches the limit less often.
 */
void bo_window_on_hint(bo_window *w, int64_t hint_ns);

/* The attempt ended with neither success nor signal: in-flight -1 only. */
void bo_window_on_release(bo_window *w, const bo_ticket *t);

/*
 * An admission had to wait for a slot or for pacing at now_ns.  The
 * window is then not application-limited, so (improved mode) successes may
 * grow it past in-flight + 1: pacing keeps in-flight below cwnd on purpose.
 */
void bo_window_on_blocked(bo_window *w, int64_t now_ns);

/* The policy's own beta for aimd (used when BACKOFF_BETA is 0). */
double bo_window_default_beta(void);

#endif
