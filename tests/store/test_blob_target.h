/* Where a service test keeps its blobs, on either store: with
 * CAIRN_TEST_BLOBS unset, the store's own directory (DATA/blobs, as always);
 * with CAIRN_TEST_BLOBS=s3 (tests/fleet/pg.sh --blob-tier sets it, with
 * CAIRN_TEST_BLOB_ENDPOINT, CAIRN_TEST_BLOB_BUCKET and
 * CAIRN_TEST_BLOB_CREDENTIALS), the S3 tier (docs/fleet.md, "Bytes: the blob
 * tier"): a key prefix of its own in that bucket for each data dir, named
 * after the dir, so that every test starts from an empty store, and the
 * same one again for the same dir, so that a reopen finds its blobs and
 * a second store on that dir's metadata ("another node") shares them, as a
 * fleet's nodes share one tier.  Each store's cache stays in its own
 * directory (DATA/cache).  Header-only, the blobs' counterpart of
 * meta/test_target.h. */
#ifndef CN_TEST_BLOB_TARGET_H
#define CN_TEST_BLOB_TARGET_H

#include "cairn/cache.h"
#include "cairn/store.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the tests' stores keep their blobs in the S3 tier. */
static inline bool cn_test_blobs_tiered(void)
{
    const char *b = getenv("CAIRN_TEST_BLOBS");
    return b && strcmp(b, "s3") == 0;
}

/* The key prefix of data dir dir's blobs in the tier: "cnt-" and the hash
 * of dir (cn_cache_hash), so that a reopen and a second store on that dir
 * find the same one, while every test's own new directory gets its own on a
 * backend made for the run.  Into out. */
static inline void cn_test_blob_prefix(const char *dir, char out[32])
{
    snprintf(out, 32, "cnt-%016" PRIx64, cn_cache_hash(dir, strlen(dir)));
}

/* Points so at the blob target of a store whose metadata is data dir dir's
 * (the dir given to cn_test_meta_for): unchanged for local blobs, else
 * so->tier at the tier under dir's prefix.  The strings are the process's
 * (cn_store_open reads them during the call only).  A tier asked for
 * without its endpoint leaves that NULL, so the open fails. */
static inline void cn_test_blob_target(const char *dir, cn_store_opts_t *so)
{
    static char store[320];
    char prefix[32];
    if (!cn_test_blobs_tiered())
        return;
    const char *bucket = getenv("CAIRN_TEST_BLOB_BUCKET");
    cn_test_blob_prefix(dir, prefix);
    snprintf(store, sizeof store, "s3://%s/%s", bucket ? bucket : "", prefix);
    so->tier.blob_store = store;
    so->tier.endpoint = getenv("CAIRN_TEST_BLOB_ENDPOINT");
    so->tier.credentials_file = getenv("CAIRN_TEST_BLOB_CREDENTIALS");
}

/* Runs CAIRN_TEST_BLOB_TOOL (tests/fleet/blobtier.py) verb ("ls" or "rm")
 * on dir's prefix; its output as popen's, or NULL. */
static inline FILE *cn_test_blob_tool(const char *verb, const char *dir)
{
    const char *tool = getenv("CAIRN_TEST_BLOB_TOOL");
    char cmd[600], prefix[32];
    cn_test_blob_prefix(dir, prefix);
    int n =
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' %s '%s/'", tool ? tool : "", verb, prefix);
    if (!tool || strchr(tool, '\'') || n < 0 || (size_t)n >= sizeof cmd)
        return NULL;
    return popen(cmd, "r");
}

/* The blobs of data dir dir in the tier (the backend's objects under its
 * prefix), or -1 when they cannot be listed. */
static inline long cn_test_blob_count(const char *dir)
{
    FILE *f = cn_test_blob_tool("ls", dir);
    if (!f)
        return -1;
    long n = 0;
    int c;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    return pclose(f) == 0 ? n : -1;
}

/* Deletes every blob of data dir dir from the tier's backend, as a backend
 * that lost them would; the stores' caches keep their copies.  0 or -1. */
static inline int cn_test_blob_remove_all(const char *dir)
{
    FILE *f = cn_test_blob_tool("rm", dir);
    return f && pclose(f) == 0 ? 0 : -1;
}

#endif
