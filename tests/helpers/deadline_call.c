/*
 * deadline_call MODE URL MS: one GET of URL with a program-side limit, as an
 * ordinary libcurl program would set it.
 *   timeout   CURLOPT_TIMEOUT_MS = MS;
 *   progress  an XFERINFOFUNCTION (NOPROGRESS 0) that returns 1 once MS ms
 *             have passed since the call began;
 *   oldprogress  the same with the older PROGRESSFUNCTION and PROGRESSDATA;
 *   alarm     a SIGALRM handler installed WITHOUT SA_RESTART that only sets
 *             a flag, the alarm set MS ms ahead (setitimer).
 * Writes the response's header lines and then its body to stdout, byte for
 * byte as libcurl hands them over, and one line to stderr:
 *   "code C status S elapsed_ms E flag F progress_calls P"
 * Exit status 0 (the figures are for the caller to judge).
 */
#define CURL_DISABLE_DEPRECATION 1 /* CURLOPT_PROGRESSFUNCTION is what is tested */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t g_flag;
static struct timespec g_start;
static long g_cancel_ms;
static long g_progress_calls;

static long elapsed_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - g_start.tv_sec) * 1000 + (now.tv_nsec - g_start.tv_nsec) / 1000000;
}

static void on_alarm(int sig)
{
    (void)sig;
    g_flag = 1;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)ud, (void)dt, (void)dn, (void)ut, (void)un;
    g_progress_calls++;
    return elapsed_ms() >= g_cancel_ms ? 1 : 0;
}

static int on_old_progress(void *ud, double dt, double dn, double ut, double un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    if (ud != &g_cancel_ms)
        return 1; /* PROGRESSDATA did not arrive: cancel at once, the test sees it */
    g_progress_calls++;
    return elapsed_ms() >= g_cancel_ms ? 1 : 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)ud;
    return fwrite(p, size, nmemb, stdout);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: deadline_call timeout|progress|oldprogress|alarm URL MS\n");
        return 2;
    }
    long ms = atol(argv[3]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    if (h == NULL)
        return 2;
    curl_easy_setopt(h, CURLOPT_URL, argv[2]);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_data);
    if (strcmp(argv[1], "timeout") == 0) {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
    } else if (strcmp(argv[1], "progress") == 0) {
        g_cancel_ms = ms;
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    } else if (strcmp(argv[1], "oldprogress") == 0) {
        g_cancel_ms = ms;
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_PROGRESSFUNCTION, on_old_progress);
        curl_easy_setopt(h, CURLOPT_PROGRESSDATA, &g_cancel_ms);
    } else if (strcmp(argv[1], "alarm") == 0) {
        struct sigaction sa;
        struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0; /* no SA_RESTART */
        if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0)
            return 2;
    } else {
        fprintf(stderr, "deadline_call: MODE is timeout, progress, oldprogress or alarm, not %s\n",
                argv[1]);
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &g_start);
    CURLcode rc = curl_easy_perform(h);
    long took = elapsed_ms(), status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    fflush(stdout);
    fprintf(stderr, "code %d status %ld elapsed_ms %ld flag %d progress_calls %ld\n", (int)rc,
            status, took, (int)g_flag, g_progress_calls);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return 0;
}
