#!/bin/sh
# Write the man page backoff(1) to stdout: docs/backoff.1.in with its
# variable section and policy list made from the wrapper's own tables
# (`backoff --variables`, `backoff --help`), so the page cannot disagree
# with the program.
#   sh docs/man.sh BACKOFF_BINARY VERSION LIBDIR
set -eu
bo=$1 version=$2 libdir=$3
here=$(cd "$(dirname "$0")" && pwd)
vars=$(mktemp)
trap 'rm -f "$vars"' EXIT
# Markdown rows "| `NAME` | accepted | default | doc |" -> .TP entries
"$bo" --variables | awk -F' \\| ' 'NR > 2 {
    name = $1; sub(/^\| `/, "", name); sub(/`$/, "", name)
    acc = $2; def = $3; doc = $4; sub(/ \|$/, "", doc)
    gsub(/`/, "", def)
    gsub(/\\/, "\\\\", acc); gsub(/\\/, "\\\\", doc)
    gsub(/-/, "\\-", acc); gsub(/-/, "\\-", doc); gsub(/-/, "\\-", def)
    printf ".TP\n.B %s\n%s.\n.br\nAccepted: %s.  Default: %s.\n", name, doc, acc, def
}' >"$vars"
policies=$("$bo" --help |
    awk '/--policy POLICY/ { on = 1; next } on && /^  -n/ { exit } on { for (i = 1; i <= NF; i++) printf "%s%s", n++ ? ", " : "", $i }')
awk -v vars="$vars" -v version="$version" -v libdir="$libdir" -v policies="$policies" \
    -v date="$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d 2>/dev/null || date -u +%Y-%m-%d)" '
    /^@VARIABLES@$/ { while ((getline l < vars) > 0) print l; next }
    { gsub(/@VERSION@/, version); gsub(/@LIBDIR@/, libdir); gsub(/@DATE@/, date)
      gsub(/@POLICIES@/, policies); print }' "$here/backoff.1.in"
