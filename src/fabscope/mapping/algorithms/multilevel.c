/* The loops of fabscope.mapping.algorithms.multilevel: heavy-edge matching of a graph level, and
 * annealing of a level's placement (a permutation of vertices over places, see the Python module).
 *
 * Hops between two places are those between their hosts, computed on the fly (never a table of
 * places x places): on a torus from the hosts' coordinates, elsewhere from a table of switch
 * distances (switches x switches) plus the two host links.  Every loop runs a fixed number of
 * steps: the result depends only on the inputs and the seed.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s)
{   /* xorshift64 */
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* x mod-free in [0, n): the high half of x * n (Lemire), no division in the loop */
static inline uint64_t below(uint64_t x, uint64_t n) { return (uint64_t)(((unsigned __int128)x * n) >> 64); }

static double unit(uint64_t *s) { return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Heavy-edge matching: vertices are visited in order[]; an unmatched vertex below n_free is matched
 * with its heaviest unmatched neighbour below n_free (the first on ties).  mate[v] = -1 if none. */
void fm_match(int64_t n_free, const int64_t *indptr, const int32_t *nbr, const double *w,
              const int64_t *order, int64_t *mate)
{
    for (int64_t i = 0; i < n_free; i++) mate[i] = -1;
    for (int64_t i = 0; i < n_free; i++) {
        int64_t u = order[i];
        if (mate[u] >= 0) continue;
        int64_t best = -1;
        double bw = -1.0;
        for (int64_t e = indptr[u]; e < indptr[u + 1]; e++) {
            int64_t x = nbr[e];
            if (x >= n_free || x == u || mate[x] >= 0) continue;
            if (w[e] > bw) { bw = w[e]; best = x; }
        }
        if (best >= 0) { mate[u] = best; mate[best] = u; }
    }
}

typedef struct {
    int mode;                   /* 0: torus coordinates; 1: switch distance table */
    int ndim;
    const int32_t *coords;      /* host x ndim */
    const int32_t *dims;
    const uint8_t *periodic;
    const int32_t *sw;          /* switch of each host */
    const int16_t *swdist;      /* switches x switches */
    int64_t n_sw;
} Hops;

/* Where a vertex sits, as the hop count needs it: its host, and its router's coordinates (torus)
 * or its switch (key[0]).  Kept per vertex so that a neighbour costs one lookup, not three. */
typedef struct { int32_t host; int16_t key[6]; } Spot;

static inline Spot spot_of(const Hops *h, int64_t host)
{
    Spot s;
    s.host = (int32_t)host;
    memset(s.key, 0, sizeof s.key);
    if (h->mode == 0)
        for (int k = 0; k < h->ndim; k++) s.key[k] = (int16_t)h->coords[host * h->ndim + k];
    else
        s.key[0] = (int16_t)h->sw[host];
    return s;
}

static inline double hops(const Hops *h, const Spot *a, const Spot *b)
{
    if (a->host == b->host) return 0.0;
    if (h->mode == 0) {
        int32_t s = 0;
        for (int k = 0; k < h->ndim; k++) {
            int32_t d = a->key[k] - b->key[k];
            if (d < 0) d = -d;
            if (h->periodic[k] && h->dims[k] - d < d) d = h->dims[k] - d;
            s += d;
        }
        return (double)s;
    }
    return (double)h->swdist[(int64_t)a->key[0] * h->n_sw + b->key[0]] + 2.0;
}

/* Anneal a level: vertices 0..q-1 are movable, each at a place 0..q-1 (place[], occ[] its inverse);
 * vertices q..nv-1 (the tail, at most one) sit at fixed places.  host[p] is the host that stands for
 * place p.  Vertices are best numbered in the order of their places (neighbours then sit
 * close in memory).  A step takes the next movable vertex u in turn, a base place (a random neighbour's, three times in
 * four, else u's own), and a place near it: base ^ k for k < 8 (its siblings in the order's
 * blocks), base + k for |k| <= reach, or (half the steps, when near_ptr is given) the place holding
 * a slot of the base's node or of a node next to it on the fabric (near[], by node; place_of_slot
 * at level 0, shifted right by the level); u swaps with the vertex there.  Metropolis at a
 * temperature cooled geometrically from t0 to t1 over steps; every q steps (a sweep) the placement
 * is compared with the best so far, which is returned.  With patience > 0 the loop stops at the
 * first comparison that follows patience sweeps without a new best (a count, never the clock): what
 * would be returned then is the best so far, the same as running on where no later sweep beats it.
 * *ran receives the steps taken.  Returns the best cost (each undirected edge once: w holds the
 * bytes both ways), or -1 when out of memory. */
double fm_anneal(int64_t q, int64_t nv, const int64_t *indptr, const int32_t *nbr, const double *w,
                 const int64_t *host, int mode, int ndim, const int32_t *coords, const int32_t *dims,
                 const uint8_t *periodic, const int32_t *sw, const int16_t *swdist, int64_t n_sw,
                 const int32_t *node_of_place, const int64_t *near_ptr, const int32_t *near,
                 const int64_t *first_slot, const int32_t *n_slots, const int64_t *place_of_slot, int level,
                 int64_t *place, int64_t *occ, double t0, double t1, int64_t steps, int64_t reach,
                 uint64_t seed, int64_t patience, int64_t *ran)
{
    Hops h = {mode, ndim, coords, dims, periodic, sw, swdist, n_sw};
    if (mode == 0 && ndim > 6) return -2.0;
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (!rng) rng = 1;
    Spot *ps = malloc(sizeof(Spot) * (size_t)nv), *vs = malloc(sizeof(Spot) * (size_t)nv);
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)(q > 0 ? q : 1));
    if (!ps || !vs || !keep) { free(ps); free(vs); free(keep); return -1.0; }
    for (int64_t p = 0; p < nv; p++) ps[p] = spot_of(&h, host[p]);
    for (int64_t u = 0; u < nv; u++) vs[u] = ps[place[u]];
    double cost = 0.0;
    for (int64_t u = 0; u < nv; u++)
        for (int64_t e = indptr[u]; e < indptr[u + 1]; e++)
            cost += w[e] * hops(&h, &vs[u], &vs[nbr[e]]);
    cost *= 0.5;
    *ran = 0;
    if (q < 2 || steps <= 0) { free(ps); free(vs); free(keep); return cost; }
    double best = cost;
    memcpy(keep, place, sizeof(int64_t) * (size_t)q);
    const int64_t block = 1000;
    double cool = steps > block ? pow(t1 / t0, (double)block / (double)steps) : 1.0, t = t0;
    int64_t span = 2 * reach + 1;
    int64_t to_cool = block, to_check = q, sweep = 0, idle = 0, it;
    for (it = 0; it < steps; it++) {
        if (--to_cool == 0) { t *= cool; to_cool = block; }
        if (--to_check == 0) {
            to_check = q;
            if (cost < best - 1e-9 * (best > 1.0 ? best : 1.0)) {
                best = cost;
                memcpy(keep, place, sizeof(int64_t) * (size_t)q);
                idle = 0;
            } else if (patience > 0 && ++idle >= patience) {
                break;                           /* cost is no better than best: keep is returned */
            }
        }
        int64_t u = sweep;                       /* vertices in turn: their data is read in order */
        if (++sweep == q) sweep = 0;
        int64_t deg = indptr[u + 1] - indptr[u];
        uint64_t r = next(&rng);
        int64_t base = place[u];
        if (deg > 0 && (r & 3)) base = place[nbr[indptr[u] + (int64_t)below(r << 8, (uint64_t)deg)]];
        uint64_t r2 = next(&rng);
        int64_t p, kind = (int64_t)((r >> 2) & 3);
        if (kind >= 2 && near_ptr) {             /* a slot of a node next to the base's, on the fabric */
            int64_t nb = node_of_place[base];
            int64_t cnt = near_ptr[nb + 1] - near_ptr[nb];
            int64_t pick = (int64_t)below(r2, (uint64_t)(cnt + 1));
            int64_t node = pick == cnt ? nb : near[near_ptr[nb] + pick];
            p = place_of_slot[first_slot[node] + (int64_t)below(r2 << 32, (uint64_t)n_slots[node])] >> level;
        } else if (kind & 1) {
            p = base ^ (int64_t)((r2 >> 40) & 7);   /* a sibling in the order's blocks */
        } else {
            p = base + (int64_t)below(r2, (uint64_t)span) - reach;
        }
        int64_t pu = place[u];
        if (p < 0 || p >= q || p == pu) continue;
        int64_t v = occ[p];
        const Spot *a = &ps[pu], *b = &ps[p];
        double delta = 0.0;
        if (a->host != b->host) {
            for (int64_t e = indptr[u]; e < indptr[u + 1]; e++) {
                int64_t x = nbr[e];
                if (x == v) continue;
                delta += w[e] * (hops(&h, b, &vs[x]) - hops(&h, a, &vs[x]));
            }
            for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) {
                int64_t x = nbr[e];
                if (x == u) continue;
                delta += w[e] * (hops(&h, a, &vs[x]) - hops(&h, b, &vs[x]));
            }
        }
        if (delta <= 0.0 || unit(&rng) < exp(-delta / t)) {
            place[u] = p;
            place[v] = pu;
            occ[p] = u;
            occ[pu] = v;
            vs[u] = *b;
            vs[v] = *a;
            cost += delta;
        }
    }
    *ran = it;
    if (cost < best - 1e-9 * (best > 1.0 ? best : 1.0)) {
        best = cost;
    } else {
        memcpy(place, keep, sizeof(int64_t) * (size_t)q);
        for (int64_t i = 0; i < q; i++) occ[place[i]] = i;
    }
    free(keep);
    free(ps);
    free(vs);
    return best;
}
