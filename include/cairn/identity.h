/* cairn identity: accounts, tokens and their permission sets, the first
 * administrator credential, per-token rate limits, and blob namespace grants.
 *
 * A credential is "token_id:secret"; a token id never contains a colon, so
 * the credential splits on its FIRST colon and the secret may hold colons.
 * Secrets are stored encrypted (AES-256-GCM, key in DATA/identity.key, mode
 * 0600) because the server must both compare a presented secret and HMAC with
 * it for S3 SigV4; see docs/identity.md.  This module never logs a secret,
 * compares secrets only in constant time, and never sees a socket.
 */
#ifndef CAIRN_IDENTITY_H
#define CAIRN_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- permissions -------------------------------------------------------- */
enum {
    CN_PERM_BUCKET_CREATE = 1u << 0,
    CN_PERM_BUCKET_DELETE = 1u << 1,
    CN_PERM_BUCKET_LIST = 1u << 2,
    CN_PERM_OBJECT_GET = 1u << 3,
    CN_PERM_OBJECT_PUT = 1u << 4,
    CN_PERM_OBJECT_DELETE = 1u << 5,
    CN_PERM_OBJECT_LIST = 1u << 6,
    CN_PERM_BLOBS_READ = 1u << 7,
    CN_PERM_BLOBS_WRITE = 1u << 8,
    CN_PERM_ADMIN = 1u << 9,
    /* Bucket and object settings (issue 25), a group of their own from bit
     * 16 so the first group's bits stay as stored.  bucket:configure is
     * also held by every token holding bucket:create (cn_perms_allow). */
    CN_PERM_BUCKET_CONFIGURE = 1u << 16,         /* versioning, lifecycle, tagging, object lock */
    CN_PERM_OBJECT_LOCK = 1u << 17,              /* retention and legal hold of versions */
    CN_PERM_OBJECT_BYPASS_GOVERNANCE = 1u << 18, /* shorten / lift GOVERNANCE retention */
    CN_PERM_ALL = ((1u << 10) - 1) | CN_PERM_BUCKET_CONFIGURE | CN_PERM_OBJECT_LOCK |
                  CN_PERM_OBJECT_BYPASS_GOVERNANCE,
    /* `cairn admin token create` without --perm: everything but admin. */
    CN_PERM_DEFAULT = CN_PERM_ALL & ~CN_PERM_ADMIN,
};
typedef uint32_t cn_perms_t;

/* Parses one permission name ("object:get", ...; "all" = CN_PERM_ALL) of len
 * bytes into its bit.  Errors: CN_E_INVALID for an unknown name. */
CN_API cn_err_t cn_perm_parse(const char *name, size_t len, cn_perms_t *out);

/* The name of a single permission bit ("object:get"), or NULL if perm is not
 * exactly one known bit.  Static string. */
CN_API const char *cn_perm_name(cn_perms_t perm);

/* Writes the names of every bit in perms, space-separated and in the order
 * above, into out (NUL-terminated; "" for none).  Returns CN_E_TOO_LARGE if
 * cap is too small (CN_PERMS_STR_MAX always suffices). */
#define CN_PERMS_STR_MAX 224
CN_API cn_err_t cn_perms_format(cn_perms_t perms, char *out, size_t cap);

/* Whether a token holding perms may use an action that needs the single
 * permission need: it holds need or admin, or need is bucket:configure and
 * it holds bucket:create (which governed every bucket setting before
 * bucket:configure existed, so tokens made earlier keep configuring).
 * Pure. */
CN_API bool cn_perms_allow(cn_perms_t perms, cn_perms_t need);

/* ---- principals ----------------------------------------------------------- */
#define CN_ACCOUNT_NAME_MAX 64 /* [A-Za-z0-9][A-Za-z0-9._-]* */
#define CN_TOKEN_ID_MAX 64     /* [A-Za-z0-9._-]+, never a colon */
#define CN_SECRET_MAX 256      /* printable ASCII, no spaces */
#define CN_EMAIL_MAX 254
/* Longest credential "token_id:secret" plus NUL. */
#define CN_CREDENTIAL_MAX (CN_TOKEN_ID_MAX + 1 + CN_SECRET_MAX + 1)

enum {
    CN_PRINCIPAL_ADMIN = 1u << 0,     /* the token holds CN_PERM_ADMIN */
    CN_PRINCIPAL_ANONYMOUS = 1u << 1, /* no credential (set by callers, never here) */
    /* The server's own worker (S3 lifecycle) acting for a bucket's owner: a
     * bucket policy's Deny does not bind it, as no policy binds AWS's
     * lifecycle (set by the service, never by authentication). */
    CN_PRINCIPAL_SERVICE = 1u << 2,
};

/* Who is asking: filled by authenticate/lookup_secret; plain data, no
 * pointers, safe to copy. */
typedef struct cn_principal {
    char account[CN_ACCOUNT_NAME_MAX + 1];
    int64_t account_id;
    char token_id[CN_TOKEN_ID_MAX + 1];
    cn_perms_t perms;
    uint32_t flags;
} cn_principal_t;

typedef struct cn_identity cn_identity_t;

/* Opens identity over an open meta handle (which must outlive it): applies the
 * "identity" migrations and loads DATA/identity.key, creating it (32 random
 * bytes, mode 0600, atomically) if missing.  Does not create any account; call
 * cn_identity_bootstrap for that.  Maps DATA/identity.gen, the write
 * generation every process on the data dir shares (created; zeroed when no
 * other process holds it), and refuses to open without it.  Errors:
 * CN_E_INVALID, CN_E_CORRUPT (bad key or generation file), meta errors,
 * -errno.  The handle is thread-safe. */
CN_API cn_err_t cn_identity_open(cn_meta_t *meta, const char *data_dir, cn_identity_t **out);

/* Where cn_identity_open_opts finds its key and its generation file. */
typedef struct cn_identity_opts {
    /* DATA/identity.gen, and DATA/identity.key when key_file is NULL.  NULL
     * (only with key_file): no generation file, and token states are never
     * cached (for a short-lived tool working on a fleet's database). */
    const char *data_dir;
    /* The identity key (64 hex digits), shared by every node of a fleet;
     * NULL: DATA/identity.key, created when missing.  A named file is never
     * created: a missing one is -ENOENT. */
    const char *key_file;
    /* Previous identity keys (a rotation, docs/identity.md "Rotating the
     * identity key"): NULL-terminated, at most 4, NULL for none.  They open
     * secrets the current key does not, and a key check value recorded
     * under one of them is accepted; nothing is ever sealed with them. */
    const char *const *prev_files;
} cn_identity_opts_t;

/* cn_identity_open with a key file of the caller's choosing.  Both check the
 * key against the metadata's key check value (an HMAC-SHA256 of a fixed
 * label under the key, recorded by the first open of the database): a key
 * other than the recorded one, or (before one is recorded) a key that opens
 * none of the first 64 stored token secrets, is refused with CN_E_AUTH and
 * an error logged, instead of every sealed secret failing later
 * (docs/fleet.md, "One identity key"). */
CN_API cn_err_t cn_identity_open_opts(cn_meta_t *meta, const cn_identity_opts_t *opts,
                                      cn_identity_t **out);
CN_API void cn_identity_close(cn_identity_t *id); /* NULL is a no-op */

/* What cn_identity_rotate_key did so far (counts over the whole run). */
typedef struct cn_identity_rotation {
    uint64_t scanned;    /* token rows read */
    uint64_t resealed;   /* opened with the old key, sealed again with the new one */
    uint64_t current;    /* already sealed with the new key (an earlier run, a new token) */
    uint64_t unreadable; /* opened with neither key (logged by id; left as they are) */
    bool recorded;       /* the new key's check value is recorded: the rotation is done */
} cn_identity_rotation_t;

/* Called after each committed batch; nonzero stops the run there (that
 * value is returned).  Not called after the last step. */
typedef cn_err_t (*cn_identity_rotate_fn)(void *arg, const cn_identity_rotation_t *r);

/* Re-seals every token secret of meta's identity under the key in new_file
 * (opening it with the key in old_file), batch rows per write transaction in
 * token id order, then records new_file's key check value.  Safe while nodes
 * serve (a re-sealed row holds the same secret) and safe to run again after
 * a crash or a stop: rows already under the new key are skipped.  Refuses
 * (CN_E_AUTH, logged) when the recorded check value is neither key's, and
 * (CN_E_INVALID) two equal keys, or batch 0 or over 100,000.  fn may be NULL.  Errors: the
 * key files' loads (-ENOENT, CN_E_CORRUPT), meta errors, fn's value. */
CN_API cn_err_t cn_identity_rotate_key(cn_meta_t *meta, const char *new_file, const char *old_file,
                                       size_t batch, cn_identity_rotate_fn fn, void *arg,
                                       cn_identity_rotation_t *out);

/* The most a cached token state may age before it is re-read (default
 * 60,000 ms; 0 = always re-read).  An upper bound only: a state is served
 * only while the data dir's identity write-generation (DATA/identity.gen),
 * which every change of a token, account or grant made through identity in
 * any process (cairnd, cairn admin) moves before it returns, is unchanged, so
 * such changes apply to the next lookup.  The bound covers writes made behind
 * identity's back. */
CN_API void cn_identity_set_cache_ttl(cn_identity_t *id, unsigned ttl_ms);

/* First start.  If no account exists: creates account "admin" and a token
 * with every permission.  With CAIRN_ADMIN_TOKEN=id:secret in the environment
 * that credential is used (and made to hold: created or updated to that
 * secret, every permission, not revoked — also when accounts already exist);
 * otherwise a random credential is written to DATA/admin.token (mode 0600,
 * "id:secret\n", fsynced before the database commit) and its path is logged.
 * Idempotent: once an account exists nothing is created or rewritten.
 * Errors: CN_E_INVALID (malformed CAIRN_ADMIN_TOKEN), meta errors, -errno. */
CN_API cn_err_t cn_identity_bootstrap(cn_identity_t *id, const char *data_dir);

/* Checks a presented credential "token_id:secret" of len bytes (not
 * necessarily NUL-terminated).  0 and *out filled when the token exists, is
 * not revoked or expired, its account is not disabled, and the secret matches
 * (compared in constant time).  CN_E_AUTH for every rejection, including a
 * credential not shaped id:secret, without saying which.  CN_E_DB* if the
 * database failed.  Thread-safe. */
CN_API cn_err_t cn_identity_authenticate(cn_identity_t *id, const char *cred, size_t len,
                                         cn_principal_t *out);

/* For signature schemes (S3 SigV4): copies the plaintext secret of an active
 * token into secret[0..cap) and its length to *len, and fills *out (may be
 * NULL).  CN_E_AUTH if the token is unknown, revoked, expired or its account
 * disabled; CN_E_TOO_LARGE if cap is too small (CN_SECRET_MAX suffices).  The
 * caller should wipe the secret when done.  Thread-safe. */
CN_API cn_err_t cn_identity_lookup_secret(cn_identity_t *id, const char *token_id, uint8_t *secret,
                                          size_t cap, size_t *len, cn_principal_t *out);
/* cn_identity_lookup_secret from the token-state cache only, never reading
 * the database (for a caller on an event loop): the same results, or
 * CN_E_AGAIN when the token's state is not cached or no longer fresh. */
CN_API cn_err_t cn_identity_lookup_secret_cached(cn_identity_t *id, const char *token_id,
                                                 uint8_t *secret, size_t cap, size_t *len,
                                                 cn_principal_t *out);
/* The length of a secret's tag. */
#define CN_IDENTITY_TAG_LEN 32
/* cn_identity_lookup_secret (cached_only: _cached), also writing the
 * secret's tag: a MAC of it (BLAKE3 keyed by a random key of this handle
 * that never leaves memory) computed once when the token's state is fetched,
 * not per call.  Another secret has another tag, so a cache of what is
 * derived from a secret (the SigV4 signing keys) can find its entry by
 * (token id, tag) without hashing the secret per request. */
CN_API cn_err_t cn_identity_lookup_tagged(cn_identity_t *id, const char *token_id, bool cached_only,
                                          uint8_t *secret, size_t cap, size_t *len,
                                          uint8_t tag[CN_IDENTITY_TAG_LEN], cn_principal_t *out);

/* ---- rate limiting ------------------------------------------------------------
 * One token bucket per token id, shared by all of that token's connections.
 * rate = requests per second refilled, burst = bucket size; rate 0 = off
 * (the default). */
CN_API void cn_identity_set_rate(cn_identity_t *id, double rate, double burst);

/* Takes one request from token_id's bucket: 0, or CN_E_RATE_LIMITED when it is
 * empty.  Always 0 when limiting is off.  Thread-safe. */
CN_API cn_err_t cn_identity_rate_take(cn_identity_t *id, const char *token_id);

/* ---- accounts ---------------------------------------------------------------- */
typedef struct cn_account {
    int64_t id;
    char name[CN_ACCOUNT_NAME_MAX + 1];
    char email[CN_EMAIL_MAX + 1]; /* "" if none */
    bool disabled;
    int64_t created_at; /* unix seconds */
} cn_account_t;

/* Creates an account.  email may be NULL; it is stored lower-cased and must
 * be unique.  Errors: CN_E_INVALID (bad name or email), CN_E_EXISTS (name or
 * email taken), meta errors.  *out (may be NULL) receives the new account. */
CN_API cn_err_t cn_identity_account_create(cn_identity_t *id, const char *name, const char *email,
                                           cn_account_t *out);

/* Sets or clears an account's disabled flag; its tokens stop (or resume)
 * authenticating.  Errors: CN_E_NOT_FOUND, meta errors. */
CN_API cn_err_t cn_identity_account_set_disabled(cn_identity_t *id, const char *name,
                                                 bool disabled);

/* Looks up one account by name, by email (case-insensitive) or by id.
 * CN_E_NOT_FOUND if there is none. */
CN_API cn_err_t cn_identity_account_get(cn_identity_t *id, const char *name, cn_account_t *out);
CN_API cn_err_t cn_identity_account_by_email(cn_identity_t *id, const char *email,
                                             cn_account_t *out);
CN_API cn_err_t cn_identity_account_by_id(cn_identity_t *id, int64_t account_id, cn_account_t *out);

/* Calls fn for every account in name order; a non-zero return from fn stops
 * the walk and is returned.  fn must not call back into identity. */
typedef cn_err_t (*cn_account_fn)(void *arg, const cn_account_t *a);
CN_API cn_err_t cn_identity_account_list(cn_identity_t *id, cn_account_fn fn, void *arg);

/* ---- tokens -------------------------------------------------------------------- */
typedef struct cn_token_info {
    char token_id[CN_TOKEN_ID_MAX + 1];
    char account[CN_ACCOUNT_NAME_MAX + 1];
    int64_t account_id;
    cn_perms_t perms;
    int64_t created_at; /* unix seconds */
    int64_t revoked_at; /* 0 if active */
    int64_t expires_at; /* 0 if it never expires */
} cn_token_info_t;

/* Creates a token for account with perms (must be non-zero) and a random id
 * and secret; writes "token_id:secret" (NUL-terminated) into cred, which must
 * hold CN_CREDENTIAL_MAX bytes.  expires_at (unix seconds) 0 = never.
 * Errors: CN_E_NOT_FOUND (no such account), CN_E_INVALID, meta errors. */
CN_API cn_err_t cn_identity_token_create(cn_identity_t *id, const char *account, cn_perms_t perms,
                                         int64_t expires_at, char cred[CN_CREDENTIAL_MAX]);

/* Revokes a token; it stops authenticating at once in this process and within
 * the cache TTL elsewhere.  Revoking a revoked token succeeds.
 * Errors: CN_E_NOT_FOUND, meta errors. */
CN_API cn_err_t cn_identity_token_revoke(cn_identity_t *id, const char *token_id);

/* Calls fn for every token (never a secret), ordered by account then id;
 * account NULL = all accounts.  Stops on a non-zero return from fn. */
typedef cn_err_t (*cn_token_fn)(void *arg, const cn_token_info_t *t);
CN_API cn_err_t cn_identity_token_list(cn_identity_t *id, const char *account, cn_token_fn fn,
                                       void *arg);

/* ---- blob namespace grants ------------------------------------------------------
 * A namespace with no grants denies every non-admin caller. */
enum {
    CN_NS_READ = 1u << 0,
    CN_NS_WRITE = 1u << 1,
    CN_NS_ALL = CN_NS_READ | CN_NS_WRITE,
};
#define CN_NAMESPACE_MAX 128 /* [A-Za-z0-9._/-], not starting with '/' */

/* Parses "read" or "write".  CN_E_INVALID otherwise. */
CN_API cn_err_t cn_ns_action_parse(const char *s, uint32_t *out);

typedef struct cn_ns_grant {
    char ns[CN_NAMESPACE_MAX + 1];
    char account[CN_ACCOUNT_NAME_MAX + 1];
    int64_t account_id;
    uint32_t actions; /* CN_NS_READ | CN_NS_WRITE */
    int64_t created_at;
} cn_ns_grant_t;

/* Adds actions on ns to account (existing actions are kept).
 * Errors: CN_E_INVALID (bad namespace or actions), CN_E_NOT_FOUND (account). */
CN_API cn_err_t cn_identity_grant(cn_identity_t *id, const char *ns, const char *account,
                                  uint32_t actions);

/* Removes actions (CN_NS_ALL for every one); a grant left empty is deleted.
 * CN_E_NOT_FOUND if account holds none of them on ns. */
CN_API cn_err_t cn_identity_revoke(cn_identity_t *id, const char *ns, const char *account,
                                   uint32_t actions);

/* The actions account_id holds on ns in *actions (0 if none). */
CN_API cn_err_t cn_identity_ns_actions(cn_identity_t *id, const char *ns, int64_t account_id,
                                       uint32_t *actions);

/* Calls fn for every grant (on ns only, if ns is not NULL), ordered by
 * namespace then account.  Stops on a non-zero return from fn. */
typedef cn_err_t (*cn_ns_grant_fn)(void *arg, const cn_ns_grant_t *g);
CN_API cn_err_t cn_identity_grant_list(cn_identity_t *id, const char *ns, cn_ns_grant_fn fn,
                                       void *arg);

#ifdef __cplusplus
}
#endif
#endif
