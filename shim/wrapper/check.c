/*
 * check.c: `backoff --check CMD`: will the library reach CMD's HTTP?  Read
 * from CMD's ELF file before it runs (check.h), one line per path:
 *   libcurl        linked dynamically (DT_NEEDED, followed through the
 *                  dependencies), loaded at run time (CMD or a script's
 *                  interpreter imports dlopen), linked statically, not
 *                  linked at all; or reached through the helper CMD runs
 *                  for HTTP (git's git-remote-https);
 *   OpenSSL        libssl linked (not only by libcurl) or loadable: its
 *                  SSL objects bound to a socket are reached;
 *   GnuTLS         linked (not only by libcurl): reached, same-connection
 *                  retries only;
 *   plain sockets  CMD or a library of its own makes TCP connections
 *                  (imports connect): its HTTP/1.x over them is reached;
 * or out of reach whole because CMD is setuid/setgid or a static program.
 *
 * What a program loads at run time is followed where it can be named: a
 * Java launcher's runtime (libjvm.so and the JDK's network libraries, found
 * as the launcher finds them), a version manager's shim script (pyenv,
 * rbenv...: the program the manager names, `MANAGER which PROGRAM`).  A
 * path it cannot see is never called unused: a library the dynamic linker
 * would look for and this check does not find makes those lines "cannot
 * tell", with the library's name.
 */
#include "wrapper/check.h"
#include "wrapper/runtime.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OBJS 256

typedef struct elf_facts {
    bool elf, interp;        /* an ELF file; it has a dynamic linker (PT_INTERP) */
    bool defines_curl;       /* defines curl_easy_perform: libcurl linked in */
    bool imports_dlopen;     /* may load libraries at run time */
    bool imports_connect;    /* makes connections itself */
    bool defines_ssl;        /* defines SSL_read: an OpenSSL linked in (node) */
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
                else if (strcmp(n, "connect") == 0 && sym[k].st_shndx == SHN_UNDEF)
                    ef->imports_connect = true;
                else if (strcmp(n, "SSL_read") == 0 && sym[k].st_shndx != SHN_UNDEF)
                    ef->defines_ssl = true;
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

/* The directories /etc/ld.so.conf names (and those it includes), which the
 * dynamic linker's cache holds: a colon list in out. */
static void conf_dirs(char *out, size_t outlen)
{
    glob_t g;
    size_t used = 0;

    out[0] = '\0';
    if (glob("/etc/ld.so.conf.d/*.conf", 0, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char line[PATH_MAX];
        FILE *fp = fopen(g.gl_pathv[i], "r");
        while (fp != NULL && fgets(line, sizeof line, fp) != NULL) {
            line[strcspn(line, "#\r\n")] = '\0';
            if (line[0] != '/')
                continue;
            int n = snprintf(out + used, outlen - used, "%s%s", used ? ":" : "", line);
            if (n > 0 && (size_t)n < outlen - used)
                used += (size_t)n;
        }
        if (fp != NULL)
            fclose(fp);
    }
    globfree(&g);
}

/* Find a DT_NEEDED name as the dynamic linker would, its cache read from the
 * files it is made of. */
static bool find_needed(const char *name, const char *runpath, const char *origin, char *out,
                        size_t outlen)
{
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                       "/lib64", "/usr/lib64", "/lib", "/usr/lib",
                                       "/usr/local/lib"};
    static char conf[4096];
    static bool conf_read;
    char list[2048 + sizeof conf];
    const char *ld = getenv("LD_LIBRARY_PATH");

    if (!conf_read) {
        conf_dirs(conf, sizeof conf);
        conf_read = true;
    }

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
    snprintf(list, sizeof list, "%s", conf);
    for (char *save = NULL, *d = strtok_r(list, ":", &save); d != NULL;
         d = strtok_r(NULL, ":", &save)) {
        int n = snprintf(out, outlen, "%s/%s", d, name);
        if (n > 0 && (size_t)n < outlen && access(out, R_OK) == 0)
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

/* What the dependency closure of a program holds, for the lines of check_program. */
typedef struct closure {
    char curl[PATH_MAX];    /* the first libcurl ("": none) */
    char ssl[PATH_MAX];     /* the first libssl needed by something else than libcurl */
    char gnutls[PATH_MAX];  /* the same for GnuTLS */
    char jli[PATH_MAX];     /* a Java launcher's libjli, which loads the JVM */
    char sockets_by[PATH_MAX]; /* the first object of its own that imports connect */
    char unseen[256];       /* a library the dynamic linker would load, not found here */
    char unseen_by[PATH_MAX];  /* ... and the object that needs it */
    bool ssl_by_curl;       /* a libssl needed by libcurl only */
    bool dl;                /* the program, or an interpreter's library, loads modules */
    bool sockets;           /* it, or a library of its own, makes TCP connections */
    bool libnode;           /* a distribution's Node.js: libnode, on the system libssl */
} closure;

/* An interpreter's library: the program's own code, for what it links and calls. */
static bool interpreter(const char *obj)
{
    return base_is(obj, "libperl") || base_is(obj, "libpython") || base_is(obj, "libruby") ||
           base_is(obj, "liblua") || base_is(obj, "libphp") || base_is(obj, "libnode.");
}

/* A library of the list already (by path, or by its file name as DT_NEEDED
 * names it: the dynamic linker binds a name to an object loaded already). */
static bool seen_already(char (*seen)[PATH_MAX], int nseen, const char *path, const char *name)
{
    for (int k = 0; k < nseen; k++) {
        const char *b = strrchr(seen[k], '/');
        if (strcmp(seen[k], path) == 0 || (name != NULL && strcmp(b ? b + 1 : seen[k], name) == 0))
            return true;
    }
    return false;
}

/*
 * Breadth first through the dependencies of the roots, as the dynamic
 * linker loads them, into cl (which the caller cleared).  The roots are the
 * program's own code (the program; a runtime it loads, as a Java launcher
 * loads libjvm.so), as are interpreters' libraries; a TLS library another
 * library brings (libcurl's, libldap's) is that one's.  A runtime's dlopen
 * is its own loading of its parts: it does not count as the program's
 * (runtime true).  root_facts: the first root's facts, read already.
 */
static void walk(const char *const *roots, int nroots, const elf_facts *root_facts, closure *cl,
                 bool runtime)
{
    static char seen[MAX_OBJS][PATH_MAX];
    static int parent[MAX_OBJS];
    char dep[PATH_MAX], origin[PATH_MAX];
    int nseen = 0, next = 0;

    for (int i = 0; i < nroots && nseen < MAX_OBJS; i++) {
        snprintf(seen[nseen], PATH_MAX, "%s", roots[i]);
        parent[nseen++] = -1;
    }
    while (next < nseen) {
        int me = next++;
        const char *obj = seen[me];
        elf_facts df;
        bool root = parent[me] < 0;
        if ((me > 0 || root_facts == NULL) && elf_read(obj, &df) != 0)
            continue;
        const elf_facts *f = me == 0 && root_facts != NULL ? root_facts : &df;
        bool own = root || interpreter(obj);
        bool by_own = root || parent[parent[me]] < 0 || interpreter(seen[parent[me]]);
        if (!root && base_is(obj, "libcurl") && !cl->curl[0])
            snprintf(cl->curl, sizeof cl->curl, "%.*s", PATH_MAX - 1, obj);
        if (!root && base_is(obj, "libssl")) {
            if (by_own && !cl->ssl[0])
                snprintf(cl->ssl, sizeof cl->ssl, "%.*s", PATH_MAX - 1, obj);
            cl->ssl_by_curl = cl->ssl_by_curl || base_is(seen[parent[me]], "libcurl");
        }
        if (!root && base_is(obj, "libgnutls") && by_own && !cl->gnutls[0])
            snprintf(cl->gnutls, sizeof cl->gnutls, "%.*s", PATH_MAX - 1, obj);
        if (base_is(obj, "libjli.") && !cl->jli[0])
            snprintf(cl->jli, sizeof cl->jli, "%.*s", PATH_MAX - 1, obj);
        /* The program itself, or an interpreter's library, loads modules. */
        if (f->imports_dlopen && own && !runtime)
            cl->dl = true;
        cl->libnode = cl->libnode || base_is(obj, "libnode.");
        /* (Node's connections are its event loop's, libuv's: the runtime's own) */
        bool loop_of_own = base_is(obj, "libuv.") && interpreter(seen[parent[me]]);
        if (f->imports_connect && (own || loop_of_own) && !cl->sockets) {
            cl->sockets = true;
            snprintf(cl->sockets_by, sizeof cl->sockets_by, "%.*s", PATH_MAX - 1, obj);
        }
        if (snprintf(origin, sizeof origin, "%s", obj) >= (int)sizeof origin)
            continue;
        char *slash = strrchr(origin, '/');
        if (slash != NULL)
            *slash = '\0';
        for (int i = 0; i < f->nneeded && nseen < MAX_OBJS; i++) {
            if (seen_already(seen, nseen, "", f->needed[i]))
                continue;
            if (!find_needed(f->needed[i], f->runpath, origin, dep, sizeof dep)) {
                if (!cl->unseen[0]) {
                    snprintf(cl->unseen, sizeof cl->unseen, "%s", f->needed[i]);
                    snprintf(cl->unseen_by, sizeof cl->unseen_by, "%.*s", PATH_MAX - 1, obj);
                }
                continue;
            }
            if (!seen_already(seen, nseen, dep, NULL)) {
                snprintf(seen[nseen], PATH_MAX, "%s", dep);
                parent[nseen++] = me;
            }
        }
    }
}

/*
 * The helper a program runs for its HTTP, when it is one that does so: git
 * runs git-remote-http(s) from its exec path for http(s):// remotes.  The
 * helper's path in out, or false.
 */
static bool http_helper(const char *path, char *out, size_t outlen)
{
    static const char *const git_dirs[] = {"/usr/lib/git-core", "/usr/libexec/git-core",
                                           "/usr/local/libexec/git-core"};
    const char *env = getenv("GIT_EXEC_PATH");

    if (!base_is(path, "git") || strchr(strrchr(path, '/') ? strrchr(path, '/') : path, '-'))
        return false;
    if (env != NULL && env[0] != '\0' &&
        snprintf(out, outlen, "%s/git-remote-https", env) < (int)outlen && access(out, X_OK) == 0)
        return true;
    for (size_t i = 0; i < sizeof git_dirs / sizeof git_dirs[0]; i++)
        if (snprintf(out, outlen, "%s/git-remote-https", git_dirs[i]) < (int)outlen &&
            access(out, X_OK) == 0)
            return true;
    return false;
}

static int check_program(const char *cmd, int depth);

/*
 * A #! script: a version manager's shim is followed to the program the
 * manager names; any other script is judged by its interpreter (what a
 * shell script runs in turn is not seen).
 */
static int check_script(const char *path, int depth)
{
    char line[PATH_MAX], *p, *arg;
    char mgr[PATH_MAX], prog[256], root_var[64], root[PATH_MAX], real[PATH_MAX];
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
    if (bo_check_manager_shim(path, mgr, sizeof mgr, prog, sizeof prog, root_var, root,
                              sizeof root)) {
        const char *name = strrchr(mgr, '/') ? strrchr(mgr, '/') + 1 : mgr;
        if (!bo_check_manager_which(mgr, prog, root_var, root, real, sizeof real)) {
            printf("backoff: %s: cannot tell: a %s shim, and `%s which %s` names no program "
                   "(%s)\n", path, name, name, prog, real[0] ? real : "no answer");
            return 2;
        }
        printf("backoff: %s: a %s shim: it runs %s (`%s which %s`)\n", path, name, real, name,
               prog);
        return check_program(real, depth + 1);
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

static int check_program(const char *cmd, int depth)
{
    char path[PATH_MAX], real[PATH_MAX], helper[PATH_MAX], unseen[2 * PATH_MAX] = "";
    char jvm[BO_CHECK_JVM_LIBS][PATH_MAX];
    elf_facts ef;
    closure cl;
    struct stat st;
    bool reached = false;
    int njvm = 0;

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
    if (!ef.elf)
        return check_script(path, depth);
    if (!ef.interp) {
        printf("backoff: %s: not reached: a statically linked program (no dynamic linker: "
               "LD_PRELOAD is ignored)%s\n", path,
               ef.go ? "; a Go program, with its own HTTP stack" : "");
        return 1;
    }
    /* $ORIGIN is the directory of the program's file, its links resolved
     * (/usr/bin/java is a link into a JDK) */
    if (realpath(path, real) == NULL)
        snprintf(real, sizeof real, "%s", path);
    const char *root = real;
    memset(&cl, 0, sizeof cl);
    walk(&root, 1, &ef, &cl, false);
    bool java = cl.jli[0] && bo_check_java_runtime(cl.jli, jvm, &njvm);
    if (java) {
        const char *roots[BO_CHECK_JVM_LIBS];
        for (int i = 0; i < njvm; i++)
            roots[i] = jvm[i];
        printf("backoff: %s: a Java launcher: its runtime %s and the JDK's network libraries "
               "beside it are followed\n", path, jvm[0]);
        walk(roots, njvm, NULL, &cl, true);
    }
    if (cl.unseen[0])
        snprintf(unseen, sizeof unseen, "cannot tell: %s, which %s needs, is not where the "
                 "dynamic linker looks", cl.unseen, cl.unseen_by);
    const char *java_own = java ? " (a Java runtime: its HTTP stack, java.net, is its own)" : "";

    /* libcurl: its own, or the helper it runs for HTTP (git's git-remote-https) */
    char helper_curl[sizeof cl.curl] = "";
    if (!cl.curl[0] && http_helper(path, helper, sizeof helper)) {
        elf_facts hf;
        closure hc;
        if (elf_read(helper, &hf) == 0 && hf.elf && hf.interp) {
            const char *hroot = helper;
            memset(&hc, 0, sizeof hc);
            walk(&hroot, 1, &hf, &hc, false);
            memcpy(helper_curl, hc.curl, sizeof helper_curl);
        }
    }
    if (cl.curl[0]) {
        printf("backoff: %s: reached: libcurl is linked dynamically (%s)\n", path, cl.curl);
        reached = true;
    } else if (ef.defines_curl || ef.curl_string) {
        printf("backoff: %s: not reached: libcurl is linked statically into it (its calls "
               "never pass through the dynamic linker)\n", path);
    } else if (cl.dl) {
        printf("backoff: %s: reached if it loads libcurl at run time: it does not link libcurl "
               "but loads libraries with dlopen (PHP's curl extension, python3-pycurl, plugins, "
               "RTLD_DEEPBIND or not are reached)\n", path);
        reached = true;
    } else if (!helper_curl[0] && unseen[0]) {
        printf("backoff: %s: libcurl: %s\n", path, unseen);
    } else if (!helper_curl[0]) {
        printf("backoff: %s: not reached: it does not use libcurl%s\n", path,
               ef.go ? " (a Go program, with its own HTTP stack)"
               : ef.rust ? " (a Rust program: its HTTP stack, if any, is its own)" : java_own);
    }
    if (helper_curl[0]) {
        printf("backoff: %s: reached through its helper %s: libcurl is linked dynamically "
               "(%s)\n", path, helper, helper_curl);
        reached = true;
    }

    /* OpenSSL, GnuTLS, plain sockets: the http room (shim/http/) */
    bool node = base_is(real, "node") || base_is(real, "nodejs") || cl.libnode;
    if (ef.defines_ssl && node) {
        printf("backoff: %s: OpenSSL: not reached: a Node.js build with OpenSSL linked "
               "statically into it (the official and NodeSource builds): its https is not "
               "reached; Debian's and Ubuntu's nodejs (libnode, on the system libssl) is the "
               "build whose TLS calls pass through the dynamic linker\n", path);
    } else if (ef.defines_ssl) {
        printf("backoff: %s: OpenSSL: not reached: linked statically into it (its calls never "
               "pass through the dynamic linker)\n", path);
    } else if (cl.ssl[0] && cl.libnode) {
        printf("backoff: %s: OpenSSL: a distribution's Node.js build: libnode on the system "
               "libssl (%s); its TLS runs on memory BIOs, which the library does not reach "
               "yet: its https is not reached, its http is\n", path, cl.ssl);
    } else if (cl.ssl[0]) {
        printf("backoff: %s: OpenSSL: reached: libssl is linked dynamically (%s): its HTTP/1.x "
               "on SSL objects bound to a socket\n", path, cl.ssl);
        reached = true;
    } else if (cl.dl) {
        printf("backoff: %s: OpenSSL: reached if it loads libssl at run time (Python's ssl, "
               "Ruby's openssl, Perl's Net::SSLeay): its HTTP/1.x on SSL objects bound to a "
               "socket; not on memory BIOs (asyncio)\n", path);
        reached = true;
    } else if (cl.ssl_by_curl) {
        printf("backoff: %s: OpenSSL: only libcurl's (above)\n", path);
    } else if (unseen[0]) {
        printf("backoff: %s: OpenSSL: %s\n", path, unseen);
    } else if (java) {
        printf("backoff: %s: OpenSSL: not used (a Java runtime's TLS, JSSE, is its own: its "
               "https is not reached)\n", path);
    } else {
        printf("backoff: %s: OpenSSL: not used\n", path);
    }
    if (cl.gnutls[0]) {
        printf("backoff: %s: GnuTLS: reached: GnuTLS is linked dynamically (%s): its HTTP/1.x "
               "on sessions over a socket, retried on the same keep-alive connection only\n",
               path, cl.gnutls);
        reached = true;
    }
    if (cl.sockets || cl.dl) {
        printf("backoff: %s: plain sockets: reached: HTTP/1.x it writes on TCP connections of "
               "its own%s%s%s\n", path, cl.sockets && java ? " (" : "",
               cl.sockets && java ? cl.sockets_by : "", cl.sockets && java ? " imports connect)"
                                                                          : "");
        reached = true;
    } else if (unseen[0]) {
        printf("backoff: %s: plain sockets: %s\n", path, unseen);
    } else {
        printf("backoff: %s: plain sockets: not used (it makes no TCP connection of its "
               "own)\n", path);
    }
    /* A path it cannot see may be reached: the answer is not "none". */
    return reached || unseen[0] ? 0 : 1;
}

int bo_check_program(const char *cmd)
{
    return check_program(cmd, 0);
}
