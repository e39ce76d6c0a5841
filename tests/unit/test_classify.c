/*
 * Unit tests for bo_classify: one table row per rule of docs/DESIGN.md's
 * "Behaviour the user can count on" (method x status x curl code x body
 * delivered x upload rewindable x request sent x retry_on bits).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bo_classify.h"
#include "bo_config.h"

#define DEF                                                                                  \
    (BO_RETRY_429 | BO_RETRY_503 | BO_RETRY_502 | BO_RETRY_504 | BO_RETRY_408 |              \
     BO_RETRY_CONNECT | BO_RETRY_TIMEOUT | BO_RETRY_RESET)
#define ALL 0x7ffu

enum { S = BO_VERDICT_SUCCESS, R = BO_VERDICT_RETRY, F = BO_VERDICT_FINAL };
enum {
    NONE = BO_SIGNAL_NONE,
    THR = BO_SIGNAL_THROTTLE,
    LOSS = BO_SIGNAL_LOSS,
    BUSY = BO_SIGNAL_KEY_BUSY
};

typedef struct row {
    const char *what;
    unsigned retry_on;
    int unsafe;
    const char *method;
    int status;
    int code;
    unsigned body;   /* body bytes delivered */
    int upload;      /* 0 none, 1 rewindable, 2 not rewindable */
    int sent;
    int err;         /* connect errno */
    int verdict;
    int signal;
} row;

/* clang-format off */
static const row rows[] = {
    /* what                       retry_on        unsafe method     status code body up sent errno  verdict sig */
    {"GET 200",                   DEF,            0, "GET",       200, 0,  0,  0, 1, 0,            S, NONE},
    {"POST 201",                  DEF,            0, "POST",      201, 0,  0,  2, 1, 0,            S, NONE},
    {"GET 101",                   DEF,            0, "GET",       101, 0,  0,  0, 1, 0,            S, NONE},
    {"GET 304",                   DEF,            0, "GET",       304, 0,  0,  0, 1, 0,            S, NONE},
    {"non-HTTP ok, status 0",     DEF,            0, NULL,        0,   0,  0,  0, 1, 0,            S, NONE},
    {"connect() ok",              DEF,            0, NULL,        0,   0,  0,  0, 0, 0,            S, NONE},
    {"GET 404 final",             DEF,            0, "GET",       404, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 400 final",             ALL,            1, "GET",       400, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 403 final",             ALL,            1, "GET",       403, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 501 not listed",        DEF,            0, "GET",       501, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 501 with 5xx",          BO_RETRY_5XX,   0, "GET",       501, 0,  0,  0, 1, 0,            R, NONE},
    {"POST 501 with 5xx",         BO_RETRY_5XX,   0, "POST",      501, 0,  0,  1, 1, 0,            F, NONE},
    {"GET 500 not in default",    DEF,            0, "GET",       500, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 500 with 500",          BO_RETRY_500,   0, "GET",       500, 0,  0,  0, 1, 0,            R, NONE},
    {"POST 500 with 500",         BO_RETRY_500,   0, "POST",      500, 0,  0,  1, 1, 0,            F, NONE},
    {"POST 500 unsafe",           BO_RETRY_500,   1, "POST",      500, 0,  0,  1, 1, 0,            R, NONE},
    {"GET 599 with 5xx",          BO_RETRY_5XX,   0, "GET",       599, 0,  0,  0, 1, 0,            R, NONE},
    {"GET 600 never",             ALL,            1, "GET",       600, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 429",                   DEF,            0, "GET",       429, 0,  0,  0, 1, 0,            R, THR},
    {"POST 429 any method",       DEF,            0, "POST",      429, 0,  0,  1, 1, 0,            R, THR},
    {"PATCH 429 any method",      DEF,            0, "PATCH",     429, 0,  0,  0, 1, 0,            R, THR},
    {"GET 429 not listed",        BO_RETRY_503,   0, "GET",       429, 0,  0,  0, 1, 0,            F, THR},
    {"GET 429 5xx does not cover",BO_RETRY_5XX,   0, "GET",       429, 0,  0,  0, 1, 0,            F, THR},
    {"GET 429 body delivered",    DEF,            0, "GET",       429, 0,  10, 0, 1, 0,            F, THR},
    {"POST 429 upload no rewind", DEF,            0, "POST",      429, 0,  0,  2, 1, 0,            F, THR},
    {"POST 429 unsafe no rewind", DEF,            1, "POST",      429, 0,  0,  2, 1, 0,            F, THR},
    {"POST 429 upload rewinds",   DEF,            0, "POST",      429, 0,  0,  1, 1, 0,            R, THR},
    {"GET 503",                   DEF,            0, "GET",       503, 0,  0,  0, 1, 0,            R, THR},
    {"POST 503 any method",       DEF,            0, "POST",      503, 0,  0,  1, 1, 0,            R, THR},
    {"GET 503 via 5xx",           BO_RETRY_5XX,   0, "GET",       503, 0,  0,  0, 1, 0,            R, THR},
    {"GET 503 not listed",        BO_RETRY_429,   0, "GET",       503, 0,  0,  0, 1, 0,            F, THR},
    {"PUT 503 upload no rewind",  DEF,            0, "PUT",       503, 0,  0,  2, 1, 0,            F, THR},
    {"GET 504",                   DEF,            0, "GET",       504, 0,  0,  0, 1, 0,            R, THR},
    {"POST 504 unsafe refused",   DEF,            0, "POST",      504, 0,  0,  1, 1, 0,            F, THR},
    {"POST 504 UNSAFE_RETRY",     DEF,            1, "POST",      504, 0,  0,  1, 1, 0,            R, THR},
    {"GET 504 via 5xx",           BO_RETRY_5XX,   0, "GET",       504, 0,  0,  0, 1, 0,            R, THR},
    {"GET 504 not listed",        BO_RETRY_503,   0, "GET",       504, 0,  0,  0, 1, 0,            F, THR},
    {"GET 502",                   DEF,            0, "GET",       502, 0,  0,  0, 1, 0,            R, NONE},
    {"NULL method 502 is GET",    DEF,            0, NULL,        502, 0,  0,  0, 1, 0,            R, NONE},
    {"get 502 lower case",        DEF,            0, "get",       502, 0,  0,  0, 1, 0,            F, NONE},
    {"HEAD 502",                  DEF,            0, "HEAD",      502, 0,  0,  0, 1, 0,            R, NONE},
    {"DELETE 502",                DEF,            0, "DELETE",    502, 0,  0,  0, 1, 0,            R, NONE},
    {"OPTIONS 502",               DEF,            0, "OPTIONS",   502, 0,  0,  0, 1, 0,            R, NONE},
    {"TRACE 502",                 DEF,            0, "TRACE",     502, 0,  0,  0, 1, 0,            R, NONE},
    {"PUT 502 rewindable",        DEF,            0, "PUT",       502, 0,  0,  1, 1, 0,            R, NONE},
    {"PUT 502 not rewindable",    DEF,            0, "PUT",       502, 0,  0,  2, 1, 0,            F, NONE},
    {"POST 502 refused",          DEF,            0, "POST",      502, 0,  0,  1, 1, 0,            F, NONE},
    {"PATCH 502 refused",         DEF,            0, "PATCH",     502, 0,  0,  0, 1, 0,            F, NONE},
    {"POST 502 unsafe",           DEF,            1, "POST",      502, 0,  0,  1, 1, 0,            R, NONE},
    {"GET 502 body delivered",    DEF,            1, "GET",       502, 0,  1,  0, 1, 0,            F, NONE},
    {"GET 502 not listed",        BO_RETRY_429,   0, "GET",       502, 0,  0,  0, 1, 0,            F, NONE},
    {"GET 408",                   DEF,            0, "GET",       408, 0,  0,  0, 1, 0,            R, NONE},
    {"POST 408 refused",          DEF,            0, "POST",      408, 0,  0,  1, 1, 0,            F, NONE},
    {"POST 408 unsafe",           DEF,            1, "POST",      408, 0,  0,  1, 1, 0,            R, NONE},
    {"GET 408 not listed",        BO_RETRY_5XX,   0, "GET",       408, 0,  0,  0, 1, 0,            F, NONE},
    {"-f 429",                    DEF,            0, "GET",       429, 22, 0,  0, 1, 0,            R, THR},
    {"-f 503 POST",               DEF,            0, "POST",      503, 22, 0,  1, 1, 0,            R, THR},
    {"-f 502 POST refused",       DEF,            0, "POST",      502, 22, 0,  1, 1, 0,            F, NONE},
    {"-f 502 GET",                DEF,            0, "GET",       502, 22, 0,  0, 1, 0,            R, NONE},
    {"-f 404",                    DEF,            0, "GET",       404, 22, 0,  0, 1, 0,            F, NONE},
    {"-f no status",              ALL,            1, "GET",       0,   22, 0,  0, 1, 0,            F, NONE},
    {"couldn't connect POST",     DEF,            0, "POST",      0,   7,  0,  1, 0, 0,            R, LOSS},
    {"couldn't connect GET",      DEF,            0, "GET",       0,   7,  0,  0, 0, 0,            R, LOSS},
    {"couldn't connect unlisted", BO_RETRY_TIMEOUT,0,"GET",       0,   7,  0,  0, 0, 0,            F, LOSS},
    {"connect() ECONNREFUSED",    DEF,            0, NULL,        0,   0,  0,  0, 0, ECONNREFUSED, R, LOSS},
    {"connect() ETIMEDOUT",       DEF,            0, NULL,        0,   0,  0,  0, 0, ETIMEDOUT,    R, LOSS},
    {"connect() ENETUNREACH",     DEF,            0, NULL,        0,   0,  0,  0, 0, ENETUNREACH,  R, LOSS},
    {"connect() EHOSTUNREACH",    DEF,            0, NULL,        0,   0,  0,  0, 0, EHOSTUNREACH, R, LOSS},
    {"connect() EAGAIN on TCP",   DEF,            0, NULL,        0,   0,  0,  0, 0, EAGAIN,       F, NONE},
    {"connect() ETIMEDOUT needs connect bit", BO_RETRY_TIMEOUT, 0, NULL, 0, 0, 0, 0, 0, ETIMEDOUT, F, LOSS},
    {"connect() EACCES",          ALL,            1, NULL,        0,   0,  0,  0, 0, EACCES,       F, NONE},
    {"connect() EINPROGRESS",     ALL,            1, NULL,        0,   0,  0,  0, 0, EINPROGRESS,  F, NONE},
    {"timeout unsent POST",       DEF,            0, "POST",      0,   28, 0,  1, 0, 0,            R, LOSS},
    {"timeout unsent unlisted",   BO_RETRY_CONNECT,0,"POST",      0,   28, 0,  1, 0, 0,            F, LOSS},
    {"timeout sent GET",          DEF,            0, "GET",       0,   28, 0,  0, 1, 0,            R, LOSS},
    {"timeout sent POST refused", DEF,            0, "POST",      0,   28, 0,  1, 1, 0,            F, LOSS},
    {"timeout sent POST unsafe",  DEF,            1, "POST",      0,   28, 0,  1, 1, 0,            R, LOSS},
    {"timeout sent GET unlisted", BO_RETRY_CONNECT,0,"GET",       0,   28, 0,  0, 1, 0,            F, LOSS},
    {"timeout after body",        DEF,            0, "GET",       200, 28, 5,  0, 1, 0,            F, LOSS},
    {"got nothing sent GET",      DEF,            0, "GET",       0,   52, 0,  0, 1, 0,            R, NONE},
    {"got nothing sent POST",     DEF,            0, "POST",      0,   52, 0,  1, 1, 0,            F, NONE},
    {"got nothing sent POST unsafe", DEF,         1, "POST",      0,   52, 0,  1, 1, 0,            R, NONE},
    {"send error unsent PATCH",   DEF,            0, "PATCH",     0,   55, 0,  1, 0, 0,            R, NONE},
    {"send error unsent no rewind", DEF,          0, "POST",      0,   55, 0,  2, 0, 0,            F, NONE},
    {"recv error sent PUT",       DEF,            0, "PUT",       0,   56, 0,  1, 1, 0,            R, NONE},
    {"recv error after 200 head", DEF,            0, "GET",       200, 56, 0,  0, 1, 0,            R, NONE},
    {"recv error after body",     DEF,            0, "GET",       200, 56, 100,0, 1, 0,            F, NONE},
    {"partial file no body yet",  DEF,            0, "GET",       200, 18, 0,  0, 1, 0,            R, NONE},
    {"partial file after body",   DEF,            0, "GET",       200, 18, 7,  0, 1, 0,            F, NONE},
    {"reset unlisted",            BO_RETRY_CONNECT|BO_RETRY_TIMEOUT, 0, "GET", 0, 52, 0, 0, 1, 0, F, NONE},
    {"dns host listed POST",      BO_RETRY_DNS,   0, "POST",      0,   6,  0,  1, 0, 0,            R, NONE},
    {"dns proxy listed",          BO_RETRY_DNS,   0, "GET",       0,   5,  0,  0, 0, 0,            R, NONE},
    {"dns not in default",        DEF,            0, "GET",       0,   6,  0,  0, 0, 0,            F, NONE},
    {"TLS connect error final",   ALL,            1, "GET",       0,   35, 0,  0, 0, 0,            F, NONE},
    {"malformed URL final",       ALL,            1, "GET",       0,   3,  0,  0, 0, 0,            F, NONE},
    {"write error final",         ALL,            1, "GET",       200, 23, 0,  0, 1, 0,            F, NONE},
};
/* clang-format on */

/*
 * Idempotency-Key: the same facts for a request that carries an Idempotency-Key (the
 * program's own or the shim's).  What may have reached the server is retried
 * as for an idempotent method, under BACKOFF_RETRY_ON as before; a 409 is
 * the key's "still processing" (retried after a wait, whatever RETRY_ON
 * lists); 422 and 400 stay final; a delivered body or an upload that cannot
 * be rewound still ends the call.  Each row's twin without a key is in
 * rows[] above or checked in test_key_rows (without a key nothing changes).
 */
/* clang-format off */
static const row key_rows[] = {
    /* what                       retry_on        unsafe method     status code body up sent errno  verdict sig */
    {"key POST 502",              DEF,            0, "POST",      502, 0,  0,  1, 1, 0,            R, NONE},
    {"key PATCH 502",             DEF,            0, "PATCH",     502, 0,  0,  1, 1, 0,            R, NONE},
    {"key post 502 lower case",   DEF,            0, "post",      502, 0,  0,  1, 1, 0,            R, NONE},
    {"key POST 502 not listed",   BO_RETRY_429,   0, "POST",      502, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 502 body delivered", DEF,          0, "POST",      502, 0,  1,  1, 1, 0,            F, NONE},
    {"key POST 502 no rewind",    DEF,            0, "POST",      502, 0,  0,  2, 1, 0,            F, NONE},
    {"key POST 504",              DEF,            0, "POST",      504, 0,  0,  1, 1, 0,            R, THR},
    {"key POST 500 not in default", DEF,          0, "POST",      500, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 500 with 500",     BO_RETRY_500,   0, "POST",      500, 0,  0,  1, 1, 0,            R, NONE},
    {"key POST 501 with 5xx",     BO_RETRY_5XX,   0, "POST",      501, 0,  0,  1, 1, 0,            R, NONE},
    {"key POST 408",              DEF,            0, "POST",      408, 0,  0,  1, 1, 0,            R, NONE},
    {"key POST 429",              DEF,            0, "POST",      429, 0,  0,  1, 1, 0,            R, THR},
    {"key POST got nothing",      DEF,            0, "POST",      0,   52, 0,  1, 1, 0,            R, NONE},
    {"key POST recv error (reset)", DEF,          0, "POST",      0,   56, 0,  1, 1, 0,            R, NONE},
    {"key POST reset not listed", BO_RETRY_TIMEOUT, 0, "POST",    0,   56, 0,  1, 1, 0,            F, NONE},
    {"key POST reset no rewind",  DEF,            0, "POST",      0,   56, 0,  2, 1, 0,            F, NONE},
    {"key POST timeout sent",     DEF,            0, "POST",      0,   28, 0,  1, 1, 0,            R, LOSS},
    {"key POST -f 502",           DEF,            0, "POST",      502, 22, 0,  1, 1, 0,            R, NONE},
    {"key POST 409 busy",         DEF,            0, "POST",      409, 0,  0,  1, 1, 0,            R, BUSY},
    {"key PATCH 409 busy",        DEF,            0, "PATCH",     409, 0,  0,  0, 1, 0,            R, BUSY},
    {"key POST 409 any retry_on", BO_RETRY_429,   0, "POST",      409, 0,  0,  1, 1, 0,            R, BUSY},
    {"key POST -f 409",           DEF,            0, "POST",      409, 22, 0,  1, 1, 0,            R, BUSY},
    {"key GET 409",               DEF,            0, "GET",       409, 0,  0,  0, 1, 0,            R, BUSY},
    {"key POST 409 body delivered", DEF,          0, "POST",      409, 0,  9,  1, 1, 0,            F, BUSY},
    {"key POST 409 no rewind",    DEF,            0, "POST",      409, 0,  0,  2, 1, 0,            F, BUSY},
    {"key POST 422 final",        ALL,            0, "POST",      422, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 422 unsafe final", ALL,            1, "POST",      422, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 400 final",        ALL,            1, "POST",      400, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 404 final",        ALL,            0, "POST",      404, 0,  0,  1, 1, 0,            F, NONE},
    {"key POST 201",              DEF,            0, "POST",      201, 0,  0,  1, 1, 0,            S, NONE},
    {"key POST connect failed",   DEF,            0, "POST",      0,   7,  0,  1, 0, 0,            R, LOSS},
};
/* clang-format on */

/* Without a key: a 409 is final for every method, whatever is configured. */
/* clang-format off */
static const row no_key_rows[] = {
    {"POST 409 final",            ALL,            1, "POST",      409, 0,  0,  1, 1, 0,            F, NONE},
    {"GET 409 final",             ALL,            1, "GET",       409, 0,  0,  0, 1, 0,            F, NONE},
    {"POST 422 final",            ALL,            1, "POST",      422, 0,  0,  1, 1, 0,            F, NONE},
};
/* clang-format on */

static void check_row(const row *w, int i, bool key)
{
    bo_config c;
    bo_attempt a = {0};
    bo_config_defaults(&c);
    c.retry_on = w->retry_on;
    c.unsafe_retry = w->unsafe != 0;
    a.curl_code = w->code;
    a.http_status = w->status;
    a.method = w->method;
    a.body_delivered = w->body;
    a.has_upload = w->upload != 0;
    a.upload_rewindable = w->upload == 1;
    a.request_sent = w->sent != 0;
    a.connect_errno = w->err;
    a.idempotency_key = key;
    bo_outcome o = bo_classify(&c, &a);
    ck_assert_msg((int)o.verdict == w->verdict && (int)o.signal == w->signal,
                  "row %d \"%s\" (key %d): got verdict %d signal %d, want verdict %d signal %d",
                  i, w->what, key, o.verdict, o.signal, w->verdict, w->signal);
    bool http = w->err == 0 && (w->code == BO_CURLE_OK || w->code == BO_CURLE_HTTP_RETURNED_ERROR);
    ck_assert(o.rate_limited == (http && w->status == 429));
}

START_TEST(test_key_rows)
{
    check_row(&key_rows[_i], _i, true);
    /* The same request without a key: what an idempotent method gets, or
     * what it got without a key rule (a 409 is then final). */
    row plain = key_rows[_i];
    bool idem = bo_method_idempotent(plain.method);
    if (plain.status == 409) {
        plain.verdict = F;
        plain.signal = NONE;
    } else if (!idem && plain.verdict == R && plain.status != 429 && plain.code != 7) {
        plain.verdict = F; /* it may have reached the server */
    }
    check_row(&plain, _i, false);
}
END_TEST

START_TEST(test_no_key_rows)
{
    check_row(&no_key_rows[_i], _i, false);
}
END_TEST

START_TEST(test_table)
{
    const row *w = &rows[_i];
    bo_config c;
    bo_attempt a = {0};
    bo_config_defaults(&c);
    c.retry_on = w->retry_on;
    c.unsafe_retry = w->unsafe != 0;
    a.curl_code = w->code;
    a.http_status = w->status;
    a.method = w->method;
    a.body_delivered = w->body;
    a.has_upload = w->upload != 0;
    a.upload_rewindable = w->upload == 1;
    a.request_sent = w->sent != 0;
    a.connect_errno = w->err;
    bo_outcome o = bo_classify(&c, &a);
    ck_assert_msg((int)o.verdict == w->verdict && (int)o.signal == w->signal,
                  "row %d \"%s\": got verdict %d signal %d, want verdict %d signal %d", _i,
                  w->what, o.verdict, o.signal, w->verdict, w->signal);
    /* only a 429 answer is the server's rate limit (the retry budget spares it) */
    bool http = w->err == 0 && (w->code == BO_CURLE_OK || w->code == BO_CURLE_HTTP_RETURNED_ERROR);
    ck_assert_msg(o.rate_limited == (http && w->status == 429), "row %d \"%s\": rate_limited %d",
                  _i, w->what, o.rate_limited);
    /* a kind exactly when there is a signal (the counters by kind add up to the
     * signals); a busy Idempotency-Key is no throttle */
    ck_assert_msg((o.cause != BO_CAUSE_NONE) ==
                      (o.signal != BO_SIGNAL_NONE && o.signal != BO_SIGNAL_KEY_BUSY),
                  "row %d \"%s\": cause %d with signal %d", _i, w->what, o.cause, o.signal);
}
END_TEST

/* The kind of each throttle and loss, whatever the verdict (the host-wide counters). */
typedef struct cause_row {
    const char *what;
    unsigned retry_on;
    int status, code, err;
    const char *name;
} cause_row;

/* clang-format off */
static const cause_row cause_rows[] = {
    {"429",                      DEF,          429, 0,  0,            "429"},
    {"-f 429",                   DEF,          429, 22, 0,            "429"},
    {"429 not retried",          BO_RETRY_503, 429, 0,  0,            "429"},
    {"503",                      DEF,          503, 0,  0,            "503"},
    {"504",                      DEF,          504, 0,  0,            "504"},
    {"502: no signal",           DEF,          502, 0,  0,            ""},
    {"200",                      DEF,          200, 0,  0,            ""},
    {"couldn't connect",         DEF,          0,   7,  0,            "connect"},
    {"connect() refused",        DEF,          0,   0,  ECONNREFUSED, "connect"},
    {"connect() timed out",      DEF,          0,   0,  ETIMEDOUT,    "connect"},
    {"connect() unreachable",    DEF,          0,   0,  EHOSTUNREACH, "connect"},
    {"connect() EAGAIN on TCP",  DEF,          0,   0,  EAGAIN,       ""},
    {"transfer timed out",       DEF,          0,   28, 0,            "timeout"},
    {"timed out in the body",    DEF,          200, 28, 0,            "timeout"},
    {"timeout not retried",      BO_RETRY_429, 0,   28, 0,            "timeout"},
    {"reset: no signal",         DEF,          0,   56, 0,            ""},
};
/* clang-format on */

START_TEST(test_cause)
{
    const cause_row *w = &cause_rows[_i];
    bo_config c;
    bo_attempt a = {.method = "GET", .request_sent = true};
    bo_config_defaults(&c);
    c.retry_on = w->retry_on;
    a.http_status = w->status;
    a.curl_code = w->code;
    a.connect_errno = w->err;
    bo_outcome o = bo_classify(&c, &a);
    ck_assert_msg(strcmp(bo_cause_name(o.cause), w->name) == 0, "\"%s\": kind \"%s\", want \"%s\"",
                  w->what, bo_cause_name(o.cause), w->name);
}
END_TEST

START_TEST(test_cause_names)
{
    ck_assert_str_eq(bo_cause_name(BO_CAUSE_NONE), "");
    ck_assert_str_eq(bo_cause_name(BO_CAUSE_COUNT), "");
    ck_assert_str_eq(bo_cause_name((bo_cause)-1), "");
    for (int k = BO_CAUSE_NONE + 1; k < BO_CAUSE_COUNT; k++)
        ck_assert(bo_cause_name((bo_cause)k)[0] != '\0');
}
END_TEST

/*
 * GitHub's primary rate limit answers 403 with x-ratelimit-remaining: 0: a
 * throttle, retried for any method, counted as a 429 for BACKOFF_RETRY_ON
 * and the retry budget; a 403 whose headers do not say the quota is spent
 * stays final (a refusal: no permission).
 */
START_TEST(test_403_quota_spent)
{
    static const struct {
        const char *what;
        unsigned retry_on;
        const char *method;
        int status, exhausted, body, upload;
        int verdict, signal, rate_limited;
    } t[] = {
        {"GET 403 spent", DEF, "GET", 403, 1, 0, 0, R, THR, 1},
        {"POST 403 spent, any method", DEF, "POST", 403, 1, 0, 1, R, THR, 1},
        {"GET 403 not spent", DEF, "GET", 403, 0, 0, 0, F, NONE, 0},
        {"GET 403 spent, 429 not listed", BO_RETRY_503, "GET", 403, 1, 0, 0, F, THR, 1},
        {"GET 403 spent, body delivered", DEF, "GET", 403, 1, 10, 0, F, THR, 1},
        {"POST 403 spent, upload not rewindable", DEF, "POST", 403, 1, 0, 2, F, THR, 1},
        {"GET 404 with remaining 0", DEF, "GET", 404, 1, 0, 0, F, NONE, 0},
        {"GET 200 with remaining 0", DEF, "GET", 200, 1, 0, 0, S, NONE, 0},
        {"GET 429 with remaining 0", DEF, "GET", 429, 1, 0, 0, R, THR, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        bo_config c;
        bo_attempt a = {0};
        bo_config_defaults(&c);
        c.retry_on = t[i].retry_on;
        a.curl_code = t[i].status >= 400 ? BO_CURLE_HTTP_RETURNED_ERROR : BO_CURLE_OK;
        a.http_status = t[i].status;
        a.method = t[i].method;
        a.body_delivered = (uint64_t)t[i].body;
        a.has_upload = t[i].upload != 0;
        a.upload_rewindable = t[i].upload == 1;
        a.request_sent = true;
        a.quota_exhausted = t[i].exhausted != 0;
        bo_outcome o = bo_classify(&c, &a);
        ck_assert_msg((int)o.verdict == t[i].verdict && (int)o.signal == t[i].signal &&
                          (int)o.rate_limited == t[i].rate_limited,
                      "\"%s\": verdict %d signal %d rate_limited %d", t[i].what, o.verdict,
                      o.signal, o.rate_limited);
        /* a spent quota's 403 counts as a 429 in the counters by kind */
        ck_assert_str_eq(bo_cause_name(o.cause), t[i].signal == THR ? "429" : "");
    }
}
END_TEST

/*
 * The one reading of the headers for that judgment, every room's: a head
 * not yet whole may be a spent quota (its 403 kept as a throttle until its
 * headers come); a whole head says it only with a remaining of 0.
 */
START_TEST(test_answer_quota_spent)
{
    static const struct {
        const char *lines;
        bool spent;
    } t[] = {
        {"", false},
        {"x-ratelimit-remaining: 0", true},
        {"x-ratelimit-remaining: 12", false},
        {"RateLimit-Remaining: 0", true},
        {"x-rate-limit-remaining: 0", true},
        {"Content-Type: text/plain", false},
    };
    ck_assert(bo_answer_quota_spent(NULL));
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        bo_rl_headers h;
        bo_rl_headers_reset(&h);
        if (t[i].lines[0] != '\0')
            (void)bo_rl_header_line(&h, t[i].lines, strlen(t[i].lines));
        ck_assert_msg(bo_answer_quota_spent(&h) == t[i].spent, "\"%s\"", t[i].lines);
    }
}
END_TEST

START_TEST(test_method_idempotent)
{
    /* methods are compared as HTTP compares them: case-sensitively (RFC 9110
     * section 9.1): a server may take "get" for another method */
    static const char *const yes[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"};
    static const char *const no[] = {"POST", "PATCH", "CONNECT", "post", "",     "GETX",
                                     "GE",   "PROPFIND", " GET", "get", "Head", "pUt",
                                     "delete", "options", "trace"};
    ck_assert(bo_method_idempotent(NULL));
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        ck_assert_msg(bo_method_idempotent(yes[i]), "%s should be idempotent", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        ck_assert_msg(!bo_method_idempotent(no[i]), "\"%s\" should not be idempotent", no[i]);
}
END_TEST

/* The default RETRY_ON of bo_config_defaults is the one docs/DESIGN.md lists. */
START_TEST(test_default_retry_on)
{
    bo_config c;
    bo_config_defaults(&c);
    ck_assert_uint_eq(c.retry_on, DEF);
}
END_TEST

/*
 * connect(): a refusal is retried only where it means "busy or restarting":
 * on a destination seen alive or named in BACKOFF_HOSTS, or a UNIX socket's
 * full backlog; never on a destination never seen accepting (a probe, an
 * address fallback, a stale socket file).
 */
typedef struct conn_row {
    int err;
    int unix_socket, unknown;
    int retry; /* bo_connect_errno_retryable and bo_classify's verdict */
} conn_row;

/* clang-format off */
static const conn_row conn_rows[] = {
    /* errno        unix unknown retry */
    {ECONNREFUSED,  0,   0,      1},
    {ECONNREFUSED,  0,   1,      0},
    {ECONNREFUSED,  1,   0,      1},
    {ECONNREFUSED,  1,   1,      0},
    {ETIMEDOUT,     0,   0,      1},
    {ETIMEDOUT,     0,   1,      0},
    {ENETUNREACH,   0,   0,      1},
    {ENETUNREACH,   0,   1,      0},
    {EHOSTUNREACH,  0,   0,      1},
    {EHOSTUNREACH,  0,   1,      0},
    {EAGAIN,        1,   1,      1},
    {EAGAIN,        1,   0,      1},
    {EAGAIN,        0,   0,      0},
    {EAGAIN,        0,   1,      0},
    {ENOENT,        1,   0,      0},
    {EINTR,         0,   0,      0},
    {EACCES,        0,   0,      0},
    {EINPROGRESS,   0,   0,      0},
    {EALREADY,      0,   0,      0},
};
/* clang-format on */

START_TEST(test_connect_rule)
{
    const conn_row *w = &conn_rows[_i];
    bo_config c;
    bo_attempt a = {0};
    bo_config_defaults(&c);
    a.connect_errno = w->err;
    a.connect_unix = w->unix_socket != 0;
    a.connect_unknown = w->unknown != 0;
    bool r = bo_connect_errno_retryable(w->err, w->unix_socket != 0, w->unknown != 0);
    ck_assert_msg(r == (w->retry != 0), "row %d errno %d unix %d unknown %d: got %d", _i,
                  w->err, w->unix_socket, w->unknown, r);
    bo_outcome o = bo_classify(&c, &a);
    ck_assert_int_eq(o.verdict, w->retry ? BO_VERDICT_RETRY : BO_VERDICT_FINAL);
    /* Not listed in BACKOFF_RETRY_ON: never retried, whatever the destination. */
    c.retry_on &= ~(unsigned)BO_RETRY_CONNECT;
    ck_assert_int_eq(bo_classify(&c, &a).verdict, BO_VERDICT_FINAL);
}
END_TEST

/*
 * bo_connect_judge: a non-blocking socket's connect is never the hook's; a
 * blocking one's EINPROGRESS is a send timeout that ran out (the hook's
 * own: abort, ETIMEDOUT; the program's: as is); a reused socket that will
 * not connect again is STALE; the rest is bo_connect_errno_retryable's.
 */
typedef struct judge_row {
    int err;
    int nonblocking, unix_socket, unknown, reused, shim_bound;
    bo_connect_class cls;
    int out_err, abort;
} judge_row;

/* clang-format off */
static const judge_row judge_rows[] = {
    /* errno        nb unix unkn reused bound class                 errno out     abort */
    {EINPROGRESS,   1, 0,   0,   0,     0,    BO_CONNECT_PASS,      EINPROGRESS,  0},
    {EAGAIN,        1, 1,   0,   0,     0,    BO_CONNECT_PASS,      EAGAIN,       0},
    {ECONNREFUSED,  1, 0,   0,   1,     1,    BO_CONNECT_PASS,      ECONNREFUSED, 0},
    {0,             1, 0,   0,   0,     0,    BO_CONNECT_PASS,      0,            0},
    {0,             0, 0,   0,   0,     0,    BO_CONNECT_OK,        0,            0},
    {0,             0, 1,   1,   1,     0,    BO_CONNECT_OK,        0,            0},
    {EAGAIN,        0, 1,   1,   0,     0,    BO_CONNECT_RETRYABLE, EAGAIN,       0},
    {EAGAIN,        0, 0,   0,   0,     0,    BO_CONNECT_FINAL,     EAGAIN,       0},
    {ECONNREFUSED,  0, 0,   0,   0,     0,    BO_CONNECT_RETRYABLE, ECONNREFUSED, 0},
    {ECONNREFUSED,  0, 0,   1,   0,     0,    BO_CONNECT_FINAL,     ECONNREFUSED, 0},
    {ECONNREFUSED,  0, 0,   0,   1,     1,    BO_CONNECT_RETRYABLE, ECONNREFUSED, 0},
    {EINPROGRESS,   0, 0,   0,   1,     1,    BO_CONNECT_RETRYABLE, ETIMEDOUT,    1},
    {EINPROGRESS,   0, 0,   1,   1,     1,    BO_CONNECT_FINAL,     ETIMEDOUT,    1},
    {EINPROGRESS,   0, 0,   0,   1,     0,    BO_CONNECT_FINAL,     EINPROGRESS,  0},
    {EINPROGRESS,   0, 0,   0,   0,     0,    BO_CONNECT_FINAL,     EINPROGRESS,  0},
    {EALREADY,      0, 0,   0,   1,     0,    BO_CONNECT_STALE,     EALREADY,     0},
    {EISCONN,       0, 0,   0,   1,     1,    BO_CONNECT_STALE,     EISCONN,      0},
    {EBADFD,        0, 1,   0,   1,     0,    BO_CONNECT_STALE,     EBADFD,       0},
    {EINVAL,        0, 0,   0,   1,     0,    BO_CONNECT_STALE,     EINVAL,       0},
    {EINVAL,        0, 0,   0,   0,     0,    BO_CONNECT_FINAL,     EINVAL,       0},
    {EALREADY,      0, 0,   0,   0,     0,    BO_CONNECT_FINAL,     EALREADY,     0},
    {EINTR,         0, 0,   0,   1,     1,    BO_CONNECT_FINAL,     EINTR,        0},
    {ETIMEDOUT,     0, 0,   0,   1,     1,    BO_CONNECT_RETRYABLE, ETIMEDOUT,    0},
};
/* clang-format on */

START_TEST(test_connect_judge)
{
    const judge_row *w = &judge_rows[_i];
    bo_connect_facts f = {.nonblocking = w->nonblocking != 0,
                          .unix_socket = w->unix_socket != 0,
                          .unknown = w->unknown != 0,
                          .reused = w->reused != 0,
                          .shim_bound = w->shim_bound != 0};
    bo_connect_verdict v = bo_connect_judge(w->err, &f);
    ck_assert_msg(v.cls == w->cls && v.err == w->out_err && v.abort == (w->abort != 0),
                  "row %d errno %d: got class %d errno %d abort %d", _i, w->err, (int)v.cls,
                  v.err, (int)v.abort);
}
END_TEST

START_TEST(test_connect_managed)
{
    ck_assert(bo_connect_managed(true, false));
    ck_assert(!bo_connect_managed(true, true));
    ck_assert(!bo_connect_managed(false, false));
    ck_assert(!bo_connect_managed(false, true));
}
END_TEST

static Suite *classify_suite(void)
{
    Suite *s = suite_create("classify");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_table, 0, (int)(sizeof rows / sizeof rows[0]));
    tcase_add_loop_test(tc, test_key_rows, 0, (int)(sizeof key_rows / sizeof key_rows[0]));
    tcase_add_loop_test(tc, test_no_key_rows, 0,
                        (int)(sizeof no_key_rows / sizeof no_key_rows[0]));
    tcase_add_test(tc, test_403_quota_spent);
    tcase_add_test(tc, test_answer_quota_spent);
    tcase_add_test(tc, test_method_idempotent);
    tcase_add_test(tc, test_default_retry_on);
    tcase_add_loop_test(tc, test_connect_rule, 0, (int)(sizeof conn_rows / sizeof conn_rows[0]));
    tcase_add_loop_test(tc, test_connect_judge, 0, (int)(sizeof judge_rows / sizeof judge_rows[0]));
    tcase_add_test(tc, test_connect_managed);
    tcase_add_loop_test(tc, test_cause, 0, (int)(sizeof cause_rows / sizeof cause_rows[0]));
    tcase_add_test(tc, test_cause_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(classify_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
