/*
 * Unit tests for bo_url: the plain URL reader answers for the URLs
 * programs set every day, with the host as written and the scheme's
 * default port, and leaves every other shape to libcurl (which
 * tests/fuzz/fuzz_url_origin.c checks it against).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bo_url.h"

static void expect(const char *url, const char *scheme, const char *host, unsigned port)
{
    bo_url_origin o;
    ck_assert_msg(bo_url_plain_origin(url, &o), "\"%s\" not read", url);
    ck_assert_str_eq(o.scheme, scheme);
    ck_assert_str_eq(o.host, host);
    ck_assert_uint_eq(o.port, port);
}

static void left_to_libcurl(const char *url)
{
    bo_url_origin o;
    ck_assert_msg(!bo_url_plain_origin(url, &o), "\"%s\" read, should be left to libcurl", url);
}

START_TEST(test_plain_urls)
{
    expect("http://127.0.0.1:8080/item/1", "http", "127.0.0.1", 8080);
    expect("https://Example.COM/a?b#c", "https", "Example.COM", 443);
    expect("HTTP://api.example.org", "http", "api.example.org", 80);
    expect("http://d9999.test:80?x=1", "http", "d9999.test", 80);
    expect("http://host#frag", "http", "host", 80);
    expect("https://my_host-1.example.:65535/", "https", "my_host-1.example.", 65535);
    expect("http://0.0.0.0/", "http", "0.0.0.0", 80);
    expect("http://255.255.255.255/", "http", "255.255.255.255", 80);
}
END_TEST

START_TEST(test_other_shapes)
{
    left_to_libcurl(NULL);
    left_to_libcurl("");
    left_to_libcurl("example.com/path");         /* no scheme: libcurl guesses */
    left_to_libcurl("ftp://example.com/");       /* another scheme */
    left_to_libcurl("httpx://example.com/");
    left_to_libcurl("http:/example.com/");
    left_to_libcurl("http://user:pw@example.com/"); /* user info */
    left_to_libcurl("http://[::1]:8080/");          /* IPv6 literal */
    left_to_libcurl("http://ex%41mple.com/");       /* percent-encoded host */
    left_to_libcurl("http://127.1/");               /* libcurl rewrites IPv4 forms */
    left_to_libcurl("http://0x7f.0.0.1/");
    left_to_libcurl("http://017.0.0.1/");
    left_to_libcurl("http://256.0.0.1/");
    left_to_libcurl("http://1.2.3.4./");
    left_to_libcurl("http://cafe.face/");           /* could be hex: left to libcurl */
    left_to_libcurl("http://host:/");               /* empty, zero-led, too big port */
    left_to_libcurl("http://host:080/");
    left_to_libcurl("http://host:65536/");
    left_to_libcurl("http://host:8o/");
    left_to_libcurl("http:///path");                /* no host */
    left_to_libcurl("http://.host/");
    left_to_libcurl("http://a..b/");
    left_to_libcurl("http://host/a b");             /* a space, a control byte, UTF-8 */
    left_to_libcurl("http://host/\x01");
    left_to_libcurl("http://h\xc3\xa9st/");
    left_to_libcurl("http://host\\path/");
}
END_TEST

START_TEST(test_host_length)
{
    char url[400];
    strcpy(url, "http://");
    memset(url + 7, 'g', 253);
    strcpy(url + 7 + 253, "/");
    bo_url_origin o;
    ck_assert(bo_url_plain_origin(url, &o));
    ck_assert_uint_eq(strlen(o.host), 253);
    memset(url + 7, 'g', 254);
    strcpy(url + 7 + 254, "/");
    ck_assert(!bo_url_plain_origin(url, &o));
}
END_TEST

/* A configuration with BACKOFF_HOSTS set to hosts (NULL: none). */
static const char *g_hosts;
static const char *hosts_env(void *ctx, const char *name)
{
    (void)ctx;
    return strcmp(name, "BACKOFF_HOSTS") == 0 ? g_hosts : NULL;
}

static bo_config with_hosts(const char *hosts)
{
    bo_config c;
    char err[256];
    g_hosts = hosts;
    ck_assert_int_eq(bo_config_load(&c, hosts_env, NULL, err, sizeof err), 0);
    return c;
}

/* One key for every hook family: lower case, brackets kept, the port's digits. */
START_TEST(test_dest_key)
{
    bo_config all = with_hosts(NULL);
    char k[64];
    ck_assert_int_eq(bo_url_dest_key(&all, "HTTPS", 5, "Api.Example.COM", 15, 443, k, sizeof k), 0);
    ck_assert_str_eq(k, "https://api.example.com:443");
    ck_assert_int_eq(bo_url_dest_key(&all, "tcp", 3, "[::1]", 5, 8080, k, sizeof k), 0);
    ck_assert_str_eq(k, "tcp://[::1]:8080");
    ck_assert_int_eq(bo_url_dest_key(&all, "http", 4, "10.0.0.1", 8, 1, k, sizeof k), 0);
    ck_assert_str_eq(k, "http://10.0.0.1:1");
    /* too long for the buffer: refused, nothing half written relied on */
    ck_assert_int_eq(bo_url_dest_key(&all, "http", 4, "example.com", 11, 80, k, 19), -1);
    ck_assert_int_eq(bo_url_dest_key(&all, "http", 4, "example.com", 11, 80, k, 23), 0);
    ck_assert_str_eq(k, "http://example.com:80");
    /* BACKOFF_HOSTS: the name (no brackets, any case) and the port */
    bo_config some = with_hosts("api.example.com:443,[::1]");
    const char *h = "API.example.com";
    ck_assert_int_eq(bo_url_dest_key(&some, "https", 5, h, 15, 443, k, sizeof k), 0);
    ck_assert_int_eq(bo_url_dest_key(&some, "https", 5, h, 15, 8443, k, sizeof k), -1);
    ck_assert_int_eq(bo_url_dest_key(&some, "tcp", 3, "[::1]", 5, 22, k, sizeof k), 0);
    ck_assert_int_eq(bo_url_dest_key(&some, "tcp", 3, "127.0.0.1", 9, 22, k, sizeof k), -1);
}
END_TEST

/* A Host field's value, as the http room gets it; the scheme's port by default. */
START_TEST(test_authority_key)
{
    bo_config all = with_hosts(NULL);
    char k[64];
    ck_assert_int_eq(bo_url_authority_key(&all, "http", 80, "Example.com", 11, k, sizeof k), 0);
    ck_assert_str_eq(k, "http://example.com:80");
    ck_assert_int_eq(bo_url_authority_key(&all, "https", 443, "h:8443", 6, k, sizeof k), 0);
    ck_assert_str_eq(k, "https://h:8443");
    ck_assert_int_eq(bo_url_authority_key(&all, "http", 80, "[::1]:81", 8, k, sizeof k), 0);
    ck_assert_str_eq(k, "http://[::1]:81");
    ck_assert_int_eq(bo_url_authority_key(&all, "http", 80, "[::1]", 5, k, sizeof k), 0);
    ck_assert_str_eq(k, "http://[::1]:80");
    static const char *const bad[] = {"", ":80", "h:", "h:0", "h:65536", "h:8x", "h h", "h/x",
                                      "[::1", "[]", "[::1]x", "h:80:81", "a@b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(bo_url_authority_key(&all, "http", 80, bad[i], strlen(bad[i]), k, sizeof k) ==
                          -1,
                      "\"%s\" should not be a Host", bad[i]);
    bo_config some = with_hosts("example.com");
    ck_assert_int_eq(bo_url_authority_key(&some, "http", 80, "example.com:8080", 16, k, sizeof k),
                     0);
    ck_assert_int_eq(bo_url_authority_key(&some, "http", 80, "other.com", 9, k, sizeof k), -1);
}
END_TEST

/* A UNIX socket: its path, an abstract name with '@'; never under BACKOFF_HOSTS. */
START_TEST(test_unix_key)
{
    bo_config all = with_hosts(NULL);
    char k[64];
    ck_assert_int_eq(bo_url_unix_key(&all, "/run/x.sock\0junk", 17, k, sizeof k), 0);
    ck_assert_str_eq(k, "unix:/run/x.sock");
    ck_assert_int_eq(bo_url_unix_key(&all, "\0abstract", 9, k, sizeof k), 0);
    ck_assert_str_eq(k, "unix:@abstract");
    bo_config some = with_hosts("example.com");
    ck_assert_int_eq(bo_url_unix_key(&some, "/run/x.sock", 11, k, sizeof k), -1);
}
END_TEST

static Suite *url_suite(void)
{
    Suite *s = suite_create("url");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_plain_urls);
    tcase_add_test(tc, test_other_shapes);
    tcase_add_test(tc, test_host_length);
    tcase_add_test(tc, test_dest_key);
    tcase_add_test(tc, test_authority_key);
    tcase_add_test(tc, test_unix_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(url_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
