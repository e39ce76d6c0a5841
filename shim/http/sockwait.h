/*
 * sockwait.h: what a socket says of itself and a bounded wait for a
 * descriptor (sockwait.c), within the http room: the exchange, the
 * transports and the hooks all use them, and they use nothing of the room.
 */
#ifndef BO_HTTP_SOCKWAIT_H
#define BO_HTTP_SOCKWAIT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

/* Wait until fd is ready for `events` (poll's), no later than until_ns:
 * 0, or -1 (ETIMEDOUT, or poll's error). */
int bo_hs_wait_fd(int fd, short events, int64_t until_ns);

/* Is fd O_NONBLOCK now?  Its SO_RCVTIMEO and SO_SNDTIMEO in ns (0: none,
 * or unreadable). */
bool bo_hs_nonblocking(int fd);
int64_t bo_hs_rcvtimeo(int fd);
int64_t bo_hs_sndtimeo(int fd);

/*
 * The epoll sets that hold fd with its current file: every epoll fd of the
 * process, its /proc/self/fdinfo entry for fd (events and data as the
 * program gave them; the inode says it is this very file), at most max of
 * them into regs.  Returns how many (0: fd is in no event loop's set).
 * It needs no hook and cannot go stale.
 */
typedef struct bo_hs_epreg {
    int epfd;
    struct epoll_event ev;
} bo_hs_epreg;
int bo_hs_epoll_regs(int fd, bo_hs_epreg *regs, int max);

#endif
