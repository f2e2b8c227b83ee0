/* cairn console: the web console served under /_cairn/console/ on the HTTP
 * framework (cairn/http.h) — embedded static assets (content-hashed,
 * gzip pre-compressed), cookie sessions bound to a token, and a JSON API
 * that is an adapter like the others: decode a call, call one service
 * function with the session's principal, encode the answer.  docs/console.md.
 *
 * The console never decides an access itself beyond a first permission
 * gate: the services authorize every call exactly as on S3, Scribe and the
 * blob operations.  It never touches the store or SQL (sessions go through
 * src/meta), and never puts a credential into a URL or a log line.
 */
#ifndef CAIRN_CONSOLE_H
#define CAIRN_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/http.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_meta cn_meta_t;
typedef struct cn_identity cn_identity_t;
typedef struct cn_objects cn_objects_t;
typedef struct cn_repos cn_repos_t;
typedef struct cn_blobs cn_blobs_t;
typedef struct cn_console cn_console_t;

/* One node of the fleet, as the metrics view's node picker lists it. */
typedef struct cn_console_node {
    char id[65];       /* its node id */
    char url[256];     /* where peers reach its HTTP listener (--advertise), "" when none */
    char console[256]; /* its console's own listener (--console ADDR), "" when none:
                        * GET metrics?node= asks there, else at url */
    bool up;           /* its heartbeat is current (not stopped, not lost) */
} cn_console_node_t;

/* Lists the fleet's nodes (docs/fleet.md, "The node registry") into out,
 * at most cap of them, the count into *n; any thread.  Errors: the
 * registry's (metadata) errors. */
typedef cn_err_t (*cn_console_nodes_fn)(void *arg, cn_console_node_t *out, size_t cap, size_t *n);

/* What the console serves over: every pointer borrowed and must outlive the
 * console. */
typedef struct cn_console_config {
    cn_meta_t *meta;         /* required: the console_sessions rows */
    cn_identity_t *identity; /* required: login, the per-request token check */
    cn_objects_t *objects;   /* may be NULL: the buckets/objects calls answer 404 */
    cn_repos_t *repos;       /* may be NULL */
    cn_blobs_t *blobs;       /* may be NULL */
    const char *node;        /* this node's name (fleet node id), or NULL */
    /* the fleet's node registry, for GET metrics?node= (a peer's samples,
     * fetched from its advertised URL with the caller's session); NULL:
     * this node's samples only */
    cn_console_nodes_fn nodes;
    void *nodes_arg;
    /* true when the console has a listener (an origin) of its own
     * (cairnd --console ADDR); s3_base is then the absolute base URL of
     * the HTTP listener ("http://127.0.0.1:7448") that presigned GET links
     * point at, else NULL.  Other links are relative to the console's
     * origin (its listener accepts the uploads they carry). */
    bool own_origin;
    const char *s3_base;
    int64_t idle_ms; /* a session's idle timeout; 0: 30 min (CAIRN_CONSOLE_IDLE_MS) */
    int64_t max_ms;  /* its absolute lifetime; 0: 12 h (CAIRN_CONSOLE_MAX_MS) */
    /* a multipart completion's least part but the last, the S3 face's
     * (CAIRN_S3_MIN_PART_SIZE); 0: S3's 5 MiB */
    uint64_t min_part_size;
} cn_console_config_t;

/* Registers the console's routes (/_cairn/console/...) on srv, which must not
 * have started; call it before a catch-all route (S3) so that its more
 * specific prefix wins.  The config's strings are copied.  *out is freed by
 * cn_console_free after the server is freed.  -ENOMEM, CN_E_INVALID (no
 * meta or identity), errors of cn_http_server_route. */
CN_API cn_err_t cn_console_register(cn_http_server_t *srv, const cn_console_config_t *cfg,
                                    cn_console_t **out);
/* Frees the console.  Accepts NULL. */
CN_API void cn_console_free(cn_console_t *con);

/* Applies the console's metadata schema steps (the console_sessions table)
 * without serving: cairnd --migrate-only.  cn_console_register applies them
 * too.  Errors of cn_meta_migrate. */
CN_API cn_err_t cn_console_migrate(cn_meta_t *meta);

/* Fills idle_ms and max_ms of cfg from CAIRN_CONSOLE_IDLE_MS and
 * CAIRN_CONSOLE_MAX_MS (positive milliseconds; unset or bad: 0, the
 * default, and a bad value is logged). */
CN_API void cn_console_config_env(cn_console_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
