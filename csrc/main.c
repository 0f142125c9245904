/* fabscope-bench: the MPI benchmark program of fabscope.
 *
 *   mpiexec -n 4 fabscope-bench random-pairs --size 1MiB --iterations 100 --out run.jsonl
 *
 * Writes JSON lines (schema "fabscope.bench", version 1): a header, where
 * every rank sits, then one line per measurement as it completes.  Errors:
 * one line from rank 0, the same exit code on every rank. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat_yield.h"
#include "tests.h"
#include "util.h"

typedef struct { const char *name; int (*fn)(fb_ctx *); int suite; const char *what; } fb_test;

static const fb_test TESTS[] = {
    {"pingpong", fb_pingpong, 1, "ping-pong latency and bandwidth against message size (001)"},
    {"bw", fb_bw, 1, "unidirectional bandwidth, window of non-blocking sends (001)"},
    {"bibw", fb_bibw, 1, "bidirectional bandwidth with a window (001)"},
    {"mbw", fb_mbw, 1, "multi-pair bandwidth and message rate (001)"},
    {"multi-lat", fb_multi_lat, 1, "multi-pair latency (001)"},
    {"random-pairs", fb_random_pairs, 1, "concurrent ping-pong of random pairs (000)"},
    {"leaf-offset", fb_leaf_offset, 0, "N-th node of a leaf with the N-th node of leaf XOR offset (000)"},
    {"leaf-pairs", fb_leaf_pairs, 0, "leaf-offset for every offset: all leaf pairs (000)"},
    {"all-pairs", fb_all_pairs, 1, "mpiGraph-like bandwidth matrix of all rank pairs (000)"},
    {"hops", fb_hops, 0, "every rank with a partner n hops away (002)"},
    {"random-msg", fb_random_msg, 1, "Random Messaging, 100 B to 1 KB (004)"},
    {"bucket-brigade", fb_bucket_brigade, 1, "Bucket Brigade, 8 B and 1 MB (004)"},
    {"ring", fb_ring, 1, "HPCC naturally ordered ring (001)"},
    {"random-ring", fb_random_ring, 1, "HPCC randomly ordered ring (001)"},
    {"alltoall", fb_alltoall, 1, "alltoall latency against size (001)"},
    {"allreduce", fb_allreduce, 1, "allreduce latency against size and rank count (004)"},
    {"stream", fb_stream, 1, "STREAM triad memory bandwidth per rank and node (004)"},
    {"halo2d", fb_halo2d, 0, "2-D halo exchange on a grid of the ranks, time per iteration and traffic (002)"},
    {"halo3d", fb_halo3d, 0, "3-D halo exchange, 6 neighbours, time per iteration and traffic (002)"},
    {"fft-transpose", fb_fft_transpose, 0, "pencil 3-D FFT transposes: alltoall in rows then columns (002)"},
    {"allreduce-loop", fb_allreduce_loop, 0, "an allreduce every iteration, time per iteration and traffic (004)"},
};
#define NTESTS ((int)(sizeof TESTS / sizeof TESTS[0]))

static const fb_test *find(const char *name)
{
    for (int i = 0; i < NTESTS; i++) if (!strcmp(TESTS[i].name, name)) return &TESTS[i];
    return NULL;
}

static int finish(fb_ctx *c, int status)
{
    if (c->rank == 0 && c->out) {
        fb_emit(c, "{\"type\":\"end\",\"status\":%d,\"elapsed\":%.6f}", status, MPI_Wtime() - c->t_start);
        if (c->out != stdout) fclose(c->out);
    }
    MPI_Finalize();
    return status == FB_HELP ? 0 : status;
}

#ifndef FB_MPICC
#define FB_MPICC ""  /* set by fabscope's build: the compiler wrapper that built this program */
#endif

static const char *yield_mode_name(int m) { return m == FB_YIELD_ON ? "on" : m == FB_YIELD_OFF ? "off" : "auto"; }

static void int_array(FILE *f, const char *key, const int *v, int n)
{
    fprintf(f, ",\"%s\":[", key);
    for (int r = 0; r < n; r++) fprintf(f, "%s%d", r ? "," : "", v[r]);
    fprintf(f, "]");
}

static void header(fb_ctx *c, int argc, char **argv, double load)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0}, js[2 * MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, ver = 0, sub = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&ver, &sub);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    fb_json_str(js, sizeof js, lib);
    if (c->rank != 0) return;
    fprintf(c->out, "{\"type\":\"header\",\"schema\":\"%s\",\"version\":%d,\"program\":\"fabscope-bench\","
            "\"program_version\":\"%s\",\"mpi_library\":%s,\"mpi_version\":\"%d.%d\",\"nranks\":%d,"
            "\"nnodes\":%d,\"time\":%ld,\"yield\":\"%s\",\"seed\":%llu,\"validate\":%s,\"argv\":[",
            FB_SCHEMA, FB_SCHEMA_VERSION, FB_PROGRAM_VERSION, js, ver, sub, c->size, c->nnodes,
            (long)time(NULL), fb_yield_spins() ? "spin" : "yield", c->o.seed, c->o.validate ? "true" : "false");
    for (int i = 0; i < argc; i++) {
        char a[2 * FB_PATH];
        fb_json_str(a, sizeof a, argv[i]);
        fprintf(c->out, "%s%s", i ? "," : "", a);
    }
    fprintf(c->out, "],\"tests\":[");
    for (int i = 0; i < c->o.ntests; i++) fprintf(c->out, "%s\"%s\"", i ? "," : "", c->o.tests[i]);
    char cc[2 * FB_PATH];
    fb_json_str(cc, sizeof cc, FB_MPICC);
    fprintf(c->out, "],\"cpu_mhz\":%.1f,\"online_cores\":%d,\"loadavg\":%.2f,\"mpicc\":%s,\"yield_mode\":\"%s\"}\n",
            c->cpu_mhz, c->online_cores, load, cc, yield_mode_name(c->o.yield_mode));
    /* where every rank sits: host, core, socket (intra-socket / inter-socket / inter-node) */
    fprintf(c->out, "{\"type\":\"ranks\",\"host\":[");
    for (int r = 0; r < c->size; r++) {
        char h[2 * FB_HOST];
        fb_json_str(h, sizeof h, c->host[r]);
        fprintf(c->out, "%s%s", r ? "," : "", h);
    }
    fprintf(c->out, "],\"core\":[");
    for (int r = 0; r < c->size; r++) fprintf(c->out, "%s%d", r ? "," : "", c->core[r]);
    fprintf(c->out, "],\"socket\":[");
    for (int r = 0; r < c->size; r++) fprintf(c->out, "%s%d", r ? "," : "", c->socket[r]);
    fprintf(c->out, "]");
    int_array(c->out, "pid", c->pid, c->size);
    int_array(c->out, "cpus", c->cpus, c->size);
    int_array(c->out, "host_cpus", c->host_cpus, c->size);
    int_array(c->out, "machine_ranks", c->machine_ranks, c->size);
    int_array(c->out, "machine_cpus", c->machine_cpus, c->size);
    fprintf(c->out, ",\"wait\":[");
    for (int r = 0; r < c->size; r++) fprintf(c->out, "%s\"%s\"", r ? "," : "", c->spin[r] ? "spin" : "yield");
    fprintf(c->out, "]}\n");
    fflush(c->out);
}

/* Any MPI error (most often: a peer rank died) is still fatal, but the rank waits
 * a moment before it aborts, so that the launcher reports the rank that died,
 * with its signal, rather than this rank's abort. */
static void on_mpi_error(MPI_Comm *comm, int *code, ...)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    (void)comm;
    MPI_Error_string(*code, s, &len);
    char *nl = strchr(s, '\n');
    if (nl) *nl = 0;
    fprintf(stderr, "fabscope-bench: MPI error: %s\n", s);
    sleep(2);
    MPI_Abort(MPI_COMM_WORLD, FB_ERR_RUNTIME);
}

/* expand "suite" into names[], reject unknown names; returns a status and fills err */
static int expand_tests(fb_opts *o, const char **names, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (o->ntests == 0) { snprintf(err, errlen, "no test given (try --help)"); return FB_ERR_USAGE; }
    for (int i = 0; i < o->ntests; i++) {
        if (!strcmp(o->tests[i], "suite")) {
            for (int k = 0; k < NTESTS && *n < FB_MAX_TESTS; k++) if (TESTS[k].suite) names[(*n)++] = TESTS[k].name;
        } else if (find(o->tests[i])) {
            if (fb_is_app(o->tests[i])) {
                int st = fb_app_check_options(o, o->tests[i], err, errlen);
                if (st) return st;
            }
            if (*n < FB_MAX_TESTS) names[(*n)++] = o->tests[i];
        } else {
            snprintf(err, errlen, "unknown test '%s' (known: suite", o->tests[i]);
            for (int k = 0; k < NTESTS; k++) {
                size_t l = strlen(err);
                snprintf(err + l, errlen - l, ", %s", TESTS[k].name);
            }
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, ")");
            return FB_ERR_USAGE;
        }
    }
    return FB_OK;
}

int main(int argc, char **argv)
{
    fb_ctx ctx;
    fb_ctx *c = &ctx;
    memset(c, 0, sizeof *c);
    if (fb_check_only(argc, argv)) {
        /* fabscope checks every option this way before it launches a job, and --list-pairs
         * prints the random schedules: no MPI_Init */
        char err[512] = {0};
        const char *names[FB_MAX_TESTS];
        int n = 0;
        int st = fb_parse_options(argc, argv, &c->o, err, sizeof err);
        if (st == FB_HELP) return 0;
        if (!st) st = expand_tests(&c->o, names, &n, err, sizeof err);
        if (!st && c->o.list_ranks && !c->o.check_only) {
            for (int i = 0; i < n; i++) c->o.tests[i] = names[i];
            c->o.ntests = n;
            st = fb_list_schedules(&c->o, stdout, err, sizeof err);
        }
        if (st) fprintf(stderr, "fabscope-bench: error: %s\n", err);
        return st;
    }
    MPI_Init(&argc, &argv);
    /* a PMPI profiler (csrc/pmpi) preloaded counts only the application kernels' loops, which
     * switch it on and off again: fabscope-bench's own set-up, agreement and output are not counted */
    MPI_Pcontrol(0);
    MPI_Errhandler on_error;
    MPI_Comm_create_errhandler(on_mpi_error, &on_error);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, on_error);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->t_start = MPI_Wtime();

    char err[512] = {0};
    int st = fb_parse_options(argc, argv, &c->o, err, sizeof err);
    if (st == FB_HELP) {
        if (c->rank == 0) {
            fb_usage(stdout);
            for (int i = 0; i < NTESTS; i++) printf("  %-15s %s\n", TESTS[i].name, TESTS[i].what);
        }
        return finish(c, FB_HELP);
    }
    const char *names[FB_MAX_TESTS];
    int n = 0;
    if (!st) st = expand_tests(&c->o, names, &n, err, sizeof err);
    if ((st = fb_agree(c, st, err))) return finish(c, st);
    for (int i = 0; i < n; i++) c->o.tests[i] = names[i];
    c->o.ntests = n;

    if (c->rank == 0) {
        if (!c->o.out[0] || !strcmp(c->o.out, "-")) c->out = stdout;
        else if (!(c->out = fopen(c->o.out, c->o.append ? "a" : "w"))) {
            st = FB_ERR_RUNTIME;
            snprintf(err, sizeof err, "cannot write %s", c->o.out);
        }
    }
    if ((st = fb_agree(c, st, err))) return finish(c, st);
    st = fb_gather_placement(c);
    if ((st = fb_fail(c, st, "out of memory"))) return finish(c, st);
    /* --yield auto: spin only when every host, and every machine (emulated hosts in namespaces of
     * one kernel share its CPUs), has a CPU of the job's affinity sets for each of its ranks;
     * decided from the CPU sets (never the load average, which counts our own previous run) and
     * agreed by every rank, so that no pair mixes a spinning and a yielding rank */
    double load = 0;  /* recorded for the reader, not used */
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) { if (fscanf(la, "%lf", &load) != 1) load = 0; fclose(la); }
    int fits = c->local_ranks <= c->host_cpus[c->rank] && c->machine_ranks[c->rank] <= c->machine_cpus[c->rank];
    int all_fit = 0;
    MPI_CHECK(MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    int spin = c->o.yield_mode == FB_YIELD_OFF || (c->o.yield_mode == FB_YIELD_AUTO && all_fit);
    fb_set_yield(spin);
    MPI_CHECK(MPI_Allgather(&spin, 1, MPI_INT, c->spin, 1, MPI_INT, MPI_COMM_WORLD));
    header(c, argc, argv, load);

    for (int i = 0; i < c->o.ntests && !st; i++) {
        const fb_test *t = find(c->o.tests[i]);
        c->test = t->name;
        double t0 = MPI_Wtime();
        fb_emit(c, "{\"type\":\"test\",\"test\":\"%s\"}", t->name);
        fb_progress(c, "start");
        MPI_Barrier(MPI_COMM_WORLD);
        st = t->fn(c);
        if (!st) fb_emit(c, "{\"type\":\"test_end\",\"test\":\"%s\",\"elapsed\":%.6f}", t->name, MPI_Wtime() - t0);
    }
    c->test = NULL;
    return finish(c, st);
}
