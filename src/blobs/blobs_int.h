/* Internals shared by the files of the blobs module; never included from
 * another module. */
#ifndef CN_BLOBS_INT_H
#define CN_BLOBS_INT_H

#include "cairn/blobs.h"
#include "cairn/store.h"
#include "cairn/meta.h"

#include <pthread.h>
#include <stdatomic.h>

#define CN__MOD "blobs"

/* ---- pin tokens (tokens.c) ---------------------------------------------------
 * One entry per minted token: the pin it is (a guard, or a durable row with
 * an expiry), kept in a hash table by token and in a list by age (renewal
 * moves an entry to the young end, so with one TTL the list is also ordered
 * by expiry). */
typedef struct cn__tok {
    char id[CN_BLOBS_TOKEN_LEN + 1];
    char ns[CN_NAMESPACE_MAX + 1];
    cn_digest_t d;
    cn_store_guard_t *guard; /* pin_ttl_ms == 0 */
    uint64_t pin_id;         /* pin_ttl_ms > 0 */
    int64_t expires_ms;      /* 0 = never */
    struct cn__tok *hnext;
    struct cn__tok *older, *younger;
} cn__tok_t;

typedef struct cn__tokens {
    pthread_mutex_t mu;
    cn__tok_t **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
    cn__tok_t *oldest, *youngest;
} cn__tokens_t;

/* ---- fanout (fanout.c) ---------------------------------------------------------- */
typedef struct cn__bcast cn__bcast_t;
typedef struct cn__tap cn__tap_t;

struct cn_blobs {
    cn_meta_t *meta;
    cn_store_t *store;
    cn_identity_t *id;
    cn_blobs_opts_t opts;
    cn__tokens_t tok;
    /* fanout: one lock over the registry, every broadcast and every tap */
    pthread_mutex_t fan_mu;
    pthread_cond_t fan_cv;
    cn__bcast_t *bcasts;
    bool shutdown;
    size_t resuming; /* taps resumed whose reader has not run again */
    size_t queued;   /* bytes queued over all taps (fanout budget) */
    struct {
        _Atomic uint64_t puts, put_bytes, fetches_store, fetches_fanout, misses, taps_dropped,
            broadcasts;
    } n;
};

/* blobs.c */
cn_err_t cn__blobs_authorize(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns, uint32_t action);
/* *member = ns's membership holds d (one read transaction). */
cn_err_t cn__blobs_is_member(cn_blobs_t *b, const char *ns, const cn_digest_t *d, bool *member);
/* Records d (len bytes) as a member of ns; committed before return. */
cn_err_t cn__blobs_add_member(cn_blobs_t *b, const char *ns, const cn_digest_t *d, uint64_t len);

/* tokens.c */
cn_err_t cn__tok_init(cn__tokens_t *t);
void cn__tok_fini(cn_blobs_t *b);
/* Mints a token pinning d for ns: a guard held for the process lifetime, or
 * a durable pin row expiring pin_ttl_ms from now. */
cn_err_t cn__tok_mint(cn_blobs_t *b, const char *ns, const cn_digest_t *d,
                      char id[CN_BLOBS_TOKEN_LEN + 1]);
/* Renews token for (ns, d): *ok false when it is unknown, foreign, for
 * another digest or namespace, or expired (then it is forgotten). */
cn_err_t cn__tok_renew(cn_blobs_t *b, const char *ns, const cn_digest_t *d, const char *token,
                       bool *ok);
/* Ends every token of ns on d[0..n). */
void cn__tok_end(cn_blobs_t *b, const char *ns, const cn_digest_t *d, size_t n);
size_t cn__tok_count(cn_blobs_t *b);

/* fanout.c */
/* Registers a broadcast of (ns, d) unless one is live; *out NULL then. */
cn_err_t cn__bcast_start(cn_blobs_t *b, const char *ns, const cn_digest_t *d, cn__bcast_t **out);
/* Copies n bytes to every subscriber, dropping those over their queue bound. */
void cn__bcast_push(cn_blobs_t *b, cn__bcast_t *bc, const void *p, size_t n);
/* Ends the broadcast (ok: clean end after commit; else an error) and drops
 * the putter's reference.  Accepts NULL. */
void cn__bcast_end(cn_blobs_t *b, cn__bcast_t *bc, bool ok);
/* Subscribes to the live broadcast of (ns, d): CN_E_NOT_FOUND if none. */
cn_err_t cn__tap_open(cn_blobs_t *b, const char *ns, const cn_digest_t *d, cn__tap_t **out);
ssize_t cn__tap_read(cn_blobs_t *b, cn__tap_t *t, void *buf, size_t max,
                     const cn_blobs_waiter_t *w);
void cn__tap_close(cn_blobs_t *b, cn__tap_t *t);
void cn__fan_shutdown(cn_blobs_t *b);

#endif
