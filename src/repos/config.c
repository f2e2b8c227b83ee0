/* The `.scribe/config.toml` schema layer (include/cairn/repos_config.h;
 * the rules are docs/repo-config.md).
 *
 * The text is parsed whole by util's strict TOML 1.0.0 parser, then every
 * top-level key is checked against the schema; the first broken rule refuses
 * the whole config with its position.  Nothing here reads `profiles` beyond
 * its being a table.  Pure: no files, no clocks, no global state. */
#include "cairn/repos_config.h"
#include "cairn/repos_model.h"
#include "cairn/toml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 1024
#define MAX_PATTERN 4096
#define MAX_MOUNTS 64
#define MAX_MOUNT_NAME 64

typedef struct {
    char *err;
    size_t errlen;
} ctx_t;

/* Refuses at v's position (line 1, column 1 when v is NULL). */
static cn_err_t refuse(ctx_t *c, const cn_toml_val_t *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cn_err_t refuse(ctx_t *c, const cn_toml_val_t *v, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(c->err, c->errlen, "line %d, column %d: %s", v ? cn_toml_line(v) : 1,
                 v ? cn_toml_column(v) : 1, msg);
    }
    return CN_E_INVALID;
}

/* A string value with no NUL in it; NULL otherwise. */
static const char *plain_str(const cn_toml_val_t *v)
{
    size_t n;
    const char *s = v ? cn_toml_strn(v, &n) : NULL;
    return s && strlen(s) == n ? s : NULL;
}

/* The key of a table entry when it holds no NUL (an escape can put one
 * there); "" otherwise, which no schema name equals. */
static const char *key_of(const cn_toml_val_t *v)
{
    size_t n;
    const char *k = cn_toml_keyn(v, &n);
    return strlen(k) == n ? k : "";
}

/* ---- globs ---------------------------------------------------------------------------- */
/* One segment's pattern: `*` any run of characters, `?` one character,
 * anything else itself; never `**` here. */
static bool seg_match(const char *p, size_t pn, const char *s, size_t sn)
{
    size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < sn) {
        if (pi < pn && p[pi] == '*') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < pn && (p[pi] == '?' || p[pi] == s[si])) {
            if (p[pi] == '?') /* one character: a whole UTF-8 sequence */
                while (si + 1 < sn && ((unsigned char)s[si + 1] & 0xc0) == 0x80)
                    si++;
            pi++;
            si++;
            continue;
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        si = ++star_s;
        while (si < sn && ((unsigned char)s[si] & 0xc0) == 0x80)
            si = ++star_s;
    }
    while (pi < pn && p[pi] == '*')
        pi++;
    return pi == pn;
}

static size_t seg_len(const char *s)
{
    return strcspn(s, "/");
}

static const char *seg_next(const char *s)
{
    s += seg_len(s);
    return *s == '/' ? s + 1 : NULL;
}

bool cn_repo_glob_match(const char *pattern, const char *path)
{
    /* The wildcard algorithm over segments: every segment of the pattern but
     * `**` consumes exactly one segment of the path, so one backtrack point
     * (the last `**`) is enough. */
    const char *p = pattern, *s = path, *star_p = NULL, *star_s = NULL;
    while (s) {
        if (p && seg_len(p) == 2 && p[0] == '*' && p[1] == '*') {
            star_p = p = seg_next(p);
            star_s = s;
            continue;
        }
        if (p && seg_match(p, seg_len(p), s, seg_len(s))) {
            p = seg_next(p);
            s = seg_next(s);
            continue;
        }
        if (!star_s)
            return false;
        p = star_p;
        s = star_s = seg_next(star_s);
    }
    while (p && seg_len(p) == 2 && p[0] == '*' && p[1] == '*')
        p = seg_next(p);
    return p == NULL;
}

/* The glob grammar: segments of 1+ bytes split by '/', none "." or "..",
 * `**` only as a whole segment, no `[ ] { } \` and no control character. */
static const char *glob_invalid(const char *g)
{
    size_t n = strlen(g);
    if (n == 0 || n > MAX_PATTERN)
        return "a pattern has 1 to 4096 bytes";
    for (const char *s = g; s; s = seg_next(s)) {
        size_t l = seg_len(s);
        if (l == 0)
            return "a pattern has no empty segment (no leading, trailing or double '/')";
        if ((l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
            return "a pattern has no '.' or '..' segment";
        for (size_t i = 0; i < l; i++) {
            unsigned char ch = (unsigned char)s[i];
            if (ch < 0x20 || ch == 0x7f || strchr("[]{}\\", ch))
                return "a pattern holds no control character and none of [ ] { } \\";
            if (ch == '*' && i + 1 < l && s[i + 1] == '*' && l != 2)
                return "'**' must be a whole segment";
        }
    }
    return NULL;
}

/* ---- [locks] -------------------------------------------------------------------------- */
static cn_err_t one_rule(ctx_t *c, const cn_toml_val_t *r, cn_repo_lock_rule_t *out)
{
    if (cn_toml_type(r) != CN_TOML_TABLE)
        return refuse(c, r, "each of locks.rules is a table { pattern = \"GLOB\", mode = ... }");
    for (size_t i = 0; i < cn_toml_len(r); i++) {
        const char *k = key_of(cn_toml_at(r, i));
        if (strcmp(k, "pattern") != 0 && strcmp(k, "mode") != 0)
            return refuse(c, cn_toml_at(r, i), "a lock rule has only pattern and mode, not '%s'",
                          k);
    }
    const cn_toml_val_t *pv = cn_toml_get(r, "pattern"), *mv = cn_toml_get(r, "mode");
    const char *pattern = plain_str(pv), *mode = plain_str(mv), *why;
    if (!pattern)
        return refuse(c, pv ? pv : r, "a lock rule needs pattern, a string");
    if ((why = glob_invalid(pattern)))
        return refuse(c, pv, "invalid pattern: %s", why);
    if (!mode || (strcmp(mode, "required") != 0 && strcmp(mode, "none") != 0))
        return refuse(c, mv ? mv : r, "a lock rule needs mode = \"required\" or \"none\"");
    out->mode = strcmp(mode, "required") == 0 ? CN_LOCK_MODE_REQUIRED : CN_LOCK_MODE_NONE;
    out->pattern = strdup(pattern);
    return out->pattern ? CN_OK : -ENOMEM;
}

static cn_err_t locks(ctx_t *c, const cn_toml_val_t *l, cn_repo_config_t *out)
{
    if (cn_toml_type(l) != CN_TOML_TABLE)
        return refuse(c, l, "locks is a table");
    for (size_t i = 0; i < cn_toml_len(l); i++)
        if (strcmp(key_of(cn_toml_at(l, i)), "rules") != 0)
            return refuse(c, cn_toml_at(l, i), "[locks] has only rules, not '%s'",
                          cn_toml_key(cn_toml_at(l, i)));
    const cn_toml_val_t *rules = cn_toml_get(l, "rules");
    if (!rules)
        return CN_OK;
    if (cn_toml_type(rules) != CN_TOML_ARRAY)
        return refuse(c, rules, "locks.rules is an array of tables");
    size_t n = cn_toml_len(rules);
    if (n > MAX_RULES)
        return refuse(c, rules, "locks.rules has at most %d rules", MAX_RULES);
    out->rules = calloc(n ? n : 1, sizeof *out->rules);
    if (!out->rules)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        CN_TRY(one_rule(c, cn_toml_at(rules, i), &out->rules[i]));
        out->nrules++;
    }
    return CN_OK;
}

/* ---- [mounts] ------------------------------------------------------------------------- */
static bool hex32(const char *s, uint8_t out[16])
{
    if (!s || strlen(s) != 32)
        return false;
    for (int i = 0; i < 32; i++) {
        char h = s[i];
        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        if (v < 0)
            return false;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return true;
}

/* A canonical u64 decimal: no sign, no leading zero, at most UINT64_MAX. */
static bool u64_decimal(const char *s, uint64_t *out)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static cn_err_t one_mount(ctx_t *c, const cn_toml_val_t *m, cn_repo_mount_t *out)
{
    const char *name = cn_toml_key(m);
    size_t nl;
    cn_toml_keyn(m, &nl);
    if (nl == 0 || nl > MAX_MOUNT_NAME || strlen(name) != nl)
        return refuse(c, m, "a mount name has 1 to %d bytes", MAX_MOUNT_NAME);
    if (cn_toml_type(m) != CN_TOML_TABLE)
        return refuse(c, m, "mounts.%s is a table {path, repository, branch, revision}", name);
    static const char *const keys[] = { "path", "repository", "branch", "revision" };
    for (size_t i = 0; i < cn_toml_len(m); i++) {
        const char *k = key_of(cn_toml_at(m, i));
        bool known = false;
        for (size_t j = 0; j < 4; j++)
            known |= strcmp(k, keys[j]) == 0;
        if (!known)
            return refuse(c, cn_toml_at(m, i),
                          "a mount has only path, repository, branch and revision, not '%s'", k);
    }
    for (size_t j = 0; j < 4; j++)
        if (!plain_str(cn_toml_get(m, keys[j])))
            return refuse(c, m, "mounts.%s needs %s, a string", name, keys[j]);
    const cn_toml_val_t *pv = cn_toml_get(m, "path");
    const char *path = plain_str(pv);
    if (cn_repos_path_check((const uint8_t *)path, strlen(path)) != CN_OK)
        return refuse(c, pv, "mounts.%s.path is not a canonical repository path", name);
    if (!hex32(plain_str(cn_toml_get(m, "repository")), out->repository))
        return refuse(c, cn_toml_get(m, "repository"),
                      "mounts.%s.repository is an id: 32 lowercase hex digits", name);
    if (!hex32(plain_str(cn_toml_get(m, "branch")), out->branch))
        return refuse(c, cn_toml_get(m, "branch"),
                      "mounts.%s.branch is an id: 32 lowercase hex digits", name);
    if (!u64_decimal(plain_str(cn_toml_get(m, "revision")), &out->revision))
        return refuse(c, cn_toml_get(m, "revision"),
                      "mounts.%s.revision is a canonical decimal u64 string", name);
    out->name = strdup(name);
    out->path = strdup(path);
    return out->name && out->path ? CN_OK : -ENOMEM;
}

static int mount_cmp(const void *a, const void *b)
{
    return strcmp(((const cn_repo_mount_t *)a)->name, ((const cn_repo_mount_t *)b)->name);
}

static cn_err_t mounts(ctx_t *c, const cn_toml_val_t *ms, cn_repo_config_t *out)
{
    if (cn_toml_type(ms) != CN_TOML_TABLE)
        return refuse(c, ms, "mounts is a table of [mounts.NAME] tables");
    size_t n = cn_toml_len(ms);
    if (n > MAX_MOUNTS)
        return refuse(c, ms, "at most %d mounts", MAX_MOUNTS);
    out->mounts = calloc(n ? n : 1, sizeof *out->mounts);
    if (!out->mounts)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        cn_err_t e = one_mount(c, cn_toml_at(ms, i), &out->mounts[i]);
        out->nmounts++; /* freed by the caller on failure */
        if (e)
            return e;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->mounts[j].path, out->mounts[i].path) == 0)
                return refuse(c, cn_toml_at(ms, i), "mounts %s and %s have the same path",
                              out->mounts[j].name, out->mounts[i].name);
    }
    qsort(out->mounts, out->nmounts, sizeof *out->mounts, mount_cmp);
    return CN_OK;
}

/* ---- the whole config ------------------------------------------------------------------ */
static cn_err_t schema(ctx_t *c, const cn_toml_val_t *root, cn_repo_config_t *out)
{
    for (size_t i = 0; i < cn_toml_len(root); i++) {
        const cn_toml_val_t *v = cn_toml_at(root, i);
        const char *k = key_of(v);
        if (strcmp(k, "version") && strcmp(k, "locks") && strcmp(k, "profiles") &&
            strcmp(k, "mounts"))
            return refuse(c, v,
                          "unknown top-level key '%s' (only version, locks, profiles, mounts)", k);
    }
    const cn_toml_val_t *ver = cn_toml_get(root, "version");
    if (!ver)
        return refuse(c, NULL, "version = 1 is required");
    if (cn_toml_int(ver, &out->version) != CN_OK || out->version != 1)
        return refuse(c, ver, "version must be the integer 1");
    const cn_toml_val_t *prof = cn_toml_get(root, "profiles");
    if (prof && cn_toml_type(prof) != CN_TOML_TABLE)
        return refuse(c, prof, "profiles is a table");
    const cn_toml_val_t *l = cn_toml_get(root, "locks"), *m = cn_toml_get(root, "mounts");
    if (l)
        CN_TRY(locks(c, l, out));
    if (m)
        CN_TRY(mounts(c, m, out));
    return CN_OK;
}

cn_err_t cn_repo_config_parse(const char *text, size_t len, cn_repo_config_t *out, char *err,
                              size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = 0;
    ctx_t c = { err, errlen };
    if (len > CN_REPO_CONFIG_MAX)
        return refuse(&c, NULL, "the config is larger than %d bytes", CN_REPO_CONFIG_MAX);
    cn_toml_t *doc = NULL;
    cn_err_t e = cn_toml_parse(text, len, &doc, err, errlen);
    if (e == CN_E_TOO_LARGE)
        e = CN_E_INVALID;
    if (e == CN_OK)
        e = schema(&c, cn_toml_root(doc), out);
    cn_toml_free(doc);
    if (e != CN_OK) {
        if (e == -ENOMEM && err && errlen)
            snprintf(err, errlen, "out of memory");
        cn_repo_config_free(out);
        out->version = 0;
    }
    return e;
}

void cn_repo_config_free(cn_repo_config_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nrules; i++)
        free(c->rules[i].pattern);
    for (size_t i = 0; i < c->nmounts; i++) {
        free(c->mounts[i].name);
        free(c->mounts[i].path);
    }
    free(c->rules);
    free(c->mounts);
    memset(c, 0, sizeof *c);
}

bool cn_repo_config_rules_equal(const cn_repo_config_t *a, const cn_repo_config_t *b)
{
    size_t na = a ? a->nrules : 0, nb = b ? b->nrules : 0;
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (a->rules[i].mode != b->rules[i].mode ||
            strcmp(a->rules[i].pattern, b->rules[i].pattern) != 0)
            return false;
    return true;
}

const cn_repo_lock_rule_t *cn_repo_config_match(const cn_repo_config_t *c, const char *path)
{
    for (size_t i = 0; c && i < c->nrules; i++)
        if (cn_repo_glob_match(c->rules[i].pattern, path))
            return &c->rules[i];
    return NULL;
}
