// Craftax's kernels on the device vecenv (ocean/vecenv_gpu.cuh), launched in place of its generic
// step and reset, with their tuning. Built from the vecenv's parts, they add what one thread per
// env lacks: the step's draws made before it by a kernel with every lane busy, the lanes of a warp
// working together inside the step (the mob spawn's cell choice) and the reset (copying pool
// worlds), and the observations written after both by a kernel with a thread per view row.
// Included by craftax_gpu.cu after vecenv_gpu.cuh, with CRAFTAX_OBSERVATION_KERNEL.
#pragma once

// Four blocks of VEC_GPU_BLOCK threads per multiprocessor cap the step kernel at 128 registers a
// thread. Occupancy is not what limits the step: on an H200 at the largest env counts, more
// registers ran no faster and fewer ran slower.
#define CRAFTAX_STEP_BLOCKS_PER_SM 4
static_assert(VEC_GPU_BLOCK == 32 * CRAFTAX_WARPS_PER_BLOCK, "mobs.h's spawn scratch is per warp of a step block");

// Envs per warp of the step kernel when the caller does not choose. A warp runs its envs'
// diverging paths one after another, so a warp of 32 envs spends most of a step with few lanes
// busy; fewer envs per warp take more warps to step the same envs, and each finishes sooner. On an
// H200, 8 per warp stepped fastest while every warp of the step fits on the GPU at once, and 16
// beyond, where the warps queue for the SMs.
static int craftax_step_lanes(int num_envs, int sms) {
    long resident_warps = (long)sms * CRAFTAX_STEP_BLOCKS_PER_SM * (VEC_GPU_BLOCK / VEC_GPU_WARP);
    return num_envs <= 8 * resident_warps ? 8 : 16;
}

// c_prepare (the step's draws) for every env before each step, one thread per env with every lane
// of its warps busy, where the step kernel's warps leave lanes idle. It runs for an env that is
// then not stepped (its action was out of range) too: it only computes, from what the last step
// or reset left, what the next c_step reads. c_prepare runs on a copy of the env; the field it
// writes goes through shared memory, and each warp stores its envs' fields in 8-byte words side by
// side. Stored by each thread at its own env's stride, every word of the field would be a store
// touching a sector per lane.
__global__ void __launch_bounds__(VEC_GPU_BLOCK) craftax_prepare_kernel(VecGpu vec) {
    typedef decltype(((Craftax*)0)->prepared) Prepared;
    enum { WORDS = sizeof(Prepared) / sizeof(uint2), FIELD = offsetof(Craftax, prepared) };
    static_assert(sizeof(Prepared) % sizeof(uint2) == 0 && FIELD % sizeof(uint2) == 0 && sizeof(Craftax) % sizeof(uint2) == 0,
                  "the prepared field is whole 8-byte words, 8-byte aligned in every env");
    // A row of WORDS + 1 words: neighbouring threads' rows start in different banks.
    __shared__ uint2 staged[VEC_GPU_BLOCK][WORDS + 1];
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < vec.num_envs) {
        Craftax env = vec.envs[i];
        c_prepare(&env, 1);
        memcpy(staged[threadIdx.x], &env.prepared, sizeof(Prepared));
    }
    __syncwarp();
    int lane = threadIdx.x % VEC_GPU_WARP, warp_first = threadIdx.x - lane;
    long warp_env = (long)blockIdx.x * blockDim.x + warp_first;
    for (int v = lane; v < VEC_GPU_WARP * WORDS; v += VEC_GPU_WARP) {
        int e = v / WORDS, w = v % WORDS;
        if (warp_env + e < vec.num_envs) ((uint2*)((char*)&vec.envs[warp_env + e] + FIELD))[w] = staged[warp_first + e][w];
    }
}

// The vecenv's step, step_lanes envs per warp, with every lane of the warp (env counts are whole
// warps) told which of them step (an env given a bad action does not) before any steps.
template <typename ActionT>
__global__ void __launch_bounds__(VEC_GPU_BLOCK, CRAFTAX_STEP_BLOCKS_PER_SM) craftax_step_kernel(VecGpu vec, const ActionT* actions) {
    vec_gpu_step_lane(vec, actions, [](int valid) { craftax_set_stepping_lanes(__ballot_sync(0xFFFFFFFFu, valid)); });
}

// Resets the envs whose episode ended: every lane of a warp in which some env resets calls
// c_reset_warp, saying whether its own does (reset_threads and env counts are whole warps, so whole
// warps are here). With scratch, each thread lends its buffer in turn to the envs i,
// i + reset_threads, ...
__global__ void craftax_reset_kernel(VecGpu vec) {
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= vec.reset_threads) return;
    for (int i = thread; i < vec.num_envs; i += vec.reset_threads) {
        int resetting = vec.ended[i];
        if (__ballot_sync(0xFFFFFFFFu, resetting) == 0) continue;
        Craftax* env = &vec.envs[i];
        if (resetting) vec_gpu_lend_scratch(vec, env, thread);
        c_reset_warp(env, resetting);
        if (!resetting) continue;
        vec_gpu_reset_done(vec, env, i);
    }
}

// Envs per block of the observation kernel, every part of each in the block: a thread per view
// row and one for the scalars (c_observe), writing side by side into shared memory, from which the
// block copies its envs' observations out word after word. Written to global memory directly,
// each thread's part is words at a stride of their own, and a warp's store touches a sector per lane.
#define CRAFTAX_OBSERVE_ENVS (VEC_GPU_BLOCK / COMPACT_OBSERVATION_PARTS)
static_assert(CRAFTAX_OBSERVE_ENVS >= 1 && COMPACT_OBS_BYTES % 4 == 0, "whole words, every part of an env in a block");
static_assert(CRAFTAX_OBSERVE_ENVS * COMPACT_OBS_BYTES <= 48 * 1024, "a block's observations fit its static shared memory");

__global__ void craftax_observe_kernel(VecGpu vec) {
    __shared__ uint32_t staged[CRAFTAX_OBSERVE_ENVS * COMPACT_OBS_BYTES / 4];
    long first = (long)blockIdx.x * CRAFTAX_OBSERVE_ENVS;
    int envs = (int)(vec.num_envs - first < CRAFTAX_OBSERVE_ENVS ? vec.num_envs - first : CRAFTAX_OBSERVE_ENVS);
    int local = threadIdx.x / COMPACT_OBSERVATION_PARTS;
    if (local < envs) {
        c_observe(&vec.envs[first + local], threadIdx.x % COMPACT_OBSERVATION_PARTS, (uint8_t*)staged + local * COMPACT_OBS_BYTES);
    }
    __syncthreads();
    uint32_t* out = (uint32_t*)(vec.observations + first * COMPACT_OBS_BYTES);
    for (int word = threadIdx.x; word < envs * (COMPACT_OBS_BYTES / 4); word += blockDim.x) out[word] = staged[word];
}

// vec_gpu_create for these kernels: whole warps of envs and of scratch buffers (the warp's lanes
// all meet in the step and reset kernels), one env's compact observation per agent's obs_bytes,
// 4-byte aligned (copied as words), and step_lanes 0 for craftax_step_lanes' choice.
static cudaError_t craftax_vec_create(VecGpu** out, Craftax* host_envs, int num_envs, char* observations, int* actions,
                                      float* rewards, unsigned char* terminals, unsigned char* truncations,
                                      int reset_scratch_buffers, int step_lanes) {
    *out = NULL;
    if (num_envs % VEC_GPU_WARP != 0 || reset_scratch_buffers % VEC_GPU_WARP != 0 || ((uintptr_t)observations & 3) != 0) {
        return cudaErrorInvalidValue;
    }
    if (step_lanes == 0) {
        int device, sms;
        VEC_GPU_CHECK(cudaGetDevice(&device));
        VEC_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        step_lanes = craftax_step_lanes(num_envs, sms);
    }
    const int nvec[1] = {NUM_ACTIONS};
    return vec_gpu_create(out, host_envs, num_envs, 1, nvec, 1, observations, COMPACT_OBS_BYTES, actions, rewards,
                          terminals, truncations, reset_scratch_buffers, sizeof(WorldgenScratch), step_lanes);
}

static cudaError_t craftax_vec_observe(VecGpu* vec, cudaStream_t stream) {
    craftax_observe_kernel<<<vec_gpu_blocks(vec->num_envs, CRAFTAX_OBSERVE_ENVS), VEC_GPU_BLOCK, 0, stream>>>(*vec);
    return cudaGetLastError();
}

// The resets due, then every env's observation.
static cudaError_t craftax_vec_reset_due(VecGpu* vec, cudaStream_t stream) {
    craftax_reset_kernel<<<vec_gpu_blocks(vec->reset_threads, vec->reset_block), vec->reset_block, 0, stream>>>(*vec);
    VEC_GPU_CHECK(cudaGetLastError());
    return craftax_vec_observe(vec, stream);
}

static cudaError_t craftax_vec_reset(VecGpu* vec, uint64_t seed, cudaStream_t stream) {
    VEC_GPU_CHECK(vec_gpu_seed(vec, seed, stream));
    return craftax_vec_reset_due(vec, stream);
}

// actions: device, num_envs values, int64 when actions_are_int64.
static cudaError_t craftax_vec_step(VecGpu* vec, const void* actions, int actions_are_int64, cudaStream_t stream) {
    craftax_prepare_kernel<<<vec_gpu_blocks(vec->num_envs, VEC_GPU_BLOCK), VEC_GPU_BLOCK, 0, stream>>>(*vec);
    VEC_GPU_CHECK(cudaGetLastError());
    unsigned blocks = vec_gpu_blocks(vec_gpu_step_threads(vec), vec->step_block);
    if (actions_are_int64) {
        craftax_step_kernel<long long><<<blocks, vec->step_block, 0, stream>>>(*vec, (const long long*)actions);
    } else {
        craftax_step_kernel<int><<<blocks, vec->step_block, 0, stream>>>(*vec, (const int*)actions);
    }
    VEC_GPU_CHECK(cudaGetLastError());
    return craftax_vec_reset_due(vec, stream);
}
