/* Collective wrappers: blocking, nonblocking (I...), neighbourhood, and the
 * MPI-4 large-count (_c) forms, each counted by algorithms.c.
 *
 * One macro per collective writes all its forms: CNT/DSP are the count and
 * displacement types (int/int, or MPI_Count/MPI_Aint for _c), RQP/RQA add the
 * request parameter and argument of the nonblocking forms.  With MPI_IN_PLACE
 * the send arguments are not significant: the receive side says what moves
 * (MPI requires the bytes sent and received between two ranks to match). */
#include "fabscope_pmpi.h"

#include <stdlib.h>

#define BLK_P
#define BLK_A
#define NB_P , MPI_Request *request
#define NB_A , request

/* a per-rank byte array from counts and a type (or a type per rank) */
static double *per_rank_c(MPI_Comm comm, const MPI_Count *cnt_c, const int *cnt_i,
                          const MPI_Datatype *types, MPI_Datatype type)
{
    int me, p = fs_comm_size(comm, &me), i;
    double *b = p ? malloc(sizeof(double) * (size_t)p) : NULL;
    for (i = 0; b && i < p; i++)
        b[i] = fs_bytes(cnt_c ? cnt_c[i] : cnt_i[i], types ? types[i] : type);
    return b;
}
#define PER_RANK(comm, counts, types, type) \
    (sizeof(*(counts)) == sizeof(int)     \
         ? per_rank_c(comm, NULL, (const int *)(const void *)(counts), types, type) \
         : per_rank_c(comm, (const MPI_Count *)(const void *)(counts), NULL, types, type))

static double *same_for_all(MPI_Comm comm, double bytes)
{
    int me, p = fs_comm_size(comm, &me), i;
    double *b = p ? malloc(sizeof(double) * (size_t)p) : NULL;
    for (i = 0; b && i < p; i++) b[i] = bytes;
    return b;
}

#define BCAST(NAME, CNT, RQP, RQA)                                                          \
    int MPI_##NAME(void *buf, CNT n, MPI_Datatype t, int root, MPI_Comm c RQP)              \
    {                                                                                       \
        fs_bcast(c, root, fs_bytes(n, t));                                                  \
        return PMPI_##NAME(buf, n, t, root, c RQA);                                         \
    }

#define REDUCE(NAME, CNT, RQP, RQA)                                                         \
    int MPI_##NAME(const void *sb, void *rb, CNT n, MPI_Datatype t, MPI_Op op, int root,    \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        fs_reduce(c, root, fs_bytes(n, t));                                                 \
        return PMPI_##NAME(sb, rb, n, t, op, root, c RQA);                                  \
    }

#define ALLREDUCE(NAME, CNT, RQP, RQA)                                                      \
    int MPI_##NAME(const void *sb, void *rb, CNT n, MPI_Datatype t, MPI_Op op, MPI_Comm c RQP) \
    {                                                                                       \
        fs_allreduce(c, n, t);                                                              \
        return PMPI_##NAME(sb, rb, n, t, op, c RQA);                                        \
    }

#define SCAN(NAME, CNT, RQP, RQA)                                                           \
    int MPI_##NAME(const void *sb, void *rb, CNT n, MPI_Datatype t, MPI_Op op, MPI_Comm c RQP) \
    {                                                                                       \
        fs_chain(c, fs_bytes(n, t));                                                        \
        return PMPI_##NAME(sb, rb, n, t, op, c RQA);                                        \
    }

#define GATHER(NAME, CNT, RQP, RQA)                                                         \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   int root, MPI_Comm c RQP)                                                \
    {                                                                                       \
        if (sb != MPI_IN_PLACE) fs_gather(c, root, fs_bytes(sn, st));                       \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, root, c RQA);                            \
    }

#define GATHERV(NAME, CNT, DSP, RQP, RQA)                                                   \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, const CNT rn[],       \
                   const DSP rd[], MPI_Datatype rt, int root, MPI_Comm c RQP)               \
    {                                                                                       \
        if (sb != MPI_IN_PLACE) fs_gather(c, root, fs_bytes(sn, st));                       \
        return PMPI_##NAME(sb, sn, st, rb, rn, rd, rt, root, c RQA);                        \
    }

#define SCATTER(NAME, CNT, RQP, RQA)                                                        \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   int root, MPI_Comm c RQP)                                                \
    {                                                                                       \
        int me;                                                                             \
        if (fs_comm_size(c, &me) && me == root) {                                           \
            double *b = same_for_all(c, fs_bytes(sn, st));                                  \
            if (b) fs_scatter(c, root, b);                                                  \
            free(b);                                                                        \
        }                                                                                   \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, root, c RQA);                            \
    }

#define SCATTERV(NAME, CNT, DSP, RQP, RQA)                                                  \
    int MPI_##NAME(const void *sb, const CNT sn[], const DSP sd[], MPI_Datatype st, void *rb, \
                   CNT rn, MPI_Datatype rt, int root, MPI_Comm c RQP)                       \
    {                                                                                       \
        int me;                                                                             \
        if (fs_comm_size(c, &me) && me == root) {                                           \
            double *b = PER_RANK(c, sn, NULL, st);                                          \
            if (b) fs_scatter(c, root, b);                                                  \
            free(b);                                                                        \
        }                                                                                   \
        return PMPI_##NAME(sb, sn, sd, st, rb, rn, rt, root, c RQA);                        \
    }

#define ALLGATHER(NAME, CNT, RQP, RQA)                                                      \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        double *b = same_for_all(c, fs_bytes(rn, rt));                                      \
        if (b) fs_allgather(c, b);                                                          \
        free(b);                                                                            \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, c RQA);                                  \
    }

#define ALLGATHERV(NAME, CNT, DSP, RQP, RQA)                                                \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, const CNT rn[],       \
                   const DSP rd[], MPI_Datatype rt, MPI_Comm c RQP)                         \
    {                                                                                       \
        double *b = PER_RANK(c, rn, NULL, rt);                                              \
        if (b) fs_allgather(c, b);                                                          \
        free(b);                                                                            \
        return PMPI_##NAME(sb, sn, st, rb, rn, rd, rt, c RQA);                              \
    }

#define ALLTOALL(NAME, CNT, RQP, RQA)                                                       \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        double *b = same_for_all(c, sb == MPI_IN_PLACE ? fs_bytes(rn, rt) : fs_bytes(sn, st)); \
        if (b) fs_alltoall(c, b);                                                           \
        free(b);                                                                            \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, c RQA);                                  \
    }

#define ALLTOALLV(NAME, CNT, DSP, RQP, RQA)                                                 \
    int MPI_##NAME(const void *sb, const CNT sn[], const DSP sd[], MPI_Datatype st, void *rb, \
                   const CNT rn[], const DSP rd[], MPI_Datatype rt, MPI_Comm c RQP)         \
    {                                                                                       \
        double *b = sb == MPI_IN_PLACE ? PER_RANK(c, rn, NULL, rt) : PER_RANK(c, sn, NULL, st); \
        if (b) fs_alltoall(c, b);                                                           \
        free(b);                                                                            \
        return PMPI_##NAME(sb, sn, sd, st, rb, rn, rd, rt, c RQA);                          \
    }

#define ALLTOALLW(NAME, CNT, DSP, RQP, RQA)                                                 \
    int MPI_##NAME(const void *sb, const CNT sn[], const DSP sd[], const MPI_Datatype st[],  \
                   void *rb, const CNT rn[], const DSP rd[], const MPI_Datatype rt[],        \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        double *b = sb == MPI_IN_PLACE ? PER_RANK(c, rn, rt, MPI_DATATYPE_NULL)             \
                                       : PER_RANK(c, sn, st, MPI_DATATYPE_NULL);            \
        if (b) fs_alltoall(c, b);                                                           \
        free(b);                                                                            \
        return PMPI_##NAME(sb, sn, sd, st, rb, rn, rd, rt, c RQA);                          \
    }

/* pairwise: block i of the reduced vector goes to rank i */
#define REDUCE_SCATTER(NAME, CNT, RQP, RQA)                                                 \
    int MPI_##NAME(const void *sb, void *rb, const CNT rn[], MPI_Datatype t, MPI_Op op,     \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        double *b = PER_RANK(c, rn, NULL, t);                                               \
        if (b) fs_alltoall(c, b);                                                           \
        free(b);                                                                            \
        return PMPI_##NAME(sb, rb, rn, t, op, c RQA);                                       \
    }

#define REDUCE_SCATTER_BLOCK(NAME, CNT, RQP, RQA)                                           \
    int MPI_##NAME(const void *sb, void *rb, CNT rn, MPI_Datatype t, MPI_Op op, MPI_Comm c RQP) \
    {                                                                                       \
        double *b = same_for_all(c, fs_bytes(rn, t));                                       \
        if (b) fs_alltoall(c, b);                                                           \
        free(b);                                                                            \
        return PMPI_##NAME(sb, rb, rn, t, op, c RQA);                                       \
    }

/* neighbourhood collectives: block k to out-neighbour k (allgather: the same block to each) */
static void neighbors_same(MPI_Comm c, double bytes)
{
    int *nb, n = fs_out_neighbors(c, &nb), k;
    for (k = 0; k < n; k++)
        if (nb[k] != MPI_PROC_NULL) fs_send_world(fs_world_of(c, nb[k]), bytes, 1);
    free(nb);
}

static void neighbors_each(MPI_Comm c, const MPI_Count *cnt_c, const int *cnt_i,
                           const MPI_Datatype *types, MPI_Datatype type)
{
    int *nb, n = fs_out_neighbors(c, &nb), k;
    for (k = 0; k < n; k++)
        if (nb[k] != MPI_PROC_NULL)
            fs_send_world(fs_world_of(c, nb[k]),
                          fs_bytes(cnt_c ? cnt_c[k] : cnt_i[k], types ? types[k] : type), 1);
    free(nb);
}
#define NEIGHBORS_EACH(c, counts, types, type) \
    (sizeof(*(counts)) == sizeof(int)          \
         ? neighbors_each(c, NULL, (const int *)(const void *)(counts), types, type) \
         : neighbors_each(c, (const MPI_Count *)(const void *)(counts), NULL, types, type))

#define N_ALLGATHER(NAME, CNT, RQP, RQA)                                                    \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        neighbors_same(c, fs_bytes(sn, st));                                                \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, c RQA);                                  \
    }

#define N_ALLGATHERV(NAME, CNT, DSP, RQP, RQA)                                              \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, const CNT rn[],       \
                   const DSP rd[], MPI_Datatype rt, MPI_Comm c RQP)                         \
    {                                                                                       \
        neighbors_same(c, fs_bytes(sn, st));                                                \
        return PMPI_##NAME(sb, sn, st, rb, rn, rd, rt, c RQA);                              \
    }

#define N_ALLTOALL(NAME, CNT, RQP, RQA)                                                     \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, void *rb, CNT rn, MPI_Datatype rt, \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        neighbors_same(c, fs_bytes(sn, st));                                                \
        return PMPI_##NAME(sb, sn, st, rb, rn, rt, c RQA);                                  \
    }

#define N_ALLTOALLV(NAME, CNT, DSP, RQP, RQA)                                               \
    int MPI_##NAME(const void *sb, const CNT sn[], const DSP sd[], MPI_Datatype st, void *rb, \
                   const CNT rn[], const DSP rd[], MPI_Datatype rt, MPI_Comm c RQP)         \
    {                                                                                       \
        NEIGHBORS_EACH(c, sn, NULL, st);                                                    \
        return PMPI_##NAME(sb, sn, sd, st, rb, rn, rd, rt, c RQA);                          \
    }

#define N_ALLTOALLW(NAME, CNT, RQP, RQA)                                                    \
    int MPI_##NAME(const void *sb, const CNT sn[], const MPI_Aint sd[], const MPI_Datatype st[], \
                   void *rb, const CNT rn[], const MPI_Aint rd[], const MPI_Datatype rt[],   \
                   MPI_Comm c RQP)                                                          \
    {                                                                                       \
        NEIGHBORS_EACH(c, sn, st, MPI_DATATYPE_NULL);                                       \
        return PMPI_##NAME(sb, sn, sd, st, rb, rn, rd, rt, c RQA);                          \
    }

/* every form of every collective: blocking, nonblocking, and their large-count twins */
#define FORMS(M, BASE, IBASE)                   \
    M(BASE, int, BLK_P, BLK_A)                  \
    M(IBASE, int, NB_P, NB_A)
#define FORMS_V(M, BASE, IBASE)                 \
    M(BASE, int, int, BLK_P, BLK_A)             \
    M(IBASE, int, int, NB_P, NB_A)

FORMS(BCAST, Bcast, Ibcast)
FORMS(REDUCE, Reduce, Ireduce)
FORMS(ALLREDUCE, Allreduce, Iallreduce)
FORMS(SCAN, Scan, Iscan)
FORMS(SCAN, Exscan, Iexscan)
FORMS(GATHER, Gather, Igather)
FORMS_V(GATHERV, Gatherv, Igatherv)
FORMS(SCATTER, Scatter, Iscatter)
FORMS_V(SCATTERV, Scatterv, Iscatterv)
FORMS(ALLGATHER, Allgather, Iallgather)
FORMS_V(ALLGATHERV, Allgatherv, Iallgatherv)
FORMS(ALLTOALL, Alltoall, Ialltoall)
FORMS_V(ALLTOALLV, Alltoallv, Ialltoallv)
FORMS_V(ALLTOALLW, Alltoallw, Ialltoallw)
FORMS(REDUCE_SCATTER, Reduce_scatter, Ireduce_scatter)
FORMS(REDUCE_SCATTER_BLOCK, Reduce_scatter_block, Ireduce_scatter_block)
FORMS(N_ALLGATHER, Neighbor_allgather, Ineighbor_allgather)
FORMS_V(N_ALLGATHERV, Neighbor_allgatherv, Ineighbor_allgatherv)
FORMS(N_ALLTOALL, Neighbor_alltoall, Ineighbor_alltoall)
FORMS_V(N_ALLTOALLV, Neighbor_alltoallv, Ineighbor_alltoallv)
FORMS(N_ALLTOALLW, Neighbor_alltoallw, Ineighbor_alltoallw)

#if MPI_VERSION >= 4
#define FORMS_C(M, BASE, IBASE)                 \
    M(BASE##_c, MPI_Count, BLK_P, BLK_A)        \
    M(IBASE##_c, MPI_Count, NB_P, NB_A)
#define FORMS_VC(M, BASE, IBASE)                \
    M(BASE##_c, MPI_Count, MPI_Aint, BLK_P, BLK_A) \
    M(IBASE##_c, MPI_Count, MPI_Aint, NB_P, NB_A)

FORMS_C(BCAST, Bcast, Ibcast)
FORMS_C(REDUCE, Reduce, Ireduce)
FORMS_C(ALLREDUCE, Allreduce, Iallreduce)
FORMS_C(SCAN, Scan, Iscan)
FORMS_C(SCAN, Exscan, Iexscan)
FORMS_C(GATHER, Gather, Igather)
FORMS_VC(GATHERV, Gatherv, Igatherv)
FORMS_C(SCATTER, Scatter, Iscatter)
FORMS_VC(SCATTERV, Scatterv, Iscatterv)
FORMS_C(ALLGATHER, Allgather, Iallgather)
FORMS_VC(ALLGATHERV, Allgatherv, Iallgatherv)
FORMS_C(ALLTOALL, Alltoall, Ialltoall)
FORMS_VC(ALLTOALLV, Alltoallv, Ialltoallv)
FORMS_VC(ALLTOALLW, Alltoallw, Ialltoallw)
FORMS_C(REDUCE_SCATTER, Reduce_scatter, Ireduce_scatter)
FORMS_C(REDUCE_SCATTER_BLOCK, Reduce_scatter_block, Ireduce_scatter_block)
FORMS_C(N_ALLGATHER, Neighbor_allgather, Ineighbor_allgather)
FORMS_VC(N_ALLGATHERV, Neighbor_allgatherv, Ineighbor_allgatherv)
FORMS_C(N_ALLTOALL, Neighbor_alltoall, Ineighbor_alltoall)
FORMS_VC(N_ALLTOALLV, Neighbor_alltoallv, Ineighbor_alltoallv)
FORMS_C(N_ALLTOALLW, Neighbor_alltoallw, Ineighbor_alltoallw)
#endif
