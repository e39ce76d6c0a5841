/*
 * Unit tests for the multi hooks' records (shim/libcurl/multi.h), through
 * its header: a multi handle's counts of pending and active transfers
 * follow from its transfers' states, changed in one place (bo_multi_move),
 * whatever the path a transfer takes; a pending state's time brings the
 * handle's next deadline forward.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "libcurl/multi_rec.h"

static void fresh(bo_multi_rec *r, bo_mxfer *x, int n)
{
    *r = (bo_multi_rec){.next_due = INT64_MAX};
    for (int i = 0; i < n; i++)
        x[i] = (bo_mxfer){.state = BO_X_DETACHED};
}

/* The counts, recomputed from the states. */
static void check_counts(const bo_multi_rec *r, const bo_mxfer *x, int n)
{
    int pending = 0, active = 0;
    for (int i = 0; i < n; i++) {
        pending += x[i].state == BO_X_ADMIT || x[i].state == BO_X_RETRY;
        active += x[i].state == BO_X_RUN || x[i].state == BO_X_PASS;
    }
    ck_assert_int_eq(r->npending, pending);
    ck_assert_int_eq(r->nactive, active);
}

START_TEST(test_a_managed_transfer_through_its_phases)
{
    bo_multi_rec r;
    bo_mxfer x[1];
    fresh(&r, x, 1);
    bo_multi_move(&r, &x[0], BO_X_ADMIT, 100);
    ck_assert_int_eq(r.npending, 1);
    ck_assert_int_eq(r.next_due, 100);
    ck_assert_int_eq(x[0].until, 100);
    bo_multi_move(&r, &x[0], BO_X_RUN, 0);
    ck_assert_int_eq(r.npending, 0);
    ck_assert_int_eq(r.nactive, 1);
    bo_multi_move(&r, &x[0], BO_X_RETRY, 50);
    ck_assert_int_eq(r.next_due, 50); /* a sooner time brings it forward */
    check_counts(&r, x, 1);
    bo_multi_move(&r, &x[0], BO_X_ADMIT, 50);
    check_counts(&r, x, 1);
    bo_multi_move(&r, &x[0], BO_X_RUN, 0);
    bo_multi_move(&r, &x[0], BO_X_DONE, 0);
    ck_assert_int_eq(r.npending, 0);
    ck_assert_int_eq(r.nactive, 0);
    bo_multi_move(&r, &x[0], BO_X_DETACHED, 0);
    check_counts(&r, x, 1);
}
END_TEST

START_TEST(test_every_transition)
{
    static const bo_xstate all[] = {BO_X_PASS, BO_X_ADMIT, BO_X_RUN,
                                    BO_X_RETRY, BO_X_DONE, BO_X_DETACHED};
    bo_multi_rec r;
    bo_mxfer x[3];
    fresh(&r, x, 3);
    /* every ordered pair of states, on three transfers at once */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            for (int k = 0; k < 3; k++) {
                bo_multi_move(&r, &x[k], all[(i + k) % 6], 10 * (i + 1));
                check_counts(&r, x, 3);
                bo_multi_move(&r, &x[k], all[(j + k) % 6], 10 * (j + 1));
                check_counts(&r, x, 3);
            }
    for (int k = 0; k < 3; k++)
        bo_multi_move(&r, &x[k], BO_X_DETACHED, 0);
    ck_assert_int_eq(r.npending, 0);
    ck_assert_int_eq(r.nactive, 0);
}
END_TEST

START_TEST(test_unmanaged_transfer)
{
    bo_multi_rec r;
    bo_mxfer x[1];
    fresh(&r, x, 1);
    bo_multi_move(&r, &x[0], BO_X_PASS, 0);
    ck_assert_int_eq(r.nactive, 1);
    ck_assert_int_eq(r.next_due, INT64_MAX); /* not pending: no deadline */
    bo_multi_move(&r, &x[0], BO_X_DONE, 0);
    check_counts(&r, x, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shim_multi");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_a_managed_transfer_through_its_phases);
    tcase_add_test(tc, test_every_transition);
    tcase_add_test(tc, test_unmanaged_transfer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
