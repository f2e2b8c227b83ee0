/* Internals of the path logs (service_log_follow.c, service_log_all.c and,
 * for the move sources of the ordinary log, service_history.c): one history
 * read's walk state, its budget, the rows it collects and the page it hands
 * out.  Only those three files include it; it must never be included from
 * another module, and nothing here may answer a page short of its budget (a
 * walk past the budget fails). */
#ifndef CN_REPOS_SERVICE_LOG_INT_H
#define CN_REPOS_SERVICE_LOG_INT_H

#include "service_int.h"

/* A history row before its commit is read: the path and move source are
 * offsets into the read's arena until cn__hist_page fixes them up.  event 0
 * and a zero branch: not known yet (all-branch nodes), read with the commit. */
typedef struct cn__hrow {
    uint64_t change;
    uint8_t event;
    size_t path_off, from_off;
    uint32_t path_len, from_len;
    const uint8_t *path, *from; /* set by cn__hist_page */
} cn__hrow_t;

/* A set of byte keys, each with a value (open addressing; keys in an arena). */
typedef struct cn__hslot {
    uint64_t hash, value;
    size_t off;
    uint32_t len;
    bool used;
} cn__hslot_t;
typedef struct cn__hset {
    cn__hslot_t *slots;
    size_t used, cap;
    cn_buf_t keys;
} cn__hset_t;

/* One history read, in one read transaction. */
typedef struct cn__hist {
    cn_meta_txn_t *txn;
    cn_repos_req_t *rq;
    const uint8_t *repo;
    uint64_t visits, bytes; /* the budget spent */
    cn_buf_t arena;         /* paths of rows and pending walks */
    cn__hrow_t *rows;
    size_t n, cap;
    cn__hset_t seen;   /* walks: 'W' branch path -> upper walked; nodes: 'N' change path */
    bool first_parent; /* the ordinary log: origins and moves, never merge sources */
} cn__hist_t;

void cn__hist_free(cn__hist_t *h);
/* Counts one metadata visit and bytes of lineage paths: CN_E_LIMIT
 * (LIMIT_EXCEEDED) past CN_REPOS_HISTORY_BUDGET visits or 32 MiB. */
cn_err_t cn__hist_spend(cn__hist_t *h, size_t bytes);
/* Copies p[0..n) into the arena: *off is where. */
cn_err_t cn__hist_keep(cn__hist_t *h, const uint8_t *p, size_t n, size_t *off);
/* Makes room for element n of the array *v of *cap elements of size bytes
 * (doubling it).  -ENOMEM. */
cn_err_t cn__hist_grow(void **v, size_t *cap, size_t n, size_t size);
/* Appends a row (path and from given as arena offsets). */
cn_err_t cn__hist_row(cn__hist_t *h, uint64_t change, uint8_t event, size_t path_off,
                      uint32_t path_len, size_t from_off, uint32_t from_len);
/* Adds key to the set: *added when it was new; *value is its slot's value
 * (0 for a new key), which the caller may change. */
cn_err_t cn__hset_put(cn__hset_t *s, const uint8_t *key, size_t n, bool *added, uint64_t **value);
/* The value of key: false when absent. */
bool cn__hset_get(const cn__hset_t *s, const uint8_t *key, size_t n, uint64_t *value);

/* Walks the commit ancestry of branch's snapshot at upper: its commits up
 * to upper, then its origin's up to the origin change, and (unless
 * h->first_parent) every merge source up to its recorded revision.  With a
 * path (n > 0), each segment's events at the path become rows, a move
 * continues at its source below the move, and an add ends that line.  Without one the walk records the
 * ancestry alone (cn__hist_member). */
cn_err_t cn__hist_walk(cn__hist_t *h, const uint8_t branch[16], uint64_t upper, const uint8_t *path,
                       size_t n);
/* Whether change, accepted on branch, is in the ancestry a path-less walk
 * recorded. */
bool cn__hist_member(const cn__hist_t *h, const uint8_t branch[16], uint64_t change);
/* Sorts the rows (change descending, path ascending), drops repeated
 * (change, path), filters them by q's cursor and hands at most q's limit to
 * fn with their commits; all: membership from cn__hist_member. */
cn_err_t cn__hist_page(cn__hist_t *h, const cn_repos_follow_q_t *q, bool all, cn_repos_follow_fn fn,
                       void *ctx);

/* A log page's rows in a cn__rows_t (rows, started for the page's limit):
 * cn__logrows_add collects a row with deep copies of its bytes (a
 * cn_repos_follow_fn); cn__logrows_hand hands them to fn while err, then
 * fn's returns, are 0, frees them and returns the last err. */
cn_err_t cn__logrows_add(void *rows, const cn_repos_log_row_t *row, bool member);
cn_err_t cn__logrows_hand(cn__rows_t *rows, cn_err_t err, cn_repos_follow_fn fn, void *ctx);

/* The all-branch mode's rows (service_log_all.c): every revision linked to
 * (change, path) by the lineage index, both ways, none past ceiling. */
cn_err_t cn__hist_lineage(cn__hist_t *h, uint64_t change, const uint8_t *path, size_t n,
                          uint64_t ceiling);

#endif
