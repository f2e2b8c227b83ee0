/* libFuzzer harness: the object-model parsers that validate uploaded bytes
 * (put_objects) and tree proofs.  Input: a selector byte (1 manifest, 2
 * change set, 3 commit, 4 tree node, 5 full-tree proof against the root the
 * first node hashes to, 6 path rules), then the bytes.  Invariants: parsers
 * stay inside their input; an accepted manifest, change set or commit
 * re-encodes to the input; a change set's iterator yields its count; a
 * verified proof rebuilds a tree (the tests' in-memory oracle,
 * tests/repos/oracle_tree.h) that re-emits exactly that proof. */
#include "fuzz_scribe_common.h"
#include "cairn/repos_model.h"
#include "../tests/repos/oracle_tree.h"

static cn_repos_chunk_ref_t refs[65536];
static cn_repos_change_t entries[65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    cn_buf_t b = { 0 };
    switch (data[0]) {
    case 1: {
        cn_repos_manifest_t m;
        if (cn_repos_manifest_parse(p, n, &m) == CN_OK && m.count <= 65536) {
            for (uint32_t i = 0; i < m.count; i++)
                cn_repos_manifest_chunk(&m, i, &refs[i]);
            if (cn_repos_manifest_encode(&b, refs, m.count) != CN_OK)
                abort();
            fz_same(&b, p, n);
        }
        break;
    }
    case 2: {
        cn_repos_changeset_t cs;
        if (cn_repos_changeset_parse(p, n, &cs) == CN_OK) {
            cn_repos_changeset_iter_t it;
            cn_repos_changeset_iter(&cs, &it);
            uint32_t k = 0;
            while (k < 65536 && cn_repos_changeset_next(&it, &entries[k]))
                k++;
            if (cs.count <= 65536 && k != cs.count)
                abort();
            if (cn_repos_changeset_validate(&cs) == CN_OK && cs.count <= 65536) {
                if (cn_repos_changeset_encode(&b, entries, cs.count) != CN_OK)
                    abort();
                fz_same(&b, p, n);
            }
        }
        break;
    }
    case 3: {
        cn_repos_commit_t c;
        if (cn_repos_commit_parse(p, n, &c) == CN_OK) {
            if (cn_repos_commit_encode(&b, &c) != CN_OK)
                abort();
            fz_same(&b, p, n);
        }
        break;
    }
    case 4: {
        cn_repos_node_t nd;
        if (cn_repos_node_parse(p, n, &nd) == CN_OK) {
            cn_repos_node_child_t ch;
            for (uint16_t i = 0; i < nd.child_count; i++)
                cn_repos_node_child(&nd, i, &ch);
        }
        break;
    }
    case 5: {
        if (n < 4)
            break;
        uint32_t l =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (l > n - 4)
            break;
        cn_digest_t root, content;
        uint64_t live;
        cn_repos_node_hash(p + 4, l, &root);
        if (cn_repos_tree_proof_verify(p, n, &root, &content, &live) == CN_OK) {
            /* A verified proof is canonical: it rebuilds to the same roots
             * and re-emits byte for byte. */
            oracle_tree_t *t = NULL;
            if (oracle_tree_from_proof(&t, p, n, &root) != CN_OK)
                abort();
            if (oracle_tree_proof_full(t, &b) != CN_OK || oracle_tree_live(t) != live)
                abort();
            fz_same(&b, p, n);
            oracle_tree_free(t);
        }
        break;
    }
    case 6: {
        bool ok = cn_repos_path_check(p, n) == CN_OK;
        if (ok &&
            (n == 0 || n > CN_REPOS_MAX_PATH || p[0] == '/' || p[n - 1] == '/' || memchr(p, 0, n)))
            abort();
        if (cn_repos_utf8_check(p, n) == CN_OK) {
            static uint8_t fold[1 << 16];
            long k = cn_repos_path_fold(p, n, fold, sizeof fold);
            if (n <= sizeof fold && (k < 0 || (size_t)k > n))
                abort();
            if (k >= 0 && cn_repos_path_alias(p, n, fold, (size_t)k) &&
                !memcmp(p, fold, (size_t)k) && (size_t)k == n)
                abort();
        }
        break;
    }
    default: break;
    }
    cn_buf_free(&b);
    return 0;
}
