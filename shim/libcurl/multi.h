/*
 * multi.h: the multi hooks (multi.c), for the rest of the libcurl room:
 * the easy hooks' word when a handle goes, and the wrappers of one libcurl
 * copy for the loader.  Their records are multi_rec.h.
 */
#ifndef BO_CURL_MULTI_H
#define BO_CURL_MULTI_H

/* curl_easy_cleanup(h) is about to free h: forget it in every multi record. */
void bo_multi_easy_gone(void *h);

/* The wrapper of hooked multi function fn (BO_CURL_M_FIRST ...) bound to
 * slot's copy. */
void *bo_multi_wrapper(int slot, int fn);

#endif
