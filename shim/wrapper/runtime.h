/*
 * runtime.h: what a program loads or runs at run time that its ELF file does
 * not name, for `backoff --check` (runtime.c).
 */
#ifndef BO_WRAPPER_RUNTIME_H
#define BO_WRAPPER_RUNTIME_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A Java launcher (java, javac, jshell...: their libjli in lib/, or
 * jre/lib/ARCH/jli/ before JDK 9) loads the JVM named first as KNOWN in that
 * directory's jvm.cfg (LIBDIR/server/libjvm.so), and the JVM loads the class
 * library's natives from LIBDIR as classes need them: libjava.so at start,
 * libnet.so and libnio.so for java.net and java.nio's sockets.  Their paths
 * in libs (*n of them, libjvm.so first), given the launcher's libjli; false
 * when jli is not a launcher's or no libjvm.so is there.
 */
#define BO_CHECK_JVM_LIBS 4
bool bo_check_java_runtime(const char *jli, char libs[BO_CHECK_JVM_LIBS][PATH_MAX], int *n);

/*
 * A version manager's shim script at path (pyenv, rbenv, nodenv, asdf...:
 * a line `exec "MANAGER" exec "$program" "$@"`): the manager in mgr, the
 * program it is asked for in prog, the root variable the shim exports
 * (`export PYENV_ROOT="..."`) in root_var (64 bytes) and root; false when
 * the script is no such shim.
 */
bool bo_check_manager_shim(const char *path, char *mgr, size_t mgrlen, char *prog,
                           size_t proglen, char *root_var, char *root, size_t rootlen);
/*
 * `MANAGER which PROGRAM`, as the shim's own exec would resolve it (the
 * environment as it is, the shim's root variable set; 10 s at most): the
 * program's path in out, true when it named an executable; else out holds
 * the manager's answer (its error), false.
 */
bool bo_check_manager_which(const char *mgr, const char *prog, const char *root_var,
                            const char *root, char *out, size_t outlen);

#endif
