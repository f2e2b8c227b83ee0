/* The PostgreSQL metadata engine (libpq): a connection URI instead of a file.
 *
 * What it must never do: log or keep a bound value in an error message
 * (messages carry the SQLSTATE and, for data and constraint errors, only the
 * constraint's name), or hold a transaction open across calls of meta.c.
 *
 * Invariants:
 *  1. Statements are prepared once per connection under a generated name
 *     (PQprepare), with `?` / `?N` placeholders rewritten to `$N` outside
 *     quotes; PQdescribePrepared tells each parameter's type, so a blob or a
 *     text bound to a bytea parameter travels in binary form, everything
 *     else as text.  Results come back as text; bytea columns are decoded
 *     from hex on demand.
 *  2. A finalized statement's name is queued and deallocated before the
 *     connection's next BEGIN, outside any transaction: DEALLOCATE inside a
 *     failed transaction would itself fail.
 *  3. A connection found broken is reset at the next begin; the reset bumps
 *     the connection's generation, and a statement prepared in an older
 *     generation is prepared again before it runs (the server forgot it).
 *     So is one whose server refused a write as read-only (25006, answered
 *     CN_E_UNAVAILABLE) or no longer is what the URI's target_session_attrs
 *     asked for: libpq tries the URI's hosts again, in order.
 *  4. Writes run SERIALIZABLE, reads REPEATABLE READ READ ONLY (one
 *     snapshot, as SQLite's WAL readers); a CN_META_READ_ONE read runs its
 *     one statement with no BEGIN (a statement is its own snapshot).
 *     Serialization failures (40001), deadlocks (40P01) and lock timeouts
 *     (55P03, lock_timeout = the busy timeout) map to CN_E_DB_LOCKED, the
 *     class cn_meta_run repeats, as it repeats SQLITE_BUSY.
 *  5. Schema changes run READ COMMITTED after pg_advisory_xact_lock(SCHEMA_
 *     LOCK): a node that waited for another's migration sees its result in
 *     the next statement's snapshot.
 *  6. sync() is a no-op: a COMMIT that returned is durable by the server's
 *     own settings (synchronous_commit).
 *  7. A write transaction's outcome is never reported wrongly: before its
 *     COMMIT its writer connection (one of meta.c's pool; each keeps its own
 *     id, incarnation and statements) reads the transaction's id (its
 *     operation key; none when it wrote nothing) -- in the same round trip
 *     as the transaction's first INSERT, UPDATE or DELETE that assigned one
 *     (piped behind it), else by itself before COMMIT -- and a connection
 *     lost in COMMIT is resolved by that id on that connection, opened again
 *     (pg_xact_status), before answering:
 *     committed is success, aborted a failure that applied nothing; only
 *     when the server cannot be asked within the busy timeout is the
 *     outcome unknown (CN_E_UNAVAILABLE, logged as such).
 *  8. A transaction id is asked about only on the server incarnation that
 *     assigned it: the same timeline and the same postmaster start, read
 *     once per session before its first COMMIT that has an id (a primary's
 *     incarnation never changes under a session).  A promoted standby, or a
 *     server restarted after a crash, may have never received the id's WAL
 *     and hand the same id to another transaction, whose status would
 *     answer for ours; on another incarnation the outcome is unknown at
 *     once.
 *  9. Every CN_E_UNAVAILABLE for a lost server (a connection broken or not
 *     made, 08xxx, 57P0x, 25006) is reported to run.c (cn__meta_note_lost,
 *     run.c R5-R7) as CN__META_LOST_CLEAN: no COMMIT of the transaction
 *     was sent, so the server rolled it back whole, or COMMIT was lost and
 *     invariant 7 resolved it as aborted; an unresolved COMMIT is reported
 *     CN__META_LOST_UNKNOWN.  run.c repeats a repeatable body only on the
 *     first, so a failover costs such a request a wait, not an error.
 * 10. A transaction's BEGIN is not sent alone: begin only readies the
 *     connection and keeps the BEGIN pending, and the transaction's first
 *     prepared statement carries it (libpq's pipeline mode: BEGIN, the
 *     statement and a sync in one write, their answers in one read), so a
 *     transaction costs one round trip less.  Any other first use of the
 *     transaction (pg_exec) sends it alone first; a transaction that ran no
 *     statement sends nothing, neither BEGIN nor COMMIT nor ROLLBACK.  Its
 *     answer is checked before the statement's: a BEGIN that failed is the
 *     run's error (the statement is then never run).  A connection found
 *     broken by that first use, or by preparing a statement before it, is
 *     reset and the use made once more: nothing of the transaction ran, as
 *     when a BEGIN sent alone found it broken.
 * 11. A ROLLBACK is sent without waiting for its answer (the server ends the
 *     transaction and releases its snapshot as soon as it reads it); the
 *     answer is read before the connection's next use, in conn_ready, which
 *     every transaction's begin goes through, so no other use meets it.
 * 12. Every wait for the server's answer is bounded by the round-trip
 *     timeout (pg_wait.h), except a schema change's (its advisory lock waits
 *     for another node's migration, and a migration may rewrite a table): a
 *     server that keeps the connection and never answers (hung, stopped, its
 *     disk stalled) has the connection cut, which is a lost connection under
 *     invariants 3, 7, 9 and 10, so the request fails unavailable or is
 *     repeated on another host instead of holding its worker for ever.
 * 13. A pushed statement (cn_meta_pushf) is sent in a pipeline left open,
 *     its answer unread, with the transaction's pending BEGIN before it
 *     and, for its first write, the transaction's id after it (7, 10); the
 *     kind of every query sent is kept in c->pk.  Any other use of the
 *     connection reads those answers first, in one round trip with its own
 *     statement when it is one (run_piped), else alone (pipe_flush): the
 *     first that failed is that use's error, and the statements after it
 *     were skipped by the server (the transaction is failed already).  A
 *     rollback reads and drops them.  So a pushed failure is never lost,
 *     COMMIT is never sent before every pushed answer is read (7 holds: the
 *     id is known before COMMIT), and a connection lost with pushes unread
 *     is lost clean (9): no COMMIT was sent.
 * 14. A writer session bounds the server's wait between two statements of
 *     a transaction (idle_in_transaction_session_timeout, the write idle
 *     bound of cn_meta_opts_t, 60 s by default): a node that hangs inside a
 *     write transaction (stopped, stuck, its kernel still answering, which
 *     no TCP bound detects) has its session ended and its row locks
 *     released, and finds its transaction lost when it goes on (7, 9).
 *     Reader sessions have no bound: a read holds no row lock, and a
 *     backup's read waits on the blob tier between statements.
 */
#include "engine.h"
#include "pg_wait.h"
#include "watch.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "cairn/util.h"

#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_BYTEA_ARRAY 1001
/* The key of the advisory lock every schema change holds ('cair'). */
#define SCHEMA_LOCK "1667328370"
#define ERRMSG_MAX 256
/* Queries sent unanswered at most (invariant 13): more pushes read them.
 * Their answers (a few dozen bytes each) stay far under a socket's buffer,
 * so the server never blocks writing them while this side still writes. */
#define PIPE_MAX 128
/* The write idle bound when cn_meta_opts_t leaves it 0 (invariant 14):
 * above the blob tier's and the round trip's default deadlines (30 s, 15 s),
 * so a node waiting on either is never ended for it. */
#define DEFAULT_WRITE_IDLE_MS 60000u

struct cn__meta_db {
    char *uri;
    unsigned busy_ms;
    unsigned rt_ms;   /* invariant 12 */
    unsigned idle_ms; /* invariant 14; 0: no bound */
    char *fault;      /* CAIRN_TEST_PG_COMMIT_FAULT: the test hook's trigger file */
};

struct cn__meta_conn {
    cn__meta_db_t *db;
    PGconn *pg;
    bool writer;
    uint64_t gen;     /* bumped by every reset (invariant 3) */
    uint64_t next_id; /* statement names */
    uint64_t xid_gen; /* gen + 1 once "cn_xid" is prepared (current_xid) */
    uint64_t inc_gen; /* gen + 1 once inc is read (invariant 8) */
    char inc[64];     /* the server's incarnation, "TIMELINE/START" ("" unknown) */
    int64_t changes;  /* rows of the last INSERT/UPDATE/DELETE */
    char **dead;      /* names to deallocate before the next BEGIN */
    size_t ndead, capdead;
    int want;                   /* the URI's target_session_attrs: WANT_ANY, _RW, _PRIMARY */
    bool stale;                 /* reset at the next begin: the server refused a write (25006) */
    const char *pending;        /* a BEGIN not sent yet (invariant 10), or NULL */
    char xid[32];               /* the transaction's id once read (invariant 7), else "" */
    bool schema;                /* in a schema change: no round-trip timeout (invariant 12) */
    bool unread;                /* a ROLLBACK's answer not read yet (invariant 11) */
    unsigned char pk[PIPE_MAX]; /* the kinds of the queries sent unanswered (13) */
    int npk;
    char err[ERRMSG_MAX];
};

/* What a connection's target_session_attrs asks of its server. */
enum {
    WANT_ANY,
    WANT_RW,
    WANT_PRIMARY
};

typedef struct pg_val {
    char *p; /* NULL: SQL NULL */
    int len;
    int fmt; /* 0 text, 1 binary */
} pg_val_t;

struct cn__meta_raw {
    cn__meta_conn_t *c;
    char *sql; /* with $N placeholders */
    char name[24];
    uint64_t gen;
    int nparams, ncols;
    bool writes; /* an INSERT, UPDATE or DELETE: may assign the transaction's id */
    unsigned *ptypes, *ctypes;
    pg_val_t *vals;
    const char **pv; /* PQexecPrepared's arrays, filled from vals */
    int *pl, *pf;
    PGresult *res;
    int row, nrows;
    bool done;
    char **dec; /* decoded bytea of the current row, by column */
    size_t *declen;
};

/* ---- errors ------------------------------------------------------------------ */

static cn_err_t map_state(const char *st)
{
    if (!st || strlen(st) != 5)
        return CN_E_DB;
    if (strcmp(st, "23505") == 0)
        return CN_E_EXISTS;
    if (strncmp(st, "23", 2) == 0 || strncmp(st, "22", 2) == 0)
        return CN_E_INVALID;
    if (!strcmp(st, "40001") || !strcmp(st, "40P01") || !strcmp(st, "55P03") ||
        !strcmp(st, "57014"))
        return CN_E_DB_LOCKED;
    if (strcmp(st, "25P02") == 0)
        return CN_E_CONFLICT;
    if (strcmp(st, "42501") == 0)
        return -EACCES;
    if (strncmp(st, "42", 2) == 0)
        return CN_E_INVALID;
    if (strcmp(st, "53100") == 0)
        return -ENOSPC;
    if (strcmp(st, "53200") == 0)
        return -ENOMEM;
    if (strcmp(st, "53300") == 0)
        return CN_E_BUSY;
    if (strncmp(st, "08", 2) == 0 || !strcmp(st, "57P01") || !strcmp(st, "57P02") ||
        !strcmp(st, "57P03") || !strcmp(st, "25006"))
        return CN_E_UNAVAILABLE;
    if (strncmp(st, "XX00", 4) == 0 && (st[4] == '1' || st[4] == '2'))
        return CN_E_CORRUPT;
    return CN_E_DB;
}

/* Records res's failure in c->err without any value it may quote, and maps
 * it.  res may be NULL (out of memory or the connection lost). */
static cn_err_t pg_fail(cn__meta_conn_t *c, const PGresult *res)
{
    const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!st) {
        /* libpq's own failure.  A send to a server that died ("server closed
         * the connection unexpectedly") leaves the connection OK until its
         * end is read: read it now, so the status tells a lost server. */
        if (PQstatus(c->pg) == CONNECTION_OK)
            (void)PQconsumeInput(c->pg);
        bool bad = PQstatus(c->pg) == CONNECTION_BAD;
        snprintf(c->err, sizeof c->err, "postgres: %s", bad ? "connection lost" : "no result");
        if (bad)
            cn__meta_note_lost(CN__META_LOST_CLEAN); /* invariant 9 */
        else
            c->stale = true; /* the session's state is not known: a new one (invariant 3) */
        return bad ? CN_E_UNAVAILABLE : CN_E_DB;
    }
    const char *what = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char *cons = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    if (strncmp(st, "22", 2) == 0)
        what = "data exception"; /* the primary message may quote the value */
    else if (strncmp(st, "23", 2) == 0)
        what = "constraint violated";
    snprintf(c->err, sizeof c->err, "postgres %s: %s%s%s", st, what ? what : "error",
             cons ? ": " : "", cons ? cons : "");
    if (strcmp(st, "25006") == 0)
        c->stale = true; /* read_only_sql_transaction: the next connection may reach a primary */
    cn_err_t e = map_state(st);
    if (e == CN_E_UNAVAILABLE)
        cn__meta_note_lost(CN__META_LOST_CLEAN); /* invariant 9 */
    return e;
}

/* Invariant 12: how long c waits for an answer (0: no bound). */
static unsigned rt(const cn__meta_conn_t *c)
{
    return c->schema ? 0 : c->db->rt_ms;
}

/* PQexec with invariant 12. */
static PGresult *c_exec(cn__meta_conn_t *c, const char *sql)
{
    return cn__pg_exec(c->pg, sql, rt(c));
}

/* Runs sql (no parameters, no rows expected back); PQclear included. */
static cn_err_t pg_run(cn__meta_conn_t *c, const char *sql)
{
    PGresult *res = c_exec(c, sql);
    ExecStatusType s = PQresultStatus(res);
    cn_err_t e = 0;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && s != PGRES_EMPTY_QUERY)
        e = pg_fail(c, res);
    PQclear(res);
    return e;
}

/* ---- database and connections ----------------------------------------------- */

static cn_err_t pg_db_open(const char *target, const cn_meta_opts_t *opts, cn__meta_db_t **out)
{
    cn__meta_db_t *db = calloc(1, sizeof *db);
    if (!db || !(db->uri = strdup(target))) {
        free(db);
        return -ENOMEM;
    }
    db->busy_ms = opts->busy_timeout_ms;
    db->rt_ms = opts->round_trip_ms ? opts->round_trip_ms : 3 * opts->busy_timeout_ms;
    db->idle_ms = !opts->write_idle_ms                            ? DEFAULT_WRITE_IDLE_MS
                  : opts->write_idle_ms == CN_META_IDLE_UNBOUNDED ? 0
                                                                  : opts->write_idle_ms;
    const char *fault = getenv("CAIRN_TEST_PG_COMMIT_FAULT");
    if (fault && *fault && !(db->fault = strdup(fault))) {
        free(db->uri);
        free(db);
        return -ENOMEM;
    }
    *out = db;
    return 0;
}

const char *cn__meta_pg_uri(const cn__meta_db_t *db)
{
    return db->uri;
}

unsigned cn__meta_pg_round_trip_ms(const cn__meta_db_t *db)
{
    return db->rt_ms;
}

static void pg_db_close(cn__meta_db_t *db)
{
    if (!db)
        return;
    free(db->uri);
    free(db->fault);
    free(db);
}

static cn_err_t pg_sync(cn__meta_db_t *db)
{
    (void)db; /* invariant 6 */
    return 0;
}

static void quiet_notices(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* NOTICEs ("already exists, skipping") are not errors */
}

/* Session settings, after every (re)connect: among them the server's own
 * bounds on a vanished node (CN__META_PG_SERVER_TCP), so that a node cut
 * off inside a transaction does not hold its row locks for hours, and on a
 * writer session the bound on a hung one (invariant 14). */
static cn_err_t session_setup(cn__meta_conn_t *c)
{
    PQsetNoticeProcessor(c->pg, quiet_notices, NULL);
    PQsetErrorVerbosity(c->pg, PQERRORS_TERSE);
    char sql[384];
    int n = snprintf(sql, sizeof sql,
                     "SET client_encoding = 'UTF8'; SET lock_timeout = %u;"
                     " SET client_min_messages = warning; " CN__META_PG_SERVER_TCP,
                     c->db->busy_ms);
    if (c->writer && c->db->idle_ms)
        snprintf(sql + n, sizeof sql - (size_t)n, "; SET idle_in_transaction_session_timeout = %u",
                 c->db->idle_ms);
    return pg_run(c, sql);
}

/* A connection to uri with bounds an operator's URI may override (its own
 * values come later, so they win): a server that does not answer fails the
 * connect in 5 s, and one that vanished under an open connection (a network
 * partition) breaks it in about 9 s instead of the kernel's minutes: an idle
 * connection by TCP keepalives, one with a statement sent and not
 * acknowledged by tcp_user_timeout (keepalives are not sent while data waits
 * for its acknowledgement; unix sockets need neither).  Reused by PQreset. */
static PGconn *connect_uri(const char *uri)
{
    const char *const kw[] = { "connect_timeout",
                               "keepalives_idle",
                               "keepalives_interval",
                               "keepalives_count",
                               "tcp_user_timeout",
                               "dbname",
                               NULL };
    const char *const val[] = { "5", "5", "2", "2", CN__META_PG_USER_TIMEOUT_MS, uri, NULL };
    return PQconnectdbParams(kw, val, 1);
}

/* The connection's target_session_attrs (from the URI or PGTARGETSESSIONATTRS,
 * as libpq resolved it): read-write and primary are checked again at every
 * begin (off_target), libpq checking them only when it connects. */
int cn__meta_pg_want(PGconn *pg)
{
    PQconninfoOption *opts = PQconninfo(pg);
    int want = WANT_ANY;
    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        if (strcmp(o->keyword, "target_session_attrs") != 0 || !o->val)
            continue;
        if (strcmp(o->val, "read-write") == 0)
            want = WANT_RW;
        else if (strcmp(o->val, "primary") == 0)
            want = WANT_PRIMARY;
    }
    PQconninfoFree(opts);
    return want;
}

static bool param_on(const PGconn *pg, const char *name)
{
    const char *v = PQparameterStatus(pg, name);
    return v && strcmp(v, "on") == 0;
}

bool cn__meta_pg_off_target(const PGconn *pg, int want)
{
    if (want == WANT_ANY)
        return false;
    return param_on(pg, "in_hot_standby") ||
           (want == WANT_RW && param_on(pg, "default_transaction_read_only"));
}

static void drop_dead(cn__meta_conn_t *c)
{
    for (size_t i = 0; i < c->ndead; i++)
        free(c->dead[i]);
    c->ndead = 0;
}

static void pg_conn_close(cn__meta_conn_t *c)
{
    if (!c)
        return;
    drop_dead(c);
    free(c->dead);
    PQfinish(c->pg);
    free(c);
}

static cn_err_t pg_conn_open(cn__meta_db_t *db, bool writer, cn__meta_conn_t **out)
{
    cn__meta_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->db = db;
    c->writer = writer;
    c->pg = connect_uri(db->uri);
    if (!c->pg) {
        free(c);
        return -ENOMEM;
    }
    cn_err_t e = 0;
    c->want = cn__meta_pg_want(c->pg);
    if (PQstatus(c->pg) != CONNECTION_OK) {
        /* The message may name the host, never a password (the URI's own
         * password is not echoed by libpq). */
        cn_warn("meta", "postgres: cannot connect: %s", PQerrorMessage(c->pg));
        cn__meta_note_lost(CN__META_LOST_CLEAN); /* invariant 9 */
        e = CN_E_UNAVAILABLE;
    }
    if (e == 0)
        e = session_setup(c);
    if (e < 0) {
        pg_conn_close(c);
        return e;
    }
    *out = c;
    return 0;
}

/* A broken connection opened again (invariant 3: a new generation, its
 * statements forgotten).  CN_E_UNAVAILABLE when the server does not answer. */
static cn_err_t reconnect(cn__meta_conn_t *c)
{
    PQreset(c->pg);
    if (PQstatus(c->pg) != CONNECTION_OK) {
        snprintf(c->err, sizeof c->err, "postgres: connection lost");
        cn__meta_note_lost(CN__META_LOST_CLEAN); /* invariant 9: nothing ran */
        return CN_E_UNAVAILABLE;
    }
    c->gen++;
    c->stale = false;
    c->npk = 0;
    drop_dead(c);
    return session_setup(c);
}

/* ---- the pipeline of pushed statements (invariant 13) ---------------------------- */

/* What each query sent into a connection's pipeline is (c->pk). */
enum {
    PK_BEGIN, /* the transaction's BEGIN */
    PK_STMT,  /* a pushed statement */
    PK_XID,   /* cn_xid, behind the write before it */
    PK_MAIN   /* the statement whose answer its use waits for */
};

static void xid_note(cn__meta_conn_t *c, const PGresult *res);

/* Whether c's pipeline is open (queries in it, or about to be). */
static bool piped(const cn__meta_conn_t *c)
{
    return PQpipelineStatus(c->pg) != PQ_PIPELINE_OFF;
}

static bool pipe_has(const cn__meta_conn_t *c, int k)
{
    for (int i = 0; i < c->npk; i++)
        if (c->pk[i] == k)
            return true;
    return false;
}

/* Records a query of kind k as sent when libpq took it (sent). */
static bool pipe_note(cn__meta_conn_t *c, int sent, int k)
{
    assert(c->npk < PIPE_MAX); /* its users flush at PIPE_MAX - 3: three fit */
    if (sent)
        c->pk[c->npk++] = (unsigned char)k;
    return sent != 0;
}

/* Opens c's pipeline unless it is open, and sends the pending BEGIN into it
 * (invariant 10). */
static bool pipe_open(cn__meta_conn_t *c)
{
    if (!piped(c) && !PQenterPipelineMode(c->pg))
        return false;
    const char *begin = c->pending;
    c->pending = NULL;
    return !begin ||
           pipe_note(c, PQsendQueryParams(c->pg, begin, 0, NULL, NULL, NULL, NULL, 0), PK_BEGIN);
}

/* What the answers of one pipeline come to (pipe_sync). */
typedef struct pipe_read {
    PGresult *fail, *main;
    bool prev_ok; /* the last statement before a cn_xid succeeded */
    int n;        /* answers read */
} pipe_read_t;

/* Takes answer x of the pipeline's next query. */
static void pipe_take(cn__meta_conn_t *c, pipe_read_t *pr, PGresult *x)
{
    int k = c->pk[pr->n++];
    ExecStatusType s = PQresultStatus(x);
    bool ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
    if (k == PK_XID) {
        if (pr->prev_ok && !pr->fail)
            xid_note(c, x);
        PQclear(x);
        return;
    }
    pr->prev_ok = ok;
    if (k == PK_MAIN && !pr->fail)
        pr->main = x;
    else if (!ok && !pr->fail)
        pr->fail = x;
    else
        PQclear(x);
}

/* Syncs c's pipeline, reads every answer in it and closes it (invariant
 * 13): the first failed answer before the PK_MAIN one, else that one; NULL
 * when there is none or the connection broke first (*whole: every answer
 * came).  The id is noted from a cn_xid behind a write that succeeded. */
static PGresult *pipe_sync(cn__meta_conn_t *c, bool *whole)
{
    PGconn *pg = c->pg;
    int nq = c->npk;
    pipe_read_t pr = { NULL, NULL, false, 0 };
    if (PQpipelineSync(pg)) {
        /* Each query's result and a NULL, then the sync: at most so many
         * reads, fewer when the connection breaks. */
        for (int i = 0, nulls = 0; i < 2 * nq + 2; i++) {
            PGresult *x = cn__pg_result(pg, rt(c));
            if (!x && (PQstatus(pg) != CONNECTION_OK || ++nulls > nq))
                break;
            if (x && PQresultStatus(x) == PGRES_PIPELINE_SYNC) {
                PQclear(x);
                break;
            }
            if (x && pr.n < nq)
                pipe_take(c, &pr, x);
            else
                PQclear(x);
        }
    }
    *whole = pr.n == nq;
    c->npk = 0;
    if (!PQexitPipelineMode(pg))
        c->stale = true; /* answers left unread: a new session (invariant 3) */
    if (!pr.fail)
        return pr.main;
    PQclear(pr.main);
    return pr.fail;
}

/* Reads the pushed answers when the pipeline is open (invariant 13): the
 * first failure's error, else 0. */
static cn_err_t pipe_flush(cn__meta_conn_t *c)
{
    if (!piped(c))
        return 0;
    bool whole = false;
    PGresult *res = pipe_sync(c, &whole);
    cn_err_t e = res || !whole ? pg_fail(c, res) : 0;
    PQclear(res);
    return e;
}

/* Reads and drops the pushed answers (a rollback: the error is not asked). */
static void pipe_drop(cn__meta_conn_t *c)
{
    if (!piped(c))
        return;
    bool whole = false;
    PQclear(pipe_sync(c, &whole));
}

/* Invariant 11: reads the answer of a ROLLBACK sent without waiting. */
static void read_unread(cn__meta_conn_t *c)
{
    if (!c->unread)
        return;
    c->unread = false;
    PGresult *res;
    while ((res = cn__pg_result(c->pg, rt(c))))
        PQclear(res);
}

/* Invariants 2, 3 and 11, before a transaction starts. */
static cn_err_t conn_ready(cn__meta_conn_t *c)
{
    pipe_drop(c);
    read_unread(c);
    if (PQstatus(c->pg) != CONNECTION_OK || c->stale || cn__meta_pg_off_target(c->pg, c->want))
        CN_TRY(reconnect(c));
    if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        (void)pg_run(c, "ROLLBACK");
    for (size_t i = 0; i < c->ndead; i++) {
        char sql[48];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", c->dead[i]);
        (void)pg_run(c, sql); /* a name the server lost is no matter */
    }
    drop_dead(c);
    return 0;
}

/* conn_ready, then sql (a BEGIN).  A connection that broke while idle (the
 * server restarted, the backend was terminated) is only found when used:
 * then it is reset and the BEGIN sent once more, which is safe because
 * nothing of the transaction has run yet. */
static cn_err_t begin_sql(cn__meta_conn_t *c, const char *sql)
{
    cn_err_t e = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        CN_TRY(conn_ready(c));
        e = pg_run(c, sql);
        if (e == 0 || PQstatus(c->pg) == CONNECTION_OK)
            return e;
    }
    return e;
}

static cn_err_t pg_begin(cn__meta_conn_t *c, cn_meta_mode_t mode)
{
    /* One statement, one snapshot: no BEGIN, and pg_rollback finds the
     * connection idle and sends nothing (invariant 4 holds). */
    c->pending = NULL;
    c->schema = false;
    c->xid[0] = '\0';
    if (mode == CN_META_READ_ONE)
        return conn_ready(c);
    CN_TRY(conn_ready(c));
    c->pending = mode == CN_META_WRITE ? "BEGIN ISOLATION LEVEL SERIALIZABLE"
                                       : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    return 0;
}

/* Invariant 10: sends the pending BEGIN alone, for a first use that cannot
 * carry it. */
static cn_err_t begin_now(cn__meta_conn_t *c)
{
    const char *sql = c->pending;
    c->pending = NULL;
    return sql ? begin_sql(c, sql) : 0;
}

static cn_err_t pg_begin_schema(cn__meta_conn_t *c)
{
    c->schema = true; /* until the next pg_begin (invariant 12) */
    c->xid[0] = '\0';
    CN_TRY(begin_sql(c, "BEGIN ISOLATION LEVEL READ COMMITTED"));
    cn_err_t e = pg_run(c, "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")");
    if (e < 0)
        (void)pg_run(c, "ROLLBACK");
    return e;
}

static void pg_rollback(cn__meta_conn_t *c)
{
    c->pending = NULL; /* nothing sent, nothing to end (invariant 10) */
    pipe_drop(c);      /* invariant 13 */
    if (PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) == PQTRANS_IDLE)
        return;
    if (PQsendQuery(c->pg, "ROLLBACK"))
        c->unread = true; /* invariant 11 */
    else
        (void)pg_run(c, "ROLLBACK");
}

/* ---- commit, and a connection lost in it (invariant 7) --------------------------- */

typedef enum {
    FAULT_NONE,
    FAULT_BEFORE,
    FAULT_AFTER,
    FAULT_AFTER_STOP,
    FAULT_STOP
} fault_t;

/* Test hook (CAIRN_TEST_PG_COMMIT_FAULT=FILE, tests/fleet/test_fleet_faults.py):
 * when FILE exists at the COMMIT of a transaction that wrote (has an id), it
 * is consumed (read, unlinked) and its first word faults that one COMMIT:
 * "before" terminates the session's server process first
 * (pg_terminate_backend: the transaction aborts), "after" cuts the socket
 * once COMMIT is sent (it commits; the answer is lost), "stop" stops the
 * whole process (SIGSTOP) with the transaction open and idle, a hung node
 * (invariant 14), and commits as usual once it is continued; "after-stop"
 * is "after", then the same stop before the outcome is resolved (a
 * failover while the answer was lost: invariant 8).  Unset, it costs one
 * pointer test. */
static fault_t fault_take(cn__meta_conn_t *c)
{
    FILE *f = c->db->fault ? fopen(c->db->fault, "r") : NULL;
    if (!f)
        return FAULT_NONE;
    char word[16] = "";
    bool got = fscanf(f, "%15s", word) == 1;
    fclose(f);
    (void)unlink(c->db->fault);
    if (got && strcmp(word, "before") == 0)
        return FAULT_BEFORE;
    if (got && strcmp(word, "stop") == 0)
        return FAULT_STOP;
    if (got && strcmp(word, "after-stop") == 0)
        return FAULT_AFTER_STOP;
    return got && strcmp(word, "after") == 0 ? FAULT_AFTER : FAULT_NONE;
}

static PGresult *commit_faulted(cn__meta_conn_t *c, fault_t fault)
{
    if (fault == FAULT_BEFORE) {
        PGconn *side = connect_uri(c->db->uri);
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d, 10000)", PQbackendPID(c->pg));
        PQclear(PQexec(side, sql)); /* waits until the process is gone */
        PQfinish(side);
        return PQexec(c->pg, "COMMIT");
    }
    if (fault == FAULT_STOP) {
        (void)raise(SIGSTOP);
        return c_exec(c, "COMMIT");
    }
    if (!PQsendQuery(c->pg, "COMMIT"))
        return NULL;
    /* Sent in full (the connection is blocking).  The socket is swapped for
     * one whose peer is closed, so libpq reads end-of-file and whatever the
     * server answered (it may have already) is dropped with the old one. */
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0) {
        (void)dup2(sp[0], PQsocket(c->pg));
        close(sp[0]);
        close(sp[1]);
    }
    PGresult *res = PQgetResult(c->pg), *more;
    while ((more = PQgetResult(c->pg)))
        PQclear(more);
    if (fault == FAULT_AFTER_STOP)
        (void)raise(SIGSTOP);
    return res;
}

/* Prepares "cn_xid" (the transaction's id, NULL while none is assigned)
 * once per session: no parse per commit. */
static cn_err_t xid_prepare(cn__meta_conn_t *c)
{
    if (c->xid_gen == c->gen + 1)
        return 0;
    CN_TRY(pipe_flush(c));
    PGresult *res = cn__pg_collect(
        c->pg, PQsendPrepare(c->pg, "cn_xid", "SELECT pg_current_xact_id_if_assigned()", 0, NULL),
        rt(c));
    cn_err_t e = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(c, res);
    PQclear(res);
    if (e == 0)
        c->xid_gen = c->gen + 1;
    return e;
}

/* cn_xid's answer res into c->xid, when it names an id. */
static void xid_note(cn__meta_conn_t *c, const PGresult *res)
{
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
        snprintf(c->xid, sizeof c->xid, "%s", PQgetvalue(res, 0, 0));
}

/* The writer's transaction id before its COMMIT, as decimal text in id (""
 * when it has none: it wrote nothing, so no outcome needs resolving); read
 * by itself unless a write already brought it (invariant 7). */
static cn_err_t current_xid(cn__meta_conn_t *c, char *id, size_t cap)
{
    id[0] = '\0';
    if (!c->xid[0]) {
        CN_TRY(xid_prepare(c));
        PGresult *res = cn__pg_collect(
            c->pg, PQsendQueryPrepared(c->pg, "cn_xid", 0, NULL, NULL, NULL, 0), rt(c));
        cn_err_t e = 0;
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
            e = pg_fail(c, res);
        else
            xid_note(c, res);
        PQclear(res);
        if (e < 0)
            return e;
    }
    snprintf(id, cap, "%s", c->xid);
    return 0;
}

/* Invariant 8: the server's incarnation as SQL text, "TIMELINE/START" (the
 * timeline it writes WAL on, from the name of its current WAL file, and
 * its postmaster's start in epoch seconds); NULL on a standby, which has
 * no current WAL position of its own. */
#define INCARNATION                                                                          \
    "CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name("                   \
    "pg_current_wal_lsn()), 1, 8) || '/' || extract(epoch FROM pg_postmaster_start_time()) " \
    "END"

/* Invariant 8: reads c's server incarnation into c->inc, once per session
 * ("" on a standby: no outcome will be resolved there). */
static cn_err_t incarnation(cn__meta_conn_t *c)
{
    if (c->inc_gen == c->gen + 1)
        return 0;
    PGresult *res = c_exec(c, "SELECT " INCARNATION);
    cn_err_t e = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        e = pg_fail(c, res);
    else
        snprintf(c->inc, sizeof c->inc, "%s", PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
    PQclear(res);
    if (e == 0)
        c->inc_gen = c->gen + 1;
    return e;
}

/* The status of transaction xid, assigned on server incarnation inc, asked
 * on c (opened again when broken): "committed", "aborted", "in progress",
 * "moved" when c's server is another incarnation (invariant 8: its answer
 * could be another transaction's), or "" when the server cannot be asked
 * (down, a standby, an id it has not assigned yet). */
static void xid_status(cn__meta_conn_t *c, const char *xid, const char *inc, char *st, size_t cap)
{
    st[0] = '\0';
    if (PQstatus(c->pg) != CONNECTION_OK && reconnect(c) < 0)
        return;
    /* The status is computed only on the same incarnation (CASE evaluates
     * lazily): elsewhere the id may be "in the future" and fail the query. */
    const char *sql = "SELECT i, CASE WHEN i = $2 THEN pg_xact_status($1::xid8) END"
                      " FROM (SELECT " INCARNATION " AS i) s";
    const char *const pv[2] = { xid, inc };
    PGresult *res =
        cn__pg_collect(c->pg, PQsendQueryParams(c->pg, sql, 2, NULL, pv, NULL, NULL, 0), rt(c));
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
        if (strcmp(PQgetvalue(res, 0, 0), inc) != 0 || !inc[0])
            snprintf(st, cap, "moved");
        else if (!PQgetisnull(res, 0, 1))
            snprintf(st, cap, "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
}

/* An unresolved COMMIT (invariants 7-9): CN_E_UNAVAILABLE, never repeated. */
static cn_err_t commit_unknown(cn__meta_conn_t *c, const char *xid, const char *why)
{
    cn_warn("meta", "postgres: connection lost in COMMIT of transaction %s; outcome unknown (%s)",
            xid, why);
    snprintf(c->err, sizeof c->err, "postgres: connection lost in COMMIT; outcome unknown");
    cn__meta_note_lost(CN__META_LOST_UNKNOWN);
    return CN_E_UNAVAILABLE;
}

/* Invariant 7: the outcome of transaction xid (assigned on incarnation
 * inc), whose connection was lost in COMMIT.  Asked until it is known, for
 * at most the busy timeout (the server may be restarting; an old session
 * may still be finishing it), on the same incarnation only (invariant 8). */
static cn_err_t resolve_commit(cn__meta_conn_t *c, const char *xid, const char *inc)
{
    int64_t deadline = cn_mono_ns() + (int64_t)c->db->busy_ms * 1000000;
    char st[32];
    for (;;) {
        xid_status(c, xid, inc, st, sizeof st);
        if (strcmp(st, "committed") == 0 || strcmp(st, "aborted") == 0)
            break;
        if (strcmp(st, "moved") == 0)
            return commit_unknown(c, xid, "the server is another one now: a failover or a restart");
        if (cn_mono_ns() >= deadline)
            return commit_unknown(c, xid, "the server did not answer within the busy timeout");
        cn_sleep_ms(st[0] ? 10 : 100);
    }
    bool done = strcmp(st, "committed") == 0;
    cn_warn("meta", "postgres: connection lost in COMMIT of transaction %s; resolved: %s", xid, st);
    if (!done)
        snprintf(c->err, sizeof c->err, "postgres: connection lost in COMMIT; rolled back");
    return done ? 0 : CN_E_UNAVAILABLE;
}

static cn_err_t pg_commit(cn__meta_conn_t *c)
{
    if (c->pending) { /* it ran nothing: nothing was sent (invariant 10) */
        c->pending = NULL;
        return 0;
    }
    char xid[32] = "", inc[sizeof c->inc];
    cn_err_t e = pipe_flush(c); /* invariant 13: every pushed answer before COMMIT */
    if (e == 0 && c->writer)
        e = current_xid(c, xid, sizeof xid);
    if (e == 0 && xid[0])
        e = incarnation(c);
    if (e < 0) {
        pg_rollback(c);
        return e;
    }
    snprintf(inc, sizeof inc, "%s", c->inc); /* a reconnect in resolve_commit rereads c->inc */
    fault_t fault = xid[0] ? fault_take(c) : FAULT_NONE;
    PGresult *res = fault ? commit_faulted(c, fault) : c_exec(c, "COMMIT");
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        e = pg_fail(c, res);
        if (PQstatus(c->pg) == CONNECTION_BAD && xid[0])
            e = resolve_commit(c, xid, inc);
        else if (e == CN_E_UNAVAILABLE && xid[0])
            e = commit_unknown(c, xid, "the server ended the session in COMMIT");
    } else if (strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
        /* COMMIT of a failed transaction rolls it back and says so. */
        snprintf(c->err, sizeof c->err, "postgres: transaction had failed; rolled back");
        e = CN_E_CONFLICT;
    }
    PQclear(res);
    if (e < 0 && PQtransactionStatus(c->pg) != PQTRANS_IDLE && PQstatus(c->pg) == CONNECTION_OK)
        (void)pg_run(c, "ROLLBACK");
    return e;
}

static void note_changes(cn__meta_conn_t *c, const PGresult *res)
{
    const char *st = PQcmdStatus((PGresult *)res);
    if (strncmp(st, "INSERT", 6) == 0 || strncmp(st, "UPDATE", 6) == 0 ||
        strncmp(st, "DELETE", 6) == 0)
        c->changes = strtoll(PQcmdTuples((PGresult *)res), NULL, 10);
}

static cn_err_t pg_exec(cn__meta_conn_t *c, const char *sql)
{
    CN_TRY(pipe_flush(c));
    CN_TRY(begin_now(c));
    PGresult *res = c_exec(c, sql);
    ExecStatusType s = PQresultStatus(res);
    cn_err_t e = 0;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_EMPTY_QUERY)
        note_changes(c, res);
    else
        e = pg_fail(c, res);
    PQclear(res);
    return e;
}

static int64_t pg_changes(cn__meta_conn_t *c)
{
    return c->changes;
}

static const char *pg_errmsg(cn__meta_conn_t *c)
{
    return c->err[0] ? c->err : "no error";
}

/* ---- DDL translation ----------------------------------------------------------- */

static bool word_is(const char *p, size_t n, const char *w)
{
    return strlen(w) == n && strncasecmp(p, w, n) == 0;
}

static bool is_word(int ch)
{
    return isalnum(ch) || ch == '_';
}

/* The replacement of type word w (n bytes at p) whose next word is next:
 * NULL to keep it.  *skip_next is set when next is consumed (INTEGER
 * PRIMARY KEY: SQLite's rowid alias, numbered when omitted). */
static const char *type_for(const char *p, size_t n, const char *rest, bool *eat_pk)
{
    *eat_pk = false;
    if (word_is(p, n, "BLOB"))
        return "BYTEA";
    if (word_is(p, n, "TEXT"))
        return "TEXT COLLATE \"C\"";
    if (word_is(p, n, "INTEGER")) {
        while (*rest == ' ')
            rest++;
        if (strncasecmp(rest, "PRIMARY KEY", 11) == 0) {
            *eat_pk = true;
            return "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
        }
        return "BIGINT";
    }
    return NULL;
}

/* SQLite-flavoured DDL to PostgreSQL's (docs/fleet.md, "DDL"): a type word
 * (the word after a column name) BLOB -> BYTEA, TEXT -> TEXT COLLATE "C"
 * (byte order on every engine), INTEGER -> BIGINT, INTEGER PRIMARY KEY ->
 * an identity column.  Quoted text is copied as is. */
static char *pg_translate_ddl(const char *sql)
{
    size_t n = strlen(sql);
    cn_buf_t out = { 0 };
    bool prev_ident = false, ok = true;
    for (size_t i = 0; i < n && ok;) {
        char ch = sql[i];
        size_t j = i + 1;
        const char *rep = NULL;
        if (ch == '\'' || ch == '"') {
            while (j < n && sql[j] != ch)
                j++;
            j = j < n ? j + 1 : n;
            prev_ident = false;
        } else if (is_word((unsigned char)ch)) {
            while (j < n && is_word((unsigned char)sql[j]))
                j++;
            bool eat = false;
            rep = prev_ident ? type_for(sql + i, j - i, sql + j, &eat) : NULL;
            prev_ident = !rep && !isdigit((unsigned char)ch);
            if (eat) {
                while (sql[j] == ' ')
                    j++;
                j += 11; /* "PRIMARY KEY", part of the replacement */
            }
        } else if (ch != ' ' && ch != '\n' && ch != '\t') {
            prev_ident = false;
        }
        cn_err_t e = rep ? cn_buf_append_str(&out, rep) : cn_buf_append(&out, sql + i, j - i);
        ok = e == 0;
        i = j;
    }
    if (!ok || cn_buf_append(&out, "", 1) != 0) {
        cn_buf_free(&out);
        return NULL;
    }
    return (char *)out.data;
}

/* ---- statements ------------------------------------------------------------- */

/* `?` and `?N` to `$N` outside quotes, numbered as SQLite numbers them (a bare
 * `?` is one more than the largest number so far). */
static char *rewrite_params(const char *sql)
{
    size_t n = strlen(sql);
    char *out = malloc(n * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    long maxn = 0;
    char q = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = sql[i];
        if (q) {
            out[o++] = ch;
            if (ch == q)
                q = 0;
            continue;
        }
        if (ch == '\'' || ch == '"') {
            q = ch;
            out[o++] = ch;
            continue;
        }
        if (ch != '?') {
            out[o++] = ch;
            continue;
        }
        long num;
        if (isdigit((unsigned char)sql[i + 1])) {
            char *end;
            num = strtol(sql + i + 1, &end, 10);
            i = (size_t)(end - sql) - 1;
        } else {
            num = maxn + 1;
        }
        if (num > maxn)
            maxn = num;
        o += (size_t)sprintf(out + o, "$%ld", num);
    }
    out[o] = '\0';
    return out;
}

static void raw_clear_row(cn__meta_raw_t *r)
{
    for (int i = 0; i < r->ncols; i++) {
        free(r->dec[i]);
        r->dec[i] = NULL;
    }
}

static void raw_clear_result(cn__meta_raw_t *r)
{
    raw_clear_row(r);
    PQclear(r->res);
    r->res = NULL;
    r->row = -1;
    r->nrows = 0;
    r->done = false;
}

/* Prepares r on its connection (again after a reset: invariant 3). */
static cn_err_t raw_prepare(cn__meta_raw_t *r)
{
    cn__meta_conn_t *c = r->c;
    CN_TRY(pipe_flush(c)); /* invariant 13 */
    snprintf(r->name, sizeof r->name, "cn%" PRIu64, ++c->next_id);
    PGresult *res = cn__pg_collect(c->pg, PQsendPrepare(c->pg, r->name, r->sql, 0, NULL), rt(c));
    cn_err_t e = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(c, res);
    PQclear(res);
    if (e < 0)
        return e;
    res = cn__pg_collect(c->pg, PQsendDescribePrepared(c->pg, r->name), rt(c));
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        e = pg_fail(c, res);
        PQclear(res);
        return e;
    }
    int np = PQnparams(res), nc = PQnfields(res);
    if (r->ptypes && (np != r->nparams || nc != r->ncols)) {
        PQclear(res);
        return CN_E_DB; /* the schema changed under a cached statement */
    }
    r->nparams = np;
    r->ncols = nc;
    if (!r->ptypes) {
        r->ptypes = calloc((size_t)np + 1, sizeof *r->ptypes);
        r->vals = calloc((size_t)np + 1, sizeof *r->vals);
        r->ctypes = calloc((size_t)nc + 1, sizeof *r->ctypes);
        r->dec = calloc((size_t)nc + 1, sizeof *r->dec);
        r->declen = calloc((size_t)nc + 1, sizeof *r->declen);
        r->pv = calloc((size_t)np + 1, sizeof *r->pv);
        r->pl = calloc((size_t)np + 1, sizeof *r->pl);
        r->pf = calloc((size_t)np + 1, sizeof *r->pf);
        if (!r->ptypes || !r->vals || !r->ctypes || !r->dec || !r->declen || !r->pv || !r->pl ||
            !r->pf) {
            PQclear(res);
            return -ENOMEM;
        }
    }
    for (int i = 0; i < np; i++)
        r->ptypes[i] = PQparamtype(res, i);
    for (int i = 0; i < nc; i++)
        r->ctypes[i] = PQftype(res, i);
    PQclear(res);
    r->gen = c->gen;
    return 0;
}

static void pg_finalize(cn__meta_raw_t *r)
{
    if (!r)
        return;
    raw_clear_result(r);
    cn__meta_conn_t *c = r->c;
    if (r->name[0] && r->gen == c->gen) {
        if (c->ndead == c->capdead) {
            size_t cap = c->capdead ? c->capdead * 2 : 16;
            char **d = realloc(c->dead, cap * sizeof *d);
            if (d) {
                c->dead = d;
                c->capdead = cap;
            }
        }
        char *name = strdup(r->name);
        if (name && c->ndead < c->capdead)
            c->dead[c->ndead++] = name;
        else
            free(name); /* leaks a server-side name until the connection ends */
    }
    for (int i = 0; i < r->nparams; i++)
        free(r->vals ? r->vals[i].p : NULL);
    free(r->vals);
    free(r->ptypes);
    free(r->ctypes);
    free(r->dec);
    free(r->declen);
    free(r->pv);
    free(r->pl);
    free(r->pf);
    free(r->sql);
    free(r);
}

/* Whether sql is an INSERT, UPDATE or DELETE (what may assign the
 * transaction's id; a WITH that writes is left to COMMIT's own read). */
static bool is_write(const char *sql)
{
    while (isspace((unsigned char)*sql))
        sql++;
    return !strncasecmp(sql, "INSERT", 6) || !strncasecmp(sql, "UPDATE", 6) ||
           !strncasecmp(sql, "DELETE", 6);
}

static cn_err_t pg_prepare(cn__meta_conn_t *c, const char *sql, cn__meta_raw_t **out)
{
    CN_TRY(pipe_flush(c)); /* invariant 13: a pushed failure is the error, as it is */
    cn__meta_raw_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->c = c;
    r->row = -1;
    r->writes = is_write(sql);
    r->sql = rewrite_params(sql);
    if (!r->sql) {
        free(r);
        return -ENOMEM;
    }
    cn_err_t e = raw_prepare(r);
    if (e < 0 && c->pending && PQstatus(c->pg) != CONNECTION_OK) { /* invariant 10 */
        e = conn_ready(c);
        if (e >= 0)
            e = raw_prepare(r);
    }
    if (e < 0) {
        r->name[0] = '\0'; /* a failed Parse leaves no server-side name */
        pg_finalize(r);
        return e == CN_E_DB_LOCKED || e == CN_E_UNAVAILABLE || e == -ENOMEM ? e : CN_E_INVALID;
    }
    *out = r;
    return 0;
}

static void pg_reset(cn__meta_raw_t *r)
{
    raw_clear_result(r);
    for (int i = 0; i < r->nparams; i++) {
        free(r->vals[i].p);
        r->vals[i] = (pg_val_t){ 0 };
    }
}

static cn_err_t set_val(cn__meta_raw_t *r, int idx, const void *p, size_t len, int fmt)
{
    if (idx < 1 || idx > r->nparams)
        return CN_E_INVALID;
    if (len > INT32_MAX)
        return CN_E_TOO_LARGE;
    char *v = malloc(len + 1);
    if (!v)
        return -ENOMEM;
    if (len)
        memcpy(v, p, len);
    v[len] = '\0';
    pg_val_t *pv = &r->vals[idx - 1];
    free(pv->p);
    *pv = (pg_val_t){ v, (int)len, fmt };
    return 0;
}

static cn_err_t pg_bind_int64(cn__meta_raw_t *r, int idx, int64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, v);
    return set_val(r, idx, buf, (size_t)n, 0);
}

/* Bytes to a bytea parameter travel binary; to any other type as text. */
static cn_err_t pg_bind_bytes(cn__meta_raw_t *r, int idx, const void *p, size_t len)
{
    if (idx < 1 || idx > r->nparams)
        return CN_E_INVALID;
    return set_val(r, idx, p, len, r->ptypes[idx - 1] == OID_BYTEA ? 1 : 0);
}

static cn_err_t pg_bind_text(cn__meta_raw_t *r, int idx, const char *s, size_t len)
{
    return pg_bind_bytes(r, idx, s, len);
}

static cn_err_t pg_bind_blob(cn__meta_raw_t *r, int idx, const void *p, size_t len)
{
    return pg_bind_bytes(r, idx, p, len);
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A key list to a bytea[] parameter, in the binary array form (one
 * dimension, no NULLs, lower bound 1, then each element's length and
 * bytes): one parameter however many keys, and no text escaping. */
static cn_err_t pg_bind_list(cn__meta_raw_t *r, int idx, const void *p, size_t width, size_t n)
{
    if (idx < 1 || idx > r->nparams || r->ptypes[idx - 1] != OID_BYTEA_ARRAY || !width || !n ||
        width > INT32_MAX || n > INT32_MAX)
        return CN_E_INVALID;
    if (n > (INT32_MAX - 20) / (width + 4))
        return CN_E_TOO_LARGE;
    size_t len = 20 + n * (width + 4);
    unsigned char *a = malloc(len);
    if (!a)
        return -ENOMEM;
    put_be32(a, 1);             /* dimensions */
    put_be32(a + 4, 0);         /* no NULL element */
    put_be32(a + 8, OID_BYTEA); /* element type */
    put_be32(a + 12, (uint32_t)n);
    put_be32(a + 16, 1); /* lower bound */
    unsigned char *o = a + 20;
    for (size_t i = 0; i < n; i++, o += width + 4) {
        put_be32(o, (uint32_t)width);
        memcpy(o + 4, (const unsigned char *)p + i * width, width);
    }
    cn_err_t e = set_val(r, idx, a, len, 1);
    free(a);
    return e;
}

static cn_err_t pg_bind_null(cn__meta_raw_t *r, int idx)
{
    if (idx < 1 || idx > r->nparams)
        return CN_E_INVALID;
    pg_val_t *pv = &r->vals[idx - 1];
    free(pv->p);
    *pv = (pg_val_t){ 0 };
    return 0;
}

/* Sends the pending BEGIN, r as a query of kind k, then (with_xid) cn_xid
 * into r's connection's pipeline; false when libpq refused a send. */
static bool pipe_send(cn__meta_raw_t *r, int k, bool with_xid)
{
    cn__meta_conn_t *c = r->c;
    PGconn *pg = c->pg;
    return pipe_open(c) &&
           pipe_note(c, PQsendQueryPrepared(pg, r->name, r->nparams, r->pv, r->pl, r->pf, 0), k) &&
           (!with_xid ||
            pipe_note(c, PQsendQueryPrepared(pg, "cn_xid", 0, NULL, NULL, NULL, 0), PK_XID));
}

/* Invariants 7, 10 and 13: the pushed queries and the pending BEGIN, then
 * r, then (with_xid) the transaction's id, in one pipeline.  The answer of
 * the first of them that failed, else r's (NULL when libpq failed). */
static PGresult *run_piped(cn__meta_raw_t *r, bool with_xid)
{
    /* A send libpq refused leaves r's answer NULL: the connection failed. */
    (void)pipe_send(r, PK_MAIN, with_xid);
    bool whole = false;
    return pipe_sync(r->c, &whole);
}

/* Invariant 7: whether r's run brings the transaction's id along (*with,
 * its first write), with cn_xid prepared (any pushed answers read first:
 * their failure is the error). */
static cn_err_t xid_wanted(cn__meta_raw_t *r, bool *with)
{
    cn__meta_conn_t *c = r->c;
    *with = c->writer && r->writes && !c->xid[0] && !pipe_has(c, PK_XID);
    if (*with && c->xid_gen != c->gen + 1) {
        CN_TRY(pipe_flush(c));
        *with = !c->xid[0] && xid_prepare(c) == 0;
    }
    return 0;
}

/* r's bindings into PQexecPrepared's arrays. */
static void raw_args(cn__meta_raw_t *r)
{
    for (int i = 0; i < r->nparams; i++) {
        r->pv[i] = r->vals[i].p;
        r->pl[i] = r->vals[i].len;
        r->pf[i] = r->vals[i].fmt;
    }
}

/* Readies r to be sent: room in the pipeline for a BEGIN, r and a cn_xid,
 * r prepared on this session, whether the id rides along (*with_xid), its
 * bindings in place. */
static cn_err_t raw_ready(cn__meta_raw_t *r, bool *with_xid)
{
    cn__meta_conn_t *c = r->c;
    if (c->npk > PIPE_MAX - 3)
        CN_TRY(pipe_flush(c));
    if (r->gen != c->gen)
        CN_TRY(raw_prepare(r));
    CN_TRY(xid_wanted(r, with_xid));
    raw_args(r);
    return 0;
}

/* Runs the prepared statement with its bindings (first step), carrying the
 * pending BEGIN and the pushed queries when there are. */
static cn_err_t raw_run_once(cn__meta_raw_t *r)
{
    cn__meta_conn_t *c = r->c;
    bool with_xid = false;
    CN_TRY(raw_ready(r, &with_xid));
    PGresult *res =
        c->pending || with_xid || piped(c)
            ? run_piped(r, with_xid)
            : cn__pg_collect(
                  c->pg, PQsendQueryPrepared(c->pg, r->name, r->nparams, r->pv, r->pl, r->pf, 0),
                  rt(c));
    ExecStatusType s = PQresultStatus(res);
    if (s == PGRES_TUPLES_OK) {
        r->res = res;
        r->nrows = PQntuples(res);
        return 0;
    }
    if (s == PGRES_COMMAND_OK) {
        note_changes(c, res);
        r->res = res;
        r->nrows = 0;
        return 0;
    }
    cn_err_t e = pg_fail(c, res);
    PQclear(res);
    return e;
}

/* raw_run_once, made once more on a connection found broken when it carried
 * the transaction's BEGIN (invariant 10; with nothing pushed before, as a
 * push carries the BEGIN itself). */
static cn_err_t raw_run(cn__meta_raw_t *r)
{
    cn__meta_conn_t *c = r->c;
    const char *begin = c->pending;
    cn_err_t e = raw_run_once(r);
    if (e < 0 && begin && PQstatus(c->pg) != CONNECTION_OK) {
        e = conn_ready(c);
        c->pending = begin;
        if (e >= 0)
            e = raw_run_once(r);
    }
    c->pending = NULL;
    return e;
}

/* Invariant 13: sends r with its bindings into the connection's pipeline,
 * its answer left for the connection's next use. */
static cn_err_t pg_push(cn__meta_raw_t *r)
{
    cn__meta_conn_t *c = r->c;
    bool with_xid = false;
    CN_TRY(raw_ready(r, &with_xid));
    if (pipe_send(r, PK_STMT, with_xid))
        return 0;
    cn_err_t e = pipe_flush(c); /* libpq refused a send: what was sent, then why */
    return e < 0 ? e : pg_fail(c, NULL);
}

static cn_err_t pg_step(cn__meta_raw_t *r)
{
    if (r->done)
        return CN_META_DONE;
    if (!r->res)
        CN_TRY(raw_run(r));
    raw_clear_row(r);
    if (++r->row < r->nrows)
        return CN_META_ROW;
    r->done = true;
    return CN_META_DONE;
}

static bool cell_ok(cn__meta_raw_t *r, int col)
{
    return r->res && r->row >= 0 && r->row < r->nrows && col >= 0 && col < r->ncols;
}

static bool pg_column_is_null(cn__meta_raw_t *r, int col)
{
    return !cell_ok(r, col) || PQgetisnull(r->res, r->row, col);
}

static int64_t pg_column_int64(cn__meta_raw_t *r, int col)
{
    if (pg_column_is_null(r, col))
        return 0;
    const char *v = PQgetvalue(r->res, r->row, col);
    if (r->ctypes[col] == OID_BOOL)
        return v[0] == 't';
    return strtoll(v, NULL, 10);
}

/* The value of hex digit ch; 0 for anything else (the server sends only
 * digits). */
static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return 0;
}

/* The bytes of a cell: bytea decoded from its "\x..." text form (kept until
 * the next step), anything else as the server sent it. */
static const char *cell_bytes(cn__meta_raw_t *r, int col, size_t *len)
{
    const char *v = PQgetvalue(r->res, r->row, col);
    size_t n = (size_t)PQgetlength(r->res, r->row, col);
    if (r->ctypes[col] != OID_BYTEA || n < 2 || v[0] != '\\' || v[1] != 'x') {
        *len = n;
        return v;
    }
    if (!r->dec[col]) {
        size_t m = (n - 2) / 2;
        char *d = malloc(m + 1);
        if (!d)
            return NULL;
        for (size_t i = 0; i < m; i++)
            d[i] = (char)((unsigned)hexval(v[2 + 2 * i]) << 4 | (unsigned)hexval(v[3 + 2 * i]));
        d[m] = '\0';
        r->dec[col] = d;
        r->declen[col] = m;
    }
    *len = r->declen[col];
    return r->dec[col];
}

static const char *pg_column_text(cn__meta_raw_t *r, int col, size_t *len)
{
    size_t n = 0;
    const char *p = pg_column_is_null(r, col) ? NULL : cell_bytes(r, col, &n);
    if (len)
        *len = p ? n : 0;
    return p;
}

static const void *pg_column_blob(cn__meta_raw_t *r, int col, size_t *len)
{
    size_t n = 0;
    const char *p = pg_column_is_null(r, col) ? NULL : cell_bytes(r, col, &n);
    if (p && n == 0)
        p = NULL;
    if (len)
        *len = p ? n : 0;
    return p;
}

static int pg_column_count(cn__meta_raw_t *r)
{
    return r->ncols;
}

const cn__meta_engine_t cn__meta_engine_pg = {
    .name = "postgres",
    .single_writer = false, /* other writers (this node's pool, other nodes) commit meanwhile */
    .db_open = pg_db_open,
    .db_close = pg_db_close,
    .sync = pg_sync,
    .conn_open = pg_conn_open,
    .conn_close = pg_conn_close,
    .begin = pg_begin,
    .begin_schema = pg_begin_schema,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .exec = pg_exec,
    .translate_ddl = pg_translate_ddl,
    .changes = pg_changes,
    .errmsg = pg_errmsg,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .reset = pg_reset,
    .bind_int64 = pg_bind_int64,
    .bind_text = pg_bind_text,
    .bind_blob = pg_bind_blob,
    .bind_null = pg_bind_null,
    .bind_list = pg_bind_list,
    .step = pg_step,
    .push = pg_push,
    .flush = pipe_flush,
    .column_is_null = pg_column_is_null,
    .column_int64 = pg_column_int64,
    .column_text = pg_column_text,
    .column_blob = pg_column_blob,
    .column_count = pg_column_count,
};
