/*
 * Unit tests for bo_engine: the admission / completion loop the shim and
 * the simulator drive.  Policy none never retries; delay policies admit at
 * once and wait their schedule; max_attempts and max_time_ms bound a call;
 * Retry-After is the least wait, and one past the cap or the deadline is
 * not waited for (the answer stands), nor is a quota's reset or an instant
 * of the destination's state past those bounds; aimd waits for a window
 * slot and probes a silent destination one attempt at a time, spaced,
 * lets a destination that has not throttled have what it proved it takes,
 * and wakes a call behind held attempts when they stop counting;
 * responsive's gap applies before every attempt.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bo_config.h"
#include "bo_engine.h"

#define MS 1000000LL

static const bo_outcome OK = {BO_VERDICT_SUCCESS, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
static const bo_outcome THROTTLED = {BO_VERDICT_RETRY, BO_SIGNAL_THROTTLE, false, BO_CAUSE_503};
static const bo_outcome LOST = {BO_VERDICT_RETRY, BO_SIGNAL_LOSS, false, BO_CAUSE_CONNECT};
static const bo_outcome RETRY_NOSIG = {BO_VERDICT_RETRY, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
static const bo_outcome FINAL = {BO_VERDICT_FINAL, BO_SIGNAL_NONE, false, BO_CAUSE_NONE};
static const bo_outcome RATE_LIMITED = {BO_VERDICT_RETRY, BO_SIGNAL_THROTTLE, true, BO_CAUSE_429};
static const bo_outcome KEY_BUSY = {BO_VERDICT_RETRY, BO_SIGNAL_KEY_BUSY, false, BO_CAUSE_NONE};

static bo_config cfg_for(bo_policy_kind p)
{
    bo_config c;
    bo_config_defaults(&c);
    c.policy = p;
    return c;
}

/* Admit (must be GO) and complete one attempt; returns the decision. */
static bo_next one_attempt(bo_dest *d, const bo_config *c, bo_call *call, int64_t now,
                           bo_outcome o, int64_t ra, bo_rng *rng, int64_t *until)
{
    int64_t u = 0;
    ck_assert_int_eq(bo_dest_admit(d, c, call, now, &u), BO_ADMIT_GO);
    return bo_dest_complete(d, c, call, o, ra, now, rng, until);
}

START_TEST(test_none_never_retries)
{
    bo_config c = cfg_for(BO_POLICY_NONE);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, 5000 * MS, &rng, &until),
                     BO_NEXT_DONE);
    ck_assert_uint_eq(call.attempts, 1);
    ck_assert_uint_eq(call.throttles, 1);
    ck_assert_uint_eq(d.window.inflight, 0);
}
END_TEST

/*
 * The call state machine: the engine moves the phase, the driver follows it.
 * ADMIT -> ATTEMPT (GO) -> WAIT (RETRY, until the retry time) -> ADMIT once
 * due -> ATTEMPT -> DONE; a cancelled attempt goes back to ADMIT; the last
 * result and whether it is one the engine would retry are kept.
 */
START_TEST(test_phases)
{
    bo_config c = cfg_for(BO_POLICY_EXPONENTIAL);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(call.phase, BO_PHASE_ADMIT);
    ck_assert(!call.have_result && !bo_call_failed_retryable(&call));
    ck_assert(!bo_call_due(&call, 0)); /* not waiting */

    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
    ck_assert_int_eq(call.phase, BO_PHASE_ATTEMPT);
    bo_dest_cancel(&d, &call); /* the attempt never ran */
    ck_assert_int_eq(call.phase, BO_PHASE_ADMIT);
    ck_assert_uint_eq(call.attempts, 0);

    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, 10 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(call.phase, BO_PHASE_WAIT);
    ck_assert_int_eq(call.until_ns, until);
    ck_assert(until > 10 * MS);
    ck_assert(bo_call_failed_retryable(&call));
    ck_assert(!bo_call_due(&call, until - 1));
    ck_assert_int_eq(call.phase, BO_PHASE_WAIT);
    int64_t again = 0; /* asked before its time, a retry waits for it */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, until - 1, &again), BO_ADMIT_WAIT);
    ck_assert_int_eq(again, until);
    ck_assert_int_eq(call.phase, BO_PHASE_WAIT);
    ck_assert(bo_call_due(&call, until));
    ck_assert_int_eq(call.phase, BO_PHASE_ADMIT);

    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, until, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, OK, -1, until, &rng, &until), BO_NEXT_DONE);
    ck_assert_int_eq(call.phase, BO_PHASE_DONE);
    ck_assert(call.have_result && !bo_call_failed_retryable(&call));

    /* a retryable failure that is not retried (attempts spent) stands as such */
    c.max_attempts = 1;
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert_int_eq(call.phase, BO_PHASE_DONE);
    ck_assert(bo_call_failed_retryable(&call));

    /* waiting for admission keeps ADMIT with the time to ask again; giving up is DONE */
    bo_config a = cfg_for(BO_POLICY_AIMD);
    bo_dest_init(&d, &a, 0);
    d.next_send_ns = 50 * MS;
    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 20 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &a, &call, 0, &until), BO_ADMIT_WAIT);
    ck_assert_int_eq(call.phase, BO_PHASE_ADMIT);
    ck_assert_int_eq(call.until_ns, 20 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &a, &call, 20 * MS, &until), BO_ADMIT_GIVE_UP);
    ck_assert_int_eq(call.phase, BO_PHASE_DONE);
    ck_assert(!call.have_result);
    bo_call_set_deadline(&call, INT64_MAX); /* nothing but the phase stands in the way now */
    d.next_send_ns = 0;
    /* DONE: no attempt */
    ck_assert_int_eq(bo_dest_admit(&d, &a, &call, 30 * MS, &until), BO_ADMIT_GIVE_UP);
    ck_assert_uint_eq(call.attempts, 0);
}
END_TEST

START_TEST(test_success_and_final_are_done)
{
    bo_config c = cfg_for(BO_POLICY_EXPONENTIAL);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, OK, -1, &rng, &until), BO_NEXT_DONE);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, FINAL, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert_uint_eq(call.attempts, 1);
    ck_assert_uint_eq(d.window.inflight, 0);
}
END_TEST

START_TEST(test_delay_policy_admits_at_once_and_waits_schedule)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.base_ms = 250;
    c.max_attempts = 0;
    c.window = 1; /* the window must not matter for delay policies */
    bo_dest d;
    bo_call calls[5];
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    for (int i = 0; i < 5; i++) {
        bo_call_begin(&calls[i], 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[i], 0, &until), BO_ADMIT_GO);
    }
    ck_assert_uint_eq(d.window.inflight, 5);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &calls[0], THROTTLED, -1, 10 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(until, 260 * MS);
    /* The retry is admitted as soon as it asks. */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[0], 260 * MS, &until), BO_ADMIT_GO);
    ck_assert_uint_eq(calls[0].attempts, 2);
}
END_TEST

START_TEST(test_max_attempts)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_attempts = 3;
    c.retry_budget = 0; /* the destination's budget is test_budget's */
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, now = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert_uint_eq(call.attempts, 3);
    /* 0 means no limit. */
    c.max_attempts = 0;
    bo_call_begin(&call, now);
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, RETRY_NOSIG, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
    }
}
END_TEST

START_TEST(test_max_time)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_attempts = 0;
    c.retry_budget = 0;
    c.base_ms = 100;
    c.max_time_ms = 250;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(until, 100 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 100 * MS, RETRY_NOSIG, -1, &rng, &until),
                     BO_NEXT_RETRY);
    /* 200 ms + 100 ms would pass 250 ms: no new attempt, done now. */
    ck_assert_int_eq(one_attempt(&d, &c, &call, 200 * MS, RETRY_NOSIG, -1, &rng, &until),
                     BO_NEXT_DONE);
    /* A retry that asks after the deadline gives up; a first attempt never does. */
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 300 * MS, &until), BO_ADMIT_GIVE_UP);
    bo_call fresh;
    bo_call_begin(&fresh, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &fresh, 10000 * MS, &until), BO_ADMIT_GO);
}
END_TEST

/*
 * The program's own deadline: a retry only when its wait and another
 * attempt (as long as the last one, 10 ms at least) fit before it; it and
 * max_time_ms combine, the sooner wins; unlike max_time_ms it bounds the
 * first attempt's admission too.
 */
START_TEST(test_program_deadline)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_attempts = 0;
    c.retry_budget = 0;
    c.base_ms = 100;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);

    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 2500 * MS);
    ck_assert_int_eq(bo_call_remaining_ns(&c, &call, 500 * MS), 2000 * MS);
    /* Retry-After 1 s: attempts at 0, 1 s, 2 s; a third wait would end at 3 s */
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, 1000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(until, 1000 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 1000 * MS, THROTTLED, 1000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 2000 * MS, THROTTLED, 1000 * MS, &rng, &until),
                     BO_NEXT_DONE);

    /* a wait that ends 5 ms before the deadline leaves no room for an attempt */
    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 105 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_DONE);
    /* ... nor when the last attempt took longer than what would be left */
    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 400 * MS);
    int64_t u = 0;
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, RETRY_NOSIG, -1, 250 * MS, &rng, &until),
                     BO_NEXT_DONE);

    /* the sooner of max_time_ms and the program's deadline wins */
    c.max_time_ms = 150;
    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 10000 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, RETRY_NOSIG, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 100 * MS, RETRY_NOSIG, -1, &rng, &until),
                     BO_NEXT_DONE);
    c.max_time_ms = 0;

    /* a first attempt waiting for admission (aimd: a throttle before any
     * success holds the destination) waits no later than the deadline, then
     * gives up */
    bo_config a = cfg_for(BO_POLICY_AIMD);
    bo_dest_init(&d, &a, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &a, &call, 0, THROTTLED, 5000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    bo_call_begin(&call, 10 * MS);
    bo_call_set_deadline(&call, 40 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &a, &call, 10 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_eq(until, 40 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &a, &call, 40 * MS, &until), BO_ADMIT_GIVE_UP);
}
END_TEST

/*
 * Retry-After is the least wait of the call; one past the cap is a refusal
 * not waited for: the answer stands at once (curl hands a Retry-After past
 * --retry-max-time over so), never a retry every cap.
 */
START_TEST(test_retry_after_least_wait_bounded_by_cap)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_attempts = 0;
    c.retry_budget = 0;
    c.base_ms = 100;
    c.cap_ms = 3000;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    /* Retry-After 2 s beats the 100 ms schedule. */
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, 2000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(until, 2000 * MS);
    /* A shorter hint does not shorten the schedule. */
    ck_assert_int_eq(one_attempt(&d, &c, &call, until, THROTTLED, 10 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(until, 2100 * MS);
    /* The cap itself is waited... */
    ck_assert_int_eq(one_attempt(&d, &c, &call, until, THROTTLED, 3000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_eq(until, 5100 * MS);
    /* ...an hour past the 3 s cap is not: done at once, for every policy */
    ck_assert_int_eq(one_attempt(&d, &c, &call, until, THROTTLED, 3600000 * MS, &rng, &until),
                     BO_NEXT_DONE);
    ck_assert_int_eq(until, 5100 * MS);
    ck_assert_int_eq(call.phase, BO_PHASE_DONE);
    ck_assert(call.past_bounds); /* told apart from a spent budget (the verbose line) */
    ck_assert(bo_call_failed_retryable(&call)); /* the program's own retry continues it */
    static const bo_policy_kind all[] = {BO_POLICY_AIMD, BO_POLICY_RESPONSIVE,
                                         BO_POLICY_EXPONENTIAL, BO_POLICY_AWS_ADAPTIVE};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
        bo_config p = cfg_for(all[i]);
        bo_dest_init(&d, &p, 0);
        bo_call_begin(&call, 0);
        ck_assert_int_eq(
            one_attempt(&d, &p, &call, 0, RATE_LIMITED, p.cap_ms * MS + 1, &rng, &until),
            BO_NEXT_DONE);
        bo_dest_init(&d, &p, 0);
        bo_call_begin(&call, 0);
        ck_assert_int_eq(one_attempt(&d, &p, &call, 0, RATE_LIMITED, INT64_MAX, &rng, &until),
                         BO_NEXT_DONE);
        /* and it holds nobody else back for it (responsive holds the
         * destination for a Retry-After it waits; what else follows a
         * throttle, an RTO, a token, is a policy's own and short) */
        bo_call_begin(&call, 1 * MS);
        int64_t u = 0;
        if (bo_dest_admit(&d, &p, &call, 1 * MS, &u) == BO_ADMIT_WAIT)
            ck_assert_msg(u < 10000 * MS, "policy %d until %lld", all[i], (long long)u);
    }
    /* past the program's deadline, or max_time_ms: done at once as well */
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    bo_call_set_deadline(&call, 1500 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, 2000 * MS, &rng, &until),
                     BO_NEXT_DONE);
    c.max_time_ms = 1500;
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, 2000 * MS, &rng, &until),
                     BO_NEXT_DONE);
}
END_TEST

/*
 * The bound of a wait the program did not ask for: BACKOFF_CAP_MS from its
 * start, and the call's deadline (the program's own, max_time_ms from the
 * call's start), the sooner.
 */
START_TEST(test_wait_limit)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_call call;
    c.cap_ms = 3000;
    bo_call_begin(&call, 100 * MS);
    ck_assert_int_eq(bo_call_wait_limit(&c, &call, 100 * MS), 3100 * MS);
    ck_assert_int_eq(bo_call_wait_limit(&c, &call, 1000 * MS), 4000 * MS);
    bo_call_set_deadline(&call, 2000 * MS);
    ck_assert_int_eq(bo_call_wait_limit(&c, &call, 100 * MS), 2000 * MS);
    bo_call_set_deadline(&call, INT64_MAX);
    c.max_time_ms = 1000;
    ck_assert_int_eq(bo_call_wait_limit(&c, &call, 500 * MS), 1100 * MS);
    /* no overflow near the end of time */
    c.max_time_ms = 0;
    ck_assert_int_eq(bo_call_wait_limit(&c, &call, INT64_MAX - 1), INT64_MAX);
}
END_TEST

START_TEST(test_aimd_retry_after_holds_only_its_call)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.max_attempts = 0;
    c.retry_budget = 0;
    bo_dest d;
    bo_call a, b;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&a, 0);
    /* A success first: a throttle before any success holds the destination. */
    ck_assert_int_eq(one_attempt(&d, &c, &a, 0, OK, -1, &rng, &until), BO_NEXT_DONE);
    bo_call_begin(&a, 10 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &a, 10 * MS, THROTTLED, 1000 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_ge(until, 1010 * MS);
    /* Another thread's first attempt is not held by it (a constant
     * Retry-After from a concurrency cap would stall every call); the window
     * may pace it (one success then a throttle is evidence of a metered rate),
     * but not until the Retry-After. */
    bo_call_begin(&b, 20 * MS);
    if (bo_dest_admit(&d, &c, &b, 20 * MS, &until) == BO_ADMIT_WAIT) {
        ck_assert_int_lt(until, 1000 * MS);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &b, until, &until), BO_ADMIT_GO);
    }
}
END_TEST

/* Before any success, a throttle holds the whole destination for an RTO. */
START_TEST(test_aimd_first_throttle_holds_destination)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call a, b;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&a, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &a, 0, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    bo_call_begin(&b, 1 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &b, 1 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_ge(until, 100 * MS);
}
END_TEST

START_TEST(test_aimd_waits_for_a_slot)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.window = 2;
    c.pacing = false;
    bo_dest d;
    bo_call calls[3];
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    for (int i = 0; i < 3; i++)
        bo_call_begin(&calls[i], 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[0], 0, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[1], 0, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[2], 0, &until), BO_ADMIT_WAIT);
    ck_assert_int_gt(until, 0); /* a deadline to ask again, even if no wake-up comes */
    ck_assert_uint_eq(calls[2].attempts, 0);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &calls[0], OK, -1, 50 * MS, &rng, &until),
                     BO_NEXT_DONE);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &calls[2], 50 * MS, &until), BO_ADMIT_GO);
    /* Cancel frees the slot and un-counts the attempt. */
    bo_dest_cancel(&d, &calls[2]);
    ck_assert_uint_eq(d.window.inflight, 1);
    ck_assert_uint_eq(calls[2].attempts, 0);
    ck_assert_uint_eq(calls[0].attempts + calls[1].attempts, 2);
}
END_TEST

/*
 * A throttled aimd call waits an RTO before it seeks admission
 * again (BACKOFF_BASE_MS, doubling at each throttle of the call, times a
 * jitter in [1, 1.5)); against an instant 429 it can no longer spend its
 * attempts in milliseconds.
 */
START_TEST(test_aimd_throttle_waits_an_rto)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.max_attempts = 0;
    c.retry_budget = 0;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, t = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_ge(until, 100 * MS);
    ck_assert_int_lt(until, 150 * MS);
    ck_assert_double_lt(d.window.cwnd, 20);
    int64_t spent = 0;
    for (int k = 1; k < 8; k++) {
        t = until;
        while (bo_dest_admit(&d, &c, &call, t, &until) != BO_ADMIT_GO)
            t = until;
        ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, t, &rng, &until),
                         BO_NEXT_RETRY);
        ck_assert_int_ge(until - t, (100 * MS) << k);
        ck_assert_int_lt(until - t, (150 * MS) << k);
        spent = until;
    }
    ck_assert_int_ge(spent, 12700 * MS); /* 8 attempts take 12.7 s or more, not milliseconds */
    /* BACKOFF_PACING=0 is 000's exact algorithm: the window alone, no wait. */
    c.pacing = false;
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(until, 0);
}
END_TEST

/*
 * The RTO's round trip is the refusal's own when it is shorter than the
 * smallest success's (article 000: successes 600 ms, refusals 150 ms): the
 * throttled call waits 150 ms x [1, 1.5), not 600 ms x [1, 1.5); a refusal
 * slower than the successes waits their round trip, as before.
 */
START_TEST(test_aimd_rto_from_the_refusal_round_trip)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.retry_budget = 0;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, u = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &u), BO_ADMIT_GO);
    bo_dest_complete(&d, &c, &call, OK, -1, 600 * MS, &rng, &until);
    ck_assert_int_eq(d.window.min_rtt_ns, 600 * MS);
    bo_call_begin(&call, 1000 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 1000 * MS, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, 1150 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_ge(until - 1150 * MS, 150 * MS);
    ck_assert_int_lt(until - 1150 * MS, 225 * MS);
    /* a refusal slower than the successes: their round trip */
    bo_call_begin(&call, 3000 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 3000 * MS, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, 3900 * MS, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert_int_ge(until - 3900 * MS, 600 * MS);
    ck_assert_int_lt(until - 3900 * MS, 900 * MS);
}
END_TEST

/*
 * A 409 to a request with an Idempotency-Key (the server is still
 * processing the key) says nothing about capacity: the window neither
 * shrinks nor learns, nothing holds the destination; but the retry waits the
 * throttle's RTO (doubling) under aimd, BACKOFF_PACING=0 included, and
 * under responsive; the delay policies wait their schedule.
 */
START_TEST(test_key_busy_waits_without_a_cut)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.max_attempts = 0;
    c.retry_budget = 0;
    bo_dest d;
    bo_call call, other;
    bo_rng rng;
    int64_t until = 0, t = 0;
    bo_rng_seed(&rng, 1);
    for (int pacing = 1; pacing >= 0; pacing--) {
        c.pacing = pacing != 0;
        bo_dest_init(&d, &c, 0);
        double cwnd = d.window.cwnd;
        bo_call_begin(&call, 0);
        ck_assert_int_eq(one_attempt(&d, &c, &call, 0, KEY_BUSY, -1, &rng, &until),
                         BO_NEXT_RETRY);
        ck_assert_int_ge(until, 100 * MS);
        ck_assert_int_lt(until, 150 * MS);
        ck_assert_double_eq(d.window.cwnd, cwnd);
        ck_assert_uint_eq(d.window.inflight, 0);
        ck_assert_uint_eq(d.window.cuts_in_row, 0);
        /* Another call to the destination goes at once. */
        bo_call_begin(&other, 1 * MS);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &other, 1 * MS, &t), BO_ADMIT_GO);
        ck_assert_int_eq(bo_dest_complete(&d, &c, &other, OK, -1, 2 * MS, &rng, &t),
                         BO_NEXT_DONE);
        /* The retry asked early waits for its time; the next busy answer doubles. */
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 50 * MS, &t), BO_ADMIT_WAIT);
        ck_assert_int_eq(t, until);
        t = until;
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GO);
        ck_assert_int_eq(bo_dest_complete(&d, &c, &call, KEY_BUSY, -1, t, &rng, &until),
                         BO_NEXT_RETRY);
        ck_assert_int_ge(until - t, 200 * MS);
        ck_assert_int_lt(until - t, 300 * MS);
        ck_assert_uint_eq(d.window.cuts_in_row, 0);
        ck_assert_int_le(d.next_send_ns, 2 * MS); /* never a hold of the destination */
    }
    /* responsive: no failure streak, yet the retry waits. */
    c = cfg_for(BO_POLICY_RESPONSIVE);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, KEY_BUSY, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_ge(until, 100 * MS);
    ck_assert_int_eq(bo_responsive_interval_ns(&d.pacing), 0);
    /* exponential: its schedule's first delay, the base. */
    c = cfg_for(BO_POLICY_EXPONENTIAL);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 0, KEY_BUSY, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(until, 100 * MS);
}
END_TEST

START_TEST(test_aimd_probe_spacing_after_loss)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    c.max_attempts = 0;
    c.retry_budget = 0;
    c.base_ms = 100;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, now = 0;
    int64_t expect[] = {100, 200, 400, 800, 1000, 1000};
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, LOST, -1, &rng, &until), BO_NEXT_RETRY);
        ck_assert_double_eq_tol(d.window.cwnd, 1, 1e-9);
        ck_assert_uint_eq(d.probe_failures, (unsigned)i + 1);
        /* Asking earlier than the spacing waits; at it, goes. */
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now + 1, &until), BO_ADMIT_WAIT);
        ck_assert_int_eq(until, now + expect[i] * MS);
        now = until;
    }
    ck_assert_uint_eq(call.attempts, 6);
    /* An answer ends probing. */
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, OK, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert_uint_eq(d.probe_failures, 0);
}
END_TEST

START_TEST(test_responsive_gap_before_every_attempt)
{
    bo_config c = cfg_for(BO_POLICY_RESPONSIVE);
    c.max_attempts = 0;
    c.retry_budget = 0;
    c.base_ms = 100;
    c.jitter = 0;
    bo_dest d;
    bo_call a, b;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&a, 0);
    /* No failure yet: no gap. */
    ck_assert_int_eq(one_attempt(&d, &c, &a, 0, OK, -1, &rng, &until), BO_NEXT_DONE);
    bo_call_begin(&a, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &a, 0, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(bo_responsive_interval_ns(&d.pacing), 100 * MS);
    /* A new call (not a retry) to the destination waits the gap too. */
    bo_call_begin(&b, 10 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &b, 10 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_eq(until, 100 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &b, 100 * MS, &until), BO_ADMIT_GO);
    /* And the next one waits a gap after that admission. */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &a, 150 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_eq(until, 200 * MS);
}
END_TEST

START_TEST(test_counters)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_attempts = 0;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    one_attempt(&d, &c, &call, 0, THROTTLED, -1, &rng, &until);
    one_attempt(&d, &c, &call, until, LOST, -1, &rng, &until);
    one_attempt(&d, &c, &call, until, RETRY_NOSIG, -1, &rng, &until);
    one_attempt(&d, &c, &call, until, OK, -1, &rng, &until);
    ck_assert_uint_eq(call.attempts, 4);
    /* the one throttle; the loss and the plain failure are not throttles */
    ck_assert_uint_eq(call.throttles, 1);
    ck_assert_uint_eq(d.window.inflight, 0);
}
END_TEST

/*
 * Rate-limit headers: a spent quota holds the next admission until the
 * reset (bounded by the cap), for every policy but none; not when the same
 * answer had Retry-After (it wins), nor with BACKOFF_RATELIMIT_HEADERS=0.
 */
static int64_t admit_after_quota(bo_policy_kind p, bool on, int64_t ra, int64_t cap_ms)
{
    bo_config c = cfg_for(p);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rl_quota q = {100, 0, 3000 * MS, -1, 0, false};
    c.ratelimit_headers = on;
    c.cap_ms = cap_ms;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
    bo_dest_note_quota(&d, &c, &call, &q, OK, ra, 10 * MS, &rng);
    bo_dest_complete(&d, &c, &call, OK, -1, 10 * MS, &rng, &until);
    bo_call_begin(&call, 10 * MS);
    if (bo_dest_admit(&d, &c, &call, 10 * MS, &until) == BO_ADMIT_GO)
        return 10 * MS;
    return until;
}

START_TEST(test_quota_holds_admission)
{
    int64_t t = admit_after_quota(BO_POLICY_AIMD, true, -1, 20000);
    ck_assert_msg(t >= 3010 * MS && t <= 3010 * MS + 100 * MS, "until %lld", (long long)t);
    t = admit_after_quota(BO_POLICY_EXPONENTIAL, true, -1, 20000);
    ck_assert(t >= 3010 * MS);
    /* a reset past the cap is a prediction not waited for: the program's
     * attempt goes now (not at the cap, to be held a cap again) */
    ck_assert_int_eq(admit_after_quota(BO_POLICY_AIMD, true, -1, 500), 10 * MS);
    ck_assert_int_eq(admit_after_quota(BO_POLICY_EXPONENTIAL, true, -1, 500), 10 * MS);
    ck_assert_int_eq(admit_after_quota(BO_POLICY_AIMD, false, -1, 20000), 10 * MS);
    ck_assert_int_eq(admit_after_quota(BO_POLICY_AIMD, true, 1000 * MS, 20000), 10 * MS);
    ck_assert_int_eq(admit_after_quota(BO_POLICY_NONE, true, -1, 20000), 10 * MS);
}
END_TEST

/*
 * A quota spent until a reset past the bounds of a wait the program did
 * not ask for (the cap, its deadline, max_time_ms): the program's attempt
 * goes now, and its answer teaches; a retry it would hold is not made (a
 * 429, or GitHub's 403, with such a reset stands at once; a retry admitted
 * later meets it: given up); one within the bounds is still waited for.
 */
static void spend_until(bo_dest *d, const bo_config *c, int64_t reset_ns, bo_rng *rng)
{
    bo_call call;
    int64_t until = 0;
    bo_rl_quota q = {60, 0, reset_ns, -1, 0, false};
    bo_dest_init(d, c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(d, c, &call, 0, &until), BO_ADMIT_GO);
    bo_dest_note_quota(d, c, &call, &q, OK, -1, 10 * MS, rng);
    ck_assert_int_eq(bo_dest_complete(d, c, &call, OK, -1, 10 * MS, rng, &until), BO_NEXT_DONE);
}

START_TEST(test_quota_past_the_bounds_is_not_waited_for)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0;
    bo_rl_quota q = {60, 0, 3600000 * MS, -1, 0, false};
    c.ratelimit_headers = true;
    bo_rng_seed(&rng, 1);

    /* an hour ahead, a server that never refuses: every request goes at
     * once, each answer saying the same */
    spend_until(&d, &c, 3600000 * MS, &rng);
    for (int i = 0; i < 5; i++) {
        int64_t t = (20 + i * 20000) * MS; /* asked again a cap later: still nothing held */
        bo_call_begin(&call, t);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GO);
        bo_dest_note_quota(&d, &c, &call, &q, OK, -1, t + 1 * MS, &rng);
        ck_assert_int_eq(bo_dest_complete(&d, &c, &call, OK, -1, t + 1 * MS, &rng, &until),
                         BO_NEXT_DONE);
    }

    /* 15 s ahead, within the 20 s cap: waited for, and told as the quota's
     * (a caller that learns the program's deadline later weighs it) */
    spend_until(&d, &c, 15000 * MS, &rng);
    bo_call_begin(&call, 20 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 20 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_ge(until, 15010 * MS);
    ck_assert_int_eq(call.quota_hold_ns, until);
    /* ...but not past the program's deadline (curl --max-time 5), nor past
     * max_time_ms: the attempt goes as plain, never the program's timeout */
    bo_call_begin(&call, 20 * MS);
    bo_call_set_deadline(&call, 5020 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 20 * MS, &until), BO_ADMIT_GO);
    bo_dest_cancel(&d, &call);
    c.max_time_ms = 5000;
    bo_call_begin(&call, 20 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 20 * MS, &until), BO_ADMIT_GO);
    bo_dest_cancel(&d, &call);
    c.max_time_ms = 0;

    /* a 429 (or GitHub's 403) with no Retry-After whose reset lies past the
     * cap stands at once; within the cap it is retried (after the reset) */
    bo_rl_quota far = {60, 0, 3600000 * MS, -1, 0, false};
    bo_rl_quota near = {60, 0, 2000 * MS, -1, 0, false};
    for (int k = 0; k < 2; k++) {
        bo_dest_init(&d, &c, 0);
        bo_call_begin(&call, 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
        bo_dest_note_quota(&d, &c, &call, k == 0 ? &far : &near, RATE_LIMITED, -1, 10 * MS,
                           &rng);
        bo_next n = bo_dest_complete(&d, &c, &call, RATE_LIMITED, -1, 10 * MS, &rng, &until);
        ck_assert_int_eq(n, k == 0 ? BO_NEXT_DONE : BO_NEXT_RETRY);
        ck_assert(call.past_bounds == (k == 0));
        if (k == 1) {
            /* the retry waits for the reset; had the reset moved past the
             * bounds meanwhile, it gives up at once */
            ck_assert_int_eq(bo_dest_admit(&d, &c, &call, until, &until), BO_ADMIT_WAIT);
            ck_assert_int_ge(until, 2010 * MS);
            int64_t t = until;
            d.quota.slot[0].next_ns = t + 3600000 * MS;
            d.quota.slot[0].reset_at_ns = t + 3600000 * MS;
            ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GIVE_UP);
            ck_assert_int_eq(call.phase, BO_PHASE_DONE);
        }
    }
    /* a 503 of a destination whose quota is spent past the cap: not retried
     * either (no retry can be admitted before the bounds) */
    spend_until(&d, &c, 3600000 * MS, &rng);
    bo_call_begin(&call, 20 * MS);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 20 * MS, THROTTLED, -1, &rng, &until),
                     BO_NEXT_DONE);
}
END_TEST

/*
 * Instants of the destination's state that lie past the cap (a host-wide
 * file another process wrote, a degenerate pace) hold nothing back; those
 * within it still do.
 */
START_TEST(test_state_past_the_cap_is_not_waited_for)
{
    static const bo_policy_kind held[] = {BO_POLICY_AIMD, BO_POLICY_RESPONSIVE};
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    for (unsigned i = 0; i < sizeof held / sizeof held[0]; i++) {
        bo_config c = cfg_for(held[i]);
        bo_dest d;
        bo_call call;
        bo_dest_init(&d, &c, 0);
        d.next_send_ns = INT64_MAX - 5;
        bo_call_begin(&call, 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
        bo_dest_init(&d, &c, 0);
        d.next_send_ns = 20001 * MS;
        bo_call_begin(&call, 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
        bo_dest_init(&d, &c, 0);
        d.next_send_ns = 19000 * MS;
        bo_call_begin(&call, 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_WAIT);
        ck_assert_int_eq(until, 19000 * MS);
        ck_assert_int_eq(call.quota_hold_ns, 0); /* not the quota's */
    }
    /* the window's pace */
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call call;
    bo_dest_init(&d, &c, 0);
    d.window.improved = true;
    d.window.next_send_ns = 3600000 * MS;
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
    /* a quota slot's instants: a reset past the cap neither */
    c.ratelimit_headers = true;
    bo_dest_init(&d, &c, 0);
    d.quota.slot[0].used = true;
    d.quota.slot[0].reset_at_ns = INT64_MAX / 2;
    d.quota.slot[0].next_ns = INT64_MAX / 2;
    d.quota.slot[0].window_ns = 1000 * MS;
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
}
END_TEST

/*
 * Spend, then wait, through the engine: 4 left go at once; a 429 (no quota
 * headers, its own Retry-After) while our count still had requests left is
 * evidence of others, and from then on the quota is spread; a 429 that
 * carries the headers (remaining 0) is judged on the count before them, so
 * it is the same evidence, not "0 left, our own fault".
 */
static bool shared_after_429(bool with_headers)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, t = 0;
    bo_rl_quota q = {100, 4, 10000 * MS, -1, 0, false}; /* a drop to 0 by our 3 sends: slack */
    bo_rl_quota none_left = {100, 0, 9000 * MS, -1, 0, false};
    c.ratelimit_headers = true;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 0, &until), BO_ADMIT_GO);
    bo_dest_note_quota(&d, &c, &call, &q, OK, -1, 1 * MS, &rng);
    bo_dest_complete(&d, &c, &call, OK, -1, 1 * MS, &rng, &until);
    for (int i = 0; i < 2; i++) { /* two of the four left, at once, then the third */
        t = (2 + i) * MS;
        bo_call_begin(&call, t);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &call, t, &until), BO_ADMIT_GO);
        bo_dest_complete(&d, &c, &call, OK, -1, t, &rng, &until);
    }
    bo_call_begin(&call, 5 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, 5 * MS, &until), BO_ADMIT_GO);
    if (with_headers)
        bo_dest_note_quota(&d, &c, &call, &none_left, RATE_LIMITED, -1, 6 * MS, &rng);
    bo_dest_complete(&d, &c, &call, RATE_LIMITED, 1000 * MS, 6 * MS, &rng, &until);
    return d.quota.slot[0].shared_until_ns > 6 * MS;
}

START_TEST(test_quota_shared_on_throttle)
{
    ck_assert(shared_after_429(false));
    ck_assert(shared_after_429(true));
}
END_TEST

/* Another logical request began on the destination (its first attempt
 * counted, failed for good: no credit): a call there is not alone. */
static void not_alone(bo_dest *d, const bo_config *c, bo_rng *rng)
{
    bo_call other;
    int64_t u;
    bo_call_begin(&other, 0);
    ck_assert_int_eq(bo_dest_admit(d, c, &other, 0, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(d, c, &other, FINAL, -1, 0, rng, &u), BO_NEXT_DONE);
}

/*
 * A lone call (no other logical request began on the destination within
 * the budget's window, nothing else in flight) whose retry the budget does
 * not fund has nothing to wait for but its own retries: after the reserve
 * its failure is handed back (a program that retries on its own continues
 * it), where a call with company waits for the budget instead.  A success
 * before it funds one more retry; 0 turns the budget off.
 */
/*
 * Calls that began long ago (their first attempts out of the budget's
 * window) and wait out one outage together are company: the retries of the
 * others in the window say so, and a call whose retry the budget does not
 * fund waits instead of ending (a long outage would end them one by one).
 */
START_TEST(test_retry_budget_calls_waiting_together_are_not_lone)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    bo_dest d;
    bo_call a, b;
    bo_rng rng;
    int64_t until = 0, now = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&a, 0);
    bo_call_begin(&b, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &a, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert_int_eq(one_attempt(&d, &c, &b, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    now = 3 * BO_BUDGET_WINDOW_NS; /* both began long before the window */
    for (int i = 0; i < BO_BUDGET_RESERVE - 1; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &b, now, THROTTLED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
    }
    /* a's retry spends the reserve, its next is beyond the budget: b's retries in the
     * window say it is not alone */
    ck_assert_int_eq(one_attempt(&d, &c, &a, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert(!a.budget_ended);
}
END_TEST

START_TEST(test_retry_budget_lone_call_ends)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    bo_dest d;
    bo_call call;
    bo_rng rng;
    int64_t until = 0, now = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    for (int i = 0; i < BO_BUDGET_RESERVE; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
        ck_assert(bo_call_due(&call, now));
    }
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert(call.budget_ended && call.budget_delayed);
    ck_assert(call.have_result && call.retryable);
    ck_assert_uint_eq(call.attempts, BO_BUDGET_RESERVE + 1);
    /* the program's own next try continues it: its attempt goes, its retry is not funded */
    bo_lineage l;
    bo_call_lineage(&call, 1, &l);
    bo_call_begin(&call, now);
    bo_call_continue(&call, &l);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_DONE);
    ck_assert(call.budget_ended);
    /* with company it waits instead (test_retry_budget_says_when and below); without a
     * budget it goes */
    c.retry_budget = 0;
    bo_call_begin(&call, now);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    ck_assert(!call.budget_ended);
}
END_TEST

/*
 * The destination's retry budget in the engine decides when, never whether:
 * against a destination that answers only failures, one call gets
 * BO_BUDGET_RESERVE retries at once, and its next retry is still granted
 * (RETRY, not DONE); while another attempt is in flight it waits for the
 * budget (the time the budget names), and once the destination is idle it
 * goes as the one probe, the next probe spaced as the window's.  A success
 * adds credit at once.  The call ends at max_attempts, never on the budget.
 */
START_TEST(test_retry_budget_says_when)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    bo_dest d;
    bo_call call, other;
    bo_rng rng;
    int64_t until = 0, now = 0, u = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    not_alone(&d, &c, &rng);
    bo_call_begin(&call, 0);
    for (int i = 0; i < BO_BUDGET_RESERVE; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
    }
    ck_assert(!call.budget_delayed);
    /* the budget is spent, the call is not: its retry is granted */
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert(bo_call_due(&call, now));
    /* another call's attempt in flight: the retry waits for the budget */
    bo_call_begin(&other, now);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &other, now, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_WAIT);
    ck_assert(call.budget_waiting && call.budget_delayed);
    ck_assert_int_eq(u, bo_budget_next_retry_ns(&d.budget, c.retry_budget, now));
    ck_assert_int_gt(u, now + 5 * 1000 * MS);
    /* the other attempt fails: the destination is idle, the retry goes as a probe */
    bo_dest_complete(&d, &c, &other, FINAL, -1, now, &rng, &until);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_GO);
    ck_assert(!call.budget_waiting);
    ck_assert_uint_eq(d.budget.probes, 1);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, now, &rng, &until),
                     BO_NEXT_RETRY);
    /* probes are spaced as the window's: BACKOFF_BASE_MS, then twice that (fixed's
     * own delay is BACKOFF_BASE_MS) */
    now = until;
    ck_assert(bo_call_due(&call, now));
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_GO);
    ck_assert_uint_eq(d.budget.probes, 2);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, now, &rng, &until),
                     BO_NEXT_RETRY);
    ck_assert(bo_call_due(&call, until));
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, until, &u), BO_ADMIT_WAIT);
    ck_assert_int_eq(u, now + 2 * c.base_ms * MS);
    now = u;
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &call, THROTTLED, -1, now, &rng, &until),
                     BO_NEXT_RETRY);
    /* successes elsewhere add credit: the retry goes within the budget, no probe */
    for (int i = 0; i < 4; i++) {
        bo_call_begin(&other, until);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &other, until, &u), BO_ADMIT_GO);
        bo_dest_complete(&d, &c, &other, OK, -1, until, &rng, &u);
    }
    now = until;
    ck_assert(bo_budget_allows_retry(&d.budget, c.retry_budget, now));
    ck_assert(bo_call_due(&call, now));
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_GO);
    ck_assert_uint_eq(d.budget.probes, 0);
    /* ... and the call ends at max_attempts, on its last answer */
    while (bo_dest_complete(&d, &c, &call, THROTTLED, -1, now, &rng, &until) == BO_NEXT_RETRY) {
        now = until;
        ck_assert(bo_call_due(&call, now));
        while (bo_dest_admit(&d, &c, &call, now, &u) == BO_ADMIT_WAIT)
            now = u;
    }
    ck_assert_uint_eq(call.attempts, c.max_attempts);
    ck_assert_int_eq(call.phase, BO_PHASE_DONE);
    /* a 429 draws nothing: no wait for the budget, whatever it holds */
    bo_call_begin(&call, now);
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, RATE_LIMITED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
        ck_assert(bo_call_due(&call, now));
    }
    ck_assert(!call.budget_delayed);
    /* 0 turns the budget off */
    c.retry_budget = 0;
    bo_call_begin(&call, now);
    bo_call_begin(&other, now);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &other, now, &u), BO_ADMIT_GO);
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
        ck_assert(bo_call_due(&call, now));
    }
    ck_assert(!call.budget_delayed);
}
END_TEST

/*
 * A retry held by the budget is bounded by the call's own limits: at
 * max_time_ms (and the program's deadline) admission gives up, and the
 * last result stands.
 */
START_TEST(test_retry_budget_wait_is_bounded)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.max_time_ms = 3000;
    bo_dest d;
    bo_call call, other;
    bo_rng rng;
    int64_t until = 0, now = 0, u = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    not_alone(&d, &c, &rng);
    bo_call_begin(&call, 0);
    for (int i = 0; i <= BO_BUDGET_RESERVE; i++) {
        ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until),
                         BO_NEXT_RETRY);
        now = until;
    }
    ck_assert(bo_call_due(&call, now));
    bo_call_begin(&other, now);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &other, now, &u), BO_ADMIT_GO); /* held in flight */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, now, &u), BO_ADMIT_WAIT);
    ck_assert_int_eq(u, 3000 * MS); /* not past the call's own time */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &call, u, &u), BO_ADMIT_GIVE_UP);
    ck_assert(call.have_result && call.retryable);
    ck_assert(call.budget_delayed);
}
END_TEST

/*
 * The program's own retry continues the logical request: attempts add up
 * to max_attempts across calls, its first attempt is admitted even past
 * max_time_ms (it is the program's), a retry past it is not, and the
 * throttle count carries on.
 */
START_TEST(test_continued_call_shares_the_budget)
{
    bo_config c = cfg_for(BO_POLICY_FIXED);
    c.retry_budget = 0;
    c.max_attempts = 5;
    bo_dest d;
    bo_call call;
    bo_rng rng;
    bo_lineage l;
    int64_t until = 0, now = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    bo_call_begin(&call, 0);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    memset(&l, 0x55, sizeof l); /* bo_call_lineage sets every field */
    bo_call_lineage(&call, 42, &l);
    ck_assert_uint_eq(l.attempts, 2);
    ck_assert_uint_eq(l.throttles, 2);
    ck_assert_int_eq(l.start_ns, 0);
    ck_assert_int_eq(l.failed_ns, 0);
    ck_assert_str_eq(l.idem, ""); /* the shim's to fill */
    ck_assert(l.idem_body == 0);
    /* the program tries again 1 s later: 3 attempts left in all */
    now += 1000 * MS;
    bo_call_begin(&call, now);
    bo_call_continue(&call, &l);
    ck_assert_int_eq(call.start_ns, 0);
    ck_assert_uint_eq(call.throttles, 2);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_RETRY);
    now = until;
    ck_assert_int_eq(one_attempt(&d, &c, &call, now, THROTTLED, -1, &rng, &until), BO_NEXT_DONE);
    bo_call_lineage(&call, 42, &l);
    ck_assert_uint_eq(l.attempts, 5);
    /* spent: the program's next call still sends its own attempt, and no more */
    bo_call_begin(&call, now + 1000 * MS);
    bo_call_continue(&call, &l);
    ck_assert_int_eq(one_attempt(&d, &c, &call, now + 1000 * MS, THROTTLED, -1, &rng, &until),
                     BO_NEXT_DONE);
    /* max_time_ms counts from the logical request's start */
    c.max_attempts = 0;
    c.max_time_ms = 2000;
    l.start_ns = 0;
    l.attempts = 1;
    bo_call_begin(&call, 3000 * MS);
    bo_call_continue(&call, &l);
    ck_assert_int_eq(one_attempt(&d, &c, &call, 3000 * MS, THROTTLED, -1, &rng, &until),
                     BO_NEXT_DONE);
    ck_assert_uint_eq(call.attempts, 1);
}
END_TEST


/*
 * No harm where there is room: a fresh destination lets its first 80
 * attempts out 0.5 ms apart; once they are answered without a throttle, the
 * 200 calls of a program waiting at once all go at once (3 x the 80 proven).
 */
START_TEST(test_aimd_room_lets_the_program_go)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call first[80], next[200];
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    int64_t t = 0;
    for (int i = 0; i < 80; i++) {
        bo_call_begin(&first[i], 0);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &first[i], t, &until), BO_ADMIT_GO);
        t += MS / 2;
    }
    bo_call one_more;
    bo_call_begin(&one_more, 0);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &one_more, t, &until), BO_ADMIT_WAIT);
    for (int i = 0; i < 80; i++)
        ck_assert_int_eq(bo_dest_complete(&d, &c, &first[i], OK, -1, 200 * MS, &rng, &until),
                         BO_NEXT_DONE);
    for (int i = 0; i < 200; i++) {
        bo_call_begin(&next[i], 200 * MS);
        ck_assert_int_eq(bo_dest_admit(&d, &c, &next[i], 200 * MS, &until), BO_ADMIT_GO);
    }
}
END_TEST

/*
 * A call behind a window full of held attempts (long polls that nothing
 * newer overtook) is told to ask again when they stop counting, not a
 * second later, and then goes.
 */
START_TEST(test_aimd_wakes_when_held_attempts_age)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest d;
    bo_call quick, held[20], late;
    bo_rng rng;
    int64_t until = 0;
    bo_rng_seed(&rng, 1);
    bo_dest_init(&d, &c, 0);
    d.window.signal_ns = 0; /* throttled at 0: no room, but quiet since */
    bo_call_begin(&quick, 3000 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &quick, 3000 * MS, &until), BO_ADMIT_GO);
    ck_assert_int_eq(bo_dest_complete(&d, &c, &quick, OK, -1, 3010 * MS, &rng, &until),
                     BO_NEXT_DONE); /* a 10 ms round trip: held after 250 ms */
    d.window.cwnd = 20;
    d.window.next_send_ns = 0;
    for (int i = 0; i < 20; i++) {
        bo_call_begin(&held[i], 3100 * MS);
        d.window.next_send_ns = 0; /* pacing aside: this is about the count */
        ck_assert_int_eq(bo_dest_admit(&d, &c, &held[i], 3100 * MS, &until), BO_ADMIT_GO);
    }
    bo_call_begin(&late, 3300 * MS);
    ck_assert_int_eq(bo_dest_admit(&d, &c, &late, 3300 * MS, &until), BO_ADMIT_WAIT);
    ck_assert_int_eq(until, 4125 * MS); /* bin end 3.125 s + a second (no newer answer) */
    ck_assert_int_eq(bo_dest_admit(&d, &c, &late, until + 1, &until), BO_ADMIT_GO);
}
END_TEST

/*
 * bo_dest_sane holds for every state the engine itself leaves (a shared
 * state read from the file is reset when it fails, so a false alarm would
 * forget what the destination taught): every policy that shares a state,
 * driven through many calls, throttles with Retry-After up to past the
 * cap, losses and successes at random times, is sane after every step.
 */
START_TEST(test_sane_holds_for_the_engines_own_states)
{
    static const bo_policy_kind kinds[] = {BO_POLICY_AIMD, BO_POLICY_RESPONSIVE,
                                           BO_POLICY_AWS_ADAPTIVE};
    for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int pacing = 0; pacing < 2; pacing++) {
            bo_config c = cfg_for(kinds[k]);
            c.pacing = pacing;
            c.cap_ms = 2000;
            bo_dest d;
            bo_rng rng;
            int64_t now = 1000 * MS, until = 0;
            bo_rng_seed(&rng, 7 + k);
            bo_dest_init(&d, &c, now);
            for (int i = 0; i < 3000; i++) {
                bo_call call;
                bo_call_begin(&call, now);
                now += (int64_t)(bo_rng_uniform(&rng) * 50 * MS);
                if (bo_dest_admit(&d, &c, &call, now, &until) != BO_ADMIT_GO) {
                    ck_assert(bo_dest_sane(&d, &c, now));
                    now = until > now ? until : now + MS;
                    if (bo_dest_admit(&d, &c, &call, now, &until) != BO_ADMIT_GO)
                        continue;
                }
                double r = bo_rng_uniform(&rng);
                bo_outcome o = r < 0.5 ? OK : r < 0.85 ? THROTTLED : r < 0.95 ? LOST : FINAL;
                int64_t ra = r < 0.7 ? -1 : (int64_t)(bo_rng_uniform(&rng) * 5000 * MS);
                now += (int64_t)(bo_rng_uniform(&rng) * 30 * MS);
                bo_dest_complete(&d, &c, &call, o, ra, now, &rng, &until);
                ck_assert_msg(bo_dest_sane(&d, &c, now), "policy %d pacing %d step %d",
                              (int)kinds[k], pacing, i);
            }
        }
    }
}
END_TEST

/* What the engine never leaves there is found, field by field. */
START_TEST(test_sane_finds_poison)
{
    bo_config c = cfg_for(BO_POLICY_AIMD);
    bo_dest fresh, d;
    int64_t now = 5000 * MS;
    bo_dest_init(&fresh, &c, now);
    ck_assert(bo_dest_sane(&fresh, &c, now));
#define POISONED(stmt)                                                                        \
    do {                                                                                      \
        d = fresh;                                                                            \
        stmt;                                                                                 \
        ck_assert_msg(!bo_dest_sane(&d, &c, now), "%s went unseen", #stmt);                   \
    } while (0)
    POISONED(d.window.cwnd = 0);
    POISONED(d.window.cwnd = -1e308);
    POISONED(d.window.cwnd = NAN);
    POISONED(d.window.ssthresh = INFINITY);
    POISONED(d.window.max = 0);
    POISONED(d.window.beta = 1);
    POISONED(d.window.rate_limit_hz = NAN);
    POISONED(d.window.rate_limit_hz = -1);
    POISONED(d.window.next_send_ns = now + 3600 * 1000 * MS);
    POISONED(d.next_send_ns = now + c.cap_ms * MS + 1);
    POISONED(d.pacing.interval_ns = c.cap_ms * MS + 1);
    POISONED(d.pacing.interval_ns = -1);
    POISONED(d.adaptive.tokens = NAN);
    POISONED((d.adaptive.enabled = true, d.adaptive.fill_rate = 0));
#undef POISONED
    d = fresh;
    d.next_send_ns = now + c.cap_ms * MS; /* a Retry-After at the cap: the engine's own */
    ck_assert(bo_dest_sane(&d, &c, now));
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_none_never_retries);
    tcase_add_test(tc, test_phases);
    tcase_add_test(tc, test_success_and_final_are_done);
    tcase_add_test(tc, test_delay_policy_admits_at_once_and_waits_schedule);
    tcase_add_test(tc, test_max_attempts);
    tcase_add_test(tc, test_max_time);
    tcase_add_test(tc, test_program_deadline);
    tcase_add_test(tc, test_retry_after_least_wait_bounded_by_cap);
    tcase_add_test(tc, test_wait_limit);
    tcase_add_test(tc, test_aimd_retry_after_holds_only_its_call);
    tcase_add_test(tc, test_aimd_first_throttle_holds_destination);
    tcase_add_test(tc, test_aimd_waits_for_a_slot);
    tcase_add_test(tc, test_aimd_room_lets_the_program_go);
    tcase_add_test(tc, test_aimd_wakes_when_held_attempts_age);
    tcase_add_test(tc, test_aimd_throttle_waits_an_rto);
    tcase_add_test(tc, test_aimd_rto_from_the_refusal_round_trip);
    tcase_add_test(tc, test_aimd_probe_spacing_after_loss);
    tcase_add_test(tc, test_responsive_gap_before_every_attempt);
    tcase_add_test(tc, test_key_busy_waits_without_a_cut);
    tcase_add_test(tc, test_counters);
    tcase_add_test(tc, test_quota_holds_admission);
    tcase_add_test(tc, test_quota_past_the_bounds_is_not_waited_for);
    tcase_add_test(tc, test_state_past_the_cap_is_not_waited_for);
    tcase_add_test(tc, test_quota_shared_on_throttle);
    tcase_add_test(tc, test_retry_budget_says_when);
    tcase_add_test(tc, test_retry_budget_lone_call_ends);
    tcase_add_test(tc, test_retry_budget_calls_waiting_together_are_not_lone);
    tcase_add_test(tc, test_retry_budget_wait_is_bounded);
    tcase_add_test(tc, test_continued_call_shares_the_budget);
    tcase_add_test(tc, test_sane_holds_for_the_engines_own_states);
    tcase_add_test(tc, test_sane_finds_poison);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(engine_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
