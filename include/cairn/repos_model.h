/* cairn repos model: the canonical, versioned encodings of repository objects
 * (chunk, manifest, change set, commit), their ids, canonical paths with
 * case-fold alias detection, operation fingerprints, and the snapshot tree's
 * entries, node encoding and full-tree proof verifier (the tree itself, an
 * authenticated radix tree with a content root and a revision root, lives in
 * the repos service).  docs/protocol/scribe.md is the normative description.
 *
 * Everything here is pure: no files, no SQL, no sockets, no clocks, no
 * global state.  Parsers never allocate: they validate a whole encoding and
 * hand out borrowed views into the caller's bytes.  Object encodings are
 * always little-endian, whatever wire codec carried them, so ids and
 * fingerprints never depend on the transport.
 */
#ifndef CAIRN_REPOS_MODEL_H
#define CAIRN_REPOS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- object kinds and limits -------------------------------------------- */
typedef enum {
    CN_REPOS_CHUNK = 1,
    CN_REPOS_MANIFEST = 2,
    CN_REPOS_CHANGESET = 3,
    CN_REPOS_COMMIT = 4,
} cn_repos_kind_t;

#define CN_REPOS_OBJECT_VERSION 1   /* first byte of every structured object */
#define CN_REPOS_MAX_PATH 8192      /* canonical path bytes */
#define CN_REPOS_MAX_CHUNK 4194304u /* 4 MiB; chunks are 1..this bytes */
#define CN_REPOS_MAX_MANIFEST_CHUNKS 1048576u
#define CN_REPOS_MANIFEST_HDR 13u  /* version, u64 size, u32 count */
#define CN_REPOS_CHUNK_REF_LEN 36u /* [32] id, u32 length */
#define CN_REPOS_MAX_MANIFEST_LEN \
    (CN_REPOS_MANIFEST_HDR + CN_REPOS_CHUNK_REF_LEN * CN_REPOS_MAX_MANIFEST_CHUNKS)
#define CN_REPOS_MAX_CHANGESET_ENTRIES 1048576u
#define CN_REPOS_MAX_CHANGESET_LEN 268435456u /* 256 MiB */
#define CN_REPOS_MAX_AUTHOR 256
#define CN_REPOS_MAX_MESSAGE 65536
/* version + repo + branch + change + nparents + 2 parents + change set + author
 * + message + time + two roots + pick provenance */
#define CN_REPOS_MAX_COMMIT_LEN                                                                \
    (1u + 16 + 16 + 8 + 1 + 64 + 32 + 2 + CN_REPOS_MAX_AUTHOR + 4 + CN_REPOS_MAX_MESSAGE + 8 + \
     64 + 1 + 16 + 8)

/* Largest encoding a kind may have (CN_REPOS_MAX_* above); 0 for an unknown kind. */
CN_API uint64_t cn_repos_kind_max_len(uint8_t kind);

/* File modes of a tree entry. */
enum {
    CN_REPOS_MODE_FILE = 0,
    CN_REPOS_MODE_EXEC = 1,
    CN_REPOS_MODE_SYMLINK = 2
};

/* ---- ids ------------------------------------------------------------------
 * chunk: BLAKE3(bytes).  Structured kinds: BLAKE3(domain prefix || encoding),
 * prefixes "cairn:manifest:v1\0", "cairn:changeset:v1\0", "cairn:commit:v1\0".
 * The streaming form lets a receiver hash while bytes arrive: id_init, then
 * cn_blake3_update with the encoding, then cn_blake3_final.
 * Unknown kind: CN_E_INVALID (and the hasher is left uninitialised). */
CN_API cn_err_t cn_repos_id_init(cn_blake3_t *h, uint8_t kind);
CN_API cn_err_t cn_repos_object_id(uint8_t kind, const void *p, size_t n, cn_digest_t *out);

/* ---- canonical paths ------------------------------------------------------
 * Valid UTF-8 (no overlong forms, no surrogates, <= U+10FFFF), no NUL and no
 * other C0 control or DEL, '/'-separated, not starting or ending with '/', no
 * empty, "." or ".." segment, 1..8192 bytes.  CN_E_INVALID otherwise. */
CN_API cn_err_t cn_repos_path_check(const uint8_t *p, size_t n);
/* Strict UTF-8 check used by every string field (CN_E_INVALID). */
CN_API cn_err_t cn_repos_utf8_check(const uint8_t *p, size_t n);
/* Case-fold v1 of a valid UTF-8 string into out (cap >= n suffices: no
 * fold in the table makes a character longer).  Returns the folded
 * length, or CN_E_INVALID for invalid UTF-8, CN_E_TOO_LARGE if cap is short. */
CN_API long cn_repos_path_fold(const uint8_t *p, size_t n, uint8_t *out, size_t cap);
/* The fold of one code point (the simple case-folding table of the doc). */
CN_API uint32_t cn_repos_fold_cp(uint32_t cp);
/* True when a and b are different paths whose folds are equal (an alias
 * that case-insensitive file systems cannot hold side by side).  Both must be
 * valid UTF-8; allocation-free. */
CN_API bool cn_repos_path_alias(const uint8_t *a, size_t an, const uint8_t *b, size_t bn);

/* ---- manifest ------------------------------------------------------------- */
typedef struct cn_repos_chunk_ref {
    cn_digest_t id;
    uint32_t len;
} cn_repos_chunk_ref_t;
typedef struct cn_repos_manifest {
    uint64_t size; /* file size: the sum of the chunk lengths */
    uint32_t count;
    const uint8_t *refs; /* borrowed: count * 36 bytes */
} cn_repos_manifest_t;

/* Appends the canonical encoding; CN_E_INVALID for a chunk length of 0 or
 * above CN_REPOS_MAX_CHUNK or too many chunks, -ENOMEM. */
CN_API cn_err_t cn_repos_manifest_encode(cn_buf_t *out, const cn_repos_chunk_ref_t *chunks,
                                         uint32_t count);
/* Validates a whole encoding (CN_E_INVALID) and returns a borrowed view. */
CN_API cn_err_t cn_repos_manifest_parse(const uint8_t *p, size_t n, cn_repos_manifest_t *out);
CN_API void cn_repos_manifest_chunk(const cn_repos_manifest_t *m, uint32_t i,
                                    cn_repos_chunk_ref_t *out);

/* ---- change set ----------------------------------------------------------- */
typedef enum {
    CN_REPOS_ADD = 1,
    CN_REPOS_MODIFY = 2,
    CN_REPOS_DELETE = 3,
    CN_REPOS_MOVE = 4,
    CN_REPOS_KEEP = 5,
} cn_repos_change_kind_t;

typedef struct cn_repos_change {
    uint8_t kind;
    const uint8_t *path; /* destination path for a move; borrowed */
    uint16_t path_len;
    const uint8_t *from; /* move only */
    uint16_t from_len;
    cn_digest_t manifest; /* add, modify, move */
    uint8_t mode;         /* add, modify, move */
} cn_repos_change_t;

typedef struct cn_repos_changeset {
    uint32_t count;
    const uint8_t *entries; /* borrowed: the encoded entries */
    size_t entries_len;
} cn_repos_changeset_t;

typedef struct cn_repos_changeset_iter {
    cn_rd_t rd;
    uint32_t left;
} cn_repos_changeset_iter_t;

/* Encodes entries (which must already be in canonical order) after checking
 * them with the same rules as parse + validate.  CN_E_INVALID, -ENOMEM. */
CN_API cn_err_t cn_repos_changeset_encode(cn_buf_t *out, const cn_repos_change_t *e,
                                          uint32_t count);
/* Structural check of a whole encoding without allocating: version, count
 * 1..CN_REPOS_MAX_CHANGESET_ENTRIES, kinds, modes, canonical paths, strictly
 * ascending destination paths, move source != destination, no trailing bytes. */
CN_API cn_err_t cn_repos_changeset_parse(const uint8_t *p, size_t n, cn_repos_changeset_t *out);
/* Cross-entry rules of a parsed change set; allocates O(count) scratch and
 * frees it before returning: every path named (destinations and move
 * sources) distinct, no two destinations of add/modify/move case-fold aliases
 * of each other, no destination a directory prefix of another destination.
 * CN_E_INVALID, -ENOMEM. */
CN_API cn_err_t cn_repos_changeset_validate(const cn_repos_changeset_t *cs);
CN_API void cn_repos_changeset_iter(const cn_repos_changeset_t *cs, cn_repos_changeset_iter_t *it);
/* Next entry (borrowed pointers into the encoding); false at the end. */
CN_API bool cn_repos_changeset_next(cn_repos_changeset_iter_t *it, cn_repos_change_t *out);

/* ---- commit --------------------------------------------------------------- */
typedef struct cn_repos_commit {
    uint8_t repository[16];
    uint8_t branch[16];
    uint64_t change;
    uint8_t parent_count; /* 0..2: first parent, then merge parent */
    cn_digest_t parents[2];
    cn_digest_t changeset;
    const uint8_t *author; /* borrowed UTF-8, <= 256 bytes */
    uint16_t author_len;
    const uint8_t *message; /* borrowed UTF-8, <= 65536 bytes */
    uint32_t message_len;
    uint64_t time_ms;
    cn_digest_t content_root;
    cn_digest_t revision_root;
    bool has_pick; /* cherry-pick provenance */
    uint8_t pick_branch[16];
    uint64_t pick_change;
} cn_repos_commit_t;

CN_API cn_err_t cn_repos_commit_encode(cn_buf_t *out, const cn_repos_commit_t *c);
CN_API cn_err_t cn_repos_commit_parse(const uint8_t *p, size_t n, cn_repos_commit_t *out);

/* ---- operation fingerprints ------------------------------------------------
 * The identity of a submit's intent, independent of adapter and codec:
 * BLAKE3("cairn:submit-operation:v1\0" || repository || incarnation || branch
 * || workspace || u64le base || change set || u8 keep_locks || u32le message
 * length || message).  The author is excluded (attribution is not intent). */
typedef struct cn_repos_submit_intent {
    uint8_t repository[16];
    uint8_t incarnation[16];
    uint8_t branch[16];
    uint8_t workspace[16];
    uint64_t base;
    cn_digest_t changeset;
    bool keep_locks;
    const uint8_t *message;
    uint32_t message_len;
} cn_repos_submit_intent_t;

CN_API void cn_repos_submit_fingerprint(const cn_repos_submit_intent_t *s, cn_digest_t *out);

/* ---- the merge base (docs/protocol/scribe.md 7.9) --------------------------
 * One rule for client and server: to merge a source revision into a target
 * revision, walk the source's first-parent chain down from its commit; the
 * base is the newest commit on that chain that is in the ancestry of the
 * target's commit (every parent followed, the commit itself included), or 0
 * (the empty snapshot) when none is.  Commits are named by their change
 * numbers, which are repository-wide and always larger than their parents'
 * (0 names no commit), so the ancestry is expanded newest first and only as
 * far down as the chain has come: the cost is the commits newer than the
 * base, never the whole history. */
typedef cn_err_t (*cn_repos_parents_fn)(void *ctx, uint64_t change, uint64_t *first,
                                        uint64_t *merge);
/* The merge base of source into target (commit changes, 0 = empty) in *base.
 * parents() answers a commit's first and merge parents (0 = none); it is
 * called at most `budget` times (CN_E_LIMIT beyond: never a guess).  Errors:
 * CN_E_LIMIT, CN_E_CORRUPT (a parent not below its child), -ENOMEM, or
 * parents()'s error. */
CN_API cn_err_t cn_repos_merge_base(uint64_t target, uint64_t source, cn_repos_parents_fn parents,
                                    void *ctx, uint64_t budget, uint64_t *base);

/* ---- snapshot tree entries -------------------------------------------------
 * The snapshot tree is a path-compressed 256-ary radix tree over canonical
 * path bytes holding every path the branch ever had: live entries and
 * tombstones.  Two commitments: the revision root (hash of the root node
 * encoding, over all entries and summaries) and the content root (over live
 * entries only, independent of tombstones and history).  The repos service
 * keeps it (src/repos/service_tree.c); this header has its entries, its node
 * encoding and the proof verifier, which need no tree. */
enum {
    CN_REPOS_NONE = 0,
    CN_REPOS_LIVE = 1,
    CN_REPOS_TOMBSTONE = 2
};

typedef struct cn_repos_entry {
    uint8_t state;        /* CN_REPOS_LIVE or CN_REPOS_TOMBSTONE */
    uint8_t mode;         /* live only */
    uint64_t change;      /* the change that last set or deleted the path */
    uint64_t size;        /* live only */
    cn_digest_t manifest; /* live only */
} cn_repos_entry_t;

/* ---- tree nodes and proofs -------------------------------------------------
 * A node's canonical encoding (docs/protocol/scribe.md, "Snapshot tree").
 * child summaries are borrowed from the encoding. */
#define CN_REPOS_NODE_CHILD_LEN 57u /* byte, [32] hash, 3 x u64 */
typedef struct cn_repos_node {
    const uint8_t *prefix;
    uint16_t prefix_len;
    uint8_t entry_state; /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    cn_repos_entry_t entry;
    uint64_t entries, live, highest;
    const uint8_t *lo;
    uint16_t lo_len;
    const uint8_t *hi;
    uint16_t hi_len;
    uint16_t child_count;
    const uint8_t *children; /* child_count * 57 bytes */
} cn_repos_node_t;
typedef struct cn_repos_node_child {
    uint8_t byte;
    cn_digest_t hash;
    uint64_t entries, live, highest;
} cn_repos_node_child_t;

CN_API cn_err_t cn_repos_node_parse(const uint8_t *p, size_t n, cn_repos_node_t *out);
CN_API void cn_repos_node_child(const cn_repos_node_t *nd, uint16_t i, cn_repos_node_child_t *out);
/* BLAKE3("cairn:tree-node:v1\0" || encoding). */
CN_API void cn_repos_node_hash(const uint8_t *p, size_t n, cn_digest_t *out);

/* Verifies a full-tree proof (every node in depth-first pre-order, each as
 * u32le length || node encoding) against a trusted revision root: every node's
 * hash and summaries against its parent, canonical structure, ordering, key
 * lengths, and no surplus bytes; recomputes the content root.  Allocates a
 * stack bounded by the path limit.  CN_E_INVALID / CN_E_DIGEST_MISMATCH. */
CN_API cn_err_t cn_repos_tree_proof_verify(const uint8_t *p, size_t n,
                                           const cn_digest_t *revision_root,
                                           cn_digest_t *content_root, uint64_t *live);

/* ---- fragmented proofs: the query's visitation (docs/protocol/scribe.md 17.3) ----
 * One rule for the producer (the repos service) and the verifier (libcairn):
 * which child a proof enters and which entry it selects. */
enum {
    CN_REPOS_PROOF_LIVE = 0,    /* live range */
    CN_REPOS_PROOF_CHANGED = 1, /* changed range: change > lower, tombstones included */
    CN_REPOS_PROOF_EXACT = 2,   /* the prefix itself */
    CN_REPOS_PROOF_PATHS = 3    /* listed paths */
};
#define CN_REPOS_PROOF_MAX_NODES 8192u    /* nodes per fragment */
#define CN_REPOS_PROOF_MAX_BYTES 8388608u /* node bytes per fragment */
#define CN_REPOS_PROOF_MAX_PATHS 4096u    /* listed paths */
typedef struct cn_repos_pathref {
    const uint8_t *p;
    uint16_t len;
} cn_repos_pathref_t;
typedef struct cn_repos_proof_query {
    uint8_t selector;
    uint64_t lower;        /* selector 1 */
    const uint8_t *prefix; /* tree_page prefix ("" allowed except for 2) */
    size_t prefix_len;
    const uint8_t *after; /* tree_page cursor, NULL: none */
    size_t after_len;
    uint32_t limit;                  /* L: clamped for 0-1, the path count for 3, 1 for 2 */
    const cn_repos_pathref_t *paths; /* selector 3: strictly ascending */
    uint32_t npaths;
} cn_repos_proof_query_t;
/* Whether the proof enters child c of the node whose full key is key. */
CN_API bool cn_repos_proof_enters(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen,
                                  const cn_repos_node_child_t *c);
/* Whether the entry e (state NONE: never) at full key key is a selected value. */
CN_API bool cn_repos_proof_selects(const cn_repos_proof_query_t *q, const uint8_t *key, size_t klen,
                                   const cn_repos_entry_t *e);

#define CN_REPOS_BRANCH_NAME_MAX 256 /* branch name bytes (docs/protocol/scribe.md 7.8) */

/* The branch name rule: 1..256 bytes of ASCII letters, digits, '-', '_',
 * '.' and '/'; '/'-separated segments, none empty and none starting with
 * '.'; the first byte is not '-'.  Uniqueness (ignoring ASCII case, within a
 * repository) is checked by the mutation. */
CN_API bool cn_repos_branch_name_ok(const char *name, size_t len);

#ifdef __cplusplus
}
#endif
#endif
