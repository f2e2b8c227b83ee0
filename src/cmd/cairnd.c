/* cairnd — the cairn server.  Parses the stable command line and the
 * optional configuration file, opens the services on the data directory,
 * plugs each enabled protocol (src/cmd/protocols.c) into a listener, and runs
 * until SIGTERM/SIGINT, then shuts down gracefully.
 *
 * Precedence: flags, then the environment (TLS files), then --config, then
 * the built-in defaults.  Exit status: 0 after a clean shutdown, 1 when the
 * server cannot start, 2 for a usage error (unknown flag, bad value, a
 * configuration file that does not parse or names an unknown key or a bad
 * value, in any section, [store] and [objects] included; a --gateway file
 * the gateway cannot start with). */
#include "cairnd.h"
#include "fleet_node.h"
#include "scribe/gw_int.h"
#include "cairn/console.h"
#include "cairn/crypto.h"
#include "cairn/sau2_server.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAIRND_USAGE                                                                               \
    "usage: cairnd [--data DIR] [--jay ADDR|off] [--scribe ADDR|off] [--scribe-tls ADDR|off]\n"    \
    "              [--http ADDR|off] [--auth ADDR|off] [--console on|off|ADDR]\n"                  \
    "              [--config FILE] [--log-level debug|info|warn|error] [--log-format text|json]\n" \
    "              [--jay-tls-cert FILE --jay-tls-key FILE] [--scribe-tls-cert FILE ...]\n"        \
    "              [--http-tls-cert FILE ...] [--allow-plaintext-public] [--net-loops N]\n"        \
    "              [--tls-groups pq-only|hybrid-first]\n"                                          \
    "              [--blob-store s3://BUCKET/PREFIX --blob-endpoint URL [--blob-region R]\n"       \
    "               [--blob-credentials FILE] [--blob-virtual-host]] [--cache-dir DIR]\n"          \
    "              [--cache-size BYTES[K|M|G]] [--meta postgres://...|sqlite:PATH]\n"              \
    "              [--migrate-only] [--identity-key FILE] [--gateway FILE]\n"                      \
    "              [--identity-key-previous FILE]...\n"                                            \
    "              [--node-id ID] [--advertise URL]\n"                                             \
    "              [--lifecycle-interval DUR] [--lifecycle-max-ops N]\n"                           \
    "              [--help] [--version]\n"

#define CAIRND_HELP                                                                               \
    "\n"                                                                                          \
    "  --data DIR              data directory (default ./data; created with mode 0700)\n"         \
    "  --meta URL              metadata: a libpq postgres:// URI, or sqlite:PATH (default\n"      \
    "                          DATA/meta.db); docs/fleet.md\n"                                    \
    "  --migrate-only          apply pending metadata schema steps, then exit (no listener)\n"    \
    "  --gateway FILE          serve --scribe (scribes:// storage: --scribe-tls, with\n"          \
    "                          --auth-credential) as a gateway in front of the storage\n"         \
    "                          servers FILE (TOML) names; Jay and HTTP stay off unless\n"         \
    "                          given (docs/protocol/scribe-gateway.md)\n"                         \
    "  --identity-key FILE     the key sealing token secrets (default DATA/identity.key);\n"      \
    "                          one file for every node of a fleet; also [server] identity_key\n"  \
    "  --identity-key-previous FILE  a key secrets may still be sealed with, during a rotation\n" \
    "                          (repeatable, up to 4; also [server] identity_key_previous)\n"      \
    "  --node-id ID            this node's id in the fleet's registry (default: DATA/node.id,\n"  \
    "                          made once); --advertise URL, where peers reach it\n"               \
    "  --auth-server HOST:PORT the SAU2 service --scribe-tls asks about principals (default:\n"   \
    "                          this data directory's auth state); with --auth-trust FILE\n"       \
    "                          (the trust bundle) and --auth-credential FILE (this server's\n"    \
    "                          credential and key, PEM); also [scribe-tls] auth_*\n"              \
    "  --jay ADDR|off          Jay native v1 listener (default 127.0.0.1:7446)\n"                 \
    "  --scribe ADDR|off       Scribe protocol 2, plaintext only (default 127.0.0.1:7447)\n"      \
    "  --scribe-tls ADDR|off   Scribe protocol 4 over TLS 1.3, X25519MLKEM768 only (default\n"    \
    "                          off); needs --scribe-tls-cert/--scribe-tls-key, which are\n"       \
    "                          its files (--scribe itself takes no TLS flags); beside --auth\n"   \
    "                          without them, a certificate from auth's server CA\n"               \
    "  --http ADDR|off         S3 / blob operations / health listener (default 127.0.0.1:7448)\n" \
    "  --console on|off|ADDR   the web console at /_cairn/console/ (docs/console.md): on the\n"   \
    "                          HTTP listener (on, the default), off, or a listener of its own\n"  \
    "  --auth ADDR|off         SAU2 auth listener (default off; TLS with the certificate of\n"    \
    "                          `cairn admin --data DIR auth init`, no --auth-tls-* flag)\n"       \
    "                          ADDR is host:port or [v6]:port; port 0 picks a free port\n"        \
    "  --PROTO-tls-cert FILE   PEM certificate chain: serve PROTO (jay, http) over TLS 1.3\n"     \
    "  --PROTO-tls-key FILE    PEM private key (Jay also reads JAY_NATIVE_TLS_CERT/_KEY)\n"       \
    "  --allow-plaintext-public  permit a plaintext listener on a non-loopback address\n"         \
    "  --tls-groups RULE       key exchange of the Jay and HTTP TLS listeners: hybrid-first\n"    \
    "                          (default: X25519MLKEM768 preferred, classical groups kept) or\n"   \
    "                          pq-only (X25519MLKEM768 alone); also [server] tls_groups, or\n"    \
    "                          CAIRN_TLS_GROUPS; Scribe TLS and SAU2 are always pq-only\n"        \
    "  --net-loops N           event-loop threads (default 0: one per CPU, at most 8;\n"          \
    "                          also [server] net_loops, or CAIRN_NET_LOOPS)\n"                    \
    "  --blob-store s3://BUCKET/PREFIX  keep blobs in an S3-compatible store (docs/fleet.md)\n"   \
    "  --blob-endpoint URL     its http[s]://HOST[:PORT]; --blob-region R (default us-east-1)\n"  \
    "  --blob-credentials FILE KEY_ID:SECRET (else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)\n"    \
    "  --blob-virtual-host     BUCKET.HOST addressing (default: path style)\n"                    \
    "  --cache-dir DIR         the blob tier's local cache (default DATA/cache)\n"                \
    "  --cache-size BYTES      its budget, with K, M or G (default 4G)\n"                         \
    "  --config FILE           TOML file with limits and listener settings\n"                     \
    "                          (see docs/development.md)\n"                                       \
    "  --log-level LEVEL       debug, info (default), warn or error\n"                            \
    "  --log-format FORMAT     text (default) or json\n"

/* Its own literal: each string stays within C's 4,095 bytes. */
#define CAIRND_HELP_LC                                                                           \
    "  --lifecycle-interval DUR  S3 lifecycle passes per bucket this far apart: seconds, or\n"   \
    "                          with s, m or h (default 1h; also [objects] lifecycle_interval)\n" \
    "  --lifecycle-max-ops N   lifecycle actions per second, all buckets (default 1000; also\n"  \
    "                          [objects] lifecycle_max_ops)\n"                                   \
    "  --lifecycle-day-seconds N  tests only: a lifecycle day is N seconds, unrounded\n"         \
    "\nExit status: 0 after a clean shutdown; 1 when the server cannot start (data\n"            \
    "directory, metadata, a listener); 2 for a usage error (a flag, a value, the\n"              \
    "configuration file or any key or value in it, [store] and [objects] included).\n"

#define CN_MAX_PROTOS 8

typedef struct {
    const char *addr; /* NULL = unset, "off" = disabled */
    const char *tls_cert;
    const char *tls_key;
} listener_flags_t;

typedef struct {
    const cn_protocol_t *proto;
    cn_listen_opts_t opts;
    bool enabled;
    const cn_toml_val_t *section;
    const cn_adapter_t *ad;
    void *actx;
    bool own_cert;         /* TLS files from auth's server CA (own_cert) */
    char own[2][PATH_MAX]; /* their paths: certificate, key */
} listener_t;

/* ---- configuration file -------------------------------------------------------- */
static const char *const server_keys[] = { "shutdown_grace_ms",
                                           "handshake_workers",
                                           "query_workers",
                                           "storage_workers",
                                           "queue_length",
                                           "allow_plaintext_public",
                                           "net_loops",
                                           "tls_groups",
                                           "identity_key",
                                           "identity_key_previous",
                                           NULL };
static const char *const limit_keys[] = { "max_connections",
                                          "max_pending_per_source",
                                          "max_connections_per_principal",
                                          "body_budget_bytes",
                                          "body_budget_per_connection",
                                          "body_budget_per_principal",
                                          "body_budget_anonymous",
                                          "handshake_timeout_ms",
                                          "idle_timeout_ms",
                                          "io_timeout_floor_ms",
                                          "io_rate_bytes_per_sec",
                                          "worker_share_percent",
                                          NULL };
static const char *const listener_keys[] = { "address", "tls_cert", "tls_key", NULL };

static bool in_list(const char *const *list, const char *k)
{
    for (; list && *list; list++)
        if (!strcmp(*list, k))
            return true;
    return false;
}

static int config_error(const cn_toml_val_t *v, const char *fmt, const char *what)
{
    fprintf(stderr, "cairnd: --config: line %d: ", cn_toml_line(v));
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    return 2;
}

/* An integer in [min, max], or exit status 2 with a message. */
static int config_int(const cn_toml_val_t *tab, const char *key, int64_t min, int64_t max,
                      int64_t *out)
{
    const cn_toml_val_t *v = cn_toml_get(tab, key);
    if (!v)
        return 0;
    if (cn_toml_int(v, out) < 0 || *out < min || *out > max) {
        fprintf(stderr, "cairnd: --config: line %d: %s must be an integer from %lld to %lld\n",
                cn_toml_line(v), key, (long long)min, (long long)max);
        return 2;
    }
    return 0;
}

static int config_limits(const cn_toml_val_t *tab, cn_limits_t *l)
{
    int64_t v;
    const int64_t big = INT64_MAX / 2;
#define LIM(key, min, max, field)               \
    do {                                        \
        v = (int64_t)l->field;                  \
        if (config_int(tab, key, min, max, &v)) \
            return 2;                           \
        l->field = (__typeof__(l->field))v;     \
    } while (0)
    LIM("max_connections", 0, 1000000, max_conns);
    LIM("max_pending_per_source", 0, 1000000, max_pending_per_source);
    LIM("max_connections_per_principal", 0, 1000000, max_conns_per_principal);
    LIM("body_budget_bytes", 0, big, budget_bytes);
    LIM("body_budget_per_connection", 0, big, budget_per_conn);
    LIM("body_budget_per_principal", 0, big, budget_per_principal);
    LIM("body_budget_anonymous", 0, big, budget_anonymous);
    LIM("handshake_timeout_ms", 1, 3600000, handshake_ms);
    LIM("idle_timeout_ms", 1, 86400000, idle_ms);
    LIM("io_timeout_floor_ms", 0, 86400000, io_floor_ms);
    LIM("io_rate_bytes_per_sec", 0, big, io_rate_bps);
    LIM("worker_share_percent", 0, 100, worker_share_pct);
#undef LIM
    return 0;
}

static int config_string(const cn_toml_val_t *tab, const char *key, const char **out)
{
    const cn_toml_val_t *v = cn_toml_get(tab, key);
    if (!v)
        return 0;
    if (!cn_toml_str(v))
        return config_error(v, "%s must be a string", key);
    *out = cn_toml_str(v);
    return 0;
}

/* Refuses any key cairnd does not know: a misspelt limit must not be ignored. */
static int config_check_keys(const cn_toml_val_t *root)
{
    for (size_t i = 0; i < cn_toml_len(root); i++) {
        const cn_toml_val_t *sec = cn_toml_at(root, i);
        const char *name = cn_toml_key(sec);
        if (in_list(cn_services_sections, name))
            continue;
        const cn_protocol_t *proto = NULL;
        for (size_t p = 0; p < cn_protocols_count; p++)
            if (!strcmp(cn_protocols[p].name, name))
                proto = &cn_protocols[p];
        bool is_server = !strcmp(name, "server"), is_limits = !strcmp(name, "limits");
        if (!proto && !is_server && !is_limits)
            return config_error(sec, "unknown section or key '%s'", name);
        if (cn_toml_type(sec) != CN_TOML_TABLE)
            return config_error(sec, "'%s' must be a [table]", name);
        for (size_t k = 0; k < cn_toml_len(sec); k++) {
            const cn_toml_val_t *kv = cn_toml_at(sec, k);
            const char *key = cn_toml_key(kv);
            bool ok = is_server   ? in_list(server_keys, key)
                      : is_limits ? in_list(limit_keys, key)
                                  : in_list(listener_keys, key) || in_list(limit_keys, key) ||
                                        in_list(proto->config_keys, key);
            if (!ok) {
                fprintf(stderr, "cairnd: --config: line %d: unknown key '%s' in [%s]\n",
                        cn_toml_line(kv), key, name);
                return 2;
            }
        }
    }
    return 0;
}

static int config_apply(const cn_toml_t *doc, cn_server_config_t *scfg, bool *allow_public,
                        listener_t *ls, size_t nls)
{
    const cn_toml_val_t *root = cn_toml_root(doc);
    int rc = config_check_keys(root);
    if (rc)
        return rc;
    const cn_toml_val_t *srv = cn_toml_get(root, "server");
    int64_t v;
    static const char *const pool_keys[CN_POOL_COUNT] = { "handshake_workers", "query_workers",
                                                          "storage_workers" };
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        v = scfg->workers[p];
        if (config_int(srv, pool_keys[p], 1, 4096, &v))
            return 2;
        scfg->workers[p] = (unsigned)v;
    }
    v = scfg->queue_len[0];
    if (config_int(srv, "queue_length", 1, 1000000, &v))
        return 2;
    for (int p = 0; p < CN_POOL_COUNT; p++)
        scfg->queue_len[p] = (unsigned)v;
    v = scfg->grace_ms;
    if (config_int(srv, "shutdown_grace_ms", 0, 3600000, &v))
        return 2;
    scfg->grace_ms = v;
    v = scfg->loops;
    if (config_int(srv, "net_loops", 0, CN_NET_LOOPS_MAX, &v))
        return 2;
    scfg->loops = (unsigned)v;
    const cn_toml_val_t *ap = cn_toml_get(srv, "allow_plaintext_public");
    if (ap && cn_toml_bool(ap, allow_public) < 0)
        return config_error(ap, "%s must be true or false", "allow_plaintext_public");

    cn_limits_t base;
    cn_limits_default(&base);
    const cn_toml_val_t *limits = cn_toml_get(root, "limits");
    if (config_limits(limits, &base))
        return 2;
    for (size_t i = 0; i < nls; i++) {
        ls[i].opts.limits = base;
        if (ls[i].proto->max_conns && !cn_toml_get(limits, "max_connections"))
            ls[i].opts.limits.max_conns = ls[i].proto->max_conns;
        if (ls[i].proto->max_pending_per_source && !cn_toml_get(limits, "max_pending_per_source"))
            ls[i].opts.limits.max_pending_per_source = ls[i].proto->max_pending_per_source;
        if (ls[i].proto->max_conns_per_principal &&
            !cn_toml_get(limits, "max_connections_per_principal"))
            ls[i].opts.limits.max_conns_per_principal = ls[i].proto->max_conns_per_principal;
        if (ls[i].proto->budget_anonymous && !cn_toml_get(limits, "body_budget_anonymous"))
            ls[i].opts.limits.budget_anonymous = ls[i].proto->budget_anonymous;
        ls[i].section = cn_toml_get(root, ls[i].proto->name);
        if (!ls[i].section)
            continue;
        if (config_limits(ls[i].section, &ls[i].opts.limits) ||
            config_string(ls[i].section, "address", &ls[i].opts.addr) ||
            config_string(ls[i].section, "tls_cert", &ls[i].opts.tls_cert) ||
            config_string(ls[i].section, "tls_key", &ls[i].opts.tls_key))
            return 2;
    }
    return 0;
}

/* ---- command line ----------------------------------------------------------------- */
#define CAIRND_PREV_KEYS 4 /* previous identity keys (identity's CN__ID_PREV_MAX) */
typedef struct {
    const char *data_dir, *config_path;
    /* --meta: postgres://... or sqlite:PATH; NULL = DATA/meta.db */
    const char *meta;
    /* --migrate-only: apply the schema steps, then exit */
    bool migrate_only;
    /* --identity-key, else [server] identity_key; NULL = DATA/identity.key */
    const char *identity_key;
    /* --identity-key-previous (repeatable), else [server] identity_key_previous
     * (a string or an array): NULL-terminated */
    const char *identity_prev[CAIRND_PREV_KEYS + 1];
    size_t n_identity_prev;
    const char *node_id, *advertise; /* --node-id (NULL: DATA/node.id), --advertise */
    cn_services_auth_t auth;         /* --auth-server, --auth-trust, --auth-credential */
    const char *gateway;             /* --gateway FILE: the gateway role, or NULL */
    const char *console;             /* --console on|off|ADDR, or NULL (on) */
    cn_gw_config_t *gwcfg;           /* its configuration, loaded by gateway_prepare */
    int net_loops;                   /* --net-loops, or -1 */
    int tls_groups;                  /* --tls-groups: a cn_tls_groups_t, or -1 */
    cn_log_level_t level;
    bool json, allow_public;
    listener_flags_t flags[CN_MAX_PROTOS];
    struct cn_store_tier tier; /* --blob-store and its companions */
    cn_services_lc_flags_t lc; /* --lifecycle-*, as given */
} cmdline_t;

/* [server] identity_key_previous: one file name, or an array of up to
 * CAIRND_PREV_KEYS of them, into cl (when no flag gave any). */
static int config_prev_keys(const cn_toml_val_t *server, cmdline_t *cl)
{
    const cn_toml_val_t *v = cn_toml_get(server, "identity_key_previous");
    if (!v)
        return 0;
    if (cn_toml_str(v)) {
        cl->identity_prev[cl->n_identity_prev++] = cn_toml_str(v);
        return 0;
    }
    size_t n = cn_toml_len(v);
    if (cn_toml_type(v) != CN_TOML_ARRAY || n > CAIRND_PREV_KEYS)
        return config_error(v, "%s must be a string or up to 4 strings", "identity_key_previous");
    for (size_t i = 0; i < n; i++) {
        const char *f = cn_toml_str(cn_toml_at(v, i));
        if (!f || !*f)
            return config_error(v, "%s must be a string or up to 4 strings",
                                "identity_key_previous");
        cl->identity_prev[cl->n_identity_prev++] = f;
    }
    return 0;
}

enum {
    O_DATA = 256,
    O_CONFIG,
    O_LEVEL,
    O_FORMAT,
    O_HELP,
    O_VERSION,
    O_PUBLIC,
    O_LOOPS,
    O_GROUPS,
    O_BLOB_STORE,
    O_BLOB_ENDPOINT,
    O_BLOB_REGION,
    O_BLOB_CREDS,
    O_BLOB_VHOST,
    O_CACHE_DIR,
    O_CACHE_SIZE,
    O_META,
    O_MIGRATE_ONLY,
    O_AUTH_SERVER,
    O_AUTH_TRUST,
    O_AUTH_CREDENTIAL,
    O_IDENTITY_KEY,
    O_IDENTITY_PREV,
    O_NODE_ID,
    O_ADVERTISE,
    O_GATEWAY,
    O_LC_INTERVAL,
    O_LC_MAX_OPS,
    O_LC_DAY,
    O_CONSOLE,
    O_PROTO = 512
}; /* O_PROTO + 3*i + {0 addr, 1 cert, 2 key} */

#define RUN (-1) /* parse_flags: no exit status, go on and serve */

/* The long options: the fixed ones, then --P, --P-tls-cert and --P-tls-key for
 * each of the first nprotos protocols (names holds their spellings). */
static void build_options(struct option *opts, char (*names)[48], size_t nprotos)
{
    size_t no = 0;
    opts[no++] = (struct option){ "data", required_argument, 0, O_DATA };
    opts[no++] = (struct option){ "config", required_argument, 0, O_CONFIG };
    opts[no++] = (struct option){ "log-level", required_argument, 0, O_LEVEL };
    opts[no++] = (struct option){ "log-format", required_argument, 0, O_FORMAT };
    opts[no++] = (struct option){ "help", no_argument, 0, O_HELP };
    opts[no++] = (struct option){ "version", no_argument, 0, O_VERSION };
    opts[no++] = (struct option){ "allow-plaintext-public", no_argument, 0, O_PUBLIC };
    opts[no++] = (struct option){ "net-loops", required_argument, 0, O_LOOPS };
    opts[no++] = (struct option){ "tls-groups", required_argument, 0, O_GROUPS };
    opts[no++] = (struct option){ "blob-store", required_argument, 0, O_BLOB_STORE };
    opts[no++] = (struct option){ "blob-endpoint", required_argument, 0, O_BLOB_ENDPOINT };
    opts[no++] = (struct option){ "blob-region", required_argument, 0, O_BLOB_REGION };
    opts[no++] = (struct option){ "blob-credentials", required_argument, 0, O_BLOB_CREDS };
    opts[no++] = (struct option){ "blob-virtual-host", no_argument, 0, O_BLOB_VHOST };
    opts[no++] = (struct option){ "cache-dir", required_argument, 0, O_CACHE_DIR };
    opts[no++] = (struct option){ "cache-size", required_argument, 0, O_CACHE_SIZE };
    opts[no++] = (struct option){ "meta", required_argument, 0, O_META };
    opts[no++] = (struct option){ "migrate-only", no_argument, 0, O_MIGRATE_ONLY };
    opts[no++] = (struct option){ "auth-server", required_argument, 0, O_AUTH_SERVER };
    opts[no++] = (struct option){ "auth-trust", required_argument, 0, O_AUTH_TRUST };
    opts[no++] = (struct option){ "auth-credential", required_argument, 0, O_AUTH_CREDENTIAL };
    opts[no++] = (struct option){ "identity-key", required_argument, 0, O_IDENTITY_KEY };
    opts[no++] = (struct option){ "identity-key-previous", required_argument, 0, O_IDENTITY_PREV };
    opts[no++] = (struct option){ "node-id", required_argument, 0, O_NODE_ID };
    opts[no++] = (struct option){ "advertise", required_argument, 0, O_ADVERTISE };
    opts[no++] = (struct option){ "gateway", required_argument, 0, O_GATEWAY };
    opts[no++] = (struct option){ "lifecycle-interval", required_argument, 0, O_LC_INTERVAL };
    opts[no++] = (struct option){ "lifecycle-max-ops", required_argument, 0, O_LC_MAX_OPS };
    opts[no++] = (struct option){ "lifecycle-day-seconds", required_argument, 0, O_LC_DAY };
    opts[no++] = (struct option){ "console", required_argument, 0, O_CONSOLE };
    for (size_t i = 0; i < nprotos; i++) {
        static const char *const suffix[3] = { "", "-tls-cert", "-tls-key" };
        const cn_protocol_t *p = &cn_protocols[i];
        for (int k = 0; k < 3; k++) {
            if (k > 0 && p->plaintext_only)
                continue; /* Scribe protocol 2 has no TLS flags: --scribe-tls has */
            snprintf(names[3 * i + (size_t)k], sizeof names[0], "%s%s",
                     k > 0 && p->tls_flags ? p->tls_flags : p->name, suffix[k]);
            opts[no++] = (struct option){ names[3 * i + (size_t)k], required_argument, 0,
                                          O_PROTO + 3 * (int)i + k };
        }
    }
    opts[no] = (struct option){ 0, 0, 0, 0 };
}

/* A loop count "0".."CN_NET_LOOPS_MAX" (0 = one per CPU), or -1. */
static int net_loops_parse(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > CN_NET_LOOPS_MAX)
        return -1;
    return (int)v;
}

/* A group rule "pq-only" or "hybrid-first" as a cn_tls_groups_t, or -1. */
static int tls_groups_parse(const char *s)
{
    if (!strcmp(s, "pq-only"))
        return CN_TLS_GROUPS_PQ_ONLY;
    return strcmp(s, "hybrid-first") ? -1 : CN_TLS_GROUPS_HYBRID_FIRST;
}

/* The group rule of the Jay and HTTP TLS listeners (docs/protocol/tls.md):
 * --tls-groups, else CAIRN_TLS_GROUPS (so that a test run can set it for
 * every server it starts), else [server] tls_groups, else hybrid-first.
 * pq-only makes every TLS listener X25519MLKEM768 alone.  0, or 2 for a bad
 * value (reported). */
static int tls_groups_apply(const cmdline_t *cl, const cn_toml_t *doc, listener_t *ls,
                            size_t nprotos)
{
    int rule = cl->tls_groups;
    const char *env = getenv("CAIRN_TLS_GROUPS");
    if (rule < 0 && env && *env && (rule = tls_groups_parse(env)) < 0) {
        fprintf(stderr, "cairnd: CAIRN_TLS_GROUPS=%s: expected pq-only or hybrid-first\n", env);
        return 2;
    }
    const char *conf = NULL;
    if (rule < 0 && doc &&
        config_string(cn_toml_get(cn_toml_root(doc), "server"), "tls_groups", &conf))
        return 2;
    if (rule < 0 && conf && (rule = tls_groups_parse(conf)) < 0) {
        fprintf(stderr, "cairnd: --config: [server] tls_groups must be pq-only or hybrid-first\n");
        return 2;
    }
    for (size_t i = 0; i < nprotos && rule == CN_TLS_GROUPS_PQ_ONLY; i++)
        ls[i].opts.tls_pq_only = true;
    return 0;
}

/* One flag of the blob tier (docs/fleet.md) into t: 0, or 2 after a usage
 * error (reported). */
static int tier_flag(int c, const char *arg, struct cn_store_tier *t)
{
    char *end = NULL;
    unsigned long long v;
    switch (c) {
    case O_BLOB_STORE: t->blob_store = arg; return 0;
    case O_BLOB_ENDPOINT: t->endpoint = arg; return 0;
    case O_BLOB_REGION: t->region = arg; return 0;
    case O_BLOB_CREDS: t->credentials_file = arg; return 0;
    case O_BLOB_VHOST: t->virtual_host = true; return 0;
    case O_CACHE_DIR: t->cache_dir = arg; return 0;
    default:
        errno = 0;
        v = strtoull(arg, &end, 10);
        int shift = !*end               ? 0
                    : !strcmp(end, "K") ? 10
                    : !strcmp(end, "M") ? 20
                    : !strcmp(end, "G") ? 30
                                        : -1;
        if (errno || end == arg || shift < 0 || v == 0 || v > (UINT64_MAX >> shift)) {
            fputs("cairnd: --cache-size wants BYTES[K|M|G], more than 0\n" CAIRND_USAGE, stderr);
            return 2;
        }
        t->cache_bytes = (uint64_t)v << shift;
        return 0;
    }
}

/* Whether --console's value is neither on, off nor an address (reported). */
static bool console_flag_bad(const char *v)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (!strcmp(v, "on") || !strcmp(v, "off") || cn_net_addr_parse(v, &ss, &sl) >= 0)
        return false;
    fprintf(stderr, "cairnd: --console wants on, off or host:port, not '%s'\n" CAIRND_USAGE, v);
    return true;
}

/* Parses argv into cl.  Returns RUN, or the exit status when cairnd is done:
 * 0 after --help or --version, 2 after a usage error (already reported). */
static int parse_flags(int argc, char **argv, size_t nprotos, cmdline_t *cl)
{
    struct option opts[32 + 3 * CN_MAX_PROTOS + 1];
    char names[3 * CN_MAX_PROTOS][48];
    build_options(opts, names, nprotos);
    *cl = (cmdline_t){
        .data_dir = "./data", .net_loops = -1, .tls_groups = -1, .level = CN_LOG_INFO
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DATA:
            if (!*optarg) {
                fputs("cairnd: --data needs a directory\n" CAIRND_USAGE, stderr);
                return 2;
            }
            cl->data_dir = optarg;
            break;
        case O_META:
            if (strncmp(optarg, "postgres://", 11) && strncmp(optarg, "postgresql://", 13) &&
                (strncmp(optarg, "sqlite:", 7) || !optarg[7])) {
                fputs("cairnd: --meta wants postgres://... or sqlite:PATH\n" CAIRND_USAGE, stderr);
                return 2;
            }
            cl->meta = optarg;
            break;
        case O_MIGRATE_ONLY: cl->migrate_only = true; break;
        case O_AUTH_SERVER: cl->auth.server = optarg; break;
        case O_AUTH_TRUST: cl->auth.trust = optarg; break;
        case O_AUTH_CREDENTIAL: cl->auth.credential = optarg; break;
        case O_IDENTITY_KEY:
            if (!*optarg) {
                fputs("cairnd: --identity-key needs a file\n" CAIRND_USAGE, stderr);
                return 2;
            }
            cl->identity_key = optarg;
            break;
        case O_IDENTITY_PREV:
            if (!*optarg || cl->n_identity_prev == CAIRND_PREV_KEYS) {
                fputs("cairnd: --identity-key-previous needs a file (at most 4)\n" CAIRND_USAGE,
                      stderr);
                return 2;
            }
            cl->identity_prev[cl->n_identity_prev++] = optarg;
            break;
        case O_NODE_ID:
            if (!cn_node_id_ok(optarg)) {
                fputs("cairnd: --node-id wants 1 to 64 of A-Z a-z 0-9 . _ -\n" CAIRND_USAGE,
                      stderr);
                return 2;
            }
            cl->node_id = optarg;
            break;
        case O_ADVERTISE: cl->advertise = optarg; break;
        case O_CONFIG: cl->config_path = optarg; break;
        case O_GATEWAY: cl->gateway = optarg; break;
        case O_CONSOLE:
            if (console_flag_bad(optarg))
                return 2;
            cl->console = optarg;
            break;
        case O_LC_INTERVAL: cl->lc.interval = optarg; break;
        case O_LC_MAX_OPS: cl->lc.max_ops = optarg; break;
        case O_LC_DAY: cl->lc.day_seconds = optarg; break;
        case O_LEVEL:
            if (cn_log_level_parse(optarg, &cl->level) < 0) {
                fprintf(stderr, "cairnd: --log-level: unknown level '%s'\n" CAIRND_USAGE, optarg);
                return 2;
            }
            break;
        case O_FORMAT:
            if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
                fprintf(stderr,
                        "cairnd: --log-format must be text or json, not '%s'\n" CAIRND_USAGE,
                        optarg);
                return 2;
            }
            cl->json = strcmp(optarg, "json") == 0;
            break;
        case O_HELP: /* two strings: each within C's 4,095-byte literal */
            fputs(CAIRND_USAGE, stdout);
            fputs(CAIRND_HELP, stdout);
            fputs(CAIRND_HELP_LC, stdout);
            return 0;
        case O_VERSION: puts("cairnd " CAIRN_VERSION); return 0;
        case O_PUBLIC: cl->allow_public = true; break;
        case O_LOOPS:
            if ((cl->net_loops = net_loops_parse(optarg)) < 0) {
                fprintf(stderr,
                        "cairnd: --net-loops must be an integer from 0 to %d\n" CAIRND_USAGE,
                        CN_NET_LOOPS_MAX);
                return 2;
            }
            break;
        case O_GROUPS:
            if ((cl->tls_groups = tls_groups_parse(optarg)) < 0) {
                fputs("cairnd: --tls-groups must be pq-only or hybrid-first\n" CAIRND_USAGE,
                      stderr);
                return 2;
            }
            break;
        default:
            if (c >= O_BLOB_STORE && c <= O_CACHE_SIZE) {
                if (tier_flag(c, optarg, &cl->tier))
                    return 2;
                break;
            }
            if (c >= O_PROTO && c < O_PROTO + 3 * (int)nprotos) {
                listener_flags_t *f = &cl->flags[(c - O_PROTO) / 3];
                const char **slot = (c - O_PROTO) % 3 == 0   ? &f->addr
                                    : (c - O_PROTO) % 3 == 1 ? &f->tls_cert
                                                             : &f->tls_key;
                *slot = optarg;
                break;
            }
            if (optopt)
                fprintf(stderr, "cairnd: %s needs a value\n", argv[optind - 1]);
            else
                fprintf(stderr, "cairnd: unknown option '%s'\n", argv[optind - 1]);
            fputs(CAIRND_USAGE, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cairnd: unexpected argument '%s'\n" CAIRND_USAGE, argv[optind]);
        return 2;
    }
    return RUN;
}

/* ---- listeners -------------------------------------------------------------------- */

/* Whether the auth listener runs in this process and storage asks it (no
 * --auth-server): then --scribe-tls may go without certificate files. */
static bool local_auth(const listener_t *ls, size_t nprotos, const cmdline_t *cl)
{
    for (size_t j = 0; j < nprotos; j++)
        if (!strcmp(ls[j].proto->name, "auth")) {
            const char *a = cl->flags[j].addr ? cl->flags[j].addr
                            : ls[j].opts.addr ? ls[j].opts.addr
                                              : ls[j].proto->default_addr;
            return strcmp(a, "off") != 0 && !cl->auth.server;
        }
    return false;
}

/* Settles each listener's address and TLS files (flag > environment > config
 * > default) and checks them.  Returns 0 with *nenabled set, 2 for a bad
 * address or half a TLS pair, 1 when an enabled protocol is not built in
 * (each reported on stderr). */
static int resolve_listeners(listener_t *ls, size_t nprotos, const cmdline_t *cl, size_t *nenabled)
{
    bool missing = false;
    *nenabled = 0;
    for (size_t i = 0; i < nprotos; i++) {
        listener_t *l = &ls[i];
        const cn_protocol_t *p = l->proto;
        const listener_flags_t *fl = &cl->flags[i];
        if (fl->addr)
            l->opts.addr = fl->addr;
        if (!l->opts.addr)
            l->opts.addr = p->default_addr;
        const char *env_cert = p->env_tls_cert ? getenv(p->env_tls_cert) : NULL;
        const char *env_key = p->env_tls_key ? getenv(p->env_tls_key) : NULL;
        if (fl->tls_cert || fl->tls_key) {
            l->opts.tls_cert = fl->tls_cert;
            l->opts.tls_key = fl->tls_key;
        } else if ((env_cert && *env_cert) || (env_key && *env_key)) {
            l->opts.tls_cert = env_cert && *env_cert ? env_cert : NULL;
            l->opts.tls_key = env_key && *env_key ? env_key : NULL;
        }
        l->opts.allow_plaintext_public = cl->allow_public;
        l->enabled = strcmp(l->opts.addr, "off") != 0;
        if (!l->enabled)
            continue;
        struct sockaddr_storage ss;
        socklen_t sl;
        if (cn_net_addr_parse(l->opts.addr, &ss, &sl) < 0) {
            fprintf(
                stderr,
                "cairnd: --%s: bad address '%s' (want host:port, [v6]:port or off)\n" CAIRND_USAGE,
                p->name, l->opts.addr);
            return 2;
        }
        const char *stem = p->tls_flags ? p->tls_flags : p->name;
        if (p->plaintext_only && (l->opts.tls_cert || l->opts.tls_key)) {
            fprintf(stderr,
                    "cairnd: --%s is plaintext protocol 2; TLS (protocol 4) is --%s-tls ADDR\n",
                    p->name, p->name);
            return 2;
        }
        l->own_cert =
            p->tls_required && !l->opts.tls_cert && !l->opts.tls_key && local_auth(ls, nprotos, cl);
        if (!l->opts.tls_cert != !l->opts.tls_key ||
            (p->tls_required && !l->opts.tls_cert && !l->own_cert)) {
            fprintf(stderr, "cairnd: --%s: TLS needs both --%s-tls-cert and --%s-tls-key\n",
                    p->name, stem, stem);
            return 2;
        }
        l->opts.tls_pq_only = p->tls_pq_only;
        l->opts.tls_client_cert = p->tls_client_cert;
        if (!p->create && !p->start) {
            fprintf(stderr, "cairnd: the %s protocol is not built in this version; pass --%s off\n",
                    p->name, p->name);
            missing = true;
        }
        (*nenabled)++;
    }
    return missing ? 1 : 0;
}

/* --scribe-tls beside --auth, without certificate files: auth's server CA
 * issues the listener's (cn_auth_storage_tls_files), so clients trust the
 * trust bundle.  0, or -1 (reported). */
static int own_cert(cn_services_t *svc, listener_t *l)
{
    char fp[65];
    bool issued = false;
    cn_err_t e = cn_auth_storage_tls_files(svc->meta, svc->data_dir, l->opts.addr, l->own[0],
                                           l->own[1], sizeof l->own[0], fp, &issued);
    if (e < 0) {
        cn_error("cairnd", "%s: no --%s-tls-cert/-key, and auth's server CA cannot issue one: %s",
                 l->proto->name, l->proto->tls_flags ? l->proto->tls_flags : l->proto->name,
                 e == CN_E_NOT_FOUND ? "no auth state (cairn admin auth init)" : cn_strerror(e));
        return -1;
    }
    l->opts.tls_cert = l->own[0];
    l->opts.tls_key = l->own[1];
    cn_info("cairnd",
            "%s: %s certificate from auth's server CA, %s (SHA-256 %s); clients trust "
            "the trust bundle",
            l->proto->name, issued ? "a new" : "the", l->own[0], fp);
    return 0;
}

/* Opens the services, starts every enabled listener and runs until stopped;
 * then stops and frees them in reverse order.  Returns the exit status. */
/* --migrate-only: opens the services, which applies every pending schema
 * step (under the engine's schema lock: docs/fleet.md), and closes them
 * again without listening.  Returns the exit status. */
static int migrate_only(const cmdline_t *cl, const cn_toml_t *doc)
{
    cn_services_t *svc = NULL;
    if (cn_services_open(cl->data_dir, cl->meta, cl->identity_key, cl->identity_prev, doc,
                         &cl->tier, &svc) < 0)
        return 1;
    cn_err_t e = cn_node_migrate(svc->meta); /* the node registry's steps too */
    if (e >= 0)
        e = cn_console_migrate(svc->meta); /* and the console's sessions */
    cn_services_close(svc);
    if (e < 0) {
        cn_error("cairnd", "cannot migrate the node registry or the console sessions: %s",
                 cn_strerror(e));
        return 1;
    }
    cn_info("cairnd", "--migrate-only: the schema is current");
    return 0;
}

static int serve(const cmdline_t *cl, const cn_toml_t *doc, const cn_server_config_t *scfg,
                 listener_t *ls, size_t nprotos, size_t nenabled)
{
    int status = 1;
    cn_services_t *svc = NULL;
    cn_server_t *srv = NULL;
    cn_node_t *node = NULL;
    if (cn_services_open(cl->data_dir, cl->meta, cl->identity_key, cl->identity_prev, doc,
                         &cl->tier, &svc) < 0)
        goto out;
    /* The fleet's node registry (docs/fleet.md): a row and its heartbeat. */
    if (cn_node_start(svc->meta, cl->data_dir, cl->node_id, cl->advertise, cn_node_every_ms(),
                      &node) < 0)
        goto out_services;
    svc->auth = cl->auth;
    svc->gateway = cl->gwcfg;
    svc->console = cl->console;
    svc->node_id = cn_node_id(node);
    /* The S3 lifecycle worker: serving processes only (never --migrate-only). */
    if (cn_services_lifecycle_start(svc, &cl->lc) < 0)
        goto out_services;
    cn_err_t e = cn_server_create(scfg, &srv);
    if (e < 0) {
        cn_error("cairnd", "cannot start the network layer: %s", cn_strerror(e));
        goto out_services;
    }
    for (size_t i = 0; i < nprotos; i++) {
        listener_t *l = &ls[i];
        if (!l->enabled)
            continue;
        if (l->proto->start) {
            e = l->proto->start(svc, l->section, &l->opts, srv, &l->actx);
            if (e < 0) {
                cn_error("cairnd", "%s: cannot start: %s", l->proto->name, cn_strerror(e));
                goto out_server;
            }
            continue;
        }
        if (l->own_cert && own_cert(svc, l) < 0)
            goto out_server;
        e = l->proto->create(svc, l->section, &l->ad, &l->actx);
        if (e < 0) {
            cn_error("cairnd", "%s: cannot start: %s", l->proto->name, cn_strerror(e));
            goto out_server;
        }
        if (cn_server_listen(srv, l->ad, l->actx, &l->opts) < 0)
            goto out_server;
    }
    if (nenabled == 0)
        cn_warn("cairnd", "every listener is off: serving nothing until stopped");
    e = cn_server_run(srv);
    status = e < 0 ? 1 : 0;
out_server:
    for (size_t i = 0; i < nprotos; i++)
        if (ls[i].actx && ls[i].proto->stop) {
            ls[i].proto->stop(ls[i].actx);
            ls[i].actx = NULL;
        }
    cn_server_destroy(srv);
    for (size_t i = 0; i < nprotos; i++)
        if (ls[i].actx && ls[i].proto->destroy)
            ls[i].proto->destroy(ls[i].actx);
out_services:
    cn_node_stop(node);
    cn_services_close(svc);
out:
    return status;
}

/* --gateway FILE: loads and checks the gateway's configuration
 * (docs/protocol/scribe-gateway.md) into cl->gwcfg, and turns the Jay and
 * HTTP listeners off unless a flag or the config file names their address.
 * 0, or 2 for a configuration the gateway cannot start with (reported). */
static int gateway_prepare(cmdline_t *cl, listener_t *ls, size_t nprotos)
{
    char err[512] = "";
    cl->gwcfg = malloc(sizeof *cl->gwcfg);
    if (!cl->gwcfg || cn_gw_config_load(cl->gateway, cl->gwcfg, err, sizeof err) < 0) {
        fprintf(stderr, "cairnd: --gateway %s: %s\n", cl->gateway, cl->gwcfg ? err : "no memory");
        return 2;
    }
    /* plaintext storage: the gateway is --scribe (protocol 2); scribes://
     * storage: --scribe-tls (protocol 4), with its own credential */
    bool tls = cl->gwcfg->tls;
    const char *serves = tls ? "scribe-tls" : "scribe", *other = tls ? "scribe" : "scribe-tls";
    if (tls && (!cl->auth.server || !cl->auth.trust || !cl->auth.credential)) {
        fprintf(stderr,
                "cairnd: --gateway %s: scribes:// storage needs the gateway's own "
                "credential: --auth-server, --auth-trust and --auth-credential\n",
                cl->gateway);
        return 2;
    }
    for (size_t i = 0; i < nprotos; i++) {
        const char *name = ls[i].proto->name;
        bool given = cl->flags[i].addr && strcmp(cl->flags[i].addr, "off");
        if (!strcmp(name, other) && given) {
            fprintf(stderr,
                    "cairnd: --gateway %s: this gateway serves --%s (%s storage), "
                    "not --%s\n",
                    cl->gateway, serves, tls ? "scribes://" : "plaintext", other);
            return 2;
        }
        if (!strcmp(name, serves) && tls && !given) {
            fprintf(stderr, "cairnd: --gateway %s: scribes:// storage: give --scribe-tls ADDR\n",
                    cl->gateway);
            return 2;
        }
        if (strcmp(name, serves) && !cl->flags[i].addr && !ls[i].opts.addr)
            ls[i].opts.addr = "off";
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------------- */
int main(int argc, char **argv)
{
    /* Before any thread exists: the signals that stop the server arrive only
     * through the server's signalfd, never in a service thread. */
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGTERM);
    sigaddset(&stopset, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopset, NULL);
    signal(SIGPIPE, SIG_IGN);
    cn_wall_skew_from_env();

    size_t nprotos = cn_protocols_count < CN_MAX_PROTOS ? cn_protocols_count : CN_MAX_PROTOS;
    cmdline_t cl;
    int status = parse_flags(argc, argv, nprotos, &cl);
    if (status != RUN)
        return status;
    cn_log_configure(cl.level, cl.json);

    cn_server_config_t scfg;
    cn_server_config_default(&scfg);
    /* cairnd runs one loop per CPU unless told otherwise: measured faster than
     * one loop on a quiet machine (docs/performance.md, "Several event loops
     * on a quiet machine"); the library's default stays 1 for embedders. */
    scfg.loops = 0;
    scfg.handle_signals = true;
    listener_t ls[CN_MAX_PROTOS];
    memset(ls, 0, sizeof ls);
    for (size_t i = 0; i < nprotos; i++) {
        ls[i].proto = &cn_protocols[i];
        cn_limits_default(&ls[i].opts.limits);
        if (ls[i].proto->max_conns)
            ls[i].opts.limits.max_conns = ls[i].proto->max_conns;
        if (ls[i].proto->max_pending_per_source)
            ls[i].opts.limits.max_pending_per_source = ls[i].proto->max_pending_per_source;
        if (ls[i].proto->max_conns_per_principal)
            ls[i].opts.limits.max_conns_per_principal = ls[i].proto->max_conns_per_principal;
        if (ls[i].proto->budget_anonymous)
            ls[i].opts.limits.budget_anonymous = ls[i].proto->budget_anonymous;
    }
    cn_toml_t *doc = NULL;
    if (cl.config_path) {
        char err[512];
        if (cn_toml_load(cl.config_path, &doc, err, sizeof err) < 0) {
            fprintf(stderr, "cairnd: --config: %s\n", err);
            return 2;
        }
        status = config_apply(doc, &scfg, &cl.allow_public, ls, nprotos);
        if (!status && !cl.identity_key)
            status = config_string(cn_toml_get(cn_toml_root(doc), "server"), "identity_key",
                                   &cl.identity_key);
        if (!status && !cl.n_identity_prev)
            status = config_prev_keys(cn_toml_get(cn_toml_root(doc), "server"), &cl);
        if (status)
            goto out;
    }
    /* The loop count: --net-loops, else CAIRN_NET_LOOPS (so that a test run
     * can set it for every server it starts), else [server] net_loops, else
     * one per CPU: flags over the environment over the file. */
    const char *env_loops = getenv("CAIRN_NET_LOOPS");
    if (env_loops && *env_loops) {
        int v = net_loops_parse(env_loops);
        if (v < 0) {
            fprintf(stderr, "cairnd: CAIRN_NET_LOOPS must be an integer from 0 to %d\n",
                    CN_NET_LOOPS_MAX);
            status = 2;
            goto out;
        }
        scfg.loops = (unsigned)v;
    }
    if (cl.net_loops >= 0)
        scfg.loops = (unsigned)cl.net_loops;
    size_t nenabled = 0;
    if (cn_services_config_check(doc, &cl.lc) < 0) { /* [store], [objects], --lifecycle-* */
        status = 2;
        goto out;
    }
    if (cl.gateway && (status = gateway_prepare(&cl, ls, nprotos)))
        goto out;
    status = resolve_listeners(ls, nprotos, &cl, &nenabled);
    if (!status)
        status = tls_groups_apply(&cl, doc, ls, nprotos);
    if (status)
        goto out;
    cn_info("cairnd", "cairnd %s starting; data in %s", CAIRN_VERSION, cl.data_dir);
    status =
        cl.migrate_only ? migrate_only(&cl, doc) : serve(&cl, doc, &scfg, ls, nprotos, nenabled);
out:
    free(cl.gwcfg);
    cn_toml_free(doc);
    return status;
}
