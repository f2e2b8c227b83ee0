/* The pieces cairnd is assembled from: the services (opened once from the
 * data directory, shared by every adapter) and the table of protocols that
 * plug into the network layer.  Internal to src/cmd. */
#ifndef CN_CAIRND_H
#define CN_CAIRND_H

#include "cairn/net.h"
#include "cairn/toml.h"

/* Everything a protocol adapter may call: the services over the store and
 * the metadata.  Opened by cn_services_open (src/cmd/services.c). */
typedef struct cn_meta cn_meta_t;
typedef struct cn_store cn_store_t;
typedef struct cn_identity cn_identity_t;
typedef struct cn_objects cn_objects_t;
typedef struct cn_blobs cn_blobs_t;
typedef struct cn_repos cn_repos_t;

/* Where protocol 4 resolves principals, from cairnd's flags (NULL: unset;
 * each wins over its [scribe-tls] auth_* key). */
typedef struct cn_services_auth {
    const char *server;     /* --auth-server HOST:PORT */
    const char *trust;      /* --auth-trust FILE */
    const char *credential; /* --auth-credential FILE */
} cn_services_auth_t;

typedef struct cn_services {
    char *data_dir;
    const cn_toml_t *config; /* borrowed: the --config document, or NULL */
    cn_meta_t *meta;
    cn_store_t *store;
    cn_identity_t *identity;
    cn_objects_t *objects;
    cn_blobs_t *blobs;
    cn_repos_t *repos;
    cn_services_auth_t auth; /* borrowed strings: set by cairnd after opening */
    /* --gateway: the gateway role's configuration (borrowed), or NULL: the
     * scribe listener then serves as a gateway (src/scribe/gw_int.h) */
    const struct cn_gw_config *gateway;
    /* --console: "on" (the web console on the HTTP listener), "off", or the
     * ADDR of a listener of its own; and this node's fleet id.  Borrowed,
     * set by cairnd after opening; NULL: "on", no id. */
    const char *console;
    const char *node_id;
} cn_services_t;

/* Config sections the services read themselves; cairnd does not check their
 * keys (cn_services_open does).  NULL-terminated. */
extern const char *const cn_services_sections[];

/* Opens the services on data_dir, creating it with mode 0700 when missing;
 * the metadata in meta (a postgres:// URI or sqlite:PATH; NULL: data_dir's
 * own meta.db); the identity key in identity_key (NULL: data_dir's own
 * identity.key, created when missing; a named file must exist), and the
 * previous keys of a rotation in identity_prev (NULL-terminated; NULL:
 * none; cn_identity_opts_t's prev_files).  config
 * (borrowed, may be NULL) must outlive the services;
 * tier (may be NULL: local blobs) is the store's blob tier (cairn/store.h).  Errors are
 * logged; returns 0 or a cn_err_t.  *out freed by cn_services_close. */
struct cn_store_tier;
cn_err_t cn_services_open(const char *data_dir, const char *meta, const char *identity_key,
                          const char *const *identity_prev, const cn_toml_t *config,
                          const struct cn_store_tier *tier, cn_services_t **out);
/* Closes what cn_services_open opened.  Accepts NULL. */
void cn_services_close(cn_services_t *svc);

/* cairnd's --lifecycle-* flags as given (NULL: not given; they win over
 * [objects] lifecycle_interval / lifecycle_max_ops / lifecycle_day_seconds). */
typedef struct cn_services_lc_flags {
    const char *interval, *max_ops, *day_seconds;
} cn_services_lc_flags_t;
/* Checks config's [store] and [objects] sections and the --lifecycle-*
 * flags before anything is opened, so that cairnd answers a bad value or
 * key as the usage error it is (exit status 2), not as a server that
 * cannot start.  Logs why: CN_E_INVALID. */
cn_err_t cn_services_config_check(const cn_toml_t *config, const cn_services_lc_flags_t *flags);
/* Starts the S3 lifecycle worker on svc's objects service (docs/s3.md).
 * A bad value is logged: CN_E_INVALID. */
cn_err_t cn_services_lifecycle_start(cn_services_t *svc, const cn_services_lc_flags_t *flags);

/* One protocol cairnd can serve.  create is NULL when this build does not
 * carry the protocol: a listener for it then refuses to start. */
typedef struct cn_protocol {
    const char *name;         /* flag and config section: --jay, [jay] */
    const char *default_addr; /* "127.0.0.1:7446" */
    const char *env_tls_cert; /* environment fallbacks for the TLS files, or NULL */
    const char *env_tls_key;
    /* TLS rules of the row.  plaintext_only: no --NAME-tls-cert/-key flags
     * and no tls_cert/tls_key keys (Scribe protocol 2: protocol 2 inside TLS
     * is not in the contract).  tls_flags: the stem of its TLS file flags
     * when it is not name ("scribe": --scribe-tls-cert configures the
     * scribe-tls row).  tls_required: the listener needs both files.
     * tls_pq_only, tls_client_cert: copied into cn_listen_opts_t. */
    bool plaintext_only;
    const char *tls_flags;
    bool tls_required;
    bool tls_pq_only;
    bool tls_client_cert;
    /* Keys of its config section the adapter reads itself (besides the
     * listener keys cairnd handles).  NULL-terminated, or NULL. */
    const char *const *config_keys;
    /* Its connection table's default size (max_connections), when it is not
     * cn_limits_default's; a config file's [limits] or section overrides it. */
    unsigned max_conns;
    /* Its default pending share of one source (max_pending_per_source), when
     * it is not cn_limits_default's: HTTP clients open their whole pool of
     * connections at once (aws-cli, s5cmd, wrk), and a connection is pending
     * only until its first request's bytes arrive. */
    unsigned max_pending_per_source;
    /* Its defaults of max_connections_per_principal and
     * body_budget_anonymous when not cn_limits_default's 0 (off): Scribe
     * protocol 4's 64 and 64 MiB (docs/protocol/scribe.md 15). */
    unsigned max_conns_per_principal;
    uint64_t budget_anonymous;
    /* Builds the adapter over the services; section is its config table or
     * NULL.  *ad is static; *actx is freed by destroy. */
    cn_err_t (*create)(cn_services_t *svc, const cn_toml_val_t *section, const cn_adapter_t **ad,
                       void **actx);
    void (*destroy)(void *actx);
    /* For a protocol whose adapter context is not all it holds (the HTTP
     * face: the framework's server, and the S3 and blob-ops handlers on it):
     * start builds them and plugs the listener into srv itself
     * (cn_server_listen with opts); stop frees *actx once srv has stopped
     * running.  A row has either create or start. */
    cn_err_t (*start)(cn_services_t *svc, const cn_toml_val_t *section,
                      const cn_listen_opts_t *opts, cn_server_t *srv, void **actx);
    void (*stop)(void *actx);
} cn_protocol_t;

extern const cn_protocol_t cn_protocols[];
extern const size_t cn_protocols_count;

/* spacer.c: DATA/space.spacer, held while the disk has room and let go at
 * start when it is full (docs/store.md, "Free space"); both best effort. */
void cn__spacer_release_if_full(const char *data_dir);
void cn__spacer_ensure(const char *data_dir);

#endif
