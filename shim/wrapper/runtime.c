/*
 * runtime.c: for `backoff --check` (check.c), what a program loads or runs at
 * run time that its ELF file does not name (runtime.h): a Java launcher's
 * runtime, and the program a version manager's shim script runs.
 */
#include "wrapper/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * A Java launcher (java, javac, jshell...: their libjli in lib/, or
 * jre/lib/ARCH/jli/ before JDK 9) loads the JVM named first as KNOWN in
 * that directory's jvm.cfg (-server, else -client...), LIBDIR/NAME/libjvm.so,
 * and the JVM loads the class library's natives from LIBDIR as classes
 * need them: libjava.so at start, libnet.so and libnio.so for java.net and
 * java.nio's sockets (HttpURLConnection, HttpClient).  Their paths in
 * libs (n of them); false when jli is not a launcher's or no libjvm.so is
 * there.
 */
bool bo_check_java_runtime(const char *jli, char libs[BO_CHECK_JVM_LIBS][PATH_MAX], int *n)
{
    static const char *const natives[] = {"libjava.so", "libnet.so", "libnio.so"};
    char dir[PATH_MAX], cfg[PATH_MAX + 16], line[256], vm[64] = "server";

    *n = 0;
    if (realpath(jli, dir) == NULL || strrchr(dir, '/') == NULL)
        return false;
    *strrchr(dir, '/') = '\0';
    char *last = strrchr(dir, '/');
    if (last != NULL && strcmp(last, "/jli") == 0)
        *last = '\0';
    snprintf(cfg, sizeof cfg, "%s/jvm.cfg", dir);
    FILE *fp = fopen(cfg, "r");
    while (fp != NULL && fgets(line, sizeof line, fp) != NULL) {
        char name[64], kind[32];
        if (sscanf(line, "-%63s %31s", name, kind) == 2 && strcmp(kind, "KNOWN") == 0) {
            snprintf(vm, sizeof vm, "%s", name);
            break;
        }
    }
    if (fp != NULL)
        fclose(fp);
    if (snprintf(libs[0], PATH_MAX, "%s/%s/libjvm.so", dir, vm) >= PATH_MAX ||
        access(libs[0], R_OK) != 0)
        return false;
    *n = 1;
    for (size_t i = 0; i < sizeof natives / sizeof natives[0]; i++)
        if (snprintf(libs[*n], PATH_MAX, "%s/%s", dir, natives[i]) < PATH_MAX &&
            access(libs[*n], R_OK) == 0)
            (*n)++;
    return true;
}

/*
 * A version manager's shim script (pyenv, rbenv, nodenv, asdf...): a line
 * `exec "MANAGER" exec "$program" "$@"` (or the program's name in place of
 * "$program", as asdf writes it).  The manager in mgr, the program it is
 * asked for (the script's own name for "$program") in prog, and the
 * manager's root variable its shim exports (`export PYENV_ROOT="..."`) in
 * root_var/root; false when the script is not such a shim.
 */
bool bo_check_manager_shim(const char *path, char *mgr, size_t mgrlen, char *prog, size_t proglen,
                         char *root_var, char *root, size_t rootlen)
{
    char line[PATH_MAX + 64], m[PATH_MAX], arg[256];
    bool found = false;
    FILE *fp = fopen(path, "r");

    root_var[0] = root[0] = '\0';
    for (int n = 0; fp != NULL && n < 64 && fgets(line, sizeof line, fp) != NULL; n++) {
        char var[64], val[PATH_MAX];
        const char *p = line + strspn(line, " \t");
        if (sscanf(p, "export %63[A-Z_]=\"%4095[^\"]\"", var, val) == 2 &&
            strstr(var, "_ROOT") != NULL) {
            snprintf(root_var, 64, "%s", var);
            snprintf(root, rootlen, "%s", val);
        }
        if (!found && (sscanf(p, "exec \"%4095[^\"]\" exec %255s", m, arg) == 2 ||
                       sscanf(p, "exec %4095s exec %255s", m, arg) == 2)) {
            size_t al = strlen(arg);
            if (al >= 2 && arg[0] == '"' && arg[al - 1] == '"') {
                arg[al - 1] = '\0';
                memmove(arg, arg + 1, al - 1);
            }
            const char *base = strrchr(path, '/');
            const char *name = strcmp(arg, "$program") != 0 ? arg : base ? base + 1 : path;
            found = m[0] == '/' && snprintf(mgr, mgrlen, "%s", m) < (int)mgrlen &&
                    snprintf(prog, proglen, "%s", name) < (int)proglen;
        }
    }
    if (fp != NULL)
        fclose(fp);
    return found;
}

/*
 * `MANAGER which PROGRAM`, as the shim's own exec would resolve it (the
 * environment as it is, the shim's root variable set): its first line of
 * output in out (its error's in out when it fails); true when it named a
 * program.  Bounded: a manager that does not answer within 10 s is killed.
 */
bool bo_check_manager_which(const char *mgr, const char *prog, const char *root_var,
                          const char *root, char *out, size_t outlen)
{
    int fds[2];
    pid_t pid;

    out[0] = '\0';
    if (pipe(fds) != 0)
        return false;
    if ((pid = fork()) < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (root_var[0] != '\0')
            setenv(root_var, root, 1);
        alarm(10);
        execl(mgr, mgr, "which", prog, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t n;
    while (used + 1 < outlen && (n = read(fds[0], out + used, outlen - 1 - used)) > 0)
        used += (size_t)n;
    out[used] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out[strcspn(out, "\r\n")] = '\0';
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && out[0] == '/' &&
           access(out, X_OK) == 0;
}
