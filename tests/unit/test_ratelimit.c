/* Unit tests for bo_ratelimit: the three header dialects, bad values, pacing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bo_ratelimit.h"

#define S 1000000000LL
#define WALL (1800000000LL * S) /* an epoch second, in ns */

static bo_rl_headers feed(const char *const *lines)
{
    bo_rl_headers h;
    bo_rl_headers_reset(&h);
    for (; *lines != NULL; lines++)
        bo_rl_header_line(&h, *lines, strlen(*lines));
    return h;
}

/* Quota from header lines; false when none. */
static bool quota_of(const char *const *lines, bo_rl_quota *q)
{
    bo_rl_headers h = feed(lines);
    return bo_rl_headers_quota(&h, WALL, q);
}

START_TEST(test_github)
{
    const char *l[] = {"X-RateLimit-Limit: 100\r\n", "x-ratelimit-remaining: 40\r\n",
                       "x-ratelimit-reset: 1800000030\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.limit, 100);
    ck_assert_int_eq(q.remaining, 40);
    ck_assert_int_eq(q.reset_ns, 30 * S);
}
END_TEST

START_TEST(test_gitlab)
{
    const char *l[] = {"RateLimit-Limit: 60\r\n", "RATELIMIT-REMAINING:7\r\n",
                       "ratelimit-reset:  12 \r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.limit, 60);
    ck_assert_int_eq(q.remaining, 7);
    ck_assert_int_eq(q.reset_ns, 12 * S);
}
END_TEST

START_TEST(test_draft)
{
    const char *l[] = {"RateLimit-Policy: \"burst\";q=100;w=60, \"daily\";q=1000;w=86400\r\n",
                       "RateLimit: \"burst\";r=50;t=30, \"daily\";r=900;t=3600\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    /* the stricter item is paced: daily has 900 / 3600 s = 0.25/s left, burst 50 / 30 s = 1.67/s */
    ck_assert_int_eq(q.remaining, 900);
    ck_assert_int_eq(q.reset_ns, 3600 * S);
    ck_assert_int_eq(q.limit, 1000);
    ck_assert_int_eq(q.window_ns, 86400 * S);
}
END_TEST

START_TEST(test_draft_pk_and_window_only)
{
    const char *l[] = {"RateLimit: \"default\";r=5;pk=:cHJvamVjdDEyMw==:\r\n",
                       "RateLimit-Policy: \"default\";q=10;w=20;pk=:cHJvamVjdDEyMw==:\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.remaining, 5);
    ck_assert_int_eq(q.reset_ns, 20 * S); /* no t: the policy's window */
    ck_assert(q.pk != 0);
    const char *other[] = {"RateLimit: \"default\";r=5;t=1;pk=:b3RoZXI=:\r\n", NULL};
    bo_rl_quota q2;
    ck_assert(quota_of(other, &q2));
    ck_assert(q2.pk != q.pk);
}
END_TEST

START_TEST(test_draft_wins)
{
    const char *l[] = {"x-ratelimit-remaining: 1\r\n", "x-ratelimit-reset: 1800000001\r\n",
                       "RateLimit: \"d\";r=9;t=9\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.remaining, 9);
}
END_TEST

START_TEST(test_other_lines_ignored)
{
    bo_rl_headers h;
    bo_rl_headers_reset(&h);
    ck_assert(!bo_rl_header_line(&h, "Content-Type: text/plain\r\n", 26));
    ck_assert(!bo_rl_header_line(&h, "Retry-After: 3\r\n", 16));
    ck_assert(!bo_rl_header_line(&h, "X-Request-Id: 3\r\n", 17));
    ck_assert(!bo_rl_header_line(&h, "x-ratelimit-used: 3\r\n", 21));
    ck_assert(!bo_rl_header_line(&h, "HTTP/1.1 200 OK\r\n", 17));
    ck_assert(!bo_rl_header_line(&h, "\r\n", 2));
    bo_rl_quota q;
    ck_assert(!bo_rl_headers_quota(&h, WALL, &q));
}
END_TEST

/* Each bad value alone: the dialect gives no quota, nothing crashes. */
static const char *const bad_lines[][3] = {
    {"x-ratelimit-remaining: -1\r\n", "x-ratelimit-reset: 1800000010\r\n", NULL},
    {"x-ratelimit-remaining: 1e3\r\n", "x-ratelimit-reset: 1800000010\r\n", NULL},
    {"x-ratelimit-remaining: 99999999999999999999\r\n", "x-ratelimit-reset: 1800000010\r\n", NULL},
    {"x-ratelimit-remaining: \r\n", "x-ratelimit-reset: 1800000010\r\n", NULL},
    {"x-ratelimit-remaining: 5\r\n", "x-ratelimit-reset: 1799999990\r\n", NULL},  /* past */
    {"x-ratelimit-remaining: 5\r\n", "x-ratelimit-reset: 1900000000\r\n", NULL},  /* 3 years */
    {"x-ratelimit-remaining: 5\r\n", "x-ratelimit-reset: 10.5\r\n", NULL},
    {"ratelimit-remaining: 5\r\n", "ratelimit-reset: -3\r\n", NULL},
    {"ratelimit-remaining: 5\r\n", "ratelimit-reset: 99999999\r\n", NULL},      /* > 31 days */
    {"ratelimit-remaining: 5\r\n", "ratelimit-reset: Wed, 21 Oct 2015\r\n", NULL},
    {"RateLimit: \"d\";r=-5;t=3\r\n", NULL, NULL},
    {"RateLimit: \"d\";r=5;t=-3\r\n", NULL, NULL},
    {"RateLimit: \"d\";r=5.5;t=3\r\n", NULL, NULL},
    {"RateLimit: \"d\";r=5;t=3,\r\n", NULL, NULL},
    {"RateLimit: \"d;r=5;t=3\r\n", NULL, NULL},
    {"RateLimit: d;r=5;t=3 junk\r\n", NULL, NULL},
    {"RateLimit: (\"d\");r=5;t=3\r\n", NULL, NULL},
    {"RateLimit: \"d\";r=9999999999999999;t=3\r\n", NULL, NULL},
    {"RateLimit: \"d\";r=5\r\n", NULL, NULL}, /* no t, no policy */
    {"RateLimit:\r\n", NULL, NULL},
};

START_TEST(test_bad_values)
{
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        const char *l[4] = {bad_lines[i][0], bad_lines[i][1], bad_lines[i][2], NULL};
        bo_rl_quota q;
        ck_assert_msg(!quota_of(l, &q), "case %zu (%s) gave a quota", i, bad_lines[i][0]);
    }
}
END_TEST

START_TEST(test_remaining_above_limit)
{
    const char *l[] = {"ratelimit-limit: 10\r\n", "ratelimit-remaining: 11\r\n",
                       "ratelimit-reset: 5\r\n", NULL};
    bo_rl_quota q;
    ck_assert(!quota_of(l, &q));
    /* field by field: a bad limit leaves remaining and reset usable */
    const char *l2[] = {"ratelimit-limit: ten\r\n", "ratelimit-remaining: 3\r\n",
                        "ratelimit-reset: 5\r\n", NULL};
    ck_assert(quota_of(l2, &q));
    ck_assert_int_eq(q.limit, -1);
    ck_assert_int_eq(q.remaining, 3);
}
END_TEST

START_TEST(test_conflicting_repeat_and_fallback)
{
    /* a bad draft field falls back to the next dialect */
    const char *l[] = {"RateLimit: \"d\";r=oops\r\n", "ratelimit-remaining: 4\r\n",
                       "ratelimit-reset: 2\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.remaining, 4);
    const char *l2[] = {"ratelimit-remaining: 4\r\n", "ratelimit-remaining: 5\r\n",
                        "ratelimit-reset: 2\r\n", NULL};
    ck_assert(!quota_of(l2, &q));
}
END_TEST

START_TEST(test_cached_ignored)
{
    const char *l[] = {"ratelimit-remaining: 4\r\n", "ratelimit-reset: 2\r\n", "Age: 30\r\n", NULL};
    bo_rl_quota q;
    ck_assert(!quota_of(l, &q));
    const char *l2[] = {"ratelimit-remaining: 4\r\n", "ratelimit-reset: 2\r\n", "Age: 0\r\n", NULL};
    ck_assert(quota_of(l2, &q));
}
END_TEST

static bo_rl_quota mk(int64_t limit, int64_t remaining, int64_t reset_ns)
{
    bo_rl_quota q = {limit, remaining, reset_ns, -1, 0};
    return q;
}

/* Remaining 10 over 5 s: admissions ~0.5 s apart, within the jitter. */
START_TEST(test_pace_spreads_until_reset)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 1);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 10, 5 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t t = 0, prev = -1;
    for (int i = 0; i < 10; i++) {
        int64_t next = bo_quota_next_send(&q, t, 0);
        ck_assert(next >= t);
        t = next;
        if (prev >= 0) {
            ck_assert_msg(t - prev >= 440000000LL && t - prev <= 560000000LL, "gap %lld",
                          (long long)(t - prev));
        }
        prev = t;
        bo_quota_on_send(&q, t);
    }
    ck_assert(t < 5 * S);
}
END_TEST

START_TEST(test_spent_waits_for_reset_with_jitter_and_cap)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 2);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 0, 3 * S);
    rl.window_ns = 10 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t next = bo_quota_next_send(&q, 0, 0);
    ck_assert(next >= 3 * S && next <= 3 * S + 100000000LL);
    /* never beyond the cap */
    ck_assert_int_eq(bo_quota_next_send(&q, 0, 1 * S), 1 * S);
    /* after the reset the window's own pace: 10 s / 100 */
    bo_quota_on_send(&q, next);
    int64_t n2 = bo_quota_next_send(&q, next, 0);
    ck_assert(n2 - next >= 90000000LL && n2 - next <= 110000000LL);
}
END_TEST

/*
 * A quota that grows back before its reset is a token bucket: once spent,
 * the next admission comes at the refill pace (limit per window), not at
 * the reset.  A fixed window's spent quota still waits for the reset.
 */
START_TEST(test_bucket_refill_paces_not_waits)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 5);
    bo_quota_init(&q);
    /* a 20/s bucket: limit 20, full again 1 s after being emptied */
    bo_rl_quota rl = mk(20, 2, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    rl = mk(20, 5, 1 * S); /* rose by 3 before the reset: tokens came back */
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 200000000LL, &rng);
    rl = mk(20, 0, 1 * S); /* spent */
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 300000000LL, &rng);
    int64_t next = bo_quota_next_send(&q, 300000000LL, 0);
    ck_assert_msg(next - 300000000LL <= 60000000LL, "waited %lld ns",
                  (long long)(next - 300000000LL));

    /* the same numbers, but the quota only falls: a window, wait for its reset */
    bo_quota_init(&q);
    rl = mk(20, 5, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    rl = mk(20, 0, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 300000000LL, &rng);
    ck_assert(bo_quota_next_send(&q, 300000000LL, 0) >= 1 * S);

    /* a rise in an answer to a request sent before the last answer came is
     * no proof: the server may have counted it first (a thread that was
     * descheduled with its answer) */
    bo_quota_init(&q);
    rl = mk(20, 2, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note_answer(&q, &rl, 3, 0, true, 100000000LL, &rng);
    rl = mk(20, 9, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note_answer(&q, &rl, 3, 50000000LL, true, 200000000LL, &rng);
    rl = mk(20, 0, 1 * S);
    rl.window_ns = 1 * S;
    bo_quota_note(&q, &rl, 0, 300000000LL, &rng);
    ck_assert(bo_quota_next_send(&q, 300000000LL, 0) >= 1 * S);
}
END_TEST

/*
 * A bucket spent exactly as fast as it refills: remaining never rises
 * between two answers, yet tokens come back before the reset the first
 * answer announced (20/s, remaining steady at 10, whole-second resets).
 * Detected, its refill rate measured (50 ms a token), and once spent the
 * next admission comes at that pace, not at the reset.
 */
START_TEST(test_bucket_steady_remaining_is_a_bucket)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 6);
    bo_quota_init(&q);
    int64_t t = 0;
    for (int i = 0; i < 50; i++, t += 50000000LL) {
        bo_rl_quota rl = mk(20, 10, 1 * S); /* ceil(0.5 s to full) */
        bo_quota_note(&q, &rl, 0, t, &rng);
    }
    ck_assert(q.slot[0].refills);
    ck_assert_msg(q.slot[0].refill_gap_ns >= 45000000LL && q.slot[0].refill_gap_ns <= 55000000LL,
                  "refill gap %lld", (long long)q.slot[0].refill_gap_ns);
    bo_rl_quota rl = mk(20, 0, 1 * S);
    bo_quota_note(&q, &rl, 0, t, &rng);
    int64_t next = bo_quota_next_send(&q, t, 0);
    ck_assert_msg(next - t <= 60000000LL, "waited %lld ns", (long long)(next - t));
}
END_TEST

/*
 * A fixed window that resets while a measurement is open: remaining jumps
 * from 1 to 99 just past the real reset, before the rounded-up reset the
 * mark saw.  The next reset is a whole window later, so it is a new window,
 * not a bucket: a spent quota still waits for its reset.
 */
START_TEST(test_window_reset_is_not_a_bucket)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 7);
    bo_quota_init(&q);
    /* 100 per 5 s, window from 0 to 5 s; RateLimit-Reset rounds up.
     * Answers every 50 ms from 3.13 s; the tightest rounded-up bound, from
     * the answer at 4.03 s, is 5.03 s: past the real reset. */
    int64_t t = 3130000000LL;
    bo_rl_quota rl = mk(100, 37, 2 * S); /* really 1.87 s */
    rl.window_ns = 5 * S;
    bo_quota_note(&q, &rl, 0, t, &rng);
    for (int rem = 36; rem >= 1; rem--) {
        t += 50000000LL;
        rl = mk(100, rem, (5 * S - t + S - 1) / S * S);
        rl.window_ns = 5 * S;
        bo_quota_note(&q, &rl, 0, t, &rng);
    }
    t = 5007000000LL;
    rl = mk(100, 99, 5 * S);
    rl.window_ns = 5 * S;
    bo_quota_note(&q, &rl, 0, t, &rng);
    ck_assert(!q.slot[0].refills);
}
END_TEST

START_TEST(test_inflight_counted)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 3);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 4, 2 * S);
    bo_quota_note(&q, &rl, 4, 0, &rng); /* four under way will spend them all */
    ck_assert(bo_quota_next_send(&q, 0, 0) >= 2 * S);
}
END_TEST

START_TEST(test_absent_headers_do_not_freeze)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 4);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(10, 0, 1 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    ck_assert(bo_quota_next_send(&q, 0, 0) >= 1 * S);
    /* no more headers: a window after the reset, nothing holds back */
    ck_assert_int_eq(bo_quota_next_send(&q, 3 * S, 0), 3 * S);
}
END_TEST

START_TEST(test_reset_bound_tightens)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 5);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 50, 5 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    ck_assert_int_eq(q.slot[0].reset_at_ns, 5 * S);
    rl = mk(100, 49, 5 * S); /* 0.3 s later it still says 5: reset by 5.3 s at most */
    bo_quota_note(&q, &rl, 0, 300000000LL, &rng);
    ck_assert_int_eq(q.slot[0].reset_at_ns, 5 * S);
    rl = mk(100, 48, 4 * S); /* 0.6 s later: 4 s, so by 4.6 s */
    bo_quota_note(&q, &rl, 0, 600000000LL, &rng);
    ck_assert_int_eq(q.slot[0].reset_at_ns, 4600000000LL);
    rl = mk(100, 100, 5 * S); /* a new window */
    bo_quota_note(&q, &rl, 0, 4700000000LL, &rng);
    ck_assert_int_eq(q.slot[0].reset_at_ns, 9700000000LL);
}
END_TEST

static Suite *ratelimit_suite(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_github);
    tcase_add_test(tc, test_gitlab);
    tcase_add_test(tc, test_draft);
    tcase_add_test(tc, test_draft_pk_and_window_only);
    tcase_add_test(tc, test_draft_wins);
    tcase_add_test(tc, test_other_lines_ignored);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_remaining_above_limit);
    tcase_add_test(tc, test_conflicting_repeat_and_fallback);
    tcase_add_test(tc, test_cached_ignored);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("pace");
    tcase_add_test(tp, test_pace_spreads_until_reset);
    tcase_add_test(tp, test_spent_waits_for_reset_with_jitter_and_cap);
    tcase_add_test(tp, test_inflight_counted);
    tcase_add_test(tp, test_bucket_refill_paces_not_waits);
    tcase_add_test(tp, test_bucket_steady_remaining_is_a_bucket);
    tcase_add_test(tp, test_window_reset_is_not_a_bucket);
    tcase_add_test(tp, test_absent_headers_do_not_freeze);
    tcase_add_test(tp, test_reset_bound_tightens);
    suite_add_tcase(s, tp);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ratelimit_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
