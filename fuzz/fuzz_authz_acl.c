/* libFuzzer harness: the stored ACL serialization.  Invariants: an accepted
 * input serializes to bytes that parse back to the same ACL and serialize to
 * the same bytes again; a refused input leaves an empty ACL. */
#include "cairn/authz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cn_authz_acl_t a, b;
    if (cn_authz_acl_parse((const char *)data, size, &a) != CN_OK) {
        if (a.ngrants != 0 || a.owner[0])
            abort();
        return 0;
    }
    cn_buf_t s1 = { 0 }, s2 = { 0 };
    if (cn_authz_acl_serialize(&a, &s1) != CN_OK ||
        cn_authz_acl_parse((const char *)s1.data, s1.len, &b) != CN_OK ||
        cn_authz_acl_serialize(&b, &s2) != CN_OK || s1.len != s2.len ||
        memcmp(s1.data, s2.data, s1.len) != 0 || a.ngrants != b.ngrants ||
        strcmp(a.owner, b.owner) != 0)
        abort();
    (void)cn_authz_acl_is_public(&a);
    cn_buf_free(&s1);
    cn_buf_free(&s2);
    return 0;
}
