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
 * work: mm_work_bytes(n_res, n_flows) bytes of scratch the caller keeps between solves (its pages
 * then fault in once), or NULL to allocate here.  Returns 0, or -1 when memory runs out.
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
    double fill;        /* the level at which it fills: (cap - frozen) / lw, inf where lw <= 1e-9 */
    double cap;
} row_t;

/* rows with a finite fill, least on top; keys beside the rows so a sift reads one line per level */
typedef struct {
    double k;
    int64_t r;
} node_t;

typedef struct {
    node_t *h;
    int64_t *pos;       /* each row's place in h, -1 when out (its fill is not finite) */
    int64_t n;
} heap_t;

static inline void hput(heap_t *H, int64_t i, node_t x)
{
    H->h[i] = x;
    H->pos[x.r] = i;
}

static void sift_up(heap_t *H, int64_t i)
{
    node_t x = H->h[i];
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!(x.k < H->h[p].k))
            break;
        hput(H, i, H->h[p]);
        i = p;
    }
    hput(H, i, x);
}

static void sift_down(heap_t *H, int64_t i)
{
    node_t x = H->h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= H->n)
            break;
        if (c + 1 < H->n && H->h[c + 1].k < H->h[c].k)
            c++;
        if (!(H->h[c].k < x.k))
            break;
        hput(H, i, H->h[c]);
        i = c;
    }
    hput(H, i, x);
}

/* every row of [0, n_res) with a finite fill, in one linear build */
static void heap_build(heap_t *H, const row_t *row, int64_t n_res)
{
    H->n = 0;
    for (int64_t r = 0; r < n_res; r++) {
        H->pos[r] = -1;
        if (isfinite(row[r].fill))
            hput(H, H->n++, (node_t){row[r].fill, r});
    }
    for (int64_t i = H->n / 2 - 1; i >= 0; i--)
        sift_down(H, i);
}

/* many rows' fills changed (rows[0..m), the others unchanged): the heap's rows with their new fills,
   those now not finite dropped, rows out that came back added, then one linear build */
static void heap_rebuild(heap_t *H, const row_t *row, const int64_t *rows, int64_t m)
{
    int64_t n = 0;
    for (int64_t i = 0; i < H->n; i++) {
        int64_t r = H->h[i].r;
        if (isfinite(row[r].fill))
            hput(H, n++, (node_t){row[r].fill, r});
        else
            H->pos[r] = -1;
    }
    for (int64_t i = 0; i < m; i++)
        if (H->pos[rows[i]] < 0 && isfinite(row[rows[i]].fill))
            hput(H, n++, (node_t){row[rows[i]].fill, rows[i]});
    H->n = n;
    for (int64_t i = n / 2 - 1; i >= 0; i--)
        sift_down(H, i);
}

/* row r's fill changed: move, insert or remove it */
static void heap_set(heap_t *H, int64_t r, double v)
{
    int64_t i = H->pos[r];
    if (isfinite(v)) {
        if (i < 0) {
            i = H->n++;
            hput(H, i, (node_t){v, r});
            sift_up(H, i);
            return;
        }
        double old = H->h[i].k;
        H->h[i].k = v;
        if (v < old)
            sift_up(H, i);
        else
            sift_down(H, i);
    } else if (i >= 0) {
        H->pos[r] = -1;
        node_t last = H->h[--H->n];
        if (i == H->n)
            return;
        double old = H->h[i].k;
        hput(H, i, last);
        if (last.k < old)
            sift_up(H, i);
        else
            sift_down(H, i);
    }
}

/* rows[0..n) ascending: insertion sort when few, else LSD radix (11-bit digits) through tmp */
static void sort_rows(int64_t *rows, int64_t n, int64_t n_res, int64_t *tmp)
{
    if (n < 256) {
        for (int64_t i = 1; i < n; i++) {
            int64_t x = rows[i], j = i;
            while (j > 0 && rows[j - 1] > x) {
                rows[j] = rows[j - 1];
                j--;
            }
            rows[j] = x;
        }
        return;
    }
    int64_t count[2048];
    int64_t *src = rows, *dst = tmp;
    for (int shift = 0; shift == 0 || (shift < 64 && (n_res - 1) >> shift); shift += 11) {
        for (int d = 0; d < 2048; d++)
            count[d] = 0;
        for (int64_t i = 0; i < n; i++)
            count[(src[i] >> shift) & 2047]++;
        int64_t sum = 0;
        for (int d = 0; d < 2048; d++) {
            int64_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 2047]++] = src[i];
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != rows)
        for (int64_t i = 0; i < n; i++)
            rows[i] = src[i];
}

int64_t mm_work_bytes(int64_t n_res, int64_t n_flows)
{
    int64_t R = n_res > 0 ? n_res : 1, F = n_flows > 0 ? n_flows : 1;
    return R * (int64_t)(sizeof(row_t) + sizeof(node_t) + 3 * sizeof(int64_t) + 1) + F * (int64_t)(sizeof(int64_t) + 1);
}

int64_t mm_solve(int64_t n_res, int64_t n_flows, const int64_t *rptr, const int64_t *rind,
                 const int64_t *cptr, const int64_t *cind, const double *cdat, const double *live_w0,
                 const double *capacity, const double *cap, const int64_t *capped, int64_t n_capped,
                 double grow, double *rate, void *work)
{
    size_t R = (size_t)(n_res > 0 ? n_res : 1), F = (size_t)(n_flows > 0 ? n_flows : 1);
    void *own = NULL;
    if (!work) {
        work = own = malloc((size_t)mm_work_bytes(n_res, n_flows));
        if (!work)
            return -1;
    }
    row_t *row = work;
    node_t *h = (node_t *)(row + R);
    int64_t *pos = (int64_t *)(h + R);
    int64_t *rows = pos + R;            /* the full rows of a step, then the touched ones */
    int64_t *stack = rows + R;          /* the heap walk's stack, then the sort's scratch */
    int64_t *newf = stack + R;
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
        x->fill = x->lw > 0 ? x->cap / x->lw : INFINITY;
        mark[r] = 0;
    }
    heap_t H = {h, pos, 0};
    heap_build(&H, row, n_res);
    int64_t ptr = 0;
    while (n_active) {
        while (ptr < n_capped && !active[capped[ptr]])
            ptr++;
        double next_cap = ptr < n_capped ? cap[capped[ptr]] : INFINITY;
        double least = H.n ? h[0].k : INFINITY;      /* fill.min(): rows out of the heap are inf */
        double level = next_cap < least ? next_cap : least;   /* Python's min(least, next_cap) */
        if (!isfinite(level))
            break;
        double thresh = level * grow;
        /* every row with fill <= thresh: the heap's top subtree of them */
        int64_t n_full = 0, sp = 0;
        if (H.n && h[0].k <= thresh)
            stack[sp++] = 0;
        while (sp) {
            int64_t i = stack[--sp];
            rows[n_full++] = h[i].r;
            for (int64_t c = 2 * i + 1; c <= 2 * i + 2 && c < H.n; c++)
                if (h[c].k <= thresh)
                    stack[sp++] = c;
        }
        sort_rows(rows, n_full, n_res, stack);
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
                row[rows[i]].fill = INFINITY;
                heap_set(&H, rows[i], INFINITY);
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
                row_t *x = row + r;
                x->lw += -w;
                x->frozen += w * level;
                /* the fill from the loads so far, while the row is in cache: the last update's is the
                   reference's value, computed from the final loads */
                x->fill = x->lw > 1e-9 ? (x->cap - x->frozen) / x->lw : INFINITY;
                if (!mark[r]) {
                    mark[r] = 1;
                    rows[n_touched++] = r;
                }
            }
        }
        for (int64_t i = 0; i < n_touched; i++)
            mark[rows[i]] = 0;
        /* a large share changed: one linear build (in row order when the heap holds most rows) */
        if (n_touched > H.n / 8 && H.n > n_res / 4)
            heap_build(&H, row, n_res);
        else if (n_touched > H.n / 8)
            heap_rebuild(&H, row, rows, n_touched);
        else
            for (int64_t i = 0; i < n_touched; i++)
                heap_set(&H, rows[i], row[rows[i]].fill);
    }
    free(own);
    return 0;
}
