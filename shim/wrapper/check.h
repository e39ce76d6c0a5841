/*
 * check.h: `backoff --check CMD` (check.c), for the wrapper.
 */
#ifndef BO_WRAPPER_CHECK_H
#define BO_WRAPPER_CHECK_H

/*
 * Tell whether the library will reach the HTTP of the program cmd (a
 * command on PATH or a path; a script: its interpreter): one line for its
 * libcurl (and the helper it runs for HTTP, git's git-remote-https), then
 * one each for OpenSSL, GnuTLS (when linked) and plain sockets.  Returns 0
 * when one of them will be reached (or may, when the program loads
 * libraries at run time), 1 when none will, 2 when the program cannot be
 * found or read.
 */
int bo_check_program(const char *cmd);

#endif
