/* fabscope PMPI profiling library: what the wrappers share.
 *
 * Every wrapper turns a call into "this rank sends B bytes to world rank W"
 * (fs_send*) or, for one-sided reads, "world rank W sends B bytes to this
 * rank" (fs_pull*), then calls the PMPI_ entry point.  Collectives are counted
 * as the messages of one named algorithm (coll.c says which); MPI_Finalize
 * gathers every rank's row and rank 0 writes the matrices (core.c).
 */
#ifndef FABSCOPE_PMPI_H
#define FABSCOPE_PMPI_H

#include <mpi.h>

/* Non-zero while a Fortran wrapper runs: the MPI library's Fortran binding
 * may call the C MPI_ entry point (MPICH) or PMPI_ directly (Open MPI); the
 * flag makes the call counted exactly once either way. */
extern int fs_in_fortran;

/* start counting (after the MPI library's init), once */
void fs_setup(void);
/* gather every rank's row and write the matrices (before the library's finalize), once */
void fs_finalize_write(void);

/* world rank of rank `peer` of `comm` (remote group for intercommunicators), or -1 */
int fs_world_of(MPI_Comm comm, int peer);
/* world rank of rank `peer` of `group`, or -1 */
int fs_world_of_group(MPI_Group group, int peer);
/* bytes of n elements of type (0 for MPI_DATATYPE_NULL) */
double fs_bytes(MPI_Count n, MPI_Datatype type);

/* this rank sends n elements of type to rank peer of comm: one message */
void fs_send(MPI_Comm comm, int peer, MPI_Count n, MPI_Datatype type);
/* the same for a world rank and a byte count; skip_empty drops 0-byte messages */
void fs_send_world(int world_peer, double bytes, int skip_empty);
/* world rank `world_peer` sends `bytes` to this rank (MPI_Get and friends) */
void fs_pull_world(int world_peer, double bytes);

/* persistent requests: remember what a Send_init made, count it at each Start */
void fs_persist_add(MPI_Request req, int world_peer, double bytes);
void fs_persist_start(MPI_Request req);
void fs_persist_free(MPI_Request req);

/* collectives, counted as these algorithms (sizes in bytes; see coll.c) */
#define FS_COLLECTIVE_ALGORITHMS                                                          \
    "Bcast binomial tree; Reduce binomial tree; Allreduce ring (reduce-scatter + allgather); " \
    "Allgather(v) ring; Gather(v) and Scatter(v) linear to/from the root; "                  \
    "Alltoall(v,w) and Reduce_scatter(_block) pairwise exchange; Scan/Exscan chain; "         \
    "Barrier none; neighbourhood collectives one message per neighbour; nonblocking as blocking"

void fs_bcast(MPI_Comm comm, int root, double bytes);
void fs_reduce(MPI_Comm comm, int root, double bytes);
void fs_allreduce(MPI_Comm comm, MPI_Count count, MPI_Datatype type);
void fs_gather(MPI_Comm comm, int root, double bytes);
void fs_scatter(MPI_Comm comm, int root, const double *bytes_to);
void fs_allgather(MPI_Comm comm, const double *block);
void fs_alltoall(MPI_Comm comm, const double *bytes_to);
void fs_chain(MPI_Comm comm, double bytes);
/* out-neighbours of this rank in comm's topology, in the order neighbourhood
 * collectives send to them (MPI_PROC_NULL kept in place); malloc'd, caller frees */
int fs_out_neighbors(MPI_Comm comm, int **out);
int fs_comm_size(MPI_Comm comm, int *rank); /* 0 for intercommunicators: not counted */

#endif
