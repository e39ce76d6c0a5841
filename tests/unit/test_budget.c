/*
 * Unit tests for bo_budget: the destination's retry budget (a bounded
 * fraction of first attempts over a sliding window, plus a reserve and one
 * per success) and the table of logical requests (what continues what).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bo_budget.h"

#define S 1000000000LL

/* Retries granted in a row at time t with nothing else happening. */
static int grant_all(bo_budget *b, unsigned pct, int64_t t)
{
    int n = 0;
    while (n < 100000 && bo_budget_allows_retry(b, pct, t)) {
        bo_budget_on_attempt(b, false, t);
        n++;
    }
    return n;
}

START_TEST(test_reserve_then_fraction_of_firsts)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    ck_assert_int_eq(grant_all(&b, 20, 0), BO_BUDGET_RESERVE);
    /* 100 first attempts that fail fund 20 retries */
    for (int i = 0; i < 100; i++)
        bo_budget_on_attempt(&b, true, 1 * S);
    ck_assert_int_eq(grant_all(&b, 20, 1 * S), 20);
    /* a down server sees at most (1 + 20%) x the first attempts + the reserve */
    ck_assert_uint_eq(b.retries[0], 20 + BO_BUDGET_RESERVE);
}
END_TEST

START_TEST(test_successes_fund_retries)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    ck_assert_int_eq(grant_all(&b, 20, 0), BO_BUDGET_RESERVE);
    for (int i = 0; i < 10; i++)
        bo_budget_on_success(&b, 0);
    ck_assert_int_eq(grant_all(&b, 20, 0), 10);
}
END_TEST

START_TEST(test_zero_is_off)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    ck_assert_int_eq(grant_all(&b, 0, 0), 100000);
}
END_TEST

/* The window slides: spent retries weigh less as their bucket ages, and
 * are forgotten two windows on. */
START_TEST(test_window_slides)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    ck_assert_int_eq(grant_all(&b, 20, 0), BO_BUDGET_RESERVE);
    ck_assert(!bo_budget_allows_retry(&b, 20, BO_BUDGET_WINDOW_NS - 1));
    /* half a window into the next bucket: the old retries count half */
    ck_assert(bo_budget_allows_retry(&b, 20, BO_BUDGET_WINDOW_NS + BO_BUDGET_WINDOW_NS / 2));
    bo_budget_init(&b, 0);
    (void)grant_all(&b, 20, 0);
    ck_assert_int_eq(grant_all(&b, 20, 3 * BO_BUDGET_WINDOW_NS), BO_BUDGET_RESERVE);
    /* a clock behind the bucket's start does not underflow */
    ck_assert(!bo_budget_allows_retry(&b, 20, 0));
}
END_TEST

/*
 * When the budget will allow a retry, if nothing else happens: the time it
 * names lets one through and a millisecond before it did not, across many
 * shapes of the two buckets (the allowance's rule solved for the time).
 */
START_TEST(test_next_retry_is_exact)
{
    uint64_t x = 12345;
    for (int k = 0; k < 2000; k++) {
        bo_budget b;
        bo_budget_init(&b, 0);
        int64_t t = 0;
        /* a random history over up to two windows: firsts, retries, successes */
        for (int i = 0; i < 40; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            t += (int64_t)((x >> 33) % (BO_BUDGET_WINDOW_NS / 8));
            unsigned kind = (unsigned)(x >> 20) % 8;
            if (kind == 0)
                bo_budget_on_attempt(&b, true, t);
            else if (kind == 1)
                bo_budget_on_success(&b, t);
            else
                bo_budget_on_attempt(&b, false, t);
        }
        unsigned pct = (unsigned)(x >> 40) % 60;
        int64_t next = bo_budget_next_retry_ns(&b, pct, t);
        ck_assert_int_ge(next, t);
        ck_assert_int_le(next, t + 2 * BO_BUDGET_WINDOW_NS);
        if (next > t) {
            bo_budget c = b;
            ck_assert(!bo_budget_allows_retry(&c, pct, t));
            c = b;
            if (next - 1000000 > t)
                ck_assert(!bo_budget_allows_retry(&c, pct, next - 1000000));
        }
        ck_assert(bo_budget_allows_retry(&b, pct, next));
    }
}
END_TEST

/* The worked case: the reserve spent at 0 by one call's retries comes back
 * as its bucket ages (3 + 0.2 <= 3w + 1 with the first attempt weighted
 * too): at 12.86 s. */
START_TEST(test_next_retry_lone_call)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    bo_budget_on_attempt(&b, true, 0);
    ck_assert_int_eq(grant_all(&b, 20, 0), BO_BUDGET_RESERVE);
    int64_t next = bo_budget_next_retry_ns(&b, 20, S);
    ck_assert_int_ge(next, 12857 * S / 1000);
    ck_assert_int_le(next, 12858 * S / 1000);
    /* a success at 2 s funds one at once */
    bo_budget_on_success(&b, 2 * S);
    ck_assert_int_eq(bo_budget_next_retry_ns(&b, 20, 2 * S), 2 * S);
}
END_TEST

/* Probes beyond the budget: one at a time, spaced by the caller's gap, and
 * free again after a success. */
START_TEST(test_probe_spacing)
{
    bo_budget b;
    bo_budget_init(&b, 0);
    ck_assert(bo_budget_may_probe(&b, 0));
    bo_budget_on_probe(&b, 0, S / 10);
    ck_assert_uint_eq(b.probes, 1);
    ck_assert(!bo_budget_may_probe(&b, S / 10 - 1));
    ck_assert(bo_budget_may_probe(&b, S / 10));
    bo_budget_on_probe(&b, S / 10, S / 5);
    ck_assert_uint_eq(b.probes, 2);
    ck_assert(!bo_budget_may_probe(&b, S / 5));
    bo_budget_on_success(&b, S / 5);
    ck_assert_uint_eq(b.probes, 0);
    ck_assert(bo_budget_may_probe(&b, S / 5));
}
END_TEST

START_TEST(test_keys)
{
    uint64_t a = bo_key_add(bo_key_add(BO_KEY_INIT, "http://h/x"), "GET");
    uint64_t b = bo_key_add(bo_key_add(BO_KEY_INIT, "http://h/x"), "POST");
    uint64_t c = bo_key_add(bo_key_add(BO_KEY_INIT, "http://h/xG"), "ET");
    ck_assert(a != 0 && a != b && a != c);
    ck_assert(a == bo_key_add(bo_key_add(BO_KEY_INIT, "http://h/x"), "GET"));
}
END_TEST

START_TEST(test_lineage_find_expire_forget)
{
    static bo_lineages t; /* zeroed */
    bo_lineage l = {.key = 7, .start_ns = 1 * S, .attempts = 4, .throttles = 4}, out;

    ck_assert(!bo_lineage_find(&t, 7, 0, &out));
    bo_lineage_failed(&t, &l, 2 * S);
    ck_assert_uint_eq(t.used, 1);
    ck_assert(bo_lineage_find(&t, 7, 3 * S, &out));
    ck_assert_uint_eq(out.attempts, 4);
    ck_assert_int_eq(out.start_ns, 1 * S);
    ck_assert_int_eq(out.failed_ns, 2 * S);
    ck_assert(!bo_lineage_find(&t, 8, 3 * S, &out));
    ck_assert(!bo_lineage_find(&t, 0, 3 * S, &out));
    /* the same key again updates in place */
    l.attempts = 5;
    bo_lineage_failed(&t, &l, 4 * S);
    ck_assert_uint_eq(t.used, 1);
    ck_assert(bo_lineage_find(&t, 7, 4 * S + BO_LINEAGE_WINDOW_NS, &out));
    ck_assert_uint_eq(out.attempts, 5);
    /* past the window it is a new logical request, and the slot is freed */
    ck_assert(!bo_lineage_find(&t, 7, 4 * S + BO_LINEAGE_WINDOW_NS + 1, &out));
    ck_assert_uint_eq(t.used, 0);
    bo_lineage_failed(&t, &l, 5 * S);
    bo_lineage_forget(&t, 7);
    ck_assert_uint_eq(t.used, 0);
    ck_assert(!bo_lineage_find(&t, 7, 5 * S, &out));
}
END_TEST

/*
 * The Idempotency-Key sent with a logical request and its body's
 * fingerprint come back to the program's next try, and a new failure of
 * that request stores the (same or new) key in place.
 */
START_TEST(test_lineage_keeps_the_key)
{
    static bo_lineages t;
    bo_lineage l = {.key = 9, .start_ns = 0, .attempts = 2, .idem_body = 77}, out;
    snprintf(l.idem, sizeof l.idem, "%s", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
    bo_lineage_failed(&t, &l, 1 * S);
    ck_assert(bo_lineage_find(&t, 9, 2 * S, &out));
    ck_assert_str_eq(out.idem, l.idem);
    ck_assert(out.idem_body == 77);
    l.idem[0] = '\0';
    l.idem_body = 0;
    bo_lineage_failed(&t, &l, 3 * S);
    ck_assert(bo_lineage_find(&t, 9, 3 * S, &out));
    ck_assert_str_eq(out.idem, "");
    ck_assert(out.idem_body == 0);
}
END_TEST

/* Full: the oldest failure makes room; the table never grows. */
START_TEST(test_lineage_full)
{
    static bo_lineages t;
    bo_lineage l = {.start_ns = 0, .attempts = 1}, out;

    for (unsigned i = 1; i <= BO_LINEAGE_SLOTS + 10; i++) {
        l.key = i;
        bo_lineage_failed(&t, &l, (int64_t)i);
    }
    ck_assert_uint_eq(t.used, BO_LINEAGE_SLOTS);
    ck_assert(!bo_lineage_find(&t, 1, 100, &out));
    ck_assert(!bo_lineage_find(&t, 10, 100, &out));
    ck_assert(bo_lineage_find(&t, 11, 100, &out));
    ck_assert(bo_lineage_find(&t, BO_LINEAGE_SLOTS + 10, 100, &out));
}
END_TEST

static Suite *budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_reserve_then_fraction_of_firsts);
    tcase_add_test(tc, test_successes_fund_retries);
    tcase_add_test(tc, test_zero_is_off);
    tcase_add_test(tc, test_window_slides);
    tcase_add_test(tc, test_next_retry_is_exact);
    tcase_add_test(tc, test_next_retry_lone_call);
    tcase_add_test(tc, test_probe_spacing);
    tcase_add_test(tc, test_keys);
    tcase_add_test(tc, test_lineage_find_expire_forget);
    tcase_add_test(tc, test_lineage_keeps_the_key);
    tcase_add_test(tc, test_lineage_full);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(budget_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
