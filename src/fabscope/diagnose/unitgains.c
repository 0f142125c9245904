/* The null calibration's inner loop (fabscope.diagnose.unitgains): for every unit and every draw of
 * noise, the change of the pairs' negative log-likelihood under each factor of a grid, and its minimum.
 *
 * Entries k = 0..n-1 come sorted by unit[k]; entry k is one pair (pair[k]) the unit slows, with
 * D[k*G + g] >= 0 the log of (new time / current time) under grid factor g (0 where the factor does
 * not slow the pair; the grid runs from the strongest cut to the mildest, so D falls along g).
 * E[p*R + r] is pair p's residual in draw r.  The likelihood is a table: T[i] = nll(x0 + i / inv_h),
 * read with linear interpolation and held at its ends outside.  Per draw r and unit u:
 *     best[r*U + u] = min over g of sum over u's entries of nll(E + D) - nll(E),  arg[r*U + u] = that g
 * (units without entries are left as the caller set them).  acc: R*G doubles of scratch.
 */
#include <stdint.h>
#include <stdlib.h>

static inline double tab(const double *T, int64_t nt, double x0, double inv_h, double x)
{
    double f = (x - x0) * inv_h;
    if (!(f > 0.0))
        return T[0];
    if (f >= (double)(nt - 1))
        return T[nt - 1];
    int64_t i = (int64_t)f;
    double a = f - (double)i;
    return T[i] + a * (T[i + 1] - T[i]);
}

void ug_unit_minima(int64_t n, int64_t G, int64_t R, int64_t U, const int64_t *unit, const int64_t *pair,
                    const float *D, const double *E, const double *T, int64_t nt, double x0, double inv_h,
                    double *acc, double *best, int64_t *arg)
{
    /* the table as (value, slope) per step; each residual as its place in the table and its value there;
       each entry's effects in table steps: the innermost loop is an add, a load and a multiply-add */
    double *TS = malloc(sizeof(double) * 2 * (size_t)nt);
    double *dd = malloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
    if (!TS || !dd) {
        free(TS);
        free(dd);
        return;
    }
    for (int64_t i = 0; i < nt; i++) {
        TS[2 * i] = T[i];
        TS[2 * i + 1] = i + 1 < nt ? T[i + 1] - T[i] : 0.0;
    }
    const double top = (double)(nt - 1);
    int64_t k = 0;
    while (k < n) {
        int64_t u = unit[k], k1 = k;
        while (k1 < n && unit[k1] == u)
            k1++;
        for (int64_t i = 0; i < R * G; i++)
            acc[i] = 0.0;
        for (int64_t kk = k; kk < k1; kk++) {
            const float *d = D + kk * G;
            int64_t gn = G;                 /* past the last factor that slows the pair */
            while (gn > 0 && !(d[gn - 1] > 0.0f))
                gn--;
            if (!gn)
                continue;
            double ddmax = 0.0;
            for (int64_t g = 0; g < gn; g++) {
                dd[g] = d[g] > 0.0f ? (double)d[g] * inv_h : 0.0;
                if (dd[g] > ddmax)
                    ddmax = dd[g];
            }
            const double *e = E + pair[kk] * R;
            for (int64_t r = 0; r < R; r++) {
                double f0 = (e[r] - x0) * inv_h;
                double b = tab(T, nt, x0, inv_h, e[r]);
                double *a = acc + r * G;
                if (f0 > 0.0 && f0 + ddmax < top) {     /* the usual case: every factor inside the table */
                    for (int64_t g = 0; g < gn; g++) {
                        double f = f0 + dd[g];
                        int64_t i = (int64_t)f;
                        const double *ts = TS + 2 * i;
                        a[g] += ts[0] + (f - (double)i) * ts[1] - b;
                    }
                } else {
                    for (int64_t g = 0; g < gn; g++)
                        if (d[g] > 0.0f)
                            a[g] += tab(T, nt, x0, inv_h, e[r] + (double)d[g]) - b;
                }
            }
        }
        if (u >= 0 && u < U) {
            for (int64_t r = 0; r < R; r++) {
                const double *a = acc + r * G;
                int64_t j = 0;
                for (int64_t g = 1; g < G; g++)
                    if (a[g] < a[j])
                        j = g;
                best[r * U + u] = a[j];
                arg[r * U + u] = j;
            }
        }
        k = k1;
    }
    free(TS);
    free(dd);
}

/* What cutting a unit's rows does to the pairs crossing them (fabscope.diagnose.fit.Fit.effects, the
 * compiled path).  Rows r = 0..R-1, each a link in one concurrent set, with its entries (flows)
 * ent[rptr[r] .. rptr[r+1]); every entry has its flow's rate (inf: not limited by a link), weight and
 * bytes; the row's capacity cap[r] and its unit's scales scale[ru[r]*G + g].  A row's water level at
 * scale g is the level at which sum_f w_f min(rate_f, level) = cap * scale (inf where the load fits):
 * the largest (T - P_j) / K_j over its flows in rising rate order (P_j the load of the slower, K_j the
 * weight of this one and the faster).  Then per group k (entries of one unit and one pair, given by
 * the caller: gent[gptr[k] .. gptr[k+1]) indexes the entries, grow[] their rows):
 *     D[k*G + g] = log1p(sum over its entries of (b / min(rate, level) - b / rate) / tcur[k]).
 * lvl: R*G doubles of scratch; tmp: room for the longest row (rate, weight pairs).
 */
#include <math.h>
#include <stdlib.h>

typedef struct { double r, w; } rw_t;

static int by_rate(const void *a, const void *b)
{
    double x = ((const rw_t *)a)->r, y = ((const rw_t *)b)->r;
    return (x > y) - (x < y);
}

void ug_effects(int64_t R, int64_t G, const int64_t *rptr, const int64_t *ent_flow, const double *rate,
                const double *wt, const double *cap, const int64_t *ru, const double *scale,
                int64_t K, const int64_t *gptr, const int64_t *gent, const int64_t *grow, const double *fbytes,
                const double *tcur, double *lvl, rw_t *tmp, double *D)
{
    for (int64_t r = 0; r < R; r++) {
        int64_t m = 0;
        double load = 0.0, wsum = 0.0;
        for (int64_t e = rptr[r]; e < rptr[r + 1]; e++) {
            double x = rate[ent_flow[e]];
            if (!isfinite(x))
                continue;
            tmp[m].r = x;
            tmp[m].w = wt[e];
            load += wt[e] * x;
            wsum += wt[e];
            m++;
        }
        if (m > 1) {
            if (m <= 32) {                  /* a row holds few flows: insertion sort */
                for (int64_t i = 1; i < m; i++) {
                    rw_t v = tmp[i];
                    int64_t j = i - 1;
                    while (j >= 0 && tmp[j].r > v.r) {
                        tmp[j + 1] = tmp[j];
                        j--;
                    }
                    tmp[j + 1] = v;
                }
            } else {
                qsort(tmp, (size_t)m, sizeof(rw_t), by_rate);
            }
        }
        const double *sc = scale + ru[r] * G;
        double *lv = lvl + r * G;
        for (int64_t g = 0; g < G; g++) {
            double T = cap[r] * sc[g];
            if (T >= load * (1 - 1e-12)) {
                lv[g] = INFINITY;
                continue;
            }
            double best = -INFINITY, P = 0.0, Kw = wsum;
            for (int64_t j = 0; j < m; j++) {
                double v = (T - P) / (Kw > 1e-300 ? Kw : 1e-300);
                if (v > best)
                    best = v;
                P += tmp[j].w * tmp[j].r;
                Kw -= tmp[j].w;
            }
            lv[g] = best;
        }
    }
    for (int64_t k = 0; k < K; k++) {
        double *d = D + k * G;
        for (int64_t g = 0; g < G; g++)
            d[g] = 0.0;
        for (int64_t i = gptr[k]; i < gptr[k + 1]; i++) {
            int64_t e = gent[i];
            double x = rate[ent_flow[e]];
            if (!isfinite(x))
                continue;
            double b = fbytes[e];
            const double *lv = lvl + grow[i] * G;
            for (int64_t g = 0; g < G; g++) {
                double nw = lv[g] < x ? lv[g] : x;
                d[g] += b / nw - b / x;
            }
        }
        for (int64_t g = 0; g < G; g++)
            d[g] = log1p(d[g] / tcur[k]);
    }
}
