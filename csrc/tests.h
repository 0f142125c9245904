/* The test families of fabscope-bench; each returns the agreed status. */
#ifndef FB_TESTS_H
#define FB_TESTS_H
#include "util.h"

/* p2p.c: OSU-style point-to-point micro-benchmarks (seed 001) */
int fb_pingpong(fb_ctx *c);
int fb_bw(fb_ctx *c);
int fb_bibw(fb_ctx *c);
int fb_mbw(fb_ctx *c);
int fb_multi_lat(fb_ctx *c);
long fb_validate_pair(fb_ctx *c, int initiator, int peer, unsigned char *sbuf,
                      unsigned char *rbuf, size_t bytes, long tag);
int fb_validated(fb_ctx *c, long bad, size_t bytes);

/* pairs.c: concurrent ping-pong of chosen pairs (seeds 000, 002) */
int fb_random_pairs(fb_ctx *c);
int fb_leaf_offset(fb_ctx *c);
int fb_leaf_pairs(fb_ctx *c);
int fb_all_pairs(fb_ctx *c);
int fb_hops(fb_ctx *c);
/* shared kernel: partner[r] = -1 (idle) or the rank r ping-pongs with */
int fb_pair_run(fb_ctx *c, const int *partner, size_t bytes, long iters, long warm,
                int scenario, const char *extra_fmt, const int *extra);

/* msg.c: Random Messaging, Bucket Brigade (seed 004), HPCC rings (seed 001) */
int fb_random_msg(fb_ctx *c);
int fb_bucket_brigade(fb_ctx *c);
int fb_ring(fb_ctx *c);
int fb_random_ring(fb_ctx *c);

/* coll.c: collectives against size and rank count (seeds 001, 004) */
int fb_alltoall(fb_ctx *c);
int fb_allreduce(fb_ctx *c);

/* stream.c: STREAM triad per node, for bytes-per-FLOP balance (seed 004) */
int fb_stream(fb_ctx *c);

/* apps.c: application kernels with their own traffic matrix (issue 21) */
int fb_halo2d(fb_ctx *c);
int fb_halo3d(fb_ctx *c);
int fb_fft_transpose(fb_ctx *c);
int fb_allreduce_loop(fb_ctx *c);
int fb_is_app(const char *name);
/* options an application kernel cannot run with (before MPI_Init too) */
int fb_app_check_options(const fb_opts *o, const char *name, char *err, size_t errlen);

#endif
