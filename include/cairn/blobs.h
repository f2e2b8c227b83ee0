/* cairn blobs: the namespaced content-addressed blob service behind the blob
 * operation family (docs/protocol/blobs.md, shared spec blobs-ops-surface.md):
 * stat, have (with the pin-token renewal form), delete, verified fetch (whole,
 * ranged with slice digests, or tapping a put in flight) and streaming put
 * answered with a pin token.
 *
 * A namespace is a consumer-scoped name; the store below never sees it.  This
 * service records which digests each namespace holds (membership rows in
 * meta, the namespace's root of record, registered with the store as the
 * "blobs" liveness source), decides every access through the namespace
 * decision of cairn/authz.h, and keeps the pin tokens it mints (ops-layer
 * state of this process: a token is valid only on the node that minted it).
 *
 * It never sees a socket or a wire layout: adapters decode a request, call one
 * function here and encode the answer.  It never answers a put before its
 * bytes are durable and its membership row committed.
 *
 * Threads: a cn_blobs_t is safe to use from any number of threads at once; a
 * cn_blobs_put_t or cn_blobs_fetch_t belongs to one thread at a time.
 */
#ifndef CAIRN_BLOBS_H
#define CAIRN_BLOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/crypto.h"
#include "cairn/identity.h"
#include "cairn/authz.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_blobs cn_blobs_t;
typedef struct cn_blobs_put cn_blobs_put_t;
typedef struct cn_blobs_fetch cn_blobs_fetch_t;
typedef struct cn_store cn_store_t; /* cairn/store.h */

/* Hard limits of one call (checked before anything is allocated). */
#define CN_BLOBS_HAVE_MAX 16384   /* digests in one blobs/have */
#define CN_BLOBS_DELETE_MAX 16384 /* digests in one blobs/delete */
#define CN_BLOBS_RANGES_MAX 64    /* ranges in one ranged fetch */
#define CN_BLOBS_LIST_MAX 10000   /* digests in one blobs/list page */
#define CN_BLOBS_TOKEN_LEN 35     /* "pt_" + 32 lowercase hex */

typedef struct cn_blobs_opts {
    /* Pin token lifetime.  0 (the embedded default): a token is the handle
     * of an in-process guard and lasts for the process lifetime.  > 0 (fleet
     * engines): a token names a durable pin row that expires pin_ttl_ms after
     * the put or its last renewal; renew every pin_ttl_ms/3. */
    int64_t pin_ttl_ms;
    /* Tokens held at most; past it the oldest token's pin ends (its blob
     * stays a member of its namespace).  0 = 1,048,576. */
    size_t max_tokens;
    /* Bytes queued per fanout subscriber; a subscriber that falls further
     * behind the putter is dropped (it late-joins from the store).  0 = 8 MiB. */
    size_t tap_queue_bytes;
    /* Bytes queued for all subscribers together; a push past it drops the
     * subscriber it was for.  0 = 256 MiB. */
    size_t fanout_budget_bytes;
} cn_blobs_opts_t;

/* Opens the service over an open meta, store and identity (all borrowed; they
 * must outlive it): applies the "blobs" migrations and registers the
 * membership liveness source "blobs" with the store (so open it before the
 * store's first sweep).  opts may be NULL (defaults; copied).
 * Errors: CN_E_INVALID, CN_E_EXISTS (a second service on the same store),
 * meta errors, -ENOMEM.  Free with cn_blobs_close. */
CN_API cn_err_t cn_blobs_open(cn_meta_t *meta, cn_store_t *store, cn_identity_t *id,
                              const cn_blobs_opts_t *opts, cn_blobs_t **out);
/* Ends every live broadcast (their subscribers see an error), releases every
 * token's pin and frees the service.  Puts and fetches must be finished.
 * Accepts NULL. */
CN_API void cn_blobs_close(cn_blobs_t *b);
/* Ends every live broadcast now (subscribers are woken and see CN_E_SHUTDOWN)
 * and refuses new taps; call before stopping the listener that carries them. */
CN_API void cn_blobs_shutdown(cn_blobs_t *b);

/* Who asks, and why the last authorization decided as it did.  principal NULL
 * = anonymous (always denied: every namespace is closed to it). */
typedef struct cn_blobs_caller {
    const cn_principal_t *principal;
    cn_authz_decision_t decision; /* out: filled by every call */
} cn_blobs_caller_t;

/* true when ns is a valid namespace name (CN_NAMESPACE_MAX bytes at most,
 * [A-Za-z0-9._/-], not starting with '/'). */
CN_API bool cn_blobs_ns_valid(const char *ns, size_t len);

/* ---- control operations ----------------------------------------------------
 * Every call authorizes first: read for stat/have/fetch, write for put,
 * operator authority for delete.  CN_E_DENIED with c->decision filled when
 * refused; CN_E_INVALID for a bad namespace; meta and store errors pass up. */

/* blobs/stat: the length of d in ns.  CN_E_NOT_FOUND (BLOB_MISSING) when ns
 * does not hold d. */
CN_API cn_err_t cn_blobs_stat(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                              const cn_digest_t *d, uint64_t *len);

/* blobs/have: present[i] = ns holds d[i] (n ≤ CN_BLOBS_HAVE_MAX, else
 * CN_E_LIMIT).  token non-NULL is the renewal form: n must be 1 (else
 * CN_E_INVALID); the token's pin is renewed when it was minted here by a put
 * of d[0] into ns and has not expired, and present[0] says whether it was —
 * an expired, foreign or unknown token answers false, never an error. */
CN_API cn_err_t cn_blobs_have(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                              const cn_digest_t *d, size_t n, const char *token, bool *present);

/* blobs/delete (Internal): removes d[0..n) from ns's membership and ends ns's
 * pin tokens on them, so have answers false at once; the sweeper reclaims
 * the bytes once nothing else holds them.  *removed (may be NULL) = how many
 * were members.  Needs operator authority.  n ≤ CN_BLOBS_DELETE_MAX. */
CN_API cn_err_t cn_blobs_delete(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                                const cn_digest_t *d, size_t n, size_t *removed);

/* blobs/list (a cairn extension, for replicators): the digests ns holds in
 * ascending byte order, starting after *after (NULL: from the first), at most
 * max (1..CN_BLOBS_LIST_MAX, else CN_E_INVALID) into out; *n = how many,
 * *more = whether more follow (continue after out[*n - 1]).  Read action. */
CN_API cn_err_t cn_blobs_list(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                              const cn_digest_t *after, size_t max, cn_digest_t *out, size_t *n,
                              bool *more);

/* Namespace usage: calls fn(arg, ns, members, bytes), in ns order, for each
 * namespace that has members and that c may read (the others are left out,
 * no error), members and bytes exact (kept in the transaction of every
 * membership change, read without walking the digests).  A non-zero return
 * from fn stops the walk and is returned; fn may call back into the service. */
typedef cn_err_t (*cn_blobs_usage_fn)(void *arg, const char *ns, int64_t members, int64_t bytes);
CN_API cn_err_t cn_blobs_usage(cn_blobs_t *b, cn_blobs_caller_t *c, cn_blobs_usage_fn fn,
                               void *arg);
/* Folds committed usage deltas into each namespace's base row (PostgreSQL;
 * a no-op on SQLite).  The fleet's leased job "usage-fold". */
CN_API cn_err_t cn_blobs_usage_fold(cn_blobs_t *b);

/* ---- put ---------------------------------------------------------------------
 * begin → write* → commit | abort.  The bytes are verified against the
 * canonical digest (BLAKE3-256 of the bytes) and, when given, against expect
 * and expect_len (-1 = unknown) before anything is committed.  A put that
 * names its digest is a broadcast while it streams: fetches of that digest in
 * ns tap it. */
typedef struct cn_blobs_put_result {
    char token[CN_BLOBS_TOKEN_LEN + 1]; /* the pin token */
    cn_digest_t digest;                 /* canonical digest of the bytes */
    uint64_t len;
} cn_blobs_put_result_t;

/* Errors: CN_E_DENIED, CN_E_INVALID, CN_E_TOO_LARGE, store errors. */
CN_API cn_err_t cn_blobs_put_begin(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                                   const cn_digest_t *expect, int64_t expect_len,
                                   cn_blobs_put_t **out);
/* Appends bytes; never waits for fetchers.  CN_E_LENGTH_MISMATCH past
 * expect_len, CN_E_TOO_LARGE, -errno; afterwards only abort is useful. */
CN_API cn_err_t cn_blobs_put_write(cn_blobs_put_t *p, const void *buf, size_t n);
/* Verifies, publishes durably, records membership, mints the token; its
 * subscribers then see a clean end.  CN_E_DIGEST_MISMATCH /
 * CN_E_LENGTH_MISMATCH store nothing.  Frees p in every case. */
CN_API cn_err_t cn_blobs_put_commit(cn_blobs_put_t *p, cn_blobs_put_result_t *out);
/* Discards the put (its subscribers see an error) and frees p.  Accepts NULL. */
CN_API void cn_blobs_put_abort(cn_blobs_put_t *p);

/* ---- fetch ------------------------------------------------------------------ */
typedef struct cn_blobs_range {
    uint64_t off, len;
} cn_blobs_range_t;

typedef enum {
    CN_BLOBS_SOURCE_STORE = 0,
    CN_BLOBS_SOURCE_FANOUT = 1
} cn_blobs_source_t;

/* The establishment ack.  From the store: has_len, len = the blob's length
 * (the consumer's expected whole, and what it clamps ranges against), total
 * = the bytes the stream carries.  From a tap: neither (a live put's tail;
 * the hash check runs at stream end).  Ranged: nslices = the number of
 * ranges, slice[i] = BLAKE3 of exactly the bytes served for range i (clamped
 * to the blob), slice_len[i] their count; the stream carries the served
 * ranges back to back, in request order. */
typedef struct cn_blobs_ack {
    cn_blobs_source_t source;
    bool has_len;
    uint64_t len;
    uint64_t total;
    size_t nslices;
    const cn_digest_t *slice;
    const uint64_t *slice_len;
} cn_blobs_ack_t;

/* Store-first: ns's member d is served from the store; else a live put of d
 * into ns is tapped (whole fetches only); else the miss.  ranges NULL / n 0
 * = the whole blob; n ≤ CN_BLOBS_RANGES_MAX.  A range past the end clamps
 * (an offset past the end serves nothing).  Errors: CN_E_DENIED;
 * CN_E_NOT_FOUND (BLOB_MISSING: no member, no broadcast); CN_E_UNSUPPORTED
 * (a ranged fetch of a blob that is only in flight: it cannot be verified);
 * CN_E_CORRUPT / -errno (the store cannot serve it); CN_E_SHUTDOWN. */
CN_API cn_err_t cn_blobs_fetch_open(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                                    const cn_digest_t *d, const cn_blobs_range_t *ranges, size_t n,
                                    cn_blobs_fetch_t **out);
/* The ack; owned by f. */
CN_API const cn_blobs_ack_t *cn_blobs_fetch_ack(const cn_blobs_fetch_t *f);
/* A whole raw blob from the store can go file → socket: hands out an fd the
 * caller closes, and the length.  CN_E_UNSUPPORTED otherwise (use read),
 * and for a packed blob, whose bytes do not start at 0 (use take_fd_at). */
CN_API cn_err_t cn_blobs_fetch_take_fd(cn_blobs_fetch_t *f, int *fd, uint64_t *len);
/* As take_fd, for packed blobs and for a fetch of one range too: the bytes
 * to serve are [*off, *off + *len) of *fd (a packed blob's pack: read it by
 * offset only, sendfile(2) with an offset pointer or pread).  CN_E_UNSUPPORTED
 * for a tap, for several ranges, for the LZ4 form, or once read has begun. */
CN_API cn_err_t cn_blobs_fetch_take_fd_at(cn_blobs_fetch_t *f, int *fd, uint64_t *off,
                                          uint64_t *len);

/* How a tap waits without blocking its thread: when nothing is queued,
 * fetch_read calls suspend(ctx) under the tap's lock and returns CN_E_AGAIN;
 * later (once, from the putter's thread, after suspend) resume(ctx) is called
 * when bytes arrive or the broadcast ends. */
typedef struct cn_blobs_waiter {
    void (*suspend)(void *ctx);
    void (*resume)(void *ctx);
    void *ctx;
} cn_blobs_waiter_t;

/* The next bytes: > 0 copied into buf, 0 at the verified end, CN_E_AGAIN (a
 * tap with nothing queued: see the waiter; w NULL makes it wait blocking),
 * or an error: CN_E_CLOSED (the tap was dropped for falling behind, or the put
 * failed), CN_E_CORRUPT (served bytes did not match their acked digest), CN_E_SHUTDOWN. */
CN_API ssize_t cn_blobs_fetch_read(cn_blobs_fetch_t *f, void *buf, size_t max,
                                   const cn_blobs_waiter_t *w);
/* Ends the fetch (unsubscribing a tap).  Accepts NULL; any thread. */
CN_API void cn_blobs_fetch_close(cn_blobs_fetch_t *f);

/* ---- counters ----------------------------------------------------------------- */
typedef struct cn_blobs_counters {
    uint64_t puts, put_bytes, fetches_store, fetches_fanout, misses;
    uint64_t taps_dropped, tokens, broadcasts;
} cn_blobs_counters_t;
CN_API void cn_blobs_counters(cn_blobs_t *b, cn_blobs_counters_t *out);

#ifdef __cplusplus
}
#endif
#endif
