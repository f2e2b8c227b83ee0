/* `cairn admin --data DIR ...` — accounts, tokens and blob namespace grants,
 * worked directly on a data directory, or with `--meta URL` directly on a
 * fleet's metadata (docs/fleet.md), sealing secrets with the fleet's
 * `--identity-key`.  Safe while cairnd runs: the metadata
 * database is in WAL mode and writes are bounded-wait transactions; a running
 * server sees revocations within its token-cache TTL.  Opens, migrates and (on
 * an empty data dir) bootstraps by itself, so it never needs the server.
 *
 * stdout carries only results (token create prints exactly "id:secret\n");
 * messages go to stderr.  Exit 0 ok, 1 failure, 2 usage.
 */
#include "admin_open.h"
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn/identity.h"
#include "cairn/meta.h"
#include "cairn/util.h"

static const char admin_usage[] =
    "usage: cairn admin [--data DIR] [--meta URL] [--identity-key FILE] COMMAND ...\n"
    "  --data DIR           the data directory (its meta.db and identity.key)\n"
    "  --meta URL           a fleet's metadata: postgres://... or sqlite:PATH (or\n"
    "                       CAIRN_META); without --data it needs --identity-key\n"
    "  --identity-key FILE  the key sealing token secrets (or CAIRN_IDENTITY_KEY;\n"
    "                       default DATA/identity.key)\n"
    "  --identity-key-previous FILE  the key it replaces, during a rotation (or\n"
    "                       CAIRN_IDENTITY_KEY_PREVIOUS)\n"
    "  account create NAME [--email ADDR]\n"
    "  account list\n"
    "  account disable NAME | account enable NAME\n"
    "  token create --account NAME [--perm PERM]...   prints id:secret\n"
    "  token list [--account NAME]\n"
    "  token revoke ID\n"
    "  grant --namespace NS --account NAME --action read|write [--action ...]\n"
    "  revoke --namespace NS --account NAME [--action read|write]...\n"
    "  grants [--namespace NS]\n"
    "  repo backup NAME FILE | repo restore FILE [--replace]   (server stopped)\n"
    "  repo backup|restore ... --blob-store ... --blob-endpoint URL   with --meta: a\n"
    "                  fleet's repository, its nodes running (docs/fleet.md)\n"
    "  auth init   the SAU2 auth state, its CAs and the first administrator\n"
    "  store compact [--live PCT]   rewrite sparse pack files now (server stopped)\n"
    "  store recount   set the blob and byte totals to a fresh count (server\n"
    "                  stopped; not with --meta)\n"
    "  fleet status [--json]   the nodes of the fleet's registry and who holds each job\n"
    "                          lease (docs/fleet.md)\n"
    "  fleet import --from DATA [--blob-store ... | --blob-dir DIR]\n"
    "                          move a stopped embedded deployment into the fleet\n"
    "  identity rotate-key --new FILE --old FILE [--batch N]\n"
    "                          re-seal every token secret under a new identity key\n"
    "PERM: bucket:create bucket:delete bucket:list object:get object:put\n"
    "      object:delete object:list blobs:read blobs:write admin\n"
    "      bucket:configure object:lock object:bypass-governance all\n"
    "      (default without --perm: every permission except admin)\n";

/* cairn admin answers 0, 1 or 2 (cmd.h): any failure is EXIT_FAIL. */
enum {
    EXIT_FAIL = EXIT_SERVER
};

typedef struct {
    const char *account;
    const char *email;
    const char *ns;
    cn_perms_t perms;
    uint32_t actions;
    const char *pos[4]; /* positional words after the command */
    int npos;
} args_t;

static int usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "cairn admin: %s\n", msg);
    fputs(admin_usage, stderr);
    return EXIT_USAGE;
}

static int fail(const char *what, cn_err_t e)
{
    fprintf(stderr, "cairn admin: %s: %s\n", what, cn_strerror(e));
    return EXIT_FAIL;
}

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **out)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *out = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *out = argv[++*i];
    return 1;
}

/* Parses the options and positional words after the command words. */
static int parse_rest(int argc, char **argv, int start, args_t *a)
{
    for (int i = start; i < argc; i++) {
        const char *v = NULL;
        int r;
        if ((r = opt_value(argc, argv, &i, "--account", &v)) != 0) {
            if (r < 0 || !*v)
                return usage("--account needs a name");
            a->account = v;
        } else if ((r = opt_value(argc, argv, &i, "--email", &v)) != 0) {
            if (r < 0 || !*v)
                return usage("--email needs an address");
            a->email = v;
        } else if ((r = opt_value(argc, argv, &i, "--namespace", &v)) != 0) {
            if (r < 0 || !*v)
                return usage("--namespace needs a name");
            a->ns = v;
        } else if ((r = opt_value(argc, argv, &i, "--perm", &v)) != 0) {
            cn_perms_t p;
            if (r < 0 || cn_perm_parse(v, strlen(v), &p) < 0) {
                fprintf(stderr, "cairn admin: unknown permission '%s'\n", r < 0 ? "" : v);
                return usage(NULL);
            }
            a->perms |= p;
        } else if ((r = opt_value(argc, argv, &i, "--action", &v)) != 0) {
            uint32_t act;
            if (r < 0 || cn_ns_action_parse(v, &act) < 0)
                return usage("--action is read or write");
            a->actions |= act;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "cairn admin: unknown option '%s'\n", argv[i]);
            return usage(NULL);
        } else {
            if (a->npos == (int)(sizeof a->pos / sizeof a->pos[0]))
                return usage("too many arguments");
            a->pos[a->npos++] = argv[i];
        }
    }
    return EXIT_OK;
}

static void fmt_time(int64_t secs, char out[CN_RFC3339_LEN])
{
    if (secs <= 0) {
        strcpy(out, "-");
        return;
    }
    cn_rfc3339(secs * 1000, out);
}

static cn_err_t print_account(void *arg, const cn_account_t *a)
{
    (void)arg;
    char created[CN_RFC3339_LEN];
    fmt_time(a->created_at, created);
    printf("%s\t%s\t%s\t%s\n", a->name, a->email[0] ? a->email : "-",
           a->disabled ? "disabled" : "active", created);
    return 0;
}

static cn_err_t print_token(void *arg, const cn_token_info_t *t)
{
    (void)arg;
    char created[CN_RFC3339_LEN], perms[CN_PERMS_STR_MAX];
    const char *state = "active";
    if (t->revoked_at)
        state = "revoked";
    else if (t->expires_at && t->expires_at <= (int64_t)time(NULL))
        state = "expired";
    fmt_time(t->created_at, created);
    cn_perms_format(t->perms, perms, sizeof perms);
    printf("%s\t%s\t%s\t%s\t%s\n", t->token_id, t->account, state, created, perms);
    return 0;
}

static cn_err_t print_grant(void *arg, const cn_ns_grant_t *g)
{
    (void)arg;
    printf("%s\t%s\t%s%s%s\n", g->ns, g->account, g->actions & CN_NS_READ ? "read" : "",
           g->actions == CN_NS_ALL ? "," : "", g->actions & CN_NS_WRITE ? "write" : "");
    return 0;
}

static int cmd_account(cn_identity_t *id, const char *verb, const args_t *a)
{
    cn_err_t e;
    if (!strcmp(verb, "create")) {
        if (a->npos != 1 || a->perms || a->actions || a->ns || a->account)
            return usage("account create NAME [--email ADDR]");
        cn_account_t acc;
        e = cn_identity_account_create(id, a->pos[0], a->email, &acc);
        if (e == CN_E_EXISTS)
            fprintf(stderr, "cairn admin: account '%s' or its email already exists\n", a->pos[0]);
        else if (e == CN_E_INVALID)
            fprintf(stderr, "cairn admin: invalid account name or email\n");
        if (e < 0)
            return fail("account create", e);
        return EXIT_OK;
    }
    if (!strcmp(verb, "list")) {
        if (a->npos || a->email || a->account || a->ns || a->perms || a->actions)
            return usage("account list takes no arguments");
        e = cn_identity_account_list(id, print_account, NULL);
        return e < 0 ? fail("account list", e) : EXIT_OK;
    }
    if (!strcmp(verb, "disable") || !strcmp(verb, "enable")) {
        if (a->npos != 1 || a->email || a->account || a->ns || a->perms || a->actions)
            return usage("account disable|enable NAME");
        e = cn_identity_account_set_disabled(id, a->pos[0], verb[0] == 'd');
        if (e == CN_E_NOT_FOUND)
            fprintf(stderr, "cairn admin: no account '%s'\n", a->pos[0]);
        return e < 0 ? fail(verb[0] == 'd' ? "account disable" : "account enable", e) : EXIT_OK;
    }
    return usage("unknown account command");
}

static int cmd_token(cn_identity_t *id, const char *verb, const args_t *a)
{
    cn_err_t e;
    if (!strcmp(verb, "create")) {
        if (!a->account || a->npos || a->email || a->ns || a->actions)
            return usage("token create --account NAME [--perm PERM]...");
        char cred[CN_CREDENTIAL_MAX];
        e = cn_identity_token_create(id, a->account, a->perms ? a->perms : CN_PERM_DEFAULT, 0,
                                     cred);
        if (e == CN_E_NOT_FOUND)
            fprintf(stderr, "cairn admin: no account '%s'\n", a->account);
        if (e < 0)
            return fail("token create", e);
        printf("%s\n", cred);
        memset(cred, 0, sizeof cred);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
    }
    if (!strcmp(verb, "list")) {
        if (a->npos || a->email || a->ns || a->perms || a->actions)
            return usage("token list [--account NAME]");
        e = cn_identity_token_list(id, a->account, print_token, NULL);
        return e < 0 ? fail("token list", e) : EXIT_OK;
    }
    if (!strcmp(verb, "revoke")) {
        if (a->npos != 1 || a->email || a->account || a->ns || a->perms || a->actions)
            return usage("token revoke ID");
        e = cn_identity_token_revoke(id, a->pos[0]);
        if (e == CN_E_NOT_FOUND)
            fprintf(stderr, "cairn admin: no token '%s'\n", a->pos[0]);
        return e < 0 ? fail("token revoke", e) : EXIT_OK;
    }
    return usage("unknown token command");
}

static int cmd_grant(cn_identity_t *id, const char *cmd, const args_t *a)
{
    cn_err_t e;
    if (a->npos || a->email || a->perms)
        return usage(NULL);
    if (!strcmp(cmd, "grants")) {
        if (a->account || a->actions)
            return usage("grants [--namespace NS]");
        e = cn_identity_grant_list(id, a->ns, print_grant, NULL);
        return e < 0 ? fail("grants", e) : EXIT_OK;
    }
    if (!a->ns || !a->account)
        return usage("grant|revoke need --namespace NS --account NAME");
    if (!strcmp(cmd, "grant")) {
        if (!a->actions)
            return usage("grant needs --action read|write");
        e = cn_identity_grant(id, a->ns, a->account, a->actions);
    } else {
        e = cn_identity_revoke(id, a->ns, a->account, a->actions ? a->actions : CN_NS_ALL);
    }
    if (e == CN_E_NOT_FOUND)
        fprintf(stderr, "cairn admin: no account '%s', or no such grant\n", a->account);
    else if (e == CN_E_INVALID)
        fprintf(stderr, "cairn admin: invalid namespace\n");
    return e < 0 ? fail(cmd, e) : EXIT_OK;
}

/* The global options before the command: --data, --meta, --identity-key,
 * --identity-key-previous (the last three default to CAIRN_META,
 * CAIRN_IDENTITY_KEY and CAIRN_IDENTITY_KEY_PREVIOUS).  *i is left on the
 * command word; EXIT_OK, or an exit status to return now. */
typedef struct {
    const char *data, *meta, *key, *prev;
} globals_t;

static int parse_globals(int argc, char **argv, int *i, globals_t *g)
{
    static const char *const names[4] = { "--data", "--meta", "--identity-key",
                                          "--identity-key-previous" };
    static const char *const need[4] = { "--data needs a directory", "--meta needs a URL",
                                         "--identity-key needs a file",
                                         "--identity-key-previous needs a file" };
    const char **slots[4] = { &g->data, &g->meta, &g->key, &g->prev };
    g->meta = getenv("CAIRN_META");
    g->key = getenv("CAIRN_IDENTITY_KEY");
    g->prev = getenv("CAIRN_IDENTITY_KEY_PREVIOUS");
    for (; *i < argc; ++*i) {
        int k = 0, r = 0;
        const char *v = NULL;
        while (k < 4 && (r = opt_value(argc, argv, i, names[k], &v)) == 0)
            k++;
        if (r < 0 || (r > 0 && !*v))
            return usage(need[k]);
        if (r > 0) {
            *slots[k] = v;
            continue;
        }
        if (!strcmp(argv[*i], "--help") || !strcmp(argv[*i], "-h")) {
            fputs(admin_usage, stdout);
            return -1;
        }
        break;
    }
    if (g->meta && !*g->meta)
        g->meta = NULL;
    if (g->key && !*g->key)
        g->key = NULL;
    if (g->prev && !*g->prev)
        g->prev = NULL;
    if (g->meta && strncmp(g->meta, "postgres://", 11) && strncmp(g->meta, "postgresql://", 13) &&
        (strncmp(g->meta, "sqlite:", 7) || !g->meta[7]))
        return usage("--meta wants postgres://... or sqlite:PATH");
    cn__admin_set_meta(g->meta);
    cn__admin_set_key(g->key);
    return EXIT_OK;
}

/* Opens the metadata (--meta, else DATA's) and identity on it (the key from
 * --identity-key, else DATA/identity.key), bootstrapping the first
 * administrator only when there is a data directory to write its token to.
 * EXIT_OK, or EXIT_FAIL after a message; *meta and *id are left for the
 * caller to close either way. */
static int open_identity(const globals_t *g, cn_meta_t **meta, cn_identity_t **id)
{
    const char *where = g->meta ? g->meta : g->data;
    /* Created as opening DATA's own metadata would (its key goes there). */
    cn_err_t e = g->meta && g->data ? cn_mkdir_p(g->data, 0700) : 0;
    if (e >= 0)
        e = cn_meta_open(where, NULL, meta);
    if (e < 0) {
        fprintf(stderr, "cairn admin: cannot open %s: %s\n", g->meta ? "the metadata" : g->data,
                cn_strerror(e));
        return EXIT_FAIL;
    }
    const char *const prev[2] = { g->prev, NULL };
    const cn_identity_opts_t io = { .data_dir = g->data, .key_file = g->key, .prev_files = prev };
    e = cn_identity_open_opts(*meta, &io, id);
    if (e == 0 && g->data)
        e = cn_identity_bootstrap(*id, g->data);
    if (e == CN_E_AUTH)
        fprintf(stderr, "cairn admin: the identity key is not this metadata's key (see above)\n");
    else if (e < 0)
        fprintf(stderr, "cairn admin: cannot open identity%s%s: %s\n", g->data ? " in " : "",
                g->data ? g->data : "", cn_strerror(e));
    return e < 0 ? EXIT_FAIL : EXIT_OK;
}

/* repo, store and auth: each works on a data directory (its metadata
 * from --meta when given); fleet on --meta or --data.  -1 when cmd is none
 * of them. */
static int data_command(const char *cmd, const char *data, int argc, char **argv)
{
    int (*fn)(const char *, int, char **) = !strcmp(cmd, "repo")       ? cn_cmd_admin_repo
                                            : !strcmp(cmd, "store")    ? cn_cmd_admin_store
                                            : !strcmp(cmd, "auth")     ? cn_cmd_admin_auth
                                            : !strcmp(cmd, "fleet")    ? cn_cmd_admin_fleet
                                            : !strcmp(cmd, "identity") ? cn_cmd_admin_identity
                                                                       : NULL;
    if (!fn)
        return -1;
    bool fleet_repo = fn == cn_cmd_admin_repo && cn__admin_meta_target(NULL);
    if (!data && fn != cn_cmd_admin_fleet && fn != cn_cmd_admin_identity && !fleet_repo)
        return usage("--data DIR is required");
    cn_log_configure(CN_LOG_WARN, false);
    return fn(data, argc, argv);
}

int cn_cmd_admin(int argc, char **argv)
{
    globals_t g = { 0 };
    int i = 1;
    int rc = parse_globals(argc, argv, &i, &g);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if (i >= argc)
        return usage(NULL);
    const char *cmd = argv[i++];
    const char *verb = NULL;
    if ((rc = data_command(cmd, g.data, argc - i, argv + i)) >= 0)
        return rc;
    bool two_word = !strcmp(cmd, "account") || !strcmp(cmd, "token");
    if (two_word) {
        if (i >= argc)
            return usage(NULL);
        verb = argv[i++];
        bool known = !strcmp(verb, "create") || !strcmp(verb, "list") ||
                     (cmd[0] == 'a' && (!strcmp(verb, "disable") || !strcmp(verb, "enable"))) ||
                     (cmd[0] == 't' && !strcmp(verb, "revoke"));
        if (!known) {
            fprintf(stderr, "cairn admin: unknown command '%s %s'\n", cmd, verb);
            return usage(NULL);
        }
    } else if (strcmp(cmd, "grant") && strcmp(cmd, "revoke") && strcmp(cmd, "grants")) {
        fprintf(stderr, "cairn admin: unknown command '%s'\n", cmd);
        return usage(NULL);
    }
    args_t a = { 0 };
    rc = parse_rest(argc, argv, i, &a);
    if (rc != EXIT_OK)
        return rc;
    if (!g.data && !g.meta)
        return usage("--data DIR or --meta URL is required");
    if (!g.data && !g.key)
        return usage("--meta without --data needs --identity-key FILE (the fleet's key)");

    cn_log_configure(CN_LOG_WARN, false);
    cn_meta_t *meta = NULL;
    cn_identity_t *id = NULL;
    rc = open_identity(&g, &meta, &id);
    if (rc == EXIT_OK && !strcmp(cmd, "account"))
        rc = cmd_account(id, verb, &a);
    else if (rc == EXIT_OK && !strcmp(cmd, "token"))
        rc = cmd_token(id, verb, &a);
    else if (rc == EXIT_OK)
        rc = cmd_grant(id, cmd, &a);
    cn_identity_close(id);
    cn_meta_close(meta);
    return rc;
}
