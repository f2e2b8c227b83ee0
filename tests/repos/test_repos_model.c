/* The repos object model: golden encodings and ids hand-written from
 * docs/protocol/scribe.md (ids computed independently with b3sum), canonical
 * path rules, case-fold aliases, and the snapshot tree with its proofs. */
#include "cairn/repos_model.h"
#include "cn_test.h"
#include "scribe/fixture.h"
#include "oracle_tree.h"

#define CHUNK_ID "ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"
#define MANIFEST_ID "8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1"
#define CHANGESET_ID "d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c"
#define CONTENT_ROOT "5ab8008cab68dc4710ceab43cd2831ece0cc0a65ef0446e60754dd9869797996"
#define REVISION_ROOT "aac3195eeaf787fe1747008fca15233a291b9cd607e1149a7aeb0603d096bab6"
#define COMMIT_ID "54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca"

static cn_digest_t D(const char *hex)
{
    cn_digest_t d;
    if (cn_digest_parse(hex, 64, &d))
        abort();
    return d;
}

static bool id_is(uint8_t kind, const uint8_t *p, size_t n, const char *hex)
{
    cn_digest_t got, want = D(hex);
    return cn_repos_object_id(kind, p, n, &got) == CN_OK && memcmp(got.b, want.b, 32) == 0;
}

/* Every strict prefix and one trailing byte refused. */
typedef cn_err_t (*parse_fn)(const uint8_t *p, size_t n);
static void check_truncation(parse_fn fn, const uint8_t *p, size_t n)
{
    CN_CHECK_EQ(fn(p, n), CN_OK);
    for (size_t k = 0; k < n; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, p, k);
        CN_CHECK(fn(cut, k) != CN_OK);
        free(cut);
    }
    uint8_t *more = malloc(n + 1);
    memcpy(more, p, n);
    more[n] = 0;
    CN_CHECK(fn(more, n + 1) != CN_OK);
    free(more);
}

static cn_err_t parse_manifest(const uint8_t *p, size_t n)
{
    cn_repos_manifest_t m;
    return cn_repos_manifest_parse(p, n, &m);
}
static cn_err_t parse_changeset(const uint8_t *p, size_t n)
{
    cn_repos_changeset_t c;
    return cn_repos_changeset_parse(p, n, &c);
}
static cn_err_t parse_commit(const uint8_t *p, size_t n)
{
    cn_repos_commit_t c;
    return cn_repos_commit_parse(p, n, &c);
}
static cn_err_t parse_node(const uint8_t *p, size_t n)
{
    cn_repos_node_t c;
    return cn_repos_node_parse(p, n, &c);
}

/* ---- objects ---------------------------------------------------------------------- */
static void test_chunk_and_manifest(void)
{
    CN_CHECK(id_is(CN_REPOS_CHUNK, (const uint8_t *)"hello", 5, CHUNK_ID));
    FX(m, "01 0500000000000000 01000000 " CHUNK_ID " 05000000");
    CN_CHECK_EQ(m_len, 49);
    CN_CHECK(id_is(CN_REPOS_MANIFEST, m, m_len, MANIFEST_ID));
    cn_repos_chunk_ref_t ref = { D(CHUNK_ID), 5 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_repos_manifest_encode(&b, &ref, 1), CN_OK);
    CN_CHECK(b.len == m_len && memcmp(b.data, m, m_len) == 0);
    cn_repos_manifest_t mv;
    CN_CHECK_EQ(cn_repos_manifest_parse(m, m_len, &mv), CN_OK);
    CN_CHECK(mv.size == 5 && mv.count == 1);
    cn_repos_chunk_ref_t r0;
    cn_repos_manifest_chunk(&mv, 0, &r0);
    CN_CHECK(r0.len == 5 && memcmp(r0.id.b, ref.id.b, 32) == 0);
    check_truncation(parse_manifest, m, m_len);

    /* The streaming id equals the one-shot id. */
    cn_blake3_t h;
    cn_digest_t d1, d2;
    CN_CHECK_EQ(cn_repos_id_init(&h, CN_REPOS_MANIFEST), CN_OK);
    cn_blake3_update(&h, m, 10);
    cn_blake3_update(&h, m + 10, m_len - 10);
    cn_blake3_final(&h, &d1);
    cn_repos_object_id(CN_REPOS_MANIFEST, m, m_len, &d2);
    CN_CHECK_MEM(d1.b, d2.b, 32);
    CN_CHECK_EQ(cn_repos_id_init(&h, 9), CN_E_INVALID);

    FX(empty, "01 0000000000000000 00000000"); /* an empty file */
    CN_CHECK_EQ(parse_manifest(empty, empty_len), CN_OK);
    FX(bad_size, "01 0600000000000000 01000000 " CHUNK_ID " 05000000");
    CN_CHECK_EQ(parse_manifest(bad_size, bad_size_len), CN_E_INVALID);
    FX(zero_len, "01 0000000000000000 01000000 " CHUNK_ID " 00000000");
    CN_CHECK_EQ(parse_manifest(zero_len, zero_len_len), CN_E_INVALID);
    FX(big_chunk, "01 0100400000000000 01000000 " CHUNK_ID " 01004000"); /* 4 MiB + 1 */
    CN_CHECK_EQ(parse_manifest(big_chunk, big_chunk_len), CN_E_INVALID);
    FX(version2, "02 0000000000000000 00000000");
    CN_CHECK_EQ(parse_manifest(version2, version2_len), CN_E_INVALID);
    FX(count_lie, "01 0000000000000000 ffffffff");
    CN_CHECK_EQ(parse_manifest(count_lie, count_lie_len), CN_E_INVALID);
    ref.len = 0;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_repos_manifest_encode(&b, &ref, 1), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    CN_CHECK_EQ(cn_repos_kind_max_len(CN_REPOS_MANIFEST), 37748749);
    cn_buf_free(&b);
}

static void test_changeset(void)
{
    FX(cs, "01 01000000 01 0500 \"a.txt\" " MANIFEST_ID " 00");
    CN_CHECK_EQ(cs_len, 46);
    CN_CHECK(id_is(CN_REPOS_CHANGESET, cs, cs_len, CHANGESET_ID));
    cn_repos_change_t e = { .kind = CN_REPOS_ADD,
                            .path = (const uint8_t *)"a.txt",
                            .path_len = 5,
                            .manifest = D(MANIFEST_ID),
                            .mode = 0 };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_repos_changeset_encode(&b, &e, 1), CN_OK);
    CN_CHECK(b.len == cs_len && memcmp(b.data, cs, cs_len) == 0);
    check_truncation(parse_changeset, cs, cs_len);
    cn_repos_changeset_t v;
    CN_CHECK_EQ(cn_repos_changeset_parse(cs, cs_len, &v), CN_OK);
    CN_CHECK_EQ(cn_repos_changeset_validate(&v), CN_OK);

    /* all five kinds, in order */
    FX(five, "01 05000000"
             " 03 0100 \"a\""
             " 04 0300 \"b/c\" 0100 \"z\" " MANIFEST_ID " 01"
             " 05 0300 \"b/d\""
             " 02 0100 \"c\" " MANIFEST_ID " 02"
             " 01 0100 \"d\" " MANIFEST_ID " 00");
    CN_CHECK_EQ(cn_repos_changeset_parse(five, five_len, &v), CN_OK);
    CN_CHECK_EQ(cn_repos_changeset_validate(&v), CN_OK);
    check_truncation(parse_changeset, five, five_len);
    cn_repos_changeset_iter_t it;
    cn_repos_change_t ce;
    cn_repos_changeset_iter(&v, &it);
    int kinds = 0;
    while (cn_repos_changeset_next(&it, &ce)) {
        if (ce.kind == CN_REPOS_MOVE)
            CN_CHECK(ce.from_len == 1 && ce.from[0] == 'z' && ce.mode == 1);
        kinds++;
    }
    CN_CHECK_EQ(kinds, 5);

    /* structural refusals */
    static const char *const bad[] = {
        "01 02000000 03 0100 \"b\" 03 0100 \"a\"",                 /* out of order */
        "01 02000000 03 0100 \"a\" 03 0100 \"a\"",                 /* duplicate */
        "01 01000000 04 0100 \"a\" 0100 \"a\" " MANIFEST_ID " 00", /* move onto itself */
        "01 01000000 01 0100 \"a\" " MANIFEST_ID " 03",            /* mode 3 */
        "01 01000000 06 0100 \"a\"",                               /* kind 6 */
        "01 01000000 03 0400 \"a/..\"",                            /* not canonical */
        "01 00000000",                                             /* empty */
        "02 01000000 03 0100 \"a\"",                               /* version 2 */
        "01 ffffffff 03 0100 \"a\"",                               /* count over the bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FX(x, bad[i]);
        CN_CHECK_EQ(parse_changeset(x, x_len), CN_E_INVALID);
    }
    /* cross-entry refusals: structurally fine, semantically not */
    static const char *const invalid[] = {
        "01 02000000 01 0500 \"A.txt\" " MANIFEST_ID " 00 01 0500 \"a.txt\" " MANIFEST_ID " 00",
        "01 02000000 01 0100 \"a\" " MANIFEST_ID " 00 01 0300 \"a/b\" " MANIFEST_ID " 00",
        "01 02000000 03 0100 \"a\" 04 0100 \"b\" 0100 \"a\" " MANIFEST_ID " 00",
        "01 02000000 04 0100 \"b\" 0100 \"x\" " MANIFEST_ID
        " 00 04 0100 \"c\" 0100 \"x\" " MANIFEST_ID " 00",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        FX(x, invalid[i]);
        CN_CHECK_EQ(cn_repos_changeset_parse(x, x_len, &v), CN_OK);
        CN_CHECK_EQ(cn_repos_changeset_validate(&v), CN_E_INVALID);
    }
    /* A case-only rename is a move, and fine. */
    FX(rename, "01 01000000 04 0500 \"a.txt\" 0500 \"A.txt\" " MANIFEST_ID " 00");
    CN_CHECK_EQ(cn_repos_changeset_parse(rename, rename_len, &v), CN_OK);
    CN_CHECK_EQ(cn_repos_changeset_validate(&v), CN_OK);
    /* the encoder refuses what the receiver would */
    cn_repos_change_t two[2] = { e, e };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_repos_changeset_encode(&b, two, 2), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    cn_buf_free(&b);
}

static void test_commit(void)
{
    FX(c, "01 000102030405060708090a0b0c0d0e0f 101112131415161718191a1b1c1d1e1f 0100000000000000 00"
          " " CHANGESET_ID " 0300 \"ann\" 05000000 \"add a\""
          " 0068e5cf8b010000 " CONTENT_ROOT " " REVISION_ROOT " 00");
    CN_CHECK(id_is(CN_REPOS_COMMIT, c, c_len, COMMIT_ID));
    cn_repos_commit_t cm = { .change = 1,
                             .parent_count = 0,
                             .changeset = D(CHANGESET_ID),
                             .author = (const uint8_t *)"ann",
                             .author_len = 3,
                             .message = (const uint8_t *)"add a",
                             .message_len = 5,
                             .time_ms = 1700000000000ull,
                             .content_root = D(CONTENT_ROOT),
                             .revision_root = D(REVISION_ROOT) };
    fx_id(cm.repository, 0x00);
    fx_id(cm.branch, 0x10);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_repos_commit_encode(&b, &cm), CN_OK);
    CN_CHECK(b.len == c_len && memcmp(b.data, c, c_len) == 0);
    check_truncation(parse_commit, c, c_len);
    cn_repos_commit_t d;
    CN_CHECK_EQ(cn_repos_commit_parse(c, c_len, &d), CN_OK);
    CN_CHECK(d.change == 1 && d.time_ms == 1700000000000ull && d.message_len == 5 && !d.has_pick);

    /* two parents and cherry-pick provenance round-trip */
    cm.parent_count = 2;
    cm.parents[0] = D(COMMIT_ID);
    cm.parents[1] = D(CHANGESET_ID);
    cm.has_pick = true;
    fx_id(cm.pick_branch, 0x70);
    cm.pick_change = 42;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_repos_commit_encode(&b, &cm), CN_OK);
    check_truncation(parse_commit, b.data, b.len);
    CN_CHECK_EQ(cn_repos_commit_parse(b.data, b.len, &d), CN_OK);
    CN_CHECK(d.parent_count == 2 && d.has_pick && d.pick_change == 42 &&
             memcmp(d.parents[1].b, cm.parents[1].b, 32) == 0);
    cm.parent_count = 3;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_repos_commit_encode(&b, &cm), CN_E_INVALID);
    c[1 + 16 + 16 + 8] = 3; /* three parents */
    CN_CHECK_EQ(parse_commit(c, c_len), CN_E_INVALID);
    cn_buf_free(&b);
}

static void test_fingerprint(void)
{
    cn_repos_submit_intent_t s = { .base = 0,
                                   .changeset = D(CHANGESET_ID),
                                   .keep_locks = false,
                                   .message = (const uint8_t *)"add a",
                                   .message_len = 5 };
    fx_id(s.repository, 0x00);
    fx_id(s.incarnation, 0x20);
    fx_id(s.branch, 0x10);
    fx_id(s.workspace, 0x40);
    cn_digest_t fp, want = D("139235015b2647defe66bb5b82a97fb5c40db88439a21b0c47fb80c681746034");
    cn_repos_submit_fingerprint(&s, &fp);
    CN_CHECK_MEM(fp.b, want.b, 32);
    s.base = 1;
    cn_repos_submit_fingerprint(&s, &fp);
    CN_CHECK(memcmp(fp.b, want.b, 32) != 0);
}

/* ---- paths ------------------------------------------------------------------------ */
static bool path_ok(const char *s, size_t n)
{
    return cn_repos_path_check((const uint8_t *)s, n) == CN_OK;
}
#define P(s) path_ok(s, sizeof(s) - 1)

static void test_paths(void)
{
    CN_CHECK(P("a"));
    CN_CHECK(P("a/b/c.txt"));
    CN_CHECK(P(".hidden/..x/x.."));
    CN_CHECK(P("caf\xC3\xA9/\xE2\x82\xAC"));
    CN_CHECK(P("\xF0\x9F\x98\x80"));
    CN_CHECK(!P(""));
    CN_CHECK(!P("."));
    CN_CHECK(!P(".."));
    CN_CHECK(!P("a/../b"));
    CN_CHECK(!P("a/./b"));
    CN_CHECK(!P("/a"));
    CN_CHECK(!P("a/"));
    CN_CHECK(!P("a//b"));
    CN_CHECK(!P("a\0b"));
    CN_CHECK(!P("a\nb"));
    CN_CHECK(!P("a\x7f"));
    CN_CHECK(!P("\xC0\xAF"));         /* overlong '/' */
    CN_CHECK(!P("\xC1\xBF"));         /* overlong */
    CN_CHECK(!P("\xE0\x80\xAE"));     /* overlong '.' */
    CN_CHECK(!P("\xF0\x80\x80\xAF")); /* overlong */
    CN_CHECK(!P("\xED\xA0\x80"));     /* surrogate */
    CN_CHECK(!P("\xF4\x90\x80\x80")); /* above U+10FFFF */
    CN_CHECK(!P("\xE2\x82"));         /* truncated */
    CN_CHECK(!P("\x80"));             /* lone continuation */
    static char big[CN_REPOS_MAX_PATH + 1];
    memset(big, 'a', sizeof big);
    for (size_t i = 100; i < sizeof big; i += 100)
        big[i] = '/';
    CN_CHECK(path_ok(big, CN_REPOS_MAX_PATH));
    CN_CHECK(!path_ok(big, CN_REPOS_MAX_PATH + 1));
}

static bool alias(const char *a, const char *b)
{
    return cn_repos_path_alias((const uint8_t *)a, strlen(a), (const uint8_t *)b, strlen(b));
}

static void test_fold(void)
{
    CN_CHECK(alias("Readme.TXT", "readme.txt"));
    CN_CHECK(alias("Art/Hero.PNG", "art/hero.png"));
    CN_CHECK(!alias("readme.txt", "readme.txt")); /* same path */
    CN_CHECK(!alias("readme.txt", "readme.txt2"));
    CN_CHECK(alias("\xC3\x84"
                   "bc",
                   "\xC3\xA4"
                   "bc"));                           /* Ä / ä */
    CN_CHECK(alias("\xCE\xA3", "\xCF\x82"));         /* Σ / ς */
    CN_CHECK(alias("\xD0\x96", "\xD0\xB6"));         /* Ж / ж */
    CN_CHECK(alias("\xD0\x81", "\xD1\x91"));         /* Ё / ё */
    CN_CHECK(alias("\xE2\x84\xAA", "k"));            /* Kelvin sign */
    CN_CHECK(alias("\xC5\xBF", "S"));                /* long s */
    CN_CHECK(alias("\xC5\xB8", "\xC3\xBF"));         /* Ÿ / ÿ */
    CN_CHECK(alias("\xEF\xBC\xA1", "\xEF\xBD\x81")); /* fullwidth A / a */
    CN_CHECK(alias("\xE1\xBA\x9E", "\xC3\x9F"));     /* ẞ / ß */
    CN_CHECK(!alias("stra\xC3\x9F"
                    "e",
                    "STRASSE"));              /* simple folding only */
    CN_CHECK(!alias("\xC3\x97", "\xC3\xB7")); /* × and ÷ are not a pair */
    uint8_t out[64];
    long n = cn_repos_path_fold((const uint8_t *)"A/\xC3\x84", 4, out, sizeof out);
    CN_CHECK(n == 4 && memcmp(out, "a/\xC3\xA4", 4) == 0);
    CN_CHECK_EQ(cn_repos_path_fold((const uint8_t *)"\xC0\xAF", 2, out, sizeof out), CN_E_INVALID);
    CN_CHECK_EQ(cn_repos_fold_cp(0x41), 0x61);
    CN_CHECK_EQ(cn_repos_fold_cp(0x100), 0x101);
    CN_CHECK_EQ(cn_repos_fold_cp(0x101), 0x101);
    CN_CHECK_EQ(cn_repos_fold_cp(0x139), 0x13A);
    CN_CHECK_EQ(cn_repos_fold_cp(0x13A), 0x13A);
}

/* ---- snapshot tree ---------------------------------------------------------------- */
static cn_repos_entry_t live(uint64_t change, const char *manifest_hex, uint64_t size)
{
    cn_repos_entry_t e = { .state = CN_REPOS_LIVE,
                           .mode = 0,
                           .change = change,
                           .size = size,
                           .manifest = D(manifest_hex) };
    return e;
}

static cn_err_t put(oracle_tree_t *t, const char *path, cn_repos_entry_t e)
{
    return oracle_tree_put(t, (const uint8_t *)path, strlen(path), &e);
}

static void test_tree_fixtures(void)
{
    oracle_tree_t *t;
    CN_CHECK_EQ(oracle_tree_new(&t), CN_OK);
    cn_digest_t cr, rr;
    CN_CHECK_EQ(oracle_tree_roots(t, &cr, &rr), CN_OK);
    cn_digest_t ecr = D("c6192c01cd0b847dfc11a4890be6e81fdedbda5ae0da0fb50b4df794ac7206f3");
    cn_digest_t err_ = D("fb3ee5fdbecbdf20bcb365f4b8ecc2cebcbac576873c230771ff368588c5ada2");
    CN_CHECK_MEM(cr.b, ecr.b, 32);
    CN_CHECK_MEM(rr.b, err_.b, 32);
    cn_buf_t proof = { 0 };
    CN_CHECK_EQ(oracle_tree_proof_full(t, &proof), CN_OK);
    FX(empty_node, "01 0000 00 0000000000000000 0000000000000000 0000000000000000 0000 0000 0000");
    CN_CHECK(proof.len == 4 + empty_node_len &&
             memcmp(proof.data + 4, empty_node, empty_node_len) == 0);
    cn_digest_t vcr;
    uint64_t nlive = 99;
    CN_CHECK_EQ(cn_repos_tree_proof_verify(proof.data, proof.len, &rr, &vcr, &nlive), CN_OK);
    CN_CHECK(nlive == 0 && memcmp(vcr.b, ecr.b, 32) == 0);

    CN_CHECK_EQ(put(t, "a.txt", live(1, MANIFEST_ID, 5)), CN_OK);
    CN_CHECK_EQ(oracle_tree_roots(t, &cr, &rr), CN_OK);
    cn_digest_t want_cr = D(CONTENT_ROOT), want_rr = D(REVISION_ROOT);
    CN_CHECK_MEM(cr.b, want_cr.b, 32);
    CN_CHECK_MEM(rr.b, want_rr.b, 32);
    FX(leaf, "01 0500 \"a.txt\" 01 0100000000000000 " MANIFEST_ID " 0500000000000000 00"
             " 0100000000000000 0100000000000000 0100000000000000 0000 0000 0000");
    FX(root,
       "01 0000 00 0100000000000000 0100000000000000 0100000000000000 0500 \"a.txt\" 0500 \"a.txt\""
       " 0100 61 2f7ba7d8b9dfc71ba25aaac833d272f84c608db662c9b5e2263bcaf635071eea"
       " 0100000000000000 0100000000000000 0100000000000000");
    check_truncation(parse_node, leaf, leaf_len);
    check_truncation(parse_node, root, root_len);
    cn_buf_reset(&proof);
    CN_CHECK_EQ(oracle_tree_proof_full(t, &proof), CN_OK);
    CN_CHECK_EQ(proof.len, 4 + root_len + 4 + leaf_len);
    CN_CHECK_MEM(proof.data + 4, root, root_len);
    CN_CHECK_MEM(proof.data + 8 + root_len, leaf, leaf_len);
    CN_CHECK_EQ(cn_repos_tree_proof_verify(proof.data, proof.len, &rr, &vcr, &nlive), CN_OK);
    CN_CHECK(nlive == 1 && memcmp(vcr.b, want_cr.b, 32) == 0);
    cn_buf_free(&proof);
    oracle_tree_free(t);
    oracle_tree_free(NULL);
}

static void build(oracle_tree_t *t, int n, uint64_t change)
{
    char p[64];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "dir%d/sub%d/file-%05d.bin", i % 7, i % 13, i);
        cn_repos_entry_t e = live(change, MANIFEST_ID, (uint64_t)i);
        CN_CHECK_EQ(oracle_tree_put(t, (const uint8_t *)p, strlen(p), &e), CN_OK);
    }
}

static int collect(void *ctx, const uint8_t *path, size_t n, const cn_repos_entry_t *e)
{
    (void)e;
    cn_buf_t *prev = ctx;
    /* ascending path order */
    if (prev->len) {
        size_t m = prev->len < n ? prev->len : n;
        int c = memcmp(prev->data, path, m);
        CN_CHECK(c < 0 || (c == 0 && prev->len < n));
    }
    cn_buf_reset(prev);
    cn_buf_append(prev, path, n);
    return 0;
}

static void test_tree_proofs_and_cost(void)
{
    oracle_tree_t *t;
    CN_CHECK_EQ(oracle_tree_new(&t), CN_OK);
    build(t, 2000, 1);
    CN_CHECK_EQ(oracle_tree_entries(t), 2000);
    cn_digest_t cr, rr;
    CN_CHECK_EQ(oracle_tree_roots(t, &cr, &rr), CN_OK);
    uint64_t full = oracle_tree_rehashed(t);
    CN_CHECK(full > 2000);
    cn_buf_t proof = { 0 }, prev = { 0 };
    CN_CHECK_EQ(oracle_tree_proof_full(t, &proof), CN_OK);
    cn_digest_t vcr;
    uint64_t nlive;
    CN_CHECK_EQ(cn_repos_tree_proof_verify(proof.data, proof.len, &rr, &vcr, &nlive), CN_OK);
    CN_CHECK(nlive == 2000 && memcmp(vcr.b, cr.b, 32) == 0);
    CN_CHECK_EQ(oracle_tree_walk(t, collect, &prev), 0);
    /* Any flipped byte, a missing node or a surplus byte is caught. */
    for (size_t i = 0; i < proof.len; i += proof.len / 97 + 1) {
        proof.data[i] ^= 0x20;
        CN_CHECK(cn_repos_tree_proof_verify(proof.data, proof.len, &rr, &vcr, &nlive) != CN_OK);
        proof.data[i] ^= 0x20;
    }
    CN_CHECK(cn_repos_tree_proof_verify(proof.data, proof.len - 1, &rr, &vcr, &nlive) != CN_OK);
    cn_buf_put_u8(&proof, 0);
    CN_CHECK(cn_repos_tree_proof_verify(proof.data, proof.len, &rr, &vcr, &nlive) != CN_OK);

    /* One changed path re-hashes only its own ancestors. */
    const char *p = "dir3/sub5/file-00031.bin";
    cn_repos_entry_t e = live(2, CHUNK_ID, 77);
    CN_CHECK_EQ(oracle_tree_put(t, (const uint8_t *)p, strlen(p), &e), CN_OK);
    cn_digest_t cr2, rr2;
    CN_CHECK_EQ(oracle_tree_roots(t, &cr2, &rr2), CN_OK);
    CN_CHECK(oracle_tree_rehashed(t) <= 8);
    CN_CHECK(memcmp(rr.b, rr2.b, 32) != 0 && memcmp(cr.b, cr2.b, 32) != 0);
    CN_CHECK_EQ(oracle_tree_roots(t, &cr2, &rr2), CN_OK);
    CN_CHECK_EQ(oracle_tree_rehashed(t), 0);
    cn_repos_entry_t got;
    CN_CHECK(oracle_tree_get(t, (const uint8_t *)p, strlen(p), &got) && got.size == 77);
    CN_CHECK(!oracle_tree_get(t, (const uint8_t *)"dir3", 4, &got));

    /* Insertion order does not change the shape: same roots built backwards. */
    oracle_tree_t *u;
    CN_CHECK_EQ(oracle_tree_new(&u), CN_OK);
    char q[64];
    for (int i = 1999; i >= 0; i--) {
        snprintf(q, sizeof q, "dir%d/sub%d/file-%05d.bin", i % 7, i % 13, i);
        cn_repos_entry_t f = live(1, MANIFEST_ID, (uint64_t)i);
        oracle_tree_put(u, (const uint8_t *)q, strlen(q), &f);
    }
    oracle_tree_put(u, (const uint8_t *)p, strlen(p), &e);
    cn_digest_t cr3, rr3;
    CN_CHECK_EQ(oracle_tree_roots(u, &cr3, &rr3), CN_OK);
    CN_CHECK_MEM(rr3.b, rr2.b, 32);
    CN_CHECK_MEM(cr3.b, cr2.b, 32);
    oracle_tree_free(u);
    cn_buf_free(&proof);
    cn_buf_free(&prev);
    oracle_tree_free(t);
}

static void test_tree_tombstones(void)
{
    /* Same live set, different history: equal content roots, different revision roots. */
    oracle_tree_t *a, *b;
    oracle_tree_new(&a);
    oracle_tree_new(&b);
    put(a, "x/one", live(1, MANIFEST_ID, 5));
    put(a, "x/two", live(1, MANIFEST_ID, 5));
    put(b, "x/one", live(1, MANIFEST_ID, 5));
    put(b, "x/two", live(1, MANIFEST_ID, 5));
    put(b, "x/three", live(1, MANIFEST_ID, 5));
    put(b, "y", live(1, MANIFEST_ID, 5));
    cn_repos_entry_t tomb = { .state = CN_REPOS_TOMBSTONE, .change = 2 };
    put(b, "x/three", tomb);
    put(b, "y", tomb);
    cn_digest_t ca, ra, cb, rb;
    oracle_tree_roots(a, &ca, &ra);
    oracle_tree_roots(b, &cb, &rb);
    CN_CHECK_MEM(ca.b, cb.b, 32);
    CN_CHECK(memcmp(ra.b, rb.b, 32) != 0);
    CN_CHECK_EQ(oracle_tree_live(b), 2);
    CN_CHECK_EQ(oracle_tree_entries(b), 4);
    cn_buf_t proof = { 0 };
    oracle_tree_proof_full(b, &proof);
    cn_digest_t vc;
    uint64_t nl;
    CN_CHECK_EQ(cn_repos_tree_proof_verify(proof.data, proof.len, &rb, &vc, &nl), CN_OK);
    CN_CHECK(nl == 2 && memcmp(vc.b, ca.b, 32) == 0);
    /* All-deleted tree: content root is the empty one, proof still verifies. */
    oracle_tree_t *c;
    oracle_tree_new(&c);
    put(c, "gone", tomb);
    cn_digest_t cc, rc,
        empty = D("c6192c01cd0b847dfc11a4890be6e81fdedbda5ae0da0fb50b4df794ac7206f3");
    oracle_tree_roots(c, &cc, &rc);
    CN_CHECK_MEM(cc.b, empty.b, 32);
    cn_buf_reset(&proof);
    oracle_tree_proof_full(c, &proof);
    CN_CHECK_EQ(cn_repos_tree_proof_verify(proof.data, proof.len, &rc, &vc, &nl), CN_OK);
    CN_CHECK(nl == 0 && memcmp(vc.b, empty.b, 32) == 0);
    /* bad puts */
    CN_CHECK_EQ(put(c, "a/../b", live(1, MANIFEST_ID, 1)), CN_E_INVALID);
    cn_repos_entry_t none = { .state = CN_REPOS_NONE };
    CN_CHECK_EQ(put(c, "ok", none), CN_E_INVALID);
    cn_buf_free(&proof);
    oracle_tree_free(a);
    oracle_tree_free(b);
    oracle_tree_free(c);
}

static cn_err_t size_of(void *ctx, const cn_digest_t *m, uint64_t *size)
{
    (void)m;
    *size = *(uint64_t *)ctx;
    return CN_OK;
}

static cn_err_t apply(oracle_tree_t *t, const char *fixture, uint64_t change)
{
    FX(x, fixture);
    cn_repos_changeset_t cs;
    if (cn_repos_changeset_parse(x, x_len, &cs) || cn_repos_changeset_validate(&cs))
        return CN_E_INVALID;
    uint64_t size = 5;
    return oracle_tree_apply(t, &cs, change, size_of, &size);
}

static void test_tree_apply(void)
{
    oracle_tree_t *t;
    oracle_tree_new(&t);
    CN_CHECK_EQ(apply(t, "01 01000000 01 0500 \"a.txt\" " MANIFEST_ID " 00", 1), CN_OK);
    cn_digest_t cr, rr, want_cr = D(CONTENT_ROOT), want_rr = D(REVISION_ROOT);
    oracle_tree_roots(t, &cr, &rr);
    CN_CHECK_MEM(cr.b, want_cr.b, 32); /* the commit fixture's roots */
    CN_CHECK_MEM(rr.b, want_rr.b, 32);
    /* add of a live path, modify/delete of an absent one: conflicts, tree unchanged */
    CN_CHECK_EQ(apply(t, "01 01000000 01 0500 \"a.txt\" " MANIFEST_ID " 00", 2), CN_E_CONFLICT);
    CN_CHECK_EQ(apply(t, "01 01000000 02 0100 \"b\" " MANIFEST_ID " 00", 2), CN_E_CONFLICT);
    CN_CHECK_EQ(apply(t, "01 01000000 03 0100 \"b\"", 2), CN_E_CONFLICT);
    CN_CHECK_EQ(apply(t, "01 01000000 05 0100 \"b\"", 2), CN_E_CONFLICT);
    /* a case-fold alias of a live path */
    CN_CHECK_EQ(apply(t, "01 01000000 01 0500 \"A.TXT\" " MANIFEST_ID " 00", 2), CN_E_CONFLICT);
    /* a file under a live file, a file over a live directory */
    CN_CHECK_EQ(apply(t, "01 01000000 01 0700 \"a.txt/b\" " MANIFEST_ID " 00", 2), CN_E_CONFLICT);
    CN_CHECK_EQ(apply(t, "01 01000000 01 0300 \"d/e\" " MANIFEST_ID " 00", 2), CN_OK);
    CN_CHECK_EQ(apply(t, "01 01000000 01 0100 \"d\" " MANIFEST_ID " 00", 3), CN_E_CONFLICT);
    cn_digest_t cr2, rr2;
    oracle_tree_roots(t, &cr2, &rr2);
    /* ... but replacing the directory by deleting its file works */
    CN_CHECK_EQ(apply(t, "01 02000000 01 0100 \"d\" " MANIFEST_ID " 00 03 0300 \"d/e\"", 3), CN_OK);
    /* case-only rename by move, and keep */
    CN_CHECK_EQ(
        apply(t, "01 02000000 04 0500 \"A.txt\" 0500 \"a.txt\" " MANIFEST_ID " 00 05 0100 \"d\"",
              4),
        CN_OK);
    cn_repos_entry_t e;
    CN_CHECK(oracle_tree_get(t, (const uint8_t *)"a.txt", 5, &e) && e.state == CN_REPOS_TOMBSTONE &&
             e.change == 4);
    CN_CHECK(oracle_tree_get(t, (const uint8_t *)"A.txt", 5, &e) && e.state == CN_REPOS_LIVE &&
             e.size == 5);
    CN_CHECK(oracle_tree_get(t, (const uint8_t *)"d", 1, &e) &&
             e.change == 3); /* keep: untouched */
    CN_CHECK(oracle_tree_get(t, (const uint8_t *)"d/e", 3, &e) && e.state == CN_REPOS_TOMBSTONE);
    /* re-adding a deleted path with the old case is allowed again after the move */
    CN_CHECK_EQ(apply(t, "01 01000000 01 0500 \"a.txt\" " MANIFEST_ID " 00", 5), CN_E_CONFLICT);
    CN_CHECK_EQ(apply(t, "01 01000000 03 0500 \"A.txt\"", 5), CN_OK);
    CN_CHECK_EQ(apply(t, "01 01000000 01 0500 \"a.txt\" " MANIFEST_ID " 00", 6), CN_OK);
    CN_CHECK_EQ(oracle_tree_live(t), 2);
    oracle_tree_free(t);
}

/* A node store keyed by hash, as the repos service will keep one. */
typedef struct {
    cn_digest_t h;
    uint8_t *p;
    size_t n;
} stored_t;
typedef struct {
    stored_t *v;
    size_t n, cap, added;
} store_t;

static cn_err_t store_put(void *ctx, const cn_digest_t *h, const uint8_t *p, size_t n)
{
    store_t *s = ctx;
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->v[i].h.b, h->b, 32) == 0)
            return CN_OK;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n].h = *h;
    s->v[s->n].p = malloc(n);
    memcpy(s->v[s->n].p, p, n);
    s->v[s->n].n = n;
    s->n++;
    s->added++;
    return CN_OK;
}

static cn_err_t store_get(void *ctx, const cn_digest_t *h, cn_buf_t *out)
{
    store_t *s = ctx;
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->v[i].h.b, h->b, 32) == 0)
            return cn_buf_append(out, s->v[i].p, s->v[i].n);
    return CN_E_NOT_FOUND;
}

static void test_tree_persistence(void)
{
    store_t st = { 0 };
    oracle_tree_t *t;
    oracle_tree_new(&t);
    build(t, 500, 1);
    cn_repos_entry_t tomb = { .state = CN_REPOS_TOMBSTONE, .change = 2 };
    put(t, "dir1/sub1/file-00001.bin", tomb);
    cn_digest_t c1, r1;
    CN_CHECK_EQ(oracle_tree_roots_emit(t, &c1, &r1, store_put, &st), CN_OK);
    CN_CHECK_EQ(st.added, oracle_tree_rehashed(t));
    size_t after_first = st.n;

    /* The next snapshot adds only the nodes on the changed path. */
    put(t, "dir2/sub2/file-00002.bin", live(3, CHUNK_ID, 1));
    st.added = 0;
    cn_digest_t c2, r2;
    CN_CHECK_EQ(oracle_tree_roots_emit(t, &c2, &r2, store_put, &st), CN_OK);
    CN_CHECK(st.added > 0 && st.added <= 8);
    CN_CHECK_EQ(st.n, after_first + st.added);

    /* Both snapshots load back from the shared store. */
    oracle_tree_t *old = NULL, *cur = NULL;
    CN_CHECK_EQ(oracle_tree_load(&old, &r1, store_get, &st), CN_OK);
    CN_CHECK_EQ(oracle_tree_load(&cur, &r2, store_get, &st), CN_OK);
    cn_digest_t lc, lr;
    oracle_tree_roots(old, &lc, &lr);
    CN_CHECK(memcmp(lc.b, c1.b, 32) == 0 && memcmp(lr.b, r1.b, 32) == 0);
    oracle_tree_roots(cur, &lc, &lr);
    CN_CHECK(memcmp(lc.b, c2.b, 32) == 0 && memcmp(lr.b, r2.b, 32) == 0);
    cn_repos_entry_t e;
    CN_CHECK(oracle_tree_get(old, (const uint8_t *)"dir1/sub1/file-00001.bin", 24, &e) &&
             e.state == CN_REPOS_TOMBSTONE && e.change == 2);
    CN_CHECK_EQ(oracle_tree_live(cur), 499);
    /* A missing or altered node is refused. */
    cn_digest_t bogus = r2;
    bogus.b[0] ^= 1;
    oracle_tree_t *bad = NULL;
    CN_CHECK_EQ(oracle_tree_load(&bad, &bogus, store_get, &st), CN_E_NOT_FOUND);
    st.v[st.n - 1].p[st.v[st.n - 1].n - 1] ^= 1; /* corrupt one stored node */
    CN_CHECK(oracle_tree_load(&bad, &r2, store_get, &st) != CN_OK);
    CN_CHECK(bad == NULL);
    for (size_t i = 0; i < st.n; i++)
        free(st.v[i].p);
    free(st.v);
    oracle_tree_free(old);
    oracle_tree_free(cur);
    oracle_tree_free(t);
}

/* ---- the merge base -------------------------------------------------------------------- */
/* A commit graph as parents[change] = {first, merge}; calls counts the
 * accessor's use. */
typedef struct graph {
    const uint64_t (*parents)[2];
    uint64_t n, calls;
} graph_t;

static cn_err_t graph_parents(void *ctx, uint64_t change, uint64_t *first, uint64_t *merge)
{
    graph_t *g = ctx;
    g->calls++;
    if (change == 0 || change >= g->n)
        return CN_E_NOT_FOUND;
    *first = g->parents[change][0];
    *merge = g->parents[change][1];
    return CN_OK;
}

static uint64_t base_of(graph_t *g, uint64_t target, uint64_t source)
{
    uint64_t base = 99;
    CN_CHECK_EQ(cn_repos_merge_base(target, source, graph_parents, g, 1000, &base), 0);
    return base;
}

static void test_merge_base(void)
{
    /* main: 1, 2, 4, 6 (merges feature at 5), 8; feature from main at 2: 3,
     * 5, 7, 9 (merges main at 8); other from main at 0: 10 */
    static const uint64_t parents[][2] = { { 0, 0 }, { 0, 0 }, { 1, 0 }, { 2, 0 },
                                           { 2, 0 }, { 3, 0 }, { 4, 5 }, { 5, 0 },
                                           { 6, 0 }, { 7, 8 }, { 0, 0 } };
    graph_t g = { parents, sizeof parents / sizeof parents[0], 0 };
    CN_CHECK_EQ(base_of(&g, 4, 5), 2);  /* never merged: the fork point */
    CN_CHECK_EQ(base_of(&g, 8, 7), 5);  /* merged before: the source head merged last */
    CN_CHECK_EQ(base_of(&g, 7, 8), 2);  /* main's merge commit is not in feature */
    CN_CHECK_EQ(base_of(&g, 8, 9), 5);  /* the chain of 9 is 9, 7, 5: merges are not on it */
    CN_CHECK_EQ(base_of(&g, 9, 8), 8);  /* ... and main is its own newest revision */
    CN_CHECK_EQ(base_of(&g, 8, 10), 0); /* nothing shared: the empty snapshot */
    CN_CHECK_EQ(base_of(&g, 0, 7), 0);
    CN_CHECK_EQ(base_of(&g, 7, 0), 0);
    CN_CHECK_EQ(base_of(&g, 6, 6), 6);
    /* the walk stops at the base: 8 into 9 reads none of main's history
     * below 8 */
    g.calls = 0;
    CN_CHECK_EQ(base_of(&g, 9, 8), 8);
    CN_CHECK(g.calls <= 3);
    /* over the budget: an error, never a guess; a parent not below its child */
    uint64_t base = 0;
    CN_CHECK_EQ(cn_repos_merge_base(8, 1, graph_parents, &g, 3, &base), CN_E_LIMIT);
    static const uint64_t loop[][2] = { { 0, 0 }, { 0, 0 }, { 2, 0 } };
    graph_t bad = { loop, 3, 0 };
    CN_CHECK_EQ(cn_repos_merge_base(2, 1, graph_parents, &bad, 100, &base), CN_E_CORRUPT);
}

CN_TEST_MAIN(CN_TEST(test_chunk_and_manifest), CN_TEST(test_changeset), CN_TEST(test_commit),
             CN_TEST(test_fingerprint), CN_TEST(test_paths), CN_TEST(test_fold),
             CN_TEST(test_tree_fixtures), CN_TEST(test_tree_proofs_and_cost),
             CN_TEST(test_tree_tombstones), CN_TEST(test_tree_apply),
             CN_TEST(test_tree_persistence), CN_TEST(test_merge_base))
