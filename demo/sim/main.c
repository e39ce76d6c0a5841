/*
 * backoff-sim: command line and the TSV / table output (the scenario
 * presets and policy settings are config.c's).  See sim.h and
 * docs/DESIGN.md's scenario table.
 */
#include "sim.h"
#include "../cli_parse.h"
#include "../rl_lines.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: backoff-sim --scenario burst|contention|outage|pacing|fairness|headers|\n"
          "                              capacity|room|down|matrix\n"
          "                   [--policy NAME|all] [--seed N] [--format tsv|table]\n"
          "                   [--independent|--shared] [--warm] [--runs N] [scenario flags]\n"
          "       backoff-sim --list-policies\n"
          "Policies: the library's (backoff --help lists them), aimd-000 (000's exact\n"
          "  AIMD: BACKOFF_PACING=0 BACKOFF_BETA=0.9), or all.\n"
          "Policy settings come from the BACKOFF_* variables (backoff --variables); scenario\n"
          "presets (e.g. burst: BASE_MS=50 CAP_MS=30000, MAX_ATTEMPTS=0) apply only\n"
          "to variables that are not set.\n"
          "Scenario flags (defaults depend on the scenario):\n"
          "  --ops N --rate PER_S --max-busy N --service-ms MS --error-ms MS\n"
          "  --travel-ms MS (one way) --clients N --duration-s S --outage-at-s S\n"
          "  --outage-for-s S --timeout-ms MS --think-ms MS --bucket-rate PER_S\n"
          "  --bucket-burst N --net-mean-ms MS --net-sd-ms MS --backlog N\n"
          "  headers: --limiter bucket|window --window-requests N --window-s S\n"
          "  --phase-s P (the clients start P s into a window)\n"
          "  capacity: --limiter cap|bucket (the capacity halves at a third of\n"
          "  --duration-s, and is back at two thirds)\n"
          "  room: --held N --held-s S [--abandon] (N requests held S seconds, then\n"
          "  quick ones; --abandon: the held ones never end)\n"
          "  --warm (burst, room): measure a second run on the state the first left\n"
          "  down: --clients N --ops N --outage-at-s S --outage-for-s S --duration-s S\n"
          "  (503 without Retry-After while down; each client one item after another)\n"
          "  --program-retries N (down): the program retries a failed call N times\n"
          "  --dialect none|x-ratelimit|ratelimit|draft|x-rate-limit|openai|discord|openai-s\n"
          "  --retry-after-form seconds|date|ms|ms-azure|none --reject-status 429|403|503\n"
          "matrix (see demo/sim/matrix.c): filters --server NAME --hint NAME\n"
          "  --client NAME; default policies: all but none and aimd-000.\n",
          f);
}

static int bad_flag(const char *flag, const char *v, const char *expected)
{
    fprintf(stderr, "backoff-sim: %s \"%s\" is not valid: expected %s\n", flag, v, expected);
    return -1;
}

/* The flags' numbers, parsed by the demo programs' one strict parser. */
static int parse_long(const char *flag, const char *v, long lo, long hi, long *out)
{
    if (cli_parse_long(v, lo, hi, out) != 0) {
        char what[96];
        snprintf(what, sizeof(what), "an integer from %ld to %ld", lo, hi);
        return bad_flag(flag, v, what);
    }
    return 0;
}

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out)
{
    if (cli_parse_double(v, lo, hi, out) != 0) {
        char what[96];
        snprintf(what, sizeof(what), "a number from %g to %g", lo, hi);
        return bad_flag(flag, v, what);
    }
    return 0;
}

static void defaults(sim_params *p)
{
    const char *sc = p->scenario;

    p->ops = 2000;
    p->rate = 1000;
    p->max_busy = 50;
    p->service_ms = 500;
    p->error_ms = 50;
    p->travel_ms = 50;
    p->clients = 1;
    p->runs = 1;
    p->net_mean_ms = 10;
    p->net_sd_ms = 2;
    p->timeout_ms = 2000;
    p->think_ms = 10000;
    p->duration_s = 50;
    p->outage_at_s = 20;
    p->outage_for_s = 10;
    p->bucket_rate = 20;
    p->bucket_burst = 20;
    p->backlog = 1500;
    if (strcmp(sc, "fairness") == 0) {
        p->clients = 4;
        p->independent = true;
    } else if (strcmp(sc, "contention") == 0) {
        p->clients = 100;
        p->runs = 100;
    } else if (strcmp(sc, "outage") == 0) {
        p->clients = 1000;
        p->service_ms = 100;
        p->travel_ms = 0;
    } else if (strcmp(sc, "headers") == 0) {
        p->ops = 600;
        p->travel_ms = 5;
        p->service_ms = 0;
        p->window_requests = 100;
        p->window_s = 5;
        p->dialect = RL_DIALECT_X;
        p->reject_status = 429;
    } else if (strcmp(sc, "pacing") == 0) {
        p->ops = 600;
        p->travel_ms = 5;
        p->service_ms = 0;
    } else if (strcmp(sc, "capacity") == 0) {
        p->clients = 200;
        p->max_busy = 100;
        p->service_ms = -1; /* 100 for the cap, 10 for the bucket: set once the limiter is known */
        p->travel_ms = 5;
        p->bucket_rate = 100;
        p->bucket_burst = 10;
        p->duration_s = 30;
        p->limiter = SIM_LIMITER_CAP;
    } else if (strcmp(sc, "down") == 0) {
        p->clients = 8;
        p->ops = 800;
        p->service_ms = 1;
        p->travel_ms = 0.5;
        p->outage_at_s = 0;
        p->outage_for_s = 5;
        p->duration_s = 600;
    } else if (strcmp(sc, "room") == 0) {
        p->clients = 200;
        p->ops = 2000;
        p->service_ms = 200;
        p->travel_ms = 0.1;
        p->held_s = 25;
    }
}

typedef int (*run_fn)(const bo_config *, const sim_params *, sim_result *);

static run_fn scenario_fn(const char *sc)
{
    if (strcmp(sc, "burst") == 0)
        return sim_run_burst;
    if (strcmp(sc, "fairness") == 0)
        return sim_run_fairness;
    if (strcmp(sc, "contention") == 0)
        return sim_run_contention;
    if (strcmp(sc, "outage") == 0)
        return sim_run_outage;
    if (strcmp(sc, "pacing") == 0)
        return sim_run_pacing;
    if (strcmp(sc, "headers") == 0)
        return sim_run_headers;
    if (strcmp(sc, "capacity") == 0)
        return sim_run_capacity;
    if (strcmp(sc, "room") == 0)
        return sim_run_room;
    if (strcmp(sc, "down") == 0)
        return sim_run_down;
    return NULL;
}

/* Columns: the common ones, then the scenario's own. */
static const char *const common_cols[] = {
    "scenario", "policy", "ops", "attempts", "wasted_pct", "completion_s",
    "optimum_s", "ratio", "p50_s", "p99_s", "throttled", "throttled_pct", NULL};

static const char *const *extra_cols(const char *sc)
{
    static const char *const contention[] = {"clients", "calls", NULL};
    static const char *const outage[] = {"recovery_s", "peak_concurrency",
                                         "down_attempts_per_s", "pre_rate", "post_rate", NULL};
    static const char *const fairness[] = {"clients", "jain", NULL};
    static const char *const headers[] = {"clients", NULL};
    static const char *const capacity[] = {"settle_s", "extra_rej", "window", "up_s",
                                           "use_1", "use_2", "use_3", NULL};
    static const char *const room[] = {"clients", "held_wait_s", NULL};
    static const char *const down[] = {"clients", "failed", NULL};
    static const char *const none[] = {NULL};
    if (strcmp(sc, "down") == 0)
        return down;
    if (strcmp(sc, "capacity") == 0)
        return capacity;
    if (strcmp(sc, "room") == 0)
        return room;
    if (strcmp(sc, "headers") == 0)
        return headers;
    if (strcmp(sc, "contention") == 0)
        return contention;
    if (strcmp(sc, "outage") == 0)
        return outage;
    if (strcmp(sc, "fairness") == 0)
        return fairness;
    return none;
}

static double col_value(const char *col, const sim_result *r, const sim_params *p)
{
    if (!strcmp(col, "ops")) return r->ops;
    if (!strcmp(col, "attempts")) return r->attempts;
    if (!strcmp(col, "wasted_pct")) return r->wasted_pct;
    if (!strcmp(col, "completion_s")) return r->completion_s;
    if (!strcmp(col, "optimum_s")) return r->optimum_s;
    if (!strcmp(col, "ratio")) return r->ratio;
    if (!strcmp(col, "p50_s")) return r->p50_s;
    if (!strcmp(col, "p99_s")) return r->p99_s;
    if (!strcmp(col, "throttled")) return r->throttled;
    if (!strcmp(col, "throttled_pct"))
        return r->attempts > 0 ? 100.0 * r->throttled / r->attempts : 0;
    if (!strcmp(col, "clients")) return p->clients;
    if (!strcmp(col, "calls")) return r->calls;
    if (!strcmp(col, "recovery_s")) return r->recovery_s;
    if (!strcmp(col, "peak_concurrency")) return r->peak_concurrency;
    if (!strcmp(col, "down_attempts_per_s")) return r->down_attempts_per_s;
    if (!strcmp(col, "pre_rate")) return r->pre_rate;
    if (!strcmp(col, "post_rate")) return r->post_rate;
    if (!strcmp(col, "jain")) return r->jain;
    if (!strcmp(col, "settle_s")) return r->settle_s;
    if (!strcmp(col, "extra_rej")) return r->extra_rej;
    if (!strcmp(col, "window")) return r->window;
    if (!strcmp(col, "up_s")) return r->up_s;
    if (!strcmp(col, "use_1")) return r->use_1;
    if (!strcmp(col, "use_2")) return r->use_2;
    if (!strcmp(col, "use_3")) return r->use_3;
    if (!strcmp(col, "held_wait_s")) return p->held > 0 ? r->held_wait_s : NAN;
    if (!strcmp(col, "failed")) return r->failed;
    return NAN;
}

static void fmt_value(char *buf, size_t len, const char *col, double v)
{
    if (isinf(v) || isnan(v) || (!strcmp(col, "recovery_s") && v < 0))
        snprintf(buf, len, "%s", "never");
    else if (!strcmp(col, "ops") || !strcmp(col, "attempts") || !strcmp(col, "throttled") ||
             !strcmp(col, "clients") || !strcmp(col, "peak_concurrency") ||
             !strcmp(col, "extra_rej") || !strcmp(col, "window") || !strcmp(col, "failed"))
        snprintf(buf, len, "%.0f", v);
    else if (!strcmp(col, "calls"))
        snprintf(buf, len, "%.1f", v);
    else if (!strcmp(col, "jain") || !strcmp(col, "ratio") || !strcmp(col, "held_wait_s") ||
             !strncmp(col, "use_", 4))
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "%.2f", v);
}

/* The article's published figures, for the table's title. */
static const char *published(const char *sc)
{
    if (!strcmp(sc, "burst"))
        return "000 published: exponential 48 s / 17,392 attempts; AIMD 25 s / 2,085 attempts; "
               "optimum 20 s";
    if (!strcmp(sc, "contention"))
        return "001 (AWS): calls ~N^2/2 without backoff; full/equal jitter fewest calls; "
               "decorrelated fastest jittered";
    if (!strcmp(sc, "outage"))
        return "003: fixed-interval retry never recovers after the outage; exponential backoff "
               "(factor e, jitter 0.1) does";
    if (!strcmp(sc, "pacing"))
        return "002: token bucket; optimum = ops / rate";
    if (!strcmp(sc, "capacity"))
        return "beyond the articles: after the capacity halves, settled within about 1 s with "
               "at most one window of extra refusals; after it doubles, 90% of it used within "
               "3 s";
    if (!strcmp(sc, "room"))
        return "beyond the articles: a server that never refuses; a policy can only cost time "
               "(held: how long a quick request waits behind held ones)";
    if (!strcmp(sc, "down"))
        return "beyond the articles: a server down (503, no hint); the retry budget says when a "
               "retry goes, never whether: no item lost that the outage's end could save";
    if (!strcmp(sc, "headers"))
        return "beyond the articles: the quota from rate-limit headers, spent, then waited "
               "for; optimum: the quota's own (window: requests at each window's start; "
               "bucket: burst first)";
    return "beyond the articles: Jain's index of the clients' throughputs (1 = fair)";
}

static void settings_line(const char *sc, const sim_params *p, char *buf, size_t len)
{
    if (!strcmp(sc, "burst") || !strcmp(sc, "fairness"))
        snprintf(buf, len,
                 "ops=%ld rate=%g/s max_busy=%d service=%gms error=%gms travel=%gms each way "
                 "clients=%d %s",
                 p->ops, p->rate, p->max_busy, p->service_ms, p->error_ms, p->travel_ms, p->clients,
                 p->independent ? "independent" : "shared");
    else if (!strcmp(sc, "contention"))
        snprintf(buf, len,
                 "clients=%d message=abs(normal(%g ms, %g ms)) runs=%d seed=%" PRIu64 " %s",
                 p->clients, p->net_mean_ms, p->net_sd_ms, p->runs, p->seed,
                 p->independent ? "independent" : "shared state");
    else if (!strcmp(sc, "outage"))
        snprintf(buf, len,
                 "clients=%d think=exp(%g ms) latency=%gms x1.05^((c-30)/15) past 30 timeout=%gms "
                 "down %g s from t=%g s, run %g s, %s",
                 p->clients, p->think_ms, p->service_ms, p->timeout_ms, p->outage_for_s,
                 p->outage_at_s, p->duration_s, p->independent ? "independent" : "shared state");
    else if (!strcmp(sc, "capacity"))
        snprintf(buf, len,
                 "clients=%d closed loop, %s, halved from %g s to %g s; service=%gms "
                 "travel=%gms each way, 429 at once without Retry-After, %g s",
                 p->clients, p->limiter == SIM_LIMITER_CAP ? "concurrency cap" : "token bucket",
                 p->duration_s / 3, 2 * p->duration_s / 3, p->service_ms, p->travel_ms,
                 p->duration_s);
    else if (!strcmp(sc, "room"))
        snprintf(buf, len,
                 "clients=%d ops=%ld service=%gms travel=%gms each way, never refused; held=%d "
                 "for %g s%s%s",
                 p->clients, p->ops, p->service_ms, p->travel_ms, p->held, p->held_s,
                 p->abandon ? ", abandoned" : "", p->warm ? ", warm" : "");
    else if (!strcmp(sc, "down"))
        snprintf(buf, len,
                 "clients=%d ops=%ld one after another, 503 without Retry-After from %g s for "
                 "%g s, service=%gms travel=%gms each way, program retries %d, run %g s",
                 p->clients, p->ops, p->outage_at_s, p->outage_for_s, p->service_ms,
                 p->travel_ms, p->program_retries, p->duration_s);
    else if (!strcmp(p->scenario, "headers"))
        snprintf(buf, len,
                 "ops=%ld clients=%d (%s) %s, dialect %s, rejections %d with the wait as %s, "
                 "travel=%gms each way",
                 p->ops, p->clients, p->independent ? "independent" : "shared state",
                 p->limiter == SIM_LIMITER_WINDOW ? "fixed window" : "token bucket",
                 rl_dialect_names[p->dialect], p->reject_status, rl_wait_names[p->wait_form],
                 p->travel_ms);
    else
        snprintf(buf, len,
                 "ops=%ld sequential, token bucket %g/s burst %g, travel=%gms each way, "
                 "Retry-After whole seconds",
                 p->ops, p->bucket_rate, p->bucket_burst, p->travel_ms);
}

/* Runs one policy `runs` times (seed, seed+1, ...) and averages the results. */
static int run_policy(run_fn fn, const bo_config *cfg, const sim_params *p, sim_result *avg)
{
    sim_result one;
    double never = 0;

    memset(avg, 0, sizeof(*avg));
    for (int i = 0; i < p->runs; i++) {
        sim_params q = *p;
        q.seed = p->seed + (uint64_t)i;
        memset(&one, 0, sizeof(one));
        if (fn(cfg, &q, &one) != 0)
            return -1;
        double *a = (double *)avg, *o = (double *)&one;
        for (size_t k = 0; k < sizeof(one) / sizeof(double); k++)
            a[k] += o[k];
        if (one.recovery_s < 0)
            never = 1;
    }
    double *a = (double *)avg;
    for (size_t k = 0; k < sizeof(*avg) / sizeof(double); k++)
        a[k] /= p->runs;
    if (never)
        avg->recovery_s = -1;
    return 0;
}

/*
 * Every policy the simulator runs: the library's own list (bo_policy_name),
 * with aimd-000 (000's exact AIMD) before aimd.  Filled once by main().
 */
static const char *all_policies[BO_POLICY_COUNT + 2];

static void list_policies(void)
{
    int n = 0;
    for (int k = 0; k < BO_POLICY_COUNT; k++) {
        if (k == BO_POLICY_AIMD)
            all_policies[n++] = "aimd-000";
        all_policies[n++] = bo_policy_name((bo_policy_kind)k);
    }
    all_policies[n] = NULL;
}

/* The names of all_policies joined by `sep`, skipping those in `skip` (comma list). */
static void join_policies(char *buf, size_t len, const char *sep, const char *skip)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; all_policies[i] != NULL; i++) {
        char key[64];
        snprintf(key, sizeof key, ",%s,", all_policies[i]);
        if (skip != NULL && strstr(skip, key) != NULL)
            continue;
        int k = snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? sep : "", all_policies[i]);
        at += k > 0 ? (size_t)k : 0;
        if (at >= len)
            break;
    }
}

/* A policy list: "all", or comma-separated names. */
static int split_policies(char *arg, const char **out, int max)
{
    int n = 0;
    if (strcmp(arg, "all") == 0) {
        for (int i = 0; all_policies[i] != NULL && n < max; i++)
            out[n++] = all_policies[i];
        return n;
    }
    for (char *tok = strtok(arg, ","); tok != NULL && n < max; tok = strtok(NULL, ",")) {
        bo_policy_kind k;
        if (strcmp(tok, "aimd-000") != 0 && bo_policy_from_name(tok, &k) != 0) {
            char names[512], what[600];
            join_policies(names, sizeof names, ", ", NULL);
            snprintf(what, sizeof what, "all, or a comma list of %s", names);
            bad_flag("--policy", tok, what);
            return -1;
        }
        out[n++] = tok;
    }
    return n;
}

int main(int argc, char **argv)
{
    sim_params p;
    const char *scenario = NULL, *format = "tsv";
    char *policy_arg = NULL;
    const char *env_policy = getenv("BACKOFF_POLICY");
    int indep = -1;
    struct { const char *flag; char *value; } given[32];
    int ngiven = 0;
    const char *mx_server = NULL, *mx_hint = NULL, *mx_client = NULL;

    memset(&p, 0, sizeof(p));
    p.seed = 1;
    list_policies();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--list-policies")) { /* one per line: what `all` runs */
            for (int k = 0; all_policies[k] != NULL; k++)
                puts(all_policies[k]);
            return 0;
        }
        if (!strcmp(a, "--independent")) {
            indep = 1;
            continue;
        }
        if (!strcmp(a, "--shared")) {
            indep = 0;
            continue;
        }
        if (!strcmp(a, "--warm")) {
            p.warm = true;
            continue;
        }
        if (!strcmp(a, "--abandon")) {
            p.abandon = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
            fprintf(stderr,
                    "backoff-sim: %s \"%s\" is not valid: expected a known flag with a value (see "
                    "--help)\n",
                    "argument", a);
            return 2;
        }
        char *v = argv[++i];
        if (!strcmp(a, "--scenario")) {
            scenario = v;
        } else if (!strcmp(a, "--policy")) {
            policy_arg = v;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "tsv") != 0 && strcmp(v, "table") != 0) {
                bad_flag(a, v, "tsv or table");
                return 2;
            }
            format = v;
        } else if (!strcmp(a, "--server")) {
            mx_server = v;
        } else if (!strcmp(a, "--hint")) {
            mx_hint = v;
        } else if (!strcmp(a, "--client")) {
            mx_client = v;
        } else if (ngiven < 32) {
            given[ngiven].flag = a;
            given[ngiven].value = v;
            ngiven++;
        }
    }
    if (scenario == NULL) {
        fprintf(stderr, "backoff-sim: --scenario is missing: expected burst, contention, outage, "
                        "pacing, fairness, headers, capacity, room, down or matrix\n");
        return 2;
    }
    if (!strcmp(scenario, "matrix")) {
        char mxbuf[512];
        const char *mxpols[32];
        if (policy_arg != NULL)
            snprintf(mxbuf, sizeof(mxbuf), "%s", policy_arg);
        else /* every policy but none and aimd-000 */
            join_policies(mxbuf, sizeof mxbuf, ",", ",none,aimd-000,");
        int n = split_policies(mxbuf, mxpols, 32);
        if (n <= 0)
            return 2;
        for (int i = 0; i < ngiven; i++) {
            long l = 0;
            if (strcmp(given[i].flag, "--seed") != 0 ||
                parse_long("--seed", given[i].value, 0, 1000000000, &l) != 0) {
                fprintf(stderr,
                        "backoff-sim: %s is not a flag of the matrix: it takes --policy, --seed, "
                        "--server, --hint, --client\n",
                        given[i].flag);
                return 2;
            }
            p.seed = (uint64_t)l;
        }
        p.scenario = scenario;
        return sim_matrix(&p, mxpols, n, mx_server, mx_hint, mx_client);
    }
    run_fn fn = scenario_fn(scenario);
    if (fn == NULL) {
        bad_flag("--scenario", scenario,
                 "burst, contention, outage, pacing, fairness, headers, capacity, room, down "
                 "or matrix");
        return 2;
    }
    p.scenario = scenario;
    defaults(&p);
    for (int i = 0; i < ngiven; i++) {
        const char *f = given[i].flag, *v = given[i].value;
        long l = 0;
        int rc = 0;
        if (!strcmp(f, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0) {
                bad_flag(f, v, "an integer from 0 to 18446744073709551615");
                return 2;
            }
            p.seed = s;
        } else if (!strcmp(f, "--runs")) {
            rc = parse_long(f, v, 1, 10000, &l);
            p.runs = (int)l;
        } else if (!strcmp(f, "--ops")) {
            rc = parse_long(f, v, 1, 10000000, &l);
            p.ops = l;
        } else if (!strcmp(f, "--max-busy")) {
            rc = parse_long(f, v, 1, 1000000, &l);
            p.max_busy = (int)l;
        } else if (!strcmp(f, "--clients")) {
            rc = parse_long(f, v, 1, 100000, &l);
            p.clients = (int)l;
        } else if (!strcmp(f, "--service-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.service_ms);
        } else if (!strcmp(f, "--error-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.error_ms);
        } else if (!strcmp(f, "--travel-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.travel_ms);
        } else if (!strcmp(f, "--rate")) {
            rc = parse_num(f, v, 0.001, 1e7, &p.rate);
        } else if (!strcmp(f, "--duration-s")) {
            rc = parse_num(f, v, 1, 86400, &p.duration_s);
        } else if (!strcmp(f, "--outage-at-s")) {
            rc = parse_num(f, v, 0, 86400, &p.outage_at_s);
        } else if (!strcmp(f, "--outage-for-s")) {
            rc = parse_num(f, v, 0, 86400, &p.outage_for_s);
        } else if (!strcmp(f, "--timeout-ms")) {
            rc = parse_num(f, v, 1, 3600000, &p.timeout_ms);
        } else if (!strcmp(f, "--think-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.think_ms);
        } else if (!strcmp(f, "--backlog")) {
            rc = parse_long(f, v, 0, 100000000, &l);
            p.backlog = l;
        } else if (!strcmp(f, "--bucket-rate")) {
            rc = parse_num(f, v, 0.001, 1e7, &p.bucket_rate);
        } else if (!strcmp(f, "--bucket-burst")) {
            rc = parse_num(f, v, 1, 1e7, &p.bucket_burst);
        } else if (!strcmp(f, "--limiter")) {
            bool capacity = !strcmp(scenario, "capacity");
            if (strcmp(v, "bucket") != 0 && strcmp(v, capacity ? "cap" : "window") != 0) {
                bad_flag(f, v, capacity ? "cap or bucket" : "bucket or window");
                return 2;
            }
            p.limiter = strcmp(v, "bucket") == 0 ? SIM_LIMITER_BUCKET
                        : capacity              ? SIM_LIMITER_CAP
                                                : SIM_LIMITER_WINDOW;
        } else if (!strcmp(f, "--phase-s")) {
            rc = parse_num(f, v, 0, 86400, &p.phase_s);
        } else if (!strcmp(f, "--held")) {
            rc = parse_long(f, v, 0, 100000, &l);
            p.held = (int)l;
        } else if (!strcmp(f, "--held-s")) {
            rc = parse_num(f, v, 0.001, 86400, &p.held_s);
        } else if (!strcmp(f, "--dialect")) {
            p.dialect = rl_lookup(rl_dialect_names, RL_DIALECT_COUNT, v);
            if (p.dialect < 0) {
                bad_flag(f, v, RL_DIALECT_LIST);
                return 2;
            }
        } else if (!strcmp(f, "--retry-after-form")) {
            p.wait_form = rl_lookup(rl_wait_names, RL_WAIT_COUNT, v);
            if (p.wait_form < 0) {
                bad_flag(f, v, RL_WAIT_LIST);
                return 2;
            }
        } else if (!strcmp(f, "--reject-status")) {
            if (strcmp(v, "429") != 0 && strcmp(v, "403") != 0 && strcmp(v, "503") != 0) {
                bad_flag(f, v, "429, 403 or 503");
                return 2;
            }
            p.reject_status = atoi(v);
        } else if (!strcmp(f, "--window-requests")) {
            rc = parse_num(f, v, 1, 1e7, &p.window_requests);
        } else if (!strcmp(f, "--window-s")) {
            rc = parse_long(f, v, 1, 86400, &l);
            p.window_s = (double)l;
        } else if (!strcmp(f, "--net-mean-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.net_mean_ms);
        } else if (!strcmp(f, "--net-sd-ms")) {
            rc = parse_num(f, v, 0, 3600000, &p.net_sd_ms);
        } else if (!strcmp(f, "--program-retries")) {
            rc = parse_long(f, v, 0, 30, &l);
            p.program_retries = (int)l;
        } else {
            fprintf(stderr, "backoff-sim: %s is not a known flag: see --help\n", f);
            return 2;
        }
        if (rc != 0)
            return 2;
    }
    if (indep >= 0)
        p.independent = indep == 1;
    if (!strcmp(scenario, "capacity") && p.service_ms < 0)
        p.service_ms = p.limiter == SIM_LIMITER_CAP ? 100 : 10;
    if (!strcmp(scenario, "outage") && p.outage_at_s + p.outage_for_s >= p.duration_s) {
        fprintf(stderr,
                "backoff-sim: --duration-s \"%g\" is not valid: expected more than "
                "--outage-at-s + --outage-for-s (%g)\n",
                p.duration_s, p.outage_at_s + p.outage_for_s);
        return 2;
    }

    char polbuf[512];
    snprintf(polbuf, sizeof(polbuf), "%s",
             policy_arg ? policy_arg : (env_policy && *env_policy ? env_policy : "all"));
    const char *pols[32];
    int npol = split_policies(polbuf, pols, 32);
    if (npol <= 0)
        return 2;

    bool table = strcmp(format, "table") == 0;
    const char *const *extra = extra_cols(scenario);
    sim_result *res = calloc((size_t)npol, sizeof(*res));
    bo_config *cfgs = calloc((size_t)npol, sizeof(*cfgs));
    if (res == NULL || cfgs == NULL) {
        fprintf(stderr, "backoff-sim: out of memory\n");
        return 1;
    }
    for (int i = 0; i < npol; i++) {
        if (sim_load_cfg(pols[i], scenario, &cfgs[i]) != 0)
            return 2;
        if (run_policy(fn, &cfgs[i], &p, &res[i]) != 0) {
            fprintf(stderr, "backoff-sim: the %s simulation failed (out of memory)\n", pols[i]);
            return 1;
        }
    }

    /* Collect the cells, then print as TSV or as an aligned table. */
    const char *cols[40];
    int ncol = 0;
    for (int i = 0; common_cols[i]; i++)
        cols[ncol++] = common_cols[i];
    for (int i = 0; extra[i]; i++)
        cols[ncol++] = extra[i];
    char cell[33][40][48];
    int rows = npol + 1;
    for (int c = 0; c < ncol; c++)
        snprintf(cell[0][c], sizeof(cell[0][c]), "%s", cols[c]);
    for (int r = 0; r < npol; r++) {
        for (int c = 0; c < ncol; c++) {
            if (!strcmp(cols[c], "scenario"))
                snprintf(cell[r + 1][c], sizeof(cell[0][c]), "%s", scenario);
            else if (!strcmp(cols[c], "policy"))
                snprintf(cell[r + 1][c], sizeof(cell[0][c]), "%s", pols[r]);
            else
                fmt_value(cell[r + 1][c], sizeof(cell[0][c]), cols[c],
                          col_value(cols[c], &res[r], &p));
        }
    }
    if (!table) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < ncol; c++)
                printf("%s%s", cell[r][c], c + 1 < ncol ? "\t" : "\n");
    } else {
        char settings[512];
        settings_line(scenario, &p, settings, sizeof(settings));
        printf("== %s: %s\n   %s\n", scenario, settings, published(scenario));
        char fmtbuf[BO_ERR_LEN * 8];
        bo_config_format(&cfgs[0], fmtbuf, sizeof(fmtbuf));
        printf("   settings:");
        const char *keys[] = {"BACKOFF_MAX_ATTEMPTS=", "BACKOFF_BASE_MS=", "BACKOFF_CAP_MS=",
                              "BACKOFF_FACTOR=", "BACKOFF_JITTER=", "BACKOFF_WINDOW=",
                              "BACKOFF_WINDOW_MAX=", "BACKOFF_AIMD_MODE=", "BACKOFF_PACING=", NULL};
        for (char *line = strtok(fmtbuf, "\n"); line; line = strtok(NULL, "\n"))
            for (int k = 0; keys[k]; k++)
                if (!strncmp(line, keys[k], strlen(keys[k])))
                    printf(" %s", line + strlen("BACKOFF_"));
        printf(" aimd BETA=%.2f; aimd-000: PACING=0 BETA=0.9\n",
               cfgs[0].beta > 0 ? cfgs[0].beta : bo_window_default_beta());
        int width[40] = {0};
        for (int c = 1; c < ncol; c++)
            for (int r = 0; r < rows; r++) {
                int w = (int)strlen(cell[r][c]);
                if (w > width[c])
                    width[c] = w;
            }
        for (int r = 0; r < rows; r++) {
            for (int c = 1; c < ncol; c++) /* the scenario is in the title */
                printf(c == 1 ? "%-*s" : "  %*s", width[c], cell[r][c]);
            printf("\n");
        }
    }
    free(res);
    free(cfgs);
    return 0;
}
