/* The console's mutation guards: a POST, PUT, PATCH or DELETE under
 * /_cairn/console/api/ must carry X-Cairn-Console: 1, an Origin equal to the
 * listener's own (the scheme of the connection and the Host header), and
 * Content-Type: application/json when it sends a body.  A cross-site form or
 * fetch can set neither the custom header (without a CORS preflight, which
 * the console never grants) nor the Origin, so a browser's cookie cannot be
 * ridden from another page.  Pure request inspection; no state. */
#include "console_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Whether the media type of ct (parameters after ';' ignored) is
 * application/json. */
static bool is_json_type(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && !strncasecmp(ct, "application/json", 16);
}

/* Whether origin equals scheme://host, where host is the Host header as
 * sent (hosts compared without case; a default port is not elided: browsers
 * send the Origin as the page's URL had it, which is the Host they sent). */
static bool same_origin(const char *origin, bool tls, const char *host)
{
    if (!origin || !host || !*host)
        return false;
    const char *scheme = tls ? "https://" : "http://";
    size_t sl = strlen(scheme);
    if (strncasecmp(origin, scheme, sl))
        return false;
    origin += sl;
    return strlen(origin) == strlen(host) && !strcasecmp(origin, host);
}

bool cn__console_guard_ok(cn_http_req_t *req, bool has_body)
{
    unsigned m = cn_http_req_method_bit(req);
    if (!(m & (CN_HTTP_POST | CN_HTTP_PUT | CN_HTTP_PATCH | CN_HTTP_DELETE)))
        return true;
    const char *mark = cn_http_req_header(req, "X-Cairn-Console");
    if (!mark || strcmp(mark, "1"))
        return false;
    if (!same_origin(cn_http_req_header(req, "Origin"), cn_http_req_is_tls(req),
                     cn_http_req_header(req, "Host")))
        return false;
    return !has_body || is_json_type(cn_http_req_header(req, "Content-Type"));
}
