/*
 * harm_owned: a program that does what daemons do to their descriptors and
 * what anyone may do to the host-wide state file, for the harm suite of
 * what the library holds (tests/integration/test_harm_owned.sh,
 * demo/bench-harm.sh).
 *
 *   harm_owned fds curl|sock range|loop URL1 URL2 DIR
 *       GET URL1 (libcurl, or a plain socket: the http room), then close
 *       every descriptor from 3 up (close_range(3, ~0U, 0), or a close()
 *       loop to the limit of descriptors), open DIR/f1..f4 and write
 *       "fileN\n" in each, GET URL2 (a new destination), close the four.
 *       Prints "get1 STATUS", "get2 STATUS", "close fN 0|ERRNO-NAME".
 *   harm_owned trunc curl|sock URL1 URL2 PATH
 *       GET URL1, truncate PATH to 0 bytes when it exists (as anyone may:
 *       `truncate -s 0`, a cleaner), GET URL1 again and URL2.  Prints
 *       "get1 STATUS", "get1again STATUS", "get2 STATUS".
 *   harm_owned calls curl|sock N URL
 *       N GETs of URL, one at a time; prints "get STATUS" for each, then
 *       "time per_call S max S fds N" (seconds; N: descriptors open from 3
 *       up after the calls, which the program never opened).  With
 *       HARM_GATE=PATH in the environment, it waits after the first call
 *       (up to 30 s) until PATH exists: the caller knows every program is
 *       in (its state mapped) before it does something to them all.
 *   harm_owned fault default|early|late URL DIR
 *       A fault of the program's own after a GET of URL: DIR/mapped is
 *       mapped, truncated and touched.  default: no handler (it dies of
 *       SIGBUS); early or late: its own SIGBUS handler, installed before
 *       or after the GET, prints "own handler" and exits 7.
 *
 * URLs are http://127.0.0.1:PORT/PATH.  Exit 0 when it ran to its end
 * (whatever the statuses), 1 on a usage error.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

/* A GET through libcurl, a new handle each time: its status, or 0. */
static long get_curl(const char *url)
{
    CURL *h = curl_easy_init();
    long status = 0;

    if (h == NULL)
        return 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return status;
}

/* A GET on a plain socket (Connection: close, read to the end): its status, or 0. */
static long get_sock(const char *url)
{
    char host[64], path[512] = "/", req[768], buf[4096];
    int port = 0, status = 0;
    size_t len = 0;

    if (sscanf(url, "http://%63[^:]:%d%511s", host, &port, path) < 2)
        return 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n",
                     path, host, port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && write(fd, req, (size_t)n) == n) {
        ssize_t k;
        while (len < sizeof buf - 1 && (k = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
            len += (size_t)k;
    }
    close(fd);
    buf[len] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

static long get(const char *how, const char *url)
{
    return strcmp(how, "curl") == 0 ? get_curl(url) : get_sock(url);
}

static void close_all(const char *how)
{
    if (strcmp(how, "range") == 0) {
        syscall(SYS_close_range, 3U, ~0U, 0U);
        return;
    }
    struct rlimit rl;
    long max = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536)
        max = (long)rl.rlim_cur;
    for (long fd = 3; fd < max; fd++)
        close((int)fd);
}

static int run_fds(char **argv)
{
    const char *how = argv[2], *url1 = argv[4], *url2 = argv[5], *dir = argv[6];
    char path[4096], line[8];
    int fds[4];

    printf("get1 %ld\n", get(how, url1));
    close_all(argv[3]);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/f%d", dir, i + 1);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        snprintf(line, sizeof line, "file%d\n", i + 1);
        if (fds[i] < 0 || write(fds[i], line, 6) != 6)
            printf("f%d not written: %s\n", i + 1, strerror(errno));
    }
    printf("get2 %ld\n", get(how, url2));
    for (int i = 0; i < 4; i++) {
        int rc = close(fds[i]);
        printf("close f%d %s\n", i + 1, rc == 0 ? "0" : strerrorname_np(errno));
    }
    return 0;
}

static int run_trunc(char **argv)
{
    const char *how = argv[2], *url1 = argv[3], *url2 = argv[4];

    printf("get1 %ld\n", get(how, url1));
    fflush(stdout);
    int fd = open(argv[5], O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (ftruncate(fd, 0) != 0)
            perror("ftruncate");
        close(fd);
    }
    printf("get1again %ld\n", get(how, url1));
    printf("get2 %ld\n", get(how, url2));
    return 0;
}

/* Descriptors open from 3 up (the listing's own left out). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int fd = atoi(e->d_name);
        n += e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= 3 && fd != dirfd(d);
    }
    closedir(d);
    return n;
}

/* wait_for_gate: PATH exists, or 30 s passed (bounded: the caller's own
 * timeout kills the program anyway). */
static void wait_for_gate(const char *path)
{
    for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++)
        usleep(10000);
}

static int run_calls(char **argv)
{
    const char *gate = getenv("HARM_GATE");
    int n = atoi(argv[3]);
    double total = 0, max = 0;

    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        printf("get %ld\n", get(argv[2], argv[4]));
        double dt = now_s() - t0;
        total += dt;
        max = dt > max ? dt : max;
        if (i == 0 && gate != NULL)
            wait_for_gate(gate);
    }
    printf("time per_call %.3f max %.3f fds %d\n", n > 0 ? total / n : 0, max, open_fds());
    return 0;
}

static void own_handler(int sig, siginfo_t *si, void *uc)
{
    static const char line[] = "own handler\n";
    (void)sig;
    (void)si;
    (void)uc;
    if (write(1, line, sizeof line - 1) < 0)
        _exit(8);
    _exit(7);
}

static void install_own(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
}

static int run_fault(char **argv)
{
    char path[4096];

    if (strcmp(argv[2], "early") == 0)
        install_own();
    printf("get1 %ld\n", get("curl", argv[3]));
    if (strcmp(argv[2], "late") == 0)
        install_own();
    snprintf(path, sizeof path, "%s/mapped", argv[4]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 8192) != 0)
        return 1;
    volatile char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 1;
    m[4096] = 1;
    if (ftruncate(fd, 0) != 0)
        return 1;
    printf("touching\n");
    m[4096] = 2; /* beyond the end now: SIGBUS */
    printf("survived\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 7 && strcmp(argv[1], "fds") == 0)
        return run_fds(argv);
    if (argc == 6 && strcmp(argv[1], "trunc") == 0)
        return run_trunc(argv);
    if (argc == 5 && strcmp(argv[1], "calls") == 0)
        return run_calls(argv);
    if (argc == 5 && strcmp(argv[1], "fault") == 0)
        return run_fault(argv);
    fprintf(stderr, "usage: harm_owned fds curl|sock range|loop URL1 URL2 DIR\n"
                    "       harm_owned trunc curl|sock URL1 URL2 PATH\n"
                    "       harm_owned calls curl|sock N URL\n"
                    "       harm_owned fault default|early|late URL DIR\n");
    return 1;
}
