/* Application kernels (issue 21): the communication of a 2-D and a 3-D halo
 * exchange, of the transposes of a pencil-decomposed 3-D FFT, and of an
 * allreduce-heavy loop, timed per iteration.  Each also counts the bytes every
 * rank sent to every other rank over the iterations it ran (warm-up included),
 * so the communication graph comes from the run itself:
 *
 *   {"type":"app", ... "t_iter":[..], "t_iter_median":..}        (time per timed iteration)
 *   {"type":"app-traffic", ... "sent":[[src,dst,bytes],...],       (MPI_COMM_WORLD ranks;
 *    "messages":[[src,dst,count],...]}                             each ordered pair once)
 *
 * Point-to-point messages are counted as sent.  The collectives are counted as
 * the messages of the algorithm the PMPI profiler (csrc/pmpi/algorithms.c)
 * assumes: Alltoall a pairwise exchange, Allreduce a ring (reduce-scatter then
 * allgather), so that both give the same matrix.  The loops run inside an
 * MPI_Pcontrol(1) .. MPI_Pcontrol(0) window: main.c turns the profiler off
 * after MPI_Init, so fabscope-bench's own set-up, timing and output traffic is
 * not in the profiler's matrix either. */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define TAG 31
#define MAX_ITERS 50000        /* timed iterations: their times fill at most ~750 kB of the app line */
#define MAX_LINE 1000000       /* below the 1 MiB line fabscope reads (fabscope.textio.MAX_LINE) */

typedef enum { APP_HALO2D, APP_HALO3D, APP_FFT, APP_ALLREDUCE } app_kind;

static app_kind kind_of(const char *name)
{
    if (!strcmp(name, "halo2d")) return APP_HALO2D;
    if (!strcmp(name, "halo3d")) return APP_HALO3D;
    if (!strcmp(name, "fft-transpose")) return APP_FFT;
    return APP_ALLREDUCE;
}

/* dimensions of the rank grid a kernel uses (0: none) */
static int grid_dims(app_kind k) { return k == APP_HALO2D ? 2 : k == APP_HALO3D ? 3 : k == APP_FFT ? 2 : 0; }
static const char *dims_form(app_kind k) { return k == APP_HALO3D ? "PXxPYxPZ" : k == APP_FFT ? "PRxPC" : "PXxPY"; }
static size_t default_size(app_kind k) { return k == APP_FFT ? 16384 : 65536; }

int fb_is_app(const char *name)
{
    return !strcmp(name, "halo2d") || !strcmp(name, "halo3d") || !strcmp(name, "fft-transpose")
        || !strcmp(name, "allreduce-loop");
}

int fb_app_check_options(const fb_opts *o, const char *name, char *err, size_t errlen)
{
    app_kind k = kind_of(name);
    int nd = grid_dims(k);
    if (o->ndims && !nd) {
        snprintf(err, errlen, "%s: takes no --dims (it runs on all ranks)", name);
        return FB_ERR_USAGE;
    }
    if (o->ndims && o->ndims != nd) {
        snprintf(err, errlen, "%s: --dims needs %d numbers (%s), got %d", name, nd, dims_form(k), o->ndims);
        return FB_ERR_USAGE;
    }
    if (o->mesh) {
        snprintf(err, errlen, "%s: --mesh is for hops; give --periodic no", name);
        return FB_ERR_USAGE;
    }
    /* the app line holds every timed iteration's time, and fabscope reads lines of up to 1 MiB */
    if (o->iterations > MAX_ITERS || o->warmup > MAX_ITERS) {
        snprintf(err, errlen, "%s: at most %d iterations and %d warm-up iterations (the record holds the time "
                 "of each)", name, MAX_ITERS, MAX_ITERS);
        return FB_ERR_USAGE;
    }
    size_t b = o->size_set ? o->size : default_size(k);
    if (b == 0) {
        snprintf(err, errlen, "%s: --size must be at least 1 byte", name);
        return FB_ERR_USAGE;
    }
    if (k == APP_ALLREDUCE && b % 8) {
        snprintf(err, errlen, "%s: --size must be a positive multiple of 8 bytes (it reduces doubles), got %zu", name, b);
        return FB_ERR_USAGE;
    }
    if (b > (size_t)1 << 30) {
        snprintf(err, errlen, "%s: --size %zu is above 1 GiB per message", name, b);
        return FB_ERR_USAGE;
    }
    return FB_OK;
}

/* busy work standing for the computation between exchanges: arithmetic until `secs` have passed */
static void compute(double secs)
{
    if (secs <= 0) return;
    volatile double x = 1.0;
    double t0 = MPI_Wtime();
    do {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
    } while (MPI_Wtime() - t0 < secs);
}

typedef struct {
    fb_ctx *c;
    app_kind kind;
    size_t size;
    long iters, warm;
    int nd, dims[3], periods[3];
    long long *sent;        /* bytes this rank sent to each world rank */
    long long *msgs;        /* messages this rank sent to each world rank */
    double *t;              /* this rank's time of each timed iteration */
} app;

/* ---- the four loops ----------------------------------------------------------- */
/* face k is received from neighbour k and sent to neighbour k (the -1 then +1 side of each dimension);
 * a missing neighbour (an edge of a non-periodic grid) is MPI_PROC_NULL: nothing posted, nothing sent */
static void halo_exchange(app *a, MPI_Comm cart, const int *nb, unsigned char *s, unsigned char *r,
                          MPI_Request *req, int count)
{
    int n = 2 * a->nd, q = 0;
    for (int k = 0; k < n; k++) {
        if (nb[k] == MPI_PROC_NULL) continue;
        MPI_CHECK(MPI_Irecv(r + a->size * k, (int)a->size, MPI_BYTE, nb[k], TAG + (k ^ 1), cart, &req[q++]));
    }
    for (int k = 0; k < n; k++) {
        if (nb[k] == MPI_PROC_NULL) continue;
        MPI_CHECK(MPI_Isend(s + a->size * k, (int)a->size, MPI_BYTE, nb[k], TAG + k, cart, &req[q++]));
        if (count && nb[k] != a->c->rank) { a->sent[nb[k]] += (long long)a->size; a->msgs[nb[k]]++; }
    }
    MPI_CHECK(MPI_Waitall(q, req, MPI_STATUSES_IGNORE));
}

static int halo_loop(app *a)
{
    fb_ctx *c = a->c;
    MPI_Comm cart;
    /* no reordering: a rank of the grid is the rank of MPI_COMM_WORLD the launcher placed */
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, a->nd, a->dims, a->periods, 0, &cart));
    int nb[6];
    for (int d = 0; d < a->nd; d++) MPI_CHECK(MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]));
    int n = 2 * a->nd, st;
    unsigned char *s = fb_alloc(a->size * (size_t)n), *r = fb_alloc(a->size * (size_t)n);
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
    if ((st = fb_fail(c, (s && r && req) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", 2 * a->size * n))) {
        free(s); free(r); free(req); MPI_Comm_free(&cart); return st;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    for (long i = 0; i < a->warm + a->iters; i++) {
        double t0 = MPI_Wtime();
        compute(c->o.compute);
        halo_exchange(a, cart, nb, s, r, req, 1);
        if (i >= a->warm) a->t[i - a->warm] = MPI_Wtime() - t0;
    }
    MPI_Pcontrol(0);
    long bad = 0;
    if (c->o.validate) {   /* one more exchange, untimed and uncounted, of faces that say who sent them */
        for (int k = 0; k < n; k++) {
            fb_fill(s + a->size * k, a->size, c->rank, k);
            fb_maybe_corrupt(c, s + a->size * k, a->size);
        }
        halo_exchange(a, cart, nb, s, r, req, 0);
        for (int k = 0; k < n; k++)   /* neighbour k sent this face as its face k^1 */
            if (nb[k] != MPI_PROC_NULL) bad += fb_check(r + a->size * k, a->size, nb[k], k ^ 1);
    }
    free(s); free(r); free(req);
    MPI_Comm_free(&cart);
    return c->o.validate ? fb_validated(c, bad, a->size) : FB_OK;
}

/* pairwise exchange, as the profiler counts MPI_Alltoall: `size` bytes to every other member */
static void count_alltoall(app *a, MPI_Comm comm, const int *world)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    for (int i = 0; i < p; i++) if (i != me) { a->sent[world[i]] += (long long)a->size; a->msgs[world[i]]++; }
}

static long check_alltoall(app *a, MPI_Comm comm, const int *world, unsigned char *s, unsigned char *r)
{
    int p, me;
    long bad = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    for (int i = 0; i < p; i++) {
        fb_fill(s + a->size * i, a->size, a->c->rank, world[i]);
        fb_maybe_corrupt(a->c, s + a->size * i, a->size);
    }
    MPI_CHECK(MPI_Alltoall(s, (int)a->size, MPI_BYTE, r, (int)a->size, MPI_BYTE, comm));
    for (int i = 0; i < p; i++) bad += fb_check(r + a->size * i, a->size, world[i], a->c->rank);
    return bad;
}

static int fft_loop(app *a)
{
    fb_ctx *c = a->c;
    int pr = a->dims[0], pc = a->dims[1], row = c->rank / pc, col = c->rank % pc, st;
    MPI_Comm rowc, colc;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, row, col, &rowc));   /* the PC ranks of my row */
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, col, row, &colc));   /* the PR ranks of my column */
    int *wrow = malloc(sizeof(int) * (size_t)pc), *wcol = malloc(sizeof(int) * (size_t)pr);
    for (int k = 0; k < pc && wrow; k++) wrow[k] = row * pc + k;
    for (int k = 0; k < pr && wcol; k++) wcol[k] = k * pc + col;
    size_t most = a->size * (size_t)(pr > pc ? pr : pc);
    unsigned char *s = fb_alloc(most), *r = fb_alloc(most);
    if ((st = fb_fail(c, (s && r && wrow && wcol) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", 2 * most))) {
        free(s); free(r); free(wrow); free(wcol); MPI_Comm_free(&rowc); MPI_Comm_free(&colc); return st;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    for (long i = 0; i < a->warm + a->iters; i++) {
        double t0 = MPI_Wtime();
        compute(c->o.compute);
        MPI_CHECK(MPI_Alltoall(s, (int)a->size, MPI_BYTE, r, (int)a->size, MPI_BYTE, rowc));
        count_alltoall(a, rowc, wrow);
        MPI_CHECK(MPI_Alltoall(s, (int)a->size, MPI_BYTE, r, (int)a->size, MPI_BYTE, colc));
        count_alltoall(a, colc, wcol);
        if (i >= a->warm) a->t[i - a->warm] = MPI_Wtime() - t0;
    }
    MPI_Pcontrol(0);
    long bad = 0;
    if (c->o.validate) {   /* one more transpose of each kind, of blocks that say who sent them to whom */
        bad += check_alltoall(a, rowc, wrow, s, r);
        bad += check_alltoall(a, colc, wcol, s, r);
    }
    free(s); free(r); free(wrow); free(wcol);
    MPI_Comm_free(&rowc); MPI_Comm_free(&colc);
    return c->o.validate ? fb_validated(c, bad, a->size) : FB_OK;
}

/* the ring the profiler counts MPI_Allreduce as: 2(p-1) steps, each one chunk to rank+1;
 * rank r sends every chunk but r+1 (reduce-scatter), then every chunk but r+2 (allgather) */
static void count_ring(app *a, long count, size_t elem)
{
    int p = a->c->size, me = a->c->rank;
    if (p < 2) return;
    for (int s = 0; s < 2 * (p - 1); s++) {
        int ch = s < p - 1 ? ((me - s) % p + p) % p : ((me + 1 - (s - (p - 1))) % p + p) % p;
        a->sent[(me + 1) % p] += (long long)elem * (count / p + (ch < count % p));
        a->msgs[(me + 1) % p]++;
    }
}

static int allreduce_loop(app *a)
{
    fb_ctx *c = a->c;
    long count = (long)(a->size / sizeof(double));
    double *s = fb_alloc(a->size), *r = fb_alloc(a->size);
    int st;
    if ((st = fb_fail(c, (s && r) ? FB_OK : FB_ERR_RUNTIME, "cannot allocate %zu bytes", 2 * a->size))) {
        free(s); free(r); return st;
    }
    for (long k = 0; k < count; k++) s[k] = 1.0 + c->rank;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    for (long i = 0; i < a->warm + a->iters; i++) {
        double t0 = MPI_Wtime();
        compute(c->o.compute);
        MPI_CHECK(MPI_Allreduce(s, r, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        count_ring(a, count, sizeof(double));
        if (i >= a->warm) a->t[i - a->warm] = MPI_Wtime() - t0;
    }
    MPI_Pcontrol(0);
    long bad = 0;
    if (c->o.validate) {   /* the sum of 1 + rank over the ranks, exact in doubles */
        fb_maybe_corrupt(c, (unsigned char *)s, a->size);
        MPI_CHECK(MPI_Allreduce(s, r, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        double want = 0.5 * c->size * (c->size + 1.0);
        for (long k = 0; k < count; k++) bad += r[k] != want;
        for (long k = 0; k < count; k++) s[k] = 1.0 + c->rank;
    }
    free(s); free(r);
    return c->o.validate ? fb_validated(c, bad * (long)sizeof(double), a->size) : FB_OK;
}

/* ---- records ---------------------------------------------------------------------- */
static const char *tf(int v) { return v ? "true" : "false"; }

static void pair_list(FILE *f, int n, const long long *all)
{
    int first = 1;
    for (int src = 0; src < n; src++)
        for (int dst = 0; dst < n; dst++) {
            long long b = all[(size_t)src * n + dst];
            if (!b || src == dst) continue;
            fprintf(f, "%s[%d,%d,%lld]", first ? "" : ",", src, dst, b);
            first = 0;
        }
}

static void emit_records(app *a, const double *tmax, const long long *all, const long long *allm)
{
    fb_ctx *c = a->c;
    FILE *f = c->out;
    if (c->rank != 0 || !f) return;
    fb_stats s = fb_stat(tmax, (int)a->iters);
    fprintf(f, "{\"type\":\"app\",\"test\":\"%s\",\"ranks\":%d,\"iterations\":%ld,\"warmup\":%ld,\"size\":%zu,"
            "\"params\":{", c->test, c->size, a->iters, a->warm, a->size);
    if (a->nd) {
        fprintf(f, "\"dims\":[");
        for (int d = 0; d < a->nd; d++) fprintf(f, "%s%d", d ? "," : "", a->dims[d]);
        fprintf(f, "],");
    }
    if (a->kind == APP_HALO2D || a->kind == APP_HALO3D) {
        fprintf(f, "\"periodic\":[");
        for (int d = 0; d < a->nd; d++) fprintf(f, "%s%s", d ? "," : "", tf(a->periods[d]));
        fprintf(f, "],");
    }
    if (a->kind == APP_ALLREDUCE) fprintf(f, "\"datatype\":\"double\",\"elements\":%zu,", a->size / sizeof(double));
    fprintf(f, "\"compute\":%.9g},\"t_iter\":[", c->o.compute);
    for (long i = 0; i < a->iters; i++) fprintf(f, "%s%.9g", i ? "," : "", tmax[i]);
    fb_emit(c, "],\"t_iter_median\":%.9g,\"t_iter_mean\":%.9g,\"t_iter_min\":%.9g,\"t_iter_max\":%.9g}",
            s.median, s.avg, s.min, s.max);
    const char *how = a->kind == APP_FFT ? "pmpi-pairwise" : a->kind == APP_ALLREDUCE ? "pmpi-ring" : "messages";
    fprintf(f, "{\"type\":\"app-traffic\",\"test\":\"%s\",\"ranks\":%d,\"iterations_counted\":%ld,"
            "\"counted_as\":\"%s\",\"sent\":[", c->test, c->size, a->warm + a->iters, how);
    pair_list(f, c->size, all);
    fprintf(f, "],\"messages\":[");
    pair_list(f, c->size, allm);
    fb_emit(c, "]}");
    fb_progress(c, "%ld iterations, median %.3g s", a->iters, s.median);
}

static int run_app(fb_ctx *c, app_kind kind)
{
    char err[256] = {0};
    int st = fb_app_check_options(&c->o, c->test, err, sizeof err);
    if ((st = fb_agree(c, st, err))) return st;
    app a;
    memset(&a, 0, sizeof a);
    a.c = c;
    a.kind = kind;
    a.size = fb_size1(c, default_size(kind));
    a.iters = c->o.iterations > 0 ? c->o.iterations : 50;
    a.warm = c->o.warmup >= 0 ? c->o.warmup : 5;
    a.nd = grid_dims(kind);
    if (a.nd) {
        long long prod = 1;   /* not int: 65536x65536 must not wrap round to the job's size */
        if (c->o.ndims) {
            for (int d = 0; d < a.nd; d++) { a.dims[d] = c->o.dims[d]; prod *= a.dims[d]; }
        } else {
            MPI_CHECK(MPI_Dims_create(c->size, a.nd, a.dims));
            prod = c->size;
        }
        if ((st = fb_fail(c, prod != c->size ? FB_ERR_SETUP : FB_OK,
                          "--dims makes a grid of %lld ranks, the job has %d", prod, c->size))) return st;
        for (int d = 0; d < a.nd; d++) a.periods[d] = c->o.periodic != 0;
    }
    if ((st = fb_fail(c, kind != APP_HALO2D && kind != APP_HALO3D && c->size < 2 ? FB_ERR_SETUP : FB_OK,
                      "needs at least 2 ranks, the job has %d", c->size))) return st;
    /* the traffic line must fit the line fabscope reads: refused before the loop, not after it */
    long pairs = kind == APP_FFT ? (long)c->size * (a.dims[0] + a.dims[1] - 2)
               : kind == APP_ALLREDUCE ? c->size : (long)c->size * 2 * a.nd;
    char d[64];
    int rank_digits = snprintf(d, sizeof d, "%d", c->size - 1);
    int byte_digits = snprintf(d, sizeof d, "%lld", 2LL * (long long)a.size * (a.iters + a.warm));
    int msg_digits = snprintf(d, sizeof d, "%ld", 2 * 2 * (long)c->size * (a.iters + a.warm));
    long line = 300 + pairs * (10 + 4 * rank_digits + byte_digits + msg_digits);
    /* FABSCOPE_BENCH_MAX_LINE=<bytes> lowers the bound, so that tests reach this refusal with a few ranks */
    const char *e = getenv("FABSCOPE_BENCH_MAX_LINE");
    long bound = e && atol(e) > 0 && atol(e) < MAX_LINE ? atol(e) : MAX_LINE;
    if ((st = fb_fail(c, line > bound ? FB_ERR_SETUP : FB_OK,
                      "up to %ld rank pairs exchange data: their traffic line (up to %ld bytes) would pass the "
                      "%ld bytes of a line fabscope reads; run fewer ranks", pairs, line, bound))) return st;
    a.sent = calloc((size_t)c->size, sizeof(long long));
    a.msgs = calloc((size_t)c->size, sizeof(long long));
    a.t = malloc(sizeof(double) * (size_t)a.iters);
    if ((st = fb_fail(c, (a.sent && a.msgs && a.t) ? FB_OK : FB_ERR_RUNTIME, "out of memory"))) {
        free(a.sent); free(a.msgs); free(a.t); return st;
    }
    st = kind == APP_FFT ? fft_loop(&a) : kind == APP_ALLREDUCE ? allreduce_loop(&a) : halo_loop(&a);
    if (st) { free(a.sent); free(a.msgs); free(a.t); return st; }
    /* the time of an iteration is that of its slowest rank; the matrix is gathered row by row */
    double *tmax = c->rank == 0 ? malloc(sizeof(double) * (size_t)a.iters) : NULL;
    long long *all = c->rank == 0 ? malloc(sizeof(long long) * (size_t)c->size * (size_t)c->size) : NULL;
    long long *allm = c->rank == 0 ? malloc(sizeof(long long) * (size_t)c->size * (size_t)c->size) : NULL;
    if ((st = fb_fail(c, c->rank == 0 && !(tmax && all && allm) ? FB_ERR_RUNTIME : FB_OK, "out of memory"))) {
        free(tmax); free(all); free(allm); free(a.sent); free(a.msgs); free(a.t); return st;
    }
    MPI_CHECK(MPI_Reduce(a.t, tmax, (int)a.iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Gather(a.sent, c->size, MPI_LONG_LONG, all, c->size, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Gather(a.msgs, c->size, MPI_LONG_LONG, allm, c->size, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    emit_records(&a, tmax, all, allm);
    free(tmax); free(all); free(allm); free(a.sent); free(a.msgs); free(a.t);
    return FB_OK;
}

int fb_halo2d(fb_ctx *c) { return run_app(c, APP_HALO2D); }
int fb_halo3d(fb_ctx *c) { return run_app(c, APP_HALO3D); }
int fb_fft_transpose(fb_ctx *c) { return run_app(c, APP_FFT); }
int fb_allreduce_loop(fb_ctx *c) { return run_app(c, APP_ALLREDUCE); }
