/* What flowsim.c (the dynamic engine) and ugal_choice.c (UGAL's choice when a message is posted)
 * share: the growth of arrays, a resource's event record, and the choice's rule and heap.  Built
 * together by fabscope.dynamic.fast; only fs_run is exported from the library. */
#ifndef FABSCOPE_FLOWSIM_H
#define FABSCOPE_FLOWSIM_H
#include <stddef.h>
#include <stdint.h>

#define FS_HIDDEN __attribute__((visibility("hidden")))

/* Room for one more entry in the array at *arr (flowsim.c) */
FS_HIDDEN int grow(void *arr, int64_t n, int64_t *cap, size_t size, int64_t first);

/* Per resource: what the checks of fixed flows and the event bookkeeping use (flowsim.c's res_a
 * holds what the filling uses); a choice reads wsum */
typedef struct {
    double wsum;                      /* weight in flight */
    double mx;                        /* the largest rate of the flows on it, when mx_ok */
    char mx_ok;
    int64_t seen;                     /* event mark */
    int64_t bhead;                    /* the first of the flows bottlenecked here (-1 none; list in flow_t) */
} res_b;

/* UGAL in time's rule: each pair's minimal and Valiant paths and what a choice reads of them
 * (ugal_choice.c says how; fabscope/dynamic/ugal.py's UgalRule fills it) */
typedef struct {
    int64_t n_pairs, n_links, local;
    const int64_t *pair, *sh_sub, *sh_ptr, *sh_link, *sub_ptr, *sq_ptr, *sq_link, *sh_seen, *sq_seen;
    const double *sh_w, *sub_w, *cost;
    const int8_t *between;
} choice_t;
/* the paths chosen and still in their latency: a heap of (time, path), and the load they put on each link */
typedef struct { double t; int64_t p; } ahead_t;
typedef struct { ahead_t *a; int64_t n, cap; double *load; } aheap;

/* message m's path at time t (writes nothing but the ahead heap and loads); -1: out of memory */
FS_HIDDEN int64_t ch_choose(const choice_t *c, aheap *ah, const res_b *RB, double t, int64_t m,
                            const int64_t *p_ptr, const int64_t *p_res, const double *p_w, const double *p_lat);
#endif
