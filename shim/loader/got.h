/*
 * got.h: rewriting the GOTs of deep-bound objects, within the loader room
 * (got.c), for the dl hooks.
 */
#ifndef BO_LOADER_GOT_H
#define BO_LOADER_GOT_H

/* The dl hooks, by name: a deep-bound object's reference to libc's real[i]
 * is routed to hook[i]. */
typedef struct bo_got_dl_hooks {
    const char *const *names;
    void *const *real;
    void *const *hook;
    int n;
} bo_got_dl_hooks;

/* Before the first walk's load (once): the objects loaded so far are not
 * new to any walk. */
void bo_got_mark_loaded(void);

/* After a deep-bound load: route every loaded object's references to hooked
 * names that bound straight to a copy (and to the dl functions, with hooks
 * non-NULL); returns how many entries were rewritten. */
unsigned bo_got_rewrite_all(const bo_got_dl_hooks *hooks);

#endif
