/* The gateway's configuration file and its repository-name resolver (pure:
 * no I/O beyond reading the file).  Never accepts a configuration it would
 * have to half-understand: every key is known, every rule of
 * docs/protocol/scribe-gateway.md is checked before a listener starts. */
#include "gw_int.h"

#include "cairn/net.h"
#include "cairn/toml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static cn_err_t bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cn_err_t bad(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return CN_E_INVALID;
}

bool cn_gw_label_valid(const char *s, size_t n)
{
    return n <= CN_SCRIBE_MAX_NAMESPACE &&
           cn_scribe_namespace_ok((cn_scribe_str_t){ (const uint8_t *)s, (uint32_t)n });
}

/* A string key of a table: absent (NULL, 0), or its bytes. */
static cn_err_t str_key(const cn_toml_val_t *t, const char *key, const char **out, size_t *len,
                        char *err, size_t errlen)
{
    const cn_toml_val_t *v = cn_toml_get(t, key);
    *out = NULL;
    *len = 0;
    if (!v)
        return CN_OK;
    *out = cn_toml_strn(v, len);
    if (!*out)
        return bad(err, errlen, "line %d: %s must be a string", cn_toml_line(v), key);
    return CN_OK;
}

/* One [[storage]] table into s. */
static cn_err_t parse_server(const cn_toml_val_t *t, cn_gw_server_t *s, char *err, size_t errlen)
{
    if (cn_toml_type(t) != CN_TOML_TABLE)
        return bad(err, errlen, "line %d: storage must be an array of tables ([[storage]])",
                   cn_toml_line(t));
    for (size_t i = 0; i < cn_toml_len(t); i++) {
        const cn_toml_val_t *e = cn_toml_at(t, i);
        const char *k = cn_toml_key(e);
        if (!k || (strcmp(k, "address") && strcmp(k, "namespace")))
            return bad(err, errlen, "line %d: unknown key '%s' in [[storage]]", cn_toml_line(e),
                       k ? k : "?");
    }
    const char *addr, *ns;
    size_t alen, nlen;
    CN_TRY(str_key(t, "address", &addr, &alen, err, errlen));
    CN_TRY(str_key(t, "namespace", &ns, &nlen, err, errlen));
    if (!addr)
        return bad(err, errlen, "line %d: [[storage]] needs an address", cn_toml_line(t));
    s->tls = strncmp(addr, "scribes://", 10) == 0;
    const char *hp = s->tls ? addr + 10 : addr;
    size_t hlen = alen - (size_t)(hp - addr);
    struct sockaddr_storage ss;
    socklen_t sl;
    if (hlen == 0 || hlen >= sizeof s->address || memchr(hp, 0, hlen) ||
        cn_net_addr_parse(hp, &ss, &sl) < 0)
        return bad(err, errlen,
                   "line %d: storage address '%.*s' is not host:port or scribes://host:port",
                   cn_toml_line(t), (int)(alen > 80 ? 80 : alen), addr);
    memcpy(s->address, hp, hlen);
    s->address[hlen] = 0;
    if (nlen && memchr(ns, 0, nlen))
        nlen = CN_SCRIBE_MAX_NAMESPACE + 1; /* refused below */
    if (!s->tls && nlen)
        return bad(err, errlen,
                   "line %d: plaintext storage %s serves no namespace: its label must be \"\"",
                   cn_toml_line(t), s->address);
    if (s->tls && !cn_gw_label_valid(ns ? ns : "", nlen))
        return bad(err, errlen,
                   "line %d: storage %s: the namespace must be 1..64 of A-Z a-z 0-9 - _ .",
                   cn_toml_line(t), s->address);
    if (nlen)
        memcpy(s->ns, ns, nlen);
    s->ns[nlen] = 0;
    return CN_OK;
}

/* The distinct labels, the default, and the rules across servers. */
static cn_err_t check_servers(cn_gw_config_t *c, char *err, size_t errlen)
{
    c->tls = c->servers[0].tls;
    for (size_t i = 0; i < c->n; i++) {
        const cn_gw_server_t *s = &c->servers[i];
        if (s->tls != c->tls)
            return bad(err, errlen,
                       "storage servers mix plaintext and scribes:// (TLS): a gateway speaks "
                       "one protocol to all of them");
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->servers[j].address, s->address))
                return bad(err, errlen, "storage %s is configured twice", s->address);
        for (size_t j = 0; j < c->nns; j++)
            seen = seen || !strcmp(c->ns[j], s->ns);
        if (!seen)
            c->ns[c->nns++] = s->ns;
    }
    if (c->storage_ca[0] && !c->tls)
        return bad(err, errlen,
                   "storage_ca is for scribes:// storage servers; these are plaintext");
    if (!c->has_default)
        return CN_OK;
    for (size_t j = 0; j < c->nns; j++)
        if (!strcmp(c->ns[j], c->default_ns))
            return CN_OK;
    return bad(err, errlen, "default_namespace '%s' is not the namespace of any storage server",
               c->default_ns);
}

/* inventory_interval_ms: 100 ms to a day between inventory walks
 * (gw_inventory.c); 60 s when absent. */
static cn_err_t inventory_key(const cn_toml_val_t *root, cn_gw_config_t *c, char *err,
                              size_t errlen)
{
    const cn_toml_val_t *v = cn_toml_get(root, "inventory_interval_ms");
    int64_t ms = CN__GW_INV_DEFAULT_MS;
    if (v && (cn_toml_int(v, &ms) < 0 || ms < 100 || ms > 86400000))
        return bad(err, errlen, "line %d: inventory_interval_ms must be an integer 100..86400000",
                   cn_toml_line(v));
    c->inventory_ms = (uint32_t)ms;
    return CN_OK;
}

/* upstream_reuse_ms: 0 (never) to an hour — how long after its hello a
 * user's upstream session may serve another client connection of the same
 * certificate (gw_up.c); 30 s when absent. */
static cn_err_t reuse_key(const cn_toml_val_t *root, cn_gw_config_t *c, char *err, size_t errlen)
{
    const cn_toml_val_t *v = cn_toml_get(root, "upstream_reuse_ms");
    int64_t ms = CN__GW_REUSE_DEFAULT_MS;
    if (v && (cn_toml_int(v, &ms) < 0 || ms < 0 || ms > 3600000))
        return bad(err, errlen, "line %d: upstream_reuse_ms must be an integer 0..3600000",
                   cn_toml_line(v));
    c->reuse_ms = (uint32_t)ms;
    return CN_OK;
}

static cn_err_t parse_root(const cn_toml_val_t *root, cn_gw_config_t *c, char *err, size_t errlen)
{
    const cn_toml_val_t *storage = NULL;
    for (size_t i = 0; i < cn_toml_len(root); i++) {
        const cn_toml_val_t *e = cn_toml_at(root, i);
        const char *k = cn_toml_key(e);
        if (k && !strcmp(k, "storage"))
            storage = e;
        else if (!k || (strcmp(k, "default_namespace") && strcmp(k, "inventory_interval_ms") &&
                        strcmp(k, "storage_ca") && strcmp(k, "upstream_reuse_ms")))
            return bad(err, errlen,
                       "line %d: unknown key '%s' (want default_namespace, "
                       "inventory_interval_ms, storage_ca, upstream_reuse_ms and [[storage]] "
                       "tables)",
                       cn_toml_line(e), k ? k : "?");
    }
    CN_TRY(inventory_key(root, c, err, errlen));
    CN_TRY(reuse_key(root, c, err, errlen));
    const char *ca;
    size_t calen;
    CN_TRY(str_key(root, "storage_ca", &ca, &calen, err, errlen));
    if (ca && (!calen || calen >= sizeof c->storage_ca || memchr(ca, 0, calen)))
        return bad(err, errlen, "storage_ca must name a file (a path of 1..%zu bytes)",
                   sizeof c->storage_ca - 1);
    if (ca)
        memcpy(c->storage_ca, ca, calen);
    const char *def;
    size_t dlen;
    CN_TRY(str_key(root, "default_namespace", &def, &dlen, err, errlen));
    if (def && !cn_gw_label_valid(def, dlen))
        return bad(err, errlen, "default_namespace must be 1..64 of A-Z a-z 0-9 - _ .");
    if (def) {
        c->has_default = true;
        memcpy(c->default_ns, def, dlen);
        c->default_ns[dlen] = 0;
    }
    size_t n = storage ? cn_toml_len(storage) : 0;
    if (storage && cn_toml_type(storage) != CN_TOML_ARRAY)
        return bad(err, errlen, "line %d: storage must be an array of tables ([[storage]])",
                   cn_toml_line(storage));
    if (n < 1 || n > CN_GW_MAX_SERVERS)
        return bad(err, errlen, "a gateway needs 1 to %d [[storage]] servers, not %zu",
                   CN_GW_MAX_SERVERS, n);
    c->n = n;
    for (size_t i = 0; i < n; i++)
        CN_TRY(parse_server(cn_toml_at(storage, i), &c->servers[i], err, errlen));
    return check_servers(c, err, errlen);
}

/* The configuration of a parsed document (e: the parser's result, terr
 * its message); frees doc. */
static cn_err_t from_doc(cn_err_t e, cn_toml_t *doc, const char *terr, cn_gw_config_t *out,
                         char *err, size_t errlen)
{
    if (e < 0) {
        bad(err, errlen, "%s", terr[0] ? terr : cn_strerror(e));
        return e == -ENOMEM ? e : CN_E_INVALID;
    }
    e = parse_root(cn_toml_root(doc), out, err, errlen);
    cn_toml_free(doc);
    if (e < 0)
        memset(out, 0, sizeof *out);
    return e;
}

cn_err_t cn_gw_config_parse(const char *text, size_t len, cn_gw_config_t *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = 0;
    cn_toml_t *doc = NULL;
    char terr[256] = "";
    cn_err_t e = cn_toml_parse(text, len, &doc, terr, sizeof terr);
    return from_doc(e, doc, terr, out, err, errlen);
}

cn_err_t cn_gw_config_load(const char *path, cn_gw_config_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = 0;
    cn_toml_t *doc = NULL;
    char terr[256] = "";
    cn_err_t e = cn_toml_load(path, &doc, terr, sizeof terr);
    return from_doc(e, doc, terr, out, err, errlen);
}

/* ---- names ---------------------------------------------------------------------------------- */
static const char *served(const cn_gw_config_t *cfg, const char *s, size_t n)
{
    for (size_t i = 0; i < cfg->nns; i++)
        if (strlen(cfg->ns[i]) == n && !memcmp(cfg->ns[i], s, n))
            return cfg->ns[i];
    return NULL;
}

cn_err_t cn_gw_name_resolve(const cn_gw_config_t *cfg, const char *name, size_t len,
                            const char **ns, const char **sname, size_t *slen, char *msg,
                            size_t cap)
{
    *ns = NULL;
    *sname = NULL;
    *slen = 0;
    cn_scribe_name_t nm;
    if (len < 1 || len > CN_SCRIBE_MAX_REPO_NAME ||
        cn_scribe_name_split((cn_scribe_str_t){ (const uint8_t *)name, (uint32_t)len }, &nm) < 0)
        return bad(msg, cap,
                   "not a repository name: <namespace>/<name> or <name>, the name 1 to "
                   "%d bytes without '/' or control characters",
                   CN_SCRIBE_MAX_STORAGE_NAME);
    if (nm.ns.len) {
        if (!(*ns = served(cfg, (const char *)nm.ns.p, nm.ns.len)))
            return bad(msg, cap,
                       "'%.*s' is not a namespace of this gateway; name the "
                       "repository as <namespace>/<name>",
                       (int)nm.ns.len, (const char *)nm.ns.p);
    } else if (cfg->nns == 1) {
        *ns = cfg->ns[0];
    } else if (cfg->has_default) {
        *ns = served(cfg, cfg->default_ns, strlen(cfg->default_ns));
    }
    if (!*ns)
        return bad(msg, cap,
                   "this gateway serves several namespaces: name the repository as "
                   "<namespace>/<name>");
    *sname = (const char *)nm.name.p;
    *slen = nm.name.len;
    return CN_OK;
}
