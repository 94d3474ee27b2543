// The GPU-resident Craftax-Classic env: the Ocean env of craftax_classic.h stepped by the generic
// device vecenv (ocean/vecenv_gpu.cuh): its step kernel as it is (one thread per env), a reset
// kernel in which a warp's lanes copy reset pool worlds together (classic_reset_kernel), and an
// observation kernel with many threads an env (classic_observe_kernel). Built by setup.py into ocean/craftax_classic/libcraftax_classic_gpu.so and driven through ctypes by
// ocean/craftax_classic/gpu.py with raw device pointers of torch tensors and the caller's stream:
// no torch headers, cudart linked statically.
//
// Every entry point returns a cudaError_t (0 on success); craftax_classic_gpu_error_string names it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../craftax/common.h"
#include "../craftax/jax_random.h"

// cosf and sinf of the reference are glibc's (XLA's CPU backend calls libm); CUDA's are not bitwise
// equal to them. The Classic headers call cosf and sinf directly (the noise gradients, the light
// level), so while they are included those names stand for the functions below: on the host,
// glibc's; on the device, glibc's results looked up in tables the host fills (classic_trig).
//
// The arguments that occur are few. A noise gradient's angle is 6.2831855f times a uniform whose
// 23 mantissa bits come from a draw: 2^23 angles, tabulated by those bits. Their spacing is wider
// than a float's rounding error, so an angle's bits are recovered from the angle alone, then
// checked. The light level's phase depends on the timestep alone: its arguments are recorded
// while the host evaluates the light functions at every timestep, and looked up by binary search.
// Any other argument gives NaN on the device (the parity tests would see it).
#define CLASSIC_GRADIENT_ANGLES (1 << 23)
#define CLASSIC_GRADIENT_TURN 6.2831855f

typedef struct {
    const float2* gradients;        // [CLASSIC_GRADIENT_ANGLES]: (cos, sin) of the angle of uniform bits m << 9
    const float* light_arguments;   // [light_count], ascending
    const float* light_cosines;     // [light_count]: cosf of each
    int light_count;
} ClassicTrig;
__device__ static ClassicTrig classic_trig;

// Where the host's cosf calls record their arguments, while it is not NULL.
static std::vector<float>*& recorded_cosf_arguments(void) {
    static std::vector<float>* arguments = NULL;
    return arguments;
}

#ifdef __CUDA_ARCH__
// The gradient table's index of angle x, or -1 when x is no gradient angle.
__device__ static int classic_gradient_index(float x) {
    double bits = (double)x * ((double)CLASSIC_GRADIENT_ANGLES / (double)CLASSIC_GRADIENT_TURN);
    if (!(bits >= 0.0 && bits < (double)CLASSIC_GRADIENT_ANGLES)) return -1;
    int m = (int)rint(bits);
    if (m >= CLASSIC_GRADIENT_ANGLES || CLASSIC_GRADIENT_TURN * uniform_from_bits((uint32_t)m << 9) != x) return -1;
    return m;
}

__device__ static float classic_light_cosine(float x) {
    int low = 0, high = classic_trig.light_count;
    while (low < high) {
        int mid = (low + high) / 2;
        if (classic_trig.light_arguments[mid] < x) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return low < classic_trig.light_count && classic_trig.light_arguments[low] == x ? classic_trig.light_cosines[low] : NAN;
}
#endif

CRAFTAX_FN float classic_reference_cosf(float x) {
#ifdef __CUDA_ARCH__
    int m = classic_gradient_index(x);
    return m >= 0 ? classic_trig.gradients[m].x : classic_light_cosine(x);
#else
    if (recorded_cosf_arguments() != NULL) recorded_cosf_arguments()->push_back(x);
    return cosf(x);
#endif
}

CRAFTAX_FN float classic_reference_sinf(float x) {
#ifdef __CUDA_ARCH__
    int m = classic_gradient_index(x);
    return m >= 0 ? classic_trig.gradients[m].y : NAN;
#else
    return sinf(x);
#endif
}

#define cosf classic_reference_cosf
#define sinf classic_reference_sinf
#define CLASSIC_OBSERVATION_KERNEL
#include "craftax_classic.h"
#undef cosf
#undef sinf

#define Env CraftaxClassic
#include "vecenv_gpu.cuh"

// World generation's prefix sum recurses, so the compiler cannot size the threads' stacks: each
// gets the larger of the step and reset kernels' frames and this much for the calls below it.
#define DEVICE_CALL_STACK_BYTES 4096
// Worlds generated at once without a reset pool: each reset kernel thread generates in a
// ClassicScratch of its own (about 100 KB of device memory), for the envs i, i + buffers, ... that reset.
#define RESET_SCRATCH_BUFFERS 8192
static_assert(RESET_SCRATCH_BUFFERS % VEC_GPU_WARP == 0, "classic_reset_kernel's warps take whole warps of envs");
#define MAX_DEVICES 64

// Resets the envs whose episode ended, 32 envs to a warp: every lane of a warp in which some env
// resets calls c_reset_warp, saying whether its own env does, so that the whole warp copies the
// pool worlds of the few that reset (without a pool, each generates its own). The launch covers
// reset_threads with whole warps, and thread t resets the envs t, t + stride, ... that are due,
// the stride being reset_threads rounded up to whole warps. reset_threads is num_envs (one pass)
// or RESET_SCRATCH_BUFFERS, whole warps: either way thread t < reset_threads, and with scratch it
// lends its own buffer to each env it resets.
__global__ void classic_reset_kernel(VecGpu vec) {
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = thread % VEC_GPU_WARP;
    int stride = (vec.reset_threads + VEC_GPU_WARP - 1) / VEC_GPU_WARP * VEC_GPU_WARP;
    if (thread - lane >= stride) return;  // the whole warp: its envs are another warp's
    for (int first = thread - lane; first < vec.num_envs; first += stride) {
        int i = first + lane;
        int resetting = i < vec.num_envs && vec.ended[i];
        if (__ballot_sync(0xFFFFFFFFu, resetting) == 0) continue;
        CraftaxClassic* env = &vec.envs[resetting ? i : first];
        if (resetting) vec_gpu_lend_scratch(vec, env, thread);
        c_reset_warp(env, resetting);
        if (resetting) vec_gpu_reset_done(vec, env, i);
    }
}

// Envs per block of the observation kernel. An env's 1,345 floats written by its own thread are
// stores at a stride of their own, a sector per lane; staged in shared memory by the block (zeroed,
// then the view's cells spread over CLASSIC_OBSERVE_THREADS threads, the mobs and the status
// values by the last two) they go out as consecutive words.
#define CLASSIC_OBSERVE_ENVS 8
#define CLASSIC_OBSERVE_THREADS (VEC_GPU_BLOCK / CLASSIC_OBSERVE_ENVS)
#define CLASSIC_VIEW_CELLS (CLASSIC_VIEW_ROWS * CLASSIC_VIEW_COLS)
static_assert(CLASSIC_OBSERVE_ENVS * CLASSIC_OBS_SIZE * sizeof(float) <= 48 * 1024, "a block's observations fit its static shared memory");
static_assert(CLASSIC_OBSERVE_THREADS >= 2, "an env's mobs and status values are two threads' work");

__global__ void __launch_bounds__(VEC_GPU_BLOCK) classic_observe_kernel(VecGpu vec) {
    __shared__ float staged[CLASSIC_OBSERVE_ENVS * CLASSIC_OBS_SIZE];
    long first = (long)blockIdx.x * CLASSIC_OBSERVE_ENVS;
    int envs = (int)(vec.num_envs - first < CLASSIC_OBSERVE_ENVS ? vec.num_envs - first : CLASSIC_OBSERVE_ENVS);
    for (int word = threadIdx.x; word < envs * CLASSIC_OBS_SIZE; word += blockDim.x) staged[word] = 0.0f;
    __syncthreads();
    int local = threadIdx.x / CLASSIC_OBSERVE_THREADS, part = threadIdx.x % CLASSIC_OBSERVE_THREADS;
    if (local < envs) {
        const ClassicState* s = &vec.envs[first + local].state;
        float* obs = staged + local * CLASSIC_OBS_SIZE;
        for (int cell = part; cell < CLASSIC_VIEW_CELLS; cell += CLASSIC_OBSERVE_THREADS) {
            classic_observe_cell(s, cell / CLASSIC_VIEW_COLS, cell % CLASSIC_VIEW_COLS, obs);
        }
        if (part == CLASSIC_OBSERVE_THREADS - 1) classic_observe_all_mobs(s, obs);
        if (part == CLASSIC_OBSERVE_THREADS - 2) classic_observe_status(s, obs);
    }
    __syncthreads();
    float* out = (float*)vec.observations + first * CLASSIC_OBS_SIZE;
    for (int word = threadIdx.x; word < envs * CLASSIC_OBS_SIZE; word += blockDim.x) out[word] = staged[word];
}

// The resets due, then every env's observation.
static cudaError_t classic_reset_due(VecGpu* vec, cudaStream_t stream) {
    classic_reset_kernel<<<vec_gpu_blocks(vec->reset_threads, vec->reset_block), vec->reset_block, 0, stream>>>(*vec);
    VEC_GPU_CHECK(cudaGetLastError());
    classic_observe_kernel<<<vec_gpu_blocks(vec->num_envs, CLASSIC_OBSERVE_ENVS), VEC_GPU_BLOCK, 0, stream>>>(*vec);
    return cudaGetLastError();
}

typedef struct {
    ClassicTrig tables;
    int uploaded;
} DeviceTrig;
static DeviceTrig device_trig[MAX_DEVICES];

template <typename T>
static cudaError_t upload(const T* values, size_t count, const T** out) {
    T* device_values = NULL;
    VEC_GPU_CHECK(cudaMalloc((void**)&device_values, sizeof(T) * count));
    cudaError_t status = cudaMemcpy(device_values, values, sizeof(T) * count, cudaMemcpyHostToDevice);
    if (status != cudaSuccess) {
        cudaFree(device_values);
        return status;
    }
    *out = device_values;
    return cudaSuccess;
}

// glibc's cosf and sinf at every argument the headers pass them, on the current device once.
static cudaError_t upload_classic_trig(int device) {
    DeviceTrig* trig = &device_trig[device];
    if (!trig->uploaded) {
        std::vector<float2> gradients(CLASSIC_GRADIENT_ANGLES);
        for (uint32_t m = 0; m < CLASSIC_GRADIENT_ANGLES; m++) {
            float angle = CLASSIC_GRADIENT_TURN * uniform_from_bits(m << 9);
            gradients[m] = make_float2(cosf(angle), sinf(angle));
        }
        std::vector<float> arguments;
        recorded_cosf_arguments() = &arguments;
        for (int32_t t = 0; t <= CLASSIC_MAX_TIMESTEPS; t++) {
            classic_light_level(t);
            classic_observed_light_level(t);
        }
        recorded_cosf_arguments() = NULL;
        std::sort(arguments.begin(), arguments.end());
        arguments.erase(std::unique(arguments.begin(), arguments.end()), arguments.end());
        std::vector<float> cosines(arguments.size());
        for (size_t k = 0; k < arguments.size(); k++) cosines[k] = cosf(arguments[k]);
        ClassicTrig tables = {NULL, NULL, NULL, (int)arguments.size()};
        cudaError_t status = upload(gradients.data(), gradients.size(), &tables.gradients);
        if (status == cudaSuccess) status = upload(arguments.data(), arguments.size(), &tables.light_arguments);
        if (status == cudaSuccess) status = upload(cosines.data(), cosines.size(), &tables.light_cosines);
        if (status != cudaSuccess) {
            cudaFree((void*)tables.gradients);
            cudaFree((void*)tables.light_arguments);
            return status;
        }
        trig->tables = tables;
        trig->uploaded = 1;
    }
    VEC_GPU_CHECK(cudaMemcpyToSymbol(classic_trig, &trig->tables, sizeof(ClassicTrig)));
#ifdef GRADIENT_ANGLES
    // Noise drawn through the full game's Perlin code reads the same gradients from its ReferenceTrig.
    static_assert(GRADIENT_ANGLES == CLASSIC_GRADIENT_ANGLES, "one gradient table serves both");
    ReferenceTrig shared = {};
    shared.gradients = trig->tables.gradients;
    VEC_GPU_CHECK(cudaMemcpyToSymbol(reference_trig, &shared, sizeof(ReferenceTrig)));
#endif
    return cudaSuccess;
}

typedef struct {
    VecGpu* vec;
    ClassicState* reset_pool;  // NULL without a pool
    int device;
} ClassicGpu;

extern "C" {

const char* craftax_classic_gpu_error_string(int status) { return cudaGetErrorString((cudaError_t)status); }

// The layout this library was compiled with, checked against the CPU binding's at load time.
size_t craftax_classic_gpu_state_bytes(void) { return sizeof(ClassicState); }
int craftax_classic_gpu_sum_count(void) { return VEC_GPU_SUMS; }
int craftax_classic_gpu_obs_size(void) { return CLASSIC_OBS_SIZE; }

// pool: reset_pool_size worlds (the CPU binding's make_reset_pool bytes) on the host, or NULL, uploaded
// here; the buffers are device memory of num_envs entries (observations: CLASSIC_OBS_SIZE floats
// each). envs_per_warp: of the step kernel, 1, 2, 4, ... 32.
int craftax_classic_gpu_create(void** out, int device, int num_envs, const void* pool, int reset_pool_size,
                               float* observations, int* actions, float* rewards, unsigned char* terminals,
                               unsigned char* truncations, int envs_per_warp) {
    *out = NULL;
    if (num_envs <= 0 || device < 0 || device >= MAX_DEVICES || reset_pool_size < 0 || (reset_pool_size > 0) != (pool != NULL)) {
        return cudaErrorInvalidValue;
    }
    VEC_GPU_CHECK(cudaSetDevice(device));
    VEC_GPU_CHECK(upload_classic_trig(device));
    cudaFuncAttributes step_kernel, reset_kernel;
    VEC_GPU_CHECK(cudaFuncGetAttributes(&step_kernel, vec_gpu_step_kernel<long long, CraftaxClassic>));
    VEC_GPU_CHECK(cudaFuncGetAttributes(&reset_kernel, classic_reset_kernel));
    size_t frame_bytes = std::max(step_kernel.localSizeBytes, reset_kernel.localSizeBytes);
    size_t stack_bytes = 0, needed_bytes = frame_bytes + DEVICE_CALL_STACK_BYTES;
    VEC_GPU_CHECK(cudaDeviceGetLimit(&stack_bytes, cudaLimitStackSize));
    if (stack_bytes < needed_bytes) VEC_GPU_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, needed_bytes));
    ClassicGpu* env = (ClassicGpu*)calloc(1, sizeof(ClassicGpu));
    env->device = device;
    cudaError_t status = cudaSuccess;
    if (reset_pool_size > 0) {
        size_t pool_bytes = sizeof(ClassicState) * (size_t)reset_pool_size;
        status = cudaMalloc((void**)&env->reset_pool, pool_bytes);
        if (status == cudaSuccess) status = cudaMemcpy(env->reset_pool, pool, pool_bytes, cudaMemcpyHostToDevice);
    }
    if (status == cudaSuccess) {
        CraftaxClassic* host_envs = (CraftaxClassic*)calloc((size_t)num_envs, sizeof(CraftaxClassic));
        for (int i = 0; i < num_envs; i++) {
            host_envs[i].reset_pool_size = reset_pool_size;
            host_envs[i].reset_pool = env->reset_pool;
        }
        const int nvec[1] = {CLASSIC_NUM_ACTIONS};
        // A pool's resets copy worlds: no scratch to lend.
        status = vec_gpu_create(&env->vec, host_envs, num_envs, 1, nvec, 1, (char*)observations,
                                CLASSIC_OBS_SIZE * sizeof(float), actions, rewards, terminals, truncations,
                                reset_pool_size > 0 ? 0 : RESET_SCRATCH_BUFFERS, sizeof(ClassicScratch), envs_per_warp);
        free(host_envs);
    }
    if (status != cudaSuccess) {
        cudaFree(env->reset_pool);
        free(env);
        return status;
    }
    *out = env;
    return cudaSuccess;
}

int craftax_classic_gpu_reset(void* handle, uint64_t seed, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(vec_gpu_seed(env->vec, seed, (cudaStream_t)stream));
    return classic_reset_due(env->vec, (cudaStream_t)stream);
}

int craftax_classic_gpu_step(void* handle, const void* actions, int actions_are_int64, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(vec_gpu_step_envs(env->vec, actions, actions_are_int64, (cudaStream_t)stream));
    return classic_reset_due(env->vec, (cudaStream_t)stream);
}

// sums: craftax_classic_gpu_sum_count() floats; *bad_index is -1 when every action was valid.
int craftax_classic_gpu_sync_logs(void* handle, float* sums, long long* bad_index, int* bad_value, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    return vec_gpu_sync_logs_to(env->vec, sums, bad_index, bad_value, (cudaStream_t)stream);
}

// Env index's game state (sizeof(ClassicState) bytes) into host memory; waits for the stream.
int craftax_classic_gpu_read_state(void* handle, int index, void* out, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    cudaStream_t cuda_stream = (cudaStream_t)stream;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(cudaMemcpyAsync(out, &env->vec->envs[index].state, sizeof(ClassicState), cudaMemcpyDeviceToHost,
                                  cuda_stream));
    return cudaStreamSynchronize(cuda_stream);
}

void craftax_classic_gpu_destroy(void* handle) {
    ClassicGpu* env = (ClassicGpu*)handle;
    cudaSetDevice(env->device);
    cudaDeviceSynchronize();
    vec_gpu_destroy(env->vec);
    cudaFree(env->reset_pool);
    free(env);
}

// 0 when this library has code for the current device (cudaSetDevice), else the CUDA error: a
// GPU of an architecture the library was not compiled for has none (PUFFER_CUDA_ARCH).
int craftax_classic_gpu_runs_here(void) {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, vec_gpu_step_kernel<int, CraftaxClassic>);
}

}  // extern "C"
