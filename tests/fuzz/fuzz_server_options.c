/*
 * fuzz_server_options: ratelimit-server's flag parser (demo/server/options.c,
 * linked without the server's main) on arbitrary argument vectors.  The
 * input is split on '\n' into arguments.  Promises checked: no crash or
 * undefined behaviour, no read past an argument; the result is 0, 1 or 2;
 * after 0 every field is inside the range --help documents and the
 * --capacity steps are in time order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../demo/server/server.h"

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The parser reports bad flags on stderr (and --help on stdout): silence
 * stdio so the fuzzer runs at speed.  Sanitizer reports use fd 2 directly. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        stdout = null;
        stderr = null;
    }
    return 0;
}

static void check(const struct bo_srv_config *c)
{
    if (c->port < 0 || c->port > 65535 || c->threads < 1 || c->threads > 64)
        abort();
    if (c->max_busy < -1 || c->max_busy > 1000000 || c->service_ms < 0 || c->error_ms < 0 ||
        c->delay_ms < 0 || c->post_delay_ms < 0)
        abort();
    if (c->reject_status != 429 && c->reject_status != 503 && c->reject_status != 403)
        abort();
    if (c->retry_after < -1 || c->retry_after > 86400)
        abort();
    if (c->rate < 0 || (c->rate > 0 && c->burst < 1))
        abort();
    if (c->ncapacity < 0 || c->ncapacity > BO_SRV_MAX_CAPACITY)
        abort();
    for (int i = 0; i < c->ncapacity; i++) {
        if (c->capacity[i].max_busy < 0 || c->capacity[i].max_busy > 1000000)
            abort();
        if (i > 0 && c->capacity[i].at_ms < c->capacity[i - 1].at_ms)
            abort();
    }
    if ((c->outage_mode == BO_OUTAGE_NONE) != (c->outage_for_s <= 0))
        abort();
    if (c->fault_drop_every < 0 || c->fault_reset_every < 0)
        abort();
    if (c->retry_after_raw && strpbrk(c->retry_after_raw, "\r\n"))
        abort();
    if ((c->tls_cert == NULL) != (c->tls_key == NULL))
        abort();
    if ((c->close != 0 && c->close != 1) || (c->gate != 0 && c->gate != 1))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct bo_srv_config cfg;
    char *copy = malloc(size + 1);
    char *argv[MAX_ARGS + 2];
    int argc = 1;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[0] = "ratelimit-server";
    char *save = NULL;
    for (char *t = strtok_r(copy, "\n", &save); t && argc <= MAX_ARGS;
         t = strtok_r(NULL, "\n", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    int rc = bo_srv_parse_args(argc, argv, &cfg);
    if (rc < 0 || rc > 2)
        abort();
    if (rc == 0)
        check(&cfg);
    free(copy);
    return 0;
}
