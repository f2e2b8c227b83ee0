/* Public reads and mounts (docs/protocol/scribe.md 16): get_chunks (30),
 * which hands out a chunk only against a witness, an accepted manifest of
 * the repository that names it, and repository_mounts (31), the mount
 * declarations of the `.scribe/config.toml` held at one branch revision.
 *
 * It never writes, never answers an invalid witness with an error (the
 * chunk is just absent), never reads a mounted repository and never
 * parses TOML itself (cairn/repos_config.h does).  "Accepted" is the
 * definition of cairn/repos.h: named by an accepted commit's change set. */
#include "service_int.h"
#include "cairn/repos_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_PATH ".scribe/config.toml"
#define CONFIG_PATH_LEN (sizeof CONFIG_PATH - 1)

/* ---- get_chunks ------------------------------------------------------------------------ */
/* One distinct manifest of the request. */
typedef struct want {
    cn_digest_t id;
    bool member;   /* the repository holds it */
    bool needed;   /* a member that names an asked chunk: its acceptance decides */
    bool accepted; /* named by an accepted commit's change set */
    cn_digest_t blob;
} want_t;

/* A witness in the order the manifest scans want: by manifest, then chunk. */
typedef struct ord {
    uint32_t of;  /* the manifest's index in the distinct list */
    uint32_t idx; /* the witness's index in the request */
    cn_digest_t chunk;
} ord_t;

typedef struct chunks_job {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const cn_repos_witness_t *w;
    uint32_t n;
    cn_repos_obj_t *out;
    want_t *m; /* distinct manifests, ascending */
    uint32_t nm;
    ord_t *ord;  /* the witnesses by (manifest, chunk) */
    bool *named; /* named[i]: w[i].manifest names w[i].chunk */
} chunks_job_t;

static int digest_cmp(const void *a, const void *b)
{
    return memcmp(a, b, CN_DIGEST_LEN);
}

static int ord_cmp(const void *a, const void *b)
{
    const ord_t *x = a, *y = b;
    if (x->of != y->of)
        return x->of < y->of ? -1 : 1;
    return memcmp(x->chunk.b, y->chunk.b, CN_DIGEST_LEN);
}

static want_t *want_find(const chunks_job_t *j, const cn_digest_t *id)
{
    return bsearch(id, j->m, j->nm, sizeof *j->m, digest_cmp);
}

/* The distinct manifests (sorted, deduplicated) and the witnesses by them. */
static void plan_wants(chunks_job_t *j)
{
    for (uint32_t i = 0; i < j->n; i++)
        j->m[i].id = j->w[i].manifest;
    qsort(j->m, j->n, sizeof *j->m, digest_cmp);
    j->nm = 0;
    for (uint32_t i = 0; i < j->n; i++)
        if (j->nm == 0 || memcmp(&j->m[j->nm - 1].id, &j->m[i].id, CN_DIGEST_LEN) != 0)
            j->m[j->nm++].id = j->m[i].id;
    for (uint32_t i = 0; i < j->n; i++)
        j->ord[i] = (ord_t){ (uint32_t)(want_find(j, &j->w[i].manifest) - j->m), i, j->w[i].chunk };
    qsort(j->ord, j->n, sizeof *j->ord, ord_cmp);
}

/* Marks named[] for every witness of manifest k (ord[lo..hi)) whose chunk
 * the manifest lists; its blob is mapped read-only for the scan. */
static cn_err_t mark_named(chunks_job_t *j, uint32_t k, uint32_t lo, uint32_t hi)
{
    const uint8_t *map = NULL;
    size_t len = 0;
    cn_repos_manifest_t mf;
    CN_TRY(cn__blob_map(j->r, &j->m[k].blob, &map, &len));
    cn_err_t err = cn_repos_manifest_parse(map, len, &mf) < 0 ? CN_E_CORRUPT : CN_OK;
    for (uint32_t c = 0; err >= 0 && c < mf.count; c++) {
        cn_repos_chunk_ref_t ref;
        cn_repos_manifest_chunk(&mf, c, &ref);
        uint32_t a = lo, b = hi; /* the first witness whose chunk is >= ref.id */
        while (a < b) {
            uint32_t mid = a + (b - a) / 2;
            if (memcmp(j->ord[mid].chunk.b, ref.id.b, CN_DIGEST_LEN) < 0)
                a = mid + 1;
            else
                b = mid;
        }
        for (; a < hi && !memcmp(j->ord[a].chunk.b, ref.id.b, CN_DIGEST_LEN); a++)
            j->named[j->ord[a].idx] = j->m[k].needed = true;
    }
    cn__unmap(map, len);
    return err;
}

/* Membership of every distinct manifest, then the witnesses each names. */
static cn_err_t check_manifests(chunks_job_t *j, cn_meta_txn_t *txn, const uint8_t repo[16])
{
    cn_err_t err = CN_OK;
    for (uint32_t k = 0; k < j->nm && err >= 0; k++) {
        want_t *m = &j->m[k];
        m->needed = m->accepted = false;
        err =
            cn__object_find(txn, repo, CN_REPOS_MANIFEST, &m->id, &m->member, &m->blob, NULL, NULL);
    }
    for (uint32_t lo = 0, hi; lo < j->n && err >= 0; lo = hi) {
        uint32_t k = j->ord[lo].of;
        for (hi = lo; hi < j->n && j->ord[hi].of == k; hi++)
            ;
        if (j->m[k].member)
            err = mark_named(j, k, lo, hi);
    }
    return err;
}

/* One accepted commit: its change set's manifests marked accepted;
 * *left counts the needed manifests still undecided. */
static cn_err_t scan_changeset(chunks_job_t *j, cn_meta_txn_t *txn, const uint8_t repo[16],
                               const cn_digest_t *cs_id, uint32_t *left)
{
    bool found = false;
    cn_digest_t blob;
    const uint8_t *map = NULL;
    size_t len = 0;
    cn_repos_changeset_t cs;
    CN_TRY(cn__object_find(txn, repo, CN_REPOS_CHANGESET, cs_id, &found, &blob, NULL, NULL));
    if (!found)
        return CN_E_CORRUPT; /* an accepted commit's change set is always a member */
    CN_TRY(cn__blob_map(j->r, &blob, &map, &len));
    cn_err_t err = cn_repos_changeset_parse(map, len, &cs) < 0 ? CN_E_CORRUPT : CN_OK;
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    if (err >= 0)
        cn_repos_changeset_iter(&cs, &it);
    while (err >= 0 && *left && cn_repos_changeset_next(&it, &e)) {
        if (e.kind != CN_REPOS_ADD && e.kind != CN_REPOS_MODIFY && e.kind != CN_REPOS_MOVE)
            continue;
        want_t *m = want_find(j, &e.manifest);
        if (m && m->needed && !m->accepted) {
            m->accepted = true;
            (*left)--;
        }
    }
    cn__unmap(map, len);
    return err;
}

typedef struct commit_ref {
    uint64_t change;
    cn_digest_t changeset;
} commit_ref_t;

static int commit_newest_first(const void *a, const void *b)
{
    uint64_t x = ((const commit_ref_t *)a)->change, y = ((const commit_ref_t *)b)->change;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The repository's accepted commits, newest first, into *out (*n; free). */
static cn_err_t list_commits(cn_meta_txn_t *txn, const uint8_t repo[16], commit_ref_t **out,
                             size_t *n)
{
    cn_meta_stmt_t *st = NULL;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_COMMIT_DUMP], "b", CN__ARG_ID(repo));
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            commit_ref_t *g = realloc(*out, cap * sizeof *g);
            if (!g) {
                err = -ENOMEM;
                break;
            }
            *out = g;
        }
        (*out)[*n].change = (uint64_t)cn_meta_column_int64(st, 1);
        if (!cn__col_fixed(st, 5, (*out)[*n].changeset.b, CN_DIGEST_LEN))
            err = CN_E_CORRUPT;
        (*n)++;
    }
    cn_meta_finish(st);
    if (err >= 0)
        qsort(*out, *n, sizeof **out, commit_newest_first);
    return err < 0 ? err : CN_OK;
}

/* Decides the acceptance of every needed manifest from the newest commit
 * back, stopping once none is left. */
static cn_err_t find_accepted(chunks_job_t *j, cn_meta_txn_t *txn, const uint8_t repo[16])
{
    uint32_t left = 0;
    for (uint32_t k = 0; k < j->nm; k++)
        left += j->m[k].needed;
    if (!left)
        return CN_OK;
    commit_ref_t *c = NULL;
    size_t n = 0;
    cn_err_t err = list_commits(txn, repo, &c, &n);
    size_t i = 0;
    for (; err >= 0 && left && i < n && i < CN_REPOS_HISTORY_BUDGET; i++)
        err = scan_changeset(j, txn, repo, &c[i].changeset, &left);
    if (err >= 0 && left && i < n)
        err = cn__rfail(j->rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                        "the witnesses were not found in the newest %u commits",
                        CN_REPOS_HISTORY_BUDGET);
    free(c);
    return err;
}

static cn_err_t chunks_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    chunks_job_t *j = ctx;
    const uint8_t *id = repo->info.id;
    memset(j->named, 0, j->n * sizeof *j->named);
    cn_err_t err = check_manifests(j, txn, id);
    if (err >= 0)
        err = find_accepted(j, txn, id);
    for (uint32_t i = 0; i < j->n && err >= 0; i++) {
        cn_repos_obj_t *o = &j->out[i];
        memset(o, 0, sizeof *o);
        o->kind = CN_REPOS_CHUNK;
        o->id = j->w[i].chunk;
        if (j->named[i] && want_find(j, &j->w[i].manifest)->accepted)
            err = cn__object_find(txn, id, CN_REPOS_CHUNK, &o->id, &o->present, &o->blob,
                                  &o->length, NULL);
    }
    return err;
}

cn_err_t cn_repos_get_chunks(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                             const cn_repos_witness_t *w, uint32_t n, cn_repos_obj_t *out)
{
    if (n == 0 || n > CN_REPOS_WITNESSES_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "get_chunks asks for 1..1,024 chunks");
    chunks_job_t j = { .r = r, .rq = rq, .w = w, .n = n, .out = out };
    j.m = calloc(n, sizeof *j.m);
    j.ord = calloc(n, sizeof *j.ord);
    j.named = calloc(n, sizeof *j.named);
    cn_err_t err = j.m && j.ord && j.named ? CN_OK : -ENOMEM;
    if (err >= 0) {
        plan_wants(&j);
        err =
            cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, chunks_body, &j);
    }
    free(j.m);
    free(j.ord);
    free(j.named);
    return err;
}

/* ---- public-only get_objects and presence ---------------------------------------------- */
/* The manifests among refs (sorted, deduplicated) into j->m. */
static void plan_public(chunks_job_t *j, const cn_repos_objref_t *refs)
{
    j->nm = 0;
    for (uint32_t i = 0; i < j->n; i++)
        if (refs[i].kind == CN_REPOS_MANIFEST)
            j->m[j->nm++].id = refs[i].id;
    qsort(j->m, j->nm, sizeof *j->m, digest_cmp);
    uint32_t d = 0;
    for (uint32_t i = 0; i < j->nm; i++)
        if (d == 0 || memcmp(&j->m[d - 1].id, &j->m[i].id, CN_DIGEST_LEN) != 0)
            j->m[d++].id = j->m[i].id;
    j->nm = d;
}

typedef struct public_job {
    chunks_job_t j;
    const cn_repos_objref_t *refs;
} public_job_t;

static cn_err_t public_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    public_job_t *p = ctx;
    chunks_job_t *j = &p->j;
    const uint8_t *id = repo->info.id;
    cn_err_t err = CN_OK;
    for (uint32_t k = 0; k < j->nm && err >= 0; k++) {
        want_t *m = &j->m[k];
        m->accepted = false;
        err = cn__object_find(txn, id, CN_REPOS_MANIFEST, &m->id, &m->member, &m->blob, NULL, NULL);
        m->needed = m->member; /* only a member can be accepted: no search for the others */
    }
    if (err >= 0)
        err = find_accepted(j, txn, id);
    for (uint32_t i = 0; i < j->n && err >= 0; i++) {
        cn_repos_obj_t *o = &j->out[i];
        memset(o, 0, sizeof *o);
        o->kind = p->refs[i].kind;
        o->id = p->refs[i].id;
        bool open = o->kind == CN_REPOS_COMMIT ||
                    (o->kind == CN_REPOS_MANIFEST && want_find(j, &o->id)->accepted);
        if (open)
            err =
                cn__object_find(txn, id, o->kind, &o->id, &o->present, &o->blob, &o->length, NULL);
    }
    return err;
}

cn_err_t cn_repos_get_public(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                             const cn_repos_objref_t *refs, uint32_t n, cn_repos_obj_t *out)
{
    if (n == 0 || n > CN_REPOS_BATCH_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a batch holds 1..8192 objects");
    public_job_t p = { .j = { .r = r, .rq = rq, .n = n, .out = out }, .refs = refs };
    p.j.m = calloc(n, sizeof *p.j.m);
    if (!p.j.m)
        return -ENOMEM;
    plan_public(&p.j, refs);
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, public_body, &p);
    free(p.j.m);
    return err;
}

/* ---- repository_mounts ---------------------------------------------------------------- */
typedef struct mounts_job {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const uint8_t *branch;
    uint64_t change;
    uint8_t *buf; /* CN_REPO_CONFIG_MAX bytes */
    cn_repo_config_t *out;
} mounts_job_t;

/* The stored text at the revision, parsed; its lock rules dropped. */
static cn_err_t parse_mounts(mounts_job_t *j, size_t len)
{
    char why[256];
    if (cn_repo_config_parse((const char *)j->buf, len, j->out, why, sizeof why) < 0)
        return cn__rfail(j->rq, CN_E_INVALID, CN_REPOS_E_INVALID_REPOSITORY_CONFIG,
                         CONFIG_PATH " at change %llu is invalid: %s",
                         (unsigned long long)j->change, why);
    for (size_t i = 0; i < j->out->nrules; i++)
        free(j->out->rules[i].pattern);
    free(j->out->rules);
    j->out->rules = NULL;
    j->out->nrules = 0;
    return CN_OK;
}

static cn_err_t mounts_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    mounts_job_t *j = ctx;
    const uint8_t *id = repo->info.id;
    cn_digest_t rev, content;
    cn__ptree_t *t = NULL;
    cn_repos_entry_t e;
    bool found = false;
    size_t len = 0;
    cn_repo_config_free(j->out); /* a retried run starts again */
    cn_err_t err =
        cn__snapshot_open(txn, j->rq, id, j->branch, j->change, j->change, &rev, &content, &t);
    if (err >= 0)
        err = cn__ptree_get(t, (const uint8_t *)CONFIG_PATH, CONFIG_PATH_LEN, &found, &e);
    cn__ptree_free(t);
    if (err < 0 || !found || e.state != CN_REPOS_LIVE)
        return err < 0 ? err : CN_OK;
    err = cn__config_file_read(j->r, txn, id, &e.manifest, j->buf, &len);
    if (err == CN_E_LIMIT)
        return cn__rfail(j->rq, CN_E_INVALID, CN_REPOS_E_INVALID_REPOSITORY_CONFIG,
                         CONFIG_PATH " at change %llu is larger than 65,536 bytes",
                         (unsigned long long)j->change);
    return err < 0 ? err : parse_mounts(j, len);
}

cn_err_t cn_repos_mounts(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], uint64_t change, cn_repo_config_t *out)
{
    memset(out, 0, sizeof *out);
    mounts_job_t j = { r, rq, branch, change, malloc(CN_REPO_CONFIG_MAX), out };
    cn_err_t err = j.buf ? cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY,
                                        mounts_body, &j)
                         : -ENOMEM;
    free(j.buf);
    if (err < 0)
        cn_repo_config_free(out);
    return err;
}
