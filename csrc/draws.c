/* The random schedules of fabscope-bench, as pure functions of the job size and
 * --seed: every rank computes the same, and fabscope's Python side draws the
 * very same (src/fabscope/traffic/draws.py, tested equal through --list-pairs).
 *
 * The generator is splitmix64 (Steele, Lea, Flood 2014) and the shuffle is
 * Fisher-Yates from the top, j = next() mod (i + 1).  The modulo bias (about
 * n / 2^64: below 2^-40 up to 16 million ranks) is kept: it is part of the
 * specification. */
#include <stdlib.h>
#include <string.h>

#include "util.h"

unsigned long long fb_rand(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void fb_shuffle(int *a, int n, unsigned long long seed)
{
    unsigned long long st = seed;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(fb_rand(&st) % (unsigned long long)(i + 1));
        int t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

void fb_random_pairing(int n, unsigned long long seed, int round, int *perm, int *partner)
{
    for (int i = 0; i < n; i++) { perm[i] = i; partner[i] = -1; }
    fb_shuffle(perm, n, seed * 1000003ULL + (unsigned long long)round);
    for (int i = 0; i + 1 < n; i += 2) { partner[perm[i]] = perm[i + 1]; partner[perm[i + 1]] = perm[i]; }
}

void fb_ring_order(int n, unsigned long long seed, int *perm)
{
    for (int k = 0; k < n; k++) perm[k] = k;
    fb_shuffle(perm, n, seed * 31ULL + 5);
}

unsigned long long fb_msg_state(unsigned long long seed) { return seed * 7919ULL + 17; }

void fb_msg_round(int n, unsigned long long *state, long i, int low, int high, int *perm, int *len)
{
    for (int k = 0; k < n; k++) perm[k] = k;
    fb_shuffle(perm, n, fb_rand(state));
    unsigned long long sz = *state ^ (unsigned long long)i * 0x9E37ULL;
    for (int k = 0; k < n; k++) len[k] = low + (int)(fb_rand(&sz) % (unsigned long long)(high - low + 1));
}

/* ---- --list-pairs N: what the random tests would run on N ranks, without MPI ---- */

static void int_list(FILE *f, const int *v, int n)
{
    fputc('[', f);
    for (int k = 0; k < n; k++) fprintf(f, "%s%d", k ? "," : "", v[k]);
    fputc(']', f);
}

int fb_list_schedules(const fb_opts *o, FILE *out, char *err, size_t errlen)
{
    int n = o->list_ranks;
    if (n < 2) { snprintf(err, errlen, "--list-pairs: needs at least 2 ranks, got %d", n); return FB_ERR_USAGE; }
    for (int t = 0; t < o->ntests; t++) {
        const char *name = o->tests[t];
        if (strcmp(name, "random-pairs") && strcmp(name, "random-ring") && strcmp(name, "random-msg")) {
            snprintf(err, errlen, "--list-pairs: test '%s' draws nothing at random (random-pairs, random-ring, "
                     "random-msg do)", name);
            return FB_ERR_USAGE;
        }
    }
    int *perm = malloc(sizeof(int) * (size_t)n), *other = malloc(sizeof(int) * (size_t)n);
    if (!perm || !other) { free(perm); free(other); snprintf(err, errlen, "out of memory"); return FB_ERR_RUNTIME; }
    for (int t = 0; t < o->ntests; t++) {
        const char *name = o->tests[t];
        if (!strcmp(name, "random-pairs")) {
            /* as fb_pair_run prints them: the lower rank of each pair, in rank order */
            for (int round = 0; round < o->rounds; round++) {
                fb_random_pairing(n, o->seed, round, perm, other);
                for (int q = 0; q < n; q++)
                    if (other[q] > q)
                        fprintf(out, "{\"type\":\"schedule\",\"test\":\"%s\",\"scenario\":%d,\"src\":%d,\"dst\":%d}\n",
                                name, round, q, other[q]);
            }
        } else if (!strcmp(name, "random-ring")) {
            fb_ring_order(n, o->seed, perm);
            fprintf(out, "{\"type\":\"schedule\",\"test\":\"%s\",\"order\":", name);
            int_list(out, perm, n);
            fprintf(out, "}\n");
        } else {
            long it = o->iterations > 0 ? o->iterations : 1000, w = o->warmup >= 0 ? o->warmup : 10;
            unsigned long long st = fb_msg_state(o->seed);
            for (long i = 0; i < it + w; i++) {
                fb_msg_round(n, &st, i, 100, 1000, perm, other);
                fprintf(out, "{\"type\":\"schedule\",\"test\":\"%s\",\"iteration\":%ld,\"warmup\":%s,\"order\":",
                        name, i, i < w ? "true" : "false");
                int_list(out, perm, n);
                fprintf(out, ",\"bytes\":");
                int_list(out, other, n);
                fprintf(out, "}\n");
            }
        }
    }
    free(perm); free(other);
    return FB_OK;
}
