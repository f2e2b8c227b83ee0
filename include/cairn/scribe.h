/* cairn scribe: the Scribe TCP wire codec (protocol 2, plaintext) —
 * SCR1 frame headers, the handshake, the metadata codecs and primitives, the
 * error payload, and the request/response layouts of the core opcodes and of
 * the branch, merge and cherry-pick opcodes (20-25, 32, 33).
 * docs/protocol/scribe.md is the normative description of every byte.
 *
 * Pure: no sockets, no clocks, no allocation while parsing.  Decoders
 * validate a whole payload (every count against its limit and against the
 * bytes that remain, tags strict, no trailing bytes) and return borrowed
 * views into the caller's buffer; they return CN_E_PROTOCOL for a malformed
 * payload and nothing else, except where a function says so.  Encoders append
 * to a cn_buf_t and return CN_E_INVALID for a value outside its limit.
 * Protocol 4 (TLS 1.3 with X25519MLKEM768 only) has the same frames and
 * layouts plus the extended hello, the binding secret in hello-ok and the
 * put_objects admission response (docs/protocol/scribe.md section 15).
 */
#ifndef CAIRN_SCRIBE_H
#define CAIRN_SCRIBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/crypto.h"
#include "cairn/repos_model.h" /* object kinds and size limits (macros only) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- frames ---------------------------------------------------------------- */
#define CN_SCRIBE_HDR_LEN 24
#define CN_SCRIBE_MAX_FRAME 67108864u /* 64 MiB header sanity bound */
enum {
    CN_SCRIBE_FLAG_STREAM = 1,
    CN_SCRIBE_FLAG_ERROR = 2
};

typedef struct cn_scribe_hdr {
    uint16_t opcode;
    uint16_t flags;
    uint64_t request_id;
    uint32_t length;
} cn_scribe_hdr_t;

/* Parses 24 header bytes (always little-endian).  CN_E_PROTOCOL for bad
 * magic, unknown flag bits, nonzero reserved bytes or a length above 64 MiB:
 * the caller must close the connection. */
CN_API cn_err_t cn_scribe_hdr_parse(const uint8_t p[CN_SCRIBE_HDR_LEN], cn_scribe_hdr_t *out);
CN_API void cn_scribe_hdr_encode(uint8_t out[CN_SCRIBE_HDR_LEN], const cn_scribe_hdr_t *h);

/* ---- opcodes ----------------------------------------------------------------- */
typedef enum {
    CN_SCRIBE_OP_HELLO = 1,
    CN_SCRIBE_OP_DISCOVER = 2,
    CN_SCRIBE_OP_REPO_CREATE = 3,
    CN_SCRIBE_OP_REPO_INFO = 4,
    CN_SCRIBE_OP_REPO_LIST = 5,
    CN_SCRIBE_OP_PUT_OBJECTS = 6,
    CN_SCRIBE_OP_GET_OBJECTS = 7,
    CN_SCRIBE_OP_PRESENCE = 8,
    CN_SCRIBE_OP_SUBMIT = 9,
    CN_SCRIBE_OP_OPERATION_OUTCOME = 10,
    CN_SCRIBE_OP_TREE_PAGE = 11,
    CN_SCRIBE_OP_WORKSPACE_REGISTER = 12, /* workspaces: 12, 34-36 */
    CN_SCRIBE_OP_CHANGED_PATHS = 13,
    CN_SCRIBE_OP_LOCK_ACQUIRE = 14, /* locks: 14, 16, 17, 29 */
    CN_SCRIBE_OP_LOG = 15,
    CN_SCRIBE_OP_LOCK_RELEASE = 16,
    CN_SCRIBE_OP_LOCK_LIST = 17,
    /* 18, 19 unassigned (reserved for the core) */
    CN_SCRIBE_OP_BRANCH_LIST = 20, /* 20..25: branches and merges (laid out; not served yet) */
    CN_SCRIBE_OP_BRANCH_MUTATE = 21,
    CN_SCRIBE_OP_BRANCH_INFO = 22,
    CN_SCRIBE_OP_BRANCH_OUTCOME = 23,
    CN_SCRIBE_OP_MERGE_SUBMIT = 24,
    CN_SCRIBE_OP_MERGE_READ = 25,
    CN_SCRIBE_OP_INSTANCE_STATUS = 26,
    CN_SCRIBE_OP_AUTHORIZE_UPLOAD = 27, /* gateway preflights (26-28) */
    CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE = 28,
    CN_SCRIBE_OP_LOCK_POLICY = 29,
    CN_SCRIBE_OP_GET_CHUNKS = 30,        /* public reads */
    CN_SCRIBE_OP_REPOSITORY_MOUNTS = 31, /* mounts */
    CN_SCRIBE_OP_CHERRY_PICK_INFO = 32,  /* selective integration (laid out; not served yet) */
    CN_SCRIBE_OP_CHERRY_PICK_SUBMIT = 33,
    CN_SCRIBE_OP_WORKSPACE_LIST = 34,
    CN_SCRIBE_OP_WORKSPACE_REMOVE = 35,
    CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME = 36,
    /* 37 unassigned */
    CN_SCRIBE_OP_REPO_USAGE = 38,
    CN_SCRIBE_OP_DESCRIBE_CHANGE = 39,
    CN_SCRIBE_OP_CHANGE_NOTES = 40,
    CN_SCRIBE_OP_CHANGE_NOTE_HISTORY = 41,
    CN_SCRIBE_OP_PIN_OBJECTS = 42,
    CN_SCRIBE_OP_TREE_PROOF = 43, /* reserved: tree proofs */
    CN_SCRIBE_OP_LIMIT = 44,      /* one past the highest opcode the table names */
} cn_scribe_op_t;

/* Name of an opcode ("put_objects"), or NULL for a number the table does not assign. */
CN_API const char *cn_scribe_op_name(uint16_t opcode);
/* True for an opcode this codec encodes and decodes: the core set and the
 * branch and merge opcodes (20-25, 32, 33), whether or not a server serves them. */
CN_API bool cn_scribe_op_is_core(uint16_t opcode);
/* The exact request-payload bound of an opcode this codec lays out: the
 * largest encoding its decoder accepts.  Opcode 1 on plaintext (protocol 2):
 * 273; over TLS (protocol 4): 16,692.  Returns false for an opcode with no
 * layout (reserved or unknown). */
CN_API bool cn_scribe_request_bound(uint16_t opcode, bool tls, uint32_t *bound);

/* ---- error codes --------------------------------------------------------------- */
typedef enum {
    CN_SCRIBE_E_MALFORMED = 1,
    CN_SCRIBE_E_UNSUPPORTED_VERSION = 2,
    CN_SCRIBE_E_UNAUTHENTICATED = 3,
    CN_SCRIBE_E_FORBIDDEN = 4,
    CN_SCRIBE_E_INTERNAL = 5,
    CN_SCRIBE_E_BUSY = 6,
    CN_SCRIBE_E_AUTH_UNAVAILABLE = 7,
    CN_SCRIBE_E_LIMIT_EXCEEDED = 8,
    CN_SCRIBE_E_UNSUPPORTED_OPERATION = 9,
    CN_SCRIBE_E_STORAGE_FAILURE = 10,
    CN_SCRIBE_E_CORRUPT = 11,
    CN_SCRIBE_E_SHUTTING_DOWN = 12,
    CN_SCRIBE_E_REPOSITORY_NOT_FOUND = 100,
    CN_SCRIBE_E_BRANCH_NOT_FOUND = 101,
    CN_SCRIBE_E_CHANGE_NOT_FOUND = 102,
    CN_SCRIBE_E_REPOSITORY_EXISTS = 103,
    CN_SCRIBE_E_OBJECT_MISSING = 104,
    CN_SCRIBE_E_OBJECT_INVALID = 105,
    CN_SCRIBE_E_WORKSPACE_MISMATCH = 106,
    CN_SCRIBE_E_INTENT_FINALIZED = 107,
    CN_SCRIBE_E_PATH_CONFLICT = 108,
    CN_SCRIBE_E_WORKSPACE_RETIRED = 109,
    CN_SCRIBE_E_BRANCH_EXISTS = 110,
    CN_SCRIBE_E_NAME_MISMATCH = 111,
    CN_SCRIBE_E_CHANGE_NOT_PICKABLE = 112,
    CN_SCRIBE_E_SCHEMA_OUTDATED = 113,
    CN_SCRIBE_E_OPERATION_INTENT_MISMATCH = 200,
    CN_SCRIBE_E_INCARNATION_MISMATCH = 201,
    CN_SCRIBE_E_BASE_CONFLICT = 202,
    CN_SCRIBE_E_BASE_MISMATCH = 203,
    CN_SCRIBE_E_MERGE_INCOMPLETE = 204,
    CN_SCRIBE_E_LOCK_REQUIRED = 205,
    CN_SCRIBE_E_LOCK_HELD = 206,
    CN_SCRIBE_E_INVALID_REPOSITORY_CONFIG = 207,
    CN_SCRIBE_E_ALREADY_APPLIED = 208,
    CN_SCRIBE_E_NOTE_REVISION_STALE = 212,
} cn_scribe_errcode_t;

/* "note_revision_stale", ... or NULL for a code the table does not assign. */
CN_API const char *cn_scribe_errcode_name(uint16_t code);
/* True for client outcomes: 1-4, 8-9 and 100-499. */
CN_API bool cn_scribe_errcode_is_client(uint16_t code);

/* ---- codecs and primitives ----------------------------------------------------- */
typedef enum {
    CN_SCRIBE_CODEC_LE = 1,
    CN_SCRIBE_CODEC_BE = 2
} cn_scribe_codec_t;

typedef struct cn_scribe_str {
    const uint8_t *p;
    uint32_t len;
} cn_scribe_str_t; /* borrowed */
typedef struct cn_scribe_id {
    uint8_t b[16];
} cn_scribe_id_t;

/* Reader over a borrowed payload.  Errors are sticky (CN_E_PROTOCOL). */
typedef struct cn_scribe_rd {
    cn_rd_t r;
    cn_scribe_codec_t codec;
} cn_scribe_rd_t;
CN_API cn_scribe_rd_t cn_scribe_rd_init(const void *p, size_t n, cn_scribe_codec_t codec);
CN_API uint8_t cn_scribe_rd_u8(cn_scribe_rd_t *r);
CN_API uint16_t cn_scribe_rd_u16(cn_scribe_rd_t *r);
CN_API uint32_t cn_scribe_rd_u32(cn_scribe_rd_t *r);
CN_API uint64_t cn_scribe_rd_u64(cn_scribe_rd_t *r);
CN_API bool cn_scribe_rd_bool(cn_scribe_rd_t *r); /* 0 or 1, else malformed */
CN_API void cn_scribe_rd_id(cn_scribe_rd_t *r, cn_scribe_id_t *out);
CN_API void cn_scribe_rd_digest(cn_scribe_rd_t *r, cn_digest_t *out);
/* str16/str32 are UTF-8 (checked); bytes16/bytes32 are raw.  max bounds the length. */
CN_API void cn_scribe_rd_str16(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out);
CN_API void cn_scribe_rd_str32(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out);
CN_API void cn_scribe_rd_bytes16(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out);
CN_API void cn_scribe_rd_bytes32(cn_scribe_rd_t *r, uint32_t max, cn_scribe_str_t *out);
/* Fails the reader unless `need` bytes per item times count remain. */
CN_API bool cn_scribe_rd_fits(cn_scribe_rd_t *r, uint64_t count, uint64_t need);
/* CN_OK when the reader had no error and consumed everything, else CN_E_PROTOCOL. */
CN_API cn_err_t cn_scribe_rd_end(const cn_scribe_rd_t *r);

/* Writer appending to a caller-owned buffer; errors are sticky. */
typedef struct cn_scribe_wr {
    cn_buf_t *b;
    cn_scribe_codec_t codec;
    cn_err_t err;
} cn_scribe_wr_t;
CN_API cn_scribe_wr_t cn_scribe_wr_init(cn_buf_t *b, cn_scribe_codec_t codec);
CN_API void cn_scribe_wr_u8(cn_scribe_wr_t *w, uint8_t v);
CN_API void cn_scribe_wr_u16(cn_scribe_wr_t *w, uint16_t v);
CN_API void cn_scribe_wr_u32(cn_scribe_wr_t *w, uint32_t v);
CN_API void cn_scribe_wr_u64(cn_scribe_wr_t *w, uint64_t v);
CN_API void cn_scribe_wr_bool(cn_scribe_wr_t *w, bool v);
CN_API void cn_scribe_wr_raw(cn_scribe_wr_t *w, const void *p, size_t n);
/* Length-prefixed; CN_E_INVALID when len > max (str: also invalid UTF-8). */
CN_API void cn_scribe_wr_str16(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max);
CN_API void cn_scribe_wr_str32(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max);
CN_API void cn_scribe_wr_bytes16(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max);
CN_API void cn_scribe_wr_bytes32(cn_scribe_wr_t *w, cn_scribe_str_t s, uint32_t max);
CN_API cn_scribe_str_t cn_scribe_cstr(const char *s); /* view of a C string */

/* ---- limits (docs/protocol/scribe.md, "Limits") ------------------------------ */
#define CN_SCRIBE_MAX_CLIENT_STRING 256
#define CN_SCRIBE_MAX_CERTIFICATE 16384
#define CN_SCRIBE_MAX_REPO_NAME 193
#define CN_SCRIBE_MAX_STORAGE_NAME 128
#define CN_SCRIBE_MAX_NAMESPACE 64
#define CN_SCRIBE_MAX_STORAGE_SERVERS 64
#define CN_SCRIBE_MAX_ERROR_MESSAGE 4096
#define CN_SCRIBE_MAX_AUTHOR 256
#define CN_SCRIBE_MAX_MESSAGE 65536
#define CN_SCRIBE_MAX_NOTE_TEXT 65536
#define CN_SCRIBE_MAX_PATH 8192
#define CN_SCRIBE_MAX_BATCH 8192                /* objects per put/get/presence/pin */
#define CN_SCRIBE_MAX_BATCH_BYTES 1073741824ull /* announced bytes per put_objects */
#define CN_SCRIBE_MAX_PAGE 4096
#define CN_SCRIBE_MAX_TOKEN 8256
#define CN_SCRIBE_MAX_CONFLICT_PATHS 64
#define CN_SCRIBE_MAX_NOTE_REVISIONS 1024
#define CN_SCRIBE_MAX_INSTANCE_PAGE 128
#define CN_SCRIBE_MAX_BRANCH_NAME 256
#define CN_SCRIBE_MAX_MERGE_PATHS 1024    /* paths per MergeRead query or page */
#define CN_SCRIBE_MAX_MERGE_ENTRIES 5120  /* entries of a MergeRead 3 page */
#define CN_SCRIBE_MAX_LOCK_PATHS 10000    /* paths per lock_acquire / lock_release */
#define CN_SCRIBE_MAX_LOCK_BYTES 8388608u /* path bytes per lock_acquire / lock_release */
#define CN_SCRIBE_MAX_PRINCIPAL 256       /* a lock row's principal */
#define CN_SCRIBE_MAX_CONFIG 65536        /* lock_policy's TOML text */
#define CN_SCRIBE_BLOCK_MAX 262144u       /* LZ4 transfer block, original bytes */
#define CN_SCRIBE_BLOCK_HDR_LEN 8
#define CN_SCRIBE_DEFAULT_PORT 7447

/* ---- error payload --------------------------------------------------------------- */
typedef struct cn_scribe_error {
    uint16_t code;
    cn_scribe_str_t message;
} cn_scribe_error_t;
CN_API cn_err_t cn_scribe_enc_error(cn_buf_t *out, cn_scribe_codec_t c, uint16_t code,
                                    cn_scribe_str_t message);
CN_API cn_err_t cn_scribe_dec_error(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                    cn_scribe_error_t *out);

/* ---- handshake (opcode 1; payloads always little-endian) --------------------- */
enum {
    CN_SCRIBE_CAP_LZ4 = 1
};
/* Protocol 4's caller tags (docs/protocol/scribe.md 15.2): 0 anonymous (no
 * client certificate), 1 direct (the certificate's user), 2 delegated (a
 * gateway forwards its user's certificate); any other is malformed. */
enum {
    CN_SCRIBE_CALLER_ANONYMOUS = 0,
    CN_SCRIBE_CALLER_DIRECT = 1,
    CN_SCRIBE_CALLER_DELEGATED = 2
};

typedef struct cn_scribe_hello {
    uint16_t version;               /* 2 (plaintext) or 4 (TLS) */
    uint8_t codec;                  /* 1 or 2 */
    uint32_t caps;                  /* 0 raw, 1 LZ4 */
    uint64_t bind_session;          /* 0 = new control session */
    cn_scribe_str_t client;         /* <= 256 bytes */
    uint8_t caller;                 /* protocol 4 only */
    cn_scribe_str_t delegated_cert; /* caller 2 only, 1..16384 bytes */
    uint8_t binding[32];            /* protocol 4 only */
} cn_scribe_hello_t;

/* Decodes a hello for a listener that speaks `version` (2 on plaintext, 4
 * on TLS).  CN_E_UNSUPPORTED when the protocol version differs from it or the
 * codec is not 1 (or 2 when allow_test_codec): answer unsupported_version and
 * close.  CN_E_PROTOCOL for anything else malformed (unknown capability bits,
 * caller tags, lengths, trailing bytes). */
CN_API cn_err_t cn_scribe_dec_hello(const uint8_t *p, size_t n, uint16_t version,
                                    bool allow_test_codec, cn_scribe_hello_t *out);
CN_API cn_err_t cn_scribe_enc_hello(cn_buf_t *out, const cn_scribe_hello_t *h);

typedef struct cn_scribe_hello_ok {
    uint16_t version;
    uint8_t codec;
    uint64_t session;
    uint32_t timeout_s;  /* inactivity timeout; a client refuses 0 */
    uint8_t compression; /* 0 none, 1 LZ4 */
    bool has_binding;    /* protocol 4 control sessions */
    uint8_t binding[32];
} cn_scribe_hello_ok_t;

CN_API cn_err_t cn_scribe_enc_hello_ok(cn_buf_t *out, const cn_scribe_hello_ok_t *h);
/* expect_binding: the client sent a protocol-4 control hello.  A timeout of
 * 0 or a compression other than 0/1 is malformed. */
CN_API cn_err_t cn_scribe_dec_hello_ok(const uint8_t *p, size_t n, bool expect_binding,
                                       cn_scribe_hello_ok_t *out);

/* ---- discover (2) ------------------------------------------------------------------ */
enum {
    CN_SCRIBE_ROLE_STORAGE = 1,
    CN_SCRIBE_ROLE_GATEWAY = 2
};
typedef struct cn_scribe_discover {
    uint8_t role;
    bool authentication;
    uint32_t count;        /* 1..64 */
    const uint8_t *labels; /* borrowed: count str16 */
    size_t labels_len;
} cn_scribe_discover_t;
CN_API cn_err_t cn_scribe_enc_discover(cn_buf_t *out, cn_scribe_codec_t c, uint8_t role,
                                       bool authentication, const cn_scribe_str_t *labels,
                                       uint32_t count);
CN_API cn_err_t cn_scribe_dec_discover(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       cn_scribe_discover_t *out);
/* i-th label of a decoded reply (i < count). */
CN_API cn_scribe_str_t cn_scribe_discover_label(const cn_scribe_discover_t *d, cn_scribe_codec_t c,
                                                uint32_t i);

/* ---- repositories (3, 4, 5, 38, 26) -------------------------------------------- */
typedef struct cn_scribe_repo_info {
    cn_scribe_id_t id;
    cn_scribe_str_t name; /* <= 193 */
    cn_scribe_id_t main_branch;
    uint64_t head;
    cn_scribe_id_t incarnation;
    uint64_t created_ms;
    uint8_t compression; /* 0 none, 1 LZ4 */
} cn_scribe_repo_info_t;

CN_API void cn_scribe_wr_repo_info(cn_scribe_wr_t *w, const cn_scribe_repo_info_t *ri);
CN_API void cn_scribe_rd_repo_info(cn_scribe_rd_t *r, cn_scribe_repo_info_t *out);

typedef struct cn_scribe_repo_create_req {
    cn_scribe_str_t name;
    uint8_t compression;
} cn_scribe_repo_create_req_t;
CN_API cn_err_t cn_scribe_enc_repo_create_req(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_repo_create_req_t *q);
CN_API cn_err_t cn_scribe_dec_repo_create_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_repo_create_req_t *out);
/* repo_create and repo_info answer one Repo info. */
CN_API cn_err_t cn_scribe_enc_repo_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_repo_info_t *ri);
CN_API cn_err_t cn_scribe_dec_repo_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_repo_info_t *out);

enum {
    CN_SCRIBE_REPO_BY_ID = 1,
    CN_SCRIBE_REPO_BY_NAME = 2
};
typedef struct cn_scribe_repo_info_req {
    uint8_t by;
    cn_scribe_id_t id;
    cn_scribe_str_t name;
} cn_scribe_repo_info_req_t;
CN_API cn_err_t cn_scribe_enc_repo_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_repo_info_req_t *q);
CN_API cn_err_t cn_scribe_dec_repo_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_repo_info_req_t *out);

typedef struct cn_scribe_repo_list_req {
    uint32_t limit; /* clamped by the server to 1..4096 */
    bool has_token;
    cn_scribe_str_t token; /* opaque, <= 8256 bytes */
} cn_scribe_repo_list_req_t;
CN_API cn_err_t cn_scribe_enc_repo_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_repo_list_req_t *q);
CN_API cn_err_t cn_scribe_dec_repo_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_repo_list_req_t *out);

/* Row iterator shared by every paged response: decode validates all rows
 * once, then next() hands them out again without re-checking. */
typedef struct cn_scribe_rows {
    cn_scribe_rd_t rd;
    uint32_t left;
} cn_scribe_rows_t;

typedef struct cn_scribe_repo_list_resp {
    uint32_t count;
    cn_scribe_rows_t rows; /* Repo info x count */
    bool has_token;
    cn_scribe_str_t token;
} cn_scribe_repo_list_resp_t;
CN_API cn_err_t cn_scribe_enc_repo_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_repo_info_t *rows, uint32_t count,
                                             bool has_token, cn_scribe_str_t token);
CN_API cn_err_t cn_scribe_dec_repo_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_repo_list_resp_t *out);
CN_API bool cn_scribe_next_repo_info(cn_scribe_rows_t *it, cn_scribe_repo_info_t *out);

/* Requests that are exactly one repository id (repo_usage 38). */
CN_API cn_err_t cn_scribe_enc_repo_id_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_id_t *repo);
CN_API cn_err_t cn_scribe_dec_repo_id_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_id_t *out);
/* Responses that are exactly one u64 (repo_usage 38). */
CN_API cn_err_t cn_scribe_enc_u64_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t v);
CN_API cn_err_t cn_scribe_dec_u64_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       uint64_t *out);

typedef struct cn_scribe_instance_req {
    bool has_after;
    cn_scribe_id_t after;
} cn_scribe_instance_req_t;
CN_API cn_err_t cn_scribe_enc_instance_req(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_instance_req_t *q);
CN_API cn_err_t cn_scribe_dec_instance_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_instance_req_t *out);
typedef struct cn_scribe_instance_row {
    cn_scribe_repo_info_t info;
    uint64_t bytes;
} cn_scribe_instance_row_t;
typedef struct cn_scribe_instance_resp {
    cn_scribe_id_t incarnation; /* data-root incarnation */
    uint64_t total_repositories, used_bytes;
    bool has_available;
    uint64_t available_bytes;
    uint32_t count; /* <= 128 */
    cn_scribe_rows_t rows;
    bool has_next;
    cn_scribe_id_t next;
} cn_scribe_instance_resp_t;
CN_API cn_err_t cn_scribe_enc_instance_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_instance_resp_t *h,
                                            const cn_scribe_instance_row_t *rows);
CN_API cn_err_t cn_scribe_dec_instance_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_instance_resp_t *out);
CN_API bool cn_scribe_next_instance_row(cn_scribe_rows_t *it, cn_scribe_instance_row_t *out);

/* ---- gateway wire: preflights 27, 28 and names ---------------------------------------
 * docs/protocol/scribe-gateway.md, "Wire".  instance_status (26) is above:
 * rows strictly ascending by id, has_next only after a row and its cursor
 * never before the last row (both codec sides refuse otherwise).
 * authorize_upload (27): [16] repo (cn_scribe_enc_repo_id_req);
 * authorize_repo_create (28): u8 has_namespace | str16 namespace (a label,
 * cn_scribe_namespace_ok) when set.  Both answer an empty payload. */
typedef struct cn_scribe_authorize_create_req {
    bool has_namespace;
    cn_scribe_str_t ns; /* a label when has_namespace */
} cn_scribe_authorize_create_req_t;
CN_API cn_err_t cn_scribe_enc_authorize_create_req(cn_buf_t *out, cn_scribe_codec_t c,
                                                   const cn_scribe_authorize_create_req_t *q);
CN_API cn_err_t cn_scribe_dec_authorize_create_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                                   cn_scribe_authorize_create_req_t *out);
/* An empty reply (27, 28): CN_E_PROTOCOL for any byte. */
CN_API cn_err_t cn_scribe_dec_empty_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c);

/* A namespace label: 1..64 ASCII letters, digits, '-', '_' or '.'. */
CN_API bool cn_scribe_namespace_ok(cn_scribe_str_t s);
/* A storage name: 1..128 bytes of UTF-8 without '/', control characters or
 * DEL, not "." or ".." (the repos service's rule). */
CN_API bool cn_scribe_storage_name_ok(cn_scribe_str_t s);
/* A wire repository name (<= 193 bytes) split into its optional namespace
 * and its storage name: `NAME` (ns empty) or `NS/NAME`.  Views into wire.
 * CN_E_INVALID for anything else (a bad label, a second '/', a bad storage
 * name); which namespace a bare name means is the gateway's decision. */
typedef struct cn_scribe_name {
    cn_scribe_str_t ns; /* len 0: none given */
    cn_scribe_str_t name;
} cn_scribe_name_t;
CN_API cn_err_t cn_scribe_name_split(cn_scribe_str_t wire, cn_scribe_name_t *out);
/* A command line's REPO: `[scribe[s]://]HOST[:PORT]/[NS/]NAME` or
 * `[NS/]NAME`.  The first segment is an endpoint only after a scheme or
 * when it contains ':' (so `studio/art` is namespace studio, `h:7447/art`
 * an endpoint); any other scheme is CN_E_INVALID, as is a bad wire name.
 * Views into arg. */
typedef struct cn_scribe_repo_ref {
    bool has_endpoint;
    bool tls;                 /* scribes:// */
    cn_scribe_str_t endpoint; /* HOST[:PORT], without the scheme */
    cn_scribe_str_t wire;     /* [NS/]NAME: what the wire carries */
    cn_scribe_name_t name;    /* wire, split */
} cn_scribe_repo_ref_t;
CN_API cn_err_t cn_scribe_repo_ref_parse(cn_scribe_str_t arg, cn_scribe_repo_ref_t *out);

/* ---- objects (6, 7, 8, 42) --------------------------------------------------------- */
typedef struct cn_scribe_objref {
    uint8_t kind;
    cn_digest_t id;
} cn_scribe_objref_t;
typedef struct cn_scribe_put_item {
    uint8_t kind;
    cn_digest_t id;
    uint64_t length;
} cn_scribe_put_item_t;

/* put_objects request: [16] repo, u32 count, count x (u8 kind, [32] id,
 * u64 length); STREAM flag, object data follows the payload in order. */
typedef struct cn_scribe_put_req {
    cn_scribe_id_t repo;
    uint32_t count;       /* 1..8192 */
    const uint8_t *items; /* borrowed, count * 41 bytes */
    uint64_t total;       /* sum of lengths, <= 1 GiB */
    cn_scribe_codec_t codec;
} cn_scribe_put_req_t;
CN_API cn_err_t cn_scribe_enc_put_req(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_id_t *repo, const cn_scribe_put_item_t *items,
                                      uint32_t count);
/* Checks the count (1..8192), kinds (1..3: commits are made by the server),
 * each length against its kind's limit (chunks 1..4 MiB, manifests 13.., change
 * sets 9..) and the total (<= 1 GiB).  Distinct ids and the
 * bytes themselves are the service's checks. */
CN_API cn_err_t cn_scribe_dec_put_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_put_req_t *out);
CN_API void cn_scribe_put_item(const cn_scribe_put_req_t *q, uint32_t i, cn_scribe_put_item_t *out);
/* put_objects response: u32 count, count x u8 (1 newly stored, 0 already present). */
CN_API cn_err_t cn_scribe_enc_put_resp(cn_buf_t *out, cn_scribe_codec_t c, const uint8_t *stored,
                                       uint32_t count);
CN_API cn_err_t cn_scribe_dec_put_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       uint32_t *count, const uint8_t **stored);

/* get_objects (7) and presence (8): [16] repo, u32 count, count x (u8 kind, [32] id).
 * pin_objects (42) puts [16] workspace and [16] intent after the repo. */
typedef struct cn_scribe_objs_req {
    cn_scribe_id_t repo;
    cn_scribe_id_t workspace; /* pin_objects only */
    cn_scribe_id_t intent;    /* pin_objects only */
    uint32_t count;           /* 1..8192 */
    const uint8_t *items;     /* borrowed, count * 33 bytes */
} cn_scribe_objs_req_t;
CN_API cn_err_t cn_scribe_enc_objs_req(cn_buf_t *out, cn_scribe_codec_t c, uint16_t opcode,
                                       const cn_scribe_objs_req_t *q,
                                       const cn_scribe_objref_t *refs);
CN_API cn_err_t cn_scribe_dec_objs_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       uint16_t opcode, cn_scribe_objs_req_t *out);
CN_API void cn_scribe_objref(const cn_scribe_objs_req_t *q, uint32_t i, cn_scribe_objref_t *out);

/* presence / pin_objects response: u32 count, ceil(count/8) bytes, bit i in
 * byte i/8 at bit i%8 (LSB first); unused high bits zero. */
CN_API cn_err_t cn_scribe_enc_bits_resp(cn_buf_t *out, cn_scribe_codec_t c, const bool *present,
                                        uint32_t count);
CN_API cn_err_t cn_scribe_dec_bits_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        uint32_t expect_count, const uint8_t **bits);
static inline bool cn_scribe_bit(const uint8_t *bits, uint32_t i)
{
    return bits[i / 8] >> (i % 8) & 1;
}

/* get_objects response payload: u32 count (= request count); STREAM flag;
 * then per item in the stream: u8 kind, [32] id, u8 present, and when
 * present u64 length followed by the object's transfer bytes. */
#define CN_SCRIBE_GET_ITEM_HDR_MAX 42
CN_API cn_err_t cn_scribe_enc_count_resp(cn_buf_t *out, cn_scribe_codec_t c, uint32_t count);
CN_API cn_err_t cn_scribe_dec_count_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         uint32_t *count);
typedef struct cn_scribe_get_item {
    uint8_t kind;
    cn_digest_t id;
    bool present;
    uint64_t length;
} cn_scribe_get_item_t;
/* Encodes an item header into out (returns its length: 34 or 42). */
CN_API size_t cn_scribe_enc_get_item(uint8_t out[CN_SCRIBE_GET_ITEM_HDR_MAX], cn_scribe_codec_t c,
                                     const cn_scribe_get_item_t *it);
/* Incremental: returns the header length consumed (34 or 42), CN_E_AGAIN
 * when n is too short to decide, CN_E_PROTOCOL for a bad kind/presence tag
 * or a length above the kind's limit. */
CN_API long cn_scribe_dec_get_item(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_get_item_t *out);

/* LZ4 transfer block header (always little-endian): u32 original length
 * (1..262144), then u32 stored word as in the store envelope's index: bit 31
 * set = the block is stored raw (stored size == original), bits 0..30 = the
 * stored size (compressed: 1..original + original/255 + 16, the LZ4 bound). */
#define CN_SCRIBE_BLOCK_RAW 0x80000000u
typedef struct cn_scribe_block {
    uint32_t original;
    uint32_t stored;
    bool raw;
} cn_scribe_block_t;
CN_API void cn_scribe_enc_block(uint8_t out[CN_SCRIBE_BLOCK_HDR_LEN], const cn_scribe_block_t *b);
/* Packs one block of n (1..CN_SCRIBE_BLOCK_MAX) original bytes: LZ4 into
 * scratch (LZ4_compressBound(CN_SCRIBE_BLOCK_MAX) bytes) when that makes it
 * smaller, else raw; writes its header to hdr, points *data at the stored
 * bytes (in or scratch) and returns their length.  In the Scribe server's
 * and client's libraries (src/scribe/block_lz4.c), not the codec's. */
CN_API size_t cn_scribe_pack_block(const uint8_t *in, size_t n, uint8_t *scratch,
                                   uint8_t hdr[CN_SCRIBE_BLOCK_HDR_LEN], const uint8_t **data);
/* remaining: original bytes still owed to the current object. */
CN_API cn_err_t cn_scribe_dec_block(const uint8_t p[CN_SCRIBE_BLOCK_HDR_LEN], uint64_t remaining,
                                    cn_scribe_block_t *out);

/* ---- submit (9) ----------------------------------------------------------------------- */
typedef struct cn_scribe_submit_req {
    cn_scribe_id_t repo, incarnation, operation, branch, workspace;
    uint64_t base; /* expected base change */
    cn_digest_t changeset;
    bool keep_locks;
    cn_scribe_str_t author;  /* <= 256 */
    cn_scribe_str_t message; /* <= 65536 */
} cn_scribe_submit_req_t;
CN_API cn_err_t cn_scribe_enc_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_submit_req_t *q);
CN_API cn_err_t cn_scribe_dec_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_submit_req_t *out);
/* The semantic fingerprint of a decoded submit (cn_repos_submit_fingerprint). */
CN_API void cn_scribe_submit_fingerprint(const cn_scribe_submit_req_t *q, cn_digest_t *out);

enum {
    CN_SCRIBE_OUTCOME_ACCEPTED = 1,
    CN_SCRIBE_OUTCOME_REJECTED = 2
};
typedef struct cn_scribe_submit_outcome {
    cn_scribe_id_t operation;
    uint8_t outcome;
    uint64_t change;        /* accepted */
    cn_digest_t commit;     /* accepted */
    uint16_t code;          /* rejected */
    uint64_t head;          /* rejected: the branch head it was judged against */
    cn_scribe_str_t detail; /* rejected, <= 4096 */
    uint32_t path_count;    /* rejected, <= 64 */
    const uint8_t *paths;   /* borrowed: path_count str16 */
    size_t paths_len;
} cn_scribe_submit_outcome_t;
/* paths: path_count views (rejected only). */
CN_API void cn_scribe_wr_submit_outcome(cn_scribe_wr_t *w, const cn_scribe_submit_outcome_t *o,
                                        const cn_scribe_str_t *paths);
CN_API void cn_scribe_rd_submit_outcome(cn_scribe_rd_t *r, cn_scribe_submit_outcome_t *out);
CN_API cn_err_t cn_scribe_enc_submit_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_submit_outcome_t *o,
                                          const cn_scribe_str_t *paths);
CN_API cn_err_t cn_scribe_dec_submit_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_submit_outcome_t *out);
CN_API cn_scribe_str_t cn_scribe_outcome_path(const cn_scribe_submit_outcome_t *o,
                                              cn_scribe_codec_t c, uint32_t i);

/* ---- branches (20-23) ---------------------------------------------------------------
 * docs/protocol/scribe.md 7.8.  A branch name is 1..256 bytes of ASCII
 * letters, digits, '-', '_', '.' and '/': '/'-separated segments, none empty
 * and none starting with '.', and the first byte is not '-'.  Uniqueness
 * (ASCII case-insensitive, among the repository's branches) is the service's
 * check, not the codec's. */
CN_API bool cn_scribe_branch_name_valid(cn_scribe_str_t name);

/* Branch info = [16] id | str16 name | u64 head | opt ([16] origin branch |
 * u64 origin change) | u64 created ms.  The main branch has no origin; any
 * other branch names the branch and change it was created from, with
 * origin change <= head and origin branch != id. */
typedef struct cn_scribe_branch_info {
    cn_scribe_id_t id;
    cn_scribe_str_t name; /* current name, valid */
    uint64_t head;        /* last change on the branch; its origin change before its first commit */
    bool has_origin;      /* false for the repository's main branch */
    cn_scribe_id_t origin_branch;
    uint64_t origin_change;
    uint64_t created_ms;
} cn_scribe_branch_info_t;
CN_API void cn_scribe_wr_branch_info(cn_scribe_wr_t *w, const cn_scribe_branch_info_t *bi);
CN_API void cn_scribe_rd_branch_info(cn_scribe_rd_t *r, cn_scribe_branch_info_t *out);

/* branch_list (20): [16] repo | u32 limit | opt str16 after (a name,
 * exclusive) -> u32 count (<= 4096) | Branch info x count | bool more.
 * Rows are in strictly ascending byte order of name; more needs count >= 1
 * (continue with after = the last name). */
typedef struct cn_scribe_branch_list_req {
    cn_scribe_id_t repo;
    uint32_t limit; /* clamped by the server to 1..4096 */
    bool has_after;
    cn_scribe_str_t after; /* a valid name */
} cn_scribe_branch_list_req_t;
CN_API cn_err_t cn_scribe_enc_branch_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_branch_list_req_t *q);
CN_API cn_err_t cn_scribe_dec_branch_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_branch_list_req_t *out);
typedef struct cn_scribe_branch_list_resp {
    uint32_t count;
    cn_scribe_rows_t rows; /* Branch info x count */
    bool more;
} cn_scribe_branch_list_resp_t;
CN_API cn_err_t cn_scribe_enc_branch_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                               const cn_scribe_branch_info_t *rows, uint32_t count,
                                               bool more);
CN_API cn_err_t cn_scribe_dec_branch_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                               cn_scribe_branch_list_resp_t *out);
CN_API bool cn_scribe_next_branch_info(cn_scribe_rows_t *it, cn_scribe_branch_info_t *out);

/* branch_mutate (21): [16] repo | [16] incarnation | [16] operation |
 * [16] branch | str16 name | u8 action, then create (1): [16] source branch |
 * u64 source change; rename (2): str16 expected name.  The operation and
 * branch ids are nonzero; both names are valid; any other action (3 archive
 * included: cairn has none) is malformed.  create: branch is the new
 * branch's id, chosen by the client.  rename: branch is renamed to name when
 * its current name is expected. */
enum {
    CN_SCRIBE_BRANCH_CREATE = 1,
    CN_SCRIBE_BRANCH_RENAME = 2
};
typedef struct cn_scribe_branch_mutate_req {
    cn_scribe_id_t repo, incarnation, operation, branch;
    cn_scribe_str_t name;
    uint8_t action;
    cn_scribe_id_t source;    /* create */
    uint64_t source_change;   /* create: inside the source's lifetime (the service checks) */
    cn_scribe_str_t expected; /* rename */
} cn_scribe_branch_mutate_req_t;
CN_API cn_err_t cn_scribe_enc_branch_mutate_req(cn_buf_t *out, cn_scribe_codec_t c,
                                                const cn_scribe_branch_mutate_req_t *q);
CN_API cn_err_t cn_scribe_dec_branch_mutate_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                                cn_scribe_branch_mutate_req_t *out);
/* The semantic fingerprint of a branch mutation (docs/protocol/scribe.md
 * 9.6): BLAKE3("cairn:branch-operation:v1\0" | repo | incarnation | branch |
 * u8 action | u16 LE name length | name | create: source | u64 LE source
 * change; rename: u16 LE expected length | expected).  Codec-independent. */
CN_API void cn_scribe_branch_fingerprint(const cn_scribe_branch_mutate_req_t *q, cn_digest_t *out);

/* Branch outcome (the response of 21; recorded, replayed by 10 and 23) =
 * [16] operation | u8 outcome, then 1 accepted: Branch info (the branch
 * after the mutation); 2 rejected: u16 code (nonzero: branch_exists,
 * name_mismatch) | str16 detail (<= 4096). */
typedef struct cn_scribe_branch_outcome {
    cn_scribe_id_t operation;
    uint8_t outcome;                /* CN_SCRIBE_OUTCOME_ACCEPTED or _REJECTED */
    cn_scribe_branch_info_t branch; /* accepted */
    uint16_t code;                  /* rejected */
    cn_scribe_str_t detail;         /* rejected */
} cn_scribe_branch_outcome_t;
CN_API void cn_scribe_wr_branch_outcome(cn_scribe_wr_t *w, const cn_scribe_branch_outcome_t *o);
CN_API void cn_scribe_rd_branch_outcome(cn_scribe_rd_t *r, cn_scribe_branch_outcome_t *out);
CN_API cn_err_t cn_scribe_enc_branch_mutate_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                 const cn_scribe_branch_outcome_t *o);
CN_API cn_err_t cn_scribe_dec_branch_mutate_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                                 cn_scribe_branch_outcome_t *out);

/* branch_info (22): [16] repo | u8 by (1 id, 2 name) | [16] id or str16 name
 * (valid) -> Branch info. */
enum {
    CN_SCRIBE_BRANCH_BY_ID = 1,
    CN_SCRIBE_BRANCH_BY_NAME = 2
};
typedef struct cn_scribe_branch_info_req {
    cn_scribe_id_t repo;
    uint8_t by;
    cn_scribe_id_t id;
    cn_scribe_str_t name;
} cn_scribe_branch_info_req_t;
CN_API cn_err_t cn_scribe_enc_branch_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_branch_info_req_t *q);
CN_API cn_err_t cn_scribe_dec_branch_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_branch_info_req_t *out);
CN_API cn_err_t cn_scribe_enc_branch_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                               const cn_scribe_branch_info_t *bi);
CN_API cn_err_t cn_scribe_dec_branch_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                               cn_scribe_branch_info_t *out);

/* ---- operation_outcome (10) and branch_outcome (23) ---------------------------------
 * Both take [16] repo | [16] operation (nonzero) and answer u8 kind, then
 * kind 1 (submit, merge or cherry-pick): Submit outcome; kind 2 (branch
 * mutation): Branch outcome; kind 0: the operation has no recorded outcome.
 * branch_outcome answers kinds 0 and 2 only. */
typedef struct cn_scribe_outcome_req {
    cn_scribe_id_t repo, operation;
} cn_scribe_outcome_req_t;
CN_API cn_err_t cn_scribe_enc_outcome_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_outcome_req_t *q);
CN_API cn_err_t cn_scribe_dec_outcome_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_outcome_req_t *out);
enum {
    CN_SCRIBE_OUTCOME_KIND_UNKNOWN = 0,
    CN_SCRIBE_OUTCOME_KIND_SUBMIT = 1,
    CN_SCRIBE_OUTCOME_KIND_BRANCH = 2
};
typedef struct cn_scribe_outcome_resp {
    uint8_t kind; /* 0 unknown operation, 1 submit, 2 branch (3 reserved) */
    cn_scribe_submit_outcome_t submit;
    cn_scribe_branch_outcome_t branch;
} cn_scribe_outcome_resp_t;
/* paths: the submit outcome's rejected paths (kind 1), else unused. */
CN_API cn_err_t cn_scribe_enc_outcome_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_outcome_resp_t *o,
                                           const cn_scribe_str_t *paths);
CN_API cn_err_t cn_scribe_dec_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_outcome_resp_t *out);
/* branch_outcome (23) response: kind 0 or 2 (CN_E_INVALID / malformed otherwise). */
CN_API cn_err_t cn_scribe_enc_branch_outcome_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                  const cn_scribe_outcome_resp_t *o);
CN_API cn_err_t cn_scribe_dec_branch_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                                  cn_scribe_outcome_resp_t *out);

/* ---- merges and cherry-picks (24, 25, 32, 33) ---------------------------------------
 * docs/protocol/scribe.md 7.9.  merge_submit and cherry_pick_submit carry an
 * ordinary submit request (opcode 9's layout, same codec) as bytes32; its
 * branch is the target, its base must equal target head, and both answer
 * the ordinary Submit outcome (cn_scribe_enc_submit_resp). */
typedef struct cn_scribe_merge_submit_req {
    cn_scribe_submit_req_t submit; /* the target's ordinary submit */
    uint64_t target_head;          /* == submit.base */
    cn_scribe_id_t source;         /* != submit.branch */
    uint64_t source_head;
    cn_scribe_id_t base_branch; /* the merge base the client planned against */
    uint64_t base;              /* <= source_head and <= target_head */
} cn_scribe_merge_submit_req_t;
/* merge_submit (24): bytes32 submit request | u64 target head | [16] source
 * branch | u64 source head | [16] base branch | u64 base. */
CN_API cn_err_t cn_scribe_enc_merge_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                               const cn_scribe_merge_submit_req_t *q);
CN_API cn_err_t cn_scribe_dec_merge_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                               cn_scribe_merge_submit_req_t *out);
/* BLAKE3("scribe:merge-operation:v1\0" | ordinary submit fingerprint |
 * u64 LE target head | source | u64 LE source head | base branch | u64 LE base);
 * the author stays out (it is out of the ordinary fingerprint). */
CN_API void cn_scribe_merge_fingerprint(const cn_scribe_merge_submit_req_t *q, cn_digest_t *out);

/* cherry_pick_info (32): [16] repo | [16] target | [16] source | u64 change
 * (56 bytes) -> Branch info of the target (its live head) | Branch info of
 * the source (head = the selected change) | [16] parent branch | u64 parent
 * (< the selected change) | bool already applied. */
typedef struct cn_scribe_pick_info_req {
    cn_scribe_id_t repo, target, source;
    uint64_t change;
} cn_scribe_pick_info_req_t;
CN_API cn_err_t cn_scribe_enc_pick_info_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_pick_info_req_t *q);
CN_API cn_err_t cn_scribe_dec_pick_info_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_pick_info_req_t *out);
typedef struct cn_scribe_pick_info {
    cn_scribe_branch_info_t target, source;
    cn_scribe_id_t parent_branch; /* where the picked change's first parent was accepted */
    uint64_t parent;              /* the picked change's first parent (0: none) */
    bool already_applied;
} cn_scribe_pick_info_t;
CN_API cn_err_t cn_scribe_enc_pick_info_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_pick_info_t *v);
CN_API cn_err_t cn_scribe_dec_pick_info_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_pick_info_t *out);

/* cherry_pick_submit (33): bytes32 submit request | u64 target head |
 * [16] source | u64 source change. */
typedef struct cn_scribe_pick_submit_req {
    cn_scribe_submit_req_t submit; /* the target's ordinary submit */
    uint64_t target_head;          /* == submit.base */
    cn_scribe_id_t source;
    uint64_t source_change;
} cn_scribe_pick_submit_req_t;
CN_API cn_err_t cn_scribe_enc_pick_submit_req(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_pick_submit_req_t *q);
CN_API cn_err_t cn_scribe_dec_pick_submit_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_pick_submit_req_t *out);
/* BLAKE3("scribe:cherry-pick-operation:v1\0" | ordinary submit fingerprint |
 * u64 LE target head | source | u64 LE source change) (the specification's). */
CN_API void cn_scribe_pick_fingerprint(const cn_scribe_pick_submit_req_t *q, cn_digest_t *out);

/* merge_read (25): [16] repo | u8 tag, then per tag (paths are non-empty
 * str16 <= 8192, counts <= 1024; the service checks canonical form):
 *   1 chains:      u64 left | u64 right | opt str16 path cursor
 *   2 states:      [16] branch | u64 revision | u32 count | str16 path x count
 *   3 descendants: [16] branch | u64 revision | str16 path | opt str16 folded cursor
 *   4 origins:     [16] branch | u64 revision | [16] base branch | u64 base revision
 *                  | u32 count | str16 path x count
 *   5 unchanged:   [16] branch | u64 from | u64 to | u32 count | str16 path x count
 *   6 merge base (cairn's): [16] target branch | u64 target revision
 *                  | [16] source branch | u64 source revision
 * Any other tag is malformed. */
enum {
    CN_SCRIBE_MR_CHAINS = 1,
    CN_SCRIBE_MR_STATES = 2,
    CN_SCRIBE_MR_DESCENDANTS = 3,
    CN_SCRIBE_MR_ORIGINS = 4,
    CN_SCRIBE_MR_UNCHANGED = 5,
    CN_SCRIBE_MR_BASE = 6
};
typedef struct cn_scribe_merge_read_req {
    cn_scribe_id_t repo;
    uint8_t tag;
    uint64_t left, right;  /* 1 */
    cn_scribe_id_t branch; /* 2..5; 6: the target */
    uint64_t revision;     /* 2, 3, 4; 6: the target revision */
    uint64_t from, to;     /* 5 */
    cn_scribe_id_t other;  /* 4: the base branch; 6: the source branch */
    uint64_t other_revision;
    cn_scribe_str_t path; /* 3 */
    bool has_cursor;
    cn_scribe_str_t cursor; /* 1: path cursor; 3: folded cursor */
    uint32_t count;         /* 2, 4, 5 */
    cn_scribe_rows_t paths; /* decoded 2, 4, 5: count paths (cn_scribe_next_path) */
} cn_scribe_merge_read_req_t;
/* paths: count views (tags 2, 4, 5). */
CN_API cn_err_t cn_scribe_enc_merge_read_req(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_merge_read_req_t *q,
                                             const cn_scribe_str_t *paths);
CN_API cn_err_t cn_scribe_dec_merge_read_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_merge_read_req_t *out);
/* Next path of a decoded path list (merge_read requests, chains replies). */
CN_API bool cn_scribe_next_path(cn_scribe_rows_t *it, cn_scribe_str_t *out);

/* FileStateAt = u8 kind (1 live, 2 tombstone) | u64 change (>= 1: the change
 * that last wrote the path, the delete or move-away for a tombstone)
 * | live only: [32] manifest | u64 size | u8 mode (0..2). */
enum {
    CN_SCRIBE_FILE_LIVE = 1,
    CN_SCRIBE_FILE_TOMBSTONE = 2
};
typedef struct cn_scribe_file_state {
    uint8_t kind;
    uint64_t change;
    cn_digest_t manifest; /* live */
    uint64_t size;        /* live */
    uint8_t mode;         /* live */
} cn_scribe_file_state_t;
typedef struct cn_scribe_path_state {
    cn_scribe_str_t path;
    cn_scribe_file_state_t state;
} cn_scribe_path_state_t;
/* A base-file origin (tag 4): 0 none | 1 unique + str16 base path | 2 several. */
enum {
    CN_SCRIBE_ORIGIN_NONE = 0,
    CN_SCRIBE_ORIGIN_UNIQUE = 1,
    CN_SCRIBE_ORIGIN_SEVERAL = 2
};
typedef struct cn_scribe_origin {
    uint8_t kind;
    cn_scribe_str_t base_path; /* unique */
} cn_scribe_origin_t;

/* merge_read responses, each starting with u8 tag:
 *   1: u64 left | u64 right | opt str16 path cursor | u32 count (<= 1024) | str16 path x count
 *      (left == right: done, and then no cursor)
 *   2: u32 count (<= 1024) | opt FileStateAt x count
 *   3: opt str16 folded cursor | u32 count (<= 5120) | (str16 path | FileStateAt) x count
 *   4: u32 count (<= 1024) | origin x count
 *   5: bool unchanged
 *   6: [16] base branch | u64 base */
typedef struct cn_scribe_merge_read_resp {
    uint8_t tag;
    uint64_t left, right; /* 1 */
    bool has_cursor;      /* 1, 3 */
    cn_scribe_str_t cursor;
    uint32_t count;             /* 1..4 */
    cn_scribe_rows_t rows;      /* 1 paths, 2 optional states, 3 path states, 4 origins */
    bool unchanged;             /* 5 */
    cn_scribe_id_t base_branch; /* 6 */
    uint64_t base;              /* 6 */
} cn_scribe_merge_read_resp_t;
CN_API cn_err_t cn_scribe_enc_merge_chains_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t left,
                                                uint64_t right, bool has_cursor,
                                                cn_scribe_str_t cursor,
                                                const cn_scribe_str_t *paths, uint32_t count);
/* states[i] NULL: no file at that path. */
CN_API cn_err_t cn_scribe_enc_merge_states_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                const cn_scribe_file_state_t *const *states,
                                                uint32_t count);
CN_API cn_err_t cn_scribe_enc_merge_descendants_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                     bool has_cursor, cn_scribe_str_t cursor,
                                                     const cn_scribe_path_state_t *rows,
                                                     uint32_t count);
CN_API cn_err_t cn_scribe_enc_merge_origins_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                 const cn_scribe_origin_t *origins, uint32_t count);
CN_API cn_err_t cn_scribe_enc_merge_unchanged_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                                   bool unchanged);
CN_API cn_err_t cn_scribe_enc_merge_base_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_id_t *base_branch, uint64_t base);
CN_API cn_err_t cn_scribe_dec_merge_read_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_merge_read_resp_t *out);
/* Row iterators of a decoded reply (the tag says which applies; 1 uses
 * cn_scribe_next_path). */
CN_API bool cn_scribe_next_file_state(cn_scribe_rows_t *it, bool *present,
                                      cn_scribe_file_state_t *out);
CN_API bool cn_scribe_next_path_state(cn_scribe_rows_t *it, cn_scribe_path_state_t *out);
CN_API bool cn_scribe_next_origin(cn_scribe_rows_t *it, cn_scribe_origin_t *out);

/* ---- history: tree_page (11), changed_paths (13), log (15) -------------------- */
typedef struct cn_scribe_tree_page_req {
    cn_scribe_id_t repo, branch;
    uint64_t change;
    cn_scribe_str_t prefix; /* "" or a canonical path */
    uint32_t limit;
    bool has_after;
    cn_scribe_str_t after; /* exclusive path cursor */
} cn_scribe_tree_page_req_t;
CN_API cn_err_t cn_scribe_enc_tree_page_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_tree_page_req_t *q);
CN_API cn_err_t cn_scribe_dec_tree_page_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_tree_page_req_t *out);

typedef struct cn_scribe_tree_entry {
    cn_scribe_str_t path;
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
    uint64_t last_change;
} cn_scribe_tree_entry_t;
typedef struct cn_scribe_tree_page_resp {
    uint32_t count;
    cn_scribe_rows_t rows;
    bool more;
    cn_digest_t content_root, revision_root;
} cn_scribe_tree_page_resp_t;
CN_API cn_err_t cn_scribe_enc_tree_page_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_tree_entry_t *rows, uint32_t count,
                                             bool more, const cn_digest_t *content_root,
                                             const cn_digest_t *revision_root);
CN_API cn_err_t cn_scribe_dec_tree_page_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_tree_page_resp_t *out);
CN_API bool cn_scribe_next_tree_entry(cn_scribe_rows_t *it, cn_scribe_tree_entry_t *out);

/* ---- tree_proof (43), docs/protocol/scribe.md 17 ------------------------------- */
#define CN_SCRIBE_MAX_PROOF_REQ 1048576u   /* request bytes */
#define CN_SCRIBE_MAX_PROOF_PATHS 4096u    /* explicit paths */
#define CN_SCRIBE_MAX_PROOF_NODES 8192u    /* nodes per reply */
#define CN_SCRIBE_MAX_PROOF_BYTES 8388608u /* node bytes per reply */
typedef struct cn_scribe_tree_proof_req {
    cn_scribe_str_t page;         /* the tree_page request, in the same codec */
    cn_scribe_tree_page_req_t pq; /* decoded: page's fields */
    uint8_t selector;             /* 0 live, 1 changed, 2 exact, 3 paths */
    uint64_t lower;               /* selector 1 */
    uint32_t path_count;
    const cn_scribe_str_t *path_list; /* encoder input */
    cn_scribe_rows_t paths;           /* decoded: cn_scribe_next_path */
    bool continuation;
    cn_scribe_str_t edge; /* 1..8,192 raw bytes */
    uint32_t remaining;   /* 1..L + 1 */
} cn_scribe_tree_proof_req_t;
/* Both refuse (CN_E_INVALID / CN_E_PROTOCOL) what 17.2 calls malformed:
 * the decoder also decodes page into pq and checks every rule. */
CN_API cn_err_t cn_scribe_enc_tree_proof_req(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_tree_proof_req_t *q);
CN_API cn_err_t cn_scribe_dec_tree_proof_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_tree_proof_req_t *out);
/* L of 17.2: the page limit as tree_page clamps it (selectors 0, 1), else
 * the request's limit. */
CN_API uint32_t cn_scribe_tree_proof_limit(uint8_t selector, uint32_t limit);
typedef struct cn_scribe_tree_proof_resp {
    cn_digest_t content_root, revision_root;
    uint32_t count;
    cn_scribe_rows_t nodes; /* cn_scribe_next_proof_node */
} cn_scribe_tree_proof_resp_t;
/* Appends one node (a bytes32 item) to items; the reply is then the roots,
 * the count and the items (count <= 8,192; node bytes <= 8 MiB, which the
 * producer keeps). */
CN_API cn_err_t cn_scribe_enc_tree_proof_node(cn_buf_t *items, cn_scribe_codec_t c,
                                              const uint8_t *node, size_t len);
CN_API cn_err_t cn_scribe_enc_tree_proof_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_digest_t *content_root,
                                              const cn_digest_t *revision_root, uint32_t count,
                                              const uint8_t *items, size_t items_len);
CN_API cn_err_t cn_scribe_dec_tree_proof_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_tree_proof_resp_t *out);
CN_API bool cn_scribe_next_proof_node(cn_scribe_rows_t *it, cn_scribe_str_t *out);

typedef struct cn_scribe_changed_req {
    cn_scribe_id_t repo, branch;
    uint64_t from, to;
    cn_scribe_str_t prefix;
    uint32_t limit;
    bool has_token;
    cn_scribe_str_t token;
} cn_scribe_changed_req_t;
CN_API cn_err_t cn_scribe_enc_changed_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_changed_req_t *q);
CN_API cn_err_t cn_scribe_dec_changed_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_changed_req_t *out);
typedef struct cn_scribe_changed_row {
    cn_scribe_str_t path;
    uint64_t change; /* last native event in the interval */
    bool present;    /* state at `to` */
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
} cn_scribe_changed_row_t;
typedef struct cn_scribe_changed_resp {
    uint32_t count;
    cn_scribe_rows_t rows;
    bool has_token;
    cn_scribe_str_t token;
} cn_scribe_changed_resp_t;
CN_API cn_err_t cn_scribe_enc_changed_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_changed_row_t *rows, uint32_t count,
                                           bool has_token, cn_scribe_str_t token);
CN_API cn_err_t cn_scribe_dec_changed_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_changed_resp_t *out);
CN_API bool cn_scribe_next_changed_row(cn_scribe_rows_t *it, cn_scribe_changed_row_t *out);

typedef struct cn_scribe_log_req {
    cn_scribe_id_t repo, branch;
    bool has_path;
    cn_scribe_str_t path;
    bool follow_merges;
    bool all_branches;
    bool has_ceiling;
    uint64_t ceiling;
    bool has_before;
    uint64_t before;
    bool has_after_path;
    cn_scribe_str_t after_path;
    uint32_t limit;
} cn_scribe_log_req_t;
CN_API cn_err_t cn_scribe_enc_log_req(cn_buf_t *out, cn_scribe_codec_t c,
                                      const cn_scribe_log_req_t *q);
/* Also enforces the mode rules: follow_merges and all_branches need a path,
 * all_branches needs follow_merges, a ceiling needs all_branches, after_path
 * needs a path and before. */
CN_API cn_err_t cn_scribe_dec_log_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                      cn_scribe_log_req_t *out);

enum {
    CN_SCRIBE_EVENT_NONE = 0
}; /* else a cn_repos_change_kind_t */
typedef struct cn_scribe_log_row {
    uint64_t change;
    cn_digest_t commit;
    cn_scribe_id_t branch;       /* where the revision was accepted */
    cn_scribe_str_t branch_name; /* current display name, <= 256 */
    uint64_t parent;             /* first-parent change, 0 for none */
    cn_scribe_str_t path;        /* historical path; empty without a path query */
    uint8_t event;               /* 0 without a path query, else 1..5 */
    cn_scribe_str_t from_path;   /* move events: the source path */
    cn_scribe_str_t author;
    cn_scribe_str_t message;
    uint64_t time_ms;
    bool has_merge;
    cn_scribe_id_t merge_branch;
    uint64_t merge_change;
    bool has_pick;
    cn_scribe_id_t pick_branch;
    uint64_t pick_change;
    uint64_t ceiling; /* all-branch mode only */
    bool member;      /* all-branch mode only */
} cn_scribe_log_row_t;
typedef struct cn_scribe_log_resp {
    uint32_t count;
    cn_scribe_rows_t rows;
    bool all_branches; /* the layout the rows were decoded with */
} cn_scribe_log_resp_t;
CN_API cn_err_t cn_scribe_enc_log_resp(cn_buf_t *out, cn_scribe_codec_t c, bool all_branches,
                                       const cn_scribe_log_row_t *rows, uint32_t count);
/* all_branches: the rows carry u64 ceiling | bool member; every row of a
 * page has the same ceiling and a change at most it. */
CN_API cn_err_t cn_scribe_dec_log_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       bool all_branches, cn_scribe_log_resp_t *out);
CN_API bool cn_scribe_next_log_row(cn_scribe_rows_t *it, bool all_branches,
                                   cn_scribe_log_row_t *out);

/* ---- change notes (39, 40, 41) --------------------------------------------------- */
typedef struct cn_scribe_note {
    uint64_t change;
    uint32_t revision;
    cn_scribe_str_t author; /* <= 256 */
    uint64_t edited_ms;
    cn_scribe_str_t text; /* <= 65536 */
} cn_scribe_note_t;
CN_API void cn_scribe_wr_note(cn_scribe_wr_t *w, const cn_scribe_note_t *nt);
CN_API void cn_scribe_rd_note(cn_scribe_rd_t *r, cn_scribe_note_t *out);

typedef struct cn_scribe_describe_req {
    cn_scribe_id_t repo;
    uint64_t change;
    uint32_t expected_revision;
    cn_scribe_str_t author;
    cn_scribe_str_t text; /* 1..65536, not blank */
} cn_scribe_describe_req_t;
CN_API cn_err_t cn_scribe_enc_describe_req(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_describe_req_t *q);
CN_API cn_err_t cn_scribe_dec_describe_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_describe_req_t *out);
CN_API cn_err_t cn_scribe_enc_note_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                        const cn_scribe_note_t *nt);
CN_API cn_err_t cn_scribe_dec_note_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        cn_scribe_note_t *out);

typedef struct cn_scribe_notes_req {
    cn_scribe_id_t repo;
    uint32_t count;         /* 1..4096 */
    const uint8_t *changes; /* borrowed: count u64 in the codec */
    cn_scribe_codec_t codec;
} cn_scribe_notes_req_t;
CN_API cn_err_t cn_scribe_enc_notes_req(cn_buf_t *out, cn_scribe_codec_t c,
                                        const cn_scribe_id_t *repo, const uint64_t *changes,
                                        uint32_t count);
CN_API cn_err_t cn_scribe_dec_notes_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                        cn_scribe_notes_req_t *out);
CN_API uint64_t cn_scribe_notes_change(const cn_scribe_notes_req_t *q, uint32_t i);
/* change_notes response: u32 count, count x (bool present, [Change note]). */
CN_API cn_err_t cn_scribe_enc_notes_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_note_t *const *notes, uint32_t count);
CN_API cn_err_t cn_scribe_dec_notes_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_rows_t *rows, uint32_t *count);
CN_API bool cn_scribe_next_note_opt(cn_scribe_rows_t *it, bool *present, cn_scribe_note_t *out);

typedef struct cn_scribe_history_req {
    cn_scribe_id_t repo;
    uint64_t change;
    uint32_t after_revision; /* 0 = from the first */
    uint32_t limit;          /* clamped to 1..1024 */
} cn_scribe_history_req_t;
CN_API cn_err_t cn_scribe_enc_history_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_history_req_t *q);
CN_API cn_err_t cn_scribe_dec_history_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_history_req_t *out);
/* change_note_history response: u32 count (<= 1024), notes, bool more. */
CN_API cn_err_t cn_scribe_enc_history_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_note_t *notes, uint32_t count,
                                           bool more);
CN_API cn_err_t cn_scribe_dec_history_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_rows_t *rows, uint32_t *count, bool *more);
CN_API bool cn_scribe_next_note(cn_scribe_rows_t *it, cn_scribe_note_t *out);

/* ---- locks (14, 16, 17, 29) -------------------------------------------------------
 * docs/protocol/scribe.md 7.10.  lock_acquire (14): [16] repo | [16] workspace
 * | [16] branch | u32 count (1..10,000) | str16 path x count, the paths
 * non-empty and together at most 8 MiB; lock_release (16): [16] repo | [16]
 * workspace | bool force | the same path list.  Both answer u32: the locks
 * acquired / released.  Paths are canonical (the service's check). */
typedef struct cn_scribe_lock_req {
    cn_scribe_id_t repo, workspace;
    cn_scribe_id_t branch; /* acquire only */
    bool force;            /* release only */
    uint32_t count;
    cn_scribe_rows_t paths; /* decoded: count paths (cn_scribe_next_path) */
} cn_scribe_lock_req_t;
/* opcode: CN_SCRIBE_OP_LOCK_ACQUIRE or CN_SCRIBE_OP_LOCK_RELEASE (else
 * CN_E_INVALID / CN_E_PROTOCOL); paths: q->count views for the encoder. */
CN_API cn_err_t cn_scribe_enc_lock_req(cn_buf_t *out, cn_scribe_codec_t c, uint16_t opcode,
                                       const cn_scribe_lock_req_t *q, const cn_scribe_str_t *paths);
CN_API cn_err_t cn_scribe_dec_lock_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       uint16_t opcode, cn_scribe_lock_req_t *out);
/* Responses that are exactly one u32 (lock_acquire, lock_release). */
CN_API cn_err_t cn_scribe_enc_u32_resp(cn_buf_t *out, cn_scribe_codec_t c, uint32_t v);
CN_API cn_err_t cn_scribe_dec_u32_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                       uint32_t *out);

/* lock_list (17): [16] repo | str16 prefix ("" = all) | opt [16] owner |
 * opt str16 after (exclusive path cursor) | u32 limit (clamped 1..4,096). */
typedef struct cn_scribe_lock_list_req {
    cn_scribe_id_t repo;
    cn_scribe_str_t prefix;
    bool has_owner;
    cn_scribe_id_t owner;
    bool has_after;
    cn_scribe_str_t after;
    uint32_t limit;
} cn_scribe_lock_list_req_t;
CN_API cn_err_t cn_scribe_enc_lock_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_lock_list_req_t *q);
CN_API cn_err_t cn_scribe_dec_lock_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_lock_list_req_t *out);
/* Lock row = str16 path | [16] workspace | str16 principal (<= 256) | [16]
 * branch | u64 since ms.  Response: u32 count (<= 4,096) | Lock row x count
 * | bool more (paths strictly ascending; more only on a non-empty page). */
typedef struct cn_scribe_lock_row {
    cn_scribe_str_t path;
    cn_scribe_id_t workspace;
    cn_scribe_str_t principal;
    cn_scribe_id_t branch;
    uint64_t since_ms;
} cn_scribe_lock_row_t;
CN_API cn_err_t cn_scribe_enc_lock_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                             const cn_scribe_lock_row_t *rows, uint32_t count,
                                             bool more);
CN_API cn_err_t cn_scribe_dec_lock_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                             cn_scribe_rows_t *rows, uint32_t *count, bool *more);
CN_API bool cn_scribe_next_lock_row(cn_scribe_rows_t *it, cn_scribe_lock_row_t *out);

/* lock_policy (29): request [16] repo (cn_scribe_enc_repo_id_req); response
 * u64 config change | str32 UTF-8 TOML text (<= 65,536). */
CN_API cn_err_t cn_scribe_enc_lock_policy_resp(cn_buf_t *out, cn_scribe_codec_t c, uint64_t change,
                                               cn_scribe_str_t text);
CN_API cn_err_t cn_scribe_dec_lock_policy_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                               uint64_t *change, cn_scribe_str_t *text);

/* ---- public reads and mounts (30, 31), docs/protocol/scribe.md 16 ---------------------
 * get_chunks (30): [16] repo | u32 count (1..1,024) | ([32] chunk id |
 * [32] manifest id) x count; the reply is get_objects' (a u32 count, then
 * the streamed items, kind 1, in request order).  The manifest is the
 * witness that lets a caller read the chunk: the server answers an item
 * absent unless the manifest is accepted in the repository and names the
 * chunk.  repository_mounts (31): [16] repo | [16] branch | u64 change
 * (40 bytes) -> u32 count (<= 64) | Mount x count, Mount = str16 name
 * (1..64 bytes) | str16 path (canonical) | str16 repository (32 lowercase
 * hex digits) | str16 branch (the same) | str16 revision (a canonical u64
 * decimal, 1..20 digits); names strictly ascending (bytewise), paths
 * distinct. */
#define CN_SCRIBE_MAX_WITNESSES 1024 /* chunks per get_chunks */
#define CN_SCRIBE_MAX_MOUNTS 64
#define CN_SCRIBE_MAX_MOUNT_NAME 64
typedef struct cn_scribe_witness {
    cn_digest_t chunk, manifest;
} cn_scribe_witness_t;
typedef struct cn_scribe_chunks_req {
    cn_scribe_id_t repo;
    uint32_t count;       /* 1..1,024 */
    const uint8_t *items; /* borrowed: count x 64 bytes */
} cn_scribe_chunks_req_t;
CN_API cn_err_t cn_scribe_enc_chunks_req(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_id_t *repo, const cn_scribe_witness_t *w,
                                         uint32_t count);
CN_API cn_err_t cn_scribe_dec_chunks_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_chunks_req_t *out);
CN_API void cn_scribe_chunks_witness(const cn_scribe_chunks_req_t *q, uint32_t i,
                                     cn_scribe_witness_t *out);

typedef struct cn_scribe_mounts_req {
    cn_scribe_id_t repo, branch;
    uint64_t change;
} cn_scribe_mounts_req_t;
CN_API cn_err_t cn_scribe_enc_mounts_req(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_mounts_req_t *q);
CN_API cn_err_t cn_scribe_dec_mounts_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_mounts_req_t *out);
typedef struct cn_scribe_mount {
    cn_scribe_str_t name, path;
    cn_scribe_str_t repository, branch; /* 32 lowercase hex digits each */
    cn_scribe_str_t revision;           /* canonical u64 decimal */
} cn_scribe_mount_t;
/* Both refuse (CN_E_INVALID / CN_E_PROTOCOL) more than 64 rows, names out
 * of order or repeated, a repeated path and any malformed field. */
CN_API cn_err_t cn_scribe_enc_mounts_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_mount_t *rows, uint32_t count);
CN_API cn_err_t cn_scribe_dec_mounts_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_rows_t *rows, uint32_t *count);
CN_API bool cn_scribe_next_mount(cn_scribe_rows_t *it, cn_scribe_mount_t *out);
/* A mount's id field as 16 bytes (false unless 32 lowercase hex digits);
 * its revision as a u64 (false unless canonical decimal). */
CN_API bool cn_scribe_mount_id(cn_scribe_str_t hex, uint8_t out[16]);
CN_API bool cn_scribe_mount_revision(cn_scribe_str_t dec, uint64_t *out);

/* ---- workspaces (12, 34, 35, 36) --------------------------------------------------
 * docs/protocol/scribe.md 7.11.  workspace_register (12): [16] repo | [16]
 * workspace | [16] branch | str16 label (<= 256) | u16 tag count (<= 16) |
 * str16 tag (<= 64) x count; it answers one registration row.  A tag is
 * "name" or "name=value" (cn_scribe_ws_tag_ok); names are unique. */
#define CN_SCRIBE_MAX_WS_LABEL 256
#define CN_SCRIBE_MAX_WS_TAGS 16
#define CN_SCRIBE_MAX_WS_TAG 64
#define CN_SCRIBE_MAX_WS_PAGE 128 /* rows per workspace_list page */
/* True when s is a tag of the grammar: name of [a-z0-9._-] starting with a
 * letter or digit, optionally "=" and a value of printable ASCII without
 * spaces (0x21..0x7e), at most 64 bytes. */
CN_API bool cn_scribe_ws_tag_ok(cn_scribe_str_t s);
typedef struct cn_scribe_ws_register_req {
    cn_scribe_id_t repo, workspace, branch;
    cn_scribe_str_t label;
    uint16_t tag_count;
    cn_scribe_str_t tags[CN_SCRIBE_MAX_WS_TAGS]; /* borrowed views */
} cn_scribe_ws_register_req_t;
/* The encoder refuses (CN_E_INVALID) what the decoder would: a zero
 * workspace, a bad or repeated tag name, more than 16 tags, a long label. */
CN_API cn_err_t cn_scribe_enc_ws_register_req(cn_buf_t *out, cn_scribe_codec_t c,
                                              const cn_scribe_ws_register_req_t *q);
CN_API cn_err_t cn_scribe_dec_ws_register_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                              cn_scribe_ws_register_req_t *out);
/* Registration row = [16] workspace | [16] branch | u8 has-owner | [16]
 * owner? | str16 label | u16 tag count | str16 tag x count (strictly
 * ascending bytes, names unique) | u64 created-ms | u8 has-locks. */
typedef struct cn_scribe_ws_row {
    cn_scribe_id_t workspace, branch;
    bool has_owner;
    cn_scribe_id_t owner;
    cn_scribe_str_t label;
    uint16_t tag_count;
    cn_scribe_str_t tags[CN_SCRIBE_MAX_WS_TAGS];
    uint64_t created_ms;
    bool has_locks;
} cn_scribe_ws_row_t;
/* workspace_register's response: exactly one row. */
CN_API cn_err_t cn_scribe_enc_ws_row_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_ws_row_t *row);
CN_API cn_err_t cn_scribe_dec_ws_row_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_ws_row_t *out);
/* workspace_list (34): [16] repo | u8 scope (0 own, 1 all) | u8 has-cursor |
 * [16] cursor | u32 limit; 38 bytes.  Response: u32 count (<= 128) | row x
 * count | bool more (workspace ids strictly ascending; more only on a
 * non-empty page). */
typedef struct cn_scribe_ws_list_req {
    cn_scribe_id_t repo;
    uint8_t scope; /* 0 own, 1 all */
    bool has_cursor;
    cn_scribe_id_t cursor; /* zeros without has_cursor */
    uint32_t limit;
} cn_scribe_ws_list_req_t;
CN_API cn_err_t cn_scribe_enc_ws_list_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_ws_list_req_t *q);
CN_API cn_err_t cn_scribe_dec_ws_list_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_ws_list_req_t *out);
CN_API cn_err_t cn_scribe_enc_ws_list_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_ws_row_t *rows, uint32_t count,
                                           bool more);
CN_API cn_err_t cn_scribe_dec_ws_list_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_rows_t *rows, uint32_t *count, bool *more);
CN_API bool cn_scribe_next_ws_row(cn_scribe_rows_t *it, cn_scribe_ws_row_t *out);
/* workspace_remove (35): [16] repo | [16] incarnation | [16] operation
 * (nonzero) | [16] workspace (nonzero); 64 bytes.  workspace_remove_outcome
 * (36) takes cn_scribe_outcome_req_t.  Both answer the removal outcome:
 * [16] operation | u16 code | code 0: u64 retired-ms; else str16 detail
 * (<= 4,096). */
typedef struct cn_scribe_ws_remove_req {
    cn_scribe_id_t repo, incarnation, operation, workspace;
} cn_scribe_ws_remove_req_t;
CN_API cn_err_t cn_scribe_enc_ws_remove_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_ws_remove_req_t *q);
CN_API cn_err_t cn_scribe_dec_ws_remove_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_ws_remove_req_t *out);
typedef struct cn_scribe_ws_removal {
    cn_scribe_id_t operation;
    uint16_t code; /* 0: retired */
    uint64_t retired_ms;
    cn_scribe_str_t detail;
} cn_scribe_ws_removal_t;
CN_API cn_err_t cn_scribe_enc_ws_removal(cn_buf_t *out, cn_scribe_codec_t c,
                                         const cn_scribe_ws_removal_t *o);
CN_API cn_err_t cn_scribe_dec_ws_removal(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                         cn_scribe_ws_removal_t *out);

#ifdef __cplusplus
}
#endif
#endif
