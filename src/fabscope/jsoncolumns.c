/* A column's items as JSON text, comma-separated, for fabscope.jsoncolumns (which holds the
 * pure-Python reference, json.dumps; the tests hold this to it byte for byte).
 *
 * Integers are written digit by digit.  Floats are not formatted here (Python's shortest
 * round-trip repr is what json.dumps writes): the caller encodes each distinct value once,
 * and this copies the texts in the column's order, values looked up by their bits.
 */
#include <stdint.h>
#include <string.h>

/* v[0..n) as decimal integers separated by ',' into out (room for 21 * n bytes); the values are
 * uint64 when is_unsigned, int64 otherwise.  Returns the bytes written. */
int64_t jc_ints(const void *v, int64_t n, int is_unsigned, char *out)
{
    char *p = out;
    char tmp[20];
    for (int64_t i = 0; i < n; i++) {
        uint64_t u;
        if (i)
            *p++ = ',';
        if (is_unsigned) {
            u = ((const uint64_t *)v)[i];
        } else {
            int64_t s = ((const int64_t *)v)[i];
            u = (uint64_t)s;
            if (s < 0) {
                *p++ = '-';
                u = 0 - u;          /* INT64_MIN too: its magnitude as an unsigned */
            }
        }
        int k = 0;
        do {
            tmp[k++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        while (k)
            *p++ = tmp[--k];
    }
    return p - out;
}

/* For each bits[i], its text table[offs[j]..offs[j+1]) where keys[j] == bits[i] (keys sorted,
 * nkeys >= 1), separated by ',' into out (room for n * (longest text + 1) bytes).  Returns the
 * bytes written, or -1 - i for the first bits[i] that is no key. */
int64_t jc_texts(const int64_t *bits, int64_t n, const int64_t *keys, int64_t nkeys,
                 const char *table, const int64_t *offs, char *out)
{
    char *p = out;
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = bits[i];
        if (keys[j] != b) {        /* not the previous item's value (columns repeat in runs) */
            int64_t lo = 0, hi = nkeys;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (keys[mid] < b)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == nkeys || keys[lo] != b)
                return -1 - i;
            j = lo;
        }
        if (i)
            *p++ = ',';
        int64_t len = offs[j + 1] - offs[j];
        memcpy(p, table + offs[j], (size_t)len);
        p += len;
    }
    return p - out;
}

/* The strings of a NumPy unicode column (width code points each, padded with NULs) as JSON strings
 * separated by ',' into out (room for n * (width + 3) bytes).  Returns the bytes written, or -1 when a
 * string holds what json.dumps escapes (a code point outside ' '..'~', '"' or '\\'; a NUL inside). */
int64_t jc_strs(const uint32_t *s, int64_t n, int64_t width, char *out)
{
    char *p = out;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t *c = s + i * width;
        int64_t k = 0;
        if (i)
            *p++ = ',';
        *p++ = '"';
        for (; k < width && c[k]; k++) {
            if (c[k] < 0x20 || c[k] > 0x7e || c[k] == '"' || c[k] == '\\')
                return -1;
            *p++ = (char)c[k];
        }
        for (; k < width; k++)
            if (c[k])
                return -1;
        *p++ = '"';
    }
    return p - out;
}
