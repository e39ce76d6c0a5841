# apt_step ARGS...: one apt-get call for the scripts that install Debian
# packages (demo/ensure-deps.sh for make test and make demo, .ci/run),
# sourced by them.  It runs `$SUDO apt-get ARGS` with apt's output appended
# to $APT_LOG, messages starting with "$APT_WHO:".
#
# A fresh machine's package manager is often busy: unattended upgrades run
# apt and dpkg for minutes after a cloud VM boots, holding their locks
# (/var/lib/dpkg/lock-frontend, /var/lib/apt/lists/lock...).  apt-get
# then fails at once, or waits by itself for the dpkg lock only
# (DPkg::Lock::Timeout: `apt-get update`'s lists lock does not honour it,
# apt 2.6).  So a call that fails on a lock held by another process is
# tried again until it runs, for APT_LOCK_WAIT seconds at most (300), with
# one line saying so; each try after the first lets apt wait for the dpkg
# lock itself (10 s at most), and one that fails at once (the lists lock)
# sleeps 2 s.  Any other failure, or the time up, shows the end of the
# log and exits 1.  The messages are read in the C locale.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-300}

apt_step() {
    : >>"$APT_LOG"
    _apt_start=$(date +%s)
    _apt_said=0
    _apt_wait=0
    while :; do
        _apt_mark=$(wc -c <"$APT_LOG")
        _apt_try=$(date +%s)
        # shellcheck disable=SC2086
        if $SUDO env LC_ALL=C apt-get "$@" -o DPkg::Lock::Timeout=$_apt_wait \
            >>"$APT_LOG" 2>&1 </dev/null; then
            return 0
        fi
        _apt_now=$(date +%s)
        _apt_left=$((APT_LOCK_WAIT - (_apt_now - _apt_start)))
        # "Could not get lock PATH. It is held by process N (NAME)" (or "PATH -
        # open (11: ..." when apt cannot tell the holder), or after apt's own
        # wait "Unable to acquire the dpkg frontend lock (PATH)"
        _apt_lock=$(tail -c +$((_apt_mark + 1)) "$APT_LOG" | sed -n \
            -e 's/.*Could not get lock \([^ ]*\)\. It is held by \(process [0-9]* ([^)]*)\).*/\1, held by \2/p' \
            -e 's/.*Could not get lock \([^ ]*\) - open (11: .*/\1/p' \
            -e 's/^E: Unable to acquire the dpkg frontend lock (\([^)]*\)).*/\1/p' | sed -n 1p)
        if [ -z "$_apt_lock" ] || [ "$_apt_left" -le 0 ]; then
            if [ -n "$_apt_lock" ]; then
                echo "$APT_WHO: apt's lock ($_apt_lock) was still held after $APT_LOCK_WAIT s" >&2
            fi
            echo "$APT_WHO: 'apt-get $*' failed; the end of $APT_LOG:" >&2
            tail -n 40 "$APT_LOG" | sed 's/^/    /' >&2
            exit 1
        fi
        if [ "$_apt_said" = 0 ]; then
            echo "$APT_WHO: the package manager is busy ($_apt_lock: unattended upgrades?);" \
                "waiting for it, $APT_LOCK_WAIT s at most" >&2
            _apt_said=1
        fi
        [ $((_apt_now - _apt_try)) -ge 2 ] || sleep 2
        _apt_wait=$((_apt_left < 10 ? _apt_left : 10))
    done
}
