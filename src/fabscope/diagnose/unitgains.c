/* The null calibration's inner loop (fabscope.diagnose.unitgains): for every unit and every draw of
 * noise, the change of the pairs' negative log-likelihood under each factor of a grid, and its minimum.
 *
 * Units u = u_from..u_to-1 are taken in order.  An entry is one pair (pair[k]) a unit slows, with
 * D[k*G + g] >= 0 the log of (new time / current time) under grid factor g (0 where the factor does
 * not slow the pair; the grid runs from the strongest cut to the mildest, so D falls along g), and a
 * sign: +1 for the main entries (unit[k], sorted by unit, every one in the range), sign2[k] for the
 * extra ones (unit2[k], sorted alike).  E[p*R + r] is pair p's residual in draw r.  The likelihood is a
 * table: T[i] = nll(x0 + i / inv_h), read with linear interpolation and held at its ends outside.  Per
 * draw r and unit u, with S[g] = the sums of the adds[u] units just before u (0, 1 or 2: a cable both
 * ways is its directions' sums; ring holds the last two units' sums, R*G doubles each, kept by the
 * caller from one call to the next) plus sum over u's entries of sign * (nll(E + D) - nll(E)):
 *     best[r*U + u] = min over g of S[g],  arg[r*U + u] = that g.
 * acc: R*G doubles of scratch.  simd: four factors at a time with AVX2 where the CPU has it (looked at
 * when first called, so one library serves every CPU of a cluster sharing the cache); the same bits as
 * one at a time (tests/diagnose/test_unitgains.py).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define UG_AVX2 1
#endif

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

#ifdef UG_AVX2
/* add_entry's usual case, four factors at a time: the same operations on each (no fused multiply-add:
 * the target adds AVX2 alone), so the same bits; the table read by plain loads (AVX2's gathers made the
 * loop 2.2-2.7x slower than one factor at a time on this project's Xeon).  Returns the factors done (a
 * multiple of 4); the caller does the rest. */
__attribute__((target("avx2")))
static int64_t row_avx2(double *a, const double *dd, int64_t gn, double f0, double b, double s, const double *TS)
{
    const __m256d vf0 = _mm256_set1_pd(f0), vb = _mm256_set1_pd(b), vs = _mm256_set1_pd(s);
    int64_t g = 0;
    for (; g + 4 <= gn; g += 4) {
        __m256d f = _mm256_add_pd(vf0, _mm256_loadu_pd(dd + g));
        __m128i i = _mm256_cvttpd_epi32(f);                       /* f > 0: truncation is the floor */
        __m256d frac = _mm256_sub_pd(f, _mm256_cvtepi32_pd(i));
        int32_t ix[4];
        _mm_storeu_si128((__m128i *)ix, i);
        __m128d p0 = _mm_loadu_pd(TS + 2 * ix[0]), p1 = _mm_loadu_pd(TS + 2 * ix[1]);
        __m128d p2 = _mm_loadu_pd(TS + 2 * ix[2]), p3 = _mm_loadu_pd(TS + 2 * ix[3]);
        __m256d q02 = _mm256_insertf128_pd(_mm256_castpd128_pd256(p0), p2, 1);   /* v0 s0 v2 s2 */
        __m256d q13 = _mm256_insertf128_pd(_mm256_castpd128_pd256(p1), p3, 1);   /* v1 s1 v3 s3 */
        __m256d v = _mm256_unpacklo_pd(q02, q13), sl = _mm256_unpackhi_pd(q02, q13);   /* v0 v1 v2 v3 */
        __m256d x = _mm256_sub_pd(_mm256_add_pd(v, _mm256_mul_pd(frac, sl)), vb);
        _mm256_storeu_pd(a + g, _mm256_add_pd(_mm256_loadu_pd(a + g), _mm256_mul_pd(vs, x)));
    }
    return g;
}
static int use_avx2 = -1;      /* -1: not looked at yet */
#endif

/* one entry's change, times s, added to acc for every draw: TS is the table as (value, slope) per step,
 * dd scratch for the entry's effects in table steps (the innermost loop is an add, a load and a multiply-add;
 * four at a time with AVX2 where the CPU has it and simd is set) */
static void add_entry(double *acc, const float *d, double s, const double *e, int64_t G, int64_t R,
                      const double *T, const double *TS, int64_t nt, double x0, double inv_h, double *dd, int simd)
{
    int64_t gn = G;                 /* past the last factor that slows the pair */
    while (gn > 0 && !(d[gn - 1] > 0.0f))
        gn--;
    if (!gn)
        return;
    double ddmax = 0.0;
    for (int64_t g = 0; g < gn; g++) {
        dd[g] = d[g] > 0.0f ? (double)d[g] * inv_h : 0.0;
        if (dd[g] > ddmax)
            ddmax = dd[g];
    }
    const double top = (double)(nt - 1);
    for (int64_t r = 0; r < R; r++) {
        double f0 = (e[r] - x0) * inv_h;
        double b = tab(T, nt, x0, inv_h, e[r]);
        double *a = acc + r * G;
        if (f0 > 0.0 && f0 + ddmax < top) {     /* the usual case: every factor inside the table */
            int64_t g0 = 0;
#ifdef UG_AVX2
            if (simd)
                g0 = row_avx2(a, dd, gn, f0, b, s, TS);
#endif
            if (s == 1.0) {
                for (int64_t g = g0; g < gn; g++) {
                    double f = f0 + dd[g];
                    int64_t i = (int64_t)f;
                    const double *ts = TS + 2 * i;
                    a[g] += ts[0] + (f - (double)i) * ts[1] - b;
                }
            } else {
                for (int64_t g = g0; g < gn; g++) {
                    double f = f0 + dd[g];
                    int64_t i = (int64_t)f;
                    const double *ts = TS + 2 * i;
                    a[g] += s * (ts[0] + (f - (double)i) * ts[1] - b);
                }
            }
        } else {
            for (int64_t g = 0; g < gn; g++)
                if (d[g] > 0.0f)
                    a[g] += s * (tab(T, nt, x0, inv_h, e[r] + (double)d[g]) - b);
        }
    }
}

void ug_unit_minima(int64_t u_from, int64_t u_to, int64_t G, int64_t R, int64_t U, const int64_t *adds,
                    int64_t n, const int64_t *unit, const int64_t *pair, const float *D,
                    int64_t n2, const int64_t *unit2, const int64_t *pair2, const float *D2, const double *sign2,
                    const double *E, const double *T, int64_t nt, double x0, double inv_h,
                    double *ring, double *acc, double *best, int64_t *arg, int simd)
{
#ifdef UG_AVX2
    if (use_avx2 < 0) {
        __builtin_cpu_init();
        use_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    simd = simd && use_avx2;
#else
    simd = 0;
#endif
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
    const int64_t RG = R * G;
    double *r0 = ring, *r1 = ring + RG;
    int64_t k = 0, k2 = 0;
    for (int64_t u = u_from; u < u_to; u++) {
        int64_t na = adds[u];
        for (int64_t i = 0; i < RG; i++)
            acc[i] = (na > 0 ? r0[i] : 0.0) + (na > 1 ? r1[i] : 0.0);
        for (; k < n && unit[k] == u; k++)
            add_entry(acc, D + k * G, 1.0, E + pair[k] * R, G, R, T, TS, nt, x0, inv_h, dd, simd);
        for (; k2 < n2 && unit2[k2] == u; k2++)
            add_entry(acc, D2 + k2 * G, sign2[k2], E + pair2[k2] * R, G, R, T, TS, nt, x0, inv_h, dd, simd);
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
        memcpy(r1, r0, sizeof(double) * (size_t)RG);
        memcpy(r0, acc, sizeof(double) * (size_t)RG);
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
