/*
 * fuzz_config: bo_config_load on arbitrary BACKOFF_* values.  The input is
 * lines "NAME=VALUE"; the getter answers from them (the first line naming a
 * variable wins; a line without '=' is ignored).  Promises checked: no
 * crash or undefined behaviour; on success every field is inside the range
 * docs/DESIGN.md gives; on failure one line starting "backoff: BACKOFF_" that
 * names a variable; bo_config_format's length is what it says, for any
 * buffer size; host matching never reads out of bounds.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bo_config.h"

#define MAX_VARS 64
#define MAX_VALUE 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct vars {
    size_t n;
    char name[MAX_VARS][64];
    char value[MAX_VARS][MAX_VALUE];
};

static const char *get(void *ctx, const char *name)
{
    struct vars *v = ctx;
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->name[i], name) == 0)
            return v->value[i];
    }
    return NULL;
}

/* Splits data into NAME=VALUE lines; names get the BACKOFF_ prefix when a
 * line starts with '_' so that short inputs reach real variables. */
static void split(const uint8_t *data, size_t size, struct vars *v)
{
    size_t i = 0;
    v->n = 0;
    while (i < size && v->n < MAX_VARS) {
        size_t end = i;
        while (end < size && data[end] != '\n')
            end++;
        const uint8_t *eq = memchr(data + i, '=', end - i);
        if (eq) {
            size_t nlen = (size_t)(eq - (data + i));
            size_t vlen = end - (size_t)(eq - data) - 1;
            const char *prefix = (nlen > 0 && data[i] == '_') ? "BACKOFF" : "";
            if (strlen(prefix) + nlen < sizeof v->name[0] && vlen < MAX_VALUE &&
                !memchr(data + i, '\0', end - i)) {
                snprintf(v->name[v->n], sizeof v->name[0], "%s%.*s", prefix, (int)nlen,
                         (const char *)(data + i));
                memcpy(v->value[v->n], eq + 1, vlen);
                v->value[v->n][vlen] = '\0';
                v->n++;
            }
        }
        i = end + 1;
    }
}

static void check_ranges(const bo_config *c)
{
    if (c->policy >= BO_POLICY_COUNT || !bo_policy_name(c->policy))
        abort();
    if (c->max_attempts > 1000000 || c->max_time_ms < 0 || c->max_time_ms > 86400000)
        abort();
    if (c->base_ms < 1 || c->base_ms > 3600000 || c->cap_ms < c->base_ms || c->cap_ms > 86400000)
        abort();
    if (!(c->factor >= 1 && c->factor <= 100) || !(c->jitter >= 0 && c->jitter <= 1))
        abort();
    if (!(c->beta >= 0 && c->beta < 1) || !(c->up >= 1 && c->up <= 100))
        abort();
    if (!(c->down > 0 && c->down <= 1) || c->down_after < 1)
        abort();
    if (c->window < 1 || c->window_max < c->window || c->n_hosts > BO_MAX_HOSTS)
        abort();
    for (size_t i = 0; i < c->n_hosts; i++) {
        if (strnlen(c->hosts[i].name, BO_HOST_LEN) == BO_HOST_LEN || c->hosts[i].port < 0 ||
            c->hosts[i].port > 65535)
            abort();
    }
    if (strnlen(c->stats_path, BO_PATH_LEN) == BO_PATH_LEN ||
        strnlen(c->trace_path, BO_PATH_LEN) == BO_PATH_LEN)
        abort();
    if (c->retry_on & ~((BO_RETRY_DNS << 1) - 1u))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vars v;
    bo_config cfg;
    char err[BO_ERR_LEN];
    char small[17];
    static char big[1 << 16];

    split(data, size, &v);
    memset(err, 'x', sizeof err);
    bo_config_defaults(&cfg);
    int rc = bo_config_load(&cfg, get, &v, err, sizeof err);
    if (rc == 0) {
        check_ranges(&cfg);
    } else {
        if (rc != -1 || strnlen(err, sizeof err) == sizeof err)
            abort();
        if (strncmp(err, "backoff: BACKOFF_", 17) != 0 || strchr(err, '\n'))
            abort();
    }
    /* Formatting: the length needed is independent of the buffer given. */
    size_t need = bo_config_format(&cfg, big, sizeof big);
    size_t need_small = bo_config_format(&cfg, small, sizeof small);
    if (need != need_small || need >= sizeof big || strlen(big) != need ||
        strnlen(small, sizeof small) == sizeof small)
        abort();
    /* Host matching against each value given, as a host name. */
    for (size_t i = 0; i < v.n; i++)
        (void)bo_config_host_matches(&cfg, v.value[i], (int)(i * 997 % 65536));
    return 0;
}
