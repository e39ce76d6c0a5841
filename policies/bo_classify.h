/*
 * bo_classify: what one finished attempt means.  Pure function of the
 * attempt's facts and the configuration, following docs/DESIGN.md's safety rules:
 *   - 429, 503 and connect failures are retried for any method, and so is a
 *     403 whose rate-limit headers say the quota is spent (GitHub's primary
 *     rate limit: it counts as a 429 for BACKOFF_RETRY_ON);
 *   - a request that may have reached the server (read timeout, reset after
 *     sending, 502/504/500/408) is retried only for idempotent methods, or
 *     when it carries an Idempotency-Key (the server processes a key once),
 *     unless unsafe_retry;
 *   - a 409 to a request that carries a key (the server is still processing
 *     that key) is retried after a wait; 422 and 400 stay final;
 *   - never once a body byte has been delivered to the program;
 *   - an upload only when it can be rewound;
 *   - only what BACKOFF_RETRY_ON lists;
 *   - a failed connect() only when it means "busy or restarting", never
 *     "nothing here" (bo_connect_errno_retryable).
 * Codes are libcurl's CURLcode numbers (stable ABI), so this module needs no
 * libcurl header.
 */
#ifndef BO_CLASSIFY_H
#define BO_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "bo_config.h"
#include "bo_ratelimit.h"

/* The CURLcode values classification needs (see curl/curl.h). */
enum {
    BO_CURLE_OK = 0,
    BO_CURLE_COULDNT_RESOLVE_PROXY = 5,
    BO_CURLE_COULDNT_RESOLVE_HOST = 6,
    BO_CURLE_COULDNT_CONNECT = 7,
    BO_CURLE_PARTIAL_FILE = 18,
    BO_CURLE_HTTP_RETURNED_ERROR = 22,
    BO_CURLE_OPERATION_TIMEDOUT = 28,
    BO_CURLE_GOT_NOTHING = 52,
    BO_CURLE_SEND_ERROR = 55,
    BO_CURLE_RECV_ERROR = 56
};

typedef enum bo_verdict {
    BO_VERDICT_SUCCESS = 0, /* the call is done and it worked */
    BO_VERDICT_RETRY,       /* try again under the policy */
    BO_VERDICT_FINAL        /* return this attempt's result as is */
} bo_verdict;

typedef enum bo_signal {
    BO_SIGNAL_NONE = 0,     /* no news about the destination's capacity */
    BO_SIGNAL_THROTTLE,     /* the server answered "slow down" (429, 503, 504) */
    BO_SIGNAL_LOSS,         /* no answer at all (timeout, refused): probe mode */
    BO_SIGNAL_KEY_BUSY      /* a 409 to a request with an Idempotency-Key: the server
                               is still processing that key.  No news about capacity
                               (the window treats it as NONE), but a retry waits as
                               after a throttle (bo_engine.c) instead of going at once */
} bo_signal;

/*
 * Which throttle or loss an attempt met, for the counters operators read
 * (`backoff --status --format=...`, BACKOFF_METRICS_FILE): set exactly when
 * the signal is not NONE.  The THROTTLE kinds are the statuses: 429, 503,
 * 504 (their sum is BACKOFF_STATS' `throttled`); the LOSS kinds: no
 * connection (a connect() refused, unreachable or timed out, libcurl's
 * CURLE_COULDNT_CONNECT) and a transfer that timed out
 * (CURLE_OPERATION_TIMEDOUT, in whatever phase).
 */
typedef enum bo_cause {
    BO_CAUSE_NONE = 0,
    BO_CAUSE_429,
    BO_CAUSE_503,
    BO_CAUSE_504,
    BO_CAUSE_CONNECT,
    BO_CAUSE_TIMEOUT,
    BO_CAUSE_COUNT
} bo_cause;

/* "429", "503", "504", "connect", "timeout"; "" for BO_CAUSE_NONE or out of range. */
const char *bo_cause_name(bo_cause c);

typedef struct bo_outcome {
    bo_verdict verdict;
    bo_signal signal;
    bool rate_limited;        /* a 429: the server is up and limits this client's
                                 rate (retries after it are not refused by the
                                 destination's retry budget, bo_budget.h) */
    bo_cause cause;           /* the signal's kind (BO_CAUSE_NONE: no signal) */
} bo_outcome;

typedef struct bo_attempt {
    int curl_code;            /* CURLcode of the attempt; BO_CURLE_OK for connect() */
    int http_status;          /* 0 when no response was received */
    const char *method;       /* "GET", "POST", ...; NULL means GET */
    uint64_t body_delivered;  /* body bytes already handed to the program */
    bool has_upload;          /* the request sends a body */
    bool upload_rewindable;   /* ... and it can be sent again */
    bool request_sent;        /* the request may have reached the server */
    int connect_errno;        /* connect() hook: errno of the failed connect, else 0 */
    bool connect_unix;        /* connect() hook: a UNIX-domain socket (else TCP) */
    bool connect_unknown;     /* connect() hook: the destination never accepted a connection
                                 in this process and BACKOFF_HOSTS does not name it */
    bool idempotency_key;     /* the request carries an Idempotency-Key, the program's own
                                 or the shim's (bo_idem.h): it may be repeated like an
                                 idempotent one, and a 409 means "still processing" */
    bool quota_exhausted;     /* the answer's rate-limit headers say no request is left
                                 (x-ratelimit-remaining: 0 and its kin,
                                 bo_rl_headers_exhausted): a 403 with it is GitHub's
                                 primary rate limit, a throttle; without it a 403 is final:
                                 bo_answer_quota_spent, for every room) */
} bo_attempt;

/*
 * The one reading of an answer's rate-limit headers for the throttle
 * judgment (bo_attempt.quota_exhausted), for every room that reads HTTP
 * answers (the libcurl room's held bytes and completion, the http room's
 * judging): rl the headers of its whole head (bo_rl_header_line); NULL
 * while the head has not come whole: a 403 may yet be a spent quota, so it
 * is kept (held, or its head waited for) as a throttle until its headers
 * say whether it is one.
 */
bool bo_answer_quota_spent(const bo_rl_headers *rl);

/*
 * May a connect() that failed with `err` be retried?  Only a failure that
 * means "busy or restarting", never one that means "nothing here":
 *   - EAGAIN on a UNIX socket (the listener's backlog is full): always;
 *     EAGAIN on TCP (no local port or route cache entry): never;
 *   - ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EHOSTUNREACH: only on a
 *     destination that is not `unknown`, i.e. one that has accepted a
 *     connection before (it is restarting) or that the user named in
 *     BACKOFF_HOSTS; on any other one they are what a probe, an address
 *     fallback loop or a stale socket file expects to get at once;
 *   - anything else (EINTR, EACCES, EINPROGRESS, ENOENT...): never.
 */
bool bo_connect_errno_retryable(int err, bool unix_socket, bool unknown);

/*
 * What the connect() hook knows about one attempt besides its errno.
 */
typedef struct bo_connect_facts {
    bool nonblocking;  /* the program set O_NONBLOCK on the socket */
    bool unix_socket;  /* a UNIX-domain socket (else TCP) */
    bool unknown;      /* as bo_connect_errno_retryable's `unknown` */
    bool reused;       /* a retry on the program's socket after a failed attempt */
    bool shim_bound;   /* the attempt ran under a send timeout the hook set where
                          the program had set none (the call's deadline) */
} bo_connect_facts;

typedef enum bo_connect_class {
    BO_CONNECT_PASS = 0,  /* a non-blocking socket: the program finishes the
                             connect itself (EINPROGRESS, EAGAIN...); never held */
    BO_CONNECT_OK,        /* connected */
    BO_CONNECT_RETRYABLE, /* busy or restarting: bo_classify decides (BACKOFF_RETRY_ON) */
    BO_CONNECT_FINAL,     /* hand it back as is */
    BO_CONNECT_STALE      /* the socket will not connect again (EALREADY, EISCONN,
                             EBADFD, EINVAL on a reused one): stop, the previous
                             attempt's errno stands */
} bo_connect_class;

typedef struct bo_connect_verdict {
    bo_connect_class cls;
    int err;     /* the errno the program is to see for this attempt */
    bool abort;  /* abort the pending request first (connect to AF_UNSPEC) */
} bo_connect_verdict;

/*
 * Judge one connect() attempt that returned errno `err` (0: connected) on a
 * blocking or non-blocking socket.  A blocking socket's EINPROGRESS means
 * its send timeout ran out: when the hook set that timeout (shim_bound) the
 * request is aborted and the program sees ETIMEDOUT, as from a plain
 * connect that timed out (then judged as ETIMEDOUT); under the program's
 * own SO_SNDTIMEO it is handed back as is.  Otherwise the errno is
 * bo_connect_errno_retryable's RETRYABLE or FINAL.
 */
bo_connect_verdict bo_connect_judge(int err, const bo_connect_facts *f);

/* Does the hook manage a connect() on this socket: a blocking stream socket? */
bool bo_connect_managed(bool stream, bool nonblocking);

/* Classify one attempt. */
bo_outcome bo_classify(const bo_config *cfg, const bo_attempt *a);

/* True for GET, HEAD, PUT, DELETE, OPTIONS, TRACE (case-insensitive); NULL is GET. */
bool bo_method_idempotent(const char *method);

#endif
