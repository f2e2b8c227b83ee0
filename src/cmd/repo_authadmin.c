/* `cairn repo auth GROUP VERB ...`: SAU2's administrative verbs from the
 * command line (docs/protocol/sau2.md section 5.3, docs/cli.md), driven by
 * one table: each row names the command, the SAU2 verb, how the command's
 * arguments and options map onto the verb's strings (in order), whether it
 * is a mutation, and the names of the reply's columns.
 *
 * A mutation's operation id is written to auth-admin.pending in the
 * configuration directory (with the request's strings) before the request
 * leaves; a reply lost on the way is asked for again with the same id by
 * the same run, and the same command run again after a crash reuses the
 * pending id and strings, so the server answers what it recorded.  Lists
 * are paged to the end.  Rows print as aligned text, or JSON with --json.
 *
 * Runs as the signed-in session (an `--admin` login: administrative verbs
 * need a user credential) or CAIRN_AUTH_CREDENTIAL's credential file.
 * Never: print or persist a password (users password reads it from a
 * prompt, CAIRN_NEW_PASSWORD or standard input and sends it as the
 * request's secret alone). */
#include "cmd.h"
#include "repo_auth.h"

#include "cairn/crypto.h"
#include "cairn/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

/* How one of the verb's strings is made. */
typedef enum {
    A_END,     /* no more */
    A_POS,     /* the next positional argument (required) */
    A_OPT,     /* the next positional argument, or nothing (the verb's last string) */
    A_CURSOR,  /* a list's cursor: managed here */
    A_FLAG,    /* --NAME VALUE, or the default */
    A_BOOL,    /* --NAME present: "1", else "0" */
    A_NEWID,   /* a new random credential id (32 hex) */
    A_KEYFILE, /* --NAME FILE (required): the key's SPKI DER in hex */
    A_EXPIRES, /* --NAME D (required): Unix ms (repo_auth.h's cn__ra_expiry) */
} akind_t;

typedef struct aspec {
    akind_t kind;
    const char *name; /* the placeholder or the option, for usage */
    const char *def;  /* A_FLAG's default */
} aspec_t;

#define ARGS_MAX 7

typedef struct admin_cmd {
    const char *group, *sub, *verb;
    aspec_t args[ARGS_MAX];
    bool mutation, secret;
    const char *cols; /* the reply's column names, space-separated; NULL: unnamed */
    int cursor_cols;  /* lists: the cursor is column 0 (1) or "col0/col1" (2) */
} admin_cmd_t;

/* The table reads as a table. */
// clang-format off
#define P(n) { A_POS, n, NULL }
#define O(n) { A_OPT, n, NULL }
#define CUR { A_CURSOR, NULL, NULL }
#define PAIR_CMDS(g, cols)                                                                    \
    { g, "set", g "-set", { P("USER"), P("NAMESPACE") }, true, false, "user namespace", 0 },    \
        { g, "revoke", g "-revoke", { P("USER"), P("NAMESPACE") }, true, false,                 \
          "user namespace", 0 },                                                              \
        { g, "list", g "-list", { CUR, O("[NAMESPACE]") }, false, false, cols, 2 }

static const admin_cmd_t cmds[] = {
    { "users", "add", "users-add",
      { P("NAME"), P("ID"), { A_BOOL, "--administrator", NULL }, { A_FLAG, "--kind", "person" } },
      true, false, "name id", 0 },
    { "users", "password", "users-password", { P("NAME"), P("GENERATION") }, true, true,
      "name generation", 0 },
    { "users", "disable", "users-disable", { P("NAME") }, true, false, "name disabled", 0 },
    { "users", "enable", "users-enable", { P("NAME") }, true, false, "name disabled", 0 },
    { "users", "list", "users-list", { CUR }, false, false,
      "name id kind administrator disabled generation", 1 },
    { "servers", "add", "servers-add", { P("NAME"), P("NAMESPACE"), P("ID") }, true, false,
      "name namespace id", 0 },
    { "servers", "disable", "servers-disable", { P("NAME") }, true, false, "name disabled", 0 },
    { "servers", "enable", "servers-enable", { P("NAME") }, true, false, "name disabled", 0 },
    { "servers", "list", "servers-list", { CUR }, false, false, "name namespace id disabled", 1 },
    { "credentials", "add", "credentials-add",
      { P("KIND"), P("SUBJECT"), { A_NEWID, NULL, NULL }, { A_KEYFILE, "--public-key", NULL },
        { A_EXPIRES, "--expires", NULL }, { A_FLAG, "--label", "" } },
      true, false, "certificate", 0 },
    { "credentials", "certificate", "credentials-certificate", { P("CREDENTIAL") }, false, false,
      "certificate", 0 },
    { "credentials", "revoke", "credentials-revoke", { P("CREDENTIAL") }, true, false,
      "credential revoked-ms", 0 },
    { "credentials", "list", "credentials-list", { CUR, O("[USER]") }, false, false,
      "credential kind account key-id expires-ms revoked-ms parent label", 1 },
    { "grants", "set", "grants-set", { P("USER"), P("NAMESPACE"), P("ROLE") }, true, false,
      "user namespace role", 0 },
    { "grants", "revoke", "grants-revoke", { P("USER"), P("NAMESPACE") }, true, false,
      "user namespace", 0 },
    { "grants", "list", "grants-list", { CUR, O("[NAMESPACE]") }, false, false,
      "namespace user role", 2 },
    PAIR_CMDS("namespace-admins", "namespace user"),
    PAIR_CMDS("namespace-readers", "namespace user"),
    PAIR_CMDS("delegates", "namespace user"),
    { "visibility", "get", "visibility-get", { P("NAMESPACE"), P("REPOSITORY") }, false, false,
      "namespace repository visibility", 0 },
    { "visibility", "set", "visibility-set",
      { P("NAMESPACE"), P("REPOSITORY"), P("private|public-read") }, true, false,
      "namespace repository visibility", 0 },
    { "audit", "list", "audit-list", { CUR }, false, false,
      "seq at-ms actor verb arguments code revision", 1 },
    { "outcome", "", "operation-outcome", { P("OPERATION") }, false, false, NULL, 0 },
};

// clang-format on

#define NCMDS (sizeof cmds / sizeof cmds[0])

static void usage(void)
{
    fputs("usage: cairn repo auth GROUP VERB ARGS... [--json] [--credential FILE]\n", stderr);
    for (size_t i = 0; i < NCMDS; i++) {
        fprintf(stderr, "       cairn repo auth %s%s%s", cmds[i].group, *cmds[i].sub ? " " : "",
                cmds[i].sub);
        for (const aspec_t *a = cmds[i].args; a < cmds[i].args + ARGS_MAX && a->kind; a++)
            if (a->name)
                fprintf(stderr, a->kind == A_BOOL || a->kind == A_FLAG ? " [%s%s]" : " %s%s",
                        a->name,
                        a->kind == A_FLAG      ? " V"
                        : a->kind >= A_KEYFILE ? " F"
                                               : "");
        fputc('\n', stderr);
    }
    fputs("(--public-key FILE: a PEM key; --expires D: as for automation create; users\n"
          "password reads the new password from a prompt, CAIRN_NEW_PASSWORD or stdin)\n",
          stderr);
}

/* ---- the request's strings ------------------------------------------------------------ */

typedef struct req_strings {
    char s[ARGS_MAX + 1][CN_SAU2_MAX_STRING + 1]; /* [0] the verb */
    int n;
    int cursor; /* index of the cursor string, or -1 */
} req_strings_t;

/* The value of option name in argv (NULL: absent); *present for A_BOOL. */
static const char *option(int argc, char **argv, const char *name, bool *present)
{
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], name)) {
            *present = true;
            return i + 1 < argc ? argv[i + 1] : NULL;
        }
    *present = false;
    return NULL;
}

/* Whether argv[i] is an option or an option's value (not positional). */
static bool is_option(const admin_cmd_t *c, char **argv, int i, int from)
{
    for (const aspec_t *a = c->args; a < c->args + ARGS_MAX && a->kind; a++) {
        if (!a->name || a->name[0] != '-')
            continue;
        if (!strcmp(argv[i], a->name))
            return true;
        if (a->kind != A_BOOL && i > from && !strcmp(argv[i - 1], a->name))
            return true;
    }
    return !strcmp(argv[i], "--json") || !strcmp(argv[i], "--credential") ||
           (i > from && !strcmp(argv[i - 1], "--credential"));
}

/* One string of kind a: from the positional argument *pos, an option, or made here. */
static int one_string(const aspec_t *a, int argc, char **argv, const char *pos, char *out)
{
    bool present = false;
    const char *v = a->name && a->name[0] == '-' ? option(argc, argv, a->name, &present) : pos;
    int64_t ms = 0;
    uint8_t id[CN_SAU2_ID_LEN];
    switch (a->kind) {
    case A_POS:
        if (!v)
            return EXIT_USAGE;
        snprintf(out, CN_SAU2_MAX_STRING + 1, "%s", v);
        return EXIT_OK;
    case A_FLAG:
        snprintf(out, CN_SAU2_MAX_STRING + 1, "%s", present && v ? v : a->def);
        return present && !v ? EXIT_USAGE : EXIT_OK;
    case A_BOOL: snprintf(out, CN_SAU2_MAX_STRING + 1, "%s", present ? "1" : "0"); return 0;
    case A_NEWID:
        if (cn_random_bytes(id, sizeof id) < 0)
            return EXIT_LOCAL;
        cn_hex_encode(id, sizeof id, out);
        return EXIT_OK;
    case A_KEYFILE:
        if (v && cn__ra_file_spki(v, out, CN_SAU2_MAX_STRING + 1) == 0)
            return EXIT_OK;
        fprintf(stderr, "cairn repo: auth: %s: no PEM key in %s\n", a->name, v ? v : "(none)");
        return EXIT_USAGE;
    case A_EXPIRES:
        if (!v || !cn__ra_expiry(v, cn_wall_ms(), &ms)) {
            fprintf(stderr, "cairn repo: auth: %s D: a time ahead is needed\n", a->name);
            return EXIT_USAGE;
        }
        snprintf(out, CN_SAU2_MAX_STRING + 1, "%lld", (long long)ms);
        return EXIT_OK;
    default: return EXIT_USAGE;
    }
}

/* Maps the command line onto the verb's strings (table order). */
static int build(const admin_cmd_t *c, int argc, char **argv, int from, req_strings_t *r)
{
    snprintf(r->s[0], sizeof r->s[0], "%s", c->verb);
    r->n = 1;
    r->cursor = -1;
    int next = from; /* the next positional argument */
    for (const aspec_t *a = c->args; a < c->args + ARGS_MAX && a->kind; a++) {
        while (next < argc && is_option(c, argv, next, from))
            next++;
        const char *pos = next < argc ? argv[next] : NULL;
        if (a->kind == A_CURSOR) {
            r->cursor = r->n;
            r->s[r->n++][0] = 0;
            continue;
        }
        if (a->kind == A_OPT) {
            if (pos) {
                snprintf(r->s[r->n++], CN_SAU2_MAX_STRING + 1, "%s", pos);
                next++;
            }
            continue;
        }
        if ((a->kind == A_POS && pos && strlen(pos) > CN_SAU2_MAX_STRING))
            return EXIT_USAGE;
        int rc = one_string(a, argc, argv, pos, r->s[r->n]);
        if (rc)
            return rc;
        r->n++;
        next += a->kind == A_POS;
    }
    while (next < argc && is_option(c, argv, next, from))
        next++;
    return next < argc ? EXIT_USAGE : EXIT_OK; /* a positional argument too many */
}

/* ---- the pending mutation ----------------------------------------------------------------- */

/* The command line as one string, for knowing a retry of the same command. */
static void command_line(int argc, char **argv, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 2; i < argc && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i > 2 ? "\x1f" : "", argv[i]);
}

/* Reuses the pending operation when it was this very command (its strings
 * and id), else persists a new one.  EXIT_OK with op set. */
static int pending_op(const char *dir, const char *cmdline, req_strings_t *r, uint8_t op[16])
{
    char path[PATH_MAX + 32], hex[2 * CN_SAU2_ID_LEN + 1];
    snprintf(path, sizeof path, "%s/auth-admin.pending", dir);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    req_strings_t old = { .n = 0, .cursor = -1 };
    bool same = false;
    if (f && getline(&line, &cap, f) > 0 && sscanf(line, "op %32s", hex) == 1 &&
        getline(&line, &cap, f) > 0 && !strncmp(line, "cmd ", 4)) {
        line[strcspn(line, "\n")] = 0;
        same = !strcmp(line + 4, cmdline);
        while (same && old.n <= ARGS_MAX && getline(&line, &cap, f) > 0 &&
               !strncmp(line, "arg ", 4)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(old.s[old.n++], CN_SAU2_MAX_STRING + 1, "%s", line + 4);
        }
        same = same && old.n == r->n && cn_hex_decode(hex, strlen(hex), op, 16) == 0;
    }
    free(line);
    if (f)
        fclose(f);
    if (same) {
        fprintf(stderr, "cairn repo: auth: sending again the %s left pending (operation %s)\n",
                r->s[0], hex);
        for (int i = 0; i < r->n; i++)
            memcpy(r->s[i], old.s[i], sizeof r->s[i]);
        return EXIT_OK;
    }
    cn_buf_t t = { 0 };
    if (cn_random_bytes(op, 16) < 0)
        return EXIT_LOCAL;
    cn_hex_encode(op, 16, hex);
    cn_err_t e = cn_buf_append_str(&t, "op ");
    const char *parts[] = { hex, "\ncmd ", cmdline, "\n" };
    for (size_t i = 0; e == 0 && i < 4; i++)
        e = cn_buf_append_str(&t, parts[i]);
    for (int i = 0; e == 0 && i < r->n; i++) {
        e = cn_buf_append_str(&t, "arg ");
        if (e == 0)
            e = cn_buf_append_str(&t, r->s[i]);
        if (e == 0)
            e = cn_buf_append_str(&t, "\n");
    }
    if (e == 0)
        e = cn_file_replace(path, t.data, t.len, 0600);
    cn_buf_free(&t);
    if (e == 0) /* to ask for its outcome later (cairn repo auth outcome) */
        fprintf(stderr, "cairn repo: auth: %s: operation %s\n", r->s[0], hex);
    if (e < 0)
        fprintf(stderr, "cairn repo: auth: cannot write %s: %s\n", path, cn_strerror(e));
    return e < 0 ? EXIT_LOCAL : EXIT_OK;
}

/* ---- the reply's rows ------------------------------------------------------------------- */

typedef struct table {
    char **cells; /* rows × ncols, NUL-terminated copies */
    size_t rows, ncols, cap;
} table_t;

static int table_add(table_t *t, const cn_sau2_row_t *row)
{
    if (t->rows == 0 && t->ncols == 0)
        t->ncols = row->n;
    if (row->n != t->ncols)
        return EXIT_SERVER;
    if ((t->rows + 1) * t->ncols > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 64) + t->ncols;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c)
            return EXIT_LOCAL;
        t->cells = c;
        t->cap = cap;
    }
    for (size_t i = 0; i < t->ncols; i++) {
        char *s = malloc((size_t)row->s[i].len + 1);
        if (!s)
            return EXIT_LOCAL;
        memcpy(s, row->s[i].p, row->s[i].len);
        s[row->s[i].len] = 0;
        t->cells[t->rows * t->ncols + i] = s;
    }
    t->rows++;
    return EXIT_OK;
}

static void table_free(table_t *t)
{
    for (size_t i = 0; i < t->rows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
}

/* The i-th of the space-separated names (NULL past the last). */
static bool col_name(const char *cols, size_t i, char *out, size_t cap)
{
    const char *p = cols;
    for (size_t k = 0; p && k < i; k++)
        p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
    if (!p)
        return false;
    snprintf(out, cap, "%.*s", (int)strcspn(p, " "), p);
    return true;
}

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_json(const admin_cmd_t *c, const table_t *t)
{
    char name[64];
    putchar('[');
    for (size_t r = 0; r < t->rows; r++) {
        fputs(r ? ",\n " : "", stdout);
        putchar(c->cols ? '{' : '[');
        for (size_t i = 0; i < t->ncols; i++) {
            fputs(i ? ", " : "", stdout);
            if (c->cols && col_name(c->cols, i, name, sizeof name)) {
                json_string(name);
                fputs(": ", stdout);
            }
            json_string(t->cells[r * t->ncols + i]);
        }
        putchar(c->cols ? '}' : ']');
    }
    puts("]");
}

/* Aligned columns with a header; a certificate (PEM) as it is. */
static void print_text(const admin_cmd_t *c, const table_t *t)
{
    size_t width[CN_SAU2_MAX_STRINGS] = { 0 };
    char name[64];
    if (c->cols && !strcmp(c->cols, "certificate")) {
        for (size_t r = 0; r < t->rows; r++)
            fputs(t->cells[r * t->ncols], stdout);
        return;
    }
    for (size_t i = 0; i < t->ncols; i++) {
        if (c->cols && col_name(c->cols, i, name, sizeof name))
            width[i] = strlen(name);
        for (size_t r = 0; r < t->rows; r++)
            if (strlen(t->cells[r * t->ncols + i]) > width[i])
                width[i] = strlen(t->cells[r * t->ncols + i]);
    }
    size_t names = 0;
    while (c->cols && col_name(c->cols, names, name, sizeof name))
        names++;
    for (size_t i = 0; i < names && col_name(c->cols, i, name, sizeof name); i++)
        printf("%s%-*s%s", i ? "  " : "", i + 1 < names ? (int)width[i] : 0, name,
               i + 1 < names ? "" : "\n");
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t i = 0; i < t->ncols; i++)
            printf("%s%-*s", i ? "  " : "", i + 1 < t->ncols ? (int)width[i] : 0,
                   t->cells[r * t->ncols + i]);
        putchar('\n');
    }
}

/* ---- running one command ----------------------------------------------------------------- */

/* Reads the new password of users password: a prompt without echo, else
 * CAIRN_NEW_PASSWORD, else one line of standard input. */
static int new_password(char *pw, size_t cap)
{
    const char *env = getenv("CAIRN_NEW_PASSWORD");
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fputs("new password: ", stderr);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    bool got =
        !tty && env && *env ? snprintf(pw, cap, "%s", env) > 0 : fgets(pw, (int)cap, stdin) != NULL;
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    pw[got ? strcspn(pw, "\r\n") : 0] = 0;
    size_t n = strlen(pw);
    return n >= CN_SAU2_NEW_PASSWORD_MIN && n <= CN_SAU2_PASSWORD_MAX ? (int)n : -1;
}

/* Sends r (every page of a list) and gathers the rows into t. */
static int exchange(const admin_cmd_t *c, cn_sau2_client_t *cl, const cn__ra_who_t *w,
                    req_strings_t *r, const uint8_t op[16], const char *pw, table_t *t)
{
    cn_buf_t payload = { 0 };
    int rc = EXIT_OK;
    for (int page = 0; rc == EXIT_OK && page < 100000; page++) {
        cn_sau2_req_t req = { 0 };
        const char *args[ARGS_MAX + 1];
        for (int i = 0; i < r->n; i++)
            args[i] = r->s[i];
        cn__ra_args(&req, r->n, args);
        memcpy(req.op, op, sizeof req.op);
        req.has_secret = pw != NULL;
        if (pw)
            req.secret = (cn_sau2_str_t){ (const uint8_t *)pw, (uint16_t)strlen(pw) };
        cn_sau2_reply_view_t v;
        cn_err_t e = cn_sau2_client_call(cl, &req, &payload, &v);
        if (c->mutation && cn__ra_lost(e)) /* perhaps applied: the same id answers */
            e = cn_sau2_client_call(cl, &req, &payload, &v);
        rc = e < 0    ? cn__ra_report_err(c->verb, w->server, e)
             : v.code ? cn__ra_report_code(c->verb, &v)
                      : EXIT_OK;
        size_t off = 0;
        cn_sau2_row_t row;
        while (rc == EXIT_OK && cn_sau2_row_next(&v, &off, &row))
            rc = table_add(t, &row);
        /* A full page means "ask again from the last row" (sau2.md 5). */
        if (rc || r->cursor < 0 || v.nrows < CN_SAU2_MAX_ROWS || !t->rows)
            break;
        char **last = t->cells + (t->rows - 1) * t->ncols;
        snprintf(r->s[r->cursor], CN_SAU2_MAX_STRING + 1, "%s%s%s", last[0],
                 c->cursor_cols == 2 ? "/" : "", c->cursor_cols == 2 ? last[1] : "");
    }
    cn_buf_free(&payload);
    return rc;
}

static int run(const admin_cmd_t *c, int argc, char **argv, int from)
{
    bool json = false, present = false;
    const char *credential = option(argc, argv, "--credential", &present);
    for (int i = from; i < argc; i++)
        json |= !strcmp(argv[i], "--json");
    static req_strings_t r; /* large: off the stack */
    int rc = build(c, argc, argv, from, &r);
    if (rc == EXIT_USAGE)
        usage();
    cn__ra_who_t w;
    if (rc == EXIT_OK)
        rc = cn__ra_who(&w, "auth", credential);
    uint8_t op[16] = { 0 };
    char cmdline[2048], pw[CN_SAU2_PASSWORD_MAX + 2] = "";
    command_line(argc, argv, cmdline, sizeof cmdline);
    if (rc == EXIT_OK && c->secret && new_password(pw, sizeof pw) < 0) {
        fputs("cairn repo: auth: the new password must be 12..1024 bytes\n", stderr);
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && c->mutation)
        rc = pending_op(w.dir, cmdline, &r, op);
    cn_sau2_client_opts_t o = rc == EXIT_OK ? cn__ra_opts(&w) : (cn_sau2_client_opts_t){ 0 };
    cn_sau2_client_t *cl = NULL;
    table_t t = { 0 };
    if (rc == EXIT_OK && cn_sau2_client_new(&o, &cl) < 0)
        rc = EXIT_LOCAL;
    if (rc == EXIT_OK)
        rc = exchange(c, cl, &w, &r, op, c->secret ? pw : NULL, &t);
    OPENSSL_cleanse(pw, sizeof pw);
    if (c->mutation && cl && rc != EXIT_NETWORK) { /* answered: nothing left pending */
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/auth-admin.pending", w.dir);
        (void)unlink(path);
    }
    if (rc == EXIT_OK)
        json ? print_json(c, &t) : print_text(c, &t);
    table_free(&t);
    cn_sau2_client_free(cl);
    return rc;
}

int cn__repo_authadmin(int argc, char **argv)
{
    const char *group = argc > 2 ? argv[2] : "";
    const char *sub = argc > 3 && argv[3][0] != '-' ? argv[3] : "";
    const admin_cmd_t *c = NULL;
    for (size_t i = 0; i < NCMDS && !c; i++)
        if (!strcmp(cmds[i].group, group) && (!strcmp(cmds[i].sub, sub) || !*cmds[i].sub))
            c = &cmds[i];
    /* The group alone lists it (`cairn repo auth users`). */
    for (size_t i = 0; i < NCMDS && !c && !*sub; i++)
        if (!strcmp(cmds[i].group, group) && !strcmp(cmds[i].sub, "list"))
            c = &cmds[i];
    if (!c) {
        usage();
        return EXIT_USAGE;
    }
    return run(c, argc, argv, 3 + (*c->sub && *sub));
}
