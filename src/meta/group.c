/* meta group commit: concurrent write runs (cn_meta_run) share one write
 * transaction, one COMMIT and one sync; each body runs in its own savepoint.
 *
 * A write run that arrives while another run's body holds the writer waits
 * for a turn in the same transaction instead of for a transaction of its
 * own.  Each member runs its body on its own thread (the caller's thread, as
 * without grouping), one at a time; the member that finds no one waiting
 * (or the group full or old) commits for everyone.  Engine-neutral: it needs
 * only the engine's savepoint hooks (engine.h).  The SQLite engine has them;
 * PostgreSQL keeps one transaction per run, because its engine has no
 * savepoint hooks and its server already shares WAL flushes between
 * connections, and because a serialization failure there arrives at COMMIT
 * for the whole group, where it could not be charged to one member.
 *
 * Group invariants (they extend run.c's R1-R3):
 *  G1. A member whose body kept its changes (returned >= 0, did not discard,
 *      no statement failed) is answered only after the COMMIT containing them
 *      returned and, unless it asked for CN_META_RUN_NOWAIT, after that
 *      commit is durable (meta.c's group sync, invariant 4).
 *  G2. A body's failure or discard rolls back only its own savepoint; the
 *      members before and after it in the group commit as if it had not run.
 *  G3. A body runs at most once per run of run.c: a member is never re-run
 *      here.  A run that failed whole (a lost transaction, a failed COMMIT)
 *      returns its error to run.c, which repeats it only under R2 (the
 *      caller's CN_META_RETRY and a locked or busy error); a body that did
 *      not ask for a repeat is never run twice.
 *  G4. If the transaction is lost (the COMMIT failed, or the engine rolled
 *      it back whole) every kept member gets that error, and so does every
 *      member whose body ran after some other member's kept changes: its
 *      answer may rest on writes that never happened.  A member whose body
 *      ran before any kept change saw only committed data: its result stands.
 *  G5. A group is bounded: at most GROUP_MAX members and GROUP_MAX_NS from
 *      its BEGIN to the decision to commit; a turn is waited for at most the
 *      busy timeout (then CN_E_DB_LOCKED, as a begin would).  Writers that
 *      begin their own transaction (cn_meta_begin) wait for the writer slot
 *      as before: the group holds it from BEGIN to COMMIT.
 *  G6. Readers never wait for a group: read runs never enter here and
 *      read transactions use the reader pool, never the writer.
 */
#include "engine.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cairn/metrics.h"
#include "cairn/util.h"

#define GROUP_MAX 64                 /* members in one transaction */
#define GROUP_MAX_NS (5 * 1000000LL) /* BEGIN to the decision to commit */

/* One group transaction; shared by its members until each has read the
 * outcome (refs). */
typedef struct group {
    int64_t t0;    /* cn_mono_ns() at BEGIN */
    unsigned n;    /* members that took a turn */
    unsigned kept; /* of them, members whose changes are in the transaction */
    unsigned refs; /* members still to read the outcome */
    bool closing;  /* its COMMIT or ROLLBACK has started */
    bool decided;  /* outcome below is final */
    cn_err_t lost; /* < 0: the transaction is unusable (G4) */
    cn_err_t err;  /* the COMMIT's error */
    uint64_t seq;  /* the commit's number for cn__meta_durable */
} group_t;

struct cn__meta_group {
    pthread_mutex_t mu;
    pthread_cond_t turn_cv; /* a turn came free */
    pthread_cond_t done_cv; /* a group was decided, or a parked one may be */
    group_t *cur;           /* the open group, NULL if none */
    bool turn;              /* a member is running its body (or opening, deciding) */
    unsigned waiting;       /* members waiting for a turn */
};

cn_err_t cn__meta_group_new(cn__meta_group_t **out)
{
    cn__meta_group_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->turn_cv, &ca);
    pthread_cond_init(&g->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = g;
    return 0;
}

void cn__meta_group_free(cn__meta_group_t *g)
{
    if (!g)
        return;
    assert(!g->cur && !g->turn && !g->waiting); /* every run has ended */
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->turn_cv);
    pthread_cond_destroy(&g->done_cv);
    free(g);
}

/* Members per committed group, for the profile and the tests. */
static void observe_group(unsigned members)
{
    static const cn_metric_family_t fam = {
        "cairn_meta_group_members",
        "Write runs (bodies) per metadata group transaction.",
        CN_METRIC_HISTOGRAM,
        cn_metric_bounds_count,
        7,
    };
    static _Atomic(cn_metric_t *) slot;
    cn_metric_observe(cn_metric_cached(&slot, &fam, "%s", ""), (double)members);
}

/* The open group may take another member after this turn (G5); otherwise
 * the turn's holder decides it before giving the turn up. */
static bool joinable(const group_t *gr)
{
    return gr->n < GROUP_MAX && cn_mono_ns() - gr->t0 < GROUP_MAX_NS && gr->lost >= 0;
}

/* Waits (g->mu held) until this thread holds the turn, in the open group or
 * as the opener of a new one (*opener).  A free turn with a group open means
 * the group is joinable: a turn's holder closes a group it finds full, old
 * or lost before giving the turn up (end_turn).  CN_E_DB_LOCKED past the
 * timeout; a waiter leaves only while another holds the turn, so an open
 * group always has a holder or a waiter who will end it. */
static cn_err_t take_turn(cn__meta_group_t *g, unsigned timeout_ms, bool *opener)
{
    struct timespec dl;
    cn__meta_deadline_ns(&dl, timeout_ms * 1000000LL);
    g->waiting++;
    while (g->turn) {
        if (pthread_cond_timedwait(&g->turn_cv, &g->mu, &dl) == ETIMEDOUT && g->turn) {
            g->waiting--;
            /* A signal this thread may have consumed goes on to another. */
            pthread_cond_signal(&g->turn_cv);
            return CN_E_DB_LOCKED;
        }
    }
    g->waiting--;
    g->turn = true;
    *opener = g->cur == NULL;
    return 0;
}

/* Opens a group (g->mu held, the turn taken): BEGIN outside the mutex. */
static cn_err_t open_group(cn__meta_group_t *g, cn_meta_t *meta)
{
    group_t *gr = calloc(1, sizeof *gr);
    cn_err_t e = gr ? 0 : -ENOMEM;
    if (e == 0) {
        pthread_mutex_unlock(&g->mu);
        e = cn__meta_wbegin(meta);
        pthread_mutex_lock(&g->mu);
    }
    if (e < 0) {
        free(gr);
        g->turn = false;
        pthread_cond_signal(&g->turn_cv);
        return e;
    }
    gr->t0 = cn_mono_ns();
    g->cur = gr;
    return 0;
}

/* Commits (or rolls back) the group gr, whose turn this thread holds and
 * which is no longer open to members; publishes the outcome (g->mu held on
 * entry and on return, dropped around the engine's work). */
static void decide(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr)
{
    gr->closing = true; /* from here no member may give up (await_outcome) */
    cn_err_t e = gr->lost;
    unsigned kept = gr->kept;
    pthread_mutex_unlock(&g->mu);
    uint64_t seq = 0;
    if (e >= 0 && kept > 0)
        e = cn__meta_wcommit(meta, &seq);
    else
        cn__meta_wrollback(meta); /* nothing to keep: no commit, no sync */
    if (e >= 0 && kept > 0)
        observe_group(kept);
    pthread_mutex_lock(&g->mu);
    gr->err = e;
    gr->seq = seq;
    gr->decided = true;
    pthread_cond_broadcast(&g->done_cv);
}

/* Runs body in the open group as one member (turn held, g->mu not held).
 * *kept: its changes are in the transaction; *lost: the transaction is no
 * longer usable. */
static cn_err_t run_member(cn_meta_t *meta, cn_meta_body_fn body, void *ctx, bool *kept,
                           cn_err_t *lost)
{
    cn_meta_txn_t *txn = NULL;
    *kept = false;
    *lost = 0;
    cn_err_t res = cn__meta_member_begin(meta, &txn);
    if (res < 0) {
        *lost = res; /* no savepoint: the transaction's state is unknown */
        return res;
    }
    res = body(txn, ctx);
    *lost = cn__meta_member_end(txn, &res, kept);
    return res;
}

/* The open group gr is parked: open, with no member running a body or
 * waiting to (a waiter takes a free turn: it leaves only while the turn is
 * held). */
static bool parked(const cn__meta_group_t *g, const group_t *gr)
{
    return g->cur == gr && !g->turn && g->waiting == 0;
}

/* Decides the parked group gr (g->mu held), taking the turn for it. */
static void decide_parked(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr)
{
    g->turn = true;
    g->cur = NULL;
    decide(g, meta, gr);
    g->turn = false;
    pthread_cond_signal(&g->turn_cv);
}

void cn__meta_group_synced(cn__meta_group_t *g)
{
    /* A parked group may commit now: one of its waiting members decides
     * (await_outcome).  Only its members wait on done_cv while it is
     * parked: every earlier group was decided, which woke its own. */
    pthread_mutex_lock(&g->mu);
    if (g->cur && parked(g, g->cur))
        pthread_cond_signal(&g->done_cv);
    pthread_mutex_unlock(&g->mu);
}

/* Gives the turn up after this member's body (g->mu held).  The group is
 * decided now when it is full, old or lost, or when no one waits to join it
 * and no sync is running.  While a sync runs, a COMMIT now would only wait
 * for the next sync anyway: the group is parked instead, left open with the
 * turn free, so that a member arriving meanwhile joins at once, with no
 * hand-off from a holder; one of its waiting members decides it when the
 * sync ends or the group is old (await_outcome, G5), or the next arrival
 * does once it is old (cn__meta_group_run).  A parked group has a kept
 * member, which waits for the outcome. */
static void end_turn(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr)
{
    if (gr->lost < 0 || !joinable(gr) ||
        (g->waiting == 0 && !(gr->kept > 0 && cn__meta_syncing(meta)))) {
        g->cur = NULL;
        decide(g, meta, gr);
    }
    g->turn = false;
    pthread_cond_signal(&g->turn_cv);
}

/* Waits (g->mu held) for gr's outcome: the COMMIT's error, or the group's
 * loss, deciding gr itself if it is parked and may commit (no sync running)
 * or must (old).  Bounded (R3, G5): a member that waited the busy timeout
 * gives up; a kept one marks the group lost, so its changes are rolled back
 * whatever the later members do, which also ends any wait of a later
 * member's body on something this member's caller holds; and a parked
 * group is decided (rolled back) before it leaves, so none stays open. */
static cn_err_t await_outcome(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr, bool kept,
                              unsigned timeout_ms)
{
    struct timespec dl;
    cn__meta_deadline_ns(&dl, timeout_ms * 1000000LL);
    while (!gr->decided) {
        if (gr->closing) { /* the engine's COMMIT is bounded on its own */
            pthread_cond_wait(&g->done_cv, &g->mu);
            continue;
        }
        const struct timespec *until = &dl;
        struct timespec old;
        if (parked(g, gr)) {
            int64_t left = GROUP_MAX_NS - (cn_mono_ns() - gr->t0);
            if (left <= 0 || gr->lost < 0 || !cn__meta_syncing(meta)) {
                decide_parked(g, meta, gr);
                continue;
            }
            cn__meta_deadline_ns(&old, left);
            if (old.tv_sec < dl.tv_sec || (old.tv_sec == dl.tv_sec && old.tv_nsec < dl.tv_nsec))
                until = &old;
        }
        if (pthread_cond_timedwait(&g->done_cv, &g->mu, until) == ETIMEDOUT && until == &dl &&
            !gr->decided && !gr->closing) {
            if (kept && gr->lost >= 0) /* only its own changes need undoing */
                gr->lost = CN_E_DB_LOCKED;
            if (parked(g, gr))
                decide_parked(g, meta, gr);
            return CN_E_DB_LOCKED;
        }
    }
    return gr->lost < 0 ? gr->lost : gr->err;
}

cn_err_t cn__meta_group_run(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body, void *ctx)
{
    cn__meta_group_t *g = cn__meta_group_of(meta);
    pthread_mutex_lock(&g->mu);
    bool opener = false;
    cn_err_t e = take_turn(g, cn_meta_busy_timeout_ms(meta), &opener);
    if (e >= 0 && !opener && !joinable(g->cur)) {
        /* A group parked until it grew old (G5): decided before a new one. */
        group_t *old = g->cur;
        g->cur = NULL;
        decide(g, meta, old);
        /* This thread is none of old's members: when every member has
         * left already (none kept changes, so none waited for the
         * outcome), no one else would free it. */
        if (old->refs == 0)
            free(old);
        opener = true;
    }
    if (e >= 0 && opener)
        e = open_group(g, meta);
    if (e < 0) {
        pthread_mutex_unlock(&g->mu);
        return e;
    }
    group_t *gr = g->cur;
    gr->n++;
    gr->refs++;
    bool saw = gr->kept > 0; /* G4: this body may read others' changes */
    pthread_mutex_unlock(&g->mu);

    bool kept = false;
    cn_err_t lost = 0;
    cn_err_t res = run_member(meta, body, ctx, &kept, &lost);

    pthread_mutex_lock(&g->mu);
    if (lost < 0 && gr->lost >= 0)
        gr->lost = lost;
    if (kept)
        gr->kept++;
    end_turn(g, meta, gr);
    /* G1/G4: wait for the outcome when it decides this member's answer. */
    unsigned tmo = cn_meta_busy_timeout_ms(meta);
    cn_err_t gerr = kept || saw ? await_outcome(g, meta, gr, kept, tmo) : 0;
    uint64_t seq = gr->seq;
    bool last = --gr->refs == 0 && gr->decided;
    pthread_mutex_unlock(&g->mu);
    if (last)
        free(gr);
    if (gerr < 0)
        return gerr;
    if (kept && !(flags & CN_META_RUN_NOWAIT))
        CN_TRY(cn__meta_durable(meta, seq));
    return res;
}
