/* cairn jay: the wire codec of Jay native protocol v1 (shared/spec/jay-native-v1.txt).
 *
 * Pure functions over byte buffers: the handshake, the 17-byte frame header, the
 * positional metadata primitives, and every request and response layout of the
 * spec, in both directions (the server decodes requests and encodes responses,
 * the client does the opposite).  This file must never touch a socket, a file,
 * a clock or a service, and its decoders never allocate: they hand out slices
 * (cn_jay_str_t, cn_jay_list_t) of the caller's buffer, valid while it is.
 * Every count read from the wire is checked against its hard limit and against
 * the bytes that remain before anything uses it.  Encoders append to a cn_buf_t
 * and fail (CN_E_LIMIT) rather than truncate.  All functions are thread-safe.
 */
#ifndef CAIRN_JAY_H
#define CAIRN_JAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants of the contract ------------------------------------------ */
#define CN_JAY_MAGIC 0x4A415900u /* "JAY\0" */
#define CN_JAY_VERSION 0x01
#define CN_JAY_HELLO_LEN 8         /* fixed part of the client handshake */
#define CN_JAY_WELCOME_LEN 8       /* the server's handshake reply */
#define CN_JAY_HDR_LEN 17          /* every frame header */
#define CN_JAY_MAX_META (1u << 20) /* MaxMetaSize: 1 MiB of metadata per frame */
#define CN_JAY_MAX_STR 65535u      /* bytes in one string */
#define CN_JAY_MAX_COUNT 65535u    /* elements in one collection */
#define CN_JAY_DEFAULT_PORT 7446

/* Handshake reply statuses. */
enum {
    CN_JAY_HS_OK = 0x00,
    CN_JAY_HS_AUTH_FAILED = 0x01,
    CN_JAY_HS_VERSION_MISMATCH = 0x02,
    CN_JAY_HS_SERVER_BUSY = 0x03,
    CN_JAY_HS_MALFORMED = 0x04
};

/* Opcodes (the first header byte of a request). */
enum {
    CN_JAY_OP_CREATE_BUCKET = 0x01,
    CN_JAY_OP_DELETE_BUCKET = 0x02,
    CN_JAY_OP_HEAD_BUCKET = 0x03,
    CN_JAY_OP_LIST_BUCKETS = 0x04,
    CN_JAY_OP_PUT_OBJECT = 0x10,
    CN_JAY_OP_GET_OBJECT = 0x11,
    CN_JAY_OP_HEAD_OBJECT = 0x12,
    CN_JAY_OP_DELETE_OBJECT = 0x13,
    CN_JAY_OP_LIST_OBJECTS = 0x14,
    CN_JAY_OP_GET_OBJECT_RANGE = 0x15,
    CN_JAY_OP_COPY_OBJECT = 0x16,
    CN_JAY_OP_CREATE_MULTIPART = 0x20,
    CN_JAY_OP_UPLOAD_PART = 0x21,
    CN_JAY_OP_COMPLETE_MULTIPART = 0x22,
    CN_JAY_OP_ABORT_MULTIPART = 0x23,
    CN_JAY_OP_LIST_PARTS = 0x24,
    CN_JAY_OP_PING = 0xFF
};

/* Response statuses (the first header byte of a response). */
enum {
    CN_JAY_ST_OK = 0x00,
    CN_JAY_ST_NOT_FOUND = 0x01,
    CN_JAY_ST_CONFLICT = 0x02,
    CN_JAY_ST_BAD_REQUEST = 0x03,
    CN_JAY_ST_FORBIDDEN = 0x04,
    CN_JAY_ST_INTERNAL = 0x05
};

/* The machine-readable error codes of v1.  The string is the contract. */
#define CN_JAY_CODE_ACCESS_DENIED_S "AccessDenied"
#define CN_JAY_CODE_BUCKET_ALREADY_EXISTS_S "BucketAlreadyExists"
#define CN_JAY_CODE_BUCKET_NOT_EMPTY_S "BucketNotEmpty"
#define CN_JAY_CODE_ENTITY_TOO_LARGE_S "EntityTooLarge"
#define CN_JAY_CODE_INTERNAL_ERROR_S "InternalError"
#define CN_JAY_CODE_INVALID_ARGUMENT_S "InvalidArgument"
#define CN_JAY_CODE_INVALID_BUCKET_NAME_S "InvalidBucketName"
#define CN_JAY_CODE_INVALID_RANGE_S "InvalidRange"
#define CN_JAY_CODE_NO_SUCH_BUCKET_S "NoSuchBucket"
#define CN_JAY_CODE_NO_SUCH_KEY_S "NoSuchKey"
#define CN_JAY_CODE_NO_SUCH_UPLOAD_S "NoSuchUpload"
#define CN_JAY_CODE_RATE_LIMIT_EXCEEDED_S "RateLimitExceeded"
#define CN_JAY_CODE_UNKNOWN_OP_S "UnknownOp"

typedef enum cn_jay_code {
    CN_JAY_CODE_NONE = 0,              /* not a v1 code (unknown string, or none) */
    CN_JAY_CODE_ACCESS_DENIED,         /* Forbidden */
    CN_JAY_CODE_BUCKET_ALREADY_EXISTS, /* Conflict */
    CN_JAY_CODE_BUCKET_NOT_EMPTY,      /* Conflict */
    CN_JAY_CODE_ENTITY_TOO_LARGE,      /* Bad request */
    CN_JAY_CODE_INTERNAL_ERROR,        /* Internal */
    CN_JAY_CODE_INVALID_ARGUMENT,      /* Bad request */
    CN_JAY_CODE_INVALID_BUCKET_NAME,   /* Bad request */
    CN_JAY_CODE_INVALID_RANGE,         /* Bad request */
    CN_JAY_CODE_NO_SUCH_BUCKET,        /* Not found */
    CN_JAY_CODE_NO_SUCH_KEY,           /* Not found */
    CN_JAY_CODE_NO_SUCH_UPLOAD,        /* Not found */
    CN_JAY_CODE_RATE_LIMIT_EXCEEDED,   /* Bad request; the only retryable 0x03 */
    CN_JAY_CODE_UNKNOWN_OP,            /* Bad request */
    CN_JAY_CODE_END
} cn_jay_code_t;

/* The code's wire string ("NoSuchKey"); "" for CN_JAY_CODE_NONE or out of range. */
CN_API const char *cn_jay_code_str(cn_jay_code_t code);
/* The status the spec pairs with code; CN_JAY_ST_INTERNAL for NONE/out of range. */
CN_API uint8_t cn_jay_code_status(cn_jay_code_t code);
/* Looks a wire string up (exact, case-sensitive); CN_JAY_CODE_NONE if unknown. */
CN_API cn_jay_code_t cn_jay_code_parse(const char *p, size_t n);
/* The operation's name ("PutObject"), or NULL when op is not a v1 opcode. */
CN_API const char *cn_jay_op_name(uint8_t op);

/* ---- slices ---------------------------------------------------------------
 * A string borrowed from a buffer: not NUL-terminated, at most 65535 bytes by
 * construction.  p may be NULL when len is 0. */
typedef struct cn_jay_str {
    const char *p;
    uint16_t len;
} cn_jay_str_t;

/* Makes a slice of the C string s (NULL is ""); CN_E_LIMIT if it is longer
 * than a wire string may be — the encoder-side check that never truncates. */
CN_API cn_err_t cn_jay_str_make(const char *s, cn_jay_str_t *out);
/* Makes a slice of n bytes at p; CN_E_LIMIT if n > 65535. */
CN_API cn_err_t cn_jay_str_make_n(const void *p, size_t n, cn_jay_str_t *out);
/* True when the slice holds exactly the C string s. */
CN_API bool cn_jay_str_eq(cn_jay_str_t s, const char *cstr);

/* A key/value pair of a string map. */
typedef struct cn_jay_kv {
    cn_jay_str_t key;
    cn_jay_str_t value;
} cn_jay_kv_t;

/* A decoded, fully validated collection: count elements whose encoding is the
 * len bytes at p (after the 2-byte count).  Walk it with a cn_jay_iter_t. */
typedef struct cn_jay_list {
    const uint8_t *p;
    size_t len;
    uint16_t count;
} cn_jay_list_t;

/* ---- handshake ------------------------------------------------------------ */

/* The client's handshake as the server decoded it. */
typedef struct cn_jay_hello {
    uint8_t verdict; /* CN_JAY_HS_*: what the format alone says (see decode) */
    uint8_t version;
    uint8_t flags;     /* reserved; reported, never to be validated */
    cn_jay_str_t auth; /* the credential payload, when verdict is OK */
    size_t consumed;   /* bytes of the handshake the decision covered */
} cn_jay_hello_t;

/* Appends the client handshake: magic, version 1, flags 0, auth_len, auth.
 * Errors: CN_E_INVALID if auth_len is 0, CN_E_LIMIT if above 65535, -ENOMEM. */
CN_API cn_err_t cn_jay_hello_encode(cn_buf_t *out, const void *auth, size_t auth_len);

/* Classifies the first len bytes a client sent, exactly as the status table says.
 * Returns CN_E_AGAIN when the bytes so far cannot decide it: read more, and if
 * the peer is gone the handshake was torn — close without writing anything.
 * Returns CN_OK with out->verdict:
 *   CN_JAY_HS_MALFORMED        a magic byte differs (decided on the first one seen);
 *   CN_JAY_HS_VERSION_MISMATCH magic matched, the version byte is not 0x01;
 *   CN_JAY_HS_AUTH_FAILED      auth_len is zero (there is no credential to check);
 *   CN_JAY_HS_OK               well formed: out->auth borrows the credential from
 *                              buf and consumed is 8 + auth_len.  Whether the
 *                              credential is good is the caller's question.
 * The flags byte is never looked at beyond being reported. */
CN_API cn_err_t cn_jay_hello_decode(const void *buf, size_t len, cn_jay_hello_t *out);

/* Splits a credential "token_id:secret" on the first colon (so the secret may
 * hold colons).  CN_E_AUTH when there is no colon or either side is empty. */
CN_API cn_err_t cn_jay_auth_split(cn_jay_str_t auth, cn_jay_str_t *token_id, cn_jay_str_t *secret);

/* Writes the 8-byte server reply: magic, version 1, status, two zero bytes. */
CN_API void cn_jay_welcome_encode(uint8_t out[CN_JAY_WELCOME_LEN], uint8_t status);

typedef struct cn_jay_welcome {
    uint8_t version;
    uint8_t status; /* CN_JAY_HS_* (any other value is passed through) */
} cn_jay_welcome_t;

/* Decodes the server reply.  CN_E_AGAIN if fewer than 8 bytes; CN_E_PROTOCOL if
 * the magic is wrong, or the status is OK with a version other than 1.  The
 * reserved bytes are ignored. */
CN_API cn_err_t cn_jay_welcome_decode(const void *buf, size_t len, cn_jay_welcome_t *out);

/* ---- frame header ---------------------------------------------------------- */
typedef struct cn_jay_hdr {
    uint8_t code;       /* opcode on a request, status on a response */
    uint32_t stream_id; /* reserved: clients write 0, servers echo */
    uint32_t meta_len;
    int64_t data_len;
} cn_jay_hdr_t;

/* Writes 17 bytes.  CN_E_LIMIT if meta_len > 1 MiB, CN_E_INVALID if data_len < 0
 * (nothing is written then). */
CN_API cn_err_t cn_jay_hdr_encode(uint8_t out[CN_JAY_HDR_LEN], const cn_jay_hdr_t *h);

/* Decodes a header from the first bytes of buf.  CN_E_AGAIN if len < 17.
 * Otherwise out is filled in every case, and the result is CN_OK, or
 * CN_E_LIMIT when meta_len exceeds 1 MiB, or CN_E_PROTOCOL when data_len is
 * negative — both protocol errors that end the connection. */
CN_API cn_err_t cn_jay_hdr_decode(const void *buf, size_t len, cn_jay_hdr_t *out);

/* ---- metadata writer --------------------------------------------------------
 * Builds one frame in a cn_buf_t: begin reserves the header, the w_* calls
 * append fields, end fills in the header.  Errors are sticky: the first one is
 * kept and reported by cn_jay_w_end, which then removes the partial frame. */
typedef struct cn_jay_w {
    cn_buf_t *buf;
    size_t start;
    cn_err_t err;
} cn_jay_w_t;

CN_API void cn_jay_w_begin(cn_jay_w_t *w, cn_buf_t *buf, uint8_t code, uint32_t stream_id);
CN_API void cn_jay_w_str(cn_jay_w_t *w, const void *p, size_t n); /* CN_E_LIMIT > 65535 */
CN_API void cn_jay_w_cstr(cn_jay_w_t *w, const char *s);          /* NULL is "" */
CN_API void cn_jay_w_jstr(cn_jay_w_t *w, cn_jay_str_t s);
CN_API void cn_jay_w_i32(cn_jay_w_t *w, int32_t v);
CN_API void cn_jay_w_i64(cn_jay_w_t *w, int64_t v);
CN_API void cn_jay_w_bool(cn_jay_w_t *w, bool v);    /* 0x00 / 0x01 */
CN_API void cn_jay_w_count(cn_jay_w_t *w, size_t n); /* CN_E_LIMIT > 65535 */
CN_API void cn_jay_w_str_list(cn_jay_w_t *w, const cn_jay_str_t *v, size_t n);
CN_API void cn_jay_w_int_list(cn_jay_w_t *w, const int32_t *v, size_t n);
CN_API void cn_jay_w_map(cn_jay_w_t *w, const cn_jay_kv_t *kv, size_t n);
/* Copies an already validated list (count + elements) verbatim. */
CN_API void cn_jay_w_list(cn_jay_w_t *w, const cn_jay_list_t *l);
/* Finishes the frame with data_len.  Returns the first error (CN_E_LIMIT for
 * metadata past 1 MiB or any overrun, CN_E_INVALID for data_len < 0, -ENOMEM);
 * on error the buffer is cut back to where begin found it. */
CN_API cn_err_t cn_jay_w_end(cn_jay_w_t *w, int64_t data_len);

/* ---- metadata reader ---------------------------------------------------------
 * On top of cn_rd_t: any overrun sets r->err = CN_E_PROTOCOL and is sticky. */
CN_API cn_jay_str_t cn_jay_r_str(cn_rd_t *r);
CN_API int32_t cn_jay_r_i32(cn_rd_t *r);
CN_API int64_t cn_jay_r_i64(cn_rd_t *r);
CN_API bool cn_jay_r_bool(cn_rd_t *r);
/* Reads a 2-byte count and checks count * min_elem_size against the bytes left. */
CN_API uint16_t cn_jay_r_count(cn_rd_t *r, size_t min_elem_size);
/* Read and validate a whole collection, handing out its slice. */
CN_API void cn_jay_r_str_list(cn_rd_t *r, cn_jay_list_t *out);
CN_API void cn_jay_r_int_list(cn_rd_t *r, cn_jay_list_t *out);
CN_API void cn_jay_r_map(cn_rd_t *r, cn_jay_list_t *out);

/* ---- iteration over validated collections ---------------------------------- */
typedef struct cn_jay_iter {
    cn_rd_t rd;
    uint16_t left;
} cn_jay_iter_t;

/* Entries of the list layouts. */
typedef struct cn_jay_obj_entry { /* ListObjects */
    cn_jay_str_t key;
    int64_t size;
    cn_jay_str_t etag, checksum, last_modified, content_type;
} cn_jay_obj_entry_t;

typedef struct cn_jay_bucket_entry { /* ListBuckets */
    cn_jay_str_t name, created_at;
} cn_jay_bucket_entry_t;

typedef struct cn_jay_part_entry { /* ListParts */
    int32_t part_number;
    int64_t size;
    cn_jay_str_t etag, checksum;
} cn_jay_part_entry_t;

CN_API cn_jay_iter_t cn_jay_iter(const cn_jay_list_t *l);
/* Each returns false when the list is exhausted (lists from a decoder are
 * validated, so running out is the only way these stop). */
CN_API bool cn_jay_next_str(cn_jay_iter_t *it, cn_jay_str_t *out);
CN_API bool cn_jay_next_i32(cn_jay_iter_t *it, int32_t *out);
CN_API bool cn_jay_next_kv(cn_jay_iter_t *it, cn_jay_kv_t *out);
CN_API bool cn_jay_next_obj(cn_jay_iter_t *it, cn_jay_obj_entry_t *out);
CN_API bool cn_jay_next_bucket(cn_jay_iter_t *it, cn_jay_bucket_entry_t *out);
CN_API bool cn_jay_next_part(cn_jay_iter_t *it, cn_jay_part_entry_t *out);

/* Entry writers, for a list written as cn_jay_w_count(n) then n entries. */
CN_API void cn_jay_w_obj_entry(cn_jay_w_t *w, const cn_jay_obj_entry_t *e);
CN_API void cn_jay_w_bucket_entry(cn_jay_w_t *w, const cn_jay_bucket_entry_t *e);
CN_API void cn_jay_w_part_entry(cn_jay_w_t *w, const cn_jay_part_entry_t *e);

/* ---- requests ----------------------------------------------------------------
 * One flat struct covers every request layout; op says which fields mean
 * something (the rest are zero).  For CopyObject, bucket/key are the source.
 *
 *   CreateBucket DeleteBucket HeadBucket   bucket
 *   ListBuckets Ping                       (empty)
 *   GetObject HeadObject DeleteObject      bucket key
 *   PutObject                              bucket key content_type metadata skip_etag
 *   ListObjects                            bucket prefix delimiter start_after max_keys
 *   GetObjectRange                         bucket key offset length
 *   CopyObject                             bucket key dst_bucket dst_key
 *   CreateMultipartUpload                  bucket key content_type
 *   UploadPart                             bucket key upload_id part_number
 *   CompleteMultipartUpload                bucket key upload_id part_numbers
 *   AbortMultipartUpload ListParts         bucket key upload_id
 */
typedef struct cn_jay_req {
    uint8_t op;
    cn_jay_str_t bucket, key, content_type;
    cn_jay_str_t prefix, delimiter, start_after;
    cn_jay_str_t upload_id;
    cn_jay_str_t dst_bucket, dst_key;
    cn_jay_list_t metadata;     /* decoded string map (PutObject) */
    cn_jay_list_t part_numbers; /* decoded int list (CompleteMultipartUpload) */
    bool skip_etag;             /* absent on the wire → false */
    int32_t max_keys;
    int32_t part_number;
    int64_t offset, length;
    /* Encoder inputs: when non-NULL these are written instead of the decoded
     * lists above (at most 65535 elements, else CN_E_LIMIT). */
    const cn_jay_kv_t *meta_kv;
    size_t n_meta_kv;
    const int32_t *parts;
    size_t n_parts;
} cn_jay_req_t;

/* Decodes the metadata block of a request with opcode op.  Strings and lists
 * borrow from meta.  Errors: CN_E_UNSUPPORTED when op is not a v1 opcode
 * (answer UnknownOp); CN_E_PROTOCOL when the block is truncated, a count runs
 * past the end, or bytes are left over after the layout (answer
 * InvalidArgument).  PutObject's trailing skip_etag is read only if a byte
 * remains. */
CN_API cn_err_t cn_jay_req_decode(uint8_t op, const void *meta, size_t len, cn_jay_req_t *out);

/* Appends a complete request frame (header with stream_id 0, then metadata)
 * whose header declares data_len body bytes, which the caller sends next.
 * PutObject always writes skip_etag.  Errors: CN_E_UNSUPPORTED for an unknown
 * op, CN_E_LIMIT for a collection or metadata block over its limit,
 * CN_E_INVALID for data_len < 0, -ENOMEM; out is unchanged on error. */
CN_API cn_err_t cn_jay_req_encode(cn_buf_t *out, const cn_jay_req_t *req, int64_t data_len);

/* ---- responses ---------------------------------------------------------------
 * One flat struct covers every response layout, chosen by the request opcode:
 *
 *   PutObject UploadPart                   etag checksum
 *   GetObject HeadObject GetObjectRange    content_type size etag checksum last_modified metadata
 *   CopyObject                             etag checksum size last_modified
 *   ListObjects                            entries(objects) common_prefixes is_truncated next_start_after
 *   ListBuckets                            entries(buckets)
 *   HeadBucket                             bucket_id name created_at visibility
 *   CompleteMultipartUpload                etag checksum size
 *   ListParts                              entries(parts)
 *   CreateMultipartUpload                  upload_id   (the spec lists no layout; see docs/protocol/jay.md)
 *   CreateBucket DeleteBucket DeleteObject AbortMultipartUpload Ping: (empty)
 *   any status other than OK               message code
 */
typedef struct cn_jay_resp {
    cn_jay_str_t etag, checksum, content_type, last_modified;
    int64_t size;
    cn_jay_str_t bucket_id, name, created_at, visibility;
    cn_jay_str_t upload_id;
    cn_jay_list_t metadata;        /* string map */
    cn_jay_list_t entries;         /* objects, buckets or parts */
    cn_jay_list_t common_prefixes; /* string list */
    bool is_truncated;
    cn_jay_str_t next_start_after;
    cn_jay_str_t message, code; /* error payload */
    /* Encoder inputs: when non-NULL, written instead of the lists above. */
    const cn_jay_kv_t *meta_kv;
    size_t n_meta_kv;
    const cn_jay_obj_entry_t *objs;
    const cn_jay_bucket_entry_t *buckets;
    const cn_jay_part_entry_t *parts;
    size_t n_entries; /* count for whichever of objs/buckets/parts */
    const cn_jay_str_t *prefixes;
    size_t n_prefixes;
} cn_jay_resp_t;

/* Decodes a response's metadata: the error layout when status is not OK,
 * otherwise the layout of the request opcode op.  Errors: CN_E_UNSUPPORTED for
 * an unknown op, CN_E_PROTOCOL for a truncated block, a count past the end or
 * bytes left over. */
CN_API cn_err_t cn_jay_resp_decode(uint8_t op, uint8_t status, const void *meta, size_t len,
                                   cn_jay_resp_t *out);

/* Appends a complete response frame with the given status and echoed stream_id.
 * Errors and guarantees as cn_jay_req_encode. */
CN_API cn_err_t cn_jay_resp_encode(cn_buf_t *out, uint8_t op, uint8_t status, uint32_t stream_id,
                                   const cn_jay_resp_t *resp, int64_t data_len);

/* Appends an error response frame: status, then (message, code). */
CN_API cn_err_t cn_jay_error_encode(cn_buf_t *out, uint8_t status, uint32_t stream_id,
                                    const char *message, const char *code);

#ifdef __cplusplus
}
#endif
#endif
