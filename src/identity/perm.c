/* Permission names and the small validators identity shares across files. */
#include "identity_int.h"

#include <string.h>

/* Every permission, in the order cn_perms_format writes them. */
static const struct {
    cn_perms_t bit;
    const char *name;
} perms_tab[] = {
    { CN_PERM_BUCKET_CREATE, "bucket:create" },
    { CN_PERM_BUCKET_DELETE, "bucket:delete" },
    { CN_PERM_BUCKET_LIST, "bucket:list" },
    { CN_PERM_OBJECT_GET, "object:get" },
    { CN_PERM_OBJECT_PUT, "object:put" },
    { CN_PERM_OBJECT_DELETE, "object:delete" },
    { CN_PERM_OBJECT_LIST, "object:list" },
    { CN_PERM_BLOBS_READ, "blobs:read" },
    { CN_PERM_BLOBS_WRITE, "blobs:write" },
    { CN_PERM_ADMIN, "admin" },
    { CN_PERM_BUCKET_CONFIGURE, "bucket:configure" },
    { CN_PERM_OBJECT_LOCK, "object:lock" },
    { CN_PERM_OBJECT_BYPASS_GOVERNANCE, "object:bypass-governance" },
};
#define NPERMS (sizeof perms_tab / sizeof perms_tab[0])
_Static_assert(NPERMS == 13, "perms_tab lists every CN_PERM_* bit");

cn_err_t cn_perm_parse(const char *name, size_t len, cn_perms_t *out)
{
    if (!name)
        return CN_E_INVALID;
    if (len == 3 && memcmp(name, "all", 3) == 0) {
        *out = CN_PERM_ALL;
        return 0;
    }
    for (size_t i = 0; i < NPERMS; i++)
        if (strlen(perms_tab[i].name) == len && memcmp(perms_tab[i].name, name, len) == 0) {
            *out = perms_tab[i].bit;
            return 0;
        }
    return CN_E_INVALID;
}

const char *cn_perm_name(cn_perms_t perm)
{
    for (size_t i = 0; i < NPERMS; i++)
        if (perm == perms_tab[i].bit)
            return perms_tab[i].name;
    return NULL;
}

cn_err_t cn_perms_format(cn_perms_t perms, char *out, size_t cap)
{
    size_t off = 0;
    if (!cap)
        return CN_E_TOO_LARGE;
    out[0] = '\0';
    for (size_t i = 0; i < NPERMS; i++) {
        if (!(perms & perms_tab[i].bit))
            continue;
        size_t n = strlen(perms_tab[i].name);
        size_t need = n + (off ? 1 : 0);
        if (off + need + 1 > cap)
            return CN_E_TOO_LARGE;
        if (off)
            out[off++] = ' ';
        memcpy(out + off, perms_tab[i].name, n);
        off += n;
        out[off] = '\0';
    }
    return 0;
}

bool cn_perms_allow(cn_perms_t perms, cn_perms_t need)
{
    if (perms & (need | CN_PERM_ADMIN))
        return true;
    return need == CN_PERM_BUCKET_CONFIGURE && (perms & CN_PERM_BUCKET_CREATE);
}

cn_err_t cn_ns_action_parse(const char *s, uint32_t *out)
{
    if (s && strcmp(s, "read") == 0)
        *out = CN_NS_READ;
    else if (s && strcmp(s, "write") == 0)
        *out = CN_NS_WRITE;
    else
        return CN_E_INVALID;
    return 0;
}

uint64_t cn__id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool cn__id_valid_account(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > CN_ACCOUNT_NAME_MAX || !is_alnum(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

bool cn__id_valid_token_id(const char *s, size_t len)
{
    if (!s || len == 0 || len > CN_TOKEN_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

bool cn__id_valid_secret(const char *s, size_t len)
{
    if (!s || len == 0 || len > CN_SECRET_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

bool cn__id_valid_namespace(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > CN_NAMESPACE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}
