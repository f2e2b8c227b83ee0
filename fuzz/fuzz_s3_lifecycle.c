/* libFuzzer harness: the S3 face's lifecycle configuration validator
 * (src/s3/lifecycle.c), the stored encoding and the expiry matcher
 * (src/objects/lifecycle.c), and the tag parsers (src/s3/tagging.c).
 *
 * Input: a mode byte (low bit), then the payload.
 *   0 lifecycle: the payload as a LifecycleConfiguration.  Invariants: the
 *     answer is one S3 validation refuses with (or NONE / NotImplemented);
 *     an accepted one has 1..1000 rules, each with an ID of 1..255 bytes,
 *     unique; it encodes, every cut of the encoding is refused, the whole
 *     decodes to the same rules and document; its re-encoding (a generated
 *     ID) validates again to the same rules but the generated IDs; the
 *     matcher answers an expiry only from an enabled rule with an
 *     expiration.
 *   1 tags: the payload up to the first NUL as an x-amz-tagging value, the
 *     rest as a Tagging document.  Invariants: an accepted set passes
 *     cn_objects_tags_check; written back as a Tagging document it parses
 *     to the same set. */
#include "../src/s3/s3_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool lc_answer_ok(cn_s3_err_t e)
{
    return e == CN_S3E_NONE || e == CN_S3E_MALFORMED_XML || e == CN_S3E_INVALID_ARGUMENT ||
           e == CN_S3E_INVALID_REQUEST || e == CN_S3E_INVALID_TAG || e == CN_S3E_NOT_IMPLEMENTED ||
           e == CN_S3E_INTERNAL_ERROR;
}

static bool same_rule(const cn_objects_lc_rule_t *a, const cn_objects_lc_rule_t *b, bool ids)
{
    if ((ids && strcmp(a->id, b->id) != 0) || a->enabled != b->enabled ||
        strcmp(a->prefix, b->prefix) != 0 || a->ntags != b->ntags || a->size_gt != b->size_gt ||
        a->size_lt != b->size_lt || a->exp_days != b->exp_days ||
        a->exp_date_ms != b->exp_date_ms || a->exp_marker != b->exp_marker ||
        a->nc_days != b->nc_days || a->nc_newer != b->nc_newer || a->abort_days != b->abort_days)
        return false;
    for (size_t i = 0; i < a->ntags; i++)
        if (strcmp(a->tags[i].key, b->tags[i].key) || strcmp(a->tags[i].value, b->tags[i].value))
            return false;
    return true;
}

static void check_encoding(const cn__s3_lc_t *lc, const uint8_t *doc, size_t len)
{
    cn_buf_t v = { 0 };
    if (cn_objects_lc_encode(lc->rules, lc->nrules, (const char *)doc, len, &v) < 0)
        abort(); /* the validator accepted it: the encoder must too */
    for (size_t cut = 0; cut < v.len - len; cut += 1 + cut / 8) {
        cn_objects_lc_t t;
        if (cn_objects_lc_decode(v.data, cut, &t) == 0)
            abort();
    }
    cn_objects_lc_t back;
    if (cn_objects_lc_decode(v.data, v.len, &back) < 0 || back.nrules != lc->nrules ||
        back.doc_len != len || (len && memcmp(back.doc, doc, len) != 0))
        abort();
    for (size_t i = 0; i < lc->nrules; i++)
        if (!same_rule(&lc->rules[i], &back.rules[i], true))
            abort();
    int64_t exp = 0;
    char id[CN_OBJECTS_LC_ID_MAX + 1];
    const char *key = lc->rules[0].prefix;
    if (cn_objects_lc_expiry(&back, key, 1000, lc->rules[0].tags, lc->rules[0].ntags, 1000, 0, &exp,
                             id) == 1) {
        bool from_rule = false;
        for (size_t i = 0; i < back.nrules; i++)
            from_rule |= strcmp(back.rules[i].id, id) == 0 && back.rules[i].enabled &&
                         (back.rules[i].exp_days > 0 || back.rules[i].exp_date_ms > 0);
        if (!from_rule)
            abort();
    }
    cn_objects_lc_free(&back);
    cn_buf_free(&v);
}

static void fuzz_lifecycle(const uint8_t *p, size_t n)
{
    cn_xml_doc_t *d = NULL;
    if (cn_xml_parse(p, n, 100000, &d) < 0) {
        cn_xml_doc_free(d);
        return;
    }
    cn__s3_lc_t lc;
    char why[200];
    cn_s3_err_t e = cn__s3_lc_parse(d, &lc, why, sizeof why);
    if (!lc_answer_ok(e))
        abort();
    if (e == CN_S3E_NONE) {
        if (lc.nrules < 1 || lc.nrules > CN_OBJECTS_LC_RULES_MAX)
            abort();
        const uint8_t *doc = lc.generated ? lc.doc.data : p;
        size_t len = lc.generated ? lc.doc.len : n;
        check_encoding(&lc, doc, len);
        if (lc.generated) {
            /* The re-encoding is a configuration of the same rules. */
            cn_xml_doc_t *d2 = NULL;
            cn__s3_lc_t lc2;
            if (cn_xml_parse(lc.doc.data, lc.doc.len, 100000, &d2) < 0 ||
                cn__s3_lc_parse(d2, &lc2, why, sizeof why) != CN_S3E_NONE ||
                lc2.nrules != lc.nrules || lc2.generated)
                abort();
            for (size_t i = 0; i < lc.nrules; i++)
                if (!same_rule(&lc.rules[i], &lc2.rules[i], true))
                    abort();
            cn__s3_lc_free(&lc2);
            cn_xml_doc_free(d2);
        }
    }
    cn__s3_lc_free(&lc);
    cn_xml_doc_free(d);
}

static void tags_roundtrip(const cn__s3_tags_t *t)
{
    if (cn_objects_tags_check(t->kv, t->n, CN__S3_TAGS_CAP, NULL, 0) < 0)
        abort();
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn__s3_tags_xml(&w, t->kv, t->n);
    cn_xml_doc_t *d = NULL;
    cn__s3_tags_t back;
    char why[96];
    if (cn_xml_finish(&w) < 0 || cn_xml_parse(out.data, out.len, 1000, &d) < 0 ||
        cn__s3_tags_parse_xml(d, CN__S3_TAGS_CAP, &back, why, sizeof why) != CN_S3E_NONE ||
        back.n != t->n)
        abort();
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(back.kv[i].key, t->kv[i].key) || strcmp(back.kv[i].value, t->kv[i].value))
            abort();
    cn__s3_tags_free(&back);
    cn_xml_doc_free(d);
    cn_buf_free(&out);
}

static void fuzz_tags(const uint8_t *p, size_t n)
{
    const uint8_t *nul = memchr(p, 0, n);
    size_t ql = nul ? (size_t)(nul - p) : n;
    cn__s3_tags_t t;
    char why[96];
    cn_s3_err_t e =
        cn__s3_tags_parse_query((const char *)p, ql, CN__S3_TAGS_CAP, &t, why, sizeof why);
    if (e != CN_S3E_NONE && e != CN_S3E_INVALID_TAG)
        abort();
    if (e == CN_S3E_NONE)
        tags_roundtrip(&t);
    cn__s3_tags_free(&t);
    if (!nul)
        return;
    cn_xml_doc_t *d = NULL;
    if (cn_xml_parse(nul + 1, n - ql - 1, 1000, &d) == 0) {
        e = cn__s3_tags_parse_xml(d, CN_OBJECTS_TAGS_MAX, &t, why, sizeof why);
        if (e != CN_S3E_NONE && e != CN_S3E_INVALID_TAG && e != CN_S3E_MALFORMED_XML &&
            e != CN_S3E_INTERNAL_ERROR)
            abort();
        if (e == CN_S3E_NONE)
            tags_roundtrip(&t);
        cn__s3_tags_free(&t);
    }
    cn_xml_doc_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        fuzz_tags(data + 1, size - 1);
    else
        fuzz_lifecycle(data + 1, size - 1);
    return 0;
}
