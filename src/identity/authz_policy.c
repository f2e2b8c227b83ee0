/* authz policy: S3 bucket policy documents — strict parsing into a compiled,
 * immutable form, evaluation against one request, and the AWS "is public"
 * rule.  Strings of the compiled form point into the jansson document, which
 * the policy keeps alive; nothing is mutated after cn_authz_policy_parse, so a
 * parsed policy may be read from many threads.
 */
#include "authz_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ARN_S3 "arn:aws:s3:::"
#define ARN_S3_LEN (sizeof ARN_S3 - 1)
#define ARN_IAM "arn:aws:iam::"
#define ARN_IAM_LEN (sizeof ARN_IAM - 1)

typedef struct sv {
    const char *s;
    size_t n;
} sv_t;

/* ---- condition vocabulary ------------------------------------------------- */
typedef enum {
    OP_STR_EQ,
    OP_STR_NE,
    OP_STR_EQ_IC,
    OP_STR_NE_IC,
    OP_STR_LIKE,
    OP_STR_NOT_LIKE,
    OP_NUM_EQ,
    OP_NUM_NE,
    OP_NUM_LT,
    OP_NUM_LE,
    OP_NUM_GT,
    OP_NUM_GE,
    OP_IP,
    OP_NOT_IP,
    OP_BOOL,
    OP_NULL,
    OP_ARN_EQ,
    OP_ARN_NE,
    OP_ARN_LIKE,
    OP_ARN_NOT_LIKE,
} op_t;

static const struct {
    const char *name;
    op_t op;
} ops[] = {
    { "StringEquals", OP_STR_EQ },
    { "StringNotEquals", OP_STR_NE },
    { "StringEqualsIgnoreCase", OP_STR_EQ_IC },
    { "StringNotEqualsIgnoreCase", OP_STR_NE_IC },
    { "StringLike", OP_STR_LIKE },
    { "StringNotLike", OP_STR_NOT_LIKE },
    { "NumericEquals", OP_NUM_EQ },
    { "NumericNotEquals", OP_NUM_NE },
    { "NumericLessThan", OP_NUM_LT },
    { "NumericLessThanEquals", OP_NUM_LE },
    { "NumericGreaterThan", OP_NUM_GT },
    { "NumericGreaterThanEquals", OP_NUM_GE },
    { "IpAddress", OP_IP },
    { "NotIpAddress", OP_NOT_IP },
    { "Bool", OP_BOOL },
    { "Null", OP_NULL },
    { "ArnEquals", OP_ARN_EQ },
    { "ArnNotEquals", OP_ARN_NE },
    { "ArnLike", OP_ARN_LIKE },
    { "ArnNotLike", OP_ARN_NOT_LIKE },
};

static bool op_negated(op_t op)
{
    return op == OP_STR_NE || op == OP_STR_NE_IC || op == OP_STR_NOT_LIKE || op == OP_NUM_NE ||
           op == OP_NOT_IP || op == OP_ARN_NE || op == OP_ARN_NOT_LIKE;
}

static bool op_numeric(op_t op)
{
    return op >= OP_NUM_EQ && op <= OP_NUM_GE;
}

typedef enum {
    K_SOURCE_IP,
    K_SECURE_TRANSPORT,
    K_REFERER,
    K_USER_AGENT,
    K_USERNAME,
    K_USERID,
    K_PRINCIPAL_ACCOUNT,
    /* recognised, never present in a cairn request */
    K_SOURCE_ARN,
    K_SOURCE_ACCOUNT,
    K_SOURCE_VPC,
    K_SOURCE_VPCE,
    K_PRINCIPAL_ORG_ID,
    K_PREFIX,
    K_DELIMITER,
    K_MAX_KEYS,
    K_X_AMZ_ACL,
    K_GRANT_READ,
    K_GRANT_WRITE,
    K_GRANT_READ_ACP,
    K_GRANT_WRITE_ACP,
    K_GRANT_FULL_CONTROL,
    K_EXISTING_TAG,
    K_REQUEST_TAG,      /* s3:RequestObjectTag/<k> */
    K_REQUEST_TAG_KEYS, /* s3:RequestObjectTagKeys: multi-valued */
} key_t_;

static const struct {
    const char *name;
    key_t_ key;
    bool fixed;
} keys[] = {
    { "aws:SourceIp", K_SOURCE_IP, false },
    { "aws:SecureTransport", K_SECURE_TRANSPORT, false },
    { "aws:Referer", K_REFERER, false },
    { "aws:UserAgent", K_USER_AGENT, false },
    { "aws:username", K_USERNAME, true },
    { "aws:userid", K_USERID, true },
    { "aws:PrincipalAccount", K_PRINCIPAL_ACCOUNT, true },
    { "aws:SourceArn", K_SOURCE_ARN, true },
    { "aws:SourceAccount", K_SOURCE_ACCOUNT, true },
    { "aws:SourceVpc", K_SOURCE_VPC, true },
    { "aws:SourceVpce", K_SOURCE_VPCE, true },
    { "aws:PrincipalOrgID", K_PRINCIPAL_ORG_ID, true },
    { "s3:prefix", K_PREFIX, false },
    { "s3:delimiter", K_DELIMITER, false },
    { "s3:max-keys", K_MAX_KEYS, false },
    { "s3:x-amz-acl", K_X_AMZ_ACL, false },
    { "s3:x-amz-grant-read", K_GRANT_READ, false },
    { "s3:x-amz-grant-write", K_GRANT_WRITE, false },
    { "s3:x-amz-grant-read-acp", K_GRANT_READ_ACP, false },
    { "s3:x-amz-grant-write-acp", K_GRANT_WRITE_ACP, false },
    { "s3:x-amz-grant-full-control", K_GRANT_FULL_CONTROL, false },
    { "s3:RequestObjectTagKeys", K_REQUEST_TAG_KEYS, false },
};
#define TAG_KEY_PREFIX "s3:ExistingObjectTag/"
#define TAG_KEY_PREFIX_LEN (sizeof TAG_KEY_PREFIX - 1)
#define REQ_TAG_PREFIX "s3:RequestObjectTag/"
#define REQ_TAG_PREFIX_LEN (sizeof REQ_TAG_PREFIX - 1)

typedef struct cidr {
    uint8_t family; /* 4 or 6 */
    uint8_t bits;
    uint8_t addr[16];
} cidr_t;

typedef struct val {
    sv_t s; /* the value as a string (JSON numbers/bools formatted into inl) */
    char inl[40];
    double num;
    bool num_ok;
    cidr_t cidr; /* IP operators only */
} val_t;

enum {
    SET_PLAIN,
    SET_ANY,
    SET_ALL
};

typedef struct cond {
    op_t op;
    uint8_t set;
    bool if_exists;
    key_t_ key;
    bool fixed_key; /* a key AWS counts as pinning a statement to fixed values */
    sv_t tag;       /* K_EXISTING_TAG, K_REQUEST_TAG: the tag key */
    size_t nvals;
    val_t *vals;
} cond_t;

typedef struct stmt {
    sv_t sid;
    bool deny;
    bool not_principal, principal_any;
    size_t nprin;
    sv_t *prin; /* account names */
    bool not_action;
    size_t nact;
    sv_t *act; /* patterns over "s3:Name", case-insensitive */
    bool not_resource;
    size_t nres;
    sv_t *res; /* patterns over "bucket[/key]" (ARN prefix removed) */
    size_t ncond;
    cond_t *conds;
    bool is_public;
} stmt_t;

struct cn_authz_policy {
    json_t *root;
    size_t nstmt;
    stmt_t *stmts;
    bool is_public;
};

/* ---- wildcard matching ------------------------------------------------------ */
static inline int subj_at(const cn__subj_t *s, size_t i)
{
    if (i < s->alen)
        return (unsigned char)s->a[i];
    if (!s->b)
        return -1;
    if (i == s->alen)
        return '/';
    i -= s->alen + 1;
    return i < s->blen ? (unsigned char)s->b[i] : -1;
}

static inline size_t subj_len(const cn__subj_t *s)
{
    return s->alen + (s->b ? 1 + s->blen : 0);
}

bool cn__authz_glob(const char *pat, size_t plen, const cn__subj_t *s, bool icase)
{
    size_t n = subj_len(s), p = 0, i = 0;
    size_t star_p = (size_t)-1, star_i = 0;
    while (i < n) {
        if (p < plen && pat[p] == '*') {
            star_p = p++;
            star_i = i;
            continue;
        }
        if (p < plen) {
            int c = subj_at(s, i), q = (unsigned char)pat[p];
            if (q == '?' || c == q || (icase && tolower(c) == tolower(q))) {
                p++;
                i++;
                continue;
            }
        }
        if (star_p == (size_t)-1)
            return false;
        /* Let the last star swallow one more byte and retry from there. */
        p = star_p + 1;
        i = ++star_i;
    }
    while (p < plen && pat[p] == '*')
        p++;
    return p == plen;
}

static bool glob_str(const char *pat, size_t plen, const char *s, size_t slen, bool icase)
{
    cn__subj_t subj = { s, slen, NULL, 0 };
    return cn__authz_glob(pat, plen, &subj, icase);
}

bool cn__authz_name_ok(const char *name, size_t len)
{
    if (!name || len == 0 || len > CN_ACCOUNT_NAME_MAX || !isalnum((unsigned char)name[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return false;
    }
    return true;
}

/* ---- addresses ---------------------------------------------------------------- */
static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

void cn_authz_ip_from_sockaddr(const struct sockaddr *sa, cn_authz_ip_t *out)
{
    memset(out, 0, sizeof *out);
    if (!sa)
        return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        out->family = 4;
        memcpy(out->addr, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;
        if (memcmp(a, v4mapped, 12) == 0) {
            out->family = 4;
            memcpy(out->addr, a + 12, 4);
        } else {
            out->family = 6;
            memcpy(out->addr, a, 16);
        }
    }
}

cn_err_t cn_authz_ip_parse(const char *s, cn_authz_ip_t *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return CN_E_INVALID;
    if (inet_pton(AF_INET, s, out->addr) == 1) {
        out->family = 4;
        return CN_OK;
    }
    uint8_t a[16];
    if (inet_pton(AF_INET6, s, a) == 1) {
        if (memcmp(a, v4mapped, 12) == 0) {
            out->family = 4;
            memcpy(out->addr, a + 12, 4);
        } else {
            out->family = 6;
            memcpy(out->addr, a, 16);
        }
        return CN_OK;
    }
    return CN_E_INVALID;
}

/* "a.b.c.d[/n]" or "v6[/n]"; a mapped v6 range of /96 or narrower becomes v4. */
static bool cidr_parse(const char *s, size_t len, cidr_t *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash) {
        *slash = 0;
        const char *b = slash + 1;
        if (!*b || strlen(b) > 3)
            return false;
        bits = 0;
        for (; *b; b++) {
            if (!isdigit((unsigned char)*b))
                return false;
            bits = bits * 10 + (*b - '0');
        }
    }
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        if (bits > 32)
            return false;
        out->family = 4;
        out->bits = (uint8_t)(bits < 0 ? 32 : bits);
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        if (bits > 128)
            return false;
        out->family = 6;
        out->bits = (uint8_t)(bits < 0 ? 128 : bits);
        if (memcmp(out->addr, v4mapped, 12) == 0 && out->bits >= 96) {
            memmove(out->addr, out->addr + 12, 4);
            memset(out->addr + 4, 0, 12);
            out->family = 4;
            out->bits = (uint8_t)(out->bits - 96);
        }
    } else {
        return false;
    }
    return true;
}

static bool cidr_contains(const cidr_t *c, const cn_authz_ip_t *ip)
{
    if (ip->family != c->family)
        return false;
    unsigned full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->addr, ip->addr, full) != 0)
        return false;
    if (rest) {
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        if ((c->addr[full] & mask) != (ip->addr[full] & mask))
            return false;
    }
    return true;
}

/* ---- parsing -------------------------------------------------------------------- */
typedef struct pstate {
    char *err;
    size_t stmt_no; /* 1-based, for messages; 0 = document level */
    const char *bucket;
} pstate_t;

__attribute__((format(printf, 2, 3))) static cn_err_t fail(pstate_t *ps, const char *fmt, ...)
{
    if (!ps->err)
        return CN_E_INVALID;
    int off = 0;
    if (ps->stmt_no)
        off = snprintf(ps->err, CN_AUTHZ_ERR_MAX, "statement %zu: ", ps->stmt_no);
    if (off < 0 || off >= CN_AUTHZ_ERR_MAX)
        off = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + off, CN_AUTHZ_ERR_MAX - (size_t)off, fmt, ap);
    va_end(ap);
    return CN_E_INVALID;
}

static sv_t jsv(const json_t *j)
{
    sv_t v = { json_string_value(j), json_string_length(j) };
    return v;
}

/* Shortens a value for an error message. */
static int clip(size_t n)
{
    return n > 64 ? 64 : (int)n;
}

/* A string or a non-empty list of strings → a new array of views. */
static cn_err_t strlist(pstate_t *ps, const char *field, json_t *v, sv_t **out, size_t *n)
{
    size_t cnt = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && cnt == 0)
        return fail(ps, "%s must not be an empty list", field);
    if (!json_is_array(v) && !json_is_string(v))
        return fail(ps, "%s must be a string or a list of strings", field);
    sv_t *a = calloc(cnt, sizeof *a);
    if (!a)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(e)) {
            free(a);
            return fail(ps, "%s must be a string or a list of strings", field);
        }
        a[i] = jsv(e);
    }
    *out = a;
    *n = cnt;
    return CN_OK;
}

static cn_err_t parse_principal(pstate_t *ps, stmt_t *st, json_t *v, const char *field)
{
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "*") != 0)
            return fail(ps, "invalid %s \"%.*s\": use \"*\" or {\"AWS\": ...}", field,
                        clip(json_string_length(v)), json_string_value(v));
        st->principal_any = true;
        return CN_OK;
    }
    if (!json_is_object(v) || json_object_size(v) == 0)
        return fail(ps, "%s must be \"*\" or a non-empty object", field);
    /* Upper bound of names: every entry of AWS and CanonicalUser. */
    size_t cap = 0;
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e)
    {
        cap += json_is_array(e) ? json_array_size(e) : 1;
    }
    st->prin = calloc(cap ? cap : 1, sizeof *st->prin);
    if (!st->prin)
        return -ENOMEM;
    json_object_foreach(v, k, e)
    {
        bool aws = strcmp(k, "AWS") == 0, canon = strcmp(k, "CanonicalUser") == 0;
        if (!aws && !canon && strcmp(k, "Service") != 0)
            return fail(ps, "unsupported %s type \"%.*s\"", field, clip(strlen(k)), k);
        sv_t *names = NULL;
        size_t n = 0;
        cn_err_t rc = strlist(ps, field, e, &names, &n);
        if (rc)
            return rc;
        for (size_t i = 0; i < n; i++) {
            sv_t nm = names[i];
            if (!aws && !canon)
                continue; /* service principals are accepted and match no cairn caller */
            if (aws && nm.n == 1 && nm.s[0] == '*') {
                st->principal_any = true;
                continue;
            }
            if (aws && nm.n > ARN_IAM_LEN && memcmp(nm.s, ARN_IAM, ARN_IAM_LEN) == 0) {
                const char *acct = nm.s + ARN_IAM_LEN;
                size_t alen = nm.n - ARN_IAM_LEN;
                if (alen < 6 || memcmp(acct + alen - 5, ":root", 5) != 0) {
                    free(names);
                    return fail(ps,
                                "invalid principal \"%.*s\": an account ARN is "
                                "arn:aws:iam::NAME:root",
                                clip(nm.n), nm.s);
                }
                nm.s = acct;
                nm.n = alen - 5;
            }
            if (!cn__authz_name_ok(nm.s, nm.n)) {
                sv_t bad = names[i];
                free(names);
                return fail(ps, "invalid principal \"%.*s\"", clip(bad.n), bad.s);
            }
            st->prin[st->nprin++] = nm;
        }
        free(names);
    }
    return CN_OK;
}

static cn_err_t parse_actions(pstate_t *ps, stmt_t *st, json_t *v, const char *field)
{
    CN_TRY(strlist(ps, field, v, &st->act, &st->nact));
    for (size_t i = 0; i < st->nact; i++) {
        sv_t a = st->act[i];
        if (a.n == 1 && a.s[0] == '*')
            continue;
        bool ok = a.n > 3 && strncasecmp(a.s, "s3:", 3) == 0;
        for (size_t k = 3; ok && k < a.n; k++) {
            unsigned char c = (unsigned char)a.s[k];
            ok = isalnum(c) || c == '*' || c == '?';
        }
        if (!ok)
            return fail(ps, "invalid action \"%.*s\": use s3:Name (wildcards * and ?) or *",
                        clip(a.n), a.s);
        if (!cn__s3_action_known(a.s + 3, a.n - 3))
            return fail(ps, "invalid action \"%.*s\": Amazon S3 defines no such action", clip(a.n),
                        a.s);
    }
    return CN_OK;
}

static cn_err_t parse_resources(pstate_t *ps, stmt_t *st, json_t *v, const char *field)
{
    CN_TRY(strlist(ps, field, v, &st->res, &st->nres));
    size_t blen = strlen(ps->bucket);
    for (size_t i = 0; i < st->nres; i++) {
        sv_t r = st->res[i];
        if (r.n <= ARN_S3_LEN || memcmp(r.s, ARN_S3, ARN_S3_LEN) != 0)
            return fail(ps,
                        "invalid resource \"%.*s\": use arn:aws:s3:::%s or "
                        "arn:aws:s3:::%s/KEY",
                        clip(r.n), r.s, ps->bucket, ps->bucket);
        sv_t rest = { r.s + ARN_S3_LEN, r.n - ARN_S3_LEN };
        const char *slash = memchr(rest.s, '/', rest.n);
        size_t bpart = slash ? (size_t)(slash - rest.s) : rest.n;
        /* The bucket part, or the whole pattern, must be able to name this bucket. */
        if (!glob_str(rest.s, bpart, ps->bucket, blen, false) &&
            !glob_str(rest.s, rest.n, ps->bucket, blen, false))
            return fail(ps, "resource \"%.*s\" is outside bucket %s", clip(r.n), r.s, ps->bucket);
        st->res[i] = rest;
    }
    return CN_OK;
}

static cn_err_t parse_op(pstate_t *ps, const char *name, cond_t *c)
{
    size_t n = strlen(name);
    c->set = SET_PLAIN;
    if (n > 12 && strncmp(name, "ForAnyValue:", 12) == 0) {
        c->set = SET_ANY;
        name += 12;
        n -= 12;
    } else if (n > 13 && strncmp(name, "ForAllValues:", 13) == 0) {
        c->set = SET_ALL;
        name += 13;
        n -= 13;
    }
    c->if_exists = n > 8 && memcmp(name + n - 8, "IfExists", 8) == 0;
    if (c->if_exists)
        n -= 8;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strlen(ops[i].name) == n && memcmp(ops[i].name, name, n) == 0) {
            c->op = ops[i].op;
            if (c->op == OP_NULL && (c->if_exists || c->set != SET_PLAIN))
                break;
            return CN_OK;
        }
    }
    return fail(ps, "unsupported condition operator \"%.*s\"", clip(strlen(name)), name);
}

static cn_err_t parse_key(pstate_t *ps, const char *name, cond_t *c)
{
    size_t n = strlen(name);
    if (n > TAG_KEY_PREFIX_LEN && strncasecmp(name, TAG_KEY_PREFIX, TAG_KEY_PREFIX_LEN) == 0) {
        c->key = K_EXISTING_TAG;
        c->tag.s = name + TAG_KEY_PREFIX_LEN;
        c->tag.n = n - TAG_KEY_PREFIX_LEN;
        return CN_OK;
    }
    if (n > REQ_TAG_PREFIX_LEN && strncasecmp(name, REQ_TAG_PREFIX, REQ_TAG_PREFIX_LEN) == 0) {
        c->key = K_REQUEST_TAG;
        c->tag.s = name + REQ_TAG_PREFIX_LEN;
        c->tag.n = n - REQ_TAG_PREFIX_LEN;
        return CN_OK;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcasecmp(keys[i].name, name) == 0) {
            c->key = keys[i].key;
            c->fixed_key = keys[i].fixed;
            return CN_OK;
        }
    }
    return fail(ps, "unsupported condition key \"%.*s\"", clip(n), name);
}

static cn_err_t parse_values(pstate_t *ps, const char *opname, const char *keyname, json_t *v,
                             cond_t *c)
{
    size_t cnt = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && cnt == 0)
        return fail(ps, "condition %s %s has no values", opname, keyname);
    c->vals = calloc(cnt, sizeof *c->vals);
    if (!c->vals)
        return -ENOMEM;
    c->nvals = cnt;
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        val_t *x = &c->vals[i];
        if (json_is_string(e)) {
            x->s = jsv(e);
        } else if (json_is_integer(e)) {
            snprintf(x->inl, sizeof x->inl, "%" JSON_INTEGER_FORMAT, json_integer_value(e));
            x->s.s = x->inl;
            x->s.n = strlen(x->inl);
        } else if (json_is_real(e)) {
            snprintf(x->inl, sizeof x->inl, "%.17g", json_real_value(e));
            x->s.s = x->inl;
            x->s.n = strlen(x->inl);
        } else if (json_is_boolean(e)) {
            x->s.s = json_is_true(e) ? "true" : "false";
            x->s.n = strlen(x->s.s);
        } else {
            return fail(ps, "condition %s %s: values must be strings, numbers or booleans", opname,
                        keyname);
        }
        if (memchr(x->s.s, 0, x->s.n))
            return fail(ps, "condition %s %s: a value holds a NUL byte", opname, keyname);
        if (op_numeric(c->op)) {
            char buf[64], *end;
            if (x->s.n == 0 || x->s.n >= sizeof buf)
                return fail(ps, "condition %s %s: \"%.*s\" is not a number", opname, keyname,
                            clip(x->s.n), x->s.s);
            memcpy(buf, x->s.s, x->s.n);
            buf[x->s.n] = 0;
            errno = 0;
            x->num = strtod(buf, &end);
            if (*end || errno || !isfinite(x->num))
                return fail(ps, "condition %s %s: \"%.*s\" is not a number", opname, keyname,
                            clip(x->s.n), x->s.s);
            x->num_ok = true;
        } else if (c->op == OP_IP || c->op == OP_NOT_IP) {
            if (!cidr_parse(x->s.s, x->s.n, &x->cidr))
                return fail(ps, "condition %s %s: \"%.*s\" is not an IP address or CIDR range",
                            opname, keyname, clip(x->s.n), x->s.s);
        } else if (c->op == OP_BOOL || c->op == OP_NULL) {
            if (!(x->s.n == 4 && strncasecmp(x->s.s, "true", 4) == 0) &&
                !(x->s.n == 5 && strncasecmp(x->s.s, "false", 5) == 0))
                return fail(ps, "condition %s %s: \"%.*s\" is not true or false", opname, keyname,
                            clip(x->s.n), x->s.s);
        }
    }
    return CN_OK;
}

static cn_err_t parse_conditions(pstate_t *ps, stmt_t *st, json_t *v)
{
    if (!json_is_object(v))
        return fail(ps, "Condition must be an object");
    size_t cap = 0;
    const char *opname, *keyname;
    json_t *block, *vals;
    json_object_foreach(v, opname, block)
    {
        if (!json_is_object(block) || json_object_size(block) == 0)
            return fail(ps, "condition %.*s must be a non-empty object of keys",
                        clip(strlen(opname)), opname);
        cap += json_object_size(block);
    }
    if (cap == 0)
        return CN_OK;
    st->conds = calloc(cap, sizeof *st->conds);
    if (!st->conds)
        return -ENOMEM;
    json_object_foreach(v, opname, block)
    {
        cond_t proto;
        memset(&proto, 0, sizeof proto);
        CN_TRY(parse_op(ps, opname, &proto));
        json_object_foreach(block, keyname, vals)
        {
            cond_t *c = &st->conds[st->ncond++];
            *c = proto;
            CN_TRY(parse_key(ps, keyname, c));
            bool ip_op = c->op == OP_IP || c->op == OP_NOT_IP;
            if (ip_op != (c->key == K_SOURCE_IP) && c->op != OP_NULL)
                return fail(ps,
                            ip_op ? "%s works only on aws:SourceIp"
                                  : "aws:SourceIp needs IpAddress or NotIpAddress "
                                    "(not %s)",
                            opname);
            if ((c->key == K_EXISTING_TAG || c->key == K_REQUEST_TAG) && c->tag.n > 128)
                return fail(ps, "condition key %.*s...: tag keys are at most 128 bytes",
                            clip(strlen(keyname)), keyname);
            CN_TRY(parse_values(ps, opname, keyname, vals, c));
        }
    }
    return CN_OK;
}

/* A condition that pins an Allow to fixed values, so the statement is not
 * public (AWS's rule for GetBucketPolicyStatus and RestrictPublicBuckets). */
static bool cond_restricts(const cond_t *c)
{
    if (c->if_exists || c->set == SET_ALL)
        return false;
    if (c->op == OP_IP) {
        for (size_t i = 0; i < c->nvals; i++) {
            const cidr_t *r = &c->vals[i].cidr;
            if (r->bits < (r->family == 4 ? 8 : 32))
                return false;
        }
        return true;
    }
    if (c->fixed_key && (c->op == OP_STR_EQ || c->op == OP_STR_EQ_IC || c->op == OP_ARN_EQ))
        return true;
    if (c->fixed_key && (c->op == OP_STR_LIKE || c->op == OP_ARN_LIKE)) {
        for (size_t i = 0; i < c->nvals; i++)
            if (memchr(c->vals[i].s.s, '*', c->vals[i].s.n) ||
                memchr(c->vals[i].s.s, '?', c->vals[i].s.n))
                return false;
        return true;
    }
    return false;
}

static const char *const stmt_fields[] = {
    "Sid",       "Effect",   "Principal",   "NotPrincipal", "Action",
    "NotAction", "Resource", "NotResource", "Condition",
};

/* Finds which of the exclusive fields name and not_name (one is required)
 * statement j holds: its value, whether it is the negated one, its name. */
static cn_err_t field_or_not(pstate_t *ps, json_t *j, const char *name, const char *not_name,
                             json_t **v, bool *negated, const char **found)
{
    json_t *x = json_object_get(j, name), *nx = json_object_get(j, not_name);
    if (x && nx)
        return fail(ps, "%s and %s are exclusive", name, not_name);
    if (!x && !nx)
        return fail(ps, "missing %s", name);
    *negated = nx != NULL;
    *v = x ? x : nx;
    *found = x ? name : not_name;
    return CN_OK;
}

static cn_err_t parse_stmt(pstate_t *ps, json_t *j, stmt_t *st)
{
    if (!json_is_object(j))
        return fail(ps, "a statement must be an object");
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof stmt_fields / sizeof stmt_fields[0]; i++)
            known = known || strcmp(k, stmt_fields[i]) == 0;
        if (!known)
            return fail(ps, "unknown field \"%.*s\"", clip(strlen(k)), k);
    }
    if ((v = json_object_get(j, "Sid"))) {
        if (!json_is_string(v))
            return fail(ps, "Sid must be a string");
        st->sid = jsv(v);
        for (size_t i = 0; i < st->sid.n; i++)
            if (!isalnum((unsigned char)st->sid.s[i]) && st->sid.s[i] != ' ' &&
                st->sid.s[i] != '-' && st->sid.s[i] != '_' && st->sid.s[i] != '.')
                return fail(ps, "Sid may hold only letters, digits, spaces, '.', '-', '_'");
    }
    v = json_object_get(j, "Effect");
    if (!v)
        return fail(ps, "missing Effect");
    if (json_is_string(v) && strcmp(json_string_value(v), "Allow") == 0)
        st->deny = false;
    else if (json_is_string(v) && strcmp(json_string_value(v), "Deny") == 0)
        st->deny = true;
    else
        return fail(ps, "Effect must be \"Allow\" or \"Deny\"");

    const char *field = NULL; /* set by field_or_not (gcc -O3 cannot see it) */
    CN_TRY(field_or_not(ps, j, "Principal", "NotPrincipal", &v, &st->not_principal, &field));
    CN_TRY(parse_principal(ps, st, v, field));
    CN_TRY(field_or_not(ps, j, "Action", "NotAction", &v, &st->not_action, &field));
    CN_TRY(parse_actions(ps, st, v, field));
    CN_TRY(field_or_not(ps, j, "Resource", "NotResource", &v, &st->not_resource, &field));
    CN_TRY(parse_resources(ps, st, v, field));

    if ((v = json_object_get(j, "Condition")))
        CN_TRY(parse_conditions(ps, st, v));

    if (!st->deny) {
        bool everyone = st->not_principal ? !st->principal_any : st->principal_any;
        bool restricted = false;
        for (size_t i = 0; i < st->ncond; i++)
            restricted = restricted || cond_restricts(&st->conds[i]);
        st->is_public = everyone && !restricted;
    }
    return CN_OK;
}

void cn_authz_policy_free(cn_authz_policy_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nstmt; i++) {
        stmt_t *st = &p->stmts[i];
        free(st->prin);
        free(st->act);
        free(st->res);
        for (size_t k = 0; k < st->ncond; k++)
            free(st->conds[k].vals);
        free(st->conds);
    }
    free(p->stmts);
    json_decref(p->root);
    free(p);
}

cn_err_t cn_authz_policy_parse(const char *json, size_t len, const char *bucket,
                               cn_authz_policy_t **out, char err[CN_AUTHZ_ERR_MAX])
{
    pstate_t ps = { err, 0, bucket };
    cn_authz_policy_t *p = NULL;
    cn_err_t rc;
    *out = NULL;
    if (err)
        err[0] = 0;
    if (!json || !bucket || !*bucket)
        return fail(&ps, "no policy or bucket given");
    if (len > CN_AUTHZ_POLICY_MAX)
        return fail(&ps, "policy is %zu bytes; the limit is %d", len, CN_AUTHZ_POLICY_MAX);
    if (len == 0)
        return fail(&ps, "policy is empty");

    p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    json_error_t jerr;
    p->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!p->root) {
        rc = fail(&ps, "policy is not valid JSON (line %d, column %d): %s", jerr.line, jerr.column,
                  jerr.text);
        goto fail;
    }
    if (!json_is_object(p->root)) {
        rc = fail(&ps, "policy must be a JSON object");
        goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach(p->root, k, v)
    {
        if (strcmp(k, "Version") && strcmp(k, "Id") && strcmp(k, "Statement")) {
            rc = fail(&ps, "unknown top-level field \"%.*s\"", clip(strlen(k)), k);
            goto fail;
        }
    }
    if ((v = json_object_get(p->root, "Version")) &&
        !(json_is_string(v) && (strcmp(json_string_value(v), "2012-10-17") == 0 ||
                                strcmp(json_string_value(v), "2008-10-17") == 0))) {
        rc = fail(&ps, "Version must be \"2012-10-17\" or \"2008-10-17\"");
        goto fail;
    }
    if ((v = json_object_get(p->root, "Id")) && !json_is_string(v)) {
        rc = fail(&ps, "Id must be a string");
        goto fail;
    }
    json_t *stmts = json_object_get(p->root, "Statement");
    if (!stmts) {
        rc = fail(&ps, "missing Statement");
        goto fail;
    }
    if (!json_is_object(stmts) && !(json_is_array(stmts) && json_array_size(stmts) > 0)) {
        rc = fail(&ps, "Statement must be an object or a non-empty list");
        goto fail;
    }
    size_t n = json_is_array(stmts) ? json_array_size(stmts) : 1;
    p->stmts = calloc(n, sizeof *p->stmts);
    if (!p->stmts) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        ps.stmt_no = i + 1;
        p->nstmt = i + 1; /* so free releases a partly built statement */
        rc = parse_stmt(&ps, json_is_array(stmts) ? json_array_get(stmts, i) : stmts, &p->stmts[i]);
        if (rc)
            goto fail;
        const sv_t *sid = &p->stmts[i].sid;
        for (size_t j = 0; sid->n && j < i; j++) {
            if (p->stmts[j].sid.n == sid->n && memcmp(p->stmts[j].sid.s, sid->s, sid->n) == 0) {
                rc = fail(&ps, "duplicate Sid \"%.*s\"", clip(sid->n), sid->s);
                goto fail;
            }
        }
        p->is_public = p->is_public || p->stmts[i].is_public;
    }
    *out = p;
    return CN_OK;
fail:
    cn_authz_policy_free(p);
    return rc;
}

bool cn_authz_policy_is_public(const cn_authz_policy_t *p)
{
    return p && p->is_public;
}

const char *cn__authz_policy_sid(const cn_authz_policy_t *p, int idx, size_t *len)
{
    if (!p || idx < 0 || (size_t)idx >= p->nstmt) {
        *len = 0;
        return "";
    }
    *len = p->stmts[idx].sid.n;
    return p->stmts[idx].sid.n ? p->stmts[idx].sid.s : "";
}

cn_err_t cn_authz_policy_public_read(const char *bucket, cn_buf_t *out)
{
    if (!bucket || !*bucket || strlen(bucket) > 255)
        return CN_E_INVALID;
    for (const char *c = bucket; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
            return CN_E_INVALID;
    return cn_buf_printf(out,
                         "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"PublicRead\","
                         "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
                         "\"Resource\":\"arn:aws:s3:::%s/*\"}]}",
                         bucket);
}

/* ---- evaluation ------------------------------------------------------------------ */
static bool principal_matches(const stmt_t *st, const cn__pctx_t *c)
{
    bool in = st->principal_any;
    if (!in && !c->anonymous) {
        size_t n = strlen(c->req->principal);
        for (size_t i = 0; !in && i < st->nprin; i++)
            in = st->prin[i].n == n && memcmp(st->prin[i].s, c->req->principal, n) == 0;
    }
    return st->not_principal ? !in : in;
}

static bool action_matches(const stmt_t *st, const cn__pctx_t *c)
{
    bool in = false;
    size_t n = strlen(c->action_name);
    for (size_t i = 0; !in && i < st->nact; i++)
        in = glob_str(st->act[i].s, st->act[i].n, c->action_name, n, true);
    return st->not_action ? !in : in;
}

static bool resource_matches(const stmt_t *st, const cn__pctx_t *c)
{
    cn__subj_t s = { c->bucket, strlen(c->bucket), c->key, c->key ? strlen(c->key) : 0 };
    bool in = false;
    for (size_t i = 0; !in && i < st->nres; i++)
        in = cn__authz_glob(st->res[i].s, st->res[i].n, &s, false);
    return st->not_resource ? !in : in;
}

/* The request's x-amz-grant-* header for a grant key, on the actions S3
 * gives the s3:x-amz-grant-* keys (writes that may carry an ACL); NULL
 * (absent) on every other action. */
static const char *grant_value(key_t_ key, const cn_authz_req_t *r)
{
    if (r->action != CN_ACT_PUT_OBJECT && r->action != CN_ACT_PUT_OBJECT_ACL &&
        r->action != CN_ACT_PUT_BUCKET_ACL && r->action != CN_ACT_CREATE_BUCKET)
        return NULL;
    switch (key) {
    case K_GRANT_READ: return r->grants.read;
    case K_GRANT_WRITE: return r->grants.write;
    case K_GRANT_READ_ACP: return r->grants.read_acp;
    case K_GRANT_WRITE_ACP: return r->grants.write_acp;
    case K_GRANT_FULL_CONTROL: return r->grants.full_control;
    default: return NULL;
    }
}

/* The value of tag key (n bytes) in tags[0..nt), "" for a NULL value;
 * NULL when the set has no such key. */
static const char *tag_value(const cn_authz_tag_t *tags, size_t nt, const sv_t *key)
{
    for (size_t i = 0; i < nt; i++) {
        const char *k = tags[i].key;
        if (k && strlen(k) == key->n && memcmp(k, key->s, key->n) == 0)
            return tags[i].value ? tags[i].value : "";
    }
    return NULL;
}

/* The request's value for a condition key: NULL when absent. */
static const char *ctx_value(const cond_t *cd, const cn__pctx_t *c)
{
    const cn_authz_req_t *r = c->req;
    switch (cd->key) {
    case K_SECURE_TRANSPORT: return r->secure_transport ? "true" : "false";
    case K_REFERER: return r->referer;
    case K_USER_AGENT: return r->user_agent;
    case K_USERNAME:
    case K_USERID:
    case K_PRINCIPAL_ACCOUNT: return c->anonymous ? NULL : r->principal;
    case K_PREFIX: return r->prefix;
    case K_DELIMITER: return r->delimiter;
    case K_MAX_KEYS: return r->max_keys;
    case K_X_AMZ_ACL: return r->x_amz_acl;
    case K_GRANT_READ:
    case K_GRANT_WRITE:
    case K_GRANT_READ_ACP:
    case K_GRANT_WRITE_ACP:
    case K_GRANT_FULL_CONTROL: return grant_value(cd->key, r);
    case K_EXISTING_TAG:
        return c->object ? tag_value(c->object->tags, c->object->ntags, &cd->tag) : NULL;
    case K_REQUEST_TAG:
        return r->req_tags_given ? tag_value(r->req_tags, r->nreq_tags, &cd->tag) : NULL;
    default: return NULL; /* aws:SourceIp is handled apart; the rest never appear */
    }
}

static bool value_matches(const cond_t *cd, const val_t *v, const char *s, double num, bool num_ok,
                          const cn_authz_ip_t *ip)
{
    size_t n = s ? strlen(s) : 0;
    switch (cd->op) {
    case OP_STR_EQ:
    case OP_STR_NE:
    case OP_ARN_EQ:
    case OP_ARN_NE: return n == v->s.n && memcmp(s, v->s.s, n) == 0;
    case OP_STR_EQ_IC:
    case OP_STR_NE_IC: return n == v->s.n && strncasecmp(s, v->s.s, n) == 0;
    case OP_STR_LIKE:
    case OP_STR_NOT_LIKE:
    case OP_ARN_LIKE:
    case OP_ARN_NOT_LIKE: return glob_str(v->s.s, v->s.n, s, n, false);
    case OP_NUM_EQ:
    case OP_NUM_NE: return num_ok && num == v->num;
    case OP_NUM_LT: return num_ok && num < v->num;
    case OP_NUM_LE: return num_ok && num <= v->num;
    case OP_NUM_GT: return num_ok && num > v->num;
    case OP_NUM_GE: return num_ok && num >= v->num;
    case OP_IP:
    case OP_NOT_IP: return cidr_contains(&v->cidr, ip);
    case OP_BOOL: return n == v->s.n && strncasecmp(s, v->s.s, n) == 0;
    case OP_NULL: return false;
    }
    return false;
}

static bool cond_holds_one(const cond_t *cd, const char *s, const cn_authz_ip_t *ip);

/* s3:RequestObjectTagKeys, a set of values: ForAllValues holds when the
 * condition holds for every key the request sets (vacuously for none);
 * ForAnyValue, and a plain operator, when it holds for some key.  Absent
 * when the request carries no tag set. */
static bool cond_holds_keys(const cond_t *cd, const cn_authz_req_t *r)
{
    bool present = r->req_tags_given;
    if (cd->op == OP_NULL) {
        for (size_t i = 0; i < cd->nvals; i++)
            if ((cd->vals[i].s.n == 4) == !present)
                return true;
        return false;
    }
    if (!present)
        return cd->if_exists || cd->set == SET_ALL;
    if (cd->set == SET_ALL) {
        for (size_t i = 0; i < r->nreq_tags; i++)
            if (!cond_holds_one(cd, r->req_tags[i].key ? r->req_tags[i].key : "", &r->source_ip))
                return false;
        return true;
    }
    for (size_t i = 0; i < r->nreq_tags; i++)
        if (cond_holds_one(cd, r->req_tags[i].key ? r->req_tags[i].key : "", &r->source_ip))
            return true;
    return false;
}

static bool cond_holds(const cond_t *cd, const cn__pctx_t *c)
{
    if (cd->key == K_REQUEST_TAG_KEYS)
        return cond_holds_keys(cd, c->req);
    const cn_authz_ip_t *ip = &c->req->source_ip;
    const char *s = NULL;
    bool present;
    if (cd->key == K_SOURCE_IP)
        present = ip->family == 4 || ip->family == 6;
    else
        present = (s = ctx_value(cd, c)) != NULL;

    if (cd->op == OP_NULL) {
        /* "true" asks for an absent key, "false" for a present one; with
         * several values any may hold.  Values were checked at parse. */
        for (size_t i = 0; i < cd->nvals; i++)
            if ((cd->vals[i].s.n == 4) == !present)
                return true;
        return false;
    }
    if (!present) {
        if (cd->if_exists || cd->set == SET_ALL)
            return true;
        if (cd->set == SET_ANY)
            return false;
        return op_negated(cd->op);
    }
    return cond_holds_one(cd, s, ip);
}

/* A condition on a present value s. */
static bool cond_holds_one(const cond_t *cd, const char *s, const cn_authz_ip_t *ip)
{
    double num = 0;
    bool num_ok = false;
    if (op_numeric(cd->op)) {
        char *end;
        errno = 0;
        num = strtod(s, &end);
        num_ok = *s && !*end && !errno && isfinite(num);
        if (!num_ok)
            return false; /* a non-numeric value satisfies no numeric test */
    }
    bool any = false;
    for (size_t i = 0; !any && i < cd->nvals; i++)
        any = value_matches(cd, &cd->vals[i], s, num, num_ok, ip);
    return op_negated(cd->op) ? !any : any;
}

void cn__authz_policy_eval(const cn_authz_policy_t *p, const cn__pctx_t *c, cn__peval_t *out)
{
    out->deny_idx = -1;
    out->allow_idx = -1;
    if (!p)
        return;
    for (size_t i = 0; i < p->nstmt; i++) {
        const stmt_t *st = &p->stmts[i];
        /* Once an Allow matched, only a Deny can change the outcome. */
        if (!st->deny && out->allow_idx >= 0)
            continue;
        if (!principal_matches(st, c) || !action_matches(st, c) || !resource_matches(st, c))
            continue;
        bool holds = true;
        for (size_t k = 0; holds && k < st->ncond; k++)
            holds = cond_holds(&st->conds[k], c);
        if (!holds)
            continue;
        if (st->deny) {
            out->deny_idx = (int)i;
            return;
        }
        out->allow_idx = (int)i;
    }
}
