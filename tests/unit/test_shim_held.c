/*
 * Unit tests for the libcurl room's held bytes (shim/libcurl/held.h),
 * through its header: while an attempt may still be retried its bytes are
 * held, the program's callbacks see nothing; a commit hands them over in
 * arrival order, one callback per callback libcurl made; past the bound
 * the attempt commits and passes through; a program that refuses bytes
 * makes the commit fail; status lines are read only from "HTTP/x ddd".
 * The kept answer (shim/libcurl/kept.h): a retried attempt's answer is
 * handed over, with what getinfo says of it, when the last attempt got
 * none, and never over an answer of its own or the program's own failure.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "libcurl/held.h"
#include "libcurl/kept.h"

/* What the program's callbacks received: kind letter and bytes, in order. */
static char g_seen[BO_HOLD_MAX * 2 + 1024];
static size_t g_nseen;
static int g_calls;
static size_t g_refuse_after = (size_t)-1;

static size_t take(char kind, const char *p, size_t n)
{
    g_calls++;
    if (g_nseen + n + 1 >= g_refuse_after)
        return 0;
    g_seen[g_nseen++] = kind;
    memcpy(g_seen + g_nseen, p, n);
    g_nseen += n;
    return n;
}

static size_t prog_body(char *p, size_t s, size_t n, void *ud)
{
    (void)ud;
    return take('B', p, s * n);
}

static size_t prog_header(char *p, size_t s, size_t n, void *ud)
{
    (void)ud;
    return take('H', p, s * n);
}

static bo_block g_block; /* a managed destination: only its address matters here */

static void setup_rec(bo_curl_rec *r)
{
    memset(r, 0, sizeof *r);
    r->write_fn = prog_body;
    r->header_fn = prog_header;
    r->dest = &g_block;
    g_nseen = 0;
    g_calls = 0;
    g_refuse_after = (size_t)-1;
    bo_curl_attempt_reset(r);
}

static void feed_header(bo_curl_rec *r, const char *line)
{
    ck_assert_uint_eq(bo_curl_held_header((char *)line, 1, strlen(line), r), strlen(line));
}

START_TEST(test_held_until_commit)
{
    bo_curl_rec r;
    setup_rec(&r);
    feed_header(&r, "HTTP/1.1 429 Too Many Requests\r\n");
    feed_header(&r, "Retry-After: 1\r\n");
    ck_assert_uint_eq(bo_curl_held_write("rejected", 1, 8, &r), 8);
    ck_assert_int_eq(g_calls, 0); /* a 429 may be retried: nothing reached the program */
    ck_assert_int_eq(r.block_status, 429);
    ck_assert_int_eq(bo_curl_commit(&r), 0);
    ck_assert_int_eq(g_calls, 3);
    const char want[] = "HHTTP/1.1 429 Too Many Requests\r\nHRetry-After: 1\r\nBrejected";
    ck_assert_uint_eq(g_nseen, sizeof want - 1);
    ck_assert(memcmp(g_seen, want, g_nseen) == 0);
    ck_assert_uint_eq(r.delivered, strlen(want) - 3);
    /* committed: the rest passes straight through */
    ck_assert_uint_eq(bo_curl_held_write("x", 1, 1, &r), 1);
    ck_assert_int_eq(g_calls, 4);
    free(r.held);
}
END_TEST

START_TEST(test_final_answer_commits_at_body)
{
    bo_curl_rec r;
    setup_rec(&r);
    feed_header(&r, "HTTP/1.1 200 OK\r\n");
    feed_header(&r, "Content-Length: 2\r\n");
    ck_assert_int_eq(g_calls, 0); /* headers are held until the first body byte */
    ck_assert_uint_eq(bo_curl_held_write("ok", 1, 2, &r), 2);
    ck_assert_int_eq(g_calls, 3);
    ck_assert_int_eq(r.mode, BO_HOLD_PASS);
    free(r.held);
}
END_TEST

START_TEST(test_bound_passes_through)
{
    bo_curl_rec r;
    static char big[BO_HOLD_MAX];
    setup_rec(&r);
    memset(big, 'z', sizeof big);
    feed_header(&r, "HTTP/1.1 503 Service Unavailable\r\n");
    /* more than the bound: the attempt commits and its bytes pass through */
    ck_assert_uint_eq(bo_curl_held_write(big, 1, sizeof big, &r), sizeof big);
    ck_assert_int_eq(r.mode, BO_HOLD_PASS);
    ck_assert_int_eq(g_calls, 2);
    ck_assert_uint_eq(g_nseen, 1 + strlen("HTTP/1.1 503 Service Unavailable\r\n") + 1 + sizeof big);
    free(r.held);
}
END_TEST

START_TEST(test_refused_bytes_fail_the_commit)
{
    bo_curl_rec r;
    setup_rec(&r);
    feed_header(&r, "HTTP/1.1 429 Too Many Requests\r\n");
    ck_assert_uint_eq(bo_curl_held_write("rejected", 1, 8, &r), 8);
    g_refuse_after = 10; /* the program takes the status line's callback only */
    ck_assert_int_eq(bo_curl_commit(&r), -1);
    ck_assert(r.deliver_failed);
    free(r.held);
}
END_TEST

START_TEST(test_unmanaged_passes_through)
{
    bo_curl_rec r;
    setup_rec(&r);
    r.dest = NULL;
    bo_curl_attempt_reset(&r);
    feed_header(&r, "HTTP/1.1 429 Too Many Requests\r\n");
    ck_assert_int_eq(g_calls, 1);
}
END_TEST

START_TEST(test_ratelimit_headers_noted)
{
    bo_curl_rec r;
    setup_rec(&r);
    feed_header(&r, "HTTP/1.1 200 OK\r\n");
    feed_header(&r, "x-ratelimit-remaining: 7\r\n");
    feed_header(&r, "Date: Tue, 25 Nov 2026 12:00:00 GMT\r\n");
    ck_assert(r.rl.seen);
    ck_assert_int_eq(r.rl.x_remaining, 7);
    /* a new header block (a redirect followed, a retry) starts its own */
    feed_header(&r, "HTTP/1.1 200 OK\r\n");
    ck_assert(!r.rl.seen);
    free(r.held);
}
END_TEST

START_TEST(test_status_lines)
{
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/1.1 429 Too Many\r\n", 23), 429);
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/2 200 \r\n", 13), 200);
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/1.1 20x OK\r\n", 17), -1);
    ck_assert_int_eq(bo_curl_status_of_line("Http/1.1 200 OK\r\n", 17), -1);
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/1.1 200", 12), 200);
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/1.1 20", 11), -1); /* too short */
    ck_assert_int_eq(bo_curl_status_of_line("HTTP/1.1X200 OK\r\n", 17), -1);
}
END_TEST

/* libcurl's getinfo as it would answer after the 429 attempt (kept.c asks
 * it when the next attempt starts); anything else is not known. */
static CURLcode fake_getinfo(CURL *h, CURLINFO info, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, info);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    switch (info) {
    case CURLINFO_RESPONSE_CODE:
        *(long *)arg = 429;
        return CURLE_OK;
    case CURLINFO_SIZE_DOWNLOAD_T:
        *(curl_off_t *)arg = 8;
        return CURLE_OK;
    case CURLINFO_RETRY_AFTER:
        *(curl_off_t *)arg = 1;
        return CURLE_OK;
    case CURLINFO_CONTENT_TYPE:
        *(const char **)arg = "text/plain";
        return CURLE_OK;
    default:
        return CURLE_UNKNOWN_OPTION;
    }
}
static const bo_curl_real g_fake_real = {.getinfo = fake_getinfo};

/* An attempt answered 429 "rejected", retried; the next one starts. */
static void retried_429(bo_curl_rec *r)
{
    setup_rec(r);
    r->real = &g_fake_real;
    feed_header(r, "HTTP/1.1 429 Too Many Requests\r\n");
    ck_assert_uint_eq(bo_curl_held_write("rejected", 1, 8, r), 8);
    ck_assert(bo_curl_kept_worth(r, CURLE_OK));
    bo_curl_kept_keep(r, CURLE_OK);
    bo_curl_attempt_reset(r);
}

START_TEST(test_kept_answer_when_the_retry_got_none)
{
    bo_curl_rec r;
    long status = 0;
    double size = 0;
    curl_off_t ra = 0;
    const char *type = NULL;

    retried_429(&r);
    ck_assert_int_eq(r.held_len, 0); /* the next attempt holds its own */
    /* it fails before any answer (another host's certificate) */
    ck_assert_int_eq(bo_curl_kept_use(&r, CURLE_PEER_FAILED_VERIFICATION), CURLE_OK);
    ck_assert_int_eq(bo_curl_commit(&r), 0);
    const char want[] = "HHTTP/1.1 429 Too Many Requests\r\nBrejected";
    ck_assert_uint_eq(g_nseen, sizeof want - 1);
    ck_assert(memcmp(g_seen, want, g_nseen) == 0);
    ck_assert(bo_curl_kept_any_shown());
    ck_assert(bo_curl_kept_info_of(&r, CURLINFO_RESPONSE_CODE, &status));
    ck_assert_int_eq(status, 429);
    ck_assert(bo_curl_kept_info_of(&r, CURLINFO_SIZE_DOWNLOAD, &size)); /* the double form */
    ck_assert(size == 8.0);
    ck_assert(bo_curl_kept_info_of(&r, CURLINFO_RETRY_AFTER, &ra));
    ck_assert_int_eq(ra, 1);
    ck_assert(bo_curl_kept_info_of(&r, CURLINFO_CONTENT_TYPE, &type));
    ck_assert_str_eq(type, "text/plain");
    /* what was not kept is libcurl's to answer */
    ck_assert(!bo_curl_kept_info_of(&r, CURLINFO_HTTP_VERSION, &status));
    ck_assert(!bo_curl_kept_info_of(&r, CURLINFO_TOTAL_TIME_T, &ra));
    /* the handle's next transfer speaks for itself */
    bo_curl_attempt_reset(&r);
    ck_assert(!bo_curl_kept_any_shown());
    ck_assert(!bo_curl_kept_info_of(&r, CURLINFO_RESPONSE_CODE, &status));
    free(r.held);
    free(r.kept);
}
END_TEST

START_TEST(test_kept_answer_never_over_an_answer_or_the_programs_failure)
{
    static const int own[] = {CURLE_OK, CURLE_HTTP_RETURNED_ERROR, CURLE_ABORTED_BY_CALLBACK,
                              CURLE_WRITE_ERROR, CURLE_READ_ERROR};
    bo_curl_rec r;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        retried_429(&r);
        ck_assert_int_eq(bo_curl_kept_use(&r, own[i]), own[i]);
        ck_assert(!bo_curl_kept_any_shown());
        free(r.held);
        free(r.kept);
    }
    /* the last attempt already handed the program bytes of its own */
    retried_429(&r);
    feed_header(&r, "HTTP/1.1 200 OK\r\n");
    ck_assert_uint_eq(bo_curl_held_write("pa", 1, 2, &r), 2);
    ck_assert_int_eq(bo_curl_kept_use(&r, CURLE_RECV_ERROR), CURLE_RECV_ERROR);
    ck_assert(!bo_curl_kept_any_shown());
    free(r.held);
    free(r.kept);
    /* a call that begins forgets what the last one kept */
    retried_429(&r);
    bo_curl_kept_forget(&r);
    ck_assert_int_eq(bo_curl_kept_use(&r, CURLE_COULDNT_CONNECT), CURLE_COULDNT_CONNECT);
    free(r.held);
    free(r.kept);
}
END_TEST

START_TEST(test_kept_only_a_whole_final_answer)
{
    bo_curl_rec r;
    setup_rec(&r);
    feed_header(&r, "HTTP/1.1 100 Continue\r\n");
    ck_assert(!bo_curl_kept_worth(&r, CURLE_OK)); /* no final status yet */
    feed_header(&r, "HTTP/1.1 503 Service Unavailable\r\n");
    ck_assert(bo_curl_kept_worth(&r, CURLE_OK));
    ck_assert(!bo_curl_kept_worth(&r, CURLE_RECV_ERROR)); /* cut short */
    ck_assert_int_eq(bo_curl_commit(&r), 0);
    ck_assert(!bo_curl_kept_worth(&r, CURLE_OK)); /* already the program's */
    free(r.held);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shim_held");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_held_until_commit);
    tcase_add_test(tc, test_final_answer_commits_at_body);
    tcase_add_test(tc, test_bound_passes_through);
    tcase_add_test(tc, test_refused_bytes_fail_the_commit);
    tcase_add_test(tc, test_unmanaged_passes_through);
    tcase_add_test(tc, test_ratelimit_headers_noted);
    tcase_add_test(tc, test_status_lines);
    tcase_add_test(tc, test_kept_answer_when_the_retry_got_none);
    tcase_add_test(tc, test_kept_answer_never_over_an_answer_or_the_programs_failure);
    tcase_add_test(tc, test_kept_only_a_whole_final_answer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
