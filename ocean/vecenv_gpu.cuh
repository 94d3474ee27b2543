// The device vecenv: steps many copies of one Ocean game on the GPU, writing straight into device
// buffers (torch tensors) that Python owns. The device sibling of vecenv.h, with the same autoreset
// and episode accounting, so a game compiled by both gives the same trajectories on the host and
// on the device.
//
// Include it (in a .cu file) after the game header, with the game's struct named Env through a
// #define. The game meets vecenv.h's contract, these parts of it callable on the device
// (__host__ __device__, e.g. Craftax's CRAFTAX_FN):
//     Env struct with fields observations, actions, rewards, terminals, truncations,
//         rng (uint64_t), log (Log, floats only)
//     void c_reset(Env*)   start an episode: write observations only
//     int  c_step(Env*)    apply actions; write rewards, terminals, truncations for every agent;
//                          return 1 when the episode ended
// and, for a game whose device reset needs scratch memory (world generation):
//     #define VEC_GPU_RESET_SCRATCH Type   and a field `Type* reset_scratch` in Env, which the
//         reset lends a buffer of its own for the duration of each c_reset
//
// The host side fills an array of Env on the host (game parameters, device pointers to the
// game's own device memory), then hands it to vec_gpu_create, which uploads it and binds each env
// to its slice of the device buffers. vec_gpu_reset and vec_gpu_step launch the kernels below on
// the caller's stream; only vec_gpu_create, vec_gpu_sync_logs and vec_gpu_destroy synchronize, so
// reset and step can be captured in a CUDA graph.
//
// The step kernel gives each warp step_lanes envs (vec_gpu_create's argument), one per lane, and
// leaves its other lanes idle: a warp runs its envs' diverging paths one after another, so a game
// whose paths diverge steps sooner with fewer envs per warp. A game that needs more of the GPU
// than this (lanes that share work, kernels of its own between the step and the reset) writes its
// own kernels from this file's parts (vec_gpu_step_lane, vec_gpu_lend_scratch, vec_gpu_reset_done,
// vec_gpu_seed, vec_gpu_step_envs) and launches them instead of vec_gpu_reset and vec_gpu_step, as
// Craftax does (ocean/craftax/device_kernels.cuh) and Craftax-Classic does for its reset.
//
// Actions come from the caller's device buffer (int32 or int64), are checked against the action
// space on the device and copied into the env's int32 actions buffer. An env given an action
// outside the space is not stepped (its rewards, terminals and truncations are zeroed) and the
// first such action is recorded; vec_gpu_sync_logs reports it.
//
// Logs: per-env Log and episode sums stay on the device; vec_gpu_sync_logs reduces them on the
// device in a fixed order (deterministic from run to run), copies the sums to the host and clears
// them. The reduction's order differs from vecenv.h's sequential float sum, so sums agree with the
// host's to float rounding.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static_assert(sizeof(Log) % sizeof(float) == 0, "Log must hold floats only");
#define VEC_GPU_LOG_FIELDS ((int)(sizeof(Log) / sizeof(float)))
// The sums fetched by vec_gpu_sync_logs: the Log fields, then episode return, length and count.
#define VEC_GPU_SUMS (VEC_GPU_LOG_FIELDS + 3)
#define VEC_GPU_WARP 32
#define VEC_GPU_BLOCK 128
#define VEC_GPU_MAX_ACTION_DIMS 16
#define VEC_GPU_NO_BAD_ACTION 0xFFFFFFFFFFFFFFFFull

typedef struct {
    float running_return;
    float running_length;
    float return_sum;
    float length_sum;
    float episodes;
} VecGpuEpisode;

// What vec_gpu_sync_logs copies back in one transfer.
typedef struct {
    float sums[VEC_GPU_SUMS];
    // The first out-of-range action: flat index in the high 32 bits, value (saturated to int32)
    // in the low 32; VEC_GPU_NO_BAD_ACTION when none.
    unsigned long long bad_action;
} VecGpuReport;

typedef struct {
    Env* envs;  // everything below is device memory, except the counts and report_host
    VecGpuEpisode* episodes;
    uint8_t* ended;  // the env's episode ended this step: its reset is pending
    int* actions;    // the envs' int32 actions (the caller's buffer, bound to the envs)
    uint8_t* observations;  // the envs' observations, one after another (the caller's buffer)
    double* partial_sums;  // [blocks][VEC_GPU_SUMS], the first stage of the log reduction
    VecGpuReport* report;
    VecGpuReport* report_host;  // pinned
    void* reset_scratch;   // reset_threads buffers of reset_scratch_bytes, or NULL
    size_t reset_scratch_bytes;
    int reset_threads;     // threads of the reset kernel: one per env, or one per scratch buffer
    int step_lanes;  // envs per warp of the step kernel; its other lanes idle
    int step_block;  // threads per block of the step kernel (vec_gpu_step_block)
    int reset_block;  // threads per block of the reset kernel
    int num_envs;
    int agents_per_env;
    int action_dims;
    int nvec[VEC_GPU_MAX_ACTION_DIMS];
} VecGpu;

// Blocks of `block` threads that cover `count` threads.
static unsigned vec_gpu_blocks(long count, int block) { return (unsigned)((count + block - 1) / block); }

// Threads per block of the step and reset kernels: whole warps, at most VEC_GPU_BLOCK, and few
// enough that the blocks reach every SM. At a few thousand envs, blocks of VEC_GPU_BLOCK would
// leave SMs without envs while the others run a warp or two each.
static int vec_gpu_step_block(long threads, int sms) {
    int per_sm = (int)((threads + sms - 1) / sms);
    int block = (per_sm + VEC_GPU_WARP - 1) / VEC_GPU_WARP * VEC_GPU_WARP;
    return block < VEC_GPU_WARP ? VEC_GPU_WARP : (block > VEC_GPU_BLOCK ? VEC_GPU_BLOCK : block);
}

// Threads of the step kernel: a warp per step_lanes envs.
static long vec_gpu_step_threads(const VecGpu* vec) {
    return ((long)vec->num_envs + vec->step_lanes - 1) / vec->step_lanes * VEC_GPU_WARP;
}

// Any failed CUDA call ends the calling function with its error; vec_gpu_error names it.
#define VEC_GPU_CHECK(call)                    \
    do {                                       \
        cudaError_t vec_gpu_status = (call);   \
        if (vec_gpu_status != cudaSuccess) return vec_gpu_status; \
    } while (0)

static inline __device__ unsigned long long vec_gpu_bad_action_code(long index, long long value) {
    long long saturated = value > INT32_MAX ? INT32_MAX : (value < INT32_MIN ? INT32_MIN : value);
    return ((unsigned long long)index << 32) | (uint32_t)(int32_t)saturated;
}

// A lane's part of the step kernel, step_lanes envs per warp: the lane's env's actions checked and
// copied into its int32 buffer, then the env stepped and its episode's return and length counted,
// marking it for reset when the episode ended. An env given an action outside the space is not
// stepped (its rewards and flags are zeroed) and the first such action is recorded. meet(valid)
// is run by every lane of a warp that reaches the envs (with or without one of its own), each
// saying whether it will step, before any steps: nothing, for a game whose lanes step apart.
template <typename ActionT, typename Meet>
__device__ static inline void vec_gpu_step_lane(const VecGpu& vec, const ActionT* actions, Meet meet) {
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = thread % VEC_GPU_WARP;
    int i = thread / VEC_GPU_WARP * vec.step_lanes + lane;
    if (i - lane >= vec.num_envs) return;  // the whole warp is past the last env
    int present = lane < vec.step_lanes && i < vec.num_envs;
    Env* env = &vec.envs[present ? i : 0];
    int agents = vec.agents_per_env;
    int dims = vec.action_dims;
    long first = (long)i * agents * dims;
    int valid = present;
    for (int k = 0; present && k < agents * dims; k++) {
        long long action = (long long)actions[first + k];
        if (action < 0 || action >= vec.nvec[k % dims]) {
            atomicMin(&vec.report->bad_action, vec_gpu_bad_action_code(first + k, action));
            valid = 0;
        } else {
            vec.actions[first + k] = (int)action;
        }
    }
    meet(valid);
    if (!present) return;
    if (!valid) {
        for (int a = 0; a < agents; a++) {
            env->rewards[a] = 0.0f;
            env->terminals[a] = 0;
            env->truncations[a] = 0;
        }
        return;
    }
    int done = c_step(env);
    VecGpuEpisode* episode = &vec.episodes[i];
    float reward = 0.0f;
    for (int a = 0; a < agents; a++) reward += env->rewards[a];
    episode->running_return += reward / (float)agents;
    episode->running_length += 1.0f;
    if (done) {
        episode->return_sum += episode->running_return;
        episode->length_sum += episode->running_length;
        episode->episodes += 1.0f;
        episode->running_return = 0.0f;
        episode->running_length = 0.0f;
        vec.ended[i] = 1;
    }
}

// Lends the reset's thread its scratch buffer (VEC_GPU_RESET_SCRATCH) before env's c_reset.
__device__ static inline void vec_gpu_lend_scratch(const VecGpu& vec, Env* env, int thread) {
#ifdef VEC_GPU_RESET_SCRATCH
    env->reset_scratch = vec.reset_scratch == NULL
                             ? NULL
                             : (VEC_GPU_RESET_SCRATCH*)((char*)vec.reset_scratch + (size_t)thread * vec.reset_scratch_bytes);
#else
    (void)vec;
    (void)env;
    (void)thread;
#endif
}

// After env i's c_reset: its scratch taken back, its reset no longer pending.
__device__ static inline void vec_gpu_reset_done(const VecGpu& vec, Env* env, int i) {
#ifdef VEC_GPU_RESET_SCRATCH
    env->reset_scratch = NULL;
#else
    (void)env;
#endif
    vec.ended[i] = 0;
}

// The step and reset kernels are templates (E is always Env) so that a game that launches kernels
// of its own compiles none of these: a step kernel holds the whole game.
template <typename ActionT, typename E = Env>
__global__ void __launch_bounds__(VEC_GPU_BLOCK) vec_gpu_step_kernel(VecGpu vec, const ActionT* actions) {
    vec_gpu_step_lane(vec, actions, [](int) {});
}

// Resets the envs whose episode ended; with scratch, each thread lends its buffer in turn to the
// envs i, i + reset_threads, ...
template <typename E = Env>
__global__ void vec_gpu_reset_kernel(VecGpu vec) {
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= vec.reset_threads) return;
    for (int i = thread; i < vec.num_envs; i += vec.reset_threads) {
        if (!vec.ended[i]) continue;
        E* env = &vec.envs[i];
        vec_gpu_lend_scratch(vec, env, thread);
        c_reset(env);
        vec_gpu_reset_done(vec, env, i);
    }
}

// vec_reset's start of a run: env i seeded with seed + i, statistics and the bad-action record
// cleared, every env due a reset.
__global__ void vec_gpu_seed_kernel(VecGpu vec, uint64_t seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) vec.report->bad_action = VEC_GPU_NO_BAD_ACTION;
    if (i >= vec.num_envs) return;
    Env* env = &vec.envs[i];
    env->rng = seed + (uint64_t)i;
    memset(&env->log, 0, sizeof(Log));
    memset(&vec.episodes[i], 0, sizeof(VecGpuEpisode));
    for (int a = 0; a < vec.agents_per_env; a++) {
        env->rewards[a] = 0.0f;
        env->terminals[a] = 0;
        env->truncations[a] = 0;
    }
    vec.ended[i] = 1;
}

__device__ static float vec_gpu_sum_value(VecGpu* vec, int i, int field) {
    if (field < VEC_GPU_LOG_FIELDS) return ((const float*)&vec->envs[i].log)[field];
    const VecGpuEpisode* episode = &vec->episodes[i];
    if (field == VEC_GPU_LOG_FIELDS) return episode->return_sum;
    if (field == VEC_GPU_LOG_FIELDS + 1) return episode->length_sum;
    return episode->episodes;
}

// First stage: each block sums its envs' statistics (a fixed tree, in double) and clears them.
__global__ void vec_gpu_partial_sums_kernel(VecGpu vec) {
    __shared__ double warp_sums[VEC_GPU_BLOCK / VEC_GPU_WARP];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % VEC_GPU_WARP, warp = threadIdx.x / VEC_GPU_WARP;
    for (int field = 0; field < VEC_GPU_SUMS; field++) {
        double value = i < vec.num_envs ? (double)vec_gpu_sum_value(&vec, i, field) : 0.0;
        for (int offset = VEC_GPU_WARP / 2; offset > 0; offset /= 2) {
            value += __shfl_down_sync(0xFFFFFFFFu, value, offset);
        }
        if (lane == 0) warp_sums[warp] = value;
        __syncthreads();
        if (threadIdx.x == 0) {
            double total = 0.0;
            for (int w = 0; w < VEC_GPU_BLOCK / VEC_GPU_WARP; w++) total += warp_sums[w];
            vec.partial_sums[(size_t)blockIdx.x * VEC_GPU_SUMS + field] = total;
        }
        __syncthreads();
    }
    if (i < vec.num_envs) {
        memset(&vec.envs[i].log, 0, sizeof(Log));
        vec.episodes[i].return_sum = 0.0f;
        vec.episodes[i].length_sum = 0.0f;
        vec.episodes[i].episodes = 0.0f;
    }
}

// Second stage: one thread per field adds the blocks' sums in block order.
__global__ void vec_gpu_total_sums_kernel(VecGpu vec, int blocks) {
    int field = threadIdx.x;
    if (field >= VEC_GPU_SUMS) return;
    double total = 0.0;
    for (int b = 0; b < blocks; b++) total += vec.partial_sums[(size_t)b * VEC_GPU_SUMS + field];
    vec.report->sums[field] = (float)total;
}

static void vec_gpu_destroy(VecGpu* vec) {
    if (vec == NULL) return;
    cudaFree(vec->envs);
    cudaFree(vec->episodes);
    cudaFree(vec->ended);
    cudaFree(vec->partial_sums);
    cudaFree(vec->report);
    cudaFreeHost(vec->report_host);
    cudaFree(vec->reset_scratch);
    free(vec);
}

// host_envs: num_envs envs configured by the game (their device pointers set), uploaded here;
// the buffers: device memory for num_envs * agents_per_env agents, obs_bytes per agent.
// reset_scratch_buffers: how many resets may generate at once (0 when c_reset needs no scratch).
// step_lanes: envs per warp of the step kernel, a power of two up to 32.
static cudaError_t vec_gpu_create(VecGpu** out, Env* host_envs, int num_envs, int agents_per_env,
                                  const int* nvec, int action_dims, char* observations, long obs_bytes,
                                  int* actions, float* rewards, unsigned char* terminals,
                                  unsigned char* truncations, int reset_scratch_buffers,
                                  size_t reset_scratch_bytes, int step_lanes) {
    *out = NULL;
    if (action_dims < 1 || action_dims > VEC_GPU_MAX_ACTION_DIMS) return cudaErrorInvalidValue;
    if (step_lanes < 1 || step_lanes > VEC_GPU_WARP || (step_lanes & (step_lanes - 1)) != 0) return cudaErrorInvalidValue;
    VecGpu* vec = (VecGpu*)calloc(1, sizeof(VecGpu));
    vec->num_envs = num_envs;
    vec->agents_per_env = agents_per_env;
    vec->action_dims = action_dims;
    memcpy(vec->nvec, nvec, sizeof(int) * action_dims);
    vec->actions = actions;
    vec->observations = (uint8_t*)observations;
    vec->step_lanes = step_lanes;
    for (int i = 0; i < num_envs; i++) {
        Env* env = &host_envs[i];
        long first = (long)i * agents_per_env;
        env->observations = (decltype(env->observations))(observations + first * obs_bytes);  // as the game types it
        env->actions = actions + first * action_dims;
        env->rewards = rewards + first;
        env->terminals = terminals + first;
        env->truncations = truncations + first;
    }
    cudaError_t status = cudaSuccess;
#define VEC_GPU_CREATE_CHECK(call)                 \
    if ((status = (call)) != cudaSuccess) {        \
        vec_gpu_destroy(vec);                      \
        return status;                             \
    }
    int device, sms;
    VEC_GPU_CREATE_CHECK(cudaGetDevice(&device));
    VEC_GPU_CREATE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    vec->step_block = vec_gpu_step_block(vec_gpu_step_threads(vec), sms);
    vec->reset_block = vec_gpu_step_block(num_envs, sms);
    VEC_GPU_CREATE_CHECK(cudaMalloc((void**)&vec->envs, sizeof(Env) * (size_t)num_envs));
    VEC_GPU_CREATE_CHECK(cudaMemcpy(vec->envs, host_envs, sizeof(Env) * (size_t)num_envs, cudaMemcpyHostToDevice));
    VEC_GPU_CREATE_CHECK(cudaMalloc((void**)&vec->episodes, sizeof(VecGpuEpisode) * (size_t)num_envs));
    VEC_GPU_CREATE_CHECK(cudaMemset(vec->episodes, 0, sizeof(VecGpuEpisode) * (size_t)num_envs));
    VEC_GPU_CREATE_CHECK(cudaMalloc((void**)&vec->ended, (size_t)num_envs));
    VEC_GPU_CREATE_CHECK(cudaMemset(vec->ended, 0, (size_t)num_envs));
    VEC_GPU_CREATE_CHECK(cudaMalloc((void**)&vec->partial_sums, sizeof(double) * VEC_GPU_SUMS * vec_gpu_blocks(num_envs, VEC_GPU_BLOCK)));
    VEC_GPU_CREATE_CHECK(cudaMalloc((void**)&vec->report, sizeof(VecGpuReport)));
    VEC_GPU_CREATE_CHECK(cudaMemset(vec->report, 0xFF, sizeof(VecGpuReport)));
    VEC_GPU_CREATE_CHECK(cudaMallocHost((void**)&vec->report_host, sizeof(VecGpuReport)));
    if (reset_scratch_buffers > 0) {
        vec->reset_threads = reset_scratch_buffers < num_envs ? reset_scratch_buffers : num_envs;
        vec->reset_scratch_bytes = reset_scratch_bytes;
        VEC_GPU_CREATE_CHECK(cudaMalloc(&vec->reset_scratch, reset_scratch_bytes * (size_t)vec->reset_threads));
    } else {
        vec->reset_threads = num_envs;
    }
#undef VEC_GPU_CREATE_CHECK
    *out = vec;
    return cudaSuccess;
}

// The start of a run (vec_gpu_seed_kernel); the resets it makes due follow with the reset kernel.
static cudaError_t vec_gpu_seed(VecGpu* vec, uint64_t seed, cudaStream_t stream) {
    vec_gpu_seed_kernel<<<vec_gpu_blocks(vec->num_envs, VEC_GPU_BLOCK), VEC_GPU_BLOCK, 0, stream>>>(*vec, seed);
    return cudaGetLastError();
}

template <typename E = Env>
static cudaError_t vec_gpu_reset(VecGpu* vec, uint64_t seed, cudaStream_t stream) {
    VEC_GPU_CHECK(vec_gpu_seed(vec, seed, stream));
    vec_gpu_reset_kernel<E><<<vec_gpu_blocks(vec->reset_threads, vec->reset_block), vec->reset_block, 0, stream>>>(*vec);
    return cudaGetLastError();
}

// The step kernel alone, for a game whose own reset kernel follows it.
// actions: device, num_envs * agents_per_env * action_dims values, int64 when actions_are_int64.
template <typename E = Env>
static cudaError_t vec_gpu_step_envs(VecGpu* vec, const void* actions, int actions_are_int64, cudaStream_t stream) {
    unsigned blocks = vec_gpu_blocks(vec_gpu_step_threads(vec), vec->step_block);
    if (actions_are_int64) {
        vec_gpu_step_kernel<long long, E><<<blocks, vec->step_block, 0, stream>>>(*vec, (const long long*)actions);
    } else {
        vec_gpu_step_kernel<int, E><<<blocks, vec->step_block, 0, stream>>>(*vec, (const int*)actions);
    }
    return cudaGetLastError();
}

// The step kernel, then the resets it made due.
template <typename E = Env>
static cudaError_t vec_gpu_step(VecGpu* vec, const void* actions, int actions_are_int64, cudaStream_t stream) {
    VEC_GPU_CHECK(vec_gpu_step_envs<E>(vec, actions, actions_are_int64, stream));
    vec_gpu_reset_kernel<E><<<vec_gpu_blocks(vec->reset_threads, vec->reset_block), vec->reset_block, 0, stream>>>(*vec);
    return cudaGetLastError();
}

// Reduces and clears the statistics and the bad-action record; waits for the stream. *report
// holds the sums (Log fields, return, length, episodes) and the first bad action since the last call.
static cudaError_t vec_gpu_sync_logs(VecGpu* vec, VecGpuReport* report, cudaStream_t stream) {
    unsigned blocks = vec_gpu_blocks(vec->num_envs, VEC_GPU_BLOCK);
    vec_gpu_partial_sums_kernel<<<blocks, VEC_GPU_BLOCK, 0, stream>>>(*vec);
    VEC_GPU_CHECK(cudaGetLastError());
    vec_gpu_total_sums_kernel<<<1, ((VEC_GPU_SUMS + VEC_GPU_WARP - 1) / VEC_GPU_WARP) * VEC_GPU_WARP, 0, stream>>>(*vec, blocks);
    VEC_GPU_CHECK(cudaGetLastError());
    VEC_GPU_CHECK(cudaMemcpyAsync(vec->report_host, vec->report, sizeof(VecGpuReport), cudaMemcpyDeviceToHost, stream));
    VEC_GPU_CHECK(cudaMemsetAsync(&vec->report->bad_action, 0xFF, sizeof(unsigned long long), stream));
    VEC_GPU_CHECK(cudaStreamSynchronize(stream));
    *report = *vec->report_host;
    return cudaSuccess;
}

// vec_gpu_sync_logs as a library's C API gives it to Python (ocean/gpu_env.py): the sums into
// `sums` (VEC_GPU_SUMS floats), and the first bad action's agent and value, *bad_index -1 if none.
static cudaError_t vec_gpu_sync_logs_to(VecGpu* vec, float* sums, long long* bad_index, int* bad_value, cudaStream_t stream) {
    VecGpuReport report;
    VEC_GPU_CHECK(vec_gpu_sync_logs(vec, &report, stream));
    memcpy(sums, report.sums, sizeof(report.sums));
    if (report.bad_action == VEC_GPU_NO_BAD_ACTION) {
        *bad_index = -1;
        *bad_value = 0;
    } else {
        *bad_index = (long long)(report.bad_action >> 32);
        *bad_value = (int)(int32_t)(uint32_t)report.bad_action;
    }
    return cudaSuccess;
}
