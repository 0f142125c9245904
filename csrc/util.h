/* fabscope-bench: shared options, timing, statistics, JSON-lines output and
 * error agreement.  Every test module takes a `fb_ctx *` (no globals). */
#ifndef FB_UTIL_H
#define FB_UTIL_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define FB_SCHEMA "fabscope.bench"
#define FB_SCHEMA_VERSION 1
#define FB_PROGRAM_VERSION "0.1.0"
#define FB_MAX_TESTS 32
#define FB_PATH 1024
#define FB_HOST 256
#define FB_MAX_DIMS 6

/* exit codes, the same on every rank */
enum fb_status {
    FB_OK = 0,
    FB_ERR_USAGE = 2,     /* unknown test or option, bad size */
    FB_ERR_SETUP = 3,     /* ranks/hosts/topology do not fit the test */
    FB_ERR_VALIDATE = 4,  /* received data differs from what was sent */
    FB_ERR_RUNTIME = 5,   /* out of memory, cannot write output */
    FB_HELP = 100         /* --help printed: exit 0 */
};

enum fb_yield { FB_YIELD_AUTO, FB_YIELD_ON, FB_YIELD_OFF };

typedef struct {
    const char *tests[FB_MAX_TESTS];
    int ntests;
    size_t min_size, max_size; /* sweeps */
    size_t size;               /* single-size tests; 0 = test default */
    int size_set, min_set, max_set;
    long iterations, warmup;   /* -1 = test default */
    int window;
    unsigned long long seed;
    int offset, hops, leaf_size, rounds;
    int per_rank;              /* every rank is an endpoint (else one rank per node) */
    int dims[FB_MAX_DIMS], ndims, mesh;
    char out[FB_PATH], topo[FB_PATH];
    int validate, progress, append;
    int yield_mode;
    int check_only;            /* --check-args: validate the options and exit, before MPI_Init */
    int list_ranks;            /* --list-pairs N: print the random schedules for N ranks, no MPI */
    long stream_n;
    int periodic;              /* application kernels' grids: -1 unset (= yes), 0 no, 1 yes */
    double compute;            /* application kernels: seconds of busy work per iteration */
} fb_opts;

typedef struct {
    int rank, size;
    fb_opts o;
    FILE *out;                 /* rank 0 only */
    double t_start;
    /* where every rank sits (all ranks hold the full arrays) */
    char (*host)[FB_HOST];
    int *core, *socket, *node; /* node: index of the host, in order of first rank */
    int nnodes, local_ranks, online_cores;
    int *cpus;                 /* CPUs in each rank's affinity set (sched_getaffinity) */
    int *host_cpus;            /* CPUs in the union of the affinity sets of the ranks on each rank's host */
    int *machine_ranks;        /* ranks on each rank's machine (one kernel: same boot_id, whatever the host name) */
    int *machine_cpus;         /* CPUs in the union of the affinity sets of the ranks on that machine */
    int *pid;                  /* each rank's process id, so a launcher's report of a dead pid names its rank */
    int *spin;                 /* each rank's wait-loop choice: 1 spin, 0 yield */
    double cpu_mhz;
    const char *test;          /* running test name */
    char *argv_json;
} fb_ctx;

/* ---- options -------------------------------------------------------- */
int fb_parse_options(int argc, char **argv, fb_opts *o, char *err, size_t errlen);
int fb_check_only(int argc, char **argv);       /* --check-args given: parse only, no MPI */
int fb_parse_size(const char *s, size_t *out);
void fb_usage(FILE *fh);

/* ---- errors: every rank calls; returns the agreed status (0 if none) --- */
int fb_agree(fb_ctx *c, int status, const char *msg);
int fb_fail(fb_ctx *c, int status, const char *fmt, ...);  /* local; formats msg and agrees */

#define MPI_CHECK(call) do { int e_ = (call); if (e_ != MPI_SUCCESS) { \
    char s_[MPI_MAX_ERROR_STRING]; int l_; MPI_Error_string(e_, s_, &l_); \
    fprintf(stderr, "fabscope-bench: MPI error at %s:%d: %s\n", __FILE__, __LINE__, s_); \
    MPI_Abort(MPI_COMM_WORLD, FB_ERR_RUNTIME); } } while (0)

/* ---- setup ------------------------------------------------------------ */
int fb_gather_placement(fb_ctx *c);
int fb_leaders(const fb_ctx *c, int *ranks);     /* first rank of each node -> count */

/* ---- buffers and validation ------------------------------------------ */
void *fb_alloc(size_t n);                        /* page aligned, touched */
void fb_fill(unsigned char *buf, size_t n, int src, long tag);
long fb_check(const unsigned char *buf, size_t n, int src, long tag);
void fb_maybe_corrupt(const fb_ctx *c, unsigned char *buf, size_t n);

/* ---- iteration counts ------------------------------------------------- */
long fb_iters(const fb_ctx *c, size_t bytes, long small, long large);
long fb_warm(const fb_ctx *c, size_t bytes, long small, long large);
int fb_sizes(const fb_ctx *c, size_t dmin, size_t dmax, size_t *sizes, int cap);
size_t fb_size1(const fb_ctx *c, size_t dflt);

/* ---- statistics ------------------------------------------------------- */
typedef struct { double min, median, max, avg; } fb_stats;
fb_stats fb_stat(const double *v, int n);        /* ignores v[i] < 0 */

/* ---- random schedules (draws.c): splitmix64, the same on every platform and in
 * fabscope's Python side (traffic/draws.py) ------------------------------- */
unsigned long long fb_rand(unsigned long long *state);
void fb_shuffle(int *a, int n, unsigned long long seed);
/* random-pairs round `round`: partner[r] (-1 sits out); perm is scratch of n ints */
void fb_random_pairing(int n, unsigned long long seed, int round, int *perm, int *partner);
/* random-ring: the ring's order of ranks */
void fb_ring_order(int n, unsigned long long seed, int *perm);
/* random-msg: the state its rounds draw from, then round i's cycle perm[k] -> perm[k+1]
 * and the length perm[k] sends, in [low, high] */
unsigned long long fb_msg_state(unsigned long long seed);
void fb_msg_round(int n, unsigned long long *state, long i, int low, int high, int *perm, int *len);
/* --list-pairs N: print the random schedules of the tests for N ranks, no MPI (main.c) */
int fb_list_schedules(const fb_opts *o, FILE *out, char *err, size_t errlen);

/* ---- output (rank 0 writes; every line flushed as it completes) ------- */
void fb_emit(fb_ctx *c, const char *fmt, ...);
void fb_json_str(char *dst, size_t cap, const char *s);
void fb_progress(fb_ctx *c, const char *fmt, ...);
const char *fb_sj(char *buf, size_t cap, fb_stats s);  /* {"min":..,"median":..} */

#endif
