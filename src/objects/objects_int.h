/* Internals shared by the objects service's files; never included from
 * another module. */
#ifndef CN_OBJECTS_INT_H
#define CN_OBJECTS_INT_H

#include "cairn/objects.h"
#include "cairn/cache.h"
#include "cairn/meta.h"
#include "cairn/side.h"
#include "cairn/store.h"
#include "meta/sql/objects.h" /* the SQL text: cn__sql_obj[CN_SQL_OBJ_*] */

#include <pthread.h>
#include <stdatomic.h>

/* ---- the read path's caches (cairn/cache.h) ----------------------------------- */
#define CN__CACHE_SLOTS 64 /* entries of the settings and ACL caches */

/* ---- write generations (gen.c) ----------------------------------------------
 * A table of 64-bit words in a file of the data dir, shared by every process
 * that writes the metadata through this service: high 32 bits a generation,
 * low 32 bits the writers in flight.  The rules are at the top of gen.c. */
typedef struct cn__gen cn__gen_t;

#define CN__GEN_SLOTS 4096

/* Opens (creating) DATA/objects.gen: zeroed when no other process has it
 * open, then held with a shared lock until cn__gen_close.  -errno. */
cn_err_t cn__gen_open(const char *data_dir, cn__gen_t **out);
/* The same table as rows of meta (PostgreSQL: a fleet's nodes share no
 * memory), migrated here; a write run must then bump its slot in its own
 * transaction (cn__gen_bump).  Meta errors, -ENOMEM. */
cn_err_t cn__gen_open_rows(cn_meta_t *meta, cn__gen_t **out);
void cn__gen_close(cn__gen_t *g); /* NULL is a no-op */
/* The slot of bucket (by name: known to readers and writers before any SQL). */
size_t cn__gen_slot(const char *bucket);
/* The slot's word now (0 when g is NULL).  Rows mode: one single-statement
 * read of the slot's row (a round trip to the database; never on a loop). */
uint64_t cn__gen_load(const cn__gen_t *g, size_t slot);
/* What a head of (bucket, key) is filed under, read at once: w, the word that
 * must hold for it to be served, and b, the bucket slot's own word (rows
 * mode: the settings word, gen.c 6; the file: w). */
typedef struct cn__hstamp {
    uint64_t w, b;
} cn__hstamp_t;
/* The slot a write run on one key of bucket bumps (cn__write_run_key).  Rows
 * mode: one of 2^20 key slots past the bucket slots (gen.c 7); the file:
 * bucket's slot. */
size_t cn__gen_kslot(const cn__gen_t *g, const char *bucket, const char *key);
/* The stamp of a head of the key whose key slot is kslot in the bucket of
 * slot ({0, 0} when g is NULL).  Rows mode: both rows in one statement, w the
 * sum of their generations (gen.c 7); the file: the bucket slot's word. */
cn__hstamp_t cn__gen_hload(const cn__gen_t *g, size_t slot, size_t kslot);
/* Rows mode: the stamp of the rows' values sum and bgen as a statement of
 * the caller read them (what cn__gen_hload reads); either negative: a word
 * that is never quiet. */
cn__hstamp_t cn__gen_hstamp_rows(int64_t sum, int64_t bgen);
/* Whether g's words are this machine's memory (the file), so a load is an
 * atomic read that any thread, an event loop's too, may make. */
bool cn__gen_local(const cn__gen_t *g);
/* A word no writer was in flight at. */
static inline bool cn__gen_quiet(uint64_t w)
{
    return (uint32_t)w == 0;
}
/* Around a write run: enter before it may commit, leave after it returned
 * (committed or not).  No-ops when g is NULL. */
void cn__gen_enter(cn__gen_t *g, size_t slot);
void cn__gen_leave(cn__gen_t *g, size_t slot);
/* Rows mode: moves slot's word inside txn, the write run's own transaction,
 * as its last statement.  0 (also when g is NULL or maps the file), or a
 * meta error the write run must fail with. */
cn_err_t cn__gen_bump(const cn__gen_t *g, cn_meta_txn_t *txn, size_t slot);
/* The slot's settings word (gen.c, invariant 6): moved only by settings
 * write runs (buckets.c), around which senter/sleave go as enter/leave do
 * (senter before the write run enters, sleave after it left).  Rows mode:
 * the slot's row, as cn__gen_load; senter/sleave do nothing. */
uint64_t cn__gen_sload(const cn__gen_t *g, size_t slot);
void cn__gen_senter(cn__gen_t *g, size_t slot);
void cn__gen_sleave(cn__gen_t *g, size_t slot);

/* cn__write_run for a run that changes the head of key alone (its version
 * rows, their tags, ACL or parts): rows mode bumps the key's slot instead of
 * the bucket's, so writers of different keys share no row (gen.c 7). */
cn_err_t cn__write_run_key(cn_objects_t *o, const char *bucket, const char *key, unsigned flags,
                           cn_meta_body_fn body, void *ctx);
/* Runs a write transaction on bucket's objects or settings (cn_meta_run's
 * flags, body and result) between cn__gen_enter and cn__gen_leave of
 * bucket's slot.  Every write run of this service on a bucket goes through
 * here (cn__bkt_run does it for write flags). */
cn_err_t cn__write_run(cn_objects_t *o, const char *bucket, unsigned flags, cn_meta_body_fn body,
                       void *ctx);

/* Hands the parts a body read into rows (each a cn_objects_part_t; a body
 * run with CN_META_RETRY collects them, so a repeat never hands a part
 * twice) to fn while err, then fn's returns, are 0; frees rows; returns the
 * last err. */
cn_err_t cn__parts_hand(cn_err_t err, cn_buf_t *rows, cn_objects_part_fn fn, void *arg);

/* The running SHA-256 of uploads in progress (mpu_chain.c). */
typedef struct cn__chains cn__chains_t;

struct cn_objects {
    cn_meta_t *meta;
    cn_store_t *store;
    cn_objects_opts_t opts; /* with defaults applied */
    pthread_t sweeper;
    bool sweeper_running;
    pthread_mutex_t mu; /* guards stop, for the sweeper's wait */
    pthread_cond_t cv;
    bool stop;
    cn_cache_t buckets; /* cn__bkt_t by name, version (bucket_id, gen) */
    cn_cache_t acls;    /* cn__acl_ent_t by the ACL's stored text */
    cn__gen_t *gen;     /* the data dir's write generations; NULL = heads uncached */
    cn_cache_t heads;   /* cn__objhead_t by (bucket, key), version (slot generation, 0) */
    struct cn_metric *head_hits, *head_misses;
    cn_cache_t lcs;            /* decoded lifecycle rules by bucket (lifecycle.c) */
    struct cn__lc *lc;         /* the lifecycle worker (lifecycle_run.c); NULL = not started */
    _Atomic int64_t lc_day_ms; /* a test's lifecycle day (x-amz-expiration); 0 = real days */
    cn__chains_t *chains;      /* NULL: completions always read their parts */
    cn_side_t *hashpool;       /* large put bodies' hashes (put.c); NULL: inline */
};

/* A committed part as the upload chains know it. */
typedef struct cn__chain_part {
    int32_t number;
    cn_digest_t digest;
    uint64_t size;
} cn__chain_part_t;

/* The chain table: NULL when memory is short (no chains, never wrong). */
cn__chains_t *cn__chains_new(void);
void cn__chains_free(cn__chains_t *cs);
/* A part's own continuation of its upload's chain: the chain's state over
 * its first base parts (copied when the part began), fed the part's bytes as
 * they stream.  Part 1's SHA-256 over its bytes alone is one with base 0
 * (serial and token 0: any chain's empty state, no claim). */
typedef struct cn__chain_feed {
    cn_sha256_t *sha; /* NULL: none */
    uint64_t serial;  /* the chain copied (base > 0) */
    size_t base;      /* parts the copied state covers: the part is base + 1 */
    uint64_t token;   /* the chain's claim, 0 none: one feed at a time */
} cn__chain_feed_t;
/* When part number of upload_id begins: if the chain covers exactly parts
 * 1..number-1, is idle and no other part feeds it, copies its state into *f
 * and claims it (true).  false and f->sha NULL otherwise: the part will be
 * read back.  The chain itself is never fed: it takes f's state only at
 * commit (cn__chain_part_done), so a part that fails leaves it as it was. */
bool cn__chain_feed_begin(cn_objects_t *o, const char *upload_id, int32_t number,
                          cn__chain_feed_t *f);
/* A part that will not commit: frees f's state and releases its claim. */
void cn__chain_feed_end(cn_objects_t *o, const char *upload_id, cn__chain_feed_t *f);
/* After part's row of upload_id committed: notes it and, when it is the next
 * in number order and no other thread is at it, extends the upload's running
 * SHA-256 with it, and then with any noted parts after it.  A feed f (may be
 * NULL; its state taken or freed, its claim released in every case) that
 * continues the chain as it stands is taken as the next state: that part is
 * not read.  Any other part is read back from the store. */
void cn__chain_part_done(cn_objects_t *o, const char *upload_id, const cn__chain_part_t *part,
                         cn__chain_feed_t *f);
/* Parts read back from the store for an upload's SHA-256: by the chain
 * (by="chain") or by completion's read pass (by="complete"); and parts the
 * chain took as they streamed.  Metrics, for tests and the operator. */
void cn__chain_count_reads(bool complete, size_t parts);
/* Completion: removes upload_id's chain and returns its SHA-256 context
 * (the caller's to update, final or free) when the parts it hashed are
 * exactly parts[0..*covered); NULL (and *covered 0) otherwise. */
cn_sha256_t *cn__chain_take(cn_objects_t *o, const char *upload_id, const cn__chain_part_t *parts,
                            size_t n, size_t *covered);
/* Abort: forgets upload_id's chain. */
void cn__chain_drop(cn_objects_t *o, const char *upload_id);

/* Stops and frees o's lifecycle worker (lifecycle_run.c); a no-op when none.
 * Called by cn_objects_close before anything else goes. */
void cn__lc_stop(cn_objects_t *o);

/* A bucket row with its access state compiled once per change: ACL parsed,
 * policy compiled, public access block decoded, and (attrs_cached) its named
 * settings.  Shared through the objects handle's bucket cache, valid for
 * exactly one (id, gen): immutable, read-only for whoever holds it. */
typedef struct cn__bkt {
    cn_cent_t ent; /* key = name; version = (id, gen) */
    int64_t id;
    int64_t gen;
    char name[CN_BUCKET_NAME_MAX + 1];
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    int64_t created_ms;
    bool has_acl;
    cn_authz_acl_t *acl;       /* NULL when has_acl is false */
    cn_authz_policy_t *policy; /* NULL = none */
    bool has_pab;
    cn_authz_pab_t pab;
    /* Named settings, when attrs_cached: entries of [u32 name len] name
     * [u32 value len] value, by name.  Not cached when they exceed
     * CN__BKT_ATTRS_MAX bytes: then readers ask the database. */
    bool attrs_cached;
    cn_buf_t attrs;
} cn__bkt_t;

#define CN__BKT_ATTRS_MAX (16u * 1024)

/* The access facts of an existing object version.  acl points into a shared
 * parsed ACL (the handle's ACL cache) held through ref. */
typedef struct cn__objacl {
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    const cn_authz_acl_t *acl; /* NULL = private */
    cn_cent_t *ref;
} cn__objacl_t;

/* One parsed ACL of the ACL cache, keyed by its stored text. */
typedef struct cn__acl_ent {
    cn_cent_t ent;
    cn_authz_acl_t acl;
    char text[]; /* the key */
} cn__acl_ent_t;

/* Sets rq's failure details (what, rq->fail with detail 0) and returns err. */
cn_err_t cn__fail(cn_objects_req_t *rq, cn_err_t err, cn_objects_what_t what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same for a refusal by a named rule: detail is the cn_obj_detail_t,
 * raised with the class objects.h lists for it. */
cn_err_t cn__fail_d(cn_objects_req_t *rq, cn_err_t err, cn_objects_what_t what,
                    cn_obj_detail_t detail, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Why key (which cn_objects_key_ok refused) is refused: KEY_TOO_LONG over
 * CN_OBJECT_KEY_MAX bytes, KEY_INVALID otherwise. */
cn_obj_detail_t cn__key_detail(const char *key);

/* Loads bucket name inside txn: *out is held (cn__bkt_release), from the
 * bucket cache when its (bucket_id, gen) is current in txn, else compiled
 * from the row and offered to the cache.  CN_E_NOT_FOUND (what = BUCKET),
 * CN_E_INVALID for a bad name (what = BUCKET), CN_E_CORRUPT for unreadable
 * stored state. */
cn_err_t cn__bkt_load(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq, const char *name,
                      const cn__bkt_t **out);
/* What a put's pre-read learns beside its bucket where the words are rows
 * (PostgreSQL; gen.c, 6), in the bucket's own statement and snapshot: the
 * bucket's settings word, and whether key has a current version.  Read
 * runs only: in a SERIALIZABLE write those reads would make every other
 * writer of the bucket's slot, and of key's index page, a conflict. */
typedef struct cn__bkt_peek {
    const char *key; /* in */
    uint64_t word;   /* 0 where the words are not rows */
    bool key_seen;   /* false where the words are not rows */
} cn__bkt_peek_t;
/* cn__bkt_load that also fills *pk (cn__bkt_peek_t). */
cn_err_t cn__bkt_load_peek(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                           const char *name, const cn__bkt_t **out, cn__bkt_peek_t *pk);
/* The same for a bucket whose (id, gen) the caller read in txn by name. */
cn_err_t cn__bkt_get(cn_objects_t *o, cn_meta_txn_t *txn, const char *name, int64_t id, int64_t gen,
                     const cn__bkt_t **out);
/* Compiles a bucket from its row's values (acl, policy: stored text or
 * NULL; pab: bits or -1 for none) into a new entry held once by the caller,
 * not offered to any cache; attrs are not loaded.  CN_E_CORRUPT, -ENOMEM. */
cn_err_t cn__bkt_build(int64_t id, int64_t gen, const char *name, const char *owner,
                       int64_t created_ms, const char *acl, size_t acl_len, const char *policy,
                       size_t policy_len, int64_t pab, cn__bkt_t **out);
void cn__bkt_release(const cn__bkt_t *b); /* NULL is a no-op */
/* Named setting name of b, when b->attrs_cached: 1 with value and len set,
 * 0 when unset. */
int cn__bkt_attr(const cn__bkt_t *b, const char *name, const void **value, size_t *len);
/* The one reader of a bucket's named setting name inside txn: from b's
 * cached settings when b (bucket_id's entry as loaded in txn, or NULL when
 * the caller has none loaded there) holds them, else one query.  1 when set,
 * its value appended to out (NULL: only whether it is set), 0 when unset,
 * or a meta error or -ENOMEM. */
cn_err_t cn__bkt_setting(cn_meta_txn_t *txn, const cn__bkt_t *b, int64_t bucket_id,
                         const char *name, cn_buf_t *out);
/* cn_objects_bucket_peek's read, always through SQL (buckets.c). */
cn_err_t cn__bkt_peek_sql(cn_objects_t *o, const char *bucket, char owner[CN_ACCOUNT_NAME_MAX + 1],
                          const char *attr, cn_buf_t *value, bool *has_attr);
/* bucket's owner, as cn_objects_bucket_peek reads it, from the entry cached
 * under the bucket's settings word (lifecycle.c; gen.c, invariant 6) or, on
 * a miss, read and filed with the bucket's lifecycle rules.  On PostgreSQL,
 * where loading a word is SQL itself, always the plain read. */
cn_err_t cn__bkt_owner(cn_objects_t *o, const char *bucket, char owner[CN_ACCOUNT_NAME_MAX + 1]);
/* The authz view of b (borrows b). */
void cn__bkt_view(const cn__bkt_t *b, cn_authz_bucket_t *out);

/* A transaction body run on one bucket: b was loaded in txn and the
 * bucket-level action checked (cn__bkt_run).  Returns as a cn_meta_body_fn. */
typedef cn_err_t (*cn__bkt_body_fn)(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                    void *ctx);
/* Runs, in one transaction of the kind flags names (cn_meta_run), the load of
 * bucket (cn__bkt_load), the check of act on it (cn__authorize with no key,
 * object or conditions; skipped for CN_ACT_INVALID, when body decides) and
 * then body.  Returns body's value, cn__bkt_load's or cn__authorize's error,
 * or as cn_meta_run.  Any thread. */
cn_err_t cn__bkt_run(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                     cn_authz_action_t act, unsigned flags, cn__bkt_body_fn body, void *ctx);
/* cn__bkt_run of a read run that loads the bucket by cn__bkt_load_peek:
 * *pk as the attempt that returned read it. */
cn_err_t cn__bkt_run_peek(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                          cn_authz_action_t act, unsigned flags, cn__bkt_body_fn body, void *ctx,
                          cn__bkt_peek_t *pk);

/* One authorization decision: CN_E_DENIED with a message in rq, or 0.
 * bucket NULL for account-level actions; obj NULL for none/a new key.
 * cond (may be NULL) supplies s3:prefix / delimiter / max-keys / x-amz-acl. */
typedef struct cn__cond {
    const char *prefix, *delimiter, *max_keys, *x_amz_acl;
    /* s3:ExistingObjectTag/<k>: the object's tags (with obj); and the
     * request's tag set (s3:RequestObjectTag/<k>, s3:RequestObjectTagKeys;
     * req_tags_given false = none). */
    const cn_authz_tag_t *obj_tags;
    size_t nobj_tags;
    const cn_authz_tag_t *req_tags;
    size_t nreq_tags;
    bool req_tags_given;
} cn__cond_t;
cn_err_t cn__authorize(cn_objects_req_t *rq, const cn__bkt_t *bucket, cn_authz_action_t act,
                       const char *key, const cn__objacl_t *obj, const cn__cond_t *cond);

/* Authorizes act on key after a lookup that returned found: 0 (the version
 * exists; obj holds its access facts), CN_E_NOT_FOUND (none), or an error,
 * which is returned as is.  "Key does not exist" is told only to whom act is
 * allowed on a missing key; anyone else gets CN_E_DENIED. */
cn_err_t cn__authorize_found(cn_objects_req_t *rq, const cn__bkt_t *b, cn_authz_action_t act,
                             const char *key, cn_err_t found, const cn__objacl_t *obj);

/* BlockPublicAcls on a write that carries an ACL (PutObject, CopyObject,
 * CreateMultipartUpload, PutObjectAcl, PutBucketAcl): CN_E_DENIED with a
 * message in rq when b's public access block refuses acl (NULL passes), else 0. */
cn_err_t cn__pab_put_acl(cn_objects_req_t *rq, const cn__bkt_t *b, const cn_authz_acl_t *acl);

/* The access check of a write that creates key in b (PutObject, the
 * destination of CopyObject, CreateMultipartUpload): s3:PutObject with args'
 * canned ACL as x-amz-acl, then the public access block against args' ACL
 * (args may be NULL).  CN_E_DENIED with a message in rq, or 0. */
cn_err_t cn__put_authorize(cn_objects_req_t *rq, const cn__bkt_t *b, const char *key,
                           const cn_objects_put_args_t *args);

/* The object-lock check of the same writes, after cn__put_authorize, for every
 * face (objects/lock.c): an explicit retention or legal hold in args needs the
 * token's object:lock (CN_E_DENIED) and a bucket with object lock (CN_E_INVALID,
 * CN_OBJ_LOCK_NOT_ENABLED).  0 when args set none. */
cn_err_t cn__lock_put_check(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                            const cn_objects_put_args_t *args);

/* CN_E_INVALID (what = KEY, "invalid key") unless key (may be NULL) is a
 * valid object key, else 0. */
cn_err_t cn__key_check(cn_objects_req_t *rq, const char *key);

/* The caller's account name, or NULL when anonymous. */
const char *cn__principal_name(const cn_objects_req_t *rq);

/* Parses an ACL serialization into a new heap ACL (*out; NULL for text NULL). */
cn_err_t cn__acl_load(const char *text, size_t len, cn_authz_acl_t **out);
/* An object's access facts from its stored owner and ACL text (NULL =
 * private): the ACL parsed once per distinct text through o's ACL cache (o
 * NULL: parsed here, uncached), held in a (release with cn__objacl_free).
 * CN_E_CORRUPT, -ENOMEM. */
cn_err_t cn__objacl_set(cn_objects_t *o, cn__objacl_t *a, const char *owner, size_t owner_len,
                        const char *acl, size_t acl_len);

/* ---- object heads (head.c) --------------------------------------------------
 * What a current-version GET or HEAD needs to answer without SQL, valid while
 * the bucket's generation slot still holds the word stamp (gen.c's rules). */
typedef struct cn__hseg {
    cn_digest_t digest;
    uint64_t size; /* whole blob */
} cn__hseg_t;

typedef struct cn__objhead {
    cn_cent_t ent; /* key = bucket NUL key; version = (stamp >> 32, 0) */
    uint64_t stamp;
    uint64_t bword;     /* the bucket slot's word it was filed under (cn__hstamp_t.b) */
    const cn__bkt_t *b; /* held */
    cn__objacl_t acl;   /* held */
    int64_t bucket_id;
    cn_object_info_t info;
    size_t nsegs;
    cn__hseg_t *segs;
    char kbuf[];
} cn__objhead_t;

/* The cache of o (off when data_dir is NULL or the engine is not SQLite):
 * cn__objhead_init opens the generation table and registers the metrics;
 * -errno when the table cannot be opened (a writer that could not bump it
 * would leave other processes' caches stale).  cn__objhead_destroy accepts a
 * handle whose init failed. */
cn_err_t cn__objhead_init(cn_objects_t *o, const char *data_dir);
void cn__objhead_destroy(cn_objects_t *o);
/* The head of (bucket, key), held (cn__objhead_release), when it is cached
 * under the slot's current word; else NULL with *stamp set to that word, to
 * be read before the SQL read whose result cn__objhead_offer may file.  Counts
 * a hit or a miss.  NULL with *stamp quiet never happens while a writer of
 * the slot is in flight: nothing may be filed then.  Rows mode, no head of
 * the key cached: NULL with *stamp never quiet, and no read of the word (the
 * miss reads it in its own statement: gen.c). */
const cn__objhead_t *cn__objhead_find(cn_objects_t *o, const char *bucket, const char *key,
                                      cn__hstamp_t *stamp);
/* Files what a read transaction begun after stamp was read found (b and
 * acl get a reference of their own; info and segs are copied), unless
 * stamp is not quiet or the cache is off.  Best effort: no error. */
void cn__objhead_offer(cn_objects_t *o, const char *bucket, const char *key, cn__hstamp_t stamp,
                       const cn__bkt_t *b, const cn__objacl_t *acl, int64_t bucket_id,
                       const cn_object_info_t *info, const cn__hseg_t *segs, size_t nsegs);
void cn__objhead_release(const cn__objhead_t *h); /* NULL is a no-op */
/* Whether (bucket, key)'s slots still hold stamp (a hit's second look). */
bool cn__objhead_current(const cn_objects_t *o, const char *bucket, const char *key,
                         uint64_t stamp);
/* A deep copy of src's strings into dst.  -ENOMEM (dst then zeroed). */
cn_err_t cn__info_copy(cn_object_info_t *dst, const cn_object_info_t *src);

/* Allocates the next bucket id in a write txn (never reused: a bucket
 * deleted and created again never matches the old one's cache entries). */
cn_err_t cn__next_bucket_id(cn_meta_txn_t *txn, int64_t *out);
/* Allocates the next version id in a write txn: unique and increasing, with
 * gaps on PostgreSQL (a sequence: objects schema v6). */
cn_err_t cn__next_version(cn_meta_txn_t *txn, int64_t *out);

/* Looks up the current version of key: *version_id (0 if none) and, when
 * obj is not NULL, its owner and ACL. */
cn_err_t cn__version_find(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                          int64_t *version_id, char etag[CN_ETAG_MAX], cn__objacl_t *obj);
/* cn__version_find (no owner or ACL) and cn__next_version in one: on
 * PostgreSQL one statement, the id taken even when the caller then refuses
 * (a sequence's gap).  Their errors, CN_E_CORRUPT. */
cn_err_t cn__version_find_next(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                               int64_t *version_id, char etag[CN_ETAG_MAX], int64_t *next);
void cn__objacl_free(cn__objacl_t *a);

/* The columns of cn__version_row's statement (CN_SQL_OBJ_VERSION_ROW), in order. */
enum {
    CN__VCOL_ID,
    CN__VCOL_SIZE,
    CN__VCOL_ETAG,
    CN__VCOL_SHA256,
    CN__VCOL_CTYPE,
    CN__VCOL_UMETA,
    CN__VCOL_MTIME,
    CN__VCOL_OWNER,
    CN__VCOL_ACL,
    CN__VCOL_NPARTS,
    CN__VCOL_CKALG,
    CN__VCOL_CKSUM
};
/* Steps a statement onto the current version row of key: 0 with *st on the
 * row (columns CN__VCOL_*; the caller finishes it), else *st is NULL and the
 * result CN_E_NOT_FOUND (what = KEY) when key has no version, or the error. */
cn_err_t cn__version_row(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                         const char *key, cn_meta_stmt_t **st);

/* Deletes a version row and its segments. */
cn_err_t cn__version_delete(cn_meta_txn_t *txn, int64_t version_id);

/* Checks if_none_match / if_match against the current version (etag "" and
 * id 0 when none).  CN_E_PRECONDITION. */
cn_err_t cn__put_conditions(cn_objects_req_t *rq, const cn_objects_put_args_t *a,
                            int64_t cur_version, const char *cur_etag);

/* User metadata <-> stored blob ([u32 n] then n × ([u32 len] key [u32 len] value)). */
cn_err_t cn__umeta_encode(const cn_objects_kv_t *kv, size_t n, cn_buf_t *out);
/* Validates content type and metadata of put args.  CN_E_INVALID. */
cn_err_t cn__put_args_check(cn_objects_req_t *rq, const cn_objects_put_args_t *a);
/* Fills info's owned strings from a content type and a stored metadata blob. */
cn_err_t cn__info_fill(cn_object_info_t *info, const char *ctype, size_t ctype_len,
                       const void *umeta, size_t umeta_len);

/* Serialized ACL of a put (owner rewritten to owner); out->len 0 = private. */
cn_err_t cn__acl_for_put(const cn_authz_acl_t *acl, const char *owner, cn_buf_t *out);

/* Upload row lookup: CN_E_NO_UPLOAD unless upload_id is live (not expired,
 * not completed) for bucket/key.  cksum_alg (may be NULL) receives the
 * upload's checksum algorithm ("" when none). */
cn_err_t cn__upload_check(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                          const char *upload_id, int64_t bucket_id, const char *key,
                          char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX]);

/* The checks of an operation on upload_id of key in b: a valid key, act
 * authorized, then cn__upload_check.  CN_E_INVALID, CN_E_DENIED or
 * CN_E_NO_UPLOAD with details in rq, or 0. */
cn_err_t cn__upload_access(cn_objects_t *o, cn_meta_txn_t *txn, cn_objects_req_t *rq,
                           const cn__bkt_t *b, const char *key, const char *upload_id,
                           cn_authz_action_t act, char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX]);

/* Strings copied into a fresh, NUL-terminated heap string (NULL on ENOMEM). */
char *cn__strndup(const char *p, size_t n);
/* Copies s (n bytes; NULL = "") into dst of cap bytes, cut to fit, and
 * NUL-terminates it: the cheap form of snprintf(dst, cap, "%s", s). */
void cn__strcpy(char *dst, size_t cap, const char *s, size_t n);

/* ---- versions (versions.c) ---------------------------------------------------
 * obj_version holds each key's current version (never a marker);
 * obj_history its noncurrent versions and delete markers.  A key's latest
 * version is its obj_version row, else its newest history row (then a
 * marker: a key whose newest history row is a version has it current).  At
 * most one version of a key is its null version (vnull), in either table.
 * noncurrent_ms of a history row: when a newer version took its place; 0
 * for a marker that is still its key's latest. */

/* Where a resolved version lives. */
typedef enum {
    CN__VT_CURRENT = 1, /* obj_version */
    CN__VT_HISTORY      /* obj_history */
} cn__vtable_t;

/* A resolved version of a key. */
typedef struct cn__vref {
    int64_t version_id;
    bool marker;
    bool vnull;
    cn__vtable_t table;
} cn__vref_t;

/* Resolves version (wire form; NULL = the key's latest) of key in bucket_id
 * inside txn into *out.  CN_E_INVALID (what = ARG, VERSION_ID_INVALID) for a
 * malformed id; CN_E_NOT_FOUND with what = KEY when version is NULL and the
 * key has no version at all, else NO_SUCH_VERSION.  The latest may be a
 * marker (out->marker): the caller decides what that means. */
cn_err_t cn__obj_version_resolve(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                                 const char *key, const char *version, cn__vref_t *out);

/* Whether version_id may be removed for good at now_ms: 0, or CN_E_DENIED
 * (VERSION_LOCKED) while its legal hold is on, its COMPLIANCE retention runs,
 * or its GOVERNANCE retention runs and bypass (asked for and permitted:
 * object:bypass-governance) is false. */
cn_err_t cn__obj_version_removable(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t version_id,
                                   bool bypass, int64_t now_ms);

/* Removes a version for good wherever it is: its row, segments, tags and
 * lock row (no removable check: the caller's).  Pushed (cn_meta_pushf): a
 * failure shows at txn's next statement or its commit. */
cn_err_t cn__obj_version_purge(cn_meta_txn_t *txn, int64_t version_id, cn__vtable_t table);

/* The bucket's versioning state and default retention as read in txn. */
typedef struct cn__vstate {
    cn_objects_versioning_t versioning;
    cn_objects_lock_mode_t default_mode; /* NONE: no default retention */
    int64_t default_ms;                  /* its period */
} cn__vstate_t;
cn_err_t cn__obj_vstate(cn_meta_txn_t *txn, int64_t bucket_id, cn__vstate_t *out);
/* The same for b as loaded in txn (its cached settings when it has them). */
cn_err_t cn__bkt_vstate(cn_meta_txn_t *txn, const cn__bkt_t *b, cn__vstate_t *out);

/* "Make this the current version of key": the one path of every write
 * (PutObject, CopyObject, CompleteMultipartUpload, Jay's put).  In txn:
 * reads the key's current version (cond's if_none_match / if_match judged
 * against it), allocates the new version_id (*vid), calls pre(ctx, vid) if
 * set (rows that must exist before the current one goes: a copy's
 * segments), retires the current version (Enabled: to obj_history; else a
 * null current is removed for good and a non-null one goes to history, and
 * a null version in history is removed for good), calls rows(ctx, vid) to
 * insert the new obj_version row and its segments, then marks it null or
 * not and writes its tags and retention (explicit, else the bucket's
 * default).  vnull and versioned (may be NULL) report the new version.
 *
 * claim (may be NULL), where a statement is a round trip (PostgreSQL, whose
 * writers run side by side under SERIALIZABLE), for a bucket whose
 * versioning was never set and a write without If-Match (a put, a copy, a
 * multipart completion; cn__vclaim_step runs its statement): first
 * inserts the new obj_version row only if key has no current one, taking
 * its id in the same statement (1 and *vid when it did, 0 when key has a
 * current version, or an error).  A key claimed has nothing to retire or
 * judge, so the look is skipped, pre(ctx, vid) is called if set, and
 * rows(ctx, vid) is then called for the segments alone (the callbacks
 * know, by their own claim, which it is); a key not claimed takes the path
 * above.  The look read a range of the key
 * index, whose predicate lock failed concurrent new keys with 40001. */
typedef cn_err_t (*cn__vrows_fn)(cn_meta_txn_t *txn, void *ctx, int64_t vid);
typedef int (*cn__vclaim_fn)(cn_meta_txn_t *txn, void *ctx, int64_t *vid);
/* A claim callback's last step: runs st (the CN_SQL_OBJ_E_VERSION_CLAIM
 * statement, prepared and bound, or NULL when err, its preparation's
 * result, failed), finishes it, and answers as the callback: 1 with *vid,
 * 0, or an error. */
int cn__vclaim_step(cn_meta_stmt_t *st, cn_err_t err, int64_t *vid);
typedef struct cn__vmake {
    int64_t bucket_id;
    const char *key;
    const cn_objects_put_args_t *cond; /* conditions, may be NULL */
    const cn_objects_kv_t *tags;
    size_t ntags;
    const cn_objects_retention_t *retention; /* NULL: the bucket's default */
    int64_t now_ms;
    cn__vrows_fn pre, rows;
    cn__vclaim_fn claim; /* NULL: none */
    void *ctx;
    const cn__bkt_t *bkt; /* the bucket, loaded in txn; NULL: its settings are read */
    /* out */
    int64_t vid;
    bool vnull;
    bool versioned; /* the bucket's versioning was ever set */
} cn__vmake_t;
cn_err_t cn__obj_version_make(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__vmake_t *mk);

/* cn__authorize_found for a lookup of a named version: found may also be
 * NO_SUCH_VERSION (CN_E_NOT_FOUND) or VERSION_IS_MARKER, told (with their
 * details kept) only to whom act is allowed on a missing key. */
cn_err_t cn__authorize_version(cn_objects_req_t *rq, const cn__bkt_t *b, cn_authz_action_t act,
                               const char *key, cn_err_t found, const cn__objacl_t *obj);

/* The tags and retention CreateMultipartUpload asked for, kept in the
 * upload's row for the completion. */
typedef struct cn__vattrs {
    cn_objects_kv_t *tags; /* one block (free) */
    size_t ntags;
    bool has_retention;
    cn_objects_retention_t retention;
} cn__vattrs_t;
/* Stores args' tags and retention (nothing when it has none) in upload_id's row. */
cn_err_t cn__upload_attrs_set(cn_meta_txn_t *txn, const char *upload_id,
                              const cn_objects_put_args_t *args);
/* Reads them back into *out (its earlier tags freed; zeroed first). */
cn_err_t cn__upload_attrs_get(cn_meta_txn_t *txn, const char *upload_id, cn__vattrs_t *out);

/* A delete marker made key's latest version (DELETE on a versioned
 * bucket): the current version retired as cn__obj_version_make does, the
 * marker (its id in vid) null when vnull. */
typedef struct cn__vmark {
    int64_t bucket_id;
    const char *key;
    bool vnull;
    int64_t now_ms;
    const char *owner;
    int64_t vid; /* out */
} cn__vmark_t;
cn_err_t cn__obj_marker_make(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__vmark_t *m);

/* ---- listing (list.c, versions_list.c) */
/* A page being filled, with its arrays' capacities. */
typedef struct cn__list_acc {
    cn_objects_list_t *out;
    size_t cap_e, cap_p;
} cn__list_acc_t;
cn_err_t cn__list_add_prefix(cn__list_acc_t *a, const char *p, size_t n);
/* An entry from st's row: okey, size, etag, sha256, mtime_ms, content_type,
 * owner, nparts (columns 0..7). */
cn_err_t cn__list_add_entry(cn__list_acc_t *a, cn_meta_stmt_t *st, const char *key, size_t kl);
/* The smallest byte string after every string starting with p (false: none). */
bool cn__list_successor(char *p, size_t *len);
/* Byte order of two strings (memcmp, then the shorter first). */
int cn__list_cmp(const char *a, size_t al, const char *b, size_t bl);
/* Where a listing starts: after the marker (after, al bytes; *incl false),
 * or at the prefix when that is further on (*incl true), into bound / *bl.
 * true when it starts at the marker. */
bool cn__list_start(char *bound, size_t *bl, bool *incl, const char *after, size_t al,
                    const char *prefix, size_t pl);
/* ListObjectVersions in txn, access already checked: both tables merged in
 * key order, each key's versions newest first, at most max entries and
 * prefixes. */
cn_err_t cn__list_versions(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                           const cn_objects_list_args_t *args, size_t max, cn_objects_list_t *out);

/* After a miss of key's current version: when its latest is a delete
 * marker, sets info's delete_marker, version_id and vnull to it. */
cn_err_t cn__obj_marker_look(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                             cn_object_info_t *info);
/* Whether b's versioning was ever set (b's cached settings). */
bool cn__bkt_versioned(const cn__bkt_t *b);

/* A copy of n tags in one block (*out, free() it; NULL when n is 0).
 * CN_E_INVALID over CN_OBJECTS_TAGS_MAX, -ENOMEM. */
cn_err_t cn__tags_copy(const cn_objects_kv_t *in, size_t n, cn_objects_kv_t **out);

/* ---- tags (tags.c) -----------------------------------------------------------
 * A version's tag rows, keyed by version_id in whichever table it is.  The
 * limits are the caller's to have checked (cn_objects_tags_check). */
/* The number of tags of version_id: one count over the primary key. */
cn_err_t cn__obj_tags_count(cn_meta_txn_t *txn, int64_t version_id, uint32_t *n);
/* Reads the tags of version_id into out (its tags point into its storage;
 * out zeroed or from an earlier read, freed with cn_objects_tagset_free). */
cn_err_t cn__obj_tags_read(cn_meta_txn_t *txn, int64_t version_id, cn_objects_tagset_t *out);
/* Replaces version_id's tags with tags[0..n). */
cn_err_t cn__obj_tags_write(cn_meta_txn_t *txn, int64_t version_id, const cn_objects_kv_t *tags,
                            size_t n);
/* Copies the tags of version from to version to (which has none): a
 * CopyObject under x-amz-tagging-directive COPY, the default. */
cn_err_t cn__obj_tags_copy(cn_meta_txn_t *txn, int64_t from, int64_t to);

#endif
