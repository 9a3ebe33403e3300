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
