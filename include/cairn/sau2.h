/* cairn sau2: the SAU2 auth protocol — its wire codec (frames, requests,
 * success and error replies, the intent digest) and the auth service's
 * entry points (state, certificate authorities, the verb handler).
 * docs/protocol/sau2.md is the normative description of every byte and of
 * each verb's arguments and rows.
 *
 * The codec is pure: no sockets, no clocks, no allocation while parsing.
 * Decoders validate a whole payload (every count against its limit and
 * against the bytes that remain, secret rules, no trailing bytes) and return
 * borrowed views into the caller's buffer; they return CN_E_PROTOCOL for a
 * malformed payload and nothing else.  Encoders append to a cn_buf_t and
 * return CN_E_INVALID for a value outside its limit.
 *
 * Never: put a secret (password) into an intent digest, an outcome, an audit
 * row or a log line; trust anything but the verified TLS client certificate
 * for who the caller is.
 */
#ifndef CAIRN_SAU2_H
#define CAIRN_SAU2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits ------------------------------------------------------------------ */
#define CN_SAU2_HDR_LEN 8            /* "SAU2" | u32 LE payload length */
#define CN_SAU2_MAX_PAYLOAD 1048576u /* 1 MiB */
#define CN_SAU2_ID_LEN 16            /* operation ids and incarnations */
#define CN_SAU2_MAX_STRINGS 130      /* per argument vector or reply row */
#define CN_SAU2_MAX_STRING 4096      /* bytes per string */
#define CN_SAU2_MAX_ROWS 256         /* per success reply */
#define CN_SAU2_MAX_MESSAGE 2048     /* error message bytes */
#define CN_SAU2_PASSWORD_MAX 1024    /* a secret's longest form */
#define CN_SAU2_NEW_PASSWORD_MIN 12  /* users-password's shortest secret */

/* A borrowed string: len bytes at p, not NUL-terminated. */
typedef struct cn_sau2_str {
    const uint8_t *p;
    uint16_t len;
} cn_sau2_str_t;

/* ---- frames ------------------------------------------------------------------ */
/* Writes the 8-byte frame head for a payload of len bytes. */
CN_API void cn_sau2_frame_head(uint8_t out[CN_SAU2_HDR_LEN], uint32_t len);
/* Parses a frame head: CN_E_PROTOCOL for a bad magic or a length over
 * CN_SAU2_MAX_PAYLOAD (the connection's position is then unknown: close). */
CN_API cn_err_t cn_sau2_frame_parse(const uint8_t in[CN_SAU2_HDR_LEN], uint32_t *len);

/* ---- requests ------------------------------------------------------------------ */
typedef struct cn_sau2_req {
    uint8_t op[CN_SAU2_ID_LEN]; /* the operation id; all zero = none */
    uint16_t argc;              /* 1..CN_SAU2_MAX_STRINGS; argv[0] is the verb */
    cn_sau2_str_t argv[CN_SAU2_MAX_STRINGS];
    bool has_secret;
    cn_sau2_str_t secret; /* borrowed; only when has_secret */
} cn_sau2_req_t;

/* The secret rule of verb (len bytes): 0 = carries none; else sets *min and *max
 * to the secret's length range and returns 1. */
CN_API int cn_sau2_secret_rule(const uint8_t *verb, size_t len, size_t *min, size_t *max);

/* Decodes a request payload (the bytes after the frame head) into *req,
 * whose slices borrow p.  CN_E_PROTOCOL: truncated, argc 0 or over 130, a
 * string over 4,096 bytes, has_secret not 0/1, a secret on a verb without
 * one (or missing on one with one, or out of its length range), trailing
 * bytes. */
CN_API cn_err_t cn_sau2_dec_request(const uint8_t *p, size_t n, cn_sau2_req_t *req);
/* Appends a whole request frame.  CN_E_INVALID when req breaks a rule the
 * decoder enforces (so an encoded request always decodes). */
CN_API cn_err_t cn_sau2_enc_request(cn_buf_t *out, const cn_sau2_req_t *req);

/* The intent digest of a sign-in, automation or administrative request:
 * BLAKE3 of the request payload encoding of a zero operation id, the
 * strings from argv[first] on, and has_secret 0 (never the secret).  first
 * is 1 for login, automation-create and automation-derive (the arguments
 * after the verb), 0 for admin-login and every administrative mutation (the
 * verb included).  CN_E_INVALID if first >= argc. */
CN_API cn_err_t cn_sau2_intent(const cn_sau2_req_t *req, uint16_t first, cn_digest_t *out);

/* ---- replies ------------------------------------------------------------------- */
/* A reply under construction (the service fills it; the adapter encodes it).
 * Zero-initialise, then cn_sau2_reply_free.  code 0 = success with rows;
 * else an error with message.  A builder call that would break a limit sets
 * err (sticky) and the encoder then refuses the reply. */
typedef struct cn_sau2_reply {
    uint16_t code;
    char message[CN_SAU2_MAX_MESSAGE + 1];
    uint8_t incarnation[CN_SAU2_ID_LEN];
    uint64_t revision;
    uint16_t nrows;
    cn_buf_t rows; /* the encoded rows: rows × (u16 n | n × str16) */
    cn_err_t err;
} cn_sau2_reply_t;

/* Appends one row of n NUL-terminated strings. */
CN_API cn_err_t cn_sau2_reply_row(cn_sau2_reply_t *r, size_t n, const char *const *strs);
/* Turns r into an error reply (rows dropped); the message is cut to 2,048
 * bytes.  Returns 0. */
CN_API cn_err_t cn_sau2_reply_error(cn_sau2_reply_t *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
CN_API void cn_sau2_reply_free(cn_sau2_reply_t *r);
/* Appends the whole reply frame (success or error).  CN_E_INVALID when r->err
 * is set or the payload would exceed 1 MiB. */
CN_API cn_err_t cn_sau2_enc_reply(cn_buf_t *out, const cn_sau2_reply_t *r);

/* A decoded reply: the head, and the rows still encoded (walk them with
 * cn_sau2_row_next). */
typedef struct cn_sau2_reply_view {
    uint16_t code;
    cn_sau2_str_t message; /* errors */
    uint8_t incarnation[CN_SAU2_ID_LEN];
    uint64_t revision;
    uint16_t nrows;
    const uint8_t *rows; /* borrowed */
    size_t rows_len;
} cn_sau2_reply_view_t;

typedef struct cn_sau2_row {
    uint16_t n;
    cn_sau2_str_t s[CN_SAU2_MAX_STRINGS];
} cn_sau2_row_t;

/* Decodes a reply payload, validating every row.  CN_E_PROTOCOL: truncated,
 * over 256 rows, a row over 130 strings, a string over 4,096 bytes, an error
 * message over 2,048 bytes, trailing bytes. */
CN_API cn_err_t cn_sau2_dec_reply(const uint8_t *p, size_t n, cn_sau2_reply_view_t *v);
/* The next row of a validated view, from *off (start at 0).  Returns 1 with
 * *row filled, 0 at the end. */
CN_API int cn_sau2_row_next(const cn_sau2_reply_view_t *v, size_t *off, cn_sau2_row_t *row);

/* ---- the auth service (src/identity/auth_*.c) ------------------------------------
 * Its state lives in meta (component "auth"); its private keys are files
 * under DATA/auth/ (mode 0600, the directory 0700).  Thread-safe: one
 * cn_auth_t serves every connection; each verb runs its own transactions. */
typedef struct cn_meta cn_meta_t;
typedef struct cn_auth cn_auth_t;

typedef struct cn_auth_opts {
    uint32_t argon2_t;     /* argon2id passes; 0 = 3 */
    uint32_t argon2_m_kib; /* argon2id memory in KiB; 0 = 65,536 */
} cn_auth_opts_t;

/* Creates the auth state on meta and the keys under data_dir/auth: a new
 * incarnation (revision 1), the credential, access and server CAs, the
 * listener's TLS certificate, and the administrator "admin" whose password
 * is admin_password, or when NULL a random one written to pw_out (cap
 * bytes, at least 33).  CN_E_EXISTS when the auth state already exists.
 * Single-threaded (a command, not a running server). */
CN_API cn_err_t cn_auth_init(cn_meta_t *meta, const char *data_dir, const cn_auth_opts_t *opts,
                             const char *admin_password, char *pw_out, size_t cap);
/* Opens the service over an initialised state (CN_E_NOT_FOUND otherwise):
 * loads the CA certificates and keys.  meta stays the caller's. */
CN_API cn_err_t cn_auth_open(cn_meta_t *meta, const char *data_dir, const cn_auth_opts_t *opts,
                             cn_auth_t **out);
CN_API void cn_auth_close(cn_auth_t *a); /* accepts NULL */

/* Who called: the fields of the TLS client certificate the listener
 * verified against the credential CA (present = false: no certificate).
 * The service checks them against its state on every request. */
#define CN_SAU2_CRED_HEX 32
#define CN_SAU2_KEY_HEX 64
typedef struct cn_sau2_caller {
    bool present;
    char credential[CN_SAU2_CRED_HEX + 1];
    char key_id[CN_SAU2_KEY_HEX + 1];
} cn_sau2_caller_t;

/* Answers one decoded request: fills reply (zero-initialised by the caller,
 * who frees it) with rows or an error code and message.  Returns 0 when a
 * reply was produced (errors included); a negative cn_err_t only when no
 * answer can be given (out of memory). */
CN_API cn_err_t cn_sau2_handle(cn_auth_t *a, const cn_sau2_caller_t *caller,
                               const cn_sau2_req_t *req, cn_sau2_reply_t *reply);

/* The fields of a credential certificate (PEM) that cn_sau2_caller_t needs,
 * read from its cairn extension.  CN_E_INVALID when it has none.  It does
 * not verify the certificate: the TLS layer verified its chain to the
 * credential CA, and cn_sau2_handle checks the fields against the state. */
CN_API cn_err_t cn_auth_cert_caller(const char *pem, size_t len, cn_sau2_caller_t *out);

/* ---- certificates the service did not just issue (auth_access.c) ----------------- */
/* Verifies a certificate (PEM) against a CA certificate (PEM, e.g. from the
 * trust bundle): the CA's signature and name as issuer, validity at now_ms,
 * and the cairn extension, whose fields fill *out.  No state is consulted
 * (revocation is authorize's).  CN_E_AUTH when it is refused, CN_E_INVALID
 * when ca_pem is not a certificate.  Pure: any thread. */
CN_API cn_err_t cn_auth_cert_check(const char *ca_pem, size_t ca_len, const char *pem, size_t len,
                                   int64_t now_ms, cn_sau2_caller_t *out);
/* The service's own check of a certificate it is shown: against its
 * credential CA (access false) or access CA (access true), now, then the
 * credential against the state (live, its registered key, account enabled).
 * CN_E_AUTH when the certificate itself is refused (not PEM, another issuer,
 * outside its validity, no cairn extension), CN_E_DENIED when its credential
 * is unknown, revoked or expired or its account disabled; why (cap bytes, may
 * be NULL) says which rule failed. */
CN_API cn_err_t cn_auth_cert_verify(cn_auth_t *a, bool access, const char *pem, size_t len,
                                    cn_sau2_caller_t *out, char *why, size_t cap);

/* ---- rollback protection, storage side (auth_rollback.c) -------------------------- */
/* Creates the high-water table on a storage server's meta (the auth
 * component's schema; idempotent).  Call once before the checks. */
CN_API cn_err_t cn_auth_rollback_prepare(cn_meta_t *meta);
/* Records that a SAU2 reply of (incarnation, revision) was seen, durably,
 * before the caller acts on it.  0: accepted (a new incarnation is accepted
 * and logged at warning); CN_E_CONFLICT: a lower revision than one already
 * seen of that incarnation — the caller answers auth_unavailable.  Any
 * thread (its own write transaction). */
CN_API cn_err_t cn_auth_rollback_check(cn_meta_t *meta, const uint8_t incarnation[CN_SAU2_ID_LEN],
                                       uint64_t revision);

/* ---- migrate, backup, restore (auth_backup.c; commands, single-threaded) ----------- */
/* The state's incarnation and revision.  CN_E_NOT_FOUND before auth init. */
CN_API cn_err_t cn_auth_incarnation(cn_meta_t *meta, uint8_t incarnation[CN_SAU2_ID_LEN],
                                    uint64_t *revision);
/* Runs the auth schema steps and draws a new incarnation (revision kept).
 * CN_E_NOT_FOUND before auth init. */
CN_API cn_err_t cn_auth_migrate(cn_meta_t *meta);
/* Writes the whole auth state (tables but the high-water marks, and the four
 * private keys) to path, mode 0600, replaced whole.  CN_E_NOT_FOUND before
 * auth init. */
CN_API cn_err_t cn_auth_backup(cn_meta_t *meta, const char *data_dir, const char *path);
/* Replaces the auth state and keys with a backup's, under a new incarnation
 * (the revision is the backup's).  CN_E_CORRUPT for a damaged file (checked
 * whole before anything is replaced).  The server must not be running. */
CN_API cn_err_t cn_auth_restore(cn_meta_t *meta, const char *data_dir, const char *path);

#ifdef __cplusplus
}
#endif
#endif
