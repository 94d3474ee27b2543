// Shared definitions for the Craftax game logic, which compiles both as host C and as CUDA.
//
// Every game function is CRAFTAX_FN: static inline on the host, __host__ __device__ under nvcc,
// so the GPU port includes these headers unchanged. Rules that keep host and device bitwise equal:
// no globals written at step time, no fast-math, no implicit FMA contraction (gcc builds with
// -ffp-contract=off, nvcc with --fmad=false); where the reference's compiled JAX program fuses a
// multiply-add, the C code calls fmaf explicitly at that exact place.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CRAFTAX_FN __host__ __device__ static inline
#define CRAFTAX_HOT_FN __host__ __device__ static __forceinline__
#define CRAFTAX_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
// Constant tables exist twice under nvcc: in constant memory for the device pass and as plain
// arrays for the host pass; TABLE(name) picks the one of the pass being compiled.
#define CRAFTAX_TABLE(type, name, size, ...)                       \
    __constant__ static const type name##_device[size] = __VA_ARGS__; \
    static const type name##_host[size] = __VA_ARGS__;
#else
#define CRAFTAX_FN static inline
// The PRNG's small functions are forced inline: called out of line (as gcc chose), each hash is a
// call whose latency nothing overlaps; inlined, independent hashes of a step interleave.
#define CRAFTAX_HOT_FN static inline __attribute__((always_inline))
#define CRAFTAX_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define CRAFTAX_TABLE(type, name, size, ...) static const type name##_host[size] = __VA_ARGS__;
#endif

// Host-only SIMD paths (the view's rows, the spawn scan) use SSE2, which every x86-64 CPU has;
// elsewhere, and on the device, the plain loops they replace run.
#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#define CRAFTAX_SSE2
#endif

// The batch draws of draws.h are compiled for several x86 vector extensions, the best one the
// CPU has picked at load time (GCC function multiversioning), so a portable build still hashes
// with AVX2 or AVX-512. The extensions only change speed: the hashes are integer arithmetic.
#if defined(__CUDACC__)
#define CRAFTAX_LANES_FN CRAFTAX_FN
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CRAFTAX_LANES_FN static __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CRAFTAX_LANES_FN static
#endif

// A hint to load the cache line holding *p; no effect on results. With ~148 KB of state per env
// and a thousand envs, most of a step's map reads miss the cache: the step prefetches the cells it
// will read (the view, the cells around each mob) early, so the misses overlap its hashing.
#ifdef __CUDA_ARCH__
#define CRAFTAX_PREFETCH(p) ((void)(p))
#else
#define CRAFTAX_PREFETCH(p) __builtin_prefetch(p)
#endif

#ifdef __CUDACC__
// The most warps in a block of the device step; device_kernels.cuh checks it against VEC_GPU_BLOCK.
#define CRAFTAX_WARPS_PER_BLOCK 4

__device__ static unsigned* craftax_stepping_lane_masks(void) {
    __shared__ unsigned masks[CRAFTAX_WARPS_PER_BLOCK];
    return masks;
}

// Run by all 32 lanes of a warp before any of them steps (device_kernels.cuh's step kernel):
// records which lanes step (an env given a bad action does not), for the parts of a step the
// lanes make together (mobs.h's spawn choice).
__device__ static void craftax_set_stepping_lanes(unsigned lanes) {
    craftax_stepping_lane_masks()[threadIdx.x / 32] = lanes;
    __syncwarp(0xFFFFFFFFu);
}

__device__ static unsigned craftax_stepping_lanes(void) { return craftax_stepping_lane_masks()[threadIdx.x / 32]; }
#endif

#ifdef __CUDA_ARCH__
#define TABLE(name) name##_device
#else
#define TABLE(name) name##_host
#endif

CRAFTAX_FN int iclamp(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }
CRAFTAX_FN float fclampf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

// The index of x's lowest set bit (x != 0).
CRAFTAX_FN int lowest_set_bit(uint64_t x) {
#ifdef __CUDA_ARCH__
    return __ffsll((long long)x) - 1;
#else
    return __builtin_ctzll(x);
#endif
}

// The 32-bit word at p, which is 4-byte aligned (on the GPU one load; memcpy there reads bytes).
CRAFTAX_FN uint32_t load_word32(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    return *(const uint32_t*)p;
#else
    uint32_t word;
    memcpy(&word, p, 4);
    return word;
#endif
}

// Set bits of x (inline bit arithmetic on the host: builds without -mpopcnt would call libgcc).
CRAFTAX_FN int popcount32(uint32_t x) {
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0F0F0F0Fu;
    return (int)((x * 0x01010101u) >> 24);
#endif
}
