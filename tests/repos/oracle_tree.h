/* The in-memory snapshot tree: a test oracle, never part of libcairn.
 * A path-compressed 256-ary radix tree over canonical path bytes holding
 * every path the branch ever had (live entries and tombstones), with the
 * same node encoding and the same two commitments as the persistent tree of
 * src/repos/service_tree.c (both encode and hash through
 * src/repos/model_tree_codec.h).  Tests build the expected roots here and
 * compare them with what the service stored; the fuzz harness rebuilds a
 * verified proof and re-emits it.  It must never be linked into src/: the
 * server keeps exactly one snapshot-tree implementation.
 * Not thread-safe: one tree, one thread at a time. */
#ifndef ORACLE_TREE_H
#define ORACLE_TREE_H

#include "cairn/repos_model.h"

typedef struct oracle_tree oracle_tree_t;

cn_err_t oracle_tree_new(oracle_tree_t **out); /* -ENOMEM */
void oracle_tree_free(oracle_tree_t *t);       /* accepts NULL */
/* Inserts or replaces the entry at a canonical path (CN_E_INVALID for a bad
 * path or entry, -ENOMEM; on -ENOMEM the tree is unchanged). */
cn_err_t oracle_tree_put(oracle_tree_t *t, const uint8_t *path, size_t n,
                         const cn_repos_entry_t *e);
/* Looks up an exact path; false when the tree never held it. */
bool oracle_tree_get(const oracle_tree_t *t, const uint8_t *path, size_t n, cn_repos_entry_t *out);
uint64_t oracle_tree_entries(const oracle_tree_t *t); /* incl. tombstones */
uint64_t oracle_tree_live(const oracle_tree_t *t);
/* Re-hashes dirty nodes and returns both roots (-ENOMEM). */
cn_err_t oracle_tree_roots(oracle_tree_t *t, cn_digest_t *content, cn_digest_t *revision);
/* Number of node encodings the last oracle_tree_roots call computed. */
uint64_t oracle_tree_rehashed(const oracle_tree_t *t);

/* oracle_tree_roots that also hands every node it re-encoded to emit (hash,
 * encoding; borrowed for the call): exactly the nodes a store must add for
 * the new snapshot.  An error from emit stops the walk and is returned (the
 * tree stays usable; call again to recompute). */
typedef cn_err_t (*oracle_node_fn)(void *ctx, const cn_digest_t *hash, const uint8_t *enc,
                                   size_t n);
cn_err_t oracle_tree_roots_emit(oracle_tree_t *t, cn_digest_t *content, cn_digest_t *revision,
                                oracle_node_fn emit, void *ctx);
/* Rebuilds a tree from a store: fetch appends to out (handed over empty) the
 * encoding of the node with that hash, or fails (CN_E_NOT_FOUND, ...).  Every
 * node is verified as a full-tree proof against revision_root before the tree
 * is built (CN_E_DIGEST_MISMATCH, CN_E_INVALID); costs O(nodes).  *out is
 * owned by the caller. */
typedef cn_err_t (*oracle_fetch_fn)(void *ctx, const cn_digest_t *hash, cn_buf_t *out);
cn_err_t oracle_tree_load(oracle_tree_t **out, const cn_digest_t *revision_root,
                          oracle_fetch_fn fetch, void *ctx);
/* Builds a tree from a full-tree proof (oracle_tree_proof_full), verified
 * with cn_repos_tree_proof_verify first. */
cn_err_t oracle_tree_from_proof(oracle_tree_t **out, const uint8_t *p, size_t n,
                                const cn_digest_t *revision_root);

/* Size of a manifest, for oracle_tree_apply (0 or a negative cn_err_t). */
typedef cn_err_t (*oracle_size_fn)(void *ctx, const cn_digest_t *manifest, uint64_t *size);
/* Applies a parsed, validated change set as change `change`: add/modify/move
 * destination become live (move source a tombstone), delete becomes a
 * tombstone, keep leaves the entry alone.  Checks against the tree: add needs
 * a path that is not live, modify/delete/move source a live one, keep any path
 * the tree holds; no live path may become a case-fold alias or a directory
 * prefix of another.  CN_E_CONFLICT on a violated rule (tree unchanged),
 * the callback's error, -ENOMEM. */
cn_err_t oracle_tree_apply(oracle_tree_t *t, const cn_repos_changeset_t *cs, uint64_t change,
                           oracle_size_fn size, void *ctx);

/* Visits entries in ascending path order (path is a scratch buffer valid
 * during the call); a nonzero return stops the walk and is returned. */
typedef int (*oracle_walk_fn)(void *ctx, const uint8_t *path, size_t n, const cn_repos_entry_t *e);
int oracle_tree_walk(const oracle_tree_t *t, oracle_walk_fn fn, void *ctx);

/* A full-tree proof (every node in depth-first pre-order, each as u32le
 * length || node encoding; the format cn_repos_tree_proof_verify checks).
 * Computes roots first (-ENOMEM). */
cn_err_t oracle_tree_proof_full(oracle_tree_t *t, cn_buf_t *out);

#endif
