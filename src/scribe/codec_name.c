/* Repository names as a client and a gateway read them
 * (docs/protocol/scribe-gateway.md, "Names"): namespace labels, storage
 * names, the wire name `[NS/]NAME` and the command line's REPO
 * `[scribe[s]://]HOST[:PORT]/[NS/]NAME`.  Pure: no allocation, every result
 * a view into the caller's bytes.  The gateway and the storage-side
 * handlers judge names here and nowhere else. */
#include "codec_int.h"

#include <string.h>

bool cn_scribe_namespace_ok(cn_scribe_str_t s)
{
    if (s.len < 1 || s.len > CN_SCRIBE_MAX_NAMESPACE)
        return false;
    for (uint32_t i = 0; i < s.len; i++) {
        uint8_t ch = s.p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.'))
            return false;
    }
    return true;
}

/* The repos service's rule (cn_repos_create), restated so that a gateway
 * refuses a name before it picks a server for it. */
bool cn_scribe_storage_name_ok(cn_scribe_str_t s)
{
    if (s.len < 1 || s.len > CN_SCRIBE_MAX_STORAGE_NAME || !cn_utf8_valid(s.p, s.len))
        return false;
    if ((s.len == 1 && s.p[0] == '.') || (s.len == 2 && s.p[0] == '.' && s.p[1] == '.'))
        return false;
    for (uint32_t i = 0; i < s.len; i++)
        if (s.p[i] == '/' || s.p[i] < 0x20 || s.p[i] == 0x7f)
            return false;
    return true;
}

cn_err_t cn_scribe_name_split(cn_scribe_str_t wire, cn_scribe_name_t *out)
{
    memset(out, 0, sizeof *out);
    if (wire.len > CN_SCRIBE_MAX_REPO_NAME || (wire.len && !wire.p))
        return CN_E_INVALID;
    const uint8_t *slash = wire.len ? memchr(wire.p, '/', wire.len) : NULL;
    cn_scribe_str_t ns = { NULL, 0 }, name = wire;
    if (slash) {
        ns.p = wire.p;
        ns.len = (uint32_t)(slash - wire.p);
        name.p = slash + 1;
        name.len = wire.len - ns.len - 1;
        if (!cn_scribe_namespace_ok(ns))
            return CN_E_INVALID;
    }
    if (!cn_scribe_storage_name_ok(name)) /* a second '/' fails here */
        return CN_E_INVALID;
    out->ns = ns;
    out->name = name;
    return CN_OK;
}

/* "scribe://" or "scribes://" at the start of s: its length, and *tls. */
static uint32_t scheme_len(cn_scribe_str_t s, bool *tls)
{
    static const char plain[] = "scribe://", secure[] = "scribes://";
    *tls = false;
    if (s.len >= sizeof plain - 1 && !memcmp(s.p, plain, sizeof plain - 1))
        return sizeof plain - 1;
    if (s.len >= sizeof secure - 1 && !memcmp(s.p, secure, sizeof secure - 1)) {
        *tls = true;
        return sizeof secure - 1;
    }
    return 0;
}

static bool has_byte(cn_scribe_str_t s, uint8_t b)
{
    return s.len && memchr(s.p, b, s.len) != NULL;
}

cn_err_t cn_scribe_repo_ref_parse(cn_scribe_str_t arg, cn_scribe_repo_ref_t *out)
{
    memset(out, 0, sizeof *out);
    if (!arg.len || !arg.p)
        return CN_E_INVALID;
    bool tls;
    uint32_t sl = scheme_len(arg, &tls);
    cn_scribe_str_t rest = { arg.p + sl, arg.len - sl };
    const uint8_t *slash = rest.len ? memchr(rest.p, '/', rest.len) : NULL;
    cn_scribe_str_t first = { rest.p, slash ? (uint32_t)(slash - rest.p) : rest.len };
    /* Any other "x://" is an unknown scheme, not a namespace. */
    if (!sl && arg.len >= 3)
        for (uint32_t i = 0; i + 2 < arg.len; i++)
            if (!memcmp(arg.p + i, "://", 3))
                return CN_E_INVALID;
    bool endpoint = sl || has_byte(first, ':');
    if (endpoint) {
        if (!slash || !first.len || has_byte(first, '@'))
            return CN_E_INVALID;
        out->has_endpoint = true;
        out->tls = tls;
        out->endpoint = first;
        rest.p = slash + 1;
        rest.len -= first.len + 1;
    }
    out->wire = rest;
    return cn_scribe_name_split(rest, &out->name);
}
