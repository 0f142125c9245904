/* Max-min fair rates by progressive filling (fabscope.model.maxmin): the numpy reference's steps and
 * float operations, in its order, with the resources' fill levels under a tournament tree (each
 * node the least of its two children; the leaves blocks of 8 rows in index order, one cache line of
 * fills) so that a step touches only the resources it fills and the rows its frozen flows cross,
 * not all of them, and finds the full rows in index order.
 *
 * Resources are rows, flows columns: rptr/rind hold each row's flows (CSR), cptr/cind/cdat each
 * flow's rows and weights (CSC); pointers int64, indices int32 (the caller keeps matrices of 2**31
 * rows or flows and more to the reference).  live_w0: each row's weight sum as the reference computes it (numpy's
 * summation order, so it is passed in).  capacity: per row; cap: per flow (inf for none); capped: the
 * flows with a finite cap, by cap (stable).  grow = 1 + REL_TOL: a row is full when its fill is at
 * most level * grow.  Per step:
 *   level = min(least fill, next cap of a live flow); stop if it is not finite;
 *   new   = the live flows of every full row (rows in index order, each row's flows in order), then
 *           the capped flows at the level, each once, first occurrence kept;
 *   none  -> the full rows' fill becomes inf (numerical safety, as the reference);
 *   else  each new flow's rate is the level; on its rows, in order, live_w -= w, frozen += w * level;
 *         then each touched row's fill = (capacity - frozen) / live_w, inf where live_w <= 1e-9.
 * work: mm_work_bytes(n_res, n_flows) bytes of scratch the caller keeps between solves (its pages
 * then fault in once), or NULL to allocate here.  Returns 0; -1 when memory runs out; -2 when a
 * capacity is NaN (the tree needs an order: the caller solves with the reference).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* no fused multiply-add: frozen += w * level must round twice, as numpy does */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* what the solve keeps per resource, side by side: an update touches one cache line */
typedef struct {
    double lw;          /* weight of the live flows */
    double frozen;      /* load of the frozen flows */
    double cap;
} row_t;

#define BLOCK 8         /* rows per leaf */

/* the tree: t[1] the root, t[i]'s children t[2i] and t[2i + 1], leaf t[P + b] the least fill of
   rows BLOCK*b .. BLOCK*b + BLOCK - 1 (P a power of two; fills past the last row inf) */
static inline double least(double a, double b)
{
    return b < a ? b : a;
}

static inline double block_least(const double *fill, int64_t b)
{
    const double *x = fill + BLOCK * b;
    double m = x[0];
    for (int j = 1; j < BLOCK; j++)
        m = least(m, x[j]);
    return m;
}

/* block b's fills changed: its leaf, then its ancestors up to the first that keeps its value */
static inline void tree_up(double *t, const double *fill, int64_t P, int64_t b)
{
    int64_t i = P + b;
    double v = block_least(fill, b);
    if (v == t[i])
        return;
    t[i] = v;
    for (i >>= 1; i >= 1; i >>= 1) {
        v = least(t[2 * i], t[2 * i + 1]);
        if (v == t[i])
            break;
        t[i] = v;
    }
}

static void tree_build(double *t, const double *fill, int64_t P)
{
    for (int64_t b = 0; b < P; b++)
        t[P + b] = block_least(fill, b);
    for (int64_t i = P - 1; i >= 1; i--)
        t[i] = least(t[2 * i], t[2 * i + 1]);
}

static int64_t leaves(int64_t n_res)
{
    int64_t P = 1;
    while (P * BLOCK < n_res)
        P <<= 1;
    return P;
}

int64_t mm_work_bytes(int64_t n_res, int64_t n_flows)
{
    int64_t R = n_res > 0 ? n_res : 1, F = n_flows > 0 ? n_flows : 1, P = leaves(n_res);
    return (2 * P + BLOCK * P) * (int64_t)sizeof(double) + R * (int64_t)(sizeof(row_t) + sizeof(int64_t)) +
           P * (int64_t)(sizeof(int64_t) + 1) + F * (int64_t)(sizeof(int64_t) + 1);
}

int64_t mm_solve(int64_t n_res, int64_t n_flows, const int64_t *rptr, const int32_t *rind,
                 const int64_t *cptr, const int32_t *cind, const double *cdat, const double *live_w0,
                 const double *capacity, const double *cap, const int64_t *capped, int64_t n_capped,
                 double grow, double *rate, void *work)
{
    int64_t R = n_res > 0 ? n_res : 1, F = n_flows > 0 ? n_flows : 1, P = leaves(n_res);
    for (int64_t r = 0; r < n_res; r++)
        if (isnan(capacity[r]))
            return -2;
    void *own = NULL;
    if (!work) {
        work = own = malloc((size_t)mm_work_bytes(n_res, n_flows));
        if (!work)
            return -1;
    }
    double *t = work;
    double *fill = t + 2 * P;               /* BLOCK * P of them */
    row_t *row = (row_t *)(fill + BLOCK * P);
    int64_t *rows = (int64_t *)(row + R);   /* the full rows of a step */
    int64_t *blocks = rows + R;             /* the blocks a step's updates touched */
    int64_t *newf = blocks + P;
    unsigned char *active = (unsigned char *)(newf + F), *mark = active + F;
    int64_t n_active = 0;
    for (int64_t f = 0; f < n_flows; f++) {
        int free_flow = cptr[f + 1] == cptr[f] && !isfinite(cap[f]);
        rate[f] = free_flow ? INFINITY : 0.0;
        active[f] = !free_flow;
        n_active += !free_flow;
    }
    for (int64_t r = 0; r < n_res; r++) {
        row_t *x = row + r;
        x->lw = live_w0[r];
        x->frozen = 0.0;
        x->cap = capacity[r];
        fill[r] = x->lw > 0 ? x->cap / x->lw : INFINITY;
    }
    for (int64_t r = n_res; r < BLOCK * P; r++)
        fill[r] = INFINITY;
    for (int64_t b = 0; b < P; b++)
        mark[b] = 0;
    tree_build(t, fill, P);
    int64_t ptr = 0;
    while (n_active) {
        while (ptr < n_capped && !active[capped[ptr]])
            ptr++;
        double next_cap = ptr < n_capped ? cap[capped[ptr]] : INFINITY;
        double lo = t[1];                   /* fill.min() (inf without rows) */
        double level = next_cap < lo ? next_cap : lo;   /* Python's min(fill.min(), next_cap) */
        if (!isfinite(level))
            break;
        double thresh = level * grow;
        /* every row with fill <= thresh, in index order: the subtrees whose least is at most thresh */
        int64_t n_full = 0, stack[130], sp = 0;     /* at most two a level */
        stack[sp++] = 1;
        while (sp) {
            int64_t i = stack[--sp];
            if (!(t[i] <= thresh))
                continue;
            if (i >= P) {
                int64_t r0 = BLOCK * (i - P);
                for (int j = 0; j < BLOCK; j++)
                    if (fill[r0 + j] <= thresh)
                        rows[n_full++] = r0 + j;
            } else {
                stack[sp++] = 2 * i + 1;
                stack[sp++] = 2 * i;
            }
        }
        int64_t n_new = 0;
        for (int64_t i = 0; i < n_full; i++) {
            int64_t r = rows[i];
            for (int64_t k = rptr[r]; k < rptr[r + 1]; k++) {
                int64_t f = rind[k];
                if (active[f]) {
                    active[f] = 0;
                    newf[n_new++] = f;
                }
            }
        }
        while (ptr < n_capped && cap[capped[ptr]] <= thresh) {
            int64_t f = capped[ptr++];
            if (active[f]) {
                active[f] = 0;
                newf[n_new++] = f;
            }
        }
        if (!n_new) {
            for (int64_t i = 0; i < n_full; i++)
                fill[rows[i]] = INFINITY;
            for (int64_t i = 0; i < n_full; i++)
                tree_up(t, fill, P, rows[i] / BLOCK);
            continue;
        }
        n_active -= n_new;
        int64_t n_touched = 0;
        for (int64_t i = 0; i < n_new; i++) {
            int64_t f = newf[i];
            if (i + 8 < n_new) {            /* the loads a few flows ahead, to overlap their misses */
                int64_t k8 = cptr[newf[i + 8]];
                __builtin_prefetch(cind + k8);
                __builtin_prefetch(cdat + k8);
            }
            if (i + 4 < n_new)
                for (int64_t k = cptr[newf[i + 4]]; k < cptr[newf[i + 4] + 1]; k++)
                    __builtin_prefetch(row + cind[k], 1);
            rate[f] = level;
            for (int64_t k = cptr[f]; k < cptr[f + 1]; k++) {
                int64_t r = cind[k];
                double w = cdat[k];
                row_t *x = row + r;
                x->lw += -w;
                x->frozen += w * level;
                /* the fill from the loads so far, while the row is in cache: the last update's is the
                   reference's value, computed from the final loads */
                fill[r] = x->lw > 1e-9 ? (x->cap - x->frozen) / x->lw : INFINITY;
                int64_t b = r / BLOCK;
                if (!mark[b]) {
                    mark[b] = 1;
                    blocks[n_touched++] = b;
                }
            }
        }
        int bulk = n_touched > P / 16;      /* many leaves changed: their leaves, then the nodes in one pass */
        for (int64_t i = 0; i < n_touched; i++) {
            if (bulk)
                t[P + blocks[i]] = block_least(fill, blocks[i]);
            else
                tree_up(t, fill, P, blocks[i]);
            mark[blocks[i]] = 0;
        }
        if (bulk)
            for (int64_t i = P - 1; i >= 1; i--)
                t[i] = least(t[2 * i], t[2 * i + 1]);
    }
    free(own);
    return 0;
}
