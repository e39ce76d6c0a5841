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
        if (c->dest_cache != NULL && c->dest_hash == h)
            return bo_block_ref(c->dest_cache);
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
        bo_block_put(c->dest_cache);
        c->dest_cache = bo_block_ref(b);
        c->dest_hash = h;
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
    return c->req.head_done ? lineage_key(&c->req, c->dest->key) : 0;
}

bool bo_hx_start_call(bo_hconn *c, bo_block *b, int64_t now, bo_lineage *prev)
{
    c->dest = b;
    bool continues = bo_run_call_start(&c->call, now, &c->lkey, lineage_key_of, c, prev);
    c->in_call = true;
    c->admitted = false;
    c->id = bo_run_call_id();
    return continues;
}

void bo_hx_withdraw_call(bo_hconn *c)
{
    if (!c->in_call)
        return;
    bo_block_put(c->dest);
    c->dest = NULL;
    c->in_call = c->admitted = false;
}

void bo_hx_end_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    bo_run_call_finish(&c->call, &c->lkey, lineage_key_of, c, failed_retryable,
                       c->idem_keyed ? c->idem : NULL, c->idem_body);
    bo_hx_withdraw_call(c);
}

/* The call gives up where it stands: an admitted attempt's slot back
 * (counted as a failed call), the call ended. */
void bo_hx_drop_call(bo_hconn *c, bool failed_retryable)
{
    if (!c->in_call)
        return;
    if (c->admitted)
        bo_run_cancel(c->dest, &c->call);
    c->admitted = false;
    bo_hx_end_call(c, failed_retryable);
}

bool bo_hx_complete(bo_hconn *c, bo_outcome o, int status, int code, int64_t ra_ns,
                    const bo_rl_headers *rl, int64_t *until)
{
    bo_run_result r = {.outcome = o, .retry_after_ns = ra_ns, .status = status, .code = code,
                       .ratelimit = rl};
    c->admitted = false;
    bool retry = bo_run_complete(c->dest, &c->call, &r, c->id, c->req.method_text, c->inflight,
                                 until);
    if (!retry)
        bo_hx_end_call(c, o.verdict != BO_VERDICT_SUCCESS && bo_call_failed_retryable(&c->call));
    return retry;
}

bo_outcome bo_hx_classify(const bo_hconn *c, int status, int code, const bo_rl_headers *rl)
{
    bo_attempt a = {.curl_code = code,
                    .http_status = status,
                    .method = c->req.method_text,
                    .body_delivered = 0,
                    .has_upload = c->req.framing != BO_HTTP_FRAMING_NONE,
                    .upload_rewindable = c->kept_ok,
                    .request_sent = true,
                    .idempotency_key = c->req.idem == BO_IDEM_LINE_KEY || c->idem_keyed,
                    .quota_exhausted = bo_answer_quota_spent(rl)};
    return bo_classify(bo_core_config(), &a);
}
