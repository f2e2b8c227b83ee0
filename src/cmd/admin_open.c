/* Opening a data directory's metadata and store for the offline admin
 * commands (repo backup/restore, store compact), which hold the store alone:
 * a running cairnd makes the open fail with CN_E_BUSY, and the message says
 * to stop it.  Never opens anything a server would need exclusively without
 * saying so. */
#include "admin_open.h"

#include <stdio.h>

static const char *admin_meta; /* --meta or CAIRN_META; NULL: the data dir's */

void cn__admin_set_meta(const char *meta)
{
    admin_meta = meta && *meta ? meta : NULL;
}

const char *cn__admin_meta_target(const char *data)
{
    return admin_meta ? admin_meta : data;
}

static const char *admin_key; /* --identity-key or CAIRN_IDENTITY_KEY */

void cn__admin_set_key(const char *key_file)
{
    admin_key = key_file;
}

const char *cn__admin_key(void)
{
    return admin_key;
}

void cn__admin_open_failed(const char *data, const char *what, cn_err_t e)
{
    fprintf(stderr, "cairn admin: cannot open the %s of %s: %s%s\n", what, data, cn_strerror(e),
            e == CN_E_BUSY ? " (is cairnd running? stop it first)" : "");
}

cn_err_t cn__admin_open_store(const char *data, uint64_t pack_max_bytes, cn_meta_t **meta,
                              cn_store_t **store)
{
    *meta = NULL;
    *store = NULL;
    cn_err_t e = cn_meta_open(cn__admin_meta_target(data), NULL, meta);
    if (e < 0) {
        cn__admin_open_failed(data, "metadata", e);
        return e;
    }
    cn_store_opts_t so = { .meta = *meta, .pack_max_bytes = pack_max_bytes };
    e = cn_store_open(data, &so, store);
    if (e < 0)
        cn__admin_open_failed(data, "store", e);
    return e;
}
