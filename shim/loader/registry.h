/*
 * registry.h: the copies of the interposed families, within the loader
 * room (registry.c), for the GOT rewrite and the dl hooks.
 */
#ifndef BO_LOADER_REGISTRY_H
#define BO_LOADER_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "loader/loader.h"

/* The family and index of a hooked function named `name` (NULL: none).
 * Calls no library function (the dl hooks' path). */
const bo_lib_family *bo_lib_hooked(const char *name, int *index);

/* The family f's slot of the object at (base, dyn), made on first sight
 * when the object is a copy of f; -1 when it is not or the table is full.
 * Takes only the registry's lock: it may run inside a walk. */
int bo_lib_slot_for_object(const bo_lib_family *f, uintptr_t base, const void *dyn);
/* f's slot of the copy that holds address p, or -1. */
int bo_lib_slot_for_addr(const bo_lib_family *f, const void *p);
/* The real function i of f's copy in slot. */
void *bo_lib_real(const bo_lib_family *f, int slot, int i);
/* The object is a copy of some family (it defines the family's fns[0]). */
struct bo_elf;
bool bo_lib_defines_family(const struct bo_elf *o);
/* The wrapper standing for real function p (f's hooked index i), or p itself. */
void *bo_lib_wrap(const bo_lib_family *f, void *p, int i);

#endif
