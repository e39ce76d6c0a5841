/*
 * check.h: `backoff --check CMD` (check.c), for the wrapper.
 */
#ifndef BO_WRAPPER_CHECK_H
#define BO_WRAPPER_CHECK_H

/*
 * Tell whether the library will reach the libcurl of the program cmd (a
 * command on PATH or a path; a script: its interpreter).  Prints one line;
 * returns 0 when it will (or may, when the program loads libraries at run
 * time), 1 when it will not, 2 when the program cannot be found or read.
 */
int bo_check_program(const char *cmd);

#endif
