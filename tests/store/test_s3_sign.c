/* The S3 tier's request signer (src/store/s3_http.c, cn__s3_authorization)
 * against AWS's published Signature Version 4 examples for S3 ("Signature
 * Calculations for the Authorization Header: Transferring Payload in a
 * Single Chunk"): GET Object with a Range, PUT Object with a '$' in the key,
 * GET Bucket lifecycle (a valueless query item) and GET Bucket with a sorted
 * query.  Also: a result that does not fit is refused, never truncated. */
#include "cairn/store.h"
#include "cn_test.h"
#include "store/backend.h"

#include <string.h>

#define KEY_ID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define HOST "examplebucket.s3.amazonaws.com"
#define DATE "20130524T000000Z"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define PREFIX "AWS4-HMAC-SHA256 Credential=" KEY_ID "/20130524/us-east-1/s3/aws4_request, "

static void check(const char *method, const char *path, const char *query, const cn__s3_hdr_t *h,
                  size_t n, const char *payload, const char *want)
{
    char out[512];
    CN_CHECK_EQ(cn__s3_authorization(KEY_ID, SECRET, "us-east-1", method, path, query, h, n,
                                     payload, DATE, out, sizeof out),
                CN_OK);
    CN_CHECK_STR(out, want);
}

static void test_get_object_with_range(void)
{
    const cn__s3_hdr_t h[] = { { "host", HOST },
                               { "range", "bytes=0-9" },
                               { "x-amz-content-sha256", EMPTY },
                               { "x-amz-date", DATE } };
    check("GET", "/test.txt", NULL, h, 4, EMPTY,
          PREFIX "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                 "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_put_object(void)
{
    const char *sha = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
    const cn__s3_hdr_t h[] = { { "date", "Fri, 24 May 2013 00:00:00 GMT" },
                               { "host", HOST },
                               { "x-amz-content-sha256", sha },
                               { "x-amz-date", DATE },
                               { "x-amz-storage-class", "REDUCED_REDUNDANCY" } };
    check("PUT", "/test%24file.text", NULL, h, 5, sha,
          PREFIX "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                 "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

static void test_get_lifecycle_and_list(void)
{
    const cn__s3_hdr_t h[] = { { "host", HOST },
                               { "x-amz-content-sha256", EMPTY },
                               { "x-amz-date", DATE } };
    check("GET", "/", "lifecycle", h, 3, EMPTY,
          PREFIX "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                 "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    check("GET", "/", "max-keys=2&prefix=J", h, 3, EMPTY,
          PREFIX "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                 "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_too_small_is_refused(void)
{
    const cn__s3_hdr_t h[] = { { "host", HOST }, { "x-amz-date", DATE } };
    char out[64];
    CN_CHECK_EQ(cn__s3_authorization(KEY_ID, SECRET, "us-east-1", "GET", "/", NULL, h, 2, EMPTY,
                                     DATE, out, sizeof out),
                CN_E_LIMIT);
}

CN_TEST_MAIN(CN_TEST(test_get_object_with_range), CN_TEST(test_put_object),
             CN_TEST(test_get_lifecycle_and_list), CN_TEST(test_too_small_is_refused))
