/* Point-to-point wrappers: blocking, nonblocking, combined, persistent, and
 * their MPI-4 large-count (_c) forms.  Each counts one message to its peer. */
#include "fabscope_pmpi.h"

#define SEND(NAME, CNT)                                                                  \
    int MPI_##NAME(const void *buf, CNT n, MPI_Datatype t, int dest, int tag, MPI_Comm c) \
    {                                                                                    \
        fs_send(c, dest, n, t);                                                          \
        return PMPI_##NAME(buf, n, t, dest, tag, c);                                     \
    }

#define ISEND(NAME, CNT)                                                                 \
    int MPI_##NAME(const void *buf, CNT n, MPI_Datatype t, int dest, int tag, MPI_Comm c, \
                   MPI_Request *req)                                                     \
    {                                                                                    \
        fs_send(c, dest, n, t);                                                          \
        return PMPI_##NAME(buf, n, t, dest, tag, c, req);                                \
    }

/* persistent: nothing moves at Send_init; every MPI_Start of the request sends once */
#define SEND_INIT(NAME, CNT)                                                             \
    int MPI_##NAME(const void *buf, CNT n, MPI_Datatype t, int dest, int tag, MPI_Comm c, \
                   MPI_Request *req)                                                     \
    {                                                                                    \
        int rc = PMPI_##NAME(buf, n, t, dest, tag, c, req);                              \
        if (rc == MPI_SUCCESS) fs_persist_add(*req, fs_world_of(c, dest), fs_bytes(n, t)); \
        return rc;                                                                       \
    }

#define SENDRECV(NAME, CNT)                                                              \
    int MPI_##NAME(const void *sb, CNT sn, MPI_Datatype st, int dest, int stag, void *rb, \
                   CNT rn, MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *s) \
    {                                                                                    \
        fs_send(c, dest, sn, st);                                                        \
        return PMPI_##NAME(sb, sn, st, dest, stag, rb, rn, rt, src, rtag, c, s);         \
    }

#define SENDRECV_REPLACE(NAME, CNT)                                                      \
    int MPI_##NAME(void *b, CNT n, MPI_Datatype t, int dest, int stag, int src, int rtag, \
                   MPI_Comm c, MPI_Status *s)                                            \
    {                                                                                    \
        fs_send(c, dest, n, t);                                                          \
        return PMPI_##NAME(b, n, t, dest, stag, src, rtag, c, s);                        \
    }

#define ALL_P2P(CNT, SFX)                       \
    SEND(Send##SFX, CNT)                        \
    SEND(Ssend##SFX, CNT)                       \
    SEND(Rsend##SFX, CNT)                       \
    SEND(Bsend##SFX, CNT)                       \
    ISEND(Isend##SFX, CNT)                      \
    ISEND(Issend##SFX, CNT)                     \
    ISEND(Irsend##SFX, CNT)                     \
    ISEND(Ibsend##SFX, CNT)                     \
    SEND_INIT(Send_init##SFX, CNT)              \
    SEND_INIT(Ssend_init##SFX, CNT)             \
    SEND_INIT(Rsend_init##SFX, CNT)             \
    SEND_INIT(Bsend_init##SFX, CNT)             \
    SENDRECV(Sendrecv##SFX, CNT)                \
    SENDRECV_REPLACE(Sendrecv_replace##SFX, CNT)

ALL_P2P(int, )
#if MPI_VERSION >= 4
ALL_P2P(MPI_Count, _c)
#endif
