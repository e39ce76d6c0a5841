/*
 * config.c: the configuration, parsed once at load (or, when no BACKOFF_*
 * variable was set, the defaults, made on first use), and the random
 * generators seeded from it (core.h).
 */
#include "core/core.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bo_config g_cfg;
static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;
/* Both in .data, beside g_env_may_set: every exit reads the first (report.c),
 * and in .bss it would cost a program that never calls a hook a page. */
__attribute__((section(".data"))) int bo_core_config_loaded; /* set once loaded */
__attribute__((section(".data"))) const bo_config *bo_core_config_ptr; /* &g_cfg if valid */
static uint64_t g_seed;
static uint64_t g_thread_counter;
static uint64_t g_forks; /* forks so far, counted under the fork handlers' locks */

static BO_TLS bo_rng tl_rng, tl_unique;
static BO_TLS bool tl_rng_ready, tl_unique_ready;

/* 0 once the constructor found no BACKOFF_* variable in the environment:
 * the configuration is then the defaults, whatever the program sets later.
 * Initialised, so in .data, on the page the dynamic linker writes at load
 * anyway: a flag in .bss would be a page of its own. */
static int g_env_may_set = 1;

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static const char *env_unset(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return NULL;
}

/*
 * Parse BACKOFF_* once.  A bad value prints its one line and leaves the
 * library as pure pass-through (or exits 2 under BACKOFF_STRICT=1): the host
 * program must never break because of the shim.  A BACKOFF_SHARE URL that
 * cannot be used is not fatal: its one line is printed here, at load, and
 * the destinations are shared host-wide.
 */
static void load_config(void)
{
    char err[BO_ERR_LEN];
    int saved = errno;

    bool may = __atomic_load_n(&g_env_may_set, __ATOMIC_RELAXED);
    if (bo_config_load(&g_cfg, may ? env_get : env_unset, NULL, err, sizeof err) != 0) {
        const char *strict = getenv("BACKOFF_STRICT");
        bo_core_line("%s", err);
        if (strict != NULL && strcmp(strict, "1") == 0)
            _exit(2);
        errno = saved;
        return;
    }
    if (g_cfg.seed_set) {
        g_seed = g_cfg.seed;
    } else {
        g_seed = (uint64_t)bo_core_wall_ns() ^ ((uint64_t)getpid() << 32);
    }
    bo_core_config_ptr = &g_cfg;
    if (g_cfg.share_warning[0] != '\0')
        bo_core_line("%s", g_cfg.share_warning);
    errno = saved;
}

static void load_config_once(void)
{
    load_config();
    __atomic_store_n(&bo_core_config_loaded, 1, __ATOMIC_RELEASE);
}

const bo_config *bo_core_config_load(void)
{
    pthread_once(&g_cfg_once, load_config_once);
    return bo_core_config_ptr;
}

/*
 * At load: a process started with BACKOFF_* variables has them parsed now,
 * so that a bad value says so at once (one line, whatever the program
 * does).  One without any, the most common (every process of a shell
 * loop under the wrapper alone), cannot have a bad one: its configuration,
 * the defaults, is made when a hook first needs it, and a program that
 * never calls one (true, sed, most of a build) does none of that work.
 */
__attribute__((constructor)) static void config_at_load(void)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *v = *e; /* "BACKOFF_", a byte at a time: no string constant to read */
        if (v[0] == 'B' && v[1] == 'A' && v[2] == 'C' && v[3] == 'K' && v[4] == 'O' &&
            v[5] == 'F' && v[6] == 'F' && v[7] == '_') {
            (void)bo_core_config();
            return;
        }
    }
    __atomic_store_n(&g_env_may_set, 0, __ATOMIC_RELAXED);
}

bo_rng *bo_core_rng(void)
{
    if (!tl_rng_ready) {
        uint64_t n = __atomic_add_fetch(&g_thread_counter, 1, __ATOMIC_RELAXED);
        bo_rng_seed(&tl_rng, g_seed + n * 0x9e3779b97f4a7c15ULL);
        tl_rng_ready = true;
    }
    return &tl_rng;
}

bo_rng *bo_core_rng_unique(void)
{
    if (!tl_unique_ready) {
        uint64_t n = __atomic_add_fetch(&g_thread_counter, 1, __ATOMIC_RELAXED);
        bo_rng_seed(&tl_unique, g_seed ^ ((uint64_t)getpid() << 32) ^
                                    (uint64_t)bo_core_wall_ns() ^ (n * 0x9e3779b97f4a7c15ULL));
        tl_unique_ready = true;
    }
    return &tl_unique;
}

void bo_core_rng_prepare_fork(void)
{
    g_forks++;
}

/* The child's generators are seeded apart from the parent's, so that parent
 * and child never draw the same jitter. */
void bo_core_rng_child_fork(void)
{
    bo_rng mix;
    bo_rng_seed(&mix, g_seed ^ (g_forks * 0x9e3779b97f4a7c15ULL));
    g_seed = bo_rng_next(&mix);
    tl_rng_ready = tl_unique_ready = false;
}
