/*
 * sockwait.c: what a socket says of itself (its mode, its timeouts) and a
 * bounded wait for a descriptor (sockwait.h), for every file of the http
 * room: the exchange, the transports and the hooks.  Its poll is the
 * system call itself: the library's own waits never pass through its own
 * wait hooks (wait.c).
 */
#include "http/sockwait.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bo_time.h"
#include "core/core.h"

int bo_hs_poll(struct pollfd *fds, nfds_t n, int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    return (int)syscall(SYS_ppoll, fds, n, ms < 0 ? NULL : &ts, NULL, (size_t)8);
}

bool bo_hs_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

int bo_hs_wait_fd(int fd, short events, int64_t until_ns)
{
    for (;;) {
        int64_t left = until_ns - bo_core_now_ns();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int ms = left > 1000 * BO_NS_PER_MS ? 1000
                                            : (int)((left + BO_NS_PER_MS - 1) / BO_NS_PER_MS);
        int r = bo_hs_poll(&p, 1, ms);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

static int64_t timeo(int fd, int opt)
{
    struct timeval tv;
    socklen_t l = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, opt, &tv, &l) != 0)
        return 0;
    return (int64_t)tv.tv_sec * BO_NS_PER_S + (int64_t)tv.tv_usec * 1000;
}

int64_t bo_hs_rcvtimeo(int fd)
{
    return timeo(fd, SO_RCVTIMEO);
}

int64_t bo_hs_sndtimeo(int fd)
{
    return timeo(fd, SO_SNDTIMEO);
}

