/* Console API: Scribe repositories — list, info and usage, the change log
 * of a branch (main unless ?branch= names another; path filter, paging),
 * one change with its description journal and changed paths, tree pages of
 * one directory level at a change of a branch, one file's bytes at a change
 * (streamed chunk by chunk), branches, locks, workspaces.
 *
 * An adapter only: each call is the repos-service read `cairn repo` and the
 * Scribe adapter make, with the session's principal, so the "scribe/<name>"
 * namespace grants decide exactly as there.  Fields the service does not
 * have are omitted, never invented.  A downloaded file is stored bytes: it
 * carries exactly the headers S3 GetObject gives stored bytes
 * (`Content-Security-Policy: sandbox`, nosniff) and is an attachment, so it
 * never renders in the console's origin. */
#include "console_data.h"

#include "cairn/crypto.h"
#include "cairn/repos.h"
#include "cairn/sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPOS_LIST_MAX 4096
#define LOG_DEFAULT 25                      /* changes of a log page when the call names no max */
#define TREE_PAGE 1000                      /* entries of one tree answer */
#define TREE_SCAN_PAGES 32                  /* snapshot reads for one tree answer at most */
#define PAGE_ENV "CAIRN_CONSOLE_REPOS_PAGE" /* tests: smaller pages (page_knob) */
#define OBJECT_READ_MAX (64u << 20)

static cn_repos_t *repos_of(cn_console_call_t *c)
{
    cn_repos_t *r = cn__console_cfg(c->con)->repos;
    if (!r)
        cn__console_error(c, 404, "NotFound", "this node serves no repositories");
    return r;
}

static int repos_fail(cn_console_call_t *c, const cn_repos_req_t *rq, cn_err_t e)
{
    const char *m = rq->fail.message[0] ? rq->fail.message : cn_strerror(e);
    if (e == CN_E_NOT_FOUND)
        return cn__console_error(c, 404, "NotFound", m);
    if (e == CN_E_DENIED)
        return cn__console_error(c, 403, "AccessDenied", "Access Denied");
    if (e == CN_E_INVALID)
        return cn__console_error(c, 400, "BadRequest", m);
    return cn__console_err(c, e);
}

/* The answer of a repos listing into arr (stolen): {key: arr, "more"}
 * when e >= 0, else arr is dropped and e answered as repos_fail does (the
 * service's message for a missing or invalid name, not the one table's). */
static int repos_list_answer(cn_console_call_t *c, const cn_repos_req_t *rq, cn_err_t e,
                             const char *key, json_t *arr, bool more)
{
    if (e < 0) {
        json_decref(arr);
        return repos_fail(c, rq, e);
    }
    return cn__console_json(c, 200, json_pack("{s:o,s:b}", key, arr, "more", more));
}

/* The repository of seg[1] into info; false after answering. */
static bool repo_open(cn_console_call_t *c, cn_repos_req_t *rq, cn_repos_info_t *info)
{
    memset(rq, 0, sizeof *rq);
    rq->principal = c->who;
    cn_repos_t *r = repos_of(c);
    if (!r)
        return false;
    cn_err_t e = cn_repos_info_by_name(r, rq, c->seg[1], strlen(c->seg[1]), info);
    if (e < 0) {
        repos_fail(c, rq, e);
        return false;
    }
    return true;
}

/* The branch ?branch= names (by its current name), else the repository's
 * main branch, into b; false after answering (404 for an unknown name). */
static bool branch_open(cn_console_call_t *c, cn_repos_req_t *rq, const cn_repos_info_t *info,
                        cn_repos_branch_t *b)
{
    const char *name = cn__console_query(c, "branch");
    bool named = name && *name;
    cn_err_t e = cn_repos_branch_info(cn__console_cfg(c->con)->repos, rq, info->id,
                                      named ? NULL : info->main_branch, named ? name : NULL,
                                      named ? strlen(name) : 0, b);
    if (e < 0) {
        repos_fail(c, rq, e);
        return false;
    }
    return true;
}

/* CAIRN_CONSOLE_REPOS_PAGE (tests; 1..1000, else 0 = unset): the default
 * log page, the entries of a tree answer and the rows of one snapshot
 * read, so paging is exercised with a few changes and files. */
static uint32_t page_knob(void)
{
    const char *v = getenv(PAGE_ENV);
    unsigned long n = v ? strtoul(v, NULL, 10) : 0;
    return n >= 1 && n <= 1000 ? (uint32_t)n : 0;
}

/* An unsigned decimal query argument (dflt when absent); false after
 * answering 400. */
static bool arg_u64(cn_console_call_t *c, const char *name, uint64_t dflt, uint64_t *out)
{
    const char *v = cn__console_query(c, name);
    char *end = NULL;
    *out = dflt;
    if (!v || !*v)
        return true;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || v[0] == '-') {
        cn__console_error(c, 400, "BadRequest", "a number was expected");
        return false;
    }
    *out = n;
    return true;
}

typedef struct repo_walk {
    cn_console_call_t *c;
    cn_repos_req_t *rq;
    json_t *arr;
} repo_walk_t;

static cn_err_t repo_one(void *ctx, const cn_repos_info_t *ri)
{
    repo_walk_t *w = ctx;
    json_t *o =
        json_pack("{s:s,s:I,s:I,s:o}", "name", ri->name, "head", (json_int_t)ri->head, "changes",
                  (json_int_t)ri->head, "created", cn__console_time(ri->created_ms));
    return cn__console_append(w->arr, o);
}

/* GET repos: {"repos":[{"name","head","changes","created","bytes"}]}. */
static int repos_list(cn_console_call_t *c)
{
    cn_repos_t *r = cn__console_cfg(c->con)->repos;
    if (!r)
        return cn__console_json(c, 200, json_pack("{s:[]}", "repos"));
    cn_repos_req_t rq = { .principal = c->who };
    repo_walk_t w = { c, &rq, json_array() };
    bool more = false;
    cn_err_t e = w.arr ? cn_repos_list(r, &rq, NULL, REPOS_LIST_MAX, repo_one, &w, &more) : -ENOMEM;
    size_t i;
    json_t *o;
    json_array_foreach(e < 0 ? NULL : w.arr, i, o)
    {
        cn_repos_info_t info;
        uint64_t bytes;
        cn_repos_req_t q2 = { .principal = c->who };
        const char *n = json_string_value(json_object_get(o, "name"));
        if (cn_repos_info_by_name(r, &q2, n, strlen(n), &info) == CN_OK &&
            cn_repos_usage(r, &q2, info.id, &bytes) == CN_OK)
            json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    }
    return repos_list_answer(c, &rq, e, "repos", w.arr, more);
}

static cn_err_t branch_one(void *ctx, const cn_repos_branch_t *b)
{
    json_t *o = json_pack("{s:s,s:I,s:o}", "name", b->name, "head", (json_int_t)b->head, "created",
                          cn__console_time(b->created_ms));
    if (o && !b->has_origin)
        json_object_set_new(o, "main", json_true());
    else if (o)
        json_object_set_new(o, "origin_change", json_integer((json_int_t)b->origin_change));
    return cn__console_append(ctx, o);
}

/* The repository's branches (first page of 4096) as a new array. */
static json_t *branches_of(cn_console_call_t *c, cn_repos_req_t *rq, const cn_repos_info_t *info,
                           cn_err_t *err)
{
    json_t *arr = json_array();
    bool more;
    *err = arr ? cn_repos_branch_list(cn__console_cfg(c->con)->repos, rq, info->id, NULL, 0,
                                      REPOS_LIST_MAX, branch_one, arr, &more)
               : -ENOMEM;
    if (*err < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* GET repos/R: {"name","head","changes","created","bytes","branches"}. */
static int repo_get(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    if (!repo_open(c, &rq, &info))
        return 0;
    cn_err_t e;
    json_t *br = branches_of(c, &rq, &info, &e);
    if (!br)
        return repos_fail(c, &rq, e);
    json_t *doc =
        json_pack("{s:s,s:I,s:I,s:o,s:o,s:b}", "name", info.name, "head", (json_int_t)info.head,
                  "changes", (json_int_t)info.head, "created", cn__console_time(info.created_ms),
                  "branches", br, "compressed", info.compression != 0);
    uint64_t bytes;
    if (doc && cn_repos_usage(cn__console_cfg(c->con)->repos, &rq, info.id, &bytes) == CN_OK)
        json_object_set_new(doc, "bytes", json_integer((json_int_t)bytes));
    return cn__console_json(c, 200, doc);
}

/* GET repos/R/branches. */
static int repo_branches(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    if (!repo_open(c, &rq, &info))
        return 0;
    cn_err_t e;
    json_t *br = branches_of(c, &rq, &info, &e);
    if (!br)
        return repos_fail(c, &rq, e);
    return cn__console_json(c, 200, json_pack("{s:o}", "branches", br));
}

typedef struct log_walk {
    json_t *arr;
    uint64_t last;
    uint32_t rows;
    cn_digest_t commit; /* of the last row */
} log_walk_t;

static cn_err_t log_one(void *ctx, const cn_repos_log_row_t *row)
{
    log_walk_t *w = ctx;
    w->rows++;
    w->commit = row->commit;
    if (row->change == w->last)
        return CN_OK; /* a second path of the same change */
    w->last = row->change;
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&row->commit, hex);
    json_t *o = json_pack("{s:I,s:s%,s:o,s:s%,s:s,s:s}", "id", (json_int_t)row->change, "author",
                          (const char *)row->author, row->author_len, "time",
                          cn__console_time(row->time_ms), "description", (const char *)row->message,
                          row->message_len, "commit", hex, "branch",
                          row->branch_name ? row->branch_name : "");
    if (o && row->merge_change)
        json_object_set_new(o, "merge", json_integer((json_int_t)row->merge_change));
    return cn__console_append(w->arr, o);
}

/* GET repos/R/changes?branch=B&path=P&before=ID&max=N: the branch's
 * first-parent log (what it inherited from its origins included), newest
 * first; next is the before of the next page. */
static int repo_changes(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    cn_repos_branch_t b;
    uint64_t before, max;
    if (!repo_open(c, &rq, &info) || !branch_open(c, &rq, &info, &b) ||
        !arg_u64(c, "before", 0, &before) ||
        !arg_u64(c, "max", page_knob() ? page_knob() : LOG_DEFAULT, &max))
        return 0;
    if (max < 1 || max > 1000)
        return cn__console_error(c, 400, "BadRequest", "max must be 1..1000");
    const char *path = cn__console_query(c, "path");
    cn_repos_log_q_t q = { .has_before = before != 0, .before = before, .limit = (uint32_t)max };
    memcpy(q.repo, info.id, 16);
    memcpy(q.branch, b.id, 16);
    if (path && *path) {
        q.path = (const uint8_t *)path;
        q.path_len = strlen(path);
    }
    log_walk_t w = { .arr = json_array() };
    cn_err_t e =
        w.arr ? cn_repos_log(cn__console_cfg(c->con)->repos, &rq, &q, log_one, &w) : -ENOMEM;
    if (e < 0) {
        json_decref(w.arr);
        return repos_fail(c, &rq, e);
    }
    bool more = w.rows == q.limit && w.last > 1;
    return cn__console_json(c, 200,
                            json_pack("{s:o,s:o,s:s}", "changes", w.arr, "next",
                                      more ? json_integer((json_int_t)w.last) : json_null(),
                                      "branch", b.name));
}

typedef struct sink {
    cn_buf_t *out;
    size_t cap;
} sink_t;

static cn_err_t sink_buf(void *ctx, const void *p, size_t n)
{
    sink_t *s = ctx;
    if (s->out->len + n > s->cap)
        return CN_E_TOO_LARGE;
    return cn_buf_append(s->out, p, n);
}

/* The bytes of one object of the repository into out (at most cap). */
static cn_err_t object_bytes(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                             uint8_t kind, const cn_digest_t *id, size_t cap, cn_buf_t *out)
{
    cn_repos_objref_t ref = { .kind = kind, .id = *id };
    cn_repos_obj_t o;
    cn_err_t e = cn_repos_get_lookup(r, rq, repo, &ref, 1, &o);
    if (e == CN_OK && !o.present)
        e = CN_E_NOT_FOUND;
    if (e == CN_OK && o.length > cap)
        e = CN_E_TOO_LARGE;
    sink_t s = { out, cap };
    return e ? e : cn_repos_object_read(r, &o, 0, o.length, sink_buf, &s);
}

static const char *kind_name(uint8_t k)
{
    return k == CN_REPOS_ADD      ? "add"
           : k == CN_REPOS_MODIFY ? "modify"
           : k == CN_REPOS_DELETE ? "delete"
           : k == CN_REPOS_MOVE   ? "move"
                                  : "keep";
}

/* The change's paths from its commit's change set, as a new array (NULL
 * when it cannot be read: the caller omits the field). */
static json_t *change_paths(cn_console_call_t *c, cn_repos_req_t *rq, const uint8_t repo[16],
                            const cn_digest_t *commit)
{
    cn_repos_t *r = cn__console_cfg(c->con)->repos;
    cn_buf_t cb = { 0 }, sb = { 0 };
    cn_repos_commit_t cm;
    cn_repos_changeset_t cs;
    json_t *arr = NULL;
    if (object_bytes(r, rq, repo, CN_REPOS_COMMIT, commit, CN_REPOS_MAX_COMMIT_LEN, &cb) == CN_OK &&
        cn_repos_commit_parse(cb.data, cb.len, &cm) == CN_OK &&
        object_bytes(r, rq, repo, CN_REPOS_CHANGESET, &cm.changeset, OBJECT_READ_MAX, &sb) ==
            CN_OK &&
        cn_repos_changeset_parse(sb.data, sb.len, &cs) == CN_OK && (arr = json_array())) {
        cn_repos_changeset_iter_t it;
        cn_repos_change_t ch;
        cn_repos_changeset_iter(&cs, &it);
        while (cn_repos_changeset_next(&it, &ch)) {
            json_t *o = json_pack("{s:s%,s:s}", "path", (const char *)ch.path, (size_t)ch.path_len,
                                  "action", kind_name(ch.kind));
            if (o && ch.kind == CN_REPOS_MOVE)
                json_object_set_new(o, "from", json_stringn((const char *)ch.from, ch.from_len));
            json_array_append_new(arr, o);
        }
    }
    cn_buf_free(&cb);
    cn_buf_free(&sb);
    return arr;
}

static cn_err_t note_one(void *ctx, const cn_repos_note_t *n)
{
    json_t *o = json_pack("{s:i,s:s,s:o,s:s%}", "revision", (int)n->revision, "author", n->author,
                          "time", cn__console_time(n->edited_ms), "text", n->text, n->text_len);
    return cn__console_append(ctx, o);
}

/* GET repos/R/changes/ID?branch=B: the change's log row (a change of the
 * branch's first-parent history, inherited ones included; 404 otherwise),
 * its description journal (the latest revision is the description) and its
 * paths. */
static int repo_change(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    cn_repos_branch_t b;
    if (!repo_open(c, &rq, &info) || !branch_open(c, &rq, &info, &b))
        return 0;
    char *end = NULL;
    unsigned long long id = strtoull(c->seg[3], &end, 10);
    if (*end || id == 0 || id > info.head)
        return cn__console_error(c, 404, "NotFound", "no such change");
    cn_repos_t *r = cn__console_cfg(c->con)->repos;
    cn_repos_log_q_t q = { .has_before = true, .before = id + 1, .limit = 1 };
    memcpy(q.repo, info.id, 16);
    memcpy(q.branch, b.id, 16);
    log_walk_t w = { .arr = json_array() };
    cn_err_t e = w.arr ? cn_repos_log(r, &rq, &q, log_one, &w) : -ENOMEM;
    json_t *doc = json_array_get(w.arr, 0);
    if (e == CN_OK && (!doc || w.last != id)) {
        json_decref(w.arr);
        return cn__console_error(c, 404, "NotFound", "not a change of that branch");
    }
    if (e < 0) {
        json_decref(w.arr);
        return repos_fail(c, &rq, e);
    }
    json_incref(doc);
    json_decref(w.arr);
    json_t *journal = json_array();
    bool more;
    if (journal &&
        cn_repos_note_history(r, &rq, info.id, id, 0, 1024, note_one, journal, &more) == CN_OK) {
        json_t *latest = json_array_get(journal, json_array_size(journal) - 1);
        if (latest)
            json_object_set(doc, "description", json_object_get(latest, "text"));
    }
    json_object_set_new(doc, "journal", journal ? journal : json_array());
    json_t *paths = change_paths(c, &rq, info.id, &w.commit);
    if (paths)
        json_object_set_new(doc, "paths", paths);
    return cn__console_json(c, 200, doc);
}

/* One directory level from the snapshot's flat, ascending rows.  The rows
 * of a directory "D" are contiguous (all of "D/" sorts together), so each
 * entry is answered once: rows under the last answered directory are
 * consumed silently, and where a read ends with a directory last, the next
 * read starts past that directory's whole subtree (subtree_skip) rather
 * than reading on.  An answer's token names its last entry, a directory
 * with a trailing '/', so the next answer starts after that entry and its
 * subtree: no entry repeats across answers, wherever the boundaries fall. */
typedef struct tree_walk {
    json_t *arr;
    size_t plen;     /* the listed directory's length (0: the root) */
    size_t page;     /* entries of one answer */
    size_t n;        /* entries answered */
    bool full;       /* a further entry was seen */
    bool last_dir;   /* the last entry is a directory */
    cn_buf_t last;   /* the last entry's full path */
    cn_buf_t cursor; /* exclusive: where the next read starts */
} tree_walk_t;

static bool under_last(const tree_walk_t *w, const uint8_t *p, size_t n)
{
    return w->last_dir && n > w->last.len && p[w->last.len] == '/' &&
           memcmp(p, w->last.data, w->last.len) == 0;
}

static json_t *tree_entry(const cn_repos_tree_row_t *row, const char *rel, size_t rl, bool dir)
{
    if (dir)
        return json_pack("{s:s%,s:s}", "name", rel, rl, "type", "dir");
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&row->manifest, hex);
    return json_pack("{s:s%,s:s,s:I,s:s,s:s,s:I}", "name", rel, rl, "type", "file", "size",
                     (json_int_t)row->size, "mode",
                     row->mode == CN_REPOS_MODE_EXEC ? "exec" : "file", "manifest", hex, "change",
                     (json_int_t)row->last_change);
}

static cn_err_t tree_one(void *ctx, const cn_repos_tree_row_t *row)
{
    tree_walk_t *w = ctx;
    const char *p = (const char *)row->path;
    size_t n = row->path_len, skip = w->plen ? w->plen + 1 : 0;
    if (under_last(w, row->path, n)) {
        cn_buf_reset(&w->cursor);
        return cn_buf_append(&w->cursor, p, n);
    }
    if (w->n == w->page) {
        w->full = true;
        return 1; /* the page is full: stop before a new entry */
    }
    bool whole = n <= skip; /* the prefix itself is a file: name it whole */
    if (whole)
        skip = 0;
    const char *rel = p + skip, *slash = whole ? NULL : memchr(rel, '/', n - skip);
    size_t rl = slash ? (size_t)(slash - rel) : n - skip;
    cn_buf_reset(&w->cursor);
    cn_buf_reset(&w->last);
    cn_err_t e = cn_buf_append(&w->cursor, p, n);
    if (e == CN_OK)
        e = cn_buf_append(&w->last, p, skip + rl);
    if (e < 0)
        return e;
    w->last_dir = slash != NULL;
    w->n++;
    return cn__console_append(w->arr, tree_entry(row, rel, rl, slash != NULL));
}

/* The probe of subtree_skip: the row of exactly its path is an entry of
 * the level, answered as any other. */
typedef struct tree_probe {
    tree_walk_t *w;
    const cn_buf_t *path;
} tree_probe_t;

static cn_err_t probe_one(void *ctx, const cn_repos_tree_row_t *row)
{
    tree_probe_t *pr = ctx;
    if (row->path_len != pr->path->len || memcmp(row->path, pr->path->data, row->path_len) != 0)
        return 1;
    cn_err_t e = tree_one(pr->w, row);
    return e < 0 ? e : 1;
}

/* Moves the cursor past the subtree of the last entry, a directory "D":
 * every path under "D/" sorts before "D0" ('0' follows '/') and none sorts
 * between them, so the next read starts after "D0" (the cursor is
 * exclusive), and "D0" itself is looked up first and answered when it is a
 * file.  Reads the snapshot of base once. */
static cn_err_t subtree_skip(cn_console_call_t *c, cn_repos_req_t *rq,
                             const cn_repos_page_q_t *base, tree_walk_t *w)
{
    cn_buf_t succ = { 0 };
    cn_err_t e = cn_buf_append(&succ, w->last.data, w->last.len);
    if (e == CN_OK)
        e = cn_buf_append(&succ, "0", 1);
    if (e == CN_OK) {
        cn_repos_page_q_t q = *base;
        q.prefix = succ.data;
        q.prefix_len = succ.len;
        q.after = NULL;
        q.after_len = 0;
        q.limit = 1;
        tree_probe_t pr = { w, &succ };
        bool more;
        cn_digest_t cr, rr;
        e = cn_repos_tree_page(cn__console_cfg(c->con)->repos, rq, &q, probe_one, &pr, &more, &cr,
                               &rr);
        if (e == 1)
            e = CN_OK;
    }
    if (e == CN_OK && !w->full) {
        cn_buf_reset(&w->cursor);
        e = cn_buf_append(&w->cursor, succ.data, succ.len);
    }
    cn_buf_free(&succ);
    return e;
}

/* Entries per tree answer and rows per snapshot read: TREE_PAGE and the
 * service's page, or both page_knob() when it is set. */
static void tree_sizes(size_t *page, uint32_t *rows)
{
    uint32_t n = page_knob();
    *page = n ? n : TREE_PAGE;
    *rows = n ? n : CN_REPOS_PAGE_MAX;
}

/* The walk resumed at ?token= (a canonical path, "/"-terminated for a
 * directory); false after answering 400. */
static bool tree_resume(cn_console_call_t *c, tree_walk_t *w)
{
    const char *tok = cn__console_query(c, "token");
    size_t n = tok ? strlen(tok) : 0;
    if (!n)
        return true;
    bool dir = tok[n - 1] == '/';
    n -= dir;
    if (cn_repos_path_check((const uint8_t *)tok, n) < 0) {
        cn__console_error(c, 400, "BadRequest", "a malformed page token");
        return false;
    }
    w->last_dir = dir;
    if (cn_buf_append(dir ? &w->last : &w->cursor, tok, n) < 0) {
        cn__console_err(c, -ENOMEM);
        return false;
    }
    return true;
}

/* The page query of the branch at ?change= (default: the branch's head). */
static bool page_query(cn_console_call_t *c, const cn_repos_info_t *info,
                       const cn_repos_branch_t *b, cn_repos_page_q_t *q)
{
    uint64_t change;
    if (!arg_u64(c, "change", b->head, &change))
        return false;
    if (change > b->head) {
        cn__console_error(c, 404, "NotFound", "no such change on that branch");
        return false;
    }
    memset(q, 0, sizeof *q);
    memcpy(q->repo, info->id, 16);
    memcpy(q->branch, b->id, 16);
    q->change = change;
    const char *path = cn__console_query(c, "path");
    q->prefix = (const uint8_t *)(path ? path : "");
    q->prefix_len = path ? strlen(path) : 0;
    return true;
}

/* The answer's next token: the last entry, "/"-terminated for a directory,
 * when another may follow; else null. */
static json_t *tree_next(const tree_walk_t *w, bool more)
{
    if (!(w->full || more) || !w->last.len)
        return json_null();
    cn_buf_t t = { 0 };
    json_t *s = NULL;
    if (cn_buf_append(&t, w->last.data, w->last.len) == CN_OK &&
        (!w->last_dir || cn_buf_append(&t, "/", 1) == CN_OK))
        s = json_stringn((const char *)t.data, t.len);
    cn_buf_free(&t);
    return s;
}

/* GET repos/R/tree?branch=B&change=ID&path=DIR&token=T: one level of the
 * branch's snapshot under DIR, files and directories, ascending, at most
 * TREE_PAGE; next is the token of the next page, each entry answered once
 * across the pages. */
static int repo_tree(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    cn_repos_branch_t b;
    cn_repos_page_q_t q;
    if (!repo_open(c, &rq, &info) || !branch_open(c, &rq, &info, &b) ||
        !page_query(c, &info, &b, &q))
        return 0;
    uint32_t rows;
    tree_walk_t w = { .arr = json_array(), .plen = q.prefix_len };
    tree_sizes(&w.page, &rows);
    cn_err_t e = w.arr ? CN_OK : -ENOMEM;
    if (e == CN_OK && !tree_resume(c, &w)) {
        json_decref(w.arr);
        cn_buf_free(&w.last);
        cn_buf_free(&w.cursor);
        return 0;
    }
    bool more = true;
    for (int i = 0; e == CN_OK && more && !w.full && i < TREE_SCAN_PAGES; i++) {
        /* a read that ended inside the last directory (or a directory's
         * token) goes on past its subtree */
        bool inside = !w.cursor.len || under_last(&w, w.cursor.data, w.cursor.len);
        if (w.last_dir && inside && ((e = subtree_skip(c, &rq, &q, &w)) < 0 || w.full))
            break;
        q.limit = rows;
        q.after = w.cursor.len ? w.cursor.data : NULL;
        q.after_len = w.cursor.len;
        cn_digest_t cr, rr;
        e = cn_repos_tree_page(cn__console_cfg(c->con)->repos, &rq, &q, tree_one, &w, &more, &cr,
                               &rr);
        if (e == 1)
            e = CN_OK;
    }
    json_t *next = e == CN_OK ? tree_next(&w, more) : NULL;
    cn_buf_free(&w.last);
    cn_buf_free(&w.cursor);
    if (e < 0 || !next) {
        json_decref(w.arr);
        return repos_fail(c, &rq, e < 0 ? e : -ENOMEM);
    }
    return cn__console_json(c, 200,
                            json_pack("{s:o,s:o,s:I,s:s}", "entries", w.arr, "next", next, "change",
                                      (json_int_t)q.change, "branch", b.name));
}

/* A file being streamed: the manifest's chunks, read by position, a
 * piece per producer read (cn_http_respond_stream), so that a browser
 * that stops reading holds no worker between pieces.  The chunk the last
 * read ended in is kept (looked up once), since pieces come in order. */
typedef struct file_out {
    cn_repos_t *r;
    cn_principal_t who;
    uint8_t repo[16];
    cn_buf_t manifest;
    cn_repos_manifest_t m;
    uint32_t chunk; /* its index */
    uint64_t base;  /* where it starts in the file */
    bool held;      /* o is chunk's object */
    cn_repos_obj_t o;
} file_out_t;

/* Makes f->chunk the chunk that holds file position pos, its object looked
 * up.  CN_E_CORRUPT when the manifest ends first or the chunk is not held
 * at its length; lookup errors. */
static cn_err_t file_seek(file_out_t *f, uint64_t pos)
{
    if (pos < f->base) {
        f->chunk = 0;
        f->base = 0;
        f->held = false;
    }
    cn_repos_chunk_ref_t ch;
    for (;; f->chunk++, f->held = false) {
        if (f->chunk >= f->m.count)
            return CN_E_CORRUPT;
        cn_repos_manifest_chunk(&f->m, f->chunk, &ch);
        if (pos < f->base + ch.len)
            break;
        f->base += ch.len;
    }
    if (f->held)
        return CN_OK;
    cn_repos_req_t rq = { .principal = &f->who };
    cn_repos_objref_t ref = { .kind = CN_REPOS_CHUNK, .id = ch.id };
    cn_err_t e = cn_repos_get_lookup(f->r, &rq, f->repo, &ref, 1, &f->o);
    if (e == CN_OK && (!f->o.present || f->o.length != ch.len))
        e = CN_E_CORRUPT;
    f->held = e == CN_OK;
    return e;
}

/* The producer: the file's bytes from pos, up to the end of the chunk
 * that holds pos. */
static ssize_t file_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    file_out_t *f = ctx;
    size_t n = 0;
    cn_err_t e = file_seek(f, pos);
    if (e == CN_OK) {
        uint64_t in = pos - f->base;
        e = cn_repos_object_read_at(f->r, &f->o, in, buf, max, &n, f->o.length - in <= max);
    }
    return e < 0 ? (ssize_t)e : (ssize_t)n;
}

static void file_done(void *ctx)
{
    file_out_t *f = ctx;
    cn_buf_free(&f->manifest);
    explicit_bzero(&f->who, sizeof f->who);
    free(f);
}

/* The headers of stored bytes, one rule for every face of the HTTP
 * listener (docs/console.md): exactly what S3 GetObject sends them,
 * `Content-Security-Policy: sandbox` and nosniff (not the console's page
 * policy: the bytes are not the console's), the console's referrer and
 * opener policies, and no-store. */
static void stored_headers(cn_http_req_t *req)
{
    static const char *const h[][2] = {
        { "Content-Security-Policy", "sandbox" }, { "X-Content-Type-Options", "nosniff" },
        { "Referrer-Policy", "no-referrer" },     { "Cross-Origin-Opener-Policy", "same-origin" },
        { "Cache-Control", "no-store" },
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        (void)cn_http_resp_header(req, h[i][0], h[i][1]);
}

/* Content-Disposition: attachment with the path's last component. */
static void disposition(cn_console_call_t *c, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char ascii[128];
    size_t i = 0;
    for (const char *p = base; *p && i < sizeof ascii - 1; p++)
        ascii[i++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                             (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'
                         ? *p
                         : '_';
    ascii[i] = 0;
    cn_buf_t v = { 0 }, enc = { 0 };
    cn_err_t e = cn_sigv4_uri_encode(&enc, base, strlen(base), false);
    e = e ? e
          : cn_buf_printf(&v, "attachment; filename=\"%s\"; filename*=UTF-8''%.*s", ascii,
                          (int)enc.len, (const char *)enc.data);
    if (e == CN_OK)
        (void)cn_http_resp_header(c->req, "Content-Disposition", (const char *)v.data);
    else
        (void)cn_http_resp_header(c->req, "Content-Disposition", "attachment");
    cn_buf_free(&v);
    cn_buf_free(&enc);
}

/* The tree row of exactly path in the page query's snapshot. */
typedef struct file_find {
    const char *path;
    bool found;
    cn_digest_t manifest;
} file_find_t;

static cn_err_t find_one(void *ctx, const cn_repos_tree_row_t *row)
{
    file_find_t *f = ctx;
    if (row->path_len == strlen(f->path) && memcmp(row->path, f->path, row->path_len) == 0) {
        f->found = true;
        f->manifest = row->manifest;
    }
    return 1;
}

/* GET repos/R/file?branch=B&change=ID&path=P: the file's bytes at the
 * change of the branch, with the stored-bytes headers (stored_headers). */
static int repo_file(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    cn_repos_branch_t b;
    cn_repos_page_q_t q;
    if (!repo_open(c, &rq, &info) || !branch_open(c, &rq, &info, &b) ||
        !page_query(c, &info, &b, &q))
        return 0;
    if (!q.prefix_len)
        return cn__console_error(c, 400, "BadRequest", "path is required");
    cn_repos_t *r = cn__console_cfg(c->con)->repos;
    file_find_t ff = { .path = (const char *)q.prefix };
    bool more;
    cn_digest_t cr, rr;
    q.limit = 1;
    cn_err_t e = cn_repos_tree_page(r, &rq, &q, find_one, &ff, &more, &cr, &rr);
    if (e == 1 || (e == CN_OK && !ff.found))
        e = ff.found ? CN_OK : CN_E_NOT_FOUND;
    file_out_t *f = e == CN_OK ? calloc(1, sizeof *f) : NULL;
    if (e == CN_OK && !f)
        e = -ENOMEM;
    if (e == CN_OK) {
        f->r = r;
        f->who = *c->who;
        memcpy(f->repo, info.id, 16);
        e = object_bytes(r, &rq, info.id, CN_REPOS_MANIFEST, &ff.manifest, OBJECT_READ_MAX,
                         &f->manifest);
        if (e == CN_OK && cn_repos_manifest_parse(f->manifest.data, f->manifest.len, &f->m) < 0)
            e = CN_E_CORRUPT;
    }
    if (e < 0) {
        if (f)
            file_done(f);
        if (e == CN_E_NOT_FOUND)
            return cn__console_error(c, 404, "NotFound", "no such file at that change");
        return repos_fail(c, &rq, e);
    }
    stored_headers(c->req);
    disposition(c, (const char *)q.prefix);
    return cn_http_respond_stream(c->req, 200, "application/octet-stream", f->m.size, file_read,
                                  file_done, f) < 0
               ? -1
               : 0;
}

static cn_err_t lock_one(void *ctx, const cn_repos_lock_t *l)
{
    char ws[33];
    cn_hex_encode(l->workspace, 16, ws);
    json_t *o = json_pack("{s:s%,s:s,s:s,s:o}", "path", (const char *)l->path, l->path_len, "owner",
                          l->principal, "workspace", ws, "since", cn__console_time(l->since_ms));
    return cn__console_append(ctx, o);
}

/* GET repos/R/locks (the first 4096 by path). */
static int repo_locks(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    if (!repo_open(c, &rq, &info))
        return 0;
    json_t *arr = json_array();
    bool more = false;
    cn_err_t e =
        arr ? cn_repos_lock_list(cn__console_cfg(c->con)->repos, &rq, info.id, (const uint8_t *)"",
                                 0, NULL, NULL, 0, REPOS_LIST_MAX, lock_one, arr, &more)
            : -ENOMEM;
    return repos_list_answer(c, &rq, e, "locks", arr, more);
}

static cn_err_t ws_one(void *ctx, const cn_repos_ws_t *w)
{
    char id[33];
    cn_hex_encode(w->id, 16, id);
    json_t *tags = json_array();
    for (uint16_t i = 0; tags && i < w->tag_count; i++)
        json_array_append_new(tags, json_string(w->tags[i]));
    json_t *o = json_pack("{s:s,s:s,s:o,s:b,s:o*}", "id", id, "name", w->label, "created",
                          cn__console_time(w->created_ms), "locks", w->has_locks, "tags", tags);
    return cn__console_append(ctx, o);
}

/* GET repos/R/workspaces (live ones, the first 128 by id). */
static int repo_workspaces(cn_console_call_t *c)
{
    cn_repos_req_t rq;
    cn_repos_info_t info;
    if (!repo_open(c, &rq, &info))
        return 0;
    json_t *arr = json_array();
    bool more = false;
    cn_err_t e = arr ? cn_repos_ws_list(cn__console_cfg(c->con)->repos, &rq, info.id, true, NULL,
                                        CN_REPOS_WS_PAGE_MAX, ws_one, arr, &more)
                     : -ENOMEM;
    return repos_list_answer(c, &rq, e, "workspaces", arr, more);
}

const cn_console_op_t cn__console_repos_ops[] = {
    { CN_HTTP_GET, "repos", repos_list, 0 },
    { CN_HTTP_GET, "repos/*", repo_get, 0 },
    { CN_HTTP_GET, "repos/*/changes", repo_changes, 0 },
    { CN_HTTP_GET, "repos/*/changes/*", repo_change, 0 },
    { CN_HTTP_GET, "repos/*/tree", repo_tree, 0 },
    { CN_HTTP_GET, "repos/*/file", repo_file, 0 },
    { CN_HTTP_GET, "repos/*/branches", repo_branches, 0 },
    { CN_HTTP_GET, "repos/*/locks", repo_locks, 0 },
    { CN_HTTP_GET, "repos/*/workspaces", repo_workspaces, 0 },
    { 0, NULL, NULL, 0 },
};
