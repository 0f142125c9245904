/* A message's path chosen when it is posted (UGAL in time: fabscope/dynamic/ugal.py), for
 * flowsim.c's fs_run.
 * Message m's pair i = pair[m] has two paths: i (minimal) and n_pairs + i (Valiant).  It takes the
 * Valiant one when between[i] and q_min * H_min > q_val * H_val, a link's load q being (weight in
 * flight + weight chosen but still in its latency + 1) * cost (1 / capacity), the busiest of the
 * links a sub-path's choice reads (sh_seen / sq_seen: ugal-l those up to its first global cable,
 * ugal-g every one); each minimal sub-path with its share sh_w (one a pair, or one per cable where
 * groups share several), each Valiant sub-path with its share sub_w; each
 * side's load and hops the mean over its sub-paths.  The same arithmetic in the same order as ugal.py's
 * reference, so both engines choose alike.  A chosen message's path stays "ahead" on its links
 * until its latency has passed: a heap of (time, path), popped in that order before each choice.
 * Messages posted at one time choose after that time's events, in message order (fs_run). */
#include <stdint.h>

#include "flowsim.h"

#define CHOICE_TOL 1e-9   /* Valiant only when clearly better: sums in another order differ in their last bits */
static int ah_lt(const ahead_t *x, const ahead_t *y) { return x->t < y->t || (x->t == y->t && x->p < y->p); }
static int ah_push(aheap *h, ahead_t e)
{
    if (grow(&h->a, h->n, &h->cap, sizeof *h->a, 256) < 0) return -1;
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!ah_lt(&e, &h->a[p])) break;
        h->a[i] = h->a[p]; i = p;
    }
    h->a[i] = e;
    return 0;
}
static ahead_t ah_pop(aheap *h)
{
    ahead_t top = h->a[0], last = h->a[--h->n];
    int64_t i = 0, n = h->n;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ah_lt(&h->a[c + 1], &h->a[c])) c++;
        if (!ah_lt(&h->a[c], &last)) break;
        h->a[i] = h->a[c]; i = c;
    }
    if (n) h->a[i] = last;
    return top;
}
/* the load a choice sees on link x */
static inline double ch_q(const choice_t *c, const res_b *RB, const double *ahead, int64_t x)
{
    return (RB[x].wsum + ahead[x] + 1.0) * c->cost[x];
}
/* the largest load on links lk[0..n) (n: the links the choice reads, sh_seen / sq_seen) */
static double ch_path(const choice_t *c, const res_b *RB, const double *ahead, const int64_t *lk, int64_t n)
{
    if (!n) return 0.0;
    double q = ch_q(c, RB, ahead, lk[0]);
    for (int64_t j = 1; j < n; j++) { double v = ch_q(c, RB, ahead, lk[j]); if (v > q) q = v; }
    return q;
}
/* message m's path at time t (flowsim.h) */
int64_t ch_choose(const choice_t *c, aheap *ah, const res_b *RB, double t, int64_t m,
                  const int64_t *p_ptr, const int64_t *p_res, const double *p_w, const double *p_lat)
{
    double *ahead = ah->load;
    while (ah->n && ah->a[0].t <= t) {
        int64_t p = ah_pop(ah).p;
        for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) if (p_res[k] < c->n_links) ahead[p_res[k]] -= p_w[k];
    }
    int64_t i = c->pair[m], p = i;
    if (c->between[i]) {
        double qm = 0.0, hm = 0.0, qv = 0.0, hv = 0.0;
        for (int64_t j = c->sh_sub[i]; j < c->sh_sub[i + 1]; j++)
            qm += c->sh_w[j] * ch_path(c, RB, ahead, c->sh_link + c->sh_ptr[j], c->sh_seen[j]);
        for (int64_t j = c->sh_sub[i]; j < c->sh_sub[i + 1]; j++)
            hm += c->sh_w[j] * (double)(c->sh_ptr[j + 1] - c->sh_ptr[j]);
        for (int64_t j = c->sub_ptr[i]; j < c->sub_ptr[i + 1]; j++)
            qv += c->sub_w[j] * ch_path(c, RB, ahead, c->sq_link + c->sq_ptr[j], c->sq_seen[j]);
        for (int64_t j = c->sub_ptr[i]; j < c->sub_ptr[i + 1]; j++)
            hv += c->sub_w[j] * (double)(c->sq_ptr[j + 1] - c->sq_ptr[j]);
        if (qm * hm > qv * hv * (1 + CHOICE_TOL)) p = c->n_pairs + i;
    }
    ahead_t e = {t + p_lat[p], p};
    if (ah_push(ah, e) < 0) return -1;
    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) if (p_res[k] < c->n_links) ahead[p_res[k]] += p_w[k];
    return p;
}
