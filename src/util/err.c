/* Error names and descriptions for cn_err_t (see include/cairn/err.h). */
#include "cairn/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *text;
} cn__errs[CN_E_END - CN_E_BASE] = {
    [CN_E_AGAIN - CN_E_BASE] = { "CN_E_AGAIN", "try again" },
    [CN_E_NOT_FOUND - CN_E_BASE] = { "CN_E_NOT_FOUND", "not found" },
    [CN_E_EXISTS - CN_E_BASE] = { "CN_E_EXISTS", "already exists" },
    [CN_E_INVALID - CN_E_BASE] = { "CN_E_INVALID", "invalid argument" },
    [CN_E_DIGEST_MISMATCH -
        CN_E_BASE] = { "CN_E_DIGEST_MISMATCH", "content does not match the expected digest" },
    [CN_E_LENGTH_MISMATCH -
        CN_E_BASE] = { "CN_E_LENGTH_MISMATCH", "content does not match the expected length" },
    [CN_E_TOO_LARGE - CN_E_BASE] = { "CN_E_TOO_LARGE", "entity too large" },
    [CN_E_LIMIT - CN_E_BASE] = { "CN_E_LIMIT", "limit exceeded" },
    [CN_E_BUSY - CN_E_BASE] = { "CN_E_BUSY", "server busy" },
    [CN_E_DENIED - CN_E_BASE] = { "CN_E_DENIED", "access denied" },
    [CN_E_AUTH - CN_E_BASE] = { "CN_E_AUTH", "authentication failed" },
    [CN_E_PINNED - CN_E_BASE] = { "CN_E_PINNED", "protected by a pin" },
    [CN_E_CONFLICT - CN_E_BASE] = { "CN_E_CONFLICT", "conflict" },
    [CN_E_NOT_EMPTY - CN_E_BASE] = { "CN_E_NOT_EMPTY", "not empty" },
    [CN_E_RANGE - CN_E_BASE] = { "CN_E_RANGE", "range does not intersect" },
    [CN_E_CORRUPT - CN_E_BASE] = { "CN_E_CORRUPT", "stored data failed verification" },
    [CN_E_PROTOCOL - CN_E_BASE] = { "CN_E_PROTOCOL", "protocol violation" },
    [CN_E_UNSUPPORTED - CN_E_BASE] = { "CN_E_UNSUPPORTED", "not supported" },
    [CN_E_CLOSED - CN_E_BASE] = { "CN_E_CLOSED", "closed" },
    [CN_E_TIMEOUT - CN_E_BASE] = { "CN_E_TIMEOUT", "deadline exceeded" },
    [CN_E_RATE_LIMITED - CN_E_BASE] = { "CN_E_RATE_LIMITED", "rate limit exceeded" },
    [CN_E_NO_UPLOAD - CN_E_BASE] = { "CN_E_NO_UPLOAD", "no such upload" },
    [CN_E_DB - CN_E_BASE] = { "CN_E_DB", "metadata engine error" },
    [CN_E_DB_LOCKED - CN_E_BASE] = { "CN_E_DB_LOCKED", "metadata database is locked" },
    [CN_E_SHUTDOWN - CN_E_BASE] = { "CN_E_SHUTDOWN", "server is shutting down" },
    [CN_E_PRECONDITION - CN_E_BASE] = { "CN_E_PRECONDITION", "precondition failed" },
    [CN_E_NOT_MODIFIED - CN_E_BASE] = { "CN_E_NOT_MODIFIED", "not modified" },
    [CN_E_UNAVAILABLE - CN_E_BASE] = { "CN_E_UNAVAILABLE", "backend unavailable" },
};

const char *cn_strerror(cn_err_t err)
{
    if (err == CN_OK)
        return "ok";
    if (err >= CN_E_BASE && err < CN_E_END && cn__errs[err - CN_E_BASE].text)
        return cn__errs[err - CN_E_BASE].text;
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

const char *cn_errname(cn_err_t err)
{
    if (err == CN_OK)
        return "CN_OK";
    if (err >= CN_E_BASE && err < CN_E_END && cn__errs[err - CN_E_BASE].name)
        return cn__errs[err - CN_E_BASE].name;
    if (err < 0 && err > -4096) {
        const char *n = strerrorname_np(-err);
        if (n)
            return n;
    }
    return "CN_E_UNKNOWN";
}

void cn__assert_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "%s:%d: %s failed\n", file, line, what);
    fflush(stderr);
    abort();
}

cn_err_t cn_fail_vset(cn_fail_t *f, cn_err_t cls, uint16_t detail, const char *fmt, va_list ap)
{
    if (f) {
        f->cls = cls;
        f->detail = detail;
        vsnprintf(f->message, sizeof f->message, fmt, ap);
    }
    return cls;
}

cn_err_t cn_fail_set(cn_fail_t *f, cn_err_t cls, uint16_t detail, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cn_err_t err = cn_fail_vset(f, cls, detail, fmt, ap);
    va_end(ap);
    return err;
}
