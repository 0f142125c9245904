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
            const double *e = E + pair[kk] * R;
            for (int64_t r = 0; r < R; r++) {
                double x = e[r];
                double b = tab(T, nt, x0, inv_h, x);
                double *a = acc + r * G;
                for (int64_t g = 0; g < gn; g++)
                    if (d[g] > 0.0f)
                        a[g] += tab(T, nt, x0, inv_h, x + (double)d[g]) - b;
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
}
