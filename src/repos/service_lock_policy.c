/* The lock policy: the repository's `.scribe/config.toml` on main, served
 * as lock_policy (29), and its enforcement at every submit's acceptance
 * (docs/protocol/scribe.md 7.10).  Main's current config decides which
 * submitted paths need their lock; a submitted config must be valid; a
 * change of the decoded lock rules on main needs the Maintainer role.  The
 * config's schema and glob matching are cairn/repos_config.h's; this file
 * never parses TOML itself and never writes a lock. */
#include "service_int.h"
#include "cairn/repos_config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_PATH ".scribe/config.toml"
#define CONFIG_PATH_LEN (sizeof CONFIG_PATH - 1)

/* The bytes of the file whose manifest is m (at most cap) into buf, *len.
 * CN_E_LIMIT for a larger file, CN_E_CORRUPT for a missing object. */
static cn_err_t file_read(cn_repos_t *r, cn_meta_txn_t *txn, const uint8_t repo[16],
                          const cn_digest_t *manifest, uint8_t *buf, size_t cap, size_t *len)
{
    bool found = false;
    cn_digest_t blob;
    const uint8_t *map = NULL;
    size_t mlen = 0, off = 0;
    cn_repos_manifest_t m;
    CN_TRY(cn__object_find(txn, repo, CN_REPOS_MANIFEST, manifest, &found, &blob, NULL, NULL));
    if (!found)
        return CN_E_CORRUPT;
    CN_TRY(cn__blob_map(r, &blob, &map, &mlen));
    cn_err_t err = cn_repos_manifest_parse(map, mlen, &m) < 0 ? CN_E_CORRUPT
                   : m.size > cap                             ? CN_E_LIMIT
                                                              : CN_OK;
    for (uint32_t i = 0; err >= 0 && i < m.count; i++) {
        cn_repos_chunk_ref_t c;
        size_t n = 0;
        cn_repos_manifest_chunk(&m, i, &c);
        err = cn__object_find(txn, repo, CN_REPOS_CHUNK, &c.id, &found, &blob, NULL, NULL);
        if (err >= 0 && !found)
            err = CN_E_CORRUPT;
        if (err >= 0)
            err = cn_store_read_range_buf(r->store, &blob, 0, buf + off, cap - off, &n, NULL);
        off += n;
    }
    if (err >= 0 && off != m.size)
        err = CN_E_CORRUPT;
    cn__unmap(map, mlen);
    *len = off;
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__config_file_read(cn_repos_t *r, cn_meta_txn_t *txn, const uint8_t repo[16],
                              const cn_digest_t *manifest, uint8_t *buf, size_t *len)
{
    return file_read(r, txn, repo, manifest, buf, CN_REPO_CONFIG_MAX, len);
}

/* Main's entry for CONFIG_PATH at its head into *e; *found only when live. */
static cn_err_t main_entry(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                           bool *found, cn_repos_entry_t *e)
{
    const uint8_t *id = repo->info.id;
    uint64_t head = 0;
    cn_digest_t rev, content;
    cn__ptree_t *t = NULL;
    *found = false;
    CN_TRY(cn__branch_head(txn, rq, id, repo->info.main_branch, &head, NULL, 0));
    cn_err_t err =
        cn__snapshot_open(txn, rq, id, repo->info.main_branch, head, head, &rev, &content, &t);
    if (err >= 0)
        err = cn__ptree_get(t, (const uint8_t *)CONFIG_PATH, CONFIG_PATH_LEN, found, e);
    cn__ptree_free(t);
    *found = err >= 0 && *found && e->state == CN_REPOS_LIVE;
    return err < 0 ? err : CN_OK;
}

/* Main's config at its head: *change (0 when absent) and its text in buf
 * (CN_REPO_CONFIG_MAX bytes), the default text when absent. */
static cn_err_t main_config(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq,
                            const cn__repo_t *repo, uint64_t *change, uint8_t *buf, size_t *len)
{
    bool found = false;
    cn_repos_entry_t e;
    cn_err_t err = main_entry(txn, rq, repo, &found, &e);
    *change = 0;
    if (found) {
        *change = e.change;
        return file_read(r, txn, repo->info.id, &e.manifest, buf, CN_REPO_CONFIG_MAX, len);
    }
    *len = sizeof CN_REPO_CONFIG_DEFAULT - 1;
    memcpy(buf, CN_REPO_CONFIG_DEFAULT, *len);
    return err < 0 ? err : CN_OK;
}

/* ---- parsed configs, cached by content -------------------------------------------------
 * Every submit needs main's rules; reading the file's chunks and parsing it
 * again each time is wasted work, so parsed configs are kept by the file's
 * manifest digest.  The key is the content itself, so an entry is never
 * stale (a restore or a new change with the same text finds the same rules). */
struct cn__cfg_ent {
    atomic_uint refs;
    cn_digest_t manifest;
    cn_repo_config_t cfg; /* no rules when the stored text is invalid */
};

static void cfg_release(cn__cfg_ent_t *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
        cn_repo_config_free(&e->cfg);
        free(e);
    }
}

void cn__cfg_cache_clear(cn_repos_t *r)
{
    for (int i = 0; i < CN__CFG_CACHE; i++) {
        cfg_release(r->cfg[i]);
        r->cfg[i] = NULL;
    }
}

/* The cached entry of manifest m with a reference (cfg_release), or NULL. */
static cn__cfg_ent_t *cfg_find(cn_repos_t *r, const cn_digest_t *m)
{
    cn__cfg_ent_t *e = NULL;
    pthread_mutex_lock(&r->cfg_mu);
    for (int i = 0; i < CN__CFG_CACHE && !e; i++)
        if (r->cfg[i] && memcmp(&r->cfg[i]->manifest, m, sizeof *m) == 0) {
            e = r->cfg[i];
            atomic_fetch_add(&e->refs, 1);
        }
    pthread_mutex_unlock(&r->cfg_mu);
    return e;
}

/* Files e (the caller keeps its reference), the oldest filed one out. */
static void cfg_keep(cn_repos_t *r, cn__cfg_ent_t *e)
{
    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_lock(&r->cfg_mu);
    cn__cfg_ent_t *old = r->cfg[r->cfg_next];
    r->cfg[r->cfg_next] = e;
    r->cfg_next = (r->cfg_next + 1) % CN__CFG_CACHE;
    pthread_mutex_unlock(&r->cfg_mu);
    cfg_release(old);
}

/* Main's current rules: *out holds a reference (cfg_release), or is NULL
 * when main has no config (no rules).  buf: CN_REPO_CONFIG_MAX bytes of
 * scratch. */
static cn_err_t main_rules(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq,
                           const cn__repo_t *repo, uint8_t *buf, cn__cfg_ent_t **out)
{
    bool found = false;
    cn_repos_entry_t e;
    size_t len = 0;
    *out = NULL;
    CN_TRY(main_entry(txn, rq, repo, &found, &e));
    if (!found || (*out = cfg_find(r, &e.manifest)) != NULL)
        return CN_OK;
    CN_TRY(file_read(r, txn, repo->info.id, &e.manifest, buf, CN_REPO_CONFIG_MAX, &len));
    cn__cfg_ent_t *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    atomic_init(&n->refs, 1);
    n->manifest = e.manifest;
    /* A config accepted before enforcement existed may be invalid: it then
     * requires nothing (and any submitted replacement is judged alone). */
    if (cn_repo_config_parse((const char *)buf, len, &n->cfg, NULL, 0) < 0)
        memset(&n->cfg, 0, sizeof n->cfg);
    cfg_keep(r, n);
    *out = n;
    return CN_OK;
}

typedef struct policy_read {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    uint64_t change;
    uint8_t *buf;
    size_t len;
} policy_read_t;

static cn_err_t policy_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    policy_read_t *p = ctx;
    return main_config(p->r, txn, p->rq, repo, &p->change, p->buf, &p->len);
}

cn_err_t cn_repos_lock_policy(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              uint64_t *change, uint8_t *text, size_t *len)
{
    policy_read_t p = { r, rq, 0, text, 0 };
    CN_TRY(cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, policy_body, &p));
    *change = p.change;
    *len = p.len;
    return CN_OK;
}

/* ---- enforcement --------------------------------------------------------------------- */
static void reject(cn_repos_outcome_t *out, uint64_t head, uint16_t code, const char *detail)
{
    out->outcome = CN_REPOS_REJECTED;
    out->code = code;
    out->head = head;
    snprintf(out->detail, sizeof out->detail, "%s", detail);
}

static bool is_config(const uint8_t *p, size_t n)
{
    return n == CONFIG_PATH_LEN && memcmp(p, CONFIG_PATH, n) == 0;
}

/* Whether the workspace holds the lock of path p (its case fold). */
static cn_err_t holds(cn_meta_txn_t *txn, const cn__lock_disposition_t *d, const uint8_t *p,
                      size_t n, uint8_t *fold, bool *yes)
{
    long fl = cn_repos_path_fold(p, n, fold, CN_REPOS_MAX_PATH);
    cn_meta_stmt_t *st = NULL;
    uint8_t ws[16];
    *yes = false;
    if (fl < 0)
        return CN_E_CORRUPT;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_LOCK_GET], "bb",
                                  CN__ARG_ID(d->repo), (const void *)fold, (size_t)fl);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        *yes = cn__col_fixed(st, 1, ws, 16) && memcmp(ws, d->workspace, 16) == 0;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* The submitted paths (both ends of moves) that a required rule of cur
 * covers and whose lock the workspace does not hold, into out's paths. */
static cn_err_t missing_locks(cn_meta_txn_t *txn, const cn__lock_disposition_t *d,
                              const cn_repo_config_t *cur, const cn_repos_changeset_t *cs,
                              cn_repos_outcome_t *out, uint32_t *missing)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    char *path = malloc(CN_REPOS_MAX_PATH + 1);
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH);
    cn_err_t err = path && fold ? CN_OK : -ENOMEM;
    *missing = 0;
    cn_repos_changeset_iter(cs, &it);
    while (err >= 0 && cn_repos_changeset_next(&it, &e)) {
        for (int side = 0; side < (e.kind == CN_REPOS_MOVE ? 2 : 1) && err >= 0; side++) {
            const uint8_t *p = side ? e.from : e.path;
            size_t n = side ? e.from_len : e.path_len;
            memcpy(path, p, n);
            path[n] = 0;
            const cn_repo_lock_rule_t *rule = cn_repo_config_match(cur, path);
            bool ok = true;
            if (rule && rule->mode == CN_LOCK_MODE_REQUIRED)
                err = holds(txn, d, p, n, fold, &ok);
            if (err >= 0 && !ok) {
                (*missing)++;
                err = cn__outcome_add_path(out, p, n);
            }
        }
    }
    free(path);
    free(fold);
    return err;
}

/* The submitted config (the change set's write of CONFIG_PATH, if any):
 * *writes and its parsed form in *next; *removes when the change set
 * deletes or moves it away.  *valid false with why for an invalid text. */
typedef struct submitted_config {
    bool writes, removes, valid;
    cn_repo_config_t next;
    char why[256];
} submitted_config_t;

static cn_err_t submitted_config(cn_repos_t *r, cn_meta_txn_t *txn, const uint8_t repo[16],
                                 const cn_repos_changeset_t *cs, uint8_t *buf,
                                 submitted_config_t *sc)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    memset(sc, 0, sizeof *sc);
    sc->valid = true;
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        if (e.kind == CN_REPOS_MOVE && is_config(e.from, e.from_len))
            sc->removes = true;
        if (!is_config(e.path, e.path_len) || e.kind == CN_REPOS_KEEP)
            continue;
        if (e.kind == CN_REPOS_DELETE) {
            sc->removes = true;
            continue;
        }
        size_t len = 0;
        cn_err_t err = file_read(r, txn, repo, &e.manifest, buf, CN_REPO_CONFIG_MAX, &len);
        sc->writes = true;
        if (err == CN_E_LIMIT) {
            sc->valid = false;
            snprintf(sc->why, sizeof sc->why, "the config is larger than 65,536 bytes");
        } else if (err < 0) {
            return err;
        } else if (cn_repo_config_parse((const char *)buf, len, &sc->next, sc->why,
                                        sizeof sc->why) < 0) {
            sc->valid = false;
        }
    }
    return CN_OK;
}

cn_err_t cn__locks_enforce(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq,
                           const cn__repo_t *repo, const cn__lock_disposition_t *d,
                           const uint8_t branch[16], const cn_repos_changeset_t *cs,
                           cn_repos_outcome_t *out)
{
    static const cn_repo_config_t no_rules;
    uint8_t *buf = malloc(CN_REPO_CONFIG_MAX);
    cn__cfg_ent_t *ent = NULL;
    submitted_config_t sc;
    memset(&sc, 0, sizeof sc);
    uint32_t missing = 0;
    char detail[512];
    cn_err_t err = buf ? main_rules(r, txn, rq, repo, buf, &ent) : -ENOMEM;
    const cn_repo_config_t *cur = ent ? &ent->cfg : &no_rules;
    if (err >= 0)
        err = submitted_config(r, txn, repo->info.id, cs, buf, &sc);
    bool on_main = memcmp(branch, repo->info.main_branch, 16) == 0;
    if (err < 0) {
    } else if (sc.writes && !sc.valid) {
        snprintf(detail, sizeof detail, CONFIG_PATH " is invalid: %s", sc.why);
        reject(out, d->head, CN_REPOS_E_INVALID_REPOSITORY_CONFIG, detail);
    } else if (on_main && (sc.writes || sc.removes) && !cn_repos_maintainer(rq) &&
               !cn_repo_config_rules_equal(cur, sc.writes ? &sc.next : NULL)) {
        reject(out, d->head, CN_REPOS_E_FORBIDDEN,
               "changing the lock rules of main needs the Maintainer role");
    } else if ((err = missing_locks(txn, d, cur, cs, out, &missing)) >= 0 && missing) {
        snprintf(detail, sizeof detail,
                 "%u submitted path%s need%s a lock this workspace does "
                 "not hold",
                 missing, missing == 1 ? "" : "s", missing == 1 ? "s" : "");
        reject(out, d->head, CN_REPOS_E_LOCK_REQUIRED, detail);
    }
    if (out->outcome != CN_REPOS_REJECTED || out->code != CN_REPOS_E_LOCK_REQUIRED) {
        cn_buf_free(&out->paths); /* only a lock_required rejection names paths */
        out->npaths = 0;
    }
    cfg_release(ent);
    cn_repo_config_free(&sc.next);
    free(buf);
    return err < 0 ? err : CN_OK;
}
