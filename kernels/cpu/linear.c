/* The linear layer: weights packed once into panels, x @ W^T with fused epilogues (silu(gate) *
 * up, a residual). The overview of the units is in common.h. */
#include "common.h"

/* ------------------------------------------------------------------------------ linear
 * y = x @ W^T for bf16 or float32 weights W (N, K), packed once into panels of 32 output
 * columns, K padded to an even Ke with zeros. For the fused gate/up projection (silu_half =
 * H > 0, N = 2H, H % 16 == 0), panel p holds gate rows p*16.. in columns 0..15 and the matching
 * up rows H + p*16.. in columns 16..31, so the epilogue can emit silu(gate) * up for 16 outputs
 * without a second pass.
 *
 * Math in float32, one fixed chain per output element whatever the build, the batch or the
 * weights' dtype: for each pair of inputs k = 2t, 2t + 1 in order t = 0, 1, ..,
 *     acc = fma(x[2t+1], w[2t+1], acc); acc = fma(x[2t], w[2t], acc)
 * (the odd element first), which is exactly what one AVX512-BF16 `vdpbf16ps` lane does for
 * bf16 x and w: a bf16 x bf16 product is exact in float32, so its FMA rounds once, as the
 * instruction's does. Where the CPU has it (Zen 4/5, Sapphire Rapids and later) bf16
 * activations go through vdpbf16ps at twice the FMA rate, and the other builds compute the
 * same bits with FMAs (up to subnormal inputs or partial sums, which vdpbf16ps flushes to 0).
 */
#define NR 32
#if defined(TK_AVX2)
#define MR 5   /* 5 rows x 16 columns: 10 of the 16 ymm registers accumulate (6 rows spill: half the speed) */
#else
#define MR 12
#endif
#ifndef PANEL_PREFETCH_PAIRS
#define PANEL_PREFETCH_PAIRS 32  /* pair rows ahead in a panel (4 KB in bf16): its first reader streams it from memory */
#endif

/* Whether bf16 activations take the vdpbf16ps path (AVX512-BF16) in this build. */
int tk_bf16_dot(void) {
#if defined(TK_BF16_DOT)
    return 1;
#else
    return 0;
#endif
}

static inline int64_t even_k(int64_t K) { return K + (K & 1); }

int64_t tk_linear_packed_numel(int64_t N, int64_t K) { return ((N + NR - 1) / NR) * NR * even_k(K); }

/* Ask for transparent huge pages on [p, p + n) before it is first written (the weights are
   streamed every step: 2 MB pages spare the TLB misses of 4 KB ones). Best effort. */
void tk_advise_huge(void *p, int64_t n) {
#ifdef MADV_HUGEPAGE
    uintptr_t start = ((uintptr_t)p + (1u << 21) - 1) & ~(uintptr_t)((1u << 21) - 1);
    uintptr_t end = ((uintptr_t)p + (uintptr_t)n) & ~(uintptr_t)((1u << 21) - 1);
    if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#endif
}

/* Where W[col j of the panel][k] sits within a panel (Ke * 32 elements). A "pair row" (inputs
   2t and 2t + 1, 64 elements) starts at 64t. bf16: column j's pair (w[2t], w[2t+1]) at 2j, 2j+1,
   the vdpbf16ps operand layout; one 64-byte load widens to columns 0..15 at k = 2t (shift) and
   2t + 1 (mask) in-lane. float32: row k = 2t then row 2t + 1, column j at element j. */
static inline int64_t panel_pos(int64_t k, int64_t j, int w_dtype) {
    if (w_dtype == F32) return k * NR + j;
    return (k >> 1) * 2 * NR + 2 * j + (k & 1);
}

/* w (N, K) in w_dtype (BF16 or F32) -> out, tk_linear_packed_numel(N, K) elements of w_dtype. */
void tk_linear_pack(const void *w, int w_dtype, int64_t N, int64_t K, int64_t silu_half, void *out) {
    int64_t P = (N + NR - 1) / NR, Ke = even_k(K);
    for (int64_t p = 0; p < P; p++)
        for (int64_t j = 0; j < NR; j++) {
            int64_t n;
            if (silu_half > 0) n = j < 16 ? p * 16 + j : silu_half + p * 16 + (j - 16);
            else n = p * NR + j;
            for (int64_t k = 0; k < Ke; k++) {
                int64_t dst = p * Ke * NR + panel_pos(k, j, w_dtype);
                int live = n < N && k < K;
                if (w_dtype == F32) ((float *)out)[dst] = live ? ((const float *)w)[n * K + k] : 0.0f;
                else ((uint16_t *)out)[dst] = live ? ((const uint16_t *)w)[n * K + k] : 0;
            }
        }
}

/* out[j] = silu(g[j]) * u[j] for 16 columns: silu(g) = (g >= 0 ? g : g e) / (1 + e) with
   e = exp(-|g|) <= 1 (no overflow for any g), and e = 0 for |g| > 87 where exp_nonpos clamps
   (silu(g) is then g, or -0 for g < 0, as torch's float32 silu gives; -inf gives NaN as there).
   The same operations in every build. */
static inline void silu_mul16(const float *g, const float *u, float *out) {
#if defined(__AVX512F__)
    __m512 gv = _mm512_loadu_ps(g);
    __m512 nabs = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(gv), _mm512_set1_epi32((int)0x80000000u)));
    __m512 e = vexp_nonpos(nabs);
    e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(nabs, _mm512_set1_ps(-87.0f), _CMP_LT_OQ), e, _mm512_setzero_ps());
    __mmask16 neg = _mm512_cmp_ps_mask(gv, _mm512_setzero_ps(), _CMP_NGE_UQ);  /* g < 0 or NaN */
    __m512 num = _mm512_mask_mul_ps(gv, neg, gv, e);
    __m512 silu = _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_storeu_ps(out, _mm512_mul_ps(silu, _mm512_loadu_ps(u)));
#elif defined(TK_AVX2)
    for (int h = 0; h < 16; h += 8) {
        __m256 gv = _mm256_loadu_ps(g + h);
        __m256 nabs = _mm256_or_ps(gv, _mm256_set1_ps(-0.0f));
        __m256 e = vexp_nonpos(nabs);
        e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(nabs, _mm256_set1_ps(-87.0f), _CMP_LT_OQ));
        __m256 neg = _mm256_cmp_ps(gv, _mm256_setzero_ps(), _CMP_NGE_UQ);
        __m256 num = _mm256_blendv_ps(gv, _mm256_mul_ps(gv, e), neg);
        __m256 silu = _mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(out + h, _mm256_mul_ps(silu, _mm256_loadu_ps(u + h)));
    }
#else
    for (int j = 0; j < 16; j++) {
        float e = -fabsf(g[j]) < -87.0f ? 0.0f : exp_nonpos(-fabsf(g[j]));
        float num = g[j] >= 0.0f ? g[j] : g[j] * e;
        out[j] = num / (1.0f + e) * u[j];
    }
#endif
}

/* acc (mr x 32) for rows m0.., panel p -> outputs (+ residual), VW columns at a time where the
   build has vectors: the same float32 add and the same rounding to bf16 as the scalar tail. */
static void linear_epilogue(const float *acc, int mr, int64_t m0, int64_t p, int64_t N, int silu_mode,
                            void *y, int y_dtype, int64_t ldy, const void *resid, int r_dtype, int64_t ldr) {
    for (int i = 0; i < mr; i++) {
        int64_t row = m0 + i, n0 = silu_mode ? p * 16 : p * NR;
        int64_t width = (silu_mode ? N / 2 : N) - n0, cap = silu_mode ? 16 : NR;
        width = width < cap ? width : cap;
        float v[16];
        const float *src = acc + i * NR;
        if (silu_mode) {
            silu_mul16(src, src + 16, v);
            src = v;
        }
        const void *r = silu_mode ? NULL : resid;
        int64_t j = 0;
#if defined(VW)
        for (; j + VW <= width; j += VW) {
            vecf x = VLOAD(src + j);
            if (r) x = VADD(x, r_dtype == BF16 ? VLOAD_BF16((const uint16_t *)r + row * ldr + n0 + j)
                                               : VLOAD((const float *)r + row * ldr + n0 + j));
            if (y_dtype == BF16) VSTORE_BF16((uint16_t *)y + row * ldy + n0 + j, x);
            else VSTORE((float *)y + row * ldy + n0 + j, x);
        }
#endif
        for (; j < width; j++) {
            float x = src[j];
            if (r) x += load_elem(r, r_dtype, row * ldr + n0 + j);
            store_elem(y, y_dtype, row * ldy + n0 + j, x);
        }
    }
}

/* Pair row t of a panel: 64 elements. */
static inline const char *pair_row(const void *panel, int64_t t, int w_dtype) {
    return (const char *)panel + t * 2 * NR * (w_dtype == F32 ? 4 : 2);
}

/* Prefetch the pair row PANEL_PREFETCH_PAIRS ahead (its 2 cache lines in bf16, 4 in float32). */
#define PREFETCH_PANEL_PAIR(panel, t, w_dtype)                                                         \
    do {                                                                                               \
        const char *pf_ = pair_row(panel, (t) + PANEL_PREFETCH_PAIRS, w_dtype);                        \
        _mm_prefetch(pf_, _MM_HINT_T0);                                                                \
        _mm_prefetch(pf_ + 64, _MM_HINT_T0);                                                           \
        if ((w_dtype) == F32) { _mm_prefetch(pf_ + 128, _MM_HINT_T0); _mm_prefetch(pf_ + 192, _MM_HINT_T0); } \
    } while (0)

#if defined(__AVX512F__)
/* Pair row t of a panel in float32: columns 0..15 (c0) and 16..31 (c1) at k = 2t (e) and 2t+1 (o). */
static inline __attribute__((always_inline)) void load_panel_pair(const void *panel, int64_t t, int w_dtype,
                                                                  __m512 *e0, __m512 *e1, __m512 *o0, __m512 *o1) {
    const char *b = pair_row(panel, t, w_dtype);
    if (w_dtype == F32) {
        *e0 = _mm512_loadu_ps((const float *)b);
        *e1 = _mm512_loadu_ps((const float *)b + 16);
        *o0 = _mm512_loadu_ps((const float *)b + 32);
        *o1 = _mm512_loadu_ps((const float *)b + 48);
    } else {
        load_bf16x32_split((const uint16_t *)b, e0, o0);
        load_bf16x32_split((const uint16_t *)b + 32, e1, o1);
    }
}

/* MR_ rows x 32 columns, MR_ and w_dtype compile-time constants so the accumulators live in
   registers and the weight load is the dtype's own. x: MR_ rows of Ke floats. */
static inline __attribute__((always_inline)) void tile_fixed(const float *x, int64_t Ke, const void *panel,
                                                             int w_dtype, float *acc, const int MR_) {
    __m512 a0[MR], a1[MR];
    for (int i = 0; i < MR_; i++) { a0[i] = _mm512_setzero_ps(); a1[i] = _mm512_setzero_ps(); }
    for (int64_t t = 0; t < Ke / 2; t++) {
        PREFETCH_PANEL_PAIR(panel, t, w_dtype);
        __m512 e0, e1, o0, o1;
        load_panel_pair(panel, t, w_dtype, &e0, &e1, &o0, &o1);
        for (int i = 0; i < MR_; i++) {
            __m512 xo = _mm512_set1_ps(x[i * Ke + 2 * t + 1]), xe = _mm512_set1_ps(x[i * Ke + 2 * t]);
            a0[i] = _mm512_fmadd_ps(xe, e0, _mm512_fmadd_ps(xo, o0, a0[i]));
            a1[i] = _mm512_fmadd_ps(xe, e1, _mm512_fmadd_ps(xo, o1, a1[i]));
        }
    }
    for (int i = 0; i < MR_; i++) {
        _mm512_storeu_ps(acc + i * NR, a0[i]);
        _mm512_storeu_ps(acc + i * NR + 16, a1[i]);
    }
}
#define TILE_CASE(n) case n: \
    if (w_dtype == F32) tile_fixed(x, Ke, panel, F32, acc, n); else tile_fixed(x, Ke, panel, BF16, acc, n); break;

/* One row against two panels at once: four accumulators instead of two, for the
   bandwidth-bound M = 1 case. Each output's chain is the same as tile_fixed's. */
static inline __attribute__((always_inline)) void tile_row_two_panels_t(const float *x, int64_t Ke, const void *p0,
                                                                        const void *p1, int w_dtype, float *acc) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < Ke / 2; t++) {
        PREFETCH_PANEL_PAIR(p0, t, w_dtype);
        PREFETCH_PANEL_PAIR(p1, t, w_dtype);
        __m512 xo = _mm512_set1_ps(x[2 * t + 1]), xe = _mm512_set1_ps(x[2 * t]), e0, e1, o0, o1, e2, e3, o2, o3;
        load_panel_pair(p0, t, w_dtype, &e0, &e1, &o0, &o1);
        load_panel_pair(p1, t, w_dtype, &e2, &e3, &o2, &o3);
        a0 = _mm512_fmadd_ps(xe, e0, _mm512_fmadd_ps(xo, o0, a0));
        a1 = _mm512_fmadd_ps(xe, e1, _mm512_fmadd_ps(xo, o1, a1));
        a2 = _mm512_fmadd_ps(xe, e2, _mm512_fmadd_ps(xo, o2, a2));
        a3 = _mm512_fmadd_ps(xe, e3, _mm512_fmadd_ps(xo, o3, a3));
    }
    _mm512_storeu_ps(acc, a0);
    _mm512_storeu_ps(acc + 16, a1);
    _mm512_storeu_ps(acc + NR, a2);
    _mm512_storeu_ps(acc + NR + 16, a3);
}
#elif defined(TK_AVX2)
/* Eight columns c..c+7 of pair row t in float32, at k = 2t (e) and 2t + 1 (o). */
static inline __attribute__((always_inline)) void load_panel_cols8(const void *panel, int64_t t, int c, int w_dtype,
                                                                   __m256 *e, __m256 *o) {
    const char *b = pair_row(panel, t, w_dtype);
    if (w_dtype == F32) {
        *e = _mm256_loadu_ps((const float *)b + c);
        *o = _mm256_loadu_ps((const float *)b + NR + c);
    } else {
        load_bf16x16_split((const uint16_t *)b + 2 * c, e, o);
    }
}

/* Columns c..c+7 of row 2t + odd in float32 (bf16: the pair word's high or low half). */
static inline __attribute__((always_inline)) __m256 load_panel_row8(const void *panel, int64_t t, int odd, int c,
                                                                    int w_dtype) {
    const char *b = pair_row(panel, t, w_dtype);
    if (w_dtype == F32) return _mm256_loadu_ps((const float *)b + odd * NR + c);
    __m256i w = _mm256_loadu_si256((const __m256i *)((const uint16_t *)b + 2 * c));
    return _mm256_castsi256_ps(odd ? _mm256_and_si256(w, _mm256_set1_epi32((int)0xFFFF0000u)) : _mm256_slli_epi32(w, 16));
}

/* MR_ rows x one half panel (columns 8h..8h+7 and 16+8h..16+8h+7): the same chain per output
   as the other builds, with 2 * MR_ accumulators in registers. */
static inline __attribute__((always_inline)) void tile_half_fixed(const float *x, int64_t Ke, const void *panel,
                                                                  int half, int w_dtype, float *acc, const int MR_) {
    __m256 al[MR], ah[MR];
    for (int i = 0; i < MR_; i++) { al[i] = _mm256_setzero_ps(); ah[i] = _mm256_setzero_ps(); }
    for (int64_t t = 0; t < Ke / 2; t++) {
        if (!half) PREFETCH_PANEL_PAIR(panel, t, w_dtype);
        /* the odd row, then the even one: two weight vectors live at a time (10 accumulators +
           2 + a broadcast fit the 16 ymm registers; holding all four spilled) */
        for (int e = 1; e >= 0; e--) {
            __m256 wl = load_panel_row8(panel, t, e, 8 * half, w_dtype);
            __m256 wh = load_panel_row8(panel, t, e, 16 + 8 * half, w_dtype);
            for (int i = 0; i < MR_; i++) {
                __m256 xv = _mm256_broadcast_ss(x + i * Ke + 2 * t + e);
                al[i] = _mm256_fmadd_ps(xv, wl, al[i]);
                ah[i] = _mm256_fmadd_ps(xv, wh, ah[i]);
            }
        }
    }
    for (int i = 0; i < MR_; i++) {
        _mm256_storeu_ps(acc + i * NR + half * 8, al[i]);
        _mm256_storeu_ps(acc + i * NR + 16 + half * 8, ah[i]);
    }
}
#define TILE_HALVES(n, dt) tile_half_fixed(x, Ke, panel, 0, dt, acc, n); tile_half_fixed(x, Ke, panel, 1, dt, acc, n);
#define TILE_CASE(n) case n: if (w_dtype == F32) { TILE_HALVES(n, F32) } else { TILE_HALVES(n, BF16) } break;

/* One row against two panels: eight accumulators for the bandwidth-bound M = 1 case. */
static inline __attribute__((always_inline)) void tile_row_two_panels_t(const float *x, int64_t Ke, const void *p0,
                                                                        const void *p1, int w_dtype, float *acc) {
    __m256 a[8];
    for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();
    for (int64_t t = 0; t < Ke / 2; t++) {
        PREFETCH_PANEL_PAIR(p0, t, w_dtype);
        PREFETCH_PANEL_PAIR(p1, t, w_dtype);
        __m256 xo = _mm256_broadcast_ss(x + 2 * t + 1), xe = _mm256_broadcast_ss(x + 2 * t);
        for (int c = 0; c < 8; c++) {  /* c: panel c / 4, columns 8 * (c % 4).. */
            __m256 e, o;
            load_panel_cols8(c < 4 ? p0 : p1, t, 8 * (c & 3), w_dtype, &e, &o);
            a[c] = _mm256_fmadd_ps(xe, e, _mm256_fmadd_ps(xo, o, a[c]));
        }
    }
    for (int c = 0; c < 8; c++) _mm256_storeu_ps(acc + (c / 4) * NR + 8 * (c & 3), a[c]);
}
#endif

#if defined(__AVX512F__) || defined(TK_AVX2)
static void tile_row_two_panels(const float *x, int64_t Ke, const void *p0, const void *p1, int w_dtype, float *acc) {
    if (w_dtype == F32) tile_row_two_panels_t(x, Ke, p0, p1, F32, acc);
    else tile_row_two_panels_t(x, Ke, p0, p1, BF16, acc);
}
#endif

static void linear_tile(const float *x, int64_t Ke, int mr, const void *panel, int w_dtype, float *acc) {
#if defined(__AVX512F__)
    switch (mr) {
        TILE_CASE(1) TILE_CASE(2) TILE_CASE(3) TILE_CASE(4) TILE_CASE(5) TILE_CASE(6)
        TILE_CASE(7) TILE_CASE(8) TILE_CASE(9) TILE_CASE(10) TILE_CASE(11) TILE_CASE(12)
    }
#elif defined(TK_AVX2)
    switch (mr) { TILE_CASE(1) TILE_CASE(2) TILE_CASE(3) TILE_CASE(4) TILE_CASE(5) }
#else
    for (int i = 0; i < mr * NR; i++) acc[i] = 0.0f;
    for (int64_t k = 0; k < Ke; k += 2) {
        float we[NR], wo[NR];
        for (int j = 0; j < NR; j++) {
            we[j] = load_elem(panel, w_dtype, panel_pos(k, j, w_dtype));
            wo[j] = load_elem(panel, w_dtype, panel_pos(k + 1, j, w_dtype));
        }
        for (int i = 0; i < mr; i++) {
            float xe = x[i * Ke + k], xo = x[i * Ke + k + 1];
            for (int j = 0; j < NR; j++) acc[i * NR + j] = fmaf(xe, we[j], fmaf(xo, wo[j], acc[i * NR + j]));
        }
    }
#endif
}

#if defined(TK_BF16_DOT)
/* The same chains with vdpbf16ps: x holds mr rows of Ke bf16, each pair (x[2t], x[2t+1]) one
   32-bit broadcast against the panel's pair row t (columns 0..15, then 16..31). */
static inline __attribute__((always_inline)) void tile_dot_fixed(const uint16_t *x, int64_t Ke, const void *panel,
                                                                 float *acc, const int MR_) {
    __m512 a0[MR], a1[MR];
    for (int i = 0; i < MR_; i++) { a0[i] = _mm512_setzero_ps(); a1[i] = _mm512_setzero_ps(); }
    for (int64_t t = 0; t < Ke / 2; t++) {
        PREFETCH_PANEL_PAIR(panel, t, BF16);
        const char *b = pair_row(panel, t, BF16);
        __m512bh w0 = (__m512bh)_mm512_loadu_si512((const void *)b);
        __m512bh w1 = (__m512bh)_mm512_loadu_si512((const void *)(b + 64));
        for (int i = 0; i < MR_; i++) {
            int32_t pair;
            memcpy(&pair, x + i * Ke + 2 * t, 4);
            __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
            a0[i] = _mm512_dpbf16_ps(a0[i], xv, w0);
            a1[i] = _mm512_dpbf16_ps(a1[i], xv, w1);
        }
    }
    for (int i = 0; i < MR_; i++) {
        _mm512_storeu_ps(acc + i * NR, a0[i]);
        _mm512_storeu_ps(acc + i * NR + 16, a1[i]);
    }
}
#define DOT_CASE(n) case n: tile_dot_fixed(x, Ke, panel, acc, n); break;

static void linear_tile_dot(const uint16_t *x, int64_t Ke, int mr, const void *panel, float *acc) {
    switch (mr) {
        DOT_CASE(1) DOT_CASE(2) DOT_CASE(3) DOT_CASE(4) DOT_CASE(5) DOT_CASE(6)
        DOT_CASE(7) DOT_CASE(8) DOT_CASE(9) DOT_CASE(10) DOT_CASE(11) DOT_CASE(12)
    }
}

static void tile_row_two_panels_dot(const uint16_t *x, int64_t Ke, const void *p0, const void *p1, float *acc) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < Ke / 2; t++) {
        PREFETCH_PANEL_PAIR(p0, t, BF16);
        PREFETCH_PANEL_PAIR(p1, t, BF16);
        int32_t pair;
        memcpy(&pair, x + 2 * t, 4);
        __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
        const char *b0 = pair_row(p0, t, BF16), *b1 = pair_row(p1, t, BF16);
        a0 = _mm512_dpbf16_ps(a0, xv, (__m512bh)_mm512_loadu_si512((const void *)b0));
        a1 = _mm512_dpbf16_ps(a1, xv, (__m512bh)_mm512_loadu_si512((const void *)(b0 + 64)));
        a2 = _mm512_dpbf16_ps(a2, xv, (__m512bh)_mm512_loadu_si512((const void *)b1));
        a3 = _mm512_dpbf16_ps(a3, xv, (__m512bh)_mm512_loadu_si512((const void *)(b1 + 64)));
    }
    _mm512_storeu_ps(acc, a0);
    _mm512_storeu_ps(acc + 16, a1);
    _mm512_storeu_ps(acc + NR, a2);
    _mm512_storeu_ps(acc + NR + 16, a3);
}
#endif

void tk_linear(const void *x, int x_dtype, int64_t M, int64_t K, int64_t ldx, const void *packed, int w_dtype,
               int64_t N, int64_t silu_half, void *y, int y_dtype, int64_t ldy, const void *resid, int r_dtype,
               int64_t ldr, int nthreads) {
    if (M <= 0) return;
    const int64_t Ke = even_k(K);
    /* Activations once into rows of Ke (a zero pads an odd K): bf16 as they are for the
       vdpbf16ps path, float32 otherwise. */
    int dot = 0;
    float *xf = NULL;
    uint16_t *xb = NULL;
#if defined(TK_BF16_DOT)
    dot = x_dtype == BF16 && w_dtype == BF16;
#endif
    if (dot) {
        xb = (uint16_t *)thread_buffer((M * Ke + 1) / 2);
        for (int64_t m = 0; m < M; m++) {
            memcpy(xb + m * Ke, (const uint16_t *)x + m * ldx, (size_t)K * 2);
            if (Ke > K) xb[m * Ke + K] = 0;
        }
    } else {
        xf = thread_buffer(M * Ke);
        for (int64_t m = 0; m < M; m++) {
            if (x_dtype == BF16) to_f32((const uint16_t *)x + m * ldx, BF16, K, xf + m * Ke);
            else memcpy(xf + m * Ke, (const float *)x + m * ldx, (size_t)K * 4);
            if (Ke > K) xf[m * Ke + K] = 0.0f;
        }
    }
    (void)xb;
    /* Blocks of MB rows x one panel: a block's activations stay in L2 while the panels stream
       past (prefill), and a decode step (M <= MB) reads each panel once. */
    const int64_t MB = 8 * MR, panel_bytes = Ke * NR * (w_dtype == F32 ? 4 : 2);
    const char *packed_bytes = (const char *)packed;
    int64_t P = (N + NR - 1) / NR, nblocks = (M + MB - 1) / MB;
    int silu_mode = silu_half > 0;
#if defined(__AVX512F__) || defined(TK_AVX2)
    if (M == 1) {
#pragma omp parallel for schedule(static) num_threads(nthreads)
        for (int64_t p = 0; p < P; p += 2) {
            float acc[2 * NR] __attribute__((aligned(64)));
            const char *p0 = packed_bytes + p * panel_bytes;
            if (p + 1 < P) {
#if defined(TK_BF16_DOT)
                if (dot) tile_row_two_panels_dot(xb, Ke, p0, p0 + panel_bytes, acc);
                else
#endif
                    tile_row_two_panels(xf, Ke, p0, p0 + panel_bytes, w_dtype, acc);
                linear_epilogue(acc, 1, 0, p, N, silu_mode, y, y_dtype, ldy, resid, r_dtype, ldr);
                linear_epilogue(acc + NR, 1, 0, p + 1, N, silu_mode, y, y_dtype, ldy, resid, r_dtype, ldr);
            } else {
#if defined(TK_BF16_DOT)
                if (dot) linear_tile_dot(xb, Ke, 1, p0, acc);
                else
#endif
                    linear_tile(xf, Ke, 1, p0, w_dtype, acc);
                linear_epilogue(acc, 1, 0, p, N, silu_mode, y, y_dtype, ldy, resid, r_dtype, ldr);
            }
        }
        return;
    }
#endif
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads)
    for (int64_t b = 0; b < nblocks; b++)
        for (int64_t p = 0; p < P; p++) {
            float acc[MR * NR] __attribute__((aligned(64)));
            const char *panel = packed_bytes + p * panel_bytes;
            int64_t m_end = (b + 1) * MB < M ? (b + 1) * MB : M;
            for (int64_t m = b * MB; m < m_end; m += MR) {
                int mr = (m_end - m) < MR ? (int)(m_end - m) : MR;
#if defined(TK_BF16_DOT)
                if (dot) linear_tile_dot(xb + m * Ke, Ke, mr, panel, acc);
                else
#endif
                    linear_tile(xf + m * Ke, Ke, mr, panel, w_dtype, acc);
                linear_epilogue(acc, mr, m, p, N, silu_mode, y, y_dtype, ldy, resid, r_dtype, ldr);
            }
        }
}
