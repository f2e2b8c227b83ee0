/* ListObjects (v1), ListObjectsV2 and ListObjectVersions.
 *
 * All three are one call to cn_objects_list; they differ only in how the
 * page position travels (v1: marker / NextMarker, the last key itself; v2:
 * an opaque continuation token, here the base64 of the last key or prefix
 * returned; versions: key-marker / version-id-marker, NextKeyMarker /
 * NextVersionIdMarker) and in which elements the body carries.
 * ListObjectVersions lists Version and DeleteMarker entries in the
 * service's order (keys in byte order, each key's versions newest first).
 * encoding-type=url encodes every key-valued element and is echoed only
 * when asked. */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *token_decode(const char *tok)
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

static char *token_encode(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out)
        cn_base64_encode(s, n, out);
    return out;
}

/* What the three listings share: the query arguments, the page, and the
 * elements of the answer. */
typedef struct {
    bool url;           /* encoding-type=url */
    int64_t max;        /* max-keys as asked (0 = an empty page) */
    const char *prefix; /* may be NULL */
    cn_objects_list_args_t la;
    cn_objects_list_t l;
} list_page_t;

/* Reads encoding-type, max-keys, prefix and delimiter into pg.  false after
 * answering InvalidArgument. */
static bool list_args(cn__s3_rq_t *q, list_page_t *pg)
{
    cn_http_req_t *r = q->r;
    memset(pg, 0, sizeof *pg);
    const char *enc = cn_http_req_query(r, "encoding-type");
    if (enc && strcmp(enc, "url") != 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid Encoding Method specified in Request");
        return false;
    }
    pg->url = enc != NULL;
    const char *mk = cn_http_req_query(r, "max-keys");
    if (!cn__s3_int_arg(q, mk, "max-keys", 0, INT32_MAX, 1000, &pg->max))
        return false;
    const char *delim = cn_http_req_query(r, "delimiter");
    pg->prefix = cn_http_req_query(r, "prefix");
    pg->la.prefix = pg->prefix;
    pg->la.delimiter = delim && *delim ? delim : NULL;
    pg->la.max_keys =
        pg->max > CN_OBJECTS_LIST_MAX ? CN_OBJECTS_LIST_MAX : (int32_t)(pg->max ? pg->max : 1);
    pg->la.max_keys_raw = mk;
    return true;
}

/* Lists the page pg->la describes (start_after set by the caller).  false
 * after answering the failure. */
static bool list_fetch(cn__s3_rq_t *q, list_page_t *pg)
{
    cn_err_t e = cn_objects_list(q->s3->objects, &q->orq, q->bucket, &pg->la, &pg->l);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return false;
    }
    if (pg->max == 0) {
        /* max-keys=0 asks for nothing: an empty, untruncated page (the call
         * above still checked the bucket and the right to list it). */
        cn_objects_list_free(&pg->l);
        memset(&pg->l, 0, sizeof pg->l);
    }
    return true;
}

/* MaxKeys, Delimiter, EncodingType and IsTruncated, in that order. */
static void list_tail(cn_xml_writer_t *w, const list_page_t *pg)
{
    cn_xml_elem_u64(w, "MaxKeys", (uint64_t)pg->max);
    if (pg->la.delimiter)
        cn__s3_url_text(w, "Delimiter", pg->la.delimiter, pg->url);
    if (pg->url)
        cn_xml_elem(w, "EncodingType", "url");
    cn_xml_elem_bool(w, "IsTruncated", pg->l.is_truncated);
}

/* A DeleteMarker entry of ListObjectVersions. */
static void list_marker(cn_xml_writer_t *w, const list_page_t *pg, const cn_objects_entry_t *en)
{
    char date[CN_RFC3339_LEN], v[CN_OBJECTS_VERSION_ID_MAX];
    cn__s3_iso_date(en->last_modified_ms, date);
    cn_objects_version_str(en->version_id, en->vnull, v);
    cn_xml_open(w, "DeleteMarker", NULL);
    cn__s3_url_text(w, "Key", en->key, pg->url);
    cn_xml_elem(w, "VersionId", v);
    cn_xml_elem_bool(w, "IsLatest", en->is_latest);
    cn_xml_elem(w, "LastModified", date);
    cn__s3_owner(w, "Owner", en->owner);
    cn_xml_close(w);
}

/* The entries (as Contents, or as Version / DeleteMarker), then the
 * CommonPrefixes. */
static void list_entries(cn_xml_writer_t *w, const list_page_t *pg, bool owner, bool versions)
{
    for (size_t i = 0; i < pg->l.nentries; i++) {
        const cn_objects_entry_t *en = &pg->l.entries[i];
        if (versions && en->delete_marker) {
            list_marker(w, pg, en);
            continue;
        }
        char date[CN_RFC3339_LEN], etag[CN__S3_ETAG_MAX], v[CN_OBJECTS_VERSION_ID_MAX];
        cn__s3_iso_date(en->last_modified_ms, date);
        cn__s3_quote_etag(en->etag, etag);
        cn_xml_open(w, versions ? "Version" : "Contents", NULL);
        cn__s3_url_text(w, "Key", en->key, pg->url);
        if (versions) {
            cn_objects_version_str(en->version_id, en->vnull, v);
            cn_xml_elem(w, "VersionId", v);
            cn_xml_elem_bool(w, "IsLatest", en->is_latest);
        }
        cn_xml_elem(w, "LastModified", date);
        cn_xml_elem(w, "ETag", etag);
        cn_xml_elem_u64(w, "Size", en->size);
        if (owner)
            cn__s3_owner(w, "Owner", en->owner);
        cn_xml_elem(w, "StorageClass", "STANDARD");
        cn_xml_close(w);
    }
    for (size_t i = 0; i < pg->l.nprefixes; i++) {
        cn_xml_open(w, "CommonPrefixes", NULL);
        cn__s3_url_text(w, "Prefix", pg->l.prefixes[i], pg->url);
        cn_xml_close(w);
    }
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
    list_page_t pg;
    if (!list_args(q, &pg))
        return;
    bool url = pg.url;
    const char *marker = cn_http_req_query(r, v2 ? "start-after" : "marker");
    const char *ctok = v2 ? cn_http_req_query(r, "continuation-token") : NULL;
    const char *fo = cn_http_req_query(r, "fetch-owner");
    bool owner = !v2 || (fo && strcmp(fo, "true") == 0);
    char *after = NULL;
    if (ctok) {
        after = token_decode(ctok);
        if (!after) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                         "The continuation token provided is incorrect");
            return;
        }
    }
    pg.la.start_after = after ? after : (marker && *marker ? marker : NULL);
    if (!list_fetch(q, &pg)) {
        free(after);
        return;
    }
    const cn_objects_list_t *l = &pg.l;

    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListBucketResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Name", q->bucket);
    cn__s3_url_text(&w, "Prefix", pg.prefix ? pg.prefix : "", url);
    if (v2) {
        if (marker)
            cn__s3_url_text(&w, "StartAfter", marker, url);
        if (ctok)
            cn_xml_elem(&w, "ContinuationToken", ctok);
        if (l->is_truncated && l->next_start_after) {
            char *nt = token_encode(l->next_start_after);
            if (!nt)
                w.err = -ENOMEM;
            else
                cn_xml_elem(&w, "NextContinuationToken", nt);
            free(nt);
        }
        cn_xml_elem_u64(&w, "KeyCount", l->nentries + l->nprefixes);
    } else {
        cn__s3_url_text(&w, "Marker", marker ? marker : "", url);
        if (l->is_truncated && l->next_start_after)
            cn__s3_url_text(&w, "NextMarker", l->next_start_after, url);
    }
    list_tail(&w, &pg);
    list_entries(&w, &pg, owner, false);
    cn_xml_close(&w);
    cn_objects_list_free(&pg.l);
    free(after);
    cn__s3_xml(q, 200, &w);
}

void cn__s3_list_versions(cn__s3_rq_t *q)
{
    cn_http_req_t *r = q->r;
    list_page_t pg;
    if (!list_args(q, &pg))
        return;
    const char *km = cn_http_req_query(r, "key-marker");
    const char *vm = cn_http_req_query(r, "version-id-marker");
    if (vm && *vm && !(km && *km)) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "A version-id marker cannot be specified without a key marker.");
        return;
    }
    int64_t vid = 0;
    bool vnull = false;
    if (vm && *vm && cn_objects_version_parse(vm, &vid, &vnull) < 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid version id specified");
        return;
    }
    pg.la.start_after = km && *km ? km : NULL;
    pg.la.version_id_marker = vm && *vm ? vm : NULL;
    pg.la.versions = true;
    if (!list_fetch(q, &pg))
        return;
    const cn_objects_list_t *l = &pg.l;
    /* The page ends on a version (both markers) or on a common prefix (no
     * version marker: the next page resumes after the whole prefix). */
    const char *next = l->is_truncated ? l->next_start_after : NULL;

    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListVersionsResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Name", q->bucket);
    cn__s3_url_text(&w, "Prefix", pg.prefix ? pg.prefix : "", pg.url);
    cn__s3_url_text(&w, "KeyMarker", km ? km : "", pg.url);
    cn_xml_elem(&w, "VersionIdMarker", vm ? vm : "");
    if (next) {
        cn__s3_url_text(&w, "NextKeyMarker", next, pg.url);
        if (l->next_version_id_marker)
            cn_xml_elem(&w, "NextVersionIdMarker", l->next_version_id_marker);
    }
    list_tail(&w, &pg);
    list_entries(&w, &pg, true, true);
    cn_xml_close(&w);
    cn_objects_list_free(&pg.l);
    cn__s3_xml(q, 200, &w);
}
