/*
 * idle_fork PORT [exit]: a process with an idle host-wide attachment forks,
 * and its child uses the same destinations.  Two destinations, "a.test" and
 * "b.test", both routed to 127.0.0.1:PORT (CURLOPT_CONNECT_TO), one handle:
 *
 *   1. GET a, then GET b: a is idle in this process, b in use (the handle
 *      points at it).  Prints "ready1 PID" and waits for a line on stdin.
 *   2. fork.  The child GETs a, b and a again on the inherited handle, then
 *      cleans it up and exits with exit(): 0 when every call answered 200.
 *      The parent waits for it, prints "ready2 CHILD-STATUS", and waits for
 *      a line on stdin.
 *   3. The parent GETs a again, cleans the handle up, prints "done" and
 *      exits 0 when every call of its own answered 200.
 *
 * Between the steps the test reads the slots (share_dump): the parent's
 * entries must be as it left them, the child's gone after its exit.
 *
 * With "exit": step 1, then, on the line, the handle is cleaned up and the
 * process exits (exit(), its destructors: the stats, the idle entries'
 * detach) without forking: the test holds a's slot lock meanwhile.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t sink(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    (void)ud;
    return size * nmemb;
}

static int get(CURL *h, long port, const char *host)
{
    char url[128];
    long status = 0;

    snprintf(url, sizeof url, "http://%s:%ld/item/1", host, port);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (curl_easy_perform(h) != CURLE_OK)
        return 1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? 0 : 1;
}

static void wait_line(void)
{
    char line[64];
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL)
        exit(3);
}

int main(int argc, char **argv)
{
    char connect_to[64];
    int bad = 0;

    if (argc != 2 && (argc != 3 || strcmp(argv[2], "exit") != 0)) {
        fprintf(stderr, "usage: idle_fork PORT [exit]\n");
        return 2;
    }
    long port = strtol(argv[1], NULL, 10);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    snprintf(connect_to, sizeof connect_to, "::127.0.0.1:%ld", port);
    struct curl_slist *ct = curl_slist_append(NULL, connect_to);
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, ct);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    bad += get(h, port, "a.test");
    bad += get(h, port, "b.test");
    printf("ready1 %d\n", (int)getpid());
    wait_line();
    if (argc == 3) {
        curl_easy_cleanup(h);
        curl_slist_free_all(ct);
        printf("exiting %d\n", bad);
        fflush(stdout);
        exit(bad == 0 ? 0 : 1);
    }
    pid_t child = fork();
    if (child < 0)
        return 2;
    if (child == 0) {
        int cbad = get(h, port, "a.test") + get(h, port, "b.test") + get(h, port, "a.test");
        curl_easy_cleanup(h);
        exit(cbad == 0 ? 0 : 1);
    }
    int st = 0;
    alarm(30);
    if (waitpid(child, &st, 0) != child)
        return 2;
    alarm(0);
    printf("ready2 %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    wait_line();
    bad += get(h, port, "a.test");
    curl_easy_cleanup(h);
    curl_slist_free_all(ct);
    printf("done %d\n", bad);
    return bad == 0 ? 0 : 1;
}
