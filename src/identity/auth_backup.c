/* `auth migrate`, `auth backup` and `auth restore` (docs/protocol/sau2.md
 * section 8): the schema steps, and a copy of the whole auth state — every
 * auth table but the storage side's high-water marks, and the four private
 * keys — in one file of mode 0600.  Migrate and restore draw a new
 * incarnation (the revision is kept, so it stays monotonic); storage
 * servers see the new incarnation and start a new high-water mark.
 *
 * The file: "CNAUTHB1", then sections — 'T' u8 table u32 rows, each column
 * u8 tag (0 NULL, 1 i64 LE, 2 text, 3 blob: u32 LE length, bytes); 'K' u8
 * key u32 length PEM — then 'E' and BLAKE3-256 of everything before it.
 * Durability: restore publishes the keys before the transaction that
 * replaces the tables commits (as init does).  Single-threaded commands,
 * never a running server; never a key or a hash in a log line. */
#include "auth_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/pem.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define MAGIC "CNAUTHB1"
#define BACKUP_MAX (1u << 30)

/* ---- the new incarnation ------------------------------------------------------------------- */

static cn_err_t renew_body(cn_meta_txn_t *t, void *arg)
{
    cn_sau2_reply_t probe;
    CN_TRY(cn__au_state_read(t, &probe)); /* CN_E_NOT_FOUND before init */
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_STATE_RENEW], "b", arg, (size_t)CN_SAU2_ID_LEN);
}

static cn_err_t renew(cn_meta_t *meta)
{
    uint8_t inc[CN_SAU2_ID_LEN];
    CN_TRY(cn_random_bytes(inc, sizeof inc));
    return cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, renew_body, inc);
}

static cn_err_t state_body(cn_meta_txn_t *t, void *arg)
{
    return cn__au_state_read(t, arg);
}

cn_err_t cn_auth_incarnation(cn_meta_t *meta, uint8_t incarnation[CN_SAU2_ID_LEN],
                             uint64_t *revision)
{
    cn_sau2_reply_t r;
    CN_TRY(cn__sql_migrate(meta, &cn__sql_au_set));
    CN_TRY(cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, state_body, &r));
    memcpy(incarnation, r.incarnation, CN_SAU2_ID_LEN);
    *revision = r.revision;
    return 0;
}

cn_err_t cn_auth_migrate(cn_meta_t *meta)
{
    CN_TRY(cn__sql_migrate(meta, &cn__sql_au_set));
    return renew(meta);
}

/* ---- backup --------------------------------------------------------------------------------- */

static cn_err_t put_bytes(cn_buf_t *b, uint8_t tag, const void *p, size_t n)
{
    if (n > UINT32_MAX)
        return CN_E_TOO_LARGE;
    CN_TRY(cn_buf_put_u8(b, tag));
    CN_TRY(cn_buf_put_u32le(b, (uint32_t)n));
    return n ? cn_buf_append(b, p, n) : 0;
}

static cn_err_t dump_table(cn_meta_txn_t *t, uint8_t i, cn_buf_t *b)
{
    const cn__sql_au_table_t *tb = &cn__sql_au_tables[i];
    cn_meta_stmt_t *st = NULL;
    size_t at = 0;
    uint32_t rows = 0;
    CN_TRY(cn_buf_put_u8(b, 'T'));
    CN_TRY(cn_buf_put_u8(b, i));
    at = b->len;
    CN_TRY(cn_buf_put_u32le(b, 0)); /* the row count, filled in below */
    cn_err_t e = cn_meta_queryf(t, &st, tb->select, "");
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        e = 0;
        for (int c = 0; tb->types[c] && e == 0; c++) {
            size_t n = 0;
            if (cn_meta_column_is_null(st, c)) {
                e = cn_buf_put_u8(b, 0);
            } else if (tb->types[c] == 'i') {
                e = cn_buf_put_u8(b, 1);
                if (e == 0)
                    e = cn_buf_put_u64le(b, (uint64_t)cn_meta_column_int64(st, c));
            } else if (tb->types[c] == 't') {
                const char *s = cn_meta_column_text(st, c, &n);
                e = put_bytes(b, 2, s, n);
            } else {
                const void *p = cn_meta_column_blob(st, c, &n);
                e = put_bytes(b, 3, p, n);
            }
        }
        rows++;
    }
    cn_meta_finish(st);
    if (e < 0)
        return e;
    for (int k = 0; k < 4; k++)
        b->data[at + k] = (uint8_t)(rows >> (8 * k));
    return 0;
}

/* The tables appended to b from start on; a repeated attempt first wipes
 * what an earlier one appended. */
typedef struct dump {
    cn_buf_t *b;
    size_t start;
} dump_t;

static cn_err_t dump_body(cn_meta_txn_t *t, void *arg)
{
    dump_t *d = arg;
    cn_sau2_reply_t probe;
    OPENSSL_cleanse(d->b->data + d->start, d->b->len - d->start);
    d->b->len = d->start;
    CN_TRY(cn__au_state_read(t, &probe));
    for (uint8_t i = 0; i < CN_SQL_AU_NTABLES; i++)
        CN_TRY(dump_table(t, i, d->b));
    return 0;
}

/* Appends the private keys from data_dir/auth, as PEM. */
static cn_err_t dump_keys(const char *data_dir, cn_buf_t *b)
{
    cn_err_t e = 0;
    for (uint8_t i = 0; i < CN__AU_NKEYS && e == 0; i++) {
        EVP_PKEY *k = NULL;
        cn_buf_t pem = { 0 };
        e = cn__au_key_load(data_dir, cn__au_key_names[i], &k);
        if (e == 0)
            e = cn__au_key_pem(k, &pem);
        if (e == 0)
            e = cn_buf_put_u8(b, 'K');
        if (e == 0)
            e = cn_buf_put_u8(b, i);
        if (e == 0)
            e = put_bytes(b, 0, pem.data, pem.len);
        OPENSSL_cleanse(pem.data, pem.len);
        cn_buf_free(&pem);
        EVP_PKEY_free(k);
    }
    return e;
}

cn_err_t cn_auth_backup(cn_meta_t *meta, const char *data_dir, const char *path)
{
    cn_buf_t b = { 0 };
    cn_digest_t d;
    cn_err_t e = cn_buf_append(&b, MAGIC, 8);
    dump_t dd = { &b, b.len };
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, dump_body, &dd);
    if (e == 0)
        e = dump_keys(data_dir, &b);
    if (e == 0)
        e = cn_buf_put_u8(&b, 'E');
    if (e == 0) {
        cn_blake3(b.data, b.len, &d);
        e = cn_buf_append(&b, d.b, sizeof d.b);
    }
    if (e == 0)
        e = cn__au_file_write(path, b.data, b.len);
    OPENSSL_cleanse(b.data, b.len);
    cn_buf_free(&b);
    return e;
}

/* ---- restore -------------------------------------------------------------------------------- */

/* Reads path whole into b (at most BACKUP_MAX bytes). */
static cn_err_t read_all(const char *path, cn_buf_t *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    cn_err_t e = fstat(fd, &st) == 0 ? 0 : -errno;
    if (e == 0 && (st.st_size < 0 || (uint64_t)st.st_size > BACKUP_MAX))
        e = CN_E_TOO_LARGE;
    if (e == 0)
        e = cn_buf_reserve(b, (size_t)st.st_size);
    while (e == 0 && b->len < (size_t)st.st_size) {
        ssize_t n = read(fd, b->data + b->len, (size_t)st.st_size - b->len);
        if (n <= 0)
            e = n < 0 ? -errno : CN_E_CORRUPT;
        else
            b->len += (size_t)n;
    }
    close(fd);
    return e;
}

/* Reads one column value from r and binds it to parameter c + 1 of st (st
 * NULL: only reads it). */
static cn_err_t bind_value(cn_rd_t *r, cn_meta_stmt_t *st, int c)
{
    uint8_t tag = cn_rd_u8(r);
    if (tag == 0)
        return r->err ? CN_E_CORRUPT : st ? cn_meta_bind_null(st, c + 1) : 0;
    if (tag == 1) {
        int64_t v = (int64_t)cn_rd_u64le(r);
        return r->err ? CN_E_CORRUPT : st ? cn_meta_bind_int64(st, c + 1, v) : 0;
    }
    uint32_t n = cn_rd_u32le(r);
    const uint8_t *p = cn_rd_bytes(r, n);
    if (r->err || (n && !p) || (tag != 2 && tag != 3))
        return CN_E_CORRUPT;
    if (!st)
        return 0;
    return tag == 2 ? cn_meta_bind_text(st, c + 1, (const char *)p, n)
                    : cn_meta_bind_blob(st, c + 1, p, n);
}

/* One 'T' section: inserted inside t, or only read when t is NULL. */
static cn_err_t load_table(cn_meta_txn_t *t, cn_rd_t *r)
{
    uint8_t i = cn_rd_u8(r);
    uint32_t rows = cn_rd_u32le(r);
    if (r->err || i >= CN_SQL_AU_NTABLES)
        return CN_E_CORRUPT;
    const cn__sql_au_table_t *tb = &cn__sql_au_tables[i];
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = t ? cn_meta_prepare(t, tb->insert, &st) : 0;
    for (uint32_t k = 0; k < rows && e == 0; k++) {
        if (st)
            cn_meta_reset(st);
        for (int c = 0; tb->types[c] && e == 0; c++)
            e = bind_value(r, st, c);
        if (e == 0 && st) {
            e = cn_meta_step(st);
            e = e == CN_META_DONE ? 0 : e < 0 ? e : CN_E_CORRUPT;
        }
    }
    cn_meta_finish(st);
    return e;
}

/* One 'K' section: its key published under data_dir/auth, or only read
 * when data_dir is NULL; *have gains its bit. */
static cn_err_t load_key(const char *data_dir, cn_rd_t *r, int *have)
{
    uint8_t i = cn_rd_u8(r), zero = cn_rd_u8(r);
    uint32_t len = cn_rd_u32le(r);
    const uint8_t *pem = cn_rd_bytes(r, len);
    if (r->err || !pem || zero || i >= CN__AU_NKEYS || len > INT32_MAX)
        return CN_E_CORRUPT;
    *have |= 1 << i;
    if (!data_dir)
        return 0;
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    cn_err_t e = k ? cn__au_key_save(data_dir, cn__au_key_names[i], k) : CN_E_CORRUPT;
    EVP_PKEY_free(k);
    return e;
}

/* Walks every section of a backup's body: tables into t (when not NULL),
 * keys into data_dir (when not NULL).  CN_E_CORRUPT unless all four keys
 * are present and every byte is accounted for. */
static cn_err_t sections(const uint8_t *p, size_t n, cn_meta_txn_t *t, const char *data_dir)
{
    cn_rd_t r = cn_rd_init(p, n);
    int have = 0;
    cn_err_t e = 0;
    while (e == 0 && cn_rd_left(&r) > 0) {
        uint8_t tag = cn_rd_u8(&r);
        e = tag == 'T'   ? load_table(t, &r)
            : tag == 'K' ? load_key(data_dir, &r, &have)
                         : CN_E_CORRUPT;
    }
    return e ? e : r.err || have != (1 << CN__AU_NKEYS) - 1 ? CN_E_CORRUPT : 0;
}

typedef struct restore {
    const uint8_t *body; /* the sections after the magic, 'E' excluded */
    size_t len;
    uint8_t inc[CN_SAU2_ID_LEN];
} restore_t;

static cn_err_t restore_body(cn_meta_txn_t *t, void *arg)
{
    restore_t *rs = arg;
    cn_sau2_reply_t probe;
    for (int i = 0; i < CN_SQL_AU_NTABLES; i++)
        CN_TRY(cn_meta_exec(t, cn__sql_au_tables[i].clear));
    CN_TRY(sections(rs->body, rs->len, t, NULL));
    CN_TRY(cn__au_state_read(t, &probe)); /* the copy held a state row */
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_STATE_RENEW], "b", rs->inc,
                         (size_t)CN_SAU2_ID_LEN);
}

cn_err_t cn_auth_restore(cn_meta_t *meta, const char *data_dir, const char *path)
{
    cn_buf_t b = { 0 };
    restore_t rs = { 0 };
    cn_digest_t d;
    cn_err_t e = read_all(path, &b);
    if (e == 0 && (b.len < 8 + 1 + CN_DIGEST_LEN || memcmp(b.data, MAGIC, 8) != 0 ||
                   b.data[b.len - CN_DIGEST_LEN - 1] != 'E'))
        e = CN_E_CORRUPT;
    if (e == 0) {
        cn_blake3(b.data, b.len - CN_DIGEST_LEN, &d);
        if (!cn_ct_equal(d.b, b.data + b.len - CN_DIGEST_LEN, CN_DIGEST_LEN))
            e = CN_E_CORRUPT;
    }
    rs.body = b.data + 8;
    rs.len = e == 0 ? b.len - 8 - 1 - CN_DIGEST_LEN : 0;
    if (e == 0)
        e = cn__sql_migrate(meta, &cn__sql_au_set);
    if (e == 0)
        e = cn_random_bytes(rs.inc, sizeof rs.inc);
    if (e == 0) /* the whole file is checked before a key is replaced */
        e = sections(rs.body, rs.len, NULL, NULL);
    if (e == 0)
        e = sections(rs.body, rs.len, NULL, data_dir);
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, restore_body, &rs);
    OPENSSL_cleanse(b.data, b.len);
    cn_buf_free(&b);
    return e;
}
