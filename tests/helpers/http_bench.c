/*
 * http_bench: what the http room's hooks cost a program, for
 * demo/bench-http.sh (run with and without LD_PRELOAD=libbackoff.so).
 *
 *   http_bench fd N
 *       N calls of each pair on fds the room does not follow, one line
 *       each "NAME ns_per_call X": a pipe (write + read of one byte), a
 *       UNIX socket pair (send + recv), /dev/null (write), /dev/zero
 *       (read), a loopback TCP connection's accepted end (recv) and
 *       connected end (send of bytes that are no request line).
 *   http_bench plain PORT N
 *   http_bench tls PORT CAFILE N
 *       N keep-alive GETs of /item/1 on one connection to 127.0.0.1:PORT
 *       (an unthrottled ratelimit-server): send/recv, or SSL_write_ex and
 *       SSL_read_ex on an SSL object bound to the socket; prints
 *       "requests N us_per_request X calls_per_request Y" (Y: the reads and
 *       writes a request took) and exits 0 when every answer was a 200.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int die(const char *what)
{
    perror(what);
    return 1;
}

/* A loopback TCP pair: *c the connected end, *a the accepted one. */
static int tcp_pair(int *c, int *a)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof sin;
    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);

    if (ls < 0 || bind(ls, (struct sockaddr *)&sin, l) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&sin, &l) != 0)
        return -1;
    *c = socket(AF_INET, SOCK_STREAM, 0);
    if (*c < 0 || connect(*c, (struct sockaddr *)&sin, l) != 0 || (*a = accept(ls, NULL, NULL)) < 0)
        return -1;
    setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    close(ls);
    return 0;
}

static int bench_fds(long n)
{
    char b[64] = "x";
    int p[2], s[2], c, a;
    double t;

    if (pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0 || tcp_pair(&c, &a) != 0)
        return die("fds");
    int null = open("/dev/null", O_WRONLY), zero = open("/dev/zero", O_RDONLY);
    if (null < 0 || zero < 0)
        return die("/dev/null, /dev/zero");

    t = now_ns();
    for (long i = 0; i < n; i++)
        if (write(p[1], b, 1) != 1 || read(p[0], b, 1) != 1)
            return die("pipe");
    printf("pipe_write_read ns_per_call %.1f\n", (now_ns() - t) / (2.0 * n));
    t = now_ns();
    for (long i = 0; i < n; i++)
        if (send(s[0], b, 1, 0) != 1 || recv(s[1], b, 1, 0) != 1)
            return die("unix");
    printf("unix_send_recv ns_per_call %.1f\n", (now_ns() - t) / (2.0 * n));
    t = now_ns();
    for (long i = 0; i < n; i++)
        if (write(null, b, sizeof b) != (ssize_t)sizeof b)
            return die("/dev/null");
    printf("devnull_write ns_per_call %.1f\n", (now_ns() - t) / n);
    t = now_ns();
    for (long i = 0; i < n; i++)
        if (read(zero, b, sizeof b) != (ssize_t)sizeof b)
            return die("/dev/zero");
    printf("devzero_read ns_per_call %.1f\n", (now_ns() - t) / n);
    t = now_ns();
    for (long i = 0; i < n; i++)
        if (send(c, b, 1, 0) != 1 || recv(a, b, 1, 0) != 1)
            return die("tcp");
    printf("tcp_send_recv ns_per_call %.1f\n", (now_ns() - t) / (2.0 * n));
    return 0;
}

/* The transport of the request benches: a socket, or an SSL object on it. */
static SSL *g_ssl;
static int g_fd;
static long g_calls;

static long io_write(const char *buf, size_t n)
{
    size_t w = 0;
    g_calls++;
    if (g_ssl != NULL)
        return SSL_write_ex(g_ssl, buf, n, &w) == 1 ? (long)w : -1;
    return send(g_fd, buf, n, 0);
}

static long io_read(char *buf, size_t n)
{
    size_t r = 0;
    g_calls++;
    if (g_ssl != NULL)
        return SSL_read_ex(g_ssl, buf, n, &r) == 1 ? (long)r : -1;
    return recv(g_fd, buf, n, 0);
}

/* One GET and its whole answer; 0 when it was a 200. */
static int get(const char *req)
{
    char buf[16384];
    size_t have = 0;
    long len = -1;
    char *end = NULL;

    if (io_write(req, strlen(req)) != (long)strlen(req))
        return -1;
    for (;;) {
        long r = io_read(buf + have, sizeof buf - 1 - have);
        if (r <= 0)
            return -1;
        have += (size_t)r;
        buf[have] = '\0';
        if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "content-length:");
            if (cl == NULL || cl > end)
                return -1;
            len = atol(cl + 15);
        }
        if (end != NULL && have >= (size_t)(end + 4 - buf) + (size_t)len)
            return strncmp(buf, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
        if (have >= sizeof buf - 1)
            return -1;
    }
}

static int bench_requests(int port, const char *cafile, long n)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char req[256];
    int one = 1;

    g_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (g_fd < 0 || connect(g_fd, (struct sockaddr *)&sin, sizeof sin) != 0)
        return die("connect");
    setsockopt(g_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (cafile != NULL) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        if (ctx == NULL || SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1)
            return die("SSL_CTX");
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        g_ssl = SSL_new(ctx);
        if (g_ssl == NULL || SSL_set_fd(g_ssl, g_fd) != 1 || SSL_connect(g_ssl) != 1)
            return die("SSL_connect");
    }
    snprintf(req, sizeof req, "GET /item/1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
    for (int i = 0; i < 20; i++) /* warm-up */
        if (get(req) != 0)
            return die("warm-up GET");
    g_calls = 0;
    double t = now_ns();
    for (long i = 0; i < n; i++)
        if (get(req) != 0)
            return die("GET");
    printf("requests %ld us_per_request %.3f calls_per_request %.2f\n", n,
           (now_ns() - t) / n / 1e3, (double)g_calls / n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fd") == 0)
        return bench_fds(atol(argv[2]));
    if (argc == 4 && strcmp(argv[1], "plain") == 0)
        return bench_requests(atoi(argv[2]), NULL, atol(argv[3]));
    if (argc == 5 && strcmp(argv[1], "tls") == 0)
        return bench_requests(atoi(argv[2]), argv[3], atol(argv[4]));
    fprintf(stderr, "usage: http_bench fd N | plain PORT N | tls PORT CAFILE N\n");
    return 2;
}
