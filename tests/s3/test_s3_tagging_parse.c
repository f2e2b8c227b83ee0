/* The pure parts of tagging and lifecycle configuration (issue 25): the
 * x-amz-tagging form parser and the Tagging document parser with S3's
 * limits, the LifecycleConfiguration validator's answers, the stored
 * encoding's round trip, and the x-amz-expiration matcher (days rounded up
 * to midnight UTC, filters, the earliest rule winning). */
#include "cn_test.h"
#include "s3/s3_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cn_s3_err_t query(const char *s, size_t max, cn__s3_tags_t *t)
{
    char why[128];
    return cn__s3_tags_parse_query(s, strlen(s), max, t, why, sizeof why);
}

static void test_query_form(void)
{
    cn__s3_tags_t t;
    CN_CHECK_EQ(query("a=1&b=&c&sp+ace=%3D%26x%2B", 10, &t), CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 4);
    CN_CHECK_STR(t.kv[0].key, "a");
    CN_CHECK_STR(t.kv[0].value, "1");
    CN_CHECK_STR(t.kv[1].value, "");
    CN_CHECK_STR(t.kv[2].key, "c");
    CN_CHECK_STR(t.kv[2].value, "");
    CN_CHECK_STR(t.kv[3].key, "sp ace");
    CN_CHECK_STR(t.kv[3].value, "=&x+");
    CN_CHECK(t.present);
    cn__s3_tags_free(&t);
    CN_CHECK_EQ(query("", 10, &t), CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 0);
    CN_CHECK(t.present);
    cn__s3_tags_free(&t);
    CN_CHECK_EQ(query("&&a=1&", 10, &t), CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 1);
    cn__s3_tags_free(&t);
    static const char *const bad[] = { "a=1&a=2",
                                       "=v",
                                       "aws%3Ax=1",
                                       "k=%zz",
                                       "k=%0",
                                       "k=%00",
                                       "k=%FF" /* not UTF-8 */,
                                       "k=a%09b" /* a control character */,
                                       "%7F=v" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CN_CHECK_EQ(query(bad[i], 10, &t), CN_S3E_INVALID_TAG);
        cn__s3_tags_free(&t);
    }
    char many[256] = "";
    for (int i = 0; i < 11; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sk%d=v", i ? "&" : "", i);
    CN_CHECK_EQ(query(many, 10, &t), CN_S3E_INVALID_TAG);
    cn__s3_tags_free(&t);
    CN_CHECK_EQ(query(many, 50, &t), CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 11);
    cn__s3_tags_free(&t);
}

static void test_limits_in_characters(void)
{
    char k[1000], v[600];
    /* 128 two-byte characters is a valid key; 129 is not. */
    strcpy(k, "k=");
    for (int i = 0; i < 128; i++)
        strcat(k, "%C3%A9");
    cn__s3_tags_t t;
    CN_CHECK_EQ(query(k + 2, 10, &t), CN_S3E_NONE);
    CN_CHECK_EQ(strlen(t.kv[0].key), 256);
    cn__s3_tags_free(&t);
    strcat(k, "%C3%A9");
    CN_CHECK_EQ(query(k + 2, 10, &t), CN_S3E_INVALID_TAG);
    cn__s3_tags_free(&t);
    strcpy(v, "k=");
    for (int i = 0; i < 256; i++)
        strcat(v, "x");
    CN_CHECK_EQ(query(v, 10, &t), CN_S3E_NONE);
    cn__s3_tags_free(&t);
    strcat(v, "x");
    CN_CHECK_EQ(query(v, 10, &t), CN_S3E_INVALID_TAG);
    cn__s3_tags_free(&t);
}

static cn_s3_err_t xml_tags(const char *doc, size_t max, cn__s3_tags_t *t)
{
    cn_xml_doc_t *d = NULL;
    if (cn_xml_parse(doc, strlen(doc), 1000, &d) < 0) {
        cn_xml_doc_free(d);
        memset(t, 0, sizeof *t);
        return CN_S3E_MALFORMED_XML;
    }
    char why[128];
    cn_s3_err_t e = cn__s3_tags_parse_xml(d, max, t, why, sizeof why);
    cn_xml_doc_free(d);
    return e;
}

static void test_tagging_document(void)
{
    cn__s3_tags_t t;
    CN_CHECK_EQ(xml_tags("<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
                         "<Tag><Key>b</Key><Value></Value></Tag><Tag><Key>c</Key></Tag>"
                         "</TagSet></Tagging>",
                         10, &t),
                CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 3);
    CN_CHECK_STR(t.kv[1].key, "b");
    CN_CHECK_STR(t.kv[2].value, "");
    /* The document written back parses to the same set. */
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn__s3_tags_xml(&w, t.kv, t.n);
    CN_CHECK_EQ(cn_xml_finish(&w), 0);
    CN_CHECK_EQ(cn_buf_put_u8(&out, 0), 0);
    cn__s3_tags_t t2;
    CN_CHECK_EQ(xml_tags((const char *)out.data, 10, &t2), CN_S3E_NONE);
    CN_CHECK_EQ(t2.n, 3);
    CN_CHECK_STR(t2.kv[0].value, "1");
    cn__s3_tags_free(&t2);
    cn_buf_free(&out);
    cn__s3_tags_free(&t);
    CN_CHECK_EQ(xml_tags("<Tagging><TagSet/></Tagging>", 10, &t), CN_S3E_NONE);
    CN_CHECK_EQ(t.n, 0);
    cn__s3_tags_free(&t);
    static const char *const malformed[] = {
        "<Tagging/>",
        "<Tagging><TagSet/><TagSet/></Tagging>",
        "<Tagging><TagSet><Tag><Value>1</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key><x/></Key></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Other/></TagSet></Tagging>",
        "<Tags><TagSet/></Tags>",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        CN_CHECK_EQ(xml_tags(malformed[i], 10, &t), CN_S3E_MALFORMED_XML);
        cn__s3_tags_free(&t);
    }
    CN_CHECK_EQ(
        xml_tags("<Tagging><TagSet><Tag><Key>aws:x</Key><Value/></Tag></TagSet></Tagging>", 10, &t),
        CN_S3E_INVALID_TAG);
    cn__s3_tags_free(&t);
    CN_CHECK_EQ(xml_tags("<Tagging><TagSet><Tag><Key>a</Key></Tag><Tag><Key>b</Key></Tag>"
                         "</TagSet></Tagging>",
                         1, &t),
                CN_S3E_INVALID_TAG);
    cn__s3_tags_free(&t);
}

/* ---- lifecycle ------------------------------------------------------------------ */

static cn_s3_err_t lc_parse(const char *doc, cn__s3_lc_t *lc, cn_xml_doc_t **d)
{
    *d = NULL;
    memset(lc, 0, sizeof *lc);
    if (cn_xml_parse(doc, strlen(doc), 100000, d) < 0)
        return CN_S3E_MALFORMED_XML;
    char why[200];
    return cn__s3_lc_parse(*d, lc, why, sizeof why);
}

static cn_s3_err_t lc_code(const char *rule_xml)
{
    char doc[4096];
    snprintf(doc, sizeof doc, "<LifecycleConfiguration><Rule>%s</Rule></LifecycleConfiguration>",
             rule_xml);
    cn__s3_lc_t lc;
    cn_xml_doc_t *d;
    cn_s3_err_t e = lc_parse(doc, &lc, &d);
    cn__s3_lc_free(&lc);
    cn_xml_doc_free(d);
    return e;
}

#define EXP1 "<Expiration><Days>1</Days></Expiration>"

static void test_lifecycle_answers(void)
{
    CN_CHECK_EQ(lc_code("<ID>a</ID><Prefix/><Status>Enabled</Status>" EXP1), CN_S3E_NONE);
    CN_CHECK_EQ(lc_code("<ID>a</ID><Prefix/><Status>enabled</Status>" EXP1), CN_S3E_MALFORMED_XML);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Expiration><Days>0</Days></Expiration>"),
                CN_S3E_INVALID_ARGUMENT);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Expiration><Days>1.5</Days>"
                        "</Expiration>"),
                CN_S3E_MALFORMED_XML);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Expiration><Date>2031-02-03T00:00:00"
                        "+00:00</Date></Expiration>"),
                CN_S3E_NONE);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Expiration><Date>2031-02-03T00:00:01Z"
                        "</Date></Expiration>"),
                CN_S3E_INVALID_ARGUMENT);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Expiration><Date>2031-13-03</Date>"
                        "</Expiration>"),
                CN_S3E_INVALID_ARGUMENT);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status>"), CN_S3E_INVALID_REQUEST);
    CN_CHECK_EQ(lc_code("<Filter><And><Prefix>a</Prefix><And/></And></Filter>"
                        "<Status>Enabled</Status>" EXP1),
                CN_S3E_MALFORMED_XML);
    CN_CHECK_EQ(lc_code("<Filter><And><Prefix>a</Prefix><Prefix>b</Prefix></And></Filter>"
                        "<Status>Enabled</Status>" EXP1),
                CN_S3E_MALFORMED_XML);
    CN_CHECK_EQ(lc_code("<Filter><Tag><Key>aws:k</Key><Value>v</Value></Tag></Filter>"
                        "<Status>Enabled</Status>" EXP1),
                CN_S3E_INVALID_TAG);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><NoncurrentVersionExpiration>"
                        "<NewerNoncurrentVersions>1</NewerNoncurrentVersions>"
                        "</NoncurrentVersionExpiration>"),
                CN_S3E_MALFORMED_XML);
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Enabled</Status><Transition><Date>2031-01-01T00:00:00Z"
                        "</Date><StorageClass>GLACIER</StorageClass></Transition>"),
                CN_S3E_NOT_IMPLEMENTED);
    /* A validation error wins over NotImplemented. */
    CN_CHECK_EQ(lc_code("<Prefix/><Status>Bad</Status><Transition><Days>1</Days>"
                        "<StorageClass>GLACIER</StorageClass></Transition>"),
                CN_S3E_MALFORMED_XML);
    char id[400];
    memset(id, 'i', 256);
    snprintf(id + 256, sizeof id - 256, "%s", "");
    char rule[700];
    snprintf(rule, sizeof rule, "<ID>%s</ID><Prefix/><Status>Enabled</Status>" EXP1, id);
    CN_CHECK_EQ(lc_code(rule), CN_S3E_INVALID_ARGUMENT);
}

static void test_lifecycle_decode_and_ids(void)
{
    cn__s3_lc_t lc;
    cn_xml_doc_t *d;
    const char *doc =
        "<LifecycleConfiguration>"
        "<Rule><Filter><And><Prefix>logs/</Prefix><Tag><Key>t</Key><Value>1</Value></Tag>"
        "<ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></And></Filter>"
        "<Status>Enabled</Status><Expiration><Days>3</Days></Expiration>"
        "<NoncurrentVersionExpiration><NoncurrentDays>4</NoncurrentDays>"
        "<NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>"
        "</Rule>"
        "<Rule><ID>named</ID><Prefix>p/</Prefix><Status>Disabled</Status>"
        "<AbortIncompleteMultipartUpload><DaysAfterInitiation>9</DaysAfterInitiation>"
        "</AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>";
    CN_CHECK_EQ(lc_parse(doc, &lc, &d), CN_S3E_NONE);
    CN_CHECK_EQ(lc.nrules, 2);
    CN_CHECK(lc.generated);
    CN_CHECK_EQ(strlen(lc.rules[0].id), 32);
    const cn_objects_lc_rule_t *r = &lc.rules[0];
    CN_CHECK(r->enabled);
    CN_CHECK_STR(r->prefix, "logs/");
    CN_CHECK_EQ(r->ntags, 1);
    CN_CHECK_EQ(r->size_gt, 5);
    CN_CHECK_EQ(r->size_lt, -1);
    CN_CHECK_EQ(r->exp_days, 3);
    CN_CHECK_EQ(r->nc_days, 4);
    CN_CHECK_EQ(r->nc_newer, 2);
    CN_CHECK(!lc.rules[1].enabled);
    CN_CHECK_EQ(lc.rules[1].abort_days, 9);
    /* The re-encoding puts the generated ID first and keeps the rest. */
    CN_CHECK_EQ(cn_buf_put_u8(&lc.doc, 0), 0);
    const char *re = (const char *)lc.doc.data;
    CN_CHECK(strstr(re, "<Rule><ID>") != NULL);
    CN_CHECK(strstr(re, "<ID>named</ID><Prefix>p/</Prefix><Status>Disabled</Status>") != NULL);
    /* Encoded and decoded, the rules come back the same, the document too. */
    cn_buf_t v = { 0 };
    CN_CHECK_EQ(cn_objects_lc_encode(lc.rules, lc.nrules, "DOC", 3, &v), 0);
    cn_objects_lc_t back;
    CN_CHECK_EQ(cn_objects_lc_decode(v.data, v.len, &back), 0);
    CN_CHECK_EQ(back.nrules, 2);
    CN_CHECK_STR(back.rules[0].id, lc.rules[0].id);
    CN_CHECK_STR(back.rules[0].tags[0].key, "t");
    CN_CHECK_STR(back.rules[0].tags[0].value, "1");
    CN_CHECK_EQ(back.rules[0].nc_newer, 2);
    CN_CHECK_STR(back.rules[1].prefix, "p/");
    CN_CHECK_EQ(back.doc_len, 3);
    CN_CHECK_MEM(back.doc, "DOC", 3);
    /* Every truncation of the value is refused, never read past. */
    for (size_t n = 0; n < v.len - 3; n++) {
        cn_objects_lc_t cut;
        CN_CHECK(cn_objects_lc_decode(v.data, n, &cut) < 0);
    }
    cn_objects_lc_free(&back);
    cn_buf_free(&v);
    /* The encoder refuses what it could not decode the same. */
    cn_objects_lc_rule_t dup[2] = { lc.rules[1], lc.rules[1] };
    CN_CHECK_EQ(cn_objects_lc_encode(dup, 2, NULL, 0, &v), CN_E_INVALID);
    cn_buf_free(&v);
    cn__s3_lc_free(&lc);
    cn_xml_doc_free(d);
}

/* The stored value is persisted: its layout is fixed by this fixture
 * (src/objects/lifecycle.c's header comment spells it out). */
static void test_lifecycle_golden(void)
{
    static const char golden[] = "434e4c433100"     /* "CNLC1" NUL */
                                 "01000000"         /* one rule */
                                 "020000007231"     /* id "r1" */
                                 "01"               /* enabled */
                                 "02000000702f"     /* prefix "p/" */
                                 "01"               /* one tag */
                                 "0100000074"       /* key "t" */
                                 "0100000031"       /* value "1" */
                                 "0500000000000000" /* size_gt 5 */
                                 "ffffffffffffffff" /* size_lt none */
                                 "03000000"         /* Expiration Days 3 */
                                 "0000000000000000" /* no Date */
                                 "00"               /* no ExpiredObjectDeleteMarker */
                                 "04000000"         /* NoncurrentDays 4 */
                                 "02000000"         /* NewerNoncurrentVersions 2 */
                                 "00000000"         /* no AbortIncompleteMultipartUpload */
                                 "3c4c2f3e";        /* the document "<L/>" */
    static const cn_objects_kv_t tg[] = { { "t", "1" } };
    cn_objects_lc_rule_t r = { .id = "r1",
                               .enabled = true,
                               .prefix = "p/",
                               .tags = tg,
                               .ntags = 1,
                               .size_gt = 5,
                               .size_lt = -1,
                               .exp_days = 3,
                               .nc_days = 4,
                               .nc_newer = 2 };
    cn_buf_t v = { 0 };
    CN_CHECK_EQ(cn_objects_lc_encode(&r, 1, "<L/>", 4, &v), 0);
    char hex[2 * sizeof golden];
    CN_CHECK(v.len * 2 < sizeof hex);
    cn_hex_encode(v.data, v.len, hex);
    CN_CHECK_STR(hex, golden);
    cn_buf_free(&v);
}

#define DAY (86400 * (int64_t)1000)

static void test_expiry_matcher(void)
{
    static const cn_objects_kv_t want_tag[] = { { "class", "tmp" } };
    cn_objects_lc_rule_t rules[4];
    memset(rules, 0, sizeof rules);
    for (int i = 0; i < 4; i++) {
        rules[i].enabled = true;
        rules[i].prefix = "";
        rules[i].size_gt = rules[i].size_lt = -1;
    }
    rules[0].id = "logs";
    rules[0].prefix = "logs/";
    rules[0].exp_days = 10;
    rules[1].id = "tagged";
    rules[1].tags = want_tag;
    rules[1].ntags = 1;
    rules[1].exp_days = 2;
    rules[2].id = "big";
    rules[2].size_gt = 100;
    rules[2].exp_date_ms = 20000 * DAY;
    rules[3].id = "off";
    rules[3].enabled = false;
    rules[3].exp_days = 1;
    cn_buf_t v = { 0 };
    CN_CHECK_EQ(cn_objects_lc_encode(rules, 4, NULL, 0, &v), 0);
    cn_objects_lc_t lc;
    CN_CHECK_EQ(cn_objects_lc_decode(v.data, v.len, &lc), 0);
    cn_buf_free(&v);
    int64_t mtime = 19000 * DAY + 3600 * 1000; /* 01:00 UTC */
    int64_t exp = 0;
    char id[CN_OBJECTS_LC_ID_MAX + 1];
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "logs/a", 5, NULL, 0, mtime, 0, &exp, id), 1);
    CN_CHECK_STR(id, "logs");
    CN_CHECK_EQ(exp, 19011 * DAY); /* 10 days on, rounded up to the next midnight */
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "other", 5, NULL, 0, mtime, 0, &exp, id), 0);
    static const cn_objects_kv_t has[] = { { "x", "y" }, { "class", "tmp" } };
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "logs/a", 5, has, 2, mtime, 0, &exp, id), 1);
    CN_CHECK_STR(id, "tagged"); /* the earliest wins */
    CN_CHECK_EQ(exp, 19003 * DAY);
    static const cn_objects_kv_t wrong[] = { { "class", "keep" } };
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "x", 5, wrong, 1, mtime, 0, &exp, id), 0);
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "x", 101, NULL, 0, mtime, 0, &exp, id), 1);
    CN_CHECK_STR(id, "big");
    CN_CHECK_EQ(exp, 20000 * DAY);
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "x", 100, NULL, 0, mtime, 0, &exp, id), 0);
    /* Exactly midnight stays; a test's day length is not rounded. */
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "logs/b", 1, NULL, 0, 19000 * DAY, 0, &exp, id), 1);
    CN_CHECK_EQ(exp, 19010 * DAY);
    CN_CHECK_EQ(cn_objects_lc_expiry(&lc, "logs/b", 1, NULL, 0, 1000, 2000, &exp, id), 1);
    CN_CHECK_EQ(exp, 21000);
    cn_objects_lc_free(&lc);
}

static void test_expiration_value(void)
{
    cn_buf_t v = { 0 };
    cn__s3_expiration_value(19011 * DAY, "logs \"x\"\r\n%", &v);
    CN_CHECK_EQ(cn_buf_put_u8(&v, 0), 0);
    CN_CHECK_STR((const char *)v.data, "expiry-date=\"Wed, 19 Jan 2022 00:00:00 GMT\", "
                                       "rule-id=\"logs %22x%22%0D%0A%25\"");
    cn_buf_free(&v);
}

/* ---- the policy's tag condition keys ------------------------------------------------ */

static bool tag_policy_allows(const char *cond, const cn_authz_tag_t *req, size_t nreq, bool given,
                              const cn_authz_tag_t *have, size_t nhave)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
             "\"Action\":\"s3:PutObjectTagging\",\"Resource\":\"arn:aws:s3:::b/*\","
             "\"Condition\":%s}}",
             cond);
    cn_authz_policy_t *pol = NULL;
    char err[CN_AUTHZ_ERR_MAX];
    if (cn_authz_policy_parse(json, strlen(json), "b", &pol, err) < 0) {
        fprintf(stderr, "# %s\n", err);
        return false;
    }
    cn_authz_req_t r;
    memset(&r, 0, sizeof r);
    r.principal = "bob";
    r.perms = CN_PERM_ALL;
    r.action = CN_ACT_PUT_OBJECT_TAGGING;
    r.key = "k";
    r.req_tags = req;
    r.nreq_tags = nreq;
    r.req_tags_given = given;
    cn_authz_bucket_t b = { .name = "b", .owner = "alice", .policy = pol };
    cn_authz_object_t o = { .owner = "alice", .tags = have, .ntags = nhave };
    cn_err_t e = cn_authz_decide(&r, &b, &o, NULL);
    cn_authz_policy_free(pol);
    return e == 0;
}

static void test_policy_tag_keys(void)
{
    static const cn_authz_tag_t ab[] = { { "a", "1" }, { "b", "2" } };
    static const cn_authz_tag_t a[] = { { "a", "1" } };
    const char *all = "{\"ForAllValues:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"a\"]}}";
    CN_CHECK(tag_policy_allows(all, a, 1, true, NULL, 0));
    CN_CHECK(!tag_policy_allows(all, ab, 2, true, NULL, 0));
    CN_CHECK(tag_policy_allows(all, NULL, 0, true, NULL, 0));  /* vacuous */
    CN_CHECK(tag_policy_allows(all, NULL, 0, false, NULL, 0)); /* absent */
    const char *any = "{\"ForAnyValue:StringEquals\":{\"s3:RequestObjectTagKeys\":\"b\"}}";
    CN_CHECK(tag_policy_allows(any, ab, 2, true, NULL, 0));
    CN_CHECK(!tag_policy_allows(any, a, 1, true, NULL, 0));
    CN_CHECK(!tag_policy_allows(any, NULL, 0, false, NULL, 0));
    const char *none = "{\"Null\":{\"s3:RequestObjectTagKeys\":\"true\"}}";
    CN_CHECK(tag_policy_allows(none, NULL, 0, false, NULL, 0));
    CN_CHECK(!tag_policy_allows(none, a, 1, true, NULL, 0));
    const char *val = "{\"StringEquals\":{\"s3:RequestObjectTag/b\":\"2\"}}";
    CN_CHECK(tag_policy_allows(val, ab, 2, true, NULL, 0));
    CN_CHECK(!tag_policy_allows(val, a, 1, true, NULL, 0));
    const char *ex = "{\"StringLike\":{\"s3:ExistingObjectTag/a\":\"1*\"}}";
    CN_CHECK(tag_policy_allows(ex, NULL, 0, false, ab, 2));
    CN_CHECK(!tag_policy_allows(ex, NULL, 0, false, NULL, 0));
}

static void test_tags_check(void)
{
    cn_objects_kv_t kv[2] = { { "a", "1" }, { "b", NULL } };
    char why[96];
    CN_CHECK_EQ(cn_objects_tags_check(kv, 2, 10, why, sizeof why), 0);
    CN_CHECK_EQ(cn_objects_tags_check(kv, 2, 1, why, sizeof why), CN_E_INVALID);
    kv[1].key = "a";
    CN_CHECK_EQ(cn_objects_tags_check(kv, 2, 10, why, sizeof why), CN_E_INVALID);
    CN_CHECK(strstr(why, "same key") != NULL);
    kv[1].key = "";
    CN_CHECK_EQ(cn_objects_tags_check(kv, 2, 10, NULL, 0), CN_E_INVALID);
    kv[1].key = "\xff";
    CN_CHECK_EQ(cn_objects_tags_check(kv, 2, 10, why, sizeof why), CN_E_INVALID);
}

CN_TEST_MAIN(CN_TEST(test_query_form), CN_TEST(test_limits_in_characters),
             CN_TEST(test_tagging_document), CN_TEST(test_lifecycle_answers),
             CN_TEST(test_lifecycle_decode_and_ids), CN_TEST(test_lifecycle_golden),
             CN_TEST(test_expiry_matcher), CN_TEST(test_expiration_value),
             CN_TEST(test_policy_tag_keys), CN_TEST(test_tags_check))
