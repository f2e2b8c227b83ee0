/* The S3 adapter's one error table (cn__s3_err_of): every objects detail has
 * a row, the rows answer the codes AWS documents for each rule, and the
 * message is never consulted. */
#include "cn_test.h"
#include "cn_obj_details.h"
#include "s3/s3_int.h"
#include "http/http_int.h"

#include <errno.h>

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

/* The framework's answer to a failure an S3 callback returned
 * (cn__handler_err, through the route's err_of) is the adapter's: every cn
 * error class, some errnos, under every what and every objects detail, maps
 * to the code cn__s3_err_of gives the same request context, and to the
 * framework's generic table only where the two agree. */
static struct {
    cn_http_server_t *srv;
    cn_http_req_t *r;
    cn__s3_rq_t q;
} hook;

static int hook_map(const cn_objects_req_t *rq, cn_err_t err)
{
    hook.q.orq = *rq;
    cn_s3_err_t via_hook = cn__handler_err(hook.r, err);
    CN_CHECK_EQ(via_hook, cn__s3_err_of(rq, err));
    return (int)via_hook;
}

static void hook_setup(struct cn_s3 *s3)
{
    cn_http_config_t cfg;
    cn_http_config_default(&cfg);
    CN_CHECK_EQ(cn_http_server_new(&cfg, &hook.srv), CN_OK);
    cn_http_route_t rt;
    cn__s3_route(s3, &rt);
    CN_CHECK_EQ(cn_http_server_route(hook.srv, &rt), CN_OK);
    hook.r = calloc(1, sizeof *hook.r);
    CN_CHECK(hook.r != NULL);
    hook.r->srv = hook.srv;
    hook.r->route = cn__route_find(hook.srv, CN_HTTP_PUT, "/bucket/key", NULL);
    CN_CHECK(hook.r->route >= 0);
    hook.r->method = "PUT";
    hook.r->raw_path = "/bucket/key";
    memset(&hook.q, 0, sizeof hook.q);
}

static void test_framework_hook(void)
{
    struct cn_s3 s3;
    memset(&s3, 0, sizeof s3);
    hook_setup(&s3);
    cn_log_configure(CN_LOG_ERROR, false); /* each 500 is logged: not the point here */
    static const cn_err_t errnos[] = { -ENOMEM, -EIO, -ENOSPC, -EACCES };
    /* No handler state yet (on_request failed before setting it): no context. */
    for (cn_err_t e = CN_E_NOT_FOUND; e < CN_E_END; e++)
        CN_CHECK_EQ(cn__handler_err(hook.r, e), cn__s3_err_of(NULL, e));
    cn_http_req_set_data(hook.r, &hook.q);
    for (int what = CN_OBJ_WHAT_NONE; what <= CN_OBJ_WHAT_ARG; what++) {
        for (cn_err_t e = CN_E_NOT_FOUND; e < CN_E_END; e++)
            hook_map(&(cn_objects_req_t){ .what = (cn_objects_what_t)what }, e);
        for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
            hook_map(&(cn_objects_req_t){ .what = (cn_objects_what_t)what }, errnos[i]);
    }
    cn_test_obj_details_walk(hook_map, CN_S3E_INTERNAL_ERROR);
    /* The hook is what makes it so: the generic table differs on these. */
    CN_CHECK(cn_s3_err_from_cn(CN_E_EXISTS) != cn__s3_err_of(NULL, CN_E_EXISTS));
    hook.q.orq = (cn_objects_req_t){ .what = CN_OBJ_WHAT_BUCKET };
    CN_CHECK_EQ(cn__handler_err(hook.r, CN_E_NOT_FOUND), CN_S3E_NO_SUCH_BUCKET);
    CN_CHECK(cn_s3_err_from_cn(CN_E_NOT_FOUND) != CN_S3E_NO_SUCH_BUCKET);
    cn_http_req_set_data(hook.r, NULL);
    free(hook.r);
    cn_http_server_free(hook.srv);
}

CN_TEST_MAIN(CN_TEST(test_every_detail_maps), CN_TEST(test_rules), CN_TEST(test_message_never_read),
             CN_TEST(test_class_and_what), CN_TEST(test_framework_hook))
