/* Console API: blob namespaces — the namespaces the caller is granted (for
 * an admin: every namespace granted or holding members) with their member
 * counts and bytes (the blobs service's usage totals), the stat of a digest in
 * one, and (admin) the namespace grants.  Every read is the blobs-service
 * call the blob operations make, with the session's principal, so the
 * namespace grants decide exactly as there; the grants are identity's.
 * A namespace may hold '/', so NS is one to three path segments. */
#include "console_data.h"

#include "cairn/blobs.h"
#include "cairn/crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Joins seg[1 .. nseg - tail) with '/' into ns; false after answering 400. */
static bool ns_of(cn_console_call_t *c, size_t tail, char ns[CN_NAMESPACE_MAX + 1])
{
    size_t n = 0;
    for (size_t i = 1; i + tail < c->nseg; i++) {
        size_t l = strlen(c->seg[i]);
        if (n + l + 1 > CN_NAMESPACE_MAX + 1) {
            n = 0;
            break;
        }
        if (i > 1)
            ns[n++] = '/';
        memcpy(ns + n, c->seg[i], l);
        n += l;
    }
    ns[n] = 0;
    if (n == 0 || !cn_blobs_ns_valid(ns, n)) {
        cn__console_error(c, 400, "BadRequest", "not a namespace name");
        return false;
    }
    return true;
}

typedef struct ns_walk {
    json_t *names;   /* object used as a set: namespace → true */
    json_t *figures; /* namespace → {"members", "bytes"} */
    const cn_principal_t *who;
    bool admin;
} ns_walk_t;

static cn_err_t ns_one(void *arg, const cn_ns_grant_t *g)
{
    ns_walk_t *w = arg;
    if (w->admin || strcmp(g->account, w->who->account) == 0)
        return json_object_set_new(w->names, g->ns, json_true()) == 0 ? CN_OK : -ENOMEM;
    return CN_OK;
}

/* cn_blobs_usage's callback: files ns's figures in w->figures (and, for an
 * admin, ns among the names listed). */
static cn_err_t usage_one(void *arg, const char *ns, int64_t members, int64_t bytes)
{
    ns_walk_t *w = arg;
    json_t *f = json_pack("{s:I,s:I}", "members", (json_int_t)members, "bytes", (json_int_t)bytes);
    if (!f || json_object_set_new(w->figures, ns, f) != 0)
        return -ENOMEM;
    if (w->admin && json_object_set_new(w->names, ns, json_true()) != 0)
        return -ENOMEM;
    return CN_OK;
}

/* true when the caller may read ns (a one-digest page of it lists). */
static bool ns_readable(cn_console_call_t *c, const char *ns)
{
    cn_blobs_caller_t who = { .principal = c->who };
    cn_digest_t one;
    size_t n = 0;
    bool more = false;
    return cn_blobs_list(cn__console_cfg(c->con)->blobs, &who, ns, NULL, 1, &one, &n, &more) ==
           CN_OK;
}

/* GET namespaces: {"namespaces":[{"name","members","bytes"}]}: the
 * namespaces the caller is granted and, for an admin, every namespace with
 * members; members and bytes (exact, cn_blobs_usage) are omitted where the
 * caller may not read. */
static int namespaces_list(cn_console_call_t *c)
{
    cn_blobs_t *blobs = cn__console_cfg(c->con)->blobs;
    ns_walk_t w = { .names = json_object(),
                    .figures = json_object(),
                    .who = c->who,
                    .admin = (c->who->perms & CN_PERM_ADMIN) != 0 };
    json_t *arr = json_array();
    cn_err_t e = w.names && w.figures && arr ? CN_OK : -ENOMEM;
    if (e == CN_OK)
        e = cn_identity_grant_list(cn__console_cfg(c->con)->identity, NULL, ns_one, &w);
    cn_blobs_caller_t who = { .principal = c->who };
    if (e == CN_OK && blobs)
        e = cn_blobs_usage(blobs, &who, usage_one, &w);
    const char *ns;
    json_t *v;
    json_object_foreach(e == CN_OK ? w.names : NULL, ns, v)
    {
        json_t *o = json_pack("{s:s}", "name", ns);
        json_t *f = json_object_get(w.figures, ns);
        if (o && f)
            json_object_update(o, f);
        else if (o && blobs && ns_readable(c, ns))
            json_object_update_new(o, json_pack("{s:i,s:i}", "members", 0, "bytes", 0));
        if (cn__console_append(arr, o) < 0)
            e = -ENOMEM;
    }
    json_decref(w.names);
    json_decref(w.figures);
    return cn__console_list_answer(c, e, "namespaces", arr);
}

/* GET namespaces/NS/blobs/DIGEST: blobs/stat. */
static int blob_stat(cn_console_call_t *c)
{
    char ns[CN_NAMESPACE_MAX + 1];
    cn_blobs_t *b = cn__console_cfg(c->con)->blobs;
    if (!b)
        return cn__console_error(c, 404, "NotFound", "this node serves no blobs");
    if (!ns_of(c, 2, ns))
        return 0;
    const char *hex = c->seg[c->nseg - 1];
    cn_digest_t d;
    if (cn_digest_parse(hex, strlen(hex), &d) != CN_OK)
        return cn__console_error(c, 400, "BadRequest", "a digest is 64 hex digits");
    cn_blobs_caller_t who = { .principal = c->who };
    uint64_t len = 0;
    cn_err_t e = cn_blobs_stat(b, &who, ns, &d, &len);
    if (e == CN_E_DENIED)
        return cn__console_error(c, 403, "AccessDenied", "no read grant on this namespace");
    if (e < 0 && e != CN_E_NOT_FOUND)
        return cn__console_err(c, e);
    char dh[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&d, dh);
    json_t *doc = json_pack("{s:s,s:b}", "digest", dh, "present", e == CN_OK);
    if (doc && e == CN_OK)
        json_object_set_new(doc, "size", json_integer((json_int_t)len));
    return cn__console_json(c, 200, doc);
}

static json_t *ns_actions(uint32_t a)
{
    json_t *arr = json_array();
    if (arr && (a & CN_NS_READ))
        json_array_append_new(arr, json_string("read"));
    if (arr && (a & CN_NS_WRITE))
        json_array_append_new(arr, json_string("write"));
    return arr;
}

static cn_err_t grant_one(void *arg, const cn_ns_grant_t *g)
{
    json_t *o = json_pack("{s:s,s:o}", "account", g->account, "perms", ns_actions(g->actions));
    return cn__console_append(arg, o);
}

/* GET namespaces/NS/grants (admin). */
static int grants_list(cn_console_call_t *c)
{
    char ns[CN_NAMESPACE_MAX + 1];
    if (!ns_of(c, 1, ns))
        return 0;
    json_t *arr = json_array();
    cn_err_t e = arr ? cn_identity_grant_list(cn__console_cfg(c->con)->identity, ns, grant_one, arr)
                     : -ENOMEM;
    return cn__console_list_answer(c, e, "grants", arr);
}

/* POST namespaces/NS/grants {"account","perms":["read","write"]} (admin). */
static int grants_add(cn_console_call_t *c)
{
    char ns[CN_NAMESPACE_MAX + 1];
    if (!ns_of(c, 1, ns))
        return 0;
    const char *acct = cn__console_body_str(c, "account");
    json_t *perms = c->body ? json_object_get(c->body, "perms") : NULL;
    uint32_t actions = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_is_array(perms) ? perms : NULL, i, v)
    {
        uint32_t a;
        if (!json_is_string(v) || cn_ns_action_parse(json_string_value(v), &a) != CN_OK)
            return cn__console_error(c, 400, "BadRequest", "perms are \"read\" and \"write\"");
        actions |= a;
    }
    if (!acct || !actions)
        return cn__console_error(c, 400, "BadRequest", "account and perms are required");
    cn_err_t e = cn_identity_grant(cn__console_cfg(c->con)->identity, ns, acct, actions);
    return cn__console_done(c, e, "no such account");
}

/* DELETE namespaces/NS/grants/ACCOUNT (admin): every action it holds. */
static int grants_remove(cn_console_call_t *c)
{
    char ns[CN_NAMESPACE_MAX + 1];
    if (!ns_of(c, 2, ns))
        return 0;
    cn_err_t e =
        cn_identity_revoke(cn__console_cfg(c->con)->identity, ns, c->seg[c->nseg - 1], CN_NS_ALL);
    return cn__console_done(c, e, "that account holds no grant there");
}

#define A CN_PERM_ADMIN
const cn_console_op_t cn__console_blobs_ops[] = {
    { CN_HTTP_GET, "namespaces", namespaces_list, 0 },
    { CN_HTTP_GET, "namespaces/*/blobs/*", blob_stat, 0 },
    { CN_HTTP_GET, "namespaces/*/*/blobs/*", blob_stat, 0 },
    { CN_HTTP_GET, "namespaces/*/*/*/blobs/*", blob_stat, 0 },
    { CN_HTTP_GET, "namespaces/*/grants", grants_list, A },
    { CN_HTTP_GET, "namespaces/*/*/grants", grants_list, A },
    { CN_HTTP_GET, "namespaces/*/*/*/grants", grants_list, A },
    { CN_HTTP_POST, "namespaces/*/grants", grants_add, A },
    { CN_HTTP_POST, "namespaces/*/*/grants", grants_add, A },
    { CN_HTTP_POST, "namespaces/*/*/*/grants", grants_add, A },
    { CN_HTTP_DELETE, "namespaces/*/grants/*", grants_remove, A },
    { CN_HTTP_DELETE, "namespaces/*/*/grants/*", grants_remove, A },
    { CN_HTTP_DELETE, "namespaces/*/*/*/grants/*", grants_remove, A },
    { 0, NULL, NULL, 0 },
};
#undef A
