/* The offline admin commands' opener of a data directory (admin_open.c). */
#ifndef CN_CMD_ADMIN_OPEN_H
#define CN_CMD_ADMIN_OPEN_H

#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/util.h"

/* The metadata every admin command opens: `--meta URL` (or CAIRN_META) when
 * given, a fleet's PostgreSQL (docs/fleet.md); else NULL and each command
 * opens its data directory's own.  Set once by cn_cmd_admin before any
 * command runs. */
void cn__admin_set_meta(const char *meta);
/* What cn_meta_open takes for data: the --meta target, else data itself. */
const char *cn__admin_meta_target(const char *data);
/* --identity-key (or CAIRN_IDENTITY_KEY), NULL when not given; set once by
 * cn_cmd_admin with the metadata target. */
void cn__admin_set_key(const char *key_file);
const char *cn__admin_key(void);

/* `cairn admin --meta URL fleet import --from DATA ...` (admin_import.c);
 * argv after "import".  The exit status. */
int cn__admin_fleet_import(const char *data, int argc, char **argv);

/* Prints "cairn admin: cannot open the WHAT of DATA: ..." to stderr, with the
 * hint to stop cairnd when e is CN_E_BUSY. */
void cn__admin_open_failed(const char *data, const char *what, cn_err_t e);

/* Opens data's metadata, then its store (pack_max_bytes as
 * cn_store_opts_t's).  On failure the message is printed and the error
 * returned; either way whatever opened is left in *meta / *store (NULL
 * otherwise) for the caller to close with cn_store_close and cn_meta_close. */
cn_err_t cn__admin_open_store(const char *data, uint64_t pack_max_bytes, cn_meta_t **meta,
                              cn_store_t **store);

/* Takes argv[*i] into t when it is a blob tier flag: --blob-store,
 * --blob-endpoint, --blob-region, --blob-credentials (each with a value) or
 * --blob-virtual-host.  1 taken (*i left on its last word), 0 not a tier
 * flag, -1 a flag without its value. */
int cn__admin_tier_flag(int argc, char **argv, int *i, struct cn_store_tier *t);

/* A store on the blob tier t (t->blob_store set) for a one-shot command,
 * with meta: its staging and a 64 MiB cache in a fresh directory under
 * TMPDIR (default /tmp), whose path is left in dir for
 * cn__admin_scratch_remove (dir[0] is 0 when none was made).  On failure
 * the message is printed and the error returned. */
cn_err_t cn__admin_open_tier(cn_meta_t *meta, const struct cn_store_tier *t, char dir[4096],
                             cn_store_t **store);

/* Removes cn__admin_open_tier's directory and everything in it (after the
 * store is closed); a no-op when dir is "". */
void cn__admin_scratch_remove(const char *dir);

#endif
