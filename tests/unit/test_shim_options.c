/*
 * Unit tests for the libcurl room's records (shim/libcurl/options.h),
 * through their header and a fake libcurl: what the program sets is
 * recorded once from the one table of tracked options, the shim's own
 * callbacks stay in front of the program's (kept, never forwarded), every
 * other option reaches libcurl unchanged, and a URL is read into its
 * destination once per origin.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcurl/held.h"
#include "libcurl/options.h"

/* The fake libcurl: every setopt it is given, in order. */
static struct {
    CURLoption opt;
    long l;
    void *p;
} g_log[64];
static int g_nlog;

static CURLcode fake_setopt(CURL *h, CURLoption opt, ...)
{
    va_list ap;
    (void)h;
    va_start(ap, opt);
    if (g_nlog < 64) {
        g_log[g_nlog].opt = opt;
        if (opt < CURLOPTTYPE_OBJECTPOINT)
            g_log[g_nlog].l = va_arg(ap, long);
        else
            g_log[g_nlog].p = va_arg(ap, void *);
        g_nlog++;
    }
    va_end(ap);
    return CURLE_OK;
}

static bo_curl_real g_fake = {.setopt = fake_setopt};
static char g_handle[4][16]; /* stand-ins for CURL handles */

static bool logged(CURLoption opt)
{
    for (int i = 0; i < g_nlog; i++)
        if (g_log[i].opt == opt)
            return true;
    return false;
}

static bo_curl_optval l(long v)
{
    return (bo_curl_optval){.l = v};
}

static bo_curl_optval p(void *v)
{
    return (bo_curl_optval){.p = v};
}

static size_t prog_write(char *b, size_t s, size_t n, void *ud)
{
    (void)b;
    (void)ud;
    return s * n;
}

START_TEST(test_record_installs_callbacks)
{
    g_nlog = 0;
    bo_curl_rec *r = bo_curl_rec_get(&g_fake, (CURL *)g_handle[0]);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_eq(bo_curl_rec_find((CURL *)g_handle[0]), r);
    ck_assert_ptr_eq(bo_curl_rec_get(&g_fake, (CURL *)g_handle[0]), r); /* made once */
    ck_assert(logged(CURLOPT_WRITEFUNCTION) && logged(CURLOPT_HEADERFUNCTION));
    for (int i = 0; i < g_nlog; i++) {
        if (g_log[i].opt == CURLOPT_WRITEFUNCTION)
            ck_assert_ptr_eq(g_log[i].p, (void *)bo_curl_held_write);
        if (g_log[i].opt == CURLOPT_WRITEDATA || g_log[i].opt == CURLOPT_HEADERDATA)
            ck_assert_ptr_eq(g_log[i].p, r);
    }
    /* libcurl's defaults: stdout as the write data, no progress meter */
    ck_assert_ptr_eq(r->write_data, stdout);
    ck_assert(r->noprogress);
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[0]));
    ck_assert_ptr_null(bo_curl_rec_find((CURL *)g_handle[0]));
}
END_TEST

START_TEST(test_methods_and_limits)
{
    bo_curl_rec *r = bo_curl_rec_get(&g_fake, (CURL *)g_handle[1]);
    ck_assert_str_eq(bo_curl_method_name(r), "GET");
    bo_curl_opt_set(r, CURLOPT_POST, l(1));
    ck_assert_str_eq(bo_curl_method_name(r), "POST");
    ck_assert(bo_curl_has_upload(r));
    bo_curl_opt_set(r, CURLOPT_NOBODY, l(1));
    ck_assert_str_eq(bo_curl_method_name(r), "HEAD");
    bo_curl_opt_set(r, CURLOPT_NOBODY, l(0));
    ck_assert_str_eq(bo_curl_method_name(r), "GET");
    bo_curl_opt_set(r, CURLOPT_UPLOAD, l(1));
    ck_assert_str_eq(bo_curl_method_name(r), "PUT");
    bo_curl_opt_set(r, CURLOPT_CUSTOMREQUEST, p("PATCH"));
    ck_assert_str_eq(bo_curl_method_name(r), "PATCH");
    bo_curl_opt_set(r, CURLOPT_CUSTOMREQUEST, p(NULL));
    ck_assert_str_eq(bo_curl_method_name(r), "PUT");
    bo_curl_opt_set(r, CURLOPT_COPYPOSTFIELDS, p("a=1"));
    ck_assert(r->postfields && r->method == BO_METHOD_POST);
    bo_curl_opt_set(r, CURLOPT_MIMEPOST, p(r));
    ck_assert_int_eq(r->method, BO_METHOD_MIME);
    /* one timeout: the last set wins, seconds as milliseconds */
    bo_curl_opt_set(r, CURLOPT_TIMEOUT, l(3));
    ck_assert_int_eq(r->timeout_ms, 3000);
    bo_curl_opt_set(r, CURLOPT_TIMEOUT_MS, l(1500));
    ck_assert_int_eq(r->timeout_ms, 1500);
    bo_curl_opt_set(r, CURLOPT_TIMEOUT, l(0));
    ck_assert_int_eq(r->timeout_ms, 0);
    bo_curl_opt_set(r, CURLOPT_FOLLOWLOCATION, l(1));
    ck_assert(r->follow);
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[1]));
}
END_TEST

START_TEST(test_kept_and_forwarded)
{
    bo_curl_rec *r = bo_curl_rec_get(&g_fake, (CURL *)g_handle[2]);
    char sink[8];
    g_nlog = 0;
    /* the program's callbacks and their data are kept: ours stay in front */
    bo_curl_opt_set(r, CURLOPT_WRITEFUNCTION, (bo_curl_optval){.f = (void (*)(void))prog_write});
    bo_curl_opt_set(r, CURLOPT_WRITEDATA, p(sink));
    bo_curl_opt_set(r, CURLOPT_HEADERDATA, p(sink));
    ck_assert_int_eq(g_nlog, 0);
    ck_assert_ptr_eq((void *)r->write_fn, (void *)prog_write);
    ck_assert_ptr_eq(r->write_data, sink);
    /* everything else the record mirrors reaches libcurl as set */
    bo_curl_opt_set(r, CURLOPT_READDATA, p(sink));
    bo_curl_opt_set(r, CURLOPT_NOPROGRESS, l(0));
    ck_assert_int_eq(g_nlog, 2);
    ck_assert_int_eq(g_log[1].opt, CURLOPT_NOPROGRESS);
    ck_assert_int_eq(g_log[1].l, 0);
    ck_assert(!r->noprogress);
    /* the tracked options and only those */
    ck_assert(bo_curl_opt_tracked(CURLOPT_URL) && bo_curl_opt_tracked(CURLOPT_XFERINFOFUNCTION));
    ck_assert(!bo_curl_opt_tracked(CURLOPT_VERBOSE) && !bo_curl_opt_tracked(CURLOPT_USERAGENT));
    ck_assert(!bo_curl_opt_tracked(CURLOPT_INFILESIZE_LARGE));
    /* the header list and the post size are recorded, and reach libcurl as set */
    g_nlog = 0;
    bo_curl_opt_set(r, CURLOPT_HTTPHEADER, p(sink));
    bo_curl_opt_set(r, CURLOPT_POSTFIELDSIZE_LARGE, (bo_curl_optval){.o = 12});
    ck_assert_int_eq(g_nlog, 2);
    ck_assert_ptr_eq(r->headers, sink);
    ck_assert_int_eq(r->post_size, 12);
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[2]));
}
END_TEST

START_TEST(test_rules_cache)
{
    bo_curl_rec *r = bo_curl_rec_get(&g_fake, (CURL *)g_handle[3]);
    /* an option that may change what is retried drops the cached verdict */
    r->cached_status = 429;
    bo_curl_opt_set(r, CURLOPT_WRITEDATA, p(r));
    bo_curl_opt_set(r, CURLOPT_URL, p("http://h.test/a"));
    ck_assert_int_eq(r->cached_status, 429);
    bo_curl_opt_set(r, CURLOPT_POST, l(1));
    ck_assert_int_eq(r->cached_status, 0);
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[3]));
}
END_TEST

START_TEST(test_url_destination)
{
    bo_curl_rec *r = bo_curl_rec_get(&g_fake, (CURL *)g_handle[0]);
    bo_curl_opt_set(r, CURLOPT_URL, p("http://Example.COM:8080/a?q=1"));
    ck_assert_ptr_nonnull(r->dest);
    ck_assert_str_eq(r->dest->key, "http://example.com:8080");
    ck_assert(r->url_key != 0);
    bo_block *first = r->dest;
    uint64_t key = r->url_key;
    /* the same origin again: the same block, no parse; another URL: another key */
    bo_curl_opt_set(r, CURLOPT_URL, p("http://Example.COM:8080/b"));
    ck_assert_ptr_eq(r->dest, first);
    ck_assert(r->url_key != key && r->url_key != 0);
    bo_curl_opt_set(r, CURLOPT_URL, p("https://other.test/"));
    ck_assert_str_eq(r->dest->key, "https://other.test:443");
    /* a copy holds references of its own */
    bo_curl_rec *c = bo_curl_rec_dup(r, (CURL *)g_handle[1]);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_eq(c->dest, r->dest);
    ck_assert_ptr_eq(bo_curl_rec_find((CURL *)g_handle[1]), c);
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[0]));
    ck_assert_str_eq(c->dest->key, "https://other.test:443");
    /* curl_easy_reset: defaults again */
    bo_curl_rec_reset(c);
    ck_assert_ptr_null(c->dest);
    ck_assert_str_eq(bo_curl_method_name(c), "GET");
    bo_curl_rec_free(bo_curl_rec_take((CURL *)g_handle[1]));
}
END_TEST

START_TEST(test_origin_prefix)
{
    ck_assert_uint_eq(bo_curl_origin_prefix("http://a.test/x"), strlen("http://a.test"));
    ck_assert_uint_eq(bo_curl_origin_prefix("https://u@h:1?q"), strlen("https://u@h:1"));
    ck_assert_uint_eq(bo_curl_origin_prefix("h.test/x"), 0);
    ck_assert_uint_eq(bo_curl_origin_prefix("://x"), 0);
    ck_assert_uint_eq(bo_curl_origin_prefix(""), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shim_options");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_record_installs_callbacks);
    tcase_add_test(tc, test_methods_and_limits);
    tcase_add_test(tc, test_kept_and_forwarded);
    tcase_add_test(tc, test_rules_cache);
    tcase_add_test(tc, test_url_destination);
    tcase_add_test(tc, test_origin_prefix);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
