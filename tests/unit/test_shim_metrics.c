/*
 * Unit tests for the destination room's metrics forms (shim/dest/metrics.h),
 * through its header, on views made by hand: the destination label keeps
 * no user info, path or query; label values are escaped as the formats
 * require (backslash, double quote, newline; bytes that are not UTF-8
 * become U+FFFD) and JSON strings as JSON requires; the states of one
 * destination are merged and the destinations sorted; the OpenMetrics
 * counter families are named without _total and end with # EOF, the 0.0.4
 * text form names them by their sample; absent figures are absent.  The
 * real parsers (promtool, prometheus_client) read the real output in
 * tests/integration/test_metrics.sh.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dest/metrics.h"

#define S 1000000000LL

static char *render(bo_metrics_format fmt, bo_share_view *v, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(bo_metrics_render(out, fmt, v, n, 1000 * S, 1800000000 * S), 0);
    fclose(out);
    return text;
}

static bo_share_view view(const char *key, uint64_t calls)
{
    bo_share_view v;
    memset(&v, 0, sizeof v);
    snprintf(v.key, sizeof v.key, "%s", key);
    v.counts.calls = calls;
    v.counts.attempts = 2 * calls;
    v.window = 20;
    v.throttle_age_ns = v.success_age_ns = -1;
    return v;
}

static void label_is(const char *key, const char *want)
{
    char out[BO_SHARE_KEY_LEN];
    size_t n = bo_metrics_label(key, out, sizeof out);
    ck_assert_msg(strcmp(out, want) == 0, "%s: \"%s\", want \"%s\"", key, out, want);
    ck_assert_uint_eq(n, strlen(want));
}

START_TEST(test_label)
{
    label_is("http://127.0.0.1:8080", "http://127.0.0.1:8080");
    label_is("https://api.example.com:443", "https://api.example.com:443");
    label_is("tcp://[::1]:6379", "tcp://[::1]:6379");
    label_is("unix:/run/app.sock", "unix:/run/app.sock");
    label_is("unix:@abstract?x=1@y", "unix:@abstract?x=1@y"); /* a path, kept whole */
    label_is("http://user:hunter2@host:80", "http://host:80");
    label_is("http://a@b:pw@host:80", "http://host:80");
    label_is("http://host:80/path?token=secret#f", "http://host:80");
    label_is("http://host:80?token=secret", "http://host:80");
    label_is("http://u:p@host:80/x@y", "http://host:80"); /* '@' after the authority */
    char small[8];
    ck_assert_uint_eq(bo_metrics_label("http://host:80", small, sizeof small), 7);
    ck_assert_str_eq(small, "http://");
    ck_assert_uint_eq(bo_metrics_label("unix:/a/b/c", small, sizeof small), 7);
    ck_assert_str_eq(small, "unix:/a");
}
END_TEST

START_TEST(test_format_names)
{
    bo_metrics_format f = BO_METRICS_JSON;
    ck_assert_int_eq(bo_metrics_format_named("openmetrics", &f), 0);
    ck_assert_int_eq(f, BO_METRICS_OPENMETRICS);
    ck_assert_int_eq(bo_metrics_format_named("prometheus", &f), 0);
    ck_assert_int_eq(f, BO_METRICS_PROMETHEUS);
    ck_assert_int_eq(bo_metrics_format_named("json", &f), 0);
    ck_assert_int_eq(f, BO_METRICS_JSON);
    ck_assert_int_eq(bo_metrics_format_named("table", &f), 0);
    ck_assert_int_eq(f, BO_METRICS_TABLE);
    ck_assert_int_eq(bo_metrics_format_named("OpenMetrics", &f), -1);
    ck_assert_int_eq(bo_metrics_format_named("", &f), -1);
    ck_assert_int_eq(bo_metrics_format_named(NULL, &f), -1);
}
END_TEST

/* Escapes, in a label value: \ " and newline; a byte that is not UTF-8 is U+FFFD. */
START_TEST(test_label_escapes)
{
    bo_share_view v = view("unix:/tmp/a\"b\\c\nd\xff\xc3\xa9", 1);
    char *t = render(BO_METRICS_OPENMETRICS, &v, 1);
    ck_assert_msg(strstr(t, "backoff_calls_total{destination=\"unix:/tmp/a\\\"b\\\\c\\nd"
                            "\xef\xbf\xbd\xc3\xa9\"} 1\n") != NULL,
                  "%s", t);
    free(t);
    t = render(BO_METRICS_JSON, &v, 1);
    ck_assert_msg(strstr(t, "\"destination\":\"unix:/tmp/a\\\"b\\\\c\\nd\\ufffd\xc3\xa9\"") !=
                      NULL,
                  "%s", t);
    free(t);
    /* JSON: every control character escaped; the text formats keep a tab */
    v = view("unix:/t\tx\x01", 1);
    t = render(BO_METRICS_JSON, &v, 1);
    ck_assert_msg(strstr(t, "\"unix:/t\\u0009x\\u0001\"") != NULL, "%s", t);
    free(t);
    /* an overlong form, a surrogate and a cut sequence are not UTF-8 */
    v = view("unix:\xc0\xaf|\xed\xa0\x80|\xe2\x82", 1);
    t = render(BO_METRICS_PROMETHEUS, &v, 1);
    ck_assert_msg(strstr(t, "\"unix:\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                            "\xef\xbf\xbd\xef\xbf\xbd\"") != NULL,
                  "%s", t);
    free(t);
}
END_TEST

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* OpenMetrics: families without _total, samples with it, # EOF last; 0.0.4: by sample. */
START_TEST(test_families)
{
    bo_share_view v[2] = {view("http://b:1", 3), view("http://a:1", 5)};
    v[0].counts.throttled[BO_CAUSE_429] = 7;
    v[0].counts.throttled[BO_CAUSE_CONNECT] = 2;
    v[0].counts.wait_ns = 1234567890;
    v[0].counts.last_throttle_ns = 990 * S; /* 10 s before "now" */
    v[0].pace_hz = 2.5;
    v[0].busy = 1;
    v[0].idle = 2;
    char *t = render(BO_METRICS_OPENMETRICS, v, 2);
    ck_assert_msg(strstr(t, "# TYPE backoff_calls counter\n") != NULL, "%s", t);
    ck_assert(strstr(t, "# TYPE backoff_calls_total") == NULL);
    ck_assert(strstr(t, "# TYPE backoff_window gauge\n") != NULL);
    ck_assert(strstr(t, "# UNIT backoff_wait_seconds seconds\n") != NULL);
    size_t len = strlen(t);
    ck_assert(len > 6 && strcmp(t + len - 6, "# EOF\n") == 0);
    ck_assert_uint_eq(count(t, "# EOF"), 1);
    /* sorted: a before b, within every family */
    ck_assert(strstr(t, "backoff_calls_total{destination=\"http://a:1\"} 5\n") <
              strstr(t, "backoff_calls_total{destination=\"http://b:1\"} 3\n"));
    ck_assert(strstr(t, "backoff_throttled_total{destination=\"http://b:1\",kind=\"429\"} 7\n"));
    ck_assert(strstr(t, "backoff_throttled_total{destination=\"http://b:1\",kind=\"connect\"} "
                        "2\n"));
    ck_assert(strstr(t, "backoff_throttled_total{destination=\"http://a:1\",kind=\"timeout\"} "
                        "0\n"));
    ck_assert(strstr(t, "backoff_wait_seconds_total{destination=\"http://b:1\"} 1.234\n"));
    ck_assert(strstr(t, "backoff_processes{destination=\"http://b:1\",state=\"idle\"} 2\n"));
    /* paced and throttled: b; never: a has no sample */
    ck_assert(strstr(t, "backoff_pace_per_second{destination=\"http://b:1\"} 2.5\n"));
    ck_assert(strstr(t, "backoff_pace_per_second{destination=\"http://a:1\"}") == NULL);
    ck_assert(strstr(t, "backoff_last_throttle_age_seconds{destination=\"http://b:1\"} 10.000\n"));
    ck_assert(strstr(t, "backoff_last_throttle_timestamp_seconds{destination=\"http://b:1\"} "
                        "1799999990.000\n"));
    ck_assert(strstr(t, "backoff_last_throttle_age_seconds{destination=\"http://a:1\"}") == NULL);
    /* every family has one HELP and one TYPE */
    ck_assert_uint_eq(count(t, "# HELP "), count(t, "# TYPE "));
    ck_assert_uint_eq(count(t, "# TYPE "), 14);
    free(t);

    t = render(BO_METRICS_PROMETHEUS, v, 2);
    ck_assert(strstr(t, "# HELP backoff_calls_total ") != NULL);
    ck_assert(strstr(t, "# TYPE backoff_calls_total counter\n") != NULL);
    ck_assert(strstr(t, "# TYPE backoff_window gauge\n") != NULL);
    ck_assert(strstr(t, "# EOF") == NULL);
    ck_assert(strstr(t, "# UNIT") == NULL);
    ck_assert(strstr(t, "backoff_calls_total{destination=\"http://a:1\"} 5\n") != NULL);
    free(t);
}
END_TEST

/* Two states of one destination (configured differently): counts summed,
 * gauges of the one with more attempts, the latest throttle. */
START_TEST(test_merge)
{
    bo_share_view v[3] = {view("http://x:1", 1), view("http://y:1", 4), view("http://x:1", 10)};
    v[0].window = 3;
    v[2].window = 40;
    v[0].in_flight = 1;
    v[2].in_flight = 2;
    v[0].busy = 1;
    v[2].busy = 1;
    v[0].counts.throttled[BO_CAUSE_503] = 1;
    v[2].counts.throttled[BO_CAUSE_503] = 5;
    v[0].counts.wait_ns = 1000000;
    v[2].counts.wait_ns = 2000000;
    v[0].counts.last_throttle_ns = 999 * S;
    v[2].counts.last_throttle_ns = 500 * S;
    char *t = render(BO_METRICS_JSON, v, 3);
    ck_assert_msg(strstr(t, "{\"destination\":\"http://x:1\",\"calls\":11,\"attempts\":22,") !=
                      NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "\"throttled\":{\"429\":0,\"503\":6,\"504\":0,\"connect\":0,"
                            "\"timeout\":0},\"wait_ms\":3,\"window\":40,\"pace_per_s\":null,"
                            "\"in_flight\":3,\"processes\":{\"busy\":2,\"idle\":0},"
                            "\"last_throttle_age_s\":1.000,"
                            "\"last_throttle_unix\":1799999999.000}") != NULL,
                  "%s", t);
    ck_assert_uint_eq(count(t, "\"destination\":"), 2);
    ck_assert(strstr(t, "\"destination\":\"http://x:1\"") <
              strstr(t, "\"destination\":\"http://y:1\""));
    ck_assert(strncmp(t, "{\"scope\":\"host\",", 16) == 0);
    ck_assert(strstr(t, "BACKOFF_SHARE=process") != NULL);
    free(t);
}
END_TEST

/* No destination: a valid empty set. */
START_TEST(test_empty)
{
    char *t = render(BO_METRICS_JSON, NULL, 0);
    ck_assert(strstr(t, "\"destinations\":[]}\n") != NULL);
    free(t);
    t = render(BO_METRICS_OPENMETRICS, NULL, 0);
    ck_assert(strstr(t, "backoff_calls_total{") == NULL);
    ck_assert(strcmp(t + strlen(t) - 6, "# EOF\n") == 0);
    free(t);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("shim_metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_label);
    tcase_add_test(tc, test_format_names);
    tcase_add_test(tc, test_label_escapes);
    tcase_add_test(tc, test_families);
    tcase_add_test(tc, test_merge);
    tcase_add_test(tc, test_empty);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
