/* fabscope-bench: options, timing, statistics, JSON output, error agreement. */
#define _GNU_SOURCE
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- sizes ------------------------------------------------------------ */
int fb_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') return -1;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return -1;
    double mult = 1;
    if (*end) {
        char u[8] = {0};
        size_t n = strlen(end);
        if (n >= sizeof u) return -1;
        for (size_t i = 0; i < n; i++) u[i] = (char)tolower((unsigned char)end[i]);
        if (!strcmp(u, "b")) mult = 1;
        /* as fabscope.units.parse_size: KiB/MiB/GiB binary, k/M/G and kB/MB/GB decimal */
        else if (!strcmp(u, "kib")) mult = 1024.0;
        else if (!strcmp(u, "mib")) mult = 1048576.0;
        else if (!strcmp(u, "gib")) mult = 1073741824.0;
        else if (!strcmp(u, "k") || !strcmp(u, "kb")) mult = 1e3;
        else if (!strcmp(u, "m") || !strcmp(u, "mb")) mult = 1e6;
        else if (!strcmp(u, "g") || !strcmp(u, "gb")) mult = 1e9;
        else return -1;
    }
    double b = v * mult;
    if (b != floor(b) || b > 1e15) return -1;
    *out = (size_t)b;
    return 0;
}

void fb_usage(FILE *fh)
{
    fputs("usage: fabscope-bench [options] TEST[,TEST...]\n"
          "tests: pingpong bw bibw mbw multi-lat random-pairs leaf-offset leaf-pairs\n"
          "       all-pairs hops random-msg bucket-brigade ring random-ring alltoall\n"
          "       allreduce stream halo2d halo3d fft-transpose allreduce-loop\n"
          "       suite (= the default set)\n"
          "options: --size S --min-size S --max-size S --iterations N --warmup N\n"
          "         --window W --seed N --rounds N --offset K --leaf-size L --hops N\n"
          "         --dims AxBxC [--mesh] --topo FILE --per-rank --validate\n"
          "         --out FILE [--append] --progress --yield auto|on|off --stream-n N\n"
          "         --periodic yes|no --compute SECONDS (application kernels)\n"
          "         --list-pairs N (print the random schedules for N ranks and exit, no MPI)\n"
          "sizes: 8, 64KiB, 1MiB (binary), 4M, 1MB (decimal)\n", fh);
}

static int need(int i, int argc, char **argv, char *err, size_t n)
{
    if (i + 1 >= argc) { snprintf(err, n, "option %s needs a value", argv[i]); return -1; }
    return 0;
}

static int parse_long(const char *s, long lo, long *out)
{
    char *end; errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo) return -1;
    *out = v;
    return 0;
}

int fb_parse_options(int argc, char **argv, fb_opts *o, char *err, size_t n)
{
    memset(o, 0, sizeof *o);
    o->iterations = o->warmup = -1;
    o->window = 64; o->seed = 1; o->offset = 1; o->hops = 1; o->leaf_size = 16;
    o->rounds = 1; o->yield_mode = FB_YIELD_AUTO; o->stream_n = 1L << 22;
    o->periodic = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        size_t sz;
#define SIZEOPT(name, field, flag) if (!strcmp(a, name)) { if (need(i, argc, argv, err, n)) return FB_ERR_USAGE; \
        if (fb_parse_size(argv[++i], &sz)) { snprintf(err, n, "%s: cannot read size '%s' (try 8, 64KiB, 1MiB)", name, argv[i]); return FB_ERR_USAGE; } \
        o->field = sz; o->flag = 1; continue; }
#define LONGOPT(name, field, lo) if (!strcmp(a, name)) { if (need(i, argc, argv, err, n)) return FB_ERR_USAGE; \
        if (parse_long(argv[++i], lo, &v)) { snprintf(err, n, "%s: expected an integer >= %ld, got '%s'", name, (long)(lo), argv[i]); return FB_ERR_USAGE; } \
        o->field = v; continue; }
#define STROPT(name, field) if (!strcmp(a, name)) { if (need(i, argc, argv, err, n)) return FB_ERR_USAGE; \
        snprintf(o->field, sizeof o->field, "%s", argv[++i]); continue; }
#define FLAG(name, field) if (!strcmp(a, name)) { o->field = 1; continue; }
        SIZEOPT("--size", size, size_set)
        SIZEOPT("--min-size", min_size, min_set)
        SIZEOPT("--max-size", max_size, max_set)
        LONGOPT("--iterations", iterations, 1)
        LONGOPT("--warmup", warmup, 0)
        LONGOPT("--window", window, 1)
        LONGOPT("--seed", seed, 0)
        LONGOPT("--offset", offset, 1)
        LONGOPT("--leaf-size", leaf_size, 1)
        LONGOPT("--hops", hops, 0)
        LONGOPT("--rounds", rounds, 1)
        LONGOPT("--stream-n", stream_n, 1000)
        STROPT("--out", out)
        STROPT("--topo", topo)
        FLAG("--validate", validate)
        FLAG("--progress", progress)
        FLAG("--append", append)
        FLAG("--per-rank", per_rank)
        FLAG("--mesh", mesh)
        FLAG("--check-args", check_only)
        LONGOPT("--list-pairs", list_ranks, 1)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return FB_HELP;
        if (!strcmp(a, "--yield")) {
            if (need(i, argc, argv, err, n)) return FB_ERR_USAGE;
            const char *y = argv[++i];
            if (!strcmp(y, "auto")) o->yield_mode = FB_YIELD_AUTO;
            else if (!strcmp(y, "on")) o->yield_mode = FB_YIELD_ON;
            else if (!strcmp(y, "off")) o->yield_mode = FB_YIELD_OFF;
            else { snprintf(err, n, "--yield: expected auto, on or off, got '%s'", y); return FB_ERR_USAGE; }
            continue;
        }
        if (!strcmp(a, "--periodic")) {
            if (need(i, argc, argv, err, n)) return FB_ERR_USAGE;
            const char *y = argv[++i];
            if (!strcmp(y, "yes")) o->periodic = 1;
            else if (!strcmp(y, "no")) o->periodic = 0;
            else { snprintf(err, n, "--periodic: expected yes or no, got '%s'", y); return FB_ERR_USAGE; }
            continue;
        }
        if (!strcmp(a, "--compute")) {
            if (need(i, argc, argv, err, n)) return FB_ERR_USAGE;
            char *end;
            errno = 0;
            double x = strtod(argv[++i], &end);
            /* busy seconds per iteration: finite, not negative, at most an hour */
            if (errno || end == argv[i] || *end || !(x >= 0 && x <= 3600)) {
                snprintf(err, n, "--compute: expected seconds between 0 and 3600, got '%s'", argv[i]);
                return FB_ERR_USAGE;
            }
            o->compute = x;
            continue;
        }
        if (!strcmp(a, "--dims")) {
            if (need(i, argc, argv, err, n)) return FB_ERR_USAGE;
            char buf[128], *save = NULL;
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            o->ndims = 0;
            for (char *t = strtok_r(buf, "x,", &save); t; t = strtok_r(NULL, "x,", &save)) {
                if (o->ndims == FB_MAX_DIMS || parse_long(t, 1, &v) || v > (1L << 24)) {   /* stored as int */
                    snprintf(err, n, "--dims: expected up to %d positive integers (at most 16777216) like 8x8x16, "
                             "got '%s'", FB_MAX_DIMS, argv[i]);
                    return FB_ERR_USAGE;
                }
                o->dims[o->ndims++] = (int)v;
            }
            continue;
        }
        if (a[0] == '-') { snprintf(err, n, "unknown option '%s'", a); return FB_ERR_USAGE; }
        /* a test name, or a comma-separated list */
        char *copy = strdup(a), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (o->ntests == FB_MAX_TESTS) { snprintf(err, n, "too many tests"); free(copy); return FB_ERR_USAGE; }
            o->tests[o->ntests++] = strdup(t);
        }
        free(copy);
    }
    if (o->min_set && o->max_set && o->min_size > o->max_size) {
        snprintf(err, n, "--min-size is larger than --max-size");
        return FB_ERR_USAGE;
    }
    return FB_OK;
}

/* ---- error agreement --------------------------------------------------- */
int fb_agree(fb_ctx *c, int status, const char *msg)
{
    int worst = 0;
    MPI_CHECK(MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (!worst) return FB_OK;
    /* the lowest rank that failed tells rank 0 what went wrong */
    int mine = status ? c->rank : c->size, first = 0;
    MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    char text[512] = {0};
    if (c->rank == first) snprintf(text, sizeof text, "%s", msg ? msg : "failed");
    int code = status;
    MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(text, sizeof text, MPI_CHAR, first, MPI_COMM_WORLD));
    if (c->rank == 0) {
        fprintf(stderr, "fabscope-bench: error: %s%s%s\n", c->test ? c->test : "", c->test ? ": " : "", text);
        if (c->out) {
            char js[1100];
            fb_json_str(js, sizeof js, text);
            fb_emit(c, "{\"type\":\"error\",\"test\":\"%s\",\"status\":%d,\"message\":%s}",
                    c->test ? c->test : "", code, js);
        }
    }
    return code;
}

int fb_fail(fb_ctx *c, int status, const char *fmt, ...)
{
    char msg[512] = {0};
    if (status && fmt) {
        va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    }
    return fb_agree(c, status, msg);
}

/* ---- where ranks sit ---------------------------------------------------- */
static int socket_of(int cpu)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    int s = 0;
    if (f) { if (fscanf(f, "%d", &s) != 1) s = 0; fclose(f); }
    return s;
}

static double read_cpu_mhz(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    double mhz = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "cpu MHz", 7)) { char *p = strchr(line, ':'); if (p) mhz = atof(p + 1); break; }
    fclose(f);
    return mhz;
}

/* The kernel this rank runs on: its boot_id is the same in every network or UTS namespace
 * and container of one machine, so ranks of emulated hosts that share the machine's CPUs
 * see each other; without it (not Linux), the host name stands for the machine. */
static void machine_id(char *out, size_t n, const char *host)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    out[0] = 0;
    if (f) {
        if (!fgets(out, (int)n, f)) out[0] = 0;
        fclose(f);
        out[strcspn(out, "\n")] = 0;
    }
    if (!out[0]) snprintf(out, n, "host:%s", host);
}

int fb_check_only(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--check-args") || !strcmp(argv[i], "--list-pairs")) return 1;
    return 0;
}

int fb_gather_placement(fb_ctx *c)
{
    char me[FB_HOST] = {0};
    int len = 0;
    MPI_CHECK(MPI_Get_processor_name(me, &len));
    int cpu = sched_getcpu();
    int mine[2] = {cpu < 0 ? -1 : cpu, cpu < 0 ? -1 : socket_of(cpu)};
    c->host = calloc((size_t)c->size, FB_HOST);
    c->core = calloc((size_t)c->size, sizeof(int));
    c->socket = calloc((size_t)c->size, sizeof(int));
    c->node = calloc((size_t)c->size, sizeof(int));
    int *both = calloc((size_t)c->size * 2, sizeof(int));
    if (!c->host || !c->core || !c->socket || !c->node || !both) return FB_ERR_RUNTIME;
    MPI_CHECK(MPI_Allgather(me, FB_HOST, MPI_CHAR, c->host, FB_HOST, MPI_CHAR, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < c->size; r++) { c->core[r] = both[2 * r]; c->socket[r] = both[2 * r + 1]; }
    free(both);
    c->nnodes = 0;
    for (int r = 0; r < c->size; r++) {
        c->node[r] = -1;
        for (int q = 0; q < r; q++)
            if (!strcmp(c->host[q], c->host[r])) { c->node[r] = c->node[q]; break; }
        if (c->node[r] < 0) c->node[r] = c->nnodes++;
    }
    c->local_ranks = 0;
    for (int r = 0; r < c->size; r++) c->local_ranks += c->node[r] == c->node[c->rank];
    /* the CPUs this job may use on each host: the union of its ranks' affinity sets
     * (a Slurm/PBS CPU set, taskset, or the launcher's binding), not the online cores */
    cpu_set_t own, *all = calloc((size_t)c->size, sizeof(cpu_set_t));
    int me2[2];
    c->cpus = calloc((size_t)c->size, sizeof(int));
    c->host_cpus = calloc((size_t)c->size, sizeof(int));
    c->pid = calloc((size_t)c->size, sizeof(int));
    c->spin = calloc((size_t)c->size, sizeof(int));
    int *pairs = calloc((size_t)c->size * 2, sizeof(int));
    if (!all || !c->cpus || !c->host_cpus || !c->pid || !c->spin || !pairs) return FB_ERR_RUNTIME;
    CPU_ZERO(&own);
    if (sched_getaffinity(0, sizeof own, &own)) CPU_SET(cpu < 0 ? 0 : cpu, &own);
    me2[0] = CPU_COUNT(&own);
    me2[1] = (int)getpid();
    MPI_CHECK(MPI_Allgather(&own, (int)sizeof own, MPI_BYTE, all, (int)sizeof own, MPI_BYTE, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Allgather(me2, 2, MPI_INT, pairs, 2, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < c->size; r++) { c->cpus[r] = pairs[2 * r]; c->pid[r] = pairs[2 * r + 1]; }
    for (int r = 0; r < c->size; r++) {
        cpu_set_t u;
        CPU_ZERO(&u);
        for (int q = 0; q < c->size; q++) if (c->node[q] == c->node[r]) CPU_OR(&u, &u, &all[q]);
        c->host_cpus[r] = CPU_COUNT(&u);
    }
    /* the same over the machine: namespaces of one kernel share its CPUs whatever their host names */
    char (*mid)[FB_HOST] = calloc((size_t)c->size, FB_HOST), myid[FB_HOST];
    c->machine_ranks = calloc((size_t)c->size, sizeof(int));
    c->machine_cpus = calloc((size_t)c->size, sizeof(int));
    if (!mid || !c->machine_ranks || !c->machine_cpus) return FB_ERR_RUNTIME;
    machine_id(myid, sizeof myid, me);
    MPI_CHECK(MPI_Allgather(myid, FB_HOST, MPI_CHAR, mid, FB_HOST, MPI_CHAR, MPI_COMM_WORLD));
    for (int r = 0; r < c->size; r++) {
        cpu_set_t u;
        CPU_ZERO(&u);
        for (int q = 0; q < c->size; q++)
            if (!strcmp(mid[q], mid[r])) { CPU_OR(&u, &u, &all[q]); c->machine_ranks[r]++; }
        c->machine_cpus[r] = CPU_COUNT(&u);
    }
    free(mid);
    free(all);
    free(pairs);
    c->online_cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    c->cpu_mhz = read_cpu_mhz();
    return FB_OK;
}

int fb_leaders(const fb_ctx *c, int *ranks)
{
    int n = 0;
    for (int r = 0; r < c->size; r++) {
        if (c->o.per_rank) { ranks[n++] = r; continue; }
        int first = 1;
        for (int q = 0; q < n; q++) if (c->node[ranks[q]] == c->node[r]) { first = 0; break; }
        if (first) ranks[n++] = r;
    }
    return n;
}

/* ---- buffers --------------------------------------------------------------- */
void *fb_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1)) return NULL;
    memset(p, 1, n ? n : 1);
    return p;
}

void fb_fill(unsigned char *buf, size_t n, int src, long tag)
{
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)((size_t)src * 131u + (size_t)tag * 7u + i * 13u + 1u);
}

long fb_check(const unsigned char *buf, size_t n, int src, long tag)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += buf[i] != (unsigned char)((size_t)src * 131u + (size_t)tag * 7u + i * 13u + 1u);
    return bad;
}

/* FABSCOPE_BENCH_CORRUPT=<rank>: that rank spoils one byte it sends in a
 * validation exchange, so tests can prove that validation catches it. */
void fb_maybe_corrupt(const fb_ctx *c, unsigned char *buf, size_t n)
{
    const char *e = getenv("FABSCOPE_BENCH_CORRUPT");
    if (e && n && atoi(e) == c->rank) buf[n / 2] ^= 0x5a;
}

/* ---- iteration counts and sizes ------------------------------------------ */
long fb_iters(const fb_ctx *c, size_t bytes, long small, long large)
{
    if (c->o.iterations > 0) return c->o.iterations;
    return bytes <= 8192 ? small : large;
}

long fb_warm(const fb_ctx *c, size_t bytes, long small, long large)
{
    if (c->o.warmup >= 0) return c->o.warmup;
    return bytes <= 8192 ? small : large;
}

/* 0, 1, 2, 4, ... powers of two between min and max (max included) */
int fb_sizes(const fb_ctx *c, size_t dmin, size_t dmax, size_t *sizes, int cap)
{
    size_t lo = c->o.min_set ? c->o.min_size : dmin;
    size_t hi = c->o.max_set ? c->o.max_size : dmax;
    int n = 0;
    if (c->o.size_set) { sizes[0] = c->o.size; return 1; }
    if (lo == 0 && n < cap) sizes[n++] = 0;
    size_t s = lo ? lo : 1;
    while (s <= hi && n < cap) {
        sizes[n++] = s;
        if (s > hi / 2) break;
        s *= 2;
    }
    if (n && sizes[n - 1] != hi && hi > 0 && n < cap) sizes[n++] = hi;
    return n;
}

size_t fb_size1(const fb_ctx *c, size_t dflt) { return c->o.size_set ? c->o.size : dflt; }

/* ---- statistics ------------------------------------------------------------ */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

fb_stats fb_stat(const double *v, int n)
{
    fb_stats s = {0, 0, 0, 0};
    double *w = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int m = 0;
    for (int i = 0; i < n; i++) if (v[i] >= 0) w[m++] = v[i];
    if (m) {
        qsort(w, (size_t)m, sizeof *w, cmp_double);
        double sum = 0;
        for (int i = 0; i < m; i++) sum += w[i];
        s.min = w[0]; s.max = w[m - 1]; s.avg = sum / m;
        s.median = m % 2 ? w[m / 2] : 0.5 * (w[m / 2 - 1] + w[m / 2]);
    }
    free(w);
    return s;
}

const char *fb_sj(char *buf, size_t cap, fb_stats s)
{
    snprintf(buf, cap, "{\"min\":%.6g,\"median\":%.6g,\"max\":%.6g,\"avg\":%.6g}", s.min, s.median, s.max, s.avg);
    return buf;
}

/* ---- output ------------------------------------------------------------------ */
void fb_emit(fb_ctx *c, const char *fmt, ...)
{
    if (c->rank != 0 || !c->out) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->out, fmt, ap);
    va_end(ap);
    fputc('\n', c->out);
    /* a job killed at its wall time keeps every finished line; a full disk ends the job, named,
       rather than leaving a file cut mid-line behind an exit status of 0 */
    if (fflush(c->out) != 0 || ferror(c->out)) {
        const char *why = strerror(errno ? errno : EIO);
        fprintf(stderr, "fabscope-bench: error: cannot write the output: %s\n", why);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
}

void fb_json_str(char *dst, size_t cap, const char *s)
{
    size_t j = 0;
    if (cap < 3) return;
    dst[j++] = '"';
    for (; *s && j + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') { dst[j++] = '\\'; dst[j++] = (char)ch; }
        else if (ch == '\n') { dst[j++] = '\\'; dst[j++] = 'n'; }
        else if (ch < 0x20) j += (size_t)snprintf(dst + j, cap - j, "\\u%04x", ch);
        else dst[j++] = (char)ch;
    }
    dst[j++] = '"';
    dst[j] = 0;
}

void fb_progress(fb_ctx *c, const char *fmt, ...)
{
    if (c->rank != 0 || !c->o.progress) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "# [%7.1f s] %s: ", MPI_Wtime() - c->t_start, c->test ? c->test : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
