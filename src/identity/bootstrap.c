/* The first administrator credential.
 *
 * Invariants (random credential, no CAIRN_ADMIN_TOKEN):
 *  1. The decision "no account exists" is taken inside the write
 *     transaction that creates the account, so two processes starting at
 *     once create one administrator (the loser's attempt, failed with
 *     CN_E_DB_LOCKED on PostgreSQL, is run again: bootstrap_create).
 *  2. DATA/admin.token is written to a temporary name, fsynced, renamed into
 *     place and its directory fsynced BEFORE that transaction commits: a
 *     crash leaves either no administrator (and the next start makes a fresh
 *     one, overwriting the file) or an administrator whose credential is on
 *     disk — never an administrator nobody can log in as.
 * The secret is never logged; only the file's path is.
 */
#include "identity_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cairn/util.h"

#define ADMIN_ACCOUNT "admin"

static cn_err_t write_token_file(const char *data_dir, const char *path, const char *cred)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return CN_E_INVALID;
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    cn_err_t e = cn_write_full(fd, cred, strlen(cred));
    if (e == 0)
        e = cn_write_full(fd, "\n", 1);
    if (e == 0 && fsync(fd) != 0)
        e = -errno;
    close(fd);
    if (e == 0 && rename(tmp, path) != 0)
        e = -errno;
    if (e < 0)
        unlink(tmp);
    if (e == 0)
        e = cn_fsync_dir(data_dir);
    return e;
}

/* The int64 in the first column of the first row of sql (with ?1 = name
 * unless name is NULL) in *out; CN_E_NOT_FOUND without a row. */
static cn_err_t first_int(cn_meta_txn_t *t, int64_t *out, const char *sql, const char *name)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = name ? cn_meta_queryf(t, &st, sql, "s", name) : cn_meta_queryf(t, &st, sql, "");
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        *out = cn_meta_column_int64(st, 0);
        e = 0;
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return e;
}

/* What a bootstrap makes: the administrator's account id and token, and
 * (without CAIRN_ADMIN_TOKEN) the file its credential is written to. */
typedef struct admin_cred {
    cn_identity_t *id;
    const char *data_dir, *path;
    const char *token_id, *secret;
    int64_t accounts; /* counted before anything is made */
    bool wrote;       /* this attempt wrote the credential file */
} admin_cred_t;

static cn_err_t count_body(cn_meta_txn_t *t, void *ctx)
{
    admin_cred_t *ac = ctx;
    return first_int(t, &ac->accounts, cn__sql_id[CN_SQL_ID_ACCOUNT_COUNT], NULL);
}

/* Makes the administrator hold ac's token, creating the account if needed. */
static cn_err_t env_body(cn_meta_txn_t *t, void *ctx)
{
    const admin_cred_t *ac = ctx;
    int64_t aid = 0;
    cn_err_t e = first_int(t, &aid, cn__sql_id[CN_SQL_ID_ACCOUNT_ID_BY_NAME], ADMIN_ACCOUNT);
    if (e == CN_E_NOT_FOUND)
        e = cn__id_account_insert(t, ADMIN_ACCOUNT, NULL, NULL, &aid);
    if (e == 0)
        e = cn__id_token_put(ac->id, t, ac->token_id, aid, ac->secret, strlen(ac->secret),
                             CN_PERM_ALL, 0);
    return e;
}

/* CAIRN_ADMIN_TOKEN=id:secret: make that credential hold. */
static cn_err_t bootstrap_env(cn_identity_t *id, const char *cred)
{
    const char *colon = strchr(cred, ':');
    if (!colon || !cn__id_valid_token_id(cred, (size_t)(colon - cred)) ||
        !cn__id_valid_secret(colon + 1, strlen(colon + 1))) {
        cn_error("identity",
                 "CAIRN_ADMIN_TOKEN must be token_id:secret (token id of"
                 " [A-Za-z0-9._-], at most %d; secret printable, at most %d bytes)",
                 CN_TOKEN_ID_MAX, CN_SECRET_MAX);
        return CN_E_INVALID;
    }
    char tid[CN_TOKEN_ID_MAX + 1];
    memcpy(tid, cred, (size_t)(colon - cred));
    tid[colon - cred] = '\0';
    admin_cred_t ac = { .id = id, .token_id = tid, .secret = colon + 1 };
    CN_TRY(cn__id_write_run(id, CN_META_RUN_WRITE | CN_META_RETRY, env_body, &ac));
    cn_info("identity", "administrator token %s taken from CAIRN_ADMIN_TOKEN", tid);
    return 0;
}

/* Creates the administrator with ac's credential when no account exists,
 * writing the credential file before the commit (invariant 2). */
static cn_err_t create_body(cn_meta_txn_t *t, void *ctx)
{
    admin_cred_t *ac = ctx;
    char cred[CN_CREDENTIAL_MAX];
    int64_t aid = 0;
    cn_err_t e = count_body(t, ac);
    if (e == 0 && ac->accounts != 0)
        cn_meta_discard(t); /* another process bootstrapped first: nothing to write */
    if (e == 0 && ac->accounts == 0)
        e = cn__id_account_insert(t, ADMIN_ACCOUNT, NULL, NULL, &aid);
    if (e == 0 && ac->accounts == 0)
        e = cn__id_token_put(ac->id, t, ac->token_id, aid, ac->secret, strlen(ac->secret),
                             CN_PERM_ALL, 0);
    if (e == 0 && ac->accounts == 0) {
        snprintf(cred, sizeof cred, "%s:%s", ac->token_id, ac->secret);
        e = write_token_file(ac->data_dir, ac->path, cred);
        ac->wrote = e == 0;
        OPENSSL_cleanse(cred, sizeof cred);
    }
    return e;
}

/* Runs create_body with a fresh credential until it commits, finds an
 * administrator made meanwhile, or fails otherwise.  Not CN_META_RETRY (the
 * body writes the file): here a CN_E_DB_LOCKED attempt, e.g. the loser of
 * two processes starting at once on PostgreSQL (both count no account and
 * take the same MAX+1 id: 40001), did not commit, so the file it wrote
 * holds a credential that does not exist; it is removed, and the next
 * attempt counts the accounts again.  Bounded like cn_meta_run's repeats:
 * twice the busy timeout. */
static cn_err_t bootstrap_create(cn_identity_t *id, admin_cred_t *ac)
{
    char tid[CN_TOKEN_ID_MAX + 1], secret[CN_SECRET_MAX + 1];
    int64_t until = cn_mono_ms() + 2 * (int64_t)cn_meta_busy_timeout_ms(id->meta);
    for (;;) {
        cn_err_t e = cn__id_new_credential(tid, secret);
        ac->token_id = tid;
        ac->secret = secret;
        ac->wrote = false;
        if (e == 0)
            e = cn__id_write_run(id, CN_META_RUN_WRITE, create_body, ac);
        OPENSSL_cleanse(secret, sizeof secret);
        if (e == CN_E_DB_LOCKED && ac->wrote)
            unlink(ac->path);
        if (e != CN_E_DB_LOCKED || cn_mono_ms() >= until)
            return e;
        cn_info("identity", "creating the administrator conflicted with another process;"
                            " trying again");
    }
}

cn_err_t cn_identity_bootstrap(cn_identity_t *id, const char *data_dir)
{
    if (!id || !data_dir)
        return CN_E_INVALID;
    const char *env = getenv("CAIRN_ADMIN_TOKEN");
    if (env && *env)
        return bootstrap_env(id, env);

    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/admin.token", data_dir) >= sizeof path)
        return CN_E_INVALID;

    /* Cheap check first, so a running server never takes the write lock. */
    admin_cred_t ac = { .id = id, .data_dir = data_dir, .path = path };
    CN_TRY(cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, count_body, &ac));
    if (ac.accounts > 0) {
        if (access(path, F_OK) == 0)
            cn_info("identity", "administrator credential in %s", path);
        return 0;
    }

    cn_err_t e = bootstrap_create(id, &ac);
    if (e == 0 && ac.accounts == 0) {
        cn_info("identity", "created account admin; administrator credential written to %s", path);
    }
    return e;
}
