/* The Quest page indexer of sparse attention: page-bound sketches, page scores, top-k page
 * selection, and both fused into one pass. The overview of the units is in common.h. */
#include "common.h"

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
void sketch_page(const void *kb_row, int kb_dtype, int64_t D, uint8_t *out) {
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
