/*
 * config.c: the configuration, parsed once at load, and the random
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
int bo_core_config_loaded;         /* set once load_config has run: skips pthread_once */
const bo_config *bo_core_config_ptr; /* &g_cfg once loaded and valid */
static uint64_t g_seed;
static uint64_t g_thread_counter;
static uint64_t g_forks; /* forks so far, counted under the fork handlers' locks */

static BO_TLS bo_rng tl_rng, tl_unique;
static BO_TLS bool tl_rng_ready, tl_unique_ready;

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
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

    if (bo_config_load(&g_cfg, env_get, NULL, err, sizeof err) != 0) {
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

__attribute__((constructor)) static void config_at_load(void)
{
    (void)bo_core_config();
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
