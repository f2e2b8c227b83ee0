/* ListObjects (v1) and ListObjectsV2.
 *
 * Both are one call to cn_objects_list; they differ only in how the page
 * position travels (v1: marker / NextMarker, the last key itself; v2: an
 * opaque continuation token, here the base64 of the last key or prefix
 * returned) and in which elements the body carries.  encoding-type=url
 * encodes every key-valued element and is echoed only when asked. */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *cn__token_decode(const char *tok)
{
    size_t n = strlen(tok);
    if (n == 0 || n % 4 || n > 4 * (CN_OBJECT_KEY_MAX + 2) / 3 + 4)
        return NULL;
    char *out = malloc(3 * (n / 4) + 1);
    if (!out)
        return NULL;
    long m = cn_base64_decode(tok, n, out, 3 * (n / 4));
    if (m <= 0 || memchr(out, 0, (size_t)m)) {
        free(out);
        return NULL;
    }
    out[m] = 0;
    return out;
}

static char *cn__token_encode(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out)
        cn_base64_encode(s, n, out);
    return out;
}

void cn__s3_list_objects(cn__s3_rq_t *q)
{
    cn_http_req_t *r = q->r;
    const char *lt = cn_http_req_query(r, "list-type");
    bool v2 = lt && strcmp(lt, "2") == 0;
    if (lt && !v2 && strcmp(lt, "1") != 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid list type");
        return;
    }
    const char *enc = cn_http_req_query(r, "encoding-type");
    if (enc && strcmp(enc, "url") != 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid Encoding Method specified in Request");
        return;
    }
    bool url = enc != NULL;
    int64_t max;
    const char *mk = cn_http_req_query(r, "max-keys");
    if (!cn__s3_int_arg(q, mk, "max-keys", 0, INT32_MAX, 1000, &max))
        return;
    const char *prefix = cn_http_req_query(r, "prefix");
    const char *delim = cn_http_req_query(r, "delimiter");
    const char *marker = cn_http_req_query(r, v2 ? "start-after" : "marker");
    const char *ctok = v2 ? cn_http_req_query(r, "continuation-token") : NULL;
    const char *fo = cn_http_req_query(r, "fetch-owner");
    bool owner = !v2 || (fo && strcmp(fo, "true") == 0);
    char *after = NULL;
    if (ctok) {
        after = cn__token_decode(ctok);
        if (!after) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "The continuation token provided is incorrect");
            return;
        }
    }
    cn_objects_list_args_t la;
    memset(&la, 0, sizeof la);
    la.prefix = prefix;
    la.delimiter = delim && *delim ? delim : NULL;
    la.start_after = after ? after : (marker && *marker ? marker : NULL);
    la.max_keys = max > CN_OBJECTS_LIST_MAX ? CN_OBJECTS_LIST_MAX : (int32_t)(max ? max : 1);
    la.max_keys_raw = mk;
    cn_objects_list_t l;
    memset(&l, 0, sizeof l);
    cn_err_t e = cn_objects_list(q->s3->objects, &q->orq, q->bucket, &la, &l);
    if (e < 0) {
        free(after);
        if (e == CN_E_NOT_FOUND)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return;
    }
    if (max == 0) {
        /* max-keys=0 asks for nothing: an empty, untruncated page (the call
         * above still checked the bucket and the right to list it). */
        cn_objects_list_free(&l);
        memset(&l, 0, sizeof l);
    }

    cn_buf_t out = {0};
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListBucketResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Name", q->bucket);
    cn__s3_url_text(&w, "Prefix", prefix ? prefix : "", url);
    if (v2) {
        if (marker)
            cn__s3_url_text(&w, "StartAfter", marker, url);
        if (ctok)
            cn_xml_elem(&w, "ContinuationToken", ctok);
        if (l.is_truncated && l.next_start_after) {
            char *nt = cn__token_encode(l.next_start_after);
            if (!nt)
                w.err = -ENOMEM;
            else
                cn_xml_elem(&w, "NextContinuationToken", nt);
            free(nt);
        }
        cn_xml_elem_u64(&w, "KeyCount", l.nentries + l.nprefixes);
    } else {
        cn__s3_url_text(&w, "Marker", marker ? marker : "", url);
        if (l.is_truncated && l.next_start_after)
            cn__s3_url_text(&w, "NextMarker", l.next_start_after, url);
    }
    cn_xml_elem_u64(&w, "MaxKeys", (uint64_t)max);
    if (la.delimiter)
        cn__s3_url_text(&w, "Delimiter", la.delimiter, url);
    if (url)
        cn_xml_elem(&w, "EncodingType", "url");
    cn_xml_elem_bool(&w, "IsTruncated", l.is_truncated);
    for (size_t i = 0; i < l.nentries; i++) {
        const cn_objects_entry_t *en = &l.entries[i];
        char date[CN_RFC3339_LEN], etag[CN__S3_ETAG_MAX];
        cn__s3_iso_date(en->last_modified_ms, date);
        cn__s3_quote_etag(en->etag, etag);
        cn_xml_open(&w, "Contents", NULL);
        cn__s3_url_text(&w, "Key", en->key, url);
        cn_xml_elem(&w, "LastModified", date);
        cn_xml_elem(&w, "ETag", etag);
        cn_xml_elem_u64(&w, "Size", en->size);
        if (owner)
            cn__s3_owner(&w, "Owner", en->owner);
        cn_xml_elem(&w, "StorageClass", "STANDARD");
        cn_xml_close(&w);
    }
    for (size_t i = 0; i < l.nprefixes; i++) {
        cn_xml_open(&w, "CommonPrefixes", NULL);
        cn__s3_url_text(&w, "Prefix", l.prefixes[i], url);
        cn_xml_close(&w);
    }
    cn_xml_close(&w);
    cn_objects_list_free(&l);
    free(after);
    cn__s3_xml(q, 200, &w);
}
