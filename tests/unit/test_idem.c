/*
 * Unit tests for bo_idem: fresh keys are UUID v4 (RFC 9562's
 * version and variant bits) in an sf-string, drawn from the caller's
 * generator (a seed repeats them, two seeds or two draws differ); the header
 * line is written like snprintf; and a header line is recognised as an
 * Idempotency-Key in every form a libcurl header list or a raw request has.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bo_idem.h"
#include "bo_rng.h"

/* The value is "xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx" in quotes, V in 8..b. */
static void check_shape(const char *v)
{
    ck_assert_uint_eq(strlen(v), BO_IDEM_VALUE_LEN);
    ck_assert_int_eq(v[0], '"');
    ck_assert_int_eq(v[BO_IDEM_VALUE_LEN - 1], '"');
    for (int i = 1; i < BO_IDEM_VALUE_LEN - 1; i++) {
        int at = i - 1;
        if (at == 8 || at == 13 || at == 18 || at == 23)
            ck_assert_msg(v[i] == '-', "%s: no '-' at %d", v, at);
        else
            ck_assert_msg(isxdigit((unsigned char)v[i]) && !isupper((unsigned char)v[i]),
                          "%s: '%c' at %d is not a lower-case hex digit", v, v[i], at);
    }
    ck_assert_msg(v[1 + 14] == '4', "%s: version %c, want 4", v, v[1 + 14]);
    ck_assert_msg(strchr("89ab", v[1 + 19]) != NULL, "%s: variant %c, want 8, 9, a or b", v,
                  v[1 + 19]);
}

START_TEST(test_key_shape)
{
    bo_rng rng;
    char v[BO_IDEM_VALUE_SIZE];
    bo_rng_seed(&rng, 42);
    for (int i = 0; i < 1000; i++) {
        bo_idem_key_new(&rng, v);
        check_shape(v);
    }
}
END_TEST

/* The 122 random bits come straight from the generator's two draws. */
START_TEST(test_key_from_generator)
{
    bo_rng a, b;
    char v[BO_IDEM_VALUE_SIZE];
    bo_rng_seed(&a, 7);
    b = a;
    uint64_t hi = bo_rng_next(&b), lo = bo_rng_next(&b);
    char want[BO_IDEM_VALUE_SIZE];
    hi = (hi & ~0xf000ULL) | 0x4000ULL;
    lo = (lo & ~(3ULL << 62)) | (2ULL << 62);
    snprintf(want, sizeof want, "\"%08llx-%04llx-%04llx-%04llx-%012llx\"",
             (unsigned long long)(hi >> 32), (unsigned long long)((hi >> 16) & 0xffff),
             (unsigned long long)(hi & 0xffff), (unsigned long long)(lo >> 48),
             (unsigned long long)(lo & 0xffffffffffffULL));
    bo_idem_key_new(&a, v);
    ck_assert_str_eq(v, want);
    /* Exactly two draws: the generators agree afterwards. */
    ck_assert(bo_rng_next(&a) == bo_rng_next(&b));
}
END_TEST

/* A seed repeats the keys (BACKOFF_SEED); draws and seeds differ. */
START_TEST(test_key_repeatable_and_distinct)
{
    enum { N = 2000 };
    static char keys[N][BO_IDEM_VALUE_SIZE];
    bo_rng r1, r2, r3;
    char v[BO_IDEM_VALUE_SIZE];
    bo_rng_seed(&r1, 123);
    bo_rng_seed(&r2, 123);
    bo_rng_seed(&r3, 124);
    for (int i = 0; i < N; i++) {
        bo_idem_key_new(&r1, keys[i]);
        bo_idem_key_new(&r2, v);
        ck_assert_str_eq(keys[i], v);
        bo_idem_key_new(&r3, v);
        ck_assert_str_ne(keys[i], v);
    }
    qsort(keys, N, sizeof keys[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 1; i < N; i++)
        ck_assert_str_ne(keys[i - 1], keys[i]);
}
END_TEST

START_TEST(test_header_line)
{
    bo_rng rng;
    char v[BO_IDEM_VALUE_SIZE], line[BO_IDEM_LINE_SIZE], small[20];
    bo_rng_seed(&rng, 1);
    bo_idem_key_new(&rng, v);
    ck_assert_uint_eq(bo_idem_header_line(v, line, sizeof line), BO_IDEM_LINE_LEN);
    ck_assert_uint_eq(strlen(line), BO_IDEM_LINE_LEN);
    ck_assert(strncmp(line, "Idempotency-Key: \"", 18) == 0);
    ck_assert_str_eq(line + 17, v);
    ck_assert_int_eq(bo_idem_header_kind(line, strlen(line)), BO_IDEM_LINE_KEY);
    /* Like snprintf: cut, NUL-terminated, the full length returned. */
    ck_assert_uint_eq(bo_idem_header_line(v, small, sizeof small), BO_IDEM_LINE_LEN);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_uint_eq(bo_idem_header_line(v, NULL, 0), BO_IDEM_LINE_LEN);
    ck_assert_uint_eq(bo_idem_header_line("abc", line, sizeof line), 20);
    ck_assert_str_eq(line, "Idempotency-Key: abc");
}
END_TEST

typedef struct kind_row {
    const char *line;
    bo_idem_line kind;
} kind_row;

/* clang-format off */
static const kind_row kind_rows[] = {
    {"Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"", BO_IDEM_LINE_KEY},
    {"idempotency-key: abc",                BO_IDEM_LINE_KEY},   /* names ignore case */
    {"IDEMPOTENCY-KEY:abc",                 BO_IDEM_LINE_KEY},   /* no space needed */
    {"Idempotency-Key:\t\"k\"",             BO_IDEM_LINE_KEY},
    {"Idempotency-Key: KG5LxwFBepaKHyUD",   BO_IDEM_LINE_KEY},   /* Stripe's bare form */
    {"Idempotency-Key: k\r\n",              BO_IDEM_LINE_KEY},   /* as in a raw request */
    {"Idempotency-Key: \"\"",               BO_IDEM_LINE_KEY},   /* an empty sf-string is a value */
    {"Idempotency-Key:",                    BO_IDEM_LINE_EMPTY}, /* libcurl: not sent */
    {"Idempotency-Key:   ",                 BO_IDEM_LINE_EMPTY},
    {"Idempotency-Key:\r\n",                BO_IDEM_LINE_EMPTY},
    {"Idempotency-Key;",                    BO_IDEM_LINE_EMPTY}, /* libcurl: sent empty */
    {"idempotency-key; ",                   BO_IDEM_LINE_EMPTY},
    {"Idempotency-Key;x",                   BO_IDEM_LINE_OTHER}, /* libcurl does not send it */
    {"Idempotency-Key : abc",               BO_IDEM_LINE_OTHER}, /* no space before the colon */
    {" Idempotency-Key: abc",               BO_IDEM_LINE_OTHER},
    {"Idempotency-Keys: abc",               BO_IDEM_LINE_OTHER},
    {"Idempotency-Ke: abc",                 BO_IDEM_LINE_OTHER},
    {"Idempotency-Key",                     BO_IDEM_LINE_OTHER},
    {"X-Idempotency-Key: abc",              BO_IDEM_LINE_OTHER},
    {"Idempotency: abc",                    BO_IDEM_LINE_OTHER},
    {"Content-Type: text/plain",            BO_IDEM_LINE_OTHER},
    {"",                                    BO_IDEM_LINE_OTHER},
};
/* clang-format on */

START_TEST(test_header_kind)
{
    const kind_row *w = &kind_rows[_i];
    ck_assert_msg(bo_idem_header_kind(w->line, strlen(w->line)) == w->kind,
                  "\"%s\": got %d, want %d", w->line, bo_idem_header_kind(w->line, strlen(w->line)),
                  w->kind);
}
END_TEST

/*
 * Only `len` bytes are read: a line cut before its value (a raw request's
 * buffer) has no key, one cut inside the name is another header, and a NUL
 * ends the line as in a libcurl list.
 */
/* A value alone, as a raw request's field gives it (bo_http): white space
 * alone is no key; a NUL ends it; only len bytes are read. */
START_TEST(test_value_kind)
{
    ck_assert_int_eq(bo_idem_value_kind("abc", 3), BO_IDEM_LINE_KEY);
    ck_assert_int_eq(bo_idem_value_kind(" \"k\" ", 5), BO_IDEM_LINE_KEY);
    ck_assert_int_eq(bo_idem_value_kind("\"\"", 2), BO_IDEM_LINE_KEY);
    ck_assert_int_eq(bo_idem_value_kind("", 0), BO_IDEM_LINE_EMPTY);
    ck_assert_int_eq(bo_idem_value_kind(" \t\r\n", 4), BO_IDEM_LINE_EMPTY);
    ck_assert_int_eq(bo_idem_value_kind("  abc", 2), BO_IDEM_LINE_EMPTY);
    ck_assert_int_eq(bo_idem_value_kind(" \0abc", 5), BO_IDEM_LINE_EMPTY);
}
END_TEST

START_TEST(test_header_kind_bounded)
{
    const char *l = "Idempotency-Key: abc";
    ck_assert_int_eq(bo_idem_header_kind(l, 20), BO_IDEM_LINE_KEY);
    ck_assert_int_eq(bo_idem_header_kind(l, 18), BO_IDEM_LINE_KEY);
    ck_assert_int_eq(bo_idem_header_kind(l, 17), BO_IDEM_LINE_EMPTY);
    ck_assert_int_eq(bo_idem_header_kind(l, 16), BO_IDEM_LINE_EMPTY);
    ck_assert_int_eq(bo_idem_header_kind(l, 15), BO_IDEM_LINE_OTHER);
    ck_assert_int_eq(bo_idem_header_kind(l, 3), BO_IDEM_LINE_OTHER);
    ck_assert_int_eq(bo_idem_header_kind(l, 0), BO_IDEM_LINE_OTHER);
    ck_assert_int_eq(bo_idem_header_kind(NULL, 10), BO_IDEM_LINE_OTHER);
    /* A heap copy of exactly the bytes given (ASan/valgrind see any over-read). */
    for (size_t n = 0; n <= 20; n++) {
        char *p = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(p);
        memcpy(p, l, n);
        (void)bo_idem_header_kind(p, n);
        free(p);
    }
    const char nul[] = "Idempotency-Key:\0abc";
    ck_assert_int_eq(bo_idem_header_kind(nul, sizeof nul - 1), BO_IDEM_LINE_EMPTY);
    const char early[] = "Idempo\0ency-Key: abc";
    ck_assert_int_eq(bo_idem_header_kind(early, sizeof early - 1), BO_IDEM_LINE_OTHER);
}
END_TEST

/* A body's fingerprint: never 0 ("not known"), the bytes and the length count. */
START_TEST(test_body_fp)
{
    ck_assert(bo_idem_body_fp("", 0) != 0);
    ck_assert(bo_idem_body_fp("order=1", 7) == bo_idem_body_fp("order=1", 7));
    ck_assert(bo_idem_body_fp("order=1", 7) != bo_idem_body_fp("order=2", 7));
    ck_assert(bo_idem_body_fp("a\0", 2) != bo_idem_body_fp("a", 1));
    ck_assert(bo_idem_body_fp("ab", 1) == bo_idem_body_fp("a", 1));
}
END_TEST

/*
 * The program's next try sends the stored key again unless both bodies are
 * known and differ (another order to the same URL gets a key of its own).
 */
START_TEST(test_key_reusable)
{
    const char *k = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";
    ck_assert(bo_idem_key_reusable(k, 5, 5));
    ck_assert(!bo_idem_key_reusable(k, 5, 6));
    ck_assert(bo_idem_key_reusable(k, 0, 6));
    ck_assert(bo_idem_key_reusable(k, 5, 0));
    ck_assert(bo_idem_key_reusable(k, 0, 0));
    ck_assert(!bo_idem_key_reusable("", 0, 0));
    ck_assert(!bo_idem_key_reusable(NULL, 5, 5));
}
END_TEST

/*
 * One rule for both hook families: POST and PATCH, spelled as HTTP spells
 * them, whose headers say nothing of a key get the shim's.
 */
START_TEST(test_wants_key)
{
    ck_assert(bo_idem_wants_key("POST", BO_IDEM_LINE_OTHER));
    ck_assert(bo_idem_wants_key("PATCH", BO_IDEM_LINE_OTHER));
    ck_assert(!bo_idem_wants_key("POST", BO_IDEM_LINE_KEY));   /* the program's own */
    ck_assert(!bo_idem_wants_key("POST", BO_IDEM_LINE_EMPTY)); /* it spoke of one */
    ck_assert(!bo_idem_wants_key("post", BO_IDEM_LINE_OTHER)); /* another method to HTTP */
    ck_assert(!bo_idem_wants_key("Patch", BO_IDEM_LINE_OTHER));
    ck_assert(!bo_idem_wants_key("PUT", BO_IDEM_LINE_OTHER));  /* idempotent already */
    ck_assert(!bo_idem_wants_key("GET", BO_IDEM_LINE_OTHER));
    ck_assert(!bo_idem_wants_key(NULL, BO_IDEM_LINE_OTHER));
}
END_TEST

/* The previous try's key when reusable for this body, else a fresh one. */
START_TEST(test_key_for)
{
    const char *k = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";
    char out[BO_IDEM_VALUE_SIZE], fresh[BO_IDEM_VALUE_SIZE];
    bo_rng rng, again;
    bo_rng_seed(&rng, 7);
    bo_rng_seed(&again, 7);
    bo_idem_key_for(k, 5, 5, &rng, out);
    ck_assert_str_eq(out, k);
    bo_idem_key_for(k, 0, 9, &rng, out); /* a body not known on one side */
    ck_assert_str_eq(out, k);
    bo_idem_key_for(k, 5, 6, &rng, out); /* another order: its own key */
    bo_idem_key_new(&again, fresh);
    ck_assert_str_eq(out, fresh);
    bo_idem_key_for(NULL, 0, 0, &rng, out);
    ck_assert_str_ne(out, k);
    ck_assert_str_ne(out, fresh);
}
END_TEST

static Suite *idem_suite(void)
{
    Suite *s = suite_create("idem");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_key_shape);
    tcase_add_test(tc, test_key_from_generator);
    tcase_add_test(tc, test_key_repeatable_and_distinct);
    tcase_add_test(tc, test_header_line);
    tcase_add_loop_test(tc, test_header_kind, 0, (int)(sizeof kind_rows / sizeof kind_rows[0]));
    tcase_add_test(tc, test_value_kind);
    tcase_add_test(tc, test_header_kind_bounded);
    tcase_add_test(tc, test_body_fp);
    tcase_add_test(tc, test_key_reusable);
    tcase_add_test(tc, test_wants_key);
    tcase_add_test(tc, test_key_for);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(idem_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
