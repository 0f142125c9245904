/* The order of a sparse matrix's entries by major line, then minor, then input position
 * (fabscope.sparse._line_order; np.lexsort((minor, major)) is its reference), in O(entries) where
 * numpy sorts all of them: one stable counting sort by major line, then each line's entries put in
 * minor order where they are not already (none where the minor lines come in order, as in a
 * canonical matrix transposed; a path's links: a few in each line), by insertion where a line is
 * short, else by qsort on (minor, position).
 *
 * major, minor: n entries each, major in 0..n_major-1 (fabscope.sparse checks); out: n, the order; count:
 * n_major + 1, count[k] where line k ends in it; minor_out: n, minor in that order.  Returns how many
 * entries repeat the (major, minor) of the entry before them (duplicates the caller sums), or -1 when
 * memory runs out (the caller sorts in numpy). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHORT_LINE 32

typedef struct { int64_t minor, pos; } entry_t;

static int entry_cmp(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->minor != y->minor) return x->minor < y->minor ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int64_t gather_minor(const int64_t *minor, const int64_t *out, const int64_t *count, int64_t n_major,
                            int64_t *minor_out)
{
    int64_t dups = 0;
    for (int64_t k = 0, a = 0; k < n_major; a = count[k], k++)
        for (int64_t i = a; i < count[k]; i++) {
            minor_out[i] = minor[out[i]];
            dups += i > a && minor_out[i] == minor_out[i - 1];
        }
    return dups;
}

int64_t lo_order(int64_t n, const int64_t *major, const int64_t *minor, int64_t n_major, int64_t *out,
                 int64_t *count, int64_t *minor_out)
{
    memset(count, 0, (size_t)(n_major + 1) * sizeof *count);
    for (int64_t i = 0; i < n; i++)
        count[major[i] + 1]++;
    for (int64_t k = 0; k < n_major; k++)
        count[k + 1] += count[k];
    for (int64_t i = 0; i < n; i++)          /* line by line, in input order: count[k] ends at line k + 1's start */
        out[count[major[i]]++] = i;
    int64_t s = 1;
    while (s < n && minor[s - 1] <= minor[s])
        s++;
    if (s >= n)                               /* minor in order throughout: so is every line */
        return gather_minor(minor, out, count, n_major, minor_out);
    entry_t *buf = NULL;
    int64_t buf_n = 0;
    for (int64_t k = 0, a = 0; k < n_major; a = count[k], k++) {
        int64_t b = count[k], len = b - a, j = a + 1;
        while (j < b && minor[out[j - 1]] <= minor[out[j]])
            j++;
        if (j >= b)
            continue;                         /* in order already */
        if (len <= SHORT_LINE) {              /* insertion: stable, positions rise along the line */
            for (int64_t i = a + 1; i < b; i++) {
                int64_t p = out[i], m = minor[p], q = i;
                while (q > a && minor[out[q - 1]] > m) {
                    out[q] = out[q - 1];
                    q--;
                }
                out[q] = p;
            }
            continue;
        }
        if (len > buf_n) {
            free(buf);
            if (!(buf = malloc((size_t)len * sizeof *buf))) return -1;
            buf_n = len;
        }
        for (int64_t i = 0; i < len; i++)
            buf[i] = (entry_t){minor[out[a + i]], out[a + i]};
        qsort(buf, (size_t)len, sizeof *buf, entry_cmp);
        for (int64_t i = 0; i < len; i++)
            out[a + i] = buf[i].pos;
    }
    free(buf);
    return gather_minor(minor, out, count, n_major, minor_out);
}
