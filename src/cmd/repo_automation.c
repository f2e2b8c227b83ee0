/* `cairn repo automation create | derive`: automation credentials for CI
 * runners, through SAU2's automation-create and automation-derive
 * (docs/protocol/sau2.md sections 5.2 and 11, docs/cli.md).
 *
 * create runs as the signed-in password session and makes a new Ed25519 key
 * and credential id; derive runs as an automation credential (a credential
 * file) and asks for a child credential for a runner's public key.  Either
 * writes a **credential file** (mode 0600): a header (server, credential,
 * kind, expires-ms), the certificate, the private key (create only; a
 * derived credential's key stays with the runner) and the server's CA
 * certificates, so that CAIRN_AUTH_CREDENTIAL=FILE is all a runner needs.
 *
 * The request (operation id, arguments, new key, output path) is written to
 * automation-VERB.pending in the configuration directory before it is sent:
 * a reply lost on the way is asked for again by sending the same request
 * (the same operation id answers the recorded certificate) on a new
 * connection — by the same run, or first thing by the next run of the verb.
 * automation-create always goes on a connection of its own (the listener
 * refuses it anywhere else).
 *
 * Never: print or log a private key; send the request before it is
 * persisted; copy anything but CA certificates from a trust file into a
 * credential file (a credential file used as trust also holds a key). */
#include "cmd.h"
#include "repo_auth.h"

#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

static const char automation_usage[] =
    "usage: cairn repo automation create --role ROLE --expires D [--label L] [--out FILE|-]\n"
    "       cairn repo automation derive --public-key FILE [--label L] [--out FILE|-]\n"
    "                                    [--credential FILE]\n"
    "ROLE: reader, writer, maintainer or namespace-admin\n"
    "D: N followed by s, m, h, d or w (from now), YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC);\n"
    "   at most one year ahead\n"
    "create runs as the signed-in session (cairn repo login); derive as an automation\n"
    "credential file (--credential FILE, else CAIRN_AUTH_CREDENTIAL), whose child keeps its\n"
    "kind and expiry.  The new credential file goes to FILE (- : standard output), else to\n"
    "the configuration directory as automation-CREDENTIAL.cred\n";

static int usage(void)
{
    fputs(automation_usage, stderr);
    return EXIT_USAGE;
}

#define NARGS_MAX 5
#define ARG_MAX 512

/* A request as persisted before it is sent. */
typedef struct pending {
    char verb[24]; /* automation-create, automation-derive */
    char op[2 * CN_SAU2_ID_LEN + 1];
    char spec[1024];         /* the command's options, to know a retry of the same command */
    char out[PATH_MAX + 64]; /* where the credential file goes ("-": stdout) */
    char args[NARGS_MAX][ARG_MAX];
    int nargs;
    cn_buf_t key; /* create: the new key (PEM) */
} pending_t;

static void pending_path(const cn__ra_who_t *w, const char *verb, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s.pending", w->dir, verb);
}

static cn_err_t pending_save(const char *path, const pending_t *p)
{
    cn_buf_t t = { 0 };
    char line[ARG_MAX + PATH_MAX + 1100];
    snprintf(line, sizeof line, "verb %s\nop %s\nout %s\nspec %s\n", p->verb, p->op, p->out,
             p->spec);
    cn_err_t e = cn_buf_append_str(&t, line);
    for (int i = 0; e == 0 && i < p->nargs; i++) {
        snprintf(line, sizeof line, "arg %s\n", p->args[i]);
        e = cn_buf_append_str(&t, line);
    }
    if (e == 0 && p->key.len)
        e = cn_buf_append(&t, p->key.data, p->key.len);
    if (e == 0)
        e = cn_file_replace(path, t.data, t.len, 0600);
    if (t.data)
        OPENSSL_cleanse(t.data, t.len);
    cn_buf_free(&t);
    return e;
}

/* Copies the value after "key " of a line into out; false when the line is
 * another key's or its value does not fit cap. */
static bool line_value(const char *line, const char *key, char *out, size_t cap)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ' ')
        return false;
    const char *v = line + k + 1;
    size_t n = strlen(v);
    if (n >= cap)
        return false;
    memcpy(out, v, n + 1);
    return true;
}

/* Reads a pending request; -ENOENT when there is none. */
static cn_err_t pending_load(const char *path, pending_t *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char line[ARG_MAX + PATH_MAX + 64];
    cn_err_t e = CN_OK;
    bool key = false;
    while (e == 0 && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "-----BEGIN", 10))
            key = true;
        if (key) {
            e = cn_buf_append_str(&p->key, line);
            continue;
        }
        line[strcspn(line, "\n")] = 0;
        if (line_value(line, "arg", p->args[p->nargs < NARGS_MAX ? p->nargs : 0], ARG_MAX))
            e = ++p->nargs > NARGS_MAX ? CN_E_CORRUPT : 0;
        else if (!line_value(line, "verb", p->verb, sizeof p->verb) &&
                 !line_value(line, "op", p->op, sizeof p->op) &&
                 !line_value(line, "out", p->out, sizeof p->out))
            (void)line_value(line, "spec", p->spec, sizeof p->spec);
    }
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
    return e == 0 && p->nargs >= 3 && strlen(p->op) == 2 * CN_SAU2_ID_LEN ? e : CN_E_CORRUPT;
}

static void pending_free(pending_t *p)
{
    if (p->key.data)
        OPENSSL_cleanse(p->key.data, p->key.len);
    cn_buf_free(&p->key);
}

/* ---- the credential file ----------------------------------------------------------- */

/* Appends the CA certificates of the PEM file trust (nothing else: a
 * credential file used as trust also holds a certificate and a key). */
static cn_err_t append_cas(cn_buf_t *out, const char *trust)
{
    BIO *in = BIO_new_file(trust, "r"), *mem = BIO_new(BIO_s_mem());
    cn_err_t e = in && mem ? CN_OK : CN_E_INVALID;
    X509 *x;
    while (e == 0 && (x = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
        if (X509_check_ca(x) > 0 && PEM_write_bio_X509(mem, x) != 1)
            e = -ENOMEM;
        X509_free(x);
    }
    char *data = NULL;
    long n = mem ? BIO_get_mem_data(mem, &data) : 0;
    if (e == 0)
        e = n > 0 ? cn_buf_append(out, data, (size_t)n) : CN_E_INVALID;
    BIO_free(in);
    BIO_free(mem);
    return e;
}

/* The row [certificate PEM, credential, kind, expires-ms] as a credential
 * file at p->out (or on stdout); prints what a runner needs to know. */
static int write_credential(const cn__ra_who_t *w, const pending_t *p, const cn_sau2_row_t *row)
{
    cn_buf_t t = { 0 };
    char head[1024];
    snprintf(head, sizeof head,
             "# cairn credential file (docs/cli.md): secret, keep it mode 0600\n"
             "server %s\ncredential %.*s\nkind %.*s\nexpires-ms %.*s\n",
             w->server, row->s[1].len, (const char *)row->s[1].p, row->s[2].len,
             (const char *)row->s[2].p, row->s[3].len, (const char *)row->s[3].p);
    cn_err_t e = cn_buf_append_str(&t, head);
    if (e == 0)
        e = cn_buf_append(&t, row->s[0].p, row->s[0].len);
    if (e == 0 && p->key.len)
        e = cn_buf_append(&t, p->key.data, p->key.len);
    if (e == 0)
        e = append_cas(&t, w->trust);
    bool out = !strcmp(p->out, "-");
    if (e == 0 && out)
        e = fwrite(t.data, 1, t.len, stdout) == t.len && fflush(stdout) == 0 ? 0 : -EIO;
    else if (e == 0)
        e = cn_file_replace(p->out, t.data, t.len, 0600);
    if (t.data)
        OPENSSL_cleanse(t.data, t.len);
    cn_buf_free(&t);
    if (e < 0) {
        fprintf(stderr, "cairn repo: automation: cannot write the credential file %s: %s\n", p->out,
                cn_strerror(e));
        return EXIT_LOCAL;
    }
    if (!out)
        printf("credential %.*s\nkind %.*s\nexpires-ms %.*s\nfile %s\n", row->s[1].len,
               (const char *)row->s[1].p, row->s[2].len, (const char *)row->s[2].p, row->s[3].len,
               (const char *)row->s[3].p, p->out);
    return EXIT_OK;
}

/* ---- sending ------------------------------------------------------------------------- */

/* One call on a connection of its own. */
static cn_err_t call_alone(const cn__ra_who_t *w, const cn_sau2_req_t *req, cn_buf_t *payload,
                           cn_sau2_reply_view_t *v)
{
    cn_sau2_client_opts_t o = cn__ra_opts(w);
    cn_sau2_conn_t *c = NULL;
    cn_err_t e = cn_sau2_conn_open(&o, &c);
    if (e == 0)
        e = cn_sau2_conn_call(c, req, payload, v);
    cn_sau2_conn_close(c);
    return e;
}

/* Sends the persisted request (again, after a lost reply: the same
 * operation id answers the recorded outcome), writes the credential file
 * and removes the pending file once the server has answered. */
static int send_pending(const cn__ra_who_t *w, const char *path, pending_t *p)
{
    cn_sau2_req_t req = { 0 };
    const char *args[NARGS_MAX + 1] = { p->verb };
    for (int i = 0; i < p->nargs; i++)
        args[i + 1] = p->args[i];
    cn__ra_args(&req, p->nargs + 1, args);
    if (cn_hex_decode(p->op, strlen(p->op), req.op, sizeof req.op) < 0)
        return EXIT_LOCAL;
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = call_alone(w, &req, &payload, &v);
    if (cn__ra_lost(e)) /* the request may have been applied: ask again */
        e = call_alone(w, &req, &payload, &v);
    size_t off = 0;
    cn_sau2_row_t row;
    int rc = e < 0    ? cn__ra_report_err(p->verb, w->server, e)
             : v.code ? cn__ra_report_code(p->verb, &v)
             : !cn_sau2_row_next(&v, &off, &row) || row.n != 4 ? EXIT_SERVER
                                                               : write_credential(w, p, &row);
    /* Answered (a certificate or a refusal): nothing left to ask for. */
    if (e == 0 && rc != EXIT_LOCAL)
        (void)unlink(path);
    cn_buf_free(&payload);
    return rc;
}

/* A request an earlier run left pending: finished first.  *same tells
 * whether it was this very command (its spec). */
static int finish_pending(const cn__ra_who_t *w, const char *verb, const char *spec, bool *same)
{
    char path[PATH_MAX + 32];
    pending_path(w, verb, path, sizeof path);
    pending_t p = { 0 };
    *same = false;
    cn_err_t e = pending_load(path, &p);
    int rc = EXIT_OK;
    if (e == -ENOENT) {
        pending_free(&p);
        return EXIT_OK;
    }
    if (e < 0 || strcmp(p.verb, verb) != 0) {
        fprintf(stderr, "cairn repo: automation: %s is damaged: remove it\n", path);
        rc = EXIT_LOCAL;
    } else {
        *same = !strcmp(p.spec, spec);
        fprintf(stderr, "cairn repo: automation: finishing the %s left pending (operation %s)\n",
                verb, p.op);
        rc = send_pending(w, path, &p);
        /* Answered (a refusal, printed): it no longer stands in the way of
         * another command. */
        if (rc != EXIT_OK && !*same && access(path, F_OK) != 0)
            rc = EXIT_OK;
    }
    pending_free(&p);
    return rc;
}

/* Persists a new request and sends it. */
static int send_new(const cn__ra_who_t *w, pending_t *p, const char *out)
{
    char path[PATH_MAX + 32];
    uint8_t op[CN_SAU2_ID_LEN];
    pending_path(w, p->verb, path, sizeof path);
    if (cn_random_bytes(op, sizeof op) < 0)
        return EXIT_LOCAL;
    cn_hex_encode(op, sizeof op, p->op);
    const char *cred = p->args[p->nargs - 3]; /* credential public-key label */
    if (out)
        snprintf(p->out, sizeof p->out, "%s", out);
    else
        snprintf(p->out, sizeof p->out, "%s/automation-%s.cred", w->dir, cred);
    if (pending_save(path, p) < 0) {
        fprintf(stderr, "cairn repo: automation: cannot write %s\n", path);
        return EXIT_LOCAL;
    }
    return send_pending(w, path, p);
}

/* ---- the commands ---------------------------------------------------------------------- */

typedef struct opts {
    const char *role, *expires, *label, *out, *public_key, *credential;
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
    for (int i = 3; i < argc; i++) {
        const char **slot = !strcmp(argv[i], "--role")         ? &o->role
                            : !strcmp(argv[i], "--expires")    ? &o->expires
                            : !strcmp(argv[i], "--label")      ? &o->label
                            : !strcmp(argv[i], "--out")        ? &o->out
                            : !strcmp(argv[i], "--public-key") ? &o->public_key
                            : !strcmp(argv[i], "--credential") ? &o->credential
                                                               : NULL;
        if (!slot || i + 1 >= argc)
            return usage();
        *slot = argv[++i];
    }
    /* A label travels as one argument and sits on one line of the pending file. */
    if (o->label && (strlen(o->label) > 256 || strchr(o->label, '\n')))
        return usage();
    return EXIT_OK;
}

static int create(const opts_t *o)
{
    int64_t until = 0;
    if (!o->role || !o->expires || o->public_key || strlen(o->role) >= ARG_MAX)
        return usage();
    if (!cn__ra_expiry(o->expires, cn_wall_ms(), &until)) {
        fprintf(stderr, "cairn repo: automation create: --expires %s is not a time ahead\n",
                o->expires);
        return EXIT_USAGE;
    }
    cn__ra_who_t w;
    int rc = cn__ra_who(&w, "automation create", o->credential);
    if (rc)
        return rc;
    pending_t p = { .nargs = 5 };
    snprintf(p.verb, sizeof p.verb, "automation-create");
    snprintf(p.spec, sizeof p.spec, "role=%s expires=%s label=%s out=%s", o->role, o->expires,
             o->label ? o->label : "", o->out ? o->out : "");
    bool same = false;
    rc = finish_pending(&w, p.verb, p.spec, &same);
    if (rc || same)
        return rc;
    uint8_t cred[CN_SAU2_ID_LEN];
    snprintf(p.args[0], ARG_MAX, "%s", o->role);
    snprintf(p.args[1], ARG_MAX, "%lld", (long long)until);
    snprintf(p.args[4], ARG_MAX, "%s", o->label ? o->label : "automation");
    if (cn_random_bytes(cred, sizeof cred) < 0 || cn__ra_new_key(&p.key, p.args[3], ARG_MAX) < 0) {
        pending_free(&p);
        return EXIT_LOCAL;
    }
    cn_hex_encode(cred, sizeof cred, p.args[2]);
    rc = send_new(&w, &p, o->out);
    pending_free(&p);
    return rc;
}

static int derive(const opts_t *o)
{
    if (!o->public_key || o->role || o->expires)
        return usage();
    pending_t p = { .nargs = 3 };
    snprintf(p.verb, sizeof p.verb, "automation-derive");
    if (cn__ra_file_spki(o->public_key, p.args[1], ARG_MAX) < 0) {
        fprintf(stderr, "cairn repo: automation derive: %s holds no public key\n", o->public_key);
        return EXIT_USAGE;
    }
    cn__ra_who_t w;
    int rc = cn__ra_who(&w, "automation derive", o->credential);
    if (rc)
        return rc;
    snprintf(p.spec, sizeof p.spec, "key=%s label=%s out=%s", p.args[1], o->label ? o->label : "",
             o->out ? o->out : "");
    bool same = false;
    rc = finish_pending(&w, p.verb, p.spec, &same);
    if (rc || same)
        return rc;
    uint8_t cred[CN_SAU2_ID_LEN];
    if (cn_random_bytes(cred, sizeof cred) < 0)
        return EXIT_LOCAL;
    cn_hex_encode(cred, sizeof cred, p.args[0]);
    snprintf(p.args[2], ARG_MAX, "%s", o->label ? o->label : "derived");
    rc = send_new(&w, &p, o->out);
    if (rc == EXIT_OK && o->out && strcmp(o->out, "-") != 0)
        printf("the runner uses it with its own key: CAIRN_AUTH_CREDENTIAL=%s "
               "CAIRN_AUTH_KEY=ITS-KEY-FILE\n",
               o->out);
    return rc;
}

int cn__repo_automation(int argc, char **argv)
{
    opts_t o = { 0 };
    bool known = argc >= 3 && (!strcmp(argv[2], "create") || !strcmp(argv[2], "derive"));
    int rc = known ? parse(argc, argv, &o) : usage();
    if (rc == EXIT_OK) {
        char dir[PATH_MAX];
        rc = cn__ra_config_dir(dir, sizeof dir);
        if (rc == EXIT_OK && cn_mkdir_p(dir, 0700) < 0)
            rc = EXIT_LOCAL;
        if (rc == EXIT_OK)
            rc = !strcmp(argv[2], "create") ? create(&o) : derive(&o);
    }
    return rc;
}
