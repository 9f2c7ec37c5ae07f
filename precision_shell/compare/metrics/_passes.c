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
 * widening both sides (float32 as is, IEEE halves by F16C where the CPU has it, 1- and 2-byte
 * types through the float32 table of their bit patterns), eight elements at a time into eight
 * accumulators per quantity (numpy's leaf loop), so no row is written and read back. KL's last
 * pass starts from the normalised tensors the second pass kept, when it kept them. The GIL is
 * released while a pass runs. Arguments
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
#define HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HOT
#endif

/* ---- one side of a pair: float32 values, or bit patterns and their float32 table ------- */

/* IEEE half to float32 in hardware (F16C), where the CPU has it: exact for every number, as the
 * table is (a NaN may come out quieted, which no printed value depends on). A test build
 * defines PRECISION_SHELL_NO_F16C to check that the table gives the same totals. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(PRECISION_SHELL_NO_F16C)
#define HAVE_F16C 1
#include <immintrin.h>
static int cpu_f16c;

__attribute__((target("avx,f16c"))) static void widen_half(const uint16_t *bits, Py_ssize_t m,
                                                           float *out)
{
    Py_ssize_t k = 0;
    for (; k + 8 <= m; k += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(bits + k));
        _mm256_storeu_ps(out + k, _mm256_cvtph_ps(h));
    }
    if (k < m) {
        uint16_t rest[8] = {0};
        float wide[8];
        memcpy(rest, bits + k, (size_t)(m - k) * sizeof(uint16_t));
        _mm256_storeu_ps(wide, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)rest)));
        memcpy(out + k, wide, (size_t)(m - k) * sizeof(float));
    }
}
#else
#define HAVE_F16C 0
#endif

typedef struct {
    Py_buffer data;
    Py_buffer table;
    int width; /* bytes per element: 4 (float32), 2 or 1 (through the table) */
    int half;  /* 2-byte IEEE half: the CPU may widen it instead of the table */
    Py_ssize_t n;
} Side;

static int side_open(Side *side, PyObject *data, PyObject *table, int width, int half)
{
    memset(side, 0, sizeof(*side));
    if ((width != 1 && width != 2 && width != 4) || (half && width != 2)) {
        PyErr_SetString(PyExc_ValueError, "element width must be 1, 2 or 4 (2 for a half)");
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
    side->half = half;
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
#if HAVE_F16C
        if (side->half && cpu_f16c) {
            widen_half(bits, m, out);
            return out;
        }
#endif
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

/* One side's arguments: (data, lookup table, width, half). */
#define SIDE_FORMAT "OOii"

typedef struct {
    PyObject *data, *table;
    int width, half;
} SideArgs;

static int open_pair(const SideArgs *xa, const SideArgs *ya, Side *x, Side *y, Py_ssize_t *n)
{
    if (side_open(x, xa->data, xa->table, xa->width, xa->half) < 0) {
        return -1;
    }
    if (side_open(y, ya->data, ya->table, ya->width, ya->half) < 0) {
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

/* ---- eight elements at a time ------------------------------------------------------------
 *
 * A leaf's quantities are computed eight elements at a time in GCC vector types and added into
 * eight accumulators per quantity, which is numpy's own leaf loop (r[j] = a[j], then
 * r[j] += a[i + j]): no row is written and summed afterwards, and the quantities' additions
 * are independent chains. Each operation is the IEEE one of the scalar code, lane by lane. */

#define LANES 8

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

INLINE v8f vload(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void vstore(float *p, v8f v) { memcpy(p, &v, sizeof v); }

INLINE v8f vset(float a) { return (v8f){a, a, a, a, a, a, a, a}; }
INLINE v8i vseti(int32_t a) { return (v8i){a, a, a, a, a, a, a, a}; }

INLINE v8d vwide(v8f v) { return __builtin_convertvector(v, v8d); }

INLINE v8f vabs(v8f v) { return (v8f)((v8i)v & 0x7fffffff); }

/* m ? a : b, lane by lane (m: all ones or zero, as a comparison gives) */
INLINE v8f vselect(v8i m, v8f a, v8f b) { return (v8f)(((v8i)a & m) | ((v8i)b & ~m)); }

/* e > hi ? e : hi and e < lo ? e : lo: a NaN e keeps the extreme (its leaf's sum flags it,
 * and the flag makes the extreme NaN at the end, as ndarray.max/min do). The order of a max does not
 * matter, but for the sign of a zero max(-0, +0), which nothing printed depends on. */
INLINE v8f vmax(v8f e, v8f hi) { return vselect(e > hi, e, hi); }
INLINE v8f vmin(v8f e, v8f lo) { return vselect(e < lo, e, lo); }

/* numpy's combination of its eight leaf accumulators */
INLINE float vsum(v8f r) { return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); }
INLINE double vsumd(v8d r)
{
    return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
}

INLINE long long vcount(v8i c) /* c counts down: -1 per true comparison */
{
    long long total = 0;
    for (int j = 0; j < LANES; j++) {
        total -= c[j];
    }
    return total;
}

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
 * it is reached gives the same sums, the leaf's values in L1 and its sums in registers. */

#define Q32 5 /* float32 quantities of a pass, at most */
#define Q64 2 /* float64 quantities of a pass, at most */

typedef struct {
    float f[Q32];
    double d[Q64];
} Sums;

/* What the second pass computes, and its constants (copied into a leaf's locals: the kept
 * rows it writes may not alias them). */
typedef struct {
    int want;
    float x_norm, y_norm, x_low, x_span, y_low, y_span, kl_floor;
    int x_shift, x_scale, y_shift, y_scale;
    double x_mean, y_mean;
} SecondConsts;

typedef struct Pass Pass;
typedef void (*LeafFn)(Pass *pass, Py_ssize_t start, int n, Sums *out);

struct Pass {
    const Side *x, *y;
    LeafFn leaf;
    float xw[LEAF], yw[LEAF]; /* widened values of a leaf */
    /* first pass: constants, extremes (one per lane) and counts */
    float eps, below1, below5;
    float abs_top[LANES], rel_top[LANES], x_hi[LANES], x_lo[LANES], y_hi[LANES], y_lo[LANES];
    int nan_abs, nan_rel, nan_x, nan_y;
    long long c1, c5;
    /* second pass: what is wanted, and its constants */
    SecondConsts k2;
    float *px_keep, *qy_keep; /* KL's normalised tensors kept whole for the last pass, or NULL */
};

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
static Pass *pass_open(const SideArgs *xa, const SideArgs *ya, Side *x, Side *y, Py_ssize_t *n,
                       LeafFn leaf)
{
    if (open_pair(xa, ya, x, y, n) < 0) {
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

/* A leaf's sums: its first `body` elements (a multiple of 8; 0 when n < 8) go through the
 * eight accumulators, whose combination (numpy's) the rest is then added to one by one; n < 8:
 * from +0. The rest goes through the same vector code as eight elements: the last one
 * repeated (which changes no extreme and no NaN flag), only the first lanes summed and
 * counted. So each quantity has one formula. */
INLINE int leaf_body(int n) { return n < 8 ? 0 : n - n % 8; }

/* The leaf's elements from `body` on (1 to 7 of them), the last repeated to fill eight lanes. */
INLINE v8f rest_of(const float *v, int body, int n)
{
    float lanes[LANES];
    for (int j = 0; j < LANES; j++) {
        lanes[j] = v[j < n - body ? body + j : n - 1];
    }
    return vload(lanes);
}

/* ---- first pass ------------------------------------------------------------------------ */

enum { ABS, SQ, XX, YY, REL };
enum { XW, YW };

typedef struct {
    v8f ab, sq, xx, yy, rl;
} FirstEight;

INLINE FirstEight first_eight(v8f xv, v8f yv, v8f eps)
{
    FirstEight o;
    o.ab = vabs(xv - yv);
    o.sq = o.ab * o.ab;
    o.xx = xv * xv;
    o.yy = yv * yv;
    v8f r = vabs(xv / yv - 1.0f);
    o.rl = vselect(vabs(yv) > eps, r, vset(0.0f)); /* |y| <= eps, or a NaN y: 0 */
    return o;
}

/* The first pass's extremes (one per lane) and counts while a leaf runs. */
typedef struct {
    v8f abs_top, rel_top, x_hi, x_lo, y_hi, y_lo;
    v8i c1, c5;
} FirstTrack;

INLINE void first_track(FirstTrack *t, v8f xv, v8f yv, const FirstEight *e, v8i counted, v8f v1,
                        v8f v5)
{
    t->c1 += (e->rl < v1) & counted; /* -1 per element counted */
    t->c5 += (e->rl < v5) & counted;
    t->abs_top = vmax(e->ab, t->abs_top);
    t->rel_top = vmax(e->rl, t->rel_top);
    t->x_hi = vmax(xv, t->x_hi);
    t->x_lo = vmin(xv, t->x_lo);
    t->y_hi = vmax(yv, t->y_hi);
    t->y_lo = vmin(yv, t->y_lo);
}

HOT static void first_leaf(Pass *pass, Py_ssize_t start, int n, Sums *out)
{
    const float *xb = side_floats(pass->x, start, n, pass->xw);
    const float *yb = side_floats(pass->y, start, n, pass->yw);
    const v8f eps = vset(pass->eps), v1 = vset(pass->below1), v5 = vset(pass->below5);
    const v8i all = vseti(-1);
    const int body = leaf_body(n);
    FirstTrack t = {vload(pass->abs_top), vload(pass->rel_top), vload(pass->x_hi),
                    vload(pass->x_lo),    vload(pass->y_hi),    vload(pass->y_lo),
                    {0},                  {0}};
    float f[Q32] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    double d[Q64] = {0.0, 0.0};
    if (body) {
        FirstEight s = {0};
        v8d sx = {0}, sy = {0};
        for (int k = 0; k < body; k += LANES) {
            v8f xv = vload(xb + k), yv = vload(yb + k);
            FirstEight e = first_eight(xv, yv, eps);
            if (k == 0) { /* numpy's r[j] = a[j]: -0 stays -0 */
                s = e;
                sx = vwide(xv);
                sy = vwide(yv);
            } else {
                s.ab += e.ab;
                s.sq += e.sq;
                s.xx += e.xx;
                s.yy += e.yy;
                s.rl += e.rl;
                sx += vwide(xv);
                sy += vwide(yv);
            }
            first_track(&t, xv, yv, &e, all, v1, v5);
        }
        f[ABS] = vsum(s.ab);
        f[SQ] = vsum(s.sq);
        f[XX] = vsum(s.xx);
        f[YY] = vsum(s.yy);
        f[REL] = vsum(s.rl);
        d[XW] = vsumd(sx);
        d[YW] = vsumd(sy);
    }
    if (body < n) {
        const int m = n - body;
        v8f xv = rest_of(xb, body, n), yv = rest_of(yb, body, n);
        FirstEight e = first_eight(xv, yv, eps);
        v8i counted = {0};
        for (int j = 0; j < m; j++) { /* in sequence, as numpy adds a leaf's rest */
            f[ABS] += e.ab[j];
            f[SQ] += e.sq[j];
            f[XX] += e.xx[j];
            f[YY] += e.yy[j];
            f[REL] += e.rl[j];
            d[XW] += (double)xv[j];
            d[YW] += (double)yv[j];
            counted[j] = -1;
        }
        first_track(&t, xv, yv, &e, counted, v1, v5);
    }
    vstore(pass->abs_top, t.abs_top);
    vstore(pass->rel_top, t.rel_top);
    vstore(pass->x_hi, t.x_hi);
    vstore(pass->x_lo, t.x_lo);
    vstore(pass->y_hi, t.y_hi);
    vstore(pass->y_lo, t.y_lo);
    /* NaN flags from the leaf's sums: each quantity summed is >= 0 or NaN (|x - y|, its
     * square, x * x, y * y, the relative error), and a sum of such values, +inf included, is
     * NaN exactly when one of them is: no vector compare per element. */
    pass->nan_abs |= f[ABS] != f[ABS];
    pass->nan_rel |= f[REL] != f[REL];
    pass->nan_x |= f[XX] != f[XX];
    pass->nan_y |= f[YY] != f[YY];
    pass->c1 += vcount(t.c1);
    pass->c5 += vcount(t.c5);
    memcpy(out->f, f, sizeof f);
    memcpy(out->d, d, sizeof d);
}

/* first(x side, y side, eps, below_1e3, below_5e3) ->
 *   (abs_sum, sq_sum, xx_sum, yy_sum, rel_sum, x_wide_sum, y_wide_sum,
 *    abs_max, rel_max, x_max, x_min, y_max, y_min, below_1e3, below_5e3)
 * Extremes are NaN when a NaN was seen (ndarray.max/min) or the tensor is empty. */
static PyObject *first(PyObject *self, PyObject *args)
{
    (void)self;
    SideArgs xa, ya;
    float eps, below1, below5;
    if (!PyArg_ParseTuple(args, SIDE_FORMAT SIDE_FORMAT "fff", &xa.data, &xa.table, &xa.width,
                          &xa.half, &ya.data, &ya.table, &ya.width, &ya.half, &eps, &below1,
                          &below5)) {
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    Pass *pass = pass_open(&xa, &ya, &x, &y, &n, first_leaf);
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

/* KL's (v - low) / span clamped to >= floor (float32._kl_normalised): np.maximum keeps NaN.
 * A NaN span normalises too (span != 0 is true), as in float32._kl_normalised, and v - 0 is v
 * up to the sign of a zero, which the clamp erases: so shifted = span != 0 && low != 0, and
 * scaled = span != 0. */
INLINE v8f kl_normal8(v8f v, float low, float span, float floor_, int shifted, int scaled)
{
    v8f w = v;
    if (shifted) {
        w = w - low;
    }
    if (scaled) {
        w = w / span;
    }
    return vselect(w < floor_, vset(floor_), w);
}

/* KL's normalised row of v (n elements; the last 1-7 through a padded chunk). */
HOT static void kl_normal_row(const float *v, Py_ssize_t n, float low, float span, float floor_,
                              float *out)
{
    const int shifted = span != 0 && low != 0, scaled = span != 0;
    Py_ssize_t k = 0;
    for (; k + LANES <= n; k += LANES) {
        vstore(out + k, kl_normal8(vload(v + k), low, span, floor_, shifted, scaled));
    }
    if (k < n) {
        float lanes[LANES] = {0};
        memcpy(lanes, v + k, (size_t)(n - k) * sizeof(float));
        v8f w = kl_normal8(vload(lanes), low, span, floor_, shifted, scaled);
        vstore(lanes, w);
        memcpy(out + k, lanes, (size_t)(n - k) * sizeof(float));
    }
}

#define WANT_COS 1
#define WANT_KL 2
#define WANT_STD 4

enum { COS, PX, QY };
enum { XVAR, YVAR };

typedef struct {
    v8f cs, px, qy; /* what is not wanted stays +0, and sums to +0 */
    v8d xv, yv;
} SecondEight;

INLINE SecondEight second_eight(const SecondConsts *k, v8f xv, v8f yv)
{
    SecondEight o = {0};
    if (k->want & WANT_COS) {
        o.cs = (xv / k->x_norm) * (yv / k->y_norm);
    }
    if (k->want & WANT_KL) {
        o.px = kl_normal8(xv, k->x_low, k->x_span, k->kl_floor, k->x_shift, k->x_scale);
        o.qy = kl_normal8(yv, k->y_low, k->y_span, k->kl_floor, k->y_shift, k->y_scale);
    }
    if (k->want & WANT_STD) {
        v8d dx = vwide(xv) - k->x_mean, dy = vwide(yv) - k->y_mean;
        o.xv = dx * dx;
        o.yv = dy * dy;
    }
    return o;
}

HOT static void second_leaf(Pass *pass, Py_ssize_t start, int n, Sums *out)
{
    const float *xb = side_floats(pass->x, start, n, pass->xw);
    const float *yb = side_floats(pass->y, start, n, pass->yw);
    float *const px_keep = pass->px_keep, *const qy_keep = pass->qy_keep;
    const SecondConsts k2 = pass->k2;
    const int body = leaf_body(n);
    float f[Q32] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    double d[Q64] = {0.0, 0.0};
    if (body) {
        SecondEight s = {0};
        for (int k = 0; k < body; k += LANES) {
            SecondEight e = second_eight(&k2, vload(xb + k), vload(yb + k));
            if (px_keep) {
                vstore(px_keep + start + k, e.px);
                vstore(qy_keep + start + k, e.qy);
            }
            if (k == 0) { /* numpy's r[j] = a[j] */
                s = e;
            } else {
                s.cs += e.cs;
                s.px += e.px;
                s.qy += e.qy;
                s.xv += e.xv;
                s.yv += e.yv;
            }
        }
        f[COS] = vsum(s.cs);
        f[PX] = vsum(s.px);
        f[QY] = vsum(s.qy);
        d[XVAR] = vsumd(s.xv);
        d[YVAR] = vsumd(s.yv);
    }
    if (body < n) {
        SecondEight e = second_eight(&k2, rest_of(xb, body, n), rest_of(yb, body, n));
        for (int j = 0; j < n - body; j++) { /* in sequence, as numpy adds a leaf's rest */
            f[COS] += e.cs[j];
            f[PX] += e.px[j];
            f[QY] += e.qy[j];
            d[XVAR] += e.xv[j];
            d[YVAR] += e.yv[j];
            if (px_keep) {
                px_keep[start + body + j] = e.px[j];
                qy_keep[start + body + j] = e.qy[j];
            }
        }
    }
    memcpy(out->f, f, sizeof f);
    memcpy(out->d, d, sizeof d);
}

/* second(x side, y side, want, x_norm, y_norm, x_low, x_span, y_low, y_span, kl_floor, x_mean,
 *        y_mean, px_keep, qy_keep) -> (cos_sum, px_sum, qy_sum, x_var, y_var); a part not
 * wanted is 0. px_keep and qy_keep: writable float32 buffers of n elements that receive KL's
 * normalised tensors, or empty ones (not kept). */
static PyObject *second(PyObject *self, PyObject *args)
{
    (void)self;
    SideArgs xa, ya;
    int want;
    float x_norm, y_norm, x_low, x_span, y_low, y_span, kl_floor;
    double x_mean, y_mean;
    PyObject *pko, *qko;
    if (!PyArg_ParseTuple(args, SIDE_FORMAT SIDE_FORMAT "ifffffffddOO", &xa.data, &xa.table,
                          &xa.width, &xa.half, &ya.data, &ya.table, &ya.width, &ya.half, &want,
                          &x_norm, &y_norm, &x_low, &x_span, &y_low, &y_span, &kl_floor, &x_mean,
                          &y_mean, &pko, &qko)) {
        return NULL;
    }
    Py_buffer pk, qk;
    if (PyObject_GetBuffer(pko, &pk, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(qko, &qk, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&pk);
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    Pass *pass = pass_open(&xa, &ya, &x, &y, &n, second_leaf);
    if (pass == NULL) {
        PyBuffer_Release(&pk);
        PyBuffer_Release(&qk);
        return NULL;
    }
    Py_ssize_t kept = n * (Py_ssize_t)sizeof(float);
    if (pk.len != qk.len || (pk.len != 0 && pk.len != kept)) {
        PyBuffer_Release(&pk);
        PyBuffer_Release(&qk);
        side_close(&x);
        side_close(&y);
        free(pass);
        PyErr_SetString(PyExc_ValueError, "second: px and qy keep all n float32 values, or none");
        return NULL;
    }
    if (pk.len != 0 && (want & WANT_KL) && n > 0) {
        pass->px_keep = pk.buf;
        pass->qy_keep = qk.buf;
    }
    pass->k2 = (SecondConsts){
        .want = want,
        .x_norm = x_norm,
        .y_norm = y_norm,
        .x_low = x_low,
        .x_span = x_span,
        .y_low = y_low,
        .y_span = y_span,
        .kl_floor = kl_floor,
        .x_shift = x_span != 0 && x_low != 0,
        .x_scale = x_span != 0,
        .y_shift = y_span != 0 && y_low != 0,
        .y_scale = y_span != 0,
        .x_mean = x_mean,
        .y_mean = y_mean,
    };
    Sums t;

    Py_BEGIN_ALLOW_THREADS
    run_blocks(pass, n, &t);
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pk);
    PyBuffer_Release(&qk);
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

/* numpy's pairwise sum of the products p[i] * t[i] (the row numpy would sum), the products
 * computed in the leaves: n < 8 in sequence from +0, else eight accumulators, their
 * combination, then the rest in sequence; above 128, halves split at a multiple of 8. */
INLINE float leaf_products(const float *p, const float *t, Py_ssize_t n)
{
    float res = 0.0f;
    Py_ssize_t body = n < 8 ? 0 : n - n % 8;
    if (body) {
        v8f r = vload(p) * vload(t);
        for (Py_ssize_t i = LANES; i < body; i += LANES) {
            r += vload(p + i) * vload(t + i);
        }
        res = vsum(r);
    }
    for (Py_ssize_t i = body; i < n; i++) {
        res += p[i] * t[i];
    }
    return res;
}

HOT static float pairwise_products(const float *p, const float *t, Py_ssize_t n)
{
    if (n <= LEAF) {
        return leaf_products(p, t, n);
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_products(p, t, n2) + pairwise_products(p + n2, t + n2, n - n2);
}

/* The block sums of p * log_r (numpy's add.reduce: +0 plus the pairwise sum) added to
 * `running` in sequence. */
static float kl_terms_row(const float *p, const float *t, Py_ssize_t m, float running)
{
    for (Py_ssize_t start = 0; start < m; start += BLOCK) {
        Py_ssize_t size = m - start < BLOCK ? m - start : BLOCK;
        running += 0.0f + pairwise_products(p + start, t + start, size);
    }
    return running;
}

/* kl_ratio(x side, y side, start, x_low, x_span, y_low, y_span,
 *          kl_floor, px_total, qy_total, p, r): for elements [start, start + len(p)),
 *   p = px / px_total and r = p / (qy / qy_total) (numpy's log of r comes next). */
static PyObject *kl_ratio(PyObject *self, PyObject *args)
{
    (void)self;
    SideArgs xa, ya;
    PyObject *po, *ro;
    Py_ssize_t start;
    float x_low, x_span, y_low, y_span, kl_floor, p_total, q_total;
    if (!PyArg_ParseTuple(args, SIDE_FORMAT SIDE_FORMAT "nfffffffOO", &xa.data, &xa.table,
                          &xa.width, &xa.half, &ya.data, &ya.table, &ya.width, &ya.half, &start,
                          &x_low, &x_span, &y_low, &y_span, &kl_floor, &p_total, &q_total, &po,
                          &ro)) {
        return NULL;
    }
    Side x, y;
    Py_ssize_t n;
    if (open_pair(&xa, &ya, &x, &y, &n) < 0) {
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

/* kl_ratio_kept(p, r, px_total, qy_total): p and r hold a span of KL's normalised tensors
 * (second()'s px_keep and qy_keep); in place, p = px / px_total and r = p / (qy / qy_total). */
static PyObject *kl_ratio_kept(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *po, *ro;
    float p_total, q_total;
    if (!PyArg_ParseTuple(args, "OOff", &po, &ro, &p_total, &q_total)) {
        return NULL;
    }
    Py_buffer pb, rb;
    if (PyObject_GetBuffer(po, &pb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(ro, &rb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&pb);
        return NULL;
    }
    if (pb.len != rb.len || pb.len % (Py_ssize_t)sizeof(float) != 0) {
        PyBuffer_Release(&pb);
        PyBuffer_Release(&rb);
        PyErr_SetString(PyExc_ValueError, "kl_ratio_kept: p and r must be float32 of one length");
        return NULL;
    }
    Py_ssize_t m = pb.len / (Py_ssize_t)sizeof(float);
    float *p = pb.buf, *r = rb.buf;

    Py_BEGIN_ALLOW_THREADS
    kl_ratio_row(p, r, m, p_total, q_total);
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&pb);
    PyBuffer_Release(&rb);
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
    if (PyObject_GetBuffer(lo, &lb, PyBUF_C_CONTIGUOUS) < 0) {
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
    const float *t = lb.buf;

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
    {"kl_ratio_kept", kl_ratio_kept, METH_VARARGS, "KL's p and p / q from the kept tensors."},
    {"kl_terms", kl_terms, METH_VARARGS, "KL's p * log(p / q) summed block by block."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_passes", "The float32 metric passes, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__passes(void)
{
#if HAVE_F16C
    __builtin_cpu_init();
    cpu_f16c = __builtin_cpu_supports("f16c");
#endif
    return PyModule_Create(&module);
}
