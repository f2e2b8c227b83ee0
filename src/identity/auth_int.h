/* Internals shared by the auth service's files (auth_*.c): the handle, the
 * certificate authority helpers and the verb context.  Never included from
 * another module; never holds a password longer than one verb. */
#ifndef CAIRN_IDENTITY_AUTH_INT_H
#define CAIRN_IDENTITY_AUTH_INT_H

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "meta/sql/auth.h"

/* The CAs and the listener's key, by index. */
enum {
    CN__AU_CRED_CA,
    CN__AU_ACCESS_CA,
    CN__AU_SERVER_CA,
    CN__AU_SERVER_TLS,
    CN__AU_NKEYS
};
extern const char *const cn__au_key_names[CN__AU_NKEYS];

struct cn_auth {
    cn_meta_t *meta;
    uint32_t argon2_t, argon2_m_kib;
    X509 *cert[CN__AU_NKEYS];
    EVP_PKEY *key[CN__AU_NKEYS];
    char domain[CN_SAU2_CRED_HEX + 1]; /* the trust domain: the incarnation in hex */
};

/* Storage error codes used by SAU2 (docs/protocol/scribe.md section 5). */
enum {
    CN__AU_MALFORMED = 1,
    CN__AU_UNAUTHENTICATED = 3,
    CN__AU_FORBIDDEN = 4,
    CN__AU_INTERNAL = 5,
    CN__AU_LIMIT = 8,
    CN__AU_UNSUPPORTED = 9,
    CN__AU_STORAGE = 10,
    CN__AU_INTENT_MISMATCH = 200
};

/* What a certificate says about its credential (the cairn extension). */
typedef struct cn__au_subject {
    const char *credential; /* 32 hex */
    const char *kind;
    const char *key_id; /* 64 hex */
    const char *account;
    const char *domain;
} cn__au_subject_t;

/* ---- auth_ca.c ---- */
cn_err_t cn__au_keygen(bool ec, EVP_PKEY **out);
/* A certificate for pub, signed by issuer_key (self-signed when issuer is
 * NULL), valid from now to not_after_ms, with serial (16 bytes); a CA when
 * ca; with the cairn extension when sub is not NULL (CN from sub->account). */
cn_err_t cn__au_cert_make(EVP_PKEY *pub, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                          const uint8_t serial[16], int64_t not_after_ms, bool ca,
                          const cn__au_subject_t *sub, X509 **out);
/* PEM of a certificate or a private key (PKCS#8) into out (NUL-terminated). */
cn_err_t cn__au_cert_pem(X509 *x, cn_buf_t *out);
cn_err_t cn__au_key_pem(EVP_PKEY *k, cn_buf_t *out);
/* Parses hex SPKI DER (an Ed25519 key only) into *out and its key id hex. */
cn_err_t cn__au_pubkey_parse(const uint8_t *hex, size_t len, EVP_PKEY **out,
                             char key_id[CN_SAU2_KEY_HEX + 1]);
/* Replaces the file at path whole with n bytes at p, mode 0600, durably. */
cn_err_t cn__au_file_write(const char *path, const void *p, size_t n);
/* Writes and reads DATA/auth/<name>.key (0600) and the directory (0700). */
cn_err_t cn__au_key_save(const char *data_dir, const char *name, EVP_PKEY *k);
cn_err_t cn__au_key_load(const char *data_dir, const char *name, EVP_PKEY **out);

/* ---- auth_state.c ---- */
/* Reads the incarnation and revision into reply (inside txn t). */
cn_err_t cn__au_state_read(cn_meta_txn_t *t, cn_sau2_reply_t *reply);
/* argon2id of pw with a random salt, as the encoded string. */
cn_err_t cn__au_hash_password(const cn_auth_t *a, const uint8_t *pw, size_t len, char *out,
                              size_t cap);

/* ---- auth_verbs.c ---- */
#define CN__AU_NAME_MAX 64
/* Copies argument i of req into out (cap bytes, NUL-terminated); false when
 * it is longer or holds a NUL. */
bool cn__au_arg(const cn_sau2_req_t *req, uint16_t i, char *out, size_t cap);
bool cn__au_verb_is(const cn_sau2_req_t *req, const char *verb);
/* Whether statement stmt, bound to the texts a and b, returns a row
 * (*taken).  Uniqueness is checked this way before an insert: a failed
 * statement fails its whole transaction. */
cn_err_t cn__au_taken(cn_meta_txn_t *t, int stmt, const char *a, const char *b, bool *taken);
/* The caller's credential as the state has it. */
typedef struct cn__au_cred {
    char kind[24];
    char account[CN__AU_NAME_MAX + 1]; /* the user's or server's id */
    int64_t expires_ms;
    bool derived; /* made by automation-derive (it has a parent) */
} cn__au_cred_t;
/* Checks the caller against the state (inside t): the credential exists, is
 * neither revoked nor expired, and its registered key is the certificate's.
 * Fills *cred; a refusal sets reply's error (unauthenticated) and returns 0. */
cn_err_t cn__au_caller_check(cn_meta_txn_t *t, const cn_sau2_caller_t *caller, cn__au_cred_t *cred,
                             cn_sau2_reply_t *reply);
/* Sets reply's error from a failed engine or service call. */
void cn__au_fail(cn_sau2_reply_t *reply, cn_err_t e);
/* Empties reply's rows, error and refusal (the incarnation and revision
 * are left: every body that answers them reads them again).  A body run
 * with CN_META_RETRY calls it first, so a repeat never sees an earlier
 * attempt's rows or refusal. */
void cn__au_reply_restart(cn_sau2_reply_t *reply);
/* Issues a credential (inside write txn t): registers the key (once), signs
 * its certificate with the credential CA, records it, and appends the row
 * [certificate PEM, credential, expires-ms] (with_ids) or [certificate PEM].
 * A refusal sets reply's error and returns 0. */
typedef struct cn__au_issue {
    const char *kind, *account_name, *account_id, *credential, *label, *parent;
    cn_sau2_str_t public_key;
    int64_t expires_ms;
    bool with_ids;  /* [certificate PEM, credential, expires-ms] */
    bool with_kind; /* [certificate PEM, credential, kind, expires-ms] */
} cn__au_issue_t;
cn_err_t cn__au_issue(cn_auth_t *a, cn_meta_txn_t *t, const cn__au_issue_t *in,
                      cn_sau2_reply_t *reply);
/* Operations: looks up op; *found tells whether it is recorded, and when it
 * is with the same actor and intent its outcome is copied into reply (rows
 * replayed); another intent or actor -> *mismatch. */
cn_err_t cn__au_op_find(cn_meta_txn_t *t, const uint8_t op[CN_SAU2_ID_LEN], const char *actor,
                        const cn_digest_t *intent, cn_sau2_reply_t *reply, bool *found,
                        bool *mismatch);
cn_err_t cn__au_op_record(cn_meta_txn_t *t, const uint8_t op[CN_SAU2_ID_LEN], const char *actor,
                          const cn_digest_t *intent, const cn_sau2_reply_t *reply);

/* The account a credential belongs to (inside t): a user's or a server's
 * name and whether it is disabled.  *found false when neither exists. */
typedef struct cn__au_account {
    bool found, server, disabled;
    char name[CN__AU_NAME_MAX + 1];
    char ns[256]; /* a server's namespace */
} cn__au_account_t;
cn_err_t cn__au_account_get(cn_meta_txn_t *t, const char *account_id, cn__au_account_t *out);

/* ---- auth_access.c ---- */
/* access-certificate, automation-create, automation-derive: true when
 * req's verb is one of them (reply filled). */
bool cn__au_access(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                   cn_sau2_reply_t *reply);
/* Verifies a certificate (PEM) against the CA certificate ca (e.g.
 * a->cert[CN__AU_CRED_CA] or [CN__AU_ACCESS_CA]): signature, issuer,
 * validity at now_ms, the cairn extension; fills *out.  No state: the
 * caller checks revocation.  CN_E_AUTH with *why set on a refusal. */
cn_err_t cn__au_cert_check(X509 *ca, const char *pem, size_t len, int64_t now_ms,
                           cn_sau2_caller_t *out, const char **why);

/* ---- auth_authorize.c ---- */
/* authorize, authorize-batch, public-policy: true when req's verb is one. */
bool cn__au_authorize(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                      cn_sau2_reply_t *reply);

/* ---- auth_admin.c ---- */
/* The administrative verbs: true when req's verb is one (reply filled). */
bool cn__au_admin(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                  cn_sau2_reply_t *reply);

#endif
