/* fabscope's dynamic flow engine, compiled: the same algorithm as engine.py
 * (the pure-Python reference the tests hold it to), for speed.
 *
 * Messages become flows after their path's latency, share resources max-min
 * fairly and finish; steps end when their messages have and start the rank's
 * next step.  At each event only the flows at or above a threshold level and
 * connected to the changed flows through such flows are refilled (see
 * engine.py and docs/dynamic.md for why the others keep their rates).
 *
 * The refill starts small and grows while the max-min certificate fails (see
 * engine.py).  Built on first use by fabscope.dynamic.fast (gcc -O2 -shared) and loaded
 * with ctypes.  Returns 0, 1 when steps are left waiting (deadlock), 2 when
 * the progress callback asked to stop, or -1 when memory runs out.
 *
 * progress (may be NULL) is called with the messages done so far and the
 * simulated time every `every` refills (0: never by count) and whenever
 * `interval` seconds of wall clock have passed since the last call (the
 * clock is read once per refill: a few tens of nanoseconds, against
 * microseconds for the refill), so a Ctrl-C is seen within about `interval`
 * whatever the load; a non-zero return stops the run. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIME_TOL 1e-12
#define RATE_TOL 1e-9
#define SAME_RATE 1e-12  /* a refill that moves a rate less than this (relative) leaves it: float noise */
enum { START = 0, FLOW = 1, FINISH = 2 };

typedef struct { double t; int64_t seq, id, ver; int kind; } ev_t;
typedef struct { ev_t *a; int64_t n, cap; } evheap;
typedef struct { double k; int64_t id; int kind; } rk_t;
typedef struct { rk_t *a; int64_t n, cap; } rkheap;
typedef struct { int64_t m; int32_t k; } slot_t;
typedef struct { slot_t *a; int64_t n, cap; } rlist;

static int ev_lt(const ev_t *x, const ev_t *y) { return x->t < y->t || (x->t == y->t && x->seq < y->seq); }
static int ev_push(evheap *h, ev_t e)
{
    if (h->n == h->cap) {
        int64_t nc = h->cap ? 2 * h->cap : 1024;
        ev_t *na = realloc(h->a, (size_t)nc * sizeof *na);
        if (!na) return -1;
        h->a = na; h->cap = nc;
    }
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!ev_lt(&e, &h->a[p])) break;
        h->a[i] = h->a[p]; i = p;
    }
    h->a[i] = e;
    return 0;
}
static ev_t ev_pop(evheap *h)
{
    ev_t top = h->a[0], last = h->a[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && ev_lt(&h->a[c + 1], &h->a[c])) c++;
        if (!ev_lt(&h->a[c], &last)) break;
        h->a[i] = h->a[c]; i = c;
    }
    if (h->n) h->a[i] = last;
    return top;
}
static int rk_lt(const rk_t *x, const rk_t *y)
{
    return x->k < y->k || (x->k == y->k && (x->kind < y->kind || (x->kind == y->kind && x->id < y->id)));
}
static int rk_push(rkheap *h, rk_t e)
{
    if (h->n == h->cap) {
        int64_t nc = h->cap ? 2 * h->cap : 1024;
        rk_t *na = realloc(h->a, (size_t)nc * sizeof *na);
        if (!na) return -1;
        h->a = na; h->cap = nc;
    }
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!rk_lt(&e, &h->a[p])) break;
        h->a[i] = h->a[p]; i = p;
    }
    h->a[i] = e;
    return 0;
}
static rk_t rk_pop(rkheap *h)
{
    rk_t top = h->a[0], last = h->a[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && rk_lt(&h->a[c + 1], &h->a[c])) c++;
        if (!rk_lt(&h->a[c], &last)) break;
        h->a[i] = h->a[c]; i = c;
    }
    if (h->n) h->a[i] = last;
    return top;
}
static int rl_add(rlist *l, slot_t s, int64_t *pos)
{
    if (l->n == l->cap) {
        int64_t nc = l->cap ? 2 * l->cap : 4;
        slot_t *na = realloc(l->a, (size_t)nc * sizeof *na);
        if (!na) return -1;
        l->a = na; l->cap = nc;
    }
    *pos = l->n;
    l->a[l->n++] = s;
    return 0;
}
static int i64_push(int64_t **a, int64_t *n, int64_t *cap, int64_t v)
{
    if (*n == *cap) {
        int64_t nc = *cap ? 2 * *cap : 1024;
        int64_t *na = realloc(*a, (size_t)nc * sizeof *na);
        if (!na) return -1;
        *a = na; *cap = nc;
    }
    (*a)[(*n)++] = v;
    return 0;
}

/* min over path p's resources of capacity / weight in flight, and its own cap */
static double counted_rate(int64_t p, const int64_t *p_ptr, const int64_t *p_res, const double *p_cap,
                           const double *capacity, const double *wsum)
{
    double v = p_cap[p];
    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
        double c = capacity[p_res[k]] / wsum[p_res[k]];
        if (c < v) v = c;
    }
    return v;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CHK(x) do { if ((x) < 0) { rc = -1; goto out; } } while (0)
/* bneck[m]: a resource, -1 (the flow's cap) or -2 (none yet); nb counts the flows per resource */
#define SET_BNECK(m_, b_) do { int64_t o_ = bneck[m_], n_ = (b_); if (o_ >= 0) nb[o_]--; \
                               if (n_ >= 0) nb[n_]++; bneck[m_] = n_; } while (0)

int fs_run(int64_t n_res, const double *capacity,
           const int64_t *p_ptr, const int64_t *p_res, const double *p_w, const double *p_cap, const double *p_lat,
           int64_t n_msg, const int64_t *msg_path, const double *size, const int64_t *send_step,
           const int64_t *recv_step, int64_t n_steps, const int64_t *step_next, const double *step_delay,
           const int64_t *step_ptr, const int64_t *step_msg, const int64_t *first_steps, int64_t n_first,
           double *msg_post, double *msg_start, double *msg_end, double *step_start, double *step_end,
           double *delivered, int64_t *pending, int64_t *stats, int sharing,
           int (*progress)(int64_t, double), int64_t every, double interval)
{
    int rc = 0;
    evheap H = {0};
    rkheap R = {0};
    rlist *on = calloc((size_t)n_res, sizeof *on);
    double *wsum = calloc((size_t)n_res, sizeof *wsum), *load = calloc((size_t)n_res, sizeof *load);
    double *resid = calloc((size_t)n_res, sizeof *resid), *livew = calloc((size_t)n_res, sizeof *livew);
    double *key = calloc((size_t)n_res, sizeof *key);
    int64_t *r_seen = calloc((size_t)n_res, sizeof *r_seen), *r_touch = calloc((size_t)n_res, sizeof *r_touch);
    int64_t *r_key = calloc((size_t)n_res, sizeof *r_key);
    double *rate = calloc((size_t)n_msg, sizeof *rate), *tlast = calloc((size_t)n_msg, sizeof *tlast);
    double *rem = calloc((size_t)n_msg, sizeof *rem), *nrate = calloc((size_t)n_msg, sizeof *nrate);
    int64_t *ver = calloc((size_t)n_msg, sizeof *ver), *in_todo = calloc((size_t)n_msg, sizeof *in_todo);
    int64_t *done_mark = calloc((size_t)n_msg, sizeof *done_mark), *st_mark = calloc((size_t)n_msg, sizeof *st_mark);
    int64_t *bneck = calloc((size_t)n_msg, sizeof *bneck), *where = calloc((size_t)n_msg, sizeof *where);
    int64_t *add_mark = calloc((size_t)n_msg, sizeof *add_mark);
    int64_t *st_ep = calloc((size_t)n_res, sizeof *st_ep), *tch = calloc((size_t)n_res, sizeof *tch);
    char *st_full = calloc((size_t)n_res, 1);
    /* nb[r]: flows in flight whose bottleneck is r; the certificate scan skips the others' resources */
    int64_t *nb = calloc((size_t)n_res, sizeof *nb);
    double *st_max = calloc((size_t)n_res, sizeof *st_max);
    int64_t *addl = NULL, cadd = 0, *tl = NULL, ctl = 0;
    int64_t *slotpos = NULL, *moff = calloc((size_t)n_msg + 1, sizeof *moff);
    char *active = calloc((size_t)n_msg, 1), *need = malloc((size_t)n_msg + 1);
    int64_t *started = NULL, ns = 0, cs = 0, *fin = NULL, nf = 0, cf = 0, *todo = NULL, nt = 0, ct = 0;
    int64_t *stack = NULL, nst = 0, cst = 0, *touched = NULL, ntc = 0, ctc = 0;
    double *fin_rate = NULL;
    int64_t cfr = 0;
    int64_t seq = 0, epoch = 0, events = 0, refills = 0, batches = 0, n_done = 0;
    double last_call = progress ? wall_s() : 0;
    if (!on || !wsum || !load || !resid || !livew || !key || !r_seen || !r_touch || !r_key || !rate || !tlast ||
        !rem || !nrate || !ver || !in_todo || !done_mark || !st_mark || !moff || !active || !need || !bneck || !where ||
        !add_mark || !st_ep || !tch || !st_full || !st_max || !nb) { rc = -1; goto out; }
    for (int64_t m = 0; m < n_msg; m++) {
        int64_t p = msg_path[m];
        moff[m + 1] = moff[m] + (p_ptr[p + 1] - p_ptr[p]);
        need[m] = 2;
        msg_post[m] = msg_start[m] = msg_end[m] = NAN;
        delivered[m] = 0;
    }
    slotpos = malloc((size_t)(moff[n_msg] ? moff[n_msg] : 1) * sizeof *slotpos);
    if (!slotpos) { rc = -1; goto out; }
    for (int64_t s = 0; s < n_steps; s++) { step_start[s] = step_end[s] = NAN; pending[s] = step_ptr[s + 1] - step_ptr[s]; }
    for (int64_t i = 0; i < n_first; i++) {
        ev_t e = {step_delay[first_steps[i]], seq++, first_steps[i], 0, START};
        CHK(ev_push(&H, e));
    }
    while (H.n) {
        double t = H.a[0].t, horizon = t + fabs(t) * TIME_TOL;
        ns = nf = 0;
        while (H.n && H.a[0].t <= horizon) {
            ev_t e = ev_pop(&H);
            events++;
            int64_t a = e.id, done = -1;
            if (e.kind == START) {
                step_start[a] = t;
                for (int64_t i = step_ptr[a]; i < step_ptr[a + 1]; i++) {
                    int64_t m = step_msg[i];
                    if (--need[m] == 0) {
                        msg_post[m] = t;
                        ev_t f = {t + p_lat[msg_path[m]], seq++, m, 0, FLOW};
                        CHK(ev_push(&H, f));
                    }
                }
                if (pending[a] == 0) {
                    step_end[a] = t;
                    int64_t nx = step_next[a];
                    if (nx >= 0) { ev_t f = {t + step_delay[nx], seq++, nx, 0, START}; CHK(ev_push(&H, f)); }
                }
                continue;
            }
            if (e.kind == FLOW) {
                int64_t m = a, p = msg_path[m];
                msg_start[m] = t;
                if (size[m] <= 0 || (p_ptr[p + 1] == p_ptr[p] && !isfinite(p_cap[p]))) {
                    done = m;
                } else {
                    active[m] = 1; rate[m] = 0; tlast[m] = t; rem[m] = size[m]; bneck[m] = -2;
                    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                        int64_t r = p_res[k], pos;
                        slot_t s = {m, (int32_t)(k - p_ptr[p])};
                        CHK(rl_add(&on[r], s, &pos));
                        slotpos[moff[m] + (k - p_ptr[p])] = pos;
                        wsum[r] += p_w[k];
                    }
                    CHK(i64_push(&started, &ns, &cs, m));
                }
            } else {
                int64_t m = a, p = msg_path[m];
                if (e.ver != ver[m] || !active[m]) continue;
                double rt = rate[m];
                active[m] = 0;
                SET_BNECK(m, -2);
                delivered[m] += rt * (t - tlast[m]);
                for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                    int64_t r = p_res[k], pos = slotpos[moff[m] + (k - p_ptr[p])];
                    rlist *l = &on[r];
                    slot_t last = l->a[--l->n];
                    if (pos < l->n) {
                        l->a[pos] = last;
                        slotpos[moff[last.m] + last.k] = pos;
                    }
                    wsum[r] -= p_w[k];
                    load[r] -= rt * p_w[k];
                    if (l->n == 0) { wsum[r] = 0; load[r] = 0; }
                }
                if (nf == cf) {
                    cf = cf ? 2 * cf : 1024;
                    int64_t *a2 = realloc(fin, (size_t)cf * sizeof *a2);
                    double *b2 = realloc(fin_rate, (size_t)cf * sizeof *b2);
                    if (a2) fin = a2;
                    if (b2) fin_rate = b2;
                    if (!a2 || !b2) { rc = -1; goto out; }
                    cfr = cf;
                }
                fin[nf] = m; fin_rate[nf++] = rt;
                done = m;
            }
            if (done >= 0) {
                int64_t m = done;
                msg_end[m] = t;
                n_done++;
                int64_t ss[2] = {send_step[m], recv_step[m]};
                for (int j = 0; j < 2; j++) {
                    int64_t s = ss[j];
                    if (--pending[s] == 0 && !isnan(step_start[s])) {
                        step_end[s] = t;
                        int64_t nx = step_next[s];
                        if (nx >= 0) { ev_t f = {t + step_delay[nx], seq++, nx, 0, START}; CHK(ev_push(&H, f)); }
                    }
                }
            }
        }
        if (!ns && !nf) continue;
        if (progress) {
            double now = wall_s();
            if ((every > 0 && ++batches % every == 0) || now - last_call >= interval) {
                last_call = now;
                if (progress(n_done, t)) { rc = 2; goto out; }
            }
        }
        int64_t ev_ep = ++epoch;
        if (sharing == 1) {
            /* congestion count: every flow on a resource whose count changed takes
             * min over its path of capacity / weight in flight; the others keep theirs */
            nt = 0;
            for (int64_t i = 0; i < ns; i++) st_mark[started[i]] = ev_ep;
            for (int64_t i = 0; i < ns + nf; i++) {
                int64_t p = msg_path[i < ns ? started[i] : fin[i - ns]];
                for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                    int64_t r = p_res[k];
                    if (r_seen[r] == ev_ep) continue;
                    r_seen[r] = ev_ep;
                    for (int64_t z = 0; z < on[r].n; z++) {
                        int64_t g = on[r].a[z].m;
                        if (in_todo[g] == ev_ep) continue;
                        in_todo[g] = ev_ep;
                        CHK(i64_push(&todo, &nt, &ct, g));
                    }
                }
            }
            for (int64_t i = 0; i < nt; i++)
                nrate[todo[i]] = counted_rate(msg_path[todo[i]], p_ptr, p_res, p_cap, capacity, wsum);
            refills += nt;
            goto apply;
        }
        /* ---- which flows to refill ---- */
        double thr = INFINITY;
        for (int64_t i = 0; i < nf; i++) if (fin_rate[i] < thr) thr = fin_rate[i];
        for (int64_t i = 0; i < ns; i++) {       /* a started flow gets at least its counted share */
            double lb = counted_rate(msg_path[started[i]], p_ptr, p_res, p_cap, capacity, wsum);
            if (lb < thr) thr = lb;
        }
        thr *= 1 - RATE_TOL;
        /* start small: the started flows, and the flows at or above thr on the changed flows' resources */
        nt = nst = 0;
        for (int64_t i = 0; i < ns; i++) {
            int64_t m = started[i];
            in_todo[m] = ev_ep; st_mark[m] = ev_ep;
            CHK(i64_push(&todo, &nt, &ct, m));
        }
        for (int64_t i = 0; i < ns + nf; i++) {
            int64_t p = msg_path[i < ns ? started[i] : fin[i - ns]];
            for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++)
                if (r_seen[p_res[k]] != ev_ep) { r_seen[p_res[k]] = ev_ep; CHK(i64_push(&stack, &nst, &cst, p_res[k])); }
        }
        for (int64_t j = 0; j < nst; j++) {
            int64_t r = stack[j];
            for (int64_t i = 0; i < on[r].n; i++) {
                int64_t g = on[r].a[i].m;
                if (in_todo[g] == ev_ep || rate[g] < thr) continue;
                in_todo[g] = ev_ep;
                CHK(i64_push(&todo, &nt, &ct, g));
            }
        }
        for (;;) {
            int64_t ep = ++epoch;
            /* ---- progressive filling of todo; the others keep their rates ---- */
            ntc = 0;
            R.n = 0;
            for (int64_t i = 0; i < nt; i++) {
                int64_t g = todo[i], p = msg_path[g];
                for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                    int64_t r = p_res[k];
                    if (r_touch[r] != ep) {
                        r_touch[r] = ep; resid[r] = capacity[r] - load[r]; livew[r] = 0;
                        CHK(i64_push(&touched, &ntc, &ctc, r));
                    }
                    resid[r] += rate[g] * p_w[k];
                    livew[r] += p_w[k];
                }
                if (isfinite(p_cap[p])) { rk_t e = {p_cap[p], g, 1}; CHK(rk_push(&R, e)); }
            }
            for (int64_t i = 0; i < ntc; i++) {
                int64_t r = touched[i];
                key[r] = (resid[r] > 0 ? resid[r] : 0) / livew[r];
                r_key[r] = ep;
                rk_t e = {key[r], r, 0};
                CHK(rk_push(&R, e));
            }
            int64_t count = 0;
            double level = 0;
            while (R.n && count < nt) {
                rk_t e = rk_pop(&R);
                int64_t lo, hi;
                if (e.kind == 0) {
                    if (r_key[e.id] != ep || key[e.id] != e.k) continue;
                    r_key[e.id] = 0;
                    lo = 0; hi = on[e.id].n;
                } else {
                    if (done_mark[e.id] == ep) continue;
                    lo = -1; hi = 0;
                }
                if (e.k > level) level = e.k;
                for (int64_t i = lo; i < hi; i++) {
                    int64_t g = i < 0 ? e.id : on[e.id].a[i].m;
                    if (in_todo[g] != ev_ep || done_mark[g] == ep) continue;
                    done_mark[g] = ep; nrate[g] = level; where[g] = e.kind == 0 ? e.id : -1; count++;
                    int64_t p = msg_path[g];
                    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                        int64_t r = p_res[k];
                        resid[r] -= p_w[k] * level;
                        livew[r] -= p_w[k];
                        if (r_key[r] == ep) {
                            if (livew[r] > 1e-12) {
                                key[r] = (resid[r] > 0 ? resid[r] : 0) / livew[r];
                                rk_t f = {key[r], r, 0};
                                CHK(rk_push(&R, f));
                            } else r_key[r] = 0;
                        }
                    }
                }
            }
            /* ---- the max-min certificate on what the refill touched; add the flows that fail it ---- */
            int64_t nadd = 0;
#define STAT(q) do { int64_t q_ = (q); if (st_ep[q_] != ep) { double ld_ = 0, mx_ = 0; \
                for (int64_t z_ = 0; z_ < on[q_].n; z_++) { int64_t h_ = on[q_].a[z_].m; \
                    double rh_ = in_todo[h_] == ev_ep ? nrate[h_] : rate[h_]; \
                    ld_ += rh_ * p_w[p_ptr[msg_path[h_]] + on[q_].a[z_].k]; if (rh_ > mx_) mx_ = rh_; } \
                st_ep[q_] = ep; st_full[q_] = ld_ >= capacity[q_] * (1 - RATE_TOL); st_max[q_] = mx_; } } while (0)
            for (int64_t i = 0; i < nt; i++) {
                int64_t g = todo[i], b = where[g];
                if (b < 0) continue;
                STAT(b);
                if (nrate[g] >= st_max[b] * (1 - RATE_TOL)) continue;
                for (int64_t z = 0; z < on[b].n; z++) {
                    int64_t h = on[b].a[z].m;
                    if (in_todo[h] != ev_ep && add_mark[h] != ep && rate[h] > nrate[g]) {
                        add_mark[h] = ep; CHK(i64_push(&addl, &nadd, &cadd, h));
                    }
                }
            }
            int64_t ntl = 0;
            for (int64_t i = 0; i < nt + nf; i++) {
                int64_t p = msg_path[i < nt ? todo[i] : fin[i - nt]];
                for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++)
                    if (tch[p_res[k]] != ep) { tch[p_res[k]] = ep; CHK(i64_push(&tl, &ntl, &ctl, p_res[k])); }
            }
            for (int64_t j = 0; j < ntl; j++) {
                int64_t r = tl[j];
                if (nb[r] == 0) continue;       /* no fixed flow has its bottleneck here */
                for (int64_t z = 0; z < on[r].n; z++) {
                    int64_t h = on[r].a[z].m;
                    if (in_todo[h] == ev_ep || add_mark[h] == ep || bneck[h] != r) continue;
                    double rh = rate[h];
                    STAT(r);
                    if (st_full[r] && rh >= st_max[r] * (1 - RATE_TOL)) continue;
                    int64_t found = -2, p = msg_path[h];
                    for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) {
                        int64_t q = p_res[k];
                        STAT(q);
                        if (st_full[q] && rh >= st_max[q] * (1 - RATE_TOL)) { found = q; break; }
                    }
                    if (found == -2 && rh >= p_cap[p] * (1 - RATE_TOL)) found = -1;
                    if (found == -2) { add_mark[h] = ep; CHK(i64_push(&addl, &nadd, &cadd, h)); }
                    else SET_BNECK(h, found);
                }
            }
#undef STAT
            if (!nadd) break;
            for (int64_t i = 0; i < nadd; i++) { in_todo[addl[i]] = ev_ep; CHK(i64_push(&todo, &nt, &ct, addl[i])); }
        }
        refills += nt;
        for (int64_t i = 0; i < nt; i++) SET_BNECK(todo[i], where[todo[i]]);
    apply:
        /* the new rates: bytes so far booked at the old ones, a new finish event for each changed flow */
        for (int64_t i = 0; i < nt; i++) {
            int64_t g = todo[i], p = msg_path[g];
            double nr = nrate[g], old = rate[g];
            if (st_mark[g] != ev_ep && fabs(nr - old) <= SAME_RATE * old) continue;
            double dt = t - tlast[g];
            if (dt > 0) { delivered[g] += old * dt; rem[g] -= old * dt; tlast[g] = t; }
            for (int64_t k = p_ptr[p]; k < p_ptr[p + 1]; k++) load[p_res[k]] += (nr - old) * p_w[k];
            rate[g] = nr;
            ver[g]++;
            ev_t f = {t + (rem[g] > 0 ? rem[g] : 0) / nr, seq++, g, ver[g], FINISH};
            CHK(ev_push(&H, f));
        }
    }
    for (int64_t s = 0; s < n_steps; s++) if (pending[s] > 0) { rc = 1; break; }
out:
    stats[0] = events; stats[1] = refills; (void)cfr;
    if (on) for (int64_t r = 0; r < n_res; r++) free(on[r].a);
    free(on); free(wsum); free(load); free(resid); free(livew); free(key); free(r_seen); free(r_touch); free(r_key);
    free(rate); free(tlast); free(rem); free(nrate); free(ver); free(in_todo); free(done_mark); free(st_mark);
    free(slotpos); free(moff); free(active); free(need); free(started); free(fin); free(fin_rate); free(todo);
    free(stack); free(touched); free(H.a); free(R.a);
    free(bneck); free(nb); free(where); free(add_mark); free(st_ep); free(tch); free(st_full); free(st_max); free(addl); free(tl);
    return rc;
}
