/* Native CPU kernels for the bundled engine's decode path (see kernels/cpu/__init__.py).
 *
 * Every routine computes each output element from its own inputs in one fixed order,
 * whatever the other rows of the call and however OpenMP splits the work: results are
 * batch invariant and deterministic, which "same seed, same text in any batch" needs.
 *
 * dtype codes: 0 = float32, 1 = bfloat16, 2 = float8_e4m3fn (KV cache only).
 * Compiled at first use with -O3 -march=native -fopenmp. Three builds of the hot loops: AVX-512
 * when the compiler targets AVX-512F (with vdpbf16ps for bf16 x bf16 products where it also
 * targets AVX512-BF16), AVX2 + FMA (8 lanes: Zen 2/3, most Intel client parts) otherwise, and
 * portable C everywhere else. The linear layer, RMSNorm and the silu epilogue are bit-equal
 * across them (one chain per output, see "linear"); attention sums a score in an order of its
 * own per build.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <sys/mman.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__)
#define TK_AVX2 1
#include <immintrin.h>
#endif

enum { F32 = 0, BF16 = 1, FP8 = 2 };

/* Lanes of the vector paths this build has: 16 (AVX-512), 8 (AVX2 + FMA), 0 (plain C only). */
int tk_simd_lanes(void) {
#if defined(__AVX512F__)
    return 16;
#elif defined(TK_AVX2)
    return 8;
#else
    return 0;
#endif
}

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) {  /* round to nearest even, as torch does */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float fp8_table[256];
static int fp8_ready = 0;

static void fp8_init(void) {  /* float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa; no inf */
    if (fp8_ready) return;
    for (int i = 0; i < 256; i++) {
        int s = i >> 7, e = (i >> 3) & 15, m = i & 7;
        float v;
        if (e == 15 && m == 7) v = NAN;
        else if (e == 0) v = ldexpf((float)m / 8.0f, -6);
        else v = ldexpf(1.0f + (float)m / 8.0f, e - 7);
        fp8_table[i] = s ? -v : v;
    }
    fp8_ready = 1;
}

/* float32 -> float8_e4m3fn code, round to nearest even, as torch converts; the caller clamps to
   +-448 first (as PagedKVCache.write does), NaN stays NaN. */
static inline uint8_t f32_to_fp8(float y) {
    uint32_t b;
    memcpy(&b, &y, 4);
    uint8_t sign = (uint8_t)((b >> 24) & 0x80u);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7f;
    if (a >= 0x3c800000u) {                  /* >= 2^-6: a normal e4m3 value */
        a += 0x7ffffu + ((a >> 20) & 1u);    /* the mantissa to 3 bits, ties to even (a carry bumps the exponent) */
        return sign | (uint8_t)((((a >> 23) - 120u) << 3) | ((a >> 20) & 7u));
    }
    return sign | (uint8_t)nearbyintf(fabsf(y) * 512.0f);  /* subnormal: m * 2^-9, m in 0..8 (8: 2^-6) */
}

/* One row of D keys or values (float32 values of what the bf16 path stores) -> fp8 codes with
   the head's scale, as PagedKVCache.write quantizes: x / scale clamped to +-448, then e4m3.
   kmin/kmax (float32 bound rows) are widened by the dequantized codes when given. Returns how
   many elements saturated (|x| > scale * 448, the cache's `saturated` count). */
static int64_t quantize_row_fp8(const float *x, int64_t D, float scale, uint8_t *dst, float *kmin, float *kmax) {
    int64_t saturated = 0;
    float limit = scale * 448.0f;
    for (int64_t d = 0; d < D; d++) {
        saturated += fabsf(x[d]) > limit;
        float y = x[d] / scale;
        y = y < -448.0f ? -448.0f : y > 448.0f ? 448.0f : y;
        uint8_t c = f32_to_fp8(y);
        dst[d] = c;
        if (kmin) {
            float r = fp8_table[c] * scale;
            if (r < kmin[d] || r != r) kmin[d] = r;  /* (NaN gets in and stays, as torch's amin / amax) */
            if (r > kmax[d] || r != r) kmax[d] = r;
        }
    }
    return saturated;
}

/* n rows of D float32 -> fp8 codes with `scale` (quantize_row_fp8, for tests); returns the
   saturated count. */
int64_t tk_fp8_quantize(const float *x, int64_t n, int64_t D, float scale, uint8_t *dst) {
    fp8_init();
    int64_t saturated = 0;
    for (int64_t r = 0; r < n; r++) saturated += quantize_row_fp8(x + r * D, D, scale, dst + r * D, NULL, NULL);
    return saturated;
}

static inline float load_elem(const void *p, int dtype, int64_t i) {
    if (dtype == BF16) return bf16_to_f32(((const uint16_t *)p)[i]);
    if (dtype == FP8) return fp8_table[((const uint8_t *)p)[i]];
    return ((const float *)p)[i];
}

static inline void store_elem(void *p, int dtype, int64_t i, float v) {
    if (dtype == BF16) ((uint16_t *)p)[i] = f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

/* A growing per-thread float buffer (never freed: one per thread, bounded by the largest call). */
static float *thread_buffer(int64_t n) {
    static __thread float *buf = NULL;
    static __thread int64_t cap = 0;
    if (n > cap) {
        free(buf);
        cap = n + n / 2 + 1024;
        buf = (float *)aligned_alloc(64, (size_t)(((cap * 4) + 63) / 64 * 64));
    }
    return buf;
}

static void to_f32(const void *src, int dtype, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i++) dst[i] = load_elem(src, dtype, i);
}

/* Loops written once over the build's vector width (16 or 8 lanes): exp, softmax, RMSNorm. The bf16
   loads and stores (VLOAD_BF16, VSTORE_BF16, VROUND_BF16) are defined with the linear and rope
   code below; a macro only needs them where it is used. */
#if defined(__AVX512F__)
#define VW 16
typedef __m512 vecf;
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VMAX _mm512_max_ps
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VFMADD _mm512_fmadd_ps
#define VFNMADD _mm512_fnmadd_ps
#define VROUND_NEAREST(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VSCALE_POW2 _mm512_scalef_ps  /* p * 2^n, n integral */
#define VLOAD_BF16 load_bf16x16
#define VSTORE_BF16 store_bf16x16
#define VROUND_BF16 round_bf16x16
#define VEXP vexp_nonpos
#define VHMAX _mm512_reduce_max_ps
#define VHSUM _mm512_reduce_add_ps
#elif defined(TK_AVX2)
#define VW 8
typedef __m256 vecf;
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VMAX _mm256_max_ps
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VFMADD _mm256_fmadd_ps
#define VFNMADD _mm256_fnmadd_ps
#define VROUND_NEAREST(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VSCALE_POW2 scale_pow2_8
#define VLOAD_BF16 load_bf16x8
#define VSTORE_BF16 store_bf16x8
#define VROUND_BF16 round_bf16x8
#define VEXP vexp_nonpos
#define VHMAX hmax8
#define VHSUM hsum8
#endif

/* bf16 <-> float32 on the build's vectors: widen by a shift, round to nearest even as torch
   does (f32_to_bf16), NaN kept quiet. */
#if defined(__AVX512F__)
static inline __m512 load_bf16x16(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
/* f32_to_bf16 on 16 lanes: the bf16 bits in the low half of each 32-bit lane. */
static inline __m512i f32_to_bf16x16(__m512 f) {
    __m512i u = _mm512_castps_si512(f), one = _mm512_set1_epi32(1);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                                     _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    return _mm512_mask_blend_epi32(nan, _mm512_srli_epi32(r, 16),
                                   _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}
static inline __m512 round_bf16x16(__m512 f) { return _mm512_castsi512_ps(_mm512_slli_epi32(f32_to_bf16x16(f), 16)); }
static inline void store_bf16x16(uint16_t *p, __m512 f) {
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(f32_to_bf16x16(f)));
}
#elif defined(TK_AVX2)
static inline __m256 load_bf16x8(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
/* f32_to_bf16 on 8 lanes: the bf16 bits in the low half of each 32-bit lane. */
static inline __m256i f32_to_bf16x8(__m256 f) {
    __m256i u = _mm256_castps_si256(f), one = _mm256_set1_epi32(1);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                                                       _mm256_and_si256(_mm256_srli_epi32(u, 16), one))), 16);
    return _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
}
static inline __m256 round_bf16x8(__m256 f) { return _mm256_castsi256_ps(_mm256_slli_epi32(f32_to_bf16x8(f), 16)); }
static inline void store_bf16x8(uint16_t *p, __m256 f) {
    __m256i b = f32_to_bf16x8(f);  /* (< 2^16 per lane: the unsigned pack never saturates) */
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(b, b), 0xD8)));
}
#endif

/* ------------------------------------------------------------------------------ exp
 * exp(x) for x <= 0 (relative error ~1e-7): x = n ln2 + r with ln2 split in two (Cody-Waite),
 * exp(r) = 1 + r + r^2 * P(r) with P's coefficients below (highest first), times 2^n. The same
 * operations in every build (exp_nonpos one lane, vexp_nonpos VW lanes), so results match bit
 * for bit wherever they are used the same way. */
static const float EXP_LN2_HI = 0.693145751953125f, EXP_LN2_LO = 1.428606765330187045e-06f;
static const float EXP_POLY[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                  4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

static inline float exp_nonpos(float x) {
    x = x > -87.0f ? x : -87.0f;  /* (a NaN becomes -87, as max_ps does) */
    float n = nearbyintf(x * 1.44269504088896341f);
    float r = fmaf(-n, EXP_LN2_HI, x);
    r = fmaf(-n, EXP_LN2_LO, r);
    float p = EXP_POLY[0];
    for (int i = 1; i < 6; i++) p = fmaf(p, r, EXP_POLY[i]);
    p = fmaf(p, r * r, r + 1.0f);
    return ldexpf(p, (int)n);
}
#if defined(TK_AVX2)
/* p * 2^n for n in [-126, 0] (vexp_nonpos's range): the exponent field built directly. */
static inline __m256 scale_pow2_8(__m256 p, __m256 n) {
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif
#if defined(VW)
/* exp_nonpos on VW lanes (max_ps turns a NaN into -87, as the scalar comparison does). */
static inline vecf vexp_nonpos(vecf x) {
    x = VMAX(x, VSET1(-87.0f));
    vecf n = VROUND_NEAREST(VMUL(x, VSET1(1.44269504088896341f)));
    vecf r = VFNMADD(n, VSET1(EXP_LN2_HI), x);
    r = VFNMADD(n, VSET1(EXP_LN2_LO), r);
    vecf p = VSET1(EXP_POLY[0]);
    for (int i = 1; i < 6; i++) p = VFMADD(p, r, VSET1(EXP_POLY[i]));
    p = VFMADD(p, VMUL(r, r), VADD(r, VSET1(1.0f)));
    return VSCALE_POW2(p, n);
}
#endif
#if defined(TK_AVX2)
/* Lane sums and maxima of 8 lanes, one fixed tree: (i, i+4), (i, i+2), (i, i+1). */
static inline float hsum8(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}
static inline float hmax8(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps(x, x, 1)));
}
#endif


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
#if defined(__AVX512BF16__)
#define TK_BF16_DOT 1
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

/* 32 bf16 as their even and odd elements widened to float32: two ALU ops, no lane crossing. */
static inline void load_bf16x32_split(const uint16_t *p, __m512 *even, __m512 *odd) {
    __m512i w = _mm512_loadu_si512((const void *)p);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xFFFF0000u)));
}

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
/* 16 bf16 widened to float32 as their even and odd elements. */
static inline void load_bf16x16_split(const uint16_t *p, __m256 *even, __m256 *odd) {
    __m256i w = _mm256_loadu_si256((const __m256i *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xFFFF0000u)));
}

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

/* ------------------------------------------------------------------------------ page-bound sketches
 * The indexer's first pass reads an 8-bit sketch of each page's [kmin | kmax] bounds row instead
 * of the row itself (160 of a float32 row's 512 bytes at D = 64), then scores exactly only the
 * pages the sketch cannot rule out (tk_index_pages). Row layout (sketch_row_bytes(D) bytes per
 * KV head and page, rows head-major like the bounds):
 *   codes  2D uint8, padded to 16: half j (0: kmin, 1: kmax), element d ~ lo_j + code * step_j
 *   params 8 float32 after them: lo_0, step_0, err_0, lo_1, step_1, err_1, 0, 0
 * err_j bounds |bound - (lo_j + code * step_j)| over the half, computed exactly in double from
 * the codes stored, plus SKETCH_SLACK * max |bound| to cover the float32 rounding of both the
 * sketched and the exact score (each a sum of at most 2D rounded terms: below 2D * 2^-24 of
 * sum |q_d| |bound_d| each, 7.6e-6 for D = 64, so the slack must stay above 2 * 2D * 2^-24 when
 * D grows: SKETCH_MAX_D). That is relative rounding; where products fall into float32's
 * subnormal range each operation may also lose up to 2^-150 absolutely, which the query side
 * adds as a floor (sketch_query_init). A half with a non-finite bound, or one beyond
 * SKETCH_MAX_ABS (its products could overflow), gets err = +inf: such a page is always scored
 * exactly. */
#define SKETCH_PARAMS 8
#define SKETCH_SLACK 4e-5
#define SKETCH_MAX_D 128
#define SKETCH_MAX_ABS 1e18

static inline int64_t sketch_codes_bytes(int64_t D) { return (2 * D + 15) / 16 * 16; }

/* (not padded to whole 64-byte lines: a row at D = 64 spans three lines either way, and the
   smaller array stays in the last-level cache more often, measured 3-10% faster at 32k) */
int64_t tk_sketch_row_bytes(int64_t D) { return sketch_codes_bytes(D) + SKETCH_PARAMS * 4; }

static void sketch_half(const float *x, int64_t D, uint8_t *codes, float *prm) {
    float lo = INFINITY, hi = -INFINITY;
    int finite = 1;
    for (int64_t d = 0; d < D; d++) {
        if (!(fabsf(x[d]) <= (float)SKETCH_MAX_ABS)) finite = 0;  /* (also NaN) */
        lo = x[d] < lo ? x[d] : lo;
        hi = x[d] > hi ? x[d] : hi;
    }
    if (!finite) {
        memset(codes, 0, (size_t)D);
        prm[0] = prm[1] = 0.0f;
        prm[2] = INFINITY;
        return;
    }
    float step = (hi - lo) / 255.0f, inv = step > 0.0f ? 1.0f / step : 0.0f;
    double err = 0.0, m = fabs((double)lo) > fabs((double)hi) ? fabs((double)lo) : fabs((double)hi);
    for (int64_t d = 0; d < D; d++) {  /* (any rounding of the code is fine: err is measured below) */
        long c = lrintf((x[d] - lo) * inv);
        c = c < 0 ? 0 : c > 255 ? 255 : c;
        codes[d] = (uint8_t)c;
        double e = fabs((double)x[d] - ((double)lo + (double)c * (double)step));  /* (exact products) */
        err = e > err ? e : err;
    }
    prm[0] = lo;
    prm[1] = step;
    prm[2] = nextafterf((float)(err * (1.0 + 1e-6) + SKETCH_SLACK * m), INFINITY);  /* rounded up */
}

/* The sketch row of one bounds row ([kmin | kmax], 2D elements in kb_dtype). */
static void sketch_page(const void *kb_row, int kb_dtype, int64_t D, uint8_t *out) {
    float x[2 * SKETCH_MAX_D];
    float *prm = (float *)(out + sketch_codes_bytes(D));
    if (D > SKETCH_MAX_D) {  /* (the indexer does not sketch such heads: both halves unbounded) */
        memset(out, 0, (size_t)tk_sketch_row_bytes(D));
        prm[2] = prm[5] = INFINITY;
        return;
    }
    to_f32(kb_row, kb_dtype, 2 * D, x);
    sketch_half(x, D, out, prm);
    sketch_half(x + D, D, out + D, prm + 3);
    memset(out + 2 * D, 0, (size_t)(sketch_codes_bytes(D) - 2 * D));
    memset(prm + 6, 0, (size_t)(tk_sketch_row_bytes(D) - sketch_codes_bytes(D) - 6 * 4));
}

/* Rebuild the sketch rows of pages[0..n) (all num_pages when pages is NULL; each page once) for
   every layer and KV head from kbounds (L, Hkv, num_pages, 2, D) in kb_dtype into sketch
   (L, Hkv, num_pages, row bytes). */
void tk_sketch_pages(const void *kbounds, int kb_dtype, int64_t L, int64_t Hkv, int64_t num_pages, int64_t D,
                     const int64_t *pages, int64_t n, uint8_t *sketch, int nthreads) {
    const int64_t count = pages ? n : num_pages, rb = tk_sketch_row_bytes(D);
    const int64_t eb = kb_dtype == BF16 ? 2 : 4;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads) if (count * L * Hkv >= 4096)
    for (int64_t h = 0; h < L * Hkv; h++)  /* (layer, head) pairs: contiguous blocks of num_pages rows */
        for (int64_t i = 0; i < count; i++) {
            int64_t page = pages ? pages[i] : i;
            if (page < 0 || page >= num_pages) continue;
            sketch_page((const char *)kbounds + (h * num_pages + page) * 2 * D * eb, kb_dtype, D,
                        sketch + (h * num_pages + page) * rb);
        }
}

/* ------------------------------------------------------------------------------ rope + cache write
 * qkv (T, H + 2*Hkv, D) of one layer: rotate-half rope on the query and key heads with
 * each token's cos/sin rows (T, D), roped queries -> q (T, H, D); roped keys and the values -> cache slots
 * (k_cache, v_cache: (num_slots, Hkv, D), in `dtype`), and the page key bounds kbounds
 * (Hkv, num_pages, 2, D) ([kmin | kmax], in `dtype` too: the min / max of stored keys are exact
 * in their dtype) widened by the keys as stored. */
#if defined(__AVX512F__)

/* One head of one token, bf16, D/2 a multiple of 16: the same operations as the scalar loop of
   tk_rope_write, 16 lanes at a time. Writes the rotated head to dst and, for a key (bounds not
   NULL), widens its page's [kmin | kmax] row by the values stored. */
static void rope_head_bf16(const uint16_t *x, const uint16_t *c, const uint16_t *s, int64_t D, uint16_t *dst,
                           uint16_t *bounds) {
    int64_t half = D / 2;
    for (int64_t d = 0; d < D; d += 16) {
        __m512 xv = load_bf16x16(x + d), cv = load_bf16x16(c + d), sv = load_bf16x16(s + d);
        __m512 rot = d < half ? _mm512_castsi512_ps(_mm512_xor_si512(  /* -x: flip the sign bit, as torch does */
                                    _mm512_castps_si512(load_bf16x16(x + d + half)), _mm512_set1_epi32((int)0x80000000u)))
                              : load_bf16x16(x + d - half);
        __m512 v = _mm512_add_ps(round_bf16x16(_mm512_mul_ps(xv, cv)), round_bf16x16(_mm512_mul_ps(rot, sv)));
        store_bf16x16(dst + d, v);
        if (bounds) {  /* min/max of what was stored; NaN gets in and stays, as in the scalar loop */
            __m512 stored = round_bf16x16(v);  /* (bf16 values: storing them as bf16 is exact) */
            __mmask16 nan = _mm512_cmp_ps_mask(stored, stored, _CMP_UNORD_Q);  /* (min/max keep a NaN bound) */
            store_bf16x16(bounds + d, _mm512_mask_mov_ps(_mm512_min_ps(stored, load_bf16x16(bounds + d)), nan, stored));
            store_bf16x16(bounds + D + d,
                          _mm512_mask_mov_ps(_mm512_max_ps(stored, load_bf16x16(bounds + D + d)), nan, stored));
        }
    }
}
#define ROPE_LANES 16
#elif defined(TK_AVX2)

/* rope_head_bf16 of the AVX-512 build, 8 lanes at a time (D/2 a multiple of 8). */
static void rope_head_bf16(const uint16_t *x, const uint16_t *c, const uint16_t *s, int64_t D, uint16_t *dst,
                           uint16_t *bounds) {
    int64_t half = D / 2;
    for (int64_t d = 0; d < D; d += 8) {
        __m256 xv = load_bf16x8(x + d), cv = load_bf16x8(c + d), sv = load_bf16x8(s + d);
        __m256 rot = d < half ? _mm256_castsi256_ps(_mm256_xor_si256(
                                    _mm256_castps_si256(load_bf16x8(x + d + half)), _mm256_set1_epi32((int)0x80000000u)))
                              : load_bf16x8(x + d - half);
        __m256 v = _mm256_add_ps(round_bf16x8(_mm256_mul_ps(xv, cv)), round_bf16x8(_mm256_mul_ps(rot, sv)));
        store_bf16x8(dst + d, v);
        if (bounds) {  /* min/max of what was stored; NaN gets in and stays, as in the scalar loop */
            __m256 stored = round_bf16x8(v);  /* (bf16 values: storing them as bf16 is exact) */
            __m256 nan = _mm256_cmp_ps(stored, stored, _CMP_UNORD_Q);  /* (min/max keep a NaN bound) */
            store_bf16x8(bounds + d, _mm256_blendv_ps(_mm256_min_ps(stored, load_bf16x8(bounds + d)), stored, nan));
            store_bf16x8(bounds + D + d, _mm256_blendv_ps(_mm256_max_ps(stored, load_bf16x8(bounds + D + d)), stored, nan));
        }
    }
}
#define ROPE_LANES 8
#endif

void tk_rope_write(const void *qkv, int dtype, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                   const void *cos_t, const void *sin_t, const int64_t *slots,
                   void *q, void *k_cache, void *v_cache, void *kbounds, uint8_t *ksketch, int64_t num_pages,
                   int64_t page_size, int kv_dtype, const float *k_scale, const float *v_scale, int64_t *saturated,
                   int nthreads) {
    int64_t W = (H + 2 * Hkv) * D, half = D / 2;
    const int b_dtype = kv_dtype == FP8 ? F32 : dtype, b_elem = b_dtype == BF16 ? 2 : 4;
    const int64_t sk_rb = tk_sketch_row_bytes(D);
    /* A page's sketch is rebuilt after the last of a run of its tokens (the next token is elsewhere). */
#define RESKETCH(kh, t, page) \
    do { \
        if (ksketch && ((t) == T - 1 || slots[(t) + 1] / page_size != (page))) \
            sketch_page((const char *)kbounds + ((kh) * num_pages + (page)) * 2 * D * b_elem, b_dtype, D, \
                        ksketch + ((kh) * num_pages + (page)) * sk_rb); \
    } while (0)
    fp8_init();
#if defined(ROPE_LANES)
    if (dtype == BF16 && half % ROPE_LANES == 0 && (kv_dtype != FP8 || D <= 256)) {
        /* One task per head over all tokens: a KV head's task owns its cache rows and bounds,
           so tasks never write the same memory, and tokens keep their order within a task. */
        const uint16_t *x = (const uint16_t *)qkv, *c = (const uint16_t *)cos_t, *s = (const uint16_t *)sin_t;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
        for (int64_t h = 0; h < H + Hkv; h++)
            for (int64_t t = 0; t < T; t++) {
                if (h < H) {
                    rope_head_bf16(x + t * W + h * D, c + t * D, s + t * D, D, (uint16_t *)q + (t * H + h) * D, NULL);
                } else if (kv_dtype == FP8 && D <= 256) {  /* the bf16 key and value, then quantized */
                    int64_t kh = h - H, slot = slots[t], page = slot / page_size;
                    uint16_t kb[256];
                    float kf[256], vf[256];
                    rope_head_bf16(x + t * W + h * D, c + t * D, s + t * D, D, kb, NULL);
                    to_f32(kb, BF16, D, kf);
                    to_f32(x + t * W + (H + Hkv + kh) * D, BF16, D, vf);
                    float *row = (float *)kbounds + ((kh * num_pages + page) * 2) * D;
                    saturated[kh] += quantize_row_fp8(kf, D, k_scale[kh], (uint8_t *)k_cache + (slot * Hkv + kh) * D,
                                                      row, row + D)
                                     + quantize_row_fp8(vf, D, v_scale[kh], (uint8_t *)v_cache + (slot * Hkv + kh) * D,
                                                        NULL, NULL);
                    RESKETCH(kh, t, page);
                } else {
                    int64_t kh = h - H, slot = slots[t], page = slot / page_size;
                    rope_head_bf16(x + t * W + h * D, c + t * D, s + t * D, D,
                                   (uint16_t *)k_cache + (slot * Hkv + kh) * D,
                                   (uint16_t *)kbounds + ((kh * num_pages + page) * 2) * D);
                    memcpy((uint16_t *)v_cache + (slot * Hkv + kh) * D, x + t * W + (H + Hkv + kh) * D, (size_t)D * 2);
                    RESKETCH(kh, t, page);
                }
            }
        return;
    }
#endif
    float *row_f = kv_dtype == FP8 ? thread_buffer(D) : NULL;  /* an fp8 key / value row before quantizing */
    for (int64_t t = 0; t < T; t++) {
        int64_t slot = slots[t], page = slot / page_size;
        for (int64_t h = 0; h < H + Hkv; h++) {
            const int64_t base = t * W + h * D;
            for (int64_t d = 0; d < D; d++) {
                float c = load_elem(cos_t, dtype, t * D + d), s = load_elem(sin_t, dtype, t * D + d);
                float xv = load_elem(qkv, dtype, base + d);
                float rot = d < half ? -load_elem(qkv, dtype, base + d + half) : load_elem(qkv, dtype, base + d - half);
                float v;
                if (dtype == BF16) {  /* as torch in bf16: each product rounded, then the sum */
                    float a = bf16_to_f32(f32_to_bf16(xv * c)), b = bf16_to_f32(f32_to_bf16(rot * s));
                    v = a + b;
                } else {
                    v = xv * c + rot * s;
                }
                if (h < H) {
                    store_elem(q, dtype, (t * H + h) * D + d, v);
                } else if (kv_dtype == FP8) {  /* the key as the qkv dtype holds it, quantized below */
                    row_f[d] = dtype == BF16 ? bf16_to_f32(f32_to_bf16(v)) : v;
                } else {
                    int64_t kh = h - H;
                    store_elem(k_cache, dtype, (slot * Hkv + kh) * D + d, v);
                    float stored = load_elem(k_cache, dtype, (slot * Hkv + kh) * D + d);
                    int64_t row = ((kh * num_pages + page) * 2) * D;  /* [kmin | kmax] in `dtype` */
                    /* (NaN gets in and stays, as torch's amin / amax) */
                    if (stored < load_elem(kbounds, dtype, row + d) || stored != stored)
                        store_elem(kbounds, dtype, row + d, stored);
                    if (stored > load_elem(kbounds, dtype, row + D + d) || stored != stored)
                        store_elem(kbounds, dtype, row + D + d, stored);
                }
            }
            if (h >= H && kv_dtype == FP8) {
                int64_t kh = h - H;
                float *row = (float *)kbounds + ((kh * num_pages + page) * 2) * D;
                saturated[kh] += quantize_row_fp8(row_f, D, k_scale[kh],
                                                  (uint8_t *)k_cache + (slot * Hkv + kh) * D, row, row + D);
            }
            if (h >= H) RESKETCH(h - H, t, page);
        }
        for (int64_t h = 0; h < Hkv; h++) {
            if (kv_dtype == FP8) {
                to_f32((const char *)qkv + (t * W + (H + Hkv + h) * D) * (dtype == BF16 ? 2 : 4), dtype, D, row_f);
                saturated[h] += quantize_row_fp8(row_f, D, v_scale[h], (uint8_t *)v_cache + (slot * Hkv + h) * D,
                                                 NULL, NULL);
                continue;
            }
            for (int64_t d = 0; d < D; d++)
                store_elem(v_cache, dtype, (slot * Hkv + h) * D + d,
                           load_elem(qkv, dtype, t * W + (H + Hkv + h) * D + d));
        }
    }
}

#undef RESKETCH

/* ------------------------------------------------------------------------------ rms_norm
 * y = x / sqrt(mean(x^2) + eps) * w, statistics in float32. The sum of squares in 16 lanes (lane
 * i takes the d = i mod 16 of the first D - D % 16 elements), the lanes added by a fixed tree,
 * then the tail in order: one order in every build. As torch: normalize in float32, round to the
 * dtype, then scale by the weight. */
/* The sum of 16 lanes by a fixed tree: (i, i+8), (i, i+4), (i, i+2), (i, i+1). */
static inline float tree16(float *lane) {
    for (int s = 8; s >= 1; s /= 2)
        for (int i = 0; i < s; i++) lane[i] += lane[i + s];
    return lane[0];
}

static float sum_squares(const void *x, int dtype, int64_t D) {
    const int64_t D16 = D - D % 16;
    float lane[16] __attribute__((aligned(64))) = {0};
#if defined(__AVX512F__)
    __m512 a = _mm512_setzero_ps();
    for (int64_t d = 0; d < D16; d += 16) {
        __m512 v = dtype == BF16 ? load_bf16x16((const uint16_t *)x + d) : _mm512_loadu_ps((const float *)x + d);
        a = _mm512_fmadd_ps(v, v, a);
    }
    _mm512_store_ps(lane, a);
#elif defined(TK_AVX2)
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int64_t d = 0; d < D16; d += 16) {
        __m256 v0 = dtype == BF16 ? load_bf16x8((const uint16_t *)x + d) : _mm256_loadu_ps((const float *)x + d);
        __m256 v1 = dtype == BF16 ? load_bf16x8((const uint16_t *)x + d + 8) : _mm256_loadu_ps((const float *)x + d + 8);
        a0 = _mm256_fmadd_ps(v0, v0, a0);
        a1 = _mm256_fmadd_ps(v1, v1, a1);
    }
    _mm256_store_ps(lane, a0);
    _mm256_store_ps(lane + 8, a1);
#else
    for (int64_t d = 0; d < D16; d++) {
        float v = load_elem(x, dtype, d);
        lane[d % 16] = fmaf(v, v, lane[d % 16]);
    }
#endif
    float ss = tree16(lane);
    for (int64_t d = D16; d < D; d++) {
        float v = load_elem(x, dtype, d);
        ss = fmaf(v, v, ss);
    }
    return ss;
}

void tk_rms_norm(const void *x, int dtype, int64_t M, int64_t D, const void *w, float eps, void *y, int nthreads) {
    const int64_t esize = dtype == BF16 ? 2 : 4;
#pragma omp parallel for schedule(static) num_threads(nthreads) if (M >= 64)
    for (int64_t m = 0; m < M; m++) {
        const void *xm = (const char *)x + m * D * esize;
        void *ym = (char *)y + m * D * esize;
        float r = 1.0f / sqrtf(sum_squares(xm, dtype, D) / (float)D + eps);
        int64_t d = 0;
#if defined(VW)
        for (; d + VW <= D; d += VW) {
            if (dtype == BF16) {
                vecf v = VROUND_BF16(VMUL(VLOAD_BF16((const uint16_t *)xm + d), VSET1(r)));
                VSTORE_BF16((uint16_t *)ym + d, VMUL(v, VLOAD_BF16((const uint16_t *)w + d)));
            } else {
                vecf v = VMUL(VLOAD((const float *)xm + d), VSET1(r));
                VSTORE((float *)ym + d, VMUL(v, VLOAD((const float *)w + d)));
            }
        }
#endif
        for (; d < D; d++) {
            float v = load_elem(xm, dtype, d) * r;
            if (dtype == BF16) v = bf16_to_f32(f32_to_bf16(v));
            store_elem(ym, dtype, d, v * load_elem(w, dtype, d));
        }
    }
}

/* ------------------------------------------------------------------------------ paged decode attention
 * out[n, h] = softmax(scale * q[n, h] . K^T) V over positions 0..seq_lens[n]-1 of the pages
 * block_table[n, :] of one layer's cache (num_pages, page_size, Hkv, D), query head h reading
 * KV head h / G. fp8 caches are dequantized with per-KV-head scales. One task per (query,
 * KV head): the G grouped query heads share each loaded key and value row. Two passes over
 * the positions (scores, then exp and weighted sum) in position order. */
/* softmax over sg[0..L) in place: max, exp in position order (VW lanes at a time, then the
   tail), sum, scale. One order for every caller. */
static void softmax_inplace(float *sg, int64_t L) {
    float mx = -INFINITY, sum = 0.0f;
    int64_t t = 0;
#if defined(VW)
    /* max in lanes (exact in any order; a NaN score is skipped, as in the scalar loop) */
    vecf vm = VSET1(-INFINITY);
    for (; t + VW <= L; t += VW) vm = VMAX(VLOAD(sg + t), vm);
    mx = VHMAX(vm);
#endif
    for (; t < L; t++) mx = sg[t] > mx ? sg[t] : mx;
    t = 0;
#if defined(VW)
    vecf vsum = VSET1(0.0f), vmx = VSET1(mx);
    for (; t + VW <= L; t += VW) {
        vecf e = VEXP(VSUB(VLOAD(sg + t), vmx));
        VSTORE(sg + t, e);
        vsum = VADD(vsum, e);
    }
    sum = VHSUM(vsum);
#endif
    for (; t < L; t++) { sg[t] = expf(sg[t] - mx); sum += sg[t]; }
    float inv = 1.0f / sum;
    for (t = 0; t < L; t++) sg[t] *= inv;
}

/* float8_e4m3fn codes (in 32-bit lanes) -> float32, exactly fp8_table's values: a normal code's
   exponent and mantissa bits moved into place with the bias changed by 127 - 7; a subnormal one
   (exponent 0) is m * 2^-9; 0x7f / 0xff are NaN; the sign bit last. No float subnormal is formed
   on the way (so flush-to-zero settings cannot change a value). Eight lanes, in every build with
   AVX2 (the AVX-512 builds put two of these together: one tested path for both). */
#if defined(__AVX512F__) || defined(TK_AVX2)  /* (every AVX-512 CPU has AVX2) */
static inline __m256 fp8x8_to_f32(__m256i c) {
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32(0x7f));
    __m256 v = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23)));
    __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(1.0f / 512.0f));
    v = _mm256_blendv_ps(v, sub, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag)));
    v = _mm256_blendv_ps(v, _mm256_set1_ps(NAN), _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f))));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(v),
                                               _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24)));
}

/* Sixteen fp8 codes at p, split: lane i of `even` holds element 2i, of `odd` element 2i + 1. */
static inline void fp8x16_split(const uint8_t *p, float scale, __m256 *even, __m256 *odd) {
    __m128i b = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p),
                                 _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    __m256 vs = _mm256_set1_ps(scale);
    *even = _mm256_mul_ps(fp8x8_to_f32(_mm256_cvtepu8_epi32(b)), vs);
    *odd = _mm256_mul_ps(fp8x8_to_f32(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))), vs);
}
#endif
#if defined(__AVX512F__)
static inline __m512 join8x2(__m256 lo, __m256 hi) {  /* lanes 0..7 from lo, 8..15 from hi */
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
#endif

static inline void load_row(const void *cache, int dtype, int64_t offset, int64_t D, float scale, float *dst) {
#if defined(__AVX512F__) || defined(TK_AVX2)
    if (dtype == FP8 && (D & 7) == 0) {
        const uint8_t *src = (const uint8_t *)cache + offset;
        __m256 vs = _mm256_set1_ps(scale);
        for (int64_t d = 0; d < D; d += 8)
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(fp8x8_to_f32(_mm256_cvtepu8_epi32(
                _mm_loadl_epi64((const __m128i *)(src + d)))), vs));
        return;
    }
#endif
#if defined(__AVX512F__)
    if (dtype == BF16 && (D & 15) == 0) {
        const uint16_t *src = (const uint16_t *)cache + offset;
        for (int64_t d = 0; d < D; d += 16)
            _mm512_storeu_ps(dst + d, _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + d))), 16)));
        return;
    }
#elif defined(TK_AVX2)
    if (dtype == BF16 && (D & 7) == 0) {
        const uint16_t *src = (const uint16_t *)cache + offset;
        for (int64_t d = 0; d < D; d += 8)
            _mm256_storeu_ps(dst + d, _mm256_castsi256_ps(_mm256_slli_epi32(
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + d))), 16)));
        return;
    }
#endif
    if (dtype == BF16) {
        const uint16_t *src = (const uint16_t *)cache + offset;
        for (int64_t d = 0; d < D; d++) dst[d] = bf16_to_f32(src[d]);
    } else if (dtype == FP8) {
        const uint8_t *src = (const uint8_t *)cache + offset;
        for (int64_t d = 0; d < D; d++) dst[d] = fp8_table[src[d]] * scale;
    } else {
        memcpy(dst, (const float *)cache + offset, (size_t)D * 4);
    }
}

static inline float dot(const float *a, const float *b, int64_t D) {
#if defined(__AVX512F__)
    if ((D & 15) == 0) {
        __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b));
        for (int64_t d = 16; d < D; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + d), _mm512_loadu_ps(b + d), acc);
        return _mm512_reduce_add_ps(acc);
    }
#elif defined(TK_AVX2)
    if ((D & 7) == 0) {
        __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b));
        for (int64_t d = 8; d < D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc);
        return hsum8(acc);
    }
#endif
    float s = 0.0f;
    for (int64_t d = 0; d < D; d++) s = fmaf(a[d], b[d], s);
    return s;
}

#define KF_HEADS 4  /* KV heads widened together, in address order (16 KB of float32 keys) */
#ifndef PREFETCH_PAGES_AHEAD
#define PREFETCH_PAGES_AHEAD 2
#endif

/* Prefetch row `row` of KV head kh (D elements of elem_bytes) in the page PREFETCH_PAGES_AHEAD
   after the one at position t0, if the sequence has it. A sequence's pages lie anywhere in the
   pool, so the hardware prefetcher, which follows address streams, stalls at every page
   boundary; one row ahead per row read keeps the next pages arriving while this one is
   computed (measured at batch 32, 576 positions, 30 layers: 31 -> 15 ms per step on scattered
   pages, 19 -> 11 ms on contiguous ones; prefetching a whole page at once did not help). */
static inline void prefetch_ahead(const void *cache, int64_t elem_bytes, const int32_t *pages, int64_t t0,
                                  int64_t L, int64_t page_size, int64_t row, int64_t Hkv, int64_t kh, int64_t D) {
    int64_t p = t0 / page_size + PREFETCH_PAGES_AHEAD;
    if (p * page_size >= L) return;
    const char *a = (const char *)cache + (((int64_t)pages[p] * page_size + row) * Hkv + kh) * D * elem_bytes;
    for (int64_t b = 0; b < D * elem_bytes; b += 64) __builtin_prefetch(a + b, 0, 3);
}

#if defined(__AVX512F__)
/* The horizontal sums of 16 vectors at once: r[t] = sum of v[t]'s lanes, added pairwise as
   lanes (i, i+8), then (i, i+4), (i, i+2), (i, i+1), the same tree for every t. */
static inline __m512 hsum16x16(const __m512 *v) {
    __m512 u[8], w[4], z[2];
    for (int t = 0; t < 8; t++)
        u[t] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * t], v[2 * t + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * t], v[2 * t + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int t = 0; t < 4; t++)
        w[t] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * t], u[2 * t + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(u[2 * t], u[2 * t + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int t = 0; t < 2; t++)
        z[t] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * t], w[2 * t + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(w[2 * t], w[2 * t + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 r = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
    /* r[4 * L + j] holds position 4 * j + L */
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

/* A 32-element chunk of a cached row in the split order of load_bf16x32_split (lane i of
   `even` holds element 2i, of `odd` element 2i + 1): bf16 widened, or fp8 codes dequantized
   (fp8x8_to_f32 times the head's scale: fp8_table's values, as load_row gives them). */
static inline void load_fp8x32_split(const uint8_t *p, float scale, __m512 *even, __m512 *odd) {
    __m256 e0, o0, e1, o1;
    fp8x16_split(p, scale, &e0, &o0);       /* elements 0..15 */
    fp8x16_split(p + 16, scale, &e1, &o1);  /* elements 16..31 */
    *even = join8x2(e0, e1);
    *odd = join8x2(o0, o1);
}

static inline void load_kv32_split(const void *cache, int dtype, int64_t off, float scale, __m512 *even, __m512 *odd) {
    if (dtype == FP8) load_fp8x32_split((const uint8_t *)cache + off, scale, even, odd);
    else load_bf16x32_split((const uint16_t *)cache + off, even, odd);
}

/* The order load_bf16x32_split widens a 64-element row into: dims 2i, 2i+1, 32+2i, 33+2i in
   lane i of vectors 0..3. to_split = 1: natural -> split order; 0: split -> natural. */
static inline void split64(float *natural, float *split, int to_split) {
    for (int i = 0; i < 16; i++) {
        const int64_t src[4] = {2 * i, 2 * i + 1, 32 + 2 * i, 33 + 2 * i};
        for (int c = 0; c < 4; c++) {
            if (to_split) split[c * 16 + i] = natural[src[c]];
            else natural[src[c]] = split[c * 16 + i];
        }
    }
}

/* The AVX-512 body for bf16 caches with D = 64 and pages a multiple of 16 rows (SmolLM2,
   Llama-style 64-dim heads), for one query and its KV heads kh0 .. kh0 + nh - 1 (G query heads
   each). The cache is walked page by page, 16 positions at a time, and every row read is
   prefetched two pages ahead (prefetch_ahead). Scores: the keys of up to KF_HEADS heads are
   widened in address order (a position's heads are adjacent) and shared by the G query heads;
   a score is four lane-wise products summed by hsum16x16. With qb (bf16 queries times a
   power-of-two scale, AVX512-BF16 builds) a score is instead two vdpbf16ps over the key row as
   stored, summed by the same tree, and no key is widened. Rows past the sequence's end in its
   last page are computed and dropped, so every position takes the same path at any length.
   Values: each output element is accumulated in position order.
   qf (nh*G, 64) scaled queries; s (nh*G, L) scores; acc (nh*G, 64) scratch; out (nh*G, 64);
   qb (nh*G, 64) bf16 or NULL. */
static void decode_heads_d64(const float *qf, int64_t G, int64_t nh, const void *k_cache,
                             const void *v_cache, int64_t Hkv, int64_t kh0, int64_t page_size,
                             const int32_t *pages, int64_t L, float *s, float *acc, float *out,
                             const uint16_t *qb, int kv_dtype, const float *k_scale, const float *v_scale) {
    const int64_t eb = kv_dtype == FP8 ? 1 : 2;  /* bytes per cached element */
    const int64_t R = nh * G;
    float *qs = acc;  /* queries in the keys' split order */
    if (!qb)  /* (the vdpbf16ps scores read the bf16 queries as they are) */
        for (int64_t r = 0; r < R; r++) split64((float *)qf + r * 64, qs + r * 64, 1);  /* (reads qf only) */
    float kf[KF_HEADS][16][64] __attribute__((aligned(64)));
    for (int64_t t0 = 0; t0 < L; t0 += page_size) {
        int64_t base = (int64_t)pages[t0 / page_size] * page_size;
        for (int64_t o = 0; o < page_size && t0 + o < L; o += 16)
          for (int64_t j0 = 0; j0 < nh; j0 += KF_HEADS) {
            int64_t n = L - (t0 + o) < 16 ? L - (t0 + o) : 16, nj = nh - j0 < KF_HEADS ? nh - j0 : KF_HEADS;
            __mmask16 keep = (__mmask16)((1u << n) - 1u);
#if defined(TK_BF16_DOT)
            if (qb) {  /* bf16 queries: each score two vdpbf16ps over the key row as stored */
                for (int t = 0; t < 16; t++)
                    for (int64_t jj = 0; jj < nj; jj++)
                        prefetch_ahead(k_cache, 2, pages, t0, L, page_size, o + t, Hkv, kh0 + j0 + jj, 64);
                for (int64_t jj = 0; jj < nj; jj++) {
                    int64_t j = j0 + jj;
                    for (int64_t g = 0; g < G; g++) {
                        const uint16_t *qr = qb + (j * G + g) * 64;
                        __m512bh qlo = (__m512bh)_mm512_loadu_si512((const void *)qr);
                        __m512bh qhi = (__m512bh)_mm512_loadu_si512((const void *)(qr + 32));
                        __m512 a[16];
                        for (int t = 0; t < 16; t++) {
                            const uint16_t *kr = (const uint16_t *)k_cache + ((base + o + t) * Hkv + kh0 + j) * 64;
                            __m512 x = _mm512_dpbf16_ps(_mm512_setzero_ps(), qlo,
                                                        (__m512bh)_mm512_loadu_si512((const void *)kr));
                            a[t] = _mm512_dpbf16_ps(x, qhi, (__m512bh)_mm512_loadu_si512((const void *)(kr + 32)));
                        }
                        _mm512_mask_storeu_ps(s + (j * G + g) * L + t0 + o, keep, hsum16x16(a));
                    }
                }
                continue;
            }
#endif
            for (int t = 0; t < 16; t++)  /* in address order: a position's heads are adjacent */
                for (int64_t jj = 0; jj < nj; jj++) {
                    int64_t kh = kh0 + j0 + jj, off = ((base + o + t) * Hkv + kh) * 64;
                    prefetch_ahead(k_cache, eb, pages, t0, L, page_size, o + t, Hkv, kh, 64);
                    __m512 e0, o0, e1, o1;
                    load_kv32_split(k_cache, kv_dtype, off, k_scale ? k_scale[kh] : 1.0f, &e0, &o0);
                    load_kv32_split(k_cache, kv_dtype, off + 32, k_scale ? k_scale[kh] : 1.0f, &e1, &o1);
                    _mm512_store_ps(kf[jj][t], e0); _mm512_store_ps(kf[jj][t] + 16, o0);
                    _mm512_store_ps(kf[jj][t] + 32, e1); _mm512_store_ps(kf[jj][t] + 48, o1);
                }
            for (int64_t jj = 0; jj < nj; jj++) {
                int64_t j = j0 + jj;
                for (int64_t g = 0; g < G; g++) {
                    const float *qr = qs + (j * G + g) * 64;
                    __m512 q0 = _mm512_loadu_ps(qr), q1 = _mm512_loadu_ps(qr + 16);
                    __m512 q2 = _mm512_loadu_ps(qr + 32), q3 = _mm512_loadu_ps(qr + 48);
                    __m512 a[16];
                    for (int t = 0; t < 16; t++) {
                        __m512 x = _mm512_mul_ps(q0, _mm512_load_ps(kf[jj][t]));
                        x = _mm512_fmadd_ps(q1, _mm512_load_ps(kf[jj][t] + 16), x);
                        x = _mm512_fmadd_ps(q2, _mm512_load_ps(kf[jj][t] + 32), x);
                        a[t] = _mm512_fmadd_ps(q3, _mm512_load_ps(kf[jj][t] + 48), x);
                    }
                    _mm512_mask_storeu_ps(s + (j * G + g) * L + t0 + o, keep, hsum16x16(a));
                }
            }
        }
    }
    for (int64_t r = 0; r < R; r++) softmax_inplace(s + r * L, L);
    for (int64_t i = 0; i < R * 64; i++) acc[i] = 0.0f;  /* (the split queries are no longer needed) */
    for (int64_t t0 = 0; t0 < L; t0 += page_size) {
        int64_t base = (int64_t)pages[t0 / page_size] * page_size, end = t0 + page_size < L ? t0 + page_size : L;
        for (int64_t j = 0; j < nh; j++) {
            __m512 va[4][4];
            for (int64_t g = 0; g < G; g++)
                for (int c = 0; c < 4; c++) va[g][c] = _mm512_loadu_ps(acc + (j * G + g) * 64 + c * 16);
            for (int64_t t = t0; t < end; t++) {
                int64_t off = ((base + t - t0) * Hkv + kh0 + j) * 64;
                prefetch_ahead(v_cache, eb, pages, t0, L, page_size, t - t0, Hkv, kh0 + j, 64);
                __m512 v0, v1, v2, v3;
                load_kv32_split(v_cache, kv_dtype, off, v_scale ? v_scale[kh0 + j] : 1.0f, &v0, &v1);
                load_kv32_split(v_cache, kv_dtype, off + 32, v_scale ? v_scale[kh0 + j] : 1.0f, &v2, &v3);
                for (int64_t g = 0; g < G; g++) {
                    __m512 p = _mm512_set1_ps(s[(j * G + g) * L + t]);
                    va[g][0] = _mm512_fmadd_ps(p, v0, va[g][0]);
                    va[g][1] = _mm512_fmadd_ps(p, v1, va[g][1]);
                    va[g][2] = _mm512_fmadd_ps(p, v2, va[g][2]);
                    va[g][3] = _mm512_fmadd_ps(p, v3, va[g][3]);
                }
            }
            for (int64_t g = 0; g < G; g++)
                for (int c = 0; c < 4; c++) _mm512_storeu_ps(acc + (j * G + g) * 64 + c * 16, va[g][c]);
        }
    }
    for (int64_t r = 0; r < R; r++) split64(out + r * 64, acc + r * 64, 0);
}
#define DECODE_GROUP 16
#elif defined(TK_AVX2)
/* The horizontal sums of 8 vectors at once: r[t] = sum of v[t]'s lanes, one tree for every t
   (pairs within each 128-bit half, then the two halves). */
static inline __m256 hsum8x8(const __m256 *v) {
    __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

/* A 16-element chunk of a cached row in load_bf16x16_split's split order (lane i of `even`
   holds element 2i, of `odd` element 2i + 1): bf16 widened, or fp8 dequantized as load_row does. */
static inline void load_kv16_split(const void *cache, int dtype, int64_t off, float scale, __m256 *even, __m256 *odd) {
    if (dtype == FP8) fp8x16_split((const uint8_t *)cache + off, scale, even, odd);
    else load_bf16x16_split((const uint16_t *)cache + off, even, odd);
}

/* The order load_bf16x16_split widens a 64-element row into: 32-byte chunk c gives dims
   16c + 2i (vector 2c) and 16c + 2i + 1 (vector 2c + 1) in lane i. to_split = 1: natural -> split. */
static inline void split64(float *natural, float *split, int to_split) {
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 8; i++)
            for (int e = 0; e < 2; e++) {
                if (to_split) split[(2 * c + e) * 8 + i] = natural[16 * c + 2 * i + e];
                else natural[16 * c + 2 * i + e] = split[(2 * c + e) * 8 + i];
            }
}

/* decode_heads_d64 of the AVX-512 build on 8 lanes: groups of 8 positions, a score is
   eight lane-wise products summed by hsum8x8, and the values are accumulated half a head (32
   dims) at a time so the G <= 4 heads' accumulators stay in registers. */
static void decode_heads_d64(const float *qf, int64_t G, int64_t nh, const void *k_cache,
                             const void *v_cache, int64_t Hkv, int64_t kh0, int64_t page_size,
                             const int32_t *pages, int64_t L, float *s, float *acc, float *out,
                             const uint16_t *qb, int kv_dtype, const float *k_scale, const float *v_scale) {
    const int64_t eb = kv_dtype == FP8 ? 1 : 2;  /* bytes per cached element */
    (void)qb;  /* (bf16 score products are an AVX512-BF16 path) */
    const int64_t R = nh * G;
    float *qs = acc;  /* queries in the keys' split order */
    for (int64_t r = 0; r < R; r++) split64((float *)qf + r * 64, qs + r * 64, 1);
    float kf[8][64] __attribute__((aligned(32)));
    for (int64_t t0 = 0; t0 < L; t0 += page_size) {
        int64_t base = (int64_t)pages[t0 / page_size] * page_size;
        for (int64_t o = 0; o < page_size && t0 + o < L; o += 8) {
            int64_t n = L - (t0 + o) < 8 ? L - (t0 + o) : 8;
            for (int64_t j = 0; j < nh; j++) {
                for (int t = 0; t < 8; t++) {
                    int64_t off = ((base + o + t) * Hkv + kh0 + j) * 64;
                    prefetch_ahead(k_cache, eb, pages, t0, L, page_size, o + t, Hkv, kh0 + j, 64);
                    for (int c = 0; c < 4; c++) {
                        __m256 e, od;
                        load_kv16_split(k_cache, kv_dtype, off + 16 * c, k_scale ? k_scale[kh0 + j] : 1.0f, &e, &od);
                        _mm256_store_ps(kf[t] + 16 * c, e);
                        _mm256_store_ps(kf[t] + 16 * c + 8, od);
                    }
                }
                for (int64_t g = 0; g < G; g++) {
                    const float *qr = qs + (j * G + g) * 64;
                    __m256 a[8];
                    for (int t = 0; t < 8; t++) {
                        __m256 x = _mm256_mul_ps(_mm256_loadu_ps(qr), _mm256_load_ps(kf[t]));
                        for (int v = 1; v < 8; v++)
                            x = _mm256_fmadd_ps(_mm256_loadu_ps(qr + 8 * v), _mm256_load_ps(kf[t] + 8 * v), x);
                        a[t] = x;
                    }
                    float sc[8] __attribute__((aligned(32)));
                    _mm256_store_ps(sc, hsum8x8(a));
                    memcpy(s + (j * G + g) * L + t0 + o, sc, (size_t)n * 4);
                }
            }
        }
    }
    for (int64_t r = 0; r < R; r++) softmax_inplace(s + r * L, L);
    for (int64_t i = 0; i < R * 64; i++) acc[i] = 0.0f;  /* (the split queries are no longer needed) */
    for (int64_t t0 = 0; t0 < L; t0 += page_size) {
        int64_t base = (int64_t)pages[t0 / page_size] * page_size, end = t0 + page_size < L ? t0 + page_size : L;
        for (int64_t j = 0; j < nh; j++)
            for (int hh = 0; hh < 2; hh++) {  /* dims 32hh .. 32hh + 31: split vectors 4hh .. 4hh + 3 */
                __m256 va[4][4];
                for (int64_t g = 0; g < G; g++)
                    for (int c = 0; c < 4; c++) va[g][c] = _mm256_loadu_ps(acc + (j * G + g) * 64 + (4 * hh + c) * 8);
                for (int64_t t = t0; t < end; t++) {
                    int64_t off = ((base + t - t0) * Hkv + kh0 + j) * 64 + 32 * hh;
                    float vsc = v_scale ? v_scale[kh0 + j] : 1.0f;
                    if (!hh) prefetch_ahead(v_cache, eb, pages, t0, L, page_size, t - t0, Hkv, kh0 + j, 64);
                    __m256 v0, v1, v2, v3;
                    load_kv16_split(v_cache, kv_dtype, off, vsc, &v0, &v1);
                    load_kv16_split(v_cache, kv_dtype, off + 16, vsc, &v2, &v3);
                    for (int64_t g = 0; g < G; g++) {
                        __m256 p = _mm256_broadcast_ss(s + (j * G + g) * L + t);
                        va[g][0] = _mm256_fmadd_ps(p, v0, va[g][0]);
                        va[g][1] = _mm256_fmadd_ps(p, v1, va[g][1]);
                        va[g][2] = _mm256_fmadd_ps(p, v2, va[g][2]);
                        va[g][3] = _mm256_fmadd_ps(p, v3, va[g][3]);
                    }
                }
                for (int64_t g = 0; g < G; g++)
                    for (int c = 0; c < 4; c++) _mm256_storeu_ps(acc + (j * G + g) * 64 + (4 * hh + c) * 8, va[g][c]);
            }
    }
    for (int64_t r = 0; r < R; r++) split64(out + r * 64, acc + r * 64, 0);
}
#define DECODE_GROUP 8
#endif

/* Row t (logical position; page t0 / page_size holds it) of KV head kh into `row` in float32,
   dequantized, with the row two pages ahead prefetched. */
static inline void task_row(const void *cache, int kv_dtype, const float *scales, const int32_t *pages, int64_t t0,
                            int64_t t, int64_t L, int64_t page_size, int64_t Hkv, int64_t kh, int64_t D, float *row) {
    int64_t base = (int64_t)pages[t0 / page_size] * page_size;
    prefetch_ahead(cache, kv_dtype == F32 ? 4 : kv_dtype == BF16 ? 2 : 1, pages, t0, L, page_size, t - t0, Hkv, kh, D);
    load_row(cache, kv_dtype, ((base + t - t0) * Hkv + kh) * D, D, scales ? scales[kh] : 1.0f, row);
}

/* One decode task: query n's KV heads h0 .. h0 + per - 1 (G query heads each) over positions
   0 .. L-1 laid out on `pages` (full pages, the last one possibly partial). */
static void decode_task(const void *q, int q_dtype, int64_t n, int64_t H, int64_t Hkv, int64_t D, int64_t h0,
                        int64_t per, const int32_t *pages, int64_t L, const void *k_cache, const void *v_cache,
                        int kv_dtype, int64_t page_size, float scale, int bf16_scores, const float *k_scale,
                        const float *v_scale, void *out) {
    const int64_t G = H / Hkv, R = per * G;
    (void)bf16_scores;
    float *buf = thread_buffer(R * D * 4 + R * L + 64);
    float *qf = buf, *acc = qf + R * D, *row = acc + R * D, *s = row + R * D;  /* row: R * D scratch */
    uint16_t *qb = NULL;
    for (int64_t r = 0; r < R; r++)  /* row r: KV head h0 + r / G, query head (h0 * G) + r */
        for (int64_t d = 0; d < D; d++)
            qf[r * D + d] = load_elem(q, q_dtype, (n * H + h0 * G + r) * D + d) * scale;
#if defined(TK_BF16_DOT)
    if (bf16_scores) {  /* the scaled bf16 queries are exact in bf16 */
        qb = (uint16_t *)(s + R * L);
        for (int64_t i = 0; i < R * D; i++) qb[i] = f32_to_bf16(qf[i]);
    }
#endif
    (void)qb;
#if defined(DECODE_GROUP)
    if ((kv_dtype == BF16 || kv_dtype == FP8) && D == 64 && G <= 4 && page_size % DECODE_GROUP == 0) {
        decode_heads_d64(qf, G, per, k_cache, v_cache, Hkv, h0, page_size, pages, L, s, row, acc, qb, kv_dtype,
                         k_scale, v_scale);
        for (int64_t r = 0; r < R; r++)
            for (int64_t d = 0; d < D; d++)
                store_elem(out, q_dtype, (n * H + h0 * G + r) * D + d, acc[r * D + d]);
        return;
    }
#endif
    for (int64_t t0 = 0; t0 < L; t0 += page_size)  /* page by page: no division per position */
        for (int64_t t = t0; t < t0 + page_size && t < L; t++)
            for (int64_t j = 0; j < per; j++) {
                task_row(k_cache, kv_dtype, k_scale, pages, t0, t, L, page_size, Hkv, h0 + j, D, row);
                for (int64_t g = 0; g < G; g++) s[(j * G + g) * L + t] = dot(qf + (j * G + g) * D, row, D);
            }
    for (int64_t r = 0; r < R; r++) softmax_inplace(s + r * L, L);
    for (int64_t i = 0; i < R * D; i++) acc[i] = 0.0f;
    for (int64_t t0 = 0; t0 < L; t0 += page_size)
        for (int64_t t = t0; t < t0 + page_size && t < L; t++)
            for (int64_t j = 0; j < per; j++) {
                task_row(v_cache, kv_dtype, v_scale, pages, t0, t, L, page_size, Hkv, h0 + j, D, row);
                for (int64_t g = 0; g < G; g++) {
                    float p = s[(j * G + g) * L + t];
                    float *a = acc + (j * G + g) * D;
                    int64_t d = 0;
#if defined(__AVX512F__)
                    __m512 vp = _mm512_set1_ps(p);
                    for (; d + 16 <= D; d += 16)
                        _mm512_storeu_ps(a + d, _mm512_fmadd_ps(vp, _mm512_loadu_ps(row + d), _mm512_loadu_ps(a + d)));
#elif defined(TK_AVX2)
                    __m256 vp = _mm256_set1_ps(p);
                    for (; d + 8 <= D; d += 8)
                        _mm256_storeu_ps(a + d, _mm256_fmadd_ps(vp, _mm256_loadu_ps(row + d), _mm256_loadu_ps(a + d)));
#endif
                    for (; d < D; d++) a[d] = fmaf(p, row[d], a[d]);
                }
            }
    for (int64_t r = 0; r < R; r++)
        for (int64_t d = 0; d < D; d++)
            store_elem(out, q_dtype, (n * H + h0 * G + r) * D + d, acc[r * D + d]);
}

/* Rows of float8_e4m3fn codes -> float32 times `scale`, through load_row (the attention's own
   dequantization), for tests: n rows of D. */
void tk_fp8_dequant(const uint8_t *src, int64_t n, int64_t D, float scale, float *dst) {
    fp8_init();
    for (int64_t r = 0; r < n; r++) load_row(src, FP8, r * D, D, scale, dst + r * D);
}

/* Whether bf16 queries times `scale` stay exact in bf16 (scale a power of two, e.g. 1/sqrt(64)):
   the AVX512-BF16 build then takes the score products with vdpbf16ps (exact products, float32
   sums) instead of widening every key. */
static int exact_bf16_scores(int q_dtype, int kv_dtype, float scale) {
    int e;
    return q_dtype == BF16 && kv_dtype == BF16 && frexpf(scale, &e) == 0.5f;
}

void tk_paged_decode(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                     const void *k_cache, const void *v_cache, int kv_dtype, int64_t page_size,
                     const int32_t *block_table, int64_t bt_stride, const int32_t *seq_lens, float scale,
                     const float *k_scale, const float *v_scale, void *out, int nthreads) {
    fp8_init();
    int bf16_scores = exact_bf16_scores(q_dtype, kv_dtype, scale);
    /* A task is one query with all its KV heads (the rows of a position are adjacent in the
       cache, so a task streams memory), or one (query, KV head) when there are fewer queries
       than threads. The math per (query, head) is the same either way. */
    int64_t split = N < nthreads ? Hkv : 1, per = Hkv / split;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t task = 0; task < N * split; task++) {
        int64_t n = task / split;
        decode_task(q, q_dtype, n, H, Hkv, D, (task % split) * per, per, block_table + n * bt_stride, seq_lens[n],
                    k_cache, v_cache, kv_dtype, page_size, scale, bf16_scores, k_scale, v_scale, out);
    }
}

/* ------------------------------------------------------------------------------ sparse decode attention
 * Each query and KV head attends only to its selected logical pages (selected (N, Hkv, K) int32
 * positions in the block-table row, -1 = none; kernels/indexer): the selected pages, full ones
 * first in the given order and a sequence's partial last page after them, become that task's
 * page list, and decode_task runs over it as over a whole sequence. With every page selected in
 * order this is exactly the dense computation of tk_paged_decode. */
static int32_t *thread_ints(int64_t n) {
    static __thread int32_t *buf = NULL;
    static __thread int64_t cap = 0;
    if (n > cap) {
        free(buf);
        cap = n + 64;
        buf = (int32_t *)malloc((size_t)cap * 4);
    }
    return buf;
}

/* Whether a non-negative page appears twice in sel[0..K) (ascending input, the indexer's, costs
   one pass). */
static int has_duplicate(const int32_t *sel, int64_t K) {
    int ascending = 1;
    for (int64_t i = 1; i < K && ascending; i++)
        if (sel[i] >= 0 && sel[i] <= sel[i - 1]) ascending = 0;
    if (ascending) return 0;
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = i + 1; j < K; j++)
            if (sel[i] >= 0 && sel[i] == sel[j]) return 1;
    return 0;
}

void tk_sparse_decode(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                      const void *k_cache, const void *v_cache, int kv_dtype, int64_t page_size, int64_t num_pages,
                      const int32_t *block_table, int64_t bt_stride, const int32_t *seq_lens,
                      const int32_t *selected, int64_t K, float scale, const float *k_scale, const float *v_scale,
                      void *out, int32_t *duplicates, int nthreads) {
    fp8_init();
    int bf16_scores = exact_bf16_scores(q_dtype, kv_dtype, scale);
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads)
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) {
            int32_t *list = thread_ints(K);
            const int32_t *sel = selected + (n * Hkv + h) * K;
            if (has_duplicate(sel, K)) {  /* the caller raises: a page listed twice has no one meaning here */
                #pragma omp atomic write
                *duplicates = 1;
                continue;
            }
            int64_t L = seq_lens[n], rows = 0, count = 0, partial = -1, partial_rows = 0;
            for (int64_t i = 0; i < K; i++) {
                int64_t p = sel[i];
                if (p < 0 || p >= bt_stride || p * page_size >= L) continue;
                int64_t phys = block_table[n * bt_stride + p];
                phys = phys < 0 ? 0 : phys >= num_pages ? num_pages - 1 : phys;
                int64_t r = L - p * page_size < page_size ? L - p * page_size : page_size;
                if (r < page_size) { partial = phys; partial_rows = r; continue; }
                list[count++] = (int32_t)phys;
                rows += r;
            }
            if (partial >= 0) { list[count++] = (int32_t)partial; rows += partial_rows; }
            if (rows == 0) {  /* nothing selected: softmax over no position, NaN as in the reference */
                for (int64_t r = 0; r < H / Hkv; r++)
                    for (int64_t d = 0; d < D; d++) store_elem(out, q_dtype, (n * H + h * (H / Hkv) + r) * D + d, NAN);
                continue;
            }
            decode_task(q, q_dtype, n, H, Hkv, D, h, 1, list, rows, k_cache, v_cache, kv_dtype, page_size, scale,
                        bf16_scores, k_scale, v_scale, out);
        }
}

void tk_index_pages(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, const void *kb,
                    int kb_dtype, const uint8_t *ksketch, int64_t num_pages, const int32_t *block_table,
                    int64_t bt_stride, int64_t P, const int32_t *seq_lens, int64_t page_size, int64_t sink,
                    int64_t local, int64_t K, int32_t *out, int nthreads);

/* ------------------------------------------------------------------------------ one decoder layer
 * A whole Llama decoder layer for a decode step in bf16, in one call (the per-op Python and
 * dispatch cost is most of a small model's decode step otherwise):
 *   xn = rms_norm(x); q = rope_write(xn @ wqkv^T); h = x + attention(q) @ wo^T;
 *   x  = h + (silu(gate) * up)(rms_norm(h) @ w13^T) @ w2^T             (x updated in place)
 * attention: paged_decode (dense); or, with sparse_K > 0, the Quest indexer (index_pages: K
 * pages per query and KV head, sink / local forced, into `selected`, (T, Hkv, K) int32) then
 * sparse_decode over those pages. Exactly the composition of the routines above, so it computes
 * the same numbers as calling them one by one. The cache is bf16 (bf16 page bounds) or fp8
 * (kv_dtype FP8: keys and values quantized with the per-head scales as PagedKVCache.write does,
 * float32 page bounds of the dequantized keys, saturations counted per head into `saturated`).
 * scratch: bf16, T * (2*dim + (H + 2*Hkv)*D + 2*H*D + hidden) elements. */
void tk_decode_layer(uint16_t *x, int64_t T, int64_t dim, const uint16_t *attn_norm_w, const uint16_t *ffn_norm_w,
                     float eps, const uint16_t *wqkv, const uint16_t *wo, const uint16_t *w13, const uint16_t *w2,
                     int64_t hidden, int64_t H, int64_t Hkv, int64_t D, const uint16_t *cos_t, const uint16_t *sin_t,
                     const int64_t *slots, void *k_cache, void *v_cache, void *kbounds, uint8_t *ksketch,
                     int64_t num_pages, int64_t page_size, const int32_t *block_table, int64_t bt_stride,
                     const int32_t *seq_lens, float scale, int64_t sparse_K, int64_t sink, int64_t local, int32_t *selected,
                     int kv_dtype, const float *k_scale, const float *v_scale, int64_t *saturated,
                     uint16_t *scratch, int nthreads) {
    int64_t W = (H + 2 * Hkv) * D;
    uint16_t *xn = scratch, *qkv = xn + T * dim, *q = qkv + T * W, *att = q + T * H * D, *h = att + T * H * D;
    uint16_t *g = h + T * dim;
    int fp8 = kv_dtype == FP8;  /* (a bf16 cache otherwise; fp8 keeps float32 page bounds) */
    tk_rms_norm(x, BF16, T, dim, attn_norm_w, eps, xn, nthreads);
    tk_linear(xn, BF16, T, dim, dim, wqkv, BF16, W, 0, qkv, BF16, W, NULL, BF16, 0, nthreads);
    tk_rope_write(qkv, BF16, T, H, Hkv, D, cos_t, sin_t, slots, q, k_cache, v_cache, kbounds, ksketch, num_pages,
                  page_size, kv_dtype, k_scale, v_scale, saturated, nthreads);
    if (sparse_K > 0) {
        int32_t duplicates = 0;  /* (the indexer never selects a page twice) */
        tk_index_pages(q, BF16, T, H, Hkv, D, kbounds, fp8 ? F32 : BF16, ksketch, num_pages, block_table, bt_stride,
                       bt_stride, seq_lens, page_size, sink, local, sparse_K, selected, nthreads);
        tk_sparse_decode(q, BF16, T, H, Hkv, D, k_cache, v_cache, kv_dtype, page_size, num_pages, block_table,
                         bt_stride, seq_lens, selected, sparse_K, scale, fp8 ? k_scale : NULL, fp8 ? v_scale : NULL,
                         att, &duplicates, nthreads);
    } else {
        tk_paged_decode(q, BF16, T, H, Hkv, D, k_cache, v_cache, kv_dtype, page_size, block_table, bt_stride, seq_lens,
                        scale, fp8 ? k_scale : NULL, fp8 ? v_scale : NULL, att, nthreads);
    }
    tk_linear(att, BF16, T, H * D, H * D, wo, BF16, dim, 0, h, BF16, dim, x, BF16, dim, nthreads);
    tk_rms_norm(h, BF16, T, dim, ffn_norm_w, eps, xn, nthreads);
    tk_linear(xn, BF16, T, dim, dim, w13, BF16, 2 * hidden, hidden, g, BF16, hidden, NULL, BF16, 0, nthreads);
    tk_linear(g, BF16, T, hidden, hidden, w2, BF16, dim, 0, x, BF16, dim, h, BF16, dim, nthreads);
}

/* ------------------------------------------------------------------------------ Quest page scores
 * out[n, h, p] = qb[n, h, :] . kb[h, block_table[n, p], :] over W = 2D floats: the GQA-summed
 * Quest bound of every block-table page (qb = [sum_g min(q_g, 0) | sum_g relu(q_g)] as
 * kernels/indexer/reference.py's grouped_query_bounds builds it, kb rows are [kmin | kmax]). Page ids are
 * clamped to the pool like the torch reference's; scores of pages past a sequence's end are
 * meaningless and masked by the selection. Each dot in one order (16 lanes, a fixed tree, the
 * tail) in every build and batch; the rows are read in place, a few pages ahead prefetched
 * (the torch reference gathers them into a copy first: three passes over the bounds). */

/* a . b over n floats, b in `b_dtype` (F32 or BF16, widened exactly), in one order in every build:
   lane i of 16 takes the elements i mod 16 of the first n - n % 16, the lanes are added by
   tree16's pairs, then the tail in order. The SIMD builds do four rows at once (dot4_lanes16):
   four independent FMA chains, the pairs (i, i+8), (i, i+4) as whole vectors, then (i, i+2) and
   (i, i+1) across a 4x4 transpose: one horizontal reduction for four rows instead of sixteen
   dependent scalar adds per row, which cost as much as the indexer's memory reads. */
#if defined(__AVX512F__) || defined(TK_AVX2)
static void dot4_lanes16(const float *a, const void *const b[4], int b_dtype, int64_t n, float out[4]) {
    const int64_t n16 = n - n % 16;
    __m128 u[4];
#if defined(__AVX512F__)
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t i = 0; i < n16; i += 16) {
        __m512 x = _mm512_loadu_ps(a + i);
        for (int r = 0; r < 4; r++)
            acc[r] = _mm512_fmadd_ps(x, b_dtype == BF16 ? load_bf16x16((const uint16_t *)b[r] + i)
                                                        : _mm512_loadu_ps((const float *)b[r] + i), acc[r]);
    }
    for (int r = 0; r < 4; r++) {
        __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc[r]),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1)));
        u[r] = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    }
#else
    __m256 lo[4], hi[4];
    for (int r = 0; r < 4; r++) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n16; i += 16) {
        __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(a + i + 8);
        for (int r = 0; r < 4; r++) {
            const uint16_t *bh = (const uint16_t *)b[r] + i;
            const float *bf = (const float *)b[r] + i;
            lo[r] = _mm256_fmadd_ps(x0, b_dtype == BF16 ? load_bf16x8(bh) : _mm256_loadu_ps(bf), lo[r]);
            hi[r] = _mm256_fmadd_ps(x1, b_dtype == BF16 ? load_bf16x8(bh + 8) : _mm256_loadu_ps(bf + 8), hi[r]);
        }
    }
    for (int r = 0; r < 4; r++) {
        __m256 v = _mm256_add_ps(lo[r], hi[r]);
        u[r] = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    }
#endif
    _MM_TRANSPOSE4_PS(u[0], u[1], u[2], u[3]);  /* u[k] = lane k of every row */
    __m128 sum = _mm_add_ps(_mm_add_ps(u[0], u[2]), _mm_add_ps(u[1], u[3]));
    _mm_storeu_ps(out, sum);
    for (int r = 0; r < 4; r++)
        for (int64_t i = n16; i < n; i++) out[r] = fmaf(a[i], load_elem(b[r], b_dtype, i), out[r]);
}
#define PAGE_SCORE_ROWS 4
#else
static float dot_lanes16(const float *a, const void *b, int b_dtype, int64_t n) {
    const int64_t n16 = n - n % 16;
    float lane[16] = {0};
    for (int64_t i = 0; i < n16; i++) lane[i % 16] = fmaf(a[i], load_elem(b, b_dtype, i), lane[i % 16]);
    float s = tree16(lane);
    for (int64_t i = n16; i < n; i++) s = fmaf(a[i], load_elem(b, b_dtype, i), s);
    return s;
}
#define PAGE_SCORE_ROWS 1
#endif

/* qb = [sum_g min(q_g, 0) | sum_g max(q_g, 0)] over query n's G = H / Hkv heads of KV head h, the
   vector whose dot with a page's [kmin | kmax] row is the GQA-summed Quest bound
   (kernels/indexer/reference.py grouped_query_bounds, equal to float32 rounding: torch's order
   of the sum changes with the shape), in float32 with g in order, in every build and batch; NaN
   propagates as through torch's clamp. */
static void group_query_bounds(const void *q, int q_dtype, int64_t n, int64_t H, int64_t Hkv, int64_t D, int64_t h,
                               float *qb) {
    const int64_t G = H / Hkv;
    for (int64_t d = 0; d < D; d++) {
        float neg = 0.0f, pos = 0.0f;
        for (int64_t g = 0; g < G; g++) {
            float x = load_elem(q, q_dtype, (n * H + h * G + g) * D + d);
            float lo = x > 0.0f ? 0.0f : x, hi = x < 0.0f ? 0.0f : x;  /* (NaN stays NaN) */
            neg = g ? neg + lo : lo;
            pos = g ? pos + hi : hi;
        }
        qb[d] = neg;
        qb[D + d] = pos;
    }
}

void tk_group_query_bounds(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, float *out) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) group_query_bounds(q, q_dtype, n, H, Hkv, D, h, out + (n * Hkv + h) * 2 * D);
}

/* The scores of one (query, KV head): o[p] for the first P pages of block-table row bt, KV head
   h's rows of kb in kb_dtype (F32, or BF16 for a bf16 cache's exact bounds: half the bytes). */
static void score_pages(const float *q, int64_t W, const void *kb, int kb_dtype, int64_t h, int64_t num_pages,
                        const int32_t *bt, int64_t P, float *o) {
    const int64_t row_bytes = W * (kb_dtype == BF16 ? 2 : 4);
    const char *rows = (const char *)kb + h * num_pages * row_bytes;
    for (int64_t p0 = 0; p0 < P; p0 += PAGE_SCORE_ROWS) {
        const void *row[PAGE_SCORE_ROWS];
        for (int r = 0; r < PAGE_SCORE_ROWS; r++) {
            int64_t p = p0 + r < P ? p0 + r : P - 1;  /* (past P: a repeat, not stored) */
            if (p + 8 < P) {
                int64_t ahead = bt[p + 8] < 0 ? 0 : bt[p + 8] >= num_pages ? num_pages - 1 : bt[p + 8];
                for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(rows + ahead * row_bytes + b, 0, 3);
            }
            int64_t page = bt[p] < 0 ? 0 : bt[p] >= num_pages ? num_pages - 1 : bt[p];
            row[r] = rows + page * row_bytes;
        }
#if PAGE_SCORE_ROWS == 4
        float s4[4];
        dot4_lanes16(q, row, kb_dtype, W, s4);
        for (int r = 0; r < 4 && p0 + r < P; r++) o[p0 + r] = s4[r];
#else
        o[p0] = dot_lanes16(q, row[0], kb_dtype, W);
#endif
    }
}

void tk_page_scores(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, const void *kb,
                    int kb_dtype, int64_t num_pages, const int32_t *block_table, int64_t bt_stride, int64_t P,
                    float *out, int nthreads) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads)
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) {
            float qb[2 * D];
            group_query_bounds(q, q_dtype, n, H, Hkv, D, h, qb);
            score_pages(qb, 2 * D, kb, kb_dtype, h, num_pages, block_table + n * bt_stride, P, out + (n * Hkv + h) * P);
        }
}

/* ------------------------------------------------------------------------------ top-k page selection
 * kernels.indexer.reference.select_from_scores for scores (N, Hkv, P) -> out (N, Hkv, K) int32:
 * pages past a sequence's end never chosen, the first `sink` and last `local` valid pages always,
 * then the highest scores, ties to the lower page; ascending, padded with -1. The same ranking
 * key as the reference: the score's bits made monotone (NaN canonical and above +inf, -0 as 0)
 * in the high half of an int64, P - 1 - page in the low half; chosen entries whose score is -inf
 * or NaN are dropped, as there. */
static inline int64_t page_key(float v, int64_t p, int64_t P) {
    int32_t bits;
    if (v != v) bits = 0x7fc00000;
    else { v = v + 0.0f; memcpy(&bits, &v, 4); }
    int64_t monotone = bits >= 0 ? bits : (bits ^ 0x7FFFFFFF);
    return monotone * 4294967296LL + (P - 1 - p);
}

static inline void heap_sift_down(int64_t *h, int64_t n, int64_t i) {  /* min-heap */
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m]) m = l;
        if (r < n && h[r] < h[m]) m = r;
        if (m == i) return;
        int64_t t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The score whose key tops key's high half (page_key inverted; NaN comes back as NaN). */
static inline float key_score(int64_t key) {
    int64_t m = key >> 32;  /* (the low half is in [0, 2^32): an arithmetic shift takes it off) */
    int32_t bits = (int32_t)(m >= 0 ? m : (m ^ 0x7FFFFFFF));
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

/* One (query, KV head) row of the selection: sc[p] the scores of pages p < n_pages (never read
   past them, nor for forced pages), out K entries. heap: min(K, P) + 1 int64 of scratch. With a
   list, only its n_list pages are ranked (the caller knows no other page can be chosen). Once
   the heap is full, an ordinary page whose score is below the heap's least score is passed over
   without its key (its key is smaller whatever its index). */
static void select_row(const float *sc, int64_t P, int64_t n_pages, int64_t sink, int64_t local, int64_t K,
                       const int32_t *list, int64_t n_list, int64_t *heap, int32_t *o) {
    const int64_t k_top = K < P ? K : P;
    int64_t filled = 0;
    float least = -INFINITY;  /* (the heap's least score once full; -inf passes nothing over) */
    for (int64_t i = 0, count = list ? n_list : P; i < count; i++) {
        const int64_t p = list ? list[i] : i;
        if (p >= sink && p < n_pages && p < n_pages - local && sc[p] < least) continue;  /* (sc[p]: p < n_pages) */
        float v = p >= n_pages ? -INFINITY : (p < sink || p >= n_pages - local) ? INFINITY : sc[p];
        int64_t key = page_key(v, p, P);
        if (filled < k_top) {
            heap[filled++] = key;
            if (filled == k_top) {
                for (int64_t i = k_top / 2 - 1; i >= 0; i--) heap_sift_down(heap, k_top, i);
                least = key_score(heap[0]);
            }
        } else if (k_top > 0 && key > heap[0]) {
            heap[0] = key;
            heap_sift_down(heap, k_top, 0);
            least = key_score(heap[0]);
        }
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < filled; i++) {
        int64_t p = P - 1 - (heap[i] & 0xFFFFFFFFLL);
        float v = p >= n_pages ? -INFINITY : (p < sink || p >= n_pages - local) ? INFINITY : sc[p];
        if (v > -INFINITY) o[kept++] = (int32_t)p;  /* (false for NaN, as in the reference) */
    }
    if (kept > 64)  /* ascending */
        qsort(o, (size_t)kept, sizeof(int32_t), cmp_i32);
    else
        for (int64_t i = 1; i < kept; i++) {
            int32_t x = o[i];
            int64_t j = i;
            for (; j > 0 && o[j - 1] > x; j--) o[j] = o[j - 1];
            o[j] = x;
        }
    for (int64_t i = kept; i < K; i++) o[i] = -1;
}

void tk_select_pages(const float *scores, int64_t N, int64_t Hkv, int64_t P, const int32_t *seq_lens,
                     int64_t page_size, int64_t sink, int64_t local, int64_t K, int32_t *out, int nthreads) {
    const int64_t k_top = K < P ? K : P;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads) if (N * Hkv * P >= 16384)
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) {
            int64_t n_pages = ((int64_t)seq_lens[n] + page_size - 1) / page_size;
            select_row(scores + (n * Hkv + h) * P, P, n_pages, sink, local, K, NULL, 0,
                       (int64_t *)thread_ints(2 * k_top + 2), out + (n * Hkv + h) * K);
        }
}

/* ------------------------------------------------------------------------------ fused indexer
 * tk_page_scores then tk_select_pages in one pass per (query, KV head), the scores kept in a
 * per-thread buffer: the same scores (bit for bit) and the same selection, without the scores
 * tensor, a second parallel region and the second call's overhead. Pages past a sequence's end
 * are not scored at all (their scores were never read).
 *
 * With page sketches (ksketch, see "page-bound sketches") and a row of at least
 * SKETCH_MIN_PAGES pages, SKETCH_MIN_RATIO times the selection, a row takes two passes instead,
 * and selects exactly the same pages:
 *   1. every page's sketched score s~ and its error bound e from the 8-bit sketch row: the exact
 *      score s (the float32 value score_pages computes) lies in [L, U] = [s~ - e, s~ + e];
 *   2. T = the k'-th largest L among the pages that are not forced (k' = the slots left after
 *      the sink / local pages). At least k' pages have s >= T, so a page with U < T is below k'
 *      others and cannot be chosen. Every other page is scored exactly from its bounds row, as
 *      score_pages would, and select_row ranks them and the forced pages as before: the same
 *      ranking key, ties and all.
 * Pass 1 reads 8-bit codes and their parameters (160 bytes per page and KV head at D = 64, where
 * the float32 bounds row is 512), eight pages at a time (sketch_intervals8), and skips the heap
 * for a group whose lower ends all stay below the heap's least; without software prefetch, which
 * measured slower once the pass ran at the memory's rate. Pass 2 reads the few rows near the
 * threshold. A page whose sketch has no finite error (non-finite or huge bounds) is always
 * scored exactly, so NaN / inf behave as before. */
#define SKETCH_MIN_PAGES 64
#define SKETCH_MIN_RATIO 8  /* pages per selected page, at least (below, the exact pass is as fast) */

/* The query side of the sketched scores: qb's halves j (kmin, kmax) as int16, qi = round(qb /
   qscale_j) with qscale_j the power of two that puts max |qb_j| at most at 32767, so that each
   half's qi . codes is an exact int32 (|sum| <= D * 32767 * 255 < 2^31 for D <= SKETCH_MAX_D);
   and, in float32 (sums and |.| sums rounded up), sum_j = sum qb_j, abs_j = sum |qb_j|,
   slop_j = 255 * sum |qb_j - qscale_j * qi_j| (what rounding qb can cost against codes <= 255);
   floor = (2D + 64) * 2^-149, the most that gradual underflow can cost the exact dot (2D
   operations) and the sketched score together, added to every error bound. A non-finite, huge
   or tiny qb (qscale would flush to zero in float32) returns 0: the row is scored exactly. */
typedef struct { float sum[2], abs[2], qscale[2], slop[2], floor; } sketch_query;

static int sketch_query_init(const float *qb, int64_t D, int16_t *qi, sketch_query *sq) {
    for (int j = 0; j < 2; j++) {
        const float *x = qb + j * D;
        double amax = 0.0, sum = 0.0, abs = 0.0, slop = 0.0;
        for (int64_t d = 0; d < D; d++) {
            sum += x[d];
            abs += fabs((double)x[d]);
            amax = fabs((double)x[d]) > amax ? fabs((double)x[d]) : amax;
        }
        if (!(abs <= SKETCH_MAX_ABS) || (amax > 0.0 && amax < 0x1p-100)) return 0;  /* (also NaN) */
        double qscale = amax > 0.0 ? ldexp(1.0, ilogb(amax / 32767.0) + 1) : 1.0;  /* amax / qscale <= 32767 */
        for (int64_t d = 0; d < D; d++) {
            double r = nearbyint(x[d] / qscale);  /* (exact: a power of two) */
            qi[j * D + d] = (int16_t)r;
            slop += fabs((double)x[d] - qscale * r);
        }
        sq->sum[j] = (float)sum;
        sq->abs[j] = nextafterf((float)abs, INFINITY);
        sq->qscale[j] = (float)qscale;
        sq->slop[j] = nextafterf((float)(255.0 * slop), INFINITY);
    }
    sq->floor = (float)(2 * D + 64) * 0x1p-149f;  /* (a whole number of subnormal units: exact) */
    return 1;
}

/* a = qi[0..D) . codes[0..D), b = qi[D..2D) . codes[D..2D), exactly. */
static inline void sketch_dots(const int16_t *qi, int64_t D, const uint8_t *codes, int32_t *a, int32_t *b) {
    int32_t sa = 0, sb = 0;
    for (int64_t d = 0; d < D; d++) {
        sa += (int32_t)qi[d] * codes[d];
        sb += (int32_t)qi[D + d] * codes[D + d];
    }
    *a = sa;
    *b = sb;
}

/* [lo, hi] around the exact float32 score of the page whose sketch row is row; (-inf, inf) where
   the sketch has no finite error bound.
     s = sum_j lo_j sum(qb_j) + step_j qscale_j (qi_j . codes_j)
     e = sum_j |qb_j|_1 err_j + slop_j step_j
   The codes' error is err_j (and its slack) against |qb_j|; slop is the rounding of qb. s and e
   are float32: their rounding (a few operations on terms below 3 max|bound| |qb|_1) and that of
   s -/+ e stay well inside the slack in err_j (SKETCH_SLACK), e is rounded up by 2^-20, and the
   query's underflow floor is added. */
static inline void sketch_interval(const int16_t *qi, const sketch_query *sq, int64_t D, const uint8_t *row,
                                   float *lo, float *hi) {
    const float *prm = (const float *)(row + sketch_codes_bytes(D));
    int32_t da, db;
    sketch_dots(qi, D, row, &da, &db);
    float s = (prm[0] * sq->sum[0] + prm[1] * (sq->qscale[0] * (float)da))
              + (prm[3] * sq->sum[1] + prm[4] * (sq->qscale[1] * (float)db));
    float e = ((prm[2] * sq->abs[0] + prm[1] * sq->slop[0]) + (prm[5] * sq->abs[1] + prm[4] * sq->slop[1]))
              * (1.0f + 0x1p-20f) + sq->floor;
    if (e < INFINITY) {
        *lo = s - e;
        *hi = s + e;
    } else {  /* (unbounded, or NaN from 0 * inf) */
        *lo = -INFINITY;
        *hi = INFINITY;
    }
}

/* sketch_interval for eight pages. The SIMD builds (D a multiple of 16) do the same operations
   lane for lane, so the same bits (tested against the plain-C build), with the dots' sums and
   the float32 combination eight pages wide: what pass 1 spends its time on. */
#if defined(__AVX512F__) || defined(TK_AVX2)
/* The eight pages' dots of one half: qj[0..D) . row[r][off..off + D), exact int32, as float32. */
static inline __m256 sketch_half_dots8(const int16_t *qj, int64_t D, const uint8_t *const row[8], int64_t off) {
    __m256i acc[8];
    for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_si256();
    for (int64_t d = 0; d < D; d += 16) {
        const __m256i qv = _mm256_loadu_si256((const __m256i *)(qj + d));
        for (int r = 0; r < 8; r++)
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(
                qv, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row[r] + off + d)))));
    }
    /* (per 128-bit lane: u0 = the four-lane sums of pages 0-3, u1 of pages 4-7) */
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[0], acc[1]), _mm256_hadd_epi32(acc[2], acc[3]));
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[4], acc[5]), _mm256_hadd_epi32(acc[6], acc[7]));
    return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                                               _mm256_permute2x128_si256(u0, u1, 0x31)));
}
#endif

static inline void sketch_intervals8(const int16_t *qi, const sketch_query *sq, int64_t D,
                                     const uint8_t *const row[8], float lo[8], float hi[8]) {
#if defined(__AVX512F__) || defined(TK_AVX2)
    if (D % 16 == 0) {
        const int64_t cb = sketch_codes_bytes(D);
        const __m256 a0 = sketch_half_dots8(qi, D, row, 0), a1 = sketch_half_dots8(qi + D, D, row, D);
        __m256 m[8];  /* the parameter rows (lo_0, step_0, err_0, lo_1, step_1, err_1, pad), transposed */
        for (int r = 0; r < 8; r++) m[r] = _mm256_loadu_ps((const float *)(row[r] + cb));
        const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
        const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
        const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
        const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
        const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        const __m256 lo0 = _mm256_permute2f128_ps(s0, s4, 0x20), step0 = _mm256_permute2f128_ps(s1, s5, 0x20);
        const __m256 err0 = _mm256_permute2f128_ps(s2, s6, 0x20), lo1 = _mm256_permute2f128_ps(s3, s7, 0x20);
        const __m256 step1 = _mm256_permute2f128_ps(s0, s4, 0x31), err1 = _mm256_permute2f128_ps(s1, s5, 0x31);
        __m256 sv = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(lo0, _mm256_set1_ps(sq->sum[0])),
                          _mm256_mul_ps(step0, _mm256_mul_ps(_mm256_set1_ps(sq->qscale[0]), a0))),
            _mm256_add_ps(_mm256_mul_ps(lo1, _mm256_set1_ps(sq->sum[1])),
                          _mm256_mul_ps(step1, _mm256_mul_ps(_mm256_set1_ps(sq->qscale[1]), a1))));
        __m256 e = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(err0, _mm256_set1_ps(sq->abs[0])), _mm256_mul_ps(step0, _mm256_set1_ps(sq->slop[0]))),
            _mm256_add_ps(_mm256_mul_ps(err1, _mm256_set1_ps(sq->abs[1])), _mm256_mul_ps(step1, _mm256_set1_ps(sq->slop[1]))));
        e = _mm256_add_ps(_mm256_mul_ps(e, _mm256_set1_ps(1.0f + 0x1p-20f)), _mm256_set1_ps(sq->floor));
        const __m256 bad = _mm256_or_ps(_mm256_cmp_ps(e, e, _CMP_UNORD_Q), _mm256_cmp_ps(e, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ));
        e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), bad);
        sv = _mm256_blendv_ps(sv, _mm256_setzero_ps(), bad);
        _mm256_storeu_ps(lo, _mm256_sub_ps(sv, e));
        _mm256_storeu_ps(hi, _mm256_add_ps(sv, e));
        return;
    }
#endif
    for (int r = 0; r < 8; r++) sketch_interval(qi, sq, D, row[r], lo + r, hi + r);
}

/* Test hook: lo / hi (N, Hkv, P) float64, the intervals of the first P block-table pages of each
   query (kernels.cpu.sketch_intervals); a query the sketches do not take gets (-inf, inf). */
void tk_sketch_intervals(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                         const uint8_t *ksketch, int64_t num_pages, const int32_t *block_table, int64_t P,
                         double *lo, double *hi) {
    const int64_t rb = tk_sketch_row_bytes(D);
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) {
            float qb[2 * SKETCH_MAX_D];
            int16_t qi[2 * SKETCH_MAX_D];
            sketch_query sq;
            int ok = D <= SKETCH_MAX_D;
            if (ok) {
                group_query_bounds(q, q_dtype, n, H, Hkv, D, h, qb);
                ok = sketch_query_init(qb, D, qi, &sq);
            }
            for (int64_t p0 = 0; p0 < P; p0 += 8) {
                const uint8_t *row[8];
                float l8[8], h8[8];
                for (int r = 0; r < 8; r++) {
                    int64_t page = block_table[n * P + (p0 + r < P ? p0 + r : P - 1)];
                    page = page < 0 ? 0 : page >= num_pages ? num_pages - 1 : page;
                    row[r] = ksketch + (h * num_pages + page) * rb;
                }
                if (ok) sketch_intervals8(qi, &sq, D, row, l8, h8);
                for (int r = 0; r < 8 && p0 + r < P; r++) {
                    int64_t i = (n * Hkv + h) * P + p0 + r;
                    lo[i] = ok ? l8[r] : -INFINITY;
                    hi[i] = ok ? h8[r] : INFINITY;
                }
            }
        }
}

/* One (query, KV head) row selected with the sketches; 0 (nothing written) where the two passes
   do not apply and the caller scores every page. buf: 4 * min(n_pages, P) + 2 * K + 8 floats of
   scratch; heap_ints: select_row's. */
static int select_row_sketched(const float *qb, int64_t D, const uint8_t *sk, int64_t h, const void *kb,
                               int kb_dtype, int64_t num_pages, const int32_t *bt, int64_t P, int64_t n_pages,
                               int64_t sink, int64_t local, int64_t K, float *buf, int64_t *heap_ints, int32_t *o) {
    const int64_t k_top = K < P ? K : P, np = n_pages < P ? n_pages : P;
    if (!sk || D > SKETCH_MAX_D || np < SKETCH_MIN_PAGES || np < SKETCH_MIN_RATIO * k_top) return 0;
    const int64_t a = sink < np ? (sink > 0 ? sink : 0) : np;  /* forced: [0, a) and [b, np) */
    const int64_t b = n_pages - local > 0 ? n_pages - local : 0;
    const int64_t forced = a + (b < np ? np - b : 0) - (b < a ? a - b : 0);
    const int64_t kprime = k_top - forced;
    if (kprime <= 0 || np - forced <= kprime) return 0;
    int16_t qi[2 * SKETCH_MAX_D];
    sketch_query sq;
    if (!sketch_query_init(qb, D, qi, &sq)) return 0;

    const int64_t rb = tk_sketch_row_bytes(D);
    const int64_t row_bytes = 2 * D * (kb_dtype == BF16 ? 2 : 4);
    const uint8_t *sk_rows = sk + h * num_pages * rb;
    const char *rows = (const char *)kb + h * num_pages * row_bytes;
    float *sc = buf, *upper = buf + np, *low = upper + np;  /* low: a min-heap of the k' largest lower bounds */
    int32_t *cand = (int32_t *)(low + kprime + 1);
    int64_t filled = 0;
#define PAGE_OF(p) (bt[p] < 0 ? 0 : bt[p] >= num_pages ? num_pages - 1 : bt[p])
#define FORCED(p) ((p) < a || (p) >= b)
    const int64_t fill_end = a + kprime < np ? a + kprime : np;  /* (the heap fills within [0, a + k')...) */
    for (int64_t p0 = 0; p0 < np; p0 += 8) {
        const uint8_t *row8[8];
        float lo8[8], hi8[8];
        for (int r = 0; r < 8; r++) {
            int64_t p = p0 + r < np ? p0 + r : np - 1;
            row8[r] = sk_rows + PAGE_OF(p) * rb;
        }
        sketch_intervals8(qi, &sq, D, row8, lo8, hi8);
        if (p0 < a || p0 + 8 > b || p0 + 8 > np)  /* forced pages and the padding: NaN, never a candidate */
            for (int r = 0; r < 8; r++)
                if (p0 + r >= np || FORCED(p0 + r)) lo8[r] = hi8[r] = NAN;
        if (p0 + 8 <= np)
            memcpy(upper + p0, hi8, sizeof hi8);
        else
            for (int r = 0; p0 + r < np; r++) upper[p0 + r] = hi8[r];
        if (p0 >= fill_end) {  /* (...and after it, a page's lower end rarely beats the heap's least) */
            const float least = low[0];
            int beats = 0;
            for (int r = 0; r < 8; r++) beats |= lo8[r] > least;
            if (!beats) continue;
        }
        for (int r = 0; r < 8 && p0 + r < np; r++) {
            const float lo = lo8[r];
            if (FORCED(p0 + r)) continue;
            if (filled < kprime) {
                int64_t i = filled++;
                while (i > 0 && low[(i - 1) / 2] > lo) { low[i] = low[(i - 1) / 2]; i = (i - 1) / 2; }
                low[i] = lo;
            } else if (lo > low[0]) {
                int64_t i = 0;
                for (;;) {
                    int64_t l = 2 * i + 1, rr = l + 1, m = l;
                    if (l >= kprime) break;
                    if (rr < kprime && low[rr] < low[l]) m = rr;
                    if (low[m] >= lo) break;
                    low[i] = low[m];
                    i = m;
                }
                low[i] = lo;
            }
        }
    }
    const float threshold = low[0];
    int64_t nc = 0, nf = 0;
    int64_t p = 0;  /* the candidates (NaN upper ends: forced pages, never), then the forced pages after them */
#if defined(__AVX512F__) || defined(TK_AVX2)
    for (const __m256 t = _mm256_set1_ps(threshold); p + 8 <= np; p += 8)
        for (unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(upper + p), t, _CMP_GE_OQ));
             m; m &= m - 1)
            cand[nc++] = (int32_t)(p + __builtin_ctz(m));
#endif
    for (; p < np; p++)
        if (upper[p] >= threshold) cand[nc++] = (int32_t)p;
    for (p = 0; p < a; p++) cand[nc + nf++] = (int32_t)p;
    for (p = b > a ? b : a; p < np; p++) cand[nc + nf++] = (int32_t)p;
    for (int64_t i0 = 0; i0 < nc; i0 += PAGE_SCORE_ROWS) {  /* exact scores, as score_pages */
        const void *row[PAGE_SCORE_ROWS];
        for (int r = 0; r < PAGE_SCORE_ROWS; r++) {
            int64_t i = i0 + r < nc ? i0 + r : nc - 1;
            if (i + 8 < nc) {
                const char *ahead = rows + PAGE_OF(cand[i + 8]) * row_bytes;
                for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(ahead + off, 0, 3);
            }
            row[r] = rows + PAGE_OF(cand[i]) * row_bytes;
        }
#if PAGE_SCORE_ROWS == 4
        float s4[4];
        dot4_lanes16(qb, row, kb_dtype, 2 * D, s4);
        for (int r = 0; r < 4 && i0 + r < nc; r++) sc[cand[i0 + r]] = s4[r];
#else
        sc[cand[i0]] = dot_lanes16(qb, row[0], kb_dtype, 2 * D);
#endif
    }
#undef PAGE_OF
#undef FORCED
    select_row(sc, P, n_pages, sink, local, K, cand, nc + nf, heap_ints, o);  /* (the others rank below) */
    return 1;
}

void tk_index_pages(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, const void *kb,
                    int kb_dtype, const uint8_t *ksketch, int64_t num_pages, const int32_t *block_table,
                    int64_t bt_stride, int64_t P, const int32_t *seq_lens, int64_t page_size, int64_t sink,
                    int64_t local, int64_t K, int32_t *out, int nthreads) {
    const int64_t k_top = K < P ? K : P;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nthreads) if (N * Hkv * P >= 2048)
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < Hkv; h++) {
            int64_t n_pages = ((int64_t)seq_lens[n] + page_size - 1) / page_size;
            int64_t scored = n_pages < P ? (n_pages > 0 ? n_pages : 0) : P;
            float *sc = thread_buffer(4 * scored + 2 * k_top + 8), qb[2 * D];
            int64_t *heap = (int64_t *)thread_ints(2 * k_top + 2);
            group_query_bounds(q, q_dtype, n, H, Hkv, D, h, qb);
            if (select_row_sketched(qb, D, ksketch, h, kb, kb_dtype, num_pages, block_table + n * bt_stride, P,
                                    n_pages, sink, local, K, sc, heap, out + (n * Hkv + h) * K))
                continue;
            score_pages(qb, 2 * D, kb, kb_dtype, h, num_pages, block_table + n * bt_stride, scored, sc);
            select_row(sc, P, n_pages, sink, local, K, NULL, 0, heap, out + (n * Hkv + h) * K);
        }
}

/* ------------------------------------------------------------------------------ memory read rate
 * Read n bytes once with all threads (a checksum keeps the reads): what streaming a model's
 * weights costs at best, the bound a batch-1 decode step is measured against. */
double tk_stream_read(const void *p, int64_t n, int nthreads) {
    const char *bytes = (const char *)p;
    int64_t blocks = n / 256;  /* 256-byte blocks; the tail (< 256 bytes) is not worth reading */
    double total = 0.0;
#pragma omp parallel num_threads(nthreads) reduction(+ : total)
    {
#if defined(__AVX512F__)
        __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < blocks; i++) {
            const char *q = bytes + i * 256;
            a = _mm512_add_epi64(a, _mm512_loadu_si512(q));
            b = _mm512_add_epi64(b, _mm512_loadu_si512(q + 64));
            c = _mm512_add_epi64(c, _mm512_loadu_si512(q + 128));
            d = _mm512_add_epi64(d, _mm512_loadu_si512(q + 192));
        }
        total += (double)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
#elif defined(TK_AVX2)
        __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < blocks; i++) {
            const __m256i *q = (const __m256i *)(bytes + i * 256);
            a = _mm256_add_epi64(a, _mm256_add_epi64(_mm256_loadu_si256(q), _mm256_loadu_si256(q + 4)));
            b = _mm256_add_epi64(b, _mm256_add_epi64(_mm256_loadu_si256(q + 1), _mm256_loadu_si256(q + 5)));
            c = _mm256_add_epi64(c, _mm256_add_epi64(_mm256_loadu_si256(q + 2), _mm256_loadu_si256(q + 6)));
            d = _mm256_add_epi64(d, _mm256_add_epi64(_mm256_loadu_si256(q + 3), _mm256_loadu_si256(q + 7)));
        }
        uint64_t lanes[4];
        _mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
        total += (double)(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
#else
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < blocks; i++) {
            const uint64_t *q = (const uint64_t *)(bytes + i * 256);
            for (int j = 0; j < 32; j += 4) { s0 += q[j]; s1 += q[j + 1]; s2 += q[j + 2]; s3 += q[j + 3]; }
        }
        total += (double)(s0 + s1 + s2 + s3);
#endif
    }
    return total;
}
