/* Bounded waits on a PostgreSQL server (pg_wait.c): libpq's blocking calls
 * with a deadline on the server's answer.  Internal to src/meta.
 *
 * A server that keeps the connection but never answers (a hung or stopped
 * process, an I/O stall, a proxy that holds the socket) passes every TCP
 * check: the kernel acknowledges the bytes and the keepalives.  libpq's
 * blocking calls would wait for it for ever.  These wait at most ms for the
 * answer; past it the connection is cut (its socket shut down), so libpq
 * reads its end and the caller sees a lost connection, which the engine
 * already handles (a reset, a repeat, or a COMMIT resolved by its id).
 *
 * What they must never do: cut a connection that is answering (the clock
 * runs from the request to the first byte of its answer and again between
 * reads, never across the caller's own work), or wait when ms is 0 (no
 * deadline: libpq's own blocking behaviour). */
#ifndef CN_META_PG_WAIT_H
#define CN_META_PG_WAIT_H

#include <libpq-fe.h>

/* PQexec(pg, sql), its answer awaited for at most ms between reads. */
PGresult *cn__pg_exec(PGconn *pg, const char *sql, unsigned ms);

/* After a PQsend* that returned sent: the query's last result as PQexec
 * returns it (an error result wins over later ones); NULL when sent is 0. */
PGresult *cn__pg_collect(PGconn *pg, int sent, unsigned ms);

/* PQgetResult(pg), waiting at most ms for input when it would block. */
PGresult *cn__pg_result(PGconn *pg, unsigned ms);

#endif
