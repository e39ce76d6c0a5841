/*
 * share_file.h: the test's host-wide state file, mapped (header only, for
 * the helpers that read or lock it from outside the library: share_dump,
 * share_hold).
 *
 * share_file_map() maps $XDG_RUNTIME_DIR/backoff.shm read-write; NULL, with
 * the reason on stderr, when XDG_RUNTIME_DIR is not set, the file is not
 * there or it is not this build's (magic, layout version, sizes).
 */
#ifndef BO_SHARE_FILE_H
#define BO_SHARE_FILE_H

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../shim/dest/share_layout.h"

static bo_share_file *share_file_map(void)
{
    char path[PATH_MAX];
    const char *xdg = getenv("XDG_RUNTIME_DIR");

    if (xdg == NULL) {
        fprintf(stderr, "XDG_RUNTIME_DIR is not set\n");
        return NULL;
    }
    snprintf(path, sizeof path, "%s/backoff.shm", xdg);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return NULL;
    }
    bo_share_file *f = mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd); /* the mapping stays */
    if (f == MAP_FAILED || f->magic != BO_SHARE_MAGIC || f->version != BO_SHARE_VERSION ||
        f->file_size != sizeof *f || f->dest_size != sizeof(bo_dest)) {
        fprintf(stderr, "%s: not this build's state file\n", path);
        return NULL;
    }
    return f;
}

#endif
