/* fabscope PMPI profiling library: counts the bytes and messages every rank
 * sends to every peer, and writes them at MPI_Finalize.
 *
 * Build every .c of this folder into one library (make -C csrc/pmpi) and
 * preload it (LD_PRELOAD=libfabscope_pmpi.so mpiexec -n 4 ./app) or link it
 * before MPI.  Output (rank 0 writes, after gathering every row):
 *     $FABSCOPE_PMPI_OUT (default fabscope-comm.mtx): bytes, Matrix Market
 *     the same name with .msgs.mtx: message counts
 * Row = sender, column = receiver, both ranks of MPI_COMM_WORLD (1-based, as
 * Matrix Market counts).  A comment line names the collective algorithms
 * assumed.  Read with: fabscope map --comm fabscope-comm.mtx ...
 * MPI_Pcontrol(0) stops counting and MPI_Pcontrol(1) (or any non-zero level)
 * resumes it; counting is on from MPI_Init, so a program that never calls
 * MPI_Pcontrol is counted whole.
 */
#include "fabscope_pmpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fs_in_fortran = 0;
static int counting = 1;    /* MPI_Pcontrol's level: 0 = the program asked not to be counted */

static int world_size = 0, world_rank = 0;
/* row[k * world_size + w]: k = 0 bytes sent to w, 1 messages sent to w,
 * 2 bytes w sent to us one-sidedly (Get), 3 those messages */
static double *row = NULL;
static MPI_Group world_group = MPI_GROUP_NULL;

struct persistent { MPI_Request req; int peer; double bytes; };
static struct persistent *persist = NULL;
static int n_persist = 0, cap_persist = 0;

void fs_setup(void)
{
    if (row) return;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    row = calloc(4 * (size_t)world_size, sizeof(double));
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    fs_setup();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    fs_setup();
    return rc;
}

int fs_world_of_group(MPI_Group g, int peer)
{
    int out = MPI_UNDEFINED;
    if (peer == MPI_PROC_NULL || peer < 0 || !row) return -1;
    PMPI_Group_translate_ranks(g, 1, &peer, world_group, &out);
    return out == MPI_UNDEFINED ? -1 : out;
}

int fs_world_of(MPI_Comm comm, int peer)
{
    int inter = 0, out;
    MPI_Group g;
    if (peer == MPI_PROC_NULL || peer < 0 || !row) return -1;
    if (comm == MPI_COMM_WORLD) return peer;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) PMPI_Comm_remote_group(comm, &g); else PMPI_Comm_group(comm, &g);
    out = fs_world_of_group(g, peer);
    PMPI_Group_free(&g);
    return out;
}

double fs_bytes(MPI_Count n, MPI_Datatype type)
{
    MPI_Count size = 0;
    if (type == MPI_DATATYPE_NULL || n <= 0) return 0.0;
    PMPI_Type_size_x(type, &size);
    return (double)n * (double)size;
}

void fs_send_world(int w, double bytes, int skip_empty)
{
    if (w < 0 || !row || fs_in_fortran || !counting || (skip_empty && bytes <= 0)) return;
    row[w] += bytes;
    row[world_size + w] += 1.0;
}

void fs_send(MPI_Comm comm, int peer, MPI_Count n, MPI_Datatype type)
{
    if (fs_in_fortran) return;
    fs_send_world(fs_world_of(comm, peer), fs_bytes(n, type), 0);
}

void fs_pull_world(int w, double bytes)
{
    if (w < 0 || !row || fs_in_fortran || !counting) return;
    row[2 * world_size + w] += bytes;
    row[3 * world_size + w] += 1.0;
}

/* the standard's profiling switch: level 0 off, any other level on */
int MPI_Pcontrol(const int level, ...)
{
    counting = level != 0;
    return PMPI_Pcontrol(level);
}

/* ---- persistent requests (Send_init ... Start) ------------------------------ */
static int find_persistent(MPI_Request req)
{
    int i;
    for (i = 0; i < n_persist; i++)
        if (memcmp(&persist[i].req, &req, sizeof req) == 0) return i;
    return -1;
}

void fs_persist_add(MPI_Request req, int peer, double bytes)
{
    int i = find_persistent(req);
    if (i < 0) {
        if (n_persist == cap_persist) {
            int cap = cap_persist ? 2 * cap_persist : 16;
            struct persistent *p = realloc(persist, (size_t)cap * sizeof *p);
            if (!p) return;
            persist = p;
            cap_persist = cap;
        }
        i = n_persist++;
    }
    persist[i].req = req;
    persist[i].peer = peer;
    persist[i].bytes = bytes;
}

void fs_persist_start(MPI_Request req)
{
    int i = find_persistent(req);
    if (i >= 0) fs_send_world(persist[i].peer, persist[i].bytes, 0);
}

void fs_persist_free(MPI_Request req)
{
    int i = find_persistent(req);
    if (i >= 0) persist[i] = persist[--n_persist];
}

int MPI_Start(MPI_Request *req)
{
    fs_persist_start(*req);
    return PMPI_Start(req);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
    int i;
    for (i = 0; i < n; i++) fs_persist_start(reqs[i]);
    return PMPI_Startall(n, reqs);
}

int MPI_Request_free(MPI_Request *req)
{
    fs_persist_free(*req);
    return PMPI_Request_free(req);
}

/* ---- output ----------------------------------------------------------------- */
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
    fprintf(fh, "%% collectives counted as: %s\n", FS_COLLECTIVE_ALGORITHMS);
    fprintf(fh, "%d %d %ld\n", world_size, world_size, nnz);
    for (i = 0; i < total; i++)
        if (all[i] > 0) fprintf(fh, "%ld %ld %.17g\n", i / world_size + 1, i % world_size + 1, all[i]);
    if (fclose(fh) != 0) { remove(tmp); return -1; }
    return rename(tmp, path);
}

void fs_finalize_write(void)
{
    double *all = NULL, *bytes = NULL, *msgs = NULL;
    const char *out = getenv("FABSCOPE_PMPI_OUT");
    char msgs_path[4096];
    size_t len, n = (size_t)world_size, i, j;
    if (!row) return;            /* written already (or MPI_Init never seen) */
    if (!out || !*out) out = "fabscope-comm.mtx";
    if (world_rank == 0) {
        all = malloc(sizeof(double) * 4 * n * n);
        bytes = calloc(n * n, sizeof(double));
        msgs = calloc(n * n, sizeof(double));
    }
    PMPI_Gather(row, 4 * world_size, MPI_DOUBLE, all, 4 * world_size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (world_rank == 0 && all && bytes && msgs) {
        /* rank i's row: [sent bytes | sent msgs | pulled bytes | pulled msgs], each n long */
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                const double *r = all + 4 * n * i;
                bytes[i * n + j] += r[j];
                msgs[i * n + j] += r[n + j];
                bytes[j * n + i] += r[2 * n + j];   /* j sent to i by i's Get */
                msgs[j * n + i] += r[3 * n + j];
            }
        len = strlen(out);
        if (len > 4 && strcmp(out + len - 4, ".mtx") == 0)
            snprintf(msgs_path, sizeof msgs_path, "%.*s.msgs.mtx", (int)(len - 4), out);
        else
            snprintf(msgs_path, sizeof msgs_path, "%s.msgs.mtx", out);
        if (write_matrix(out, bytes, "bytes") != 0 || write_matrix(msgs_path, msgs, "messages") != 0)
            fprintf(stderr, "fabscope_pmpi: cannot write %s\n", out);
    }
    free(all);
    free(bytes);
    free(msgs);
    free(row);
    free(persist);
    row = NULL;
    persist = NULL;
    n_persist = cap_persist = 0;
    PMPI_Group_free(&world_group);
}

int MPI_Finalize(void)
{
    fs_finalize_write();
    return PMPI_Finalize();
}
