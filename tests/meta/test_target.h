/* Where a metadata test keeps its database, on either engine: with
 * CAIRN_TEST_META unset, the test's own data directory (SQLite, as always);
 * with CAIRN_TEST_META a postgres:// URI (tests/fleet/pg.sh sets it), a fresh
 * database created on that server for each call, so every test starts from
 * an empty schema exactly as it does with a new directory.  Header-only, for
 * tests/meta and any service test that wants both engines; databases are
 * made with psql (postgresql-client), so a test needs no libpq of its own. */
#ifndef CN_TEST_META_TARGET_H
#define CN_TEST_META_TARGET_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const char *cn_test_meta_url(void)
{
    const char *u = getenv("CAIRN_TEST_META");
    if (u && (strncmp(u, "postgres://", 11) == 0 || strncmp(u, "postgresql://", 13) == 0))
        return u;
    return NULL;
}

static inline bool cn_test_meta_pg(void)
{
    return cn_test_meta_url() != NULL;
}

/* base with its database name replaced by db, into out.  false if it does
 * not fit or base has no path. */
static inline bool cn_test_meta_url_with_db(const char *base, const char *db, char *out, size_t cap)
{
    const char *auth = strstr(base, "://");
    const char *slash = auth ? strchr(auth + 3, '/') : NULL;
    if (!slash)
        return false;
    const char *rest = strchr(slash, '?');
    if (!rest)
        rest = slash + strlen(slash);
    int n = snprintf(out, cap, "%.*s/%s%s", (int)(slash - base), base, db, rest);
    return n > 0 && (size_t)n < cap;
}

/* Runs one statement on the server of CAIRN_TEST_META's database with
 * psql; 0 or -1.  sql holds no single quote. */
static inline int cn_test_meta_admin(const char *sql)
{
    char cmd[1024];
    int n = snprintf(cmd, sizeof cmd, "psql -X -q -v ON_ERROR_STOP=1 '%s' -c '%s' >/dev/null",
                     cn_test_meta_url(), sql);
    if (n < 0 || (size_t)n >= sizeof cmd || strchr(cn_test_meta_url(), '\''))
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

/* The target to hand cn_meta_open: dir itself (SQLite), or the URI of a
 * new, empty database (PostgreSQL).  false on failure. */
static inline bool cn_test_meta_target(const char *dir, char *out, size_t cap)
{
    if (!cn_test_meta_pg()) {
        int n = snprintf(out, cap, "%s", dir);
        return n > 0 && (size_t)n < cap;
    }
    static unsigned seq;
    char db[64], sql[128];
    snprintf(db, sizeof db, "cnt_%ld_%u", (long)getpid(), ++seq);
    snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\" STRATEGY = FILE_COPY", db);
    if (cn_test_meta_admin(sql) != 0)
        return false;
    return cn_test_meta_url_with_db(cn_test_meta_url(), db, out, cap);
}

/* The target for data dir dir, the same one every time for the same dir
 * (a reopen, a second handle "in another process"): dir itself on SQLite, a
 * database made at the first call for it on PostgreSQL.  Remembers the last
 * 32 dirs; "" when the database cannot be made or dir is 256 bytes or longer
 * (cn_meta_open then fails). */
static inline const char *cn_test_meta_for(const char *dir)
{
    static char dirs[32][256], targets[32][512];
    static unsigned next;
    if (!cn_test_meta_pg())
        return dir;
    size_t len = strlen(dir);
    if (len >= sizeof dirs[0])
        return "";
    for (unsigned i = 0; i < 32; i++)
        if (strcmp(dirs[i], dir) == 0)
            return targets[i];
    unsigned i = next++ % 32;
    memcpy(dirs[i], dir, len + 1);
    if (!cn_test_meta_target(dir, targets[i], sizeof targets[i]))
        targets[i][0] = '\0';
    return targets[i];
}

#endif
