/* The fleet's node registry (fleet_node.c): cairnd's row in cn_nodes with
 * its heartbeat, and the listing `cairn admin fleet status` prints.  Internal
 * to src/cmd. */
#ifndef CN_CMD_FLEET_NODE_H
#define CN_CMD_FLEET_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "cairn/meta.h"

#define CN_NODE_ID_MAX 64 /* [A-Za-z0-9._-]+ */

typedef struct cn_node cn_node_t;

/* Registers this node and starts its heartbeat (every every_ms, > 0).  id:
 * --node-id, else DATA/node.id (created once with a random id); advertise
 * may be NULL.  Errors: CN_E_INVALID (a malformed id, logged), meta errors,
 * -errno.  *out is stopped by cn_node_stop. */
cn_err_t cn_node_start(cn_meta_t *meta, const char *data_dir, const char *id, const char *advertise,
                       int64_t every_ms, cn_node_t **out);
/* Applies the registry's schema steps (cairnd --migrate-only). */
cn_err_t cn_node_migrate(cn_meta_t *meta);
/* Stops the heartbeat and marks the node stopped.  NULL is a no-op. */
void cn_node_stop(cn_node_t *n);
/* The node's id (valid until cn_node_stop). */
const char *cn_node_id(const cn_node_t *n);
/* Records where node id's console listens when it has a listener of its own
 * (cairnd --console ADDR), bound on port: its row's advertise URL with that
 * port, scheme https when tls, else http.  Without an http(s) advertise the
 * column stays NULL (peers cannot reach the node anyway).  Errors: meta's. */
cn_err_t cn_node_console(cn_meta_t *meta, const char *id, bool tls, int port);

/* One node as listed. */
typedef struct cn_node_info {
    char id[CN_NODE_ID_MAX + 1];
    char advertise[256]; /* "" when none (cut when longer) */
    char console[256];   /* the console's own base URL, "" when on the HTTP listener */
    char version[64];
    int64_t started_ms, heartbeat_ms, every_ms, stopped_ms; /* stopped_ms 0: running */
} cn_node_info_t;

/* Calls fn for every registered node, by id; fn's error stops the walk. */
typedef cn_err_t (*cn_node_fn)(void *arg, const cn_node_info_t *n);
cn_err_t cn_node_list(cn_meta_t *meta, cn_node_fn fn, void *arg);

/* The heartbeat interval: CAIRN_NODE_HEARTBEAT_MS (10 to 3,600,000), else
 * 10,000 (a bad value is logged and ignored). */
int64_t cn_node_every_ms(void);

/* "up", "stopped", or "lost" (no heartbeat for three of its intervals). */
const char *cn_node_state(const cn_node_info_t *n, int64_t now_ms);

bool cn_node_id_ok(const char *id);

#endif
