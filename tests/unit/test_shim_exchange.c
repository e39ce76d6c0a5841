/*
 * Unit tests for the http room's exchange (shim/http/exchange.h), through
 * its header, with a fake transport in place of a socket's or a TLS
 * object's: the "server" is a script of answers, each written to the
 * connection when a request (or its retry) has gone out; the record's fd
 * is one end of a socket pair (so that it has an identity).  What is
 * checked: a clean answer passes untouched and nothing of it is consumed;
 * a 429 and a 503 are retried on the same connection and never reach the
 * program; EINTR and EAGAIN reach the program as they came; a request over
 * the size kept is sent once; a non-blocking read whose program shows no
 * poll leaves a throttle for it once, then hands it over; the program's
 * poll waits for the retry and reports only the clean answer; a retry that
 * does not fit before the poll's timeout is not made; an interim 1xx goes
 * at once; a retry that cannot get a new connection hands back, whole, the
 * answer it met; a write the pace holds back still continues the program's
 * own earlier try.
 *
 * The library's configuration is read when it loads, so the test runs
 * itself again with the environment it needs (BACKOFF_SHARE=process, short
 * waits) when that is not set.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "http/conn.h"
#include "http/fdtab.h"
#include "http/exchange.h"
#include "http/exchange_int.h"
#include "http/exchange_int.h"

/* ---- the fake transport: a scripted server ------------------------------------ */

#define SCRIPT_MAX 8

typedef struct fake {
    const char *answers[SCRIPT_MAX]; /* the answer to each attempt, in order */
    int n_answers, sent;             /* answers written so far (one per request out) */
    char in[65536];                  /* what the server wrote, not yet consumed */
    size_t in_len, in_off;
    size_t out_len;                  /* request bytes the fake connection carried again */
    int puts;
    int look_errno;                  /* a failure to give the next look (0: none) */
    bool closed;                     /* the server closed after its answer */
} fake;

static fake g_fake;

static void server_answers(void)
{
    fake *f = &g_fake;
    if (f->sent < f->n_answers) {
        const char *a = f->answers[f->sent++];
        memcpy(f->in + f->in_len, a, strlen(a));
        f->in_len += strlen(a);
    }
}

static ssize_t fake_look(bo_hconn *c, bool block)
{
    fake *f = &g_fake;
    size_t n = f->in_len - f->in_off;
    (void)block;
    if (f->look_errno != 0) {
        errno = f->look_errno;
        f->look_errno = 0;
        return -1;
    }
    if (n == 0) {
        if (f->closed)
            return 0;
        errno = EAGAIN;
        return -1;
    }
    if (n > BO_HC_PEEK_MAX)
        n = BO_HC_PEEK_MAX;
    memcpy(c->x.peek, f->in + f->in_off, n);
    return (ssize_t)n;
}

static int fake_hold(bo_hconn *c, size_t n)
{
    fake *f = &g_fake;
    if (f->in_len - f->in_off < n || bo_hc_held_room(c, n) != 0)
        return -1;
    memcpy(bo_hc_held_end(c), f->in + f->in_off, n);
    bo_hc_held_grew(c, n);
    f->in_off += n;
    return 0;
}

static bool fake_idle(bo_hconn *c)
{
    (void)c;
    return g_fake.in_off == g_fake.in_len && !g_fake.closed;
}

static ssize_t fake_put(bo_hconn *c, const char *buf, size_t n, short *ev)
{
    (void)c;
    (void)buf;
    (void)ev;
    g_fake.out_len += n;
    g_fake.puts++;
    server_answers(); /* the retry went out: the server answers it */
    return (ssize_t)n;
}

static const bo_hx_io k_fake = {
    .look = fake_look, .hold = fake_hold, .idle = fake_idle, .put = fake_put};

/* The program's reads of what stands: held bytes first, then the server's. */
static size_t program_reads(bo_hconn *c, char *buf, size_t cap)
{
    size_t n = 0;
    size_t h = bo_hc_held_take(c, buf, cap, false);
    if (h > 0) {
        n = h;
        bo_hx_consumed(c, buf, h);
    }
    size_t rest = g_fake.in_len - g_fake.in_off;
    if (rest > cap - n)
        rest = cap - n;
    memcpy(buf + n, g_fake.in + g_fake.in_off, rest);
    g_fake.in_off += rest;
    bo_hx_consumed(c, buf + n, rest);
    n += rest;
    buf[n] = '\0';
    return n;
}

/* ---- a connection and its requests ---------------------------------------------- */

static int g_pair[2] = {-1, -1};
static int g_port = 8000;

#define OK_ANSWER "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define THROTTLED "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 8\r\n\r\nrejected"
#define UNAVAILABLE "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"

/* A fresh connection (the last one closed), followed through the fake
 * transport; type_flags: SOCK_NONBLOCK for a socket the program made
 * non-blocking. */
static bo_hconn *open_conn(int type_flags)
{
    if (g_pair[0] >= 0) {
        bo_hx_closed(g_pair[0]);
        close(g_pair[0]);
        close(g_pair[1]);
    }
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | type_flags, 0, g_pair), 0);
    bo_hconn *c = bo_hc_make(g_pair[0]);
    ck_assert_ptr_nonnull(c);
    ck_assert(bo_hx_enter(c));
    bo_hx_adopt(c, &k_fake, NULL, false, false);
    return c;
}

/* A request to port with body bytes of body, in req; its length. */
static size_t format_request(char *req, size_t cap, const char *method, size_t body, int port)
{
    int len = snprintf(req, cap, "%s /item/1 HTTP/1.1\r\nHost: test.invalid:%d\r\n%s\r\n", method,
                       port, body > 0 ? "Content-Length: " : "");
    if (body > 0) {
        len -= 2;
        len += snprintf(req + len, cap - (size_t)len, "%zu\r\n\r\n", body);
        memset(req + len, 'x', body);
        len += (int)body;
    }
    return (size_t)len;
}

/* A fresh connection to port with the server's script; the request
 * written. */
static bo_hconn *start_at(const char *const *answers, int n, const char *method, size_t body,
                          int port)
{
    static char req[80000];
    memset(&g_fake, 0, sizeof g_fake);
    for (int i = 0; i < n; i++)
        g_fake.answers[i] = answers[i];
    g_fake.n_answers = n;
    bo_hconn *c = open_conn(0);
    size_t len = format_request(req, sizeof req, method, body, port);
    ck_assert_int_eq(bo_hx_begin(c, req, len, false), 0);
    bo_hx_sent(c, req, len);
    ck_assert_int_eq(c->st, BO_HC_SENT);
    server_answers(); /* the first attempt's answer */
    return c;
}

/* A fresh connection (a new destination each time: no state carried over). */
static bo_hconn *start(const char *const *answers, int n, const char *method, size_t body)
{
    return start_at(answers, n, method, body, g_port++);
}

static void finish(bo_hconn *c)
{
    bo_hx_leave(c);
}

/* ---- the tests -------------------------------------------------------------- */

START_TEST(test_a_clean_answer_passes_untouched)
{
    const char *s[] = {OK_ANSWER};
    bo_hconn *c = start(s, 1, "GET", 0);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, true, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.in_off, 0); /* looked at, nothing consumed */
    ck_assert_int_eq(bo_hc_held_left(c), 0);
    ck_assert_int_eq(g_fake.puts, 0);
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(c->st, BO_HC_IDLE); /* followed to its end */
    finish(c);
}
END_TEST

START_TEST(test_a_429_and_a_503_are_retried_and_never_seen)
{
    const char *s[] = {THROTTLED, UNAVAILABLE, OK_ANSWER};
    bo_hconn *c = start(s, 3, "GET", 0);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, true, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.puts, 2); /* sent again twice, on the same connection */
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, OK_ANSWER); /* only the clean answer reaches the program */
    finish(c);
}
END_TEST

START_TEST(test_eintr_and_eagain_reach_the_program)
{
    const char *s[] = {OK_ANSWER};
    bo_hconn *c = start(s, 1, "GET", 0);
    int err = 0;
    g_fake.look_errno = EINTR;
    ck_assert_int_eq(bo_hx_read(c, true, &err), BO_HX_ERR);
    ck_assert_int_eq(err, EINTR);
    ck_assert_int_eq(c->st, BO_HC_SENT); /* nothing judged yet */
    g_fake.look_errno = EAGAIN;
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_ERR);
    ck_assert_int_eq(err, EAGAIN);
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.in_off, 0);
    finish(c);
}
END_TEST

START_TEST(test_a_body_over_the_kept_size_is_sent_once)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "PUT", BO_HTTP_BODY_CAP + 100);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, true, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.puts, 0); /* never sent again */
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, THROTTLED);
    finish(c);
}
END_TEST

START_TEST(test_a_nonblocking_read_with_no_poll_known_hands_a_throttle_over)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    int err = 0;
    /* once left in place for the program's poll... */
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_ERR);
    ck_assert_int_eq(err, EAGAIN);
    ck_assert_int_eq(g_fake.in_off, 0);
    ck_assert(c->x.deferred);
    /* ...then, met again by a read (no poll judged it, no event loop holds
     * the socket), handed over as it came */
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.puts, 0);
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, THROTTLED);
    finish(c);
}
END_TEST

/* The program's poll on the connection, as wait.c makes it: before, the
 * real poll (here: its time passes), after; what the program sees. */
static short program_polls(bo_hconn *c, int64_t deadline)
{
    for (int i = 0; i < 10000; i++) {
        short fd_ev, x_ev;
        int xfd;
        int64_t until, now = bo_core_now_ns();
        short pre = bo_hx_poll_before(c, POLLIN, now, deadline, &fd_ev, &xfd, &x_ev, &until);
        if (pre != 0)
            return pre;
        short rev = g_fake.in_len > g_fake.in_off ? POLLIN : 0;
        if (rev == 0 && until > now) {
            int64_t t = until < deadline ? until : deadline;
            if (t > now) {
                struct timespec ts = {0, (long)(t - now)};
                nanosleep(&ts, NULL);
            }
        }
        short shown = bo_hx_poll_after(c, POLLIN, fd_ev == -1 ? 0 : rev, 0, deadline);
        if (shown != 0 || bo_core_now_ns() >= deadline)
            return shown;
    }
    return -1;
}

START_TEST(test_a_poll_waits_for_the_retry_and_shows_the_clean_answer)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    short shown = program_polls(c, bo_core_now_ns() + 10 * 1000000000LL);
    ck_assert_int_eq(shown & POLLIN, POLLIN);
    ck_assert_int_eq(g_fake.puts, 1);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_PASS);
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, OK_ANSWER);
    finish(c);
}
END_TEST

START_TEST(test_a_retry_that_does_not_fit_the_poll_is_not_made)
{
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    /* the program polls 100 ms; the server asks for a second */
    short shown = program_polls(c, bo_core_now_ns() + 100 * 1000000LL);
    ck_assert_int_eq(shown & POLLIN, POLLIN);
    ck_assert_int_eq(g_fake.puts, 0);
    /* judged final at once (the engine knew the poll's end), not taken
     * over and abandoned later: the answer was never out of its place */
    ck_assert(!c->held.deliver);
    ck_assert_int_eq(g_fake.in_off, 0);
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, s[0]);
    finish(c);
}
END_TEST

START_TEST(test_an_interim_answer_goes_at_once)
{
    const char *s[] = {"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"};
    bo_hconn *c = start(s, 1, "GET", 0);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, false, &err), BO_HX_PASS);
    ck_assert_int_eq(c->st, BO_HC_PASS);
    ck_assert_int_eq(g_fake.in_off, 0);
    finish(c);
}
END_TEST

START_TEST(test_a_retry_with_no_new_connection_hands_back_the_answer_whole)
{
    /* the 429 closes its connection: a new one is needed, and a socket pair's
     * end has no TCP peer to dial */
    const char *s[] = {"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n"
                       "Content-Length: 8\r\n\r\nrejected"};
    bo_hconn *c = start(s, 1, "GET", 0);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(c, true, &err), BO_HX_PASS);
    ck_assert_int_eq(g_fake.puts, 0);
    char buf[256];
    program_reads(c, buf, sizeof buf - 1);
    ck_assert_str_eq(buf, s[0]);
    finish(c);
}
END_TEST

/* A HEAD to port whose 200 spends the destination's quota for 5 s: the
 * next send to it waits for the pace. */
static void spend_quota(int port)
{
    const char *s[] = {"HTTP/1.1 200 OK\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 5\r\n"
                       "Content-Length: 2\r\n\r\n"};
    bo_hconn *a = start_at(s, 1, "HEAD", 0, port);
    int err = 0;
    ck_assert_int_eq(bo_hx_read(a, true, &err), BO_HX_PASS);
    char buf[256];
    program_reads(a, buf, sizeof buf - 1);
    finish(a);
}

/* The program's next GET to port (spend_quota), on a non-blocking socket
 * it polls itself: nothing written (EAGAIN), no wait inside the call, the
 * write held back far beyond the call's time.  Its connection; the request
 * in req (*len bytes), the time of the write in *t0. */
static bo_hconn *write_held_back(int port, char *req, size_t cap, size_t *len, int64_t *t0)
{
    bo_hconn *c = open_conn(SOCK_NONBLOCK);
    *len = format_request(req, cap, "GET", 0, port);
    *t0 = bo_core_now_ns();
    ck_assert_int_eq(bo_hx_begin(c, req, *len, false), EAGAIN);
    ck_assert_int_gt(c->pace.until, *t0 + 1000000000LL);
    ck_assert_int_eq(c->st, BO_HC_IDLE);
    bo_hx_leave(c);
    return c;
}

START_TEST(test_a_write_the_pace_holds_back_waits_in_the_programs_poll)
{
    /* the destination's quota is spent for 5 s, so its next send waits */
    int port = g_port++;
    spend_quota(port);
    char req[128];
    size_t len;
    int64_t t0;
    bo_hconn *c = write_held_back(port, req, sizeof req, &len, &t0);

    /* its poll for POLLOUT (as of the time the write was refused: the
     * poll's clock is passed in) sees nothing until the pace's time... */
    short fd_ev, x_ev;
    int xfd;
    int64_t until;
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT | POLLIN, t0, t0 + 5000000000LL, &fd_ev, &xfd, &x_ev, &until),
        0);
    ck_assert_int_eq(fd_ev, POLLIN);
    ck_assert_int_eq(until, c->pace.until);
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT, t0, t0 + 5000000000LL, &fd_ev, &xfd, &x_ev, &until), 0);
    ck_assert_int_eq(fd_ev, -1);
    /* ...but one whose own time ends first is not held past it: the write
     * goes at once */
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT, t0, t0 + 1000000LL, &fd_ev, &xfd, &x_ev, &until), 0);
    ck_assert_int_eq(fd_ev, POLLOUT);
    ck_assert_int_eq(c->pace.until, 0);
    ck_assert(c->pace.go);
    ck_assert(bo_hx_enter(c));
    ck_assert_int_eq(bo_hx_begin(c, req, len, false), 0);
    ck_assert_int_eq(c->st, BO_HC_REQ);
    bo_hx_leave(c);
}
END_TEST

START_TEST(test_a_write_the_pace_holds_back_still_continues_the_programs_try)
{
    /* the program's first try is reset before any answer (no new
     * connection here: the call fails retryably, for the program's own
     * next try)... */
    int port = g_port++;
    bo_hconn *a = start_at(NULL, 0, "GET", 0, port);
    int err = 0;
    g_fake.look_errno = ECONNRESET;
    ck_assert_int_eq(bo_hx_read(a, true, &err), BO_HX_OFF); /* the program reads the socket */
    ck_assert_int_eq(g_fake.puts, 0);
    finish(a);
    /* ...and another request spends the destination's quota for 5 s */
    spend_quota(port);

    /* its own next try, on a socket it polls itself: the pace holds the
     * write back (EAGAIN)... */
    char req[128];
    size_t len;
    int64_t t0;
    bo_hconn *c = write_held_back(port, req, sizeof req, &len, &t0);
    short fd_ev, x_ev;
    int xfd;
    int64_t until;
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT, t0, t0 + 1000000LL, &fd_ev, &xfd, &x_ev, &until), 0);
    ck_assert_int_eq(fd_ev, POLLOUT);
    /* ...and the write that goes is still the first try's logical request
     * (its attempts counted on; under BACKOFF_IDEMPOTENCY_KEY its key) */
    ck_assert(bo_hx_enter(c));
    ck_assert_int_eq(bo_hx_begin(c, req, len, false), 0);
    ck_assert_uint_eq(c->call.run.inherited, 1);
    bo_hx_leave(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("shim_exchange");
    TCase *t = tcase_create("exchange");
    tcase_add_test(t, test_a_clean_answer_passes_untouched);
    tcase_add_test(t, test_a_429_and_a_503_are_retried_and_never_seen);
    tcase_add_test(t, test_eintr_and_eagain_reach_the_program);
    tcase_add_test(t, test_a_body_over_the_kept_size_is_sent_once);
    tcase_add_test(t, test_a_nonblocking_read_with_no_poll_known_hands_a_throttle_over);
    tcase_add_test(t, test_a_poll_waits_for_the_retry_and_shows_the_clean_answer);
    tcase_add_test(t, test_a_retry_that_does_not_fit_the_poll_is_not_made);
    tcase_add_test(t, test_an_interim_answer_goes_at_once);
    tcase_add_test(t, test_a_retry_with_no_new_connection_hands_back_the_answer_whole);
    tcase_add_test(t, test_a_write_the_pace_holds_back_waits_in_the_programs_poll);
    tcase_add_test(t, test_a_write_the_pace_holds_back_still_continues_the_programs_try);
    suite_add_tcase(s, t);
    return s;
}

/*
 * The configuration is read by a constructor of the library's objects: set
 * this one first (a constructor of a higher priority runs before theirs), so
 * that the suite runs as one process, under valgrind as plainly.
 */
__attribute__((constructor(101))) static void configure_before_the_library(void)
{
    setenv("BACKOFF_SHARE", "process", 1);
    setenv("BACKOFF_BASE_MS", "1", 1);
    setenv("BACKOFF_CAP_MS", "2000", 1);
    setenv("BACKOFF_RETRY_BUDGET", "0", 1);
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
