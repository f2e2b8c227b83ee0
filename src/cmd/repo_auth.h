/* What the SAU2 commands share (repo_auth.c: login, whoami, logout and the
 * caller's identity; repo_automation.c: automation create|derive;
 * repo_authadmin.c: the administrative verbs).  Internal to src/cmd.
 *
 * A command runs as the signed-in session (auth.session, auth.cert,
 * auth.key in the configuration directory) or, when CAIRN_AUTH_CREDENTIAL
 * (or --credential FILE) names one, as a credential file: the one file
 * `automation create` writes, holding a header (server, credential, kind,
 * account, expires-ms), the certificate, the private key when it has one
 * (else CAIRN_AUTH_KEY names it) and the server's trust bundle.  Never
 * prints a private key or a password. */
#ifndef CN_CMD_REPO_AUTH_H
#define CN_CMD_REPO_AUTH_H

#include "cairn/sau2_client.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* Who a signed-in command is. */
typedef struct cn__ra_who {
    char dir[PATH_MAX];       /* the configuration directory */
    char server[256];         /* HOST:PORT of the auth listener */
    char trust[PATH_MAX];     /* the PEM CAs the server must chain to */
    char cert[PATH_MAX + 16]; /* the credential certificate (PEM) */
    char key[PATH_MAX + 16];  /* its private key (PEM) */
    bool file;                /* a credential file, not the session */
} cn__ra_who_t;

/* The configuration directory ($XDG_CONFIG_HOME/cairn, else
 * ~/.config/cairn) into dir.  EXIT_OK, else EXIT_LOCAL (message printed). */
int cn__ra_config_dir(char *dir, size_t cap);
/* Resolves the caller: the credential file named by file, else by
 * CAIRN_AUTH_CREDENTIAL, else the signed-in session.  EXIT_OK; EXIT_USAGE
 * when not signed in or the file is not a credential file (message printed
 * with verb). */
int cn__ra_who(cn__ra_who_t *w, const char *verb, const char *file);
/* The client options of w (borrowing its strings). */
cn_sau2_client_opts_t cn__ra_opts(const cn__ra_who_t *w);

/* Sets req's strings to the n NUL-terminated args (argv[0] the verb). */
void cn__ra_args(cn_sau2_req_t *req, int n, const char *const *args);
/* A reply lost on the way: the request may have been applied. */
bool cn__ra_lost(cn_err_t e);
/* Prints a SAU2 error reply and returns its exit status (docs/cli.md):
 * unauthenticated and forbidden 4, forbidden for something that does not
 * exist 3, malformed 2, operation_intent_mismatch 6, busy 5, else 1. */
int cn__ra_report_code(const char *verb, const cn_sau2_reply_view_t *v);
/* Prints a failure to reach or talk to the server; EXIT_NETWORK (EXIT_LOCAL
 * for a local file the client could not use). */
int cn__ra_report_err(const char *verb, const char *server, cn_err_t e);
/* A new Ed25519 key: its PKCS#8 PEM into pem (NUL-terminated, the caller's
 * cn_buf_free after wiping) and its SubjectPublicKeyInfo DER in hex. */
cn_err_t cn__ra_new_key(cn_buf_t *pem, char *spki_hex, size_t cap);
/* The hex SubjectPublicKeyInfo DER of the key in a PEM file: a public key,
 * or the public half of a private key. */
cn_err_t cn__ra_file_spki(const char *path, char *spki_hex, size_t cap);
/* Unix milliseconds of a duration or date D (docs/cli.md): N followed by
 * s, m, h, d or w from now; YYYY-MM-DD (00:00 UTC); YYYY-MM-DDTHH:MM:SSZ.
 * false when D is none of these or not in the future. */
bool cn__ra_expiry(const char *d, int64_t now_ms, int64_t *out);

/* `cairn repo automation create|derive ...` (repo_automation.c). */
int cn__repo_automation(int argc, char **argv);
/* `cairn repo auth GROUP VERB ...` (repo_authadmin.c). */
int cn__repo_authadmin(int argc, char **argv);

#endif
