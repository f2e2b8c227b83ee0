/* The watcher's seam in meta (watch.c): where a cn_meta keeps its watcher,
 * and what watch.c needs of the PostgreSQL engine.  Internal to src/meta.
 *
 * The watcher must never be reached by callers except through cairn/meta.h
 * (cn_meta_watch_start, cn_meta_topic_gen, cn_meta_lease, cn_meta_notify). */
#ifndef CN_META_WATCH_H
#define CN_META_WATCH_H

#include "engine.h"

typedef struct cn__meta_watch cn__meta_watch_t;

/* meta.c: meta's watcher slot (NULL until cn_meta_watch_start filled it)
 * and, in *db, its engine's database. */
cn__meta_watch_t *_Atomic *cn__meta_watch_slot(cn_meta_t *meta, cn__meta_db_t **db);

/* watch.c: stops the thread, closes its connection (which frees every lease
 * held) and frees w.  NULL is a no-op.  meta.c calls it first in close. */
void cn__meta_watch_free(cn__meta_watch_t *w);

/* engine_pg.c: the connection URI db was opened with. */
const char *cn__meta_pg_uri(const cn__meta_db_t *db);

/* How long, in ms as libpq and the server's GUC take it, sent data may go
 * unacknowledged before the kernel breaks a connection to or from a node
 * (TCP_USER_TIMEOUT): the bound of a network partition under an open
 * connection, as the keepalives (5 s idle, 2 probes 2 s apart) bound it
 * for an idle one. */
#define CN__META_PG_USER_TIMEOUT_MS "9000"

/* The same bounds on the server's side of a session (its GUCs, set once
 * per session): the server ends the session of a node that vanished or was
 * cut off in about 9 s, and with it the transaction it had open, its row
 * locks and its advisory locks, instead of keeping them for the kernel's
 * keepalive time (two hours by default). */
#define CN__META_PG_SERVER_TCP                                      \
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2;" \
    " SET tcp_keepalives_count = 2; SET tcp_user_timeout = " CN__META_PG_USER_TIMEOUT_MS

/* engine_pg.c: its round-trip timeout in ms (invariant 12), which the
 * watcher's own waits keep too. */
unsigned cn__meta_pg_round_trip_ms(const cn__meta_db_t *db);

/* engine_pg.c: what a libpq connection's target_session_attrs asks of its
 * server (an opaque value for cn__meta_pg_off_target), and whether the
 * server, as it last reported (PostgreSQL >= 14 reports in_hot_standby and
 * default_transaction_read_only when they change), is no longer that: a
 * primary demoted or turned read-only since the connect, which libpq checks
 * only when it connects.  Such a connection is to be reset. */
struct pg_conn;
int cn__meta_pg_want(struct pg_conn *pg);
bool cn__meta_pg_off_target(const struct pg_conn *pg, int want);

#endif
