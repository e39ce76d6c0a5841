/* Unit tests for bo_ratelimit: the header dialects, the hints, bad values, pacing. */
#include <check.h>
#include <stdio.h>
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

/* bo_rl_headers_reuse: a zeroed block is reset whole (a zero remaining
 * would read as a spent quota), a read line is forgotten, and a block
 * nothing was read into stays as reset. */
START_TEST(test_reuse_forgets_the_last_answer)
{
    bo_rl_headers h;
    bo_rl_quota q;
    const char *line = "x-ratelimit-remaining: 0\r\n";
    const char *date = "Date: Wed, 21 Oct 2026 07:28:00 GMT\r\n";

    memset(&h, 0, sizeof h);
    bo_rl_headers_reuse(&h);
    ck_assert(!bo_rl_headers_exhausted(&h));
    ck_assert(!h.seen);
    ck_assert_int_eq(h.x_remaining, -1);
    ck_assert(bo_rl_header_line(&h, line, strlen(line)));
    ck_assert(bo_rl_headers_exhausted(&h));
    bo_rl_headers_reuse(&h);
    ck_assert(!bo_rl_headers_exhausted(&h));
    ck_assert(!bo_rl_headers_quota(&h, WALL, &q));
    ck_assert(bo_rl_header_line(&h, date, strlen(date)));
    ck_assert_int_gt(h.date_len, 0);
    bo_rl_headers_reuse(&h);
    ck_assert_int_eq(h.date_len, 0);
    bo_rl_headers_reuse(&h); /* nothing read since: still as reset */
    ck_assert_int_eq(h.x_remaining, -1);
    ck_assert_int_eq(h.ra_s, -1);
}
END_TEST

/* A Date too long to keep is dropped, and so is every Date after it,
 * whatever its length (a 255-byte value once compared 255 bytes of the
 * 40 kept: the fuzzer's find, an overread under ASan). */
START_TEST(test_date_too_long_then_another)
{
    bo_rl_headers h;
    char line[300];

    bo_rl_headers_reset(&h);
    int n = snprintf(line, sizeof line, "Date: %0*d\r\n", BO_RL_DATE_MAX + 10, 7);
    ck_assert(bo_rl_header_line(&h, line, (size_t)n));
    ck_assert_int_eq(h.date_len, BO_RL_DATE_BAD);
    n = snprintf(line, sizeof line, "Date: %0*d\r\n", BO_RL_DATE_BAD, 7);
    ck_assert(bo_rl_header_line(&h, line, (size_t)n));
    ck_assert_int_eq(h.date_len, BO_RL_DATE_BAD);
    const char *ok = "Date: Wed, 21 Oct 2026 07:28:00 GMT\r\n";
    ck_assert(bo_rl_header_line(&h, ok, strlen(ok)));
    ck_assert_int_eq(h.date_len, BO_RL_DATE_BAD);
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
    ck_assert(!bo_rl_header_line(&h, "Retry-After-Seconds: 3\r\n", 24));
    ck_assert(!bo_rl_header_line(&h, "Dates: 3\r\n", 10));
    ck_assert(!bo_rl_header_line(&h, "X-Request-Id: 3\r\n", 17));
    ck_assert(!bo_rl_header_line(&h, "x-ratelimit-used: 3\r\n", 21));
    ck_assert(!bo_rl_header_line(&h, "HTTP/1.1 200 OK\r\n", 17));
    ck_assert(!bo_rl_header_line(&h, "\r\n", 2));
    bo_rl_quota q;
    ck_assert(!bo_rl_headers_quota(&h, WALL, &q));
    ck_assert_int_eq(bo_rl_headers_retry_after(&h, WALL), -1);
    /* hints and Date are read, and are no quota */
    ck_assert(bo_rl_header_line(&h, "Retry-After: 3\r\n", 16));
    ck_assert(bo_rl_header_line(&h, "date: Sun, 06 Nov 1994 08:49:37 GMT\r\n", 37));
    ck_assert(!bo_rl_headers_quota(&h, WALL, &q));
}
END_TEST

/* The first-letter gate lets every line read here through, and little else. */
START_TEST(test_first_letter)
{
    const char *in = "xXrRaAdD";
    for (const char *c = in; *c; c++)
        ck_assert_msg(bo_rl_first_letter(*c), "'%c' kept out", *c);
    const char *out = "cCHhsStT\r\n:-0";
    for (const char *c = out; *c; c++)
        ck_assert_msg(!bo_rl_first_letter(*c), "'%c' let through", *c);
}
END_TEST

/* X (Twitter): x-rate-limit-*, reset as epoch seconds. */
START_TEST(test_x_rate_limit)
{
    const char *l[] = {"x-rate-limit-limit: 900\r\n", "X-Rate-Limit-Remaining: 899\r\n",
                       "x-rate-limit-reset: 1800000030\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.limit, 900);
    ck_assert_int_eq(q.remaining, 899);
    ck_assert_int_eq(q.reset_ns, 30 * S);
    /* field by field: a past reset, and the limit alone, give nothing */
    const char *past[] = {"x-rate-limit-remaining: 3\r\n", "x-rate-limit-reset: 1799999999\r\n",
                          NULL};
    ck_assert(!quota_of(past, &q));
    const char *bad_limit[] = {"x-rate-limit-limit: lots\r\n", "x-rate-limit-remaining: 3\r\n",
                               "x-rate-limit-reset: 1800000002\r\n", NULL};
    ck_assert(quota_of(bad_limit, &q));
    ck_assert_int_eq(q.limit, -1);
    ck_assert_int_eq(q.remaining, 3);
}
END_TEST

/*
 * Discord: X-RateLimit-Reset is an epoch with decimals (the reader before
 * the reader once took it for no value at all), X-RateLimit-Reset-After the time
 * left with decimals, and wins; X-RateLimit-Bucket names the partition.
 */
START_TEST(test_discord)
{
    const char *l[] = {"X-RateLimit-Limit: 5\r\n", "X-RateLimit-Remaining: 0\r\n",
                       "X-RateLimit-Reset: 1800000001.500\r\n",
                       "X-RateLimit-Reset-After: 1.370\r\n", "X-RateLimit-Bucket: abcd1234\r\n",
                       NULL};
    bo_rl_quota q;
    ck_assert(quota_of(l, &q));
    ck_assert_int_eq(q.limit, 5);
    ck_assert_int_eq(q.remaining, 0);
    ck_assert_int_eq(q.reset_ns, 1370000000LL); /* Reset-After, not the epoch's 1.5 s */
    ck_assert(q.pk != 0);
    /* the epoch with decimals alone, to the millisecond */
    const char *e[] = {"x-ratelimit-remaining: 2\r\n", "x-ratelimit-reset: 1800000001.123\r\n",
                       NULL};
    ck_assert(quota_of(e, &q));
    ck_assert_int_eq(q.reset_ns, 1123000000LL);
    ck_assert_int_eq(q.pk, 0);
    /* a bad Reset-After leaves the epoch */
    const char *b[] = {"x-ratelimit-remaining: 2\r\n", "x-ratelimit-reset: 1800000002\r\n",
                       "x-ratelimit-reset-after: 1.2.3\r\n", NULL};
    ck_assert(quota_of(b, &q));
    ck_assert_int_eq(q.reset_ns, 2 * S);
    /* more than three decimals round up to the millisecond */
    const char *r[] = {"x-ratelimit-remaining: 2\r\n", "x-ratelimit-reset-after: 0.0001\r\n",
                       NULL};
    ck_assert(quota_of(r, &q));
    ck_assert_int_eq(q.reset_ns, 100000LL);
    /* another bucket, another partition */
    const char *o[] = {"X-RateLimit-Remaining: 0\r\n", "X-RateLimit-Reset-After: 1\r\n",
                       "X-RateLimit-Bucket: ffff\r\n", NULL};
    bo_rl_quota q2;
    ck_assert(quota_of(o, &q2));
    ck_assert(q2.pk != 0 && q2.pk != q.pk);
}
END_TEST

/* OpenAI's reset durations, one value each (x-ratelimit-reset-requests). */
static const struct {
    const char *value;
    int64_t ns; /* -1: ignored */
} durations[] = {
    {"850ms", 850000000LL},  {"1s", S},           {"6m0s", 360 * S},
    {"1m30.5s", 90500000000LL}, {"20ms", 20000000LL}, {"1h2m3s", 3723 * S},
    {" 7.66s ", 7660000000LL}, {"0s", 0},         {"2.5\xc2\xb5s", 2500},
    {"3us", 3000},           {"17ns", 17},        {"1.5", 1500000000LL}, /* bare: seconds */
    {"12", 12 * S},          {"-1s", -1},         {"1s6m", -1},          /* units ascending */
    {"1ms1ms", -1},          {"s", -1},           {"1x", -1},
    {"", -1},                {"1m30", -1},        {"1.s", -1},
    {"745h", -1},            /* over 31 days */   {"1 s", -1},
    {".5s", -1},             {"1e3ms", -1},
};

START_TEST(test_openai_durations)
{
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "x-ratelimit-reset-requests: %s\r\n", durations[i].value);
        const char *l[] = {"x-ratelimit-remaining-requests: 5\r\n", line, NULL};
        bo_rl_quota q;
        bool got = quota_of(l, &q);
        if (durations[i].ns < 0) {
            ck_assert_msg(!got, "\"%s\" gave a quota", durations[i].value);
        } else {
            ck_assert_msg(got, "\"%s\" gave no quota", durations[i].value);
            ck_assert_msg(q.reset_ns == durations[i].ns, "\"%s\": %lld ns", durations[i].value,
                          (long long)q.reset_ns);
        }
    }
}
END_TEST

/* OpenAI's durations are told to the millisecond unless they are whole seconds ("2s"): those
 * may be rounded, as its documentation shows them. */
START_TEST(test_openai_whole_seconds_are_not_exact)
{
    static const struct {
        const char *value;
        bool exact;
    } v[] = {{"850ms", true}, {"1.5s", true}, {"2s", false}, {"6m0s", false}, {"0s", false}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "x-ratelimit-reset-requests: %s\r\n", v[i].value);
        const char *l[] = {"x-ratelimit-remaining-requests: 5\r\n", line, NULL};
        bo_rl_quota q;
        ck_assert(quota_of(l, &q));
        ck_assert_msg(q.reset_exact == v[i].exact, "\"%s\"", v[i].value);
    }
}
END_TEST

/* Both of OpenAI's quotas are read; the stricter is paced. */
START_TEST(test_openai_stricter)
{
    /* requests: 0 left for 850 ms; tokens: plenty */
    const char *r[] = {"x-ratelimit-limit-requests: 10\r\n", "x-ratelimit-limit-tokens: 2000\r\n",
                       "x-ratelimit-remaining-requests: 0\r\n",
                       "x-ratelimit-remaining-tokens: 1000\r\n",
                       "x-ratelimit-reset-requests: 850ms\r\n",
                       "x-ratelimit-reset-tokens: 850ms\r\n", NULL};
    bo_rl_quota q;
    ck_assert(quota_of(r, &q));
    ck_assert_int_eq(q.remaining, 0);
    ck_assert_int_eq(q.reset_ns, 850000000LL);
    ck_assert_int_eq(q.limit, 10);
    /* tokens: 16 a request so far, 9,374 requests' worth over 6 min (26/s),
     * stricter than 59 requests over 1 s */
    const char *t[] = {"x-ratelimit-limit-requests: 60\r\n",
                       "x-ratelimit-limit-tokens: 150000\r\n",
                       "x-ratelimit-remaining-requests: 59\r\n",
                       "x-ratelimit-remaining-tokens: 149984\r\n",
                       "x-ratelimit-reset-requests: 1s\r\n", "x-ratelimit-reset-tokens: 6m0s\r\n",
                       NULL};
    ck_assert(quota_of(t, &q));
    ck_assert_int_eq(q.remaining, 9374);
    ck_assert_int_eq(q.reset_ns, 360 * S);
    ck_assert_int_eq(q.limit, -1);
    /* no tokens left: none until their reset, whatever the requests say */
    const char *z[] = {"x-ratelimit-remaining-requests: 59\r\n",
                       "x-ratelimit-remaining-tokens: 0\r\n",
                       "x-ratelimit-reset-requests: 1s\r\n", "x-ratelimit-reset-tokens: 20ms\r\n",
                       NULL};
    ck_assert(quota_of(z, &q));
    ck_assert_int_eq(q.remaining, 0);
    ck_assert_int_eq(q.reset_ns, 20000000LL);
    /* Azure OpenAI's "-1" (unknown) tokens are ignored, the requests stand */
    const char *a[] = {"x-ratelimit-remaining-requests: 4\r\n",
                       "x-ratelimit-reset-requests: 2s\r\n", "x-ratelimit-limit-tokens: -1\r\n",
                       "x-ratelimit-remaining-tokens: -1\r\n", "x-ratelimit-reset-tokens: 0\r\n",
                       NULL};
    ck_assert(quota_of(a, &q));
    ck_assert_int_eq(q.remaining, 4);
    ck_assert_int_eq(q.reset_ns, 2 * S);
    /* a bad requests reset: the tokens alone, when they tell a count of requests, cannot */
    const char *b[] = {"x-ratelimit-remaining-requests: 4\r\n",
                       "x-ratelimit-reset-requests: soon\r\n",
                       "x-ratelimit-remaining-tokens: 100\r\n",
                       "x-ratelimit-reset-tokens: 1s\r\n", NULL};
    ck_assert(!quota_of(b, &q));
}
END_TEST

/* The hint an answer's lines give (ns), wall clock WALL. */
static int64_t hint_of(const char *const *lines)
{
    bo_rl_headers h = feed(lines);
    return bo_rl_headers_retry_after(&h, WALL);
}

START_TEST(test_hints_ms)
{
    const char *a[] = {"retry-after-ms: 250\r\n", NULL};
    ck_assert_int_eq(hint_of(a), 250 * 1000000LL);
    const char *b[] = {"x-ms-retry-after-ms: 1500\r\n", NULL};
    ck_assert_int_eq(hint_of(b), 1500 * 1000000LL);
    /* milliseconds win over whole seconds; retry-after-ms over Azure's */
    const char *c[] = {"Retry-After: 1\r\n", "x-ms-retry-after-ms: 40\r\n",
                       "retry-after-ms: 30\r\n", NULL};
    ck_assert_int_eq(hint_of(c), 30 * 1000000LL);
    const char *d[] = {"Retry-After: 1\r\n", "x-ms-retry-after-ms: 40\r\n", NULL};
    ck_assert_int_eq(hint_of(d), 40 * 1000000LL);
    /* bad or zero milliseconds: the next form */
    const char *e[] = {"retry-after-ms: 1.5\r\n", "Retry-After: 2\r\n", NULL};
    ck_assert_int_eq(hint_of(e), 2 * S);
    const char *f[] = {"retry-after-ms: 0\r\n", NULL};
    ck_assert_int_eq(hint_of(f), -1);
    /* two different values: dropped */
    const char *g[] = {"retry-after-ms: 10\r\n", "retry-after-ms: 20\r\n", NULL};
    ck_assert_int_eq(hint_of(g), -1);
    /* saturated, never wrapped */
    const char *h[] = {"x-ms-retry-after-ms: 99999999999999999999999999\r\n", NULL};
    ck_assert(hint_of(h) > 1000000LL * S);
}
END_TEST

/* Retry-After in seconds, read from the line as libcurl's CURLINFO_RETRY_AFTER
 * reads it where it is a plain number, and left to it otherwise. */
START_TEST(test_hints_seconds)
{
    const char *a[] = {"Retry-After:  7 \r\n", NULL};
    ck_assert_int_eq(hint_of(a), 7 * S);
    const char *b[] = {"retry-after: 99999999999999999999\r\n", NULL};
    ck_assert(hint_of(b) > 1000000LL * S); /* saturated: the engine waits its cap */
    static const char *const none[] = {"Retry-After: 0\r\n", "Retry-After: -1\r\n",
                                        "Retry-After: 1.5\r\n", "Retry-After: 1e9\r\n",
                                        "Retry-After: +7\r\n", "Retry-After: 5; x\r\n",
                                        "Retry-After: abc\r\n", "Retry-After:\r\n"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        const char *l[] = {none[i], NULL};
        ck_assert_msg(hint_of(l) == -1, "%s gave a hint", none[i]);
    }
}
END_TEST

/* Retry-After as an HTTP-date: waited to that instant as the answer's Date tells it. */
START_TEST(test_hints_date)
{
    /* IMF-fixdate against the Date: 3 s, whatever the local clock says */
    const char *a[] = {"Retry-After: Sun, 06 Nov 1994 08:49:40 GMT\r\n",
                       "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(a), 3 * S);
    /* RFC 850 against an asctime Date: the two-digit year is 1994 next to it */
    const char *b[] = {"Retry-After: Sunday, 06-Nov-94 08:50:37 GMT\r\n",
                       "Date: Sun Nov  6 08:49:37 1994\r\n", NULL};
    ck_assert_int_eq(hint_of(b), 60 * S);
    /* no Date: against the wall clock (WALL is 2027-01-15 08:00:00 UTC) */
    const char *c[] = {"Retry-After: Fri, 15 Jan 2027 08:00:05 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(c), 5 * S);
    const char *d[] = {"Retry-After: Fri Jan 15 08:00:02 2027\r\n", NULL};
    ck_assert_int_eq(hint_of(d), 2 * S);
    /* two-digit years within 50 years ahead stay in this century, later ones go back */
    const char *e[] = {"Retry-After: Friday, 15-Jan-27 08:00:09 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(e), 9 * S);
    const char *f[] = {"Retry-After: Friday, 15-Jan-77 08:00:09 GMT\r\n", NULL};
    ck_assert(hint_of(f) > 49LL * 365 * 86400 * S); /* 2077: ahead */
    const char *g[] = {"Retry-After: Saturday, 15-Jan-78 08:00:09 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(g), -1); /* 1978: past */
    /* a date in the past, or equal to Date: no wait */
    const char *h[] = {"Retry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
                       "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(h), -1);
    /* a bad Date: the wall clock instead */
    const char *i[] = {"Retry-After: Fri, 15 Jan 2027 08:00:05 GMT\r\n", "Date: yesterday\r\n",
                       NULL};
    ck_assert_int_eq(hint_of(i), 5 * S);
    /* the year 9999: a wait, saturated by the engine's cap, never wrapped */
    const char *j[] = {"Retry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\n", NULL};
    ck_assert(hint_of(j) > 1000000LL * S);
}
END_TEST

/* The date as an instant (lines, read at WALL + off_ns): at and Date, or false. */
static bool date_of(const char *const *lines, int64_t off_ns, int64_t *at_s, int64_t *date_s)
{
    bo_rl_headers h = feed(lines);
    return bo_rl_headers_retry_date(&h, WALL + off_ns, at_s, date_s);
}

/* An HTTP-date waited to by our clock less what the server's Dates tell of
 * its own: never early, at most a second shorter than the span alone. */
START_TEST(test_hints_date_by_server_clock)
{
    int64_t at, date;
    const char *a[] = {"Retry-After: Fri, 15 Jan 2027 08:00:02 GMT\r\n",
                       "Date: Fri, 15 Jan 2027 08:00:00 GMT\r\n", NULL};
    ck_assert(date_of(a, 0, &at, &date));
    ck_assert_int_eq(at - date, 2);
    ck_assert_int_eq(date * S, WALL);
    /* another hint form wins, and then there is no instant */
    const char *b[] = {"Retry-After: Fri, 15 Jan 2027 08:00:02 GMT\r\n", "retry-after-ms: 30\r\n",
                       "Date: Fri, 15 Jan 2027 08:00:00 GMT\r\n", NULL};
    ck_assert(!date_of(b, 0, &at, &date));
    /* no Date, a bad one, or a date not after it: no instant */
    const char *c[] = {"Retry-After: Fri, 15 Jan 2027 08:00:02 GMT\r\n", NULL};
    ck_assert(!date_of(c, 0, &at, &date));
    const char *d[] = {"Retry-After: Fri, 15 Jan 2027 08:00:02 GMT\r\n", "Date: soon\r\n", NULL};
    ck_assert(!date_of(d, 0, &at, &date));
    const char *e[] = {"Retry-After: Fri, 15 Jan 2027 08:00:00 GMT\r\n",
                       "Date: Fri, 15 Jan 2027 08:00:00 GMT\r\n", NULL};
    ck_assert(!date_of(e, 0, &at, &date));

    /* the server's clock is ours (WALL is a whole second) */
    bo_rl_clock clk = {0};
    int64_t d0 = WALL / S, ms = 1000000LL;
    /* the first answer, read 700 ms into its second: the span alone */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 1, d0, WALL + 700 * ms), 1 * S);
    ck_assert(clk.known);
    ck_assert_int_eq(clk.ahead_ns, -700 * ms);
    /* one read 50 ms into its second: the bound rises to -50 ms */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 2, d0 + 1, WALL + 1050 * ms), 1 * S);
    ck_assert_int_eq(clk.ahead_ns, -50 * ms);
    /* later answers late in their second wait to 50 ms past the date, not a second */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 3, d0 + 2, WALL + 2900 * ms), 150 * ms);
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 5, d0 + 3, WALL + 3600 * ms), 1450 * ms);
    ck_assert_int_eq(clk.ahead_ns, -50 * ms);
    /* our clock set back 10 s: the answer's Date now reads 10 s ahead, the
     * bound follows it up (never early) */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 5, d0 + 4, WALL - 5800 * ms), 1 * S);
    ck_assert_int_eq(clk.ahead_ns, 9800 * ms);
    /* our clock set forward again: the answer's Date could not be second d0 + 6
     * by the bound kept, so the bound starts again from it */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 7, d0 + 6, WALL + 6300 * ms), 1 * S);
    ck_assert_int_eq(clk.ahead_ns, -300 * ms);
    /* the bound at its highest beside this answer: the least wait, still above 0 */
    clk.ahead_ns = 0;
    ck_assert_int_eq(bo_rl_clock_wait(&clk, d0 + 8, d0 + 7, WALL + 7999 * ms), 1 * ms);
    /* a span past what a wait can hold: saturated */
    ck_assert_int_eq(bo_rl_clock_wait(&clk, INT64_MAX / S + d0 + 9, d0 + 8, WALL + 8 * S),
                     INT64_MAX);
}
END_TEST

/* Dates that are not RFC 9110's forms exactly: no hint from here. */
static const char *const bad_dates[] = {
    "Sun, 06 Nov 1994 08:49:37 UTC",  "Sun, 6 Nov 1994 08:49:37 GMT",
    "Sun, 31 Feb 1994 08:49:37 GMT",  "Sun, 06 Nov 1994 24:00:00 GMT",
    "Sun, 06 Nov 1994 08:60:00 GMT",  "Sun, 06 Nov 1994 08:49:37 GMT x",
    "Sun, 06 Nov 94 08:49:37 GMT",    "Sun, 06 Foo 1994 08:49:37 GMT",
    "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT",
    "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
    "Sun Nov  6 08:49:37 94",         "Xyz, 06 Nov 1994 08:49:37 GMT",
    "sun, 06 nov 1994 08:49:37 gmt",  "Sun, 06 Nov 1899 08:49:37 GMT",
    "Thursday, 29-Feb-01 00:00:00 GMT", "2027-01-15T08:00:05Z",
};

START_TEST(test_hints_bad_dates)
{
    for (size_t k = 0; k < sizeof bad_dates / sizeof bad_dates[0]; k++) {
        char line[96];
        snprintf(line, sizeof line, "Retry-After: %s\r\n", bad_dates[k]);
        const char *l[] = {line, "Date: Sun, 06 Nov 1994 08:00:00 GMT\r\n", NULL};
        ck_assert_msg(hint_of(l) == -1, "\"%s\" gave a hint", bad_dates[k]);
    }
    /* the leap day of a leap year is a date */
    const char *ok[] = {"Retry-After: Tue, 29 Feb 2000 00:00:10 GMT\r\n",
                        "Date: Tue, 29 Feb 2000 00:00:00 GMT\r\n", NULL};
    ck_assert_int_eq(hint_of(ok), 10 * S);
}
END_TEST

/* A 403 is GitHub's primary rate limit when the headers say the quota is spent. */
START_TEST(test_exhausted)
{
    static const char *const spent[] = {"x-ratelimit-remaining: 0\r\n",
                                         "X-Rate-Limit-Remaining: 0\r\n",
                                         "RateLimit-Remaining: 0\r\n",
                                         "RateLimit: \"d\";r=0;t=5\r\n",
                                         "x-ratelimit-remaining-requests: 0\r\n"};
    for (size_t i = 0; i < sizeof spent / sizeof spent[0]; i++) {
        const char *l[] = {spent[i], NULL};
        bo_rl_headers h = feed(l);
        ck_assert_msg(bo_rl_headers_exhausted(&h), "%s", spent[i]);
    }
    static const char *const left[] = {"x-ratelimit-remaining: 1\r\n",
                                        "x-ratelimit-remaining: 00x\r\n",
                                        "x-ratelimit-limit: 0\r\n", "Retry-After: 0\r\n"};
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
        const char *l[] = {left[i], NULL};
        bo_rl_headers h = feed(l);
        ck_assert_msg(!bo_rl_headers_exhausted(&h), "%s", left[i]);
    }
    bo_rl_headers h;
    bo_rl_headers_reset(&h);
    ck_assert(!bo_rl_headers_exhausted(&h));
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
    bo_rl_quota q = {limit, remaining, reset_ns, -1, 0, false};
    return q;
}

/*
 * Spend, then wait: alone, 10 left over 5 s go at once (the program's own
 * pace), and the 11th waits for the reset, a little jitter after it (at
 * most a fiftieth of the window: 100 ms of 5 s).
 */
START_TEST(test_spend_then_wait)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 1);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 10, 5 * S);
    rl.window_ns = 5 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t t = 0;
    for (int i = 0; i < 10; i++, t += 1000000LL) {
        ck_assert_msg(bo_quota_next_send(&q, t, INT64_MAX) == t, "send %d held", i);
        bo_quota_on_send(&q, t);
    }
    int64_t next = bo_quota_next_send(&q, t, INT64_MAX);
    ck_assert_msg(next >= 5 * S && next <= 5 * S + 100000000LL, "next %lld", (long long)next);
    /* the first send's answer says 3 left, 9 others in flight: no more room */
    rl = mk(100, 3, 5 * S);
    rl.window_ns = 5 * S;
    bo_quota_note_answer(&q, &rl, 9, 0, true, t, &rng);
    ck_assert_int_eq(bo_quota_next_send(&q, t, INT64_MAX), next);
    ck_assert(!(q.slot[0].shared_until_ns > t));
}
END_TEST

/* Let the slot see `remaining` fall by `drop` for each of our sends: the
 * quota's other spenders.  Returns the time after the sends. */
static int64_t spend_with_others(bo_quota *q, bo_rng *rng, int64_t remaining, int drop, int n)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++) {
        bo_rl_quota rl = mk(1000, remaining, 10 * S - t);
        rl.window_ns = 10 * S;
        bo_quota_note(q, &rl, 0, t, rng);
        bo_quota_on_send(q, t);
        remaining -= drop;
        t += 10000000LL;
    }
    return t;
}

/*
 * Others spend the quota (remaining falls faster than our own sends
 * account for): from then on it is spread evenly until the reset, as
 * before spend-then-wait: 100 left over ~10 s, about 100 ms apart.
 */
START_TEST(test_spread_when_others_spend)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 1);

    /* alone: a drop of one per send is ours */
    bo_quota_init(&q);
    int64_t t = spend_with_others(&q, &rng, 500, 1, 5);
    ck_assert(!(q.slot[0].shared_until_ns > t));
    ck_assert_int_eq(bo_quota_next_send(&q, t, INT64_MAX), t);
    /* a drop of one more than ours is within the slack */
    bo_quota_init(&q);
    t = spend_with_others(&q, &rng, 500, 2, 2);
    ck_assert(!(q.slot[0].shared_until_ns > t));
    /* three per send: others */
    bo_quota_init(&q);
    t = spend_with_others(&q, &rng, 500, 3, 3);
    ck_assert(q.slot[0].shared_until_ns > t);
    /* shared through this window and the next */
    ck_assert_int_eq(q.slot[0].shared_until_ns, q.slot[0].reset_at_ns + 10 * S);
    bo_rl_quota rl = mk(1000, 100, 10 * S - t);
    rl.window_ns = 10 * S;
    bo_quota_note(&q, &rl, 0, t, &rng);
    int64_t prev = -1;
    for (int i = 0; i < 10; i++) {
        int64_t next = bo_quota_next_send(&q, t, INT64_MAX);
        ck_assert(next >= t);
        t = next;
        if (prev >= 0)
            ck_assert_msg(t - prev >= 85000000LL && t - prev <= 115000000LL, "gap %lld",
                          (long long)(t - prev));
        prev = t;
        bo_quota_on_send(&q, t);
    }
}
END_TEST

/* Requests in flight when the mark was taken may be counted later: they are ours. */
START_TEST(test_inflight_drop_is_ours)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 2);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 50, 10 * S);
    bo_quota_note_answer(&q, &rl, 6, 0, true, 0, &rng); /* 6 others in flight */
    rl = mk(100, 43, 10 * S);                            /* those 6 and this one */
    bo_quota_note_answer(&q, &rl, 0, 0, true, 1000000LL, &rng);
    ck_assert(!(q.slot[0].shared_until_ns > 1000000LL));
    ck_assert_int_eq(bo_quota_next_send(&q, 1000000LL, INT64_MAX), 1000000LL);
}
END_TEST

/*
 * A throttle while our own count said requests were left: others spent
 * them.  One that our own sends explain is not evidence.
 */
START_TEST(test_throttle_with_quota_left_spreads)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 3);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 5, 10 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    bo_quota_on_send(&q, 1000);
    bo_quota_note_throttle(&q, 2000, 2000);
    ck_assert(q.slot[0].shared_until_ns > 2000);

    bo_quota_init(&q);
    rl = mk(100, 1, 10 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    bo_quota_on_send(&q, 1000);
    bo_quota_on_send(&q, 1000); /* two sends for one left: the second's 429 is ours */
    bo_quota_note_throttle(&q, 2000, 2000);
    ck_assert(!(q.slot[0].shared_until_ns > 2000));
    /* once the known reset passed, a throttle says nothing either */
    bo_quota_init(&q);
    rl = mk(100, 5, 1 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    bo_quota_note_throttle(&q, 2 * S, 2 * S);
    ck_assert(!(q.slot[0].shared_until_ns > 2 * S));
}
END_TEST

/* Several partitions answer for one destination: each is spread. */
START_TEST(test_partition_change_spreads)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 4);
    bo_quota_init(&q);
    bo_rl_quota a = mk(100, 50, 10 * S), b = mk(100, 80, 10 * S);
    a.pk = 11;
    b.pk = 22;
    bo_quota_note(&q, &a, 0, 0, &rng);
    bo_quota_note(&q, &a, 0, 1000, &rng);
    ck_assert(!(q.slot[0].shared_until_ns > 1000));
    bo_quota_note(&q, &b, 0, 2000, &rng);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(q.slot[i].shared_until_ns > 2000, "slot %d", i);
}
END_TEST

/*
 * Once the reset of a spent window passes with no answer of the new one,
 * one send goes; the others wait for its answer (a bucket taken for a
 * window must not be overrun), which tells what the window allows.
 */
START_TEST(test_after_reset_one_then_the_answer)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 5);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(20, 0, 2 * S);
    rl.window_ns = 2 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t t = bo_quota_next_send(&q, 0, INT64_MAX);
    ck_assert(t >= 2 * S && t <= 2 * S + 40000000LL); /* jitter: up to 2 s / 50 */
    bo_quota_on_send(&q, t);
    int64_t n2 = bo_quota_next_send(&q, t, INT64_MAX);
    ck_assert_msg(n2 > t, "a second send went before the first answer");
    rl = mk(20, 19, 2 * S); /* the new window's first answer: 19 left */
    rl.window_ns = 2 * S;
    bo_quota_note(&q, &rl, 0, t + 1000000LL, &rng);
    for (int i = 0; i < 19; i++) {
        int64_t now = t + 2000000LL + i;
        ck_assert_msg(bo_quota_next_send(&q, now, INT64_MAX) == now, "send %d of the window held",
                      i);
        bo_quota_on_send(&q, now);
    }
    ck_assert(bo_quota_next_send(&q, t + 3000000LL, INT64_MAX) >= 4 * S);
}
END_TEST

/*
 * A spent window holds the next admission until its reset, a little jitter
 * after it; a reset past the limit of a wait the program did not ask for
 * (BACKOFF_CAP_MS, its deadline) is not waited for at all: BO_QUOTA_BEYOND,
 * never a wait up to the limit (asked again there, it would be one more).
 */
START_TEST(test_spent_waits_for_reset_with_jitter_and_cap)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 2);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(100, 0, 3 * S);
    rl.window_ns = 10 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t next = bo_quota_next_send(&q, 0, INT64_MAX);
    ck_assert(next >= 3 * S && next <= 3 * S + 100000000LL);
    /* a reset past the limit is not waited for; one at it is */
    ck_assert_int_eq(bo_quota_next_send(&q, 0, 1 * S), BO_QUOTA_BEYOND);
    ck_assert_int_eq(bo_quota_next_send(&q, 0, next - 1), BO_QUOTA_BEYOND);
    ck_assert_int_eq(bo_quota_next_send(&q, 0, next), next);
    ck_assert_int_eq(bo_quota_next_send(&q, 2 * S, 2 * S + 1 * S), BO_QUOTA_BEYOND);
    ck_assert_int_eq(bo_quota_next_send(&q, 2500000000LL, 3500000000LL), next);
    /* nothing held: never beyond, even past a limit already gone */
    ck_assert_int_eq(bo_quota_next_send(&q, next, next - 1), next);
    /* after the reset the window's own pace: 10 s / 100 */
    bo_quota_on_send(&q, next);
    int64_t n2 = bo_quota_next_send(&q, next, INT64_MAX);
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
    int64_t next = bo_quota_next_send(&q, 300000000LL, INT64_MAX);
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
    ck_assert(bo_quota_next_send(&q, 300000000LL, INT64_MAX) >= 1 * S);

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
    ck_assert(bo_quota_next_send(&q, 300000000LL, INT64_MAX) >= 1 * S);
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
    int64_t next = bo_quota_next_send(&q, t, INT64_MAX);
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

/*
 * Eight threads spend a fixed window at once and their answers overtake one
 * another: remaining 18, 16, 15, 14, 12, 17, 13 (each request the server
 * counted has its own value).  Not a bucket: spent, it waits for the reset.
 * A value seen twice among them is one: tokens came back.
 */
START_TEST(test_reordered_answers_are_not_a_bucket)
{
    static const int64_t order[] = {18, 16, 15, 14, 12, 17, 13, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1,
                                    0};
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 8);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(20, 19, 2 * S);
    rl.window_ns = 2 * S;
    bo_quota_note_answer(&q, &rl, 7, 0, true, 1000000LL, &rng); /* the mark */
    int64_t t = 1000000LL;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        t += 100000LL;
        rl = mk(20, order[i], 2 * S - t);
        rl.window_ns = 2 * S;
        /* each sent after the mark's answer came, answered out of order */
        bo_quota_note_answer(&q, &rl, 3, 1000000LL + 50000LL, true, t, &rng);
        ck_assert_msg(!q.slot[0].refills, "taken for a bucket at remaining %lld",
                      (long long)order[i]);
    }
    ck_assert(bo_quota_next_send(&q, t, INT64_MAX) >= 2 * S);

    bo_quota_init(&q);
    rl = mk(20, 19, 2 * S);
    bo_quota_note_answer(&q, &rl, 0, 0, true, 1000000LL, &rng);
    rl = mk(20, 17, 2 * S);
    bo_quota_note_answer(&q, &rl, 0, 1100000LL, true, 2000000LL, &rng);
    ck_assert(!q.slot[0].refills);
    rl = mk(20, 17, 2 * S); /* counted after the first 17, and 17 again */
    bo_quota_note_answer(&q, &rl, 0, 1200000LL, true, 3000000LL, &rng);
    ck_assert(q.slot[0].refills);
}
END_TEST

/*
 * Told to the millisecond, a token bucket's "full at" moves one refill time
 * later with each token spent, where a fixed window's end stays put: a
 * bucket of 10/s spent one request every 8 ms is known from its second
 * answer, with its 100 ms refill time, and once spent it paces at that
 * instead of waiting until it is full.  The same with whole seconds, or a
 * fixed window told exactly, is no bucket.
 */
static bo_quota bucket_answers(bool exact, bool window)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 9);
    bo_quota_init(&q);
    int64_t t = 0;
    for (int i = 0; i < 10; i++, t += 8000000LL) {
        double tokens = 10 - (i + 1) + 0.08 * i; /* after this request */
        int64_t ttf = window ? 1 * S - t : (int64_t)((10 - tokens) / 10 * 1e9);
        bo_rl_quota rl = mk(10, (int64_t)tokens, ttf);
        rl.reset_exact = exact;
        if (!exact)
            rl.reset_ns = (ttf + S - 1) / S * S;
        bo_quota_note(&q, &rl, 0, t, &rng);
        bo_quota_on_send(&q, t + 1);
    }
    return q;
}

START_TEST(test_exact_reset_tells_a_bucket)
{
    bo_quota q = bucket_answers(true, false);
    ck_assert(q.slot[0].refills);
    ck_assert_msg(q.slot[0].refill_gap_ns >= 90000000LL && q.slot[0].refill_gap_ns <= 110000000LL,
                  "refill gap %lld", (long long)q.slot[0].refill_gap_ns);
    int64_t now = 80000000LL;
    int64_t next = bo_quota_next_send(&q, now, INT64_MAX);
    ck_assert_msg(next - now < 200000000LL, "spent: waited %lld ns, not a refill time",
                  (long long)(next - now));
    q = bucket_answers(false, false); /* whole seconds: the rounding hides the move */
    ck_assert(q.slot[0].refill_gap_ns == 0);
    q = bucket_answers(true, true); /* a window told exactly: its end stays put */
    ck_assert(!q.slot[0].refills);
}
END_TEST

/*
 * A bucket of 20/s told in whole epoch seconds and spent in a millisecond:
 * its "full at" is rounded to a second boundary that moves one second on
 * mid-burst (the clocks' microseconds must not make that a new window), so
 * the earliest bound is kept; the one send at it finds 9 back, not the 19 a
 * fixed window would have: a bucket, paced at its refill time from then on.
 */
static bool probe_finds(int64_t remaining)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 10);
    bo_quota_init(&q);
    int64_t t = 500000000LL; /* 0.5 s into an epoch second */
    for (int i = 0; i < 20; i++, t += 50000LL) {
        /* full at t + (i + 1) / 20 s, rounded up to the second, a few us off */
        int64_t full = t + (i + 1) * 50000000LL;
        int64_t at = (full + S - 1) / S * S + (i % 2 ? 3000 : -3000);
        bo_rl_quota rl = mk(20, 19 - i, at - t);
        bo_quota_note(&q, &rl, 0, t, &rng);
        bo_quota_on_send(&q, t);
    }
    int64_t next = bo_quota_next_send(&q, t, INT64_MAX);
    ck_assert_msg(next >= 1 * S - 5000 && next < 1 * S + 30000000LL, "held until %lld",
                  (long long)next);
    bo_quota_on_send(&q, next);
    bo_rl_quota rl = mk(20, remaining, 1 * S);
    bo_quota_note(&q, &rl, 0, next + 1000000LL, &rng);
    return q.slot[0].refills;
}

START_TEST(test_probe_after_reset_tells_a_bucket)
{
    ck_assert(probe_finds(9));   /* half a second's tokens: a bucket */
    ck_assert(!probe_finds(19)); /* the whole limit back: a fixed window */
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
    ck_assert(bo_quota_next_send(&q, 0, INT64_MAX) >= 2 * S);
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
    ck_assert(bo_quota_next_send(&q, 0, INT64_MAX) >= 1 * S);
    /* no more headers: a window after the reset, nothing holds back */
    ck_assert_int_eq(bo_quota_next_send(&q, 3 * S, INT64_MAX), 3 * S);
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

/*
 * A fixed window with 0.4 s left, its reset in whole seconds rounded to the
 * nearest: "0s".  That is a window with under a second left, not one that
 * is over: its remaining count still holds the sends back.
 */
START_TEST(test_whole_second_zero_reset_is_not_over)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 11);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(20, 3, 0); /* not exact */
    bo_quota_note(&q, &rl, 0, 0, &rng);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(bo_quota_next_send(&q, 1000, INT64_MAX), 1000);
        bo_quota_on_send(&q, 1000);
    }
    ck_assert_int_ge(bo_quota_next_send(&q, 1000, INT64_MAX), 1 * S);
}
END_TEST

/*
 * The server's answers win over its headers: a request sent once the reset
 * they gave had passed is refused, so they round it.  The destination then
 * waits half a second past it and reads every later reset half a second
 * later; refused again, a whole second.
 */
START_TEST(test_refused_after_the_reset_reads_resets_later)
{
    bo_quota q;
    bo_rng rng;
    bo_rng_seed(&rng, 12);
    bo_quota_init(&q);
    bo_rl_quota rl = mk(20, 0, 1 * S);
    rl.window_ns = 2 * S;
    bo_quota_note(&q, &rl, 0, 0, &rng);
    int64_t next = bo_quota_next_send(&q, 0, INT64_MAX);
    ck_assert(next >= 1 * S && next < 1 * S + 50000000LL);
    bo_quota_on_send(&q, next);
    bo_quota_note_throttle(&q, next, next + 10000000LL); /* refused */
    int64_t late = bo_quota_next_send(&q, next + 10000000LL, INT64_MAX);
    ck_assert_msg(late >= 1 * S + BO_QUOTA_HALF_ROUNDING_NS, "next %lld", (long long)late);
    ck_assert_int_eq(q.slot[0].late_ns, BO_QUOTA_HALF_ROUNDING_NS);
    /* the next window's answer (19 left): its reset is read half a second later */
    bo_quota_on_send(&q, late);
    rl = mk(20, 19, 1 * S);
    rl.window_ns = 2 * S;
    bo_quota_note(&q, &rl, 0, late + 10000000LL, &rng);
    ck_assert_int_eq(q.slot[0].reset_at_ns, late + 10000000LL + S + BO_QUOTA_HALF_ROUNDING_NS);
    /* refused again after that one: a whole second from then on */
    int64_t again = q.slot[0].reset_at_ns + 1;
    bo_quota_note_throttle(&q, again, again + 10000000LL);
    ck_assert_int_eq(q.slot[0].late_ns, BO_QUOTA_ROUNDING_NS);
    /* a refusal of a request sent before the reset proves nothing of the kind */
    bo_quota_init(&q);
    rl = mk(20, 5, 1 * S);
    bo_quota_note(&q, &rl, 0, 0, &rng);
    bo_quota_note_throttle(&q, 500000000LL, 510000000LL);
    ck_assert_int_eq(q.slot[0].late_ns, 0);
}
END_TEST

/*
 * A quota read as a bucket (its exact "full at" moved) whose refill-paced
 * sends are refused twice is a window: spent, it waits for its reset.
 */
START_TEST(test_bucket_reading_refused_twice_is_a_window)
{
    bo_quota q = bucket_answers(true, false);
    ck_assert(q.slot[0].refills);
    int64_t t = 80000000LL;
    for (int i = 0; i < 2; i++) {
        t = bo_quota_next_send(&q, t, INT64_MAX);
        bo_quota_on_send(&q, t);
        ck_assert(q.slot[0].avail < 0);
        bo_quota_note_throttle(&q, t, t + 1000000LL);
        t += 1000000LL;
    }
    ck_assert(q.slot[0].not_bucket);
    ck_assert_int_ge(bo_quota_next_send(&q, t, INT64_MAX), q.slot[0].reset_at_ns);
}
END_TEST

static Suite *ratelimit_suite(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_github);
    tcase_add_test(tc, test_reuse_forgets_the_last_answer);
    tcase_add_test(tc, test_gitlab);
    tcase_add_test(tc, test_draft);
    tcase_add_test(tc, test_draft_pk_and_window_only);
    tcase_add_test(tc, test_draft_wins);
    tcase_add_test(tc, test_other_lines_ignored);
    tcase_add_test(tc, test_first_letter);
    tcase_add_test(tc, test_x_rate_limit);
    tcase_add_test(tc, test_discord);
    tcase_add_test(tc, test_openai_durations);
    tcase_add_test(tc, test_openai_stricter);
    tcase_add_test(tc, test_openai_whole_seconds_are_not_exact);
    tcase_add_test(tc, test_whole_second_zero_reset_is_not_over);
    tcase_add_test(tc, test_refused_after_the_reset_reads_resets_later);
    tcase_add_test(tc, test_bucket_reading_refused_twice_is_a_window);
    tcase_add_test(tc, test_hints_ms);
    tcase_add_test(tc, test_hints_seconds);
    tcase_add_test(tc, test_hints_date);
    tcase_add_test(tc, test_date_too_long_then_another);
    tcase_add_test(tc, test_hints_date_by_server_clock);
    tcase_add_test(tc, test_hints_bad_dates);
    tcase_add_test(tc, test_exhausted);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_remaining_above_limit);
    tcase_add_test(tc, test_conflicting_repeat_and_fallback);
    tcase_add_test(tc, test_cached_ignored);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("pace");
    tcase_add_test(tp, test_spend_then_wait);
    tcase_add_test(tp, test_spread_when_others_spend);
    tcase_add_test(tp, test_inflight_drop_is_ours);
    tcase_add_test(tp, test_throttle_with_quota_left_spreads);
    tcase_add_test(tp, test_partition_change_spreads);
    tcase_add_test(tp, test_after_reset_one_then_the_answer);
    tcase_add_test(tp, test_spent_waits_for_reset_with_jitter_and_cap);
    tcase_add_test(tp, test_inflight_counted);
    tcase_add_test(tp, test_bucket_refill_paces_not_waits);
    tcase_add_test(tp, test_bucket_steady_remaining_is_a_bucket);
    tcase_add_test(tp, test_window_reset_is_not_a_bucket);
    tcase_add_test(tp, test_reordered_answers_are_not_a_bucket);
    tcase_add_test(tp, test_exact_reset_tells_a_bucket);
    tcase_add_test(tp, test_probe_after_reset_tells_a_bucket);
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
