/*
 * Unit tests for the http room's exchange (shim/http/exchange.h), driven
 * as a transport drives it: a fake transport whose write and read hooks
 * make the exchange's one write path (bo_hx_write_before/after) and one
 * read path (bo_hx_read_before, _held, _after) around a scripted server in
 * place of a socket's or a TLS object's real calls.  Its "server" is a
 * script of answers, each written to the connection when a request (or its
 * retry) has gone out; the record's fd is a real loopback TCP connection
 * to a listener of the suite's (so that it has an identity and a peer, and
 * a retry can dial a new connection, which the listener then accepts).
 *
 * What is checked: a clean answer passes untouched and nothing of it is
 * consumed; a 429 and a 503 are retried on the same connection and never
 * reach the program; EINTR and EAGAIN reach the program as they came; a
 * request over the size kept is sent once; a non-blocking read whose
 * program shows no poll leaves a throttle for it once, then hands it over;
 * the program's poll waits for the retry and reports only the clean answer;
 * a retry that does not fit before the poll's timeout is not made; an
 * interim 1xx goes at once; a retry that cannot get a new connection hands
 * back, whole, the answer it met; a redial (a TLS-like transport with a
 * handshake) that succeeds, and one the verified-peer rule refuses; the
 * shim's Idempotency-Key in the first write and in the retry, and none for
 * an empty key of the program's; a shutdown for reading (no retry) and for
 * writing (the new connection shut the same way); an event loop's retry
 * taken through bo_hx_drive, one that lives across a loop's 100 ms turns
 * (a near timer is no bound), one too long for a loop (HX_LOOP_NS) not
 * made, one ended by the program's close; a
 * write the pace holds back still continues the program's own earlier try.
 *
 * The library's configuration is read when it loads: a constructor of a
 * higher priority sets it first (BACKOFF_SHARE=process, short waits,
 * BACKOFF_IDEMPOTENCY_KEY=1), so that the suite runs as one process, under
 * valgrind as plainly.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "http/conn.h"
#include "http/exchange.h"
#include "http/fdtab.h"
#include "http/record.h"
#include "http/sock.h"

/* ---- the fake transport: a scripted server ------------------------------------ */

#define SCRIPT_MAX 8

typedef struct fake {
    const char *answers[SCRIPT_MAX]; /* the answer to each attempt, in order */
    int n_answers, sent;             /* answers written so far (one per request out) */
    char in[65536];                  /* what the server wrote, not yet read by the program */
    size_t in_len, in_off;
    char wire[200000];               /* every byte the connection carried to the server */
    size_t wire_len;
    size_t first_len;                /* ... of them, the first attempt's */
    int puts;                        /* the retries' writes */
    int shakes;                      /* handshakes on a new connection */
    int look_errno;                  /* a failure to give the next look (0: none) */
    bool closed;                     /* the server closed after its answer */
    bool hangs_up;                   /* ... and closes at once a request it has no answer for */
    bool tls;                        /* the transport is a TLS one (a handshake on a redial) */
    bool peer_known;                 /* ... and knows the certificate the program accepted */
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

static void carried(const char *buf, size_t n)
{
    memcpy(g_fake.wire + g_fake.wire_len, buf, n);
    g_fake.wire_len += n;
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
    (void)ev;
    carried(buf, n);
    g_fake.puts++;
    g_fake.closed = false; /* (a new connection, or the same one kept alive) */
    server_answers();      /* the retry went out: the server answers it */
    if (g_fake.sent == g_fake.n_answers && g_fake.in_off == g_fake.in_len && g_fake.hangs_up)
        g_fake.closed = true; /* nothing to answer: closed before any byte */
    return (ssize_t)n;
}

static int fake_shake(bo_hconn *c, bool first, short *ev)
{
    (void)c;
    (void)ev;
    ck_assert(first);
    g_fake.shakes++;
    return 1;
}

static const bo_hx_io k_fake = {
    .look = fake_look, .hold = fake_hold, .idle = fake_idle, .put = fake_put};
static const bo_hx_io k_fake_tls = {.look = fake_look,
                                    .hold = fake_hold,
                                    .idle = fake_idle,
                                    .put = fake_put,
                                    .shake = fake_shake};

/* ---- its hooks, as a transport makes them ----------------------------------------- */

/* The record of the fake's connection (its TLS "object": the fake itself). */
static bool fake_claim(bo_hconn *c, bo_hx_wr *x)
{
    if (bo_hs_unclaimed(c, x)) {
        c->ssl = (void *)x->obj;
        bo_hx_adopt(c, g_fake.tls ? &k_fake_tls : &k_fake, NULL, g_fake.tls, false);
        c->peer_id_known = g_fake.peer_known;
    }
    return c->st != BO_HC_NONE && c->tls == g_fake.tls && c->ssl == x->obj;
}

/* The program's write of buf on fd: what the connection carried, the
 * program's bytes that went (errno: the exchange's EINTR, EAGAIN). */
static ssize_t prog_write(int fd, const char *buf, size_t n, bool dontwait)
{
    struct iovec one = {.iov_base = (void *)buf, .iov_len = n};
    bo_hx_wr x = {.iov = &one, .iovcnt = 1, .dontwait = dontwait, .claim = fake_claim,
                  .obj = g_fake.tls ? &g_fake : NULL};
    bo_hconn *c = bo_hs_record(fd, &x, buf, n);
    ssize_t r;

    if (c == NULL)
        return carried(buf, n), (ssize_t)n;
    do {
        bo_hx_verdict v = bo_hx_write_before(c, &x);
        if (v == BO_HX_OFF)
            return carried(buf, n), (ssize_t)n;
        if (v == BO_HX_ERR)
            return -1;
        carried(x.buf, x.len);
        r = bo_hx_write_after(c, &x, (ssize_t)x.len, false);
    } while (x.again);
    return r;
}

/* The real read of the fake connection: what the server wrote. */
static ssize_t real_read(char *buf, size_t n, bool peek)
{
    size_t k = g_fake.in_len - g_fake.in_off;
    if (k == 0 && !g_fake.closed) {
        errno = EAGAIN;
        return -1;
    }
    if (k > n)
        k = n;
    memcpy(buf, g_fake.in + g_fake.in_off, k);
    if (!peek)
        g_fake.in_off += k;
    return (ssize_t)k;
}

/* The program's read of up to n bytes on fd: held bytes first. */
static ssize_t prog_read(int fd, char *buf, size_t n, bool dontwait)
{
    bo_hconn *c = bo_hc_get(fd);
    bo_hx_rd x = {.buf = buf, .n = n, .dontwait = dontwait};

    if (c == NULL)
        return real_read(buf, n, false);
    bo_hx_verdict v = bo_hx_read_before(c, &x);
    if (v != BO_HX_PASS)
        return v == BO_HX_OFF ? real_read(buf, n, false) : -1;
    ssize_t k = (ssize_t)bo_hx_read_held(c, &x);
    if (k == 0)
        k = real_read(buf, n, false);
    bo_hx_read_after(c, &x, k > 0 ? (size_t)k : 0, k == 0 && n > 0);
    return k;
}

/* The program reads the answer whole (a blocking read first, then what is
 * left), NUL-terminated in buf. */
static size_t read_all(int fd, char *buf, size_t cap, bool dontwait)
{
    size_t got = 0;
    for (int i = 0; i < 100 && got < cap - 1; i++) {
        ssize_t k = prog_read(fd, buf + got, cap - 1 - got, dontwait);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    buf[got] = '\0';
    return got;
}

/* ---- a connection and its requests ---------------------------------------------- */

static int g_lsn = -1;               /* the listener the connections go to */
static int g_cli = -1, g_srv = -1;   /* the program's socket, its far end */
static int g_port = 8000;            /* the Host's port: a new destination each request */

#define OK_ANSWER "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define THROTTLED "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 8\r\n\r\nrejected"
#define UNAVAILABLE "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
#define CLOSING                                                                          \
    "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 8\r\n\r\nrejected"

/* The fd of a connection the listener took since the last call (-1: none).
 * The system call itself: the library's accept hook (linked in with sock.c)
 * would take this process for a server, whose event loops' answers pass. */
static int accepted(void)
{
    return (int)syscall(SYS_accept4, g_lsn, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

static void listen_anew(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (g_lsn >= 0)
        close(g_lsn);
    g_lsn = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(g_lsn, 0);
    ck_assert_int_eq(bind(g_lsn, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(g_lsn, 16), 0);
}

/* A fresh connection (the last one closed), its script set; type_flags:
 * SOCK_NONBLOCK for a socket the program made non-blocking. */
static int open_conn(const char *const *answers, int n, int type_flags)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    bool tls = g_fake.tls, known = g_fake.peer_known;

    if (g_cli >= 0) {
        bo_hx_closed(g_cli);
        close(g_cli);
        close(g_srv);
    }
    listen_anew();
    memset(&g_fake, 0, sizeof g_fake);
    g_fake.tls = tls;
    g_fake.peer_known = known;
    for (int i = 0; i < n; i++)
        g_fake.answers[i] = answers[i];
    g_fake.n_answers = n;
    ck_assert_int_eq(getsockname(g_lsn, (struct sockaddr *)&a, &l), 0);
    g_cli = socket(AF_INET, SOCK_STREAM | type_flags | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(g_cli, 0);
    int r = connect(g_cli, (struct sockaddr *)&a, l);
    ck_assert(r == 0 || errno == EINPROGRESS);
    struct pollfd p = {.fd = g_lsn, .events = POLLIN};
    ck_assert_int_eq(poll(&p, 1, 5000), 1);
    g_srv = accepted();
    ck_assert_int_ge(g_srv, 0);
    return g_cli;
}

/* A request to port with body bytes of body (extra: more header lines), in req; its length. */
static size_t format_request(char *req, size_t cap, const char *method, size_t body, int port,
                             const char *extra)
{
    int len = snprintf(req, cap, "%s /item/1 HTTP/1.1\r\nHost: test.invalid:%d\r\n%s%s\r\n", method,
                       port, extra, body > 0 ? "Content-Length: " : "");
    if (body > 0) {
        len -= 2;
        len += snprintf(req + len, cap - (size_t)len, "%zu\r\n\r\n", body);
        memset(req + len, 'x', body);
        len += (int)body;
    }
    return (size_t)len;
}

static char g_req[80000];
static size_t g_req_len;

/* The program writes its request on fd (to port); the server answers it. */
static bo_hconn *request_at(int fd, const char *method, size_t body, int port, const char *extra)
{
    g_req_len = format_request(g_req, sizeof g_req, method, body, port, extra);
    ck_assert_int_eq(prog_write(fd, g_req, g_req_len, false), (ssize_t)g_req_len);
    bo_hconn *c = bo_hc_get(fd);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->st, BO_HC_SENT);
    g_fake.first_len = g_fake.wire_len;
    server_answers(); /* the first attempt's answer */
    return c;
}

/* A fresh connection (a new destination each time: no state carried over)
 * with the server's script, the request written. */
static bo_hconn *start(const char *const *answers, int n, const char *method, size_t body)
{
    int fd = open_conn(answers, n, 0);
    return request_at(fd, method, body, g_port++, "");
}

/* ---- the tests -------------------------------------------------------------- */

START_TEST(test_a_clean_answer_passes_untouched)
{
    const char *s[] = {OK_ANSWER};
    bo_hconn *c = start(s, 1, "GET", 0);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.puts, 0);
    ck_assert_int_eq(c->st, BO_HC_IDLE); /* followed to its end */
    ck_assert_int_eq(bo_hc_held_left(c), 0);
    ck_assert(memcmp(g_fake.wire, g_req, g_req_len) == 0); /* the request as written */
}
END_TEST

START_TEST(test_a_record_between_exchanges_holds_no_buffer)
{
    const char *s[] = {THROTTLED, OK_ANSWER, OK_ANSWER};
    bo_hconn *c = start(s, 3, "GET", 0);
    char buf[256];
    void *answer = c->x.resp, *kept = c->x.kept;
    ck_assert_ptr_nonnull(answer); /* lent while the exchange is under way */
    ck_assert_ptr_nonnull(kept);
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER); /* retried: the held answer and its buffers */
    ck_assert_int_eq(c->st, BO_HC_IDLE);
    /* a kept-alive connection between requests costs its record alone */
    ck_assert_ptr_null(c->x.resp);
    ck_assert_ptr_null(c->x.peek);
    ck_assert_ptr_null(c->x.kept);
    ck_assert_ptr_null(c->held.buf);
    /* the next request borrows the same buffers back: nothing allocated */
    request_at(g_cli, "GET", 0, g_port - 1, "");
    ck_assert_ptr_eq(c->x.resp, answer);
    ck_assert_ptr_nonnull(c->x.kept);
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_ptr_null(c->x.resp);
}
END_TEST

START_TEST(test_a_429_and_a_503_are_retried_and_never_seen)
{
    const char *s[] = {THROTTLED, UNAVAILABLE, OK_ANSWER};
    start(s, 3, "GET", 0);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER); /* only the clean answer reaches the program */
    ck_assert_int_eq(g_fake.puts, 2); /* sent again twice, on the same connection */
    ck_assert_int_eq(accepted(), -1);
    ck_assert_uint_eq(g_fake.wire_len, 3 * g_req_len);
}
END_TEST

START_TEST(test_eintr_and_eagain_reach_the_program)
{
    const char *s[] = {OK_ANSWER};
    bo_hconn *c = start(s, 1, "GET", 0);
    char buf[256];
    g_fake.look_errno = EINTR;
    ck_assert_int_eq(prog_read(g_cli, buf, sizeof buf, false), -1);
    ck_assert_int_eq(errno, EINTR);
    ck_assert_int_eq(c->st, BO_HC_SENT); /* nothing judged yet */
    g_fake.look_errno = EAGAIN;
    ck_assert_int_eq(prog_read(g_cli, buf, sizeof buf, true), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(g_fake.in_off, 0); /* nothing consumed */
    read_all(g_cli, buf, sizeof buf, true);
    ck_assert_str_eq(buf, OK_ANSWER);
}
END_TEST

START_TEST(test_a_body_over_the_kept_size_is_sent_once)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    start(s, 2, "PUT", BO_HTTP_BODY_CAP + 100);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, THROTTLED);
    ck_assert_int_eq(g_fake.puts, 0); /* never sent again */
}
END_TEST

START_TEST(test_a_nonblocking_read_with_no_poll_known_hands_a_throttle_over)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    char buf[256];
    /* once left in place for the program's poll... */
    ck_assert_int_eq(prog_read(g_cli, buf, sizeof buf, true), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(g_fake.in_off, 0);
    ck_assert(c->x.deferred);
    /* ...then, met again by a read (no poll judged it, no event loop holds
     * the socket), handed over as it came */
    read_all(g_cli, buf, sizeof buf, true);
    ck_assert_str_eq(buf, THROTTLED);
    ck_assert_int_eq(g_fake.puts, 0);
}
END_TEST

/* The program's poll on the connection, as wait.c makes it: before, the
 * real poll (here: its time passes), after; what the program sees. */
static short program_polls(bo_hconn *c, short events, int64_t deadline)
{
    for (int i = 0; i < 10000; i++) {
        short fd_ev, x_ev;
        int xfd;
        int64_t until, now = bo_core_now_ns();
        ck_assert(bo_hx_enter(c));
        short pre = bo_hx_poll_before(c, events, now, deadline, &fd_ev, &xfd, &x_ev, &until);
        bo_hx_leave(c);
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
        ck_assert(bo_hx_enter(c));
        short shown = bo_hx_poll_after(c, events, fd_ev == -1 ? 0 : rev, 0, deadline);
        bo_hx_leave(c);
        if (shown != 0 || bo_core_now_ns() >= deadline)
            return shown;
    }
    return -1;
}

START_TEST(test_a_poll_waits_for_the_retry_and_shows_the_clean_answer)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    short shown = program_polls(c, POLLIN, bo_core_now_ns() + 10 * 1000000000LL);
    ck_assert_int_eq(shown & POLLIN, POLLIN);
    ck_assert_int_eq(g_fake.puts, 1);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, true);
    ck_assert_str_eq(buf, OK_ANSWER);
}
END_TEST

START_TEST(test_a_retry_that_does_not_fit_the_poll_is_not_made)
{
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    /* the program polls 100 ms; the server asks for a second */
    short shown = program_polls(c, POLLIN, bo_core_now_ns() + 100 * 1000000LL);
    ck_assert_int_eq(shown & POLLIN, POLLIN);
    ck_assert_int_eq(g_fake.puts, 0);
    /* judged final at once (the engine knew the poll's end), not taken
     * over and abandoned later: the answer was never out of its place */
    ck_assert(!c->held.deliver);
    ck_assert_int_eq(g_fake.in_off, 0);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, true);
    ck_assert_str_eq(buf, s[0]);
}
END_TEST

START_TEST(test_an_interim_answer_goes_at_once)
{
    const char *s[] = {"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"};
    bo_hconn *c = start(s, 1, "GET", 0);
    char buf[256];
    ck_assert_int_eq(prog_read(g_cli, buf, 10, true), 10);
    ck_assert_int_eq(c->st, BO_HC_PASS);
    ck_assert(memcmp(buf, s[0], 10) == 0);
}
END_TEST

START_TEST(test_a_retry_with_no_new_connection_hands_back_the_answer_whole)
{
    /* the 429 closes its connection: a new one is needed, and the listener
     * is gone (the connect is refused) */
    const char *s[] = {CLOSING, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    close(g_lsn);
    g_lsn = -1;
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, CLOSING);
    ck_assert_int_eq(g_fake.puts, 0);
    ck_assert_int_ne(c->st, BO_HC_RETRY);
}
END_TEST

/* A TLS-like transport: a closing throttle is retried on a new connection,
 * handshaken (the fake's .shake) before the request goes again. */
START_TEST(test_a_redial_succeeds)
{
    g_fake.tls = true;
    g_fake.peer_known = true;
    const char *s[] = {CLOSING, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.shakes, 1);
    ck_assert_int_eq(g_fake.puts, 1);
    int n = accepted(); /* the new connection, on the program's fd now */
    ck_assert_int_ge(n, 0);
    close(n);
    ck_assert_int_eq(c->st, BO_HC_IDLE);
    ck_assert_uint_eq(c->ino, bo_hc_identity(g_cli)); /* the record follows the new socket */
}
END_TEST

/* The same when the certificate the program accepted is not known: no new
 * connection (a redial talks only to the verified peer), the 429 as it came. */
START_TEST(test_a_redial_the_verified_peer_rule_refuses)
{
    g_fake.tls = true;
    g_fake.peer_known = false;
    const char *s[] = {CLOSING, OK_ANSWER};
    start(s, 2, "GET", 0);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, CLOSING);
    ck_assert_int_eq(g_fake.shakes, 0);
    ck_assert_int_eq(g_fake.puts, 0);
    ck_assert_int_eq(accepted(), -1); /* never dialled */
}
END_TEST

/* A redial whose new peer closes at once, for every retry of the call: the
 * program gets the 429 it would have had, not the close (each redial an
 * attempt, up to BACKOFF_MAX_ATTEMPTS); the connection is shut down for it. */
START_TEST(test_a_redial_that_closes_at_once_hands_back_the_429)
{
    const char *s[] = {CLOSING};
    start(s, 1, "GET", 0);
    g_fake.hangs_up = true;
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, CLOSING);
    ck_assert_int_eq(g_fake.puts, (int)bo_core_config()->max_attempts - 1);
    ck_assert_int_eq(prog_read(g_cli, buf, sizeof buf, false), 0); /* then the end */
}
END_TEST

/* A redial whose new peer takes the request and never answers: after
 * BACKOFF_CAP_MS (2 s here) the program, whose blocking read set no
 * timeout, gets the 429 it would have had at once. */
START_TEST(test_a_redial_that_never_answers_hands_back_the_429_in_time)
{
    const char *s[] = {CLOSING};
    start(s, 1, "GET", 0);
    char buf[256];
    int64_t t0 = bo_core_now_ns();
    read_all(g_cli, buf, sizeof buf, false);
    int64_t took = bo_core_now_ns() - t0;
    ck_assert_str_eq(buf, CLOSING);
    ck_assert_int_eq(g_fake.puts, 1); /* a stall is not retried again */
    ck_assert_int_ge(took, 1900000000LL);
    ck_assert_int_lt(took, 6000000000LL);
}
END_TEST

/* A TLS connection through a proxy's tunnel (a CONNECT went first on its
 * socket) is never redialled (a new connection would reach the proxy, not
 * the origin): the 429 that closed it as it came. */
START_TEST(test_a_tunnel_is_never_redialled)
{
    g_fake.tls = true;
    g_fake.peer_known = true;
    const char *s[] = {CLOSING, OK_ANSWER};
    int fd = open_conn(s, 2, 0);
    bo_hc_set_mark(fd, BO_HC_MARK_TUNNEL);
    request_at(fd, "GET", 0, g_port++, "");
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, CLOSING);
    ck_assert_int_eq(g_fake.shakes, 0);
    ck_assert_int_eq(accepted(), -1); /* never dialled */
}
END_TEST

/* The key line of a request's bytes (its value in key), or NULL. */
static const char *key_line(const char *req, size_t n, char key[64])
{
    static const char name[] = "Idempotency-Key: \"";
    const char *end = req + n, *p = memmem(req, n, name, sizeof name - 1);
    if (p == NULL)
        return NULL;
    const char *q = memchr(p, '\r', (size_t)(end - p));
    ck_assert_ptr_nonnull(q);
    ck_assert_int_lt(q - p, 64);
    memcpy(key, p, (size_t)(q - p));
    key[q - p] = '\0';
    return p;
}

/* BACKOFF_IDEMPOTENCY_KEY: a POST gets the shim's key in its first write
 * (before the head's blank line, the program's bytes counted as written)
 * and the same in its retry, so that a 502 is retried as for a request
 * with a key. */
START_TEST(test_the_key_goes_into_the_first_write_and_the_retry)
{
    const char *s[] = {"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", OK_ANSWER};
    start(s, 2, "POST", 10);
    char k1[64], k2[64];
    const char *l1 = key_line(g_fake.wire, g_fake.first_len, k1);
    ck_assert_ptr_nonnull(l1);
    ck_assert(memcmp(g_fake.wire + g_fake.first_len - 10 - 4, "\r\n\r\nxxxxxxxxxx", 14) == 0);
    ck_assert_uint_eq(g_fake.first_len, g_req_len + strlen(k1) + 2);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.puts, 1);
    ck_assert_ptr_nonnull(key_line(g_fake.wire + g_fake.first_len,
                                   g_fake.wire_len - g_fake.first_len, k2));
    ck_assert_str_eq(k1, k2);
}
END_TEST

/* An empty Idempotency-Key of the program's is no key: none added, and
 * the 502 is handed over (a POST may have been processed). */
START_TEST(test_an_empty_key_is_no_key)
{
    const char *s[] = {"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", OK_ANSWER};
    int fd = open_conn(s, 2, 0);
    request_at(fd, "POST", 10, g_port++, "Idempotency-Key:\r\n");
    char k[64];
    ck_assert_ptr_null(key_line(g_fake.wire, g_fake.wire_len, k));
    ck_assert_uint_eq(g_fake.wire_len, g_req_len);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, s[0]);
    ck_assert_int_eq(g_fake.puts, 0);
}
END_TEST

/* A request whose reader shut down is not retried; one whose writer did is
 * sent again only on a new connection, shut the same way. */
START_TEST(test_a_shutdown_for_reading_is_not_retried)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    start(s, 2, "GET", 0);
    bo_hx_shutdown(g_cli, SHUT_RD);
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, THROTTLED);
    ck_assert_int_eq(g_fake.puts, 0);
}
END_TEST

START_TEST(test_a_shutdown_for_writing_is_reproduced_on_a_new_connection)
{
    const char *s[] = {THROTTLED, OK_ANSWER};
    bo_hconn *c = start(s, 2, "GET", 0);
    ck_assert_int_eq(shutdown(g_cli, SHUT_WR), 0); /* (the library's shutdown hook: noted) */
    bo_hx_shutdown(g_cli, SHUT_WR);                /* (the same, should the hook be libc's) */
    char buf[256];
    read_all(g_cli, buf, sizeof buf, false);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.puts, 1);
    int n = accepted(); /* the new connection (the kept-alive one was shut) */
    ck_assert_int_ge(n, 0);
    struct pollfd p = {.fd = n, .events = POLLIN};
    ck_assert_int_eq(poll(&p, 1, 5000), 1);
    ck_assert_int_eq(read(n, buf, sizeof buf), 0); /* shut for writing, as the first */
    close(n);
    ck_assert_int_eq(c->st, BO_HC_IDLE);
}
END_TEST

/* ---- an event loop (the socket in an epoll set) ---------------------------------- */

static int in_loop(int fd)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    ck_assert_int_ge(ep, 0);
    ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
    return ep;
}

/* The loop's waits, each at most until (its next timer), until the record
 * leaves RETRY or the time is end; how many. */
static int loop_turns(bo_hconn *c, int64_t loop_deadline, int64_t end)
{
    int turns = 0;
    while (c->st == BO_HC_RETRY && turns < 1000 && bo_core_now_ns() < end) {
        int fds[8];
        short evs[8];
        int64_t until, now = bo_core_now_ns();
        bo_hx_drive(now, loop_deadline, &until, fds, evs, 8);
        if (until > now && until != INT64_MAX) {
            int64_t t = until - now < 5000000 ? until - now : 5000000;
            struct timespec ts = {0, (long)t};
            nanosleep(&ts, NULL);
        }
        turns++;
    }
    return turns;
}

START_TEST(test_an_event_loops_retry_is_taken_in_its_wait)
{
    /* (a second to wait: certain to be under way when the read returns) */
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    int fd = open_conn(s, 2, SOCK_NONBLOCK);
    int ep = in_loop(fd);
    bo_hx_loop_wait(bo_core_now_ns(), 10000); /* its next timer: 10 s away */
    bo_hconn *c = request_at(fd, "GET", 0, g_port++, "");
    char buf[256];
    ck_assert_int_eq(prog_read(fd, buf, sizeof buf, true), -1); /* nothing yet */
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(c->st, BO_HC_RETRY);
    ck_assert(c->rt.loop);
    ck_assert_int_gt(loop_turns(c, bo_core_now_ns() + 10000000000LL, INT64_MAX), 0);
    read_all(fd, buf, sizeof buf, true);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.puts, 1);
    close(ep);
}
END_TEST

/*
 * A retry is a state of the connection, not a wait inside one of the loop's
 * waits: a loop whose next timer is always near (a ticker, undici's 1 s
 * tick) gets its retry across its turns.  Each wait returns at the loop's
 * own time with the socket quiet; the request goes out again from a later
 * wait; the socket is readable when the final answer is there.
 */
START_TEST(test_an_event_loops_retry_lives_across_its_turns)
{
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    int fd = open_conn(s, 2, SOCK_NONBLOCK);
    int ep = in_loop(fd);
    int64_t t0 = bo_core_now_ns();
    bo_hx_loop_wait(t0, 100); /* its next timer: 100 ms away */
    bo_hconn *c = request_at(fd, "GET", 0, g_port++, "");
    char buf[256];
    ck_assert_int_eq(prog_read(fd, buf, sizeof buf, true), -1); /* nothing yet */
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_int_eq(c->st, BO_HC_RETRY);
    /* the loop's turns, each ending at its 100 ms timer (the wait hook
     * drives the retry until then), nothing for the program between them,
     * until the request went out again */
    int turns = 0;
    while (c->st == BO_HC_RETRY && turns < 100) {
        int64_t end = bo_core_now_ns() + 100000000LL;
        loop_turns(c, end, end);
        if (c->st == BO_HC_RETRY) {
            ck_assert_int_eq(prog_read(fd, buf, sizeof buf, true), -1);
            ck_assert_int_eq(errno, EAGAIN);
        }
        turns++;
    }
    ck_assert_int_ge(turns, 5); /* a second, in 100 ms turns */
    ck_assert_int_ge(bo_core_now_ns() - t0, 900000000LL);
    read_all(fd, buf, sizeof buf, true);
    ck_assert_str_eq(buf, OK_ANSWER);
    ck_assert_int_eq(g_fake.puts, 1);
    close(ep);
}
END_TEST

/* A retry whose wait is past what a loop's retry may take (HX_LOOP_NS: the
 * program's deadline is not seen behind a near timer) is not made: the
 * answer at once, as plain. */
START_TEST(test_an_event_loops_retry_past_its_bound_is_not_made)
{
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    int fd = open_conn(s, 2, SOCK_NONBLOCK);
    int ep = in_loop(fd);
    bo_hx_loop_wait(bo_core_now_ns(), 100); /* its next timer: 100 ms away */
    request_at(fd, "GET", 0, g_port++, "");
    char buf[256];
    read_all(fd, buf, sizeof buf, true);
    ck_assert_str_eq(buf, s[0]); /* handed over at once: five seconds is too long */
    ck_assert_int_eq(g_fake.puts, 0);
    close(ep);
}
END_TEST

/* The program closes the socket of a retry under way (an abort, its own
 * deadline): the retry ends, nothing is sent again. */
START_TEST(test_an_event_loops_close_ends_its_retry)
{
    const char *s[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        OK_ANSWER};
    int fd = open_conn(s, 2, SOCK_NONBLOCK);
    int ep = in_loop(fd);
    bo_hx_loop_wait(bo_core_now_ns(), 100);
    bo_hconn *c = request_at(fd, "GET", 0, g_port++, "");
    char buf[256];
    ck_assert_int_eq(prog_read(fd, buf, sizeof buf, true), -1);
    ck_assert_int_eq(c->st, BO_HC_RETRY);
    int before = __atomic_load_n(&bo_hx_loop_retries, __ATOMIC_RELAXED);
    bo_hx_closed(fd); /* the program closes it (the close hook) */
    ck_assert_int_eq(c->st, BO_HC_NONE);
    ck_assert_int_eq(__atomic_load_n(&bo_hx_loop_retries, __ATOMIC_RELAXED), before - 1);
    /* the loop's waits past the retry's time: nothing goes */
    for (int64_t end = bo_core_now_ns() + 1500000000LL; bo_core_now_ns() < end;) {
        int fds[8];
        short evs[8];
        int64_t until;
        bo_hx_drive(bo_core_now_ns(), end, &until, fds, evs, 8);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(g_fake.puts, 0);
    close(ep);
}
END_TEST

/* ---- the pace ------------------------------------------------------------------- */

/* A HEAD to port whose 200 spends the destination's quota for 1 s (within
 * the suite's 2 s BACKOFF_CAP_MS: a reset past it is not waited for): the
 * next send to it waits for the pace. */
static void spend_quota(int port)
{
    const char *s[] = {"HTTP/1.1 200 OK\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 1\r\n"
                       "Content-Length: 2\r\n\r\n"};
    int fd = open_conn(s, 1, 0);
    request_at(fd, "HEAD", 0, port, "");
    char buf[256];
    read_all(fd, buf, sizeof buf, false);
}

/* The program's next GET to port (spend_quota), on a non-blocking socket it
 * polls itself: nothing written (EAGAIN), no wait inside the call, the
 * write held back far beyond the call's time.  Its record; the time of the
 * write in *t0. */
static bo_hconn *write_held_back(int port, int64_t *t0)
{
    int fd = open_conn(NULL, 0, SOCK_NONBLOCK);
    g_req_len = format_request(g_req, sizeof g_req, "GET", 0, port, "");
    *t0 = bo_core_now_ns();
    ck_assert_int_eq(prog_write(fd, g_req, g_req_len, false), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ck_assert_uint_eq(g_fake.wire_len, 0);
    bo_hconn *c = bo_hc_get(fd);
    ck_assert_int_gt(c->pace.until, *t0 + 500000000LL);
    ck_assert_int_eq(c->st, BO_HC_IDLE);
    return c;
}

START_TEST(test_a_write_the_pace_holds_back_waits_in_the_programs_poll)
{
    int port = g_port++;
    spend_quota(port);
    int64_t t0;
    bo_hconn *c = write_held_back(port, &t0);

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
    ck_assert_int_eq(prog_write(g_cli, g_req, g_req_len, false), (ssize_t)g_req_len);
    ck_assert_int_eq(c->st, BO_HC_SENT);
}
END_TEST

/*
 * The server's quota holds the write past the program's poll (its timeout
 * ends first): a prediction past the program's deadline is not waited for,
 * the write goes at once.
 */
START_TEST(test_a_write_the_quota_holds_past_the_poll_goes_at_once)
{
    int port = g_port++;
    spend_quota(port);
    int64_t t0;
    bo_hconn *c = write_held_back(port, &t0);
    ck_assert_int_gt(c->pace.quota, t0 + 500000000LL); /* the quota's reset, 1 s ahead */
    short fd_ev, x_ev;
    int xfd;
    int64_t until;
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT, t0, t0 + 300000000LL, &fd_ev, &xfd, &x_ev, &until), 0);
    ck_assert_int_eq(fd_ev, POLLOUT);
    ck_assert(c->pace.go);
    ck_assert_int_eq(c->pace.until, 0);
    ck_assert_int_eq(c->pace.quota, 0);
    ck_assert_int_eq(prog_write(g_cli, g_req, g_req_len, false), (ssize_t)g_req_len);
    ck_assert_int_eq(c->st, BO_HC_SENT);
}
END_TEST

START_TEST(test_a_write_the_pace_holds_back_still_continues_the_programs_try)
{
    /* the program's first try is reset before any answer (the fake's socket
     * says so), and each new connection for its retries is refused (an
     * outage: each refusal an attempt, up to BACKOFF_MAX_ATTEMPTS): the call
     * fails retryably, for the program's own next try)... */
    int port = g_port++;
    int fd = open_conn(NULL, 0, 0);
    request_at(fd, "GET", 0, port, "");
    close(g_lsn);
    g_lsn = -1;
    g_fake.look_errno = ECONNRESET;
    char buf[256];
    ck_assert_int_eq(prog_read(fd, buf, sizeof buf, false), -1); /* the reset, as it came */
    ck_assert_int_eq(g_fake.puts, 0);
    /* ...and another request spends the destination's quota for 5 s */
    spend_quota(port);

    /* its own next try, on a socket it polls itself: the pace holds the
     * write back (EAGAIN)... */
    int64_t t0;
    bo_hconn *c = write_held_back(port, &t0);
    short fd_ev, x_ev;
    int xfd;
    int64_t until;
    ck_assert_int_eq(
        bo_hx_poll_before(c, POLLOUT, t0, t0 + 1000000LL, &fd_ev, &xfd, &x_ev, &until), 0);
    ck_assert_int_eq(fd_ev, POLLOUT);
    /* ...and the write that goes is still the first try's logical request
     * (its attempts counted on; under BACKOFF_IDEMPOTENCY_KEY its key) */
    ck_assert_int_eq(prog_write(g_cli, g_req, g_req_len, false), (ssize_t)g_req_len);
    ck_assert_uint_eq(c->call.run.inherited, bo_core_config()->max_attempts);
}
END_TEST

/* Each test starts with a plain transport (a test sets a TLS one before
 * its connection opens). */
static void plain_transport(void)
{
    g_fake.tls = g_fake.peer_known = false;
}

static Suite *suite(void)
{
    Suite *s = suite_create("shim_exchange");
    TCase *t = tcase_create("exchange");
    tcase_set_timeout(t, 30);
    tcase_add_checked_fixture(t, plain_transport, NULL);
    tcase_add_test(t, test_a_clean_answer_passes_untouched);
    tcase_add_test(t, test_a_record_between_exchanges_holds_no_buffer);
    tcase_add_test(t, test_a_429_and_a_503_are_retried_and_never_seen);
    tcase_add_test(t, test_eintr_and_eagain_reach_the_program);
    tcase_add_test(t, test_a_body_over_the_kept_size_is_sent_once);
    tcase_add_test(t, test_a_nonblocking_read_with_no_poll_known_hands_a_throttle_over);
    tcase_add_test(t, test_a_poll_waits_for_the_retry_and_shows_the_clean_answer);
    tcase_add_test(t, test_a_retry_that_does_not_fit_the_poll_is_not_made);
    tcase_add_test(t, test_an_interim_answer_goes_at_once);
    tcase_add_test(t, test_a_retry_with_no_new_connection_hands_back_the_answer_whole);
    tcase_add_test(t, test_a_redial_succeeds);
    tcase_add_test(t, test_a_redial_the_verified_peer_rule_refuses);
    tcase_add_test(t, test_a_redial_that_closes_at_once_hands_back_the_429);
    tcase_add_test(t, test_a_redial_that_never_answers_hands_back_the_429_in_time);
    tcase_add_test(t, test_a_tunnel_is_never_redialled);
    tcase_add_test(t, test_the_key_goes_into_the_first_write_and_the_retry);
    tcase_add_test(t, test_an_empty_key_is_no_key);
    tcase_add_test(t, test_a_shutdown_for_reading_is_not_retried);
    tcase_add_test(t, test_a_shutdown_for_writing_is_reproduced_on_a_new_connection);
    tcase_add_test(t, test_an_event_loops_retry_is_taken_in_its_wait);
    tcase_add_test(t, test_an_event_loops_retry_lives_across_its_turns);
    tcase_add_test(t, test_an_event_loops_retry_past_its_bound_is_not_made);
    tcase_add_test(t, test_an_event_loops_close_ends_its_retry);
    tcase_add_test(t, test_a_write_the_pace_holds_back_waits_in_the_programs_poll);
    tcase_add_test(t, test_a_write_the_quota_holds_past_the_poll_goes_at_once);
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
    setenv("BACKOFF_IDEMPOTENCY_KEY", "1", 1);
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
