/* The small-blob journal: the group committer's durability device.
 *
 * A batch of small blobs becomes durable with ONE fdatasync: their stored
 * bytes are appended as records to DATA/store.journal and the journal is
 * synced; only then are the staged files (written, not synced) renamed into
 * place.  Blob files and their names reach the disk later, at a checkpoint
 * (backend sync, then the journal is truncated).  After a crash the files a
 * journal record names may be missing or torn, so cn_store_open replays the
 * journal before it serves anything: every valid record whose blob is absent
 * or does not hash to its digest is rewritten, synced, and only then the
 * journal is emptied.
 *
 * Record (little-endian):  "CNJ1" | payload_len u32 | form u8 | 0 u8[3] |
 *                          digest[32] | crc32c(first 44 bytes) u32 | payload
 * The header checksum finds a torn tail; the payload is checked against the
 * digest itself.  Replay stops at the first record that does not check out:
 * records after it were never acknowledged (a batch is acknowledged only
 * after the sync that covers all of it).
 *
 * Only the committer thread touches the journal while the store is open;
 * open and close run before it starts and after it stops.
 */
#include "store/store_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/util.h"

#define REC_HDR 48
#define CHECKPOINT_BYTES (64ull << 20)
static const uint8_t rec_magic[4] = { 'C', 'N', 'J', '1' };

cn_err_t cn__journal_checkpoint(cn_store_t *s)
{
    if (s->journal_len == 0)
        return CN_OK;
    /* J3: every name and file the journal covers is durable before the
     * journal forgets them. */
    CN_TRY(s->be->ops->sync(s->be));
    if (ftruncate(s->journal_fd, 0) < 0 || fdatasync(s->journal_fd) < 0)
        return -errno;
    s->journal_len = 0;
    s->checkpoints++;
    return CN_OK;
}

cn_err_t cn__journal_commit(cn_store_t *s, cn__commit_req_t *batch)
{
    cn_buf_reset(&s->journal_buf);
    for (cn__commit_req_t *r = batch; r; r = r->next) {
        if (r->packed)
            continue; /* its pack record is its journal (pack.c) */
        /* Replay accepts every record written here: one it refused would
         * end replay early and lose the acknowledged blobs after it. */
        assert(r->payload_len <= CN__STORE_IO_CHUNK && r->form <= CN_STORE_LZ4);
        uint8_t h[REC_HDR];
        memset(h, 0, sizeof h);
        memcpy(h, rec_magic, 4);
        cn__le32_put(h + 4, (uint32_t)r->payload_len);
        h[8] = (uint8_t)r->form;
        memcpy(h + 12, r->d.b, CN_DIGEST_LEN);
        cn__le32_put(h + 44, cn_crc32c(0, h, 44));
        CN_TRY(cn_buf_append(&s->journal_buf, h, sizeof h));
        CN_TRY(cn_buf_append(&s->journal_buf, r->payload, r->payload_len));
    }
    /* J1: a failed write or sync leaves journal_len where it was; the next
     * batch overwrites the tail, and replay never trusts an unsynced tail
     * because it stops at the first record that does not check out. */
    CN_TRY(cn_pwrite_full(s->journal_fd, s->journal_buf.data, s->journal_buf.len, s->journal_len));
    int64_t t0 = cn_mono_ns();
    if (fdatasync(s->journal_fd) < 0)
        return -errno;
    cn_metric_observe_ns(cn__store_metrics()->fsync_journal, cn_mono_ns() - t0);
    s->journal_len += s->journal_buf.len;
    return CN_OK; /* J2, W2: the batch is durable; only now is it renamed and acknowledged */
}

cn_err_t cn__journal_maybe_checkpoint(cn_store_t *s)
{
    return s->journal_len >= CHECKPOINT_BYTES ? cn__journal_checkpoint(s) : CN_OK;
}

/* Writes payload into a fresh staging file, synced; *name receives it. */
static cn_err_t stage_payload(cn_store_t *s, const uint8_t *p, size_t n, char name[48], int *fd)
{
    CN_TRY(cn__store_staging_name(name));
    int f = openat(s->staging_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (f < 0)
        return -errno;
    cn_err_t rc = cn_write_full(f, p, n);
    if (rc == CN_OK && fdatasync(f) < 0)
        rc = -errno;
    if (rc < 0) {
        close(f);
        unlinkat(s->staging_fd, name, 0);
        return rc;
    }
    *fd = f;
    return CN_OK;
}

/* Replays one record.  *valid = false: the record does not check out (torn). */
static cn_err_t replay_one(cn_store_t *s, const cn_digest_t *d, cn_store_form_t form,
                           const uint8_t *p, size_t n, bool *valid, bool *repaired)
{
    char name[48];
    int fd = -1;
    cn_digest_t got;
    *valid = false;
    *repaired = false;
    CN_TRY(stage_payload(s, p, n, name, &fd));
    cn_err_t rc = cn__store_hash_fd(fd, n, form, &got);
    close(fd);
    if (rc == CN_E_CORRUPT || (rc == CN_OK && memcmp(got.b, d->b, CN_DIGEST_LEN) != 0)) {
        rc = CN_OK; /* torn: stop here */
        goto out;
    }
    if (rc < 0)
        goto out;
    *valid = true;

    /* Is the published file whole? */
    cn__be_stat_t st;
    int bfd;
    rc = s->be->ops->open(s->be, d, &bfd, &st);
    if (rc == CN_OK) {
        cn_err_t hrc = cn__store_hash_fd(bfd, st.size, st.form, &got);
        close(bfd);
        if (hrc == CN_OK && memcmp(got.b, d->b, CN_DIGEST_LEN) == 0)
            goto out; /* intact */
        if (hrc < 0 && hrc != CN_E_CORRUPT) {
            rc = hrc;
            goto out;
        }
        if ((rc = s->be->ops->remove(s->be, d, NULL)) < 0 && rc != CN_E_NOT_FOUND)
            goto out;
        if (rc == CN_OK) /* the usage totals counted the torn file */
            cn__store_usage_note(s, -1, -(int64_t)st.size);
    } else if (rc != CN_E_NOT_FOUND) {
        goto out;
    }
    bool existed;
    rc = s->be->ops->put(s->be, s->staging_fd, name, d, form, CN__BE_PUT_SYNC, &existed);
    *repaired = rc == CN_OK && !existed;
    if (*repaired)
        cn__store_usage_note(s, 1, (int64_t)n);
out:
    if (!*repaired)
        unlinkat(s->staging_fd, name, 0);
    return rc;
}

static cn_err_t replay(cn_store_t *s, unsigned *records, unsigned *repaired)
{
    uint8_t *payload = malloc(CN__STORE_IO_CHUNK);
    if (!payload)
        return -ENOMEM;
    uint64_t off = 0;
    cn_err_t rc = CN_OK;
    for (;;) {
        uint8_t h[REC_HDR];
        ssize_t r = pread(s->journal_fd, h, sizeof h, (off_t)off);
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r < (ssize_t)sizeof h || memcmp(h, rec_magic, 4) != 0 ||
            cn__le32_get(h + 44) != cn_crc32c(0, h, 44))
            break;
        uint32_t n = cn__le32_get(h + 4);
        if (n > CN__STORE_IO_CHUNK || h[8] > CN_STORE_LZ4)
            break;
        if ((r = pread(s->journal_fd, payload, n, (off_t)(off + sizeof h))) < 0) {
            rc = -errno;
            break;
        }
        if ((uint32_t)r != n)
            break;
        cn_digest_t d;
        memcpy(d.b, h + 12, CN_DIGEST_LEN);
        bool valid, fixed;
        if ((rc = replay_one(s, &d, (cn_store_form_t)h[8], payload, n, &valid, &fixed)) < 0)
            break;
        if (!valid)
            break;
        (*records)++;
        *repaired += fixed;
        off += sizeof h + n;
    }
    free(payload);
    return rc;
}

cn_err_t cn__journal_open(cn_store_t *s)
{
    s->journal_fd = openat(s->data_fd, "store.journal", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->journal_fd < 0)
        return -errno;
    unsigned records = 0, repaired = 0;
    CN_TRY(replay(s, &records, &repaired));
    if (records)
        cn_info("store", "recovery: journal held %u blob(s), %u rewritten", records, repaired);
    /* Whatever the journal held is now in place; make that durable and
     * start from an empty journal (also dropping an unacknowledged tail). */
    off_t size = lseek(s->journal_fd, 0, SEEK_END);
    if (size < 0)
        return -errno;
    s->journal_len = (uint64_t)size;
    return cn__journal_checkpoint(s);
}

void cn__journal_close(cn_store_t *s)
{
    if (s->journal_fd < 0)
        return;
    cn_err_t rc = cn__journal_checkpoint(s);
    if (rc < 0)
        cn_warn("store", "journal checkpoint at close failed (replayed at next open): %s",
                cn_strerror(rc));
    close(s->journal_fd);
    s->journal_fd = -1;
    cn_buf_free(&s->journal_buf);
}
