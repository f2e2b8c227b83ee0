/* Offline backup and restore of one repository (cn_repos_backup /
 * cn_repos_restore, `cairn admin repo backup|restore`).
 *
 * A backup is one stream (docs/protocol/scribe.md, section 13.8): a header,
 * the repository row, every blob its membership names (logical bytes, with
 * the kind that decides the stored form), the rows of its history tables
 * read in the same read transaction (the workspace registrations and
 * retirements among them), and a trailer holding the BLAKE3 of everything
 * before it.  Upload pins, intents and locks are not kept: they belong to
 * uploads and edits in flight.  A restore publishes the blobs (each verified
 * against its digest), then replaces the repository's rows in one write
 * transaction that commits only when the trailer matches — with a new
 * random incarnation, so a client that knew the repository before answers
 * incarnation_mismatch instead of submitting onto a rewound history.
 *
 * Both run under CN_META_RETRY when their stream is a regular file, so a
 * transaction lost with its server (a failover, a session ended) is run
 * again: the backup rewinds and truncates its output to where it began,
 * the restore rewinds its input to where its transaction's part begins
 * (with the hash, the tag and the counts as they were there).  A restore
 * whose COMMIT's outcome was lost with its server looks for its new
 * incarnation first, and runs again only if it is not there.  A pipe
 * cannot be rewound: there a lost transaction fails the run. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BK_MAGIC "CNREPOBK"
/* 2: branches (origins, name keys) and commits' merge parents; 3: workspace
 * rows (table 11), retired ones included */
#define BK_VERSION 3u
#define BK_ROW 1
#define BK_BLOB 2
#define BK_END 0xff
#define BK_ROW_MAX (64u << 20)

/* The backed-up tables: the statements that dump, load and clear one
 * repository's rows (meta/sql/repos.h), and the types of the columns they
 * dump and load, in order (I integer, B blob, b nullable blob).  Table 0 is
 * the repository row, keyed by id; the rest by repo.  A version 1 backup
 * (before branches) differs in tables 1 and 3, and has no table 10 (the
 * file_lineage index): v1_branch and v1_commit say how its rows load, with
 * the defaults the schema step gave the new columns (only "main" branches,
 * no merges), its lineage is derived from its path events as that step
 * derived it, and a restored repository records the current schema (the
 * column's default).  Table 11 holds the workspace rows, retired ones
 * included.  A restore replaces the live rows with the backup's but never
 * revives a retired id: the data directory's retirements stay (clear
 * deletes only live rows, load skips an id already there), so a workspace
 * retired before or after the backup stays refused.  A backup before
 * version 3 has no table 11. */
typedef struct bk_table {
    int dump, load, clear;
    const char *types;
} bk_table_t;
static const bk_table_t tables[] = {
    { CN_SQL_REPOS_REPO_BY_ID, CN_SQL_REPOS_REPO_LOAD, CN_SQL_REPOS_REPO_CLEAR, "BBBBIII" },
    { CN_SQL_REPOS_BRANCH_DUMP, CN_SQL_REPOS_BRANCH_INSERT, CN_SQL_REPOS_BRANCH_CLEAR, "BBBBIbII" },
    { CN_SQL_REPOS_OBJECT_DUMP, CN_SQL_REPOS_OBJECT_LOAD, CN_SQL_REPOS_OBJECT_CLEAR, "BIBBII" },
    { CN_SQL_REPOS_COMMIT_DUMP, CN_SQL_REPOS_COMMIT_INSERT, CN_SQL_REPOS_COMMIT_CLEAR,
      "BIBBIBBBIBBIbI" },
    { CN_SQL_REPOS_ROOT_DUMP, CN_SQL_REPOS_ROOT_INSERT, CN_SQL_REPOS_ROOT_CLEAR, "BBB" },
    { CN_SQL_REPOS_TREE_NODE_DUMP, CN_SQL_REPOS_TREE_NODE_LOAD, CN_SQL_REPOS_TREE_NODE_CLEAR,
      "BBBB" },
    { CN_SQL_REPOS_FOLD_DUMP, CN_SQL_REPOS_FOLD_LOAD, CN_SQL_REPOS_FOLD_CLEAR, "BBBB" },
    { CN_SQL_REPOS_EVENT_DUMP, CN_SQL_REPOS_EVENT_INSERT, CN_SQL_REPOS_EVENT_CLEAR, "BBBIIb" },
    { CN_SQL_REPOS_OPERATION_DUMP, CN_SQL_REPOS_OPERATION_INSERT, CN_SQL_REPOS_OPERATION_CLEAR,
      "BBIBBBI" },
    { CN_SQL_REPOS_NOTE_DUMP, CN_SQL_REPOS_NOTE_INSERT, CN_SQL_REPOS_NOTE_CLEAR, "BIIBIB" },
    { CN_SQL_REPOS_LINEAGE_DUMP, CN_SQL_REPOS_LINEAGE_INSERT, CN_SQL_REPOS_LINEAGE_CLEAR, "BIBIB" },
    { CN_SQL_REPOS_WS_DUMP, CN_SQL_REPOS_WS_LOAD, CN_SQL_REPOS_WS_CLEAR_LIVE, "BBBbBBII" },
};
#define NTABLES (sizeof tables / sizeof tables[0])
static const bk_table_t v1_branch = { CN_SQL_REPOS_BRANCH_DUMP, CN_SQL_REPOS_BRANCH_LOAD_V1,
                                      CN_SQL_REPOS_BRANCH_CLEAR, "BBBI" };
static const bk_table_t v1_commit = { CN_SQL_REPOS_COMMIT_DUMP, CN_SQL_REPOS_COMMIT_LOAD_V1,
                                      CN_SQL_REPOS_COMMIT_CLEAR, "BIBBIBBBIBB" };

/* How table t of a backup of `version` is loaded. */
static const bk_table_t *table_of(uint32_t version, uint8_t t)
{
    if (version == 1 && t == 1)
        return &v1_branch;
    if (version == 1 && t == 3)
        return &v1_commit;
    return &tables[t];
}
/* What a restore clears besides the tables above: the upload intents, pins
 * and locks (live coordination state, never backed up). */
static const int transient[] = { CN_SQL_REPOS_INTENT_CLEAR, CN_SQL_REPOS_PIN_CLEAR,
                                 CN_SQL_REPOS_LOCK_CLEAR };
#define NTRANSIENT (sizeof transient / sizeof transient[0])

/* ---- output ----------------------------------------------------------------------- */
typedef struct bk_out {
    int fd;
    cn_blake3_t h;
    uint64_t bytes;
} bk_out_t;

/* Where a stream of fd begins when fd is a regular file (which can be
 * rewound for a repeated run), else -1. */
static off_t rewind_point(int fd)
{
    struct stat sb;
    return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? lseek(fd, 0, SEEK_CUR) : -1;
}

static cn_err_t out_write(bk_out_t *o, const void *p, size_t n)
{
    cn_blake3_update(&o->h, p, n);
    o->bytes += n;
    return cn_write_full(o->fd, p, n);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* One row: u8 1 | u32 length | u8 table | per column: I → i64; B → u32 len,
 * bytes; b → u8 present, then as B. */
static cn_err_t row_out(bk_out_t *o, cn_buf_t *b, uint8_t t, cn_meta_stmt_t *st)
{
    cn_buf_reset(b);
    uint8_t hdr[5] = { BK_ROW };
    CN_TRY(cn_buf_append(b, hdr, sizeof hdr));
    CN_TRY(cn_buf_append(b, &t, 1));
    for (int c = 0; tables[t].types[c]; c++) {
        uint8_t v[8];
        char ty = tables[t].types[c];
        if (ty == 'I') {
            put_u64(v, (uint64_t)cn_meta_column_int64(st, c));
            CN_TRY(cn_buf_append(b, v, 8));
            continue;
        }
        if (ty == 'b') {
            uint8_t present = !cn_meta_column_is_null(st, c);
            CN_TRY(cn_buf_append(b, &present, 1));
            if (!present)
                continue;
        }
        size_t n = 0;
        const void *p = cn_meta_column_blob(st, c, &n);
        put_u32(v, (uint32_t)n);
        CN_TRY(cn_buf_append(b, v, 4));
        if (n)
            CN_TRY(cn_buf_append(b, p, n));
    }
    if (b->len - 5 > BK_ROW_MAX)
        return CN_E_TOO_LARGE;
    put_u32(b->data + 1, (uint32_t)(b->len - 5));
    return out_write(o, b->data, b->len);
}

static cn_err_t table_out(bk_out_t *o, cn_meta_txn_t *txn, cn_buf_t *b, uint8_t t,
                          const uint8_t repo[16], uint64_t *rows)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[tables[t].dump], "b", CN__ARG_ID(repo));
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        if ((err = row_out(o, b, t, st)) < 0)
            break;
        (*rows)++;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

typedef struct blob_sink {
    bk_out_t *o;
} blob_sink_t;

static cn_err_t blob_piece(void *ctx, const void *p, size_t n)
{
    return out_write(((blob_sink_t *)ctx)->o, p, n);
}

/* u8 2 | u8 kind | [32] digest | u64 length | bytes. */
static cn_err_t blobs_out(cn_repos_t *r, bk_out_t *o, cn_meta_txn_t *txn, const uint8_t repo[16],
                          uint64_t *nblobs)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_BACKUP_BLOBS], "b", CN__ARG_ID(repo));
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        cn_digest_t d;
        if (!cn__col_fixed(st, 0, d.b, CN_DIGEST_LEN)) {
            err = CN_E_CORRUPT;
            break;
        }
        cn_store_stat_t ss;
        if ((err = cn_store_stat(r->store, &d, &ss)) < 0)
            break;
        uint8_t h[42] = { BK_BLOB, (uint8_t)cn_meta_column_int64(st, 1) };
        memcpy(h + 2, d.b, 32);
        put_u64(h + 34, ss.len);
        if ((err = out_write(o, h, sizeof h)) < 0)
            break;
        blob_sink_t bs = { o };
        cn_digest_t got;
        uint64_t served = 0;
        if ((err = cn_store_read_range(r->store, &d, 0, ss.len, blob_piece, &bs, &got, &served)) <
            0)
            break;
        if (served != ss.len || memcmp(got.b, d.b, 32) != 0) {
            err = CN_E_CORRUPT;
            break;
        }
        (*nblobs)++;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* A backup being written: the stream, a row buffer, the repository's id
 * and what was written. */
typedef struct bk_dump {
    cn_repos_t *r;
    bk_out_t o;
    cn_buf_t b;
    const uint8_t *id;
    cn_repos_backup_stats_t *stats;
    off_t start; /* rewind_point of the output */
} bk_dump_t;

/* Everything before the trailer, from one read snapshot; a repeated run
 * (a regular file only) writes it again from where the stream began. */
static cn_err_t backup_body(cn_meta_txn_t *txn, void *ctx)
{
    bk_dump_t *d = ctx;
    if (d->o.bytes) {
        if (d->start < 0)
            return CN_E_UNAVAILABLE; /* never run again on a pipe (cn_repos_backup) */
        if (lseek(d->o.fd, d->start, SEEK_SET) < 0 || ftruncate(d->o.fd, d->start) < 0)
            return -errno;
        cn_blake3_init(&d->o.h);
        d->o.bytes = 0;
        d->stats->rows = d->stats->blobs = 0;
    }
    uint8_t hdr[12];
    memcpy(hdr, BK_MAGIC, 8);
    put_u32(hdr + 8, BK_VERSION);
    cn_err_t err = out_write(&d->o, hdr, sizeof hdr);
    if (err >= 0)
        err = table_out(&d->o, txn, &d->b, 0, d->id, &d->stats->rows);
    if (err >= 0)
        err = blobs_out(d->r, &d->o, txn, d->id, &d->stats->blobs);
    for (uint8_t t = 1; t < NTABLES && err >= 0; t++)
        err = table_out(&d->o, txn, &d->b, t, d->id, &d->stats->rows);
    return err;
}

cn_err_t cn_repos_backup(cn_repos_t *r, const char *name, int fd, cn_repos_backup_stats_t *stats)
{
    cn_repos_backup_stats_t none;
    if (!stats)
        stats = &none;
    memset(stats, 0, sizeof *stats);
    cn_repos_req_t rq = { .trusted = true };
    cn_repos_info_t ri;
    CN_TRY(cn_repos_info_by_name(r, &rq, name, strlen(name), &ri));
    bk_dump_t d = { .r = r, .o = { .fd = fd }, .id = ri.id, .stats = stats };
    cn_blake3_init(&d.o.h);
    d.start = rewind_point(fd);
    cn_err_t err = cn_meta_run(r->meta, CN_META_RUN_READ | (d.start >= 0 ? CN_META_RETRY : 0),
                               backup_body, &d);
    if (err >= 0) {
        /* the trailer: its tag, then the BLAKE3 of every byte before the digest */
        uint8_t tag = BK_END;
        cn_digest_t dg;
        if ((err = out_write(&d.o, &tag, 1)) >= 0) {
            cn_blake3_final(&d.o.h, &dg);
            err = cn_write_full(fd, dg.b, sizeof dg.b);
            d.o.bytes += sizeof dg.b;
        }
    }
    if (err >= 0 && fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
        err = -errno;
    stats->bytes = d.o.bytes;
    stats->head = ri.head;
    cn_buf_free(&d.b);
    return err;
}

/* ---- input ------------------------------------------------------------------------ */
typedef struct bk_in {
    int fd;
    cn_blake3_t h;
    uint64_t bytes;
} bk_in_t;

static cn_err_t in_read(bk_in_t *in, void *p, size_t n)
{
    long long got = cn_read_full(in->fd, p, n);
    if (got < 0)
        return -errno;
    if ((size_t)got != n)
        return CN_E_CORRUPT; /* truncated */
    cn_blake3_update(&in->h, p, n);
    in->bytes += n;
    return CN_OK;
}

/* Reads one row record's body (after its tag) into b. */
static cn_err_t row_in(bk_in_t *in, cn_buf_t *b)
{
    uint8_t l[4];
    CN_TRY(in_read(in, l, 4));
    uint32_t n = get_u32(l);
    if (n < 1 || n > BK_ROW_MAX)
        return CN_E_CORRUPT;
    cn_buf_reset(b);
    CN_TRY(cn_buf_reserve(b, n));
    CN_TRY(in_read(in, b->data, n));
    b->len = n;
    return CN_OK;
}

/* Inserts a row record of a backup of `version` of repository `repo`;
 * table 0 (the repository row) gets `incarnation`, and fills *info from it. */
static cn_err_t row_insert(cn_meta_txn_t *txn, uint32_t version, const cn_buf_t *b,
                           const uint8_t incarnation[16], const uint8_t repo[16],
                           cn_repos_info_t *info)
{
    uint8_t t = b->data[0];
    if (t >= NTABLES)
        return CN_E_CORRUPT;
    const bk_table_t *tb = table_of(version, t);
    size_t nc = strlen(tb->types);
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, cn__sql_repos[tb->load], &st));
    const uint8_t *p = b->data + 1, *end = b->data + b->len;
    cn_err_t err = CN_OK;
    for (size_t c = 0; c < nc && err >= 0; c++) {
        char ty = tb->types[c];
        if (ty == 'I') {
            if (end - p < 8) {
                err = CN_E_CORRUPT;
                break;
            }
            int64_t v = (int64_t)get_u64(p);
            p += 8;
            cn_meta_bind_int64(st, (int)c + 1, v);
            if (t == 0 && c == 4)
                info->head = (uint64_t)v;
            if (t == 0 && c == 6)
                info->compression = (uint8_t)v;
            continue;
        }
        if (ty == 'b') {
            if (end - p < 1) {
                err = CN_E_CORRUPT;
                break;
            }
            if (!*p++) {
                cn_meta_bind_null(st, (int)c + 1);
                continue;
            }
        }
        if (end - p < 4 || (size_t)(end - p - 4) < get_u32(p)) {
            err = CN_E_CORRUPT;
            break;
        }
        uint32_t n = get_u32(p);
        p += 4;
        /* every row names the repository of table 0 in its first column */
        if (c == 0 && (n != 16 || (t != 0 && memcmp(p, repo, 16) != 0))) {
            err = CN_E_CORRUPT;
            break;
        }
        if (t == 0 && c == 2) {
            cn_meta_bind_blob(st, (int)c + 1, incarnation, 16);
        } else {
            cn_meta_bind_blob(st, (int)c + 1, n ? p : (const void *)"", n);
        }
        if (t == 0 && c == 0)
            memcpy(info->id, p, 16);
        if (t == 0 && c == 1) {
            if (!n || n > CN_REPOS_NAME_MAX) {
                err = CN_E_CORRUPT;
                break;
            }
            memcpy(info->name, p, n);
            info->name[n] = 0;
        }
        if (t == 0 && c == 3 && n == 16)
            memcpy(info->main_branch, p, 16);
        p += n;
    }
    if (err >= 0 && p != end)
        err = CN_E_CORRUPT;
    if (err >= 0) {
        err = cn_meta_step(st);
        err = err < 0 ? err : CN_OK;
    }
    cn_meta_finish(st);
    return err;
}

static cn_err_t blob_in(cn_repos_t *r, bk_in_t *in, uint8_t compression, uint64_t *nblobs)
{
    uint8_t h[41];
    CN_TRY(in_read(in, h, sizeof h));
    uint8_t kind = h[0];
    cn_digest_t d;
    memcpy(d.b, h + 1, 32);
    uint64_t len = get_u64(h + 33);
    cn_store_writer_t *w = NULL;
    CN_TRY(cn_store_writer_open(r->store, &d, (int64_t)len, &w));
    cn_err_t err = cn_store_writer_set_form(
        w, kind == CN_REPOS_CHUNK && compression ? CN_STORE_LZ4 : CN_STORE_RAW);
    uint8_t *buf = err >= 0 ? malloc(1u << 20) : NULL;
    if (err >= 0 && !buf)
        err = -ENOMEM;
    for (uint64_t left = len; err >= 0 && left;) {
        size_t n = left < (1u << 20) ? (size_t)left : (1u << 20);
        if ((err = in_read(in, buf, n)) >= 0)
            err = cn_store_writer_write(w, buf, n);
        left -= n;
    }
    free(buf);
    if (err < 0) {
        cn_store_writer_abort(w);
        return err;
    }
    err = cn_store_writer_publish(w, NULL, NULL); /* verifies the digest */
    if (err == CN_E_DIGEST_MISMATCH || err == CN_E_LENGTH_MISMATCH)
        err = CN_E_CORRUPT;
    if (err >= 0)
        (*nblobs)++;
    return err;
}

/* Deletes every row of repository id (a replaced repository). */
static cn_err_t clear_repo(cn_meta_txn_t *txn, const uint8_t id[16])
{
    cn_err_t err = CN_OK;
    for (size_t t = 0; t < NTABLES + NTRANSIENT && err >= 0; t++) {
        int clear = t < NTABLES ? tables[t].clear : transient[t - NTABLES];
        err = cn_meta_execf(txn, cn__sql_repos[clear], "b", CN__ARG_ID(id));
    }
    return err < 0 ? err : CN_OK;
}

/* A restore being read: the stream, the repository row read first, a row
 * buffer, the repository's id and new incarnation, the last tag read, and
 * what was restored. */
typedef struct bk_load {
    bk_in_t in;
    bk_in_t mark;     /* in where the write transaction's part begins */
    off_t mark_at;    /* its offset in a regular file, else -1 */
    uint8_t mark_tag; /* the tag read last at the mark */
    bool begun;       /* restore_body ran once */
    uint32_t version;
    bool replace;
    cn_buf_t repo_row, b;
    uint8_t id[16], inc[16];
    uint8_t tag;
    cn_repos_info_t *out;
    cn_repos_backup_stats_t *stats;
} bk_load_t;

/* An existing repository of ld's id (or name) is replaced only on request;
 * another repository holding the name is CN_E_EXISTS. */
static cn_err_t restore_claim(cn_meta_txn_t *txn, const bk_load_t *ld)
{
    const cn_buf_t *rr = &ld->repo_row;
    size_t nl = get_u32(rr->data + 1 + 4 + 16);
    const uint8_t *np = rr->data + 1 + 4 + 16 + 4;
    if (nl > rr->len - (size_t)(np - rr->data))
        nl = 0;
    cn_meta_stmt_t *st = NULL;
    uint8_t other[16];
    bool exists = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_RESTORE_CLAIM], "bb",
                                  CN__ARG_ID(ld->id), (const void *)np, nl);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        exists = true;
        if (!cn__col_fixed(st, 0, other, 16) || memcmp(other, ld->id, 16) != 0) {
            err = CN_E_EXISTS; /* another repository holds the name */
            break;
        }
    }
    cn_meta_finish(st);
    if (err >= 0 && exists && !ld->replace)
        err = CN_E_EXISTS;
    if (err >= 0 && exists)
        err = clear_repo(txn, ld->id);
    return err;
}

/* The rows and the trailer, in one write transaction that commits only
 * when the trailer matches; a repeated run (a regular file only) reads them
 * again from the mark. */
static cn_err_t restore_body(cn_meta_txn_t *txn, void *ctx)
{
    bk_load_t *ld = ctx;
    if (ld->begun) {
        if (ld->mark_at < 0)
            return CN_E_UNAVAILABLE; /* never run again on a pipe (cn_repos_restore) */
        if (lseek(ld->in.fd, ld->mark_at, SEEK_SET) < 0)
            return -errno;
        ld->in = ld->mark;
        ld->tag = ld->mark_tag;
        ld->stats->rows = 0;
    }
    ld->begun = true;
    cn_err_t err = restore_claim(txn, ld);
    if (err >= 0)
        err = row_insert(txn, ld->version, &ld->repo_row, ld->inc, ld->id, ld->out);
    if (err >= 0)
        ld->stats->rows++;
    while (err >= 0 && ld->tag == BK_ROW) {
        if ((err = row_in(&ld->in, &ld->b)) >= 0 && ld->b.data[0] == 0)
            err = CN_E_CORRUPT;
        if (err >= 0 && (err = row_insert(txn, ld->version, &ld->b, ld->inc, ld->id, ld->out)) >= 0)
            ld->stats->rows++;
        if (err >= 0)
            err = in_read(&ld->in, &ld->tag, 1);
    }
    if (err >= 0 && ld->tag != BK_END)
        err = CN_E_CORRUPT;
    if (err >= 0) {
        cn_digest_t want, got;
        cn_blake3_final(&ld->in.h, &want); /* everything before the digest, tag included */
        if ((err = in_read(&ld->in, got.b, 32)) >= 0 && memcmp(want.b, got.b, 32) != 0)
            err = CN_E_CORRUPT;
        uint8_t extra;
        if (err >= 0 && cn_read_full(ld->in.fd, &extra, 1) != 0)
            err = CN_E_CORRUPT; /* trailing bytes */
    }
    if (err >= 0 && ld->version == 1)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_LINEAGE_FROM_EVENTS], "b",
                            CN__ARG_ID(ld->id));
    if (err >= 0 && ld->version == 1)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_LINEAGE_FROM_MOVES], "b",
                            CN__ARG_ID(ld->id));
    if (err >= 0)
        memcpy(ld->out->incarnation, ld->inc, 16);
    return err < 0 ? err : CN_OK;
}

/* The restore's operation key, for a COMMIT lost in a failover
 * (cn_meta_run_keyed): the repository row of ld's id carries ld's new
 * incarnation, which only ld's own transaction writes. */
static cn_err_t restore_landed(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    const bk_load_t *ld = ctx;
    cn_meta_stmt_t *st = NULL;
    uint8_t inc[16];
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_BY_ID], "b", CN__ARG_ID(ld->id));
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        *found = cn__col_fixed(st, 2, inc, 16) && memcmp(inc, ld->inc, 16) == 0;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_repos_restore(cn_repos_t *r, int fd, bool replace, cn_repos_info_t *out,
                          cn_repos_backup_stats_t *stats)
{
    cn_repos_backup_stats_t none;
    if (!stats)
        stats = &none;
    memset(stats, 0, sizeof *stats);
    memset(out, 0, sizeof *out);
    bk_load_t ld = { .in = { .fd = fd }, .replace = replace, .out = out, .stats = stats };
    cn_blake3_init(&ld.in.h);
    uint8_t hdr[12];
    cn_err_t err = in_read(&ld.in, hdr, sizeof hdr);
    ld.version = err >= 0 ? get_u32(hdr + 8) : 0;
    if (err >= 0 && (memcmp(hdr, BK_MAGIC, 8) != 0 || ld.version < 1 || ld.version > BK_VERSION))
        err = CN_E_INVALID;
    /* the repository row first: it names the id and the storage form */
    if (err >= 0 && (err = in_read(&ld.in, &ld.tag, 1)) >= 0 && ld.tag != BK_ROW)
        err = CN_E_CORRUPT;
    if (err >= 0 && (err = row_in(&ld.in, &ld.repo_row)) >= 0 &&
        (ld.repo_row.data[0] != 0 || ld.repo_row.len < 1 + 4 + 16))
        err = CN_E_CORRUPT;
    if (err >= 0) {
        memcpy(ld.id, ld.repo_row.data + 1 + 4, 16);
        err = cn_random_bytes(ld.inc, 16);
    }
    /* the compression column is the last 8 bytes of the row */
    uint8_t compression = err >= 0 ? ld.repo_row.data[ld.repo_row.len - 8] : 0;
    while (err >= 0 && (err = in_read(&ld.in, &ld.tag, 1)) >= 0 && ld.tag == BK_BLOB)
        err = blob_in(r, &ld.in, compression, &stats->blobs);
    if (err >= 0) {
        ld.mark = ld.in;
        ld.mark_tag = ld.tag;
        ld.mark_at = rewind_point(fd);
        /* A pipe cannot be read again: a lost transaction fails there. */
        err = ld.mark_at >= 0 ? cn_meta_run_keyed(r->meta, CN_META_RUN_WRITE | CN_META_RETRY,
                                                  restore_body, restore_landed, &ld)
                              : cn_meta_run(r->meta, CN_META_RUN_WRITE, restore_body, &ld);
    }
    stats->bytes = ld.in.bytes;
    stats->head = out->head;
    cn_buf_free(&ld.repo_row);
    cn_buf_free(&ld.b);
    return err;
}
