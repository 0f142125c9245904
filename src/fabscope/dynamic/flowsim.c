/* fabscope's dynamic flow engine, compiled: the same max-min rates as engine.py
 * (the pure-Python reference the tests hold it to), reached faster.
 *
 * Messages become flows after their path's latency, share resources max-min
 * fairly and finish; steps end when their messages have and start the rank's
 * next step.  At each event only the flows at or above a threshold level and
 * connected to the changed flows through such flows are refilled (see
 * engine.py and docs/dynamic.md for why the others keep their rates).
 *
 * The refill is one progressive filling from the threshold level that takes flows in as it meets
 * them (docs/dynamic.md, "The refill", says why that is exact): a fixed
 * flow joins when a resource it crosses would fill below its rate, or when the level reaches its
 * rate and its bottleneck no longer holds it.  engine.py reaches the same rates by refilling a set
 * that grows while the max-min certificate fails; tests/dynamic/test_refill_paths.py holds this
 * engine to it.  Also: one finish event per flow, moved in place when its rate changes; the flows
 * bottlenecked on each resource listed, and checked together; each resource's largest rate kept
 * where known; the filling's heap entries compared as single integers, one per resource
 * (docs/dynamic.md, "How the refill keeps its heaps"); resources whose keys lie far above the
 * level parked outside the heap.
 * Built on first use by fabscope.dynamic.fast (gcc with fabscope.cbuild.CFLAGS, -O3, and -shared, with ugal_choice.c: UGAL's choice when
 * a message is posted; flowsim.h holds what they share) and loaded with ctypes.  Returns 0, 1 when steps are left waiting (deadlock), 2 when
 * the progress callback asked to stop, -1 when memory runs out, or -3 when a refill
 * left a flow without a rate (a bug: refused rather than run on).
 *
 * progress (may be NULL) is called with the messages done so far and the
 * simulated time every `every` refills (0: never by count) and whenever
 * `interval` seconds of wall clock have passed since the last call (the
 * clock is read before a refill once CLOCK_WORK flows and refills have been
 * refilled since it last was: a few tens of nanoseconds against a refill's
 * microseconds, but 2 % of diagnose's time model, whose refills hold one or two
 * flows, when it was read at every one), so a Ctrl-C is seen within about
 * `interval` whatever the load; a non-zero return stops the run. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flowsim.h"

#define CLOCK_WORK 64
#define TIME_TOL 1e-12
#define RATE_TOL 1e-9
#define SAME_RATE 1e-12  /* a refill that moves a rate less than this (relative) leaves it: float noise */
enum { START = 0, FLOW = 1, FINISH = 2 };

typedef struct { double t; int64_t seq, id, ver; int kind; } ev_t;
typedef struct { ev_t *a; int64_t n, cap; } evheap;
/* A filling heap entry: one unsigned 128-bit integer, the key's bits above, kind << 48 | id below
 * (ties in that order: resources, caps, checks of a resource's bottlenecked flows, of one flow).
 * Keys are never negative, and the bits of non-negative doubles order as the doubles do, so one
 * integer comparison orders two entries, with no branch for the sift to mispredict (a third of
 * the engine's time went there). */
typedef unsigned __int128 rk_t;
static inline uint64_t key_bits(double k) { uint64_t b; k += 0.0; memcpy(&b, &k, 8); return b; }  /* -0 -> +0 */
static inline double rk_key(rk_t e) { uint64_t b = (uint64_t)(e >> 64); double k; memcpy(&k, &b, 8); return k; }
#define RK(k_, id_, kind_) (((rk_t)key_bits(k_) << 64) | (((uint64_t)(kind_) << 48) | (uint64_t)(id_)))
#define RK_ID(e_) ((int64_t)((uint64_t)(e_) & ((1ULL << 48) - 1)))
#define RK_KIND(e_) ((int)(((uint64_t)(e_)) >> 48))
typedef struct { rk_t *a; int64_t n, cap; } rkheap;
/* an entry of a resource's list of flows: the flow's slot, its hop index, its weight there */
typedef struct { int32_t f, k; double w; } slot_t;
/* A resource's list of flows starts in one block shared by all (as many entries as the used paths
 * cross it) and moves to an array of its own only when it outgrows that (owned): a malloc and a
 * free per resource were 15 % of a 16x16x16 torus matching's engine time, 80 bytes per resource
 * at a million hosts. */
typedef struct { slot_t *a; int64_t n, cap; int owned; } rlist;

/* Room for one more entry in the array at *arr (n entries of `size` bytes, room for *cap): the
 * room doubles (from `first`) when full.  arr is the address of the array's pointer. */
int grow(void *arr, int64_t n, int64_t *cap, size_t size, int64_t first)
{
    if (n < *cap) return 0;
    void *a, *na;
    int64_t nc = *cap ? 2 * *cap : first;
    memcpy(&a, arr, sizeof a);
    if (!(na = realloc(a, (size_t)nc * size))) return -1;
    memcpy(arr, &na, sizeof na);
    *cap = nc;
    return 0;
}

static int ev_lt(const ev_t *x, const ev_t *y) { return x->t < y->t || (x->t == y->t && x->seq < y->seq); }
/* The event heap holds at most one finish event per flow slot, moved in place when the flow's
 * rate changes (hp[slot]: its index, -1 none) instead of a new event pushed beside the stale one:
 * the heap stays as small as the flows in flight and pops only live events, in the same
 * (time, sequence) order as the reference's heap with its stale entries skipped.  Four children
 * a node: a finish that moves earlier rises through half the levels of a binary heap. */
static void ev_place(evheap *h, int64_t *hp, int64_t i, ev_t e)
{
    h->a[i] = e;
    if (e.kind == FINISH) hp[e.id] = i;
}
static void ev_up(evheap *h, int64_t *hp, int64_t i, ev_t e)
{
    while (i > 0) {
        int64_t p = (i - 1) / 4;
        if (!ev_lt(&e, &h->a[p])) break;
        ev_place(h, hp, i, h->a[p]); i = p;
    }
    ev_place(h, hp, i, e);
}
static void ev_down(evheap *h, int64_t *hp, int64_t i, ev_t e)
{
    for (;;) {
        int64_t c = 4 * i + 1;
        if (c >= h->n) break;
        int64_t end = c + 4 < h->n ? c + 4 : h->n, b = c;
        for (int64_t x = c + 1; x < end; x++) if (ev_lt(&h->a[x], &h->a[b])) b = x;
        if (!ev_lt(&h->a[b], &e)) break;
        ev_place(h, hp, i, h->a[b]); i = b;
    }
    ev_place(h, hp, i, e);
}
static int ev_push(evheap *h, int64_t *hp, ev_t e)
{
    if (grow(&h->a, h->n, &h->cap, sizeof *h->a, 1024) < 0) return -1;
    ev_up(h, hp, h->n++, e);
    return 0;
}
static ev_t ev_pop(evheap *h, int64_t *hp)
{
    ev_t top = h->a[0], last = h->a[--h->n];
    if (top.kind == FINISH) hp[top.id] = -1;
    if (h->n) ev_down(h, hp, 0, last);
    return top;
}
/* flow slot g's finish event at e: moved where it was one, else pushed */
static int ev_set(evheap *h, int64_t *hp, ev_t e)
{
    int64_t i = hp[e.id];
    if (i < 0) return ev_push(h, hp, e);
    if (ev_lt(&e, &h->a[i])) ev_up(h, hp, i, e);
    else ev_down(h, hp, i, e);
    return 0;
}
/* a start or flow event e created at batch time t: into the batch's queue if it is at t, else the heap */
static int ev_later(evheap *h, int64_t *hp, ev_t e, double t, ev_t **q, int64_t *nq, int64_t *cq)
{
    if (e.t != t) return ev_push(h, hp, e);
    if (grow(q, *nq, cq, sizeof **q, 1024) < 0) return -1;
    (*q)[(*nq)++] = e;
    return 0;
}
static int rk_push(rkheap *h, rk_t e)
{
    if (grow(&h->a, h->n, &h->cap, sizeof *h->a, 1024) < 0) return -1;
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!(e < h->a[p])) break;
        h->a[i] = h->a[p]; i = p;
    }
    h->a[i] = e;
    return 0;
}
/* the smallest entry out: the hole it leaves goes down to the bottom along the smaller children
 * (one comparison a level, no branch on it), then the last entry rises from there (it seldom
 * rises far: it came from the bottom) */
static rk_t rk_pop(rkheap *h)
{
    rk_t top = h->a[0], last = h->a[--h->n];
    int64_t n = h->n, i = 0, c;
    if (!n) return top;
    while ((c = 2 * i + 1) + 1 < n) {
        c += h->a[c + 1] < h->a[c];
        h->a[i] = h->a[c]; i = c;
    }
    if (c < n) { h->a[i] = h->a[c]; i = c; }
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!(last < h->a[p])) break;
        h->a[i] = h->a[p]; i = p;
    }
    h->a[i] = last;
    return top;
}
/* The resources' heap is indexed: pos[r] is where resource r's one entry sits (-1: none), so a
 * key that falls moves the entry up in place rather than adding a second one. */
static inline void ih_place(rkheap *h, int32_t *pos, int64_t i, rk_t e)
{
    h->a[i] = e;
    pos[RK_ID(e)] = (int32_t)i;
}
static void ih_up(rkheap *h, int32_t *pos, int64_t i, rk_t e)
{
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!(e < h->a[p])) break;
        ih_place(h, pos, i, h->a[p]); i = p;
    }
    ih_place(h, pos, i, e);
}
static void ih_down(rkheap *h, int32_t *pos, int64_t i, rk_t e)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n) c += h->a[c + 1] < h->a[c];
        if (!(h->a[c] < e)) break;
        ih_place(h, pos, i, h->a[c]); i = c;
    }
    ih_place(h, pos, i, e);
}
/* resource entry e (kind 0): in at its key, or moved to it */
static int ih_set(rkheap *h, int32_t *pos, rk_t e)
{
    int64_t i = pos[RK_ID(e)];
    if (i < 0) {
        if (grow(&h->a, h->n, &h->cap, sizeof *h->a, 1024) < 0) return -1;
        ih_up(h, pos, h->n++, e);
    } else if (e < h->a[i]) ih_up(h, pos, i, e);
    else ih_down(h, pos, i, e);
    return 0;
}
static void ih_pop(rkheap *h, int32_t *pos)
{
    pos[RK_ID(h->a[0])] = -1;
    rk_t last = h->a[--h->n];
    if (h->n) ih_down(h, pos, 0, last);
}
static void ih_clear(rkheap *h, int32_t *pos)
{
    for (int64_t i = 0; i < h->n; i++) pos[RK_ID(h->a[i])] = -1;
    h->n = 0;
}
static int rl_add(rlist *l, slot_t s, int64_t *pos)
{
    if (l->n == l->cap) {
        int64_t nc = l->cap ? 2 * l->cap : 4;
        slot_t *na = l->owned ? realloc(l->a, (size_t)nc * sizeof *na) : malloc((size_t)nc * sizeof *na);
        if (!na) return -1;
        if (!l->owned && l->n) memcpy(na, l->a, (size_t)l->n * sizeof *na);
        l->a = na; l->cap = nc; l->owned = 1;
    }
    *pos = l->n;
    l->a[l->n++] = s;
    return 0;
}
static int i64_push(int64_t **a, int64_t *n, int64_t *cap, int64_t v)
{
    if (grow(a, *n, cap, sizeof **a, 1024) < 0) return -1;
    (*a)[(*n)++] = v;
    return 0;
}

/* Per resource: what the progressive filling reads and writes together (one cache line) ... */
typedef struct {
    double cap, load, resid, livew;   /* capacity; rate x weight in flight; the filling's residual and live weight */
    int64_t touch, done;              /* refill marks: its filling state set up; filled */
} res_a;
/* ... and what the checks of fixed flows and the event bookkeeping use: res_b (flowsim.h) */

/* min over path p's resources of capacity / weight in flight, and its own cap */
static double counted_rate(int64_t p, const int64_t *p_ptr, const int64_t *p_res, const double *p_cap,
                           const res_a *RA, const res_b *RB)
{
    double v = p_cap[p];
    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
        double c = RA[p_res[k]].cap / RB[p_res[k]].wsum;
        if (c < v) v = c;
    }
    return v;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A flow in flight lives in a slot, reused when it finishes: the refills touch a few
 * thousand slots kept together in memory, not arrays as long as the program's messages.
 * The epochs mark membership for the current event's refill. */
typedef struct {
    double rate, nrate;          /* current rate; tentative rate of this refill */
    int64_t todo, done, add;     /* epochs: joined the refill; frozen in it; its check pushed */
    int64_t off, n;              /* its path's entries p_res[off .. off + n) */
    int64_t where, bneck;        /* where it froze in the refill; its bottleneck (-1 cap, -2 none) */
    int64_t bprev, bnext;        /* its neighbours in its bottleneck's list of flows (-1: none) */
    double rem, tlast, deliv;    /* bytes left and bytes delivered at tlast (delivered[] is written at its end) */
    int64_t msg, path, ver, st;  /* message (-1: free slot), path, finish-event version, started epoch */
} flow_t;

/* Flow f's bottleneck becomes b (a resource, -1 its cap, -2 none).  Each resource lists the
 * flows bottlenecked on it (a doubly linked list through the slots), so that the certificate
 * visits those alone, not every flow on a resource it touched. */
static void set_bneck(flow_t *F, res_b *RB, int64_t f, int64_t b)
{
    int64_t o = F[f].bneck;
    if (o == b) return;
    if (o >= 0) {
        int64_t p = F[f].bprev, x = F[f].bnext;
        if (p >= 0) F[p].bnext = x;
        else RB[o].bhead = x;
        if (x >= 0) F[x].bprev = p;
    }
    if (b >= 0) {
        int64_t h = RB[b].bhead;
        F[f].bprev = -1;
        F[f].bnext = h;
        if (h >= 0) F[h].bprev = f;
        RB[b].bhead = f;
    }
    F[f].bneck = b;
}

/* What a refill's filling shares with touch() and join(). */
typedef struct {
    res_a *RA; res_b *RB; flow_t *F;
    rkheap *R, *Q;                                 /* the resources' entries (indexed by pos); caps' and checks' */
    int32_t *pos;
    const rlist *on;                               /* each resource's flows */
    const int64_t *p_res; const double *p_w, *p_cap;
    int64_t ep;                                    /* this refill's epoch */
    int64_t **todo, *nt, *ct;                      /* the flows joined so far */
    int unit;                                      /* every weight is 1 (join and freeze then read none) */
    double bound;                                  /* every resource whose key is at most this is in R */
    int64_t **park, *npark, *cpark;                /* the others with live weight (pos -2): parked */
} fill_t;

/* Most resources a refill touches never fill in it (Itasca: 175 entered R per refill, 28
 * filled): their keys lie well above the level where the refill ends.  Such a resource is
 * parked, in a list, not sifted into R; when the next entry (of R or Q) lies above the bound,
 * the parked ones are looked at again, the bound raised to PARK_SPAN times the smallest key
 * found, and those at or below it enter R.  A parked key lies above the bound, hence above the
 * level: a freeze there raises it, and only a join can lower it (join() looks then), so R always
 * holds every resource at or below the bound, and the filling meets entries in the same order as
 * with no parking (bit for bit the same rates).  A resource may sit in the list twice (parked,
 * in R through a join, parked again): pos says where it is, and unpark() keeps it once. */
#define PARK_SPAN 1.25
static inline double res_key(const res_a *ra) { return (ra->resid > 0 ? ra->resid : 0) / ra->livew; }
static inline int park(fill_t *c, int64_t q)
{
    c->pos[q] = -2;
    return i64_push(c->park, c->npark, c->cpark, q);
}
static void unpark_clear(fill_t *c)
{
    for (int64_t i = 0; i < *c->npark; i++)
        if (c->pos[(*c->park)[i]] == -2) c->pos[(*c->park)[i]] = -1;
    *c->npark = 0;
}
/* the next entry's key is km (INFINITY: R and Q empty): the bound rises to PARK_SPAN times the
 * smallest key among km and the parked, whose own keys at or below it enter R */
static int unpark(fill_t *c, double km)
{
    int64_t *pk = *c->park, j = 0;
    double m = km;
    for (int64_t i = 0; i < *c->npark; i++) {
        int64_t q = pk[i];
        const res_a *ra = &c->RA[q];
        if (c->pos[q] != -2) continue;                  /* in R since (a join), or listed twice */
        if (ra->done == c->ep || ra->livew <= 1e-12) { c->pos[q] = -1; continue; }   /* dead: out */
        c->pos[q] = -3;                                 /* kept once */
        double k = res_key(ra);
        if (k < m) m = k;
        pk[j++] = q;
    }
    *c->npark = j;
    c->bound = m * PARK_SPAN;
    j = 0;
    for (int64_t i = 0; i < *c->npark; i++) {
        int64_t q = pk[i];
        double k = res_key(&c->RA[q]);
        c->pos[q] = -1;
        if (k > c->bound) { c->pos[q] = -2; pk[j++] = q; continue; }
        if (ih_set(c->R, c->pos, RK(k, q, 0)) < 0) return -1;
    }
    *c->npark = j;
    return 0;
}

/* Resource q enters the filling (once per refill): its residual from the fixed flows' load, and
 * one check for the fixed flows bottlenecked on it, at their rate (they share it: a resource's
 * bottlenecked flows have the largest rate on it), do they keep it when the level gets there? */
static inline int touch(fill_t *c, int64_t q)
{
    res_a *ra = &c->RA[q];
    if (ra->touch == c->ep) return 0;
    ra->touch = c->ep; ra->resid = ra->cap - ra->load; ra->livew = 0;
    int64_t h = c->RB[q].bhead;
    if (h >= 0 && rk_push(c->Q, RK(c->F[h].rate, q, 2)) < 0) return -1;
    return 0;
}

/* Resource q full at `level` with no fixed flow faster than rh on it?  (Refreshes q's largest rate
 * when it has to look at its flows.) */
static int holds_at(fill_t *c, int64_t q, double level, double rh)
{
    const res_a *ra = &c->RA[q];
    res_b *rb = &c->RB[q];
    int full = ra->touch == c->ep ? ra->resid - ra->livew * level <= ra->cap * RATE_TOL
                                  : ra->load >= ra->cap * (1 - RATE_TOL);
    if (!full) return 0;
    if (rb->mx_ok && rb->mx <= rh * (1 + RATE_TOL)) return 1;
    double fmx = 0, all_mx = 0;
    for (int64_t z = 0; z < c->on[q].n; z++) {
        const flow_t *o = &c->F[c->on[q].a[z].f];
        if (o->rate > all_mx) all_mx = o->rate;
        if (o->todo != c->ep && o->rate > fmx) fmx = o->rate;
    }
    rb->mx = all_mx; rb->mx_ok = 1;
    return fmx <= rh * (1 + RATE_TOL);
}

/* Where fixed flow h (rate rh) keeps its rate at `level`: the first resource of its path that
 * holds it (its bottleneck first, unless skip_bneck), -1 its cap, -2 nowhere (it must join). */
static int64_t keeps_at(fill_t *c, int64_t h, double level, int skip_bneck)
{
    const flow_t *fh = &c->F[h];
    double rh = fh->rate;
    if (!skip_bneck && fh->bneck >= 0 && holds_at(c, fh->bneck, level, rh)) return fh->bneck;
    for (int64_t k = 0; k < fh->n; k++) {
        int64_t q = c->p_res[fh->off + k];
        if (q != fh->bneck && holds_at(c, q, level, rh)) return q;
    }
    return rh >= c->p_cap[fh->path] * (1 - RATE_TOL) ? -1 : -2;
}

/* Flow g joins the refill: its old load leaves its resources, it grows with the level. */
/* (join and freeze are built twice, with unit 1 and 0, so that most fabrics, whose hops all weigh 1,
 * read no weights: with the prefetch below and the 4-ary event heap, 4 % of Itasca's engine) */
static inline __attribute__((always_inline)) int join_impl(fill_t *c, int64_t g, const int unit)
{
    flow_t *fl = &c->F[g];
    fl->todo = c->ep;
    if (i64_push(c->todo, c->nt, c->ct, g) < 0) return -1;
    for (int64_t k = 0; k < fl->n; k++) __builtin_prefetch(&c->RA[c->p_res[fl->off + k]], 1);   /* all at once */
    for (int64_t k = 0; k < fl->n; k++) {
        int64_t q = c->p_res[fl->off + k];
        double w = unit ? 1.0 : c->p_w[fl->off + k];
        if (touch(c, q) < 0) return -1;
        res_a *ra = &c->RA[q];
        ra->resid += fl->rate * w; ra->livew += w; ra->done = 0;
        double nk = res_key(ra);
        int32_t at = c->pos[q];                    /* its entry's key stays a lower bound, or falls to nk */
        if (at >= 0 ? nk < rk_key(c->R->a[at]) : nk <= c->bound) {
            if (ih_set(c->R, c->pos, RK(nk, q, 0)) < 0) return -1;
        } else if (at == -1 && park(c, q) < 0) return -1;
    }
    if (isfinite(c->p_cap[fl->path]) && rk_push(c->Q, RK(c->p_cap[fl->path], g, 1)) < 0) return -1;
    return 0;
}
static inline int join(fill_t *c, int64_t g) { return c->unit ? join_impl(c, g, 1) : join_impl(c, g, 0); }

/* Flow g takes its rate: the level, at resource `where` (-1: its cap). */
static inline __attribute__((always_inline)) void freeze_impl(fill_t *c, int64_t g, double level, int64_t where, const int unit)
{
    flow_t *fl = &c->F[g];
    fl->done = c->ep; fl->nrate = level; fl->where = where;
    for (int64_t k = 0; k < fl->n; k++) {
        res_a *ra = &c->RA[c->p_res[fl->off + k]];
        double w = unit ? 1.0 : c->p_w[fl->off + k];
        ra->resid -= w * level;
        ra->livew -= w;
    }
}
static inline void freeze(fill_t *c, int64_t g, double level, int64_t where)
{ if (c->unit) freeze_impl(c, g, level, where, 1); else freeze_impl(c, g, level, where, 0); }

/* messages posted at one time choose in message order (UGAL in time: ugal_choice.c) */
static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

#define CHK(x) do { if ((x) < 0) { rc = -1; goto out; } } while (0)
/* bneck: a resource, -1 (the flow's cap) or -2 (none yet) */
#define SET_BNECK(f_, b_) set_bneck(F, RB, (f_), (b_))
#define GROW(ptr, n, cap, init) do { if ((n) >= (cap)) { int64_t nc_ = (cap) ? 2 * (cap) : (init); \
        while (nc_ <= (n)) { nc_ *= 2; } void *np_ = realloc((ptr), (size_t)nc_ * sizeof *(ptr)); \
        if (!np_) { rc = -1; goto out; } (ptr) = np_; (cap) = nc_; } } while (0)

int fs_run(int64_t n_res, const double *capacity,
           const int64_t *p_ptr, const int64_t *p_res, const double *p_w, const double *p_cap, const double *p_lat,
           int64_t n_msg, int64_t *msg_path, const double *size, const int64_t *send_step,
           const int64_t *recv_step, int64_t n_steps, const int64_t *step_next, const double *step_delay,
           const int64_t *step_ptr, const int64_t *step_msg, const int64_t *first_steps, int64_t n_first,
           double *msg_post, double *msg_start, double *msg_end, double *step_start, double *step_end,
           double *delivered, int64_t *pending, int64_t *stats, int sharing,
           int (*progress)(int64_t, double), int64_t every, double interval, const choice_t *choice)
{
    int rc = 0;
    aheap AH = {0};                              /* choice: paths chosen, still in their latency */
    int64_t *posted = NULL, npost = 0, cpost = 0; /* choice: messages posted at the batch's time */
    evheap H = {0};
    rkheap R = {0}, Q = {0};
    int32_t *pos = malloc((size_t)n_res * sizeof *pos);   /* a resource's place in R (-1: none) */
    rlist *on = calloc((size_t)n_res, sizeof *on);
    slot_t *slab = NULL;                         /* the lists' first entries (rlist) */
    char *used = NULL;                           /* paths some message takes */
    /* per resource, what the refills use together in one record (one cache line), the rest in another */
    res_a *RA = calloc((size_t)n_res, sizeof *RA);
    res_b *RB = calloc((size_t)n_res, sizeof *RB);
    char *need = malloc((size_t)n_msg + 1);
    flow_t *F = NULL;
    int64_t nF = 0, cF = 0, *freel = NULL, nfree = 0, cfree = 0;
    int64_t *hp = NULL, chp = 0;                 /* hp[slot]: index of its finish event in H, -1 none */
    ev_t *nowq = NULL;                           /* events at the batch's own time, in order of creation */
    int64_t nq = 0, qh = 0, cq = 0;
    int64_t *spos = NULL, cspos = 0, maxh = 1;   /* spos[f * maxh + k]: where flow f sits in on[its k-th resource] */
    int64_t *lv = NULL, nlv = 0, clv = 0;        /* the live flows on a filling resource */
    int64_t *parked = NULL, npark = 0, cpark = 0;  /* resources parked above the filling's bound */
    int64_t *started = NULL, ns = 0, cs = 0, *fin = NULL, nf = 0, cf = 0, *todo = NULL, nt = 0, ct = 0;
    double *fin_rate = NULL;
    int64_t seq = 0, epoch = 0, events = 0, refills = 0, batches = 0, n_done = 0;
    int64_t j_fill = 0, j_check = 0, kept = 0;   /* flows joined at a filling resource, at their check; checks kept */
    double last_call = progress ? wall_s() : 0;
    int64_t since_clock = 0;                      /* flows refilled, plus one per refill, since the clock was read */
    if (!on || !RA || !RB || !need || !pos) { rc = -1; goto out; }
    if (n_res > INT32_MAX) { rc = -1; goto out; }
    for (int64_t r = 0; r < n_res; r++) { RA[r].cap = capacity[r]; RB[r].bhead = -1; RB[r].mx_ok = 1; pos[r] = -1; }
    int unit = 1;                                /* every hop of every path used weighs 1 */
    int64_t n_paths = 0;
    if (choice && !(AH.load = calloc((size_t)choice->n_links + 1, sizeof *AH.load))) { rc = -1; goto out; }
    for (int64_t m = 0; m < n_msg; m++) {
        /* with a choice, message m may take either of its pair's paths: msg_path[m] is written when it is posted */
        for (int alt = 0; alt < (choice ? 2 : 1); alt++) {
            int64_t p = choice ? choice->pair[m] + alt * choice->n_pairs : msg_path[m];
            if (p >= n_paths) n_paths = p + 1;
            if (p_ptr[p + 1] - p_ptr[p] > maxh) maxh = p_ptr[p + 1] - p_ptr[p];
        }
        need[m] = 2;
        msg_post[m] = msg_start[m] = msg_end[m] = NAN;
        delivered[m] = 0;
    }
    for (int64_t k = 0; k < p_ptr[n_paths]; k++) if (p_w[k] != 1.0) { unit = 0; break; }
    if (!(used = calloc((size_t)n_paths + 1, 1))) { rc = -1; goto out; }
    for (int64_t m = 0; m < n_msg; m++) {
        if (!choice) { used[msg_path[m]] = 1; continue; }
        used[choice->pair[m]] = used[choice->pair[m] + choice->n_pairs] = 1;
    }
    int64_t n_slab = 0;                          /* each resource's room: the used paths' entries on it */
    for (int64_t p = 0; p < n_paths; p++)
        if (used[p]) for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) { on[p_res[k]].cap++; n_slab++; }
    if (n_slab && !(slab = malloc((size_t)n_slab * sizeof *slab))) { rc = -1; goto out; }
    for (int64_t r = 0, at = 0; r < n_res && slab; r++) { on[r].a = slab + at; at += on[r].cap; }
    for (int64_t s = 0; s < n_steps; s++) { step_start[s] = step_end[s] = NAN; pending[s] = step_ptr[s + 1] - step_ptr[s]; }
    for (int64_t i = 0; i < n_first; i++) {
        ev_t e = {step_delay[first_steps[i]], seq++, first_steps[i], 0, START};
        CHK(ev_push(&H, hp, e));
    }
    while (H.n) {
        double t = H.a[0].t, horizon = t + fabs(t) * TIME_TOL;
        ns = nf = 0;
        nq = qh = 0;
        /* A step that starts, or a message whose bytes flow, at the batch's own time t (no delay, no
         * latency) waits in nowq rather than in the heap: it has the largest sequence number so far,
         * so it comes after the heap's events at t with smaller numbers and before any later one,
         * the heap's order without sifting it to the top and out again. */
        while (qh < nq || (H.n && H.a[0].t <= horizon)) {
            ev_t e;
            if (qh < nq && !(H.n && H.a[0].t <= horizon && ev_lt(&H.a[0], &nowq[qh]))) e = nowq[qh++];
            else e = ev_pop(&H, hp);
            events++;
            int64_t a = e.id, done = -1;
            if (e.kind == START) {
                step_start[a] = t;
                for (int64_t i = step_ptr[a]; i < step_ptr[a + 1]; i++) {
                    int64_t m = step_msg[i];
                    if (--need[m] == 0) {
                        msg_post[m] = t;
                        if (choice) { CHK(i64_push(&posted, &npost, &cpost, m)); continue; }
                        ev_t f = {t + p_lat[msg_path[m]], seq++, m, 0, FLOW};
                        CHK(ev_later(&H, hp, f, t, &nowq, &nq, &cq));
                    }
                }
                if (pending[a] == 0) {
                    step_end[a] = t;
                    int64_t nx = step_next[a];
                    if (nx >= 0) { ev_t f = {t + step_delay[nx], seq++, nx, 0, START}; CHK(ev_later(&H, hp, f, t, &nowq, &nq, &cq)); }
                }
                continue;
            }
            if (e.kind == FLOW) {
                int64_t m = a, p = msg_path[m];
                msg_start[m] = t;
                if (size[m] <= 0 || (p_ptr[p + 1] == p_ptr[p] && !isfinite(p_cap[p]))) {
                    done = m;
                } else {
                    int64_t g;
                    if (nfree) g = freel[--nfree];                /* a finished flow's slot */
                    else {
                        g = nF++;
                        GROW(F, nF, cF, 1024);
                        F[g].ver = 0; F[g].todo = F[g].done = F[g].add = F[g].st = 0;
                        GROW(hp, nF, chp, 1024);
                        hp[g] = -1;
                        if (nF * maxh > cspos) {
                            int64_t need_ = nF * maxh;
                            GROW(spos, need_, cspos, 1024 * maxh);
                        }
                    }
                    flow_t *fl = &F[g];
                    fl->msg = m; fl->path = p; fl->off = p_ptr[p]; fl->n = p_ptr[p + 1] - p_ptr[p];
                    fl->rate = 0; fl->tlast = t; fl->rem = size[m]; fl->deliv = 0; fl->bneck = -2;
                    for (int64_t k = 0; k < fl->n; k++) {
                        int64_t r = p_res[fl->off + k], pos;
                        slot_t sl = {(int32_t)g, (int32_t)k, p_w[fl->off + k]};
                        CHK(rl_add(&on[r], sl, &pos));
                        spos[g * maxh + k] = pos;
                        RB[r].wsum += p_w[fl->off + k];
                    }
                    CHK(i64_push(&started, &ns, &cs, g));
                }
            } else {
                int64_t g = a;
                flow_t *fl = &F[g];
                if (e.ver != fl->ver || fl->msg < 0) continue;
                int64_t m = fl->msg;
                double rt = fl->rate;
                SET_BNECK(g, -2);
                delivered[m] = fl->deliv + rt * (t - fl->tlast);
                for (int64_t k = 0; k < fl->n; k++) {
                    int64_t r = p_res[fl->off + k], pos = spos[g * maxh + k];
                    rlist *l = &on[r];
                    slot_t last = l->a[--l->n];
                    if (pos < l->n) {
                        l->a[pos] = last;
                        spos[(int64_t)last.f * maxh + last.k] = pos;
                    }
                    RB[r].wsum -= p_w[fl->off + k];
                    RA[r].load -= rt * p_w[fl->off + k];
                    if (rt >= RB[r].mx) RB[r].mx_ok = 0;            /* it may have been the fastest */
                    if (l->n == 0) { RB[r].wsum = 0; RA[r].load = 0; RB[r].mx = 0; RB[r].mx_ok = 1; }
                }
                int64_t cfr = cf;                            /* fin and fin_rate grow together */
                if (grow(&fin, nf, &cf, sizeof *fin, 1024) < 0 || grow(&fin_rate, nf, &cfr, sizeof *fin_rate, 1024) < 0) {
                    rc = -1; goto out;
                }
                fin[nf] = fl->path; fin_rate[nf++] = rt;        /* the finished flow's path, for its resources */
                fl->msg = -1;
                fl->ver++;                                       /* its pending finish events are stale */
                GROW(freel, nfree + 1, cfree, 1024);
                freel[nfree++] = g;
                done = m;
            }
            if (done >= 0) {
                int64_t m = done;
                msg_end[m] = t;
                n_done++;
                int64_t ss[2] = {send_step[m], recv_step[m]};
                for (int j = 0; j < 2; j++) {
                    int64_t s = ss[j];
                    if (--pending[s] == 0 && !isnan(step_start[s])) {
                        step_end[s] = t;
                        int64_t nx = step_next[s];
                        if (nx >= 0) { ev_t f = {t + step_delay[nx], seq++, nx, 0, START}; CHK(ev_later(&H, hp, f, t, &nowq, &nq, &cq)); }
                    }
                }
            }
        }
        if (npost) {                             /* the messages posted at t choose, in message order */
            qsort(posted, (size_t)npost, sizeof *posted, cmp_i64);
            for (int64_t i = 0; i < npost; i++) {
                int64_t m = posted[i], p = ch_choose(choice, &AH, RB, t, m, p_ptr, p_res, p_w, p_lat);
                if (p < 0) { rc = -1; goto out; }
                msg_path[m] = p;
                ev_t f = {t + p_lat[p], seq++, m, 0, FLOW};
                CHK(ev_push(&H, hp, f));
            }
            npost = 0;
        }
        if (!ns && !nf) continue;
        if (progress) {
            int by_count = every > 0 && ++batches % every == 0;
            if (by_count || since_clock >= CLOCK_WORK) {
                double now = wall_s();
                since_clock = 0;
                if (by_count || now - last_call >= interval) {
                    last_call = now;
                    if (progress(n_done, t)) { rc = 2; goto out; }
                }
            }
        }
        int64_t ev_ep = ++epoch;
        for (int64_t i = 0; i < ns; i++) F[started[i]].st = ev_ep;
        if (sharing == 1) {
            /* congestion count: every flow on a resource whose count changed takes
             * min over its path of capacity / weight in flight; the others keep theirs */
            nt = 0;
            for (int64_t i = 0; i < ns + nf; i++) {
                int64_t p = i < ns ? F[started[i]].path : fin[i - ns];
                for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                    int64_t r = p_res[k];
                    if (RB[r].seen == ev_ep) continue;
                    RB[r].seen = ev_ep;
                    for (int64_t z = 0; z < on[r].n; z++) {
                        int64_t g = on[r].a[z].f;
                        if (F[g].todo == ev_ep) continue;
                        F[g].todo = ev_ep;
                        CHK(i64_push(&todo, &nt, &ct, g));
                    }
                }
            }
            for (int64_t i = 0; i < nt; i++)
                F[todo[i]].nrate = counted_rate(F[todo[i]].path, p_ptr, p_res, p_cap, RA, RB);
            refills += nt;
            goto apply;
        }
        /* ---- the refill: one progressive filling from level thr that takes flows in as it meets them ----
         * Below thr nothing changes (engine.py).  Live flows are those refilled (the started ones
         * from the start); every other flow stays at its rate until the filling shows it cannot:
         * - a resource about to fill at level L with a fixed flow faster than L on it: that flow
         *   joins at L (had it been live, the resource would not fill yet);
         * - a fixed flow bottlenecked on a resource that a changed flow crosses is checked when the
         *   level reaches its rate: it stays if some resource of its path is then full with no faster
         *   flow (or it is at its cap), else it joins at its rate.
         * No resource a joining flow crosses has filled below the level it joins at (it would have
         * joined then), so the filling from there is the one of the grown set: one pass, and every
         * flow ends with a certified bottleneck (docs/dynamic.md, "The refill"). */
        double thr = INFINITY;
        for (int64_t i = 0; i < nf; i++) if (fin_rate[i] < thr) thr = fin_rate[i];
        for (int64_t i = 0; i < ns; i++) {       /* a started flow gets at least its counted share */
            double lb = counted_rate(F[started[i]].path, p_ptr, p_res, p_cap, RA, RB);
            if (lb < thr) thr = lb;
        }
        thr *= 1 - RATE_TOL;
        nt = 0;
        int64_t frozen = 0;
        double level = thr;
        fill_t C_ = {RA, RB, F, &R, &Q, pos, on, p_res, p_w, p_cap, ev_ep, &todo, &nt, &ct,
                     unit, thr * PARK_SPAN, &parked, &npark, &cpark};
#define TOUCH(q_) CHK(touch(&C_, (q_)))
#define JOIN(g_) CHK(join(&C_, (g_)))
        for (int64_t i = 0; i < ns; i++) JOIN(started[i]);
        for (int64_t i = 0; i < nf; i++)
            for (int64_t k = p_ptr[fin[i]]; k < p_ptr[fin[i] + 1]; k++) TOUCH(p_res[k]);
        while (R.n || Q.n || npark) {
            /* every live flow has its rate: the resources' entries left are dead (no live weight),
             * only the checks matter; drop them at once instead of popping each */
            if (frozen == nt) { ih_clear(&R, pos); unpark_clear(&C_); }
            int r_next = R.n && (!Q.n || R.a[0] < Q.a[0]);
            if (npark) {                            /* the next entry above the bound: look at the parked */
                double km = r_next ? rk_key(R.a[0]) : Q.n ? rk_key(Q.a[0]) : INFINITY;
                if (km > C_.bound) { CHK(unpark(&C_, km)); continue; }
            }
            if (!R.n && !Q.n) break;
            if (r_next) {                           /* resource R.a[0] may fill (at one key: resources first) */
                rk_t e = R.a[0];
                int64_t r = RK_ID(e);
                if (RA[r].done == ev_ep || RA[r].livew <= 1e-12) { ih_pop(&R, pos); continue; }
                double k_now = res_key(&RA[r]);
                if (k_now > rk_key(e)) {            /* it rose: later (parked, if above the bound) */
                    if (k_now <= C_.bound) ih_down(&R, pos, 0, RK(k_now, r, 0));
                    else { ih_pop(&R, pos); CHK(park(&C_, r)); }
                    continue;
                }
                ih_pop(&R, pos);
                double lam = k_now > level ? k_now : level;
                int joined = 0;
                nlv = 0;
                /* one look at each flow on r: a fixed one faster than lam joins (none can be, when
                 * r's largest rate is known and not above lam); a live one is noted, to freeze if
                 * none joined */
                int faster = !(RB[r].mx_ok && RB[r].mx <= lam * (1 + RATE_TOL));
                for (int64_t z = 0; z < on[r].n; z++) {
                    int64_t h = on[r].a[z].f;
                    const flow_t *fh = &F[h];
                    if (fh->todo != ev_ep) {
                        if (faster && fh->rate > lam * (1 + RATE_TOL)) { JOIN(h); joined = 1; j_fill++; }
                    } else if (fh->done != ev_ep && !joined) CHK(i64_push(&lv, &nlv, &clv, h));
                }
                if (joined) continue;           /* its key rose (put back by JOIN) */
                level = lam;
                RA[r].done = ev_ep;
                for (int64_t i = 0; i < nlv; i++) { freeze(&C_, lv[i], level, r); frozen++; }
                continue;
            }
            rk_t e = rk_pop(&Q);
            if (RK_KIND(e) == 1) {                  /* a live flow's cap */
                int64_t g = RK_ID(e);
                flow_t *fl = &F[g];
                if (fl->done == ev_ep) continue;
                if (rk_key(e) > level) level = rk_key(e);
                freeze(&C_, g, level, -1); frozen++;
            } else if (RK_KIND(e) == 2) {           /* the fixed flows bottlenecked on resource e.id */
                int64_t r = RK_ID(e);
                double key = rk_key(e);
                if (key > level) level = key;
                int r_holds = -1;                   /* r holds them at this level (-1: not looked at yet) */
                for (int64_t h = RB[r].bhead, nx; h >= 0; h = nx) {
                    flow_t *fh = &F[h];
                    nx = fh->bnext;                 /* h may move to another resource's list */
                    if (fh->todo == ev_ep || fh->add == ev_ep) continue;
                    fh->add = ev_ep;
                    if (fabs(fh->rate - key) > key * RATE_TOL) {   /* not at the group's rate: on its own */
                        CHK(rk_push(&Q, RK(fh->rate, h, 3)));
                        continue;
                    }
                    if (r_holds < 0) r_holds = holds_at(&C_, r, level, fh->rate);
                    int64_t found = r_holds ? r : keeps_at(&C_, h, level, 1);
                    if (found != -2) { SET_BNECK(h, found); kept++; }
                    else { JOIN(h); j_check++; }
                }
            } else {                                /* fixed flow e.id on its own: does it keep its rate? */
                int64_t h = RK_ID(e);
                flow_t *fh = &F[h];
                if (fh->todo == ev_ep) continue;
                if (fh->rate > level) level = fh->rate;
                int64_t found = keeps_at(&C_, h, level, 0);
                if (found != -2) { SET_BNECK(h, found); kept++; }
                else { JOIN(h); j_check++; }
            }
        }
#undef JOIN
#undef TOUCH
        if (frozen != nt) { rc = -3; goto out; }   /* a flow left without a rate: a bug, not a result */
        refills += nt;
        for (int64_t i = 0; i < nt; i++) SET_BNECK(todo[i], F[todo[i]].where);
    apply:
        /* the new rates: bytes so far booked at the old ones, a new finish event for each changed flow */
        for (int64_t i = 0; i < nt; i++) {
            int64_t g = todo[i];
            flow_t *fl = &F[g];
            double nr = fl->nrate, old = fl->rate;
            if (fl->st != ev_ep && fabs(nr - old) <= SAME_RATE * old) continue;
            double dt = t - fl->tlast;
            if (dt > 0) { fl->deliv += old * dt; fl->rem -= old * dt; fl->tlast = t; }
            for (int64_t k = 0; k < fl->n; k++) {
                int64_t r = p_res[fl->off + k];
                RA[r].load += (nr - old) * (unit ? 1.0 : p_w[fl->off + k]);
                if (!RB[r].mx_ok) continue;
                if (nr >= RB[r].mx) RB[r].mx = nr;
                else if (old >= RB[r].mx) RB[r].mx_ok = 0;          /* the fastest slowed down */
            }
            fl->rate = nr;
            fl->ver++;
            ev_t f = {t + (fl->rem > 0 ? fl->rem : 0) / nr, seq++, g, fl->ver, FINISH};
            CHK(ev_set(&H, hp, f));
        }
        since_clock += 1 + nt;
    }
    for (int64_t s = 0; s < n_steps; s++) if (pending[s] > 0) { rc = 1; break; }
out:
    for (int64_t g = 0; g < nF; g++) if (F[g].msg >= 0) delivered[F[g].msg] = F[g].deliv;   /* stopped early */
    stats[0] = events; stats[1] = refills; stats[2] = j_fill; stats[3] = j_check; stats[4] = kept;
    if (on) for (int64_t r = 0; r < n_res; r++) if (on[r].owned) free(on[r].a);
    free(slab); free(used);
    free(on); free(RA); free(RB); free(need);
    free(F); free(hp); free(freel); free(spos); free(started); free(lv); free(fin); free(todo);
    free(fin_rate); free(posted); free(AH.a); free(AH.load); free(H.a); free(R.a); free(Q.a); free(pos); free(nowq); free(parked);
    return rc;
}
