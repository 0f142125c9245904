/* A known MPI program for the PMPI library's test: 4 ranks.
 * rank r sends 100*(r+1) ints to (r+1)%4 with MPI_Send (4 bytes each), twice,
 * one Isend of 10 doubles to (r+2)%4, and an Alltoall of 3 chars. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, i, buf[1000] = {0}, rbuf[1000];
    double d[10] = {0}, rd[10];
    char a[12] = {0}, ra[12];
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 0; i < 2; i++) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        if (rank % 2 == 0) {
            MPI_Send(buf, 100 * (rank + 1), MPI_INT, to, 0, MPI_COMM_WORLD);
            MPI_Recv(rbuf, 1000, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, 1000, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 100 * (rank + 1), MPI_INT, to, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Isend(d, 10, MPI_DOUBLE, (rank + 2) % size, 1, MPI_COMM_WORLD, &req);
    MPI_Recv(rd, 10, MPI_DOUBLE, (rank + 2) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Alltoall(a, 3, MPI_CHAR, ra, 3, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
