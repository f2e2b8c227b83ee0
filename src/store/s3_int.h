/* The S3 tier's internals shared by its two files: the backend's state, one
 * request and its answer (s3_http.c signs, sends and retries it;
 * backend_s3.c maps the store's operations onto requests).  Never used
 * outside src/store. */
#ifndef CN_STORE_S3_INT_H
#define CN_STORE_S3_INT_H

#include "store/store_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cairn/util.h"

#define S3_MULTIPART_MIN (64ull << 20)
#define S3_PART_MIN (16ull << 20)
#define S3_MAX_PARTS 10000
#define S3_POOL 16
#define S3_CONNECT_TIMEOUT_MS 3000L
#define S3_LOW_SPEED_SECONDS 10L
#define S3_DEFAULT_DEADLINE_MS 30000
#define S3_BODY_MAX (1u << 20) /* XML answers and error bodies kept at most */
#define S3_MAX_HDRS 10
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct s3_be {
    cn__backend_t base;
    char *base_url; /* scheme://host[:port] (virtual host: scheme://BUCKET.host) */
    char *host;     /* the Host header */
    char *bucket, *prefix;
    char *region, *key_id, *secret;
    bool vhost;
    int64_t deadline_ms;
    atomic_bool inm_unsupported;
    cn__cache_t *cache;
    pthread_mutex_t pool_mu;
    CURL *pool[S3_POOL];
    size_t n_pool;
} s3_be_t;

/* One request and what came back. */
typedef struct s3_req {
    const char *method;
    const char *key;   /* object key (unencoded), NULL: the bucket */
    const char *query; /* URI-encoded, items sorted; NULL: none */
    cn__s3_hdr_t hdrs[S3_MAX_HDRS];
    size_t n_hdrs;
    /* body: a file range or memory */
    int in_fd;
    uint64_t in_off, in_len;
    const char *in_mem;
    size_t in_mem_len;
    bool has_body;
    bool once; /* one attempt, short timeouts (readiness) */
    /* answer */
    int out_fd; /* a 2xx body goes here (from out_done on), else to body */
    uint64_t out_done;
    cn_blake3_t *out_hash; /* optional: BLAKE3 of out_fd's bytes [0, out_done) */
    uint64_t in_sent;
    cn_buf_t body;
    long status;
    char etag[160];
    char form[8];
    int64_t last_modified_ms;
    uint64_t length;
    bool resumed; /* this attempt asked for a Range from out_done */
    cn_err_t io_err;
} s3_req_t;

/* Sends q with retries: CN_OK with q->status (any answer that is not a
 * fault), CN_E_UNAVAILABLE once be's deadline passed, or a local error. */
cn_err_t cn__s3_call(s3_be_t *be, s3_req_t *q);
/* A request of method on key (NULL: the bucket), no body, no answer sink. */
void cn__s3_req_init(s3_req_t *q, const char *method, const char *key);
/* Adds a header to q (at most S3_MAX_HDRS; further ones are dropped). */
void cn__s3_req_hdr(s3_req_t *q, const char *name, const char *value);
/* The error for an answer that is neither success nor a documented outcome
 * (logged): CN_E_AUTH for 401/403, else CN_E_UNAVAILABLE. */
cn_err_t cn__s3_unexpected(const s3_req_t *q);

#endif
