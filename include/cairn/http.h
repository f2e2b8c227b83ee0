/* cairn http: the HTTP/1.1 listener that carries the S3 face, the blob
 * operations, health and metrics; AWS Signature Version 4 verification;
 * aws-chunked decoding; S3 XML errors and a small XML writer and reader.
 *
 * The server is libmicrohttpd underneath; handlers see only the types here.
 * Request bodies are streamed to the handler piece by piece and never held
 * whole; responses come from memory, from a file (sendfile on plaintext) or
 * from a producer callback.  Authentication is decided by the framework before
 * a handler runs, and every byte of a signed body is verified before the
 * handler is told the body ended.  This module never touches the store or the
 * metadata database itself: handlers do, through their services.
 */
#ifndef CAIRN_HTTP_H
#define CAIRN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * S3 error codes
 * ====================================================================== */

/* X(enum suffix, S3 code, HTTP status, default message) */
#define CN_S3_ERRORS(X) \
    X(NONE, "", 200, "") \
    X(ACCESS_DENIED, "AccessDenied", 403, "Access Denied") \
    X(AUTH_HEADER_MALFORMED, "AuthorizationHeaderMalformed", 400, \
      "The authorization header is malformed") \
    X(AUTH_QUERY_MALFORMED, "AuthorizationQueryParametersError", 400, \
      "The query-string authentication parameters are malformed") \
    X(BAD_DIGEST, "BadDigest", 400, \
      "The Content-MD5 or checksum you specified did not match what we received") \
    X(BUCKET_ALREADY_EXISTS, "BucketAlreadyExists", 409, \
      "The requested bucket name is not available") \
    X(BUCKET_ALREADY_OWNED, "BucketAlreadyOwnedByYou", 409, \
      "Your previous request to create the named bucket succeeded and you already own it") \
    X(BUCKET_NOT_EMPTY, "BucketNotEmpty", 409, "The bucket you tried to delete is not empty") \
    X(CONDITIONAL_CONFLICT, "ConditionalRequestConflict", 409, \
      "A conflicting operation occurred; retry the request") \
    X(ENTITY_TOO_SMALL, "EntityTooSmall", 400, \
      "Your proposed upload is smaller than the minimum allowed object size") \
    X(ENTITY_TOO_LARGE, "EntityTooLarge", 400, \
      "Your proposed upload exceeds the maximum allowed size") \
    X(EXPECTATION_FAILED, "ExpectationFailed", 417, "The Expect header is not supported") \
    X(INCOMPLETE_BODY, "IncompleteBody", 400, \
      "You did not provide the number of bytes specified by the Content-Length HTTP header") \
    X(INTERNAL_ERROR, "InternalError", 500, \
      "We encountered an internal error. Please try again.") \
    X(INVALID_ACCESS_KEY_ID, "InvalidAccessKeyId", 403, \
      "The AWS access key Id you provided does not exist in our records.") \
    X(INVALID_ARGUMENT, "InvalidArgument", 400, "Invalid Argument") \
    X(INVALID_BUCKET_NAME, "InvalidBucketName", 400, "The specified bucket is not valid.") \
    X(INVALID_DIGEST, "InvalidDigest", 400, \
      "The Content-MD5 or checksum you specified is not valid") \
    X(INVALID_PART, "InvalidPart", 400, \
      "One or more of the specified parts could not be found") \
    X(INVALID_PART_ORDER, "InvalidPartOrder", 400, \
      "The list of parts was not in ascending order") \
    X(INVALID_RANGE, "InvalidRange", 416, "The requested range is not satisfiable") \
    X(INVALID_REQUEST, "InvalidRequest", 400, "Invalid Request") \
    X(INVALID_URI, "InvalidURI", 400, "Couldn't parse the specified URI.") \
    X(INVALID_TAG, "InvalidTag", 400, "The tag provided was not a valid tag") \
    X(KEY_TOO_LONG, "KeyTooLongError", 400, "Your key is too long") \
    X(MALFORMED_XML, "MalformedXML", 400, \
      "The XML you provided was not well-formed or did not validate against our published schema") \
    X(MALFORMED_POLICY, "MalformedPolicy", 400, "Policies must be valid JSON") \
    X(METADATA_TOO_LARGE, "MetadataTooLarge", 400, \
      "Your metadata headers exceed the maximum allowed metadata size") \
    X(METHOD_NOT_ALLOWED, "MethodNotAllowed", 405, \
      "The specified method is not allowed against this resource.") \
    X(MISSING_CONTENT_LENGTH, "MissingContentLength", 411, \
      "You must provide the Content-Length HTTP header.") \
    X(MISSING_REQUEST_BODY, "MissingRequestBodyError", 400, "Request Body is empty") \
    X(NO_SUCH_BUCKET, "NoSuchBucket", 404, "The specified bucket does not exist") \
    X(NO_SUCH_BUCKET_POLICY, "NoSuchBucketPolicy", 404, "The bucket policy does not exist") \
    X(NO_SUCH_KEY, "NoSuchKey", 404, "The specified key does not exist.") \
    X(NO_SUCH_UPLOAD, "NoSuchUpload", 404, "The specified multipart upload does not exist.") \
    X(NO_SUCH_VERSION, "NoSuchVersion", 404, "The specified version does not exist.") \
    X(NO_SUCH_CORS, "NoSuchCORSConfiguration", 404, "The CORS configuration does not exist") \
    X(NO_SUCH_TAG_SET, "NoSuchTagSet", 404, "The TagSet does not exist") \
    X(NO_SUCH_PUBLIC_ACCESS_BLOCK, "NoSuchPublicAccessBlockConfiguration", 404, \
      "The public access block configuration was not found") \
    X(NOT_IMPLEMENTED, "NotImplemented", 501, \
      "A header or operation you provided implies functionality that this server does not offer") \
    X(NOT_MODIFIED, "NotModified", 304, "Not Modified") \
    X(PRECONDITION_FAILED, "PreconditionFailed", 412, \
      "At least one of the preconditions you specified did not hold") \
    X(REQUEST_TIMEOUT, "RequestTimeout", 400, \
      "Your socket connection to the server was not read from or written to within the timeout period.") \
    X(REQUEST_TIME_TOO_SKEWED, "RequestTimeTooSkewed", 403, \
      "The difference between the request time and the server's time is too large.") \
    X(SIGNATURE_DOES_NOT_MATCH, "SignatureDoesNotMatch", 403, \
      "The request signature we calculated does not match the signature you provided. " \
      "Check your key and signing method.") \
    X(SERVICE_UNAVAILABLE, "ServiceUnavailable", 503, "Service is unable to handle request.") \
    X(SLOW_DOWN, "SlowDown", 503, "Please reduce your request rate.") \
    X(UNRESOLVABLE_GRANT_BY_EMAIL, "UnresolvableGrantByEmailAddress", 400, \
      "The email address you provided does not match any account on record.") \
    X(CONTENT_SHA256_MISMATCH, "XAmzContentSHA256Mismatch", 400, \
      "The provided 'x-amz-content-sha256' header does not match what was computed.") \
    X(INVALID_CHUNK_SIZE, "InvalidChunkSizeError", 403, \
      "Only the last chunk is allowed to have a size less than 8192 bytes") \
    X(MALFORMED_ACL, "MalformedACLError", 400, \
      "The XML you provided was not well-formed or did not validate against our published schema") \
    X(INVALID_BUCKET_STATE, "InvalidBucketState", 409, \
      "The request is not valid with the current state of the bucket.") \
    X(INVALID_OBJECT_STATE, "InvalidObjectState", 403, \
      "The operation is not valid for the current state of the object.") \
    X(EXPIRED_REQUEST, "AccessDenied", 403, "Request has expired") \
    X(REQUEST_NOT_YET_VALID, "AccessDenied", 403, "Request is not valid yet") \
    X(TOO_MANY_BUCKETS, "TooManyBuckets", 400, \
      "You have attempted to create more buckets than allowed") \
    X(INVALID_PART_NUMBER, "InvalidPartNumber", 416, "The requested partnumber is not satisfiable") \
    X(UNEXPECTED_CONTENT, "UnexpectedContent", 400, \
      "This request does not support content") \
    X(MISSING_SECURITY_HEADER, "MissingSecurityHeader", 400, \
      "Your request was missing a required header") \
    X(INVALID_POLICY_DOCUMENT, "InvalidPolicyDocument", 400, \
      "The content of the form does not meet the conditions specified in the policy document") \
    X(MAX_POST_PRE_DATA, "MaxPostPreDataLengthExceededError", 400, \
      "Your POST request fields preceding the upload file were too large") \
    X(MALFORMED_POST, "MalformedPOSTRequest", 400, \
      "The body of your POST request is not well-formed multipart/form-data") \
    X(POST_FILE_COUNT, "IncorrectNumberOfFilesInPostRequest", 400, \
      "POST requires exactly one file upload per request") \
    X(ACCESS_FORBIDDEN, "AccessForbidden", 403, \
      "CORSResponse: This CORS request is not allowed.") \
    X(BAD_REQUEST, "BadRequest", 400, "Bad Request")

typedef enum cn_s3_err {
#define CN__S3_ENUM(e, code, status, msg) CN_S3E_##e,
    CN_S3_ERRORS(CN__S3_ENUM)
#undef CN__S3_ENUM
    CN_S3E_COUNT
} cn_s3_err_t;

/* The S3 code string ("NoSuchKey"), its HTTP status, and its default message.
 * An out-of-range value answers as InternalError.  Static strings; any thread. */
CN_API const char *cn_s3_err_code(cn_s3_err_t e);
CN_API int cn_s3_err_status(cn_s3_err_t e);
CN_API const char *cn_s3_err_message(cn_s3_err_t e);
/* Maps a cairn error value onto the S3 error that fits it best (NOT_FOUND →
 * NoSuchKey, DENIED → AccessDenied, DIGEST_MISMATCH → BadDigest, TOO_LARGE →
 * EntityTooLarge, RANGE → InvalidRange, PRECONDITION → PreconditionFailed,
 * anything unknown → InternalError).  Handlers refine NoSuchKey/NoSuchBucket. */
CN_API cn_s3_err_t cn_s3_err_from_cn(cn_err_t err);

/* Appends the S3 XML error document to out:
 *   <?xml ...?><Error><Code/><Message/><Resource/><RequestId/><HostId/></Error>
 * message NULL → the default message; resource / request_id / host_id may be
 * NULL (element omitted).  -ENOMEM only. */
CN_API cn_err_t cn_s3_error_xml(cn_buf_t *out, cn_s3_err_t e, const char *message,
                                const char *resource, const char *request_id,
                                const char *host_id);

/* ======================================================================
 * XML writer and reader
 * ====================================================================== */

#define CN_XML_MAX_DEPTH 32
#define CN_S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* An escaping writer into a caller-owned cn_buf_t.  Errors are sticky: write
 * a whole document, then check cn_xml_finish() once. */
typedef struct cn_xml_writer {
    cn_buf_t *out;
    const char *stack[CN_XML_MAX_DEPTH];   /* element names; must outlive the writer */
    int depth;
    cn_err_t err;
} cn_xml_writer_t;

/* Starts a document: writes the XML declaration. */
CN_API void cn_xml_begin(cn_xml_writer_t *w, cn_buf_t *out);
/* <name> or <name xmlns="ns"> (ns NULL for none).  name must be a literal or
 * otherwise outlive the element. */
CN_API void cn_xml_open(cn_xml_writer_t *w, const char *name, const char *xmlns);
CN_API void cn_xml_close(cn_xml_writer_t *w);                    /* </name> */
/* Escaped text content (& < > " ' and control characters as references). */
CN_API void cn_xml_text(cn_xml_writer_t *w, const char *s, size_t n);
/* <name>text</name>; text NULL writes <name></name>. */
CN_API void cn_xml_elem(cn_xml_writer_t *w, const char *name, const char *text);
CN_API void cn_xml_elem_n(cn_xml_writer_t *w, const char *name, const char *text, size_t n);
CN_API void cn_xml_elem_u64(cn_xml_writer_t *w, const char *name, uint64_t v);
CN_API void cn_xml_elem_bool(cn_xml_writer_t *w, const char *name, bool v);
/* Returns the first error (-ENOMEM, CN_E_LIMIT for depth, CN_E_INVALID for
 * unbalanced elements); 0 when the document is complete. */
CN_API cn_err_t cn_xml_finish(cn_xml_writer_t *w);
/* Appends s escaped for XML text or attribute values; each byte of s that
 * does not start a well-formed UTF-8 sequence is written as U+FFFD, so the
 * output is always well-formed whatever s holds. */
CN_API cn_err_t cn_xml_escape(cn_buf_t *out, const char *s, size_t n);

/* A bounded XML document parsed with expat into a small tree, for request
 * bodies (CompleteMultipartUpload, Delete, ...).  Namespaces are stripped, so
 * a body is accepted with or without xmlns.  DOCTYPE, entity declarations and
 * anything but elements, text and comments are refused.  Fed incrementally. */
typedef struct cn_xml_doc cn_xml_doc_t;

/* max_bytes bounds the whole body, max_nodes the element count.  -ENOMEM. */
CN_API cn_err_t cn_xml_doc_new(size_t max_bytes, size_t max_nodes, cn_xml_doc_t **out);
/* Feeds the next piece.  CN_E_INVALID on malformed XML (→ MalformedXML),
 * CN_E_TOO_LARGE past max_bytes, CN_E_LIMIT past max_nodes. */
CN_API cn_err_t cn_xml_doc_feed(cn_xml_doc_t *d, const void *p, size_t n);
/* Ends the document; same errors.  After success the tree may be read. */
CN_API cn_err_t cn_xml_doc_finish(cn_xml_doc_t *d);
CN_API void cn_xml_doc_free(cn_xml_doc_t *d);
/* One-shot parse of a complete buffer. */
CN_API cn_err_t cn_xml_parse(const void *p, size_t n, size_t max_nodes, cn_xml_doc_t **out);

/* Nodes are indices; -1 means none.  Strings belong to the document. */
CN_API int cn_xml_root(const cn_xml_doc_t *d);
CN_API const char *cn_xml_name(const cn_xml_doc_t *d, int node);
/* The node's text content (concatenated character data, not trimmed). */
CN_API const char *cn_xml_node_text(const cn_xml_doc_t *d, int node, size_t *len);
/* First child named name (NULL: any), and the next sibling named name. */
CN_API int cn_xml_child(const cn_xml_doc_t *d, int node, const char *name);
CN_API int cn_xml_next(const cn_xml_doc_t *d, int node, const char *name);
/* Text of the first child named name, or NULL when there is none. */
CN_API const char *cn_xml_child_text(const cn_xml_doc_t *d, int node, const char *name,
                                     size_t *len);

/* ======================================================================
 * Checksums that S3 clients send (x-amz-checksum-*)
 * ====================================================================== */

typedef enum cn_http_cksum_alg {
    CN_CKSUM_NONE = 0,
    CN_CKSUM_CRC32,
    CN_CKSUM_CRC32C,
    CN_CKSUM_CRC64NVME,
    CN_CKSUM_SHA1,
    CN_CKSUM_SHA256,
} cn_http_cksum_alg_t;

#define CN_CKSUM_MAX_LEN 32
#define CN_CKSUM_B64_LEN 48     /* base64 of the largest value, with NUL */

/* A streaming checksum of one algorithm.  init may allocate (SHA); final
 * releases; free accepts an abandoned or zeroed value. */
typedef struct cn_http_cksum {
    cn_http_cksum_alg_t alg;
    uint64_t crc;
    void *md;                /* OpenSSL EVP context for the SHA algorithms */
} cn_http_cksum_t;

/* "crc32" / "CRC32" / "x-amz-checksum-crc32" → the algorithm; NONE if unknown. */
CN_API cn_http_cksum_alg_t cn_http_cksum_parse(const char *name);
/* The header name "x-amz-checksum-crc32", and the S3 name "CRC32". */
CN_API const char *cn_http_cksum_header(cn_http_cksum_alg_t alg);
CN_API const char *cn_http_cksum_name(cn_http_cksum_alg_t alg);
CN_API size_t cn_http_cksum_len(cn_http_cksum_alg_t alg);     /* raw bytes */
CN_API cn_err_t cn_http_cksum_init(cn_http_cksum_t *c, cn_http_cksum_alg_t alg);
CN_API void cn_http_cksum_update(cn_http_cksum_t *c, const void *p, size_t n);
/* Writes the raw value (big-endian for CRCs, as S3 encodes them) and its
 * base64 form; returns the raw length.  Releases c. */
CN_API size_t cn_http_cksum_final(cn_http_cksum_t *c, uint8_t raw[CN_CKSUM_MAX_LEN],
                                  char b64[CN_CKSUM_B64_LEN]);
CN_API void cn_http_cksum_free(cn_http_cksum_t *c);
/* CRC-64/NVME (the polynomial S3 calls CRC64NVME); incremental from 0. */
CN_API uint64_t cn_crc64nvme(uint64_t crc, const void *p, size_t n);

/* ======================================================================
 * AWS Signature Version 4 (pure functions; no sockets)
 * ====================================================================== */

/* A header or query pair as seen on the wire (not NUL-terminated). */
typedef struct cn_http_kv {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} cn_http_kv_t;

/* Looks up the secret for access_key (the token id).  Writes up to cap bytes
 * into secret and its length into *len.  Returns 0, CN_E_NOT_FOUND for an
 * unknown or revoked key, or another error (→ InternalError).  Called on the
 * server's threads; must be thread-safe. */
typedef int (*cn_http_secret_lookup_fn)(void *ctx, const char *access_key, uint8_t *secret,
                                        size_t cap, size_t *len);

typedef enum cn_sigv4_payload {
    CN_SIGV4_PAYLOAD_EMPTY = 0,        /* no body: hash of "" (checked by framework) */
    CN_SIGV4_PAYLOAD_HASH,             /* x-amz-content-sha256: <hex>, checked at end */
    CN_SIGV4_PAYLOAD_UNSIGNED,         /* UNSIGNED-PAYLOAD */
    CN_SIGV4_PAYLOAD_DEFERRED,         /* no x-amz-content-sha256: signature over body hash */
    CN_SIGV4_PAYLOAD_STREAMING,        /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    CN_SIGV4_PAYLOAD_STREAMING_TRAILER,/* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
} cn_sigv4_payload_t;

typedef enum cn_http_auth_kind {
    CN_HTTP_AUTH_ANONYMOUS = 0,        /* no credential presented */
    CN_HTTP_AUTH_SIGV4_HEADER,
    CN_HTTP_AUTH_SIGV4_QUERY,          /* presigned URL */
    CN_HTTP_AUTH_BEARER,               /* Authorization: Bearer <id>:<secret> */
} cn_http_auth_kind_t;

#define CN_SIGV4_MAX_KEY 128
#define CN_SIGV4_MAX_REGION 64
#define CN_SIGV4_MAX_SCOPE 256
#define CN_SIGV4_MAX_SKEW_MS (15LL * 60 * 1000)
#define CN_SIGV4_MAX_EXPIRES 604800     /* 7 days, as S3 */
#define CN_SIGV4_MAX_SECRET 256

typedef struct cn_sigv4_input {
    const char *method;                /* "GET" */
    const char *path;                  /* raw request path as received (before '?') */
    size_t path_len;
    const char *query;                 /* raw query string (after '?'), may be NULL */
    size_t query_len;
    const cn_http_kv_t *headers;       /* in wire order; duplicates allowed */
    size_t n_headers;
    bool has_body;                     /* a request body follows (length > 0 or chunked) */
    int64_t now_ms;                    /* the server's clock, Unix ms */
    const char *service;               /* "s3" */
    const char *region;                /* NULL: any region, else the one required */
    int64_t max_skew_ms;               /* 0: CN_SIGV4_MAX_SKEW_MS */
} cn_sigv4_input_t;

/* The outcome of verifying a request's seed signature, plus what the body
 * verifier needs to go on (signing key, scope, previous signature). */
typedef struct cn_sigv4 {
    cn_http_auth_kind_t kind;
    cn_sigv4_payload_t payload;
    char access_key[CN_SIGV4_MAX_KEY];
    char region[CN_SIGV4_MAX_REGION];
    char amz_date[17];                 /* 20130524T000000Z */
    char scope[CN_SIGV4_MAX_SCOPE];    /* 20130524/us-east-1/s3/aws4_request */
    uint8_t signing_key[32];
    char signature[65];                /* the seed signature, lowercase hex */
    uint8_t payload_hash[32];          /* for CN_SIGV4_PAYLOAD_HASH */
    int64_t request_ms;                /* time from x-amz-date */
    int64_t expires_ms;                /* presigned: when it stops being valid */
    cn_s3_err_t s3err;                 /* why verification failed */
    char detail[160];                  /* a human-readable reason (no secrets) */
    cn_buf_t deferred;                 /* DEFERRED: canonical request minus its last line */
} cn_sigv4_t;

/* Verifies the SigV4 credential of a request (header form or presigned query
 * form).  Returns 0 with out filled when the seed signature holds, CN_E_AUTH
 * with out->s3err/detail set when it does not (SignatureDoesNotMatch,
 * InvalidAccessKeyId, AuthorizationHeaderMalformed, RequestTimeTooSkewed,
 * AccessDenied for an expired presign, ...), CN_E_NOT_FOUND when the request
 * carries no SigV4 credential at all, or -ENOMEM.  For DEFERRED payloads the
 * signature is checked by cn_sigv4_finish_deferred() once the body hash is
 * known.  The caller frees out with cn_sigv4_clear().  The secret never leaves
 * this function except as the derived signing key in out. */
CN_API cn_err_t cn_sigv4_verify(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                                void *lookup_ctx, cn_sigv4_t *out);
/* Completes a DEFERRED verification with the SHA-256 of the body.  0 or
 * CN_E_AUTH (s3err = SignatureDoesNotMatch). */
CN_API cn_err_t cn_sigv4_finish_deferred(cn_sigv4_t *v, const uint8_t body_sha256[32]);
CN_API void cn_sigv4_clear(cn_sigv4_t *v);

/* Building blocks, exposed for tests and for clients that sign. */
/* AWS UriEncode: unreserved A-Za-z0-9-._~ kept, everything else %XX
 * (uppercase); '/' kept when keep_slash. */
CN_API cn_err_t cn_sigv4_uri_encode(cn_buf_t *out, const char *s, size_t n, bool keep_slash);
/* Percent-decodes s into out (no '+' → space: S3 clients encode spaces as
 * %20).  CN_E_INVALID on a bad escape or an encoded NUL. */
CN_API cn_err_t cn_http_pct_decode(cn_buf_t *out, const char *s, size_t n);
/* Appends the canonical request (without a trailing newline) for the given
 * signed header list (";"-separated, lowercase), with payload_hash as its last
 * line, skipping X-Amz-Signature from the query.  CN_E_INVALID when a signed
 * header is missing or the path/query is malformed. */
CN_API cn_err_t cn_sigv4_canonical_request(cn_buf_t *out, const char *method,
                                           const char *path, size_t path_len,
                                           const char *query, size_t query_len,
                                           const cn_http_kv_t *headers, size_t n_headers,
                                           const char *signed_headers, size_t signed_len,
                                           const char *payload_hash);
CN_API void cn_sigv4_signing_key(const uint8_t *secret, size_t secret_len, const char *date8,
                                 const char *region, const char *service, uint8_t out[32]);
/* hex(HMAC(signing_key, "AWS4-HMAC-SHA256\n" date "\n" scope "\n" hex(sha256(canon)))) */
CN_API void cn_sigv4_sign(const uint8_t key[32], const char *amz_date, const char *scope,
                          const char *canonical, size_t canonical_len, char sig_hex[65]);
/* Parses "20130524T000000Z" into Unix ms; CN_E_INVALID otherwise. */
CN_API cn_err_t cn_sigv4_parse_date(const char *s, size_t n, int64_t *out_ms);

/* ---- aws-chunked body decoding ----------------------------------------
 * Incremental: feed it the raw body in any slicing; it hands out the decoded
 * payload as slices of the input (no copies, no allocation beyond the fixed
 * state and one SHA-256 context).  Chunk signatures chain from the seed
 * signature; trailers are collected into a bounded buffer. */

#define CN_AWSCHUNK_LINE_MAX 4096
#define CN_AWSCHUNK_TRAILER_MAX 4096
#define CN_AWSCHUNK_MAX_TRAILERS 8

typedef int (*cn_awschunk_emit_fn)(void *ctx, const uint8_t *p, size_t n);

typedef struct cn_awschunk {
    int state;
    bool signed_chunks;                /* chunk-signature= present and checked */
    bool trailer;                      /* trailers follow the final chunk */
    const cn_sigv4_t *sig;             /* signing key, date, scope (borrowed) */
    char prev_sig[65];
    char chunk_sig[65];
    char trailer_sig[65];
    bool trailer_sig_seen;
    void *chunk_sha;                   /* SHA-256 of the current chunk (signed only) */
    uint64_t chunk_left;
    uint64_t decoded;                  /* payload bytes so far */
    uint64_t max_decoded;              /* refuse more than this (UINT64_MAX: none) */
    size_t line_len;
    char line[CN_AWSCHUNK_LINE_MAX];
    size_t trailer_len;
    char trailers[CN_AWSCHUNK_TRAILER_MAX];  /* "name:value\n" lines, as received */
    size_t n_trailers;
    cn_http_kv_t trailer_kv[CN_AWSCHUNK_MAX_TRAILERS];
    cn_s3_err_t s3err;
    bool done;
} cn_awschunk_t;

/* sig may be NULL for the unsigned trailer form.  max_decoded caps the
 * payload (x-amz-decoded-content-length or a policy limit). */
CN_API cn_err_t cn_awschunk_init(cn_awschunk_t *d, const cn_sigv4_t *sig, bool signed_chunks,
                                 bool trailer, uint64_t max_decoded);
/* Consumes all n bytes, calling emit for each decoded payload span (emit's
 * non-zero return stops decoding and is returned).  0, or CN_E_AUTH
 * (SignatureDoesNotMatch), CN_E_PROTOCOL (malformed framing → IncompleteBody /
 * InvalidRequest in d->s3err), CN_E_TOO_LARGE.  Bytes after the end are an error. */
CN_API cn_err_t cn_awschunk_feed(cn_awschunk_t *d, const uint8_t *p, size_t n,
                                 cn_awschunk_emit_fn emit, void *ctx);
/* At end of the raw body: CN_E_PROTOCOL unless the final chunk (and the
 * trailers, with their signature in the signed form) arrived. */
CN_API cn_err_t cn_awschunk_end(cn_awschunk_t *d);
/* A trailer's value by name (case-insensitive), NUL-terminated, or NULL. */
CN_API const char *cn_awschunk_trailer(const cn_awschunk_t *d, const char *name);
CN_API void cn_awschunk_free(cn_awschunk_t *d);

/* ======================================================================
 * The server
 * ====================================================================== */

typedef struct cn_http_server cn_http_server_t;
typedef struct cn_http_req cn_http_req_t;

enum {
    CN_HTTP_GET = 1u << 0,
    CN_HTTP_HEAD = 1u << 1,
    CN_HTTP_PUT = 1u << 2,
    CN_HTTP_POST = 1u << 3,
    CN_HTTP_DELETE = 1u << 4,
    CN_HTTP_OPTIONS = 1u << 5,
    CN_HTTP_PATCH = 1u << 6,
    CN_HTTP_ANY = 0x7fu,
};

/* Route flags. */
enum {
    CN_HTTP_ROUTE_EXACT = 1u << 0,          /* path must equal prefix, not start with it */
    /* The handler sees failed credentials itself (req auth error set) instead
     * of the framework answering 403 for it. */
    CN_HTTP_ROUTE_OWN_AUTH_ERRORS = 1u << 1,
};

/* What a handler returns from on_body. */
#define CN_HTTP_PAUSE 1    /* data consumed; suspend until cn_http_req_resume() */

/* A route's callbacks.  All run on a server thread, one request at a time per
 * connection; they may block (a pool thread is busy meanwhile).
 *
 * on_request: headers are in and the credential is decided.  Either respond
 *   now (any cn_http_respond_*; the body, if any, is then discarded) or return
 *   0 without responding to receive the body.  A negative return answers
 *   InternalError.
 * on_body: the next piece of the decoded payload (aws-chunked framing removed).
 *   Return 0, CN_HTTP_PAUSE, or a negative value to fail (the framework then
 *   discards the rest and calls on_end with cn_http_req_body_error() set).
 *   Pieces may arrive before their chunk signature or the body hash has been
 *   checked: commit nothing before on_end.
 * on_end: the body has ended.  cn_http_req_body_error(req) is NONE when every
 *   byte was verified (payload hash, chunk signatures, trailer checksum,
 *   decoded length); otherwise the handler must discard what it staged.  It
 *   must respond; if it does not, the framework answers the body error (or
 *   InternalError).  Not called when on_request responded.
 * on_cleanup: always called once per request that reached on_request, after
 *   the response is sent or the connection dropped.  Free per-request state.
 * error: formats framework-generated errors for this route (S3 XML when NULL);
 *   it must respond.  code is the S3 code string, status its HTTP status. */
typedef struct cn_http_route {
    const char *name;                   /* operation family, for metrics ("s3") */
    unsigned methods;                   /* CN_HTTP_* mask */
    const char *prefix;                 /* on the decoded path */
    unsigned flags;
    bool (*match)(const cn_http_req_t *req, void *ctx);     /* optional, after prefix */
    int (*on_request)(cn_http_req_t *req, void *ctx);
    int (*on_body)(cn_http_req_t *req, const uint8_t *p, size_t n, void *ctx);
    void (*on_end)(cn_http_req_t *req, void *ctx);
    void (*on_cleanup)(cn_http_req_t *req, void *ctx);
    void (*error)(cn_http_req_t *req, cn_s3_err_t e, const char *message, void *ctx);
    void *ctx;
    uint64_t max_body;                  /* decoded payload cap; 0: server default */
} cn_http_route_t;

typedef struct cn_http_config {
    const char *listen;                 /* "127.0.0.1:0", "[::1]:9000", ":9000" */
    const char *log_name;               /* protocol word in the log line; "http" */
    unsigned threads;                   /* MHD pool size; 0: 8 */
    unsigned max_connections;           /* 0: 1024 */
    unsigned max_per_ip;                /* 0: unlimited */
    unsigned idle_timeout_s;            /* inactivity timeout; 0: 60 */
    size_t conn_memory;                 /* per-connection buffer; 0: 32 KiB */
    uint64_t max_body;                  /* default decoded body cap; 0: 5 GiB */
    const char *tls_cert_file;          /* PEM; both set → HTTPS */
    const char *tls_key_file;
    bool trust_proxy_headers;           /* JAY_TRUST_PROXY_HEADERS: client IP from X-Forwarded-For */
    const char *region;                 /* required SigV4 region; NULL: any */
    int64_t max_skew_ms;                /* 0: 15 minutes */
    cn_http_secret_lookup_fn sigv4_lookup;   /* NULL: SigV4 credentials are refused */
    void *sigv4_ctx;
    /* Bearer tokens "id:secret": 0 when valid (the framework compares nothing
     * itself), CN_E_AUTH / CN_E_NOT_FOUND when not. */
    int (*bearer_check)(void *ctx, const char *token_id, const char *secret);
    void *bearer_ctx;
    int64_t (*clock_ms)(void *ctx);     /* NULL: cn_wall_ms(); tests pin time */
    void *clock_ctx;
} cn_http_config_t;

/* Fills c with the defaults above (listen "127.0.0.1:0"). */
CN_API void cn_http_config_default(cn_http_config_t *c);

/* Creates a server (not yet listening).  The config's strings are copied.
 * Registers the built-in routes GET /_cairn/health and GET /_cairn/metrics.
 * -ENOMEM, CN_E_INVALID (bad listen address). */
CN_API cn_err_t cn_http_server_new(const cn_http_config_t *cfg, cn_http_server_t **out);
/* Adds a route (copied; ctx borrowed).  Routes are tried in registration
 * order after the built-ins; the first match wins.  Only before start.
 * CN_E_LIMIT past 64 routes. */
CN_API cn_err_t cn_http_server_route(cn_http_server_t *s, const cn_http_route_t *r);
/* Adds text to /_cairn/metrics: fn appends Prometheus lines to out. */
CN_API cn_err_t cn_http_server_metrics_source(cn_http_server_t *s,
                                              void (*fn)(cn_buf_t *out, void *ctx), void *ctx);
/* Binds, starts the threads, and logs "listening <log_name> on <host>:<port>".
 * -errno from bind, CN_E_INVALID for an unreadable TLS pair. */
CN_API cn_err_t cn_http_server_start(cn_http_server_t *s);
/* The bound port (after start). */
CN_API int cn_http_server_port(const cn_http_server_t *s);
/* Stops accepting, closes connections, joins threads.  Idempotent. */
CN_API void cn_http_server_stop(cn_http_server_t *s);
/* Stops if needed and frees.  Accepts NULL. */
CN_API void cn_http_server_free(cn_http_server_t *s);

/* ---- request accessors (valid until on_cleanup returns) ----------------- */
CN_API const char *cn_http_req_method(const cn_http_req_t *r);      /* "GET" */
CN_API unsigned cn_http_req_method_bit(const cn_http_req_t *r);     /* CN_HTTP_GET ... */
/* The decoded path ("/bucket/key with space"), NUL-terminated; *len when
 * non-NULL (a key may not contain NUL: %00 is refused as InvalidURI). */
CN_API const char *cn_http_req_path(const cn_http_req_t *r, size_t *len);
CN_API const char *cn_http_req_raw_path(const cn_http_req_t *r);   /* as received */
CN_API const char *cn_http_req_raw_query(const cn_http_req_t *r);  /* "" when none */
/* Decoded query parameter value ("" for "?acl"); NULL when absent. */
CN_API const char *cn_http_req_query(const cn_http_req_t *r, const char *name);
CN_API bool cn_http_req_has_query(const cn_http_req_t *r, const char *name);
CN_API size_t cn_http_req_query_count(const cn_http_req_t *r);
/* The i-th decoded parameter, in wire order. */
CN_API void cn_http_req_query_at(const cn_http_req_t *r, size_t i, const char **name,
                                 const char **value);
/* A request header by name, case-insensitive; the first when repeated. */
CN_API const char *cn_http_req_header(const cn_http_req_t *r, const char *name);
/* Iterates headers in wire order: fn returns false to stop. */
CN_API void cn_http_req_headers(const cn_http_req_t *r,
                                bool (*fn)(void *ctx, const char *name, const char *value),
                                void *ctx);
/* The TCP peer ("127.0.0.1") and the client IP (the first X-Forwarded-For
 * hop when the server trusts proxy headers, else the peer). */
CN_API const char *cn_http_req_peer(const cn_http_req_t *r);
CN_API const char *cn_http_req_client_ip(const cn_http_req_t *r);
CN_API const char *cn_http_req_id(const cn_http_req_t *r);          /* x-amz-request-id */
CN_API const char *cn_http_req_host_id(const cn_http_req_t *r);     /* x-amz-id-2 */
/* Content-Length of the wire body, or -1 when chunked/absent. */
CN_API int64_t cn_http_req_content_length(const cn_http_req_t *r);
/* The payload length the client declared: x-amz-decoded-content-length for
 * aws-chunked bodies, else Content-Length; -1 when unknown. */
CN_API int64_t cn_http_req_payload_length(const cn_http_req_t *r);
/* Payload bytes delivered so far. */
CN_API uint64_t cn_http_req_body_received(const cn_http_req_t *r);
/* Content-Encoding with "aws-chunked" removed (what to store); NULL if none. */
CN_API const char *cn_http_req_content_encoding(const cn_http_req_t *r);
CN_API bool cn_http_req_is_tls(const cn_http_req_t *r);

/* The credential: kind ANONYMOUS when none was presented.  access_key is the
 * token id.  auth_error is NONE unless verification failed (only visible to
 * CN_HTTP_ROUTE_OWN_AUTH_ERRORS routes; others never run). */
CN_API cn_http_auth_kind_t cn_http_req_auth(const cn_http_req_t *r);
CN_API const char *cn_http_req_access_key(const cn_http_req_t *r);
CN_API cn_s3_err_t cn_http_req_auth_error(const cn_http_req_t *r);
CN_API cn_sigv4_payload_t cn_http_req_payload_mode(const cn_http_req_t *r);

/* After on_end: NONE, or why the body failed verification or decoding. */
CN_API cn_s3_err_t cn_http_req_body_error(const cn_http_req_t *r);
/* The x-amz-checksum-* value the client sent (header or trailer), checked by
 * the framework against the bytes received: alg NONE when none was sent.
 * b64 is the verified value, valid after on_end. */
CN_API cn_http_cksum_alg_t cn_http_req_checksum(const cn_http_req_t *r, const char **b64);

/* Per-request handler state. */
CN_API void cn_http_req_set_data(cn_http_req_t *r, void *data);
CN_API void *cn_http_req_data(const cn_http_req_t *r);
/* Resumes a request whose on_body returned CN_HTTP_PAUSE.  Any thread. */
CN_API void cn_http_req_resume(cn_http_req_t *r);

/* Largest body answered from memory, with the headers in one sendmsg,
 * rather than by sendfile: past a few pages the copy costs more than the
 * second system call saves.  cn_http_respond_fd reads bodies up to this. */
#define CN_HTTP_INLINE_BODY_MAX (16u * 1024)

/* ---- responses: exactly one respond call per request ------------------- */
/* Adds a response header (copied).  x-amz-request-id, x-amz-id-2 and Date are
 * added by the framework.  -ENOMEM, CN_E_LIMIT past 64 headers. */
CN_API cn_err_t cn_http_resp_header(cn_http_req_t *r, const char *name, const char *value);
/* Body from memory (copied). */
CN_API cn_err_t cn_http_respond(cn_http_req_t *r, int status, const char *content_type,
                                const void *body, size_t len);
CN_API cn_err_t cn_http_respond_buf(cn_http_req_t *r, int status, const char *content_type,
                                    const cn_buf_t *body);
/* Headers only, with a Content-Length of len (HEAD, or an empty 204/304). */
CN_API cn_err_t cn_http_respond_empty(cn_http_req_t *r, int status, uint64_t len);
/* len bytes of fd from off (sendfile on plaintext).  Takes fd: it is closed
 * when the response is done, on success or failure. */
CN_API cn_err_t cn_http_respond_fd(cn_http_req_t *r, int status, const char *content_type,
                                   int fd, uint64_t off, uint64_t len);
/* A producer: read(ctx, pos, buf, max) returns bytes written (> 0), 0 at the
 * end, or a negative error (the connection is then closed).  len UINT64_MAX
 * sends chunked.  done(ctx) is called once when the response is released. */
#define CN_HTTP_LEN_UNKNOWN UINT64_MAX
CN_API cn_err_t cn_http_respond_stream(cn_http_req_t *r, int status, const char *content_type,
                                       uint64_t len,
                                       ssize_t (*read)(void *ctx, uint64_t pos, char *buf,
                                                       size_t max),
                                       void (*done)(void *ctx), void *ctx);
/* A producer with nothing to send yet (a live feed) calls cn_http_req_suspend
 * and returns CN_HTTP_STREAM_WAIT: the connection is then not polled until
 * cn_http_req_resume (any thread, strictly after the suspend), and read is
 * called again.  Suspend only from inside a producer's read. */
#define CN_HTTP_STREAM_WAIT ((ssize_t)CN_E_AGAIN)
CN_API void cn_http_req_suspend(cn_http_req_t *r);
/* An S3 XML error for e (message NULL: the default), Resource = the path. */
CN_API cn_err_t cn_http_respond_s3_error(cn_http_req_t *r, cn_s3_err_t e, const char *message);
/* True once a respond call succeeded. */
CN_API bool cn_http_req_responded(const cn_http_req_t *r);

#ifdef __cplusplus
}
#endif
#endif
