/*
 * sockwait.c: what a socket says of itself (its mode, its timeouts) and a
 * bounded wait for a descriptor (sockwait.h), for every file of the http
 * room: the exchange, the transports and the hooks.  Its poll is the
 * system call itself: the library's own waits never pass through its own
 * wait hooks (wait.c).
 */
#include "http/sockwait.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bo_time.h"
#include "core/core.h"

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
        int r = bo_core_sys_poll(&p, 1, ms);
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

int bo_hs_epoll_regs(int fd, bo_hs_epreg *regs, int max)
{
    char path[64], line[256], link[64];
    struct stat st;
    int n = 0;
    DIR *d;

    if (fstat(fd, &st) != 0 || (d = opendir("/proc/self/fd")) == NULL)
        return 0;
    for (struct dirent *e; n < max && (e = readdir(d)) != NULL;) {
        int epfd = atoi(e->d_name);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || epfd == dirfd(d))
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%d", epfd);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (strcmp(link, "anon_inode:[eventpoll]") != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
        FILE *f = fopen(path, "re");
        if (f == NULL)
            continue;
        while (n < max && fgets(line, sizeof line, f) != NULL) {
            int tfd;
            unsigned ev;
            unsigned long long data, ino;
            const char *ip = strstr(line, "ino:");
            if (sscanf(line, "tfd: %d events: %x data: %llx", &tfd, &ev, &data) != 3 ||
                tfd != fd || ip == NULL || sscanf(ip, "ino:%llx", &ino) != 1 ||
                ino != (unsigned long long)st.st_ino)
                continue;
            regs[n].epfd = epfd;
            regs[n].ev.events = ev;
            regs[n].ev.data.u64 = data;
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}
