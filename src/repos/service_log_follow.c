/* The log's follow-merges mode (docs/protocol/scribe.md 7.5, 13.9) and what
 * it shares with the all-branch mode (service_log_all.c): the budgeted walk
 * of a snapshot's commit ancestry and the page of rows it collects.
 *
 * The ancestry of a branch's snapshot at r is a union of segments: the
 * branch's commits up to r, its origin's up to the origin change, and, for
 * every merge commit met, the merge source's up to the source head it
 * merged.  A walk is keyed by (branch, path) and remembers the highest
 * revision it covered, so a segment reached twice is read once (merges of a
 * branch into another and back do not multiply).  The whole result is
 * collected before the page is cut: the cursor filters rows and never
 * prunes the walk, so the rows of a page never depend on an earlier page.
 * It must never answer short of its budget: past it the read fails. */
#include "service_log_int.h"
#include "model_tree_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PATH_BYTES_BUDGET (32u << 20)

/* ---- the budget, the arena and the rows --------------------------------------------------- */
cn_err_t cn__hist_spend(cn__hist_t *h, size_t bytes)
{
    h->visits++;
    h->bytes += bytes;
    if (h->visits <= CN_REPOS_HISTORY_BUDGET && h->bytes <= PATH_BYTES_BUDGET)
        return CN_OK;
    return cn__rfail(h->rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                     "the history read passed its budget of %u metadata visits or 32 MiB of "
                     "lineage paths",
                     CN_REPOS_HISTORY_BUDGET);
}

cn_err_t cn__hist_keep(cn__hist_t *h, const uint8_t *p, size_t n, size_t *off)
{
    *off = h->arena.len;
    return n ? cn_buf_append(&h->arena, p, n) : CN_OK;
}

cn_err_t cn__hist_grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return CN_OK;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, c * size);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = c;
    return CN_OK;
}

cn_err_t cn__hist_row(cn__hist_t *h, uint64_t change, uint8_t event, size_t path_off,
                      uint32_t path_len, size_t from_off, uint32_t from_len)
{
    CN_TRY(cn__hist_grow((void **)&h->rows, &h->cap, h->n, sizeof *h->rows));
    h->rows[h->n++] =
        (cn__hrow_t){ change, event, path_off, from_off, path_len, from_len, NULL, NULL };
    return CN_OK;
}

/* ---- a set of byte keys ---------------------------------------------------------------------- */
static uint64_t key_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static cn__hslot_t *slot_for(cn__hslot_t *slots, size_t cap, const cn_buf_t *keys, uint64_t hash,
                             const uint8_t *p, size_t n)
{
    size_t k = (size_t)hash & (cap - 1);
    while (slots[k].used && !(slots[k].hash == hash && slots[k].len == n &&
                              memcmp(keys->data + slots[k].off, p, n) == 0))
        k = (k + 1) & (cap - 1);
    return &slots[k];
}

bool cn__hset_get(const cn__hset_t *s, const uint8_t *key, size_t n, uint64_t *value)
{
    if (!s->cap)
        return false;
    const cn__hslot_t *slot = slot_for(s->slots, s->cap, &s->keys, key_hash(key, n), key, n);
    if (slot->used)
        *value = slot->value;
    return slot->used;
}

cn_err_t cn__hset_put(cn__hset_t *s, const uint8_t *key, size_t n, bool *added, uint64_t **value)
{
    if ((s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        cn__hslot_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].used) {
                const cn__hslot_t *o = &s->slots[i];
                *slot_for(slots, cap, &s->keys, o->hash, s->keys.data + o->off, o->len) = *o;
            }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    uint64_t hash = key_hash(key, n);
    cn__hslot_t *slot = slot_for(s->slots, s->cap, &s->keys, hash, key, n);
    *added = !slot->used;
    if (*added) {
        *slot = (cn__hslot_t){ hash, 0, s->keys.len, (uint32_t)n, true };
        CN_TRY(cn_buf_append(&s->keys, key, n));
        s->used++;
    }
    *value = &slot->value;
    return CN_OK;
}

void cn__hist_free(cn__hist_t *h)
{
    cn_buf_free(&h->arena);
    free(h->rows);
    free(h->seen.slots);
    cn_buf_free(&h->seen.keys);
    h->rows = NULL;
    h->seen.slots = NULL;
    h->n = h->cap = h->seen.used = h->seen.cap = 0;
}

/* ---- the ancestry walk ------------------------------------------------------------------------ */
/* A pending walk: branch's ancestry from upper down, following the path at
 * path_off (path_len 0: ancestry only). */
typedef struct item {
    uint8_t branch[16];
    uint64_t upper;
    size_t path_off;
    uint32_t path_len;
} item_t;

typedef struct walk {
    cn__hist_t *h;
    item_t *stack;
    size_t depth, cap;
    cn_buf_t key; /* scratch */
} walk_t;

static cn_err_t push(walk_t *w, const uint8_t branch[16], uint64_t upper, size_t off, uint32_t n)
{
    CN_TRY(cn__hist_grow((void **)&w->stack, &w->cap, w->depth, sizeof *w->stack));
    item_t *it = &w->stack[w->depth++];
    memcpy(it->branch, branch, 16);
    it->upper = upper;
    it->path_off = off;
    it->path_len = n;
    return CN_OK;
}

/* The walk key of (branch, path): 'W' | branch | path. */
static cn_err_t walk_key(cn_buf_t *key, const uint8_t branch[16], const uint8_t *p, size_t n)
{
    cn_buf_reset(key);
    CN_TRY(cn_buf_put_u8(key, 'W'));
    CN_TRY(cn_buf_append(key, branch, 16));
    return n ? cn_buf_append(key, p, n) : CN_OK;
}

bool cn__hist_member(const cn__hist_t *h, const uint8_t branch[16], uint64_t change)
{
    uint8_t key[17] = { 'W' };
    memcpy(key + 1, branch, 16);
    uint64_t upper = 0;
    return cn__hset_get(&h->seen, key, sizeof key, &upper) && change <= upper;
}

/* One merge commit of a segment: its change and the source head it merged. */
typedef struct merge_ref {
    uint64_t change, parent;
    uint8_t branch[16];
} merge_ref_t;

/* An event at the followed path. */
typedef struct event_ref {
    uint64_t change;
    uint8_t event;
    size_t from_off;
    uint32_t from_len;
} event_ref_t;

typedef struct segment {
    merge_ref_t *merges;
    size_t nm, mcap;
    event_ref_t *events;
    size_t ne, ecap;
} segment_t;

static void segment_free(segment_t *s)
{
    free(s->merges);
    free(s->events);
}

/* The merge commits of branch in (lo, hi], newest first. */
static cn_err_t load_merges(cn__hist_t *h, segment_t *s, const uint8_t branch[16], uint64_t lo,
                            uint64_t hi)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn__hist_spend(h, 0));
    CN_TRY(cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_FOLLOW_MERGES], "bbii",
                          CN__ARG_ID(h->repo), CN__ARG_ID(branch), (int64_t)lo, (int64_t)hi));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if ((err = cn__hist_spend(h, 0)) < 0 ||
            (err = cn__hist_grow((void **)&s->merges, &s->mcap, s->nm, sizeof *s->merges)) < 0)
            break;
        merge_ref_t *m = &s->merges[s->nm];
        m->change = (uint64_t)cn_meta_column_int64(st, 0);
        m->parent = (uint64_t)cn_meta_column_int64(st, 1);
        if (!cn__col_fixed(st, 2, m->branch, 16)) {
            err = CN_E_CORRUPT; /* a merge parent that is no commit */
            break;
        }
        s->nm++;
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

/* The events of branch at exactly the path in (lo, hi], newest first. */
static cn_err_t load_events(cn__hist_t *h, segment_t *s, const uint8_t branch[16], const item_t *it,
                            uint64_t lo, uint64_t hi)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn__hist_spend(h, 0));
    CN_TRY(cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_FOLLOW_EVENTS], "bbbii",
                          CN__ARG_ID(h->repo), CN__ARG_ID(branch),
                          (const void *)(h->arena.data + it->path_off), (size_t)it->path_len,
                          (int64_t)lo, (int64_t)hi));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t fn = 0;
        const uint8_t *from = cn_meta_column_blob(st, 2, &fn);
        if ((err = cn__hist_spend(h, fn)) < 0 ||
            (err = cn__hist_grow((void **)&s->events, &s->ecap, s->ne, sizeof *s->events)) < 0)
            break;
        event_ref_t *e = &s->events[s->ne];
        e->change = (uint64_t)cn_meta_column_int64(st, 0);
        e->event = (uint8_t)cn_meta_column_int64(st, 1);
        e->from_len = from ? (uint32_t)fn : 0;
        if ((err = cn__hist_keep(h, from, e->from_len, &e->from_off)) < 0)
            break;
        s->ne++;
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

/* Newest first: each merge source is queued (at a change, before its event,
 * so a merge that also moved the path follows the source at the merged
 * path), each event becomes a row; a move queues its source below it and an
 * add ends the line.  *stopped when an event ended the segment. */
static cn_err_t segment_rows(walk_t *w, const segment_t *s, const item_t *it, bool *stopped)
{
    size_t i = 0, j = 0;
    *stopped = false;
    while (i < s->nm || j < s->ne) {
        if (i < s->nm && (j == s->ne || s->merges[i].change >= s->events[j].change)) {
            const merge_ref_t *m = &s->merges[i++];
            CN_TRY(push(w, m->branch, m->parent, it->path_off, it->path_len));
            continue;
        }
        const event_ref_t *e = &s->events[j++];
        CN_TRY(cn__hist_row(w->h, e->change, e->event, it->path_off, it->path_len, e->from_off,
                            e->from_len));
        if (e->event == CN_REPOS_MOVE && e->from_len) {
            *stopped = true;
            return push(w, it->branch, e->change - 1, e->from_off, e->from_len);
        }
        if (e->event == CN_REPOS_ADD) {
            *stopped = true;
            return CN_OK;
        }
    }
    return CN_OK;
}

/* One pending walk: the part of its segment no earlier walk of the same
 * (branch, path) covered, then, on the first walk only, the origin. */
static cn_err_t walk_one(walk_t *w, item_t it)
{
    cn__hist_t *h = w->h;
    /* a path-less walk may run before anything is kept: no arena yet */
    const uint8_t *path = it.path_len ? h->arena.data + it.path_off : NULL;
    CN_TRY(walk_key(&w->key, it.branch, path, it.path_len));
    bool added = false;
    uint64_t *upper = NULL;
    CN_TRY(cn__hset_put(&h->seen, w->key.data, w->key.len, &added, &upper));
    if (!added && *upper >= it.upper)
        return CN_OK;
    uint64_t floor = added ? 0 : *upper;
    *upper = it.upper;
    CN_TRY(cn__hist_spend(h, 0));
    cn_repos_branch_t b;
    cn_err_t err = cn__branch_load(h->txn, h->rq, h->repo, it.branch, &b);
    if (err == CN_E_NOT_FOUND)
        err = CN_E_CORRUPT; /* a merge parent or origin the branch table lacks */
    CN_TRY(err);
    uint64_t hi = it.upper < b.head ? it.upper : b.head;
    uint64_t lo = floor > b.origin_change ? floor : b.origin_change;
    segment_t s = { 0 };
    bool stopped = false;
    if (hi > lo) {
        err = h->first_parent ? CN_OK : load_merges(h, &s, b.id, lo, hi);
        if (err >= 0 && it.path_len)
            err = load_events(h, &s, b.id, &it, lo, hi);
        if (err >= 0)
            err = segment_rows(w, &s, &it, &stopped);
    }
    segment_free(&s);
    if (err >= 0 && added && !stopped && b.has_origin && b.origin_change &&
        it.upper >= b.origin_change)
        err = push(w, b.origin, b.origin_change, it.path_off, it.path_len);
    return err;
}

cn_err_t cn__hist_walk(cn__hist_t *h, const uint8_t branch[16], uint64_t upper, const uint8_t *path,
                       size_t n)
{
    walk_t w = { .h = h };
    size_t off = 0;
    cn_err_t err = cn__hist_keep(h, path, n, &off);
    if (err >= 0)
        err = push(&w, branch, upper, off, (uint32_t)n);
    while (err >= 0 && w.depth) {
        item_t it = w.stack[--w.depth];
        err = walk_one(&w, it);
    }
    free(w.stack);
    cn_buf_free(&w.key);
    return err;
}

/* ---- the page -------------------------------------------------------------------------------- */
static int row_order(const void *a, const void *b)
{
    const cn__hrow_t *x = a, *y = b;
    if (x->change != y->change)
        return x->change > y->change ? -1 : 1;
    return cn__bytes_cmp(x->path, x->path_len, y->path, y->path_len);
}

/* Whether row r lies past q's cursor. */
static bool after_cursor(const cn_repos_follow_q_t *q, const cn__hrow_t *r)
{
    if (!q->has_before)
        return true;
    if (r->change < q->before)
        return true;
    return q->after_path && r->change == q->before &&
           cn__bytes_cmp(r->path, r->path_len, q->after_path, q->after_len) > 0;
}

/* What a page reads beside the rows: the name of the last branch named and
 * the move source of an all-branch node (the arena must not grow while the
 * rows point into it). */
typedef struct page_scratch {
    bool named;
    uint8_t branch[16];
    char name[CN_REPOS_BRANCH_NAME_MAX + 1];
    cn_buf_t from;
} page_scratch_t;

/* The event a revision's commit recorded at its path (all-branch nodes). */
static cn_err_t node_event(cn__hist_t *h, cn__hrow_t *r, page_scratch_t *ps)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_NODE_EVENT], "bib",
                          CN__ARG_ID(h->repo), (int64_t)r->change, (const void *)r->path,
                          (size_t)r->path_len));
    cn_err_t err = cn_meta_step(st);
    cn_buf_reset(&ps->from);
    if (err == CN_META_ROW) {
        r->event = (uint8_t)cn_meta_column_int64(st, 0);
        size_t fn = 0;
        const uint8_t *from = cn_meta_column_blob(st, 1, &fn);
        err = from && fn ? cn_buf_append(&ps->from, from, fn) : CN_OK;
    } else if (err == CN_META_DONE) {
        err = CN_E_CORRUPT; /* a lineage node without its event */
    }
    cn_meta_finish(st);
    return err;
}

/* Row r's commit columns (and its branch's name) into row. */
static cn_err_t commit_columns(cn__hist_t *h, cn_meta_stmt_t *st, page_scratch_t *ps,
                               cn_repos_log_row_t *row)
{
    if (!cn__col_fixed(st, 0, row->commit.b, CN_DIGEST_LEN) ||
        !cn__col_fixed(st, 7, row->branch, 16))
        return CN_E_CORRUPT;
    if (!ps->named || memcmp(row->branch, ps->branch, 16) != 0) {
        uint64_t head = 0;
        CN_TRY(
            cn__branch_head(h->txn, h->rq, h->repo, row->branch, &head, ps->name, sizeof ps->name));
        memcpy(ps->branch, row->branch, 16);
        ps->named = true;
    }
    row->branch_name = ps->name;
    row->parent = (uint64_t)cn_meta_column_int64(st, 1);
    row->author_len = cn__col_blob(st, 2, &row->author);
    row->message_len = cn__col_blob(st, 3, &row->message);
    row->time_ms = cn_meta_column_int64(st, 4);
    row->merge_change = (uint64_t)cn_meta_column_int64(st, 5);
    if (row->merge_change && !cn__col_fixed(st, 6, row->merge_branch, 16))
        return CN_E_CORRUPT;
    return cn__commit_pick(h->txn, h->repo, row->change, &row->pick_change, row->pick_branch);
}

/* Reads row r's commit and hands the row to fn. */
static cn_err_t emit(cn__hist_t *h, cn__hrow_t *r, bool all, page_scratch_t *ps,
                     cn_repos_follow_fn fn, void *ctx)
{
    cn_repos_log_row_t row;
    memset(&row, 0, sizeof row);
    row.from_path = r->from_len ? h->arena.data + r->from_off : (const uint8_t *)"";
    row.from_len = r->from_len;
    if (all && !r->event) {
        CN_TRY(node_event(h, r, ps));
        row.from_path = ps->from.len ? ps->from.data : (const uint8_t *)"";
        row.from_len = ps->from.len;
    }
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_LOG_COMMIT], "bi",
                          CN__ARG_ID(h->repo), (int64_t)r->change));
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_DONE)
        err = CN_E_CORRUPT; /* a row whose commit is gone */
    else if (err == CN_META_ROW) {
        row.change = r->change;
        err = commit_columns(h, st, ps, &row);
    }
    if (err >= 0) {
        row.change = r->change;
        row.path = r->path;
        row.path_len = r->path_len;
        row.event = r->event;
        err = fn(ctx, &row, all && cn__hist_member(h, row.branch, row.change));
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__hist_page(cn__hist_t *h, const cn_repos_follow_q_t *q, bool all, cn_repos_follow_fn fn,
                       void *ctx)
{
    for (size_t i = 0; i < h->n; i++)
        h->rows[i].path = h->arena.data + h->rows[i].path_off;
    if (h->n)
        qsort(h->rows, h->n, sizeof *h->rows, row_order);
    uint32_t left = cn__page_limit(q->limit);
    page_scratch_t *ps = calloc(1, sizeof *ps);
    if (!ps)
        return -ENOMEM;
    cn_err_t err = CN_OK;
    for (size_t i = 0; i < h->n && left && err == CN_OK; i++) {
        cn__hrow_t *r = &h->rows[i];
        if ((i && row_order(&h->rows[i - 1], r) == 0) || !after_cursor(q, r))
            continue;
        err = emit(h, r, all, ps, fn, ctx);
        left--;
    }
    cn_buf_free(&ps->from);
    free(ps);
    return err;
}

/* ---- the rows handed after the run ------------------------------------------------------------ */
/* A collected row: its pointers are offsets into the rows' bytes. */
typedef struct log_rec {
    cn_repos_log_row_t row;
    size_t name, path, from, author, message;
    bool member;
} log_rec_t;

cn_err_t cn__logrows_add(void *rows, const cn_repos_log_row_t *row, bool member)
{
    cn__rows_t *r = rows;
    log_rec_t rec = { .row = *row, .member = member };
    const char *name = row->branch_name ? row->branch_name : "";
    CN_TRY(cn__rows_keep(r, name, strlen(name) + 1, &rec.name));
    CN_TRY(cn__rows_keep(r, row->path, row->path_len, &rec.path));
    CN_TRY(cn__rows_keep(r, row->from_path, row->from_len, &rec.from));
    CN_TRY(cn__rows_keep(r, row->author, row->author_len, &rec.author));
    CN_TRY(cn__rows_keep(r, row->message, row->message_len, &rec.message));
    return cn__rows_add(r, &rec, sizeof rec);
}

/* The caller's fn and its ctx, for log_put. */
typedef struct log_to {
    cn_repos_follow_fn fn;
    void *ctx;
} log_to_t;

static cn_err_t log_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    log_rec_t *lr = rec;
    const log_to_t *to = ctx;
    lr->row.branch_name = (const char *)cn__rows_at(rows, lr->name);
    lr->row.path = cn__rows_at(rows, lr->path);
    lr->row.from_path = cn__rows_at(rows, lr->from);
    lr->row.author = cn__rows_at(rows, lr->author);
    lr->row.message = cn__rows_at(rows, lr->message);
    return to->fn(to->ctx, &lr->row, lr->member);
}

cn_err_t cn__logrows_hand(cn__rows_t *rows, cn_err_t err, cn_repos_follow_fn fn, void *ctx)
{
    log_to_t to = { fn, ctx };
    return cn__rows_hand(rows, err, sizeof(log_rec_t), log_put, &to);
}

/* ---- the read ----------------------------------------------------------------------------------- */
/* A follow read: its page is collected into rows and handed to the
 * caller's fn after the run, so that a repeated run (CN_META_RETRY) hands
 * each row once. */
typedef struct follow_read {
    cn_repos_req_t *rq;
    const cn_repos_follow_q_t *q;
    cn__rows_t rows;
    uint64_t ceiling;
} follow_read_t;

/* The all-branch mode: the ceiling (the request's, or the repository head
 * this read pins), the revision the branch's snapshot at the ceiling holds
 * at the path, its lineage and the snapshot's ancestry for membership.  A
 * branch lives from its origin change on: a ceiling from there to the
 * repository head is inside it (past the branch's head, its snapshot is its
 * head's), so the pinned head a first page reports is a valid ceiling for
 * the pages after it. */
static cn_err_t all_rows(cn__hist_t *h, follow_read_t *fr, const cn__repo_t *repo,
                         const cn_repos_branch_t *b)
{
    const cn_repos_follow_q_t *q = fr->q;
    uint64_t snap = b->head;
    fr->ceiling = repo->info.head;
    if (q->has_ceiling) {
        if (q->ceiling < b->origin_change || q->ceiling > repo->info.head)
            return cn__rfail(fr->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "the snapshot ceiling %llu is outside the lifetime of branch %s "
                             "(%llu..%llu, the repository head)",
                             (unsigned long long)q->ceiling, b->name,
                             (unsigned long long)b->origin_change,
                             (unsigned long long)repo->info.head);
        fr->ceiling = q->ceiling;
        snap = q->ceiling < b->head ? q->ceiling : b->head;
    }
    cn_digest_t rev, content;
    cn__ptree_t *t = NULL;
    bool found = false;
    cn_repos_entry_t e;
    cn_err_t err =
        cn__snapshot_open(h->txn, fr->rq, h->repo, b->id, snap, snap, &rev, &content, &t);
    if (err >= 0)
        err = cn__ptree_get(t, q->path, q->path_len, &found, &e);
    cn__ptree_free(t);
    if (err >= 0 && found)
        err = cn__hist_walk(h, b->id, snap, NULL, 0);
    if (err >= 0 && found)
        err = cn__hist_lineage(h, e.change, q->path, q->path_len, fr->ceiling);
    return err;
}

static cn_err_t follow_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    follow_read_t *fr = ctx;
    const cn_repos_follow_q_t *q = fr->q;
    cn__hist_t h = { .txn = txn, .rq = fr->rq, .repo = repo->info.id };
    cn_repos_branch_t b;
    cn__rows_start(&fr->rows, cn__page_limit(q->limit)); /* an earlier attempt's rows */
    fr->ceiling = 0;
    cn_err_t err = cn__branch_load(txn, fr->rq, repo->info.id, q->branch, &b);
    if (err >= 0)
        err = cn__schema_check(txn, fr->rq, repo->info.id);
    if (err >= 0 && q->all_branches)
        err = all_rows(&h, fr, repo, &b);
    else if (err >= 0)
        err = cn__hist_walk(&h, b.id, b.head, q->path, q->path_len);
    if (err >= 0)
        err = cn__hist_page(&h, q, q->all_branches, cn__logrows_add, &fr->rows);
    cn__hist_free(&h);
    return err;
}

cn_err_t cn_repos_log_follow(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_follow_q_t *q,
                             uint64_t *ceiling, cn_repos_follow_fn fn, void *ctx)
{
    *ceiling = 0;
    if (!q->path || cn_repos_path_check(q->path, q->path_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a merge-aware log needs one exact canonical path");
    if (q->after_path && (!q->has_before || cn_repos_path_check(q->after_path, q->after_len) < 0))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "after path needs a path query and before");
    if (q->has_ceiling && !q->all_branches)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a snapshot ceiling needs the all-branch mode");
    follow_read_t fr = { .rq = rq, .q = q };
    cn_err_t err =
        cn__repo_run(r, rq, q->repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, follow_body, &fr);
    *ceiling = fr.ceiling;
    return cn__logrows_hand(&fr.rows, err, fn, ctx);
}
