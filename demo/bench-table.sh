#!/bin/sh
# Regenerate a results block of docs/RESULTS.md.
#   sh demo/bench-table.sh bench FILE.tsv   # from `make bench` output saved to a file
#   sh demo/bench-table.sh sim              # runs demo/sim-report.sh --markdown
# The block sits between "<!-- NAME:begin -->" and "<!-- NAME:end -->" in the
# results file; everything between the markers is replaced.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: bench-table.sh bench FILE.tsv | sim}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.new"' EXIT
case "$name" in
bench)
    file=${2:?usage: bench-table.sh bench FILE.tsv}
    # "#" lines become a quoted preamble; each scenario becomes one table with the
    # columns that have a value in it.
    awk -F'\t' '
        /^#/ { sub(/^# ?/, ""); print "> " $0; next }
        !hdr { for (i = 1; i <= NF; i++) h[i] = $i; n = NF; hdr = 1; next }
        { rows++; sc[rows] = $1; for (i = 1; i <= n; i++) v[rows, i] = $i
          if (!(($1) in seen)) { seen[$1] = 1; order[++ns] = $1 } }
        END {
            for (k = 1; k <= ns; k++) {
                s = order[k]; nc = 0
                for (i = 2; i <= n; i++) {
                    use = 0
                    for (r = 1; r <= rows; r++) if (sc[r] == s && v[r, i] != "-" && v[r, i] != "") use = 1
                    if (use) c[++nc] = i
                }
                printf "\n**%s**\n\n|", s
                for (j = 1; j <= nc; j++) printf " %s |", h[c[j]]
                printf "\n|"
                for (j = 1; j <= nc; j++) printf " --- |"
                printf "\n"
                for (r = 1; r <= rows; r++) if (sc[r] == s) {
                    printf "|"
                    for (j = 1; j <= nc; j++) printf " %s |", v[r, c[j]]
                    printf "\n"
                }
            }
        }' "$file" >"$tmp"
    ;;
sim)
    BUILD=${BUILD:-build} sh "$top/demo/sim-report.sh" --markdown >"$tmp"
    ;;
*)
    echo "bench-table.sh: unknown block \"$name\": expected bench or sim" >&2
    exit 2
    ;;
esac
grep -q "<!-- $name:begin -->" "$top/docs/RESULTS.md" || {
    echo "bench-table.sh: docs/RESULTS.md has no <!-- $name:begin --> marker" >&2
    exit 1
}
awk -v name="$name" -v f="$tmp" '
    $0 == "<!-- " name ":begin -->" { print; while ((getline l < f) > 0) print l; skip = 1; next }
    $0 == "<!-- " name ":end -->" { skip = 0 }
    !skip { print }' "$top/docs/RESULTS.md" >"$tmp.new"
cat "$tmp.new" >"$top/docs/RESULTS.md"
echo "docs/RESULTS.md: $name block regenerated"
