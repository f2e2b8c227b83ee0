/* The snapshot-tree node codec (docs/protocol/scribe.md 10.4 and 10.5): the
 * node encoding, the node (revision) hash, the content hashes, and how a
 * node's summaries follow from its entry and its children.  The proof
 * verifier (model_tree_proof.c), the persistent tree (service_tree.c) and the
 * tests' in-memory oracle tree (tests/repos/oracle_tree*.c) all encode and
 * hash through here, so the bytes have one definition.  It must never walk a
 * tree, read storage or keep state: a caller describes one node at a time.
 * (The parser, cn_repos_node_parse, stays beside the verifier that relies on
 * it.)  Never included from another module; the oracle tree under tests/
 * is the one outside user. */
#ifndef CN_REPOS_MODEL_TREE_CODEC_H
#define CN_REPOS_MODEL_TREE_CODEC_H

#include "cairn/repos_model.h"

/* What a parent's encoding records of a child (with the child's first edge
 * byte), and what a finished node knows of itself. */
typedef struct cn__tree_sum {
    uint64_t entries;    /* entries under the node, its own and tombstones included */
    uint64_t live;       /* live entries under the node */
    uint64_t highest;    /* highest change under the node (0: none) */
    cn_digest_t rev;     /* node hash of its encoding */
    cn_digest_t content; /* content hash; meaningful only when live > 0 */
} cn__tree_sum_t;

/* The i-th child (ascending by first edge byte) of a described node: sets
 * *byte and returns its summary, which must stay valid during the call. */
typedef const cn__tree_sum_t *(*cn__tree_kid_fn)(const void *kids, uint16_t i, uint8_t *byte);

/* One node described plainly; every pointer is borrowed for the call. */
typedef struct cn__tree_node {
    const uint8_t *prefix; /* edge bytes from the parent (root: none) */
    uint16_t plen;
    uint8_t state;             /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    const cn_repos_entry_t *e; /* read only when state is not NONE */
    const uint8_t *lo, *hi;    /* key bounds as the bytes after the node's key */
    uint16_t lo_len, hi_len;
    uint16_t nkids;
    cn__tree_kid_fn kid; /* called only for i < nkids */
    const void *kids;    /* handed to kid */
} cn__tree_node_t;

/* Copies e into *dst as a node holds it: a tombstone carries only its change
 * (and state), so its other fields read as zero. */
void cn__tree_entry_set(cn_repos_entry_t *dst, const cn_repos_entry_t *e);

/* Entry hash E of a live entry at its full key. */
void cn__tree_content_entry(const uint8_t *key, size_t n, const cn_repos_entry_t *e,
                            cn_digest_t *out);
/* Content root of a tree with nothing live. */
void cn__tree_content_empty(cn_digest_t *out);

/* Content hash of one node, fed the contents of its children that have
 * live entries.  begin takes the node's E (NULL: it holds no live entry)
 * and how many such children there are; add then takes their contents in
 * order (count digests, contiguous); end sets *out and returns true, or
 * returns false when the node has no content (out untouched). */
typedef struct cn__tree_content {
    cn_blake3_t h;    /* in use when hashed */
    cn_digest_t only; /* otherwise the content: E, or the one child's */
    bool hashed, has;
} cn__tree_content_t;
void cn__tree_content_begin(cn__tree_content_t *c, const cn_digest_t *entry, uint16_t nlive);
void cn__tree_content_add(cn__tree_content_t *c, const uint8_t *kids, size_t count);
bool cn__tree_content_end(const cn__tree_content_t *c, cn_digest_t *out);

/* Appends n's canonical encoding, with self's entries, live and highest as
 * its own summaries (-ENOMEM; b may then hold part of it). */
cn_err_t cn__tree_node_encode(cn_buf_t *b, const cn__tree_node_t *n, const cn__tree_sum_t *self);
/* Finishes a node whose children's summaries are current: derives its
 * summaries and content hash from its entry (key: its full key, for E) and
 * children, appends its encoding to enc and sets *out, rev included.
 * -ENOMEM leaves enc and *out as they were. */
cn_err_t cn__tree_node_finish(const cn__tree_node_t *n, const uint8_t *key, size_t klen,
                              cn_buf_t *enc, cn__tree_sum_t *out);

/* The order of keys and paths (10.1): raw bytes, a proper prefix first. */
int cn__bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn);

#endif
