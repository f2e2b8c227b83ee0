/* identity internals shared by the files of this module (never included
 * from another module).  Owns the handle layout, the token cache and the
 * secret box. */
#ifndef CN_IDENTITY_INT_H
#define CN_IDENTITY_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "cairn/identity.h"
#include "meta/sql/identity.h"

#define CN__ID_KEY_LEN 32
#define CN__ID_NONCE_LEN 12
#define CN__ID_TAG_LEN 16
/* version byte + nonce + ciphertext + tag */
#define CN__ID_BOX_MAX (1 + CN__ID_NONCE_LEN + CN_SECRET_MAX + CN__ID_TAG_LEN)
/* Previous identity keys a handle may open secrets with (a rotation). */
#define CN__ID_PREV_MAX 4
#define CN__ID_CACHE_SLOTS 512
#define CN__ID_RATE_SHARDS 64
#define CN__ID_RATE_PER_SHARD 256

/* One cached token state: what authenticate needs, with the secret still
 * sealed.  found == false caches "no such token". */
typedef struct cn__tok_entry {
    bool used;
    bool found;
    bool active;        /* not revoked, account not disabled */
    int64_t fetched_ms; /* monotonic */
    uint64_t stamp;     /* the write-generation word it was read under (gen.c) */
    uint64_t fleet;     /* the "identity" topic's generation it was read under (gen.c) */
    int64_t expires_at; /* unix seconds, 0 = never */
    cn_principal_t p;
    /* The token's secret, opened once per fetch (not per request: the AES-GCM
     * open was a tenth of a presigned GET's CPU).  The box protects secrets
     * at rest; the process holds identity.key, so a cached plaintext exposes
     * nothing more to a reader of its memory.  Entries are cleansed when
     * copies are dropped.  secret_len 0: unusable (no secret, or one that
     * does not open). */
    uint8_t secret[CN_SECRET_MAX];
    size_t secret_len;
    /* The secret's tag (cn_identity_lookup_tagged): BLAKE3 of the secret
     * keyed by the handle's tag_key, computed with the fetch. */
    uint8_t tag[CN_IDENTITY_TAG_LEN];
} cn__tok_entry_t;

typedef struct cn__rate_entry {
    uint64_t hash;
    char token_id[CN_TOKEN_ID_MAX + 1];
    int64_t milli; /* tokens held, x1000; below 0 after other nodes' use */
    int64_t last_ms;
    int64_t unsynced;    /* requests admitted here since the last sync (ratesync.c) */
    int64_t others_seen; /* the other nodes' use at the last sync; -1: none yet */
} cn__rate_entry_t;

typedef struct cn__rate_shard {
    pthread_mutex_t mu;
    size_t n;
    cn__rate_entry_t e[CN__ID_RATE_PER_SHARD];
} cn__rate_shard_t;

struct cn_identity {
    cn_meta_t *meta;
    uint8_t key[CN__ID_KEY_LEN]; /* the current key: seals, and opens first */
    uint8_t tag_key[32];         /* random per handle: keys the secrets' tags */
    /* Previous keys, tried in order when the current one does not open a
     * secret (keyrot.c); never used to seal. */
    uint8_t prev[CN__ID_PREV_MAX][CN__ID_KEY_LEN];
    size_t n_prev;
    atomic_uint ttl_ms;
    int gen_fd;            /* DATA/identity.gen, held with a shared lock */
    _Atomic uint64_t *gen; /* its word, mapped shared (gen.c) */

    /* Lookups share it (no futex between the loops on a hit); filing and
     * clearing take it exclusively. */
    pthread_rwlock_t cache_mu;
    cn__tok_entry_t cache[CN__ID_CACHE_SLOTS];

    atomic_llong rate_milli; /* refill per second, x1000; 0 = off */
    atomic_llong burst_milli;
    cn__rate_shard_t rate[CN__ID_RATE_SHARDS];
    /* The fleet's share of the limits (ratesync.c): a thread started by the
     * first cn_identity_set_rate with a rate, on an engine with more than
     * one writer; stopped by cn__id_rate_destroy. */
    pthread_mutex_t sync_mu; /* guards the four fields below */
    pthread_cond_t sync_cv;
    pthread_t sync_thread;
    bool sync_on, sync_stop;
    char node_key[33]; /* random per handle: this process's rows */
};

/* FNV-1a, for cache and rate-limiter slots (not security relevant). */
uint64_t cn__id_hash(const char *s);

/* Validators: true when the string is well-formed. */
bool cn__id_valid_account(const char *s);
bool cn__id_valid_token_id(const char *s, size_t len);
bool cn__id_valid_secret(const char *s, size_t len);
bool cn__id_valid_namespace(const char *s);

/* identity.key: loads DATA/identity.key, creating it if missing. */
cn_err_t cn__id_key_load(const char *data_dir, uint8_t key[CN__ID_KEY_LEN]);
/* Loads the key in path, never creating it: -ENOENT, CN_E_CORRUPT, -errno. */
cn_err_t cn__id_key_load_file(const char *path, uint8_t key[CN__ID_KEY_LEN]);
/* Checks id's key against the metadata's key check value, recording it when
 * none is (keycheck.c); name says which key in the log.  A value that is a
 * previous key's is accepted (a rotation in progress, logged).  CN_E_AUTH
 * (logged) for another key, meta errors. */
cn_err_t cn__id_key_check(cn_identity_t *id, const char *name);
/* The key check value of key: hex HMAC-SHA256 of the fixed label, with NUL. */
#define CN__ID_KCV_HEX (2 * 32)
void cn__id_kcv(const uint8_t key[CN__ID_KEY_LEN], char out[CN__ID_KCV_HEX + 1]);
/* Loads opts->prev_files into id->prev (keyrot.c): CN_E_INVALID past
 * CN__ID_PREV_MAX, the load's errors (logged with the file's name). */
cn_err_t cn__id_ring_load(cn_identity_t *id, const cn_identity_opts_t *opts);
/* Opens box with id's current key, else each previous key in turn (as
 * cn__id_open); cn__id_open's errors when none opens it. */
cn_err_t cn__id_open_ring(const cn_identity_t *id, const char *token_id, const uint8_t *box,
                          size_t box_len, uint8_t *secret, size_t *len);

/* Seals secret (bound to token_id) into box as lowercase hex, NUL-terminated;
 * hex must hold 2 * CN__ID_BOX_MAX + 1 bytes. */
cn_err_t cn__id_seal(const uint8_t key[CN__ID_KEY_LEN], const char *token_id, const uint8_t *secret,
                     size_t len, char *hex);
/* Decodes hex into raw box bytes. */
cn_err_t cn__id_box_decode(const char *hex, size_t hex_len, uint8_t *box, size_t *box_len);
/* Opens a raw box sealed for token_id into secret (cap >= CN_SECRET_MAX). */
cn_err_t cn__id_open(const uint8_t key[CN__ID_KEY_LEN], const char *token_id, const uint8_t *box,
                     size_t box_len, uint8_t *secret, size_t *len);

/* Copies text column col of st into out (max + 1 bytes, already zeroed) when
 * it holds at most max bytes; a NULL or longer value leaves out empty. */
void cn__id_col_copy(cn_meta_stmt_t *st, int col, char *out, size_t max);

/* Drops every cached token state. */
void cn__id_cache_clear(cn_identity_t *id);

/* The write-generation word (gen.c, whose invariants say why a cached state
 * filed under a quiet word is never stale while the word holds).
 * cn__id_gen_open maps DATA/identity.gen into id (zeroed when no other
 * process has it open): -errno, CN_E_CORRUPT; cn__id_gen_close undoes it and
 * accepts a handle whose open failed (gen_fd -1 or a failed open's). */
cn_err_t cn__id_gen_open(cn_identity_t *id, const char *data_dir);
void cn__id_gen_close(cn_identity_t *id);
uint64_t cn__id_gen_load(const cn_identity_t *id);
/* The fleet's topic of identity (cn_meta_topic_gen / cn_meta_notify). */
#define CN__ID_TOPIC "identity"
/* A word no writer was in flight at. */
static inline bool cn__id_gen_quiet(uint64_t w)
{
    return (uint32_t)w == 0;
}
/* Runs a write transaction of identity (cn_meta_run's flags, body and
 * result) as a writer in flight, bumping the generation once it returned,
 * and notifies the fleet's "identity" topic in the transaction itself
 * (CN__ID_TOPIC).  Every write of this module's tables goes through here,
 * but the key check row's (keycheck.c: no cached state reads it). */
cn_err_t cn__id_write_run(cn_identity_t *id, unsigned flags, cn_meta_body_fn body, void *ctx);
/* The same for a write that carries an operation key (cn_meta_run_keyed):
 * landed looks for it after a COMMIT lost with its server. */
cn_err_t cn__id_write_run_keyed(cn_identity_t *id, unsigned flags, cn_meta_body_fn body,
                                cn_meta_landed_fn landed, void *ctx);

/* Inserts or updates token token_id for account_id with the given secret
 * and perms, not revoked; inside the caller's write txn. */
cn_err_t cn__id_token_put(cn_identity_t *id, cn_meta_txn_t *t, const char *token_id,
                          int64_t account_id, const char *secret, size_t secret_len,
                          cn_perms_t perms, int64_t expires_at);
/* Creates account name (email may be NULL) inside the caller's write txn,
 * recording create_key (NULL: none), the operation key a create whose
 * COMMIT was lost looks for; *account_id receives its id. */
cn_err_t cn__id_account_insert(cn_meta_txn_t *t, const char *name, const char *email,
                               const char *create_key, int64_t *account_id);
/* Random token id ("CN" + 18 base32 chars) and secret (40 alphanumerics). */
cn_err_t cn__id_new_credential(char token_id[CN_TOKEN_ID_MAX + 1], char secret[CN_SECRET_MAX + 1]);

/* The bucket of token_id (hash its cn__id_hash) in shard s, or NULL; the
 * caller holds s->mu. */
cn__rate_entry_t *cn__id_rate_find(cn__rate_shard_t *s, uint64_t hash, const char *token_id);
void cn__id_rate_init(cn_identity_t *id);
void cn__id_rate_destroy(cn_identity_t *id);
/* ratesync.c: starts the fleet sync of the rate limits if the metadata has
 * more than one writer and it is not running; stops it.  Any thread. */
void cn__id_rate_sync_start(cn_identity_t *id);
void cn__id_rate_sync_stop(cn_identity_t *id);

#endif
