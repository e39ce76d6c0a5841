/*
 * kept.c: the answer of a retried attempt, kept until the call ends and
 * handed over when the retry gets none of its own (kept.h).  The held
 * bytes and the kept ones are two buffers of the record that trade places,
 * so keeping an answer copies nothing and, after a handle's first kept
 * answer, allocates nothing.
 */
#include "libcurl/kept.h"

#include <string.h>

#include "libcurl/held.h"

int bo_curl_kept_shown_count;

/* What getinfo is asked of the kept attempt, as libcurl answered it then. */
static const CURLINFO kept_longs[BO_KEPT_NLONG] = {
    CURLINFO_RESPONSE_CODE,    CURLINFO_HTTP_VERSION,     CURLINFO_HEADER_SIZE,
    CURLINFO_REQUEST_SIZE,     CURLINFO_SSL_VERIFYRESULT, CURLINFO_OS_ERRNO,
    CURLINFO_HTTP_CONNECTCODE, CURLINFO_CONDITION_UNMET,  CURLINFO_PROXY_SSL_VERIFYRESULT,
};
static const CURLINFO kept_offs[BO_KEPT_NOFF] = {
    CURLINFO_SIZE_DOWNLOAD_T, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, CURLINFO_SIZE_UPLOAD_T,
    CURLINFO_RETRY_AFTER,     CURLINFO_FILETIME_T,
};
/* The older forms of the same values: a double or a long of an off_t one. */
static const struct {
    CURLINFO older, off_t_form;
} kept_aliases[] = {
    {CURLINFO_SIZE_DOWNLOAD, CURLINFO_SIZE_DOWNLOAD_T},
    {CURLINFO_CONTENT_LENGTH_DOWNLOAD, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T},
    {CURLINFO_SIZE_UPLOAD, CURLINFO_SIZE_UPLOAD_T},
    {CURLINFO_FILETIME, CURLINFO_FILETIME_T},
};

static void set_shown(bo_curl_rec *r, bool shown)
{
    if (r->kept_shown == shown)
        return;
    r->kept_shown = shown;
    __atomic_add_fetch(&bo_curl_kept_shown_count, shown ? 1 : -1, __ATOMIC_RELAXED);
}

void bo_curl_kept_forget(bo_curl_rec *r)
{
    r->kept_valid = false;
    r->kept_len = 0;
}

void bo_curl_kept_unshow(bo_curl_rec *r)
{
    set_shown(r, false);
}

bool bo_curl_kept_worth(const bo_curl_rec *r, int code)
{
    return (code == CURLE_OK || code == CURLE_HTTP_RETURNED_ERROR) && r->mode == BO_HOLD_HOLD &&
           r->delivered == 0 && r->block_status >= 200;
}

/* The held bytes and the kept ones trade places. */
static void swap_buffers(bo_curl_rec *r)
{
    char *b = r->held;
    size_t len = r->held_len, cap = r->held_cap;

    r->held = r->kept;
    r->held_len = r->kept_len;
    r->held_cap = r->kept_cap;
    r->kept = b;
    r->kept_len = len;
    r->kept_cap = cap;
}

void bo_curl_kept_keep(bo_curl_rec *r, int code)
{
    bo_curl_kept_info *k = &r->kept_info;
    const char *type = NULL;

    swap_buffers(r);
    r->held_len = 0;
    r->kept_valid = true;
    k->code = code;
    k->have = 0;
    for (int i = 0; i < BO_KEPT_NLONG; i++)
        if (r->real->getinfo(r->h, kept_longs[i], &k->l[i]) == CURLE_OK)
            k->have |= 1u << i;
    for (int i = 0; i < BO_KEPT_NOFF; i++)
        if (r->real->getinfo(r->h, kept_offs[i], &k->off[i]) == CURLE_OK)
            k->have |= 1u << (BO_KEPT_NLONG + i);
    k->type_set = r->real->getinfo(r->h, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK &&
                  type != NULL && strlen(type) < sizeof k->type;
    if (k->type_set)
        strcpy(k->type, type);
}

/* Failures of the program's own making are its verdict, never replaced. */
static bool programs_own(int code)
{
    return code == CURLE_ABORTED_BY_CALLBACK || code == CURLE_WRITE_ERROR ||
           code == CURLE_READ_ERROR;
}

int bo_curl_kept_use(bo_curl_rec *r, int code)
{
    if (!r->kept_valid || code == CURLE_OK || code == CURLE_HTTP_RETURNED_ERROR ||
        programs_own(code) || r->delivered != 0)
        return code;
    swap_buffers(r);            /* the failed attempt's held bytes (if any) go */
    r->kept_len = 0;
    r->kept_valid = false;
    r->mode = BO_HOLD_HOLD;     /* the caller commits them */
    set_shown(r, true);
    return r->kept_info.code;
}

/* Where the off_t form of `info` is kept, -1: not kept. */
static int off_slot(CURLINFO info)
{
    for (int i = 0; i < BO_KEPT_NOFF; i++)
        if (kept_offs[i] == info)
            return i;
    return -1;
}

bool bo_curl_kept_info_of(const bo_curl_rec *r, CURLINFO info, void *arg)
{
    const bo_curl_kept_info *k = &r->kept_info;
    int i;

    if (!r->kept_shown || arg == NULL)
        return false;
    if (info == CURLINFO_CONTENT_TYPE) {
        *(const char **)arg = k->type_set ? k->type : NULL;
        return true;
    }
    for (i = 0; i < BO_KEPT_NLONG; i++)
        if (kept_longs[i] == info && (k->have & (1u << i))) {
            *(long *)arg = k->l[i];
            return true;
        }
    if ((i = off_slot(info)) >= 0 && (k->have & (1u << (BO_KEPT_NLONG + i)))) {
        *(curl_off_t *)arg = k->off[i];
        return true;
    }
    for (size_t a = 0; a < sizeof kept_aliases / sizeof kept_aliases[0]; a++) {
        if (kept_aliases[a].older != info || (i = off_slot(kept_aliases[a].off_t_form)) < 0 ||
            !(k->have & (1u << (BO_KEPT_NLONG + i))))
            continue;
        if ((info & CURLINFO_TYPEMASK) == CURLINFO_DOUBLE)
            *(double *)arg = (double)k->off[i];
        else
            *(long *)arg = (long)k->off[i];
        return true;
    }
    return false;
}
