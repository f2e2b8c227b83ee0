/* meta group commit: concurrent write runs (cn_meta_run) share one write
 * transaction, one COMMIT and one sync; each body runs in its own savepoint.
 *
 * A write run that arrives while another run's body holds the writer waits
 * for a turn in the same transaction instead of for a transaction of its
 * own.  Each member runs its body on its own thread (the caller's thread, as
 * without grouping; a combining member's body on the turn holder's, see
 * "Combining" below), one at a time; the member that finds no one waiting
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
 *
 * Combining (flat combining of flagged runs).  A run flagged
 * CN_META_RUN_COMBINE that finds the turn held does not wait for a turn:
 * it queues its (body, ctx) and sleeps once on its own semaphore.  The
 * turn's holder, whoever it is (a flagged member or not: then a queue is
 * never left behind by a holder that could not serve it, and a thread that
 * holds the turn is already inside the group), runs the queued bodies on
 * its own thread before it gives the turn up, each as one member in its
 * own savepoint exactly as its own thread would have; it then decides the
 * group as before, waits for the outcome and, for queued members that
 * need it, for the commit's durability once itself, and only then posts
 * each queued member with its final answer.  G1-G6 hold for queued
 * members as written (G4's "ran after some kept change" is judged per
 * queued body, when it starts), and:
 *  G7. A queued body is run by exactly one holder, at most once (G3), or
 *      never: a queued member that has waited the busy timeout before a
 *      holder took it removes itself from the queue under the mutex and
 *      answers CN_E_DB_LOCKED, as a wait for a turn would; once taken it
 *      waits for the holder's answer, which the holder's own bounded waits
 *      (await_outcome, and the engine's sync) bound.
 *  G8. The queue is never left without a holder: a run is queued only
 *      while the turn is held, and a holder gives the turn up (give_turn)
 *      to the queue's first member when the queue is not empty (after a
 *      decision, a failed BEGIN or a parked group's decision): that member
 *      then holds the turn as if it had waited for it.
 *  G9. Only flagged bodies ever run on another thread than their caller's.
 *      A flagged body must therefore take no lock that a cn_meta_run
 *      caller may hold across its call (else a holder whose caller holds it
 *      would wait for itself), keep no thread-local state (run.c's R7 note
 *      is SQLite-free: groups run only on SQLite, which never reports a
 *      lost server), never call cn_meta_run (nested, it would wait for the
 *      turn its own thread holds) and never wait for another thread.  The
 *      objects service's PUT commit (src/objects/put.c: commit_object_body,
 *      commit_part_body, under objects.c's gen_run_body) is one: it runs
 *      SQL on its txn and writes only its own request's failure record.
 */
#include "engine.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
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

/* A queued (combining) member, on its own thread's stack (G7, G8). */
typedef enum {
    Q_QUEUED,
    Q_TAKEN,
    Q_HANDED
} qstate_t;
typedef struct qnode {
    struct qnode *next;
    cn_meta_body_fn body;
    void *ctx;
    unsigned flags;
    qstate_t state; /* under mu until taken; then the taker's */
    bool kept, saw; /* as run_member's and cn__meta_group_run's, set by the taker */
    cn_err_t res;   /* the answer, final once sem is posted */
    sem_t sem;      /* posted once: answered (Q_TAKEN) or handed the turn */
} qnode_t;

/* The queued members one holder ran whose answers wait for the outcome
 * (each kept changes or saw some: G1, G4). */
typedef struct proxy {
    qnode_t *head, **tail;
    bool kept;    /* one of them kept changes */
    bool durable; /* one of them kept changes and did not ask CN_META_RUN_NOWAIT */
} proxy_t;

struct cn__meta_group {
    pthread_mutex_t mu;
    pthread_cond_t turn_cv;  /* a turn came free */
    pthread_cond_t done_cv;  /* a group was decided, or a parked one may be */
    group_t *cur;            /* the open group, NULL if none */
    bool turn;               /* a member is running its body (or opening, deciding) */
    unsigned waiting;        /* members waiting for a turn */
    qnode_t *qhead, **qtail; /* queued members, oldest first (G8: only while turn) */
};

cn_err_t cn__meta_group_new(cn__meta_group_t **out)
{
    cn__meta_group_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    pthread_mutex_init(&g->mu, NULL);
    cn_cond_init_mono(&g->turn_cv);
    cn_cond_init_mono(&g->done_cv);
    g->qtail = &g->qhead;
    *out = g;
    return 0;
}

void cn__meta_group_free(cn__meta_group_t *g)
{
    if (!g)
        return;
    assert(!g->cur && !g->turn && !g->waiting && !g->qhead); /* every run has ended */
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

/* The queue's first member, taken off it (g->mu held; the queue not empty). */
static qnode_t *q_pop(cn__meta_group_t *g)
{
    qnode_t *q = g->qhead;
    g->qhead = q->next;
    if (!g->qhead)
        g->qtail = &g->qhead;
    q->next = NULL;
    return q;
}

/* Takes q, still queued, off the queue (g->mu held). */
static void q_unlink(cn__meta_group_t *g, qnode_t *q)
{
    qnode_t **pp = &g->qhead;
    while (*pp != q)
        pp = &(*pp)->next;
    *pp = q->next;
    if (g->qtail == &q->next)
        g->qtail = pp;
}

/* Gives the turn up (g->mu held): to the queue's first member, which then
 * holds it as if it had waited for it (G8), else free for a waiter. */
static void give_turn(cn__meta_group_t *g)
{
    if (!g->qhead) {
        g->turn = false;
        pthread_cond_signal(&g->turn_cv);
        return;
    }
    qnode_t *q = q_pop(g);
    q->state = Q_HANDED;
    sem_post(&q->sem); /* q is its own thread's again from here */
}

/* Queues the combining member q (g->mu held, the turn held by another
 * thread) and sleeps, g->mu dropped, until a holder answered it (true:
 * q->res is its run's answer) or handed it the turn (false: g->mu and the
 * turn held, as take_turn leaves them).  Not taken within timeout_ms, it
 * leaves the queue and answers CN_E_DB_LOCKED (G7). */
static bool queue_wait(cn__meta_group_t *g, qnode_t *q, unsigned timeout_ms)
{
    struct timespec dl;
    cn__meta_deadline_ns(&dl, timeout_ms * 1000000LL);
    q->next = NULL;
    q->state = Q_QUEUED;
    sem_init(&q->sem, 0, 0);
    *g->qtail = q;
    g->qtail = &q->next;
    pthread_mutex_unlock(&g->mu);
    int r;
    while ((r = sem_clockwait(&q->sem, CLOCK_MONOTONIC, &dl)) != 0 && errno == EINTR) {
    }
    bool queued = false;
    if (r != 0) {
        pthread_mutex_lock(&g->mu);
        queued = q->state == Q_QUEUED;
        if (queued)
            q_unlink(g, q);
        pthread_mutex_unlock(&g->mu);
        /* Taken or handed meanwhile: its post is coming, or came. */
        while (!queued && sem_wait(&q->sem) != 0 && errno == EINTR) {
        }
    }
    sem_destroy(&q->sem);
    if (queued) {
        q->res = CN_E_DB_LOCKED;
        return true;
    }
    if (q->state != Q_HANDED)
        return true;
    pthread_mutex_lock(&g->mu);
    return false;
}

/* Waits (g->mu held) until this thread holds the turn (join then puts it
 * in a group).  A free turn with a group open means the group is joinable
 * or parked: a turn's holder closes a group it finds full, old or lost
 * before giving the turn up (end_turn).  CN_E_DB_LOCKED past the
 * timeout; a waiter leaves only while another holds the turn, so an open
 * group always has a holder or a waiter who will end it. */
static cn_err_t take_turn(cn__meta_group_t *g, unsigned timeout_ms)
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
        give_turn(g); /* a queued member tries its own BEGIN (G8) */
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

/* A queued member's body ran on a holder's thread (G7), for the profile
 * and the tests. */
static void count_combined(void)
{
    static const cn_metric_family_t fam = {
        .name = "cairn_meta_combined_runs_total",
        .help = "Metadata write runs whose body another run's thread ran (group combining).",
        .kind = CN_METRIC_COUNTER,
    };
    static _Atomic(cn_metric_t *) slot;
    cn_metric_add(cn_metric_cached(&slot, &fam, "%s", ""), 1);
}

/* Counts a member's body into gr (g->mu held). */
static void note_member(group_t *gr, bool kept, cn_err_t lost)
{
    if (lost < 0 && gr->lost >= 0)
        gr->lost = lost;
    if (kept)
        gr->kept++;
}

/* Runs the queued members' bodies in the open group gr on this thread, the
 * turn's holder, for as long as gr takes members (g->mu held, dropped
 * around each body).  A member whose answer the outcome cannot change is
 * answered at once; the others go to px, to be answered after it (G7). */
static void drain(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr, proxy_t *px)
{
    while (g->qhead && g->cur == gr && joinable(gr)) {
        qnode_t *q = q_pop(g);
        q->state = Q_TAKEN;
        gr->n++;
        q->saw = gr->kept > 0; /* G4, per queued body */
        pthread_mutex_unlock(&g->mu);
        cn_err_t lost = 0;
        q->res = run_member(meta, q->body, q->ctx, &q->kept, &lost);
        count_combined();
        pthread_mutex_lock(&g->mu);
        note_member(gr, q->kept, lost);
        if (!q->kept && !q->saw) {
            sem_post(&q->sem); /* its answer stands whatever the outcome (G4) */
            continue;
        }
        *px->tail = q;
        px->tail = &q->next;
        px->kept |= q->kept;
        px->durable |= q->kept && !(q->flags & CN_META_RUN_NOWAIT);
    }
}

/* Posts each member px holds with its final answer: the group's error gerr
 * where the outcome decides it (G1, G4), the sync's derr where it waited
 * for durability, else its own body's (G2). */
static void answer(proxy_t *px, cn_err_t gerr, cn_err_t derr)
{
    qnode_t *q = px->head;
    while (q) {
        qnode_t *next = q->next; /* q is its own thread's once posted */
        if ((q->kept || q->saw) && gerr < 0)
            q->res = gerr;
        else if (q->kept && !(q->flags & CN_META_RUN_NOWAIT) && derr < 0)
            q->res = derr;
        sem_post(&q->sem);
        q = next;
    }
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
    give_turn(g);
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
    give_turn(g);
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

/* Puts this thread, holding the turn, into an open group (g->mu held on
 * entry and on return): the open one, or a new one, after deciding the open
 * one if it is parked and grew old (G5).  On error the turn is given up. */
static cn_err_t join(cn__meta_group_t *g, cn_meta_t *meta)
{
    if (g->cur && !joinable(g->cur)) {
        group_t *old = g->cur;
        g->cur = NULL;
        decide(g, meta, old);
        /* This thread is none of old's members: when every member has
         * left already (none kept changes, so none waited for the
         * outcome), no one else would free it. */
        if (old->refs == 0)
            free(old);
    }
    return g->cur ? 0 : open_group(g, meta);
}

/* Runs this thread's body as a member of the open group gr (turn and g->mu
 * held, g->mu dropped around the body), then the queued members' bodies,
 * and gives the turn up; answers after the outcome and, where needed, the
 * commit's durability, this member's and those it ran (G1, G7). */
static cn_err_t hold(cn__meta_group_t *g, cn_meta_t *meta, group_t *gr, unsigned flags,
                     cn_meta_body_fn body, void *ctx)
{
    gr->n++;
    gr->refs++;
    bool saw = gr->kept > 0; /* G4: this body may read others' changes */
    pthread_mutex_unlock(&g->mu);

    bool kept = false;
    cn_err_t lost = 0;
    cn_err_t res = run_member(meta, body, ctx, &kept, &lost);

    pthread_mutex_lock(&g->mu);
    note_member(gr, kept, lost);
    proxy_t px = { .tail = &px.head };
    drain(g, meta, gr, &px);
    end_turn(g, meta, gr);
    /* G1/G4: wait for the outcome when it decides an answer. */
    unsigned tmo = cn_meta_busy_timeout_ms(meta);
    cn_err_t gerr = kept || saw || px.head ? await_outcome(g, meta, gr, kept || px.kept, tmo) : 0;
    uint64_t seq = gr->seq;
    bool last = --gr->refs == 0 && gr->decided;
    pthread_mutex_unlock(&g->mu);
    if (last)
        free(gr);
    bool durable = kept && !(flags & CN_META_RUN_NOWAIT);
    cn_err_t derr = gerr >= 0 && (durable || px.durable) ? cn__meta_durable(meta, seq) : 0;
    answer(&px, gerr, derr);
    if ((kept || saw) && gerr < 0)
        return gerr;
    return durable && derr < 0 ? derr : res;
}

void cn__meta_group_counts(cn_meta_t *meta, unsigned *queued, unsigned *waiting, bool *turn)
{
    cn__meta_group_t *g = cn__meta_group_of(meta);
    *queued = *waiting = 0;
    *turn = false;
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    for (const qnode_t *q = g->qhead; q; q = q->next)
        (*queued)++;
    *waiting = g->waiting;
    *turn = g->turn;
    pthread_mutex_unlock(&g->mu);
}

cn_err_t cn__meta_group_run(cn_meta_t *meta, unsigned flags, cn_meta_body_fn body, void *ctx)
{
    cn__meta_group_t *g = cn__meta_group_of(meta);
    unsigned tmo = cn_meta_busy_timeout_ms(meta);
    pthread_mutex_lock(&g->mu);
    cn_err_t e = 0;
    if ((flags & CN_META_RUN_COMBINE) && g->turn) {
        qnode_t q = { .body = body, .ctx = ctx, .flags = flags };
        if (queue_wait(g, &q, tmo))
            return q.res; /* a holder ran it, or it gave up (G7) */
    } else {
        e = take_turn(g, tmo);
    }
    if (e >= 0)
        e = join(g, meta);
    if (e < 0) {
        pthread_mutex_unlock(&g->mu);
        return e;
    }
    return hold(g, meta, g->cur, flags, body, ctx);
}
