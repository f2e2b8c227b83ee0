/* meta: migrations, transactions, prepared statements, the failed-txn rule,
 * group commit under concurrent writers, a database locked by another
 * process, and listing in byte order — on SQLite, or on PostgreSQL when
 * CAIRN_TEST_META names a server (test_target.h; tests/fleet/pg.sh). */
#include "cn_test.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/test_target.h"

/* The target open_fresh last opened: the data dir or a fresh database URI. */
static char target[512];

static char *tmpdir(void)
{
    char tmpl[] = "/tmp/cn-test-meta-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static void rmtree(const char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", d);
}

static cn_meta_t *open_fresh(char **dir, const cn_meta_opts_t *o)
{
    *dir = tmpdir();
    cn_meta_t *m = NULL;
    CN_CHECK(*dir && cn_test_meta_target(*dir, target, sizeof target));
    cn_err_t e = cn_meta_open(target, o, &m);
    CN_CHECK_EQ(e, 0);
    return m;
}

/* Runs a one-row integer query in its own read transaction. */
static int64_t query_int(cn_meta_t *m, const char *sql)
{
    cn_meta_txn_t *t;
    int64_t v = -1;
    if (cn_meta_begin(m, CN_META_READ, &t) < 0)
        return -2;
    cn_meta_stmt_t *st;
    if (cn_meta_prepare(t, sql, &st) == 0) {
        if (cn_meta_step(st) == CN_META_ROW)
            v = cn_meta_column_int64(st, 0);
        cn_meta_finish(st);
    }
    cn_meta_commit(t);
    return v;
}

static void test_open(void)
{
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    CN_CHECK_STR(cn_meta_engine(m), cn_test_meta_pg() ? "postgres" : "sqlite");
    char path[512];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    struct stat st;
    CN_CHECK((stat(path, &st) == 0) == !cn_test_meta_pg());
    cn_meta_close(m);

    /* A server that is not there: unavailable, at once (no such socket). */
    cn_meta_t *m2 = NULL;
    CN_CHECK_EQ(cn_meta_open("postgresql:///x?host=/nonexistent/cairn-pg", NULL, &m2),
                CN_E_UNAVAILABLE);
    CN_CHECK_EQ(cn_meta_open("", NULL, &m2), CN_E_INVALID);
    cn_meta_opts_t o = { .must_exist = true };
    CN_CHECK_EQ(cn_meta_open("/nonexistent/cairn-meta-test", &o, &m2), CN_E_NOT_FOUND);
    snprintf(path, sizeof path, "sqlite:%s/other.db", dir);
    CN_CHECK_EQ(cn_meta_open(path, NULL, &m2), 0);
    cn_meta_close(m2);
    cn_meta_close(NULL);
    rmtree(dir);
    free(dir);
}

static int apply_calls;
static cn_err_t seed_apply(cn_meta_txn_t *t, void *arg)
{
    (void)arg;
    apply_calls++;
    return cn_meta_exec(t, "INSERT INTO things (id, name) VALUES (1, 'seed')");
}

static void test_migrations(void)
{
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    cn_meta_migration_t v1[] = {
        { 1, "CREATE TABLE things (id BIGINT PRIMARY KEY, name TEXT NOT NULL)", NULL, NULL },
        { 2, NULL, seed_apply, NULL },
    };
    int64_t ver = -1;
    CN_CHECK_EQ(cn_meta_schema_version(m, "things", &ver), 0);
    CN_CHECK_EQ(ver, 0);
    CN_CHECK_EQ(cn_meta_migrate(m, "things", v1, 2), 0);
    CN_CHECK_EQ(cn_meta_schema_version(m, "things", &ver), 0);
    CN_CHECK_EQ(ver, 2);
    CN_CHECK_EQ(apply_calls, 1);
    /* Again: nothing runs. */
    CN_CHECK_EQ(cn_meta_migrate(m, "things", v1, 2), 0);
    CN_CHECK_EQ(apply_calls, 1);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM things"), 1);

    /* A later build adds a step; only it runs. */
    cn_meta_migration_t v2[] = {
        v1[0],
        v1[1],
        { 3,
          "ALTER TABLE things ADD COLUMN size BIGINT NOT NULL DEFAULT 0;"
          "CREATE INDEX things_size ON things (size)",
          NULL, NULL },
    };
    CN_CHECK_EQ(cn_meta_migrate(m, "things", v2, 3), 0);
    CN_CHECK_EQ(apply_calls, 1);
    CN_CHECK_EQ(cn_meta_schema_version(m, "things", &ver), 0);
    CN_CHECK_EQ(ver, 3);
    /* An older build against a newer database refuses. */
    CN_CHECK_EQ(cn_meta_migrate(m, "things", v1, 2), CN_E_UNSUPPORTED);

    /* A failing step rolls back every pending step of that run. */
    cn_meta_migration_t bad[] = {
        { 1, "CREATE TABLE other (id BIGINT PRIMARY KEY)", NULL, NULL },
        { 2, "CREATE TABLE other2 (id BIGINT PRIMARY KEY); THIS IS NOT SQL", NULL, NULL },
    };
    CN_CHECK(cn_meta_migrate(m, "other", bad, 2) < 0);
    CN_CHECK_EQ(cn_meta_schema_version(m, "other", &ver), 0);
    CN_CHECK_EQ(ver, 0);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM other"), -1); /* no such table */

    /* Malformed step lists. */
    cn_meta_migration_t gap[] = { { 1, "SELECT 1", NULL, NULL }, { 3, "SELECT 1", NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "gap", gap, 2), CN_E_INVALID);
    CN_CHECK_EQ(cn_meta_migrate(m, "", v1, 1), CN_E_INVALID);

    /* Components are independent and survive a reopen. */
    cn_meta_close(m);
    CN_CHECK_EQ(cn_meta_open(target, NULL, &m), 0);
    CN_CHECK_EQ(cn_meta_schema_version(m, "things", &ver), 0);
    CN_CHECK_EQ(ver, 3);
    CN_CHECK_EQ(cn_meta_migrate(m, "things", v2, 3), 0);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

static const char kv_sql[] = "CREATE TABLE kv (k TEXT PRIMARY KEY, i BIGINT, b BLOB, t TEXT)";

static void test_txn_and_stmts(void)
{
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    cn_meta_migration_t s[] = { { 1, kv_sql, NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "kv", s, 1), 0);

    cn_meta_txn_t *t;
    cn_meta_stmt_t *st, *st2;
    const char *ins = "INSERT INTO kv (k, i, b, t) VALUES (?, ?, ?, ?)";
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_prepare(t, ins, &st), 0);
    CN_CHECK_EQ(cn_meta_bind_str(st, 1, "a"), 0);
    CN_CHECK_EQ(cn_meta_bind_int64(st, 2, INT64_MIN), 0);
    static const uint8_t blob[] = { 0, 1, 2, 0, 255 };
    CN_CHECK_EQ(cn_meta_bind_blob(st, 3, blob, sizeof blob), 0);
    CN_CHECK_EQ(cn_meta_bind_text(st, 4, "hello world", 5), 0);
    CN_CHECK_EQ(cn_meta_step(st), CN_META_DONE);
    CN_CHECK_EQ(cn_meta_changes(t), 1);
    cn_meta_reset(st);
    CN_CHECK_EQ(cn_meta_bind_str(st, 1, "b"), 0);
    CN_CHECK_EQ(cn_meta_bind_null(st, 2), 0);
    CN_CHECK_EQ(cn_meta_bind_str(st, 4, NULL), 0);
    CN_CHECK_EQ(cn_meta_step(st), CN_META_DONE);
    CN_CHECK(cn_meta_bind_int64(st, 99, 1) < 0); /* bad index */
    /* Same SQL while the first is still open: a distinct statement. */
    CN_CHECK_EQ(cn_meta_prepare(t, ins, &st2), 0);
    CN_CHECK(st2 != st);
    cn_meta_finish(st2);
    cn_meta_finish(st);
    CN_CHECK_EQ(cn_meta_commit(t), 0);

    /* The cached statement comes back reset and unbound. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_prepare(t, ins, &st), 0);
    CN_CHECK_EQ(cn_meta_bind_str(st, 1, "c"), 0);
    CN_CHECK_EQ(cn_meta_step(st), CN_META_DONE);
    cn_meta_finish(st);
    cn_meta_rollback(t); /* c never lands */

    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &t), 0);
    CN_CHECK_EQ(cn_meta_prepare(t, "SELECT k, i, b, t FROM kv ORDER BY k", &st), 0);
    CN_CHECK_EQ(cn_meta_column_count(st), 4);
    CN_CHECK_EQ(cn_meta_step(st), CN_META_ROW);
    size_t len = 0;
    CN_CHECK_STR(cn_meta_column_text(st, 0, &len), "a");
    CN_CHECK_EQ(len, 1);
    CN_CHECK_EQ(cn_meta_column_int64(st, 1), INT64_MIN);
    const void *p = cn_meta_column_blob(st, 2, &len);
    CN_CHECK_EQ(len, sizeof blob);
    CN_CHECK(p && memcmp(p, blob, sizeof blob) == 0);
    CN_CHECK_STR(cn_meta_column_text(st, 3, &len), "hello");
    CN_CHECK_EQ(cn_meta_step(st), CN_META_ROW);
    CN_CHECK_STR(cn_meta_column_text(st, 0, NULL), "b");
    CN_CHECK(cn_meta_column_is_null(st, 1));
    CN_CHECK_EQ(cn_meta_column_int64(st, 1), 0);
    CN_CHECK(cn_meta_column_text(st, 3, &len) == NULL);
    CN_CHECK(cn_meta_column_blob(st, 2, &len) == NULL);
    CN_CHECK_EQ(cn_meta_step(st), CN_META_DONE);
    /* Left open on purpose: commit finishes it. */
    CN_CHECK_EQ(cn_meta_commit(t), 0);

    /* A read transaction cannot write. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &t), 0);
    CN_CHECK(cn_meta_exec(t, "INSERT INTO kv (k) VALUES ('r')") < 0);
    cn_meta_rollback(t);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 2);

    /* Bad SQL is CN_E_INVALID. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &t), 0);
    CN_CHECK_EQ(cn_meta_prepare(t, "SELEKT nothing", &st), CN_E_INVALID);
    CN_CHECK(strlen(cn_meta_errmsg(t)) > 0);
    cn_meta_rollback(t);

    /* The failed-transaction rule: a unique violation fails the txn. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k) VALUES ('z')"), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k) VALUES ('a')"), CN_E_EXISTS);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k) VALUES ('y')"), CN_E_CONFLICT);
    CN_CHECK_EQ(cn_meta_prepare(t, ins, &st), CN_E_CONFLICT);
    CN_CHECK_EQ(cn_meta_commit(t), CN_E_EXISTS);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 2);

    /* ON CONFLICT is the portable way. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k, i) VALUES ('a', 7) ON CONFLICT (k) DO UPDATE"
                                " SET i = excluded.i"),
                0);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(query_int(m, "SELECT i FROM kv WHERE k = 'a'"), 7);

    /* Many distinct statements overflow the cache without harm. */
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &t), 0);
    for (int i = 0; i < 200; i++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT %d", i);
        CN_CHECK_EQ(cn_meta_prepare(t, sql, &st), 0);
        CN_CHECK_EQ(cn_meta_step(st), CN_META_ROW);
        CN_CHECK_EQ(cn_meta_column_int64(st, 0), i);
        cn_meta_finish(st);
    }
    cn_meta_rollback(t);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

typedef struct {
    cn_meta_t *m;
    int thread;
    int n;
    int errors;
} writer_arg_t;

static void *writer_main(void *p)
{
    writer_arg_t *a = p;
    for (int i = 0; i < a->n; i++) {
        cn_meta_txn_t *t;
        cn_meta_stmt_t *st;
        if (cn_meta_begin(a->m, CN_META_WRITE, &t) < 0) {
            a->errors++;
            continue;
        }
        cn_err_t e = cn_meta_prepare(t, "INSERT INTO w (thread, seq) VALUES (?, ?)", &st);
        if (e == 0) {
            cn_meta_bind_int64(st, 1, a->thread);
            cn_meta_bind_int64(st, 2, i);
            e = cn_meta_step(st);
            cn_meta_finish(st);
        }
        if (e < 0) {
            cn_meta_rollback(t);
            a->errors++;
            continue;
        }
        if (cn_meta_commit(t) < 0)
            a->errors++;
    }
    return NULL;
}

static double run_writers(cn_meta_t *m, int threads, int per, int base)
{
    pthread_t th[32];
    writer_arg_t args[32];
    int64_t t0 = cn_mono_ns();
    for (int i = 0; i < threads; i++) {
        args[i] = (writer_arg_t){ m, base + i, per, 0 };
        pthread_create(&th[i], NULL, writer_main, &args[i]);
    }
    int errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        errors += args[i].errors;
    }
    CN_CHECK_EQ(errors, 0);
    double secs = (double)(cn_mono_ns() - t0) / 1e9;
    return (double)(threads * per) / secs;
}

static void test_group_commit(void)
{
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    cn_meta_migration_t s[] = { { 1,
                                  "CREATE TABLE w (thread BIGINT NOT NULL, seq BIGINT NOT NULL,"
                                  " PRIMARY KEY (thread, seq))",
                                  NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "w", s, 1), 0);
    double r1 = run_writers(m, 1, 300, 0);
    double r16 = run_writers(m, 16, 100, 100);
    printf("# durable commits/s: 1 thread %.0f, 16 threads %.0f (%.1fx)\n", r1, r16, r16 / r1);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM w"), 300 + 1600);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(DISTINCT thread) FROM w"), 17);
    cn_meta_close(m);
    /* Everything acknowledged is there after a reopen. */
    CN_CHECK_EQ(cn_meta_open(target, NULL, &m), 0);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM w"), 1900);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

/* PostgreSQL: another session holds a row lock; a write that needs the row
 * waits lock_timeout (the busy timeout), then fails CN_E_DB_LOCKED, the
 * class cn_meta_run repeats; reads go on. */
static void locked_by_other_session_pg(void)
{
    char *dir;
    cn_meta_opts_t o = { .busy_timeout_ms = 300 };
    cn_meta_t *m = open_fresh(&dir, &o);
    cn_meta_migration_t s[] = { { 1, kv_sql, NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "kv", s, 1), 0);
    cn_meta_txn_t *t = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k, i) VALUES ('x', 0)"), 0);
    CN_CHECK_EQ(cn_meta_commit(t), 0);

    PGconn *other = PQconnectdb(target);
    CN_CHECK(PQstatus(other) == CONNECTION_OK);
    PGresult *r = PQexec(other, "BEGIN; UPDATE kv SET i = 1 WHERE k = 'x'");
    CN_CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);

    int64_t t0 = cn_mono_ms();
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "UPDATE kv SET i = 2 WHERE k = 'x'"), CN_E_DB_LOCKED);
    int64_t waited = cn_mono_ms() - t0;
    cn_meta_rollback(t);
    printf("# locked: CN_E_DB_LOCKED after %lld ms\n", (long long)waited);
    CN_CHECK(waited >= 250 && waited < 3000);
    CN_CHECK_EQ(query_int(m, "SELECT i FROM kv WHERE k = 'x'"), 0);

    r = PQexec(other, "COMMIT");
    CN_CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(other);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "UPDATE kv SET i = 2 WHERE k = 'x'"), 0);
    CN_CHECK_EQ(cn_meta_changes(t), 1);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(query_int(m, "SELECT i FROM kv WHERE k = 'x'"), 2);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

/* Another process holds the database with BEGIN EXCLUSIVE. */
static void test_locked_by_other_process(void)
{
    if (cn_test_meta_pg()) {
        locked_by_other_session_pg();
        return;
    }
    char *dir;
    cn_meta_opts_t o = { .busy_timeout_ms = 300 };
    cn_meta_t *m = open_fresh(&dir, &o);
    cn_meta_migration_t s[] = { { 1, kv_sql, NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "kv", s, 1), 0);

    char path[512];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    int up[2], down[2];
    CN_CHECK(pipe(up) == 0 && pipe(down) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        sqlite3 *h;
        char c = 'x';
        if (sqlite3_open(path, &h) != SQLITE_OK ||
            sqlite3_exec(h, "BEGIN EXCLUSIVE; INSERT INTO kv (k) VALUES ('child')", NULL, NULL,
                         NULL) != SQLITE_OK)
            c = 'e';
        if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
            _exit(3);
        sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(h);
        _exit(0);
    }
    char c = 0;
    CN_CHECK_EQ(read(up[0], &c, 1), 1);
    CN_CHECK_EQ(c, 'x');

    cn_meta_txn_t *t = NULL;
    int64_t t0 = cn_mono_ms();
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), CN_E_DB_LOCKED);
    int64_t waited = cn_mono_ms() - t0;
    printf("# locked: CN_E_DB_LOCKED after %lld ms\n", (long long)waited);
    CN_CHECK(waited >= 250 && waited < 3000);
    /* Readers keep working under WAL. */
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 0);

    CN_CHECK_EQ(write(down[1], "g", 1), 1);
    int status = -1;
    CN_CHECK_EQ(waitpid(pid, &status, 0), pid);
    CN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_exec(t, "INSERT INTO kv (k) VALUES ('parent')"), 0);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 2);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

/* The writer pool is bounded too: with one reader it is one connection on
 * every engine (SQLite always has just the one, the writer slot), and a
 * second write txn in-process times out. */
static void *hold_writer(void *p)
{
    cn_meta_t *m = p;
    cn_meta_txn_t *t;
    if (cn_meta_begin(m, CN_META_WRITE, &t) == 0)
        return t;
    return NULL;
}

static void test_writer_slot_bounded(void)
{
    char *dir;
    cn_meta_opts_t o = { .busy_timeout_ms = 200, .max_readers = 1 };
    cn_meta_t *m = open_fresh(&dir, &o);
    pthread_t th;
    void *held = NULL;
    pthread_create(&th, NULL, hold_writer, m);
    pthread_join(th, &held);
    CN_CHECK(held != NULL);
    /* held by "another thread" (its txn pointer is still open) */
    cn_meta_txn_t *t = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), CN_E_DB_LOCKED);
    /* reader pool of one: a second concurrent reader waits, then CN_E_BUSY */
    cn_meta_txn_t *r1 = NULL, *r2 = NULL;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &r1), 0);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &r2), CN_E_BUSY);
    cn_meta_rollback(r1);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &r2), 0);
    cn_meta_rollback(r2);
    /* A transaction may end on another thread than it began on. */
    cn_meta_rollback(held);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    cn_meta_rollback(t);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

/* Keys list in byte order on every engine, whatever the database's own
 * collation (the PostgreSQL harness makes it ICU en-US, which would sort
 * "a-b" before "Foo"): ORDER BY, continuation after a key, and a prefix
 * range, on a TEXT key and on a BLOB one. */
static const char *const order_keys[] = { "\xf0\x9f\x98\x80", "ab",  "a/b", "Foo",
                                          "\xc3\xa9",         "a.b", "bar", "a-b" };
static const char *const order_want[] = { "Foo", "a-b", "a.b",      "a/b",
                                          "ab",  "bar", "\xc3\xa9", "\xf0\x9f\x98\x80" };
enum {
    NKEYS = sizeof order_keys / sizeof order_keys[0]
};

/* Lists names after `after` (NULL: from the start) by sql; returns how many
 * matched order_want from index *at on. */
static int list_page(cn_meta_t *m, const char *sql, const char *after, int *at)
{
    cn_meta_txn_t *t;
    cn_meta_stmt_t *st;
    int n = 0;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_READ, &t), 0);
    CN_CHECK_EQ(cn_meta_prepare(t, sql, &st), 0);
    CN_CHECK_EQ(cn_meta_bind_str(st, 1, after ? after : ""), 0);
    while (cn_meta_step(st) == CN_META_ROW) {
        size_t len = 0;
        const char *k = cn_meta_column_text(st, 0, &len);
        const void *raw = cn_meta_column_blob(st, 1, &len);
        CN_CHECK(*at < NKEYS && k && strcmp(k, order_want[*at]) == 0);
        CN_CHECK(raw && len == strlen(order_want[*at]) && memcmp(raw, k, len) == 0);
        (*at)++;
        n++;
    }
    cn_meta_finish(st);
    cn_meta_rollback(t);
    return n;
}

static void test_byte_order(void)
{
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    cn_meta_migration_t s[] = {
        { 1,
          "CREATE TABLE names (name TEXT PRIMARY KEY, raw BLOB NOT NULL);"
          "CREATE INDEX names_raw ON names (raw)",
          NULL, NULL },
    };
    CN_CHECK_EQ(cn_meta_migrate(m, "names", s, 1), 0);
    cn_meta_txn_t *t;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    for (int i = 0; i < NKEYS; i++)
        CN_CHECK_EQ(cn_meta_execf(t, "INSERT INTO names (name, raw) VALUES (?, ?)", "sb",
                                  order_keys[i], (const void *)order_keys[i],
                                  strlen(order_keys[i])),
                    CN_META_DONE);
    CN_CHECK_EQ(cn_meta_commit(t), 0);

    /* The whole list, on each column. */
    int at = 0;
    list_page(m, "SELECT name, raw FROM names WHERE name > ? ORDER BY name", NULL, &at);
    CN_CHECK_EQ(at, NKEYS);
    at = 0;
    list_page(m, "SELECT name, raw FROM names WHERE name > ? ORDER BY raw", NULL, &at);
    CN_CHECK_EQ(at, NKEYS);
    /* Pages of three, each continuing after the last key of the one before. */
    at = 0;
    const char *after = NULL;
    int pages = 0;
    while (list_page(m, "SELECT name, raw FROM names WHERE name > ? ORDER BY name LIMIT 3", after,
                     &at) > 0) {
        after = order_want[at - 1];
        pages++;
    }
    CN_CHECK_EQ(at, NKEYS);
    CN_CHECK_EQ(pages, 3);
    /* The keys under prefix "a" with delimiter "/": "a/" groups "a/b", the
     * rest are keys; the range [a, b) holds them in byte order. */
    at = 1;
    CN_CHECK_EQ(list_page(m,
                          "SELECT name, raw FROM names WHERE name >= ? AND name < 'b'"
                          " ORDER BY name",
                          "a", &at),
                4);
    /* The database's own collation would have failed the test: a literal
     * comparison (no column collation) under ICU en-US puts "a-b" first. */
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM names WHERE 'a-b' < 'Foo'"),
                cn_test_meta_pg() ? NKEYS : 0);
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

/* PostgreSQL: every backend of the database is terminated (as by a server
 * restart) while the handle's connections are idle; the next transactions
 * reconnect and prepare their statements again, without an error. */
static void test_reconnect(void)
{
    if (!cn_test_meta_pg()) {
        printf("# SQLite has no server connection to lose\n");
        return;
    }
    char *dir;
    cn_meta_t *m = open_fresh(&dir, NULL);
    cn_meta_migration_t s[] = { { 1, kv_sql, NULL, NULL } };
    CN_CHECK_EQ(cn_meta_migrate(m, "kv", s, 1), 0);
    const char *ins = "INSERT INTO kv (k, i) VALUES (?, ?)";
    cn_meta_txn_t *t;
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK_EQ(cn_meta_execf(t, ins, "si", "before", (int64_t)1), CN_META_DONE);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 1);

    /* (dollar quotes: cn_test_meta_admin takes no single quote) */
    CN_CHECK_EQ(cn_test_meta_admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                   " WHERE datname LIKE $$cnt_%$$ AND pid <> pg_backend_pid()"),
                0);
    usleep(100000);
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0); /* the writer reconnects */
    CN_CHECK_EQ(cn_meta_execf(t, ins, "si", "after", (int64_t)2), CN_META_DONE);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(query_int(m, "SELECT COUNT(*) FROM kv"), 2); /* a reader too */
    cn_meta_close(m);
    rmtree(dir);
    free(dir);
}

CN_TEST_MAIN(CN_TEST(test_open), CN_TEST(test_byte_order), CN_TEST(test_reconnect),
             CN_TEST(test_migrations), CN_TEST(test_txn_and_stmts), CN_TEST(test_group_commit),
             CN_TEST(test_locked_by_other_process), CN_TEST(test_writer_slot_bounded), )
