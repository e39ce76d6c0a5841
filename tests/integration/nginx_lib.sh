# shellcheck shell=sh
# nginx_lib.sh: an nginx of a case's own, for the harm suite
# (test_http_harm.sh) and its bench (demo/bench-harm.sh), which source it:
# one worker in the foreground, everything under the case's directory,
# started in a session of its own under a hard timeout, stopped by the case.
# The caller keeps PIDS (every process it started, stopped on exit).

# nginx_find: NGX, the nginx to run; false when none is installed.
nginx_find() {
    NGX=$(command -v nginx || true)
    [ -n "$NGX" ] || [ ! -x /usr/sbin/nginx ] || NGX=/usr/sbin/nginx
    [ -n "$NGX" ]
}

# nginx_conf DIR PORT UPSTREAM RUN: DIR/nginx.conf listening on PORT:
# /api/ proxied to UPSTREAM's always-429 (tagged RUN), /static/f.txt served
# ("static file").
nginx_conf() {
    mkdir -p "$1/www/static" "$1/tmp"
    echo "static file" >"$1/www/static/f.txt"
    cat >"$1/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    upstream up { server 127.0.0.1:$3; keepalive 4; }
    server {
        listen 127.0.0.1:$2;
        location /api/ {
            proxy_pass http://up/always429?ra=2&run=$4&p=;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /static/ { root $1/www; }
    }
}
EOF
}

# nginx_serves_static PORT: nginx_conf's static file comes back.
nginx_serves_static() {
    [ "$(curl -s -m 2 "http://127.0.0.1:$1/static/f.txt" 2>/dev/null)" = "static file" ]
}

# nginx_start DIR SECONDS READY... : NGX on DIR/nginx.conf, its output in
# DIR/log, killed after SECONDS; NGX_PRE (words, may be empty) goes in front
# (env LD_PRELOAD=... to run it under the library).  Waits up to 10 s until
# the command READY succeeds.  NGX_PID is the server; false, with NGX_WHY
# saying why, when it exited or never got ready.
nginx_start() {
    _nd=$1 _ns=$2
    shift 2
    # shellcheck disable=SC2086
    setsid timeout -k 2 "$_ns" ${NGX_PRE:-} "$NGX" -p "$_nd" -c "$_nd/nginx.conf" -e "$_nd/error.log" \
        >"$_nd/log" 2>&1 &
    NGX_PID=$!
    PIDS="$PIDS $NGX_PID"
    _nw=0
    until "$@"; do
        _nw=$((_nw + 1))
        _nwhy="did not serve within 10 s"
        kill -0 "$NGX_PID" 2>/dev/null || _nwhy="exited"
        if [ $_nw -gt 100 ] || [ "$_nwhy" = exited ]; then
            NGX_WHY="nginx $_nwhy: $(tail -n 3 "$_nd/error.log" "$_nd/log" | tr '\n' ' ')"
            return 1
        fi
        sleep 0.1
    done
}

# nginx_stop: the nginx nginx_start started.
nginx_stop() {
    kill -TERM "$NGX_PID" 2>/dev/null || true
    wait "$NGX_PID" 2>/dev/null || true
}
