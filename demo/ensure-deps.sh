#!/bin/sh
# Make sure the Debian packages that `make test` (argument: test),
# `make demo`/`make bench` (argument: demo) or the peers bench (argument:
# peers) need are installed.  As root (or
# with password-less sudo) it installs what is missing through apt-get;
# otherwise it stops and prints the exact apt-get line to run.
set -eu
what=${1:-test}
lean=""
pkgs="gcc make pkg-config libc6-dev libcurl4-openssl-dev check libmicrohttpd-dev libhiredis-dev redis-server curl python3 python3-pycurl procps"
if [ "$what" = test ]; then
    # The real programs the tests run under the library: PHP (curl.so is
    # loaded RTLD_DEEPBIND), git, perl, the GnuTLS libcurl beside the OpenSSL
    # one, python3's own regression tests (the package of the python3
    # that is installed; bookworm's when there is none yet), and the openssl
    # command that makes the TLS tests' certificates.
    pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.11)
    pkgs="$pkgs php-cli php-curl git perl libcurl3-gnutls libpython$pyver-testsuite openssl"
    # The HTTP clients without libcurl that the http room's tests run.
    pkgs="$pkgs python3-requests python3-pip httpie ruby libwww-perl liblwp-protocol-https-perl wget"
    # PyGithub, on requests: GitHub's quota 403 (test_http_clients).
    pkgs="$pkgs python3-github"
    # The programs the http room must never harm (test_http_harm): an
    # asyncio client, Node, nginx as a reverse proxy, nc's half-close.
    pkgs="$pkgs python3-aiohttp nodejs nginx-light netcat-openbsd"
    # R's curl package drives every request through a multi handle; R's
    # recommends (compilers, TeX, X11: some 670 packages) are not needed.
    # test_metrics reads the metrics with promtool (in prometheus), the
    # OpenMetrics parser of python3-prometheus-client and a real
    # node_exporter; their recommends (node_exporter's collectors: ipmitool,
    # smartmontools, nvme-cli...: 22 packages, 11 MB) are not needed either.
    lean="r-cran-curl prometheus prometheus-node-exporter python3-prometheus-client"
fi
if [ "$what" = demo ]; then
    pkgs="$pkgs gnuplot-nox"
fi
if [ "$what" = peers ]; then
    # The peers bench (demo/bench-peers.sh): the retry tools of Python and the
    # commands, and Node for the npm peers (npm beside a Node that has none:
    # Debian's nodejs ships without it).
    pkgs="$pkgs python3-requests python3-urllib3 python3-tenacity python3-botocore wget nodejs"
    command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=""
for p in $pkgs; do
    installed "$p" || missing="$missing $p"
done
missing_lean=""
for p in $lean; do
    installed "$p" || missing_lean="$missing_lean $p"
done
[ -z "$missing$missing_lean" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "backoff: missing packages:$missing (no apt-get here: install them with your package manager)" >&2
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
else
    line="sudo apt-get update"
    [ -z "$missing" ] || line="$line && sudo apt-get install -y$missing"
    [ -z "$missing_lean" ] || line="$line && sudo apt-get install -y --no-install-recommends$missing_lean"
    echo "backoff: missing Debian packages; run: $line" >&2
    exit 1
fi
# One line saying what is installed; apt's own output goes to a log file,
# shown (its end) only when apt fails.  A package manager busy with
# another apt or dpkg (unattended upgrades on a new machine) is waited for,
# a few minutes at most, with one line saying so (demo/apt-step.sh).
APT_LOG=$(mktemp "${TMPDIR:-/tmp}/backoff-apt.XXXXXX.log")
APT_WHO=backoff
. "$(dirname "$0")/apt-step.sh"
echo "backoff: installing missing Debian packages:$missing$missing_lean (apt log: $APT_LOG)" >&2
export DEBIAN_FRONTEND=noninteractive
apt_step update
# shellcheck disable=SC2086
[ -z "$missing" ] || apt_step install -y $missing
# shellcheck disable=SC2086
[ -z "$missing_lean" ] || apt_step install -y --no-install-recommends $missing_lean
