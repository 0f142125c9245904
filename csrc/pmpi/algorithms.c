/* Collectives as the point-to-point messages of one usual algorithm each
 * (FS_COLLECTIVE_ALGORITHMS names them; the wrappers are in coll.c).
 * Intercommunicator collectives are not counted. */
#include "fabscope_pmpi.h"

#include <stdlib.h>

int fs_comm_size(MPI_Comm comm, int *rank)
{
    int inter = 0, size = 0;
    if (comm == MPI_COMM_NULL) return 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, rank);
    return size;
}

static void send_bytes(MPI_Comm comm, int peer, double bytes)
{
    fs_send_world(fs_world_of(comm, peer), bytes, 1);
}

/* binomial tree rooted at root: each rank forwards the whole message to its children */
void fs_bcast(MPI_Comm comm, int root, double bytes)
{
    int me, p = fs_comm_size(comm, &me), vr, mask = 1;
    if (p < 2) return;
    vr = (me - root + p) % p;
    while (mask < p && !(vr & mask)) mask <<= 1;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p) send_bytes(comm, (vr + mask + root) % p, bytes);
}

/* binomial tree towards root: every other rank sends its (partial) result to its parent once */
void fs_reduce(MPI_Comm comm, int root, double bytes)
{
    int me, p = fs_comm_size(comm, &me), vr;
    if (p < 2) return;
    vr = (me - root + p) % p;
    if (vr) send_bytes(comm, ((vr - (vr & -vr)) + root) % p, bytes);
}

/* ring: a reduce-scatter then an allgather of p chunks, each step one chunk to rank+1.
 * Rank r sends every chunk but (r+1) in the first phase and every chunk but (r+2) in the second. */
void fs_allreduce(MPI_Comm comm, MPI_Count count, MPI_Datatype type)
{
    int me, p = fs_comm_size(comm, &me), s, c;
    double elem;
    if (p < 2 || count <= 0) return;
    elem = fs_bytes(1, type);
    for (s = 0; s < 2 * (p - 1); s++) {
        c = s < p - 1 ? ((me - s) % p + p) % p : ((me + 1 - (s - (p - 1))) % p + p) % p;
        send_bytes(comm, (me + 1) % p, elem * (double)(count / p + (c < count % p)));
    }
}

/* linear: every rank but the root sends its block straight to the root */
void fs_gather(MPI_Comm comm, int root, double bytes)
{
    int me, p = fs_comm_size(comm, &me);
    if (p >= 2 && me != root) send_bytes(comm, root, bytes);
}

/* linear: the root sends block i straight to rank i */
void fs_scatter(MPI_Comm comm, int root, const double *bytes_to)
{
    int me, p = fs_comm_size(comm, &me), i;
    if (p < 2 || me != root) return;
    for (i = 0; i < p; i++)
        if (i != me) send_bytes(comm, i, bytes_to[i]);
}

/* ring: in step s rank r passes the block of rank r-s to rank r+1 (every block but r+1's) */
void fs_allgather(MPI_Comm comm, const double *block)
{
    int me, p = fs_comm_size(comm, &me), s;
    for (s = 0; p >= 2 && s < p - 1; s++)
        send_bytes(comm, (me + 1) % p, block[((me - s) % p + p) % p]);
}

/* pairwise exchange: rank r sends its block for i straight to i */
void fs_alltoall(MPI_Comm comm, const double *bytes_to)
{
    int me, p = fs_comm_size(comm, &me), i;
    for (i = 0; p >= 2 && i < p; i++)
        if (i != me) send_bytes(comm, i, bytes_to[i]);
}

/* chain (Scan, Exscan): rank r sends its running result to r+1 */
void fs_chain(MPI_Comm comm, double bytes)
{
    int me, p = fs_comm_size(comm, &me);
    if (p >= 2 && me < p - 1) send_bytes(comm, me + 1, bytes);
}

int fs_out_neighbors(MPI_Comm comm, int **out)
{
    int kind = MPI_UNDEFINED, n = 0, me, d, ndims, indeg, outdeg, weighted, *src, *sw, *dw;
    *out = NULL;
    if (comm == MPI_COMM_NULL) return 0;
    PMPI_Topo_test(comm, &kind);
    PMPI_Comm_rank(comm, &me);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &ndims);
        *out = malloc(sizeof(int) * 2 * (size_t)(ndims ? ndims : 1));
        for (d = 0; d < ndims; d++) {     /* order: the -1 then the +1 neighbour of each dimension */
            PMPI_Cart_shift(comm, d, 1, &(*out)[2 * d], &(*out)[2 * d + 1]);
        }
        n = 2 * ndims;
    } else if (kind == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, me, &n);
        *out = malloc(sizeof(int) * (size_t)(n ? n : 1));
        PMPI_Graph_neighbors(comm, me, n, *out);
    } else if (kind == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
        src = malloc(sizeof(int) * (size_t)(indeg + 1));
        sw = malloc(sizeof(int) * (size_t)(indeg + 1));
        dw = malloc(sizeof(int) * (size_t)(outdeg + 1));
        *out = malloc(sizeof(int) * (size_t)(outdeg + 1));
        PMPI_Dist_graph_neighbors(comm, indeg, src, sw, outdeg, *out, dw);
        free(src);
        free(sw);
        free(dw);
        n = outdeg;
    }
    return n;
}
