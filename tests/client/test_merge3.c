/* The three-way line merge (src/client/merge3.c): one-sided edits merge
 * clean, edits on both sides apart from each other merge clean, the same
 * edit on both sides is taken once, clashing edits get markers carrying
 * all three versions, a missing final newline survives, and only UTF-8
 * text without NUL bytes and within the bound counts as text. */
#include "cn_test.h"
#include "client/merge3.h"

#include <stdlib.h>

/* Merges and compares with want (NUL-terminated strings). */
static bool merges_to(const char *base, const char *ours, const char *theirs, const char *want,
                      size_t want_conflicts)
{
    cn_buf_t out = { 0 };
    size_t conflicts = 99;
    cn_err_t e =
        cn__merge3((const uint8_t *)base, strlen(base), (const uint8_t *)ours, strlen(ours),
                   (const uint8_t *)theirs, strlen(theirs), "ours", "theirs", &out, &conflicts);
    bool ok = e == CN_OK && conflicts == want_conflicts && out.len == strlen(want) &&
              (out.len == 0 || memcmp(out.data, want, out.len) == 0);
    if (!ok)
        fprintf(stderr, "# got %zu conflicts:\n%.*s# want:\n%s", conflicts, (int)out.len,
                out.data ? (const char *)out.data : "", want);
    cn_buf_free(&out);
    return ok;
}

static void test_one_side(void)
{
    CN_CHECK(merges_to("a\nb\nc\n", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n", 0));
    CN_CHECK(merges_to("a\nb\nc\n", "a\nb2\nc\n", "a\nb\nc\n", "a\nb2\nc\n", 0));
    CN_CHECK(merges_to("", "", "x\n", "x\n", 0));
    CN_CHECK(merges_to("a\nb\n", "a\nb\n", "", "", 0));
}

static void test_both_sides_apart(void)
{
    CN_CHECK(merges_to("1\n2\n3\n4\n5\n6\n7\n", "1\nTWO\n3\n4\n5\n6\n7\n",
                       "1\n2\n3\n4\n5\nSIX\n7\n", "1\nTWO\n3\n4\n5\nSIX\n7\n", 0));
    /* insertions at both ends, a deletion in the middle */
    CN_CHECK(merges_to("a\nb\nc\nd\ne\n", "top\na\nb\nc\nd\ne\n", "a\nb\nd\ne\nend\n",
                       "top\na\nb\nd\ne\nend\n", 0));
}

static void test_same_edit_once(void)
{
    CN_CHECK(merges_to("a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n", "a\nX\nc\n", 0));
}

static void test_clash_markers(void)
{
    CN_CHECK(merges_to("a\nb\nc\n", "a\nours\nc\n", "a\ntheirs\nc\n",
                       "a\n<<<<<<< ours\nours\n||||||| base\nb\n=======\ntheirs\n>>>>>>> "
                       "theirs\nc\n",
                       1));
    /* two clashes, and a last line without a newline closed before a marker */
    CN_CHECK(merges_to("1\n2\n3\n4\n5", "1\nO2\n3\n4\nO5", "1\nT2\n3\n4\nT5",
                       "1\n<<<<<<< ours\nO2\n||||||| base\n2\n=======\nT2\n>>>>>>> theirs\n3\n4\n"
                       "<<<<<<< ours\nO5\n||||||| base\n5\n=======\nT5\n>>>>>>> theirs\n",
                       2));
}

static void test_final_newline_kept(void)
{
    CN_CHECK(merges_to("a\nb", "A\nb", "a\nb", "A\nb", 0));
    CN_CHECK(merges_to("a\nb\nc", "a\nb\nc", "a\nb\nc\n", "a\nb\nc\n", 0));
}

/* Long files with far-apart edits: the middle goes through Myers. */
static void test_long(void)
{
    cn_buf_t b = { 0 }, o = { 0 }, t = { 0 }, w = { 0 };
    for (int i = 0; i < 3000; i++) {
        cn_buf_printf(&b, "line %d\n", i);
        cn_buf_printf(&o, i % 100 == 10 ? "ours %d\n" : "line %d\n", i);
        cn_buf_printf(&t, i % 100 == 60 ? "theirs %d\n" : "line %d\n", i);
        cn_buf_printf(&w,
                      i % 100 == 10   ? "ours %d\n"
                      : i % 100 == 60 ? "theirs %d\n"
                                      : "line %d\n",
                      i);
    }
    cn_buf_append(&b, "", 1), cn_buf_append(&o, "", 1), cn_buf_append(&t, "", 1),
        cn_buf_append(&w, "", 1);
    CN_CHECK(merges_to((char *)b.data, (char *)o.data, (char *)t.data, (char *)w.data, 0));
    cn_buf_free(&b), cn_buf_free(&o), cn_buf_free(&t), cn_buf_free(&w);
}

static void test_is_text(void)
{
    CN_CHECK(cn__merge3_is_text((const uint8_t *)"plain\n", 6));
    CN_CHECK(cn__merge3_is_text((const uint8_t *)"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
    CN_CHECK(!cn__merge3_is_text((const uint8_t *)"a\0b", 3));
    CN_CHECK(!cn__merge3_is_text((const uint8_t *)"\xff\xfe", 2));
    CN_CHECK(!cn__merge3_is_text((const uint8_t *)"\xc0\xaf", 2));     /* overlong */
    CN_CHECK(!cn__merge3_is_text((const uint8_t *)"\xed\xa0\x80", 3)); /* surrogate */
    CN_CHECK(!cn__merge3_is_text((const uint8_t *)"\xe2\x82", 2));     /* truncated */
    uint8_t *big = malloc(CN_MERGE3_TEXT_MAX + 1);
    memset(big, 'a', CN_MERGE3_TEXT_MAX + 1);
    CN_CHECK(cn__merge3_is_text(big, CN_MERGE3_TEXT_MAX));
    CN_CHECK(!cn__merge3_is_text(big, CN_MERGE3_TEXT_MAX + 1));
    free(big);
}

CN_TEST_MAIN(CN_TEST(test_one_side), CN_TEST(test_both_sides_apart), CN_TEST(test_same_edit_once),
             CN_TEST(test_clash_markers), CN_TEST(test_final_newline_kept), CN_TEST(test_long),
             CN_TEST(test_is_text))
