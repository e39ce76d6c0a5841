#!/bin/sh
# make lint: the rules of docs/STYLE.md that a machine can check, over every
# C file in git (curl's checksrc does the same for curl).  One line per
# violation, FILE:LINE: what; exit status 1 when there is any.
#
#   - no tab, no trailing white space, at most 100 columns (tables between
#     clang-format off/on comments excepted);
#   - every file opens with a block comment saying what it is;
#   - every header has an include guard;
#   - policies/ stays pure: no clock, sleep, socket, environment, printing,
#     allocation or threads (time and randomness are passed in);
#   - enum constants carry the module's prefix, not a one-letter one (M_GET);
#   - the shim's files stay small enough to read whole: no .c in shim/ over
#     700 lines, no header over 200.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
# outside a git checkout (a tarball): the sources, without the build trees
[ -n "$files" ] || files=$(find policies shim demo tests -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "lint: no C files found under $top" >&2; exit 2; }
out=$(
    # shellcheck disable=SC2086
    awk '
        FNR == 1 && $0 !~ /^\/\*/ { printf "%s:1: the file does not open with a block comment\n", FILENAME }
        /\t/ { printf "%s:%d: a tab\n", FILENAME, FNR }
        /[ \t]+$/ { printf "%s:%d: trailing white space\n", FILENAME, FNR }
        /clang-format off/ { table = 1 }
        /clang-format on/ { table = 0 }
        FNR == 1 { table = 0 }
        length($0) > 100 && !table { printf "%s:%d: %d columns (at most 100)\n", FILENAME, FNR, length($0) }
/^(typedef )?enum[^{]*\{ *[A-Z]_[A-Z]/ { printf "%s:%d: enum constants with a one-letter prefix (name the module)\n", FILENAME, FNR }
    ' $files
    for f in $(echo "$files" | grep '^shim/.*\.[ch]$'); do
        n=$(wc -l <"$f")
        case $f in
        *.c) [ "$n" -le 700 ] || echo "$f:$n: $n lines (a .c in shim/ at most 700: split it along its sections)" ;;
        *.h) [ "$n" -le 200 ] || echo "$f:$n: $n lines (a header in shim/ at most 200)" ;;
        esac
    done
    for h in $(echo "$files" | grep '\.h$'); do
        grep -q '^#ifndef [A-Z0-9_]*_H$' "$h" || echo "$h:1: no include guard (#ifndef NAME_H)"
    done
    # policies/: code lines only (block comments and their continuation lines skipped)
    for f in $(echo "$files" | grep '^policies/'); do
        awk '
            /\/\*/ { c = 1 }
            { line = $0; if (c) { if (line ~ /\*\//) { sub(/.*\*\//, "", line); c = 0 } else next } }
            { gsub(/"([^"\\]|\\.)*"/, "\"\"", line) }
            line ~ /(^|[^_a-z])(clock_gettime|gettimeofday|time|sleep|usleep|nanosleep|socket|connect|getenv|rand|srand|malloc|calloc|realloc|printf|fprintf|puts|pthread_[a-z_]+)[ ]*\(/ {
                printf "%s:%d: policies/ stays pure (no clock, sleep, socket, environment, allocation, printing or threads): %s\n", FILENAME, FNR, line }
        ' "$f"
    done
)
if [ -n "$out" ]; then
    echo "$out"
    echo "lint: $(echo "$out" | wc -l) problem(s)" >&2
    exit 1
fi
echo "lint: $(echo "$files" | wc -l) C files clean"
