// The GPU-resident Craftax-Classic env: the Ocean env of craftax_classic.h stepped by the generic
// device vecenv (ocean/vecenv_gpu.cuh), one thread per env, its kernels as they are. Built by
// setup.py into ocean/craftax_classic/libcraftax_classic_gpu.so and driven through ctypes by
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
#include "craftax_classic.h"
#undef cosf
#undef sinf

#define Env CraftaxClassic
#include "vecenv_gpu.cuh"

// World generation's prefix sum recurses, so the compiler cannot size the threads' stacks: each
// gets the larger of the step and reset kernels' frames and this much for the calls below it.
#define DEVICE_CALL_STACK_BYTES 4096
// Worlds generated at once: each reset kernel thread generates in a ClassicScratch of its own
// (about 100 KB of device memory), for the envs i, i + buffers, ... that reset.
#define RESET_SCRATCH_BUFFERS 8192
#define MAX_DEVICES 64

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
    int device;
} ClassicGpu;

extern "C" {

const char* craftax_classic_gpu_error_string(int status) { return cudaGetErrorString((cudaError_t)status); }

// The layout this library was compiled with, checked against the CPU binding's at load time.
size_t craftax_classic_gpu_state_bytes(void) { return sizeof(ClassicState); }
int craftax_classic_gpu_sum_count(void) { return VEC_GPU_SUMS; }
int craftax_classic_gpu_obs_size(void) { return CLASSIC_OBS_SIZE; }

// The buffers are device memory of num_envs entries (observations: CLASSIC_OBS_SIZE floats each).
// envs_per_warp: of the step kernel, 1, 2, 4, ... 32.
int craftax_classic_gpu_create(void** out, int device, int num_envs, float* observations, int* actions, float* rewards,
                               unsigned char* terminals, unsigned char* truncations, int envs_per_warp) {
    *out = NULL;
    if (num_envs <= 0 || device < 0 || device >= MAX_DEVICES) return cudaErrorInvalidValue;
    VEC_GPU_CHECK(cudaSetDevice(device));
    VEC_GPU_CHECK(upload_classic_trig(device));
    cudaFuncAttributes step_kernel, reset_kernel;
    VEC_GPU_CHECK(cudaFuncGetAttributes(&step_kernel, vec_gpu_step_kernel<long long, CraftaxClassic>));
    VEC_GPU_CHECK(cudaFuncGetAttributes(&reset_kernel, vec_gpu_reset_kernel<CraftaxClassic>));
    size_t frame_bytes = std::max(step_kernel.localSizeBytes, reset_kernel.localSizeBytes);
    size_t stack_bytes = 0, needed_bytes = frame_bytes + DEVICE_CALL_STACK_BYTES;
    VEC_GPU_CHECK(cudaDeviceGetLimit(&stack_bytes, cudaLimitStackSize));
    if (stack_bytes < needed_bytes) VEC_GPU_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, needed_bytes));
    ClassicGpu* env = (ClassicGpu*)calloc(1, sizeof(ClassicGpu));
    env->device = device;
    CraftaxClassic* host_envs = (CraftaxClassic*)calloc((size_t)num_envs, sizeof(CraftaxClassic));
    const int nvec[1] = {CLASSIC_NUM_ACTIONS};
    cudaError_t status = vec_gpu_create(&env->vec, host_envs, num_envs, 1, nvec, 1, (char*)observations,
                                        CLASSIC_OBS_SIZE * sizeof(float), actions, rewards, terminals, truncations,
                                        RESET_SCRATCH_BUFFERS, sizeof(ClassicScratch), envs_per_warp);
    free(host_envs);
    if (status != cudaSuccess) {
        free(env);
        return status;
    }
    *out = env;
    return cudaSuccess;
}

int craftax_classic_gpu_reset(void* handle, uint64_t seed, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    return vec_gpu_reset(env->vec, seed, (cudaStream_t)stream);
}

int craftax_classic_gpu_step(void* handle, const void* actions, int actions_are_int64, void* stream) {
    ClassicGpu* env = (ClassicGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    return vec_gpu_step(env->vec, actions, actions_are_int64, (cudaStream_t)stream);
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
    free(env);
}

// 0 when this library has code for the current device (cudaSetDevice), else the CUDA error: a
// GPU of an architecture the library was not compiled for has none (PUFFER_CUDA_ARCH).
int craftax_classic_gpu_runs_here(void) {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, vec_gpu_step_kernel<int, CraftaxClassic>);
}

}  // extern "C"
