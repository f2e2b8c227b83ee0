/* The blob-operation adapter's one error table (cn__bh_err_of): every
 * denial the authorization decision can give and every class the blobs
 * service documents has its row, and the rows answer docs/protocol/blobs.md. */
#include "cn_test.h"
#include "blobops/blobops_int.h"

#include <errno.h>

static cn_blobs_caller_t denied(cn_authz_why_t why)
{
    cn_blobs_caller_t c;
    memset(&c, 0, sizeof c);
    c.decision.why = why;
    return c;
}

/* Every denial maps to 401/403 access codes, never the internal row. */
static void test_every_denial_maps(void)
{
    for (int w = CN_WHY_TOKEN; w < CN_WHY_END; w++) {
        cn_blobs_caller_t c = denied((cn_authz_why_t)w);
        const cn__bh_err_row_t *row = cn__bh_err_of(CN_E_DENIED, &c);
        CN_CHECK(row->status == 401 || row->status == 403);
        CN_CHECK(strcmp(row->reason, "internal") != 0);
    }
    cn_blobs_caller_t c = denied(CN_WHY_ANONYMOUS);
    CN_CHECK_STR(cn__bh_err_of(CN_E_DENIED, &c)->code, "unauthenticated");
    c = denied(CN_WHY_NS_OPERATOR_ONLY);
    CN_CHECK_STR(cn__bh_err_of(CN_E_DENIED, &c)->reason, "operator_only");
    c = denied(CN_WHY_TOKEN);
    CN_CHECK_STR(cn__bh_err_of(CN_E_DENIED, &c)->reason, "token_permission");
    c = denied(CN_WHY_NS_CLOSED);
    CN_CHECK_STR(cn__bh_err_of(CN_E_DENIED, &c)->reason, "closed_namespace");
    CN_CHECK_STR(cn__bh_err_of(CN_E_DENIED, NULL)->reason, "closed_namespace");
}

/* Every class cairn/blobs.h documents has a row; what it does not list is
 * the internal 500. */
static void test_every_class_maps(void)
{
    static const struct {
        cn_err_t e;
        int status;
        const char *code, *reason;
    } want[] = {
        { CN_E_NOT_FOUND, 404, NULL, "unknown_resource" },
        { CN_E_INVALID, 400, "invalid_params", "invalid_value" },
        { CN_E_LIMIT, 400, "invalid_params", "too_many" },
        { CN_E_DIGEST_MISMATCH, 400, "verification_failed", "digest_mismatch" },
        { CN_E_LENGTH_MISMATCH, 400, "verification_failed", "length_mismatch" },
        { CN_E_TOO_LARGE, 413, "too_large", "blob_too_large" },
        { CN_E_UNSUPPORTED, 409, "handler_error", "unverifiable" },
        { CN_E_CORRUPT, 500, "handler_error", "unverifiable" },
        { CN_E_SHUTDOWN, 503, "unavailable", "shutting_down" },
        { CN_E_DB_LOCKED, 503, "unavailable", "busy" },
        { CN_E_BUSY, 503, "unavailable", "busy" },
        { -ENOSPC, 507, "handler_error", "no_space" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cn__bh_err_row_t *row = cn__bh_err_of(want[i].e, NULL);
        CN_CHECK_EQ(row->status, want[i].status);
        CN_CHECK_STR(row->reason, want[i].reason);
        if (want[i].code)
            CN_CHECK_STR(row->code, want[i].code);
        else
            CN_CHECK(row->code == NULL); /* the operation's own miss code */
    }
    const cn__bh_err_row_t *row = cn__bh_err_of(CN_E_DB, NULL);
    CN_CHECK_EQ(row->status, 500);
    CN_CHECK_STR(row->reason, "internal");
}

CN_TEST_MAIN(CN_TEST(test_every_denial_maps), CN_TEST(test_every_class_maps))
