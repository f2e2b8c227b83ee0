/* The Jay adapter's one error table (cn__jay_code_of): every objects detail
 * has a row, and the rows answer what docs/protocol/jay.md says. */
#include "cn_test.h"
#include "cn_obj_details.h"
#include "jay/server_int.h"

static int jay_map(const cn_objects_req_t *rq, cn_err_t err)
{
    return (int)cn__jay_code_of(rq, err);
}

static void test_every_detail_maps(void)
{
    cn_test_obj_details_walk(jay_map, CN_JAY_CODE_INTERNAL_ERROR);
}

static void test_rows(void)
{
    static const cn_test_obj_row_t rows[] = {
        { CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID, NULL,
          CN_JAY_CODE_INVALID_BUCKET_NAME },
        { CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_METADATA_KEY_INVALID, NULL,
          CN_JAY_CODE_INVALID_ARGUMENT },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_ORDER, NULL, CN_JAY_CODE_INVALID_ARGUMENT },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_TOO_SMALL, NULL,
          CN_JAY_CODE_INVALID_ARGUMENT },
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, 0, NULL, CN_JAY_CODE_NO_SUCH_BUCKET },
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, 0, NULL, CN_JAY_CODE_NO_SUCH_KEY },
        { CN_E_NO_UPLOAD, CN_OBJ_WHAT_UPLOAD, 0, NULL, CN_JAY_CODE_NO_SUCH_UPLOAD },
        { CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG, 0, NULL, CN_JAY_CODE_ENTITY_TOO_LARGE },
        { CN_E_BUSY, CN_OBJ_WHAT_NONE, 0, NULL, CN_JAY_CODE_RATE_LIMIT_EXCEEDED },
        { CN_E_DB, CN_OBJ_WHAT_NONE, 0, NULL, CN_JAY_CODE_INTERNAL_ERROR },
        /* a detail left by an earlier failure of another class never applies */
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID, NULL,
          CN_JAY_CODE_NO_SUCH_BUCKET },
    };
    cn_test_obj_rows(jay_map, rows, sizeof rows / sizeof rows[0]);
}

CN_TEST_MAIN(CN_TEST(test_every_detail_maps), CN_TEST(test_rows))
