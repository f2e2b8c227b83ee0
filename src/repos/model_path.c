/* Canonical path rules and strict UTF-8. */
#include "cairn/repos_model.h"
#include "cairn/util.h"

#include <string.h>

cn_err_t cn_repos_utf8_check(const uint8_t *p, size_t n)
{
    return cn_utf8_valid(p, n) ? CN_OK : CN_E_INVALID;
}

cn_err_t cn_repos_path_check(const uint8_t *p, size_t n)
{
    if (n == 0 || n > CN_REPOS_MAX_PATH || !p)
        return CN_E_INVALID;
    size_t seg = 0; /* start of the current segment */
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '/') {
            if (p[i] < 0x20 || p[i] == 0x7F)
                return CN_E_INVALID;
            continue;
        }
        size_t len = i - seg;
        if (len == 0) /* leading, trailing or doubled '/' */
            return CN_E_INVALID;
        if ((len == 1 && p[seg] == '.') || (len == 2 && p[seg] == '.' && p[seg + 1] == '.'))
            return CN_E_INVALID;
        seg = i + 1;
    }
    return cn_repos_utf8_check(p, n);
}

bool cn_repos_branch_name_ok(const char *name, size_t len)
{
    if (!name || len == 0 || len > CN_REPOS_BRANCH_NAME_MAX || name[0] == '-')
        return false;
    bool seg_start = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/') {
            if (seg_start)
                return false; /* a leading '/' or an empty segment */
            seg_start = true;
            continue;
        }
        if (seg_start && c == '.')
            return false; /* ".", ".." and dot-led segments */
        seg_start = false;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '_' && c != '.')
            return false;
    }
    return !seg_start; /* no trailing '/' */
}
