/*
 * easy.h: the easy hooks' wrappers per copy, within the libcurl room
 * (easy.c), for the family's declaration (family.c).
 */
#ifndef BO_CURL_EASY_H
#define BO_CURL_EASY_H

/* The wrapper of hooked easy function fn (BO_CURL_PERFORM ... before
 * BO_CURL_M_FIRST) bound to slot's copy. */
void *bo_curl_easy_wrapper(int slot, int fn);

#endif
