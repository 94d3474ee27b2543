// The GPU-resident Craftax env: the Ocean env of craftax.h stepped by the device vecenv
// (ocean/vecenv_gpu.cuh), one thread per env. Built by setup.py into ocean/craftax/libcraftax_gpu.so
// and driven through ctypes by ocean/craftax/gpu.py with raw device pointers of torch tensors and
// the caller's stream: no torch headers, cudart linked statically. The same library carries the
// CraftaxCells policy's kernels (cell_embedding.cu).
//
// Every entry point returns a cudaError_t (0 on success); craftax_gpu_error_string names it.
#include <climits>
#include <cstdint>

#include <cuda_bf16.h>

// Device envs always write compact observations, in a kernel of their own (craftax.h).
#define CRAFTAX_OBSERVATION_KERNEL
#include "craftax.h"
#define Env Craftax
#include "vecenv_gpu.cuh"
#include "device_kernels.cuh"

// Worlds generated at once on the device without a reset pool (each needs a WorldgenScratch).
#define WORLDGEN_SCRATCH_BUFFERS 8192
// The XLA-order cumsum (world generation, mob spawning) recurses, so the compiler cannot size the
// threads' stacks; this covers its depth with room to spare.
#define DEVICE_STACK_BYTES 8192
#define MAX_DEVICES 64

// The host's cos/sin results for the device (ReferenceTrig in perlin.h), per device: the light
// levels for every env, the 64 MB of gradient directions only once an env generates worlds.
typedef struct {
    ReferenceTrig tables;
    int uploaded;
} DeviceTrig;
static DeviceTrig device_trig[MAX_DEVICES];

static cudaError_t upload_reference_trig(int device, int with_gradients) {
    DeviceTrig* trig = &device_trig[device];
    if (!trig->uploaded) {
        float* levels = (float*)malloc(sizeof(float) * (MAX_TIMESTEPS + 1));
        for (int t = 0; t <= MAX_TIMESTEPS; t++) levels[t] = light_level_at(t);
        float* device_levels = NULL;
        cudaError_t status = cudaMalloc((void**)&device_levels, sizeof(float) * (MAX_TIMESTEPS + 1));
        if (status == cudaSuccess) {
            status = cudaMemcpy(device_levels, levels, sizeof(float) * (MAX_TIMESTEPS + 1), cudaMemcpyHostToDevice);
        }
        free(levels);
        VEC_GPU_CHECK(status);
        trig->tables.light_levels = device_levels;
        trig->tables.initial_light_level = initial_light_level();
        trig->uploaded = 1;
    }
    if (with_gradients && trig->tables.gradients == NULL) {
        float2* gradients = (float2*)malloc(sizeof(float2) * GRADIENT_ANGLES);
        for (uint32_t m = 0; m < GRADIENT_ANGLES; m++) gradient_at(m << 9, &gradients[m].x, &gradients[m].y);
        float2* device_gradients = NULL;
        cudaError_t status = cudaMalloc((void**)&device_gradients, sizeof(float2) * GRADIENT_ANGLES);
        if (status == cudaSuccess) {
            status = cudaMemcpy(device_gradients, gradients, sizeof(float2) * GRADIENT_ANGLES, cudaMemcpyHostToDevice);
        }
        free(gradients);
        VEC_GPU_CHECK(status);
        trig->tables.gradients = device_gradients;
    }
    return cudaMemcpyToSymbol(reference_trig, &trig->tables, sizeof(ReferenceTrig));
}

// Full observations are written compact by the step (996 bytes per env instead of 33 KB, from
// one thread each) and expanded by full_observation_kernel, whose writes are coalesced.
typedef struct {
    VecGpu* vec;
    GameState* states;
    GameState* reset_pool;
    uint8_t* compact_observations;  // full-observation envs only
    float* full_observations;
    int num_envs;
    int device;
} CraftaxGpu;

// Full observations are written four values at a time; a row may be wider than OBS_SIZE (the
// compact policy pads its input so that rows, and the first layer's weight, are 16-byte aligned
// for the GEMM), and the columns past OBS_SIZE are zeros.
#define VALUES_PER_VECTOR 4
#define EXPAND_THREADS 256
CRAFTAX_STATIC_ASSERT(OBS_SIZE % VALUES_PER_VECTOR == 0, "a full observation is whole vectors");
CRAFTAX_STATIC_ASSERT(COMPACT_OBS_BYTES % 4 == 0, "a compact observation is whole 32-bit words");

__device__ static inline void store_full_vector(float4* full, int vector, float4 values) { full[vector] = values; }

// bfloat16, rounded to nearest even as torch's conversion rounds: four values in one 8-byte store.
__device__ static inline void store_full_vector(uint2* full, int vector, float4 values) {
    __nv_bfloat162 low = __floats2bfloat162_rn(values.x, values.y), high = __floats2bfloat162_rn(values.z, values.w);
    full[vector] = make_uint2(*(unsigned*)&low, *(unsigned*)&high);
}

// Float k of a row (k at most its padded width): channel bits, scalars, then the padding's zeros.
__device__ static inline float full_or_padding(const uint8_t* compact, const uint32_t* channel_words, int k) {
    if (k < CHANNEL_VALUES) return (float)(channel_words[k >> 5] >> (k & 31) & 1);
    return k < OBS_SIZE ? observation_scalar(compact, k - CHANNEL_VALUES) : 0.0f;
}

// One block per row: the row's compact bytes are read from global memory once, into shared
// memory; its channel words are computed there, a word per thread; then each vector of the row is
// written from them. Vector is float4 (float32) or uint2 (four bfloat16); a row is row_vectors of
// them. The four values of a vector of channels are four bits of one word.
template <typename Vector>
__global__ void full_observation_kernel(const uint8_t* compact, Vector* full, int row_vectors) {
    __shared__ uint32_t row_words[COMPACT_OBS_BYTES / 4];
    __shared__ uint32_t channel_words[CHANNEL_WORDS];
    const uint32_t* source = (const uint32_t*)(compact + (size_t)blockIdx.x * COMPACT_OBS_BYTES);
    for (int word = threadIdx.x; word < COMPACT_OBS_BYTES / 4; word += blockDim.x) row_words[word] = source[word];
    __syncthreads();
    const uint8_t* row_bytes = (const uint8_t*)row_words;
    for (int word = threadIdx.x; word < CHANNEL_WORDS; word += blockDim.x) {
        channel_words[word] = channel_word(row_bytes, word);
    }
    __syncthreads();
    Vector* row = full + (size_t)blockIdx.x * row_vectors;
    for (int vector = threadIdx.x; vector < row_vectors; vector += blockDim.x) {
        int k = vector * VALUES_PER_VECTOR;
        float4 values;
        if (k + VALUES_PER_VECTOR <= CHANNEL_VALUES) {
            uint32_t bits = channel_words[k >> 5] >> (k & 31);
            values = make_float4((float)(bits & 1), (float)(bits >> 1 & 1), (float)(bits >> 2 & 1), (float)(bits >> 3 & 1));
        } else {
            values = make_float4(full_or_padding(row_bytes, channel_words, k), full_or_padding(row_bytes, channel_words, k + 1),
                                 full_or_padding(row_bytes, channel_words, k + 2), full_or_padding(row_bytes, channel_words, k + 3));
        }
        store_full_vector(row, vector, values);
    }
}

template <typename Vector>
static cudaError_t launch_full_observations(const uint8_t* compact, Vector* full, long rows, int columns,
                                            cudaStream_t stream) {
    if (rows > INT_MAX) return cudaErrorInvalidValue;
    full_observation_kernel<Vector><<<(unsigned)rows, EXPAND_THREADS, 0, stream>>>(compact, full,
                                                                                  columns / VALUES_PER_VECTOR);
    return cudaGetLastError();
}

static cudaError_t expand_observations(CraftaxGpu* env, cudaStream_t stream) {
    if (env->compact_observations == NULL) return cudaSuccess;
    return launch_full_observations(env->compact_observations, (float4*)env->full_observations, env->num_envs, OBS_SIZE,
                                    stream);
}

static void destroy(CraftaxGpu* env) {
    vec_gpu_destroy(env->vec);
    cudaFree(env->states);
    cudaFree(env->reset_pool);
    cudaFree(env->compact_observations);
    free(env);
}

extern "C" {

const char* craftax_gpu_error_string(int status) { return cudaGetErrorString((cudaError_t)status); }

// The layout this library was compiled with, checked against the CPU binding's at load time.
size_t craftax_gpu_state_bytes(void) { return sizeof(GameState); }
int craftax_gpu_sum_count(void) { return VEC_GPU_SUMS; }
int craftax_gpu_obs_size(int compact) { return compact ? COMPACT_OBS_BYTES : OBS_SIZE; }

// pool: reset_pool_size worlds (make_reset_pool's bytes) on the host, or NULL; the buffers are
// device memory of num_envs entries (observations: OBS_SIZE floats or COMPACT_OBS_BYTES bytes each).
// envs_per_warp: of the step kernel, 1, 2, 4, ... 32, or 0 for craftax_step_lanes' choice (device_kernels.cuh).
int craftax_gpu_create(void** out, int device, int num_envs, int compact, const void* pool, int reset_pool_size,
                       void* observations, int* actions, float* rewards, unsigned char* terminals,
                       unsigned char* truncations, int envs_per_warp) {
    *out = NULL;
    if (num_envs <= 0 || num_envs % VEC_GPU_WARP != 0 || device < 0 || device >= MAX_DEVICES) {
        return cudaErrorInvalidValue;
    }
    VEC_GPU_CHECK(cudaSetDevice(device));
    VEC_GPU_CHECK(upload_reference_trig(device, reset_pool_size == 0));
    size_t stack_bytes = 0;
    VEC_GPU_CHECK(cudaDeviceGetLimit(&stack_bytes, cudaLimitStackSize));
    if (stack_bytes < DEVICE_STACK_BYTES) VEC_GPU_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, DEVICE_STACK_BYTES));
    CraftaxGpu* env = (CraftaxGpu*)calloc(1, sizeof(CraftaxGpu));
    env->device = device;
    env->num_envs = num_envs;
    Craftax* host_envs = (Craftax*)calloc((size_t)num_envs, sizeof(Craftax));
    cudaError_t status = cudaMalloc((void**)&env->states, sizeof(GameState) * (size_t)num_envs);
    if (status == cudaSuccess && !compact) {
        env->full_observations = (float*)observations;
        status = cudaMalloc((void**)&env->compact_observations, (size_t)COMPACT_OBS_BYTES * num_envs);
    }
    if (status == cudaSuccess && reset_pool_size > 0) {
        status = cudaMalloc((void**)&env->reset_pool, sizeof(GameState) * (size_t)reset_pool_size);
        if (status == cudaSuccess) {
            status = cudaMemcpy(env->reset_pool, pool, sizeof(GameState) * (size_t)reset_pool_size,
                                cudaMemcpyHostToDevice);
        }
    }
    if (status == cudaSuccess) {
        for (int i = 0; i < num_envs; i++) {
            host_envs[i].compact = 1;
            host_envs[i].reset_pool_size = reset_pool_size;
            host_envs[i].reset_pool = env->reset_pool;
            host_envs[i].state = &env->states[i];
        }
        char* step_observations = compact ? (char*)observations : (char*)env->compact_observations;
        status = craftax_vec_create(&env->vec, host_envs, num_envs, step_observations, actions, rewards, terminals,
                                    truncations, reset_pool_size > 0 ? 0 : WORLDGEN_SCRATCH_BUFFERS, envs_per_warp);
    }
    free(host_envs);
    if (status != cudaSuccess) {
        destroy(env);
        return status;
    }
    *out = env;
    return cudaSuccess;
}

int craftax_gpu_reset(void* handle, uint64_t seed, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(craftax_vec_reset(env->vec, seed, (cudaStream_t)stream));
    return expand_observations(env, (cudaStream_t)stream);
}

int craftax_gpu_step(void* handle, const void* actions, int actions_are_int64, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(craftax_vec_step(env->vec, actions, actions_are_int64, (cudaStream_t)stream));
    return expand_observations(env, (cudaStream_t)stream);
}

// sums: craftax_gpu_sum_count() floats; *bad_index is -1 when every action was valid.
int craftax_gpu_sync_logs(void* handle, float* sums, long long* bad_index, int* bad_value, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    return vec_gpu_sync_logs_to(env->vec, sums, bad_index, bad_value, (cudaStream_t)stream);
}

// Env index's game state (sizeof(GameState) bytes) into host memory, with the light maps it may
// borrow from its pool world; waits for the stream.
int craftax_gpu_read_state(void* handle, int index, void* out, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    cudaStream_t cuda_stream = (cudaStream_t)stream;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    const GameState* light_maps_from = NULL;
    VEC_GPU_CHECK(cudaMemcpyAsync(out, &env->states[index], sizeof(GameState), cudaMemcpyDeviceToHost, cuda_stream));
    VEC_GPU_CHECK(cudaMemcpyAsync(&light_maps_from, &env->vec->envs[index].light_maps_from, sizeof(light_maps_from),
                                  cudaMemcpyDeviceToHost, cuda_stream));
    VEC_GPU_CHECK(cudaStreamSynchronize(cuda_stream));
    if (light_maps_from == NULL) return cudaSuccess;
    VEC_GPU_CHECK(cudaMemcpyAsync(((GameState*)out)->light_map, light_maps_from->light_map, sizeof(GameState::light_map),
                                  cudaMemcpyDeviceToHost, cuda_stream));
    return cudaStreamSynchronize(cuda_stream);
}

// The envs' device array and their count, for the kernels of other files that read the envs'
// states on the env's stream (pixels_gpu.cu's pixel observations).
const Craftax* craftax_gpu_envs(void* handle, int* num_envs) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    *num_envs = env->num_envs;
    return env->vec->envs;
}

void craftax_gpu_destroy(void* handle) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    cudaSetDevice(env->device);
    cudaDeviceSynchronize();
    destroy(env);
}

// The compact policy's input (ocean/craftax/policy.py): rows compact observations at compact
// (device memory, 4-byte aligned) expanded into full ones at full, rows of columns values (a
// multiple of 4, at least OBS_SIZE; zeros past OBS_SIZE), float32, or bfloat16 when bfloat16 is
// nonzero, on the caller's stream. Any rows >= 0; nothing synchronizes.
int craftax_gpu_expand(const void* compact, void* full, long rows, int columns, int bfloat16, void* stream) {
    if (rows < 0 || columns < OBS_SIZE || columns % VALUES_PER_VECTOR != 0 || (uintptr_t)compact % 4 != 0) {
        return cudaErrorInvalidValue;
    }
    if (rows == 0) return cudaSuccess;
    if (bfloat16) {
        return launch_full_observations((const uint8_t*)compact, (uint2*)full, rows, columns, (cudaStream_t)stream);
    }
    return launch_full_observations((const uint8_t*)compact, (float4*)full, rows, columns, (cudaStream_t)stream);
}

// 0 when this library has code for the current device (cudaSetDevice), else the CUDA error: a
// GPU of an architecture the library was not compiled for has none (PUFFER_CUDA_ARCH).
int craftax_gpu_runs_here(void) {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, full_observation_kernel<uint2>);
}

}  // extern "C"
