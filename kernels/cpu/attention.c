/* Paged decode attention over one layer's KV cache: dense (every position of a sequence) and
 * sparse (the pages the indexer selected). The overview of the units is in common.h. */
#include "common.h"

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
