/*
 * connect_probe MODE ARGS: ordinary blocking connect() calls, each timed
 * inside the program with the monotonic clock (so that a busy machine's
 * start-up time never enters the figures).  Every mode prints one line
 * "rc=R errno=NAME ms=T" (plus what the mode adds); the integration test
 * runs each mode without and with the library and compares.
 *
 *   tcp ADDR PORT      one connect to ADDR:PORT (IPv4 or IPv6 literal)
 *   loop               a client's address loop: ::1 (refused), then
 *                      127.0.0.1 where this program listens; ms = time to
 *                      the connected second address
 *   unix-stale DIR     a socket file nobody listens on (made here)
 *   abstract NAME      a missing abstract UNIX socket
 *   threads N PORT     N threads connect at once; ms = the last to return
 *   opts 4|6 DELAY_MS [nobind]  set options, bind a source address (not
 *                      with nobind), connect to a port where this program
 *                      starts listening DELAY_MS later, print getsockopt of
 *                      every option set
 *   syncnt             TCP_SYNCNT 1 against a listener whose backlog is
 *                      full (after one connection it accepted: seen alive)
 *   alarm              connect once (seen alive), the listener goes away,
 *                      alarm(1) with a handler without SA_RESTART around
 *                      the next connect; prints also how the socket ends
 *   alarm restart      the same with SA_RESTART: the wait resumes
 *   sndtimeo MS        as alarm, with SO_SNDTIMEO MS instead of the alarm
 *                      (0: none set)
 *   blackhole          as alarm without one; 500 ms later the port listens
 *                      again with a full backlog, so that a retry's SYNs
 *                      are dropped (a retry attempt that would hang)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *ename(int e)
{
    switch (e) {
    case 0: return "0";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINTR: return "EINTR";
    case ENOENT: return "ENOENT";
    case EAGAIN: return "EAGAIN";
    case EINPROGRESS: return "EINPROGRESS";
    case EALREADY: return "EALREADY";
    case ENETUNREACH: return "ENETUNREACH";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    default: return strerror(e);
    }
}

static void report(int rc, int err, double ms)
{
    printf("rc=%d errno=%s ms=%.0f\n", rc, ename(rc == 0 ? 0 : err), ms);
}

static int timed_connect(int fd, const struct sockaddr *sa, socklen_t len, int *err, double *ms)
{
    double t0 = now_ms();
    int rc = connect(fd, sa, len);
    *err = errno;
    *ms = now_ms() - t0;
    return rc;
}

/* A listener on 127.0.0.1 (or ::1) port 0 with the given backlog; *port gets its port. */
static int listener(int family, int backlog, int *port)
{
    struct sockaddr_storage ss;
    socklen_t l;
    int one = 1, fd = socket(family, SOCK_STREAM, 0);

    memset(&ss, 0, sizeof ss);
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons((unsigned short)*port);
        l = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons((unsigned short)*port);
        l = sizeof *a;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, l) != 0 || listen(fd, backlog) != 0) {
        perror("listener");
        exit(2);
    }
    l = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &l);
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static socklen_t make_addr(const char *addr, int port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(addr, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((unsigned short)port);
        inet_pton(AF_INET6, addr, &a->sin6_addr);
        return sizeof *a;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, addr, &a->sin_addr);
    return sizeof *a;
}

static int mode_tcp(const char *addr, int port)
{
    struct sockaddr_storage ss;
    socklen_t l = make_addr(addr, port, &ss);
    int fd = socket(ss.ss_family, SOCK_STREAM, 0), err;
    double ms;
    int rc = timed_connect(fd, (struct sockaddr *)&ss, l, &err, &ms);
    report(rc, err, ms);
    return 0;
}

static int mode_loop(void)
{
    int port = 0, lfd = listener(AF_INET, 8, &port), err = 0, rc = -1;
    const char *addrs[] = {"::1", "127.0.0.1"};
    double t0 = now_ms();
    char tried[64] = "";

    for (int i = 0; i < 2; i++) {
        struct sockaddr_storage ss;
        socklen_t l = make_addr(addrs[i], port, &ss);
        int fd = socket(ss.ss_family, SOCK_STREAM, 0);
        rc = connect(fd, (struct sockaddr *)&ss, l);
        err = errno;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s:%s", i ? "," : "",
                 addrs[i], rc == 0 ? "ok" : ename(err));
        close(fd);
        if (rc == 0)
            break;
    }
    printf("rc=%d errno=%s ms=%.0f tried=%s\n", rc, ename(rc == 0 ? 0 : err), now_ms() - t0,
           tried);
    close(lfd);
    return 0;
}

static int unix_connect(const struct sockaddr_un *un, socklen_t l)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), err;
    double ms;
    int rc = timed_connect(fd, (const struct sockaddr *)un, l, &err, &ms);
    report(rc, err, ms);
    return 0;
}

static int mode_unix_stale(const char *dir)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof un.sun_path, "%s/stale.sock", dir);
    unlink(un.sun_path);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(s, (struct sockaddr *)&un, sizeof un) != 0) {
        perror("bind");
        return 2;
    }
    close(s); /* the file stays, nobody listens: a stale socket */
    return unix_connect(&un, sizeof un);
}

static int mode_abstract(const char *name)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 > sizeof un.sun_path)
        return 2;
    memcpy(un.sun_path + 1, name, n);
    return unix_connect(&un, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
}

static int g_port;
static double g_t0;
static double g_done[256];

static void *thread_main(void *arg)
{
    struct sockaddr_storage ss;
    socklen_t l = make_addr("127.0.0.1", g_port, &ss);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    (void)connect(fd, (struct sockaddr *)&ss, l);
    g_done[(long)arg] = now_ms() - g_t0;
    close(fd);
    return NULL;
}

static int mode_threads(int n, int port)
{
    pthread_t th[256];
    double last = 0;
    if (n < 1 || n > 256)
        return 2;
    g_port = port;
    g_t0 = now_ms();
    for (long i = 0; i < n; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)i);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (g_done[i] > last)
            last = g_done[i];
    }
    printf("threads=%d last_ms=%.0f\n", n, last);
    return 0;
}

typedef struct later {
    int family, port, delay_ms;
} later;

static void *listen_later(void *arg)
{
    later *lt = arg;
    struct timespec ts = {lt->delay_ms / 1000, (lt->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int lfd = listener(lt->family, 8, &lt->port);
    int c = accept(lfd, NULL, NULL);
    sleep(2);
    close(c);
    close(lfd);
    return NULL;
}

static void show_int(int fd, int level, int name, const char *what)
{
    int v = -1;
    socklen_t l = sizeof v;
    if (getsockopt(fd, level, name, &v, &l) != 0)
        printf("%s=error:%s\n", what, ename(errno));
    else
        printf("%s=%d\n", what, v);
}

static int mode_opts(const char *family, int delay_ms, bool bind_source)
{
    int v6 = strcmp(family, "6") == 0;
    int fam = v6 ? AF_INET6 : AF_INET;
    int fd = socket(fam, SOCK_STREAM, 0), one = 1, v, err, port;
    struct linger lg = {1, 0};
    struct sockaddr_storage src, dst;
    socklen_t l;
    pthread_t th;
    later lt;
    double ms;

    /* A free port for the late listener. */
    int probe = listener(fam, 1, &(int){0});
    l = sizeof dst;
    getsockname(probe, (struct sockaddr *)&dst, &l);
    port = ntohs(v6 ? ((struct sockaddr_in6 *)&dst)->sin6_port
                    : ((struct sockaddr_in *)&dst)->sin_port);
    close(probe);

    v = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    v = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &v, sizeof v);
    v = 5000;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof v);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    v = 0x10;
    if (v6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof v);
    } else {
        setsockopt(fd, IPPROTO_IP, IP_TOS, &v, sizeof v);
    }
    if (geteuid() == 0) {
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3);
        v = 42;
        setsockopt(fd, SOL_SOCKET, SO_MARK, &v, sizeof v);
    }
    /* A bound source address (the port is the kernel's choice). */
    l = make_addr(v6 ? "::1" : "127.0.0.1", 0, &src);
    if (bind_source && bind(fd, (struct sockaddr *)&src, l) != 0)
        perror("bind");

    lt.family = fam;
    lt.port = port;
    lt.delay_ms = delay_ms;
    int up = -1; /* delay 0: the server is up before the connect (the plain reference) */
    if (delay_ms == 0)
        up = listener(fam, 8, &lt.port);
    else
        pthread_create(&th, NULL, listen_later, &lt);
    l = make_addr(v6 ? "::1" : "127.0.0.1", port, &dst);
    int rc = timed_connect(fd, (struct sockaddr *)&dst, l, &err, &ms);
    printf("rc=%d errno=%s\n", rc, ename(rc == 0 ? 0 : err));
    fprintf(stderr, "connect took %.0f ms\n", ms);
    show_int(fd, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF");
    l = sizeof lg;
    memset(&lg, 0, sizeof lg);
    getsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &l);
    printf("SO_LINGER=%d,%d\n", lg.l_onoff, lg.l_linger);
    show_int(fd, SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE");
    show_int(fd, IPPROTO_TCP, TCP_SYNCNT, "TCP_SYNCNT");
    show_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT");
    show_int(fd, IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY");
    if (v6) {
        show_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, "IPV6_V6ONLY");
        show_int(fd, IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS");
    } else {
        show_int(fd, IPPROTO_IP, IP_TOS, "IP_TOS");
    }
    if (geteuid() == 0) {
        char dev[IFNAMSIZ] = "";
        l = sizeof dev;
        getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, &l);
        printf("SO_BINDTODEVICE=%s\n", dev);
        show_int(fd, SOL_SOCKET, SO_MARK, "SO_MARK");
    }
    l = sizeof src;
    getsockname(fd, (struct sockaddr *)&src, &l);
    char a[INET6_ADDRSTRLEN] = "";
    inet_ntop(fam, v6 ? (void *)&((struct sockaddr_in6 *)&src)->sin6_addr
                      : (void *)&((struct sockaddr_in *)&src)->sin_addr,
              a, sizeof a);
    printf("source=%s\n", a);
    close(fd);
    if (up >= 0)
        close(up);
    else
        pthread_join(th, NULL);
    return 0;
}

static int mode_syncnt(void)
{
    int port = 0, lfd = listener(AF_INET, 0, &port), err, v = 1;
    struct sockaddr_storage ss;
    socklen_t l = make_addr("127.0.0.1", port, &ss);
    double ms;

    /* Fill the accept queue (backlog 0 holds one connection) with a
     * blocking connect that succeeds: the destination has been seen alive. */
    int fill = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fill, (struct sockaddr *)&ss, l) != 0)
        fprintf(stderr, "filler: %s\n", ename(errno));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &v, sizeof v);
    int rc = timed_connect(fd, (struct sockaddr *)&ss, l, &err, &ms);
    report(rc, err, ms);
    close(lfd);
    return 0;
}

static volatile sig_atomic_t g_alarms;
static double g_alarm_ms;

static void on_alarm(int sig)
{
    (void)sig;
    g_alarms++;
    g_alarm_ms = now_ms();
}

/* Connect once to a listener (the destination is seen alive), then close it. */
static socklen_t alive_then_gone(struct sockaddr_storage *ss)
{
    int port = 0, lfd = listener(AF_INET, 8, &port);
    socklen_t l = make_addr("127.0.0.1", port, ss);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)ss, l) != 0)
        fprintf(stderr, "first connect: %s\n", ename(errno));
    close(fd);
    close(lfd);
    return l;
}

static int mode_alarm(bool restart)
{
    struct sockaddr_storage ss;
    socklen_t l = alive_then_gone(&ss);
    struct sigaction sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), err, soerr = -1;
    socklen_t sl = sizeof soerr;
    double ms, t0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART unless asked */
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGALRM, &sa, NULL);
    t0 = now_ms();
    alarm(1);
    int rc = timed_connect(fd, (struct sockaddr *)&ss, l, &err, &ms);
    alarm(0);
    /* How the socket is left: poll it as a POSIX program does after EINTR. */
    struct pollfd p = {fd, POLLOUT, 0};
    int pr = poll(&p, 1, 2000);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    printf("rc=%d errno=%s ms=%.0f handler_ms=%.0f poll=%d so_error=%s\n", rc,
           ename(rc == 0 ? 0 : err), ms, g_alarms ? g_alarm_ms - t0 : -1.0, pr, ename(soerr));
    return 0;
}

/*
 * How late a plain sleep of ms wakes up on this machine now: the reference
 * for how late any wait may wake here, the shim's included (a busy machine
 * wakes sleepers tens or hundreds of milliseconds late).
 */
static double sleep_lateness_ms(int ms)
{
    double t0 = now_ms();
    poll(NULL, 0, ms);
    return now_ms() - t0 - ms;
}

static int mode_sndtimeo(int ms_limit)
{
    struct sockaddr_storage ss;
    socklen_t l = alive_then_gone(&ss);
    struct timeval tv = {ms_limit / 1000, (ms_limit % 1000) * 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0), err;
    double ms;

    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    double late = ms_limit > 0 ? sleep_lateness_ms(ms_limit) : 0;
    int rc = timed_connect(fd, (struct sockaddr *)&ss, l, &err, &ms);
    if (ms_limit > 0) {
        double after = sleep_lateness_ms(ms_limit);
        if (after > late)
            late = after;
    }
    printf("rc=%d errno=%s ms=%.0f sleep_late_ms=%.0f\n", rc, ename(rc == 0 ? 0 : err), ms, late);
    return 0;
}

static int g_bh_port;

/* After 500 ms (between the default policy's retries at 300 and 700 ms), a
 * listener on the port again, its backlog (0) filled at once by a
 * non-blocking connect: from then on SYNs are dropped. */
static void *blackhole_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 500 * 1000000L};
    nanosleep(&ts, NULL);
    int lfd = listener(AF_INET, 0, &g_bh_port);
    struct sockaddr_storage ss;
    socklen_t l = make_addr("127.0.0.1", g_bh_port, &ss);
    int fill = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)connect(fill, (struct sockaddr *)&ss, l);
    pause(); /* keep both open until the process ends */
    (void)lfd;
    return NULL;
}

static int mode_blackhole(void)
{
    struct sockaddr_storage ss;
    socklen_t l = alive_then_gone(&ss);
    pthread_t th;
    int fd = socket(AF_INET, SOCK_STREAM, 0), err;
    double ms;

    g_bh_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    pthread_create(&th, NULL, blackhole_later, NULL);
    int rc = timed_connect(fd, (struct sockaddr *)&ss, l, &err, &ms);
    report(rc, err, ms);
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && strcmp(argv[1], "tcp") == 0)
        return mode_tcp(argv[2], atoi(argv[3]));
    if (argc >= 2 && strcmp(argv[1], "loop") == 0)
        return mode_loop();
    if (argc >= 3 && strcmp(argv[1], "unix-stale") == 0)
        return mode_unix_stale(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "abstract") == 0)
        return mode_abstract(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "threads") == 0)
        return mode_threads(atoi(argv[2]), atoi(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "opts") == 0)
        return mode_opts(argv[2], atoi(argv[3]), argc < 5 || strcmp(argv[4], "nobind") != 0);
    if (argc >= 2 && strcmp(argv[1], "syncnt") == 0)
        return mode_syncnt();
    if (argc >= 2 && strcmp(argv[1], "alarm") == 0)
        return mode_alarm(argc >= 3 && strcmp(argv[2], "restart") == 0);
    if (argc >= 2 && strcmp(argv[1], "blackhole") == 0)
        return mode_blackhole();
    if (argc >= 3 && strcmp(argv[1], "sndtimeo") == 0)
        return mode_sndtimeo(atoi(argv[2]));
    fprintf(stderr, "usage: connect_probe tcp ADDR PORT | loop | unix-stale DIR | abstract NAME |"
                    " threads N PORT | opts 4|6 DELAY_MS [nobind] | syncnt | alarm [restart] |"
                    " sndtimeo MS | blackhole\n");
    return 2;
}
