/* Collectives: alltoall latency against message size (seed 001) and
 * allreduce latency against size and against the number of ranks (seed 004).
 * Latency = average time of one call; min / median / max across ranks. */
#include <stdlib.h>

#include "tests.h"

#define MAXSIZES 64

static double time_coll(int alltoall, MPI_Comm comm, void *s, void *r, size_t b, int n, long it, long w)
{
    double t0 = 0;
    MPI_Barrier(comm);
    for (long i = 0; i < it + w; i++) {
        if (i == w) t0 = MPI_Wtime();
        if (alltoall) MPI_Alltoall(s, (int)b, MPI_BYTE, r, (int)b, MPI_BYTE, comm);
        else MPI_Allreduce(s, r, (int)(b / sizeof(double)), MPI_DOUBLE, MPI_SUM, comm);
    }
    (void)n;
    return (MPI_Wtime() - t0) / it;
}

static void emit(fb_ctx *c, double t, size_t b, long it, int ranks)
{
    double *all = c->rank == 0 ? malloc(sizeof(double) * (size_t)c->size) : NULL;
    MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        char sj[160];
        fb_stats s = fb_stat(all, c->size);
        fb_emit(c, "{\"type\":\"size\",\"test\":\"%s\",\"bytes\":%zu,\"iters\":%ld,\"ranks\":%d,"
                "\"latency\":%.9g,\"rank_latency\":%s}", c->test, b, it, ranks, s.avg, fb_sj(sj, sizeof sj, s));
        fb_progress(c, "%d ranks, %zu B: %.2f us", ranks, b, s.avg * 1e6);
        free(all);
    }
}

static int coll(fb_ctx *c, int alltoall)
{
    size_t sizes[MAXSIZES];
    int ns = fb_sizes(c, alltoall ? 1 : 8, alltoall ? 64u << 10 : 1u << 20, sizes, MAXSIZES), st;
    size_t maxb = sizes[ns - 1] < 8 ? 8 : sizes[ns - 1];
    size_t total = alltoall ? maxb * (size_t)c->size : maxb;
    void *s = fb_alloc(total), *r = fb_alloc(total);
    if ((st = fb_fail(c, (s && r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", total))) return st;
    for (int k = 0; k < ns; k++) {
        size_t b = alltoall ? sizes[k] : (sizes[k] < 8 ? 8 : sizes[k] / 8 * 8);
        long it = fb_iters(c, b, 1000, 100), w = fb_warm(c, b, 20, 5);
        emit(c, time_coll(alltoall, MPI_COMM_WORLD, s, r, b, c->size, it, w), b, it, c->size);
    }
    /* against the number of ranks: 8 B on the first 2, 4, 8, ... ranks (and all) */
    for (int m = 2; m < c->size; m *= 2) {
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, c->rank < m ? 0 : MPI_UNDEFINED, c->rank, &sub);
        long it = fb_iters(c, 8, 1000, 1000), w = fb_warm(c, 8, 20, 20);
        double t = -1;
        if (sub != MPI_COMM_NULL) { t = time_coll(alltoall, sub, s, r, 8, m, it, w); MPI_Comm_free(&sub); }
        emit(c, t, 8, it, m);
    }
    free(s); free(r);
    return FB_OK;
}

int fb_alltoall(fb_ctx *c) { return coll(c, 1); }
int fb_allreduce(fb_ctx *c) { return coll(c, 0); }
