/* libFuzzer harness: bucket policy JSON.  The input's first byte picks the
 * request shape; the rest is the policy for bucket "b".  Invariants: a
 * refusal is CN_E_INVALID with a non-empty message and no policy; an accepted
 * policy evaluates every action without fault, and its decisions are stable. */
#include "cairn/authz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    cn_authz_policy_t *p = NULL;
    char err[CN_AUTHZ_ERR_MAX];
    cn_err_t rc = cn_authz_policy_parse(json, len, "b", &p, err);
    if (rc != CN_OK) {
        if (rc != CN_E_INVALID || p != NULL || !memchr(err, 0, sizeof err) || !err[0])
            abort();
        return 0;
    }
    (void)cn_authz_policy_is_public(p);
    static const char *const principals[] = { NULL, "alice", "bob" };
    static const char *const ips[] = { "10.1.2.3", "2001:db8::1", "192.168.0.1", "::1" };
    cn_authz_tag_t tags[] = { { "visibility", "public" }, { "team", "" } };
    cn_authz_object_t obj = { "alice", NULL, tags, 2 };
    cn_authz_bucket_t b = { "b", "alice", NULL, p, { false, false, false, (sel & 1) != 0 } };
    for (int a = CN_ACT_INVALID + 1; a < CN_ACT_END; a++) {
        cn_authz_req_t r;
        memset(&r, 0, sizeof r);
        r.principal = principals[sel % 3];
        r.perms = CN_PERM_ALL;
        r.action = (cn_authz_action_t)a;
        r.key = (sel & 2) ? "public/a.jpg" : "x";
        r.prefix = (sel & 4) ? "home/" : NULL;
        r.max_keys = (sel & 8) ? "100" : NULL;
        r.x_amz_acl = (sel & 16) ? "public-read" : NULL;
        r.secure_transport = (sel & 32) != 0;
        if (sel & 64)
            cn_authz_ip_parse(ips[(sel >> 6) & 3], &r.source_ip);
        cn_authz_decision_t d1, d2;
        cn_err_t e1 = cn_authz_decide(&r, &b, &obj, &d1);
        cn_err_t e2 = cn_authz_decide(&r, &b, &obj, &d2);
        if (e1 != e2 || (e1 != CN_OK && e1 != CN_E_DENIED && e1 != CN_E_INVALID))
            abort();
        if (e1 != CN_E_INVALID && (d1.allow != (e1 == CN_OK) || d1.why != d2.why))
            abort();
    }
    (void)cn_authz_visibility(&b);
    cn_authz_policy_free(p);
    return 0;
}
