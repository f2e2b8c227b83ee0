/* cairn util: byte buffers, bounds-checked big/little-endian codecs, clocks,
 * logging, and small string helpers.
 *
 * This module knows nothing of storage or protocols.  Decoders built on
 * cn_rd_t never allocate: they hand out slices of the caller's buffer and
 * report truncation as a sticky error instead of reading past the end.
 */
#ifndef CAIRN_UTIL_H
#define CAIRN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <pthread.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- growable byte buffer ------------------------------------------------
 * A zero-initialised cn_buf_t is an empty buffer.  The buffer owns data;
 * cn_buf_free() releases it and accepts an empty buffer. */
typedef struct cn_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} cn_buf_t;

CN_API cn_err_t cn_buf_reserve(cn_buf_t *b, size_t extra); /* -ENOMEM */
CN_API cn_err_t cn_buf_append(cn_buf_t *b, const void *p, size_t n);
CN_API cn_err_t cn_buf_append_str(cn_buf_t *b, const char *s);
CN_API cn_err_t cn_buf_printf(cn_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CN_API cn_err_t cn_buf_put_u8(cn_buf_t *b, uint8_t v);
CN_API cn_err_t cn_buf_put_u16be(cn_buf_t *b, uint16_t v);
CN_API cn_err_t cn_buf_put_u32be(cn_buf_t *b, uint32_t v);
CN_API cn_err_t cn_buf_put_u64be(cn_buf_t *b, uint64_t v);
CN_API cn_err_t cn_buf_put_u16le(cn_buf_t *b, uint16_t v);
CN_API cn_err_t cn_buf_put_u32le(cn_buf_t *b, uint32_t v);
CN_API cn_err_t cn_buf_put_u64le(cn_buf_t *b, uint64_t v);
CN_API void cn_buf_reset(cn_buf_t *b); /* len = 0, keeps memory */
CN_API void cn_buf_free(cn_buf_t *b);

/* ---- bounds-checked reader ---------------------------------------------
 * Reads from a borrowed buffer.  Any read past the end sets err to
 * CN_E_PROTOCOL, returns zeros / NULL, and every later read fails too, so a
 * decoder may read a whole layout and check rd.err once at the end. */
typedef struct cn_rd {
    const uint8_t *p;
    size_t len;
    size_t off;
    cn_err_t err;
} cn_rd_t;

static inline cn_rd_t cn_rd_init(const void *p, size_t len)
{
    cn_rd_t r = { (const uint8_t *)p, len, 0, CN_OK };
    return r;
}
static inline size_t cn_rd_left(const cn_rd_t *r)
{
    return r->err ? 0 : r->len - r->off;
}

CN_API uint8_t cn_rd_u8(cn_rd_t *r);
CN_API uint16_t cn_rd_u16be(cn_rd_t *r);
CN_API uint32_t cn_rd_u32be(cn_rd_t *r);
CN_API uint64_t cn_rd_u64be(cn_rd_t *r);
CN_API uint16_t cn_rd_u16le(cn_rd_t *r);
CN_API uint32_t cn_rd_u32le(cn_rd_t *r);
CN_API uint64_t cn_rd_u64le(cn_rd_t *r);
/* Returns a pointer to the next n bytes inside the reader's buffer (borrowed). */
CN_API const uint8_t *cn_rd_bytes(cn_rd_t *r, size_t n);

/* Unchecked helpers for fixed layouts already known to be long enough. */
static inline uint16_t cn_load_u16be(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t cn_load_u32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t cn_load_u64be(const uint8_t *p)
{
    return (uint64_t)cn_load_u32be(p) << 32 | cn_load_u32be(p + 4);
}
static inline void cn_store_u16be(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void cn_store_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void cn_store_u64be(uint8_t *p, uint64_t v)
{
    cn_store_u32be(p, (uint32_t)(v >> 32));
    cn_store_u32be(p + 4, (uint32_t)v);
}

/* ---- clocks ------------------------------------------------------------- */
CN_API int64_t cn_mono_ms(void); /* CLOCK_MONOTONIC, milliseconds */
CN_API int64_t cn_mono_ns(void);
CN_API int64_t cn_wall_ms(void); /* Unix epoch, milliseconds */
/* Tests only: CAIRN_TEST_CLOCK_SKEW_MS, read here once, is added to every
 * later cn_wall_ms, as on a node whose clock runs ahead (or, < 0, behind)
 * its fleet's.  Call before any thread begins (cairnd's main does). */
CN_API void cn_wall_skew_from_env(void);
/* Sleeps ms milliseconds (a signal does not cut it short); ms <= 0 returns
 * at once.  For back-offs and test hooks, never on an event loop. */
CN_API void cn_sleep_ms(int64_t ms);
/* Initialises c so that pthread_cond_timedwait reads its deadlines on
 * CLOCK_MONOTONIC (a wall clock stepped by NTP or a test's skew never cuts a
 * wait short or stretches it).  pthread_cond_init's result. */
CN_API int cn_cond_init_mono(pthread_cond_t *c);
/* Formats unix milliseconds as RFC 3339 UTC with millisecond precision,
 * e.g. "2026-12-02T14:44:49.123Z".  out must hold CN_RFC3339_LEN bytes. */
#define CN_RFC3339_LEN 80
CN_API void cn_rfc3339(int64_t unix_ms, char out[CN_RFC3339_LEN]);

/* ---- dates (util/date.c): never libc's time-zone lock -------------------- */
/* A UTC civil time, proleptic Gregorian. */
typedef struct cn_civil {
    int year;      /* e.g. 2026; may be <= 0 or > 9999 */
    int mon, mday; /* 1-12, 1-31 */
    int hour, min, sec;
    int wday; /* 0 = Sunday */
} cn_civil_t;
/* unix_s (seconds since 1970-01-01T00:00:00Z, any sign, for years that fit
 * an int) broken down in UTC, as gmtime_r would, by arithmetic alone: takes
 * no lock.  Thread-safe. */
CN_API void cn_civil_from_unix(int64_t unix_s, cn_civil_t *out);

typedef enum cn_date_form {
    CN_DATE_IMF,     /* "Sun, 06 Nov 1994 08:49:37 GMT" (HTTP Date, Last-Modified) */
    CN_DATE_AMZ,     /* "19941106T084937Z" (SigV4's X-Amz-Date) */
    CN_DATE_RFC3339, /* "1994-11-06T08:49:37.123Z" (milliseconds) */
} cn_date_form_t;
#define CN_DATE_MAX 64
/* Writes unix_ms (milliseconds since the epoch, any sign; truncated to the
 * second but for CN_DATE_RFC3339) in form, NUL-terminated, into out (which
 * holds CN_DATE_MAX bytes); returns the length.  Years outside 0000-9999
 * are written with as many digits as they need.  Takes no lock; the one
 * date formatter of the project (HTTP heads, S3, SigV4, Jay).  Thread-safe. */
CN_API size_t cn_date_format(int64_t unix_ms, cn_date_form_t form, char out[CN_DATE_MAX]);

/* ---- logging -------------------------------------------------------------
 * Process-wide, line-oriented, to stderr.  Never pass a secret to these. */
typedef enum {
    CN_LOG_DEBUG,
    CN_LOG_INFO,
    CN_LOG_WARN,
    CN_LOG_ERROR
} cn_log_level_t;
CN_API void cn_log_configure(cn_log_level_t min_level, bool json);
CN_API cn_err_t cn_log_level_parse(const char *s, cn_log_level_t *out);
CN_API void cn_log(cn_log_level_t level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define cn_debug(mod, ...) cn_log(CN_LOG_DEBUG, mod, __VA_ARGS__)
#define cn_info(mod, ...) cn_log(CN_LOG_INFO, mod, __VA_ARGS__)
#define cn_warn(mod, ...) cn_log(CN_LOG_WARN, mod, __VA_ARGS__)
#define cn_error(mod, ...) cn_log(CN_LOG_ERROR, mod, __VA_ARGS__)

/* A site that may log once per request (a face's internal failure, a
 * refused write) logs through its own limit: at most burst lines per
 * period_ms (0: CN_LOG_LIMIT_BURST lines a second), so that a full disk
 * refusing every request does not flood a log that may live on that disk.
 * The first line a new period lets through is preceded by the count of
 * lines left out before it.  Zero-initialised, or with its two settings. */
#define CN_LOG_LIMIT_BURST 10u
typedef struct cn_log_limit {
    int64_t period_ms;
    uint32_t burst;
    _Atomic int64_t start_ms;
    _Atomic uint32_t n;
    _Atomic uint64_t left_out;
} cn_log_limit_t;
/* Whether the site may log now; *left_out: lines it left out before. */
CN_API bool cn_log_allow(cn_log_limit_t *l, uint64_t *left_out);
#define cn_log_limited(lim, level, mod, ...)                                        \
    do {                                                                            \
        uint64_t cn_left_out_;                                                      \
        if (cn_log_allow((lim), &cn_left_out_)) {                                   \
            if (cn_left_out_)                                                       \
                cn_log(level, mod, "%llu more line(s) like the next were left out", \
                       (unsigned long long)cn_left_out_);                           \
            cn_log(level, mod, __VA_ARGS__);                                        \
        }                                                                           \
    } while (0)
#define cn_warn_limited(lim, mod, ...) cn_log_limited(lim, CN_LOG_WARN, mod, __VA_ARGS__)

/* ---- UTF-8 ---------------------------------------------------------------
 * Strict UTF-8 as RFC 3629 defines it: shortest forms only, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF.  NUL is a valid character here;
 * callers that refuse it check for it themselves.  Pure, thread-safe. */

/* The length (1..4) of the well-formed sequence that starts the n > 0 bytes
 * at p, or 0 when they do not start one (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, or a sequence that
 * n cuts short). */
CN_API size_t cn_utf8_seq(const void *p, size_t n);
/* True when the n bytes at p (p may be NULL when n is 0) are strict UTF-8. */
CN_API bool cn_utf8_valid(const void *p, size_t n);

/* ---- I/O helpers ---------------------------------------------------------
 * Loop over short reads/writes and EINTR.  cn_read_full returns the bytes read
 * (less than n only at EOF) or -errno. */
CN_API long long cn_read_full(int fd, void *buf, size_t n);
CN_API cn_err_t cn_write_full(int fd, const void *buf, size_t n);
/* Writes all n bytes of buf at offset off of fd (the file offset unmoved):
 * CN_OK, -errno, or -EIO when a write takes no byte. */
CN_API cn_err_t cn_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
/* Reads exactly n bytes of fd at offset off into buf, over short reads and
 * EINTR: CN_OK, -errno, or short_err when the file ends first (the caller
 * says what a short file means: a stored layout corrupt, a length changed). */
CN_API cn_err_t cn_pread_full(int fd, void *buf, size_t n, uint64_t off, cn_err_t short_err);
/* fsyncs the directory dir itself (so that entries created or renamed in it are durable). */
CN_API cn_err_t cn_fsync_dir(const char *dir);
/* mkdir -p with the given mode. */
CN_API cn_err_t cn_mkdir_p(const char *path, unsigned mode);
/* The file system holding fd: the bytes an unprivileged writer may still
 * take (*avail) and its size (*total; may be NULL).  CN_OK or -errno. */
CN_API cn_err_t cn_fs_space(int fd, uint64_t *avail, uint64_t *total);
/* rm -r of path (a file or a directory tree; symbolic links removed, never
 * followed): CN_OK, also when path or an entry is already gone, or -errno
 * of the first entry that could not be removed (the rest are tried). */
CN_API cn_err_t cn_remove_tree(const char *path);

/* A file replaced only once complete: bytes go to a new temporary beside the
 * target (so the rename stays in one file system), and the target's name never
 * shows a partial file.  cn_file_tmp_beside creates it (mode 0600) with its name
 * in tmp, which must hold strlen(target) + 14 bytes; returns the fd or -errno
 * (CN_E_INVALID when tmp is too small).  cn_file_tmp_publish fsyncs fd, sets
 * mode, closes it and renames tmp over target; cn_file_tmp_discard closes it
 * and removes tmp.  Either one ends the temporary: call exactly one. */
CN_API int cn_file_tmp_beside(const char *target, char *tmp, size_t tmpsz);
CN_API cn_err_t cn_file_tmp_publish(int fd, const char *tmp, const char *target, unsigned mode);
CN_API void cn_file_tmp_discard(int fd, const char *tmp);
/* Replaces target with the n bytes at p through a temporary as above, with
 * the given mode; durable (fsynced) before it is named.  0 or -errno. */
CN_API cn_err_t cn_file_replace(const char *target, const void *p, size_t n, unsigned mode);

/* nwords 64-bit words in the file at path (created, mode 0600), mapped
 * MAP_SHARED into *words for lock-free atomic use by every process that opens
 * it: zeroed when no other process holds it open, then held with a shared
 * flock until cn_shared_words_close (which accepts fd -1 and words NULL).
 * On failure *fd is -1 and *words NULL: -errno, or CN_E_CORRUPT when the
 * file another process holds has another size. */
CN_API cn_err_t cn_shared_words_open(const char *path, size_t nwords, int *fd, void **words);
CN_API void cn_shared_words_close(int fd, void *words, size_t nwords);

#ifdef __cplusplus
}
#endif
#endif
