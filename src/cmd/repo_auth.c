/* `cairn repo login | whoami | logout`: signing in to a SAU2 auth server
 * through libcairn's SAU2 client (include/cairn/sau2_client.h).
 *
 * State, in the user's configuration directory ($XDG_CONFIG_HOME/cairn, else
 * ~/.config/cairn; the directory 0700, every file 0600): auth.key (the
 * Ed25519 device key, PKCS#8 PEM), auth.cert (the credential certificate the
 * server returned), auth.session (server, user, credential id, operation id,
 * trust file, state) and auth-trust-HOST-PORT.pem (a trust bundle pinned at
 * first contact).  A new key and credential id for each sign-in: the server
 * registers a key once.  A sign-in in progress lives apart, in auth.pending
 * (the same lines as auth.session) and auth.pending.key, written before the
 * request is sent, so a lost reply is asked for again with login-outcome —
 * by this run, or by the next `login` of the same user to the same server.
 * Only a sign-in the server answered with a certificate replaces the three
 * files of the session in force (as a failed `p4 login` leaves the earlier
 * ticket): a refused, lost or interrupted sign-in leaves it signed in.
 *
 * Never: print, log or store the password; send it to a server whose
 * certificate did not verify against the trust file in force.
 * Exit statuses: docs/cli.md's table (0 ok, 1 server, 2 usage or not signed
 * in, 4 refused, 5 network, 7 local). */
#include "cmd.h"
#include "repo_auth.h"

#include "cairn/sau2_client.h"
#include "cairn/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

static const char auth_usage[] =
    "usage: cairn repo login HOST:PORT [--user NAME] [--admin] [--ca FILE]\n"
    "       cairn repo whoami\n"
    "       cairn repo logout\n"
    "       cairn repo automation create|derive ...   (cairn repo automation --help)\n"
    "       cairn repo auth GROUP VERB ...            (cairn repo auth --help)\n"
    "whoami and logout run as CAIRN_AUTH_CREDENTIAL's credential file when it is set\n"
    "password: a prompt on a terminal, else CAIRN_PASSWORD, else standard input;\n"
    "server trust: --ca FILE or CAIRN_AUTH_CA, else the trust bundle pinned at first contact\n";

#define HEX_ID (2 * CN_SAU2_ID_LEN)

typedef struct {
    char dir[PATH_MAX];
    char key[PATH_MAX + 16], cert[PATH_MAX + 16], session[PATH_MAX + 16];
    /* the sign-in in progress: its session lines, key and certificate */
    char pending[PATH_MAX + 24], pkey[PATH_MAX + 24], pcert[PATH_MAX + 24];
} paths_t;

/* What auth.session holds. */
typedef struct {
    char server[256];
    char user[80];
    char credential[HEX_ID + 1];
    char op[HEX_ID + 1];
    char verb[24]; /* login or admin-login */
    char trust[PATH_MAX];
    char state[16]; /* pending, signed-in */
} session_t;

static int paths_get(paths_t *p)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n = xdg && *xdg ? snprintf(p->dir, sizeof p->dir, "%s/cairn", xdg)
            : home      ? snprintf(p->dir, sizeof p->dir, "%s/.config/cairn", home)
                        : -1;
    if (n < 0 || (size_t)n >= sizeof p->dir) {
        fputs("cairn repo: no configuration directory (set XDG_CONFIG_HOME or HOME)\n", stderr);
        return EXIT_LOCAL;
    }
    snprintf(p->key, sizeof p->key, "%s/auth.key", p->dir);
    snprintf(p->cert, sizeof p->cert, "%s/auth.cert", p->dir);
    snprintf(p->session, sizeof p->session, "%s/auth.session", p->dir);
    snprintf(p->pending, sizeof p->pending, "%s/auth.pending", p->dir);
    snprintf(p->pkey, sizeof p->pkey, "%s/auth.pending.key", p->dir);
    snprintf(p->pcert, sizeof p->pcert, "%s/auth.pending.cert", p->dir);
    return EXIT_OK;
}

/* Replaces path with n bytes (mode 0600, durable before it is named). */
static cn_err_t write_private(const char *path, const void *data, size_t n)
{
    return cn_file_replace(path, data, n, 0600);
}

/* Writes s's lines to path (auth.session, or auth.pending). */
static cn_err_t session_save(const char *path, const session_t *s)
{
    char text[PATH_MAX + 512];
    int n = snprintf(text, sizeof text,
                     "server %s\nuser %s\ncredential %s\nop %s\nverb %s\ntrust %s\nstate %s\n",
                     s->server, s->user, s->credential, s->op, s->verb, s->trust, s->state);
    if (n < 0 || (size_t)n >= sizeof text)
        return CN_E_INVALID;
    return write_private(path, text, (size_t)n);
}

/* Reads the lines of path (auth.session or auth.pending); -ENOENT when
 * there is none. */
static cn_err_t session_load(const char *path, session_t *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char line[PATH_MAX + 64];
    struct {
        const char *k;
        char *v;
        size_t cap;
    } fields[] = { { "server", s->server, sizeof s->server },
                   { "user", s->user, sizeof s->user },
                   { "credential", s->credential, sizeof s->credential },
                   { "op", s->op, sizeof s->op },
                   { "verb", s->verb, sizeof s->verb },
                   { "trust", s->trust, sizeof s->trust },
                   { "state", s->state, sizeof s->state } };
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' ');
        if (!sp)
            continue;
        *sp = 0;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            if (!strcmp(line, fields[i].k))
                snprintf(fields[i].v, fields[i].cap, "%s", sp + 1);
    }
    fclose(f);
    return s->server[0] && s->credential[0] ? CN_OK : CN_E_CORRUPT;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static int unhex(const char *s, uint8_t *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
            return -1;
    return 0;
}

/* ---- the password ------------------------------------------------------------- */

/* A terminal prompt without echo, else CAIRN_PASSWORD, else one line of
 * standard input.  Returns its length, or -1. */
static int read_password(char *pw, size_t cap)
{
    const char *env = getenv("CAIRN_PASSWORD");
    if (isatty(STDIN_FILENO)) {
        struct termios old, quiet;
        fputs("password: ", stderr);
        bool got = tcgetattr(STDIN_FILENO, &old) == 0;
        if (got) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        }
        char *r = fgets(pw, (int)cap, stdin);
        if (got)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
        if (!r)
            return -1;
    } else if (env && *env) {
        snprintf(pw, cap, "%s", env);
    } else if (!fgets(pw, (int)cap, stdin)) {
        return -1;
    }
    pw[strcspn(pw, "\r\n")] = 0;
    size_t n = strlen(pw);
    return n >= 1 && n <= CN_SAU2_PASSWORD_MAX ? (int)n : -1;
}

/* ---- requests ------------------------------------------------------------------ */

static void set_args(cn_sau2_req_t *req, int n, const char *const *args)
{
    req->argc = (uint16_t)n;
    for (int i = 0; i < n; i++)
        req->argv[i] = (cn_sau2_str_t){ (const uint8_t *)args[i], (uint16_t)strlen(args[i]) };
}

/* The exit status and message of a SAU2 error code. */
static int report_code(const char *verb, const cn_sau2_reply_view_t *v)
{
    fprintf(stderr, "cairn repo: %s: %s: %.*s\n", verb,
            v->code == 3   ? "unauthenticated"
            : v->code == 4 ? "forbidden"
            : v->code == 1 ? "malformed"
                           : "refused",
            v->message.len, (const char *)v->message.p);
    return v->code == 3 || v->code == 4 ? EXIT_DENIED : EXIT_SERVER;
}

static int report_err(const char *verb, const char *server, cn_err_t e)
{
    fprintf(stderr, "cairn repo: %s: %s: %s\n", verb, server,
            e == CN_E_AUTH ? "TLS handshake failed (is the server's certificate trusted?)"
                           : cn_strerror(e));
    return e == CN_E_INVALID ? EXIT_LOCAL : EXIT_NETWORK;
}

/* The first string of the first row, copied (PEM), or NULL. */
static char *first_string(const cn_sau2_reply_view_t *v, size_t i)
{
    size_t off = 0;
    cn_sau2_row_t row;
    if (!cn_sau2_row_next(v, &off, &row) || row.n <= i)
        return NULL;
    char *s = malloc((size_t)row.s[i].len + 1);
    if (s) {
        memcpy(s, row.s[i].p, row.s[i].len);
        s[row.s[i].len] = 0;
    }
    return s;
}

/* ---- trust ------------------------------------------------------------------- */

/* The trust file for server: --ca / CAIRN_AUTH_CA, else the pinned bundle,
 * else (first contact) the server's trust bundle fetched without
 * verification, pinned, and its fingerprint printed for the user to
 * compare with what the operator published. */
static int trust_for(const paths_t *p, const char *server, const char *ca, char *out, size_t cap)
{
    if (!ca || !*ca)
        ca = getenv("CAIRN_AUTH_CA");
    if (ca && *ca) {
        snprintf(out, cap, "%s", ca);
        return EXIT_OK;
    }
    char name[300];
    snprintf(name, sizeof name, "%s", server);
    for (char *c = name; *c; c++)
        if (*c == ':' || *c == '/' || *c == '[' || *c == ']')
            *c = '-';
    int n = snprintf(out, cap, "%s/auth-trust-%s.pem", p->dir, name);
    if (n < 0 || (size_t)n >= cap)
        return EXIT_LOCAL;
    if (access(out, R_OK) == 0)
        return EXIT_OK;
    cn_sau2_client_opts_t o = { .addr = server };
    cn_sau2_conn_t *c = NULL;
    cn_sau2_req_t req = { 0 };
    set_args(&req, 1, (const char *const[]){ "trust-bundle" });
    cn_buf_t payload = { 0 }, bundle = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = cn_sau2_conn_open(&o, &c);
    if (e == 0)
        e = cn_sau2_conn_call(c, &req, &payload, &v);
    cn_sau2_conn_close(c);
    int rc = e < 0 ? report_err("login", server, e) : v.code ? report_code("trust-bundle", &v) : 0;
    size_t off = 0;
    cn_sau2_row_t row;
    while (rc == 0 && cn_sau2_row_next(&v, &off, &row))
        if (row.n == 2 && cn_buf_append(&bundle, row.s[1].p, row.s[1].len) < 0)
            rc = EXIT_LOCAL;
    if (rc == 0 && (bundle.len == 0 || write_private(out, bundle.data, bundle.len) < 0)) {
        fprintf(stderr, "cairn repo: login: cannot pin the trust bundle in %s\n", out);
        rc = EXIT_LOCAL;
    }
    if (rc == 0) {
        uint8_t md[32];
        char fp[65];
        EVP_Digest(bundle.data, bundle.len, md, NULL, EVP_sha256(), NULL);
        hex(md, sizeof md, fp);
        fprintf(stderr,
                "cairn repo: first contact with %s: trusting its trust bundle, SHA-256 %s\n"
                "            (pinned in %s; compare it with the one the operator published)\n",
                server, fp, out);
    }
    cn_buf_free(&payload);
    cn_buf_free(&bundle);
    return rc;
}

/* ---- login --------------------------------------------------------------------- */

/* A new device key for the sign-in in progress (auth.pending.key) and the
 * hex SPKI DER of its public half. */
static cn_err_t new_device_key(const paths_t *p, char *spki_hex, size_t cap)
{
    cn_buf_t pem = { 0 };
    cn_err_t e = cn__ra_new_key(&pem, spki_hex, cap);
    if (e == 0)
        e = write_private(p->pkey, pem.data, pem.len);
    if (pem.data)
        OPENSSL_cleanse(pem.data, pem.len);
    cn_buf_free(&pem);
    return e;
}

/* The hex SPKI DER of the pending sign-in's key: auth.pending.key, or
 * auth.key once commit() moved it there (a run cut short between its
 * steps). */
static cn_err_t device_spki(const paths_t *p, char *spki_hex, size_t cap)
{
    return cn__ra_file_spki(access(p->pkey, F_OK) == 0 ? p->pkey : p->key, spki_hex, cap);
}

/* The sign-in answered with certificate pem replaces the session in force:
 * its certificate and key renamed over auth.cert and auth.key and the
 * Scribe client's access certificate of the old credential removed (made
 * durable with the directory), then auth.session rewritten and the pending
 * lines removed.  A run cut short in between is finished by the next login
 * (the pending lines are still there; device_spki finds the moved key). */
static cn_err_t commit(const paths_t *p, session_t *s, const char *pem)
{
    char access_cert[PATH_MAX + 16]; /* the Scribe client's cached access certificate */
    snprintf(access_cert, sizeof access_cert, "%s/auth.access", p->dir);
    CN_TRY(write_private(p->pcert, pem, strlen(pem)));
    if (rename(p->pkey, p->key) < 0 && errno != ENOENT)
        return -errno;
    if (rename(p->pcert, p->cert) < 0)
        return -errno;
    if (unlink(access_cert) < 0 && errno != ENOENT)
        return -errno;
    CN_TRY(cn_fsync_dir(p->dir));
    snprintf(s->state, sizeof s->state, "signed-in");
    CN_TRY(session_save(p->session, s));
    (void)unlink(p->pending);
    return CN_OK;
}

/* The server refused the sign-in (it recorded nothing): the pending lines
 * and key go; the session in force, if any, stays. */
static void discard_pending(const paths_t *p)
{
    (void)unlink(p->pending);
    (void)unlink(p->pkey);
    (void)unlink(p->pcert);
}

/* Sends verb (login/admin-login or its -outcome) with the session's ids. */
static cn_err_t send_signin(cn_sau2_client_t *cl, const session_t *s, const char *verb,
                            const char *spki, const char *pw, cn_buf_t *payload,
                            cn_sau2_reply_view_t *v)
{
    cn_sau2_req_t req = { 0 };
    if (unhex(s->op, req.op, sizeof req.op) < 0)
        return CN_E_CORRUPT;
    set_args(&req, 4, (const char *const[]){ verb, s->user, s->credential, spki });
    req.has_secret = true;
    req.secret = (cn_sau2_str_t){ (const uint8_t *)pw, (uint16_t)strlen(pw) };
    return cn_sau2_client_call(cl, &req, payload, v);
}

/* A reply lost on the way (the connection broke after the request left). */
static bool lost(cn_err_t e)
{
    return e == CN_E_CLOSED || e == CN_E_TIMEOUT || e == CN_E_PROTOCOL;
}

/* Sign-in with the session's persisted ids: the -outcome verb first when an
 * earlier run may have been answered (resume), and after a lost reply; the
 * sign-in itself when the server never recorded the operation. */
static int signin(const paths_t *p, session_t *s, const char *pw, bool resume)
{
    char spki[256], outcome[40];
    snprintf(outcome, sizeof outcome, "%s-outcome", s->verb);
    if (device_spki(p, spki, sizeof spki) < 0) {
        fprintf(stderr, "cairn repo: login: cannot read the device key %s\n", p->key);
        return EXIT_LOCAL;
    }
    cn_sau2_client_opts_t o = { .addr = s->server, .trust_file = s->trust };
    cn_sau2_client_t *cl = NULL;
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = cn_sau2_client_new(&o, &cl);
    if (e == 0 && resume)
        e = send_signin(cl, s, outcome, spki, pw, &payload, &v);
    bool unknown = e == 0 && resume && v.code == 4 && v.message.len == 17 &&
                   !memcmp(v.message.p, "unknown operation", 17);
    if (e == 0 && (!resume || unknown))
        e = send_signin(cl, s, s->verb, spki, pw, &payload, &v);
    if (lost(e)) /* the request may have been applied: ask for its outcome */
        e = send_signin(cl, s, outcome, spki, pw, &payload, &v);
    int rc = e < 0 ? report_err("login", s->server, e) : v.code ? report_code("login", &v) : 0;
    if (e == 0 && v.code)
        discard_pending(p); /* a refusal, never a lost reply: nothing to resume */
    char *pem = rc == 0 ? first_string(&v, 0) : NULL;
    char *expires = rc == 0 ? first_string(&v, 2) : NULL;
    if (rc == 0 && (!pem || commit(p, s, pem) < 0)) {
        fprintf(stderr, "cairn repo: login: cannot store the new session in %s\n", p->dir);
        rc = EXIT_LOCAL;
    }
    if (rc == 0)
        printf("signed in to %s as %s (credential %s, expires-ms %s)\n", s->server, s->user,
               s->credential, expires ? expires : "?");
    free(pem);
    free(expires);
    cn_buf_free(&payload);
    cn_sau2_client_free(cl);
    return rc;
}

static int cmd_login(const paths_t *p, int argc, char **argv)
{
    const char *server = NULL, *user = "admin", *ca = NULL;
    bool admin = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--user") && i + 1 < argc)
            user = argv[++i];
        else if (!strcmp(argv[i], "--ca") && i + 1 < argc)
            ca = argv[++i];
        else if (!strcmp(argv[i], "--admin"))
            admin = true;
        else if (argv[i][0] != '-' && !server)
            server = argv[i];
        else {
            fputs(auth_usage, stderr);
            return EXIT_USAGE;
        }
    }
    if (!server || strlen(server) >= 256 || !*user || strlen(user) >= 80) {
        fputs(auth_usage, stderr);
        return EXIT_USAGE;
    }
    if (cn_mkdir_p(p->dir, 0700) < 0) {
        fprintf(stderr, "cairn repo: login: cannot create %s\n", p->dir);
        return EXIT_LOCAL;
    }
    session_t s;
    const char *verb = admin ? "admin-login" : "login";
    /* The same sign-in left pending by an earlier run: resume it, ids and all. */
    bool resume = session_load(p->pending, &s) == 0 && !strcmp(s.state, "pending") &&
                  !strcmp(s.server, server) && !strcmp(s.user, user) && !strcmp(s.verb, verb);
    char trust[PATH_MAX];
    int rc = trust_for(p, server, ca, trust, sizeof trust);
    if (rc)
        return rc;
    char pw[CN_SAU2_PASSWORD_MAX + 2];
    if (read_password(pw, sizeof pw) < 0) {
        fputs("cairn repo: login: no password (1..1024 bytes) given\n", stderr);
        return EXIT_USAGE;
    }
    if (!resume) {
        uint8_t cred[16], op[16];
        char spki[256];
        memset(&s, 0, sizeof s);
        snprintf(s.server, sizeof s.server, "%s", server);
        snprintf(s.user, sizeof s.user, "%s", user);
        snprintf(s.verb, sizeof s.verb, "%s", verb);
        snprintf(s.state, sizeof s.state, "pending");
        if (RAND_bytes(cred, sizeof cred) != 1 || RAND_bytes(op, sizeof op) != 1 ||
            new_device_key(p, spki, sizeof spki) < 0) {
            fputs("cairn repo: login: cannot make a device key\n", stderr);
            rc = EXIT_LOCAL;
            goto out;
        }
        hex(cred, sizeof cred, s.credential);
        hex(op, sizeof op, s.op);
    }
    snprintf(s.trust, sizeof s.trust, "%s", trust);
    /* Persisted before anything is sent: a lost reply is asked for again. */
    if (session_save(p->pending, &s) < 0) {
        fprintf(stderr, "cairn repo: login: cannot write %s\n", p->pending);
        rc = EXIT_LOCAL;
        goto out;
    }
    rc = signin(p, &s, pw, resume);
out:
    OPENSSL_cleanse(pw, sizeof pw);
    return rc;
}

/* ---- whoami, logout -------------------------------------------------------------- */

static int signed_in_call(const paths_t *p, const char *verb, bool logout)
{
    cn__ra_who_t who; /* the session, or CAIRN_AUTH_CREDENTIAL's file */
    int who_rc = cn__ra_who(&who, verb, NULL);
    if (who_rc)
        return who_rc;
    session_t s = { 0 };
    snprintf(s.server, sizeof s.server, "%s", who.server);
    cn_sau2_client_opts_t o = cn__ra_opts(&who);
    cn_sau2_client_t *cl = NULL;
    cn_sau2_req_t req = { 0 };
    set_args(&req, 1, (const char *const[]){ verb });
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = cn_sau2_client_new(&o, &cl);
    if (e == 0)
        e = cn_sau2_client_call(cl, &req, &payload, &v);
    int rc = e < 0 ? report_err(verb, s.server, e) : v.code ? report_code(verb, &v) : 0;
    size_t off = 0;
    cn_sau2_row_t row;
    if (rc == 0 && !logout && cn_sau2_row_next(&v, &off, &row) && row.n == 6)
        printf("%.*s on %s: kind %.*s, credential %.*s, expires-ms %.*s, administrator %s\n",
               row.s[0].len, (const char *)row.s[0].p, s.server, row.s[1].len,
               (const char *)row.s[1].p, row.s[2].len, (const char *)row.s[2].p, row.s[4].len,
               (const char *)row.s[4].p, row.s[5].len == 1 && row.s[5].p[0] == '1' ? "yes" : "no");
    /* Logged out, or the server no longer knows the credential: either way
     * nothing local is worth keeping. */
    if (logout && who.file && (rc == 0 || rc == EXIT_DENIED)) {
        printf("credential of %s revoked (the file is of no further use)\n", s.server);
        rc = EXIT_OK;
    } else if (logout && (rc == 0 || rc == EXIT_DENIED)) {
        char access[PATH_MAX + 16]; /* the Scribe client's cached access certificate */
        snprintf(access, sizeof access, "%s/auth.access", p->dir);
        (void)unlink(access);
        (void)unlink(p->cert);
        (void)unlink(p->key);
        (void)unlink(p->session);
        printf("signed out of %s\n", s.server);
        rc = EXIT_OK;
    }
    cn_buf_free(&payload);
    cn_sau2_client_free(cl);
    return rc;
}

int cn__repo_auth(int argc, char **argv)
{
    paths_t p;
    int rc = paths_get(&p);
    if (rc)
        return rc;
    const char *verb = argv[1];
    if (!strcmp(verb, "automation"))
        return cn__repo_automation(argc, argv); /* repo_automation.c */
    if (!strcmp(verb, "auth"))
        return cn__repo_authadmin(argc, argv); /* repo_authadmin.c */
    if (!strcmp(verb, "login"))
        return cmd_login(&p, argc, argv);
    if (argc != 2) {
        fputs(auth_usage, stderr);
        return EXIT_USAGE;
    }
    return signed_in_call(&p, verb, !strcmp(verb, "logout"));
}

/* ---- shared with repo_automation.c and repo_authadmin.c (repo_auth.h) ---------------- */

int cn__ra_config_dir(char *dir, size_t cap)
{
    paths_t p;
    int rc = paths_get(&p);
    if (rc == 0 && snprintf(dir, cap, "%s", p.dir) >= (int)cap)
        rc = EXIT_LOCAL;
    return rc;
}

/* The header value of key in a credential file's text (before its PEM). */
static bool header_value(const char *text, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    for (const char *l = text; l && *l && strncmp(l, "-----BEGIN", 10) != 0;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (!strncmp(l, key, klen) && l[klen] == ' ') {
            size_t n = strcspn(l + klen + 1, "\n");
            if (n >= cap)
                return false;
            memcpy(out, l + klen + 1, n);
            out[n] = 0;
            return true;
        }
    }
    return false;
}

/* Reads a whole file of at most max bytes into out. */
static cn_err_t read_small(const char *path, size_t max, cn_buf_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char chunk[4096];
    size_t n;
    cn_err_t e = CN_OK;
    while (e == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        e = out->len + n > max ? CN_E_TOO_LARGE : cn_buf_append(out, chunk, n);
    if (e == 0 && ferror(f))
        e = -EIO;
    fclose(f);
    OPENSSL_cleanse(chunk, sizeof chunk);
    return e;
}

/* A credential file: its header names the server; the file is the
 * certificate, the trust bundle and (when it holds one) the key. */
static int who_file(cn__ra_who_t *w, const char *verb, const char *file)
{
    cn_buf_t text = { 0 };
    char cred[HEX_ID + 2];
    cn_err_t e = read_small(file, 1 << 20, &text);
    if (e == 0)
        e = cn_buf_append(&text, "", 1);
    bool ok = e == 0 &&
              header_value((const char *)text.data, "server", w->server, sizeof w->server) &&
              header_value((const char *)text.data, "credential", cred, sizeof cred) &&
              strstr((const char *)text.data, "-----BEGIN CERTIFICATE-----");
    bool has_key = ok && strstr((const char *)text.data, "PRIVATE KEY-----");
    if (text.data)
        OPENSSL_cleanse(text.data, text.len);
    cn_buf_free(&text);
    if (!ok) {
        fprintf(stderr, "cairn repo: %s: %s is not a cairn credential file\n", verb, file);
        return EXIT_USAGE;
    }
    const char *key = has_key ? file : getenv("CAIRN_AUTH_KEY");
    if (!key || !*key) {
        fprintf(stderr, "cairn repo: %s: %s holds no private key: set CAIRN_AUTH_KEY\n", verb,
                file);
        return EXIT_USAGE;
    }
    snprintf(w->trust, sizeof w->trust, "%s", file);
    snprintf(w->cert, sizeof w->cert, "%s", file);
    snprintf(w->key, sizeof w->key, "%s", key);
    w->file = true;
    return EXIT_OK;
}

int cn__ra_who(cn__ra_who_t *w, const char *verb, const char *file)
{
    memset(w, 0, sizeof *w);
    paths_t p;
    int rc = paths_get(&p);
    if (rc)
        return rc;
    snprintf(w->dir, sizeof w->dir, "%s", p.dir);
    if (!file || !*file)
        file = getenv("CAIRN_AUTH_CREDENTIAL");
    if (file && *file)
        return who_file(w, verb, file);
    session_t s;
    if (session_load(p.session, &s) < 0 || strcmp(s.state, "signed-in") != 0) {
        fprintf(stderr, "cairn repo: %s: not signed in (cairn repo login HOST:PORT)\n", verb);
        return EXIT_USAGE;
    }
    snprintf(w->server, sizeof w->server, "%s", s.server);
    snprintf(w->trust, sizeof w->trust, "%s", s.trust);
    snprintf(w->cert, sizeof w->cert, "%s", p.cert);
    snprintf(w->key, sizeof w->key, "%s", p.key);
    return EXIT_OK;
}

cn_sau2_client_opts_t cn__ra_opts(const cn__ra_who_t *w)
{
    return (cn_sau2_client_opts_t){
        .addr = w->server, .trust_file = w->trust, .cert_file = w->cert, .key_file = w->key
    };
}

void cn__ra_args(cn_sau2_req_t *req, int n, const char *const *args)
{
    set_args(req, n, args);
}

bool cn__ra_lost(cn_err_t e)
{
    return lost(e);
}

/* Forbidden answers that say the thing named does not exist (auth_admin.c's
 * messages): exit 3, as a missing bucket or key is. */
static bool names_nothing(const cn_sau2_str_t *m)
{
    static const char *const prefixes[] = { "no such", "no subject", "unknown operation",
                                            "nothing to revoke" };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (m->len >= strlen(prefixes[i]) && !memcmp(m->p, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

int cn__ra_report_code(const char *verb, const cn_sau2_reply_view_t *v)
{
    static const struct {
        uint16_t code;
        const char *name;
        int exit;
    } table[] = { { 1, "malformed", EXIT_USAGE },
                  { 3, "unauthenticated", EXIT_DENIED },
                  { 4, "forbidden", EXIT_DENIED },
                  { 6, "busy", EXIT_NETWORK },
                  { 7, "auth_unavailable", EXIT_NETWORK },
                  { 8, "limit_exceeded", EXIT_SERVER },
                  { 9, "unsupported_operation", EXIT_SERVER },
                  { 200, "operation_intent_mismatch", EXIT_CONFLICT } };
    const char *name = "refused";
    int rc = EXIT_SERVER;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == v->code) {
            name = table[i].name;
            rc = table[i].exit;
        }
    if (v->code == 4 && names_nothing(&v->message))
        rc = EXIT_NOT_FOUND;
    fprintf(stderr, "cairn repo: %s: %s: %.*s\n", verb, name, v->message.len,
            (const char *)v->message.p);
    return rc;
}

int cn__ra_report_err(const char *verb, const char *server, cn_err_t e)
{
    return report_err(verb, server, e);
}

cn_err_t cn__ra_new_key(cn_buf_t *pem, char *spki_hex, size_t cap)
{
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    unsigned char *der = NULL;
    int n = k ? i2d_PUBKEY(k, &der) : -1;
    BIO *bio = BIO_new(BIO_s_mem());
    cn_err_t e = n > 0 && (size_t)n * 2 < cap && bio &&
                         PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) == 1
                     ? CN_OK
                     : -ENOMEM;
    if (e == 0) {
        hex(der, (size_t)n, spki_hex);
        char *data = NULL;
        long len = BIO_get_mem_data(bio, &data);
        e = cn_buf_append(pem, data, (size_t)len);
        if (e == 0)
            e = cn_buf_append(pem, "", 1);
        if (e == 0)
            pem->len--; /* NUL-terminated, the NUL not counted */
        OPENSSL_cleanse(data, (size_t)len);
    }
    BIO_free(bio);
    OPENSSL_free(der);
    EVP_PKEY_free(k);
    return e;
}

cn_err_t cn__ra_file_spki(const char *path, char *spki_hex, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    if (!k) {
        rewind(f);
        k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    }
    fclose(f);
    ERR_clear_error(); /* a failed first read must not linger for the TLS calls */
    unsigned char *der = NULL;
    int n = k ? i2d_PUBKEY(k, &der) : -1;
    cn_err_t e = n > 0 && (size_t)n * 2 < cap ? CN_OK : CN_E_INVALID;
    if (e == 0)
        hex(der, (size_t)n, spki_hex);
    OPENSSL_free(der);
    EVP_PKEY_free(k);
    return e;
}

bool cn__ra_expiry(const char *d, int64_t now_ms, int64_t *out)
{
    static const struct {
        char unit;
        int64_t ms;
    } units[] = {
        { 's', 1000 }, { 'm', 60000 }, { 'h', 3600000 }, { 'd', 86400000 }, { 'w', 604800000 }
    };
    char *end = NULL;
    struct tm tm = { 0 };
    int64_t at = -1;
    if (d[0] >= '0' && d[0] <= '9' && strlen(d) <= 10 && !strchr(d, '-')) {
        unsigned long long n = strtoull(d, &end, 10);
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (end[0] == units[i].unit && !end[1] && n > 0 && n <= 100000)
                at = now_ms + (int64_t)n * units[i].ms;
    } else if ((end = strptime(d, "%Y-%m-%d", &tm)) != NULL &&
               (!*end || ((end = strptime(end, "T%H:%M:%SZ", &tm)) != NULL && !*end))) {
        at = (int64_t)timegm(&tm) * 1000;
    }
    *out = at;
    return at > now_ms;
}
