/*
 * http: the HTTP hooks of programs that speak HTTP/1.x themselves, over a
 * plain TCP socket, an OpenSSL object bound to one or a GnuTLS session on
 * one (Python's http.client and requests, Ruby's net/http, Perl's LWP and
 * HTTP::Tiny, PHP's streams, wget), a hook family beside libcurl/ and
 * connect/ on the same call/, dest/ and loader/:
 *
 * its files, each calling only those listed after it (the hooks at the top):
 *   sock.c      the socket hooks (write, send, sendto, writev, read, recv,
 *               recvfrom and their _chk forms, close, dup2, dup3, accept,
 *               accept4, shutdown) and a plain socket's moves; ssl.c the
 *               OpenSSL hooks (SSL_write, SSL_read and their _ex forms,
 *               SSL_peek, SSL_pending, SSL_get_error) on objects bound to a
 *               socket, the libssl family; ssl_conn.c a TLS connection's
 *               moves and the peer a redial must show; gnutls.c the GnuTLS
 *               hooks (gnutls_record_send, _recv, _check_pending): same-
 *               connection retries only; wait.c the poll and epoll hooks;
 *   exchange.c  one request's life: the one write path and the one read
 *               path of every transport (exchange.h; the transports' moves:
 *               transport.h; the rest share exchange_int.h);
 *   drive.c     where a retry waits: the program's blocking read, its poll
 *               or select, its event loop; where a request's write waits;
 *   judge.c     an answer judged, in named steps (retry.h);
 *   retry.c     a throttle retried, step by step, never waiting;
 *   request.c   the request read and kept, the answer that stands followed;
 *   record.c    a record's one state setter and life, its held answer and
 *               its pace (record.h; the held answer's setters: conn.h);
 *   call.c      the call of the engine; key.c the shim's Idempotency-Key;
 *   waiter.c    where a non-blocking read's program waits, the margin a
 *               retry leaves; redial.c a new connection made like the
 *               program's, a quiet stand-in; fdtab.c the records by fd
 *               (fdtab.h); sockwait.c what a socket says of itself.
 * Which copy of a TLS library a hook's caller means is the loader's
 * (loader/callers.h), as for libcurl.
 *
 * What it promises: a program that never meets a throttle sees the same
 * bytes and results; a read or write on an fd it does not follow costs one
 * lookup; a retried answer never reaches the program, and an answer that
 * is not retried stays where the program expects it; a call the program
 * made non-blocking never waits; a new connection talks only to the peer
 * the program verified.  BACKOFF_HTTP=0 turns it all off.  docs/DESIGN.md
 * ("The HTTP hooks") has the rules.
 */
#ifndef BO_HTTP_ROOM_H
#define BO_HTTP_ROOM_H

/*
 * Fork (the one list in fork/fork.c): the table's lock, a leaf; in the
 * child every record that was in use or in flight is left alone for good.
 */
void bo_http_prepare_fork(void);
void bo_http_parent_fork(void);
void bo_http_child_fork(void);

#endif
