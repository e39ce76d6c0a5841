/*
 * bo_idem: the Idempotency-Key request header (draft-ietf-httpapi-idempotency-
 * key-header).  A server that honours it processes a key once and
 * replays its stored answer to every repeat, so a POST or PATCH that carries
 * one may be retried like an idempotent request (bo_classify.h).
 *
 * Pure: a fresh key is drawn from the caller's generator (bo_rng.h), so a
 * seed makes keys repeatable; lines are read and written in the caller's
 * buffers.  The header's value is an RFC 8941 sf-string holding a UUID v4
 * (RFC 9562): "Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"".
 */
#ifndef BO_IDEM_H
#define BO_IDEM_H

#include <stdbool.h>
#include <stddef.h>

#include "bo_rng.h"

#define BO_IDEM_NAME "Idempotency-Key"
#define BO_IDEM_NAME_LEN 15
/* A key as the header carries it: '"', 36 characters of UUID, '"'. */
#define BO_IDEM_VALUE_LEN 38
#define BO_IDEM_VALUE_SIZE (BO_IDEM_VALUE_LEN + 1)
/* The whole line "Idempotency-Key: \"...\"", without a line end. */
#define BO_IDEM_LINE_LEN (BO_IDEM_NAME_LEN + 2 + BO_IDEM_VALUE_LEN)
#define BO_IDEM_LINE_SIZE (BO_IDEM_LINE_LEN + 1)

/*
 * A fresh key: a UUID v4 made of 122 bits of two draws from `rng` (version
 * 4, variant 10), lower-case hex, in double quotes, NUL-terminated
 * (BO_IDEM_VALUE_SIZE bytes written).  Always draws exactly two values.
 */
void bo_idem_key_new(bo_rng *rng, char out[BO_IDEM_VALUE_SIZE]);

/*
 * Write the header line "Idempotency-Key: VALUE" (no line end) into buf;
 * like snprintf: at most len bytes with the NUL, and the return is the
 * length the whole line needs (BO_IDEM_LINE_LEN for a key of
 * bo_idem_key_new).
 */
size_t bo_idem_header_line(const char *value, char *buf, size_t len);

/* What a header line says about the Idempotency-Key. */
typedef enum bo_idem_line {
    BO_IDEM_LINE_OTHER = 0, /* another header (or not a header line) */
    BO_IDEM_LINE_EMPTY,     /* the name with no value: in a libcurl header list
                               "Idempotency-Key:" keeps it from being sent and
                               "Idempotency-Key;" sends it empty: either way the
                               program spoke about it and the request carries no key */
    BO_IDEM_LINE_KEY        /* the name with a value: the request carries a key */
} bo_idem_line;

/*
 * What a header field's value says: a key (KEY), or nothing but white space
 * (EMPTY: the program spoke of a key and gave none).  `len` bytes, not
 * necessarily NUL-terminated; a NUL ends the value.  The one reader of a
 * key's value, for both hook families: a raw request's field (bo_http) and
 * a libcurl header list's line (bo_idem_header_kind).
 */
bo_idem_line bo_idem_value_kind(const char *value, size_t len);

/*
 * Read one header line, as a program set it in a libcurl header list
 * (CURLOPT_HTTPHEADER's "Name: value", "Name:" and "Name;" forms) or as it
 * stands in a raw request: `len` bytes, not necessarily NUL-terminated, a
 * trailing CR LF allowed.  The name is compared without regard to case and
 * must be followed at once by ':' or ';' (HTTP allows no white space before
 * the colon); a ';' form with anything after it is not sent by libcurl
 * (OTHER).
 */
bo_idem_line bo_idem_header_kind(const char *line, size_t len);

/*
 * A fingerprint of a request body that is known before it is sent
 * (CURLOPT_POSTFIELDS: its bytes and size): FNV-1a 64 over the bytes, then
 * the length; never 0, which means "not known".
 */
uint64_t bo_idem_body_fp(const void *data, size_t len);

/*
 * May the program's own next try of a logical request (bo_lineage) send the
 * key `stored` again?  Only when there is one, and when both bodies are known,
 * only for the same body: a program that posts another order to the same URL
 * right after a failure must not have it replayed the first order's answer
 * (or refused 422).  A body not known on either side (a read callback, a
 * file) reuses the key, as the rule says.
 */
bool bo_idem_key_reusable(const char *stored, uint64_t stored_body, uint64_t body);

/*
 * The one rule of both hook families (the libcurl room's header list, the
 * http room's raw request): under BACKOFF_IDEMPOTENCY_KEY the shim gives a
 * request its own key, from its first attempt on, when it is a POST or a
 * PATCH (methods compared as HTTP compares them: case-sensitively) whose
 * headers say nothing of a key (own: what they say; a key or an empty
 * mention of one is the program's to decide).
 */
bool bo_idem_wants_key(const char *method, bo_idem_line own);

/*
 * The key of a request the shim keys: the program's previous try's of the
 * same logical request (prev and its body's fingerprint, from bo_lineage;
 * NULL or "": none) when bo_idem_key_reusable says so for this body, else
 * a fresh one from rng.
 */
void bo_idem_key_for(const char *prev, uint64_t prev_body, uint64_t body, bo_rng *rng,
                     char out[BO_IDEM_VALUE_SIZE]);

#endif
