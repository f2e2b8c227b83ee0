/* The SAU2 service tests' harness (header-only: cn_test.h's counters are
 * per file): a data directory with an initialised auth state, fresh device
 * keys and credential ids, and call(), which sends one request through the
 * codec to cn_sau2_handle and decodes the reply into ans. */
#ifndef CN_TEST_SAU2_HARNESS_H
#define CN_TEST_SAU2_HARNESS_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cn_test.h"
#include "meta/test_target.h"

#define ADMIN_PW "correct horse battery"

static char dir[] = "/tmp/cn_sau2_XXXXXX";
static char log_path[256];
static cn_meta_t *meta;
static cn_auth_t *auth;
static const cn_auth_opts_t opts = { 1, 256 }; /* cheap argon2id for tests */

/* A fresh Ed25519 device key's SPKI DER as lowercase hex (static storage,
 * one of 8 slots). */
static inline const char *new_key(void)
{
    static char slots[8][256];
    static int next;
    char *out = slots[next++ % 8];
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    unsigned char der[128], *p = der;
    int n = i2d_PUBKEY(k, &p);
    for (int i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", der[i]);
    EVP_PKEY_free(k);
    return out;
}

static inline const char *new_cred(void)
{
    static char slots[8][33];
    static int next;
    char *out = slots[next++ % 8];
    unsigned char b[16];
    cn_random_bytes(b, sizeof b);
    cn_hex_encode(b, sizeof b, out);
    return out;
}

/* The answer of one call: code, rows (strings copied), revision. */
#define ANS_ROWS 256 /* a whole SAU2 page */
typedef struct answer {
    uint16_t code;
    uint64_t revision;
    uint8_t incarnation[CN_SAU2_ID_LEN];
    char message[CN_SAU2_MAX_MESSAGE + 1];
    int nrows;
    char rows[ANS_ROWS][8][1200];
    int n[ANS_ROWS];
} answer_t;
static answer_t ans;

/* Sends verb with args (NULL-terminated) as caller with operation id byte
 * op (0 = none) and secret (NULL = none), through the codec both ways. */
static inline uint16_t call(const cn_sau2_caller_t *caller, uint8_t op, const char *secret,
                            const char *verb, ...)
{
    static cn_sau2_req_t q, d;
    memset(&q, 0, sizeof q);
    memset(q.op, op, op ? sizeof q.op : 0);
    q.argv[q.argc].p = (const uint8_t *)verb;
    q.argv[q.argc++].len = (uint16_t)strlen(verb);
    va_list ap;
    va_start(ap, verb);
    for (const char *s; (s = va_arg(ap, const char *));) {
        q.argv[q.argc].p = (const uint8_t *)s;
        q.argv[q.argc++].len = (uint16_t)strlen(s);
    }
    va_end(ap);
    if (secret) {
        q.has_secret = true;
        q.secret.p = (const uint8_t *)secret;
        q.secret.len = (uint16_t)strlen(secret);
    }
    cn_buf_t wire = { 0 }, out = { 0 };
    CN_CHECK_EQ(cn_sau2_enc_request(&wire, &q), 0);
    CN_CHECK_EQ(cn_sau2_dec_request(wire.data + 8, wire.len - 8, &d), 0);
    cn_sau2_reply_t r;
    memset(&r, 0, sizeof r);
    CN_CHECK_EQ(cn_sau2_handle(auth, caller, &d, &r), 0);
    CN_CHECK_EQ(cn_sau2_enc_reply(&out, &r), 0);
    cn_sau2_reply_view_t v;
    memset(&ans, 0, sizeof ans);
    CN_CHECK_EQ(cn_sau2_dec_reply(out.data + 8, out.len - 8, &v), 0);
    ans.code = v.code;
    ans.revision = v.revision;
    memcpy(ans.incarnation, v.incarnation, sizeof ans.incarnation);
    snprintf(ans.message, sizeof ans.message, "%.*s", v.message.len, (const char *)v.message.p);
    static cn_sau2_row_t row;
    size_t off = 0;
    while (ans.nrows < ANS_ROWS && cn_sau2_row_next(&v, &off, &row)) {
        for (int i = 0; i < row.n && i < 8; i++)
            snprintf(ans.rows[ans.nrows][i], sizeof ans.rows[0][0], "%.*s", row.s[i].len,
                     (const char *)row.s[i].p);
        ans.n[ans.nrows++] = row.n;
    }
    if (v.code)
        fprintf(stderr, "# %s -> %u %.*s\n", verb, v.code, v.message.len,
                (const char *)v.message.p);
    cn_sau2_reply_free(&r);
    cn_buf_free(&wire);
    cn_buf_free(&out);
    return ans.code;
}

/* Signs in (admin or not) with a new key and credential; fills caller. */
static inline uint16_t sign_in(bool admin, const char *user, const char *pw, uint8_t op,
                               cn_sau2_caller_t *caller)
{
    uint16_t code =
        call(NULL, op, pw, admin ? "admin-login" : "login", user, new_cred(), new_key(), NULL);
    if (code == 0 && caller)
        CN_CHECK_EQ(cn_auth_cert_caller(ans.rows[0][0], strlen(ans.rows[0][0]), caller), 0);
    return code;
}

/* True when needle occurs in the file at path. */
static inline bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

/* Creates the data directory and the auth state (administrator admin,
 * ADMIN_PW), runs the cases with the service's log (stderr) captured in
 * log_path, shows the log, removes everything; the exit status. */
static inline int harness_run(const cn_test_case_t *cases, size_t n)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(log_path, sizeof log_path, "%s.log", dir);
    int saved = dup(2), lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cn_log_configure(CN_LOG_DEBUG, false);
    if (cn_meta_open(cn_test_meta_for(dir), NULL, &meta) ||
        cn_auth_init(meta, dir, &opts, ADMIN_PW, NULL, 0) || cn_auth_open(meta, dir, &opts, &auth))
        return 1;
    char pw[64];
    if (cn_auth_init(meta, dir, &opts, NULL, pw, sizeof pw) != CN_E_EXISTS)
        return 1;
    dup2(lf, 2);
    int rc = cn_test_run(cases, n);
    dup2(saved, 2);
    /* Shown after the run: the checks' own messages went to the log too. */
    FILE *lfile = fopen(log_path, "r");
    for (int ch; lfile && (ch = fgetc(lfile)) != EOF;)
        fputc(ch, stderr);
    if (lfile)
        fclose(lfile);
    cn_auth_close(auth);
    cn_meta_close(meta);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, log_path);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}

#endif
