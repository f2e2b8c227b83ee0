/* cairn scribe: the Scribe TCP wire codec (protocol 2, plaintext) —
 * SCR1 frame headers, the handshake, the metadata codecs and primitives, the
 * error payload, and the request/response layouts of the core opcodes.
 * docs/protocol/scribe.md is the normative description of every byte.
 *
 * Pure: no sockets, no clocks, no allocation while parsing.  Decoders
 * validate a whole payload (every count against its limit and against the
 * bytes that remain, tags strict, no trailing bytes) and return borrowed
 * views into the caller's buffer; they return CN_E_PROTOCOL for a malformed
 * payload and nothing else, except where a function says so.  Encoders append
 * to a cn_buf_t and return CN_E_INVALID for a value outside its limit.
 * Protocol 4 (TLS with X25519MLKEM768) is described but not offered until
 * cairn's TLS carries that group; the hello codec already parses it.
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
    CN_SCRIBE_OP_WORKSPACE_REGISTER = 12, /* reserved: workspace lifecycle */
    CN_SCRIBE_OP_CHANGED_PATHS = 13,
    CN_SCRIBE_OP_LOCK_ACQUIRE = 14, /* reserved: locks */
    CN_SCRIBE_OP_LOG = 15,
    CN_SCRIBE_OP_LOCK_RELEASE = 16, /* reserved: locks */
    CN_SCRIBE_OP_LOCK_LIST = 17,    /* reserved: locks */
    /* 18, 19 unassigned (reserved for the core) */
    CN_SCRIBE_OP_BRANCH_LIST = 20, /* 20..25 reserved: branches and merges */
    CN_SCRIBE_OP_BRANCH_MUTATE = 21,
    CN_SCRIBE_OP_BRANCH_INFO = 22,
    CN_SCRIBE_OP_BRANCH_OUTCOME = 23,
    CN_SCRIBE_OP_MERGE_SUBMIT = 24,
    CN_SCRIBE_OP_MERGE_READ = 25,
    CN_SCRIBE_OP_INSTANCE_STATUS = 26,
    CN_SCRIBE_OP_AUTHORIZE_UPLOAD = 27,      /* reserved: gateway preflights */
    CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE = 28, /* reserved: gateway preflights */
    CN_SCRIBE_OP_LOCK_POLICY = 29,           /* reserved: lock policy */
    CN_SCRIBE_OP_GET_CHUNKS = 30,            /* reserved: public reads */
    CN_SCRIBE_OP_REPOSITORY_MOUNTS = 31,     /* reserved: mounts */
    CN_SCRIBE_OP_CHERRY_PICK_INFO = 32,      /* reserved: selective integration */
    CN_SCRIBE_OP_CHERRY_PICK_SUBMIT = 33,
    CN_SCRIBE_OP_WORKSPACE_LIST = 34, /* reserved: workspace lifecycle */
    CN_SCRIBE_OP_WORKSPACE_REMOVE = 35,
    CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME = 36,
    /* 37 unassigned */
    CN_SCRIBE_OP_REPO_USAGE = 38,
    CN_SCRIBE_OP_DESCRIBE_CHANGE = 39,
    CN_SCRIBE_OP_CHANGE_NOTES = 40,
    CN_SCRIBE_OP_CHANGE_NOTE_HISTORY = 41,
    CN_SCRIBE_OP_PIN_OBJECTS = 42,
    CN_SCRIBE_OP_TREE_PROOF = 43, /* reserved: tree proofs */
} cn_scribe_op_t;

/* Name of an opcode ("put_objects"), or NULL for a number the table does not assign. */
CN_API const char *cn_scribe_op_name(uint16_t opcode);
/* True for an opcode this codec encodes and decodes (the core set). */
CN_API bool cn_scribe_op_is_core(uint16_t opcode);
/* The exact request-payload bound of a core opcode: the largest encoding its
 * decoder accepts.  Opcode 1 on plaintext (protocol 2): 273; over TLS
 * (protocol 4): 16,692.  Returns false for an opcode with no core layout. */
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
#define CN_SCRIBE_BLOCK_MAX 262144u /* LZ4 transfer block, original bytes */
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
enum {
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
/* remaining: original bytes still owed to the current object. */
CN_API cn_err_t cn_scribe_dec_block(const uint8_t p[CN_SCRIBE_BLOCK_HDR_LEN], uint64_t remaining,
                                    cn_scribe_block_t *out);

/* ---- submit (9) and operation_outcome (10) ---------------------------------------- */
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

typedef struct cn_scribe_outcome_req {
    cn_scribe_id_t repo, operation;
} cn_scribe_outcome_req_t;
CN_API cn_err_t cn_scribe_enc_outcome_req(cn_buf_t *out, cn_scribe_codec_t c,
                                          const cn_scribe_outcome_req_t *q);
CN_API cn_err_t cn_scribe_dec_outcome_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                          cn_scribe_outcome_req_t *out);
enum {
    CN_SCRIBE_OUTCOME_KIND_UNKNOWN = 0,
    CN_SCRIBE_OUTCOME_KIND_SUBMIT = 1
};
typedef struct cn_scribe_outcome_resp {
    uint8_t kind; /* 0 unknown operation, 1 submit (2, 3 reserved) */
    cn_scribe_submit_outcome_t submit;
} cn_scribe_outcome_resp_t;
CN_API cn_err_t cn_scribe_enc_outcome_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                           const cn_scribe_outcome_resp_t *o,
                                           const cn_scribe_str_t *paths);
CN_API cn_err_t cn_scribe_dec_outcome_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                           cn_scribe_outcome_resp_t *out);

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

#ifdef __cplusplus
}
#endif
#endif
