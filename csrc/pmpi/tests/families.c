/* Known MPI programs for the PMPI library's tests, one per call family,
 * chosen by argv[1]; run with 4 ranks.  tests/mapping/test_pmpi.py holds the
 * matrix each must produce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int ibuf[4096], ibuf2[4096];
static double dbuf[4096], dbuf2[4096];

static void inplace(void)
{
    int rc[4], rd[4], i, off = 0;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ibuf, 3, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) { rc[i] = rank + i + 1; rd[i] = off; off += rc[i]; }
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ibuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, dbuf, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void rooted(void)
{
    int sc[4], sd[4], i, off = 0;
    MPI_Bcast(ibuf, 100, MPI_INT, 1, MPI_COMM_WORLD);
    MPI_Reduce(dbuf, dbuf2, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(ibuf, 7, MPI_CHAR, ibuf2, 7, MPI_CHAR, 2, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) { sc[i] = i + 1; sd[i] = off; off += sc[i]; }
    MPI_Scatterv(ibuf, sc, sd, MPI_INT, ibuf2, rank + 1, MPI_INT, 3, MPI_COMM_WORLD);
}

static void gathers(void)
{
    int rc[4], rd[4], i, off = 0;
    MPI_Allgather(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) { rc[i] = i + 1; rd[i] = off; off += rc[i]; }
    MPI_Allgatherv(ibuf, rank + 1, MPI_INT, ibuf2, rc, rd, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(ibuf, ibuf2, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(dbuf, dbuf2, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void nonblocking(void)
{
    MPI_Request r[2];
    MPI_Iallreduce(dbuf, dbuf2, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Ialltoall(ibuf, 5, MPI_INT, ibuf2, 5, MPI_INT, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
}

static void neighbors(void)
{
    int dims[1] = {4}, periods[1] = {1}, src[1], dst[1];
    MPI_Comm cart, graph;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Neighbor_alltoall(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, cart);
    src[0] = (rank + 2) % 4;
    dst[0] = (rank + 2) % 4;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph);
    MPI_Neighbor_allgather(dbuf, 3, MPI_DOUBLE, dbuf2, 3, MPI_DOUBLE, graph);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&graph);
}

static void persistent(void)
{
    MPI_Request r[2];
    int i;
    MPI_Send_init(ibuf, 50, MPI_INT, (rank + 1) % 4, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(ibuf2, 50, MPI_INT, (rank + 3) % 4, 0, MPI_COMM_WORLD, &r[1]);
    for (i = 0; i < 2; i++) { MPI_Start(&r[0]); MPI_Start(&r[1]); MPI_Waitall(2, r, MPI_STATUSES_IGNORE); }
    MPI_Startall(2, r);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

static void rma(void)
{
    MPI_Win win;
    MPI_Win_create(ibuf2, sizeof ibuf2, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(ibuf, 10, MPI_INT, (rank + 1) % 4, 0, 10, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get(ibuf, 6, MPI_INT, (rank + 2) % 4, 0, 6, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Accumulate(ibuf, 4, MPI_INT, (rank + 3) % 4, 0, 4, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
}

static void alltoallw(void)
{
    int sc[4], rc[4], sd[4], i;
    MPI_Datatype t[4];
    for (i = 0; i < size; i++) { sc[i] = i + 1; rc[i] = rank + 1; sd[i] = 4 * i * (int)sizeof(int); t[i] = MPI_INT; }
    MPI_Alltoallw(ibuf, sc, sd, t, ibuf2, rc, sd, t, MPI_COMM_WORLD);
}

static void bigcount(void)
{
#if MPI_VERSION >= 4
    MPI_Count n = 1000;
    if (rank % 2 == 0) MPI_Send_c(ibuf, n, MPI_CHAR, rank + 1, 0, MPI_COMM_WORLD);
    else MPI_Recv_c(ibuf2, n, MPI_CHAR, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce_c(dbuf, dbuf2, (MPI_Count)10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
    if (rank == 0) fprintf(stderr, "MPI %d has no large-count calls\n", MPI_VERSION);
    MPI_Abort(MPI_COMM_WORLD, 3);
#endif
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) MPI_Abort(MPI_COMM_WORLD, 2);
    if (!strcmp(what, "inplace")) inplace();
    else if (!strcmp(what, "rooted")) rooted();
    else if (!strcmp(what, "gathers")) gathers();
    else if (!strcmp(what, "nonblocking")) nonblocking();
    else if (!strcmp(what, "neighbors")) neighbors();
    else if (!strcmp(what, "persistent")) persistent();
    else if (!strcmp(what, "rma")) rma();
    else if (!strcmp(what, "alltoallw")) alltoallw();
    else if (!strcmp(what, "bigcount")) bigcount();
    else { if (rank == 0) fprintf(stderr, "unknown family %s\n", what); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Finalize();
    return 0;
}
