/* Native CPU kernels for the bundled engine's decode path: what every unit shares. The Python
 * side is kernels/cpu/ (the loader in _loader.py, the wrappers in __init__.py); the design is in
 * docs/architecture.md.
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
 * across them (one chain per output, see linear.c); attention sums a score in an order of its
 * own per build.
 *
 * The units, compiled together into one shared library:
 *   common.c     the build's lanes, the fp8 table, per-thread buffers, the memory read rate
 *   linear.c     the packed linear layer (bf16 or float32 weights) with its fused epilogues
 *   layer.c      rms_norm, rope + cache write (fp8 quantization included), one whole decoder layer
 *   attention.c  paged decode attention, dense and sparse
 *   indexer.c    page-bound sketches, Quest page scores, top-k page selection, the fused indexer
 * A helper that one unit uses stays static there. A shared one is static inline here, or defined
 * once with TK_INTERNAL (hidden: not exported by the library) and declared here. The entry points
 * (tk_*, called through ctypes) are declared at the end.
 */
#ifndef TK_COMMON_H
#define TK_COMMON_H

#include <math.h>
#include <stddef.h>
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

#if defined(__AVX512BF16__)
#define TK_BF16_DOT 1  /* bf16 x bf16 products with vdpbf16ps (linear.c, attention.c) */
#endif

/* Shared between units, not exported by the library. */
#define TK_INTERNAL __attribute__((visibility("hidden")))

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

/* float8_e4m3fn code -> float32 (common.c); fp8_init fills it, and every entry point that reads
   fp8 calls it first (outside its parallel region). */
TK_INTERNAL extern float fp8_table[256];
TK_INTERNAL void fp8_init(void);

static inline float load_elem(const void *p, int dtype, int64_t i) {
    if (dtype == BF16) return bf16_to_f32(((const uint16_t *)p)[i]);
    if (dtype == FP8) return fp8_table[((const uint8_t *)p)[i]];
    return ((const float *)p)[i];
}

static inline void store_elem(void *p, int dtype, int64_t i, float v) {
    if (dtype == BF16) ((uint16_t *)p)[i] = f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

static inline void to_f32(const void *src, int dtype, int64_t n, float *dst) {
    for (int64_t i = 0; i < n; i++) dst[i] = load_elem(src, dtype, i);
}

/* Growing per-thread scratch (common.c; never freed: one per thread, bounded by the largest call):
   n floats, 64-byte aligned; n int32. */
TK_INTERNAL float *thread_buffer(int64_t n);
TK_INTERNAL int32_t *thread_ints(int64_t n);

/* Loops written once over the build's vector width (16 or 8 lanes): exp, softmax, RMSNorm. The bf16
   loads and stores (VLOAD_BF16, VSTORE_BF16, VROUND_BF16) are defined below; a macro only needs
   them where it is used. */
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
/* 32 bf16 as their even and odd elements widened to float32: two ALU ops, no lane crossing. */
static inline void load_bf16x32_split(const uint16_t *p, __m512 *even, __m512 *odd) {
    __m512i w = _mm512_loadu_si512((const void *)p);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xFFFF0000u)));
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
/* 16 bf16 widened to float32 as their even and odd elements. */
static inline void load_bf16x16_split(const uint16_t *p, __m256 *even, __m256 *odd) {
    __m256i w = _mm256_loadu_si256((const __m256i *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xFFFF0000u)));
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

/* The sum of 16 lanes by a fixed tree: (i, i+8), (i, i+4), (i, i+2), (i, i+1) (layer.c's
   rms_norm, indexer.c's page scores). */
static inline float tree16(float *lane) {
    for (int s = 8; s >= 1; s /= 2)
        for (int i = 0; i < s; i++) lane[i] += lane[i + s];
    return lane[0];
}

/* The sketch row of one page-bound row ([kmin | kmax], 2D elements in kb_dtype; indexer.c, "page-bound
   sketches"), rebuilt by the cache writes (layer.c) after each change to the bounds. */
TK_INTERNAL void sketch_page(const void *kb_row, int kb_dtype, int64_t D, uint8_t *out);

/* ------------------------------------------------------------------------------ tk_decode_layer's arguments
 * One struct passed by pointer: by name, where 37 positional ctypes arguments were one
 * transposition away from corrupting memory silently. kernels/cpu/_loader.py's DecodeLayerArgs (a
 * ctypes.Structure) lists the same fields in the same order; tk_decode_layer_args_fields (layer.c)
 * reports each field's offset and size as compiled, and a test holds the two to each other. Shapes
 * as in layer.c; pointers to bf16 are uint16_t. */
#define TK_DECODE_LAYER_ARGS(F)                                                                            \
    /* the step */                                                                                         \
    F(uint16_t *, x)                 /* (T, dim) bf16, the layer's input, updated in place */             \
    F(int64_t, T)                    /* tokens in the step (one per sequence) */                          \
    F(const uint16_t *, cos_t)       /* (T, D) bf16 rope rows */                                          \
    F(const uint16_t *, sin_t)                                                                             \
    F(const int64_t *, slots)        /* (T,) cache slot of each token */                                  \
    F(uint16_t *, scratch)           /* bf16, T * (2*dim + (H + 2*Hkv)*D + 2*H*D + hidden) elements */   \
    F(int, nthreads)                                                                                       \
    /* the layer: shapes, norms and packed weights (tk_linear_pack, bf16) */                              \
    F(int64_t, dim)                                                                                        \
    F(int64_t, hidden)                                                                                     \
    F(int64_t, H)                                                                                          \
    F(int64_t, Hkv)                                                                                        \
    F(int64_t, D)                                                                                          \
    F(float, eps)                                                                                          \
    F(const uint16_t *, attn_norm_w)                                                                       \
    F(const uint16_t *, ffn_norm_w)                                                                        \
    F(const uint16_t *, wqkv)                                                                              \
    F(const uint16_t *, wo)                                                                                \
    F(const uint16_t *, w13)         /* [gate; up], packed with silu_half = hidden */                     \
    F(const uint16_t *, w2)                                                                                \
    /* the layer's cache */                                                                                \
    F(void *, k_cache)               /* (num_pages * page_size, Hkv, D) in kv_dtype */                   \
    F(void *, v_cache)                                                                                     \
    F(void *, kbounds)               /* (Hkv, num_pages, 2, D): bf16, float32 for fp8 */                 \
    F(uint8_t *, ksketch)            /* (Hkv, num_pages, tk_sketch_row_bytes(D)) or NULL */              \
    F(int64_t, num_pages)                                                                                  \
    F(int64_t, page_size)                                                                                  \
    F(int, kv_dtype)                 /* BF16 or FP8 */                                                    \
    F(const float *, k_scale)        /* (Hkv,) fp8 scales, NULL for bf16 */                               \
    F(const float *, v_scale)                                                                              \
    F(int64_t *, saturated)          /* (Hkv,) fp8 saturation counts, NULL for bf16 */                    \
    /* attention */                                                                                        \
    F(const int32_t *, block_table)  /* (T, bt_stride) physical pages */                                  \
    F(int64_t, bt_stride)                                                                                  \
    F(const int32_t *, seq_lens)     /* (T,) positions including this step's */                           \
    F(float, scale)                                                                                        \
    F(int64_t, sparse_K)             /* 0: dense; else pages selected per query and KV head */            \
    F(int64_t, sink)                                                                                       \
    F(int64_t, local)                                                                                      \
    F(int32_t *, selected)           /* (T, Hkv, sparse_K) int32 out, or NULL when dense */

typedef struct {
#define TK_FIELD_DECLARE(type, name) type name;
    TK_DECODE_LAYER_ARGS(TK_FIELD_DECLARE)
#undef TK_FIELD_DECLARE
} tk_decode_layer_args;

/* ------------------------------------------------------------------------------ entry points
 * The library's exported functions (kernels/cpu/_loader.py declares their ctypes types), by unit. */

/* common.c */
int tk_simd_lanes(void);
double tk_stream_read(const void *p, int64_t n, int nthreads);

/* linear.c */
int tk_bf16_dot(void);
int64_t tk_linear_packed_numel(int64_t N, int64_t K);
void tk_advise_huge(void *p, int64_t n);
void tk_linear_pack(const void *w, int w_dtype, int64_t N, int64_t K, int64_t silu_half, void *out);
void tk_linear(const void *x, int x_dtype, int64_t M, int64_t K, int64_t ldx, const void *packed, int w_dtype,
               int64_t N, int64_t silu_half, void *y, int y_dtype, int64_t ldy, const void *resid, int r_dtype,
               int64_t ldr, int nthreads);

/* layer.c */
int64_t tk_fp8_quantize(const float *x, int64_t n, int64_t D, float scale, uint8_t *dst);
void tk_rope_write(const void *qkv, int dtype, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                   const void *cos_t, const void *sin_t, const int64_t *slots,
                   void *q, void *k_cache, void *v_cache, void *kbounds, uint8_t *ksketch, int64_t num_pages,
                   int64_t page_size, int kv_dtype, const float *k_scale, const float *v_scale, int64_t *saturated,
                   int nthreads);
void tk_rms_norm(const void *x, int dtype, int64_t M, int64_t D, const void *w, float eps, void *y, int nthreads);
void tk_decode_layer(const tk_decode_layer_args *args);
int64_t tk_decode_layer_args_fields(const char **names, int64_t *offsets, int64_t *sizes, char *kinds,
                                    int64_t cap);
int64_t tk_decode_layer_args_size(void);

/* attention.c */
void tk_fp8_dequant(const uint8_t *src, int64_t n, int64_t D, float scale, float *dst);
void tk_paged_decode(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                     const void *k_cache, const void *v_cache, int kv_dtype, int64_t page_size,
                     const int32_t *block_table, int64_t bt_stride, const int32_t *seq_lens, float scale,
                     const float *k_scale, const float *v_scale, void *out, int nthreads);
void tk_sparse_decode(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                      const void *k_cache, const void *v_cache, int kv_dtype, int64_t page_size, int64_t num_pages,
                      const int32_t *block_table, int64_t bt_stride, const int32_t *seq_lens,
                      const int32_t *selected, int64_t K, float scale, const float *k_scale, const float *v_scale,
                      void *out, int32_t *duplicates, int nthreads);

/* indexer.c */
int64_t tk_sketch_row_bytes(int64_t D);
void tk_sketch_pages(const void *kbounds, int kb_dtype, int64_t L, int64_t Hkv, int64_t num_pages, int64_t D,
                     const int64_t *pages, int64_t n, uint8_t *sketch, int nthreads);
void tk_group_query_bounds(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, float *out);
void tk_page_scores(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, const void *kb,
                    int kb_dtype, int64_t num_pages, const int32_t *block_table, int64_t bt_stride, int64_t P,
                    float *out, int nthreads);
void tk_select_pages(const float *scores, int64_t N, int64_t Hkv, int64_t P, const int32_t *seq_lens,
                     int64_t page_size, int64_t sink, int64_t local, int64_t K, int32_t *out, int nthreads);
void tk_sketch_intervals(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D,
                         const uint8_t *ksketch, int64_t num_pages, const int32_t *block_table, int64_t P,
                         double *lo, double *hi);
void tk_index_pages(const void *q, int q_dtype, int64_t N, int64_t H, int64_t Hkv, int64_t D, const void *kb,
                    int kb_dtype, const uint8_t *ksketch, int64_t num_pages, const int32_t *block_table,
                    int64_t bt_stride, int64_t P, const int32_t *seq_lens, int64_t page_size, int64_t sink,
                    int64_t local, int64_t K, int32_t *out, int nthreads);

#endif /* TK_COMMON_H */
