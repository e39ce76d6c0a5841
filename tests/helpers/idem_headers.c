/*
 * idem_headers: a POST through libcurl with a header list of the program's
 * own; after the call (which the library retried with an Idempotency-Key
 * of its own, under BACKOFF_IDEMPOTENCY_KEY=1 against a server that reset
 * the first answer) the program's list must be exactly as it made it: the
 * same nodes, the same strings, no key in it, and the handle's next
 * request must carry the program's headers only.  Prints "ok" and exits 0.
 *
 *   idem_headers URL
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: idem_headers URL\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    struct curl_slist *list = curl_slist_append(NULL, "X-Mine: 1");
    list = curl_slist_append(list, "X-Also: 2");
    struct curl_slist *first = list, *second = list->next;
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "order=7");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 15L);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "the call: code %d, status %ld\n", (int)rc, status);
        return 1;
    }
    if (list != first || first->next != second || second->next != NULL ||
        strcmp(first->data, "X-Mine: 1") != 0 || strcmp(second->data, "X-Also: 2") != 0) {
        fprintf(stderr, "the program's list changed\n");
        return 1;
    }
    for (struct curl_slist *l = list; l != NULL; l = l->next)
        if (strncasecmp(l->data, "Idempotency-Key", 15) == 0) {
            fprintf(stderr, "a key in the program's list\n");
            return 1;
        }
    curl_slist_free_all(list);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    puts("ok");
    return 0;
}
