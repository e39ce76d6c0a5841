/*
 * dl_hooks.c: the dlsym, dlvsym, dlopen and dlmopen hooks.
 *
 *   dlsym, dlvsym    a lookup of a hooked function of a family (libcurl's
 *                    curl_easy_* and curl_multi_* that curl/ hooks),
 *                    through any handle, answers the wrapper bound to the
 *                    copy the lookup found; every other lookup is glibc's;
 *   dlopen with RTLD_DEEPBIND, dlmopen
 *                    after the load, the new objects' GOT entries that bound
 *                    a hooked name straight to a copy are rewritten (got.c).
 *
 * glibc's dlsym, dlvsym, dlopen and dlmopen act on behalf of their caller,
 * found from their return address (RTLD_NEXT and RTLD_DEFAULT lookups, the
 * caller's namespace and DT_RUNPATH).  The hooks are therefore small
 * assembly trampolines: a call that needs nothing from the shim jumps to
 * glibc's function with the stack untouched; a call whose result the shim
 * must see gets as return address a `ret` byte inside the caller's own
 * object, which returns on into the shim's post-processing: glibc sees the
 * caller it would have seen without the shim.  x86_64 only; elsewhere (and
 * with BO_DL_NO_HOOKS: a program of its own) the hooks are not built and
 * only the registry remains.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "loader/elf.h"
#include "loader/got.h"
#include "loader/registry.h"

/*
 * Nothing at load: libc's dl functions are found by the first dl call
 * (bo_dl_init, in each hook below), the library's own range by the first
 * question (bo_elf_in_self), and the objects already loaded are marked,
 * as not new to any walk, by the first call that will walk them, before
 * its load (mark_before_walk): a program that never loads a deep-bound
 * object never reads an ELF table of the shim's.
 */
static int g_marked; /* bo_core_once */

static void mark_before_walk(void)
{
    bo_core_once(&g_marked, bo_got_mark_loaded);
}

/* ---- the hooks -------------------------------------------------------- */

/* The hooked function a dlsym in flight looks up: its family and index. */
static __thread const bo_lib_family *tl_pending;
static __thread int tl_pending_index;

static int gadget_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uintptr_t *want = data, a = *want, lo, hi;
    (void)size;
    bo_elf_range(info, &lo, &hi);
    if (a < lo || a >= hi)
        return 0;
    *want = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & (PF_R | PF_X)) != (PF_R | PF_X))
            continue;
        const unsigned char *c = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        void *ret = memchr(c, 0xc3, ph->p_filesz);
        if (ret != NULL) {
            *want = (uintptr_t)ret;
            break;
        }
    }
    return 1;
}

/* A `ret` instruction of the shim: the gadget when the caller has none. */
extern const char bo_dl_self_ret[];

/*
 * A `ret` byte (0xc3) in an executable segment of the object holding the
 * caller's return address: glibc then takes that object for the caller.
 * Falls back to one of the shim's (the caller is then the shim, as for any
 * plain wrapper).
 */
static uintptr_t gadget_for(const void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    bo_dl_iterate(gadget_cb, &a);
    return a != 0 && a != (uintptr_t)caller ? a : (uintptr_t)bo_dl_self_ret;
}

/* Before dlsym/dlvsym: 0 to leave the call to glibc, else the gadget. */
uintptr_t bo_dl_sym_pre(uintptr_t handle, uintptr_t name, uintptr_t version, const void *caller);
uintptr_t bo_dl_sym_pre(uintptr_t handle, uintptr_t name, uintptr_t version, const void *caller)
{
    int saved = errno, i = -1;
    uintptr_t g = 0;
    const bo_lib_family *f;
    (void)handle;
    (void)version;
    bo_dl_init();
    if ((f = bo_lib_hooked((const char *)name, &i)) != NULL &&
        !bo_elf_in_self((uintptr_t)caller)) {
        tl_pending = f;
        tl_pending_index = i;
        g = gadget_for(caller);
    }
    errno = saved;
    return g;
}

/* After dlsym/dlvsym of a hooked name: the wrapper in place of the function. */
void *bo_dl_sym_post(void *p);
void *bo_dl_sym_post(void *p)
{
    int saved = errno;
    const bo_lib_family *f = tl_pending;
    tl_pending = NULL;
    p = bo_lib_wrap(f, p, tl_pending_index);
    errno = saved;
    return p;
}

/* Before dlopen: post-process only what may bind around the shim. */
uintptr_t bo_dl_open_pre(uintptr_t file, uintptr_t flags, uintptr_t unused, const void *caller);
uintptr_t bo_dl_open_pre(uintptr_t file, uintptr_t flags, uintptr_t unused, const void *caller)
{
    int saved = errno;
    uintptr_t g = 0;
    (void)file;
    (void)unused;
    bo_dl_init();
    if (((int)flags & RTLD_DEEPBIND) != 0 && !((int)flags & RTLD_NOLOAD)) {
        mark_before_walk();
        g = gadget_for(caller);
    }
    errno = saved;
    return g;
}

/* Before dlmopen: its objects live in another namespace, without the shim. */
uintptr_t bo_dl_mopen_pre(uintptr_t lmid, uintptr_t file, uintptr_t flags, const void *caller);
uintptr_t bo_dl_mopen_pre(uintptr_t lmid, uintptr_t file, uintptr_t flags, const void *caller)
{
    int saved = errno;
    uintptr_t g = 0;
    (void)lmid;
    (void)file;
    bo_dl_init();
    if (!((int)flags & RTLD_NOLOAD)) {
        mark_before_walk();
        g = gadget_for(caller);
    }
    errno = saved;
    return g;
}

/* The shim's own dl hooks, by the names below (the trampolines' addresses). */
extern const char bo_tramp_dlsym[], bo_tramp_dlvsym[], bo_tramp_dlopen[], bo_tramp_dlmopen[];

/* After a load the shim must see: route the new objects' references. */
void *bo_dl_open_post(void *handle);
void *bo_dl_open_post(void *handle)
{
    int saved = errno;
#if defined(__x86_64__) && !defined(BO_DL_NO_HOOKS)
    static const char *const names[] = {"dlsym", "dlvsym", "dlopen", "dlmopen"};
    void *const real[] = {(void *)bo_dl_real_dlsym, (void *)bo_dl_real_dlvsym,
                          (void *)bo_dl_real_dlopen, (void *)bo_dl_real_dlmopen};
    void *const hook[] = {(void *)bo_tramp_dlsym, (void *)bo_tramp_dlvsym,
                          (void *)bo_tramp_dlopen, (void *)bo_tramp_dlmopen};
    const bo_got_dl_hooks hooks = {names, real, hook, 4};
#else
    const bo_got_dl_hooks hooks = {NULL, NULL, NULL, 0};
#endif
    if (handle != NULL)
        bo_got_rewrite_all(&hooks);
    errno = saved;
    return handle;
}

/*
 * The trampolines.  On entry [rsp] is the caller's return address.  The
 * argument registers are kept around the call of PRE(a0, a1, a2, caller);
 * a zero answer jumps to glibc's function as if the shim were not there;
 * otherwise glibc's function is entered with the gadget as its return
 * address and POST's thunk under it: glibc returns to the gadget's `ret`,
 * which returns into the thunk, which calls POST(result) and returns to the
 * caller.  The stack is 16-byte aligned at every call, as the ABI wants.
 */
#define BO_TRAMPOLINE(name, pre, real, post)                                          \
    __asm__(".text\n"                                                                 \
            ".globl " #name "\n"                                                      \
            ".type " #name ", @function\n"                                           \
            ".globl bo_tramp_" #name "\n"                                             \
            ".hidden bo_tramp_" #name "\n"                                            \
            "bo_tramp_" #name ":\n" #name ":\n"                                       \
            ".cfi_startproc\n"                                                        \
            "endbr64\n"                                                               \
            "push %rdi\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rsi\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rdx\n.cfi_adjust_cfa_offset 8\n"                                   \
            "push %rcx\n.cfi_adjust_cfa_offset 8\n"                                   \
            "sub $8, %rsp\n.cfi_adjust_cfa_offset 8\n"                                \
            "mov 40(%rsp), %rcx\n"                                                    \
            "call " #pre "\n"                                                         \
            "add $8, %rsp\n.cfi_adjust_cfa_offset -8\n"                               \
            "pop %rcx\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rdx\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rsi\n.cfi_adjust_cfa_offset -8\n"                                   \
            "pop %rdi\n.cfi_adjust_cfa_offset -8\n"                                   \
            "test %rax, %rax\n"                                                       \
            "jnz 1f\n"                                                                \
            "jmp *" #real "(%rip)\n"                                                  \
            "1:\n"                                                                    \
            "lea " #name "_post(%rip), %r11\n"                                        \
            "push %r11\n"                                                             \
            "push %rax\n"                                                             \
            "jmp *" #real "(%rip)\n"                                                  \
            ".cfi_endproc\n"                                                          \
            ".size " #name ", .-" #name "\n"                                          \
            ".type " #name "_post, @function\n" #name "_post:\n"                      \
            "sub $8, %rsp\n"                                                          \
            "mov %rax, %rdi\n"                                                        \
            "call " #post "\n"                                                        \
            "add $8, %rsp\n"                                                          \
            "ret\n"                                                                   \
            ".size " #name "_post, .-" #name "_post\n")

#if defined(__x86_64__) && !defined(BO_DL_NO_HOOKS)
BO_TRAMPOLINE(dlsym, bo_dl_sym_pre, bo_dl_real_dlsym, bo_dl_sym_post);
BO_TRAMPOLINE(dlvsym, bo_dl_sym_pre, bo_dl_real_dlvsym, bo_dl_sym_post);
BO_TRAMPOLINE(dlopen, bo_dl_open_pre, bo_dl_real_dlopen, bo_dl_open_post);
BO_TRAMPOLINE(dlmopen, bo_dl_mopen_pre, bo_dl_real_dlmopen, bo_dl_open_post);
__asm__(".text\n"
        ".hidden bo_dl_self_ret\n"
        ".globl bo_dl_self_ret\n"
        "bo_dl_self_ret:\n"
        "ret\n");
#else
const char bo_dl_self_ret[1] = {0};
#endif
