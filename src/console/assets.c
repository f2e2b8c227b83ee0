/* The console's embedded files (the generated console_assets.c, made by
 * scripts/console_assets.py from src/console/web/): index.html at
 * /_cairn/console/ with Cache-Control: no-cache, every other file at
 * /_cairn/console/assets/NAME-HASH8.EXT, immutable for a year since its name
 * changes with its content; gzip bytes when the request accepts them.  Reads
 * nothing at run time. */
#include "console_int.h"

#include <string.h>
#include <strings.h>

#define ASSETS_DIR "assets/"

static const cn__console_asset_t *asset_find(const char *name)
{
    for (const cn__console_asset_t *a = cn__console_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

/* Whether Accept-Encoding lists gzip (or *) without q=0. */
static bool accepts_gzip(const char *ae)
{
    for (const char *p = ae; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",; ");
        bool match = (n == 4 && !strncasecmp(p, "gzip", 4)) || (n == 1 && *p == '*');
        const char *end = p + strcspn(p, ",");
        const char *q = strstr(p, "q=");
        bool zero = q && q < end && q[2] == '0' &&
                    (q[3] == '\0' || q[3] == ',' || q[3] == ' ' ||
                     (q[3] == '.' && strspn(q + 4, "0") > 0 &&
                      !strchr("123456789", q[4 + strspn(q + 4, "0")])));
        if (match && !zero)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* Whether If-None-Match names etag (or is *). */
static bool etag_matches(const char *inm, const char *etag)
{
    if (!inm)
        return false;
    if (!strcmp(inm, "*"))
        return true;
    size_t n = strlen(etag);
    for (const char *p = strstr(inm, etag); p; p = strstr(p + 1, etag))
        if ((p == inm || p[-1] == ' ' || p[-1] == ',' || p[-1] == '/') &&
            (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
    return false;
}

int cn__console_asset_serve(cn_console_t *con, cn_http_req_t *req, const char *rest)
{
    (void)con;
    const cn__console_asset_t *a = NULL;
    bool page = !*rest || !strcmp(rest, "index.html");
    if (page)
        a = asset_find("index.html");
    else if (!strncmp(rest, ASSETS_DIR, sizeof ASSETS_DIR - 1) &&
             strcmp(rest + sizeof ASSETS_DIR - 1, "index.html"))
        a = asset_find(rest + sizeof ASSETS_DIR - 1);
    (void)cn__console_headers(req);
    if (!a)
        return cn__console_respond_error(req, 404, "NotFound", "no such console file");
    (void)cn_http_resp_header(req, "Cache-Control",
                              page ? "no-cache" : "public, max-age=31536000, immutable");
    (void)cn_http_resp_header(req, "ETag", a->etag);
    bool gz = a->gz && accepts_gzip(cn_http_req_header(req, "Accept-Encoding"));
    if (a->gz)
        (void)cn_http_resp_header(req, "Vary", "Accept-Encoding");
    if (etag_matches(cn_http_req_header(req, "If-None-Match"), a->etag)) {
        (void)cn_http_respond_empty(req, 304, 0);
        return 0;
    }
    if (gz)
        (void)cn_http_resp_header(req, "Content-Encoding", "gzip");
    (void)cn_http_respond(req, 200, a->type, gz ? a->gz : a->raw, gz ? a->gz_len : a->raw_len);
    return 0;
}
