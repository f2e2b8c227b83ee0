/* Scribe branch, merge and cherry-pick layouts (opcodes 20-25, 32, 33,
 * operation_outcome kind 2, the merge-aware log): every layout encoded in
 * both codecs against the hand-written fixtures of branch_fixtures.txt and
 * decoded back field by field; every truncation and a trailing byte refused;
 * oversize counts, unknown tags and actions, bad names and broken
 * invariants refused; the exact request bounds; the fingerprints against
 * values computed with b3sum.
 * Usage: test_scribe_codec_branch FIXTURE_FILE */
#include "cairn/scribe.h"
#include "cn_test.h"
#include "scribe/fixture.h"

static const char *fixtures = "tests/scribe/branch_fixtures.txt";

#define LE CN_SCRIBE_CODEC_LE
#define BE CN_SCRIBE_CODEC_BE
#define CODEC(c) ((cn_scribe_codec_t)(c))
#define CREATED 1700000000000ull

static cn_scribe_id_t id_from(uint8_t first)
{
    cn_scribe_id_t id;
    fx_id(id.b, first);
    return id;
}

static cn_scribe_str_t S(const char *s)
{
    return cn_scribe_cstr(s);
}

static bool str_is(cn_scribe_str_t a, const char *want)
{
    size_t n = strlen(want);
    return a.len == n && (n == 0 || memcmp(a.p, want, n) == 0);
}

static bool id_is(cn_scribe_id_t a, uint8_t first)
{
    cn_scribe_id_t b = id_from(first);
    return memcmp(a.b, b.b, 16) == 0;
}

static uint8_t gbuf[16384];

/* The encoder's bytes b must be fixture NAME of codec c (fx_golden). */
static void golden(const char *name, int c, const cn_buf_t *b, fx_dec_fn dec)
{
    fx_golden(fixtures, name, c, b, dec, gbuf, sizeof gbuf);
}

/* ---- decoder adapters ------------------------------------------------------------- */
#define DEC(fn, type)                                                       \
    static cn_err_t d_##fn(const uint8_t *p, size_t n, cn_scribe_codec_t c) \
    {                                                                       \
        type v;                                                             \
        return cn_scribe_dec_##fn(p, n, c, &v);                             \
    }
DEC(branch_list_req, cn_scribe_branch_list_req_t)
DEC(branch_list_resp, cn_scribe_branch_list_resp_t)
DEC(branch_mutate_req, cn_scribe_branch_mutate_req_t)
DEC(branch_mutate_resp, cn_scribe_branch_outcome_t)
DEC(branch_info_req, cn_scribe_branch_info_req_t)
DEC(branch_info_resp, cn_scribe_branch_info_t)
DEC(outcome_req, cn_scribe_outcome_req_t)
DEC(outcome_resp, cn_scribe_outcome_resp_t)
DEC(branch_outcome_resp, cn_scribe_outcome_resp_t)
DEC(merge_submit_req, cn_scribe_merge_submit_req_t)
DEC(submit_resp, cn_scribe_submit_outcome_t)
DEC(merge_read_req, cn_scribe_merge_read_req_t)
DEC(merge_read_resp, cn_scribe_merge_read_resp_t)
DEC(pick_info_req, cn_scribe_pick_info_req_t)
DEC(pick_info_resp, cn_scribe_pick_info_t)
DEC(pick_submit_req, cn_scribe_pick_submit_req_t)
DEC(log_req, cn_scribe_log_req_t)

static cn_err_t d_log_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_log_resp_t v;
    return cn_scribe_dec_log_resp(p, n, c, false, &v);
}
static cn_err_t d_log_resp_all(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    cn_scribe_log_resp_t v;
    return cn_scribe_dec_log_resp(p, n, c, true, &v);
}

/* ---- sample values (the fixtures' header names the ids) -------------------------- */
static cn_scribe_branch_info_t feature_info(uint64_t head)
{
    cn_scribe_branch_info_t bi = { .id = id_from(0x50),
                                   .name = S("feature"),
                                   .head = head,
                                   .has_origin = true,
                                   .origin_branch = id_from(0x10),
                                   .origin_change = 5,
                                   .created_ms = CREATED };
    return bi;
}

static cn_scribe_branch_info_t main_info(void)
{
    cn_scribe_branch_info_t bi = {
        .id = id_from(0x10), .name = S("main"), .head = 7, .created_ms = CREATED
    };
    return bi;
}

static bool info_is(const cn_scribe_branch_info_t *a, const cn_scribe_branch_info_t *b)
{
    return memcmp(a->id.b, b->id.b, 16) == 0 && a->name.len == b->name.len &&
           memcmp(a->name.p, b->name.p, a->name.len) == 0 && a->head == b->head &&
           a->has_origin == b->has_origin &&
           (!a->has_origin || (memcmp(a->origin_branch.b, b->origin_branch.b, 16) == 0 &&
                               a->origin_change == b->origin_change)) &&
           a->created_ms == b->created_ms;
}

static cn_digest_t digest(const char *hex)
{
    cn_digest_t d;
    cn_digest_parse(hex, 64, &d);
    return d;
}
#define MANIFEST "8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1"
#define CHANGESET "d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c"
#define COMMIT "54e5920c5c0672cbcf8e1ee894d195db8aaa8fd5cd52d4dd048363d07879cfca"

/* The target's ordinary submit inside a merge or cherry-pick. */
static cn_scribe_submit_req_t target_submit(uint8_t op, const char *msg, uint64_t base)
{
    cn_scribe_submit_req_t s = { .repo = id_from(0),
                                 .incarnation = id_from(0x20),
                                 .operation = id_from(op),
                                 .branch = id_from(0x10),
                                 .workspace = id_from(0x40),
                                 .base = base,
                                 .changeset = digest(CHANGESET),
                                 .author = S("ann"),
                                 .message = S(msg) };
    return s;
}

/* ---- branch names ------------------------------------------------------------------- */
static void test_branch_names(void)
{
    static const char *const good[] = { "main",  "feature", "feature/ui", "release-1.2", "a",
                                        "A_b.c", "x/y/z",   "v1..2",      "team/ann" };
    static const char *const bad[] = { "",     "-x",   ".x",  "a/.b", "a//b",
                                       "/a",   "a/",   "a b", "a@1",  "caf\xc3\xa9",
                                       "a/..", "a\tb", "a:b", "a\\b", "a~1" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CN_CHECK(cn_scribe_branch_name_valid(S(good[i])));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (cn_scribe_branch_name_valid(S(bad[i])))
            fprintf(stderr, "# name \"%s\" accepted\n", bad[i]);
        CN_CHECK(!cn_scribe_branch_name_valid(S(bad[i])));
    }
    char long_name[258];
    memset(long_name, 'n', sizeof long_name);
    CN_CHECK(cn_scribe_branch_name_valid((cn_scribe_str_t){ (const uint8_t *)long_name, 256 }));
    CN_CHECK(!cn_scribe_branch_name_valid((cn_scribe_str_t){ (const uint8_t *)long_name, 257 }));

    /* a request naming an invalid branch is malformed, and cannot be encoded */
    cn_scribe_branch_info_req_t q = { .repo = id_from(0), .by = 2, .name = S("a b") };
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_scribe_enc_branch_info_req(&b, LE, &q), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    FX(bad_name, "000102030405060708090a0b0c0d0e0f 02 0300 \"a b\"");
    CN_CHECK_EQ(d_branch_info_req(bad_name, bad_name_len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- branch info, branch_list (20), branch_info (22) -------------------------------- */
static void test_branch_info(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_branch_info_t m = main_info(), f = feature_info(9);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_info_resp(&b, CODEC(c), &m), CN_OK);
        golden("branch_info_main", c, &b, d_branch_info_resp);
        cn_scribe_branch_info_t d;
        CN_CHECK_EQ(cn_scribe_dec_branch_info_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(info_is(&d, &m) && !d.has_origin);
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_info_resp(&b, CODEC(c), &f), CN_OK);
        golden("branch_info_feature", c, &b, d_branch_info_resp);
        CN_CHECK_EQ(cn_scribe_dec_branch_info_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(info_is(&d, &f) && d.has_origin && d.origin_change == 5);

        cn_scribe_branch_info_req_t q = { .repo = id_from(0), .by = 2, .name = S("feature") };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_info_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_info_req_name", c, &b, d_branch_info_req);
        cn_scribe_branch_info_req_t dq;
        CN_CHECK_EQ(cn_scribe_dec_branch_info_req(b.data, b.len, CODEC(c), &dq), CN_OK);
        CN_CHECK(dq.by == 2 && str_is(dq.name, "feature"));
        q = (cn_scribe_branch_info_req_t){ .repo = id_from(0), .by = 1, .id = id_from(0x50) };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_info_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_info_req_id", c, &b, d_branch_info_req);
        CN_CHECK_EQ(cn_scribe_dec_branch_info_req(b.data, b.len, CODEC(c), &dq), CN_OK);
        CN_CHECK(dq.by == 1 && id_is(dq.id, 0x50));
    }
    /* invariants: an origin after the head, a branch that is its own origin */
    cn_scribe_branch_info_t f = feature_info(4);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_branch_info_resp(&b, LE, &f), CN_E_INVALID);
    f = feature_info(9);
    f.origin_branch = f.id;
    CN_CHECK_EQ(cn_scribe_enc_branch_info_resp(&b, LE, &f), CN_E_INVALID);
    FX(late_origin, "505152535455565758595a5b5c5d5e5f 0700 \"feature\" 0400000000000000 01"
                    " 101112131415161718191a1b1c1d1e1f 0500000000000000 0068e5cf8b010000");
    CN_CHECK_EQ(d_branch_info_resp(late_origin, late_origin_len, LE), CN_E_PROTOCOL);
    FX(self_origin, "505152535455565758595a5b5c5d5e5f 0700 \"feature\" 0900000000000000 01"
                    " 505152535455565758595a5b5c5d5e5f 0500000000000000 0068e5cf8b010000");
    CN_CHECK_EQ(d_branch_info_resp(self_origin, self_origin_len, LE), CN_E_PROTOCOL);
    FX(bad_bool, "101112131415161718191a1b1c1d1e1f 0400 \"main\" 0700000000000000 02"
                 " 0068e5cf8b010000");
    CN_CHECK_EQ(d_branch_info_resp(bad_bool, bad_bool_len, LE), CN_E_PROTOCOL);
    FX(by3, "000102030405060708090a0b0c0d0e0f 03 505152535455565758595a5b5c5d5e5f");
    CN_CHECK_EQ(d_branch_info_req(by3, by3_len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_branch_list(void)
{
    cn_buf_t b = { 0 };
    cn_scribe_branch_info_t rows[2] = { feature_info(9), main_info() };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_branch_list_req_t q = {
            .repo = id_from(0), .limit = 100, .has_after = true, .after = S("feature")
        };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_list_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_list_req", c, &b, d_branch_list_req);
        cn_scribe_branch_list_req_t dq;
        CN_CHECK_EQ(cn_scribe_dec_branch_list_req(b.data, b.len, CODEC(c), &dq), CN_OK);
        CN_CHECK(dq.limit == 100 && dq.has_after && str_is(dq.after, "feature"));
        q = (cn_scribe_branch_list_req_t){ .repo = id_from(0) };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_list_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_list_req_first", c, &b, d_branch_list_req);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_list_resp(&b, CODEC(c), rows, 2, false), CN_OK);
        golden("branch_list_resp", c, &b, d_branch_list_resp);
        cn_scribe_branch_list_resp_t r;
        CN_CHECK_EQ(cn_scribe_dec_branch_list_resp(b.data, b.len, CODEC(c), &r), CN_OK);
        CN_CHECK(r.count == 2 && !r.more);
        cn_scribe_branch_info_t d;
        CN_CHECK(cn_scribe_next_branch_info(&r.rows, &d) && info_is(&d, &rows[0]));
        CN_CHECK(cn_scribe_next_branch_info(&r.rows, &d) && info_is(&d, &rows[1]));
        CN_CHECK(!cn_scribe_next_branch_info(&r.rows, &d));
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_list_resp(&b, CODEC(c), rows, 1, true), CN_OK);
        golden("branch_list_resp_more", c, &b, d_branch_list_resp);
    }
    /* names strictly ascending; more needs a row to continue from */
    cn_scribe_branch_info_t back[2] = { main_info(), feature_info(9) };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_branch_list_resp(&b, LE, back, 2, false), CN_E_INVALID);
    cn_scribe_branch_info_t twice[2] = { main_info(), main_info() };
    CN_CHECK_EQ(cn_scribe_enc_branch_list_resp(&b, LE, twice, 2, false), CN_E_INVALID);
    CN_CHECK_EQ(cn_scribe_enc_branch_list_resp(&b, LE, rows, 0, true), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    cn_scribe_wr_t w = cn_scribe_wr_init(&b, LE);
    cn_scribe_wr_u32(&w, 2);
    cn_scribe_wr_branch_info(&w, &back[0]);
    cn_scribe_wr_branch_info(&w, &back[1]);
    cn_scribe_wr_bool(&w, false);
    CN_CHECK_EQ(d_branch_list_resp(b.data, b.len, LE), CN_E_PROTOCOL);
    FX(empty_more, "00000000 01");
    CN_CHECK_EQ(d_branch_list_resp(empty_more, empty_more_len, LE), CN_E_PROTOCOL);
    FX(empty, "00000000 00");
    CN_CHECK_EQ(d_branch_list_resp(empty, empty_len, LE), CN_OK);
    /* oversize count, and a count the bytes cannot hold */
    FX(over, "01100000 00");
    CN_CHECK_EQ(d_branch_list_resp(over, over_len, LE), CN_E_PROTOCOL);
    FX(short_rows, "00100000 00");
    CN_CHECK_EQ(d_branch_list_resp(short_rows, short_rows_len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- branch_mutate (21), its outcome, branch_outcome (23) ---------------------------- */
static cn_scribe_branch_mutate_req_t create_req(void)
{
    cn_scribe_branch_mutate_req_t q = { .repo = id_from(0),
                                        .incarnation = id_from(0x20),
                                        .operation = id_from(0x30),
                                        .branch = id_from(0x50),
                                        .name = S("feature"),
                                        .action = CN_SCRIBE_BRANCH_CREATE,
                                        .source = id_from(0x10),
                                        .source_change = 5 };
    return q;
}

static cn_scribe_branch_mutate_req_t rename_req(void)
{
    cn_scribe_branch_mutate_req_t q = { .repo = id_from(0),
                                        .incarnation = id_from(0x20),
                                        .operation = id_from(0x60),
                                        .branch = id_from(0x50),
                                        .name = S("feature/ui"),
                                        .action = CN_SCRIBE_BRANCH_RENAME,
                                        .expected = S("feature") };
    return q;
}

static void test_branch_mutate(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_branch_mutate_req_t q = create_req(), d;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_mutate_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_create_req", c, &b, d_branch_mutate_req);
        CN_CHECK_EQ(cn_scribe_dec_branch_mutate_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.action == 1 && str_is(d.name, "feature") && id_is(d.source, 0x10) &&
                 d.source_change == 5 && id_is(d.operation, 0x30) && id_is(d.incarnation, 0x20));
        q = rename_req();
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_mutate_req(&b, CODEC(c), &q), CN_OK);
        golden("branch_rename_req", c, &b, d_branch_mutate_req);
        CN_CHECK_EQ(cn_scribe_dec_branch_mutate_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.action == 2 && str_is(d.name, "feature/ui") && str_is(d.expected, "feature"));
    }
    /* actions other than create and rename (3 archive included), zero ids, bad names */
    cn_scribe_branch_mutate_req_t q = create_req();
    for (unsigned action = 0; action < 256; action++) {
        q.action = (uint8_t)action;
        cn_buf_reset(&b);
        /* create's fields only: rename (2) lacks its expected name */
        cn_err_t want = action == CN_SCRIBE_BRANCH_CREATE ? CN_OK : CN_E_INVALID;
        CN_CHECK_EQ(cn_scribe_enc_branch_mutate_req(&b, LE, &q), want);
    }
    FX(archive, "000102030405060708090a0b0c0d0e0f 202122232425262728292a2b2c2d2e2f"
                " 303132333435363738393a3b3c3d3e3f 505152535455565758595a5b5c5d5e5f"
                " 0700 \"feature\" 03");
    CN_CHECK_EQ(d_branch_mutate_req(archive, archive_len, LE), CN_E_PROTOCOL);
    archive[archive_len - 1] = 0;
    CN_CHECK_EQ(d_branch_mutate_req(archive, archive_len, LE), CN_E_PROTOCOL);
    q = create_req();
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_branch_mutate_req(&b, LE, &q), CN_OK);
    cn_buf_t z = { 0 };
    cn_buf_append(&z, b.data, b.len);
    memset(z.data + 32, 0, 16); /* operation 0 */
    CN_CHECK_EQ(d_branch_mutate_req(z.data, z.len, LE), CN_E_PROTOCOL);
    memcpy(z.data, b.data, b.len);
    memset(z.data + 48, 0, 16); /* branch 0 */
    CN_CHECK_EQ(d_branch_mutate_req(z.data, z.len, LE), CN_E_PROTOCOL);
    memcpy(z.data, b.data, b.len);
    z.data[66] = '-'; /* "-eature" */
    CN_CHECK_EQ(d_branch_mutate_req(z.data, z.len, LE), CN_E_PROTOCOL);
    q = rename_req();
    q.expected = S("fe ature");
    CN_CHECK_EQ(cn_scribe_enc_branch_mutate_req(&b, LE, &q), CN_E_INVALID);
    cn_buf_free(&z);
    cn_buf_free(&b);
}

static void test_branch_outcomes(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_branch_outcome_t acc = { .operation = id_from(0x30),
                                           .outcome = CN_SCRIBE_OUTCOME_ACCEPTED,
                                           .branch = feature_info(5) },
                                   d;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_mutate_resp(&b, CODEC(c), &acc), CN_OK);
        golden("branch_outcome_accepted", c, &b, d_branch_mutate_resp);
        CN_CHECK_EQ(cn_scribe_dec_branch_mutate_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.outcome == 1 && info_is(&d.branch, &acc.branch));
        cn_scribe_branch_outcome_t rej = { .operation = id_from(0x60),
                                           .outcome = CN_SCRIBE_OUTCOME_REJECTED,
                                           .code = CN_SCRIBE_E_BRANCH_EXISTS,
                                           .detail = S("taken") };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_mutate_resp(&b, CODEC(c), &rej), CN_OK);
        golden("branch_outcome_rejected", c, &b, d_branch_mutate_resp);
        CN_CHECK_EQ(cn_scribe_dec_branch_mutate_resp(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.outcome == 2 && d.code == 110 && str_is(d.detail, "taken"));

        /* branch_outcome (23): the lookup and its kinds */
        cn_scribe_outcome_req_t oq = { id_from(0), id_from(0x30) };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_outcome_req(&b, CODEC(c), &oq), CN_OK);
        golden("branch_outcome_req", c, &b, d_outcome_req);
        cn_scribe_outcome_resp_t o = { .kind = CN_SCRIBE_OUTCOME_KIND_BRANCH, .branch = acc }, od;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_outcome_resp(&b, CODEC(c), &o), CN_OK);
        golden("branch_outcome_resp", c, &b, d_branch_outcome_resp);
        CN_CHECK_EQ(cn_scribe_dec_branch_outcome_resp(b.data, b.len, CODEC(c), &od), CN_OK);
        CN_CHECK(od.kind == 2 && info_is(&od.branch.branch, &acc.branch));
        o.kind = CN_SCRIBE_OUTCOME_KIND_UNKNOWN;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_branch_outcome_resp(&b, CODEC(c), &o), CN_OK);
        golden("branch_outcome_unknown", c, &b, d_branch_outcome_resp);

        /* operation_outcome (10) answers a branch operation with kind 2 */
        cn_scribe_outcome_resp_t ob = { .kind = CN_SCRIBE_OUTCOME_KIND_BRANCH,
                                        .branch = { .operation = id_from(0x60),
                                                    .outcome = CN_SCRIBE_OUTCOME_REJECTED,
                                                    .code = CN_SCRIBE_E_NAME_MISMATCH,
                                                    .detail = S("stale") } };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_outcome_resp(&b, CODEC(c), &ob, NULL), CN_OK);
        golden("operation_outcome_branch", c, &b, d_outcome_resp);
        CN_CHECK_EQ(cn_scribe_dec_outcome_resp(b.data, b.len, CODEC(c), &od), CN_OK);
        CN_CHECK(od.kind == 2 && od.branch.code == 111 && str_is(od.branch.detail, "stale"));
    }
    /* branch_outcome never carries a submit; unknown kinds and outcomes; code 0 */
    cn_scribe_outcome_resp_t sub = { .kind = CN_SCRIBE_OUTCOME_KIND_SUBMIT };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_branch_outcome_resp(&b, LE, &sub), CN_E_INVALID);
    FX(kind1, "01 303132333435363738393a3b3c3d3e3f 01 0100000000000000 " COMMIT);
    CN_CHECK_EQ(d_outcome_resp(kind1, kind1_len, LE), CN_OK);
    CN_CHECK_EQ(d_branch_outcome_resp(kind1, kind1_len, LE), CN_E_PROTOCOL);
    FX(kind3, "03");
    CN_CHECK_EQ(d_outcome_resp(kind3, kind3_len, LE), CN_E_PROTOCOL);
    CN_CHECK_EQ(d_branch_outcome_resp(kind3, kind3_len, LE), CN_E_PROTOCOL);
    FX(outcome3, "303132333435363738393a3b3c3d3e3f 03");
    CN_CHECK_EQ(d_branch_mutate_resp(outcome3, outcome3_len, LE), CN_E_PROTOCOL);
    FX(code0, "606162636465666768696a6b6c6d6e6f 02 0000 0000");
    CN_CHECK_EQ(d_branch_mutate_resp(code0, code0_len, LE), CN_E_PROTOCOL);
    cn_scribe_branch_outcome_t rej0 = { .outcome = 2 };
    CN_CHECK_EQ(cn_scribe_enc_branch_mutate_resp(&b, LE, &rej0), CN_E_INVALID);
    cn_buf_free(&b);
}

/* ---- merge_submit (24), cherry-pick (32, 33) ---------------------------------------- */
static cn_scribe_merge_submit_req_t merge_req(void)
{
    cn_scribe_merge_submit_req_t q = { .submit = target_submit(0x60, "merge feature", 7),
                                       .target_head = 7,
                                       .source = id_from(0x50),
                                       .source_head = 9,
                                       .base_branch = id_from(0x10),
                                       .base = 5 };
    return q;
}

static void test_merge_submit(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_merge_submit_req_t q = merge_req(), d;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_submit_req(&b, CODEC(c), &q), CN_OK);
        golden("merge_submit_req", c, &b, d_merge_submit_req);
        CN_CHECK_EQ(cn_scribe_dec_merge_submit_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.target_head == 7 && d.source_head == 9 && d.base == 5 && id_is(d.source, 0x50) &&
                 id_is(d.base_branch, 0x10) && id_is(d.submit.operation, 0x60) &&
                 str_is(d.submit.message, "merge feature"));
        /* the ordinary Submit outcome answers it */
        cn_scribe_submit_outcome_t acc = {
            .operation = id_from(0x60), .outcome = 1, .change = 10, .commit = digest(COMMIT)
        };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, CODEC(c), &acc, NULL), CN_OK);
        golden("merge_submit_accepted", c, &b, d_submit_resp);
        cn_scribe_str_t path = S("a.txt");
        cn_scribe_submit_outcome_t rej = { .operation = id_from(0x60),
                                           .outcome = 2,
                                           .code = CN_SCRIBE_E_BASE_CONFLICT,
                                           .head = 9,
                                           .detail = S("late"),
                                           .path_count = 1 };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, CODEC(c), &rej, &path), CN_OK);
        golden("merge_submit_rejected", c, &b, d_submit_resp);
    }
    /* a base past either head, a merge of the target into itself, a target head that
     * is not the submit's base: refused both ways */
    cn_scribe_merge_submit_req_t bad[4];
    for (int i = 0; i < 4; i++)
        bad[i] = merge_req();
    bad[0].base = 10;
    bad[1].base = 8;
    bad[1].target_head = bad[1].submit.base = 7;
    bad[2].source = id_from(0x10);
    bad[3].target_head = 8;
    for (int i = 0; i < 4; i++) {
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_submit_req(&b, LE, &bad[i]), CN_E_INVALID);
        CN_CHECK_EQ(b.len, 0);
    }
    cn_scribe_merge_submit_req_t q = merge_req();
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_merge_submit_req(&b, LE, &q), CN_OK);
    size_t tail = 4 + 143; /* after the nested submit: target head, source, ... */
    b.data[tail] = 8;      /* target head 8, nested base 7 */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    b.data[tail] = 7;
    b.data[b.len - 8] = 10; /* base 10 > source head 9 */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    b.data[b.len - 8] = 5;
    memcpy(b.data + tail + 8, id_from(0x10).b, 16); /* source = target */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    memcpy(b.data + tail + 8, id_from(0x50).b, 16);
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_OK);
    b.data[0] = 142; /* the nested length one short: the nested submit is truncated */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    b.data[0] = 144; /* one long: trailing byte inside it */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    b.data[0] = 143;
    memset(b.data + 4 + 32, 0, 16); /* nested operation 0 */
    CN_CHECK_EQ(d_merge_submit_req(b.data, b.len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_cherry_pick(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_pick_info_req_t q = { id_from(0), id_from(0x10), id_from(0x50), 8 }, dq;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_pick_info_req(&b, CODEC(c), &q), CN_OK);
        CN_CHECK_EQ(b.len, 56);
        golden("pick_info_req", c, &b, d_pick_info_req);
        CN_CHECK_EQ(cn_scribe_dec_pick_info_req(b.data, b.len, CODEC(c), &dq), CN_OK);
        CN_CHECK(id_is(dq.target, 0x10) && id_is(dq.source, 0x50) && dq.change == 8);

        cn_scribe_pick_info_t v = { .target = main_info(),
                                    .source = feature_info(8),
                                    .parent_branch = id_from(0x50),
                                    .parent = 6 },
                              dv;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_pick_info_resp(&b, CODEC(c), &v), CN_OK);
        golden("pick_info_resp", c, &b, d_pick_info_resp);
        CN_CHECK_EQ(cn_scribe_dec_pick_info_resp(b.data, b.len, CODEC(c), &dv), CN_OK);
        CN_CHECK(info_is(&dv.target, &v.target) && info_is(&dv.source, &v.source) &&
                 id_is(dv.parent_branch, 0x50) && dv.parent == 6 && !dv.already_applied);

        cn_scribe_pick_submit_req_t s = { .submit = target_submit(0x70, "fix", 7),
                                          .target_head = 7,
                                          .source = id_from(0x50),
                                          .source_change = 8 },
                                    ds;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_pick_submit_req(&b, CODEC(c), &s), CN_OK);
        golden("pick_submit_req", c, &b, d_pick_submit_req);
        CN_CHECK_EQ(cn_scribe_dec_pick_submit_req(b.data, b.len, CODEC(c), &ds), CN_OK);
        CN_CHECK(ds.target_head == 7 && ds.source_change == 8 && id_is(ds.source, 0x50) &&
                 str_is(ds.submit.message, "fix"));
        cn_scribe_submit_outcome_t rej = { .operation = id_from(0x70),
                                           .outcome = 2,
                                           .code = CN_SCRIBE_E_ALREADY_APPLIED,
                                           .head = 7,
                                           .detail = S("already applied") };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_submit_resp(&b, CODEC(c), &rej, NULL), CN_OK);
        golden("pick_submit_rejected", c, &b, d_submit_resp);
    }
    /* the picked change's parent precedes it; the target head is the submit's base */
    cn_scribe_pick_info_t v = { .target = main_info(), .source = feature_info(8), .parent = 8 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_pick_info_resp(&b, LE, &v), CN_E_INVALID);
    v.parent = 7;
    CN_CHECK_EQ(cn_scribe_enc_pick_info_resp(&b, LE, &v), CN_OK);
    b.data[b.len - 9] = 8; /* parent 8 = the selected change */
    CN_CHECK_EQ(d_pick_info_resp(b.data, b.len, LE), CN_E_PROTOCOL);
    b.data[b.len - 9] = 7;
    b.data[b.len - 1] = 2; /* already_applied 2 */
    CN_CHECK_EQ(d_pick_info_resp(b.data, b.len, LE), CN_E_PROTOCOL);
    cn_scribe_pick_submit_req_t s = { .submit = target_submit(0x70, "fix", 7),
                                      .target_head = 6,
                                      .source = id_from(0x50),
                                      .source_change = 8 };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_pick_submit_req(&b, LE, &s), CN_E_INVALID);
    cn_buf_free(&b);
}

/* ---- fingerprints (values from b3sum over the documented byte strings) --------------- */
static void check_fp(const cn_digest_t *d, const char *hex)
{
    cn_digest_t want = digest(hex);
    CN_CHECK(memcmp(d->b, want.b, CN_DIGEST_LEN) == 0);
}

static void test_fingerprints(void)
{
    cn_digest_t a, z;
    cn_scribe_branch_mutate_req_t bq = create_req();
    cn_scribe_branch_fingerprint(&bq, &a);
    check_fp(&a, "32306a5bd842978cb9ad8097bb7e96ed654e36d52b29db038ab6725f58a31d7e");
    bq = rename_req();
    cn_scribe_branch_fingerprint(&bq, &a);
    check_fp(&a, "fd583806cbf804cdac5e02be5ffb22897efccf6f94da4fdc92e52cbec79a9192");
    bq.operation = id_from(0x70); /* the operation id is not intent */
    cn_scribe_branch_fingerprint(&bq, &z);
    CN_CHECK(memcmp(a.b, z.b, 32) == 0);
    bq.incarnation = id_from(0x21); /* the incarnation is */
    cn_scribe_branch_fingerprint(&bq, &z);
    CN_CHECK(memcmp(a.b, z.b, 32) != 0);

    cn_scribe_merge_submit_req_t mq = merge_req();
    cn_scribe_submit_fingerprint(&mq.submit, &a);
    check_fp(&a, "ff1c56f6df48d70d3b72a03aa26a93d648dfd95a4653e213eee86f4a1c94bb13");
    cn_scribe_merge_fingerprint(&mq, &a);
    check_fp(&a, "6cd85b1c2d588f2715bb6f4385c099bde347ddd12fb80ef00d17c01759972b94");
    mq.submit.author = S("bob"); /* attribution is not intent */
    cn_scribe_merge_fingerprint(&mq, &z);
    CN_CHECK(memcmp(a.b, z.b, 32) == 0);
    for (int i = 0; i < 4; i++) { /* every merge field is intent */
        mq = merge_req();
        if (i == 0)
            mq.source_head++;
        else if (i == 1)
            mq.base--;
        else if (i == 2)
            mq.base_branch = id_from(0x70);
        else
            mq.target_head = mq.submit.base = 8;
        cn_scribe_merge_fingerprint(&mq, &z);
        CN_CHECK(memcmp(a.b, z.b, 32) != 0);
    }

    cn_scribe_pick_submit_req_t pq = { .submit = target_submit(0x70, "fix", 7),
                                       .target_head = 7,
                                       .source = id_from(0x50),
                                       .source_change = 8 };
    cn_scribe_submit_fingerprint(&pq.submit, &a);
    check_fp(&a, "259f196eb5a33358e5b8866431e4a462304a0637afed3adf17f23199b5c6d5e8");
    cn_scribe_pick_fingerprint(&pq, &a);
    check_fp(&a, "c4d7e557b8423842fcc64dea2dcb7d7d16db8bb13c55e80577d966e8491eb9b0");
    pq.source_change = 9;
    cn_scribe_pick_fingerprint(&pq, &z);
    CN_CHECK(memcmp(a.b, z.b, 32) != 0);

    /* codec-independent: the same request decoded from codec 2 */
    cn_buf_t b = { 0 };
    mq = merge_req();
    CN_CHECK_EQ(cn_scribe_enc_merge_submit_req(&b, BE, &mq), CN_OK);
    cn_scribe_merge_submit_req_t d;
    CN_CHECK_EQ(cn_scribe_dec_merge_submit_req(b.data, b.len, BE, &d), CN_OK);
    cn_scribe_merge_fingerprint(&d, &z);
    check_fp(&z, "6cd85b1c2d588f2715bb6f4385c099bde347ddd12fb80ef00d17c01759972b94");
    cn_buf_free(&b);
}

/* ---- merge_read (25) ------------------------------------------------------------------ */
static void test_merge_read_requests(void)
{
    cn_buf_t b = { 0 };
    cn_scribe_str_t two[2] = { S("a.txt"), S("b.bin") }, one[1] = { S("b.txt") },
                    dep[1] = { S("a.txt") };
    for (int c = 1; c <= 2; c++) {
        struct {
            const char *name;
            cn_scribe_merge_read_req_t q;
            const cn_scribe_str_t *paths;
        } cases[] = {
            { "merge_read_chains_req",
              { .repo = id_from(0),
                .tag = 1,
                .left = 9,
                .right = 5,
                .has_cursor = true,
                .cursor = S("a.txt") },
              NULL },
            { "merge_read_states_req",
              { .repo = id_from(0), .tag = 2, .branch = id_from(0x50), .revision = 9, .count = 2 },
              two },
            { "merge_read_descendants_req",
              { .repo = id_from(0),
                .tag = 3,
                .branch = id_from(0x50),
                .revision = 9,
                .path = S("art"),
                .has_cursor = true,
                .cursor = S("art/x") },
              NULL },
            { "merge_read_origins_req",
              { .repo = id_from(0),
                .tag = 4,
                .branch = id_from(0x50),
                .revision = 9,
                .other = id_from(0x10),
                .other_revision = 5,
                .count = 1 },
              one },
            { "merge_read_unchanged_req",
              { .repo = id_from(0),
                .tag = 5,
                .branch = id_from(0x10),
                .from = 5,
                .to = 9,
                .count = 1 },
              dep },
            { "merge_read_base_req",
              { .repo = id_from(0),
                .tag = 6,
                .branch = id_from(0x10),
                .revision = 7,
                .other = id_from(0x50),
                .other_revision = 9 },
              NULL },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            cn_buf_reset(&b);
            CN_CHECK_EQ(cn_scribe_enc_merge_read_req(&b, CODEC(c), &cases[i].q, cases[i].paths),
                        CN_OK);
            golden(cases[i].name, c, &b, d_merge_read_req);
            cn_scribe_merge_read_req_t d;
            CN_CHECK_EQ(cn_scribe_dec_merge_read_req(b.data, b.len, CODEC(c), &d), CN_OK);
            const cn_scribe_merge_read_req_t *q = &cases[i].q;
            CN_CHECK(d.tag == q->tag && d.left == q->left && d.right == q->right &&
                     d.revision == q->revision && d.from == q->from && d.to == q->to &&
                     d.other_revision == q->other_revision && d.count == q->count &&
                     d.has_cursor == q->has_cursor && d.cursor.len == q->cursor.len &&
                     d.path.len == q->path.len);
            cn_scribe_str_t pth;
            for (uint32_t k = 0; k < q->count; k++)
                CN_CHECK(cn_scribe_next_path(&d.paths, &pth) && pth.len == cases[i].paths[k].len &&
                         memcmp(pth.p, cases[i].paths[k].p, pth.len) == 0);
            CN_CHECK(!cn_scribe_next_path(&d.paths, &pth));
        }
    }
    /* unknown tags, empty paths, oversize counts, counts the bytes cannot hold */
    for (unsigned tag = 0; tag < 256; tag++) {
        if (tag >= 1 && tag <= 6)
            continue;
        uint8_t p[17];
        memset(p, 0, 16);
        p[16] = (uint8_t)tag;
        CN_CHECK_EQ(d_merge_read_req(p, sizeof p, LE), CN_E_PROTOCOL);
        cn_scribe_merge_read_req_t q = { .tag = (uint8_t)tag };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_read_req(&b, LE, &q, NULL), CN_E_INVALID);
    }
    FX(empty_path, "000102030405060708090a0b0c0d0e0f 02 505152535455565758595a5b5c5d5e5f"
                   " 0900000000000000 01000000 0000");
    CN_CHECK_EQ(d_merge_read_req(empty_path, empty_path_len, LE), CN_E_PROTOCOL);
    FX(short_list, "000102030405060708090a0b0c0d0e0f 05 505152535455565758595a5b5c5d5e5f"
                   " 0500000000000000 0900000000000000 e8030000 0500 \"a.txt\"");
    CN_CHECK_EQ(d_merge_read_req(short_list, short_list_len, LE), CN_E_PROTOCOL);
    FX(no_path, "000102030405060708090a0b0c0d0e0f 03 505152535455565758595a5b5c5d5e5f"
                " 0900000000000000 0000 00");
    CN_CHECK_EQ(d_merge_read_req(no_path, no_path_len, LE), CN_E_PROTOCOL);
    static cn_scribe_str_t many[CN_SCRIBE_MAX_MERGE_PATHS + 1];
    for (size_t i = 0; i < sizeof many / sizeof many[0]; i++)
        many[i] = S("p");
    cn_scribe_merge_read_req_t q = { .tag = 2, .count = CN_SCRIBE_MAX_MERGE_PATHS };
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_merge_read_req(&b, LE, &q, many), CN_OK);
    CN_CHECK_EQ(d_merge_read_req(b.data, b.len, LE), CN_OK);
    q.count++;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_merge_read_req(&b, LE, &q, many), CN_E_INVALID);
    /* the same 1,025 paths written by hand */
    cn_scribe_wr_t w = cn_scribe_wr_init(&b, LE);
    cn_scribe_wr_raw(&w, id_from(0).b, 16);
    cn_scribe_wr_u8(&w, 2);
    cn_scribe_wr_raw(&w, id_from(0x50).b, 16);
    cn_scribe_wr_u64(&w, 9);
    cn_scribe_wr_u32(&w, CN_SCRIBE_MAX_MERGE_PATHS + 1);
    for (uint32_t i = 0; i <= CN_SCRIBE_MAX_MERGE_PATHS; i++)
        cn_scribe_wr_str16(&w, S("p"), 10);
    CN_CHECK_EQ(d_merge_read_req(b.data, b.len, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_merge_read_responses(void)
{
    cn_buf_t b = { 0 };
    cn_scribe_file_state_t live = { .kind = CN_SCRIBE_FILE_LIVE,
                                    .change = 9,
                                    .manifest = digest(MANIFEST),
                                    .size = 5,
                                    .mode = 0 },
                           gone = { .kind = CN_SCRIBE_FILE_TOMBSTONE, .change = 6 };
    const cn_scribe_file_state_t *states[3] = { &live, NULL, &gone };
    cn_scribe_path_state_t desc[2] = { { S("art"), { .kind = 2, .change = 4 } },
                                       { S("art/a.txt"), live } };
    desc[1].state.mode = 1;
    cn_scribe_origin_t origins[3] = { { 0, { NULL, 0 } }, { 1, S("a.txt") }, { 2, { NULL, 0 } } };
    cn_scribe_str_t paths[2] = { S("a.txt"), S("b.bin") };
    cn_scribe_id_t main_id = id_from(0x10);
    for (int c = 1; c <= 2; c++) {
        cn_scribe_codec_t k = CODEC(c);
        cn_scribe_merge_read_resp_t d;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_chains_resp(&b, k, 7, 5, false, S(""), paths, 2), CN_OK);
        golden("merge_read_chains_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        cn_scribe_str_t pth;
        CN_CHECK(d.tag == 1 && d.left == 7 && d.right == 5 && !d.has_cursor && d.count == 2);
        CN_CHECK(cn_scribe_next_path(&d.rows, &pth) && str_is(pth, "a.txt"));
        CN_CHECK(cn_scribe_next_path(&d.rows, &pth) && str_is(pth, "b.bin"));
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_chains_resp(&b, k, 5, 5, false, S(""), NULL, 0), CN_OK);
        golden("merge_read_chains_done", c, &b, d_merge_read_resp);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_states_resp(&b, k, states, 3), CN_OK);
        golden("merge_read_states_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        bool present;
        cn_scribe_file_state_t fs;
        CN_CHECK(d.tag == 2 && d.count == 3);
        CN_CHECK(cn_scribe_next_file_state(&d.rows, &present, &fs) && present && fs.kind == 1 &&
                 fs.change == 9 && fs.size == 5 && memcmp(fs.manifest.b, live.manifest.b, 32) == 0);
        CN_CHECK(cn_scribe_next_file_state(&d.rows, &present, &fs) && !present);
        CN_CHECK(cn_scribe_next_file_state(&d.rows, &present, &fs) && present && fs.kind == 2 &&
                 fs.change == 6);
        CN_CHECK(!cn_scribe_next_file_state(&d.rows, &present, &fs));

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_descendants_resp(&b, k, true, S("art/x"), desc, 2), CN_OK);
        golden("merge_read_descendants_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        cn_scribe_path_state_t ps;
        CN_CHECK(d.tag == 3 && d.has_cursor && str_is(d.cursor, "art/x") && d.count == 2);
        CN_CHECK(cn_scribe_next_path_state(&d.rows, &ps) && str_is(ps.path, "art") &&
                 ps.state.kind == 2 && ps.state.change == 4);
        CN_CHECK(cn_scribe_next_path_state(&d.rows, &ps) && str_is(ps.path, "art/a.txt") &&
                 ps.state.mode == 1);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_origins_resp(&b, k, origins, 3), CN_OK);
        golden("merge_read_origins_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        cn_scribe_origin_t o;
        CN_CHECK(d.tag == 4 && d.count == 3);
        CN_CHECK(cn_scribe_next_origin(&d.rows, &o) && o.kind == 0);
        CN_CHECK(cn_scribe_next_origin(&d.rows, &o) && o.kind == 1 && str_is(o.base_path, "a.txt"));
        CN_CHECK(cn_scribe_next_origin(&d.rows, &o) && o.kind == 2);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_unchanged_resp(&b, k, true), CN_OK);
        golden("merge_read_unchanged_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        CN_CHECK(d.tag == 5 && d.unchanged);

        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_merge_base_resp(&b, k, &main_id, 5), CN_OK);
        golden("merge_read_base_resp", c, &b, d_merge_read_resp);
        CN_CHECK_EQ(cn_scribe_dec_merge_read_resp(b.data, b.len, k, &d), CN_OK);
        CN_CHECK(d.tag == 6 && id_is(d.base_branch, 0x10) && d.base == 5);
    }
    cn_buf_free(&b);
}

/* Replies that break a rule: each must be refused, and the encoders refuse
 * the same values. */
static void test_merge_read_refusals(void)
{
    static const char *const bad[] = {
        "00",                                                          /* tag 0 */
        "07 00",                                                       /* tag 7 */
        "01 0500000000000000 0500000000000000 01 0100 \"a\" 00000000", /* done with a cursor */
        "01 0700000000000000 0500000000000000 00 01040000",            /* 1,025 paths */
        "02 01040000",                                                 /* 1,025 states */
        "03 00 01140000",                                              /* 5,121 entries */
        "04 01040000",                                                 /* 1,025 origins */
        "02 01000000 01 03 0100000000000000",                          /* kind 3 */
        "02 01000000 01 02 0000000000000000",                          /* change 0 */
        "02 01000000 02",                                              /* presence 2 */
        "03 00 01000000 0100 \"a\" 01 0100000000000000 " MANIFEST
        " 0000000000000000 03", /* mode 3 */
        "04 01000000 03",       /* origin 3 */
        "04 01000000 01 0000",  /* empty base path */
        "05 02",                /* bool 2 */
        "02 ff000000 00",       /* count beyond the bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FX(p, bad[i]);
        if (d_merge_read_resp(p, p_len, LE) == CN_OK)
            fprintf(stderr, "# refusal %zu accepted\n", i);
        CN_CHECK_EQ(d_merge_read_resp(p, p_len, LE), CN_E_PROTOCOL);
    }
    /* exactly at the limits they are accepted */
    cn_buf_t b = { 0 };
    static cn_scribe_path_state_t rows[CN_SCRIBE_MAX_MERGE_ENTRIES + 1];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        rows[i] = (cn_scribe_path_state_t){ S("a"), { .kind = 2, .change = 1 } };
    CN_CHECK_EQ(cn_scribe_enc_merge_descendants_resp(&b, BE, false, S(""), rows,
                                                     CN_SCRIBE_MAX_MERGE_ENTRIES),
                CN_OK);
    CN_CHECK_EQ(d_merge_read_resp(b.data, b.len, BE), CN_OK);
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_merge_descendants_resp(&b, BE, false, S(""), rows,
                                                     CN_SCRIBE_MAX_MERGE_ENTRIES + 1),
                CN_E_INVALID);
    cn_scribe_file_state_t zero = { .kind = 1, .change = 0 };
    const cn_scribe_file_state_t *sp = &zero;
    CN_CHECK_EQ(cn_scribe_enc_merge_states_resp(&b, LE, &sp, 1), CN_E_INVALID);
    CN_CHECK_EQ(cn_scribe_enc_merge_chains_resp(&b, LE, 4, 4, true, S("a"), NULL, 0), CN_E_INVALID);
    cn_scribe_origin_t o3 = { 3, { NULL, 0 } };
    CN_CHECK_EQ(cn_scribe_enc_merge_origins_resp(&b, LE, &o3, 1), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    cn_buf_free(&b);
}

/* ---- the merge-aware log (15) ------------------------------------------------------- */
static cn_scribe_log_row_t log_row(uint64_t change, const char *msg, uint64_t parent)
{
    cn_scribe_log_row_t r = { .change = change,
                              .commit = digest(COMMIT),
                              .branch = id_from(0x10),
                              .branch_name = S("main"),
                              .parent = parent,
                              .path = S("a.txt"),
                              .event = CN_REPOS_MODIFY,
                              .author = S("ann"),
                              .message = S(msg),
                              .time_ms = 1 };
    return r;
}

static void test_log_modes(void)
{
    cn_buf_t b = { 0 };
    for (int c = 1; c <= 2; c++) {
        cn_scribe_log_req_t q = { .repo = id_from(0),
                                  .branch = id_from(0x10),
                                  .has_path = true,
                                  .path = S("a.txt"),
                                  .follow_merges = true,
                                  .has_before = true,
                                  .before = 9,
                                  .has_after_path = true,
                                  .after_path = S("a.txt"),
                                  .limit = 100 },
                            d;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_log_req(&b, CODEC(c), &q), CN_OK);
        golden("log_follow_req", c, &b, d_log_req);
        CN_CHECK_EQ(cn_scribe_dec_log_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.follow_merges && !d.all_branches && !d.has_ceiling && d.before == 9);
        q = (cn_scribe_log_req_t){ .repo = id_from(0),
                                   .branch = id_from(0x10),
                                   .has_path = true,
                                   .path = S("a.txt"),
                                   .follow_merges = true,
                                   .all_branches = true,
                                   .has_ceiling = true,
                                   .ceiling = 9,
                                   .limit = 100 };
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_log_req(&b, CODEC(c), &q), CN_OK);
        golden("log_all_req", c, &b, d_log_req);
        CN_CHECK_EQ(cn_scribe_dec_log_req(b.data, b.len, CODEC(c), &d), CN_OK);
        CN_CHECK(d.all_branches && d.has_ceiling && d.ceiling == 9);

        cn_scribe_log_row_t merge = log_row(8, "merge feature", 7);
        merge.has_merge = true;
        merge.merge_branch = id_from(0x50);
        merge.merge_change = 9;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, CODEC(c), false, &merge, 1), CN_OK);
        golden("log_merge_resp", c, &b, d_log_resp);
        cn_scribe_log_resp_t r;
        cn_scribe_log_row_t row;
        CN_CHECK_EQ(cn_scribe_dec_log_resp(b.data, b.len, CODEC(c), false, &r), CN_OK);
        CN_CHECK(cn_scribe_next_log_row(&r.rows, false, &row) && row.has_merge &&
                 id_is(row.merge_branch, 0x50) && row.merge_change == 9 && !row.has_pick);

        cn_scribe_log_row_t all[2] = { log_row(10, "fix", 8), merge };
        all[0].has_pick = true;
        all[0].pick_branch = id_from(0x50);
        all[0].pick_change = 8;
        all[0].ceiling = all[1].ceiling = 10;
        all[0].member = true;
        cn_buf_reset(&b);
        CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, CODEC(c), true, all, 2), CN_OK);
        golden("log_all_resp", c, &b, d_log_resp_all);
        CN_CHECK_EQ(cn_scribe_dec_log_resp(b.data, b.len, CODEC(c), true, &r), CN_OK);
        CN_CHECK(cn_scribe_next_log_row(&r.rows, true, &row) && row.has_pick &&
                 row.pick_change == 8 && row.ceiling == 10 && row.member);
        CN_CHECK(cn_scribe_next_log_row(&r.rows, true, &row) && row.has_merge &&
                 row.ceiling == 10 && !row.member);
    }
    /* all-branch rows: one ceiling a page, never a row past it */
    cn_scribe_log_row_t rows[2] = { log_row(10, "x", 8), log_row(8, "y", 7) };
    rows[0].ceiling = 10;
    rows[1].ceiling = 11;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, LE, true, rows, 2), CN_E_INVALID);
    rows[0].ceiling = 9;
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, LE, true, rows, 1), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    size_t n = fx_entry(fixtures, "log_all_resp", "le", gbuf, sizeof gbuf);
    CN_CHECK(n != (size_t)-1 && n > 9);
    gbuf[n - 9] = 9; /* the last row's ceiling differs from the first's */
    CN_CHECK_EQ(d_log_resp_all(gbuf, n, LE), CN_E_PROTOCOL);
    n = fx_entry(fixtures, "log_all_resp", "le", gbuf, sizeof gbuf);
    cn_scribe_log_row_t first = log_row(10, "fix", 8);
    first.has_pick = true;
    first.ceiling = 10;
    cn_buf_reset(&b);
    CN_CHECK_EQ(cn_scribe_enc_log_resp(&b, LE, true, &first, 1), CN_OK);
    gbuf[b.len - 9] = 9; /* row 1: change 10 > ceiling 9 */
    gbuf[n - 9] = 9;     /* row 2 keeps the page's one ceiling */
    CN_CHECK_EQ(d_log_resp_all(gbuf, n, LE), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

/* ---- exact request bounds, both codecs ------------------------------------------------- */
static uint8_t big[CN_SCRIBE_MAX_MESSAGE];

static void max_request(uint16_t op, cn_scribe_codec_t c, cn_buf_t *b)
{
    cn_scribe_str_t name = { big, CN_SCRIBE_MAX_BRANCH_NAME };
    cn_scribe_id_t id = id_from(1), other = id_from(2);
    cn_scribe_submit_req_t sub = { id,
                                   id,
                                   id,
                                   id,
                                   id,
                                   7,
                                   { { 0 } },
                                   true,
                                   { big, CN_SCRIBE_MAX_AUTHOR },
                                   { big, CN_SCRIBE_MAX_MESSAGE } };
    static cn_scribe_str_t paths[CN_SCRIBE_MAX_MERGE_PATHS];
    for (int i = 0; i < CN_SCRIBE_MAX_MERGE_PATHS; i++)
        paths[i] = (cn_scribe_str_t){ big, CN_SCRIBE_MAX_PATH };
    cn_buf_reset(b);
    switch (op) {
    case CN_SCRIBE_OP_BRANCH_LIST: {
        cn_scribe_branch_list_req_t q = { id, 1, true, name };
        cn_scribe_enc_branch_list_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_BRANCH_MUTATE: {
        cn_scribe_branch_mutate_req_t q = { .repo = id,
                                            .incarnation = id,
                                            .operation = id,
                                            .branch = id,
                                            .name = name,
                                            .action = CN_SCRIBE_BRANCH_RENAME,
                                            .expected = name };
        cn_scribe_enc_branch_mutate_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_BRANCH_INFO: {
        cn_scribe_branch_info_req_t q = { id, CN_SCRIBE_BRANCH_BY_NAME, id, name };
        cn_scribe_enc_branch_info_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_BRANCH_OUTCOME: {
        cn_scribe_outcome_req_t q = { id, id };
        cn_scribe_enc_outcome_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_MERGE_SUBMIT: {
        cn_scribe_merge_submit_req_t q = { sub, 7, other, 9, id, 5 };
        cn_scribe_enc_merge_submit_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_MERGE_READ: {
        cn_scribe_merge_read_req_t q = { .repo = id,
                                         .tag = CN_SCRIBE_MR_ORIGINS,
                                         .branch = id,
                                         .revision = 9,
                                         .other = other,
                                         .other_revision = 5,
                                         .count = CN_SCRIBE_MAX_MERGE_PATHS };
        cn_scribe_enc_merge_read_req(b, c, &q, paths);
        break;
    }
    case CN_SCRIBE_OP_CHERRY_PICK_INFO: {
        cn_scribe_pick_info_req_t q = { id, id, other, 8 };
        cn_scribe_enc_pick_info_req(b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT: {
        cn_scribe_pick_submit_req_t q = { sub, 7, other, 8 };
        cn_scribe_enc_pick_submit_req(b, c, &q);
        break;
    }
    default: break;
    }
}

static void test_request_bounds(void)
{
    memset(big, 'n', sizeof big);
    static const struct {
        uint16_t op;
        fx_dec_fn dec;
        uint32_t doc; /* docs/protocol/scribe.md section 8 */
    } ops[] = {
        { 20, d_branch_list_req, 279 },    { 21, d_branch_mutate_req, 581 },
        { 22, d_branch_info_req, 275 },    { 23, d_outcome_req, 32 },
        { 24, d_merge_submit_req, 65979 }, { 25, d_merge_read_req, 8390725 },
        { 32, d_pick_info_req, 56 },       { 33, d_pick_submit_req, 65955 },
    };
    cn_buf_t b = { 0 };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        uint32_t bound = 0;
        CN_CHECK(cn_scribe_request_bound(ops[i].op, false, &bound));
        CN_CHECK(cn_scribe_op_is_core(ops[i].op));
        CN_CHECK_EQ(bound, ops[i].doc);
        CN_CHECK(bound < 16u * 1024 * 1024);
        for (int c = 1; c <= 2; c++) {
            max_request(ops[i].op, CODEC(c), &b);
            if (b.len != bound)
                fprintf(stderr, "# op %u codec %d: maximal encoding %zu, bound %u\n", ops[i].op, c,
                        b.len, bound);
            CN_CHECK_EQ(b.len, bound);
            CN_CHECK_EQ(ops[i].dec(b.data, b.len, CODEC(c)), CN_OK);
        }
    }
    cn_buf_free(&b);
}

/* ---- error codes and opcode names ---------------------------------------------------- */
static void test_codes(void)
{
    CN_CHECK_STR(cn_scribe_errcode_name(110), "branch_exists");
    CN_CHECK_STR(cn_scribe_errcode_name(111), "name_mismatch");
    CN_CHECK_STR(cn_scribe_errcode_name(112), "change_not_pickable");
    CN_CHECK_STR(cn_scribe_errcode_name(113), "schema_outdated");
    CN_CHECK_STR(cn_scribe_errcode_name(203), "base_mismatch");
    CN_CHECK_STR(cn_scribe_errcode_name(204), "merge_incomplete");
    CN_CHECK_STR(cn_scribe_errcode_name(208), "already_applied");
    CN_CHECK(cn_scribe_errcode_is_client(CN_SCRIBE_E_CHANGE_NOT_PICKABLE) &&
             cn_scribe_errcode_is_client(CN_SCRIBE_E_SCHEMA_OUTDATED));
    CN_CHECK(cn_scribe_errcode_name(114) == NULL && cn_scribe_errcode_name(209) == NULL);
    CN_CHECK_STR(cn_scribe_op_name(25), "merge_read");
    CN_CHECK_STR(cn_scribe_op_name(33), "cherry_pick_submit");
}

static const cn_test_case_t cases[] = {
    CN_TEST(test_branch_names),        CN_TEST(test_branch_info),
    CN_TEST(test_branch_list),         CN_TEST(test_branch_mutate),
    CN_TEST(test_branch_outcomes),     CN_TEST(test_merge_submit),
    CN_TEST(test_cherry_pick),         CN_TEST(test_fingerprints),
    CN_TEST(test_merge_read_requests), CN_TEST(test_merge_read_responses),
    CN_TEST(test_merge_read_refusals), CN_TEST(test_log_modes),
    CN_TEST(test_request_bounds),      CN_TEST(test_codes),
};

int main(int argc, char **argv)
{
    if (argc > 1)
        fixtures = argv[1];
    return cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
