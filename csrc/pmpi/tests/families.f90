! A known Fortran MPI program for the PMPI library's test (4 ranks):
! rank r sends 25 integers to r+1 twice with MPI_SEND, then an MPI_ALLREDUCE
! of 10 double precision values (counted as a ring) and MPI_BCAST of 8 integers from rank 0.
program families
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, st(MPI_STATUS_SIZE)
  integer :: buf(25), rbuf(25), b(8)
  double precision :: d(10), rd(10)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  buf = rank
  d = 1.0d0
  do i = 1, 2
    if (mod(rank, 2) == 0) then
      call MPI_SEND(buf, 25, MPI_INTEGER, mod(rank + 1, nprocs), 0, MPI_COMM_WORLD, ierr)
      call MPI_RECV(rbuf, 25, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), 0, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_RECV(rbuf, 25, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), 0, MPI_COMM_WORLD, st, ierr)
      call MPI_SEND(buf, 25, MPI_INTEGER, mod(rank + 1, nprocs), 0, MPI_COMM_WORLD, ierr)
    end if
  end do
  call MPI_ALLREDUCE(d, rd, 10, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_BCAST(b, 8, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
end program families
