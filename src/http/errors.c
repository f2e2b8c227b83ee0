/* S3 error codes, their HTTP statuses and the S3 XML error document
 * (include/cairn/http.h): every S3 code reaches the wire through this one
 * table of codes.  cn_s3_err_from_cn is the framework's generic map of a cn
 * error class, for its own failures and for a route without err_of; an
 * adapter's failures map through the adapter's own table (the route's
 * err_of), never through this one. */
#include "cairn/http.h"

#include <errno.h>

typedef struct {
    const char *code;
    int status;
    const char *message;
} cn__s3_err_row_t;

static const cn__s3_err_row_t cn__s3_errs[CN_S3E_COUNT] = {
#define CN__S3_ROW(e, code, status, msg) [CN_S3E_##e] = { code, status, msg },
    CN_S3_ERRORS(CN__S3_ROW)
#undef CN__S3_ROW
};

static const cn__s3_err_row_t *row(cn_s3_err_t e)
{
    if ((unsigned)e >= CN_S3E_COUNT || e == CN_S3E_NONE)
        return &cn__s3_errs[CN_S3E_INTERNAL_ERROR];
    return &cn__s3_errs[e];
}

const char *cn_s3_err_code(cn_s3_err_t e)
{
    return row(e)->code;
}
int cn_s3_err_status(cn_s3_err_t e)
{
    return row(e)->status;
}
const char *cn_s3_err_message(cn_s3_err_t e)
{
    return row(e)->message;
}

cn_s3_err_t cn_s3_err_from_cn(cn_err_t err)
{
    switch (err) {
    case CN_OK: return CN_S3E_NONE;
    case CN_E_NOT_FOUND: return CN_S3E_NO_SUCH_KEY;
    case CN_E_EXISTS: return CN_S3E_BUCKET_ALREADY_OWNED;
    case CN_E_INVALID: return CN_S3E_INVALID_ARGUMENT;
    case CN_E_DIGEST_MISMATCH: return CN_S3E_BAD_DIGEST;
    case CN_E_LENGTH_MISMATCH: return CN_S3E_INCOMPLETE_BODY;
    case CN_E_TOO_LARGE: return CN_S3E_ENTITY_TOO_LARGE;
    case CN_E_LIMIT: return CN_S3E_INVALID_ARGUMENT;
    case CN_E_BUSY: return CN_S3E_SLOW_DOWN;
    case CN_E_RATE_LIMITED: return CN_S3E_SLOW_DOWN;
    case CN_E_DENIED: return CN_S3E_ACCESS_DENIED;
    case CN_E_AUTH: return CN_S3E_ACCESS_DENIED;
    case CN_E_CONFLICT: return CN_S3E_CONDITIONAL_CONFLICT;
    case CN_E_NOT_EMPTY: return CN_S3E_BUCKET_NOT_EMPTY;
    case CN_E_RANGE: return CN_S3E_INVALID_RANGE;
    case CN_E_PROTOCOL: return CN_S3E_INVALID_REQUEST;
    case CN_E_UNSUPPORTED: return CN_S3E_NOT_IMPLEMENTED;
    case CN_E_TIMEOUT: return CN_S3E_REQUEST_TIMEOUT;
    case CN_E_NO_UPLOAD: return CN_S3E_NO_SUCH_UPLOAD;
    case CN_E_SHUTDOWN: return CN_S3E_SERVICE_UNAVAILABLE;
    case CN_E_DB_LOCKED: return CN_S3E_SERVICE_UNAVAILABLE;
    case CN_E_UNAVAILABLE: return CN_S3E_SERVICE_UNAVAILABLE;
    case CN_E_PRECONDITION: return CN_S3E_PRECONDITION_FAILED;
    case CN_E_NOT_MODIFIED: return CN_S3E_NOT_MODIFIED;
    default: return CN_S3E_INTERNAL_ERROR;
    }
}

cn_err_t cn_s3_error_xml(cn_buf_t *out, cn_s3_err_t e, const char *message, const char *resource,
                         const char *request_id, const char *host_id)
{
    cn_xml_writer_t w;
    cn_xml_begin(&w, out);
    cn_xml_open(&w, "Error", NULL);
    cn_xml_elem(&w, "Code", cn_s3_err_code(e));
    cn_xml_elem(&w, "Message", message ? message : cn_s3_err_message(e));
    if (resource)
        cn_xml_elem(&w, "Resource", resource);
    if (request_id)
        cn_xml_elem(&w, "RequestId", request_id);
    if (host_id)
        cn_xml_elem(&w, "HostId", host_id);
    cn_xml_close(&w);
    return cn_xml_finish(&w);
}
