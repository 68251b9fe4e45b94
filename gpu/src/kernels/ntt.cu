// Ring NTT kernels of the QuasarGPU CUDA backend (compiled by NVRTC at first use).
//
// One block per row of 256 residues mod q, 128 threads: each thread computes one butterfly per
// layer on a copy of the row in shared memory. The arithmetic is exact for q < 2^49: see
// mul_mod; sums and differences are reduced at once.
// The twiddle tables and the algorithm are those of `kernels::twin` (gpu/src/kernels/mod.rs),
// the Rust twin that the CPU tests check against the reference on every run:
// - forward (FIPS 204 Algorithm 41 generalised to psi): layer `len` = 128 .. 1, block b uses
//   forward[256 / (2 len) + b] = psi^brv8(k);
// - inverse (FIPS 204 Algorithm 42): layer `len` = 1 .. 128, block b uses
//   inverse[256 / len - 1 - b] = q - psi^brv8(m), then every value times 256^-1.

typedef unsigned long long u64;

// a*b mod q for a, b < q < 2^49 (the twin's `mul_mod`, where the bound is argued): the quotient
// estimated in IEEE double precision is within 1 of the true one, so the remainder computed
// modulo 2^64 lies in (-q, 2q) and one correction on each side makes it exact.
__device__ __forceinline__ u64 mul_mod(u64 a, u64 b, u64 q) {
    u64 quot = (u64)(__dmul_rn((double)a, (double)b) / (double)q);
    long long r = (long long)(a * b - quot * q);
    if (r < 0) {
        r += (long long)q;
    }
    if (r >= (long long)q) {
        r -= (long long)q;
    }
    return (u64)r;
}

__device__ __forceinline__ u64 add_mod(u64 a, u64 b, u64 q) {
    u64 s = a + b;
    return s >= q ? s - q : s;
}

__device__ __forceinline__ u64 sub_mod(u64 a, u64 b, u64 q) {
    return a >= b ? a - b : a + q - b;
}

// Thread t of the block copies values t and t + 128 of `row` between global and shared memory.
__device__ __forceinline__ void load_row(u64* a, const u64* row, unsigned int t) {
    a[t] = row[t];
    a[t + 128] = row[t + 128];
    __syncthreads();
}

extern "C" __global__ void ntt_forward(u64* rows, const u64* forward, u64 q, unsigned int count) {
    __shared__ u64 a[256];
    if (blockIdx.x >= count) {
        return;
    }
    u64* r = rows + (size_t)blockIdx.x * 256;
    unsigned int t = threadIdx.x;
    load_row(a, r, t);
    for (unsigned int len = 128; len >= 1; len >>= 1) {
        unsigned int b = t / len;
        unsigned int j = b * 2 * len + t % len;
        u64 w = forward[256 / (2 * len) + b];
        u64 x = a[j];
        u64 y = mul_mod(a[j + len], w, q);
        a[j] = add_mod(x, y, q);
        a[j + len] = sub_mod(x, y, q);
        __syncthreads();
    }
    r[t] = a[t];
    r[t + 128] = a[t + 128];
}

extern "C" __global__ void ntt_inverse(u64* rows, const u64* inverse, u64 n_inv, u64 q,
                                       unsigned int count) {
    __shared__ u64 a[256];
    if (blockIdx.x >= count) {
        return;
    }
    u64* r = rows + (size_t)blockIdx.x * 256;
    unsigned int t = threadIdx.x;
    load_row(a, r, t);
    for (unsigned int len = 1; len < 256; len <<= 1) {
        unsigned int b = t / len;
        unsigned int j = b * 2 * len + t % len;
        u64 w = inverse[256 / len - 1 - b];
        u64 x = a[j];
        u64 y = a[j + len];
        a[j] = add_mod(x, y, q);
        a[j + len] = mul_mod(sub_mod(x, y, q), w, q);
        __syncthreads();
    }
    r[t] = mul_mod(a[t], n_inv, q);
    r[t + 128] = mul_mod(a[t + 128], n_inv, q);
}

extern "C" __global__ void pointwise(u64* lhs, const u64* rhs, u64 q, unsigned long long len) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < len) {
        lhs[i] = mul_mod(lhs[i], rhs[i], q);
    }
}
