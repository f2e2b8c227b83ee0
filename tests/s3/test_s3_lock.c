/* The S3 Object Lock documents and headers' parsers (src/s3/lock.c) and the
 * service's compact default retention: golden canonical configurations, the
 * codes each fault answers, ISO 8601 dates in the forms clients send, and
 * the rows of the error table the lock details map to. */
#include "cn_test.h"
#include "s3/s3_int.h"

#include <string.h>

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

static cn_xml_doc_t *doc(const char *s)
{
    cn_xml_doc_t *d = NULL;
    CN_CHECK_EQ(cn_xml_parse(s, strlen(s), 1000, &d), 0);
    return d;
}

/* Parses a configuration: the code, and (NONE) the canonical form and default. */
static cn_s3_err_t cfg(const char *in, cn_buf_t *out, char dflt[32])
{
    cn_xml_doc_t *d = doc(in);
    cn_s3_err_t e = cn__s3_lock_config_parse(d, out, dflt);
    cn_xml_doc_free(d);
    return e;
}

static void test_config_golden(void)
{
    static const struct {
        const char *in, *canon, *dflt;
    } t[] = {
        { "<ObjectLockConfiguration xmlns=\"" XMLNS "\"><ObjectLockEnabled>Enabled"
          "</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days>"
          "</DefaultRetention></Rule></ObjectLockConfiguration>",
          HEAD "<ObjectLockConfiguration xmlns=\"" XMLNS "\"><ObjectLockEnabled>Enabled"
               "</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1"
               "</Days></DefaultRetention></Rule></ObjectLockConfiguration>",
          "GOVERNANCE D1" },
        { "<ObjectLockConfiguration>\n  <ObjectLockEnabled> Enabled </ObjectLockEnabled>\n"
          "  <Rule><DefaultRetention><Years>100</Years><Mode>COMPLIANCE</Mode>"
          "</DefaultRetention></Rule>\n</ObjectLockConfiguration>",
          HEAD "<ObjectLockConfiguration xmlns=\"" XMLNS "\"><ObjectLockEnabled>Enabled"
               "</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>100"
               "</Years></DefaultRetention></Rule></ObjectLockConfiguration>",
          "COMPLIANCE Y100" },
        { "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
          "</ObjectLockConfiguration>",
          HEAD "<ObjectLockConfiguration xmlns=\"" XMLNS "\"><ObjectLockEnabled>Enabled"
               "</ObjectLockEnabled></ObjectLockConfiguration>",
          "" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_buf_t out = { 0 };
        char dflt[32];
        CN_CHECK_EQ(cfg(t[i].in, &out, dflt), CN_S3E_NONE);
        CN_CHECK_EQ(out.len, strlen(t[i].canon));
        CN_CHECK(out.len == strlen(t[i].canon) && memcmp(out.data, t[i].canon, out.len) == 0);
        CN_CHECK_STR(dflt, t[i].dflt);
        cn_buf_free(&out);
    }
    /* The configuration of a bucket created with object lock. */
    cn_buf_t init = { 0 };
    CN_CHECK_EQ(cn__s3_lock_config_initial(&init), 0);
    const char *want = t[2].canon;
    CN_CHECK(init.len == strlen(want) && memcmp(init.data, want, init.len) == 0);
    cn_buf_free(&init);
}

#define RULE(x)                                                                                 \
    "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>" x "</Rule>" \
    "</ObjectLockConfiguration>"
#define DR(x) RULE("<DefaultRetention>" x "</DefaultRetention>")

static void test_config_faults(void)
{
    static const struct {
        const char *in;
        cn_s3_err_t want;
    } t[] = {
        { "<ObjectLockConfiguration/>", CN_S3E_MALFORMED_XML },
        { "<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled>"
          "</ObjectLockConfiguration>",
          CN_S3E_MALFORMED_XML },
        { "<LockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
          "</LockConfiguration>",
          CN_S3E_MALFORMED_XML },
        { RULE(""), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode>"), CN_S3E_MALFORMED_XML },
        { DR("<Days>1</Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>governance</Mode><Days>1</Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>abc</Mode><Days>1</Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode><Days>one</Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode><Days></Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode><Days>1234567890123</Days>"), CN_S3E_MALFORMED_XML },
        { DR("<Mode>GOVERNANCE</Mode><Days>0</Days>"), CN_S3E_INVALID_RETENTION_PERIOD },
        { DR("<Mode>GOVERNANCE</Mode><Days>-3</Days>"), CN_S3E_INVALID_RETENTION_PERIOD },
        { DR("<Mode>GOVERNANCE</Mode><Years>-1</Years>"), CN_S3E_INVALID_RETENTION_PERIOD },
        { DR("<Mode>GOVERNANCE</Mode><Days>36501</Days>"), CN_S3E_INVALID_RETENTION_PERIOD },
        { DR("<Mode>COMPLIANCE</Mode><Years>101</Years>"), CN_S3E_INVALID_RETENTION_PERIOD },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_buf_t out = { 0 };
        char dflt[32];
        CN_CHECK_EQ(cfg(t[i].in, &out, dflt), t[i].want);
        CN_CHECK_EQ(out.len, 0); /* nothing half-written on a fault */
        cn_buf_free(&out);
    }
}

static void test_dates(void)
{
    static const struct {
        const char *s;
        bool ok;
        int64_t ms;
    } t[] = {
        { "2030-01-01T00:00:00Z", true, 1893456000000LL },
        { "2030-01-01T00:00:00.000Z", true, 1893456000000LL },
        { "2030-01-01T00:00:00.123456Z", true, 1893456000123LL },
        { "2030-01-01T02:00:00+02:00", true, 1893456000000LL },
        { "2029-12-31T19:30:00-04:30", true, 1893456000000LL },
        { "1970-01-01T00:00:00Z", true, 0 },
        { "2024-02-29T12:00:00Z", true, 1709208000000LL },
        { "2030-01-01T00:00:00", false, 0 },
        { "2030-01-01 00:00:00Z", false, 0 },
        { "2030-13-01T00:00:00Z", false, 0 },
        { "2030-01-01T24:00:00Z", false, 0 },
        { "2030-01-01T00:00:00.Z", false, 0 },
        { "2030-01-01T00:00:00+0200", false, 0 },
        { "1969-12-31T23:59:59Z", false, 0 },
        { "soon", false, 0 },
        { "", false, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t ms = -1;
        bool ok = cn__s3_lock_date(t[i].s, strlen(t[i].s), &ms);
        CN_CHECK_EQ(ok, t[i].ok);
        if (t[i].ok)
            CN_CHECK_EQ(ms, t[i].ms);
    }
}

static void test_retention_and_hold_docs(void)
{
    cn_objects_retention_t r;
    cn_xml_doc_t *d = doc("<Retention xmlns=\"" XMLNS "\"><Mode>COMPLIANCE</Mode>"
                          "<RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>");
    CN_CHECK_EQ(cn__s3_retention_parse(d, &r), CN_S3E_NONE);
    CN_CHECK_EQ(r.mode, CN_OBJ_LOCK_COMPLIANCE);
    CN_CHECK_EQ(r.until_ms, 1893456000000LL);
    CN_CHECK_EQ(r.legal_hold, -1);
    cn_xml_doc_free(d);
    d = doc("<Retention/>"); /* removal */
    CN_CHECK_EQ(cn__s3_retention_parse(d, &r), CN_S3E_NONE);
    CN_CHECK_EQ(r.mode, CN_OBJ_LOCK_NONE);
    cn_xml_doc_free(d);
    static const char *const bad[] = {
        "<Retention><Mode>GOVERNANCE</Mode></Retention>",
        "<Retention><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>",
        "<Retention><Mode>Governance</Mode><RetainUntilDate>2030-01-01T00:00:00Z"
        "</RetainUntilDate></Retention>",
        "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>tomorrow</RetainUntilDate>"
        "</Retention>",
        "<LegalHold><Status>ON</Status></LegalHold>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = doc(bad[i]);
        CN_CHECK_EQ(cn__s3_retention_parse(d, &r), CN_S3E_MALFORMED_XML);
        cn_xml_doc_free(d);
    }
    static const struct {
        const char *in;
        cn_s3_err_t want;
        bool on;
    } h[] = {
        { "<LegalHold xmlns=\"" XMLNS "\"><Status>ON</Status></LegalHold>", CN_S3E_NONE, true },
        { "<LegalHold><Status> OFF </Status></LegalHold>", CN_S3E_NONE, false },
        { "<LegalHold><Status>on</Status></LegalHold>", CN_S3E_MALFORMED_XML, false },
        { "<LegalHold><Status>abc</Status></LegalHold>", CN_S3E_MALFORMED_XML, false },
        { "<LegalHold/>", CN_S3E_MALFORMED_XML, false },
        { "<Hold><Status>ON</Status></Hold>", CN_S3E_MALFORMED_XML, false },
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        bool on = !h[i].on;
        d = doc(h[i].in);
        CN_CHECK_EQ(cn__s3_legal_hold_parse(d, &on), h[i].want);
        if (h[i].want == CN_S3E_NONE)
            CN_CHECK_EQ(on, h[i].on);
        cn_xml_doc_free(d);
    }
}

static void test_default_compact(void)
{
    cn_objects_lock_mode_t m;
    int32_t days = -1, years = -1;
    CN_CHECK(cn_objects_lock_default_parse("GOVERNANCE D30", 14, &m, &days, &years));
    CN_CHECK_EQ(m, CN_OBJ_LOCK_GOVERNANCE);
    CN_CHECK_EQ(days, 30);
    CN_CHECK_EQ(years, 0);
    CN_CHECK(cn_objects_lock_default_parse("COMPLIANCE Y2", 13, &m, &days, &years));
    CN_CHECK_EQ(m, CN_OBJ_LOCK_COMPLIANCE);
    CN_CHECK_EQ(years, 2);
    CN_CHECK_EQ(days, 0);
    CN_CHECK(cn_objects_lock_default_parse("GOVERNANCE D36500", 17, &m, &days, &years));
    static const char *const bad[] = { "GOVERNANCE D0",  "GOVERNANCE D36501", "COMPLIANCE Y101",
                                       "GOVERNANCE D",   "GOVERNANCE X3",     "governance D3",
                                       "GOVERNANCE D03", "GOVERNANCED3",      "GOVERNANCE D3x",
                                       "COMPLIANCE Y-1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CN_CHECK(!cn_objects_lock_default_parse(bad[i], strlen(bad[i]), &m, &days, &years));
    CN_CHECK_EQ(cn_objects_lock_default_until(1, 0, 1000), 1000 + 86400000LL);
    CN_CHECK_EQ(cn_objects_lock_default_until(0, 1, 0), 365LL * 86400000LL);
}

static void test_error_rows(void)
{
    static const struct {
        cn_err_t cls;
        cn_obj_detail_t detail;
        cn_s3_err_t want;
    } t[] = {
        { CN_E_INVALID, CN_OBJ_LOCK_NOT_ENABLED, CN_S3E_INVALID_REQUEST },
        { CN_E_NOT_FOUND, CN_OBJ_LOCK_UNSET, CN_S3E_NO_SUCH_OBJECT_LOCK_CONFIG },
        { CN_E_DENIED, CN_OBJ_LOCK_RETAINED, CN_S3E_ACCESS_DENIED },
        { CN_E_INVALID, CN_OBJ_LOCK_DATE_PAST, CN_S3E_INVALID_ARGUMENT },
        { CN_E_CONFLICT, CN_OBJ_BUCKET_STATE_INVALID, CN_S3E_INVALID_BUCKET_STATE },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_objects_req_t rq;
        memset(&rq, 0, sizeof rq);
        rq.what = CN_OBJ_WHAT_KEY;
        rq.fail.cls = t[i].cls;
        rq.fail.detail = (uint16_t)t[i].detail;
        CN_CHECK_EQ(cn__s3_err_of(&rq, t[i].cls), t[i].want);
    }
    CN_CHECK_STR(cn_s3_err_code(CN_S3E_OBJECT_LOCK_CONFIG_NOT_FOUND),
                 "ObjectLockConfigurationNotFoundError");
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_OBJECT_LOCK_CONFIG_NOT_FOUND), 404);
    CN_CHECK_STR(cn_s3_err_code(CN_S3E_INVALID_RETENTION_PERIOD), "InvalidRetentionPeriod");
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_INVALID_RETENTION_PERIOD), 400);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_NO_SUCH_OBJECT_LOCK_CONFIG), 404);
}

/* The permissions the lock actions need, and who holds bucket:configure. */
static void test_permissions(void)
{
    static const struct {
        cn_authz_action_t a;
        cn_perms_t p;
        bool obj;
    } t[] = {
        { CN_ACT_GET_BUCKET_OBJECT_LOCK_CONFIGURATION, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_BUCKET_OBJECT_LOCK_CONFIGURATION, CN_PERM_BUCKET_CONFIGURE, false },
        { CN_ACT_GET_OBJECT_RETENTION, CN_PERM_OBJECT_GET, true },
        { CN_ACT_PUT_OBJECT_RETENTION, CN_PERM_OBJECT_LOCK, true },
        { CN_ACT_GET_OBJECT_LEGAL_HOLD, CN_PERM_OBJECT_GET, true },
        { CN_ACT_PUT_OBJECT_LEGAL_HOLD, CN_PERM_OBJECT_LOCK, true },
        { CN_ACT_BYPASS_GOVERNANCE_RETENTION, CN_PERM_OBJECT_BYPASS_GOVERNANCE, true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CN_CHECK_EQ(cn_authz_action_perm(t[i].a), t[i].p);
        CN_CHECK_EQ(cn_authz_action_is_object(t[i].a), t[i].obj);
    }
    CN_CHECK(cn_perms_allow(CN_PERM_BUCKET_CREATE, CN_PERM_BUCKET_CONFIGURE));
    CN_CHECK(cn_perms_allow(CN_PERM_BUCKET_CONFIGURE, CN_PERM_BUCKET_CONFIGURE));
    CN_CHECK(!cn_perms_allow(CN_PERM_BUCKET_CONFIGURE, CN_PERM_BUCKET_CREATE));
    CN_CHECK(!cn_perms_allow(CN_PERM_OBJECT_PUT, CN_PERM_OBJECT_LOCK));
    CN_CHECK(!cn_perms_allow(CN_PERM_OBJECT_LOCK, CN_PERM_OBJECT_BYPASS_GOVERNANCE));
    CN_CHECK(cn_perms_allow(CN_PERM_ADMIN, CN_PERM_OBJECT_BYPASS_GOVERNANCE));
    CN_CHECK((CN_PERM_DEFAULT & CN_PERM_OBJECT_LOCK) && !(CN_PERM_DEFAULT & CN_PERM_ADMIN));
    const char *names[] = { "bucket:configure", "object:lock", "object:bypass-governance" };
    const cn_perms_t bits[] = { CN_PERM_BUCKET_CONFIGURE, CN_PERM_OBJECT_LOCK,
                                CN_PERM_OBJECT_BYPASS_GOVERNANCE };
    for (size_t i = 0; i < 3; i++) {
        cn_perms_t p = 0;
        CN_CHECK_EQ(cn_perm_parse(names[i], strlen(names[i]), &p), 0);
        CN_CHECK_EQ(p, bits[i]);
        CN_CHECK_STR(cn_perm_name(bits[i]), names[i]);
        CN_CHECK(CN_PERM_ALL & bits[i]);
    }
    char buf[CN_PERMS_STR_MAX];
    CN_CHECK_EQ(cn_perms_format(CN_PERM_ALL, buf, sizeof buf), 0);
    CN_CHECK(strstr(buf, "admin bucket:configure object:lock object:bypass-governance") != NULL);
}

CN_TEST_MAIN(CN_TEST(test_config_golden), CN_TEST(test_permissions), CN_TEST(test_config_faults),
             CN_TEST(test_dates), CN_TEST(test_retention_and_hold_docs),
             CN_TEST(test_default_compact), CN_TEST(test_error_rows))
