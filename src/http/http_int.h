/* Internals shared by the files of the http module; never included from
 * another module. */
#ifndef CN_HTTP_INT_H
#define CN_HTTP_INT_H

#include "cairn/http.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

#define CN__MAX_ROUTES 64
#define CN__MAX_RESP_HEADERS 64
#define CN__MAX_METRIC_SOURCES 16
#define CN__LAT_BUCKETS 12
#define CN__DRAIN_MAX (64u << 20) /* body bytes read past an error before closing */

typedef struct {
    _Atomic uint64_t status[6]; /* 1xx..5xx, [0] other */
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t lat[CN__LAT_BUCKETS + 1]; /* cumulative at render time */
    _Atomic uint64_t lat_sum_us;
    _Atomic uint64_t count;
} cn__route_stats_t;

struct cn_http_server {
    cn_http_config_t cfg;
    char *listen, *log_name, *region, *cert_pem, *key_pem;
    char host[128];
    int port;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    struct MHD_Daemon *mhd;
    cn_http_route_t routes[CN__MAX_ROUTES];
    char *route_prefix[CN__MAX_ROUTES];
    char *route_name[CN__MAX_ROUTES];
    cn__route_stats_t stats[CN__MAX_ROUTES + 1]; /* last: no route matched */
    size_t n_routes;
    struct {
        void (*fn)(cn_buf_t *, void *);
        void *ctx;
    } metric_src[CN__MAX_METRIC_SOURCES];
    size_t n_metric_src;
    _Atomic int64_t open_connections;
    _Atomic uint64_t connections_total;
    _Atomic uint64_t auth_failures;
    bool started;
};

enum {
    CN__RQ_NEW,
    CN__RQ_BODY,
    CN__RQ_DRAIN,
    CN__RQ_DONE
};

typedef struct {
    char *name;
    char *value;
} cn__qparam_t;

struct cn_http_req {
    cn_http_server_t *srv;
    struct MHD_Connection *conn;
    int route; /* index, or -1 */
    char *uri; /* raw URI as received; split at '?' */
    const char *raw_path, *raw_query;
    cn_buf_t path; /* decoded, NUL-terminated */
    cn__qparam_t *q;
    size_t nq;
    const char *method;
    unsigned method_bit;
    char peer[64];
    char client_ip[64];
    char id[17];
    char host_id[48];
    int64_t content_length, payload_length;
    uint64_t received; /* decoded payload bytes */
    uint64_t wire_received;
    uint64_t drained;
    uint64_t max_body;
    bool has_body, tls;
    char *content_encoding;
    /* credential */
    cn_http_auth_kind_t auth_kind;
    char access_key[CN_SIGV4_MAX_KEY];
    cn_s3_err_t auth_err;
    char auth_detail[160];
    cn_sigv4_t sig;
    cn_sigv4_payload_t payload;
    /* body */
    int stage;
    cn_awschunk_t *chunk;
    void *body_sha; /* EVP_MD_CTX for HASH / DEFERRED */
    cn_http_cksum_t cksum;
    cn_http_cksum_alg_t cksum_alg;
    bool cksum_trailer;
    char cksum_expected[CN_CKSUM_B64_LEN + 16];
    char cksum_b64[CN_CKSUM_B64_LEN];
    cn_s3_err_t body_err;
    bool paused, deferred_start, handler_started;
    /* response */
    struct {
        char *name;
        char *value;
    } hdrs[CN__MAX_RESP_HEADERS];
    size_t nhdrs;
    struct MHD_Response *resp;
    unsigned status;
    uint64_t resp_len;
    void *data;
    int64_t start_ns;
};

/* request.c */
cn_err_t cn__req_parse_target(cn_http_req_t *r);
void cn__req_free(cn_http_req_t *r);
/* response.c */
cn_err_t cn__framework_error(cn_http_req_t *r, cn_s3_err_t e, const char *message);
/* metrics.c */
void cn__metrics_register_builtin(cn_http_server_t *s);
void cn__metrics_record(cn_http_server_t *s, cn_http_req_t *r);

#endif
