/*
 * shim_connect PORT: a blocking TCP client to 127.0.0.1:PORT on a socket
 * made with SOCK_CLOEXEC and SO_KEEPALIVE.  Prints
 *   "connected fd-kept flags-kept hello"  when it connected on the same
 *                                         descriptor with its flags kept;
 *   "failed errno=NAME"                   on failure.
 * Used by tests/integration/test_shim_connect.sh under the shim.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *errno_name(int e)
{
    switch (e) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    default: return strerror(e);
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in sa;
    int fd, one = 1, ka = 0;
    socklen_t kl = sizeof ka;
    char buf[16] = {0};

    if (argc != 2)
        return 2;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)atoi(argv[1]));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    errno = 0;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        printf("failed errno=%s\n", errno_name(errno));
        return 1;
    }
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    int kept = getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && peer.sin_port == sa.sin_port;
    int flags = (fcntl(fd, F_GETFD) & FD_CLOEXEC) &&
                getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &ka, &kl) == 0 && ka;
    ssize_t n = 0, got;
    while (n < 5 && (got = read(fd, buf + n, 5 - (size_t)n)) > 0)
        n += got;
    printf("connected %s %s %s\n", kept ? "fd-kept" : "fd-lost",
           flags ? "flags-kept" : "flags-lost", buf);
    close(fd);
    return 0;
}
