/*
 * bo_http: an HTTP/1.x message reader for hooks that see a program's bytes
 * on a socket or a TLS object : where a request or a response
 * begins and ends, what its head says about framing and the connection,
 * and whether a request may be kept and sent again.  RFC 9112's syntax
 * (sections 2-7) and its rules for the body's length (section 6.3).
 *
 * Shaped like picohttpparser: pure (no allocation, no clock, no I/O, no
 * globals), the caller passes the buffers, every call answers "need more
 * bytes", "done", or "not HTTP/1.x (leave it alone)".  The state is a
 * fixed-size struct without a single pointer (792 bytes on x86_64: no pointer
 * into a caller's buffer survives a call), so bytes may arrive in pieces of
 * any size: a message fed one byte at a time reads exactly as when fed
 * whole.
 *
 * Three ways in:
 *   - a request as the program writes it: bo_http_msg_request, then
 *     bo_http_feed with each write's bytes, in order.  The head, then the
 *     body (Content-Length or chunked) are read; DONE says where the
 *     request ends, and `keep` whether the hooks may keep and replay it;
 *   - a response head from a contiguous buffer (a MSG_PEEK, SSL_peek, or
 *     the bytes the hook holds): bo_http_parse_response, which hands each
 *     header line of the final head to a callback (bo_rl_header_line) once
 *     the head is complete, and skips interim 1xx heads;
 *   - a response's body, read and thrown away: bo_http_feed on the message
 *     that bo_http_parse_response returned, with the bytes that follow the
 *     head (or the whole response fed from its first byte), then
 *     bo_http_eof when the peer closes.  bo_http_body is the body reader
 *     alone, for a caller that knows the framing.
 *
 * Anything odd is NOT_HTTP, never a guess: a bare CR, obs-fold, whitespace
 * before a colon, Transfer-Encoding together with Content-Length, two
 * different Content-Lengths, chunked not last in a request, a
 * Transfer-Encoding in an HTTP/1.0 message.  The hooks then pass the
 * connection through untouched, so a strict reader costs a retry at worst,
 * never a wrong byte.
 */
#ifndef BO_HTTP_H
#define BO_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard limits: past them the answer is BO_HTTP_TOO_LARGE. */
#define BO_HTTP_HEAD_MAX 16384   /* a head, the blank line included (a response's
                                    interim 1xx heads count in it) */
#define BO_HTTP_LINE_MAX 8192    /* one line of a head, a chunk-size line, a trailer line */
#define BO_HTTP_BODY_CAP 65536   /* the largest request body the hooks keep (wire bytes) */
#define BO_HTTP_METHOD_MAX 31    /* longer method tokens are NOT_HTTP */
#define BO_HTTP_HOST_MAX 255     /* a longer Host is not kept (host_len 0, host_long) */
#define BO_HTTP_VALUE_MAX 256    /* the framing fields' values are judged within this */

typedef enum bo_http_rc {
    BO_HTTP_NEED_MORE = 0, /* valid so far; more bytes are needed */
    BO_HTTP_DONE,          /* the head (or message, or body) is complete */
    BO_HTTP_NOT_HTTP,      /* not HTTP/1.x, malformed or unsafe framing (err says which) */
    BO_HTTP_TOO_LARGE      /* past BO_HTTP_HEAD_MAX or BO_HTTP_LINE_MAX */
} bo_http_rc;

/* Why the answer is NOT_HTTP or TOO_LARGE (bo_http_err_name: a short phrase). */
typedef enum bo_http_err {
    BO_HTTP_ERR_NONE = 0,
    BO_HTTP_ERR_METHOD,            /* not a method token, or one too long */
    BO_HTTP_ERR_TARGET,            /* empty, or a control byte in the request target */
    BO_HTTP_ERR_VERSION,           /* not HTTP/1.0 or HTTP/1.1 */
    BO_HTTP_ERR_H2_PREFACE,        /* "PRI * HTTP/2.0": the HTTP/2 connection preface */
    BO_HTTP_ERR_STATUS,            /* a status code that is not 3 digits, 100 to 999 */
    BO_HTTP_ERR_LINE_END,          /* a bare CR, or a control byte in a start line */
    BO_HTTP_ERR_FIELD_NAME,        /* not a token, or whitespace before the colon */
    BO_HTTP_ERR_FIELD_VALUE,       /* a control byte in a field value */
    BO_HTTP_ERR_OBS_FOLD,          /* a line starting with whitespace (obs-fold) */
    BO_HTTP_ERR_CONTENT_LENGTH,    /* not digits, two different values, or too long */
    BO_HTTP_ERR_TRANSFER_ENCODING, /* chunked twice, not last in a request, in HTTP/1.0 */
    BO_HTTP_ERR_TE_AND_LENGTH,     /* both Transfer-Encoding and Content-Length */
    BO_HTTP_ERR_HOST,              /* two Host fields in a request */
    BO_HTTP_ERR_HEAD_TOO_LARGE,    /* the head passed BO_HTTP_HEAD_MAX */
    BO_HTTP_ERR_LINE_TOO_LONG,     /* a line passed BO_HTTP_LINE_MAX */
    BO_HTTP_ERR_CHUNK_SIZE,        /* a chunk size that is not hex, or over 2^60 */
    BO_HTTP_ERR_CHUNK_EXT,         /* a control byte in a chunk extension */
    BO_HTTP_ERR_CHUNK_END,         /* chunk data not followed by CRLF */
    BO_HTTP_ERR_TRAILER,           /* a malformed trailer line */
    BO_HTTP_ERR_TRAILER_TOO_LARGE, /* the trailer section passed BO_HTTP_HEAD_MAX */
    BO_HTTP_ERR_TUNNEL,            /* body bytes asked of a tunnel (101, 2xx to CONNECT) */
    BO_HTTP_ERR_TRUNCATED          /* the peer closed before the message ended */
} bo_http_err;

typedef enum bo_http_method {
    BO_HTTP_METHOD_OTHER = 0, /* any other token (its text is in method[]) */
    BO_HTTP_METHOD_GET,
    BO_HTTP_METHOD_HEAD,
    BO_HTTP_METHOD_POST,
    BO_HTTP_METHOD_PUT,
    BO_HTTP_METHOD_DELETE,
    BO_HTTP_METHOD_OPTIONS,
    BO_HTTP_METHOD_TRACE,
    BO_HTTP_METHOD_PATCH,
    BO_HTTP_METHOD_CONNECT
} bo_http_method;

/* How a message's body ends (RFC 9112 section 6.3). */
typedef enum bo_http_framing {
    BO_HTTP_FRAMING_NONE = 0, /* no body: a request without a length; a response to
                                 HEAD, a 1xx, 204 or 304 */
    BO_HTTP_FRAMING_LENGTH,   /* content_length bytes */
    BO_HTTP_FRAMING_CHUNKED,  /* the chunked coding, to its last chunk and trailer */
    BO_HTTP_FRAMING_CLOSE,    /* a response that ends when the server closes */
    BO_HTTP_FRAMING_TUNNEL    /* 101, or a 2xx to CONNECT: the connection is no
                                 longer HTTP after the head */
} bo_http_framing;

/* May the hooks keep a request and send it again?  BO_HTTP_KEEP_OK, or why not. */
typedef enum bo_http_keep {
    BO_HTTP_KEEP_OK = 0,
    BO_HTTP_KEEP_CONNECT,   /* a CONNECT: a tunnel follows */
    BO_HTTP_KEEP_UPGRADE,   /* an Upgrade field (websocket, h2c...) or Connection: upgrade */
    BO_HTTP_KEEP_EXPECT,    /* Expect (100-continue): the body waits for the server */
    BO_HTTP_KEEP_BODY_CAP,  /* the body is over BO_HTTP_BODY_CAP bytes */
    BO_HTTP_KEEP_PIPELINED  /* bytes of another request followed it before its answer */
} bo_http_keep;

/*
 * The chunked-body, Content-Length or close-delimited body reader: fed
 * successive buffers, it says how many bytes of each belong to the body
 * and when the body is complete.  Fixed size; zero pointers.
 */
typedef struct bo_http_body {
    bo_http_framing framing;
    bo_http_err err;
    uint8_t state;       /* private */
    uint32_t line;       /* private: bytes of the current chunk-size or trailer line */
    uint32_t trailer;    /* private: bytes of the trailer section so far */
    uint64_t left;       /* private: bytes left of the body or of this chunk */
    uint64_t wire;       /* bytes of the body consumed so far, framing included */
    uint64_t data;       /* of those, payload bytes (chunk data, or all of them) */
    uint64_t chunks;     /* chunks read, the last (size 0) one included */
} bo_http_body;

/* Starts a body of this framing; length is Content-Length's (for FRAMING_LENGTH). */
void bo_http_body_init(bo_http_body *b, bo_http_framing framing, uint64_t length);

/*
 * Feeds len bytes of the body.  *used is how many of them belong to it (the
 * rest, after DONE, are the next message's).  DONE once the body is
 * complete (at once for FRAMING_NONE; never for FRAMING_CLOSE, which only
 * bo_http_body_eof ends); NOT_HTTP on a malformed chunked body or a
 * tunnel; TOO_LARGE for a chunk line over BO_HTTP_LINE_MAX or a trailer
 * section over BO_HTTP_HEAD_MAX.  A result other than NEED_MORE is final:
 * later calls return it again with *used = 0.
 */
bo_http_rc bo_http_body_feed(bo_http_body *b, const char *buf, size_t len, size_t *used);

/* The peer closed: DONE when the body is complete (or close-delimited), else
 * NOT_HTTP with err BO_HTTP_ERR_TRUNCATED. */
bo_http_rc bo_http_body_eof(bo_http_body *b);

/*
 * One message, request or response, read from its first byte: the head's
 * facts (public fields, valid as documented per field), then its body.
 */
typedef struct bo_http_msg {
    /* ---- the reading ---- */
    bool is_response;
    bool head_done;             /* the final head is complete */
    bool done;                  /* the whole message is complete (head and body) */
    bo_http_rc rc;              /* the last answer (sticky once not NEED_MORE) */
    bo_http_err err;            /* why NOT_HTTP or TOO_LARGE */
    size_t head_len;            /* head_done: bytes of the head(s), interim ones
                                   and the blank line included */
    uint64_t total;             /* bytes of the message consumed so far (after a
                                   failure: those before the piece that failed) */
    /* ---- both; valid once head_done ---- */
    unsigned minor;             /* HTTP/1.minor, 0 or 1 (valid from the start line) */
    bo_http_framing framing;
    uint64_t content_length;    /* FRAMING_LENGTH: its value */
    bool has_content_length;
    bool chunked;               /* Transfer-Encoding ends in chunked */
    bool has_transfer_encoding;
    bool conn_close;            /* Connection: close */
    bool conn_keep_alive;       /* Connection: keep-alive */
    bool conn_upgrade;          /* Connection: upgrade */
    bool keep_alive;            /* the connection stays open after this message: HTTP/1.1
                                   unless close, HTTP/1.0 only with keep-alive, never after
                                   a close-delimited body or a tunnel */
    /* ---- a request; valid once head_done (method from the start line) ---- */
    bo_http_method method;
    char method_text[BO_HTTP_METHOD_MAX + 1]; /* the token as sent, NUL-terminated */
    uint64_t target_hash;       /* FNV-1a 64 of the request target */
    size_t target_len;
    char host[BO_HTTP_HOST_MAX + 1]; /* Host's value, trimmed, NUL-terminated */
    size_t host_len;
    bool has_host;
    bool host_long;             /* Host longer than BO_HTTP_HOST_MAX: not in host[] */
    bool upgrade;               /* an Upgrade field */
    bool upgrade_websocket;     /* ... naming websocket */
    bool upgrade_h2c;           /* ... naming h2c */
    bool expect;                /* an Expect field */
    bool expect_continue;       /* ... of 100-continue */
    uint8_t idem;               /* what its Idempotency-Key fields say (bo_idem_line, read
                                   by bo_idem_value_kind): OTHER none, EMPTY only empty
                                   ones (no key), KEY a key (it wins over an empty one) */
    bo_http_keep keep;          /* the hooks may keep and replay it, or why not; decided
                                   at the end of the head, then BODY_CAP as the body passes
                                   the cap and PIPELINED when bytes follow its end */
    /* ---- a response ---- */
    bo_http_method req_method;  /* the request it answers (HEAD and CONNECT matter) */
    int status;                 /* 0 until the status line's three digits came: then a
                                   1xx while an interim head is read, else the final one */
    unsigned interim;           /* interim 1xx heads skipped */
    int64_t retry_after_delta;  /* Retry-After in seconds (-1: none); see bo_http_retry_after_s */
    int64_t retry_after_date;   /* Retry-After as an HTTP-date, epoch seconds (-1: none) */
    /* ---- private: the head's reading and the body ---- */
    struct {
        uint8_t state;
        uint8_t field;          /* which field the current line is */
        uint8_t ver;            /* bytes of "HTTP/1.x" matched */
        uint8_t name_len;
        bool field_line;        /* the line being ended is a field line */
        bool value_long;        /* the field's value passed BO_HTTP_VALUE_MAX */
        bool cl_bad, te_bad, te_chunked_seen, te_twice, host_twice;
        uint8_t status_digits;  /* the SP and digits of the status code so far */
        uint16_t status_acc;
        unsigned target_first;  /* first byte of the target ("*" for the preface) */
        uint32_t line;          /* bytes of the current line */
        uint32_t head;          /* bytes of the heads so far */
        uint32_t final_start;   /* where the head being read began (after interim ones) */
        uint16_t value_len;
        char name[24];          /* the field name, lower case, while it is read */
        char value[BO_HTTP_VALUE_MAX];
    } p;
    bo_http_body body;
} bo_http_msg;

/* A request, read from the first byte the program writes. */
void bo_http_msg_request(bo_http_msg *m);

/* A response to a request of method req_method, from its first byte. */
void bo_http_msg_response(bo_http_msg *m, bo_http_method req_method);

/*
 * Feeds the next len bytes of the message: the head, then the body.
 * *used: how many of them belong to the message (0 on a failure).  NEED_MORE,
 * DONE (the whole message: head_done and done are set), NOT_HTTP or
 * TOO_LARGE (err says why).  A response whose framing is TUNNEL is DONE at
 * the end of its head.  Final answers are sticky: later calls return them
 * with *used = 0.  A request is pipelined (keep becomes
 * BO_HTTP_KEEP_PIPELINED) when bytes follow its end in the same call, or
 * when bytes are fed after its DONE: the caller starts a new message for
 * the next request only once the previous one's response has come.
 */
bo_http_rc bo_http_feed(bo_http_msg *m, const char *buf, size_t len, size_t *used);

/*
 * As bo_http_feed, but stops at the end of the head: DONE means head_done
 * (*used is where the head ends in buf); bo_http_feed then reads the body.
 */
bo_http_rc bo_http_feed_head(bo_http_msg *m, const char *buf, size_t len, size_t *used);

/* The peer closed the connection: DONE when the message is complete or its
 * body was close-delimited, else NOT_HTTP (BO_HTTP_ERR_TRUNCATED). */
bo_http_rc bo_http_eof(bo_http_msg *m);

/* Called with each field line of a head, "Name: value\r\n" as received
 * (the line end included; not NUL-terminated), as bo_rl_header_line takes it. */
typedef void (*bo_http_line_fn)(void *ctx, const char *line, size_t len);

/*
 * Reads a response head from buf, len bytes from the response's first byte
 * (a peek or the hook's own copy; bytes of the body may follow).  *m is
 * initialised here as by bo_http_msg_response.  Interim 1xx heads (not
 * 101) are skipped; on DONE, m->head_len is where the final head ends and
 * fn (if not NULL) has been called once with each of its field lines, in
 * order, before this returns; bo_http_feed(m, buf + m->head_len, ...) then
 * reads the body.  NEED_MORE: call again with more bytes (m->status is the
 * status as soon as its three digits came: a 1xx means an interim head);
 * fn is not called then, so a caller that re-reads a growing buffer never
 * sees a line twice.
 */
bo_http_rc bo_http_parse_response(const char *buf, size_t len, bo_http_method req_method,
                                  bo_http_msg *m, bo_http_line_fn fn, void *ctx);

/*
 * Retry-After of a response head, in seconds from wall_s (the wall clock,
 * epoch seconds): the delta, or the HTTP-date less wall_s (0 when past);
 * -1 when there was none.  Read as libcurl reads it for
 * CURLINFO_RETRY_AFTER, so both hook families agree: an HTTP-date in any
 * of RFC 9110's three forms, else the leading decimal digits after an
 * optional '+' ("5; x" is 5, "1.5" is 1), a minus sign or no digit being
 * none; the first Retry-After of the final head counts.
 */
int64_t bo_http_retry_after_s(const bo_http_msg *m, int64_t wall_s);

/*
 * The same as the engine's retry_after_ns, as the libcurl hooks make it
 * from CURLINFO_RETRY_AFTER: -1 (no hint) for none, 0 or a date passed;
 * else the seconds in nanoseconds, saturating at INT64_MAX (the engine
 * bounds every wait by BACKOFF_CAP_MS).
 */
int64_t bo_http_retry_after_ns(const bo_http_msg *m, int64_t wall_s);

/* The method token's enum (case-sensitive, as RFC 9110 says methods are). */
bo_http_method bo_http_method_of(const char *token, size_t len);

const char *bo_http_err_name(bo_http_err err);
const char *bo_http_keep_name(bo_http_keep keep);

#endif
