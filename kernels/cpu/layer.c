/* One decoder layer's steps around attention: rms_norm, rope + cache write (with the fp8
 * quantization of the cache), and tk_decode_layer, the whole layer of a decode step in one call.
 * The overview of the units is in common.h. */
#include "common.h"

/* ------------------------------------------------------------------------------ fp8 cache quantization */
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

/* ------------------------------------------------------------------------------ one decoder layer
 * A whole Llama decoder layer for a decode step in bf16, in one call (the per-op Python and
 * dispatch cost is most of a small model's decode step otherwise):
 *   xn = rms_norm(x); q = rope_write(xn @ wqkv^T); h = x + attention(q) @ wo^T;
 *   x  = h + (silu(gate) * up)(rms_norm(h) @ w13^T) @ w2^T             (x updated in place)
 * attention: paged_decode (dense); or, with sparse_K > 0, the Quest indexer (index_pages: K
 * pages per query and KV head, sink / local forced, into `selected`, (T, Hkv, K) int32) then
 * sparse_decode over those pages. Exactly the composition of the entry points it calls, so it
 * computes the same numbers as calling them one by one. The cache is bf16 (bf16 page bounds) or fp8
 * (kv_dtype FP8: keys and values quantized with the per-head scales as PagedKVCache.write does,
 * float32 page bounds of the dequantized keys, saturations counted per head into `saturated`).
 * The arguments come as one tk_decode_layer_args (common.h). */
void tk_decode_layer(const tk_decode_layer_args *a) {
    const int64_t T = a->T, dim = a->dim, H = a->H, Hkv = a->Hkv, D = a->D, hidden = a->hidden;
    const int64_t W = (H + 2 * Hkv) * D, bt_stride = a->bt_stride;
    const int nthreads = a->nthreads;
    uint16_t *xn = a->scratch, *qkv = xn + T * dim, *q = qkv + T * W, *att = q + T * H * D, *h = att + T * H * D;
    uint16_t *g = h + T * dim, *x = a->x;
    int fp8 = a->kv_dtype == FP8;  /* (a bf16 cache otherwise; fp8 keeps float32 page bounds) */
    const float *k_scale = fp8 ? a->k_scale : NULL, *v_scale = fp8 ? a->v_scale : NULL;
    tk_rms_norm(x, BF16, T, dim, a->attn_norm_w, a->eps, xn, nthreads);
    tk_linear(xn, BF16, T, dim, dim, a->wqkv, BF16, W, 0, qkv, BF16, W, NULL, BF16, 0, nthreads);
    tk_rope_write(qkv, BF16, T, H, Hkv, D, a->cos_t, a->sin_t, a->slots, q, a->k_cache, a->v_cache, a->kbounds,
                  a->ksketch, a->num_pages, a->page_size, a->kv_dtype, a->k_scale, a->v_scale, a->saturated, nthreads);
    if (a->sparse_K > 0) {
        int32_t duplicates = 0;  /* (the indexer never selects a page twice) */
        tk_index_pages(q, BF16, T, H, Hkv, D, a->kbounds, fp8 ? F32 : BF16, a->ksketch, a->num_pages, a->block_table,
                       bt_stride, bt_stride, a->seq_lens, a->page_size, a->sink, a->local, a->sparse_K, a->selected,
                       nthreads);
        tk_sparse_decode(q, BF16, T, H, Hkv, D, a->k_cache, a->v_cache, a->kv_dtype, a->page_size, a->num_pages,
                         a->block_table, bt_stride, a->seq_lens, a->selected, a->sparse_K, a->scale, k_scale, v_scale,
                         att, &duplicates, nthreads);
    } else {
        tk_paged_decode(q, BF16, T, H, Hkv, D, a->k_cache, a->v_cache, a->kv_dtype, a->page_size, a->block_table,
                        bt_stride, a->seq_lens, a->scale, k_scale, v_scale, att, nthreads);
    }
    tk_linear(att, BF16, T, H * D, H * D, a->wo, BF16, dim, 0, h, BF16, dim, x, BF16, dim, nthreads);
    tk_rms_norm(h, BF16, T, dim, a->ffn_norm_w, a->eps, xn, nthreads);
    tk_linear(xn, BF16, T, dim, dim, a->w13, BF16, 2 * hidden, hidden, g, BF16, hidden, NULL, BF16, 0, nthreads);
    tk_linear(g, BF16, T, hidden, hidden, a->w2, BF16, dim, 0, x, BF16, dim, h, BF16, dim, nthreads);
}

/* tk_decode_layer_args as this compiler lays it out, for the test that holds the ctypes mirror
   (kernels/cpu/_loader.py, DecodeLayerArgs) to it: the name, offset, size and kind ('f' float,
   'i' int, 'q' int64_t, 'P' a pointer) of the first `cap` fields; returns how many there are.
   sizeof the whole struct is tk_decode_layer_args_size. */
int64_t tk_decode_layer_args_fields(const char **names, int64_t *offsets, int64_t *sizes, char *kinds,
                                    int64_t cap) {
    int64_t i = 0;
#define TK_FIELD_LAYOUT(type, name)                                                                  \
    if (i < cap) {                                                                                   \
        names[i] = #name;                                                                            \
        offsets[i] = (int64_t)offsetof(tk_decode_layer_args, name);                                  \
        sizes[i] = (int64_t)sizeof(((tk_decode_layer_args *)0)->name);                               \
        kinds[i] = _Generic(((tk_decode_layer_args *)0)->name, float: 'f', int: 'i', int64_t: 'q',   \
                            default: 'P');                                                           \
    }                                                                                                \
    i++;
    TK_DECODE_LAYER_ARGS(TK_FIELD_LAYOUT)
#undef TK_FIELD_LAYOUT
    return i;
}

int64_t tk_decode_layer_args_size(void) { return (int64_t)sizeof(tk_decode_layer_args); }
