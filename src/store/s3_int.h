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
#define S3_SMALL_BODY (1ull << 20) /* a request body sent whole within one stall time */
#define S3_DEFAULT_DEADLINE_MS 30000
#define S3_RELAY_IDLE_MS 10000 /* s3_fill.c F7 */
#define S3_BODY_MAX (1u << 20) /* XML answers and error bodies kept at most */
/* libcurl's receive buffer for a download into a file (a cache fill): its
 * 16 KiB default cost a write, a hash update and a wake-up of the fill's
 * readers per 16 KiB; 512 KiB is libcurl 7.88's largest. */
#define S3_FILL_RECV_BUF (256L << 10)
#define S3_MAX_HDRS 10
#define S3_OVERSIZE_MEMO 16
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct s3_be {
    cn__backend_t base;
    char *base_url; /* scheme://host[:port] (virtual host: scheme://BUCKET.host) */
    char *host;     /* the Host header */
    char *bucket, *prefix;
    char *region, *key_id, *secret;
    bool vhost;
    int64_t deadline_ms;
    int64_t relay_idle_ms;
    atomic_bool inm_unsupported;
    cn__cache_t *cache;
    pthread_mutex_t pool_mu;
    CURL *pool[S3_POOL];
    size_t n_pool;
    /* fills of the cache in flight (s3_fill.c) */
    pthread_mutex_t fill_mu;
    pthread_cond_t fill_cv;
    struct cn__s3_fill *fills;
    unsigned fill_threads;
    cn_digest_t oversize[S3_OVERSIZE_MEMO]; /* blobs found not to fit the cache (F7) */
    unsigned oversize_next;
    uint64_t relay_held; /* disk the running relays may hold (F7), under fill_mu */
    atomic_bool closing;
} s3_be_t;

struct s3_req;
/* Called after each piece of a 2xx body written to out_fd; false cancels
 * the request (io_err CN_E_CLOSED, not retried). */
typedef bool (*cn__s3_progress_fn)(void *ctx, const struct s3_req *q);
/* Called when a download's progress cancelled it: true goes on from where
 * it stopped (a ranged GET), false ends it with CN_E_CLOSED. */
typedef bool (*cn__s3_resume_fn)(void *ctx);

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
    bool once;  /* one attempt, short timeouts (readiness) */
    bool small; /* the whole exchange is small (a HEAD, a DELETE, a list page, a
                   body of at most S3_SMALL_BODY): each attempt ends whole within
                   the stall time, so a hung backend costs the deadline only */
    /* answer */
    int out_fd; /* a 2xx body goes here (from out_done on), else to body */
    uint64_t out_done;
    cn_blake3_t *out_hash;       /* optional: BLAKE3 of out_fd's bytes [0, out_done) */
    cn__s3_progress_fn progress; /* optional */
    void *progress_ctx;
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

/* The object key of blob d (KEY_MAX bytes with its NUL at most). */
#define S3_KEY_MAX 1100
void cn__s3_blob_key(const s3_be_t *be, const cn_digest_t *d, char out[S3_KEY_MAX]);
/* The stored form named by x-amz-meta-cairn-form's value. */
cn_store_form_t cn__s3_form_of(const char *s);
/* Downloads d into f (a fresh cache temp file), calling progress as its
 * bytes land (and resume, which may be NULL, when progress cancelled it),
 * and checks they hash to d: CN_OK with *st, CN_E_NOT_FOUND, CN_E_CORRUPT
 * (logged), CN_E_UNAVAILABLE, CN_E_CLOSED, or a local error.  Names
 * nothing: the caller commits f to the cache or discards it. */
cn_err_t cn__s3_fetch(s3_be_t *be, const cn_digest_t *d, int f, cn__s3_progress_fn progress,
                      cn__s3_resume_fn resume, void *ctx, cn__be_stat_t *st);

/* ---- fills of the cache (s3_fill.c) ---------------------------------------------
 * One download per blob at a time, shared by the readers that ask for it
 * meanwhile and readable while it lands. */
void cn__s3_fills_init(s3_be_t *be);
/* Asks running fills to stop and waits for their threads (backend close). */
void cn__s3_fills_shutdown(s3_be_t *be);
/* d is not in the cache: joins d's fill or starts one, then as the
 * backend's open (lazy false) or open_lazy (lazy true).  *fd is the
 * caller's, a descriptor of the complete, verified file. */
cn_err_t cn__s3_fill_open(s3_be_t *be, const cn_digest_t *d, bool lazy, int *fd, cn__be_stat_t *st);
/* The backend's stream op (backend.h). */
cn_err_t cn__s3_fill_stream(s3_be_t *be, const cn_digest_t *d, uint64_t off, uint64_t len,
                            bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                            uint64_t *served, bool *streamed);

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
