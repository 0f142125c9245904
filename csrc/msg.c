/* Random Messaging and Bucket Brigade (Sandia, seed 004) and the HPCC
 * naturally / randomly ordered rings (seed 001).  Per-rank bandwidths are
 * gathered to rank 0 and reported as min / median / max / avg. */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define TAG 31

static int report(fb_ctx *c, const char *fields, double t, double bytes_sent, long it)
{
    double bw = t > 0 ? bytes_sent / t : 0, lat = t / it;
    double *all = c->rank == 0 ? malloc(sizeof(double) * 2 * (size_t)c->size) : NULL;
    double mine[2] = {bw, lat};
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        double *b = malloc(sizeof(double) * (size_t)c->size), *l = malloc(sizeof(double) * (size_t)c->size);
        for (int r = 0; r < c->size; r++) { b[r] = all[2 * r]; l[r] = all[2 * r + 1]; }
        fb_stats sb = fb_stat(b, c->size), sl = fb_stat(l, c->size);
        char j1[160], j2[160];
        fb_emit(c, "{\"type\":\"size\",\"test\":\"%s\",%s,\"iters\":%ld,\"ranks\":%d,\"bandwidth\":%.6g,"
                "\"latency\":%.9g,\"rank_bandwidth\":%s,\"rank_latency\":%s}", c->test, fields, it, c->size,
                sb.avg, sl.avg, fb_sj(j1, sizeof j1, sb), fb_sj(j2, sizeof j2, sl));
        free(b); free(l); free(all);
    }
    return FB_OK;
}

static int need2(fb_ctx *c)
{
    return fb_fail(c, c->size < 2 ? FB_ERR_SETUP : FB_OK, "needs at least 2 ranks, the job has %d", c->size);
}

/* Random Messaging: in every iteration the ranks form a random cycle (one
 * permutation from the common seed); each rank sends a message of random
 * size 100..1000 B to its successor and receives one from its predecessor. */
int fb_random_msg(fb_ctx *c)
{
    int n = c->size, st;
    if ((st = need2(c))) return st;
    long it = c->o.iterations > 0 ? c->o.iterations : 1000, w = c->o.warmup >= 0 ? c->o.warmup : 10;
    int *perm = malloc(sizeof(int) * (size_t)n), *pos = malloc(sizeof(int) * (size_t)n);
    int *to = malloc(sizeof(int) * (size_t)(it + w)), *from = malloc(sizeof(int) * (size_t)(it + w));
    int *slen = malloc(sizeof(int) * (size_t)(it + w)), *rlen = malloc(sizeof(int) * (size_t)(it + w));
    unsigned char s[1024], r[1024];
    int *len = malloc(sizeof(int) * (size_t)n);
    unsigned long long st8 = fb_msg_state(c->o.seed);
    double sent = 0;
    /* the schedule is drawn before timing, identically on every rank (draws.c) */
    for (long i = 0; i < it + w; i++) {
        fb_msg_round(n, &st8, i, 100, 1000, perm, len);
        for (int k = 0; k < n; k++) pos[perm[k]] = k;
        int me = pos[c->rank];
        to[i] = perm[(me + 1) % n];
        from[i] = perm[(me - 1 + n) % n];
        slen[i] = len[me];
        rlen[i] = len[(me - 1 + n) % n];
        if (i >= w) sent += slen[i];
    }
    memset(s, 7, sizeof s);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0;
    for (long i = 0; i < it + w; i++) {
        MPI_Request q[2];
        if (i == w) t0 = MPI_Wtime();
        MPI_Irecv(r, rlen[i], MPI_BYTE, from[i], TAG, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(s, slen[i], MPI_BYTE, to[i], TAG, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
    double t = MPI_Wtime() - t0;
    free(perm); free(pos); free(to); free(from); free(slen); free(rlen); free(len);
    return report(c, "\"bytes\":550,\"min_bytes\":100,\"max_bytes\":1000", t, sent, it);
}

/* Bucket Brigade: rank r receives from r-1 and passes it on to r+1 (a chain,
 * pipelined); default sizes 8 B and 1 MB as in the seed. */
int fb_bucket_brigade(fb_ctx *c)
{
    int n = c->size, me = c->rank, st;
    if ((st = need2(c))) return st;
    size_t sizes[2] = {8, 1000000};
    int ns = 2;
    if (c->o.size_set) { sizes[0] = c->o.size; ns = 1; }
    for (int k = 0; k < ns && !st; k++) {
        size_t b = sizes[k];
        long it = fb_iters(c, b, 1000, 100), w = fb_warm(c, b, 10, 2);
        unsigned char *buf = fb_alloc(b);
        if ((st = fb_fail(c, buf ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", b))) return st;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (long i = 0; i < it + w; i++) {
            if (i == w) t0 = MPI_Wtime();
            if (me > 0) MPI_Recv(buf, (int)b, MPI_BYTE, me - 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (me < n - 1) MPI_Send(buf, (int)b, MPI_BYTE, me + 1, TAG, MPI_COMM_WORLD);
        }
        double t = MPI_Wtime() - t0;
        if (c->o.validate) {
            if (me == 0) { fb_fill(buf, b, 0, 99); fb_maybe_corrupt(c, buf, b); }
            if (me > 0) MPI_Recv(buf, (int)b, MPI_BYTE, me - 1, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            long bad = me > 0 ? fb_check(buf, b, 0, 99) : 0;
            if (me > 0 && bad) fb_fill(buf, b, 0, 99);  /* report the first rank that saw it */
            if (me < n - 1) MPI_Send(buf, (int)b, MPI_BYTE, me + 1, TAG + 1, MPI_COMM_WORLD);
            if ((st = fb_validated(c, bad, b))) { free(buf); break; }
        }
        free(buf);
        char f[64];
        snprintf(f, sizeof f, "\"bytes\":%zu", b);
        report(c, f, t, (double)b * it, it);
    }
    return st;
}

/* HPCC rings: every rank exchanges with both neighbours at once; latency at
 * 8 B, bandwidth at 2,000,000 B (HPCC's sizes; --size replaces the latter).
 * bandwidth per rank = 2 messages x size / time. */
static int ring(fb_ctx *c, int random_order)
{
    int n = c->size, st;
    if ((st = need2(c))) return st;
    int *perm = malloc(sizeof(int) * (size_t)n), me = 0;
    if (random_order) fb_ring_order(n, c->o.seed, perm);
    else for (int k = 0; k < n; k++) perm[k] = k;
    for (int k = 0; k < n; k++) if (perm[k] == c->rank) me = k;
    int left = perm[(me - 1 + n) % n], right = perm[(me + 1) % n];
    free(perm);
    size_t sizes[2] = {8, fb_size1(c, 2000000)};
    for (int k = 0; k < 2 && !st; k++) {
        size_t b = sizes[k];
        long it = fb_iters(c, b, 1000, 50), w = fb_warm(c, b, 10, 2);
        unsigned char *s = fb_alloc(2 * b), *r = fb_alloc(2 * b);
        if ((st = fb_fail(c, (s && r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", b))) return st;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (long i = 0; i < it + w; i++) {
            MPI_Request q[4];
            if (i == w) t0 = MPI_Wtime();
            MPI_Irecv(r, (int)b, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(r + b, (int)b, MPI_BYTE, right, TAG, MPI_COMM_WORLD, &q[1]);
            MPI_Isend(s, (int)b, MPI_BYTE, right, TAG, MPI_COMM_WORLD, &q[2]);
            MPI_Isend(s + b, (int)b, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &q[3]);
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        }
        double t = MPI_Wtime() - t0;
        free(s); free(r);
        char f[64];
        snprintf(f, sizeof f, "\"bytes\":%zu", b);
        report(c, f, t, 2.0 * b * it, it);
    }
    return st;
}

int fb_ring(fb_ctx *c) { return ring(c, 0); }
int fb_random_ring(fb_ctx *c) { return ring(c, 1); }
