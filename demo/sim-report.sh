#!/bin/sh
# `make sim`: each article's comparison, reproduced by backoff-sim in virtual
# time, as readable tables (a benchmark, not a test: the regression checks
# live in tests/integration/test_sim_articles.sh).  With --markdown, the same
# figures as markdown tables for docs/RESULTS.md.  Seed 1 throughout.
set -eu
BUILD=${BUILD:-build}
SIM="$BUILD/backoff-sim"
[ -x "$SIM" ] || { echo "backoff: $SIM is missing: run make $SIM" >&2; exit 1; }
md=0
[ "${1:-}" = "--markdown" ] && md=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-sim-report.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

# The BACKOFF_* settings of the caller still apply (that is the point of the
# simulator); say so when there are any.
if env | grep -q '^BACKOFF_'; then
    echo "note: BACKOFF_* variables set in this environment change the results:"
    env | grep '^BACKOFF_' | sed 's/^/  /'
fi

JITTERED="none,exponential,full-jitter,equal-jitter,decorrelated-jitter"

# tsv_to_md FILE COLUMNS...: a markdown table of the chosen columns.
tsv_to_md() {
    f=$1; shift
    awk -F'\t' -v cols="$*" '
        BEGIN { n = split(cols, want, " ") }
        NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i
                  line = "|"; sep = "|"
                  for (k = 1; k <= n; k++) { line = line " " want[k] " |"; sep = sep " --- |" }
                  print line; print sep; next }
        { line = "|"; for (k = 1; k <= n; k++) line = line " " $(idx[want[k]]) " |"; print line }' "$f"
}

# contention_pivot: one row per N, calls and completion time per strategy.
contention_pivot() {
    awk -F'\t' -v md="$md" '
        FNR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
        { n = $(idx["clients"]); p = $2; if (FILENAME ~ /shared/) p = p " (shared)"
          if (!(p in seenp)) { seenp[p] = 1; pols[++np] = p }
          if (!(n in seenn)) { seenn[n] = 1; ns[++nn] = n }
          cell[n, p] = sprintf("%.0f / %.2fs", $(idx["calls"]), $(idx["completion_s"])) }
        END {
            if (md) {
                line = "| N |"; sep = "| --- |"
                for (k = 1; k <= np; k++) { line = line " " pols[k] " |"; sep = sep " --- |" }
                print line; print sep
                for (j = 1; j <= nn; j++) { line = "| " ns[j] " |"
                    for (k = 1; k <= np; k++) line = line " " cell[ns[j], pols[k]] " |"
                    print line }
            } else {
                printf "%5s", "N"; for (k = 1; k <= np; k++) printf "  %20s", pols[k]; printf "\n"
                for (j = 1; j <= nn; j++) { printf "%5s", ns[j]
                    for (k = 1; k <= np; k++) printf "  %20s", cell[ns[j], pols[k]]; printf "\n" }
            }
        }' "$@"
}

section() {
    echo
    if [ "$md" = 1 ]; then echo "### $1"; else echo "######## $1"; fi
    echo
}

# --- 000: burst -------------------------------------------------------------
section "burst (000): 2000 ops at 1000/s, max_busy 50, 500 ms success, 50 ms rejection"
if [ "$md" = 1 ]; then
    "$SIM" --scenario burst --policy all >"$TMP/burst.tsv"
    echo "000 published: exponential 48 s / 17,392 attempts; AIMD 25 s / 2,085; optimum 20 s."
    echo
    tsv_to_md "$TMP/burst.tsv" policy attempts wasted_pct completion_s ratio p50_s p99_s
else
    "$SIM" --scenario burst --policy all --format table
fi

# --- 001: contention ---------------------------------------------------------
section "contention (001): calls / completion time vs N, mean of 100 runs"
for n in 10 25 50 75 100; do
    "$SIM" --scenario contention --independent --clients "$n" --policy "$JITTERED" >"$TMP/cont_ind_$n.tsv"
    "$SIM" --scenario contention --clients "$n" --policy aws-adaptive,aimd-000,aimd >"$TMP/cont_shared_$n.tsv"
done
echo "independent clients (the article's strategies), then aws-adaptive and aimd with the"
echo "clients as threads sharing one destination (as under the shim); a stale write is a throttle."
echo
contention_pivot "$TMP"/cont_ind_10.tsv "$TMP"/cont_ind_25.tsv "$TMP"/cont_ind_50.tsv \
    "$TMP"/cont_ind_75.tsv "$TMP"/cont_ind_100.tsv "$TMP"/cont_shared_10.tsv \
    "$TMP"/cont_shared_25.tsv "$TMP"/cont_shared_50.tsv "$TMP"/cont_shared_75.tsv \
    "$TMP"/cont_shared_100.tsv

# --- 003: outage ---------------------------------------------------------------
section "outage (003): 1000 clients, server stopped 10 s at t=20 s, run to t=50 s"
"$SIM" --scenario outage --independent --policy fixed,gaussian-jitter,full-jitter >"$TMP/out_ind.tsv"
"$SIM" --scenario outage --policy aimd-000,aimd,responsive,aws-adaptive >"$TMP/out_shared.tsv"
echo "independent: fixed (100 ms) and 003's exponential (gaussian-jitter, factor e, jitter 0.1);"
echo "shared state (threads of one process): aimd, responsive, aws-adaptive.  recovery_s: from the server's return."
echo
if [ "$md" = 1 ]; then
    tail -n +2 "$TMP/out_shared.tsv" >>"$TMP/out_ind.tsv"
    tsv_to_md "$TMP/out_ind.tsv" policy recovery_s down_attempts_per_s peak_concurrency pre_rate post_rate attempts
else
    { cat "$TMP/out_ind.tsv"; tail -n +2 "$TMP/out_shared.tsv"; } |
        awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i }
            { printf "%-16s %10s %20s %17s %9s %10s %9s\n", $2, $(idx["recovery_s"]),
              $(idx["down_attempts_per_s"]), $(idx["peak_concurrency"]), $(idx["pre_rate"]),
              $(idx["post_rate"]), $(idx["attempts"]) }'
fi

# --- 002: pacing -----------------------------------------------------------------
section "pacing (002): one sequential client, 600 requests, token bucket 20/s burst 20"
if [ "$md" = 1 ]; then
    "$SIM" --scenario pacing --policy all >"$TMP/pacing.tsv"
    tsv_to_md "$TMP/pacing.tsv" policy attempts throttled throttled_pct completion_s ratio
else
    "$SIM" --scenario pacing --policy all --format table
fi

# --- fairness ------------------------------------------------------------------------
section "fairness: 4 independent clients, 500 ops each, one max_busy=50 server"
if [ "$md" = 1 ]; then
    "$SIM" --scenario fairness --policy full-jitter,decorrelated-jitter,thain,aws-adaptive,aimd-000,aimd >"$TMP/fair.tsv"
    tsv_to_md "$TMP/fair.tsv" policy jain completion_s ratio wasted_pct
else
    "$SIM" --scenario fairness --policy full-jitter,decorrelated-jitter,thain,aws-adaptive,aimd-000,aimd --format table
fi
