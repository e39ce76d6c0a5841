/*
 * backoff: run a command with libbackoff.so preloaded.
 *
 *   backoff [-p POLICY] [-n ATTEMPTS] [--stats FILE] [--trace FILE] [-v]
 *           [--check] [--print-config] [--variables] [--help] [--version]
 *           [--] CMD [ARGS]
 *   backoff --status [--format=table|openmetrics|prometheus|json] | --reset
 *
 * Options become BACKOFF_* variables, the whole configuration is checked
 * with the same parser the library uses (exit 2 on a bad value), the
 * absolute path of the library goes in front of any LD_PRELOAD, and the
 * command is exec'd, so its exit status is ours (127: not found, 126: not
 * executable).
 *
 * `backoff --check CMD` also tells, before CMD runs, which of CMD's HTTP
 * paths the library will reach (check.c).
 *
 * `backoff --status` prints what this user's processes share about each
 * destination (BACKOFF_SHARE=host, dest/share.c), one line each, or with
 * --format its counts and gauges as monitoring reads them (dest/metrics.c);
 * `backoff --reset` makes every destination start fresh.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bo_config.h"
#include "dest/metrics.h"
#include "dest/share_status.h"
#include "wrapper/check.h"

#define LIB_NAME "libbackoff.so"

static void usage(FILE *out)
{
    size_t col = 0;

    fputs("usage: backoff [-p POLICY] [-n ATTEMPTS] [--stats FILE] [--trace FILE] [-v]\n"
          "               [--check] [--print-config] [--variables] [--help] [--version]\n"
          "               [--] CMD [ARGS]\n"
          "       backoff --status [--format=FORMAT] | --reset\n"
          "\n"
          "Runs CMD with libbackoff.so preloaded: its libcurl transfers and blocking\n"
          "connect() calls are retried politely under the chosen policy.\n"
          "\n"
          "  -p, --policy POLICY   BACKOFF_POLICY, one of (default aimd):",
          out);
    /* the policy list comes from the library's own table, wrapped at 80 columns */
    col = 80;
    for (int k = 0; k < BO_POLICY_COUNT; k++) {
        const char *name = bo_policy_name((bo_policy_kind)k);
        if (col + 1 + strlen(name) > 80) {
            fputs("\n                       ", out);
            col = 23;
        }
        col += (size_t)fprintf(out, " %s", name);
    }
    fputs("\n", out);
    fputs("  -n, --attempts N      BACKOFF_MAX_ATTEMPTS (first attempt included; 0: no limit)\n"
          "      --stats FILE      BACKOFF_STATS: JSON stats at exit (FILE or 'stderr')\n"
          "      --trace FILE      BACKOFF_TRACE: one CSV row per attempt\n"
          "  -v, --verbose         BACKOFF_VERBOSE=1: one stderr line per retry\n"
          "      --check [CMD]     validate the BACKOFF_* configuration; exit 0 or 2;\n"
          "                        with CMD, also tell which of CMD's HTTP paths will be\n"
          "                        reached: libcurl (or the helper CMD runs), OpenSSL,\n"
          "                        GnuTLS, plain sockets (exit 0: one will, or may when CMD\n"
          "                        loads it at run time; 1: none will)\n"
          "      --print-config    print the effective configuration as BACKOFF_X=value\n"
          "                        lines (they can be fed back as the environment) and exit\n"
          "      --variables       print the table of every BACKOFF_* variable and exit\n"
          "      --status          print what this user's processes share about each\n"
          "                        destination (BACKOFF_SHARE=host): destination, window,\n"
          "                        pace, in flight, processes, last throttle, last success,\n"
          "                        processes holding an attempt in flight, processes waiting\n"
          "      --format FORMAT   with --status: table (the default), openmetrics,\n"
          "                        prometheus (node_exporter's textfile format) or json:\n"
          "                        every destination's counters and gauges\n"
          "      --reset           make every shared destination start fresh\n"
          "      --help, --version\n"
          "\n"
          "Every other BACKOFF_* variable of the environment applies as well.\n",
          out);
}

/*
 * Every variable as a Markdown table, from the library's variable table:
 * the README's table is this output (tests/integration/test_shim_config.sh
 * compares them).
 */
static void print_variables(void)
{
    size_t n = 0;
    const bo_var *v = bo_config_vars(&n);
    char what[512];

    puts("| Variable | Accepted | Default | What it does |");
    puts("| --- | --- | --- | --- |");
    for (size_t i = 0; i < n; i++) {
        bo_var_accepted(&v[i], what, sizeof what);
        bool literal = strcmp(v[i].deflt, v[i].default_shown) == 0;
        printf("| `%s` | %s | %s%s%s | %s |\n", v[i].name, what, literal ? "`" : "",
               v[i].default_shown, literal ? "`" : "", v[i].doc);
    }
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

/* Set a path variable, made absolute so that it survives a chdir. */
static int set_path_var(const char *name, const char *value)
{
    char cwd[PATH_MAX], buf[PATH_MAX * 2];

    if (value[0] == '/' || value[0] == '\0' || strcmp(value, "stderr") == 0 ||
        getcwd(cwd, sizeof cwd) == NULL)
        return setenv(name, value, 1);
    if (snprintf(buf, sizeof buf, "%s/%s", cwd, value) >= (int)sizeof buf)
        return setenv(name, value, 1);
    return setenv(name, buf, 1);
}

/*
 * Find libbackoff.so from the wrapper's own location (never the current
 * directory): next to it (the build tree), or $PREFIX/lib/backoff/ for
 * $PREFIX/bin/backoff (the installed layout).  Writes an absolute path.
 */
static int find_library(char *out, size_t outlen)
{
    char self[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    static const char *const rel[] = {"/" LIB_NAME, "/../lib/backoff/" LIB_NAME};

    if (n <= 0)
        return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s%s", self, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL && strlen(out) < outlen)
            return 0;
    }
    return -1;
}

/* LD_PRELOAD = library, then whatever was there already. */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    char *v = NULL;
    int rc;

    if (old == NULL || old[0] == '\0')
        return setenv("LD_PRELOAD", lib, 1);
    if (asprintf(&v, "%s %s", lib, old) < 0)
        return -1;
    rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

int main(int argc, char **argv)
{
    enum { OPT_STATS = 256, OPT_TRACE, OPT_CHECK, OPT_PRINT, OPT_VARIABLES, OPT_HELP, OPT_VERSION,
           OPT_STATUS, OPT_RESET, OPT_FORMAT };
    static const struct option opts[] = {
        {"policy", required_argument, NULL, 'p'},
        {"attempts", required_argument, NULL, 'n'},
        {"stats", required_argument, NULL, OPT_STATS},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"verbose", no_argument, NULL, 'v'},
        {"check", no_argument, NULL, OPT_CHECK},
        {"print-config", no_argument, NULL, OPT_PRINT},
        {"variables", no_argument, NULL, OPT_VARIABLES},
        {"status", no_argument, NULL, OPT_STATUS},
        {"reset", no_argument, NULL, OPT_RESET},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    bool check = false, print = false, status = false, reset = false;
    const char *format = NULL;
    bo_metrics_format fmt = BO_METRICS_TABLE;
    char err[BO_ERR_LEN], lib[PATH_MAX];
    bo_config cfg;
    int c;

    while ((c = getopt_long(argc, argv, "+p:n:v", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            setenv("BACKOFF_POLICY", optarg, 1);
            break;
        case 'n':
            setenv("BACKOFF_MAX_ATTEMPTS", optarg, 1);
            break;
        case OPT_STATS:
            set_path_var("BACKOFF_STATS", optarg);
            break;
        case OPT_TRACE:
            set_path_var("BACKOFF_TRACE", optarg);
            break;
        case 'v':
            setenv("BACKOFF_VERBOSE", "1", 1);
            break;
        case OPT_CHECK:
            check = true;
            break;
        case OPT_PRINT:
            print = true;
            break;
        case OPT_VARIABLES:
            print_variables();
            return 0;
        case OPT_STATUS:
            status = true;
            break;
        case OPT_RESET:
            reset = true;
            break;
        case OPT_FORMAT:
            format = optarg;
            if (bo_metrics_format_named(optarg, &fmt) != 0) {
                fprintf(stderr, "backoff: --format=\"%s\" is not valid: expected %s\n", optarg,
                        BO_METRICS_FORMATS);
                return 2;
            }
            break;
        case OPT_HELP:
            usage(stdout);
            return 0;
        case OPT_VERSION:
            printf("backoff %s\n", BO_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (bo_config_load(&cfg, env_get, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (check)
        return optind < argc ? bo_check_program(argv[optind]) : 0;
    if (reset)
        return bo_share_reset(stdout, &cfg);
    if (format != NULL && !status) {
        fprintf(stderr, "backoff: --format=\"%s\" goes with --status: expected backoff --status "
                        "--format=%s\n",
                format, format);
        return 2;
    }
    if (status)
        return bo_metrics_status(stdout, stderr, fmt);
    if (print) {
        size_t need = bo_config_format(&cfg, NULL, 0) + 1;
        char *buf = malloc(need);
        if (buf == NULL)
            return 1;
        bo_config_format(&cfg, buf, need);
        fputs(buf, stdout);
        free(buf);
        return 0;
    }
    if (optind >= argc) {
        fprintf(stderr, "backoff: no command given: expected backoff [OPTIONS] [--] CMD [ARGS]\n");
        usage(stderr);
        return 2;
    }
    if (find_library(lib, sizeof lib) != 0) {
        fprintf(stderr,
                "backoff: cannot find %s next to the backoff command or in ../lib/backoff/: "
                "reinstall with make install\n",
                LIB_NAME);
        return 2;
    }
    if (set_preload(lib) != 0) {
        fprintf(stderr, "backoff: cannot set LD_PRELOAD: %s\n", strerror(errno));
        return 2;
    }
    execvp(argv[optind], argv + optind);
    int e = errno;
    fprintf(stderr, "backoff: cannot run %s: %s\n", argv[optind], strerror(e));
    return e == ENOENT || e == ENOTDIR ? 127 : 126;
}
