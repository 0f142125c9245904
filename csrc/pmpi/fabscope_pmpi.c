/* fabscope PMPI profiling library: counts the bytes and messages every rank
 * sends to every peer, and writes them at MPI_Finalize.
 *
 * Link it before MPI (mpicc app.c -L. -lfabscope_pmpi) or preload it:
 *     LD_PRELOAD=libfabscope_pmpi.so mpiexec -n 4 ./app
 * Output (rank 0 writes, after gathering every row):
 *     $FABSCOPE_PMPI_OUT (default fabscope-comm.mtx): bytes, Matrix Market
 *     the same name with .msgs.mtx: message counts
 * Row = sender, column = receiver, both ranks of MPI_COMM_WORLD (1-based, as
 * Matrix Market counts).  Point-to-point sends are counted, and the
 * all-to-all collectives as the pairwise messages they are made of.
 * Read with: fabscope map --comm fabscope-comm.mtx ...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int world_size = 0, world_rank = 0;
static double *sent_bytes = NULL, *sent_msgs = NULL;
static MPI_Group world_group = MPI_GROUP_NULL;

static void setup(void)
{
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    sent_bytes = calloc((size_t)world_size, sizeof(double));
    sent_msgs = calloc((size_t)world_size, sizeof(double));
}

/* world rank of rank `peer` of `comm`, or -1 (MPI_PROC_NULL, intercommunicators) */
static int world_of(MPI_Comm comm, int peer)
{
    int inter = 0, out = MPI_UNDEFINED;
    MPI_Group g;
    if (peer == MPI_PROC_NULL || peer < 0 || !sent_bytes) return -1;
    if (comm == MPI_COMM_WORLD) return peer;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) PMPI_Comm_remote_group(comm, &g); else PMPI_Comm_group(comm, &g);
    PMPI_Group_translate_ranks(g, 1, &peer, world_group, &out);
    PMPI_Group_free(&g);
    return out == MPI_UNDEFINED ? -1 : out;
}

static void count(MPI_Comm comm, int peer, int n, MPI_Datatype type)
{
    int w = world_of(comm, peer), size = 0;
    if (w < 0) return;
    PMPI_Type_size(type, &size);
    sent_bytes[w] += (double)n * size;
    sent_msgs[w] += 1.0;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    setup();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    setup();
    return rc;
}

#define SEND_WRAPPER(NAME)                                                               \
    int MPI_##NAME(const void *buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) \
    {                                                                                    \
        count(c, dest, n, t);                                                            \
        return PMPI_##NAME(buf, n, t, dest, tag, c);                                     \
    }
SEND_WRAPPER(Send)
SEND_WRAPPER(Ssend)
SEND_WRAPPER(Rsend)
SEND_WRAPPER(Bsend)

#define ISEND_WRAPPER(NAME)                                                                  \
    int MPI_##NAME(const void *buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,   \
                   MPI_Request *req)                                                         \
    {                                                                                        \
        count(c, dest, n, t);                                                                \
        return PMPI_##NAME(buf, n, t, dest, tag, c, req);                                    \
    }
ISEND_WRAPPER(Isend)
ISEND_WRAPPER(Issend)
ISEND_WRAPPER(Irsend)
ISEND_WRAPPER(Ibsend)

int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int dest, int stag, void *rb, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *status)
{
    count(c, dest, sn, st);
    return PMPI_Sendrecv(sb, sn, st, dest, stag, rb, rn, rt, src, rtag, c, status);
}

int MPI_Sendrecv_replace(void *b, int n, MPI_Datatype t, int dest, int stag, int src, int rtag,
                         MPI_Comm c, MPI_Status *status)
{
    count(c, dest, n, t);
    return PMPI_Sendrecv_replace(b, n, t, dest, stag, src, rtag, c, status);
}

int MPI_Alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    int size, me, i;
    PMPI_Comm_size(c, &size);
    PMPI_Comm_rank(c, &me);
    for (i = 0; i < size; i++)
        if (i != me) count(c, i, sn, st);
    return PMPI_Alltoall(sb, sn, st, rb, rn, rt, c);
}

int MPI_Alltoallv(const void *sb, const int *sc, const int *sd, MPI_Datatype st, void *rb,
                  const int *rc, const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    int size, me, i;
    PMPI_Comm_size(c, &size);
    PMPI_Comm_rank(c, &me);
    for (i = 0; i < size; i++)
        if (i != me && sc[i] > 0) count(c, i, sc[i], st);
    return PMPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, c);
}

/* write an n x n matrix as Matrix Market to path.tmp, then rename: never half a file */
static int write_matrix(const char *path, const double *all, const char *what)
{
    long nnz = 0, i, total = (long)world_size * world_size;
    char tmp[4096];
    FILE *fh;
    for (i = 0; i < total; i++) nnz += all[i] > 0;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    fh = fopen(tmp, "w");
    if (!fh) return -1;
    fprintf(fh, "%%%%MatrixMarket matrix coordinate real general\n");
    fprintf(fh, "%% fabscope PMPI: %s sent from row rank to column rank (MPI_COMM_WORLD, 1-based)\n", what);
    fprintf(fh, "%d %d %ld\n", world_size, world_size, nnz);
    for (i = 0; i < total; i++)
        if (all[i] > 0) fprintf(fh, "%ld %ld %.17g\n", i / world_size + 1, i % world_size + 1, all[i]);
    if (fclose(fh) != 0) { remove(tmp); return -1; }
    return rename(tmp, path);
}

int MPI_Finalize(void)
{
    double *all_b = NULL, *all_m = NULL;
    const char *out = getenv("FABSCOPE_PMPI_OUT");
    char msgs[4096];
    size_t len;
    if (!out || !*out) out = "fabscope-comm.mtx";
    if (world_rank == 0) {
        all_b = malloc(sizeof(double) * (size_t)world_size * world_size);
        all_m = malloc(sizeof(double) * (size_t)world_size * world_size);
    }
    PMPI_Gather(sent_bytes, world_size, MPI_DOUBLE, all_b, world_size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    PMPI_Gather(sent_msgs, world_size, MPI_DOUBLE, all_m, world_size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        len = strlen(out);
        if (len > 4 && strcmp(out + len - 4, ".mtx") == 0)
            snprintf(msgs, sizeof msgs, "%.*s.msgs.mtx", (int)(len - 4), out);
        else
            snprintf(msgs, sizeof msgs, "%s.msgs.mtx", out);
        if (write_matrix(out, all_b, "bytes") != 0 || write_matrix(msgs, all_m, "messages") != 0)
            fprintf(stderr, "fabscope_pmpi: cannot write %s\n", out);
        free(all_b);
        free(all_m);
    }
    free(sent_bytes);
    free(sent_msgs);
    sent_bytes = sent_msgs = NULL;
    PMPI_Group_free(&world_group);
    return PMPI_Finalize();
}
