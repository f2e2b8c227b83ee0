/* tree_proof layouts (opcode 43, docs/protocol/scribe.md 17.2): requests of
 * every selector and a continuation, and replies, encoded in both codecs
 * against the hand-written fixtures of proof_fixtures.txt and decoded back
 * field by field; every truncation and a trailing byte refused; unknown
 * selectors, oversize counts and each rule of 17.2 refused by both the
 * decoder and the encoder; the 1 MiB bound.
 * Usage: test_scribe_codec_proof FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

#define CODEC(c) ((cn_scribe_codec_t)(c))

static cn_err_t d_req(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_tree_proof_req_t q;
    return cn_scribe_dec_tree_proof_req(p, n, c, &q);
}
static cn_err_t d_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_tree_proof_resp_t r;
    return cn_scribe_dec_tree_proof_resp(p, n, c, &r);
}

/* The tree_page request carried: change 1, prefix, limit, after. */
static void page(cn_buf_t *b, int c, const char *prefix, uint32_t limit, const char *after)
{
    cn_scribe_tree_page_req_t q = { .repo = fx_sid(0x00),
                                    .branch = fx_sid(0x10),
                                    .change = 1,
                                    .prefix = cn_scribe_cstr(prefix),
                                    .limit = limit,
                                    .has_after = after != NULL };
    if (after)
        q.after = cn_scribe_cstr(after);
    CN_CHECK_EQ(cn_scribe_enc_tree_page_req(b, CODEC(c), &q), CN_OK);
}

static cn_err_t enc(cn_buf_t *out, int c, const cn_buf_t *pg, uint8_t sel, uint64_t lower,
                    const cn_scribe_str_t *paths, uint32_t n, const char *edge, uint32_t remaining)
{
    cn_scribe_tree_proof_req_t q = { .page = { pg->data, (uint32_t)pg->len },
                                     .selector = sel,
                                     .lower = lower,
                                     .path_count = n,
                                     .path_list = paths,
                                     .continuation = edge != NULL,
                                     .remaining = remaining };
    if (edge)
        q.edge = cn_scribe_cstr(edge);
    return cn_scribe_enc_tree_proof_req(out, CODEC(c), &q);
}

static void test_requests(void)
{
    cn_scribe_str_t two[2] = { cn_scribe_cstr("a.txt"), cn_scribe_cstr("b") };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t pg = { 0 }, b = { 0 };
        cn_scribe_tree_proof_req_t d;
        page(&pg, c, "", 100, NULL);
        CN_CHECK_EQ(enc(&b, c, &pg, 0, 0, NULL, 0, NULL, 0), CN_OK);
        fx_gold("proof_live_req", c, &b, d_req);
        CN_CHECK_EQ(cn_scribe_dec_tree_proof_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.selector == 0 && !d.continuation && d.pq.limit == 100 && d.pq.change == 1 &&
                 d.page.len == pg.len && !memcmp(d.page.p, pg.data, pg.len));

        cn_buf_reset(&pg);
        cn_buf_reset(&b);
        page(&pg, c, "art", 2, "art/a.png");
        CN_CHECK_EQ(enc(&b, c, &pg, 1, 5, NULL, 0, "art/", 3), CN_OK);
        fx_gold("proof_changed_req", c, &b, d_req);
        CN_CHECK_EQ(cn_scribe_dec_tree_proof_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.selector == 1 && d.lower == 5 && d.continuation && d.remaining == 3 &&
                 fx_str_is(d.edge, "art/") && fx_str_is(d.pq.after, "art/a.png"));
        CN_CHECK_EQ(cn_scribe_tree_proof_limit(1, d.pq.limit), 2);

        cn_buf_reset(&pg);
        cn_buf_reset(&b);
        page(&pg, c, "a.txt", 1, NULL);
        CN_CHECK_EQ(enc(&b, c, &pg, 2, 0, NULL, 0, NULL, 0), CN_OK);
        fx_gold("proof_exact_req", c, &b, d_req);

        cn_buf_reset(&pg);
        cn_buf_reset(&b);
        page(&pg, c, "", 2, NULL);
        CN_CHECK_EQ(enc(&b, c, &pg, 3, 0, two, 2, NULL, 0), CN_OK);
        fx_gold("proof_paths_req", c, &b, d_req);
        CN_CHECK_EQ(cn_scribe_dec_tree_proof_req(b.data, b.len, CODEC(c), &d), CN_OK);
        cn_scribe_str_t s;
        CN_CHECK(d.path_count == 2 && cn_scribe_next_path(&d.paths, &s) && fx_str_is(s, "a.txt"));
        CN_CHECK(cn_scribe_next_path(&d.paths, &s) && fx_str_is(s, "b"));
        cn_buf_free(&pg);
        cn_buf_free(&b);
    }
}

static void test_replies(void)
{
    uint8_t root[34];
    memset(root, 0, sizeof root);
    root[0] = 1;
    cn_digest_t cr, rr;
    cn_digest_parse("c6192c01cd0b847dfc11a4890be6e81fdedbda5ae0da0fb50b4df794ac7206f3", 64, &cr);
    cn_digest_parse("fb3ee5fdbecbdf20bcb365f4b8ecc2cebcbac576873c230771ff368588c5ada2", 64, &rr);
    for (int c = 1; c <= 2; c++) {
        cn_buf_t items = { 0 }, b = { 0 };
        CN_CHECK_EQ(cn_scribe_enc_tree_proof_node(&items, CODEC(c), root, sizeof root), CN_OK);
        CN_CHECK_EQ(cn_scribe_enc_tree_proof_resp(&b, CODEC(c), &cr, &rr, 1, items.data, items.len),
                    CN_OK);
        fx_gold("proof_empty_resp", c, &b, d_resp);
        cn_scribe_tree_proof_resp_t r;
        CN_CHECK_EQ(cn_scribe_dec_tree_proof_resp(b.data, b.len, CODEC(c), &r), CN_OK);
        cn_scribe_str_t s;
        CN_CHECK(r.count == 1 && !memcmp(r.content_root.b, cr.b, 32) &&
                 !memcmp(r.revision_root.b, rr.b, 32));
        CN_CHECK(cn_scribe_next_proof_node(&r.nodes, &s) && s.len == 34 && !memcmp(s.p, root, 34));
        CN_CHECK(!cn_scribe_next_proof_node(&r.nodes, &s));
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_tree_proof_resp(&b, CODEC(c), &cr, &rr, 0, NULL, 0), CN_OK);
        fx_gold("proof_none_resp", c, &b, d_resp);
        /* refused: an empty node, a count the items do not hold, too many nodes */
        CN_CHECK(cn_scribe_enc_tree_proof_node(&items, CODEC(c), root, 0) < 0);
        cn_buf_reset(&b);
        CN_CHECK(cn_scribe_enc_tree_proof_resp(&b, CODEC(c), &cr, &rr, 2, items.data, items.len) <
                 0);
        CN_CHECK_EQ(b.len, 0);
        CN_CHECK(cn_scribe_enc_tree_proof_resp(&b, CODEC(c), &cr, &rr, 8193, NULL, 0) < 0);
        cn_buf_free(&items);
        cn_buf_free(&b);
    }
    /* 8,193 nodes, and a zero-length node, in the bytes */
    cn_buf_t b = { 0 };
    cn_buf_append(&b, cr.b, 32);
    cn_buf_append(&b, rr.b, 32);
    uint8_t cnt[4] = { 0x01, 0x20, 0, 0 }; /* 8,193 LE */
    cn_buf_append(&b, cnt, 4);
    uint8_t item[5] = { 1, 0, 0, 0, 7 };
    for (int i = 0; i < 8193; i++)
        cn_buf_append(&b, item, 5);
    CN_CHECK(d_resp(b.data, b.len, CN_SCRIBE_CODEC_LE) < 0);
    b.len = 64;
    uint8_t one[8] = { 1, 0, 0, 0, 0, 0, 0, 0 }; /* count 1, node length 0 */
    cn_buf_append(&b, one, 8);
    CN_CHECK(d_resp(b.data, b.len, CN_SCRIBE_CODEC_LE) < 0);
    /* 9 MiB in two nodes: over the 8 MiB of node bytes */
    b.len = 64;
    uint8_t two[4] = { 2, 0, 0, 0 };
    cn_buf_append(&b, two, 4);
    for (int i = 0; i < 2; i++) {
        uint32_t n = 4718592;
        uint8_t l[4] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
        cn_buf_append(&b, l, 4);
        cn_buf_reserve(&b, b.len + n);
        memset(b.data + b.len, 1, n);
        b.len += n;
    }
    CN_CHECK(d_resp(b.data, b.len, CN_SCRIBE_CODEC_LE) < 0);
    cn_buf_free(&b);
}

/* Every rule of 17.2, refused by the encoder and (hand-patched) decoder. */
static void test_refusals(void)
{
    cn_scribe_str_t two[2] = { cn_scribe_cstr("a.txt"), cn_scribe_cstr("b") };
    cn_scribe_str_t rev[2] = { cn_scribe_cstr("b"), cn_scribe_cstr("a.txt") };
    cn_scribe_str_t dup[2] = { cn_scribe_cstr("b"), cn_scribe_cstr("b") };
    cn_scribe_str_t bad[1] = { cn_scribe_cstr("/a") };
    for (int c = 1; c <= 2; c++) {
        cn_buf_t all = { 0 }, exact = { 0 }, p2 = { 0 }, p1 = { 0 }, b = { 0 };
        page(&all, c, "", 100, NULL);
        page(&exact, c, "a.txt", 2, NULL);
        page(&p2, c, "", 2, NULL);
        page(&p1, c, "", 1, NULL);
        CN_CHECK(enc(&b, c, &all, 4, 0, NULL, 0, NULL, 0) < 0);        /* unknown selector */
        CN_CHECK(enc(&b, c, &all, 0, 0, two, 2, NULL, 0) < 0);         /* paths on a range */
        CN_CHECK(enc(&b, c, &all, 2, 0, NULL, 0, NULL, 0) < 0);        /* exact, empty prefix */
        CN_CHECK(enc(&b, c, &exact, 2, 0, NULL, 0, NULL, 0) < 0);      /* exact, limit 2 */
        CN_CHECK(enc(&b, c, &p2, 3, 0, rev, 2, NULL, 0) < 0);          /* unsorted */
        CN_CHECK(enc(&b, c, &p2, 3, 0, dup, 2, NULL, 0) < 0);          /* repeated */
        CN_CHECK(enc(&b, c, &all, 3, 0, two, 2, NULL, 0) < 0);         /* limit != count */
        CN_CHECK(enc(&b, c, &p1, 3, 0, bad, 1, NULL, 0) < 0);          /* not canonical */
        CN_CHECK(enc(&b, c, &p2, 3, 0, NULL, 0, NULL, 0) < 0);         /* no path at all */
        CN_CHECK(enc(&b, c, &all, 0, 0, NULL, 0, "a", 0) < 0);         /* remaining 0 */
        CN_CHECK(enc(&b, c, &all, 0, 0, NULL, 0, "a", 102) < 0);       /* past limit + 1 */
        CN_CHECK(enc(&b, c, &all, 0, 0, NULL, 0, "", 1) < 0);          /* empty edge */
        CN_CHECK_EQ(enc(&b, c, &all, 0, 0, NULL, 0, "a", 101), CN_OK); /* limit + 1 */
        CN_CHECK_EQ(b.len > 0, 1);
        cn_buf_t inner = { 0 };
        cn_buf_append(&inner, "\0\0\0", 3); /* not a tree_page request */
        CN_CHECK(enc(&b, c, &inner, 0, 0, NULL, 0, NULL, 0) < 0);
        cn_buf_free(&inner);
        /* over 4,096 paths: refused by count before anything else */
        cn_scribe_str_t *many = calloc(4097, sizeof *many);
        char(*names)[8] = calloc(4097, 8);
        for (int i = 0; i < 4097; i++) {
            snprintf(names[i], 8, "p%05d", i);
            many[i] = cn_scribe_cstr(names[i]);
        }
        cn_buf_t pm = { 0 };
        page(&pm, c, "", 4097, NULL);
        CN_CHECK(enc(&b, c, &pm, 3, 0, many, 4097, NULL, 0) < 0);
        cn_buf_reset(&pm);
        page(&pm, c, "", 4096, NULL);
        CN_CHECK_EQ(enc(&b, c, &pm, 3, 0, many, 4096, NULL, 0), CN_OK); /* 4,096 is fine */
        free(many);
        free(names);
        cn_buf_free(&pm);
        cn_buf_free(&all);
        cn_buf_free(&exact);
        cn_buf_free(&p2);
        cn_buf_free(&p1);
        cn_buf_free(&b);
    }
    /* the decoder, on patched bytes: selector 4 where the fixture has 0 */
    uint8_t buf[256];
    size_t n = fx_entry(fx_file(NULL), "proof_live_req", "le", buf, sizeof buf);
    CN_CHECK(n != (size_t)-1 && d_req(buf, n, CN_SCRIBE_CODEC_LE) == CN_OK);
    buf[4 + 47] = 4;
    CN_CHECK(d_req(buf, n, CN_SCRIBE_CODEC_LE) < 0);
    /* a path count over 4,096 with no paths behind it */
    buf[4 + 47] = 3;
    buf[4 + 48] = 0x01;
    buf[4 + 49] = 0x10;
    CN_CHECK(d_req(buf, n, CN_SCRIBE_CODEC_LE) < 0);
    /* over 1 MiB: refused before reading */
    uint8_t *big = calloc(1, (1u << 20) + 1);
    CN_CHECK(d_req(big, (1u << 20) + 1, CN_SCRIBE_CODEC_LE) < 0);
    free(big);
}

static void test_bound(void)
{
    uint32_t bound = 0;
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_TREE_PROOF, false, &bound));
    CN_CHECK_EQ(bound, 1048576);
    CN_CHECK(cn_scribe_request_bound(CN_SCRIBE_OP_TREE_PROOF, true, &bound));
    CN_CHECK_EQ(bound, 1048576);
    CN_CHECK_STR(cn_scribe_op_name(43), "tree_proof");
    CN_CHECK_EQ(cn_scribe_tree_proof_limit(0, 0), 1);
    CN_CHECK_EQ(cn_scribe_tree_proof_limit(0, 5000), 4096);
    CN_CHECK_EQ(cn_scribe_tree_proof_limit(3, 7), 7);
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_requests),
    CN_TEST(test_replies),
    CN_TEST(test_refusals),
    CN_TEST(test_bound),
};

int main(int argc, char **argv)
{
    return fx_main(argc, argv, "tests/scribe/proof_fixtures.txt", cases,
                   sizeof cases / sizeof cases[0]);
}
