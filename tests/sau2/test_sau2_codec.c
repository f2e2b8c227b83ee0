/* The SAU2 codec against the hand-written golden frames of
 * sau2_fixtures.txt (an encoder that changes fails here), the intent
 * digests, and the decoders' refusals: every truncation, trailing bytes,
 * every over-limit count or length, and secret misuse. */
#include "cairn/sau2.h"
#include "cn_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fixture_path;

static int nib(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Loads entry "@ name" of the fixture file into out (cap bytes); returns its
 * length, or (size_t)-1 when absent or malformed (a test bug: checked). */
static size_t load(const char *name, uint8_t *out, size_t cap)
{
    FILE *f = fopen(fixture_path, "r");
    char line[512];
    size_t n = 0;
    int in = 0, bad = !f;
    while (f && !bad && fgets(line, sizeof line, f)) {
        if (line[0] == '@') {
            if (in)
                break;
            line[strcspn(line, "\n")] = '\0';
            in = strcmp(line + 2, name) == 0;
            continue;
        }
        for (const char *s = line; in && *s && *s != '#' && !bad; s++) {
            if (*s == '"') {
                for (s++; *s && *s != '"' && n < cap; s++)
                    out[n++] = (uint8_t)*s;
                bad = *s != '"';
            } else if (nib(*s) >= 0) {
                bad = nib(s[1]) < 0 || n >= cap;
                if (!bad)
                    out[n++] = (uint8_t)(nib(s[0]) << 4 | nib(s[1]));
                s++;
            }
        }
    }
    if (f)
        fclose(f);
    return bad || n == 0 ? (size_t)-1 : n;
}

static cn_sau2_str_t S(const char *s)
{
    cn_sau2_str_t v = { (const uint8_t *)s, (uint16_t)strlen(s) };
    return v;
}

static bool str_is(cn_sau2_str_t s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

static void op_ids(uint8_t op[16], uint8_t base)
{
    for (int i = 0; i < 16; i++)
        op[i] = (uint8_t)(base + i);
}

static cn_sau2_req_t login_req(const char *verb)
{
    cn_sau2_req_t q;
    memset(&q, 0, sizeof q);
    op_ids(q.op, 0x30);
    q.argc = 3;
    q.argv[0] = S(verb);
    q.argv[1] = S("alice");
    q.argv[2] = S("c0ffee");
    q.has_secret = true;
    q.secret = S("hunter2");
    return q;
}

/* Encodes q and compares with fixture name; decodes the fixture and compares
 * with q. */
static void check_request(const char *name, const cn_sau2_req_t *q)
{
    uint8_t fx[1024];
    size_t n = load(name, fx, sizeof fx);
    CN_CHECK(n != (size_t)-1);
    if (n == (size_t)-1)
        return;
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_sau2_enc_request(&b, q), 0);
    CN_CHECK_EQ(b.len, n);
    CN_CHECK(b.len == n && memcmp(b.data, fx, n) == 0);
    uint32_t len = 0;
    CN_CHECK_EQ(cn_sau2_frame_parse(fx, &len), 0);
    CN_CHECK_EQ(len, n - CN_SAU2_HDR_LEN);
    cn_sau2_req_t d;
    CN_CHECK_EQ(cn_sau2_dec_request(fx + CN_SAU2_HDR_LEN, n - CN_SAU2_HDR_LEN, &d), 0);
    CN_CHECK_MEM(d.op, q->op, 16);
    CN_CHECK_EQ(d.argc, q->argc);
    for (uint16_t i = 0; i < d.argc && i < q->argc; i++)
        CN_CHECK(d.argv[i].len == q->argv[i].len &&
                 memcmp(d.argv[i].p, q->argv[i].p, d.argv[i].len) == 0);
    CN_CHECK_EQ(d.has_secret, q->has_secret);
    CN_CHECK(!q->has_secret ||
             (d.secret.len == q->secret.len && memcmp(d.secret.p, q->secret.p, d.secret.len) == 0));
    /* Every truncation is refused, and so is one trailing byte. */
    for (size_t cut = 0; cut < len; cut++)
        CN_CHECK_EQ(cn_sau2_dec_request(fx + CN_SAU2_HDR_LEN, cut, &d), CN_E_PROTOCOL);
    fx[n] = 0;
    CN_CHECK_EQ(cn_sau2_dec_request(fx + CN_SAU2_HDR_LEN, len + 1, &d), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_request_fixtures(void)
{
    cn_sau2_req_t q = login_req("login");
    check_request("req_login", &q);

    memset(&q, 0, sizeof q);
    q.argc = 1;
    q.argv[0] = S("trust-bundle");
    check_request("req_trust_bundle", &q);

    memset(&q, 0, sizeof q);
    op_ids(q.op, 0x30);
    q.argc = 3;
    q.argv[0] = S("users-password");
    q.argv[1] = S("bob");
    q.argv[2] = S("2");
    q.has_secret = true;
    q.secret = S("correct horse");
    check_request("req_users_password", &q);
}

static void test_intent(void)
{
    uint8_t fx[256];
    cn_digest_t want, got, admin;
    cn_sau2_req_t q = login_req("login");
    size_t n = load("intent_login", fx, sizeof fx);
    CN_CHECK(n != (size_t)-1);
    cn_blake3(fx, n, &want);
    CN_CHECK_EQ(cn_sau2_intent(&q, 1, &got), 0);
    CN_CHECK_MEM(got.b, want.b, CN_DIGEST_LEN);
    /* The secret never enters it. */
    q.secret = S("another password");
    CN_CHECK_EQ(cn_sau2_intent(&q, 1, &got), 0);
    CN_CHECK_MEM(got.b, want.b, CN_DIGEST_LEN);

    q = login_req("admin-login");
    n = load("intent_admin_login", fx, sizeof fx);
    CN_CHECK(n != (size_t)-1);
    cn_blake3(fx, n, &want);
    CN_CHECK_EQ(cn_sau2_intent(&q, 0, &admin), 0);
    CN_CHECK_MEM(admin.b, want.b, CN_DIGEST_LEN);
    CN_CHECK(memcmp(admin.b, got.b, CN_DIGEST_LEN) != 0);
    CN_CHECK_EQ(cn_sau2_intent(&q, 3, &got), CN_E_INVALID);
}

static void check_reply(const char *name, const cn_sau2_reply_t *r)
{
    uint8_t fx[512];
    size_t n = load(name, fx, sizeof fx);
    CN_CHECK(n != (size_t)-1);
    if (n == (size_t)-1)
        return;
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_sau2_enc_reply(&b, r), 0);
    CN_CHECK(b.len == n && memcmp(b.data, fx, n) == 0);
    size_t len = n - CN_SAU2_HDR_LEN;
    cn_sau2_reply_view_t v;
    CN_CHECK_EQ(cn_sau2_dec_reply(fx + CN_SAU2_HDR_LEN, len, &v), 0);
    CN_CHECK_EQ(v.code, r->code);
    CN_CHECK_EQ(v.nrows, r->nrows);
    for (size_t cut = 0; cut < len; cut++)
        CN_CHECK_EQ(cn_sau2_dec_reply(fx + CN_SAU2_HDR_LEN, cut, &v), CN_E_PROTOCOL);
    fx[n] = 0;
    CN_CHECK_EQ(cn_sau2_dec_reply(fx + CN_SAU2_HDR_LEN, len + 1, &v), CN_E_PROTOCOL);
    cn_buf_free(&b);
}

static void test_reply_fixtures(void)
{
    cn_sau2_reply_t r;
    memset(&r, 0, sizeof r);
    op_ids(r.incarnation, 0x20);
    r.revision = 7;
    const char *row[] = { "alice", "person" };
    CN_CHECK_EQ(cn_sau2_reply_row(&r, 2, row), 0);
    CN_CHECK_EQ(cn_sau2_reply_row(&r, 0, NULL), 0);
    check_reply("reply_rows", &r);

    uint8_t fx[512];
    size_t n = load("reply_rows", fx, sizeof fx);
    cn_sau2_reply_view_t v;
    cn_sau2_row_t got;
    size_t off = 0;
    CN_CHECK_EQ(cn_sau2_dec_reply(fx + CN_SAU2_HDR_LEN, n - CN_SAU2_HDR_LEN, &v), 0);
    CN_CHECK_EQ(v.revision, 7);
    CN_CHECK_MEM(v.incarnation, r.incarnation, 16);
    CN_CHECK_EQ(cn_sau2_row_next(&v, &off, &got), 1);
    CN_CHECK(got.n == 2 && str_is(got.s[0], "alice") && str_is(got.s[1], "person"));
    CN_CHECK_EQ(cn_sau2_row_next(&v, &off, &got), 1);
    CN_CHECK_EQ(got.n, 0);
    CN_CHECK_EQ(cn_sau2_row_next(&v, &off, &got), 0);
    cn_sau2_reply_free(&r);

    memset(&r, 0, sizeof r);
    op_ids(r.incarnation, 0x20);
    r.revision = UINT64_MAX;
    check_reply("reply_empty", &r);

    CN_CHECK_EQ(cn_sau2_reply_row(&r, 1, row), 0);
    cn_sau2_reply_error(&r, 200, "operation id %s", "reused");
    CN_CHECK_EQ(r.nrows, 0);
    check_reply("reply_error", &r);
    CN_CHECK_EQ(cn_sau2_dec_reply(fx + CN_SAU2_HDR_LEN, n - CN_SAU2_HDR_LEN, &v), 0);
    cn_sau2_reply_free(&r);
}

static void test_frame_head(void)
{
    uint8_t h[8];
    uint32_t len = 0;
    cn_sau2_frame_head(h, CN_SAU2_MAX_PAYLOAD);
    CN_CHECK_EQ(cn_sau2_frame_parse(h, &len), 0);
    CN_CHECK_EQ(len, CN_SAU2_MAX_PAYLOAD);
    cn_sau2_frame_head(h, CN_SAU2_MAX_PAYLOAD + 1);
    CN_CHECK_EQ(cn_sau2_frame_parse(h, &len), CN_E_PROTOCOL);
    cn_sau2_frame_head(h, 1);
    h[3] = '1';
    CN_CHECK_EQ(cn_sau2_frame_parse(h, &len), CN_E_PROTOCOL);
}

/* Builds a request payload by hand: op zero, argc strings of len bytes 'a'
 * each with argv[0] = verb, then has/secret as given. */
static size_t raw_request(uint8_t *out, const char *verb, unsigned argc, size_t len, int has,
                          size_t secret_len)
{
    size_t n = 16;
    memset(out, 0, 16);
    out[n++] = (uint8_t)argc;
    out[n++] = (uint8_t)(argc >> 8);
    for (unsigned i = 0; i < argc; i++) {
        size_t l = i == 0 ? strlen(verb) : len;
        out[n++] = (uint8_t)l;
        out[n++] = (uint8_t)(l >> 8);
        if (i == 0)
            memcpy(out + n, verb, l);
        else
            memset(out + n, 'a', l);
        n += l;
    }
    out[n++] = (uint8_t)has;
    if (has == 1) {
        out[n++] = (uint8_t)secret_len;
        out[n++] = (uint8_t)(secret_len >> 8);
        memset(out + n, 'p', secret_len);
        n += secret_len;
    }
    return n;
}

static void test_request_refusals(void)
{
    static uint8_t p[CN_SAU2_MAX_STRINGS * (CN_SAU2_MAX_STRING + 2) + 4096];
    cn_sau2_req_t q;
    struct {
        const char *verb;
        unsigned argc;
        size_t len;
        int has;
        size_t secret;
        cn_err_t want;
    } cases[] = {
        { "users-list", 2, 3, 0, 0, 0 },
        { "users-list", 130, 4096, 0, 0, 0 }, /* both limits, exactly */
        { "users-list", 131, 1, 0, 0, CN_E_PROTOCOL },
        { "users-list", 2, 4097, 0, 0, CN_E_PROTOCOL },
        { "users-list", 0, 0, 0, 0, CN_E_PROTOCOL }, /* no verb */
        { "users-list", 1, 0, 2, 0, CN_E_PROTOCOL }, /* has_secret not a bool */
        { "users-list", 1, 0, 1, 5, CN_E_PROTOCOL }, /* a secret where none belongs */
        { "trust-bundle", 1, 0, 1, 1, CN_E_PROTOCOL },
        { "login", 3, 4, 0, 0, CN_E_PROTOCOL }, /* no password */
        { "login", 3, 4, 1, 0, CN_E_PROTOCOL }, /* empty password */
        { "login", 3, 4, 1, 1, 0 },
        { "login-outcome", 3, 4, 1, 1024, 0 },
        { "admin-login", 3, 4, 1, 1025, CN_E_PROTOCOL },
        { "admin-login-outcome", 3, 4, 0, 0, CN_E_PROTOCOL },
        { "users-password", 3, 4, 1, 11, CN_E_PROTOCOL },
        { "users-password", 3, 4, 1, 12, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = raw_request(p, cases[i].verb, cases[i].argc, cases[i].len, cases[i].has,
                               cases[i].secret);
        cn_err_t e = cn_sau2_dec_request(p, n, &q);
        if (e != cases[i].want)
            fprintf(stderr, "# case %zu (%s)\n", i, cases[i].verb);
        CN_CHECK_EQ(e, cases[i].want);
    }
    /* A count larger than the bytes left is refused before any string. */
    uint8_t small[19] = { 0 };
    small[16] = 130;
    CN_CHECK_EQ(cn_sau2_dec_request(small, sizeof small, &q), CN_E_PROTOCOL);
    /* The encoder refuses what the decoder would. */
    cn_buf_t b = { 0 };
    q = login_req("login");
    q.has_secret = false;
    CN_CHECK_EQ(cn_sau2_enc_request(&b, &q), CN_E_INVALID);
    q = login_req("users-list");
    CN_CHECK_EQ(cn_sau2_enc_request(&b, &q), CN_E_INVALID);
    q.argc = 0;
    CN_CHECK_EQ(cn_sau2_enc_request(&b, &q), CN_E_INVALID);
    CN_CHECK_EQ(b.len, 0);
    cn_buf_free(&b);
}

static void test_reply_refusals(void)
{
    cn_sau2_reply_t r;
    memset(&r, 0, sizeof r);
    const char *strs[CN_SAU2_MAX_STRINGS + 1];
    for (size_t i = 0; i <= CN_SAU2_MAX_STRINGS; i++)
        strs[i] = "x";
    CN_CHECK_EQ(cn_sau2_reply_row(&r, CN_SAU2_MAX_STRINGS + 1, strs), CN_E_LIMIT);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_sau2_enc_reply(&b, &r), CN_E_INVALID);
    cn_sau2_reply_free(&r);

    memset(&r, 0, sizeof r);
    for (int i = 0; i < CN_SAU2_MAX_ROWS; i++)
        CN_CHECK_EQ(cn_sau2_reply_row(&r, 1, strs), 0);
    CN_CHECK_EQ(cn_sau2_reply_row(&r, 1, strs), CN_E_LIMIT);
    cn_sau2_reply_free(&r);

    /* Decoder: 257 rows, a row of 131 strings, a message of 2,049 bytes. */
    static uint8_t p[4096];
    memset(p, 0, sizeof p);
    p[26] = 1; /* rows = 257 at offset 2 + 16 + 8 */
    p[27] = 1;
    cn_sau2_reply_view_t v;
    CN_CHECK_EQ(cn_sau2_dec_reply(p, 28 + 2 * 257, &v), CN_E_PROTOCOL);
    p[26] = 1;
    p[27] = 0;
    p[28] = CN_SAU2_MAX_STRINGS + 1;
    CN_CHECK_EQ(cn_sau2_dec_reply(p, 30 + 2 * 131, &v), CN_E_PROTOCOL);
    p[28] = CN_SAU2_MAX_STRINGS;
    CN_CHECK_EQ(cn_sau2_dec_reply(p, 30 + 2 * 130, &v), 0);
    memset(p, 0, sizeof p);
    p[0] = 1;
    p[2] = (uint8_t)2049;
    p[3] = (uint8_t)(2049 >> 8);
    CN_CHECK_EQ(cn_sau2_dec_reply(p, 4 + 2049, &v), CN_E_PROTOCOL);
    p[2] = (uint8_t)2048;
    p[3] = (uint8_t)(2048 >> 8);
    CN_CHECK_EQ(cn_sau2_dec_reply(p, 4 + 2048, &v), 0);
    memset(&r, 0, sizeof r);
    r.code = 1;
    memset(r.message, 'm', CN_SAU2_MAX_MESSAGE);
    CN_CHECK_EQ(cn_sau2_enc_reply(&b, &r), 0);
    cn_buf_free(&b);
}

int main(int argc, char **argv)
{
    fixture_path = argc > 1 ? argv[1] : "sau2_fixtures.txt";
    static const cn_test_case_t cases[] = {
        { "request_fixtures", test_request_fixtures }, { "intent", test_intent },
        { "reply_fixtures", test_reply_fixtures },     { "frame_head", test_frame_head },
        { "request_refusals", test_request_refusals }, { "reply_refusals", test_reply_refusals },
    };
    return cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
