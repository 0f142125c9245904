/* OSU-style point-to-point micro-benchmarks (seed 001): ping-pong latency and
 * bandwidth, windowed uni- and bidirectional bandwidth, multi-pair bandwidth
 * with message rate, multi-pair latency.  Timed loops are pure MPI. */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define MAXSIZES 64
#define TAG 11
#define ACK 12

/* One untimed exchange of patterned data between r and peer (initiator sends
 * first).  Returns the bytes that arrived wrong on this rank. */
long fb_validate_pair(fb_ctx *c, int initiator, int peer, unsigned char *sbuf,
                      unsigned char *rbuf, size_t bytes, long tag)
{
    long bad = 0;
    if (initiator) {
        fb_fill(sbuf, bytes, c->rank, tag);
        fb_maybe_corrupt(c, sbuf, bytes);
        MPI_Send(sbuf, (int)bytes, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = fb_check(rbuf, bytes, peer, tag);
    } else {
        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = fb_check(rbuf, bytes, peer, tag);
        fb_fill(sbuf, bytes, c->rank, tag);
        fb_maybe_corrupt(c, sbuf, bytes);
        MPI_Send(sbuf, (int)bytes, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD);
    }
    return bad;
}

/* collective: fail with FB_ERR_VALIDATE if any rank received a wrong byte */
int fb_validated(fb_ctx *c, long bad, size_t bytes)
{
    long total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!total) return FB_OK;
    return fb_fail(c, bad ? FB_ERR_VALIDATE : FB_OK,
                   "validation failed: %ld corrupted bytes in messages of %zu bytes (rank %d received wrong data)",
                   total, bytes, c->rank);
}

static int need_ranks(fb_ctx *c, int n)
{
    return fb_fail(c, c->size < n ? FB_ERR_SETUP : FB_OK, "needs at least %d ranks, the job has %d", n, c->size);
}

static int buffers(fb_ctx *c, size_t bytes, unsigned char **s, unsigned char **r)
{
    *s = fb_alloc(bytes);
    *r = fb_alloc(bytes);
    return fb_fail(c, (*s && *r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate two buffers of %zu bytes", bytes);
}

/* ping-pong between ranks 0 and 1; latency = half the round trip */
int fb_pingpong(fb_ctx *c)
{
    int st;
    size_t sizes[MAXSIZES];
    int ns = fb_sizes(c, 0, 4u << 20, sizes, MAXSIZES);
    if ((st = need_ranks(c, 2))) return st;
    unsigned char *s, *r;
    if ((st = buffers(c, sizes[ns - 1], &s, &r))) return st;
    for (int k = 0; k < ns && !st; k++) {
        size_t b = sizes[k];
        long it = fb_iters(c, b, 10000, 1000), w = fb_warm(c, b, 100, 10);
        double t0 = 0, t = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (c->rank == 0) {
            for (long i = 0; i < it + w; i++) {
                if (i == w) t0 = MPI_Wtime();
                MPI_Send(s, (int)b, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                MPI_Recv(r, (int)b, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t = (MPI_Wtime() - t0) / it / 2;
        } else if (c->rank == 1) {
            for (long i = 0; i < it + w; i++) {
                MPI_Recv(r, (int)b, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, (int)b, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
        long bad = 0;
        if (c->o.validate && c->rank < 2) bad = fb_validate_pair(c, c->rank == 0, 1 - c->rank, s, r, b, k);
        if (c->o.validate && (st = fb_validated(c, bad, b))) break;
        fb_emit(c, "{\"type\":\"size\",\"test\":\"pingpong\",\"src\":0,\"dst\":1,\"bytes\":%zu,\"iters\":%ld,"
                "\"latency\":%.9g,\"bandwidth\":%.6g}", b, it, t, t > 0 ? b / t : 0.0);
        fb_progress(c, "%zu B: %.3f us", b, t * 1e6);
    }
    free(s); free(r);
    return st;
}

/* window of W non-blocking messages then an ack; bidir: both sides at once.
 * senders = ranks [0, npairs), receivers = [npairs, 2 npairs) */
static double window_loop(fb_ctx *c, int npairs, int bidir, size_t b, long it, long w,
                          unsigned char *s, unsigned char *r, MPI_Request *req)
{
    int W = c->o.window, me = c->rank;
    int sender = me < npairs, receiver = me >= npairs && me < 2 * npairs;
    if (!sender && !receiver) { MPI_Barrier(MPI_COMM_WORLD); return -1; }
    int peer = sender ? me + npairs : me - npairs;
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < it + w; i++) {
        if (i == w) t0 = MPI_Wtime();
        int n = 0;
        if (receiver || bidir)
            for (int j = 0; j < W; j++) MPI_Irecv(r, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[n++]);
        if (sender || bidir)
            for (int j = 0; j < W; j++) MPI_Isend(s, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        if (!bidir) {
            if (sender) MPI_Recv(r, 4, MPI_BYTE, peer, ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(s, 4, MPI_BYTE, peer, ACK, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

static int windowed(fb_ctx *c, const char *name, int multi, int bidir)
{
    int st;
    size_t sizes[MAXSIZES];
    int ns = fb_sizes(c, 1, 4u << 20, sizes, MAXSIZES);
    if ((st = need_ranks(c, 2))) return st;
    int npairs = multi ? c->size / 2 : 1;
    unsigned char *s, *r;
    if ((st = buffers(c, sizes[ns - 1] > 4 ? sizes[ns - 1] : 4, &s, &r))) return st;
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t)c->o.window);
    double *all = malloc(sizeof(double) * (size_t)c->size);
    for (int k = 0; k < ns && !st; k++) {
        size_t b = sizes[k];
        long it = fb_iters(c, b, 100, 20), w = fb_warm(c, b, 10, 2);
        double t = window_loop(c, npairs, bidir, b, it, w, s, r, req);
        double mine = c->rank < npairs ? t : -1;
        MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        long bad = 0;
        int me = c->rank, peer = me < npairs ? me + npairs : me - npairs;
        if (c->o.validate && me < 2 * npairs) bad = fb_validate_pair(c, me < npairs, peer, s, r, b, k);
        if (c->o.validate && (st = fb_validated(c, bad, b))) break;
        if (c->rank == 0) {
            double msgs = (double)it * c->o.window * (bidir ? 2 : 1);
            double *bw = malloc(sizeof(double) * (size_t)npairs), tmax = 0, agg = 0;
            for (int p = 0; p < npairs; p++) {
                bw[p] = all[p] > 0 ? msgs * b / all[p] : 0;
                agg += bw[p];
                if (all[p] > tmax) tmax = all[p];
            }
            char sj[160];
            fb_emit(c, "{\"type\":\"size\",\"test\":\"%s\",\"src\":0,\"dst\":%d,\"pairs\":%d,\"bytes\":%zu,\"iters\":%ld,"
                    "\"window\":%d,\"bandwidth\":%.6g,\"message_rate\":%.6g,\"pair_bandwidth\":%s}",
                    name, npairs, npairs, b, it, c->o.window, agg, tmax > 0 ? npairs * msgs / tmax : 0.0,
                    fb_sj(sj, sizeof sj, fb_stat(bw, npairs)));
            fb_progress(c, "%zu B: %.1f MB/s", b, agg / 1e6);
            free(bw);
        }
    }
    free(s); free(r); free(req); free(all);
    return st;
}

int fb_bw(fb_ctx *c) { return windowed(c, "bw", 0, 0); }
int fb_bibw(fb_ctx *c) { return windowed(c, "bibw", 0, 1); }
int fb_mbw(fb_ctx *c) { return windowed(c, "mbw", 1, 0); }

/* multi-pair latency: rank i ping-pongs with i + n/2, all pairs at once */
int fb_multi_lat(fb_ctx *c)
{
    int st;
    size_t sizes[MAXSIZES];
    int ns = fb_sizes(c, 0, 1u << 20, sizes, MAXSIZES);
    if ((st = need_ranks(c, 2))) return st;
    int h = c->size / 2, me = c->rank;
    int peer = me < h ? me + h : (me < 2 * h ? me - h : -1);
    unsigned char *s, *r;
    if ((st = buffers(c, sizes[ns - 1], &s, &r))) return st;
    double *all = malloc(sizeof(double) * (size_t)c->size);
    for (int k = 0; k < ns && !st; k++) {
        size_t b = sizes[k];
        long it = fb_iters(c, b, 10000, 1000), w = fb_warm(c, b, 100, 10);
        double t0 = 0, t = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (peer >= 0) {
            for (long i = 0; i < it + w; i++) {
                if (i == w) t0 = MPI_Wtime();
                if (me < h) {
                    MPI_Send(s, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
                    MPI_Recv(r, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(r, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(s, (int)b, MPI_BYTE, peer, TAG, MPI_COMM_WORLD);
                }
            }
            t = me < h ? (MPI_Wtime() - t0) / it / 2 : -1;
        }
        MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        long bad = 0;
        if (c->o.validate && peer >= 0) bad = fb_validate_pair(c, me < h, peer, s, r, b, k);
        if (c->o.validate && (st = fb_validated(c, bad, b))) break;
        if (c->rank == 0) {
            char sj[160];
            fb_stats lat = fb_stat(all, c->size);
            fb_emit(c, "{\"type\":\"size\",\"test\":\"multi-lat\",\"pairs\":%d,\"bytes\":%zu,\"iters\":%ld,"
                    "\"latency\":%.9g,\"pair_latency\":%s}", h, b, it, lat.avg, fb_sj(sj, sizeof sj, lat));
        }
    }
    free(s); free(r); free(all);
    return st;
}
