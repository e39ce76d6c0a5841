/*
 * libcurl: the libcurl room.  Programs' libcurl transfers, through the easy
 * and the multi interface, however libcurl is loaded:
 *
 *   family.c   the libcurl family, declared to the loader: its functions,
 *              its wrappers per copy;
 *   real.c     each copy's real functions, the copy a caller means and
 *              whether the caller is inside a libcurl;
 *   options.c  the records of the easy handles and the tracked options;
 *   held.c     the bytes of an attempt held until it is known to stand;
 *   xfer.c     one transfer's call, step by step (the engine's phases);
 *   easy.c     the easy hooks: curl_easy_perform drives a transfer's call
 *              in blocking mode;
 *   multi.c    the multi hooks: the same call driven from the program's
 *              own loop;
 *   multi_rec.c  the multi handles' and their transfers' records.
 *
 * Nothing of it is called from other rooms but the fork handlers below.
 */
#ifndef BO_LIBCURL_H
#define BO_LIBCURL_H

/*
 * Fork (the one list in fork/fork.c): the easy handles' records and the
 * multi handles' records each have a leaf lock, taken last and made anew
 * in the child.
 */
void bo_curl_records_prepare_fork(void);
void bo_curl_records_parent_fork(void);
void bo_curl_records_child_fork(void);
void bo_multi_prepare_fork(void);
void bo_multi_parent_fork(void);
void bo_multi_child_fork(void);

#endif
