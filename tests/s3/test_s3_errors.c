/* The S3 adapter's one error table (cn__s3_err_of): every objects detail has
 * a row, the rows answer the codes AWS documents for each rule, and the
 * message is never consulted. */
#include "cn_test.h"
#include "cn_obj_details.h"
#include "s3/s3_int.h"

static int s3_map(const cn_objects_req_t *rq, cn_err_t err)
{
    return (int)cn__s3_err_of(rq, err);
}

static void test_every_detail_maps(void)
{
    cn_test_obj_details_walk(s3_map, CN_S3E_INTERNAL_ERROR);
}

static void test_rules(void)
{
    static const cn_test_obj_row_t rows[] = {
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_ORDER, NULL, CN_S3E_INVALID_PART_ORDER },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_MISSING, NULL, CN_S3E_INVALID_PART },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_ETAG_MISMATCH, NULL, CN_S3E_INVALID_PART },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_TOO_SMALL, NULL, CN_S3E_ENTITY_TOO_SMALL },
        { CN_E_INVALID, CN_OBJ_WHAT_KEY, CN_OBJ_KEY_TOO_LONG, NULL, CN_S3E_KEY_TOO_LONG },
        { CN_E_INVALID, CN_OBJ_WHAT_KEY, CN_OBJ_KEY_INVALID, NULL, CN_S3E_INVALID_ARGUMENT },
        { CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_METADATA_TOO_LARGE, NULL,
          CN_S3E_METADATA_TOO_LARGE },
        { CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_POLICY_INVALID, NULL, CN_S3E_MALFORMED_POLICY },
        { CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID, NULL,
          CN_S3E_INVALID_BUCKET_NAME },
    };
    cn_test_obj_rows(s3_map, rows, sizeof rows / sizeof rows[0]);
}

/* The latent bug of issue 15: an empty metadata key is not MetadataTooLarge,
 * whatever its message says; and no message turns one code into another. */
static void test_message_never_read(void)
{
    static const cn_test_obj_row_t rows[] = {
        { CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_METADATA_KEY_INVALID, "empty metadata key",
          CN_S3E_INVALID_ARGUMENT },
        { CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_MISSING, "parts must ascend",
          CN_S3E_INVALID_PART },
        { CN_E_INVALID, CN_OBJ_WHAT_KEY, CN_OBJ_KEY_INVALID, "key too long",
          CN_S3E_INVALID_ARGUMENT },
    };
    cn_test_obj_rows(s3_map, rows, sizeof rows / sizeof rows[0]);
}

/* Without a detail, class and what decide; a stale detail of another class
 * is ignored. */
static void test_class_and_what(void)
{
    static const cn_test_obj_row_t rows[] = {
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, 0, NULL, CN_S3E_NO_SUCH_BUCKET },
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, 0, NULL, CN_S3E_NO_SUCH_KEY },
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_UPLOAD, 0, NULL, CN_S3E_NO_SUCH_UPLOAD },
        { CN_E_DB_LOCKED, CN_OBJ_WHAT_NONE, 0, NULL, CN_S3E_SERVICE_UNAVAILABLE },
        { CN_E_DB, CN_OBJ_WHAT_NONE, 0, NULL, CN_S3E_INTERNAL_ERROR },
        { CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, CN_OBJ_KEY_TOO_LONG, NULL, CN_S3E_NO_SUCH_KEY },
    };
    cn_test_obj_rows(s3_map, rows, sizeof rows / sizeof rows[0]);
}

CN_TEST_MAIN(CN_TEST(test_every_detail_maps), CN_TEST(test_rules), CN_TEST(test_message_never_read),
             CN_TEST(test_class_and_what))
