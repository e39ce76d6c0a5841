#!/bin/sh
# Real programs, part 2: a selection of python3's own regression
# tests that exercise fork, wait, signals, sockets and selectors (Debian's
# libpython3.11-testsuite), plain and under `backoff --` (which preloads the
# library into python3 and every worker it forks), on its own time budget.
# Each must pass the same way; see test_real_programs.sh for the runner.
# test_socket runs without its VSOCK cases, which hang on some virtual
# machines even plain.  REAL_PYTESTS overrides the selection.
set -eu
here=$(dirname "$0")
python3 -c 'import test.libregrtest' 2>/dev/null || {
    echo "FAIL: python3's test suite is missing (Debian: libpython3.11-testsuite)" >&2
    exit 1
}
REAL_PROGRAMS=python-regrtest REAL_VARIANTS=wrapper exec sh "$here/test_real_programs.sh"
