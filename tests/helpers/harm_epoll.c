/*
 * harm_epoll: a single-threaded epoll event loop in C, as servers and
 * crawlers write them, for the harm suite (tests/integration/test_http_harm.sh).
 *
 *   harm_epoll PORT N PATH [TICK_MS]
 *
 * Opens N non-blocking connections to 127.0.0.1:PORT at once, writes one
 * "GET PATH<pid>-<i> HTTP/1.1" on each when it is writable (the pid makes
 * the path new for each run: harm_server.py's /first429/KEY throttles a
 * key's first request only), reads each answer to its end (Content-Length)
 * and closes the socket.  Its ticker is epoll_wait's timeout, TICK_MS
 * (default 10; a loop's next timer, as the library sees it): the longest
 * time between two returns of epoll_wait past that timeout is the loop's
 * stall.  Prints "I STATUS" per connection in order, then
 * "time elapsed S maxstall S".  Gives up after 20 s (exit 1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64

typedef struct conn {
    int fd;
    int sent;
    int status;  /* 0 while the answer is not whole */
    char buf[8192];
    size_t len;
} conn;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The answer's status once it is whole (head and Content-Length body), else 0. */
static int answer_status(const conn *c)
{
    const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t head = (size_t)(end - c->buf) + 4;
    long body = 0;
    const char *cl = memmem(c->buf, head, "Content-Length:", 15);
    if (cl != NULL)
        body = strtol(cl + 15, NULL, 10);
    if (c->len < head + (size_t)body)
        return 0;
    int status = 0;
    return sscanf(c->buf, "HTTP/1.%*d %d", &status) == 1 ? status : -1;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: harm_epoll PORT N PATH [TICK_MS]\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    const char *path = argv[3];
    int tick_ms = argc == 5 ? atoi(argv[4]) : 10;
    if (port <= 0 || port > 65535 || n <= 0 || n > MAX_CONNS || tick_ms <= 0) {
        fprintf(stderr, "harm_epoll: PORT 1-65535, N 1-%d, TICK_MS above 0\n", MAX_CONNS);
        return 2;
    }
    static conn conns[MAX_CONNS];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("harm_epoll: epoll_create1");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        conn *c = &conns[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0 ||
            (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)) {
            perror("harm_epoll: connect");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    double t0 = now_s(), last = t0, maxstall = 0;
    int done = 0;
    while (done < n) {
        struct epoll_event evs[16];
        int k = epoll_wait(ep, evs, 16, tick_ms);
        double t = now_s();
        if (t - last - tick_ms / 1000.0 > maxstall)
            maxstall = t - last - tick_ms / 1000.0;
        last = t;
        if (t - t0 > 20) {
            fprintf(stderr, "harm_epoll: %d of %d answers after 20 s\n", done, n);
            return 1;
        }
        if (k < 0 && errno != EINTR) {
            perror("harm_epoll: epoll_wait");
            return 1;
        }
        for (int e = 0; e < k; e++) {
            conn *c = &conns[evs[e].data.u32];
            if (!c->sent) {
                char req[512];
                int len = snprintf(req, sizeof req,
                                   "GET %s%d-%u HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", path,
                                   (int)getpid(), evs[e].data.u32, port);
                if (send(c->fd, req, (size_t)len, MSG_NOSIGNAL) != len) {
                    perror("harm_epoll: send");
                    return 1;
                }
                c->sent = 1;
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[e].data.u32};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                continue;
            }
            ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (r > 0)
                c->len += (size_t)r;
            c->status = answer_status(c);
            if (c->status == 0 && r > 0 && c->len < sizeof c->buf)
                continue;
            if (c->status == 0)
                c->status = -1; /* closed or too long before its end */
            epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            done++;
        }
    }
    for (int i = 0; i < n; i++)
        printf("%d %d\n", i, conns[i].status);
    printf("time elapsed %.3f maxstall %.3f\n", now_s() - t0, maxstall);
    return 0;
}
