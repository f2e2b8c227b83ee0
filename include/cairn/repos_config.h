/* cairn repos config: the schema of a repository's `.scribe/config.toml`
 * (docs/repo-config.md): `version = 1`, the ordered lock rules of `[locks]`,
 * the mounts of `[mounts.NAME]`, and free `[profiles.*]`.
 *
 * The text is parsed whole by the strict TOML 1.0.0 parser (cairn/toml.h)
 * and then validated against the schema; a config is accepted only when
 * both hold, so the server and the client judge the same bytes the same way.
 * Pure: no files, no sockets, no clocks, no global state.  It never reads
 * `profiles` beyond checking that it is TOML, and never half-accepts a
 * config: any broken rule refuses the whole text.
 *
 * Threads: every function is reentrant; a parsed config is plain data owned
 * by the caller.
 */
#ifndef CAIRN_REPOS_CONFIG_H
#define CAIRN_REPOS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CN_LOCK_MODE_NONE = 0,
    CN_LOCK_MODE_REQUIRED = 1
} cn_lock_mode_t;

/* One entry of `[locks].rules`: a glob over canonical repository paths
 * (`*` and `?` inside one segment, `**` a whole segment matching zero or
 * more segments) and what a matching path needs.  First match wins. */
typedef struct cn_repo_lock_rule {
    char *pattern;
    cn_lock_mode_t mode;
} cn_repo_lock_rule_t;

/* One `[mounts.NAME]` table: a path in this repository where another
 * repository's branch appears at a pinned revision. */
typedef struct cn_repo_mount {
    char *name;
    char *path;
    uint8_t repository[16];
    uint8_t branch[16];
    uint64_t revision;
} cn_repo_mount_t;

typedef struct cn_repo_config {
    int64_t version; /* always 1 when parsing succeeded */
    size_t nrules;
    cn_repo_lock_rule_t *rules; /* [locks].rules, in order */
    size_t nmounts;
    cn_repo_mount_t *mounts; /* [mounts.NAME], sorted by name (bytewise) */
} cn_repo_config_t;

#define CN_REPO_CONFIG_MAX 65536 /* bytes of UTF-8 text */

/* The exact text of a repository without `.scribe/config.toml`. */
#define CN_REPO_CONFIG_DEFAULT "version = 1\n"

/* Parses and validates the whole text (<= CN_REPO_CONFIG_MAX bytes of UTF-8,
 * valid TOML 1.0, version = 1, locks.rules entries exactly {pattern, mode},
 * mode "required"|"none", pattern a valid glob (`*`, `?` inside one segment,
 * `**` as a whole segment), mounts exactly {path, repository, branch,
 * revision}; profiles.* any TOML; no other top-level key).  On success fills
 * *out (free its members with cn_repo_config_free).  On failure returns
 * CN_E_INVALID (or -ENOMEM) with a message naming the position and the rule
 * broken in err (when err is not NULL), and *out is zeroed. */
CN_API cn_err_t cn_repo_config_parse(const char *text, size_t len, cn_repo_config_t *out, char *err,
                                     size_t errlen);

/* NULL-safe; frees the members and zeroes *c (not c itself). */
CN_API void cn_repo_config_free(cn_repo_config_t *c);

/* True when both decoded ordered lock-rule lists are equal (pattern and
 * mode, in order).  NULL is equal to a config with no rules. */
CN_API bool cn_repo_config_rules_equal(const cn_repo_config_t *a, const cn_repo_config_t *b);

/* True when the canonical repository path (segments separated by '/', no
 * leading '/') matches a pattern that cn_repo_config_parse accepted. */
CN_API bool cn_repo_glob_match(const char *pattern, const char *path);

/* The first rule matching path, or NULL when none does (mode then NONE). */
CN_API const cn_repo_lock_rule_t *cn_repo_config_match(const cn_repo_config_t *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
