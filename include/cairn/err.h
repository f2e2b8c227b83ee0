/* cairn error values.
 *
 * Every fallible function in cairn returns an int: 0 on success, a negative
 * errno (-ENOENT, -ENOSPC, ...) for a failure the system reported, or one of the
 * project codes below, which sit in a reserved range far from any errno.  This
 * is the one service-level error enum: each protocol adapter maps it onto its
 * own wire codes in a single table.  Nothing here may ever exit the process.
 */
#ifndef CAIRN_ERR_H
#define CAIRN_ERR_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CN_BUILDING_LIBRARY)
#define CN_API __attribute__((visibility("default")))
#else
#define CN_API
#endif

typedef int cn_err_t;

enum {
    CN_OK = 0,
    CN_E_BASE = -20000,
    CN_E_AGAIN = CN_E_BASE, /* not ready yet; call again (never an error to report) */
    CN_E_NOT_FOUND,         /* the named thing does not exist */
    CN_E_EXISTS,            /* already exists (create of an existing name) */
    CN_E_INVALID,           /* an argument is malformed or out of range */
    CN_E_DIGEST_MISMATCH,   /* bytes did not hash to the expected digest */
    CN_E_LENGTH_MISMATCH,   /* bytes did not have the expected length */
    CN_E_TOO_LARGE,         /* a body or value exceeds a policy limit */
    CN_E_LIMIT,             /* a count exceeds its hard limit */
    CN_E_BUSY,              /* capacity reached: connections, queue, budget */
    CN_E_DENIED,            /* authenticated, but not allowed */
    CN_E_AUTH,              /* credentials missing, malformed or rejected */
    CN_E_PINNED,            /* refused because a pin protects the target */
    CN_E_CONFLICT,          /* state changed underneath; precondition failed */
    CN_E_NOT_EMPTY,         /* container still holds children */
    CN_E_RANGE,             /* a range does not intersect the target */
    CN_E_CORRUPT,           /* stored data failed verification */
    CN_E_PROTOCOL,          /* the peer broke the wire contract */
    CN_E_UNSUPPORTED,       /* recognised, but not offered by this build */
    CN_E_CLOSED,            /* the peer or the object went away */
    CN_E_TIMEOUT,           /* a deadline passed */
    CN_E_RATE_LIMITED,      /* retry later */
    CN_E_NO_UPLOAD,         /* unknown, completed, aborted or expired upload */
    CN_E_DB,                /* the metadata engine failed */
    CN_E_DB_LOCKED,         /* the metadata engine is held locked by someone else */
    CN_E_SHUTDOWN,          /* the server is stopping */
    CN_E_PRECONDITION,      /* a conditional request's condition did not hold */
    CN_E_NOT_MODIFIED,      /* conditional read: unchanged */
    CN_E_UNAVAILABLE,       /* a backend did not answer within its deadline; retry later */
    CN_E_END                /* one past the last code */
};

/* Returns a static, human-readable description of err (a cn code or -errno).
 * Never NULL; thread-safe. */
CN_API const char *cn_strerror(cn_err_t err);

/* Returns the symbolic name of err ("CN_E_NOT_FOUND", "ENOSPC", ...). */
CN_API const char *cn_errname(cn_err_t err);

/* One structured service failure, the same shape for every service: the
 * class (a cn_err_t: what kind of failure, which an adapter may map alone),
 * a detail code from the service's own detail enum (which rule refused;
 * 0 = none, the class says it all: cn_obj_detail_t, cn_repos_code_t,
 * cn_blobs_detail_t) and one line for humans, never a secret and never
 * parsed: adapters map (class, detail) to their wire codes in one table and
 * only ever copy the message.  Services fill it on failure; a caller zeroes
 * it before a call (or ignores it on success). */
#define CN_FAIL_MESSAGE_MAX 256
typedef struct cn_fail {
    cn_err_t cls;
    uint16_t detail;
    char message[CN_FAIL_MESSAGE_MAX];
} cn_fail_t;

/* Sets f (NULL = ignored) to (cls, detail, the formatted message, cut to
 * fit) and returns cls, so a failing path can `return cn_fail_set(...)`.
 * Thread-safe; f belongs to the caller. */
CN_API cn_err_t cn_fail_set(cn_fail_t *f, cn_err_t cls, uint16_t detail, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with a va_list (for services' own variadic setters). */
CN_API cn_err_t cn_fail_vset(cn_fail_t *f, cn_err_t cls, uint16_t detail, const char *fmt,
                             va_list ap) __attribute__((format(printf, 4, 0)));

#define CN_TRY(expr)             \
    do {                         \
        cn_err_t cn__e = (expr); \
        if (cn__e < 0)           \
            return cn__e;        \
    } while (0)

/* Conditions believed impossible, after SQLite's ALWAYS() and NEVER():
 * `if (CN_ALWAYS(x))` where x must hold, `if (CN_NEVER(x))` where x must not.
 * The code still handles the impossible branch so that a release build
 * (NDEBUG), where these are only branch hints, degrades safely; a debug or
 * sanitizer build aborts on it with the file and line, so a bug that reaches
 * it cannot pass a test quietly.  A condition a test, a peer or the disk can
 * bring about is not impossible: that is a plain `if`.  Each evaluates x once
 * and yields 0 or 1. */
#ifdef NDEBUG
#define CN_ALWAYS(x) (__builtin_expect(!!(x), 1))
#define CN_NEVER(x) (__builtin_expect(!!(x), 0))
#else
#define CN_ALWAYS(x) ((x) ? 1 : (cn__assert_fail("CN_ALWAYS(" #x ")", __FILE__, __LINE__), 0))
#define CN_NEVER(x) ((x) ? (cn__assert_fail("CN_NEVER(" #x ")", __FILE__, __LINE__), 1) : 0)
#endif

/* Writes "file:line: what failed" to stderr and aborts; CN_ALWAYS and
 * CN_NEVER call it in debug builds.  Not for any other use. */
CN_API __attribute__((noreturn)) void cn__assert_fail(const char *what, const char *file, int line);

#ifdef __cplusplus
}
#endif
#endif
