/* Simulated annealing of a mapping's hop-bytes (fabscope.mapping.algorithms.anneal holds the
 * Python reference; the tests hold this to it, step for step).
 *
 * A step picks a rank u, a base node (the node of one of u's peers, or u's own), a node near the
 * base (the base itself or one listed in near[]), and a slot of that node; u swaps with the rank
 * in that slot (or moves there if it is free).  The change of hop-bytes is exact; Metropolis
 * acceptance at a temperature cooled geometrically from t0 to t1; the best mapping seen is kept.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t next(uint64_t *s)
{   /* xorshift64 */
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static double unit(uint64_t *s) { return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* returns the best hop-bytes (each CSR entry counted once per row: half the directed sum of both
 * rows); slot[] is left at the best mapping.  The work is `steps` steps, never a time: the result
 * depends only on the inputs and the seed. */
double fa_anneal(int64_t n, const int64_t *indptr, const int32_t *nbr, const double *w,
                 int64_t n_nodes, const uint8_t *hops, const int64_t *first_slot, const int32_t *n_slots,
                 const int32_t *node_of_slot, const int64_t *near_ptr, const int32_t *near,
                 int64_t *slot, int64_t *occ, double t0, double t1, int64_t steps, uint64_t seed,
                 int64_t *done)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (!rng) rng = 1;
    double cost = 0.0;
    for (int64_t u = 0; u < n; u++)
        for (int64_t e = indptr[u]; e < indptr[u + 1]; e++)
            cost += w[e] * hops[(int64_t)node_of_slot[slot[u]] * n_nodes + node_of_slot[slot[nbr[e]]]];
    cost *= 0.5;
    double best = cost;
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)n);
    if (!keep) return -1.0;
    for (int64_t i = 0; i < n; i++) keep[i] = slot[i];
    const int64_t block = 1000;
    double cool = steps > block ? pow(t1 / t0, (double)block / (double)steps) : 1.0, t = t0;
    int64_t it = 0;
    for (; it < steps; it++) {
        if (it && it % block == 0) t *= cool;
        int64_t u = (int64_t)(next(&rng) % (uint64_t)n);
        int64_t deg = indptr[u + 1] - indptr[u];
        uint64_t r = next(&rng);
        int64_t base = node_of_slot[slot[u]];
        if (deg > 0 && (r & 3)) base = node_of_slot[slot[nbr[indptr[u] + (int64_t)((r >> 8) % (uint64_t)deg)]]];
        int64_t cnt = near_ptr[base + 1] - near_ptr[base];
        int64_t pick = (int64_t)((r >> 24) % (uint64_t)(cnt + 1));
        int64_t node = pick == cnt ? base : near[near_ptr[base] + pick];
        int64_t s = first_slot[node] + (int64_t)((r >> 44) % (uint64_t)n_slots[node]);
        int64_t su = slot[u];
        if (s == su) continue;
        int64_t v = occ[s];
        int64_t a = node_of_slot[su], b = node;
        double delta = 0.0;
        if (a != b) {
            for (int64_t e = indptr[u]; e < indptr[u + 1]; e++) {
                int64_t x = nbr[e];
                if (x == v) continue;
                int64_t c = node_of_slot[slot[x]];
                delta += w[e] * ((double)hops[b * n_nodes + c] - (double)hops[a * n_nodes + c]);
            }
            if (v >= 0)
                for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) {
                    int64_t x = nbr[e];
                    if (x == u) continue;
                    int64_t c = node_of_slot[slot[x]];
                    delta += w[e] * ((double)hops[a * n_nodes + c] - (double)hops[b * n_nodes + c]);
                }
        }
        if (delta <= 0.0 || unit(&rng) < exp(-delta / t)) {
            slot[u] = s;
            occ[s] = u;
            occ[su] = v;
            if (v >= 0) slot[v] = su;
            cost += delta;
            if (cost < best - 1e-9 * (best > 1.0 ? best : 1.0)) {
                best = cost;
                for (int64_t i = 0; i < n; i++) keep[i] = slot[i];
            }
        }
    }
    for (int64_t i = 0; i < n; i++) occ[slot[i]] = -1;
    for (int64_t i = 0; i < n; i++) {
        slot[i] = keep[i];
        occ[slot[i]] = i;
    }
    free(keep);
    *done = it;
    return best;
}
