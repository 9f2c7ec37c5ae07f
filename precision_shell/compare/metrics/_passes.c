/* The float32 metric passes in one sweep of each tensor (precision_shell.compare.metrics.compiled).
 *
 * Every total equals the numpy path's (float32._NumpyPasses) bit for bit. Sums are taken in
 * numpy 1.x's order: numpy's pairwise summation inside each 8192-element block (the same
 * algorithm numpy's add.reduce runs on a contiguous row: 8 accumulators over leaves of <= 128
 * elements, halves split at a multiple of 8), block sums added in sequence, then + 0.
 * Elementwise arithmetic is IEEE single or double in the written order: build with
 * -ffp-contract=off and never with -ffast-math (setup.py).
 *
 * A pass walks that recursion and computes a leaf's quantities only when it reaches the leaf,
 * widening both sides (float32 as is, 1- and 2-byte types through the float32 table of their
 * bit patterns), so every row it sums is in L1. The GIL is released while it runs. Arguments
 * are checked by the Python wrapper (compiled.py) and again here where a wrong one could read
 * or write out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 8192
#define LEAF 128

/* Helpers of the hot loops are inlined into each build of them. */
#define INLINE static inline __attribute__((always_inline))

/* The hot loops are built twice on x86-64 with GCC: for AVX-512 machines (about twice as fast
 * here) and for any x86-64, the loader picking one at run time. The results are the same bits:
 * the same IEEE operations in the same order, only wider (FMA is never formed:
 * -ffp-contract=off); a test builds the plain one (PRECISION_SHELL_NO_CLONES) to check. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && \
    !defined(PRECISION_SHELL_NO_CLONES)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define HOT
#endif

/* ---- numpy's pairwise summation (loops_utils.h.src), float and double ---------------- */

/* A leaf (n <= 128): plain for n < 8, else eight accumulators combined as a tree, then the
 * rest. Always inlined, so each caller's build (AVX-512 or not) has its own copy. */
#define LEAF_SUM(NAME, T)                                                                       \
    INLINE T NAME(const T *a, Py_ssize_t n)                                                     \
    {                                                                                           \
        if (n < 8) {                                                                            \
            T res = 0.;                                                                         \
            for (Py_ssize_t i = 0; i < n; i++) {                                                \
                res += a[i];                                                                    \
            }                                                                                   \
            return res;                                                                         \
        }                                                                                       \
        T r[8];                                                                                 \
        Py_ssize_t i;                                                                           \
        for (int j = 0; j < 8; j++) {                                                           \
            r[j] = a[j];                                                                        \
        }                                                                                       \
        for (i = 8; i < n - (n % 8); i += 8) {                                                  \
            for (int j = 0; j < 8; j++) {                                                       \
                r[j] += a[i + j];                                                               \
            }                                                                                   \
        }                                                                                       \
        T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));              \
        for (; i < n; i++) {                                                                    \
            res += a[i];                                                                        \
        }                                                                                       \
        return res;                                                                             \
    }

LEAF_SUM(leaf_sum_f, float)
LEAF_SUM(leaf_sum_d, double)

/* Above 128 elements: halves split at a multiple of 8. */
HOT static float pairwise_f(const float *a, Py_ssize_t n)
{
    if (n <= LEAF) {
        return leaf_sum_f(a, n);
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_f(a, n2) + pairwise_f(a + n2, n - n2);
}

/* numpy's add.reduce of one block: the identity (+0) plus the pairwise sum. */
static float block_sum_f(const float *a, Py_ssize_t n) { return 0.0f + pairwise_f(a, n); }

/* ---- one side of a pair: float32 values, or bit patterns and their float32 table ------- */

typedef struct {
    Py_buffer data;
    Py_buffer table;
    int width;   /* bytes per element: 4 (float32), 2 or 1 (through the table) */
    Py_ssize_t n;
} Side;

static int side_open(Side *side, PyObject *data, PyObject *table, int width)
{
    memset(side, 0, sizeof(*side));
    if (width != 1 && width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "element width must be 1, 2 or 4");
        return -1;
    }
    if (PyObject_GetBuffer(data, &side->data, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(table, &side->table, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&side->data);
        return -1;
    }
    side->width = width;
    side->n = side->data.len / width;
    Py_ssize_t need = width == 4 ? 0 : (Py_ssize_t)sizeof(float) << (8 * width);
    if (side->data.len % width != 0 || side->table.len < need) {
        PyBuffer_Release(&side->data);
        PyBuffer_Release(&side->table);
        PyErr_SetString(PyExc_ValueError, "data length or lookup table does not fit the width");
        return -1;
    }
    return 0;
}

static void side_close(Side *side)
{
    PyBuffer_Release(&side->data);
    PyBuffer_Release(&side->table);
}

/* Elements [start, start + m) as float32: a pointer into the data, or widened into `out`. */
INLINE const float *side_floats(const Side *side, Py_ssize_t start, Py_ssize_t m, float *out)
{
    const float *table = (const float *)side->table.buf;
    if (side->width == 4) {
        return (const float *)side->data.buf + start;
    }
    if (side->width == 2) {
        const uint16_t *bits = (const uint16_t *)side->data.buf + start;
        for (Py_ssize_t k = 0; k < m; k++) {
            out[k] = table[bits[k]];
        }
    } else {
        const uint8_t *bits = (const uint8_t *)side->data.buf + start;
        for (Py_ssize_t k = 0; k < m; k++) {
            out[k] = table[bits[k]];
        }
    }
    return out;
}

static int open_pair(PyObject *xd, PyObject *xt, int xw, PyObject *yd, PyObject *yt, int yw,
                     Side *x, Side *y, Py_ssize_t *n)
{
    if (side_open(x, xd, xt, xw) < 0) {
        return -1;
    }
    if (side_open(y, yd, yt, yw) < 0) {
        side_close(x);
        return -1;
    }
    if (x->n != y->n) {
        side_close(x);
        side_close(y);
        PyErr_SetString(PyExc_ValueError, "both sides must hold as many elements");
        return -1;
    }
    *n = x->n;
    return 0;
}

/* ---- extremes, eight lanes at a time --------------------------------------------------------
 *
 * A max or min written as a select skips NaN (a comparison with NaN is false); a NaN is
 * flagged instead and makes the extreme NaN at the end, as ndarray.max/min do. Kept in eight
 * independent lanes, the selects vectorize (a single running max would not: it is a reduction
 * the compiler may not reorder). The order of a max does not matter, but for the sign of a zero
 * max(-0, +0), which nothing printed depends on. */

#define LANES 8

#if defined(__SSE2__)
#include <emmintrin.h>
/* _mm_max_ps(e, hi) is `e > hi ? e : hi` lane by lane (NaN e: hi), as the select below. */
INLINE void lanes_max(const float *v, int n, float *hi, int *nan)
{
    __m128 h0 = _mm_loadu_ps(hi), h1 = _mm_loadu_ps(hi + 4), bad = _mm_setzero_ps();
    int k = 0;
    for (; k + LANES <= n; k += LANES) {
        __m128 e0 = _mm_loadu_ps(v + k), e1 = _mm_loadu_ps(v + k + 4);
        h0 = _mm_max_ps(e0, h0);
        h1 = _mm_max_ps(e1, h1);
        bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpunord_ps(e0, e0), _mm_cmpunord_ps(e1, e1)));
    }
    _mm_storeu_ps(hi, h0);
    _mm_storeu_ps(hi + 4, h1);
    int seen = _mm_movemask_ps(bad) != 0;
    for (; k < n; k++) {
        hi[0] = v[k] > hi[0] ? v[k] : hi[0];
        seen |= v[k] != v[k];
    }
    *nan |= seen;
}

INLINE void lanes_range(const float *v, int n, float *hi, float *lo, int *nan)
{
    __m128 h0 = _mm_loadu_ps(hi), h1 = _mm_loadu_ps(hi + 4);
    __m128 l0 = _mm_loadu_ps(lo), l1 = _mm_loadu_ps(lo + 4), bad = _mm_setzero_ps();
    int k = 0;
    for (; k + LANES <= n; k += LANES) {
        __m128 e0 = _mm_loadu_ps(v + k), e1 = _mm_loadu_ps(v + k + 4);
        h0 = _mm_max_ps(e0, h0);
        h1 = _mm_max_ps(e1, h1);
        l0 = _mm_min_ps(e0, l0);
        l1 = _mm_min_ps(e1, l1);
        bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpunord_ps(e0, e0), _mm_cmpunord_ps(e1, e1)));
    }
    _mm_storeu_ps(hi, h0);
    _mm_storeu_ps(hi + 4, h1);
    _mm_storeu_ps(lo, l0);
    _mm_storeu_ps(lo + 4, l1);
    int seen = _mm_movemask_ps(bad) != 0;
    for (; k < n; k++) {
        hi[0] = v[k] > hi[0] ? v[k] : hi[0];
        lo[0] = v[k] < lo[0] ? v[k] : lo[0];
        seen |= v[k] != v[k];
    }
    *nan |= seen;
}
#else
INLINE void lanes_max(const float *v, int n, float *hi, int *nan)
{
    int seen = 0;
    for (int k = 0; k < n; k++) {
        float e = v[k];
        hi[k % LANES] = e > hi[k % LANES] ? e : hi[k % LANES];
        seen |= e != e;
    }
    *nan |= seen;
}

INLINE void lanes_range(const float *v, int n, float *hi, float *lo, int *nan)
{
    int seen = 0;
    for (int k = 0; k < n; k++) {
        float e = v[k];
        hi[k % LANES] = e > hi[k % LANES] ? e : hi[k % LANES];
        lo[k % LANES] = e < lo[k % LANES] ? e : lo[k % LANES];
        seen |= e != e;
    }
    *nan |= seen;
}
#endif

static double lanes_top(const float *hi)
{
    float top = hi[0];
    for (int j = 1; j < LANES; j++) {
        top = hi[j] > top ? hi[j] : top;
    }
    return top;
}

static double lanes_bottom(const float *lo)
{
    float bottom = lo[0];
    for (int j = 1; j < LANES; j++) {
        bottom = lo[j] < bottom ? lo[j] : bottom;
    }
    return bottom;
}

/* ---- the passes, leaf by leaf ----------------------------------------------------------------
 *
 * numpy's pairwise sum of a block splits it in halves (at multiples of 8) down to leaves of at
 * most 128 elements. Walking the same recursion and computing a leaf's quantities only when
 * it is reached gives the same sums with every row in L1 (a leaf's rows are ~5 KB): no row of
 * the whole block is written and read back. */

#define Q32 5 /* float32 quantities of a pass, at most */
#define Q64 2 /* float64 quantities of a pass, at most */

typedef struct {
    float f[Q32];
    double d[Q64];
} Sums;

typedef struct Pass Pass;
typedef void (*LeafFn)(Pass *pass, Py_ssize_t start, int n, Sums *out);

struct Pass {
    const Side *x, *y;
    LeafFn leaf;
    float xw[LEAF], yw[LEAF];                    /* widened values of a leaf */
    float rf[Q32][LEAF];                         /* a leaf's float32 quantities */
    double rd[Q64][LEAF];                        /* a leaf's float64 quantities */
    /* first pass: constants, extremes and counts */
    float eps, below1, below5;
    float abs_top[LANES], rel_top[LANES], x_hi[LANES], x_lo[LANES], y_hi[LANES], y_lo[LANES];
    int nan_abs, nan_rel, nan_x, nan_y;
    long long c1, c5;
    /* second pass: what is wanted, and its constants */
    int want;
    float x_norm, y_norm, x_low, x_span, y_low, y_span, kl_floor;
    double x_mean, y_mean;
};

/* A leaf's sums: numpy's pairwise sum of each row (n <= 128: its leaf branches). */
INLINE void leaf_sums(Pass *pass, int n, int q32, int q64, Sums *out)
{
    for (int q = 0; q < q32; q++) {
        out->f[q] = leaf_sum_f(pass->rf[q], n);
    }
    for (int q = 0; q < q64; q++) {
        out->d[q] = leaf_sum_d(pass->rd[q], n);
    }
}

/* numpy's recursion over [start, start + n), the leaves computed by pass->leaf. */
static void tree(Pass *pass, Py_ssize_t start, Py_ssize_t n, Sums *out)
{
    if (n <= LEAF) {
        pass->leaf(pass, start, (int)n, out);
        return;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    Sums a, b;
    tree(pass, start, n2, &a);
    tree(pass, start + n2, n - n2, &b);
    for (int q = 0; q < Q32; q++) {
        out->f[q] = a.f[q] + b.f[q];
    }
    for (int q = 0; q < Q64; q++) {
        out->d[q] = a.d[q] + b.d[q];
    }
}

/* Every block's sums (numpy's add.reduce: the identity +0, plus the pairwise sum) added in
 * sequence, then + 0 (numpy 1.x's add.accumulate of the block sums, as float32._NumpyPasses). */
static void run_blocks(Pass *pass, Py_ssize_t n, Sums *total)
{
    for (int q = 0; q < Q32; q++) {
        total->f[q] = -0.0f; /* -0 + s == s for every s: the first block sum stays as it is */
    }
    for (int q = 0; q < Q64; q++) {
        total->d[q] = -0.0;
    }
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        Sums block;
        tree(pass, start, n - start < BLOCK ? n - start : BLOCK, &block);
        for (int q = 0; q < Q32; q++) {
            total->f[q] += 0.0f + block.f[q];
        }
        for (int q = 0; q < Q64; q++) {
            total->d[q] += 0.0 + block.d[q];
        }
    }
    for (int q = 0; q < Q32; q++) {
        total->f[q] += 0.0f;
    }
    for (int q = 0; q < Q64; q++) {
        total->d[q] += 0.0;
    }
}

/* A pass over both sides (opened here; closed again on failure), zeroed, with its leaf. */
static Pass *pass_open(PyObject *xd, PyObject *xt, int xw, PyObject *yd, PyObject *yt, int yw,
                       Side *x, Side *y, Py_ssize_t *n, LeafFn leaf)
{
    if (open_pair(xd, xt, xw, yd, yt, yw, x, y, n) < 0) {
        return NULL;
    }
    Pass *pass = calloc(1, sizeof(Pass));
    if (pass == NULL) {
        side_close(x);
        side_close(y);
        PyErr_NoMemory();
        return NULL;
    }
    pass->x = x;
    pass->y = y;
    pass->leaf = leaf;
    return pass;
}

/* ---- first pass ------------------------------------------------------------------------ */

enum { ABS, SQ, XX, YY, REL };
enum { XW, YW };

HOT static void first_leaf(Pass *pass, Py_ssize_t start, int n, Sums *out)
{
    const float *xb = side_floats(pass->x, start, n, pass->xw);
    const float *yb = side_floats(pass->y, start, n, pass->yw);
    float *ab = pass->rf[ABS], *sq = pass->rf[SQ], *xx = pass->rf[XX];
    float *yy = pass->rf[YY], *rl = pass->rf[REL];
    double *xd = pass->rd[XW], *yd = pass->rd[YW];
    const float eps = pass->eps, below1 = pass->below1, below5 = pass->below5;
    int k1 = 0, k5 = 0;
    for (int k = 0; k < n; k++) {
        float xv = xb[k], yv = yb[k];
        float ad = fabsf(xv - yv);
        ab[k] = ad;
        sq[k] = ad * ad;
        xx[k] = xv * xv;
        yy[k] = yv * yv;
        float r = fabsf(xv / yv - 1.0f);
        r = fabsf(yv) > eps ? r : 0.0f; /* a NaN y lands here too */
        rl[k] = r;
        k1 += r < below1;
        k5 += r < below5;
        xd[k] = xv;
        yd[k] = yv;
    }
    pass->c1 += k1;
    pass->c5 += k5;
    lanes_max(ab, n, pass->abs_top, &pass->nan_abs);
    lanes_max(rl, n, pass->rel_top, &pass->nan_rel);
    lanes_range(xb, n, pass->x_hi, pass->x_lo, &pass->nan_x);
    lanes_range(yb, n, pass->y_hi, pass->y_lo, &pass->nan_y);
    leaf_sums(pass, n, 5, 2, out);
}

/* first(x, x_table, x_width, y, y_table, y_width, eps, below_1e3, below_5e3) ->
 *   (abs_sum, sq_sum, xx_sum, yy_sum, rel_sum, x_wide_sum, y_wide_sum,
 *    abs_max, rel_max, x_max, x_min, y_max, y_min, below_1e3, below_5e3)
 * Extremes are NaN when a NaN was seen (ndarray.max/min) or the tensor is empty. */
static PyObject *first(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xd, *xt, *yd, *yt;
    int xwidth, ywidth;
    float eps, below1, below5;
    if (!PyArg_ParseTuple(args, "OOiOOifff", &xd, &xt, &xwidth, &yd, &yt, &ywidth, &eps, &below1,
                          &below5)) {
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    Pass *pass = pass_open(xd, xt, xwidth, yd, yt, ywidth, &x, &y, &n, first_leaf);
    if (pass == NULL) {
        return NULL;
    }
    pass->eps = eps;
    pass->below1 = below1;
    pass->below5 = below5;
    for (int j = 0; j < LANES; j++) {
        pass->x_hi[j] = pass->y_hi[j] = -INFINITY;
        pass->x_lo[j] = pass->y_lo[j] = INFINITY; /* abs_top and rel_top start at +0 */
    }
    Sums t;

    Py_BEGIN_ALLOW_THREADS
    run_blocks(pass, n, &t);
    Py_END_ALLOW_THREADS

    side_close(&x);
    side_close(&y);
    double nan = NAN;
    int seen = n > 0, ok_x = seen && !pass->nan_x, ok_y = seen && !pass->nan_y;
    PyObject *result = Py_BuildValue(
        "(dddddddddddddLL)", (double)t.f[ABS], (double)t.f[SQ], (double)t.f[XX],
        (double)t.f[YY], (double)t.f[REL], t.d[XW], t.d[YW],
        seen && !pass->nan_abs ? lanes_top(pass->abs_top) : nan,
        seen && !pass->nan_rel ? lanes_top(pass->rel_top) : nan,
        ok_x ? lanes_top(pass->x_hi) : nan, ok_x ? lanes_bottom(pass->x_lo) : nan,
        ok_y ? lanes_top(pass->y_hi) : nan, ok_y ? lanes_bottom(pass->y_lo) : nan, pass->c1,
        pass->c5);
    free(pass);
    return result;
}

/* ---- second pass ----------------------------------------------------------------------- */

/* KL's (v - low) / span clamped to >= floor (float32._kl_normalised): np.maximum keeps NaN. */
static inline float kl_normal(float v, float low, float span, float floor_, int shifted,
                              int scaled)
{
    float w = v;
    if (shifted) {
        w = w - low;
    }
    if (scaled) {
        w = w / span;
    }
    return w < floor_ ? floor_ : w;
}

#define WANT_COS 1
#define WANT_KL 2
#define WANT_STD 4

enum { COS, PX, QY };
enum { XVAR, YVAR };

/* KL's normalised row of v; a NaN span normalises too (span != 0 is true), as in
 * float32._kl_normalised, and v - 0 is v up to the sign of a zero, which the clamp erases. */
HOT static void kl_normal_row(const float *v, Py_ssize_t n, float low, float span, float floor_,
                              float *out)
{
    if (span != 0 && low != 0) {
        for (Py_ssize_t k = 0; k < n; k++) {
            out[k] = kl_normal(v[k], low, span, floor_, 1, 1);
        }
    } else if (span != 0) {
        for (Py_ssize_t k = 0; k < n; k++) {
            out[k] = kl_normal(v[k], low, span, floor_, 0, 1);
        }
    } else {
        for (Py_ssize_t k = 0; k < n; k++) {
            out[k] = kl_normal(v[k], low, span, floor_, 0, 0);
        }
    }
}

HOT static void second_leaf(Pass *pass, Py_ssize_t start, int n, Sums *out)
{
    const float *xb = side_floats(pass->x, start, n, pass->xw);
    const float *yb = side_floats(pass->y, start, n, pass->yw);
    if (pass->want & WANT_COS) {
        float *cs = pass->rf[COS];
        const float x_norm = pass->x_norm, y_norm = pass->y_norm;
        for (int k = 0; k < n; k++) {
            cs[k] = (xb[k] / x_norm) * (yb[k] / y_norm);
        }
    }
    if (pass->want & WANT_KL) {
        kl_normal_row(xb, n, pass->x_low, pass->x_span, pass->kl_floor, pass->rf[PX]);
        kl_normal_row(yb, n, pass->y_low, pass->y_span, pass->kl_floor, pass->rf[QY]);
    }
    if (pass->want & WANT_STD) {
        double *xv = pass->rd[XVAR], *yv = pass->rd[YVAR];
        const double x_mean = pass->x_mean, y_mean = pass->y_mean;
        for (int k = 0; k < n; k++) {
            double dx = (double)xb[k] - x_mean;
            double dy = (double)yb[k] - y_mean;
            xv[k] = dx * dx;
            yv[k] = dy * dy;
        }
    }
    leaf_sums(pass, n, 3, 2, out); /* rows not wanted hold zeros (calloc): sums of +0 */
}

/* second(x, x_table, x_width, y, y_table, y_width, want, x_norm, y_norm,
 *        x_low, x_span, y_low, y_span, kl_floor, x_mean, y_mean)
 *   -> (cos_sum, px_sum, qy_sum, x_var, y_var); a part not wanted is 0. */
static PyObject *second(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xd, *xt, *yd, *yt;
    int xwidth, ywidth, want;
    float x_norm, y_norm, x_low, x_span, y_low, y_span, kl_floor;
    double x_mean, y_mean;
    if (!PyArg_ParseTuple(args, "OOiOOiifffffffdd", &xd, &xt, &xwidth, &yd, &yt, &ywidth, &want,
                          &x_norm, &y_norm, &x_low, &x_span, &y_low, &y_span, &kl_floor, &x_mean,
                          &y_mean)) {
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    Pass *pass = pass_open(xd, xt, xwidth, yd, yt, ywidth, &x, &y, &n, second_leaf);
    if (pass == NULL) {
        return NULL;
    }
    pass->want = want;
    pass->x_norm = x_norm;
    pass->y_norm = y_norm;
    pass->x_low = x_low;
    pass->x_span = x_span;
    pass->y_low = y_low;
    pass->y_span = y_span;
    pass->kl_floor = kl_floor;
    pass->x_mean = x_mean;
    pass->y_mean = y_mean;
    Sums t;

    Py_BEGIN_ALLOW_THREADS
    run_blocks(pass, n, &t);
    Py_END_ALLOW_THREADS

    side_close(&x);
    side_close(&y);
    free(pass);
    return Py_BuildValue("(ddddd)", (double)t.f[COS], (double)t.f[PX], (double)t.f[QY],
                         t.d[XVAR], t.d[YVAR]);
}

/* ---- KL's last pass, around numpy's log ------------------------------------------------ */

/* p = px / p_total (in place) and r = p / (qy / q_total) (r holds qy on entry). */
HOT static void kl_ratio_row(float *p, float *r, Py_ssize_t m, float p_total, float q_total)
{
    for (Py_ssize_t k = 0; k < m; k++) {
        float pv = p[k] / p_total;
        p[k] = pv;
        r[k] = pv / (r[k] / q_total);
    }
}

/* The block sums of p * log_r (into log_r) added to `running` in sequence. */
HOT static float kl_terms_row(const float *p, float *t, Py_ssize_t m, float running)
{
    for (Py_ssize_t k = 0; k < m; k++) {
        t[k] = p[k] * t[k];
    }
    for (Py_ssize_t start = 0; start < m; start += BLOCK) {
        Py_ssize_t size = m - start < BLOCK ? m - start : BLOCK;
        running += block_sum_f(t + start, size);
    }
    return running;
}

/* kl_ratio(x, x_table, x_width, y, y_table, y_width, start, x_low, x_span, y_low, y_span,
 *          kl_floor, px_total, qy_total, p, r): for elements [start, start + len(p)),
 *   p = px / px_total and r = p / (qy / qy_total) (numpy's log of r comes next). */
static PyObject *kl_ratio(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xd, *xt, *yd, *yt, *po, *ro;
    int xwidth, ywidth;
    Py_ssize_t start;
    float x_low, x_span, y_low, y_span, kl_floor, p_total, q_total;
    if (!PyArg_ParseTuple(args, "OOiOOinfffffffOO", &xd, &xt, &xwidth, &yd, &yt, &ywidth,
                          &start, &x_low, &x_span, &y_low, &y_span, &kl_floor, &p_total,
                          &q_total, &po, &ro)) {
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    if (open_pair(xd, xt, xwidth, yd, yt, ywidth, &x, &y, &n) < 0) {
        return NULL;
    }
    Py_buffer pb, rb;
    if (PyObject_GetBuffer(po, &pb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        side_close(&x);
        side_close(&y);
        return NULL;
    }
    if (PyObject_GetBuffer(ro, &rb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&pb);
        side_close(&x);
        side_close(&y);
        return NULL;
    }
    Py_ssize_t m = pb.len / (Py_ssize_t)sizeof(float);
    if (rb.len != pb.len || start < 0 || start > n || m > n - start) {
        PyBuffer_Release(&pb);
        PyBuffer_Release(&rb);
        side_close(&x);
        side_close(&y);
        PyErr_SetString(PyExc_ValueError, "kl_ratio: p and r must hold the same span of the data");
        return NULL;
    }
    float *p = pb.buf, *r = rb.buf;

    Py_BEGIN_ALLOW_THREADS
    /* widen into p and r themselves: each value is read before it is overwritten */
    const float *xb = side_floats(&x, start, m, p);
    kl_normal_row(xb, m, x_low, x_span, kl_floor, p);
    const float *yb = side_floats(&y, start, m, r);
    kl_normal_row(yb, m, y_low, y_span, kl_floor, r);
    kl_ratio_row(p, r, m, p_total, q_total);
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pb);
    PyBuffer_Release(&rb);
    side_close(&x);
    side_close(&y);
    Py_RETURN_NONE;
}

/* kl_terms(p, log_r, running) -> running: the block sums of p * log_r added to `running` in
 * sequence (blocks of 8192 from the start of p: call it on whole blocks but the last). */
static PyObject *kl_terms(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *po, *lo;
    float running;
    if (!PyArg_ParseTuple(args, "OOf", &po, &lo, &running)) {
        return NULL;
    }
    Py_buffer pb, lb;
    if (PyObject_GetBuffer(po, &pb, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(lo, &lb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&pb);
        return NULL;
    }
    if (pb.len != lb.len || pb.len % (Py_ssize_t)sizeof(float) != 0) {
        PyBuffer_Release(&pb);
        PyBuffer_Release(&lb);
        PyErr_SetString(PyExc_ValueError, "kl_terms: p and log_r must be float32 of one length");
        return NULL;
    }
    Py_ssize_t m = pb.len / (Py_ssize_t)sizeof(float);
    const float *p = pb.buf;
    float *t = lb.buf;

    Py_BEGIN_ALLOW_THREADS
    running = kl_terms_row(p, t, m, running);
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pb);
    PyBuffer_Release(&lb);
    return PyFloat_FromDouble((double)running);
}

static PyMethodDef methods[] = {
    {"first", first, METH_VARARGS, "The first pass: sums, extremes and counts."},
    {"second", second, METH_VARARGS, "The second pass: cosine, KL and std sums."},
    {"kl_ratio", kl_ratio, METH_VARARGS, "KL's p and p / q over one span."},
    {"kl_terms", kl_terms, METH_VARARGS, "KL's p * log(p / q) summed block by block."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_passes", "The float32 metric passes, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__passes(void) { return PyModule_Create(&module); }
