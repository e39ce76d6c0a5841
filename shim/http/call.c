/*
 * call.c: a request's call of the engine, within the http room
 * (exchange_int.h): its destination (the request's Host, or the peer's
 * address), its logical request (method, destination, target: the
 * program's own retries continue it), its end, its give-up, an attempt's
 * completion and the facts bo_classify judges it by.  The engine, the
 * window and the waits are call/'s and dest/'s; the decisions policies/'.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

#include "bo_budget.h"
#include "bo_classify.h"
#include "bo_hash.h"
#include "bo_url.h"
#include "call/call.h"
#include "core/core.h"
#include "http/exchange_int.h"

/* ---- the destination and the logical request ------------------------- */

/*
 * A request without Host (HTTP/1.0): the connection's peer address, keyed
 * as bo_url_dest_key keys every destination.
 */
static int peer_key(const bo_config *cfg, int fd, bool https, char *key, size_t keylen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char a[INET6_ADDRSTRLEN + 2];
    unsigned port;
    size_t n;

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
        bo_core_addr_text((struct sockaddr *)&ss, sl, a, sizeof a, &n, &port) != 0)
        return -1;
    return bo_url_dest_key(cfg, https ? "https" : "http", https ? 5 : 4, a, n, port, key, keylen);
}

bo_block *bo_hx_destination(bo_hconn *c, const bo_config *cfg, const bo_http_msg *s)
{
    char key[BO_DEST_KEY_LEN];
    uint64_t h = BO_KEY_INIT ^ (uint64_t)c->https;

    if (s->has_host && !s->host_long) {
        h = bo_fnv1a(h, s->host, s->host_len);
        if (c->call.dest_cache != NULL && c->call.dest_hash == h)
            return bo_block_ref(c->call.dest_cache);
        if (bo_url_authority_key(cfg, c->https ? "https" : "http", c->https ? 443 : 80, s->host,
                                 s->host_len, key, sizeof key) != 0)
            return NULL; /* not a host, or BACKOFF_HOSTS leaves it out */
    } else if (peer_key(cfg, c->fd, c->https, key, sizeof key) != 0) {
        return NULL;
    } else {
        h = 0; /* never the cache's */
    }
    bo_block *b = bo_block_get(key);
    if (b != NULL && h != 0) {
        bo_block_put(c->call.dest_cache);
        c->call.dest_cache = bo_block_ref(b);
        c->call.dest_hash = h;
    }
    return b;
}

/* The logical request (bo_budget.h): method, destination and target. */
static uint64_t lineage_key(const bo_http_msg *m, const char *dest)
{
    char t[17];
    snprintf(t, sizeof t, "%016llx", (unsigned long long)m->target_hash);
    return bo_key_add(bo_key_add(bo_key_add(BO_KEY_INIT, m->method_text), dest), t);
}

/* ---- the call ------------------------------------------------------------ */

/* The logical request of the connection's request: method, destination
 * and target (0 before its head is whole). */
static uint64_t lineage_key_of(const void *ctx)
{
    const bo_hconn *c = ctx;
    return c->x.req.head_done ? lineage_key(&c->x.req, c->call.dest->key) : 0;
}

bool bo_hx_start_call(bo_hconn *c, bo_block *b, int64_t now, bo_lineage *prev)
{
    c->call.dest = b;
    bool continues = bo_run_call_start(&c->call.run, now, &c->call.lkey, lineage_key_of, c, prev);
    c->call.begun = true;
    c->call.admitted = false;
    c->call.id = bo_run_call_id();
    return continues;
}

bool bo_hx_admit_now(bo_hconn *c, int64_t now)
{
    return bo_run_admit_now(c->call.dest, &c->call.run, now, &c->call.inflight);
}

int bo_hx_admit_intr(bo_hconn *c, int64_t deadline)
{
    return bo_run_admit_intr(c->call.dest, &c->call.run, deadline, &c->call.inflight);
}

bool bo_hx_call_waits(bo_hconn *c, int64_t now)
{
    return c->call.run.phase == BO_PHASE_WAIT && !bo_call_due(&c->call.run, now);
}

void bo_hx_call_bound(bo_hconn *c, int64_t deadline)
{
    if (deadline < c->call.run.deadline_ns)
        bo_call_set_deadline(&c->call.run, deadline);
}

void bo_hx_call_forget(bo_hconn *c)
{
    bo_hx_drop_call(c, false);
    bo_block_put(c->call.dest_cache);
    c->call.dest_cache = NULL;
}

void bo_hx_call_disown(bo_hconn *c)
{
    c->call.begun = c->call.admitted = false;
    c->call.dest = c->call.dest_cache = NULL;
}

void bo_hx_withdraw_call(bo_hconn *c)
{
    if (!c->call.begun)
        return;
    bo_block_put(c->call.dest);
    c->call.dest = NULL;
    c->call.begun = c->call.admitted = false;
}

void bo_hx_end_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->call.begun)
        return;
    bo_run_call_finish(&c->call.run, &c->call.lkey, lineage_key_of, c, failed_retryable,
                       c->key.keyed ? c->key.value : NULL, c->key.body);
    bo_hx_withdraw_call(c);
}

/* The call gives up where it stands: an admitted attempt's slot back
 * (counted as a failed call), the call ended. */
void bo_hx_drop_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->call.begun)
        return;
    if (c->call.admitted)
        bo_run_cancel(c->call.dest, &c->call.run);
    c->call.admitted = false;
    bo_hx_end_call(c, failed_retryable);
}

bool bo_hx_complete(bo_hconn *c, bo_outcome o, int status, int code, int64_t ra_ns,
                    const bo_rl_headers *rl, int64_t *until)
{
    bo_run_result r = {.outcome = o, .retry_after_ns = ra_ns, .status = status, .code = code,
                       .ratelimit = rl};
    c->call.admitted = false;
    bool retry = bo_run_complete(c->call.dest, &c->call.run, &r, c->call.id, c->x.req.method_text,
                                 c->call.inflight, until);
    if (!retry)
        bo_hx_end_call(c, o.verdict != BO_VERDICT_SUCCESS &&
                              bo_call_failed_retryable(&c->call.run));
    return retry;
}

bo_outcome bo_hx_classify(const bo_hconn *c, int status, int code, const bo_rl_headers *rl)
{
    bo_attempt a = {.curl_code = code,
                    .http_status = status,
                    .method = c->x.req.method_text,
                    .body_delivered = 0,
                    .has_upload = c->x.req.framing != BO_HTTP_FRAMING_NONE,
                    .upload_rewindable = c->x.kept_ok,
                    .request_sent = true,
                    .idempotency_key = c->x.req.idem == BO_IDEM_LINE_KEY || c->key.keyed,
                    .quota_exhausted = bo_answer_quota_spent(rl)};
    return bo_classify(bo_core_config(), &a);
}
