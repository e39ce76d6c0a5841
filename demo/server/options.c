/*
 * demo/server/options.c: ratelimit-server's command line.  Every bad value is
 * reported in one line naming the flag, the value and what is accepted, and
 * the program then exits with status 2.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"
#include "../cli_parse.h"
#include "../rl_lines.h"

static const char usage[] =
    "usage: ratelimit-server [flags]\n"
    "A rate-limiting HTTP/1.1 test server on 127.0.0.1 (libmicrohttpd).\n"
    "\n"
    "  --port N             listen port, 0 picks a free one (default 0)\n"
    "  --threads N          event-loop threads (default 2)\n"
    "  --duration S         exit after S seconds (default: run until SIGTERM/SIGINT)\n"
    "concurrency cap:\n"
    "  --max-busy N         at most N requests hold a slot at once (default: no cap;\n"
    "                       0 rejects everything)\n"
    "  --service-ms MS      an admitted request holds its slot MS ms (default 0)\n"
    "  --error-ms MS        a rejected request holds a slot MS ms, then answers (default 0)\n"
    "  --reject-status S    429, 503 or 403 (default 429): the status of every\n"
    "                       limiter's rejections (cap, bucket, window; 403 with\n"
    "                       --ratelimit-headers x-ratelimit is GitHub's primary limit)\n"
    "  --retry-after S      Retry-After seconds on cap and outage rejections\n"
    "  --retry-after-form F how a rejection's wait is written: seconds (default:\n"
    "                       Retry-After: N), date (Retry-After: an IMF-fixdate, and\n"
    "                       every answer carries its Date), ms (retry-after-ms: N),\n"
    "                       ms-azure (x-ms-retry-after-ms: N) or none\n"
    "  --capacity LIST      max-busy over time: \"SEC:N,SEC:N,...\", seconds ascending\n"
    "token bucket:\n"
    "  --rate R --burst B   R tokens/s, B at most (default B = max(1, R)); when empty:\n"
    "                       the rejection status, waiting until the next token\n"
    "  --bucket-hints H     accurate (default: Retry-After as above), fixed\n"
    "                       (Retry-After: --retry-after, 1 if unset, whatever the\n"
    "                       state) or none (no Retry-After); accurate alone sends\n"
    "                       the quota headers of --ratelimit-headers\n"
    "fixed window (GitHub's form):\n"
    "  --window-requests N --window-s W\n"
    "                       N requests per window of W s, windows aligned to the\n"
    "                       epoch; past N: the rejection status, waiting until the\n"
    "                       window ends\n"
    "  --ratelimit-headers D\n"
    "                       the quota headers both limiters send on every answer:\n"
    "                       none (default); x-ratelimit: x-ratelimit-limit/-remaining/\n"
    "                       -reset (epoch seconds, GitHub); ratelimit: RateLimit-Limit/\n"
    "                       -Remaining/-Reset (seconds); draft: RateLimit-Policy:\n"
    "                       \"NAME\";q=N;w=W and RateLimit: \"NAME\";r=LEFT;t=SECONDS;\n"
    "                       x-rate-limit: x-rate-limit-* (epoch seconds, X); openai:\n"
    "                       x-ratelimit-{limit,remaining,reset}-{requests,tokens}\n"
    "                       (resets as durations: 850ms, 1.5s, 6m0s); discord:\n"
    "                       X-RateLimit-Limit/-Remaining, -Reset (epoch, 3 decimals),\n"
    "                       -Reset-After (seconds, 3 decimals), -Bucket; openai-s:\n"
    "                       openai's resets in whole seconds, rounded (1s, 2s)\n"
    "  --quota-spent S      every answer, success or rejection, carries the quota\n"
    "                       headers of --ratelimit-headers saying none of 60 is left\n"
    "                       until a reset S s from now (a number above 0, at most 31\n"
    "                       days), and nothing is refused for it: a server whose\n"
    "                       headers predict a refusal it never makes (with --max-busy 0\n"
    "                       --reject-status 403: GitHub's 403, reset S s ahead)\n"
    "latency model:\n"
    "  --latency-limit L --latency-factor F --latency-k K\n"
    "                       past L concurrent requests the hold time is\n"
    "                       service-ms x F^((c - L)/K) (defaults F 1.05, K 15)\n"
    "outage:\n"
    "  --outage-at T --outage-for D --outage-mode refuse|503|stall\n"
    "                       refuse closes the listener (connects get ECONNREFUSED) and\n"
    "                       reopens it on the same port; 503 answers 503; stall holds\n"
    "                       requests unanswered until the outage ends\n"
    "faults:\n"
    "  --delay-ms MS        every answer comes MS ms later (holds no slot); a GET of\n"
    "                       /item/N?hold_ms=MS comes MS ms later still (a long poll)\n"
    "  --post-delay-ms MS   POST/PUT answers come MS ms after the body was processed\n"
    "  --serve-dir DIR      GET/HEAD of any path but /item/N (and /status/NNN) answers\n"
    "                       the regular file at DIR/PATH (DIR/PATH/index.html for a\n"
    "                       PATH ending in /), or 404 (a git repository prepared with\n"
    "                       `git update-server-info` clones over it; a PEP 503 index\n"
    "                       serves pip: .html files go as text/html)\n"
    "  --corrupt-every N    test only: every Nth /item body has one byte altered\n"
    "  --fault-drop N       every Nth request is closed without any response\n"
    "  --fault-reset N      every Nth /item body is cut half way by a TCP reset (RST)\n"
    "  --fault-reset-post N every Nth POST or PATCH is processed (its answer stored under\n"
    "                       its Idempotency-Key), then its connection reset (RST) before\n"
    "                       any answer byte\n"
    "  --reject-body B      what a rejection's body says: text (default: \"rejected\")\n"
    "                       or s3 (S3's error XML, Code SlowDown, application/xml:\n"
    "                       what the AWS SDKs read as a throttle)\n"
    "  --retry-after-raw S  rejections carry \"Retry-After: S\" verbatim (absurd or\n"
    "                       garbage values; overrides --retry-after)\n"
    "  --idle-timeout S     close idle keep-alive connections after S s (default 30)\n"
    "  --close              every answer carries Connection: close and the connection\n"
    "                       ends after it (default: HTTP/1.1 keep-alive)\n"
    "  --gate               every request waits at a gate, before any limiter, while\n"
    "                       the gate is closed: it starts closed, SIGUSR1 opens it\n"
    "                       (the requests held go on as if they had all arrived at\n"
    "                       that instant: a bucket does not refill between them) and\n"
    "                       SIGUSR2 closes it again; stderr says \"gate: N held\" as\n"
    "                       each request is held, \"gate opened: N released\" and\n"
    "                       \"gate closed\" (for tests: every client inside its call\n"
    "                       before any goes on)\n"
    "idempotency (draft-ietf-httpapi-idempotency-key-header):\n"
    "  --idempotency        a request (any method) with an Idempotency-Key header is\n"
    "                       processed once per key: its answer is stored and replayed\n"
    "                       (with Idempotent-Replayed: true) to a repeat with the same key\n"
    "                       and the same method, path, query and body; 409 while the\n"
    "                       first is still being processed (--post-delay-ms, --service-ms),\n"
    "                       422 when the key comes with another request, 400 for an empty,\n"
    "                       repeated or over-255-byte key.  Rejections (429/503) and\n"
    "                       --fault-drop come before the key: nothing is stored\n"
    "  --idempotency-required\n"
    "                       also 400 for a POST or PATCH without a key (implies\n"
    "                       --idempotency)\n"
    "  --idempotency-keys N keys kept (default 4096); past N the oldest is dropped\n"
    "tls:\n"
    "  --tls-cert FILE --tls-key FILE\n"
    "                       speak https only on the port: FILE holds the PEM certificate\n"
    "                       (chain) and its private key (libmicrohttpd's TLS, GnuTLS)\n"
    "output:\n"
    "  --log FILE           CSV per request: t_ms,method,path,status,concurrency,latency_ms\n"
    "\n"
    "Content: GET /item/N[?size=BYTES] returns \"item=N;\" repeated to BYTES (default 64);\n"
    "POST, PUT or PATCH returns \"fnv1a64=HEX length=LEN\" of the received body and counts\n"
    "its X-Request-Id (a repeat processed again is a duplicate_post; one replayed under its\n"
    "Idempotency-Key is not processed); GET /status/NNN answers status NNN;\n"
    "any other path answers \"ok\". Rejections carry the body \"rejected\" (or --reject-body s3).\n"
    "The first stdout line is \"listening on 127.0.0.1:PORT\"; one stderr line per second;\n"
    "at exit a TSV summary on stdout (header row + one row): requests (answered),\n"
    "ok (2xx), rejected (the cap's, the bucket's or the window's rejections, a 503\n"
    "outage),\n"
    "max_concurrency (most requests in the server at once, held ones included),\n"
    "duplicate_posts (POSTs whose X-Request-Id was already processed), posts, puts,\n"
    "duplicate_puts, dropped (closed unanswered: client gone, refuse outage, exit, the\n"
    "fault flags), status_other (non-2xx answers that are not rejections: 400, 409, 422,\n"
    "/status/NNN), patches, duplicate_patches, idem_replays (answers replayed under their\n"
    "key), idem_conflicts (409: key in flight), idem_mismatches (422: key reused with\n"
    "another request), idem_bad (400: key missing where required, empty, repeated or too\n"
    "long), post_resets (--fault-reset-post resets).\n";

static int bad(const char *flag, const char *value, const char *expected)
{
    fprintf(stderr, "ratelimit-server: %s \"%s\" is not valid: expected %s\n", flag, value,
            expected);
    return 2;
}

/* Parses "SEC:N,SEC:N" with seconds ascending into cfg->capacity. */
static int parse_capacity(const char *s, struct bo_srv_config *cfg)
{
    char buf[1024];
    char *save = NULL;
    double last = -1;
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    cfg->ncapacity = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        double at;
        long n;
        if (!colon || cfg->ncapacity == BO_SRV_MAX_CAPACITY)
            return -1;
        *colon = '\0';
        if (cli_parse_double(tok, 0, 1e6, &at) != 0 || at <= last ||
            cli_parse_long(colon + 1, 0, 1000000, &n) != 0)
            return -1;
        last = at;
        cfg->capacity[cfg->ncapacity].at_ms = (uint64_t)(at * 1000.0);
        cfg->capacity[cfg->ncapacity].max_busy = n;
        cfg->ncapacity++;
    }
    return cfg->ncapacity > 0 ? 0 : -1;
}

/*
 * Fills cfg from argv (see server.h).  Flags take their value as the next
 * argument or after '='.
 */
int bo_srv_parse_args(int argc, char **argv, struct bo_srv_config *cfg)
{
    int have_burst = 0;
    memset(cfg, 0, sizeof *cfg);
    cfg->threads = 2;
    cfg->max_busy = -1;
    cfg->reject_status = 429;
    cfg->retry_after = -1;
    cfg->latency_factor = 1.05;
    cfg->latency_k = 15;
    cfg->idle_timeout_s = 30;
    cfg->idempotency_keys = 4096;
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *arg = argv[i];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0 || strlen(arg) >= sizeof name) {
            fprintf(stderr, "ratelimit-server: unknown argument \"%s\" (see --help)\n", arg);
            return 2;
        }
        if (eq) {
            memcpy(name, arg, (size_t)(eq - arg));
            name[eq - arg] = '\0';
            val = eq + 1;
        } else {
            strcpy(name, arg);
        }
        /* The flags that take no value. */
        if (strcmp(name, "--idempotency") == 0 || strcmp(name, "--idempotency-required") == 0) {
            if (eq)
                return bad(name, val, "no value (the flag alone turns it on)");
            cfg->idempotency = 1;
            if (strcmp(name, "--idempotency-required") == 0)
                cfg->idempotency_required = 1;
            continue;
        }
        if (strcmp(name, "--close") == 0 || strcmp(name, "--gate") == 0) {
            if (eq)
                return bad(name, val, "no value (the flag alone turns it on)");
            if (name[2] == 'c')
                cfg->close = 1;
            else
                cfg->gate = 1;
            continue;
        }
        if (!eq) {
            if (i + 1 >= argc) {
                fprintf(stderr, "ratelimit-server: %s needs a value (see --help)\n", name);
                return 2;
            }
            val = argv[++i];
        }
        long l;
        double d;
        if (strcmp(name, "--port") == 0) {
            if (cli_parse_long(val, 0, 65535, &l))
                return bad(name, val, "a port number from 0 to 65535");
            cfg->port = (int)l;
        } else if (strcmp(name, "--threads") == 0) {
            if (cli_parse_long(val, 1, 64, &l))
                return bad(name, val, "an integer from 1 to 64");
            cfg->threads = (int)l;
        } else if (strcmp(name, "--duration") == 0) {
            if (cli_parse_double(val, 0, 1e7, &d))
                return bad(name, val, "seconds, a number >= 0");
            cfg->duration_s = d;
        } else if (strcmp(name, "--max-busy") == 0) {
            if (cli_parse_long(val, 0, 1000000, &l))
                return bad(name, val, "an integer from 0 to 1000000");
            cfg->max_busy = l;
        } else if (strcmp(name, "--service-ms") == 0 || strcmp(name, "--error-ms") == 0 ||
                   strcmp(name, "--delay-ms") == 0 || strcmp(name, "--post-delay-ms") == 0) {
            if (cli_parse_long(val, 0, 3600000, &l))
                return bad(name, val, "milliseconds, an integer from 0 to 3600000");
            if (name[2] == 's')
                cfg->service_ms = l;
            else if (name[2] == 'e')
                cfg->error_ms = l;
            else if (name[2] == 'd')
                cfg->delay_ms = l;
            else
                cfg->post_delay_ms = l;
        } else if (strcmp(name, "--reject-status") == 0) {
            if (strcmp(val, "429") != 0 && strcmp(val, "503") != 0 && strcmp(val, "403") != 0)
                return bad(name, val, "429, 503 or 403");
            cfg->reject_status = atoi(val);
        } else if (strcmp(name, "--retry-after-form") == 0) {
            int f = rl_lookup(rl_wait_names, RL_WAIT_COUNT, val);
            if (f < 0)
                return bad(name, val, RL_WAIT_LIST);
            cfg->wait_form = f;
        } else if (strcmp(name, "--retry-after") == 0) {
            if (cli_parse_long(val, 0, 86400, &l))
                return bad(name, val, "seconds, an integer from 0 to 86400");
            cfg->retry_after = l;
        } else if (strcmp(name, "--rate") == 0) {
            if (cli_parse_double(val, 1e-6, 1e9, &d))
                return bad(name, val, "requests per second, a number > 0");
            cfg->rate = d;
        } else if (strcmp(name, "--burst") == 0) {
            if (cli_parse_double(val, 1, 1e9, &d))
                return bad(name, val, "a number >= 1");
            cfg->burst = d;
            have_burst = 1;
        } else if (strcmp(name, "--window-requests") == 0) {
            if (cli_parse_long(val, 1, 1000000000, &l))
                return bad(name, val, "an integer from 1 to 1000000000");
            cfg->window_requests = l;
        } else if (strcmp(name, "--window-s") == 0) {
            if (cli_parse_long(val, 1, 86400, &l))
                return bad(name, val, "seconds, an integer from 1 to 86400");
            cfg->window_s = l;
        } else if (strcmp(name, "--ratelimit-headers") == 0) {
            int dialect = rl_lookup(rl_dialect_names, RL_DIALECT_COUNT, val);
            if (dialect < 0)
                return bad(name, val, RL_DIALECT_LIST);
            cfg->rl_dialect = dialect;
        } else if (strcmp(name, "--quota-spent") == 0) {
            if (cli_parse_double(val, 1e-3, 31.0 * 86400, &d))
                return bad(name, val, "seconds, a number above 0 and at most 2678400 (31 days)");
            cfg->quota_spent_s = d;
        } else if (strcmp(name, "--bucket-hints") == 0) {
            if (strcmp(val, "accurate") == 0)
                cfg->bucket_hints = BO_HINTS_ACCURATE;
            else if (strcmp(val, "fixed") == 0)
                cfg->bucket_hints = BO_HINTS_FIXED;
            else if (strcmp(val, "none") == 0)
                cfg->bucket_hints = BO_HINTS_NONE;
            else
                return bad(name, val, "accurate, fixed or none");
        } else if (strcmp(name, "--latency-limit") == 0) {
            if (cli_parse_long(val, 1, 1000000, &l))
                return bad(name, val, "an integer from 1 to 1000000");
            cfg->latency_limit = l;
        } else if (strcmp(name, "--latency-factor") == 0) {
            if (cli_parse_double(val, 1, 100, &d))
                return bad(name, val, "a number from 1 to 100");
            cfg->latency_factor = d;
        } else if (strcmp(name, "--latency-k") == 0) {
            if (cli_parse_double(val, 1e-3, 1e6, &d))
                return bad(name, val, "a number > 0");
            cfg->latency_k = d;
        } else if (strcmp(name, "--capacity") == 0) {
            if (parse_capacity(val, cfg))
                return bad(name, val, "\"SEC:N,SEC:N,...\" with seconds ascending");
        } else if (strcmp(name, "--outage-at") == 0 || strcmp(name, "--outage-for") == 0) {
            if (cli_parse_double(val, 0, 1e6, &d))
                return bad(name, val, "seconds, a number >= 0");
            if (name[9] == 'a')
                cfg->outage_at_s = d;
            else
                cfg->outage_for_s = d;
        } else if (strcmp(name, "--outage-mode") == 0) {
            if (strcmp(val, "refuse") == 0)
                cfg->outage_mode = BO_OUTAGE_REFUSE;
            else if (strcmp(val, "503") == 0)
                cfg->outage_mode = BO_OUTAGE_503;
            else if (strcmp(val, "stall") == 0)
                cfg->outage_mode = BO_OUTAGE_STALL;
            else
                return bad(name, val, "refuse, 503 or stall");
        } else if (strcmp(name, "--serve-dir") == 0) {
            struct stat st;
            if (val[0] == '\0' || stat(val, &st) != 0 || !S_ISDIR(st.st_mode))
                return bad(name, val, "an existing directory");
            cfg->serve_dir = val;
        } else if (strcmp(name, "--corrupt-every") == 0) {
            if (cli_parse_long(val, 1, 1000000000, &l))
                return bad(name, val, "an integer >= 1");
            cfg->corrupt_every = l;
        } else if (strcmp(name, "--fault-drop") == 0 || strcmp(name, "--fault-reset") == 0) {
            if (cli_parse_long(val, 1, 1000000000, &l))
                return bad(name, val, "an integer >= 1");
            if (name[8] == 'd')
                cfg->fault_drop_every = l;
            else
                cfg->fault_reset_every = l;
        } else if (strcmp(name, "--fault-reset-post") == 0) {
            if (cli_parse_long(val, 1, 1000000000, &l))
                return bad(name, val, "an integer >= 1");
            cfg->fault_reset_post_every = l;
        } else if (strcmp(name, "--idempotency-keys") == 0) {
            if (cli_parse_long(val, 1, 1000000, &l))
                return bad(name, val, "an integer from 1 to 1000000");
            cfg->idempotency_keys = l;
        } else if (strcmp(name, "--reject-body") == 0) {
            if (strcmp(val, "text") != 0 && strcmp(val, "s3") != 0)
                return bad(name, val, "text or s3");
            cfg->reject_s3 = strcmp(val, "s3") == 0;
        } else if (strcmp(name, "--retry-after-raw") == 0) {
            /* Any bytes but the line ends that would split the header. */
            if (strpbrk(val, "\r\n"))
                return bad(name, val, "a header value without CR or LF");
            cfg->retry_after_raw = val;
        } else if (strcmp(name, "--tls-cert") == 0 || strcmp(name, "--tls-key") == 0) {
            if (val[0] == '\0' || access(val, R_OK) != 0)
                return bad(name, val, "a readable PEM file");
            if (name[6] == 'c')
                cfg->tls_cert = val;
            else
                cfg->tls_key = val;
        } else if (strcmp(name, "--log") == 0) {
            if (val[0] == '\0')
                return bad(name, val, "a file path");
            cfg->log_path = val;
        } else if (strcmp(name, "--idle-timeout") == 0) {
            if (cli_parse_long(val, 1, 86400, &l))
                return bad(name, val, "seconds, an integer from 1 to 86400");
            cfg->idle_timeout_s = l;
        } else {
            fprintf(stderr, "ratelimit-server: unknown option \"%s\" (see --help)\n", name);
            return 2;
        }
    }
    if (cfg->rate > 0 && !have_burst)
        cfg->burst = cfg->rate < 1 ? 1 : cfg->rate;
    if (have_burst && cfg->rate <= 0) {
        fprintf(stderr, "ratelimit-server: --burst needs --rate\n");
        return 2;
    }
    if ((cfg->window_requests > 0) != (cfg->window_s > 0)) {
        fprintf(stderr, "ratelimit-server: --window-requests and --window-s go together\n");
        return 2;
    }
    if (cfg->quota_spent_s > 0 && cfg->rl_dialect == RL_DIALECT_NONE) {
        fprintf(stderr, "ratelimit-server: --quota-spent needs --ratelimit-headers DIALECT\n");
        return 2;
    }
    if ((cfg->tls_cert != NULL) != (cfg->tls_key != NULL)) {
        fprintf(stderr, "ratelimit-server: --tls-cert and --tls-key go together\n");
        return 2;
    }
    if (cfg->outage_for_s > 0 && cfg->outage_mode == BO_OUTAGE_NONE) {
        fprintf(stderr, "ratelimit-server: --outage-for needs --outage-mode refuse|503|stall\n");
        return 2;
    }
    if (cfg->outage_mode != BO_OUTAGE_NONE && cfg->outage_for_s <= 0) {
        fprintf(stderr, "ratelimit-server: --outage-mode needs --outage-for SECONDS > 0\n");
        return 2;
    }
    return 0;
}
