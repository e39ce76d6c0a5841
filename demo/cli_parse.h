/*
 * cli_parse.h: strict number parsing for the demo programs' flags
 * (ratelimit-server, loadgen), one copy for both.  A value is accepted only
 * when the whole string is a number within [min, max].
 */
#ifndef BO_CLI_PARSE_H
#define BO_CLI_PARSE_H

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* Parses a whole decimal integer in [min, max]; returns 0 on success. */
static inline int cli_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Parses a finite number in [min, max]; returns 0 on success. */
static inline int cli_parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

#endif
