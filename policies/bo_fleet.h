/*
 * bo_fleet: the fleet's window and pace of one destination
 * (BACKOFF_SHARE=redis), as pure C.  The fleet runs these rules inside Redis
 * (shim/dest/fleet.lua, one script: every host's admissions and completions
 * are atomic there); this is the same algorithm step for step, so that it
 * lives in policies/ beside bo_window, shares its constants (the slow-start
 * gain, the plateau, the probing for a limit that rose), and is proven
 * equal to the script: tests/helpers/fleet_equal drives both through the
 * same events against a real redis-server and requires the same state
 * after every one.
 *
 * It is a window of leases, not bo_window's tickets: a host cannot carry
 * per-attempt state across the fleet, so a lease's expiry stands for its
 * send time, a throttle is read as a concurrency limit when the fleet
 * delivered at least a tenth of what the window could at the smoothed round
 * trip (else as a metered rate, paced), and congestion avoidance adds
 * 1/cwnd a success while the window is nearly full or calls wait.
 *
 * Times are microseconds of Redis's clock.  Members are the calls' names
 * ("host:pid:nonce:seq"); the leases and the queue are sorted sets, ordered
 * as Redis orders them (score, then the member's bytes).
 */
#ifndef BO_FLEET_H
#define BO_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The rules' constants, in the script's order (fleet.lua's ARGV[8]). */
typedef struct bo_fleet_rules {
    double ss_inc;          /* slow-start growth per success (bo_window's) */
    double plateau_slow;    /* growth divided near the last cut's window... */
    double plateau_us;      /* ...for this long after it */
    double probe_soon_us;   /* wait before probing after a deep cut, at least */
    double probe_soon_rtts; /* ...this many round trips */
    double probe_late_us;   /* wait after a first shallow cut, at least */
    double probe_late_rtts; /* ...this many round trips */
    double probe_max_us;    /* longest wait between probes */
    double probe_deep;      /* a cut below this fraction is deep */
    double probe_gain;      /* first probing gain per success, doubling a round trip */
    double probe_found;     /* a probe's cut above this x its start found room */
    double rate_decay;      /* the pace's cut */
    double queue_poll_us;   /* longest wait of a queued call between asks */
    double queue_drop_us;   /* a queued call silent this long leaves the queue */
    double min_window;      /* at or below it a throttle cuts the pace, not the window */
    double cap_fraction;    /* delivery that reads a throttle as a concurrency limit */
} bo_fleet_rules;

/* The rules, from bo_window.h's constants and the fleet's own. */
void bo_fleet_rules_default(bo_fleet_rules *r);
/* The rules as the script's ARGV[8] (exact: %.17g); the length written. */
int bo_fleet_rules_format(const bo_fleet_rules *r, char *buf, size_t len);

#define BO_FLEET_MEMBERS 64
#define BO_FLEET_MEMBER_LEN 64

typedef struct bo_fleet_member {
    char id[BO_FLEET_MEMBER_LEN];
    double score;
} bo_fleet_member;

/* One destination's fleet state: the script's hash and its sorted sets. */
typedef struct bo_fleet {
    bool exists;            /* the hash is there (else its fields' defaults) */
    double cwnd, ssth, rate, next, cut, b, ok0, ok1, ceil, rtt, pw, ps, pf;
    bo_fleet_member leases[BO_FLEET_MEMBERS]; /* score: the lease's expiry */
    int nleases;
    bo_fleet_member queue[BO_FLEET_MEMBERS];  /* score: the first ask */
    int nqueue;
    bo_fleet_member polled[BO_FLEET_MEMBERS]; /* score: the last ask */
    int npolled;
} bo_fleet;

/* The arguments of every run but the op, the member and the outcome. */
typedef struct bo_fleet_args {
    double lease_us;        /* a lease's life */
    double window;          /* BACKOFF_WINDOW: the first cwnd */
    double beta;
} bo_fleet_args;

void bo_fleet_init(bo_fleet *f);

/*
 * One run of the script at now_us: op 'a' (admit: res {1, leases} when the
 * member leased, {0, wait_us} when it must ask again), 'c' (complete, with
 * outcome 's' success, 't' throttle, 'l' loss, 'o' other) or 'r' (release:
 * an attempt that never ran, or a call leaving the queue); res as the
 * script returns it.  false when the state cannot hold another member (the
 * model's bound; the script has none).
 */
bool bo_fleet_run(bo_fleet *f, const bo_fleet_rules *rules, const bo_fleet_args *a, char op,
                  const char *id, char outcome, double now_us, int64_t res[2]);

#endif
