/* One-sided wrappers (MPI-3 RMA and the MPI-4 large-count forms).  A put or
 * an accumulate sends the origin's data to the target; a get brings the
 * target's data to the origin, so it counts as the target sending; the
 * fetching operations move data both ways. */
#include "fabscope_pmpi.h"

static int target_world(MPI_Win win, int target)
{
    MPI_Group g;
    int w;
    if (target == MPI_PROC_NULL) return -1;
    PMPI_Win_get_group(win, &g);
    w = fs_world_of_group(g, target);
    PMPI_Group_free(&g);
    return w;
}

#define PUT(NAME, CNT, RQP, RQA)                                                            \
    int MPI_##NAME(const void *ob, CNT on, MPI_Datatype ot, int target, MPI_Aint td, CNT tn, \
                   MPI_Datatype tt, MPI_Win win RQP)                                        \
    {                                                                                       \
        fs_send_world(target_world(win, target), fs_bytes(on, ot), 0);                      \
        return PMPI_##NAME(ob, on, ot, target, td, tn, tt, win RQA);                        \
    }

#define GET(NAME, CNT, RQP, RQA)                                                            \
    int MPI_##NAME(void *ob, CNT on, MPI_Datatype ot, int target, MPI_Aint td, CNT tn,      \
                   MPI_Datatype tt, MPI_Win win RQP)                                        \
    {                                                                                       \
        fs_pull_world(target_world(win, target), fs_bytes(on, ot));                         \
        return PMPI_##NAME(ob, on, ot, target, td, tn, tt, win RQA);                        \
    }

#define ACCUMULATE(NAME, CNT, RQP, RQA)                                                     \
    int MPI_##NAME(const void *ob, CNT on, MPI_Datatype ot, int target, MPI_Aint td, CNT tn, \
                   MPI_Datatype tt, MPI_Op op, MPI_Win win RQP)                             \
    {                                                                                       \
        fs_send_world(target_world(win, target), fs_bytes(on, ot), 0);                      \
        return PMPI_##NAME(ob, on, ot, target, td, tn, tt, op, win RQA);                    \
    }

#define GET_ACCUMULATE(NAME, CNT, RQP, RQA)                                                 \
    int MPI_##NAME(const void *ob, CNT on, MPI_Datatype ot, void *rb, CNT rn, MPI_Datatype rt, \
                   int target, MPI_Aint td, CNT tn, MPI_Datatype tt, MPI_Op op, MPI_Win win RQP) \
    {                                                                                       \
        int w = target_world(win, target);                                                  \
        if (op != MPI_NO_OP) fs_send_world(w, fs_bytes(on, ot), 0);                         \
        fs_pull_world(w, fs_bytes(rn, rt));                                                 \
        return PMPI_##NAME(ob, on, ot, rb, rn, rt, target, td, tn, tt, op, win RQA);        \
    }

#define BLK_P
#define BLK_A
#define NB_P , MPI_Request *request
#define NB_A , request

PUT(Put, int, BLK_P, BLK_A)
PUT(Rput, int, NB_P, NB_A)
GET(Get, int, BLK_P, BLK_A)
GET(Rget, int, NB_P, NB_A)
ACCUMULATE(Accumulate, int, BLK_P, BLK_A)
ACCUMULATE(Raccumulate, int, NB_P, NB_A)
GET_ACCUMULATE(Get_accumulate, int, BLK_P, BLK_A)
GET_ACCUMULATE(Rget_accumulate, int, NB_P, NB_A)
#if MPI_VERSION >= 4
PUT(Put_c, MPI_Count, BLK_P, BLK_A)
PUT(Rput_c, MPI_Count, NB_P, NB_A)
GET(Get_c, MPI_Count, BLK_P, BLK_A)
GET(Rget_c, MPI_Count, NB_P, NB_A)
ACCUMULATE(Accumulate_c, MPI_Count, BLK_P, BLK_A)
ACCUMULATE(Raccumulate_c, MPI_Count, NB_P, NB_A)
GET_ACCUMULATE(Get_accumulate_c, MPI_Count, BLK_P, BLK_A)
GET_ACCUMULATE(Rget_accumulate_c, MPI_Count, NB_P, NB_A)
#endif

int MPI_Fetch_and_op(const void *ob, void *rb, MPI_Datatype t, int target, MPI_Aint td, MPI_Op op,
                     MPI_Win win)
{
    int w = target_world(win, target);
    if (op != MPI_NO_OP) fs_send_world(w, fs_bytes(1, t), 0);
    fs_pull_world(w, fs_bytes(1, t));
    return PMPI_Fetch_and_op(ob, rb, t, target, td, op, win);
}

int MPI_Compare_and_swap(const void *ob, const void *cb, void *rb, MPI_Datatype t, int target,
                         MPI_Aint td, MPI_Win win)
{
    int w = target_world(win, target);
    fs_send_world(w, fs_bytes(2, t), 0);      /* the new value and the one to compare with */
    fs_pull_world(w, fs_bytes(1, t));
    return PMPI_Compare_and_swap(ob, cb, rb, t, target, td, win);
}
