/*
 * stress_connect PORT: one blocking TCP connect() to 127.0.0.1:PORT, the
 * call the shim's connect hook manages.  Prints "connect: ok" or
 * "connect: <error>" and exits 0 when connected, 1 otherwise.  The hardening
 * test builds it twice, dynamically and with -static, to show what the shim
 * can hook (and, as a setuid copy, what ld.so refuses to preload).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_in sa;
    int fd, rc;

    if (argc != 2) {
        fprintf(stderr, "usage: stress_connect PORT\n");
        return 2;
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)atoi(argv[1]));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        perror("socket");
        return 2;
    }
    rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    printf("connect: %s\n", rc == 0 ? "ok" : strerror(errno));
    close(fd);
    return rc == 0 ? 0 : 1;
}
