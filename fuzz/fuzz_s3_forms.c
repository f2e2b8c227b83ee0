/* libFuzzer harness: the S3 face's browser-facing parsers — the
 * multipart/form-data parser and the POST policy check (src/http/s3_post.c),
 * the ACL XML and grant headers (src/http/s3_acl.c), the CORS configuration
 * (src/http/s3_cors.c).
 *
 * Input: a mode byte (low two bits), a split byte, then the payload.
 *   0 form: the first payload line is the boundary ("xYz" when not valid),
 *     the rest the body, parsed in one piece and again in three pieces cut at
 *     the split byte's fraction and in the middle of the rest.  Invariants:
 *     both parses report the same events (part names, data bytes hashed in
 *     order, part ends) and the same outcome; names are bounded C strings;
 *     data slices come from the input or the delimiter.
 *   1 policy: the payload up to the first NUL is the policy JSON, the rest
 *     "name=value" lines as the form's fields.  Invariants: the outcome is
 *     NONE, InvalidPolicyDocument or AccessDenied; on NONE the range is
 *     ordered and every field not exempt was covered.
 *   2 ACL / CORS XML: parsed with the bounded reader, then as an
 *     AccessControlPolicy (an accepted ACL survives its JSON round trip) and
 *     as a CORSConfiguration (an accepted one normalizes to a fixed point).
 *   3 grant header: one x-amz-grant-* value.  Invariants: accepted means at
 *     least one grant, at most 100. */
#include "../src/s3/s3_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- form events ------------------------------------------------------------------ */
typedef struct {
    uint64_t h;
    size_t parts, ends, bytes;
    const uint8_t *lo, *hi;
    const char *dlo, *dhi;
} ev_t;

static void mix(ev_t *e, uint64_t v)
{
    e->h = (e->h ^ v) * 1099511628211ull;
}

static int ev_part(void *ctx, const cn__form_part_t *p)
{
    ev_t *e = ctx;
    if (strlen(p->name) > CN__FORM_NAME_MAX || strlen(p->filename) > CN__FORM_FILENAME_MAX ||
        strlen(p->content_type) >= sizeof p->content_type)
        abort();
    for (const char *s = p->name; *s; s++)
        mix(e, (uint8_t)*s);
    mix(e, 0x100 | (p->has_filename ? 1 : 0));
    e->parts++;
    return 0;
}

static int ev_data(void *ctx, const uint8_t *p, size_t n)
{
    ev_t *e = ctx;
    bool in_input = p >= e->lo && p + n <= e->hi;
    bool in_delim = (const char *)p >= e->dlo && (const char *)p + n <= e->dhi;
    if (!n || (!in_input && !in_delim))
        abort();
    for (size_t i = 0; i < n; i++)
        mix(e, p[i]);
    e->bytes += n;
    return 0;
}

static int ev_end(void *ctx)
{
    ev_t *e = ctx;
    mix(e, 0x200);
    e->ends++;
    return 0;
}

static const cn__form_cb_t ev_cb = { ev_part, ev_data, ev_end };

static void run_form(const uint8_t *p, size_t n, uint8_t split)
{
    const uint8_t *nl = memchr(p, '\n', n);
    char ct[200] = "multipart/form-data; boundary=", b[CN__FORM_BOUNDARY_MAX + 1];
    size_t bl = nl ? (size_t)(nl - p) : 0;
    if (nl && bl < 100 && !memchr(p, 0, bl)) {
        memcpy(ct + strlen(ct), p, bl);
        ct[30 + bl] = 0;
    }
    if (!cn__form_boundary(ct, b, sizeof b))
        strcpy(b, "xYz");
    const uint8_t *body = nl ? nl + 1 : p;
    size_t len = n - (size_t)(body - p);
    cn__form_t f1, f2;
    cn__form_init(&f1, b);
    cn__form_init(&f2, b);
    ev_t e1 = { 1469598103934665603ull, 0, 0, 0, body, body + len, f1.delim, f1.delim + f1.dlen };
    ev_t e2 = e1;
    e2.dlo = f2.delim;
    e2.dhi = f2.delim + f2.dlen;
    int r1 = cn__form_feed(&f1, body, len, &ev_cb, &e1);
    size_t c1 = len * split / 256, c2 = c1 + (len - c1) / 2;
    int r2 = cn__form_feed(&f2, body, c1, &ev_cb, &e2);
    if (r2 == 0)
        r2 = cn__form_feed(&f2, body + c1, c2 - c1, &ev_cb, &e2);
    if (r2 == 0)
        r2 = cn__form_feed(&f2, body + c2, len - c2, &ev_cb, &e2);
    if ((r1 != 0 && r1 != CN_E_INVALID) || r1 != r2)
        abort();
    if (r1 == 0 && (e1.h != e2.h || e1.parts != e2.parts || e1.ends != e2.ends ||
                    e1.bytes != e2.bytes || cn__form_done(&f1) != cn__form_done(&f2)))
        abort();
    if (e1.ends > e1.parts || e1.bytes > len)
        abort();
}

/* ---- policy ------------------------------------------------------------------------ */
static void run_policy(const uint8_t *p, size_t n)
{
    const uint8_t *z = memchr(p, 0, n);
    size_t jl = z ? (size_t)(z - p) : n;
    char *rest = malloc(n - jl + 1);
    if (!rest)
        return;
    memcpy(rest, z ? z + 1 : p + n, z ? n - jl - 1 : 0);
    rest[z ? n - jl - 1 : 0] = 0;
    cn__post_field_t fs[16];
    size_t nf = 0;
    char *save = NULL;
    for (char *line = strtok_r(rest, "\n", &save); line && nf < 16;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq || eq == line)
            continue;
        *eq = 0;
        fs[nf] = (cn__post_field_t){ line, strlen(line), eq + 1, strlen(eq + 1), false };
        nf++;
    }
    int64_t lo, hi;
    char why[256];
    cn_s3_err_t e = cn__s3_post_policy_check((const char *)p, jl, 1700000000000, "bucket", fs, nf,
                                             &lo, &hi, why, sizeof why);
    if (e != CN_S3E_NONE && e != CN_S3E_INVALID_POLICY_DOCUMENT && e != CN_S3E_ACCESS_DENIED)
        abort();
    if (strlen(why) >= sizeof why)
        abort();
    if (e == CN_S3E_NONE) {
        if (lo < 0 || hi < lo)
            abort();
        for (size_t i = 0; i < nf; i++)
            if (!fs[i].covered && strcasecmp(fs[i].name, "policy") &&
                strcasecmp(fs[i].name, "file") && strcasecmp(fs[i].name, "signature") &&
                strcasecmp(fs[i].name, "x-amz-signature") &&
                strcasecmp(fs[i].name, "awsaccesskeyid") && strncasecmp(fs[i].name, "x-ignore-", 9))
                abort();
    }
    free(rest);
}

/* ---- ACL XML, CORS, grant headers ----------------------------------------------------- */
static cn_s3_err_t resolve(void *ctx, cn__grantee_kind_t kind, const char *v, size_t n,
                           cn_grantee_type_t *type, char id[CN_ACCOUNT_NAME_MAX + 1])
{
    (void)ctx;
    if (kind == CN__GRANTEE_URI)
        return cn_authz_group_parse(v, n, type) == CN_OK ? CN_S3E_NONE : CN_S3E_INVALID_ARGUMENT;
    /* Accounts: names of letters; an email resolves to its local part. */
    size_t l = n;
    if (kind == CN__GRANTEE_EMAIL) {
        const char *at = memchr(v, '@', n);
        if (!at)
            return CN_S3E_UNRESOLVABLE_GRANT_BY_EMAIL;
        l = (size_t)(at - v);
    }
    if (l == 0 || l > CN_ACCOUNT_NAME_MAX)
        return CN_S3E_INVALID_ARGUMENT;
    for (size_t i = 0; i < l; i++)
        if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z')))
            return CN_S3E_INVALID_ARGUMENT;
    memcpy(id, v, l);
    id[l] = 0;
    *type = CN_GRANTEE_USER;
    return CN_S3E_NONE;
}

static void check_acl(const cn_authz_acl_t *acl)
{
    if (acl->ngrants > CN_ACL_MAX_GRANTS)
        abort();
    cn_buf_t b = { 0 };
    if (cn_authz_acl_serialize(acl, &b) != CN_OK) {
        cn_buf_free(&b);
        return;
    }
    cn_authz_acl_t *back = calloc(1, sizeof *back);
    if (back) {
        if (cn_authz_acl_parse((const char *)b.data, b.len, back) != CN_OK ||
            back->ngrants != acl->ngrants || strcmp(back->owner, acl->owner) != 0)
            abort();
        free(back);
    }
    cn_buf_free(&b);
}

static void run_xml(const uint8_t *p, size_t n)
{
    cn_xml_doc_t *d = NULL;
    if (cn_xml_parse(p, n, 2000, &d) != CN_OK) {
        cn_xml_doc_free(d);
        return;
    }
    cn_authz_acl_t *acl = calloc(1, sizeof *acl);
    if (acl) {
        char owner[CN_ACCOUNT_NAME_MAX + 1];
        cn_authz_acl_init(acl, "owner");
        cn_s3_err_t e = cn__s3_acl_xml_parse(d, resolve, NULL, acl, owner);
        if (e != CN_S3E_NONE && e != CN_S3E_MALFORMED_ACL && e != CN_S3E_INVALID_ARGUMENT &&
            e != CN_S3E_UNRESOLVABLE_GRANT_BY_EMAIL)
            abort();
        if (strlen(owner) > CN_ACCOUNT_NAME_MAX)
            abort();
        if (e == CN_S3E_NONE)
            check_acl(acl);
        free(acl);
    }
    cn_buf_t out = { 0 };
    char why[200];
    cn_s3_err_t e = cn__s3_cors_normalize(d, &out, why, sizeof why);
    if (e != CN_S3E_NONE && e != CN_S3E_MALFORMED_XML && e != CN_S3E_INVALID_REQUEST &&
        e != CN_S3E_INTERNAL_ERROR)
        abort();
    if (e == CN_S3E_NONE) {
        cn_xml_doc_t *d2 = NULL;
        cn_buf_t out2 = { 0 };
        if (cn_xml_parse(out.data, out.len, 100000, &d2) != CN_OK ||
            cn__s3_cors_normalize(d2, &out2, why, sizeof why) != CN_S3E_NONE ||
            out2.len != out.len || memcmp(out2.data, out.data, out.len) != 0)
            abort();
        (void)cn__s3_cors_match(d2, "http://a.test", "GET", "x-amz-date, content-type");
        cn_xml_doc_free(d2);
        cn_buf_free(&out2);
    }
    cn_buf_free(&out);
    cn_xml_doc_free(d);
}

static void run_grant(const uint8_t *p, size_t n)
{
    cn_authz_acl_t *acl = calloc(1, sizeof *acl);
    if (!acl)
        return;
    cn_authz_acl_init(acl, "owner");
    cn_s3_err_t e = cn__s3_grant_header_parse((const char *)p, n, CN_ACL_READ, resolve, NULL, acl);
    if (e == CN_S3E_NONE && (acl->ngrants == 0 || acl->ngrants > CN_ACL_MAX_GRANTS))
        abort();
    if (e == CN_S3E_NONE)
        check_acl(acl);
    free(acl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* A private copy, so slices past the end are caught by ASan. */
    size_t n = size - 2;
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        return 0;
    memcpy(p, data + 2, n);
    switch (data[0] & 3) {
    case 0: run_form(p, n, data[1]); break;
    case 1: run_policy(p, n); break;
    case 2: run_xml(p, n); break;
    default: run_grant(p, n); break;
    }
    free(p);
    return 0;
}
