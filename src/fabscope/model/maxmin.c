/* Max-min fair rates by progressive filling (fabscope.model.maxmin): the numpy reference's steps and
 * float operations, in its order, with the resources' fill levels in a binary heap so that a step
 * touches only the resources it fills and the rows its frozen flows cross, never all of them.
 *
 * Resources are rows, flows columns: rptr/rind hold each row's flows (CSR), cptr/cind/cdat each
 * flow's rows and weights (CSC).  live_w0: each row's weight sum as the reference computes it (numpy's
 * summation order, so it is passed in).  capacity: per row; cap: per flow (inf for none); capped: the
 * flows with a finite cap, by cap (stable).  grow = 1 + REL_TOL: a row is full when its fill is at
 * most level * grow.  Per step:
 *   level = min(least fill, next cap of a live flow); stop if it is not finite;
 *   new   = the live flows of every full row (rows in index order, each row's flows in order), then
 *           the capped flows at the level, each once, first occurrence kept;
 *   none  -> the full rows' fill becomes inf (numerical safety, as the reference);
 *   else  each new flow's rate is the level; on its rows, in order, live_w -= w, frozen += w * level;
 *         then each touched row's fill = (capacity - frozen) / live_w, inf where live_w <= 1e-9.
 * Returns 0, or -1 when memory runs out (nothing written but rate's first pass).
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

typedef struct {
    int64_t *h;         /* heap of rows, least fill on top */
    int64_t *pos;       /* each row's place in h */
    const double *key;  /* fill */
    int64_t n;
} heap_t;

static inline void hswap(heap_t *H, int64_t i, int64_t j)
{
    int64_t a = H->h[i], b = H->h[j];
    H->h[i] = b;
    H->h[j] = a;
    H->pos[b] = i;
    H->pos[a] = j;
}

static void sift_up(heap_t *H, int64_t i)
{
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!(H->key[H->h[i]] < H->key[H->h[p]]))
            break;
        hswap(H, i, p);
        i = p;
    }
}

static void sift_down(heap_t *H, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < H->n && H->key[H->h[l]] < H->key[H->h[m]])
            m = l;
        if (r < H->n && H->key[H->h[r]] < H->key[H->h[m]])
            m = r;
        if (m == i)
            return;
        hswap(H, i, m);
        i = m;
    }
}

static inline void heap_fix(heap_t *H, int64_t row)
{
    int64_t i = H->pos[row];
    sift_up(H, i);
    sift_down(H, H->pos[row]);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t mm_solve(int64_t n_res, int64_t n_flows, const int64_t *rptr, const int64_t *rind,
                 const int64_t *cptr, const int64_t *cind, const double *cdat, const double *live_w0,
                 const double *capacity, const double *cap, const int64_t *capped, int64_t n_capped,
                 double grow, double *rate)
{
    size_t R = (size_t)(n_res > 0 ? n_res : 1), F = (size_t)(n_flows > 0 ? n_flows : 1);
    double *live_w = malloc(sizeof(double) * R), *frozen = calloc(R, sizeof(double));
    double *fill = malloc(sizeof(double) * R);
    int64_t *h = malloc(sizeof(int64_t) * R), *pos = malloc(sizeof(int64_t) * R);
    int64_t *rows = malloc(sizeof(int64_t) * R);    /* the full rows of a step, then the touched ones */
    int64_t *stack = malloc(sizeof(int64_t) * R);
    int64_t *newf = malloc(sizeof(int64_t) * F);
    unsigned char *active = malloc(F), *mark = calloc(R, 1);
    int64_t ret = 0;
    if (!live_w || !frozen || !fill || !h || !pos || !rows || !stack || !newf || !active || !mark) {
        ret = -1;
        goto out;
    }
    int64_t n_active = 0;
    for (int64_t f = 0; f < n_flows; f++) {
        int free_flow = cptr[f + 1] == cptr[f] && !isfinite(cap[f]);
        rate[f] = free_flow ? INFINITY : 0.0;
        active[f] = !free_flow;
        n_active += !free_flow;
    }
    for (int64_t r = 0; r < n_res; r++) {
        live_w[r] = live_w0[r];
        fill[r] = live_w[r] > 0 ? capacity[r] / live_w[r] : INFINITY;
        h[r] = r;
        pos[r] = r;
    }
    heap_t H = {h, pos, fill, n_res};
    for (int64_t i = n_res / 2 - 1; i >= 0; i--)
        sift_down(&H, i);
    int64_t ptr = 0;
    while (n_active) {
        while (ptr < n_capped && !active[capped[ptr]])
            ptr++;
        double next_cap = ptr < n_capped ? cap[capped[ptr]] : INFINITY;
        double least = n_res ? fill[h[0]] : INFINITY;
        double level = next_cap < least ? next_cap : least;   /* Python's min(least, next_cap) */
        if (!isfinite(level))
            break;
        double thresh = level * grow;
        /* every row with fill <= thresh: the heap's top subtree of them */
        int64_t n_full = 0, sp = 0;
        if (n_res && fill[h[0]] <= thresh)
            stack[sp++] = 0;
        while (sp) {
            int64_t i = stack[--sp];
            rows[n_full++] = h[i];
            for (int64_t c = 2 * i + 1; c <= 2 * i + 2 && c < n_res; c++)
                if (fill[h[c]] <= thresh)
                    stack[sp++] = c;
        }
        qsort(rows, (size_t)n_full, sizeof(int64_t), cmp_i64);
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
            for (int64_t i = 0; i < n_full; i++) {
                fill[rows[i]] = INFINITY;
                heap_fix(&H, rows[i]);
            }
            continue;
        }
        n_active -= n_new;
        int64_t n_touched = 0;
        for (int64_t i = 0; i < n_new; i++) {
            int64_t f = newf[i];
            rate[f] = level;
            for (int64_t k = cptr[f]; k < cptr[f + 1]; k++) {
                int64_t r = cind[k];
                double w = cdat[k];
                live_w[r] += -w;
                frozen[r] += w * level;
                if (!mark[r]) {
                    mark[r] = 1;
                    rows[n_touched++] = r;
                }
            }
        }
        for (int64_t i = 0; i < n_touched; i++) {
            int64_t r = rows[i];
            double lw = live_w[r];
            fill[r] = lw > 1e-9 ? (capacity[r] - frozen[r]) / lw : INFINITY;
            mark[r] = 0;
            heap_fix(&H, r);
        }
    }
out:
    free(live_w);
    free(frozen);
    free(fill);
    free(h);
    free(pos);
    free(rows);
    free(stack);
    free(newf);
    free(active);
    free(mark);
    return ret;
}
