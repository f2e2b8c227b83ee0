/* cairn client: libcairn's client of Jay native v1 (objects).
 *
 * A cn_client_t is a pool of authenticated connections to one endpoint.  Every
 * operation of the protocol is one function: it borrows a connection, sends
 * one request, reads its response, and gives the connection back.  Any number
 * of threads may call operations on one cn_client_t at once; each call uses
 * its own connection (v1 carries one request at a time per connection).
 *
 * Pool contract (shared/spec/jay-native-v1.txt, "Connection lifecycle"): an
 * idle connection is discarded after 45 s, before the server's 60 s idle
 * timeout would close it; a pooled connection the server has already closed
 * (a restart, a shorter server idle timeout) is noticed before reuse and
 * replaced, whatever the request; a request that fails on a pooled connection
 * before any response byte was read is retried once on a new connection —
 * never a request with a body, whose source cannot be rewound.
 *
 * Errors: each call returns 0 or a cn_err_t.  A server answer maps to
 * CN_E_NOT_FOUND (NoSuchBucket/NoSuchKey), CN_E_NO_UPLOAD, CN_E_DENIED,
 * CN_E_EXISTS, CN_E_NOT_EMPTY, CN_E_TOO_LARGE, CN_E_INVALID, CN_E_RANGE,
 * CN_E_RATE_LIMITED, CN_E_UNSUPPORTED (UnknownOp) or -EIO (InternalError), with
 * the wire (status, code, message) in the cn_jay_error_t.  A handshake refusal
 * maps to CN_E_AUTH / CN_E_UNSUPPORTED / CN_E_BUSY / CN_E_PROTOCOL with
 * hs_status set.  Transport failures are -errno, CN_E_CLOSED, CN_E_TIMEOUT or
 * CN_E_PROTOCOL with status 0.  The error struct may be NULL.
 *
 * Results are owned by the caller and released with the matching _clear().
 * This module never logs a credential and never exits the process.
 */
#ifndef CAIRN_CLIENT_H
#define CAIRN_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/jay.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CN_CLIENT_DEFAULT_ENDPOINT "127.0.0.1:7446"
#define CN_CLIENT_IDLE_MS 45000 /* pooled-idle discard (contract) */

typedef struct cn_jay_error {
    uint8_t status;    /* CN_JAY_ST_* of a server error answer; 0 when there was none */
    uint8_t hs_status; /* CN_JAY_HS_* of a handshake refusal; 0 when there was none */
    char code[64];     /* the server's code ("NoSuchKey"); "" when none */
    char message[512]; /* the server's message, or what the client saw */
} cn_jay_error_t;

typedef struct cn_client_cfg {
    const char *endpoint;    /* "host:port", "[v6]:port" or "host"; NULL: 127.0.0.1:7446 */
    const char *token;       /* "token_id:secret" (required) */
    bool tls;                /* wrap every connection in TLS (>= 1.2) */
    const char *tls_ca_file; /* PEM bundle to trust; NULL: the system's */
    bool tls_insecure;       /* skip certificate verification (tests only) */
    int connect_timeout_ms;  /* 0: 10000 */
    int io_timeout_ms;       /* per read/write inactivity; 0: 30000 */
    int complete_timeout_ms; /* the wait for CompleteMultipartUpload's answer, which
                                   * comes once the server has hashed every part; 0: 600000 */
    int idle_ms;             /* pooled-idle discard; 0: 45000 */
    unsigned max_idle;       /* idle connections kept; 0: 16 */
} cn_client_cfg_t;

typedef struct cn_client cn_client_t;

/* Creates a pool; no connection is made until the first call.  Copies what it
 * needs from cfg.  Errors: CN_E_INVALID (bad endpoint, no token), -ENOMEM,
 * CN_E_PROTOCOL for a TLS set-up failure (message in err). */
CN_API cn_err_t cn_client_new(const cn_client_cfg_t *cfg, cn_client_t **out, cn_jay_error_t *err);
/* Closes every pooled connection and frees the pool.  Accepts NULL.  No call
 * may be running on it. */
CN_API void cn_client_free(cn_client_t *c);

/* Splits an endpoint into host (NUL-terminated, brackets removed) and port
 * (default 7446).  CN_E_INVALID if malformed or host does not fit. */
CN_API cn_err_t cn_client_parse_endpoint(const char *endpoint, char *host, size_t host_cap,
                                         uint16_t *port);

/* Counters for tests and diagnostics (thread-safe snapshot). */
typedef struct cn_client_stats {
    uint64_t dials;         /* connections opened (handshake attempted) */
    uint64_t reuses;        /* requests sent on a pooled connection */
    uint64_t retries;       /* requests retried after a stale pooled connection */
    uint64_t idle_discards; /* pooled connections dropped for idling too long */
    uint64_t dead_discards; /* pooled connections found closed by the server before reuse */
} cn_client_stats_t;
CN_API void cn_client_stats(cn_client_t *c, cn_client_stats_t *out);

/* ---- bodies ----------------------------------------------------------------- */

/* Reads up to n bytes; returns the count, 0 at end, or -errno. */
typedef long long (*cn_client_read_fn)(void *ud, void *buf, size_t n);
/* Consumes n bytes; returns 0 or an error (which ends the call). */
typedef cn_err_t (*cn_client_write_fn)(void *ud, const void *buf, size_t n);
/* Reports the bytes transferred so far in this call. */
typedef void (*cn_client_progress_fn)(void *ud, int64_t bytes);

/* An upload: exactly len bytes, from fd (its current offset; >= 0) or from
 * read(ud) when fd < 0.  A source that ends early fails the call with
 * CN_E_LENGTH_MISMATCH (and costs the connection). */
typedef struct cn_client_body {
    int64_t len;
    int fd;
    cn_client_read_fn read;
    void *ud;
    cn_client_progress_fn progress;
    void *progress_ud;
} cn_client_body_t;

/* A download: to fd (>= 0) or to write(ud) when fd < 0. */
typedef struct cn_client_sink {
    int fd;
    cn_client_write_fn write;
    void *ud;
    cn_client_progress_fn progress;
    void *progress_ud;
} cn_client_sink_t;

/* ---- results ------------------------------------------------------------------ */
typedef struct cn_client_kv {
    char *key, *value;
} cn_client_kv_t;

/* HeadObject/GetObject/GetObjectRange and ListObjects entries (fields a layout
 * does not carry are NULL / empty). */
typedef struct cn_client_object {
    char *key; /* ListObjects only */
    char *content_type;
    int64_t size; /* the whole object's size */
    char *etag, *checksum, *last_modified;
    cn_client_kv_t *meta;
    size_t n_meta;
} cn_client_object_t;
CN_API void cn_client_object_clear(cn_client_object_t *o);

/* PutObject, UploadPart (etag, checksum), CopyObject (all four),
 * CompleteMultipartUpload (etag, checksum, size).  size is -1 when absent. */
typedef struct cn_client_written {
    char *etag, *checksum, *last_modified;
    int64_t size;
} cn_client_written_t;
CN_API void cn_client_written_clear(cn_client_written_t *w);

typedef struct cn_client_listing {
    cn_client_object_t *objects;
    size_t n_objects;
    char **prefixes;
    size_t n_prefixes;
    bool is_truncated;
    char *next_start_after;
} cn_client_listing_t;
CN_API void cn_client_listing_clear(cn_client_listing_t *l);

typedef struct cn_client_bucket {
    char *bucket_id, *name, *created_at, *visibility; /* ListBuckets: name, created_at */
} cn_client_bucket_t;
typedef struct cn_client_buckets {
    cn_client_bucket_t *v;
    size_t n;
} cn_client_buckets_t;
CN_API void cn_client_bucket_clear(cn_client_bucket_t *b);
CN_API void cn_client_buckets_clear(cn_client_buckets_t *b);

typedef struct cn_client_part {
    int32_t part_number;
    int64_t size;
    char *etag, *checksum;
} cn_client_part_t;
typedef struct cn_client_parts {
    cn_client_part_t *v;
    size_t n;
} cn_client_parts_t;
CN_API void cn_client_parts_clear(cn_client_parts_t *p);

/* ---- operations ------------------------------------------------------------------
 * Strings are C strings of at most 65535 bytes (CN_E_LIMIT otherwise, before
 * anything is sent).  Out-structs are zeroed first and filled only on success. */

CN_API cn_err_t cn_client_ping(cn_client_t *c, cn_jay_error_t *err);
CN_API cn_err_t cn_client_create_bucket(cn_client_t *c, const char *bucket, cn_jay_error_t *err);
CN_API cn_err_t cn_client_delete_bucket(cn_client_t *c, const char *bucket, cn_jay_error_t *err);
CN_API cn_err_t cn_client_head_bucket(cn_client_t *c, const char *bucket, cn_client_bucket_t *out,
                                      cn_jay_error_t *err);
CN_API cn_err_t cn_client_list_buckets(cn_client_t *c, cn_client_buckets_t *out,
                                       cn_jay_error_t *err);

typedef struct cn_client_put_opts {
    const char *content_type;     /* NULL: "" (the server's default) */
    const char *const *meta_keys; /* n_meta user metadata pairs */
    const char *const *meta_values;
    size_t n_meta;
    bool skip_etag; /* ask the server not to compute the MD5 etag */
} cn_client_put_opts_t;

/* Uploads body as bucket/key.  opts may be NULL.  Never retried. */
CN_API cn_err_t cn_client_put_object(cn_client_t *c, const char *bucket, const char *key,
                                     const cn_client_put_opts_t *opts, cn_client_body_t *body,
                                     cn_client_written_t *out, cn_jay_error_t *err);
/* Downloads bucket/key into sink; info (may be NULL) receives its metadata. */
CN_API cn_err_t cn_client_get_object(cn_client_t *c, const char *bucket, const char *key,
                                     cn_client_sink_t *sink, cn_client_object_t *info,
                                     cn_jay_error_t *err);
/* Downloads length bytes from offset (length <= 0: to the end; past the end
 * clamps) into sink; *served (may be NULL) gets the byte count.  info describes
 * the whole object.  A range that misses the object is CN_E_RANGE. */
CN_API cn_err_t cn_client_get_range(cn_client_t *c, const char *bucket, const char *key,
                                    int64_t offset, int64_t length, cn_client_sink_t *sink,
                                    cn_client_object_t *info, int64_t *served, cn_jay_error_t *err);
CN_API cn_err_t cn_client_head_object(cn_client_t *c, const char *bucket, const char *key,
                                      cn_client_object_t *info, cn_jay_error_t *err);
CN_API cn_err_t cn_client_delete_object(cn_client_t *c, const char *bucket, const char *key,
                                        cn_jay_error_t *err);

typedef struct cn_client_list_opts {
    const char *prefix, *delimiter, *start_after; /* NULL: "" */
    int32_t max_keys;                             /* 0: the server's default */
} cn_client_list_opts_t;

/* One page of bucket's listing; follow next_start_after while is_truncated. */
CN_API cn_err_t cn_client_list_objects(cn_client_t *c, const char *bucket,
                                       const cn_client_list_opts_t *opts, cn_client_listing_t *out,
                                       cn_jay_error_t *err);
/* Server-side copy; the bytes never cross the wire. */
CN_API cn_err_t cn_client_copy_object(cn_client_t *c, const char *src_bucket, const char *src_key,
                                      const char *dst_bucket, const char *dst_key,
                                      cn_client_written_t *out, cn_jay_error_t *err);

/* Starts a multipart upload; *upload_id is malloc'd (caller frees). */
CN_API cn_err_t cn_client_create_multipart(cn_client_t *c, const char *bucket, const char *key,
                                           const char *content_type, char **upload_id,
                                           cn_jay_error_t *err);
CN_API cn_err_t cn_client_upload_part(cn_client_t *c, const char *bucket, const char *key,
                                      const char *upload_id, int32_t part_number,
                                      cn_client_body_t *body, cn_client_written_t *out,
                                      cn_jay_error_t *err);
CN_API cn_err_t cn_client_complete_multipart(cn_client_t *c, const char *bucket, const char *key,
                                             const char *upload_id, const int32_t *parts,
                                             size_t n_parts, cn_client_written_t *out,
                                             cn_jay_error_t *err);
CN_API cn_err_t cn_client_abort_multipart(cn_client_t *c, const char *bucket, const char *key,
                                          const char *upload_id, cn_jay_error_t *err);
CN_API cn_err_t cn_client_list_parts(cn_client_t *c, const char *bucket, const char *key,
                                     const char *upload_id, cn_client_parts_t *out,
                                     cn_jay_error_t *err);

/* ---- whole-file transfers (src/client/jay_transfer.c) -----------------------------
 * What `cairn put` and `cairn get` run: an upload that picks one PutObject or
 * a parallel multipart upload by size, and a download checked against the
 * SHA-256 the server reports.  They print nothing and never exit. */

#define CN_CLIENT_DEFAULT_PART_SIZE (64LL << 20)
#define CN_CLIENT_MIN_PART_SIZE (5LL << 20) /* the server's minimum for a non-last part */
#define CN_CLIENT_DEFAULT_JOBS 4
#define CN_CLIENT_MAX_JOBS 64

typedef struct cn_client_transfer_opts {
    const cn_client_put_opts_t *put; /* content type and metadata; NULL: none.  A
                                      * multipart upload carries only the content
                                      * type (v1's CreateMultipartUpload has no
                                      * metadata). */
    int64_t part_size;               /* 0: CN_CLIENT_DEFAULT_PART_SIZE; else at least
                                      * CN_CLIENT_MIN_PART_SIZE */
    int jobs;                        /* parallel part uploads; 0: 4; at most 64 */
    /* Cumulative bytes of the whole transfer.  A parallel upload calls it from
     * its worker threads, possibly at once and with values out of order: the
     * callback must be thread-safe and may keep the largest value seen. */
    cn_client_progress_fn progress;
    void *progress_ud;
} cn_client_transfer_opts_t;

/* The step of cn_client_put_file that failed (or that ended a success). */
typedef enum cn_client_put_stage {
    CN_CLIENT_PUT_STAGE_PUT = 0, /* the single PutObject, or memory (-ENOMEM) */
    CN_CLIENT_PUT_STAGE_READ,    /* reading the source descriptor */
    CN_CLIENT_PUT_STAGE_PARTS,   /* a stream needed more than CN_JAY_MAX_COUNT parts
                                  * (CN_E_LIMIT): a larger part size is needed */
    CN_CLIENT_PUT_STAGE_CREATE,  /* CreateMultipartUpload */
    CN_CLIENT_PUT_STAGE_PART,    /* UploadPart (or memory while uploading parts) */
    CN_CLIENT_PUT_STAGE_COMPLETE /* CompleteMultipartUpload */
} cn_client_put_stage_t;

typedef struct cn_client_put_result {
    cn_client_written_t written; /* etag, checksum (SHA-256 hex), size (bytes stored) */
    bool multipart;              /* a multipart upload was chosen (set even on failure) */
    int32_t n_parts;             /* parts of a completed multipart upload; 0 otherwise */
    cn_client_put_stage_t stage; /* on failure: the step that failed */
} cn_client_put_result_t;
/* Frees out->written's strings; accepts a zeroed result. */
CN_API void cn_client_put_result_clear(cn_client_put_result_t *r);

/* Uploads fd as bucket/key.
 *
 * size >= 0: fd holds exactly size bytes, read with pread(2) from offset 0
 * (fd's own offset is neither used nor moved).  Up to the part size it goes
 * up as one PutObject; above it as a multipart upload of size/part_size parts
 * sent by opts->jobs threads, each on its own pooled connection (the part
 * size grows, in MiB steps, if more than CN_JAY_MAX_COUNT parts would be
 * needed).  size < 0: fd is read sequentially to its end (a pipe, a FIFO, a
 * /proc file), one part size at a time in memory; input that fits one part is
 * one PutObject, more goes up as sequential multipart parts.
 *
 * opts may be NULL (defaults).  On success out->written holds the answer
 * (size: the bytes stored), out->n_parts the part count of a multipart
 * upload.  On failure out->stage names the failed step and err (may be NULL)
 * the server's answer; a multipart upload that fails after it was created is
 * aborted.  Errors: as every call (the header's top), plus CN_E_INVALID (a part
 * size under the minimum, jobs out of range), -errno of a read of fd (stage
 * READ), CN_E_LENGTH_MISMATCH (the file shrank while read), CN_E_LIMIT (stage
 * PARTS), -ENOMEM.  out is zeroed first; release it with
 * cn_client_put_result_clear.  Any thread; the calling thread waits for the
 * workers it starts. */
CN_API cn_err_t cn_client_put_file(cn_client_t *c, const char *bucket, const char *key, int fd,
                                   int64_t size, const cn_client_transfer_opts_t *opts,
                                   cn_client_put_result_t *out, cn_jay_error_t *err);

typedef struct cn_client_download {
    cn_client_object_t info; /* the object's metadata (zeroed if no answer) */
    char sha256[65];         /* hex SHA-256 of the bytes received (64 digits), NUL-terminated */
    int64_t bytes;           /* bytes written to fd */
    bool local;              /* the error came from writing fd, not the transfer */
} cn_client_download_t;
/* Frees out->info; accepts a zeroed download. */
CN_API void cn_client_download_clear(cn_client_download_t *d);

/* Downloads bucket/key to fd (written at its current offset, in order),
 * hashing every byte, and compares the SHA-256 with the checksum the server
 * reported (an object without one is not compared).  opts may be NULL; only
 * its progress callback is used (called from the calling thread).  The bytes
 * reach fd before the verdict: a caller that must not expose unverified
 * bytes writes to a temporary and publishes it only on success.
 *
 * Errors: as every call; a write to fd that fails returns its error with
 * out->local set (checked before any transfer error); CN_E_DIGEST_MISMATCH
 * when the bytes do not hash to the server's checksum (out->info.checksum
 * and out->sha256 then hold both).  out is always filled as far as it got
 * (zeroed first) and released with cn_client_download_clear.  Any thread. */
CN_API cn_err_t cn_client_get_to_fd(cn_client_t *c, const char *bucket, const char *key, int fd,
                                    const cn_client_transfer_opts_t *opts,
                                    cn_client_download_t *out, cn_jay_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
