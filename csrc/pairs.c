/* Concurrent ping-pong of chosen pairs: random pairs and leaf-to-leaf tests
 * (seed 000), an mpiGraph-like matrix of all pairs, partners n hops away
 * (seed 002).  Pairings are computed identically on every rank (or on rank 0
 * and broadcast), so no rank waits on a partner that does not know it. */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define TAG 21

/* ---- the kernel ---------------------------------------------------------- */
int fb_pair_run(fb_ctx *c, const int *partner, size_t bytes, long it, long w,
                int scenario, const char *extra_name, const int *extra)
{
    int me = c->rank, p = partner[me], st;
    unsigned char *s = fb_alloc(bytes), *r = fb_alloc(bytes);
    if ((st = fb_fail(c, (s && r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", bytes))) return st;
    /* per iteration on the pair's first rank: its best, median and worst
     * (a jittered iteration is an outlier of its own series) */
    double t0 = 0, ti = 0, mine[4] = {-1, -1, -1, -1};
    double *iter = malloc(sizeof(double) * (size_t)(it > 0 ? it : 1));
    MPI_Barrier(MPI_COMM_WORLD);
    if (p >= 0) {
        int first = me < p;
        for (long i = 0; i < it + w; i++) {
            if (i == w) t0 = ti = MPI_Wtime();
            if (first) {
                MPI_Send(s, (int)bytes, MPI_BYTE, p, TAG, MPI_COMM_WORLD);
                MPI_Recv(r, (int)bytes, MPI_BYTE, p, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, (int)bytes, MPI_BYTE, p, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, (int)bytes, MPI_BYTE, p, TAG, MPI_COMM_WORLD);
            }
            if (i >= w && iter) { double now = MPI_Wtime(); iter[i - w] = now - ti; ti = now; }
        }
        if (first) {
            mine[0] = MPI_Wtime() - t0;
            fb_stats q = fb_stat(iter, (int)it);
            mine[1] = q.min; mine[2] = q.median; mine[3] = q.max;
        }
    }
    free(iter);
    double *all = c->rank == 0 ? malloc(sizeof(double) * 4 * (size_t)c->size) : NULL;
    MPI_Gather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    long bad = 0;
    if (c->o.validate && p >= 0) bad = fb_validate_pair(c, me < p, p, s, r, bytes, scenario);
    free(s); free(r);
    if (c->o.validate && (st = fb_validated(c, bad, bytes))) { free(all); return st; }
    if (c->rank == 0) {
        int npairs = 0;
        for (int q = 0; q < c->size; q++) {
            double *a = all + 4 * q;
            if (a[0] < 0) continue;
            npairs++;
            char x[64] = "";
            if (extra_name) snprintf(x, sizeof x, ",\"%s\":%d", extra_name, extra[q]);
            /* bandwidth = data a node sends and receives / time (the seed's definition) */
            fb_emit(c, "{\"type\":\"pair\",\"test\":\"%s\",\"src\":%d,\"dst\":%d,\"bytes\":%zu,\"iters\":%ld,"
                    "\"time\":%.9g,\"bandwidth\":%.6g,\"scenario\":%d%s,"
                    "\"iter_min\":%.9g,\"iter_median\":%.9g,\"iter_max\":%.9g}", c->test, q, partner[q], bytes, it,
                    a[0] / it, a[0] > 0 ? 2.0 * bytes * it / a[0] : 0.0, scenario, x, a[1], a[2], a[3]);
        }
        fb_progress(c, "scenario %d: %d pairs of %zu B done", scenario, npairs, bytes);
        free(all);
    }
    return FB_OK;
}

static size_t pair_size(fb_ctx *c) { return fb_size1(c, 1u << 20); }
static long pair_iters(fb_ctx *c) { return c->o.iterations > 0 ? c->o.iterations : 100; }
static long pair_warm(fb_ctx *c) { return c->o.warmup >= 0 ? c->o.warmup : 2; }

/* ---- random pairs (seed 000) ------------------------------------------------ */
int fb_random_pairs(fb_ctx *c)
{
    int n = c->size, st;
    if ((st = fb_fail(c, n < 2 ? FB_ERR_SETUP : FB_OK, "needs at least 2 ranks, the job has %d", n))) return st;
    int *perm = malloc(sizeof(int) * (size_t)n), *partner = malloc(sizeof(int) * (size_t)n);
    for (int round = 0; round < c->o.rounds && !st; round++) {
        fb_random_pairing(n, c->o.seed, round, perm, partner);
        st = fb_pair_run(c, partner, pair_size(c), pair_iters(c), pair_warm(c), round, NULL, NULL);
    }
    free(perm); free(partner);
    return st;
}

/* ---- endpoints, groups and coordinates ---------------------------------------- */
typedef struct {
    int n;          /* endpoints: one rank per node, or every rank with --per-rank */
    int *rank;      /* endpoint -> rank */
    int *group;     /* endpoint -> leaf index 0..ngroups-1 */
    int ngroups;
    int *coord;     /* endpoint -> FB_MAX_DIMS coordinates (hops) */
    int ncoord;
} fb_topo;

static void topo_free(fb_topo *t) { free(t->rank); free(t->group); free(t->coord); }

/* rank 0 reads "host group [x y z ...]" lines; the others receive the result */
static int topo_load(fb_ctx *c, fb_topo *t, int all_ranks)
{
    int size = c->size;
    t->rank = malloc(sizeof(int) * (size_t)size);
    t->group = calloc((size_t)size, sizeof(int));
    t->coord = calloc((size_t)size * FB_MAX_DIMS, sizeof(int));
    if (all_ranks) { t->n = size; for (int r = 0; r < size; r++) t->rank[r] = r; }
    else t->n = fb_leaders(c, t->rank);
    int st = FB_OK, ncoord = 0;
    char msg[512] = "";
    if (c->rank == 0 && c->o.topo[0]) {
        FILE *f = fopen(c->o.topo, "r");
        if (!f) { st = FB_ERR_SETUP; snprintf(msg, sizeof msg, "cannot read topology file %s", c->o.topo); }
        char line[1024];
        int *found = calloc((size_t)t->n, sizeof(int));
        while (f && fgets(line, sizeof line, f)) {
            char host[FB_HOST];
            int g, used = 0, x[FB_MAX_DIMS], k = 0;
            if (line[0] == '#' || sscanf(line, "%255s %d%n", host, &g, &used) < 2) continue;
            char *p = line + used;
            int adv;
            while (k < FB_MAX_DIMS && sscanf(p, "%d%n", &x[k], &adv) == 1) { p += adv; k++; }
            for (int e = 0; e < t->n; e++) {
                if (strcmp(c->host[t->rank[e]], host)) continue;
                found[e] = 1; t->group[e] = g;
                memcpy(&t->coord[e * FB_MAX_DIMS], x, sizeof(int) * (size_t)k);
                ncoord = k;
            }
        }
        for (int e = 0; f && e < t->n; e++)
            if (!found[e]) {
                st = FB_ERR_SETUP;
                snprintf(msg, sizeof msg, "host %s of rank %d is not in topology file %s",
                         c->host[t->rank[e]], t->rank[e], c->o.topo);
                break;
            }
        if (f) fclose(f);
        free(found);
    }
    if ((st = fb_agree(c, st, msg))) return st;
    if (c->o.topo[0]) {
        MPI_Bcast(t->group, t->n, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(t->coord, t->n * FB_MAX_DIMS, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(&ncoord, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } else {
        for (int e = 0; e < t->n; e++) t->group[e] = e / c->o.leaf_size;
        /* coordinates: the endpoint's node (or rank) index laid out row-major over --dims */
        for (int e = 0; e < t->n; e++) {
            int idx = c->o.per_rank ? t->rank[e] : c->node[t->rank[e]];
            for (int d = c->o.ndims - 1; d >= 0; d--) { t->coord[e * FB_MAX_DIMS + d] = idx % c->o.dims[d]; idx /= c->o.dims[d]; }
        }
        ncoord = c->o.ndims;
    }
    t->ncoord = ncoord;
    /* renumber groups 0..G-1 in ascending order of their ids */
    int *ids = malloc(sizeof(int) * (size_t)t->n), nid = 0;
    for (int e = 0; e < t->n; e++) {
        int k = 0;
        while (k < nid && ids[k] != t->group[e]) k++;
        if (k == nid) ids[nid++] = t->group[e];
    }
    for (int a = 0; a < nid; a++) for (int b = a + 1; b < nid; b++) if (ids[b] < ids[a]) { int x = ids[a]; ids[a] = ids[b]; ids[b] = x; }
    for (int e = 0; e < t->n; e++) for (int k = 0; k < nid; k++) if (ids[k] == t->group[e]) { t->group[e] = k; break; }
    t->ngroups = nid;
    free(ids);
    return FB_OK;
}

/* ---- leaf to leaf (seed 000): N-th node of leaf i with N-th node of leaf i^K --- */
static int leaf_pairing(const fb_topo *t, int K, int *partner, int size)
{
    int npairs = 0;
    for (int r = 0; r < size; r++) partner[r] = -1;
    for (int i = 0; i < t->ngroups; i++) {
        int j = i ^ K;
        if (j <= i || j >= t->ngroups) continue;
        int ni = 0;
        for (int a = 0; a < t->n; a++) {
            if (t->group[a] != i) continue;
            int nj = 0;
            for (int b = 0; b < t->n; b++) {
                if (t->group[b] != j) continue;
                if (nj++ == ni) { partner[t->rank[a]] = t->rank[b]; partner[t->rank[b]] = t->rank[a]; npairs++; break; }
            }
            ni++;
        }
    }
    return npairs;
}

static int leaf_common(fb_ctx *c, int all_offsets)
{
    fb_topo t = {0};
    int st = topo_load(c, &t, 0);
    if (st) { topo_free(&t); return st; }
    st = fb_fail(c, t.ngroups < 2 ? FB_ERR_SETUP : FB_OK,
                 "needs endpoints on at least 2 leaves; found %d endpoints on %d leaf (one rank per node: "
                 "%d nodes; give --topo, a smaller --leaf-size, or --per-rank)", t.n, t.ngroups, c->nnodes);
    int *partner = malloc(sizeof(int) * (size_t)c->size);
    int *group = calloc((size_t)c->size, sizeof(int));
    for (int e = 0; e < t.n; e++) group[t.rank[e]] = t.group[e];
    int P = 1;
    while (P < t.ngroups) P *= 2;
    int k0 = all_offsets ? 1 : c->o.offset, k1 = all_offsets ? P - 1 : c->o.offset, any = 0;
    for (int K = k0; K <= k1 && !st; K++) {
        if (!leaf_pairing(&t, K, partner, c->size)) continue;
        any = 1;
        st = fb_pair_run(c, partner, pair_size(c), pair_iters(c), pair_warm(c), K, "src_leaf", group);
    }
    if (!st && !any)
        st = fb_fail(c, FB_ERR_SETUP, "offset %d pairs no leaves: there are %d leaves", c->o.offset, t.ngroups);
    free(partner); free(group); topo_free(&t);
    return st;
}

int fb_leaf_offset(fb_ctx *c) { return leaf_common(c, 0); }
int fb_leaf_pairs(fb_ctx *c) { return leaf_common(c, 1); }

/* ---- mpiGraph-like: in shift k every rank sends to r+k and receives from r-k --- */
int fb_all_pairs(fb_ctx *c)
{
    int n = c->size, me = c->rank, st;
    if ((st = fb_fail(c, n < 2 ? FB_ERR_SETUP : FB_OK, "needs at least 2 ranks, the job has %d", n))) return st;
    size_t b = pair_size(c);
    long it = c->o.iterations > 0 ? c->o.iterations : 20, w = pair_warm(c);
    unsigned char *s = fb_alloc(b), *r = fb_alloc(b);
    if ((st = fb_fail(c, (s && r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", b))) return st;
    double *all = malloc(sizeof(double) * (size_t)n);
    for (int k = 1; k < n && !st; k++) {
        int to = (me + k) % n, from = (me - k + n) % n;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < it + w; i++) {
            MPI_Request q[2];
            if (i == w) t0 = MPI_Wtime();
            MPI_Irecv(r, (int)b, MPI_BYTE, from, TAG, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(s, (int)b, MPI_BYTE, to, TAG, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        }
        double t = MPI_Wtime() - t0;
        MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (c->o.validate) {
            MPI_Request q[2];
            fb_fill(s, b, me, k);
            fb_maybe_corrupt(c, s, b);
            MPI_Irecv(r, (int)b, MPI_BYTE, from, TAG + 1, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(s, (int)b, MPI_BYTE, to, TAG + 1, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            if ((st = fb_validated(c, fb_check(r, b, from, k), b))) break;
        }
        for (int q = 0; me == 0 && q < n; q++)
            fb_emit(c, "{\"type\":\"pair\",\"test\":\"all-pairs\",\"src\":%d,\"dst\":%d,\"bytes\":%zu,\"iters\":%ld,"
                    "\"time\":%.9g,\"bandwidth\":%.6g,\"scenario\":%d}", q, (q + k) % n, b, it, all[q] / it,
                    all[q] > 0 ? (double)b * it / all[q] : 0.0, k);
        fb_progress(c, "shift %d of %d", k, n - 1);
    }
    free(s); free(r); free(all);
    return st;
}

/* ---- partner n hops away (seed 002) ------------------------------------------ */
static int distance(const fb_ctx *c, const fb_topo *t, int a, int b)
{
    int d = 0;
    for (int k = 0; k < t->ncoord; k++) {
        int x = abs(t->coord[a * FB_MAX_DIMS + k] - t->coord[b * FB_MAX_DIMS + k]);
        if (!c->o.mesh && k < c->o.ndims && c->o.dims[k] - x < x) x = c->o.dims[k] - x;
        d += x;
    }
    return d;
}

int fb_hops(fb_ctx *c)
{
    fb_topo t = {0};
    int st = topo_load(c, &t, 1);  /* every rank is an endpoint; rank r is endpoint r */
    if (st) { topo_free(&t); return st; }
    st = fb_fail(c, t.ncoord == 0 ? FB_ERR_SETUP : FB_OK,
                 "needs coordinates: give --dims AxBxC (nodes laid out row-major) or a --topo file with coordinates");
    int *partner = malloc(sizeof(int) * (size_t)c->size), *hops = calloc((size_t)c->size, sizeof(int)), npairs = 0;
    for (int r = 0; r < c->size; r++) partner[r] = -1;
    for (int a = 0; !st && a < t.n; a++) {
        if (partner[a] >= 0) continue;
        for (int b = a + 1; b < t.n; b++)
            if (partner[b] < 0 && distance(c, &t, a, b) == c->o.hops) {
                partner[a] = b; partner[b] = a; hops[a] = hops[b] = c->o.hops; npairs++;
                break;
            }
    }
    if (!st) st = fb_fail(c, npairs ? FB_OK : FB_ERR_SETUP, "no two ranks are %d hops apart", c->o.hops);
    if (!st) st = fb_pair_run(c, partner, pair_size(c), pair_iters(c), pair_warm(c), c->o.hops, "hops", hops);
    free(partner); free(hops); topo_free(&t);
    return st;
}
