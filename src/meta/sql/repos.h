/* The repositories service's statements (src/repos/service*.c): its schema
 * and every statement it runs, each named below with its parameters and
 * result columns.  See sql.h.  Blob-typed ids: repository, branch, intent,
 * operation and workspace ids are 16 bytes; digests 32.
 *
 * The *_DUMP, *_LOAD and *_CLEAR statements are a backed-up table's rows of
 * one repository (service_backup.c): DUMP selects every column in the order
 * LOAD inserts them, CLEAR deletes them.  Where another statement already
 * has that exact text (REPO_BY_ID, BRANCH_INSERT, COMMIT_INSERT, ROOT_INSERT,
 * EVENT_INSERT, OPERATION_INSERT, NOTE_INSERT) the backup uses it; *_LOAD_V1
 * load the rows of a version 1 backup (before branches). */
#ifndef CAIRN_META_SQL_REPOS_H
#define CAIRN_META_SQL_REPOS_H

#include "meta/sql/sql.h"

/* REPO_COLS below: id, name, incarnation, main_branch, head, created_ms,
 * compression.  NOTE_COLS: change, revision, author, edited_ms, text.
 * BRANCH_COLS: id, name, head, origin_branch (NULL for main), origin_change,
 * created_ms.  BRANCH_ROW: repo, id, name, name_key, head, origin_branch,
 * origin_change, created_ms.  COMMIT_ROW: repo, change, branch, commit_id,
 * parent, changeset, author, message, time_ms, content_root, revision_root,
 * merge_parent, pick_branch (NULL without), pick_change. */
enum {
    /* the instance */
    CN_SQL_REPOS_INSTANCE_INSERT,      /* (incarnation): the one instance row, id 1 */
    CN_SQL_REPOS_INSTANCE_INCARNATION, /* () -> incarnation */
    CN_SQL_REPOS_REPO_COUNT,           /* () -> COUNT(*) of repositories */
    CN_SQL_REPOS_USAGE_TOTAL,          /* () -> SUM(len) of every membership row, 0 without */
    /* repositories */
    CN_SQL_REPOS_REPO_BY_ID,         /* (id) -> REPO_COLS; also repos_repo's DUMP */
    CN_SQL_REPOS_REPO_BY_NAME,       /* (name) -> REPO_COLS */
    CN_SQL_REPOS_REPO_LIST_AFTER,    /* (name) -> REPO_COLS of names after it, by name */
    CN_SQL_REPOS_REPO_PAGE_AFTER_ID, /* (id) -> REPO_COLS of 129 ids after it, by id */
    CN_SQL_REPOS_REPO_NAME_TAKEN,    /* (name) -> 1 when a repository holds it */
    CN_SQL_REPOS_REPO_INSERT,        /* (id, name, incarnation, main_branch, created_ms,
                                        compression, schema): a new repository at head 0 */
    CN_SQL_REPOS_REPO_SCHEMA,        /* (id) -> schema */
    CN_SQL_REPOS_REPO_SET_HEAD,      /* (head, id) */
    CN_SQL_REPOS_REPO_USAGE,         /* (repo) -> SUM(len) of its membership rows, 0 without */
    /* branches and roots */
    CN_SQL_REPOS_BRANCH_GET,        /* (repo, branch) -> BRANCH_COLS */
    CN_SQL_REPOS_BRANCH_BY_NAME,    /* (repo, name) -> BRANCH_COLS */
    CN_SQL_REPOS_BRANCH_PAGE_AFTER, /* (repo, name, limit) -> BRANCH_COLS of names after it */
    CN_SQL_REPOS_BRANCH_KEY_OWNER,  /* (repo, name_key) -> id of the branch holding it */
    CN_SQL_REPOS_BRANCH_INSERT,     /* (BRANCH_ROW); also its LOAD */
    CN_SQL_REPOS_BRANCH_RENAME,     /* (name, name_key, repo, branch) */
    CN_SQL_REPOS_BRANCH_SET_HEAD,   /* (head, repo, branch) */
    CN_SQL_REPOS_COMMIT_AT,         /* (repo, branch, change) -> change, commit_id,
                                        revision_root, content_root of the branch's last commit
                                        at or before change */
    CN_SQL_REPOS_ROOT_GET,          /* (repo) -> revision_root, content_root of the empty tree */
    CN_SQL_REPOS_ROOT_INSERT,       /* (repo, content_root, revision_root); also its LOAD */
    /* objects, intents and pins */
    CN_SQL_REPOS_OBJECT_FIND,          /* (repo, kind, id) -> blob, len, fsize */
    CN_SQL_REPOS_OBJECT_INSERT,        /* (repo, kind, id, blob, len, fsize), kept if present */
    CN_SQL_REPOS_OBJECT_INSERT_COMMIT, /* (repo, id, blob, len): a commit (kind 4), fsize 0,
                                          kept if present */
    CN_SQL_REPOS_BLOB_IS_LIVE,         /* (blob) -> 1 when some repository names it */
    CN_SQL_REPOS_OPERATION_EXISTS,     /* (repo, op) -> 1 when it has an outcome */
    CN_SQL_REPOS_INTENT_WORKSPACE,     /* (repo, intent) -> workspace */
    CN_SQL_REPOS_INTENT_INSERT,        /* (repo, intent, workspace, created_ms) */
    CN_SQL_REPOS_PIN_INSERT,           /* (repo, intent, kind, id), kept if present */
    CN_SQL_REPOS_PIN_DELETE_INTENT,    /* (repo, intent): the intent's upload pins */
    /* submits */
    CN_SQL_REPOS_OPERATION_FIND,   /* (repo, op) -> kind, fingerprint, outcome */
    CN_SQL_REPOS_OPERATION_INSERT, /* (repo, op, kind, fingerprint, workspace, outcome,
                                      created_ms); also its LOAD */
    CN_SQL_REPOS_FOLD_INSERT,      /* (repo, branch, path, fold), kept if present */
    CN_SQL_REPOS_FOLD_COPY,        /* (new branch, repo, branch): the branch's rows for another */
    CN_SQL_REPOS_FOLD_DELETE,      /* (repo, branch, path) */
    CN_SQL_REPOS_COMMIT_PARENTS,   /* (repo, change) -> parent, merge_parent, branch */
    CN_SQL_REPOS_EVENT_PATHS,      /* (repo, branch, change, after, limit) -> the paths of the
                                      change's events after `after`, by path */
    CN_SQL_REPOS_EVENTS_BETWEEN,   /* (repo, branch, lo, hi, limit) -> the paths of the events
                                      in (lo, hi] (a path once per change) */
    CN_SQL_REPOS_LINEAGE_INSERT,   /* (repo, change, path, pred_change, pred_path), kept if
                                      present; also its LOAD */
    CN_SQL_REPOS_LINEAGE_PREDS,    /* (repo, change, path) -> pred_change, pred_path */
    CN_SQL_REPOS_LINEAGE_SUCCS,    /* (repo, pred_change, pred_path, max change) -> change, path
                                      of the revisions that follow it, up to max change */
    CN_SQL_REPOS_LINEAGE_FROM_EVENTS, /* (repo or NULL: every one): the file_lineage rows of
                                         modifies and deletes, from the path events */
    CN_SQL_REPOS_LINEAGE_FROM_MOVES,  /* (repo or NULL): those of moves, from the events */
    CN_SQL_REPOS_COMMIT_EXISTS,       /* (repo, change) -> 1 when the change was accepted */
    CN_SQL_REPOS_COMMIT_INSERT,       /* (COMMIT_ROW); also its LOAD */
    CN_SQL_REPOS_COMMIT_PICK,         /* (repo, change) -> pick_branch (NULL without),
                                         pick_change */
    CN_SQL_REPOS_COMMIT_PICKS_OF,     /* (repo, pick_change, pick_branch, limit) -> change of the
                                         commits picked from that change, ascending */
    CN_SQL_REPOS_COMMIT_SET_PICK,     /* (pick_branch, pick_change, repo, change): a pick's
                                         provenance on its new commit row */
    CN_SQL_REPOS_EVENT_INSERT,        /* (repo, branch, path, change, event, from_path or NULL);
                                      also its LOAD */
    /* history */
    CN_SQL_REPOS_LOG_COMMITS,   /* (repo, branch, after, before, limit) -> change, commit_id,
                                   parent, author, message, time_ms, merge_parent, its branch
                                   of the changes in (after, before), newest first */
    CN_SQL_REPOS_LOG_PATH,      /* (repo, branch, path, lo, hi, after, before, before or -1,
                                   after_path, limit) -> change, commit_id, parent, author,
                                   message, time_ms, merge_parent, its branch, path, event,
                                   from_path of the events at
                                   path or in [lo, hi) with a change above after, by change
                                   desc then path */
    CN_SQL_REPOS_CHANGED_PATHS, /* (repo, branch, lo, hi, after, prefix_len, prefix, plo, phi,
                                   limit) -> path, MAX(change) of paths with an event in
                                   (lo, hi], by path */
    /* merge-aware history (service_log_follow.c, service_log_all.c) */
    CN_SQL_REPOS_FOLLOW_EVENTS, /* (repo, branch, path, lo, hi) -> change, event, from_path of
                                   the branch's events at exactly path in (lo, hi], newest
                                   first */
    CN_SQL_REPOS_DIR_MOVES,     /* (repo, branch, lo, hi, clo, chi) -> change, path, from_path
                                   of the moves into [lo, hi) from outside it in (clo, chi],
                                   newest first (a directory log's moved-in files) */
    CN_SQL_REPOS_FOLLOW_MERGES, /* (repo, branch, lo, hi) -> change, merge_parent, its branch
                                   of the branch's merge commits in (lo, hi], newest first */
    CN_SQL_REPOS_LOG_COMMIT,    /* (repo, change) -> commit_id, parent, author, message,
                                   time_ms, merge_parent, its branch, branch of one commit */
    CN_SQL_REPOS_NODE_EVENT,    /* (repo, change, path) -> event, from_path of the event the
                                   commit that wrote the revision recorded there */
    /* notes */
    CN_SQL_REPOS_NOTE_LAST_REVISION, /* (repo, change) -> MAX(revision), 0 without */
    CN_SQL_REPOS_NOTE_INSERT,        /* (repo, NOTE_COLS); also its LOAD */
    CN_SQL_REPOS_NOTE_LATEST,        /* (repo, change) -> NOTE_COLS of its last revision */
    CN_SQL_REPOS_NOTE_PAGE,          /* (repo, change, after, limit) -> NOTE_COLS by revision */
    /* snapshot-tree nodes */
    CN_SQL_REPOS_TREE_NODE_GET,    /* (repo, hash) -> enc, aux */
    CN_SQL_REPOS_TREE_NODE_INSERT, /* (repo, hash, enc, aux), kept if present */
    /* backup and restore */
    CN_SQL_REPOS_BACKUP_BLOBS,    /* (repo) -> blob, MIN(kind) of each blob it names, by blob */
    CN_SQL_REPOS_RESTORE_CLAIM,   /* (id, name) -> id of repositories holding either */
    CN_SQL_REPOS_REPO_LOAD,       /* (REPO_COLS) */
    CN_SQL_REPOS_REPO_CLEAR,      /* (id) */
    CN_SQL_REPOS_BRANCH_DUMP,     /* (repo) -> BRANCH_ROW */
    CN_SQL_REPOS_BRANCH_LOAD_V1,  /* (repo, id, name, head): a version 1 backup's row */
    CN_SQL_REPOS_BRANCH_CLEAR,    /* (repo) */
    CN_SQL_REPOS_OBJECT_DUMP,     /* (repo) -> repo, kind, id, blob, len, fsize */
    CN_SQL_REPOS_OBJECT_LOAD,     /* (repo, kind, id, blob, len, fsize) */
    CN_SQL_REPOS_OBJECT_CLEAR,    /* (repo) */
    CN_SQL_REPOS_COMMIT_DUMP,     /* (repo) -> COMMIT_ROW */
    CN_SQL_REPOS_COMMIT_LOAD_V1,  /* (COMMIT_ROW without its last three): a version 1 row */
    CN_SQL_REPOS_COMMIT_CLEAR,    /* (repo) */
    CN_SQL_REPOS_ROOT_DUMP,       /* (repo) -> repo, content_root, revision_root */
    CN_SQL_REPOS_ROOT_CLEAR,      /* (repo) */
    CN_SQL_REPOS_TREE_NODE_DUMP,  /* (repo) -> repo, hash, enc, aux */
    CN_SQL_REPOS_TREE_NODE_LOAD,  /* (repo, hash, enc, aux) */
    CN_SQL_REPOS_TREE_NODE_CLEAR, /* (repo) */
    CN_SQL_REPOS_FOLD_DUMP,       /* (repo) -> repo, branch, path, fold */
    CN_SQL_REPOS_FOLD_LOAD,       /* (repo, branch, path, fold) */
    CN_SQL_REPOS_FOLD_CLEAR,      /* (repo) */
    CN_SQL_REPOS_EVENT_DUMP,      /* (repo) -> the columns of EVENT_INSERT */
    CN_SQL_REPOS_EVENT_CLEAR,     /* (repo) */
    CN_SQL_REPOS_OPERATION_DUMP,  /* (repo) -> repo, op, kind, fingerprint, workspace, outcome,
                                     created_ms */
    CN_SQL_REPOS_OPERATION_CLEAR, /* (repo) */
    CN_SQL_REPOS_LINEAGE_DUMP,    /* (repo) -> repo, change, path, pred_change, pred_path */
    CN_SQL_REPOS_LINEAGE_CLEAR,   /* (repo) */
    CN_SQL_REPOS_NOTE_DUMP,       /* (repo) -> repo, NOTE_COLS */
    CN_SQL_REPOS_NOTE_CLEAR,      /* (repo) */
    CN_SQL_REPOS_INTENT_CLEAR,    /* (repo) */
    CN_SQL_REPOS_PIN_CLEAR,       /* (repo) */
    CN_SQL_REPOS_LOCK_CLEAR,      /* (repo) */
    /* locks (LOCK_COLS: path, workspace, principal, branch, since_ms) */
    CN_SQL_REPOS_LOCK_GET,          /* (repo, fold) -> LOCK_COLS of the lock on that fold */
    CN_SQL_REPOS_LOCK_INSERT,       /* (repo, fold, LOCK_COLS) */
    CN_SQL_REPOS_LOCK_DELETE,       /* (repo, fold) */
    CN_SQL_REPOS_LOCK_DELETE_OWNED, /* (repo, fold, workspace): only the workspace's lock */
    CN_SQL_REPOS_LOCK_PAGE,         /* (repo, after, has_prefix, prefix, lo, hi, has_owner,
                                       owner, limit) -> LOCK_COLS of the paths after `after`
                                       equal to prefix or in [lo, hi), held by owner, by
                                       path */
    CN_SQL_REPOS_LOCK_OWNED_ANY,    /* (repo, workspace) -> path of its first lock */
    /* workspaces (WS_COLS: id, branch, owner or NULL, label, tags, created_ms,
     * retired_ms (0: live), has_locks) */
    CN_SQL_REPOS_WS_GET,    /* (repo, id) -> WS_COLS */
    CN_SQL_REPOS_WS_INSERT, /* (repo, id, branch, owner or NULL, label, tags, created_ms,
                               retired_ms) */
    CN_SQL_REPOS_WS_UPDATE, /* (branch, label, repo, id) */
    CN_SQL_REPOS_WS_RETIRE, /* (retired_ms, repo, id): a live row only */
    CN_SQL_REPOS_WS_PAGE,   /* (repo, after, has_owner, owner, limit) -> WS_COLS of the live
                               rows after `after` (owned by owner), by id */
    CN_SQL_REPOS_PIN_DELETE_WORKSPACE, /* (repo, repo, workspace): the pins of every intent
                                          of the workspace */
    CN_SQL_REPOS_WS_DUMP,              /* (repo) -> repo, id, branch, owner or NULL, label, tags,
                                   created_ms, retired_ms: every row, retired ones too */
    CN_SQL_REPOS_WS_LOAD,              /* as WS_INSERT; a row already there (retired) stays */
    CN_SQL_REPOS_WS_CLEAR_LIVE,        /* (repo): the live rows; retired ones stay retired */
    CN_SQL_REPOS_WS_SET_OWNER,         /* (owner, repo, id): a row without an owner only */
    CN_SQL_REPOS_OPERATION_WORKSPACE,  /* (repo, op) -> workspace the operation named */
    CN_SQL_REPOS_COUNT
};

/* Batch statements (cn_meta_batch_query): ?1 the list of object keys. */
enum {
    CN_SQL_REPOS_BATCH_OBJECT_FIND,   /* (ids, repo, kind) -> position, blob, fsize; one row per
                                       id held */
    CN_SQL_REPOS_BATCH_OBJECT_GET,    /* (kind byte + id keys, repo) -> position, blob, len;
                                       one row per key held (keys of 33 bytes) */
    CN_SQL_REPOS_BATCH_TREE_NODE_GET, /* (hashes, repo) -> position, enc, aux; a row per node
                                         stored */
    CN_SQL_REPOS_BATCH_FOLD_COUNT,    /* (folds padded with NUL to width, repo, branch, width) ->
                                       position, COUNT(*) of paths with that fold; a row each */
    CN_SQL_REPOS_BATCH_LOCK_GET,      /* (folds padded with NUL to width, repo, width) ->
                                         position, workspace of the fold's lock; a row per
                                         fold locked */
    CN_SQL_REPOS_BATCH_COUNT
};

/* Membership rows many at a time (service_objects.c): the text of
 * "INSERT INTO repos_object (repo, kind, id, blob, len, fsize) VALUES
 * (?, ?, ?, ?, ?, ?), ... ON CONFLICT DO NOTHING RETURNING kind, id" with
 * rows rows (1 <= rows <= CN_SQL_REPOS_OBJECT_ROWS_MAX): the parameters are
 * OBJECT_INSERT's, row after row; a row is returned for each new row, none
 * for a row already held.  malloc'd; NULL: out of memory or rows out of
 * range. */
#define CN_SQL_REPOS_OBJECT_ROWS_MAX 256u
char *cn__sql_repos_object_insert_rows(uint32_t rows);

/* A submit's and a lock request's rows many at a time: the texts of
 * TREE_NODE_INSERT, EVENT_INSERT, LINEAGE_INSERT, FOLD_INSERT and
 * LOCK_INSERT with rows rows (1 <= rows <=
 * CN_SQL_REPOS_ROWS_MAX), whose parameters are the one-row statement's, row
 * after row (cn__sql_repos_rows_cols of them each).  malloc'd; NULL: out of
 * memory, rows out of range or an unknown which. */
enum {
    CN_SQL_REPOS_ROWS_TREE_NODE,
    CN_SQL_REPOS_ROWS_EVENT,
    CN_SQL_REPOS_ROWS_LINEAGE,
    CN_SQL_REPOS_ROWS_FOLD,
    CN_SQL_REPOS_ROWS_LOCK,
    CN_SQL_REPOS_ROWS_COUNT
};
#define CN_SQL_REPOS_ROWS_MAX 256u
char *cn__sql_repos_rows(int which, uint32_t rows);
int cn__sql_repos_rows_cols(int which);

extern const char *const cn__sql_repos[CN_SQL_REPOS_COUNT];
extern const cn_meta_batch_sql_t cn__sql_repos_batch[CN_SQL_REPOS_BATCH_COUNT];
extern const cn_sql_set_t cn__sql_repos_set;

#endif
