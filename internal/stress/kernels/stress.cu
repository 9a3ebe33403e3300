// Kernels for internal/stress. The binary embeds the PTX made from this file
// (stress.ptx) and the driver JIT-compiles it with cuModuleLoadData, so neither
// CI nor a node needs the CUDA toolkit. Regenerate with nvcc 13.0 on a machine
// that has it:
//
//   nvcc -ptx -arch=compute_90 -o stress.ptx stress.cu
//
// All entry points are extern "C" so their PTX names are not mangled.

// copy_u4 is the plain grid-stride copy: one uint4 (16 bytes) per thread and step.
extern "C" __global__ void copy_u4(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                   unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        dst[i] = src[i];
    }
}

// copy_u4_x4 is the grid-stride copy with four uint4 loads in flight per thread
// before the stores, so more bytes are outstanding per SM.
extern "C" __global__ void copy_u4_x4(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                      unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i];
        const uint4 b = src[i + stride];
        const uint4 c = src[i + 2 * stride];
        const uint4 d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) {
        dst[i] = src[i];
    }
}

// copy_u4_x4cs is copy_u4_x4 with streaming (evict-first) cache hints.
extern "C" __global__ void copy_u4_x4cs(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                        unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldcs(src + i);
        const uint4 b = __ldcs(src + i + stride);
        const uint4 c = __ldcs(src + i + 2 * stride);
        const uint4 d = __ldcs(src + i + 3 * stride);
        __stcs(dst + i, a);
        __stcs(dst + i + stride, b);
        __stcs(dst + i + 2 * stride, c);
        __stcs(dst + i + 3 * stride, d);
    }
    for (; i < n; i += stride) {
        __stcs(dst + i, __ldcs(src + i));
    }
}

// fma_fp32 runs 8 independent FMA chains per thread, x_k = fma(x_k, a, b + k/8)
// starting from x_k = k, for iters steps, and writes the chains' sum (in a fixed
// order) per thread. The host computes the same value with correctly rounded
// float32 FMAs; any difference is silent data corruption.
extern "C" __global__ void fma_fp32(float* __restrict__ out, int iters, float a, float b) {
    float x0 = 0.0f, x1 = 1.0f, x2 = 2.0f, x3 = 3.0f;
    float x4 = 4.0f, x5 = 5.0f, x6 = 6.0f, x7 = 7.0f;
    const float b0 = b, b1 = b + 0.125f, b2 = b + 0.25f, b3 = b + 0.375f;
    const float b4 = b + 0.5f, b5 = b + 0.625f, b6 = b + 0.75f, b7 = b + 0.875f;
#pragma unroll 16
    for (int i = 0; i < iters; i++) {
        x0 = fmaf(x0, a, b0);
        x1 = fmaf(x1, a, b1);
        x2 = fmaf(x2, a, b2);
        x3 = fmaf(x3, a, b3);
        x4 = fmaf(x4, a, b4);
        x5 = fmaf(x5, a, b5);
        x6 = fmaf(x6, a, b6);
        x7 = fmaf(x7, a, b7);
    }
    out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] =
        ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}

// fma_fp64 is fma_fp32 in double precision: 8 independent chains per thread,
// x_k = fma(x_k, a, b + k/8) from x_k = k, and the chains' sum in a fixed order.
extern "C" __global__ void fma_fp64(double* __restrict__ out, int iters, double a, double b) {
    double x0 = 0.0, x1 = 1.0, x2 = 2.0, x3 = 3.0;
    double x4 = 4.0, x5 = 5.0, x6 = 6.0, x7 = 7.0;
    const double b0 = b, b1 = b + 0.125, b2 = b + 0.25, b3 = b + 0.375;
    const double b4 = b + 0.5, b5 = b + 0.625, b6 = b + 0.75, b7 = b + 0.875;
#pragma unroll 16
    for (int i = 0; i < iters; i++) {
        x0 = fma(x0, a, b0);
        x1 = fma(x1, a, b1);
        x2 = fma(x2, a, b2);
        x3 = fma(x3, a, b3);
        x4 = fma(x4, a, b4);
        x5 = fma(x5, a, b5);
        x6 = fma(x6, a, b6);
        x7 = fma(x7, a, b7);
    }
    out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] =
        ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}

// Memory pattern kinds; internal/stress/pattern.go computes the same words on the host.
#define PATTERN_WALKING_ONES 0
#define PATTERN_WALKING_ZEROS 1
#define PATTERN_RANDOM 2

// pattern_word is the 32-bit word at word index i for a pattern kind, pass and seed.
// Walking ones set bit (i + pass) mod 32, walking zeros clear it, so neighbouring words
// differ and every bit position is exercised across words; random is a murmur3 finaliser
// of the index, pass and seed.
__device__ __forceinline__ unsigned int pattern_word(int kind, unsigned int pass, unsigned int seed,
                                                     unsigned long long i) {
    if (kind == PATTERN_WALKING_ONES) return 1u << ((unsigned int)(i + pass) & 31u);
    if (kind == PATTERN_WALKING_ZEROS) return ~(1u << ((unsigned int)(i + pass) & 31u));
    unsigned int h = (unsigned int)i * 0x9E3779B1u + (unsigned int)(i >> 32) * 0x85EBCA77u + seed +
                     pass * 0x27D4EB2Fu;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// pattern_fill writes the pattern over n16 uint4s (4 words each).
extern "C" __global__ void pattern_fill(uint4* __restrict__ buf, unsigned long long n16, int kind,
                                        unsigned int pass, unsigned int seed) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n16;
         j += stride) {
        const unsigned long long w = 4 * j;
        buf[j] = make_uint4(pattern_word(kind, pass, seed, w), pattern_word(kind, pass, seed, w + 1),
                            pattern_word(kind, pass, seed, w + 2), pattern_word(kind, pass, seed, w + 3));
    }
}

// record_mismatch counts a wrong word in errs[0] and keeps the first max_errs of them:
// entry k is errs[2 + 2k] = word index, errs[3 + 2k] = expected << 32 | actual.
__device__ __forceinline__ void record_mismatch(unsigned long long* errs, unsigned int max_errs,
                                                unsigned long long index, unsigned int want,
                                                unsigned int got) {
    const unsigned long long slot = atomicAdd(errs, 1ULL);
    if (slot < max_errs) {
        errs[2 + 2 * slot] = index;
        errs[3 + 2 * slot] = ((unsigned long long)want << 32) | got;
    }
}

// pattern_check reads n16 uint4s back and records every word that differs from the pattern.
extern "C" __global__ void pattern_check(const uint4* __restrict__ buf, unsigned long long n16,
                                         int kind, unsigned int pass, unsigned int seed,
                                         unsigned long long* errs, unsigned int max_errs) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n16;
         j += stride) {
        const uint4 v = buf[j];
        const unsigned long long w = 4 * j;
        const unsigned int e0 = pattern_word(kind, pass, seed, w);
        const unsigned int e1 = pattern_word(kind, pass, seed, w + 1);
        const unsigned int e2 = pattern_word(kind, pass, seed, w + 2);
        const unsigned int e3 = pattern_word(kind, pass, seed, w + 3);
        if (v.x != e0) record_mismatch(errs, max_errs, w, e0, v.x);
        if (v.y != e1) record_mismatch(errs, max_errs, w + 1, e1, v.y);
        if (v.z != e2) record_mismatch(errs, max_errs, w + 2, e2, v.z);
        if (v.w != e3) record_mismatch(errs, max_errs, w + 3, e3, v.w);
    }
}
