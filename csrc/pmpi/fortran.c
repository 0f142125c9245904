/* Fortran entry points (mpif.h and `use mpi`, gfortran's lower case with one
 * trailing underscore).  Open MPI's Fortran bindings call PMPI_ directly, so
 * the C wrappers never see a Fortran program's calls; MPICH's call the C MPI_
 * functions.  Each wrapper here counts the call, then calls the library's
 * Fortran profiling entry (pmpi_..._) with fs_in_fortran set, so a C wrapper
 * reached through the binding does not count it again.  The pmpi_ symbols are
 * weak: a C-only MPI (the mpich wheel) loads this library unchanged.
 * Not covered: `use mpi_f08` (other symbol names); Fortran MPI_IN_PLACE is
 * recognised for Alltoall/Allgather only by counting the receive side, which
 * MPI requires to equal the send side. */
#include "fabscope_pmpi.h"

#include <stdlib.h>

typedef MPI_Fint F;

#define CALL_F(expr)            \
    do {                        \
        fs_in_fortran = 1;      \
        expr;                   \
        fs_in_fortran = 0;      \
    } while (0)

extern void pmpi_init_(F *) __attribute__((weak));
extern void pmpi_init_thread_(F *, F *, F *) __attribute__((weak));
extern void pmpi_finalize_(F *) __attribute__((weak));

void mpi_init_(F *ierr)
{
    CALL_F(pmpi_init_(ierr));
    fs_setup();
}

void mpi_init_thread_(F *req, F *prov, F *ierr)
{
    CALL_F(pmpi_init_thread_(req, prov, ierr));
    fs_setup();
}

void mpi_finalize_(F *ierr)
{
    fs_finalize_write();
    CALL_F(pmpi_finalize_(ierr));
}

#define F_SEND(name)                                                                     \
    extern void p##name##_(void *, F *, F *, F *, F *, F *, F *) __attribute__((weak));  \
    void name##_(void *b, F *n, F *t, F *dest, F *tag, F *c, F *ierr)                    \
    {                                                                                    \
        fs_send(PMPI_Comm_f2c(*c), *dest, *n, PMPI_Type_f2c(*t));                        \
        CALL_F(p##name##_(b, n, t, dest, tag, c, ierr));                                 \
    }
#define F_ISEND(name)                                                                    \
    extern void p##name##_(void *, F *, F *, F *, F *, F *, F *, F *) __attribute__((weak)); \
    void name##_(void *b, F *n, F *t, F *dest, F *tag, F *c, F *req, F *ierr)            \
    {                                                                                    \
        fs_send(PMPI_Comm_f2c(*c), *dest, *n, PMPI_Type_f2c(*t));                        \
        CALL_F(p##name##_(b, n, t, dest, tag, c, req, ierr));                            \
    }
F_SEND(mpi_send)
F_SEND(mpi_ssend)
F_SEND(mpi_rsend)
F_SEND(mpi_bsend)
F_ISEND(mpi_isend)
F_ISEND(mpi_issend)
F_ISEND(mpi_irsend)
F_ISEND(mpi_ibsend)

extern void pmpi_sendrecv_(void *, F *, F *, F *, F *, void *, F *, F *, F *, F *, F *, F *, F *)
    __attribute__((weak));
void mpi_sendrecv_(void *sb, F *sn, F *st, F *dest, F *stag, void *rb, F *rn, F *rt, F *src, F *rtag,
                   F *c, F *status, F *ierr)
{
    fs_send(PMPI_Comm_f2c(*c), *dest, *sn, PMPI_Type_f2c(*st));
    CALL_F(pmpi_sendrecv_(sb, sn, st, dest, stag, rb, rn, rt, src, rtag, c, status, ierr));
}

extern void pmpi_bcast_(void *, F *, F *, F *, F *, F *) __attribute__((weak));
void mpi_bcast_(void *b, F *n, F *t, F *root, F *c, F *ierr)
{
    fs_bcast(PMPI_Comm_f2c(*c), *root, fs_bytes(*n, PMPI_Type_f2c(*t)));
    CALL_F(pmpi_bcast_(b, n, t, root, c, ierr));
}

extern void pmpi_reduce_(void *, void *, F *, F *, F *, F *, F *, F *) __attribute__((weak));
void mpi_reduce_(void *sb, void *rb, F *n, F *t, F *op, F *root, F *c, F *ierr)
{
    fs_reduce(PMPI_Comm_f2c(*c), *root, fs_bytes(*n, PMPI_Type_f2c(*t)));
    CALL_F(pmpi_reduce_(sb, rb, n, t, op, root, c, ierr));
}

extern void pmpi_allreduce_(void *, void *, F *, F *, F *, F *, F *) __attribute__((weak));
void mpi_allreduce_(void *sb, void *rb, F *n, F *t, F *op, F *c, F *ierr)
{
    fs_allreduce(PMPI_Comm_f2c(*c), *n, PMPI_Type_f2c(*t));
    CALL_F(pmpi_allreduce_(sb, rb, n, t, op, c, ierr));
}

static double *same_for_all(MPI_Comm comm, double bytes)
{
    int me, p = fs_comm_size(comm, &me), i;
    double *b = p ? malloc(sizeof(double) * (size_t)p) : NULL;
    for (i = 0; b && i < p; i++) b[i] = bytes;
    return b;
}

extern void pmpi_alltoall_(void *, F *, F *, void *, F *, F *, F *, F *) __attribute__((weak));
void mpi_alltoall_(void *sb, F *sn, F *st, void *rb, F *rn, F *rt, F *c, F *ierr)
{
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    double *b = same_for_all(comm, fs_bytes(*rn, PMPI_Type_f2c(*rt)));
    if (b) fs_alltoall(comm, b);
    free(b);
    CALL_F(pmpi_alltoall_(sb, sn, st, rb, rn, rt, c, ierr));
}

extern void pmpi_allgather_(void *, F *, F *, void *, F *, F *, F *, F *) __attribute__((weak));
void mpi_allgather_(void *sb, F *sn, F *st, void *rb, F *rn, F *rt, F *c, F *ierr)
{
    MPI_Comm comm = PMPI_Comm_f2c(*c);
    double *b = same_for_all(comm, fs_bytes(*rn, PMPI_Type_f2c(*rt)));
    if (b) fs_allgather(comm, b);
    free(b);
    CALL_F(pmpi_allgather_(sb, sn, st, rb, rn, rt, c, ierr));
}
