/*
 * config.c: a policy's settings in the simulator: the BACKOFF_* variables,
 * over the scenario's article presets, and the aimd-000 pseudo-policy
 * (sim_load_cfg, sim.h).  The command line (main.c) and the matrix
 * (matrix.c) both load their policies here.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kv {
    const char *name, *value;
} kv;

/* Settings a scenario's article uses where docs/DESIGN.md's defaults differ. */
typedef struct preset {
    const char *scenario;
    kv env[8];
} preset;

/*
 * Article presets.  Every operation must complete in these scenarios, so
 * attempts are unlimited (BACKOFF_MAX_ATTEMPTS=0) unless the variable is set,
 * and the articles' algorithms run as published: no destination retry
 * budget (BACKOFF_RETRY_BUDGET=0) unless the variable is set.
 * The robustness matrix runs the defaults, budget included.
 */
static const preset presets[] = {
    {"burst",
     {{"BACKOFF_BASE_MS", "50"},
      {"BACKOFF_CAP_MS", "30000"},
      {"BACKOFF_MAX_ATTEMPTS", "0"},
      {"BACKOFF_RETRY_BUDGET", "0"}}},
    {"fairness",
     {{"BACKOFF_BASE_MS", "50"},
      {"BACKOFF_CAP_MS", "30000"},
      {"BACKOFF_MAX_ATTEMPTS", "0"},
      {"BACKOFF_RETRY_BUDGET", "0"}}},
    {"contention",
     {{"BACKOFF_BASE_MS", "5"},
      {"BACKOFF_CAP_MS", "2000"},
      {"BACKOFF_MAX_ATTEMPTS", "0"},
      {"BACKOFF_RETRY_BUDGET", "0"}}},
    {"outage",
     {{"BACKOFF_BASE_MS", "100"},
      {"BACKOFF_FACTOR", "2.718281828"},
      {"BACKOFF_JITTER", "0.1"},
      {"BACKOFF_MAX_ATTEMPTS", "0"},
      {"BACKOFF_RETRY_BUDGET", "0"}}},
    {"pacing", {{"BACKOFF_MAX_ATTEMPTS", "0"}, {"BACKOFF_RETRY_BUDGET", "0"}}},
    {"headers", {{"BACKOFF_MAX_ATTEMPTS", "0"}, {"BACKOFF_RETRY_BUDGET", "0"}}},
};

/* "aimd-000": 000's exact algorithm, for side-by-side tables. */
static const kv aimd000[] = {
    {"BACKOFF_PACING", "0"}, {"BACKOFF_BETA", "0.9"}, {"BACKOFF_WINDOW", "20"},
    {"BACKOFF_WINDOW_MAX", "1024"}, {"BACKOFF_AIMD_MODE", "reno"}, {NULL, NULL}};

typedef struct getctx {
    const char *policy;
    const preset *pre;
    const kv *forced;   /* pseudo-policy settings, below explicit variables */
} getctx;

/* Explicit BACKOFF_* variables win over a pseudo-policy's and the scenario's presets. */
static const char *sim_getenv(void *ctx, const char *name)
{
    const getctx *g = ctx;
    const char *v;

    if (strcmp(name, "BACKOFF_POLICY") == 0)
        return g->policy;
    if (strcmp(name, "BACKOFF_SEED") == 0)
        return NULL; /* --seed governs the simulator */
    v = getenv(name);
    if (v != NULL)
        return v;
    for (const kv *f = g->forced; f != NULL && f->name != NULL; f++)
        if (strcmp(f->name, name) == 0)
            return f->value;
    for (size_t i = 0; g->pre != NULL && i < sizeof(g->pre->env) / sizeof(g->pre->env[0]); i++)
        if (g->pre->env[i].name != NULL && strcmp(g->pre->env[i].name, name) == 0)
            return g->pre->env[i].value;
    return NULL;
}

static const preset *scenario_preset(const char *sc)
{
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
        if (strcmp(presets[i].scenario, sc) == 0)
            return &presets[i];
    return NULL;
}

/* Load one policy's configuration; returns 0 or -1 with a message printed. */
int sim_load_cfg(const char *name, const char *sc, bo_config *cfg)
{
    getctx g = {name, scenario_preset(sc), NULL};
    char err[BO_ERR_LEN];

    if (strcmp(name, "aimd-000") == 0) {
        g.policy = "aimd";
        g.forced = aimd000;
    }
    if (bo_config_load(cfg, sim_getenv, &g, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}
