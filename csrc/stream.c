/* STREAM triad, a[i] = b[i] + q*c[i] (24 bytes moved per element), on every
 * rank at once (a node's memory bandwidth with all cores busy: the seed-004
 * "MIN" bytes-per-FLOP case) and on one rank per node alone (the "MAX" case). */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define REPS 5

static double triad(double *a, const double *b, const double *cc, long n)
{
    double best = 1e30, q = 3.0;
    for (int k = 0; k < REPS; k++) {
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) a[i] = b[i] + q * cc[i];
        double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    return best;
}

int fb_stream(fb_ctx *c)
{
    long n = c->o.stream_n;
    double *a = fb_alloc(sizeof(double) * (size_t)n), *b = fb_alloc(sizeof(double) * (size_t)n);
    double *cc = fb_alloc(sizeof(double) * (size_t)n);
    int st = fb_fail(c, (a && b && cc) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate 3 arrays of %ld doubles", n);
    if (st) return st;
    for (long i = 0; i < n; i++) { a[i] = 0; b[i] = 1; cc[i] = 2; }
    double bytes = 24.0 * n;
    int *leaders = malloc(sizeof(int) * (size_t)c->size);
    int saved = c->o.per_rank;
    c->o.per_rank = 0;
    int nl = fb_leaders(c, leaders), lead = 0;
    c->o.per_rank = saved;
    for (int i = 0; i < nl; i++) lead |= leaders[i] == c->rank;
    double *all = malloc(sizeof(double) * (size_t)c->size);
    for (int mode = 0; mode < 2; mode++) {  /* 0: all ranks at once, 1: one rank per node alone */
        double bw = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (mode == 0 || lead) bw = bytes / triad(a, b, cc, n);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Gather(&bw, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (c->rank != 0) continue;
        for (int node = 0; node < c->nnodes; node++) {
            double sum = 0, v[4096];
            int k = 0, first = -1;
            for (int r = 0; r < c->size; r++) {
                if (c->node[r] != node || all[r] < 0) continue;
                if (first < 0) first = r;
                sum += all[r];
                if (k < 4096) v[k++] = all[r];
            }
            char h[2 * FB_HOST], sj[160];
            fb_json_str(h, sizeof h, c->host[first]);
            fb_emit(c, "{\"type\":\"stream\",\"test\":\"stream\",\"mode\":\"%s\",\"node\":%d,\"host\":%s,"
                    "\"ranks\":%d,\"elements\":%ld,\"bandwidth\":%.6g,\"rank_bandwidth\":%s}",
                    mode ? "single" : "all", node, h, k, n, sum, fb_sj(sj, sizeof sj, fb_stat(v, k)));
        }
    }
    /* keep the compiler from dropping the loops */
    if (a[n / 2] != 7.0) st = fb_fail(c, FB_ERR_RUNTIME, "STREAM triad computed %g, expected 7", a[n / 2]);
    else st = fb_fail(c, FB_OK, NULL);
    free(a); free(b); free(cc); free(all); free(leaders);
    return st;
}
