/*
 * backoff: run a command with libbackoff.so preloaded.
 *
 *   backoff [-p POLICY] [-n ATTEMPTS] [--stats FILE] [--trace FILE] [-v]
 *           [--check] [--print-config] [--variables] [--help] [--version]
 *           [--] CMD [ARGS]
 *   backoff --status | --reset
 *
 * Options become BACKOFF_* variables, the whole configuration is checked
 * with the same parser the library uses (exit 2 on a bad value), the
 * absolute path of the library goes in front of any LD_PRELOAD, and the
 * command is exec'd, so its exit status is ours (127: not found, 126: not
 * executable).
 *
 * `backoff --check CMD` also tells, before CMD runs, whether the library
 * will reach CMD's libcurl: linked dynamically (DT_NEEDED, followed through
 * the dependencies), loaded at run time (CMD or a script's interpreter
 * imports dlopen), linked statically, not linked at all, or out of reach
 * because CMD is setuid/setgid or a static program.
 *
 * `backoff --status` prints what this user's processes share about each
 * destination (BACKOFF_SHARE=host, shim_share.c), one line each;
 * `backoff --reset` makes every destination start fresh.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bo_config.h"
#include "bo_shim.h"
#include "shim_share.h"

#define LIB_NAME "libbackoff.so"

static void usage(FILE *out)
{
    size_t col = 0;

    fputs("usage: backoff [-p POLICY] [-n ATTEMPTS] [--stats FILE] [--trace FILE] [-v]\n"
          "               [--check] [--print-config] [--variables] [--help] [--version]\n"
          "               [--] CMD [ARGS]\n"
          "       backoff --status | --reset\n"
          "\n"
          "Runs CMD with libbackoff.so preloaded: its libcurl transfers and blocking\n"
          "connect() calls are retried politely under the chosen policy.\n"
          "\n"
          "  -p, --policy POLICY   BACKOFF_POLICY, one of (default aimd):",
          out);
    /* the policy list comes from the library's own table, wrapped at 80 columns */
    col = 80;
    for (int k = 0; k < BO_POLICY_COUNT; k++) {
        const char *name = bo_policy_name((bo_policy_kind)k);
        if (col + 1 + strlen(name) > 80) {
            fputs("\n                       ", out);
            col = 23;
        }
        col += (size_t)fprintf(out, " %s", name);
    }
    fputs("\n", out);
    fputs("  -n, --attempts N      BACKOFF_MAX_ATTEMPTS (first attempt included; 0: no limit)\n"
          "      --stats FILE      BACKOFF_STATS: JSON stats at exit (FILE or 'stderr')\n"
          "      --trace FILE      BACKOFF_TRACE: one CSV row per attempt\n"
          "  -v, --verbose         BACKOFF_VERBOSE=1: one stderr line per retry\n"
          "      --check [CMD]     validate the BACKOFF_* configuration; exit 0 or 2;\n"
          "                        with CMD, also tell whether CMD's libcurl will be reached\n"
          "                        (exit 0: it will, or may when CMD loads it at run time;\n"
          "                        1: it will not)\n"
          "      --print-config    print the effective configuration as BACKOFF_X=value\n"
          "                        lines (they can be fed back as the environment) and exit\n"
          "      --variables       print the table of every BACKOFF_* variable and exit\n"
          "      --status          print what this user's processes share about each\n"
          "                        destination (BACKOFF_SHARE=host): destination, window,\n"
          "                        pace, in flight, processes, last throttle, last success\n"
          "      --reset           make every shared destination start fresh\n"
          "      --help, --version\n"
          "\n"
          "Every other BACKOFF_* variable of the environment applies as well.\n",
          out);
}

/*
 * Every variable as a Markdown table, from the library's variable table:
 * the README's table is this output (tests/integration/test_shim_config.sh
 * compares them).
 */
static void print_variables(void)
{
    size_t n = 0;
    const bo_var *v = bo_config_vars(&n);
    char what[512];

    puts("| Variable | Accepted | Default | What it does |");
    puts("| --- | --- | --- | --- |");
    for (size_t i = 0; i < n; i++) {
        bo_var_accepted(&v[i], what, sizeof what);
        bool literal = strcmp(v[i].deflt, v[i].default_shown) == 0;
        printf("| `%s` | %s | %s%s%s | %s |\n", v[i].name, what, literal ? "`" : "",
               v[i].default_shown, literal ? "`" : "", v[i].doc);
    }
}

/* shim_share.c's once, in this single-threaded program. */
void bo_shim_once(int *done, void (*fn)(void))
{
    if (!*done) {
        fn();
        *done = 1;
    }
}

static const char *env_get(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

/* Set a path variable, made absolute so that it survives a chdir. */
static int set_path_var(const char *name, const char *value)
{
    char cwd[PATH_MAX], buf[PATH_MAX * 2];

    if (value[0] == '/' || value[0] == '\0' || strcmp(value, "stderr") == 0 ||
        getcwd(cwd, sizeof cwd) == NULL)
        return setenv(name, value, 1);
    if (snprintf(buf, sizeof buf, "%s/%s", cwd, value) >= (int)sizeof buf)
        return setenv(name, value, 1);
    return setenv(name, buf, 1);
}

/*
 * Find libbackoff.so from the wrapper's own location (never the current
 * directory): next to it (the build tree), or $PREFIX/lib/backoff/ for
 * $PREFIX/bin/backoff (the installed layout).  Writes an absolute path.
 */
static int find_library(char *out, size_t outlen)
{
    char self[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    static const char *const rel[] = {"/" LIB_NAME, "/../lib/backoff/" LIB_NAME};

    if (n <= 0)
        return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s%s", self, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL && strlen(out) < outlen)
            return 0;
    }
    return -1;
}

/* LD_PRELOAD = library, then whatever was there already. */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    char *v = NULL;
    int rc;

    if (old == NULL || old[0] == '\0')
        return setenv("LD_PRELOAD", lib, 1);
    if (asprintf(&v, "%s %s", lib, old) < 0)
        return -1;
    rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

/* ---- backoff --check CMD: will the library reach CMD's libcurl? ------ */

#define MAX_OBJS 256

typedef struct elf_facts {
    bool elf, interp;        /* an ELF file; it has a dynamic linker (PT_INTERP) */
    bool defines_curl;       /* defines curl_easy_perform: libcurl linked in */
    bool imports_dlopen;     /* may load libraries at run time */
    bool go, rust;           /* hints for a program with its own HTTP stack */
    bool curl_string;        /* carries libcurl's version string */
    char needed[64][256];
    int nneeded;
    char runpath[1024];
} elf_facts;

static const ElfW(Shdr) *section(const unsigned char *f, size_t len, const ElfW(Ehdr) *eh, size_t i)
{
    size_t off = eh->e_shoff + i * sizeof(ElfW(Shdr));
    if (eh->e_shentsize != sizeof(ElfW(Shdr)) || off + sizeof(ElfW(Shdr)) > len)
        return NULL;
    return (const ElfW(Shdr) *)(f + off);
}

/* A string of a string table section, or NULL when out of bounds. */
static const char *str_at(const unsigned char *f, size_t len, const ElfW(Shdr) *strtab, size_t i)
{
    if (strtab == NULL || strtab->sh_offset >= len || i >= strtab->sh_size ||
        strtab->sh_offset + strtab->sh_size > len)
        return NULL;
    const char *p = (const char *)f + strtab->sh_offset + i;
    return memchr(p, '\0', strtab->sh_size - i) != NULL ? p : NULL;
}

/* Read what matters of the ELF file at path (from its section headers). */
static int elf_read(const char *path, elf_facts *ef)
{
    memset(ef, 0, sizeof *ef);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    unsigned char *f = NULL;
    size_t len;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(ElfW(Ehdr)) ||
        st.st_size > ((off_t)1 << 31)) {
        close(fd);
        return 0;
    }
    len = (size_t)st.st_size;
    f = malloc(len);
    if (f == NULL || read(fd, f, len) != (ssize_t)len) {
        free(f);
        close(fd);
        return -1;
    }
    close(fd);
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32))
        goto out;
    ef->elf = true;
    for (size_t i = 0; i < eh->e_phnum; i++) {
        size_t off = eh->e_phoff + i * sizeof(ElfW(Phdr));
        if (eh->e_phentsize != sizeof(ElfW(Phdr)) || off + sizeof(ElfW(Phdr)) > len)
            break;
        if (((const ElfW(Phdr) *)(f + off))->p_type == PT_INTERP)
            ef->interp = true;
    }
    const ElfW(Shdr) *shstr = section(f, len, eh, eh->e_shstrndx);
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const ElfW(Shdr) *sh = section(f, len, eh, i);
        if (sh == NULL || sh->sh_offset > len || sh->sh_size > len - sh->sh_offset)
            continue;
        const char *sname = str_at(f, len, shstr, sh->sh_name);
        if (sname != NULL && strcmp(sname, ".go.buildinfo") == 0)
            ef->go = true;
        const ElfW(Shdr) *strtab =
            sh->sh_link < eh->e_shnum ? section(f, len, eh, sh->sh_link) : NULL;
        if (sh->sh_type == SHT_DYNAMIC) {
            const ElfW(Dyn) *d = (const ElfW(Dyn) *)(f + sh->sh_offset);
            for (size_t k = 0; k < sh->sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++) {
                const char *v = str_at(f, len, strtab, d[k].d_un.d_val);
                if (v == NULL)
                    continue;
                if (d[k].d_tag == DT_NEEDED && ef->nneeded < 64)
                    snprintf(ef->needed[ef->nneeded++], sizeof ef->needed[0], "%s", v);
                else if (d[k].d_tag == DT_RUNPATH || (d[k].d_tag == DT_RPATH && !ef->runpath[0]))
                    snprintf(ef->runpath, sizeof ef->runpath, "%s", v);
            }
        } else if (sh->sh_type == SHT_DYNSYM || sh->sh_type == SHT_SYMTAB) {
            const ElfW(Sym) *sym = (const ElfW(Sym) *)(f + sh->sh_offset);
            for (size_t k = 0; k < sh->sh_size / sizeof *sym; k++) {
                const char *n = str_at(f, len, strtab, sym[k].st_name);
                if (n == NULL || n[0] == '\0')
                    continue;
                if (strcmp(n, "curl_easy_perform") == 0 && sym[k].st_shndx != SHN_UNDEF)
                    ef->defines_curl = true;
                else if ((strcmp(n, "dlopen") == 0 || strcmp(n, "dlmopen") == 0) &&
                         sym[k].st_shndx == SHN_UNDEF)
                    ef->imports_dlopen = true;
            }
        }
    }
    ef->curl_string = memmem(f, len, "libcurl/", 8) != NULL;
    ef->go = ef->go || memmem(f, len, "\xff Go buildinf:", 14) != NULL;
    ef->rust = memmem(f, len, "/rustc/", 7) != NULL;
out:
    free(f);
    return 0;
}

/* Find a DT_NEEDED name as the dynamic linker would (without its cache). */
static bool find_needed(const char *name, const char *runpath, const char *origin, char *out,
                        size_t outlen)
{
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                       "/lib64", "/usr/lib64", "/lib", "/usr/lib",
                                       "/usr/local/lib"};
    char list[2048];
    const char *ld = getenv("LD_LIBRARY_PATH");

    if (strchr(name, '/') != NULL)
        return snprintf(out, outlen, "%s", name) < (int)outlen && access(out, R_OK) == 0;
    snprintf(list, sizeof list, "%s:%s", runpath, ld != NULL ? ld : "");
    for (char *save = NULL, *d = strtok_r(list, ":", &save); d != NULL;
         d = strtok_r(NULL, ":", &save)) {
        int n = strncmp(d, "$ORIGIN", 7) == 0
                    ? snprintf(out, outlen, "%s%s/%s", origin, d + 7, name)
                    : snprintf(out, outlen, "%s/%s", d, name);
        if (n > 0 && (size_t)n < outlen && access(out, R_OK) == 0)
            return true;
    }
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(out, outlen, "%s/%s", dirs[i], name);
        if (access(out, R_OK) == 0)
            return true;
    }
    return false;
}

static bool base_is(const char *path, const char *prefix)
{
    const char *b = strrchr(path, '/');
    b = b != NULL ? b + 1 : path;
    return strncmp(b, prefix, strlen(prefix)) == 0;
}

/* CMD as execvp would find it (PATH), in out. */
static bool find_cmd(const char *cmd, char *out, size_t outlen)
{
    const char *path = getenv("PATH");
    char list[4096];

    if (strchr(cmd, '/') != NULL)
        return snprintf(out, outlen, "%s", cmd) < (int)outlen && access(out, F_OK) == 0;
    snprintf(list, sizeof list, "%s", path != NULL ? path : "/usr/local/bin:/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(list, ":", &save); d != NULL;
         d = strtok_r(NULL, ":", &save)) {
        snprintf(out, outlen, "%s/%s", d, cmd);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

/*
 * Tell whether the library will reach the libcurl of the program at path
 * (a script: its interpreter).  Prints one line; returns 0 when it will (or
 * may, when the program loads libraries at run time), 1 when it will not,
 * 2 when the program cannot be read.
 */
static int check_program(const char *cmd, int depth)
{
    char path[PATH_MAX], dep[PATH_MAX], origin[PATH_MAX];
    static char seen[MAX_OBJS][PATH_MAX];
    int nseen = 0, next = 0;
    bool dl = false;
    elf_facts ef;
    struct stat st;

    if (!find_cmd(cmd, path, sizeof path) || stat(path, &st) != 0) {
        fprintf(stderr, "backoff: cannot find %s: give a path or a command on PATH\n", cmd);
        return 2;
    }
    if (st.st_mode & (S_ISUID | S_ISGID)) {
        printf("backoff: %s: not reached: it is setuid/setgid, and the dynamic linker ignores "
               "LD_PRELOAD for such programs\n", path);
        return 1;
    }
    if (elf_read(path, &ef) != 0) {
        fprintf(stderr, "backoff: cannot read %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (!ef.elf) {
        char line[PATH_MAX], *p, *arg;
        FILE *fp = fopen(path, "r");
        bool script = fp != NULL && fgets(line, sizeof line, fp) != NULL && line[0] == '#' &&
                      line[1] == '!';
        if (fp != NULL)
            fclose(fp);
        if (!script || depth > 2) {
            printf("backoff: %s: not reached: not a program of this machine (ELF) nor a "
                   "#! script\n", path);
            return 1;
        }
        line[strcspn(line, "\r\n")] = '\0';
        p = line + 2 + strspn(line + 2, " \t");
        arg = p + strcspn(p, " \t");
        if (*arg != '\0')
            *arg++ = '\0';
        arg += strspn(arg, " \t");
        arg[strcspn(arg, " \t")] = '\0';
        if (base_is(p, "env") && *arg != '\0')
            p = arg;
        printf("backoff: %s: a script run by %s\n", path, p);
        return check_program(p, depth + 1);
    }
    if (!ef.interp) {
        printf("backoff: %s: not reached: a statically linked program (no dynamic linker: "
               "LD_PRELOAD is ignored)%s\n", path,
               ef.go ? "; a Go program, with its own HTTP stack" : "");
        return 1;
    }
    /* Breadth first through the dependencies, as the dynamic linker loads them. */
    snprintf(seen[nseen++], PATH_MAX, "%s", path);
    while (next < nseen) {
        const char *obj = seen[next++];
        elf_facts df;
        if (next > 1 && elf_read(obj, &df) != 0)
            continue;
        const elf_facts *f = next == 1 ? &ef : &df;
        if (next > 1 && base_is(obj, "libcurl")) {
            printf("backoff: %s: reached: libcurl is linked dynamically (%s)\n", path, obj);
            return 0;
        }
        /* The program itself, or an interpreter's library, loads modules. */
        if (f->imports_dlopen &&
            (next == 1 || base_is(obj, "libperl") || base_is(obj, "libpython") ||
             base_is(obj, "libruby") || base_is(obj, "liblua") || base_is(obj, "libphp")))
            dl = true;
        if (snprintf(origin, sizeof origin, "%s", obj) >= (int)sizeof origin)
            continue;
        char *slash = strrchr(origin, '/');
        if (slash != NULL)
            *slash = '\0';
        for (int i = 0; i < f->nneeded && nseen < MAX_OBJS; i++) {
            if (!find_needed(f->needed[i], f->runpath, origin, dep, sizeof dep))
                continue;
            bool dup = false;
            for (int k = 0; k < nseen && !dup; k++)
                dup = strcmp(seen[k], dep) == 0;
            if (!dup)
                snprintf(seen[nseen++], PATH_MAX, "%s", dep);
        }
    }
    if (ef.defines_curl || ef.curl_string) {
        printf("backoff: %s: not reached: libcurl is linked statically into it (its calls "
               "never pass through the dynamic linker)\n", path);
        return 1;
    }
    if (dl) {
        printf("backoff: %s: reached if it loads libcurl at run time: it does not link libcurl "
               "but loads libraries with dlopen (PHP's curl extension, python3-pycurl, plugins, "
               "RTLD_DEEPBIND or not are reached)\n", path);
        return 0;
    }
    printf("backoff: %s: not reached: it does not use libcurl%s\n", path,
           ef.go ? " (a Go program, with its own HTTP stack)"
                 : ef.rust ? " (a Rust program: its HTTP stack, if any, is its own)" : "");
    return 1;
}

int main(int argc, char **argv)
{
    enum { OPT_STATS = 256, OPT_TRACE, OPT_CHECK, OPT_PRINT, OPT_VARIABLES, OPT_HELP, OPT_VERSION,
           OPT_STATUS, OPT_RESET };
    static const struct option opts[] = {
        {"policy", required_argument, NULL, 'p'},
        {"attempts", required_argument, NULL, 'n'},
        {"stats", required_argument, NULL, OPT_STATS},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"verbose", no_argument, NULL, 'v'},
        {"check", no_argument, NULL, OPT_CHECK},
        {"print-config", no_argument, NULL, OPT_PRINT},
        {"variables", no_argument, NULL, OPT_VARIABLES},
        {"status", no_argument, NULL, OPT_STATUS},
        {"reset", no_argument, NULL, OPT_RESET},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    bool check = false, print = false, status = false, reset = false;
    char err[BO_ERR_LEN], lib[PATH_MAX];
    bo_config cfg;
    int c;

    while ((c = getopt_long(argc, argv, "+p:n:v", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            setenv("BACKOFF_POLICY", optarg, 1);
            break;
        case 'n':
            setenv("BACKOFF_MAX_ATTEMPTS", optarg, 1);
            break;
        case OPT_STATS:
            set_path_var("BACKOFF_STATS", optarg);
            break;
        case OPT_TRACE:
            set_path_var("BACKOFF_TRACE", optarg);
            break;
        case 'v':
            setenv("BACKOFF_VERBOSE", "1", 1);
            break;
        case OPT_CHECK:
            check = true;
            break;
        case OPT_PRINT:
            print = true;
            break;
        case OPT_VARIABLES:
            print_variables();
            return 0;
        case OPT_STATUS:
            status = true;
            break;
        case OPT_RESET:
            reset = true;
            break;
        case OPT_HELP:
            usage(stdout);
            return 0;
        case OPT_VERSION:
            printf("backoff %s\n", BO_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (bo_config_load(&cfg, env_get, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (check)
        return optind < argc ? check_program(argv[optind], 0) : 0;
    if (reset)
        return bo_share_reset(stdout, &cfg);
    if (status)
        return bo_share_status(stdout);
    if (print) {
        size_t need = bo_config_format(&cfg, NULL, 0) + 1;
        char *buf = malloc(need);
        if (buf == NULL)
            return 1;
        bo_config_format(&cfg, buf, need);
        fputs(buf, stdout);
        free(buf);
        return 0;
    }
    if (optind >= argc) {
        fprintf(stderr, "backoff: no command given: expected backoff [OPTIONS] [--] CMD [ARGS]\n");
        usage(stderr);
        return 2;
    }
    if (find_library(lib, sizeof lib) != 0) {
        fprintf(stderr,
                "backoff: cannot find %s next to the backoff command or in ../lib/backoff/: "
                "reinstall with make install\n",
                LIB_NAME);
        return 2;
    }
    if (set_preload(lib) != 0) {
        fprintf(stderr, "backoff: cannot set LD_PRELOAD: %s\n", strerror(errno));
        return 2;
    }
    execvp(argv[optind], argv + optind);
    int e = errno;
    fprintf(stderr, "backoff: cannot run %s: %s\n", argv[optind], strerror(e));
    return e == ENOENT || e == ENOTDIR ? 127 : 126;
}
