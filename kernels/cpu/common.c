/* What every unit shares at run time (common.h): the build's vector lanes, the fp8 table,
 * per-thread scratch buffers, and the memory read rate the benchmarks measure against. */
#include "common.h"

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

float fp8_table[256];
static int fp8_ready = 0;

void fp8_init(void) {  /* float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa; no inf */
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

float *thread_buffer(int64_t n) {
    static __thread float *buf = NULL;
    static __thread int64_t cap = 0;
    if (n > cap) {
        free(buf);
        cap = n + n / 2 + 1024;
        buf = (float *)aligned_alloc(64, (size_t)(((cap * 4) + 63) / 64 * 64));
    }
    return buf;
}

int32_t *thread_ints(int64_t n) {
    static __thread int32_t *buf = NULL;
    static __thread int64_t cap = 0;
    if (n > cap) {
        free(buf);
        cap = n + 64;
        buf = (int32_t *)malloc((size_t)cap * 4);
    }
    return buf;
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
