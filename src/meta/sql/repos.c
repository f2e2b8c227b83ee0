/* The repositories service's statement file: its schema steps and its
 * statements (repos.h names them).  See sql.h.
 *
 * Step 2's seed is the one piece of code here: the step inserts the
 * instance row, with a random incarnation, in the migration's own
 * transaction, and the set must carry the whole step so that whoever
 * migrates it (the service, tests/meta/test_sql.c) gets the same schema and
 * data; the meta library cannot call back into the service for it.  The
 * other is the text of a multi-row membership INSERT, whose length is the
 * number of rows. */
#include "meta/sql/repos.h"

#include <stdlib.h>
#include <string.h>

#include "cairn/crypto.h"

/* The data root's incarnation: random, made by the migration that adds it. */
static cn_err_t instance_seed(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    uint8_t inc[16];
    cn_err_t err = cn_random_bytes(inc, sizeof inc);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_INSTANCE_INSERT], "b",
                            (const void *)inc, sizeof inc);
    return err < 0 ? err : CN_OK;
}

/* Step 3's file_lineage rows of the repositories made before it (one
 * branch each, no merges), derived from their path events: the statements
 * LINEAGE_FROM_EVENTS and LINEAGE_FROM_MOVES with no repository named. */
static cn_err_t lineage_seed(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_LINEAGE_FROM_EVENTS], "n");
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_LINEAGE_FROM_MOVES], "n");
    return err < 0 ? err : CN_OK;
}

static const cn_meta_migration_t schema[] = {
    { 1,
      "CREATE TABLE repos_repo (id BLOB PRIMARY KEY, name BLOB NOT NULL UNIQUE,"
      " incarnation BLOB NOT NULL, main_branch BLOB NOT NULL, head BIGINT NOT NULL,"
      " created_ms BIGINT NOT NULL, compression BIGINT NOT NULL);"
      "CREATE TABLE repos_branch (repo BLOB NOT NULL, id BLOB NOT NULL, name BLOB NOT NULL,"
      " head BIGINT NOT NULL, PRIMARY KEY (repo, id));"
      "CREATE TABLE repos_object (repo BLOB NOT NULL, kind BIGINT NOT NULL, id BLOB NOT NULL,"
      " blob BLOB NOT NULL, len BIGINT NOT NULL, fsize BIGINT NOT NULL,"
      " PRIMARY KEY (repo, kind, id));"
      "CREATE INDEX repos_object_blob ON repos_object (blob);"
      "CREATE TABLE repos_commit (repo BLOB NOT NULL, change BIGINT NOT NULL,"
      " branch BLOB NOT NULL, commit_id BLOB NOT NULL, parent BIGINT NOT NULL,"
      " changeset BLOB NOT NULL, author BLOB NOT NULL, message BLOB NOT NULL,"
      " time_ms BIGINT NOT NULL, content_root BLOB NOT NULL, revision_root BLOB NOT NULL,"
      " PRIMARY KEY (repo, change));"
      "CREATE INDEX repos_commit_branch ON repos_commit (repo, branch, change);"
      "CREATE TABLE repos_root (repo BLOB PRIMARY KEY, content_root BLOB NOT NULL,"
      " revision_root BLOB NOT NULL);"
      "CREATE TABLE repos_tree_node (repo BLOB NOT NULL, hash BLOB NOT NULL, enc BLOB NOT NULL,"
      " aux BLOB NOT NULL, PRIMARY KEY (repo, hash));"
      "CREATE TABLE repos_fold (repo BLOB NOT NULL, branch BLOB NOT NULL, path BLOB NOT NULL,"
      " fold BLOB NOT NULL, PRIMARY KEY (repo, branch, path));"
      "CREATE INDEX repos_fold_fold ON repos_fold (repo, branch, fold);"
      "CREATE TABLE repos_event (repo BLOB NOT NULL, branch BLOB NOT NULL, path BLOB NOT NULL,"
      " change BIGINT NOT NULL, event BIGINT NOT NULL, from_path BLOB,"
      " PRIMARY KEY (repo, branch, path, change));"
      "CREATE INDEX repos_event_change ON repos_event (repo, branch, change);"
      "CREATE TABLE repos_operation (repo BLOB NOT NULL, op BLOB NOT NULL, kind BIGINT NOT NULL,"
      " fingerprint BLOB NOT NULL, workspace BLOB NOT NULL, outcome BLOB NOT NULL,"
      " created_ms BIGINT NOT NULL, PRIMARY KEY (repo, op));"
      "CREATE TABLE repos_intent (repo BLOB NOT NULL, intent BLOB NOT NULL,"
      " workspace BLOB NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (repo, intent));"
      "CREATE TABLE repos_pin (repo BLOB NOT NULL, intent BLOB NOT NULL, kind BIGINT NOT NULL,"
      " id BLOB NOT NULL, PRIMARY KEY (repo, intent, kind, id));"
      "CREATE TABLE repos_note (repo BLOB NOT NULL, change BIGINT NOT NULL,"
      " revision BIGINT NOT NULL, author BLOB NOT NULL, edited_ms BIGINT NOT NULL,"
      " text BLOB NOT NULL, PRIMARY KEY (repo, change, revision))",
      NULL, NULL },
    { 2, "CREATE TABLE repos_instance (id BIGINT PRIMARY KEY, incarnation BLOB NOT NULL)",
      instance_seed, NULL },
    /* Branches (docs/protocol/scribe.md 7.8, 7.9): each repository records
     * its schema (3: branch support; the repositories before this step had
     * one branch and are upgraded as they are); a branch keeps its origin
     * and creation time, and name_key (the ASCII-lowercased name) makes names
     * unique ignoring case.  Before this step the only branch of a repository
     * was "main", already lowercase, and made with its repository.  A commit
     * keeps its merge parent (0: none) and its cherry-pick provenance. */
    { 3,
      "ALTER TABLE repos_repo ADD COLUMN schema BIGINT NOT NULL DEFAULT 3;"
      "ALTER TABLE repos_branch ADD COLUMN name_key BLOB;"
      "ALTER TABLE repos_branch ADD COLUMN origin_branch BLOB;"
      "ALTER TABLE repos_branch ADD COLUMN origin_change BIGINT NOT NULL DEFAULT 0;"
      "ALTER TABLE repos_branch ADD COLUMN created_ms BIGINT NOT NULL DEFAULT 0;"
      "UPDATE repos_branch SET name_key = name, created_ms = (SELECT r.created_ms FROM"
      " repos_repo r WHERE r.id = repos_branch.repo);"
      "CREATE UNIQUE INDEX repos_branch_key ON repos_branch (repo, name_key);"
      "CREATE INDEX repos_branch_name ON repos_branch (repo, name);"
      "ALTER TABLE repos_commit ADD COLUMN merge_parent BIGINT NOT NULL DEFAULT 0;"
      "ALTER TABLE repos_commit ADD COLUMN pick_branch BLOB;"
      "ALTER TABLE repos_commit ADD COLUMN pick_change BIGINT NOT NULL DEFAULT 0;"
      "CREATE TABLE repos_lineage (repo BLOB NOT NULL, change BIGINT NOT NULL,"
      " path BLOB NOT NULL, pred_change BIGINT NOT NULL, pred_path BLOB NOT NULL,"
      " PRIMARY KEY (repo, change, path, pred_change, pred_path));"
      "CREATE INDEX repos_lineage_pred ON repos_lineage (repo, pred_change, pred_path)",
      lineage_seed, NULL },
    /* Cherry-picks (docs/protocol/scribe.md 7.9): the commits picked from a
     * change are found by their provenance, so the duplicate-pick rule reads
     * them, not every commit of the repository. */
    { 4,
      "CREATE INDEX repos_commit_pick ON repos_commit (repo, pick_change, pick_branch)"
      " WHERE pick_change <> 0",
      NULL, NULL },
    /* Locks (docs/protocol/scribe.md 7.10): one row per held path, keyed by
     * its case fold so that aliases collide; path keeps the spelling that
     * was locked.  The path index serves listings by prefix, the owner index
     * listings by owner and a submit's release of its workspace's locks. */
    { 5,
      "CREATE TABLE repos_lock (repo BLOB NOT NULL, fold BLOB NOT NULL, path BLOB NOT NULL,"
      " workspace BLOB NOT NULL, principal BLOB NOT NULL, branch BLOB NOT NULL,"
      " since_ms BIGINT NOT NULL, PRIMARY KEY (repo, fold));"
      "CREATE INDEX repos_lock_path ON repos_lock (repo, path);"
      "CREATE INDEX repos_lock_owner ON repos_lock (repo, workspace, path)",
      NULL, NULL },
    /* Workspaces (docs/protocol/scribe.md 7.11): one registration row per
     * (repository, workspace); tags is the sorted tag list joined by '\n'
     * (tags hold no whitespace); owner is NULL on plaintext endpoints.  A
     * removal keeps the row with retired_ms set (an id the server never saw
     * gets a row then too), so the id is refused forever.  The owner index
     * serves own listings. */
    { 6,
      "CREATE TABLE repos_workspace (repo BLOB NOT NULL, id BLOB NOT NULL, branch BLOB NOT NULL,"
      " owner BLOB, label BLOB NOT NULL, tags BLOB NOT NULL, created_ms BIGINT NOT NULL,"
      " retired_ms BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (repo, id));"
      "CREATE INDEX repos_workspace_owner ON repos_workspace (repo, owner, id)",
      NULL, NULL },
};

#define REPO_COLS "id, name, incarnation, main_branch, head, created_ms, compression"
#define NOTE_COLS "change, revision, author, edited_ms, text"
#define LOCK_COLS "path, workspace, principal, branch, since_ms"
/* A workspace row w and whether it holds a lock now. */
#define WS_COLS                                                             \
    "w.id, w.branch, w.owner, w.label, w.tags, w.created_ms, w.retired_ms," \
    " EXISTS (SELECT 1 FROM repos_lock l WHERE l.repo = w.repo AND l.workspace = w.id)"
#define BRANCH_COLS "id, name, head, origin_branch, origin_change, created_ms"
#define BRANCH_ROW "repo, id, name, name_key, head, origin_branch, origin_change, created_ms"
/* The branch of commit c's merge parent (NULL without one). */
#define MERGE_BRANCH \
    "(SELECT m.branch FROM repos_commit m WHERE m.repo = c.repo AND m.change = c.merge_parent)"
#define COMMIT_ROW                                                                  \
    "repo, change, branch, commit_id, parent, changeset, author, message, time_ms," \
    " content_root, revision_root, merge_parent, pick_branch, pick_change"

const char *const cn__sql_repos[CN_SQL_REPOS_COUNT] = {
    [CN_SQL_REPOS_INSTANCE_INSERT] = "INSERT INTO repos_instance (id, incarnation) VALUES (1, ?)",
    [CN_SQL_REPOS_INSTANCE_INCARNATION] = "SELECT incarnation FROM repos_instance WHERE id = 1",
    [CN_SQL_REPOS_REPO_COUNT] = "SELECT COUNT(*) FROM repos_repo",
    [CN_SQL_REPOS_USAGE_TOTAL] = "SELECT COALESCE(SUM(len), 0) FROM repos_object",

    [CN_SQL_REPOS_REPO_BY_ID] = "SELECT " REPO_COLS " FROM repos_repo WHERE id = ?",
    [CN_SQL_REPOS_REPO_BY_NAME] = "SELECT " REPO_COLS " FROM repos_repo WHERE name = ?",
    [CN_SQL_REPOS_REPO_LIST_AFTER] = "SELECT " REPO_COLS " FROM repos_repo WHERE name > ?"
                                     " ORDER BY name",
    [CN_SQL_REPOS_REPO_PAGE_AFTER_ID] = "SELECT " REPO_COLS " FROM repos_repo WHERE id > ?"
                                        " ORDER BY id LIMIT 129",
    [CN_SQL_REPOS_REPO_NAME_TAKEN] = "SELECT 1 FROM repos_repo WHERE name = ?",
    [CN_SQL_REPOS_REPO_INSERT] = "INSERT INTO repos_repo (" REPO_COLS ", schema) VALUES (?, ?, ?,"
                                 " ?, 0, ?, ?, ?)",
    [CN_SQL_REPOS_REPO_SCHEMA] = "SELECT schema FROM repos_repo WHERE id = ?",
    [CN_SQL_REPOS_REPO_SET_HEAD] = "UPDATE repos_repo SET head = ? WHERE id = ?",
    [CN_SQL_REPOS_REPO_USAGE] = "SELECT COALESCE(SUM(len), 0) FROM repos_object WHERE repo = ?",

    [CN_SQL_REPOS_BRANCH_GET] = "SELECT " BRANCH_COLS " FROM repos_branch"
                                " WHERE repo = ? AND id = ?",
    [CN_SQL_REPOS_BRANCH_BY_NAME] = "SELECT " BRANCH_COLS " FROM repos_branch"
                                    " WHERE repo = ? AND name = ?",
    [CN_SQL_REPOS_BRANCH_PAGE_AFTER] = "SELECT " BRANCH_COLS " FROM repos_branch"
                                       " WHERE repo = ? AND name > ? ORDER BY name LIMIT ?",
    [CN_SQL_REPOS_BRANCH_KEY_OWNER] = "SELECT id FROM repos_branch WHERE repo = ?"
                                      " AND name_key = ?",
    [CN_SQL_REPOS_BRANCH_INSERT] = "INSERT INTO repos_branch (" BRANCH_ROW ") VALUES (?, ?, ?, ?,"
                                   " ?, ?, ?, ?)",
    [CN_SQL_REPOS_BRANCH_RENAME] = "UPDATE repos_branch SET name = ?, name_key = ?"
                                   " WHERE repo = ? AND id = ?",
    [CN_SQL_REPOS_BRANCH_SET_HEAD] = "UPDATE repos_branch SET head = ? WHERE repo = ? AND id = ?",
    [CN_SQL_REPOS_COMMIT_AT] =
        "SELECT change, commit_id, revision_root, content_root FROM repos_commit"
        " WHERE repo = ? AND branch = ? AND change <= ? ORDER BY change DESC LIMIT 1",
    [CN_SQL_REPOS_ROOT_GET] = "SELECT revision_root, content_root FROM repos_root"
                              " WHERE repo = ?",
    [CN_SQL_REPOS_ROOT_INSERT] = "INSERT INTO repos_root (repo, content_root, revision_root)"
                                 " VALUES (?, ?, ?)",

    [CN_SQL_REPOS_OBJECT_FIND] = "SELECT blob, len, fsize FROM repos_object"
                                 " WHERE repo = ? AND kind = ? AND id = ?",
    [CN_SQL_REPOS_OBJECT_INSERT] = "INSERT INTO repos_object (repo, kind, id, blob, len, fsize)"
                                   " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_OBJECT_INSERT_COMMIT] =
        "INSERT INTO repos_object (repo, kind, id, blob, len, fsize)"
        " VALUES (?, 4, ?, ?, ?, 0) ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_BLOB_IS_LIVE] = "SELECT 1 FROM repos_object WHERE blob = ? LIMIT 1",
    [CN_SQL_REPOS_OPERATION_EXISTS] = "SELECT 1 FROM repos_operation WHERE repo = ? AND op = ?",
    [CN_SQL_REPOS_INTENT_WORKSPACE] = "SELECT workspace FROM repos_intent"
                                      " WHERE repo = ? AND intent = ?",
    [CN_SQL_REPOS_INTENT_INSERT] = "INSERT INTO repos_intent (repo, intent, workspace, created_ms)"
                                   " VALUES (?, ?, ?, ?)",
    [CN_SQL_REPOS_PIN_INSERT] = "INSERT INTO repos_pin (repo, intent, kind, id)"
                                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_PIN_DELETE_INTENT] = "DELETE FROM repos_pin WHERE repo = ? AND intent = ?",

    [CN_SQL_REPOS_OPERATION_FIND] = "SELECT kind, fingerprint, outcome FROM repos_operation"
                                    " WHERE repo = ? AND op = ?",
    [CN_SQL_REPOS_OPERATION_INSERT] = "INSERT INTO repos_operation (repo, op, kind, fingerprint,"
                                      " workspace, outcome, created_ms) VALUES (?, ?, ?, ?, ?, ?,"
                                      " ?)",
    [CN_SQL_REPOS_FOLD_INSERT] = "INSERT INTO repos_fold (repo, branch, path, fold)"
                                 " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_FOLD_COPY] = "INSERT INTO repos_fold (repo, branch, path, fold)"
                               " SELECT repo, ?, path, fold FROM repos_fold"
                               " WHERE repo = ? AND branch = ?",
    [CN_SQL_REPOS_FOLD_DELETE] = "DELETE FROM repos_fold WHERE repo = ? AND branch = ?"
                                 " AND path = ?",
    [CN_SQL_REPOS_COMMIT_PARENTS] = "SELECT parent, merge_parent, branch FROM repos_commit"
                                    " WHERE repo = ? AND change = ?",
    [CN_SQL_REPOS_EVENT_PATHS] = "SELECT path FROM repos_event WHERE repo = ? AND branch = ?"
                                 " AND change = ? AND path > ? ORDER BY path LIMIT ?",
    [CN_SQL_REPOS_EVENTS_BETWEEN] = "SELECT path FROM repos_event WHERE repo = ? AND branch = ?"
                                    " AND change > ? AND change <= ? LIMIT ?",
    [CN_SQL_REPOS_LINEAGE_INSERT] = "INSERT INTO repos_lineage (repo, change, path, pred_change,"
                                    " pred_path) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_LINEAGE_PREDS] = "SELECT pred_change, pred_path FROM repos_lineage"
                                   " WHERE repo = ? AND change = ? AND path = ?",
    [CN_SQL_REPOS_LINEAGE_SUCCS] = "SELECT change, path FROM repos_lineage WHERE repo = ?"
                                   " AND pred_change = ? AND pred_path = ? AND change <= ?",
    /* a modify or delete (events 2, 3) follows the last write (not a keep,
     * event 5) at its path; a move (4) the last write at its source.  The
     * derived table is named and ?1 is typed by its comparison before its
     * IS NULL: PostgreSQL needs both. */
    [CN_SQL_REPOS_LINEAGE_FROM_EVENTS] =
        "INSERT INTO repos_lineage (repo, change, path, pred_change, pred_path)"
        " SELECT repo, change, path, pred, path FROM (SELECT e.repo AS repo, e.change AS change,"
        " e.path AS path, (SELECT MAX(p.change) FROM repos_event p WHERE p.repo = e.repo"
        " AND p.branch = e.branch AND p.path = e.path AND p.change < e.change"
        " AND p.event <> 5) AS pred FROM repos_event e WHERE (e.repo = ?1 OR ?1 IS NULL)"
        " AND e.event IN (2, 3)) AS l WHERE pred IS NOT NULL ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_LINEAGE_FROM_MOVES] =
        "INSERT INTO repos_lineage (repo, change, path, pred_change, pred_path)"
        " SELECT repo, change, path, pred, from_path FROM (SELECT e.repo AS repo,"
        " e.change AS change, e.path AS path, e.from_path AS from_path,"
        " (SELECT MAX(p.change) FROM repos_event p WHERE p.repo = e.repo"
        " AND p.branch = e.branch AND p.path = e.from_path AND p.change < e.change"
        " AND p.event <> 5) AS pred FROM repos_event e WHERE (e.repo = ?1 OR ?1 IS NULL)"
        " AND e.event = 4) AS l WHERE pred IS NOT NULL ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_COMMIT_EXISTS] = "SELECT 1 FROM repos_commit WHERE repo = ? AND change = ?",
    [CN_SQL_REPOS_COMMIT_PICK] = "SELECT pick_branch, pick_change FROM repos_commit"
                                 " WHERE repo = ? AND change = ?",
    [CN_SQL_REPOS_COMMIT_PICKS_OF] = "SELECT change FROM repos_commit WHERE repo = ?"
                                     " AND pick_change = ? AND pick_branch = ?"
                                     " ORDER BY change LIMIT ?",
    [CN_SQL_REPOS_COMMIT_SET_PICK] = "UPDATE repos_commit SET pick_branch = ?, pick_change = ?"
                                     " WHERE repo = ? AND change = ?",
    [CN_SQL_REPOS_COMMIT_INSERT] = "INSERT INTO repos_commit (" COMMIT_ROW ") VALUES (?, ?, ?, ?,"
                                   " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_EVENT_INSERT] = "INSERT INTO repos_event (repo, branch, path, change,"
                                  " event, from_path) VALUES (?, ?, ?, ?, ?, ?)",

    [CN_SQL_REPOS_LOG_COMMITS] = "SELECT c.change, c.commit_id, c.parent, c.author, c.message,"
                                 " c.time_ms, c.merge_parent, " MERGE_BRANCH " FROM repos_commit c"
                                 " WHERE c.repo = ? AND c.branch = ? AND c.change > ?"
                                 " AND c.change < ? ORDER BY c.change DESC LIMIT ?",
    [CN_SQL_REPOS_LOG_PATH] =
        "SELECT e.change, c.commit_id, c.parent, c.author, c.message, c.time_ms, "
        "c.merge_parent, " MERGE_BRANCH
        ", e.path, e.event, e.from_path FROM repos_event e JOIN repos_commit c"
        " ON c.repo = e.repo AND c.change = e.change"
        " WHERE e.repo = ? AND e.branch = ? AND (e.path = ? OR (e.path >= ? AND e.path < ?))"
        " AND e.change > ? AND (e.change < ? OR (e.change = ? AND e.path > ?))"
        " ORDER BY e.change DESC, e.path ASC LIMIT ?",
    [CN_SQL_REPOS_CHANGED_PATHS] =
        "SELECT path, MAX(change) FROM repos_event WHERE repo = ? AND branch = ?"
        " AND change > ? AND change <= ? AND path > ?"
        " AND (? = 0 OR path = ? OR (path >= ? AND path < ?))"
        " GROUP BY path ORDER BY path LIMIT ?",
    [CN_SQL_REPOS_FOLLOW_EVENTS] = "SELECT change, event, from_path FROM repos_event"
                                   " WHERE repo = ? AND branch = ? AND path = ? AND change > ?"
                                   " AND change <= ? ORDER BY change DESC",
    [CN_SQL_REPOS_DIR_MOVES] = "SELECT change, path, from_path FROM repos_event"
                               " WHERE repo = ? AND branch = ? AND path >= ? AND path < ?"
                               " AND event = 4 AND change > ? AND change <= ?"
                               " AND NOT (from_path >= ? AND from_path < ?)"
                               " ORDER BY change DESC, path ASC",
    [CN_SQL_REPOS_FOLLOW_MERGES] = "SELECT c.change, c.merge_parent, " MERGE_BRANCH
                                   " FROM repos_commit c WHERE c.repo = ? AND c.branch = ?"
                                   " AND c.change > ? AND c.change <= ? AND c.merge_parent <> 0"
                                   " ORDER BY c.change DESC",
    [CN_SQL_REPOS_LOG_COMMIT] = "SELECT c.commit_id, c.parent, c.author, c.message, c.time_ms,"
                                " c.merge_parent, " MERGE_BRANCH ", c.branch FROM repos_commit c"
                                " WHERE c.repo = ? AND c.change = ?",
    [CN_SQL_REPOS_NODE_EVENT] =
        "SELECT e.event, e.from_path FROM repos_event e JOIN repos_commit c"
        " ON c.repo = e.repo AND c.change = e.change AND c.branch = e.branch"
        " WHERE e.repo = ? AND e.change = ? AND e.path = ?",

    [CN_SQL_REPOS_NOTE_LAST_REVISION] = "SELECT COALESCE(MAX(revision), 0) FROM"
                                        " repos_note WHERE repo = ? AND change = ?",
    [CN_SQL_REPOS_NOTE_INSERT] = "INSERT INTO repos_note (repo, " NOTE_COLS ") VALUES (?, ?, ?,"
                                 " ?, ?, ?)",
    [CN_SQL_REPOS_NOTE_LATEST] = "SELECT " NOTE_COLS " FROM repos_note WHERE repo = ?"
                                 " AND change = ? ORDER BY revision DESC LIMIT 1",
    [CN_SQL_REPOS_NOTE_PAGE] = "SELECT " NOTE_COLS " FROM repos_note WHERE repo = ?"
                               " AND change = ? AND revision > ? ORDER BY revision"
                               " LIMIT ?",

    [CN_SQL_REPOS_TREE_NODE_GET] =
        "SELECT enc, aux FROM repos_tree_node WHERE repo = ? AND hash = ?",
    [CN_SQL_REPOS_TREE_NODE_INSERT] =
        "INSERT INTO repos_tree_node (repo, hash, enc, aux) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",

    [CN_SQL_REPOS_BACKUP_BLOBS] = "SELECT blob, MIN(kind) FROM repos_object"
                                  " WHERE repo = ? GROUP BY blob ORDER BY blob",
    [CN_SQL_REPOS_RESTORE_CLAIM] = "SELECT id FROM repos_repo WHERE id = ? OR name = ?",
    [CN_SQL_REPOS_REPO_LOAD] =
        "INSERT INTO repos_repo (" REPO_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_REPO_CLEAR] = "DELETE FROM repos_repo WHERE id = ?",
    [CN_SQL_REPOS_BRANCH_DUMP] = "SELECT " BRANCH_ROW " FROM repos_branch WHERE repo = ?",
    [CN_SQL_REPOS_BRANCH_LOAD_V1] =
        "INSERT INTO repos_branch (repo, id, name, head, name_key, created_ms) VALUES (?1, ?2, ?3,"
        " ?4, ?3, (SELECT created_ms FROM repos_repo WHERE id = ?1))",
    [CN_SQL_REPOS_BRANCH_CLEAR] = "DELETE FROM repos_branch WHERE repo = ?",
    [CN_SQL_REPOS_OBJECT_DUMP] =
        "SELECT repo, kind, id, blob, len, fsize FROM repos_object WHERE repo = ?",
    [CN_SQL_REPOS_OBJECT_LOAD] = "INSERT INTO repos_object (repo, kind, id, blob, len, fsize)"
                                 " VALUES (?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_OBJECT_CLEAR] = "DELETE FROM repos_object WHERE repo = ?",
    [CN_SQL_REPOS_COMMIT_DUMP] = "SELECT " COMMIT_ROW " FROM repos_commit WHERE repo = ?",
    [CN_SQL_REPOS_COMMIT_LOAD_V1] =
        "INSERT INTO repos_commit (repo, change, branch, commit_id, parent, changeset, author,"
        " message, time_ms, content_root, revision_root) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_COMMIT_CLEAR] = "DELETE FROM repos_commit WHERE repo = ?",
    [CN_SQL_REPOS_ROOT_DUMP] =
        "SELECT repo, content_root, revision_root FROM repos_root WHERE repo = ?",
    [CN_SQL_REPOS_ROOT_CLEAR] = "DELETE FROM repos_root WHERE repo = ?",
    [CN_SQL_REPOS_TREE_NODE_DUMP] =
        "SELECT repo, hash, enc, aux FROM repos_tree_node WHERE repo = ?",
    [CN_SQL_REPOS_TREE_NODE_LOAD] =
        "INSERT INTO repos_tree_node (repo, hash, enc, aux) VALUES (?, ?, ?, ?)",
    [CN_SQL_REPOS_TREE_NODE_CLEAR] = "DELETE FROM repos_tree_node WHERE repo = ?",
    [CN_SQL_REPOS_FOLD_DUMP] = "SELECT repo, branch, path, fold FROM repos_fold WHERE repo = ?",
    [CN_SQL_REPOS_FOLD_LOAD] =
        "INSERT INTO repos_fold (repo, branch, path, fold) VALUES (?, ?, ?, ?)",
    [CN_SQL_REPOS_FOLD_CLEAR] = "DELETE FROM repos_fold WHERE repo = ?",
    [CN_SQL_REPOS_EVENT_DUMP] =
        "SELECT repo, branch, path, change, event, from_path FROM repos_event WHERE repo = ?",
    [CN_SQL_REPOS_EVENT_CLEAR] = "DELETE FROM repos_event WHERE repo = ?",
    [CN_SQL_REPOS_OPERATION_DUMP] = "SELECT repo, op, kind, fingerprint, workspace, outcome,"
                                    " created_ms FROM repos_operation WHERE repo = ?",
    [CN_SQL_REPOS_OPERATION_CLEAR] = "DELETE FROM repos_operation WHERE repo = ?",
    [CN_SQL_REPOS_LINEAGE_DUMP] = "SELECT repo, change, path, pred_change, pred_path"
                                  " FROM repos_lineage WHERE repo = ?",
    [CN_SQL_REPOS_LINEAGE_CLEAR] = "DELETE FROM repos_lineage WHERE repo = ?",
    [CN_SQL_REPOS_NOTE_DUMP] = "SELECT repo, " NOTE_COLS " FROM repos_note WHERE repo = ?",
    [CN_SQL_REPOS_NOTE_CLEAR] = "DELETE FROM repos_note WHERE repo = ?",
    [CN_SQL_REPOS_INTENT_CLEAR] = "DELETE FROM repos_intent WHERE repo = ?",
    [CN_SQL_REPOS_PIN_CLEAR] = "DELETE FROM repos_pin WHERE repo = ?",
    [CN_SQL_REPOS_LOCK_CLEAR] = "DELETE FROM repos_lock WHERE repo = ?",

    [CN_SQL_REPOS_LOCK_GET] = "SELECT " LOCK_COLS " FROM repos_lock WHERE repo = ? AND fold = ?",
    [CN_SQL_REPOS_LOCK_INSERT] =
        "INSERT INTO repos_lock (repo, fold, " LOCK_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_LOCK_DELETE] = "DELETE FROM repos_lock WHERE repo = ? AND fold = ?",
    [CN_SQL_REPOS_LOCK_DELETE_OWNED] =
        "DELETE FROM repos_lock WHERE repo = ? AND fold = ? AND workspace = ?",
    [CN_SQL_REPOS_LOCK_PAGE] = "SELECT " LOCK_COLS " FROM repos_lock WHERE repo = ? AND path > ?"
                               " AND (? = 0 OR path = ? OR (path >= ? AND path < ?))"
                               " AND (? = 0 OR workspace = ?) ORDER BY path LIMIT ?",
    [CN_SQL_REPOS_LOCK_OWNED_ANY] =
        "SELECT path FROM repos_lock WHERE repo = ? AND workspace = ? ORDER BY path LIMIT 1",

    [CN_SQL_REPOS_WS_GET] =
        "SELECT " WS_COLS " FROM repos_workspace w WHERE w.repo = ? AND w.id = ?",
    [CN_SQL_REPOS_WS_INSERT] = "INSERT INTO repos_workspace (repo, id, branch, owner, label, tags,"
                               " created_ms, retired_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [CN_SQL_REPOS_WS_UPDATE] =
        "UPDATE repos_workspace SET branch = ?, label = ? WHERE repo = ? AND id = ?",
    [CN_SQL_REPOS_WS_RETIRE] =
        "UPDATE repos_workspace SET retired_ms = ? WHERE repo = ? AND id = ? AND retired_ms = 0",
    [CN_SQL_REPOS_WS_PAGE] = "SELECT " WS_COLS " FROM repos_workspace w WHERE w.repo = ?"
                             " AND w.retired_ms = 0 AND w.id > ? AND (? = 0 OR w.owner = ?)"
                             " ORDER BY w.id LIMIT ?",
    [CN_SQL_REPOS_PIN_DELETE_WORKSPACE] =
        "DELETE FROM repos_pin WHERE repo = ? AND intent IN"
        " (SELECT intent FROM repos_intent WHERE repo = ? AND workspace = ?)",
    [CN_SQL_REPOS_WS_DUMP] = "SELECT repo, id, branch, owner, label, tags, created_ms, retired_ms"
                             " FROM repos_workspace WHERE repo = ?",
    [CN_SQL_REPOS_WS_LOAD] = "INSERT INTO repos_workspace (repo, id, branch, owner, label, tags,"
                             " created_ms, retired_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                             " ON CONFLICT DO NOTHING",
    [CN_SQL_REPOS_WS_CLEAR_LIVE] = "DELETE FROM repos_workspace WHERE repo = ? AND retired_ms = 0",
    [CN_SQL_REPOS_WS_SET_OWNER] =
        "UPDATE repos_workspace SET owner = ? WHERE repo = ? AND id = ? AND owner IS NULL",
    [CN_SQL_REPOS_OPERATION_WORKSPACE] =
        "SELECT workspace FROM repos_operation WHERE repo = ? AND op = ?",
};

/* A padded list: variable-width keys (case folds: a canonical path, and so
 * its fold, holds no NUL) padded with NUL bytes to the list's width, the
 * parameter w.  SQLite walks the packed list by w (SQ_PADDED: rows p(i, d))
 * and cuts the padding without ||, which would make text of the blob;
 * PostgreSQL's array carries each key's length, checked to be w
 * (PG_PADDED: rows k(d, i); PG_WIDTH: the check), and cuts the padding at
 * the first NUL. */
#define SQ_PADDED(w)                                                                    \
    "WITH RECURSIVE k(i) AS (SELECT 0 WHERE length(?1) >= " w " UNION ALL SELECT i + 1" \
    " FROM k WHERE (i + 2) * " w " <= length(?1)),"                                     \
    " p(i, d) AS (SELECT i, substr(?1, i * " w " + 1, " w ") FROM k)"
#define SQ_UNPAD(w) \
    "substr(p.d, 1, CASE instr(p.d, x'00') WHEN 0 THEN " w " ELSE instr(p.d, x'00') - 1 END)"
#define PG_PADDED "unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
#define PG_WIDTH(w) "octet_length(k.d) = " w
#define PG_UNPAD "substring(k.d FROM 1 FOR position('\\x00'::bytea IN k.d || '\\x00'::bytea) - 1)"

/* As the blobs file's batch statements (src/meta/sql/blobs.c): SQLite
 * walks the packed ids with a recursive CTE, PostgreSQL unnests a bytea[];
 * the primary key (repo, kind, id) gives one row per position at most. */
const cn_meta_batch_sql_t cn__sql_repos_batch[CN_SQL_REPOS_BATCH_COUNT] = {
    [CN_SQL_REPOS_BATCH_OBJECT_FIND] = {
        .sqlite = "WITH RECURSIVE k(i) AS (SELECT 0 WHERE length(?1) >= 32"
                  " UNION ALL SELECT i + 1 FROM k WHERE (i + 2) * 32 <= length(?1))"
                  " SELECT k.i, m.blob, m.fsize FROM k JOIN repos_object m ON m.repo = ?2"
                  " AND m.kind = ?3 AND m.id = substr(?1, k.i * 32 + 1, 32)",
        .pg = "SELECT k.i - 1, m.blob, m.fsize FROM unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
              " JOIN repos_object m ON m.repo = ?2 AND m.kind = ?3 AND m.id = k.d",
    },
    /* A key is the kind's byte then the id (33 bytes): SQLite reads the
     * byte as a number through unicode() (exact for the kinds, 1..3, all
     * below 0x80), PostgreSQL through get_byte; either way the key's parts
     * are expressions of the list alone, so the primary key is probed. */
    [CN_SQL_REPOS_BATCH_OBJECT_GET] = {
        .sqlite = "WITH RECURSIVE k(i) AS (SELECT 0 WHERE length(?1) >= 33"
                  " UNION ALL SELECT i + 1 FROM k WHERE (i + 2) * 33 <= length(?1))"
                  " SELECT k.i, m.blob, m.len FROM k JOIN repos_object m ON m.repo = ?2"
                  " AND m.kind = unicode(CAST(substr(?1, k.i * 33 + 1, 1) AS TEXT))"
                  " AND m.id = substr(?1, k.i * 33 + 2, 32)",
        .pg = "SELECT k.i - 1, m.blob, m.len FROM unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
              " JOIN repos_object m ON m.repo = ?2 AND m.kind = get_byte(k.d, 0)"
              " AND m.id = substring(k.d FROM 2)",
    },
    /* Tree nodes by hash (service_tree.c's prefetch): a level of the
     * descents of many paths in one statement. */
    [CN_SQL_REPOS_BATCH_TREE_NODE_GET] = {
        .sqlite = "WITH RECURSIVE k(i) AS (SELECT 0 WHERE length(?1) >= 32"
                  " UNION ALL SELECT i + 1 FROM k WHERE (i + 2) * 32 <= length(?1))"
                  " SELECT k.i, n.enc, n.aux FROM k JOIN repos_tree_node n ON n.repo = ?2"
                  " AND n.hash = substr(?1, k.i * 32 + 1, 32)",
        .pg = "SELECT k.i - 1, n.enc, n.aux FROM unnest(?1::bytea[]) WITH ORDINALITY AS k(d, i)"
              " JOIN repos_tree_node n ON n.repo = ?2 AND n.hash = k.d",
    },
    /* Padded lists (SQ_PADDED, PG_UNPAD above): the (repo, branch, fold)
     * index is probed for each fold. */
    [CN_SQL_REPOS_BATCH_FOLD_COUNT] = {
        .sqlite = SQ_PADDED("?4") " SELECT p.i, (SELECT COUNT(*) FROM repos_fold f"
                  " WHERE f.repo = ?2 AND f.branch = ?3 AND f.fold = " SQ_UNPAD("?4") ") FROM p",
        .pg = "SELECT k.i - 1, (SELECT COUNT(*) FROM repos_fold f WHERE f.repo = ?2"
              " AND f.branch = ?3 AND f.fold = " PG_UNPAD ") FROM " PG_PADDED " WHERE " PG_WIDTH("?4"),
    },
    /* The lock of each fold, by the primary key (repo, fold). */
    [CN_SQL_REPOS_BATCH_LOCK_GET] = {
        .sqlite = SQ_PADDED("?3") " SELECT p.i, l.workspace FROM p JOIN repos_lock l"
                  " ON l.repo = ?2 AND l.fold = " SQ_UNPAD("?3"),
        .pg = "SELECT k.i - 1, l.workspace FROM " PG_PADDED " JOIN repos_lock l"
              " ON l.repo = ?2 AND l.fold = " PG_UNPAD " WHERE " PG_WIDTH("?3"),
    },
};

static const struct {
    const char *head, *row, *tail;
    int cols;
} repos_rows[CN_SQL_REPOS_ROWS_COUNT] = {
    [CN_SQL_REPOS_ROWS_TREE_NODE] = { "INSERT INTO repos_tree_node (repo, hash, enc, aux) VALUES ",
                                      ", (?, ?, ?, ?)", " ON CONFLICT DO NOTHING", 4 },
    [CN_SQL_REPOS_ROWS_EVENT] = { "INSERT INTO repos_event (repo, branch, path, change, event,"
                                  " from_path) VALUES ",
                                  ", (?, ?, ?, ?, ?, ?)", "", 6 },
    [CN_SQL_REPOS_ROWS_LINEAGE] = { "INSERT INTO repos_lineage (repo, change, path, pred_change,"
                                    " pred_path) VALUES ",
                                    ", (?, ?, ?, ?, ?)", " ON CONFLICT DO NOTHING", 5 },
    [CN_SQL_REPOS_ROWS_LOCK] = { "INSERT INTO repos_lock (repo, fold, " LOCK_COLS ") VALUES ",
                                 ", (?, ?, ?, ?, ?, ?, ?)", "", 7 },
    [CN_SQL_REPOS_ROWS_FOLD] = { "INSERT INTO repos_fold (repo, branch, path, fold) VALUES ",
                                 ", (?, ?, ?, ?)", " ON CONFLICT DO NOTHING", 4 },
};

char *cn__sql_repos_rows(int which, uint32_t rows)
{
    if (which < 0 || which >= CN_SQL_REPOS_ROWS_COUNT)
        return NULL;
    return cn__sql_rows_text(repos_rows[which].head, repos_rows[which].row, repos_rows[which].tail,
                             rows, CN_SQL_REPOS_ROWS_MAX);
}

int cn__sql_repos_rows_cols(int which)
{
    return which >= 0 && which < CN_SQL_REPOS_ROWS_COUNT ? repos_rows[which].cols : 0;
}

char *cn__sql_repos_object_insert_rows(uint32_t rows)
{
    return cn__sql_rows_text("INSERT INTO repos_object (repo, kind, id, blob, len, fsize) VALUES ",
                             ", (?, ?, ?, ?, ?, ?)", " ON CONFLICT DO NOTHING RETURNING kind, id",
                             rows, CN_SQL_REPOS_OBJECT_ROWS_MAX);
}

const cn_sql_set_t cn__sql_repos_set = {
    "repos", schema, sizeof schema / sizeof schema[0], cn__sql_repos, CN_SQL_REPOS_COUNT, NULL,
};
