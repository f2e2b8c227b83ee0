/* The S3 XML error document, the escaping writer and the bounded reader. */
#include "cairn/http.h"
#include "cn_test.h"

#include <errno.h>
#include <string.h>

static const char *cstr(cn_buf_t *b)
{
    cn_buf_put_u8(b, 0);
    b->len--;
    return (const char *)b->data;
}

static void test_error_document(void)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_s3_error_xml(&b, CN_S3E_NO_SUCH_KEY, NULL, "/b/k<&>", "REQ1", NULL), 0);
    CN_CHECK_STR(cstr(&b),
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
                 "<Message>The specified key does not exist.</Message>"
                 "<Resource>/b/k&lt;&amp;&gt;</Resource><RequestId>REQ1</RequestId></Error>");
    cn_buf_free(&b);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_SIGNATURE_DOES_NOT_MATCH), 403);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_INVALID_RANGE), 416);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_MISSING_CONTENT_LENGTH), 411);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_BUCKET_NOT_EMPTY), 409);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_NOT_IMPLEMENTED), 501);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_PRECONDITION_FAILED), 412);
    CN_CHECK_EQ(cn_s3_err_status(CN_S3E_ENTITY_TOO_LARGE), 400);
    CN_CHECK_STR(cn_s3_err_code(CN_S3E_CONTENT_SHA256_MISMATCH), "XAmzContentSHA256Mismatch");
    CN_CHECK_STR(cn_s3_err_code((cn_s3_err_t)9999), "InternalError");
    CN_CHECK_EQ(cn_s3_err_from_cn(CN_E_DIGEST_MISMATCH), CN_S3E_BAD_DIGEST);
    CN_CHECK_EQ(cn_s3_err_from_cn(-EIO), CN_S3E_INTERNAL_ERROR);
    CN_CHECK_EQ(cn_s3_err_from_cn(CN_E_UNAVAILABLE), CN_S3E_SERVICE_UNAVAILABLE);
}

static void test_writer(void)
{
    cn_buf_t b = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &b);
    cn_xml_open(&w, "ListBucketResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Name", "a\"b'c");
    cn_xml_elem_u64(&w, "MaxKeys", 1000);
    cn_xml_elem_bool(&w, "IsTruncated", false);
    cn_xml_elem_n(&w, "Key", "x\ny\x01", 4);
    cn_xml_close(&w);
    CN_CHECK_EQ(cn_xml_finish(&w), 0);
    CN_CHECK_STR(cstr(&b),
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<Name>a&quot;b&apos;c</Name><MaxKeys>1000</MaxKeys>"
                 "<IsTruncated>false</IsTruncated><Key>x&#xA;y&#x1;</Key></ListBucketResult>");
    cn_buf_reset(&b);
    cn_xml_begin(&w, &b);
    cn_xml_open(&w, "A", NULL);
    CN_CHECK_EQ(cn_xml_finish(&w), CN_E_INVALID);
    cn_buf_free(&b);
}

static void test_reader(void)
{
    const char *body = "<?xml version=\"1.0\"?>\n<CompleteMultipartUpload "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                       "  <Part><PartNumber>1</PartNumber><ETag>\"a&amp;b\"</ETag></Part>\n"
                       "  <Part><PartNumber>2</PartNumber><ETag>&quot;cd&quot;</ETag></Part>"
                       "</CompleteMultipartUpload>";
    cn_xml_doc_t *d;
    /* Fed a byte at a time, with and without the namespace. */
    CN_CHECK_EQ(cn_xml_doc_new(4096, 100, &d), 0);
    for (size_t i = 0; body[i]; i++)
        CN_CHECK_EQ(cn_xml_doc_feed(d, body + i, 1), 0);
    CN_CHECK_EQ(cn_xml_doc_finish(d), 0);
    int root = cn_xml_root(d);
    CN_CHECK_STR(cn_xml_name(d, root), "CompleteMultipartUpload");
    int p = cn_xml_child(d, root, "Part");
    CN_CHECK_STR(cn_xml_child_text(d, p, "PartNumber", NULL), "1");
    CN_CHECK_STR(cn_xml_child_text(d, p, "ETag", NULL), "\"a&b\"");
    p = cn_xml_next(d, p, "Part");
    CN_CHECK_STR(cn_xml_child_text(d, p, "ETag", NULL), "\"cd\"");
    CN_CHECK_EQ(cn_xml_next(d, p, "Part"), -1);
    CN_CHECK(cn_xml_child_text(d, p, "Missing", NULL) == NULL);
    cn_xml_doc_free(d);

    const char *plain = "<Delete><Quiet>true</Quiet><Object><Key>a b</Key></Object></Delete>";
    CN_CHECK_EQ(cn_xml_parse(plain, strlen(plain), 10, &d), 0);
    size_t len;
    const char *k = cn_xml_child_text(d, cn_xml_child(d, cn_xml_root(d), "Object"), "Key", &len);
    CN_CHECK_STR(k, "a b");
    CN_CHECK_EQ(len, 3);
    cn_xml_doc_free(d);

    /* Refused: malformed, a DOCTYPE (no entity expansion), too many nodes, too big. */
    const char *bad[] = { "<a><b></a>", "", "<a/><b/>",
                          "<!DOCTYPE a [<!ENTITY x \"xxxxxxxx\">]><a>&x;</a>" };
    for (size_t i = 0; i < 4; i++) {
        d = NULL;
        CN_CHECK(cn_xml_parse(bad[i], strlen(bad[i]), 100, &d) != 0);
        CN_CHECK(d == NULL);
    }
    CN_CHECK_EQ(cn_xml_parse(plain, strlen(plain), 2, &d), CN_E_LIMIT);
    CN_CHECK_EQ(cn_xml_doc_new(10, 100, &d), 0);
    CN_CHECK_EQ(cn_xml_doc_feed(d, plain, strlen(plain)), CN_E_TOO_LARGE);
    cn_xml_doc_free(d);
}

CN_TEST_MAIN(CN_TEST(test_error_document), CN_TEST(test_writer), CN_TEST(test_reader))
