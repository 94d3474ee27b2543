// The GPU-resident Craftax env: the Ocean env of craftax.h stepped by the device vecenv
// (ocean/vecenv_gpu.cuh), one thread per env. Built by setup.py into ocean/craftax/libcraftax_gpu.so
// and driven through ctypes by ocean/craftax/gpu.py with raw device pointers of torch tensors and
// the caller's stream: no torch headers, cudart linked statically.
//
// Every entry point returns a cudaError_t (0 on success); craftax_gpu_error_string names it.
#include <climits>
#include <cstdint>

#include <cuda_bf16.h>
#include <mma.h>

// Device envs always write compact observations, in a kernel of their own (craftax.h).
#define CRAFTAX_OBSERVATION_KERNEL
#include "craftax.h"
#define Env Craftax
// The step kernel capped at 128 registers (4 blocks of 128 threads per multiprocessor): the build
// the GPU parity tests and benchmarks ran. Occupancy is not what limits the step: measured on an
// H200 at the largest env counts, more registers ran no faster and fewer ran slower.
#define VEC_GPU_STEP_BLOCKS_PER_SM 4
#define VEC_GPU_STEPPING_LANES(lanes) craftax_set_stepping_lanes(lanes)
#define VEC_GPU_WARP_RESET
#include "vecenv_gpu.cuh"
static_assert(VEC_GPU_BLOCK == 32 * CRAFTAX_WARPS_PER_BLOCK, "mobs.h's spawn scratch is per warp of a step block");

// Worlds generated at once on the device without a reset pool (each needs a WorldgenScratch).
#define WORLDGEN_SCRATCH_BUFFERS 8192
// The XLA-order cumsum (world generation, mob spawning) recurses, so the compiler cannot size the
// threads' stacks; this covers its depth with room to spare.
#define DEVICE_STACK_BYTES 8192
#define MAX_DEVICES 64

// The host's cos/sin results for the device (ReferenceTrig in noise.h), per device: the light
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

// The cell-embedding policy's input (CraftaxCells in ocean/craftax/policy.py): a row is each cell's
// width values, the sum of the rows of a table (OBS_CHANNELS x width float32) for the channels the
// cell has in the full observation, cells in the full observation's order; then the 51 scalars;
// then zeros to the row's width. The channels' 0/1 values times the table, without writing the
// 8,217 channels out. Each thread writes CELL_PART values; a cell's width is whole parts.
#define CELL_PART 8
#define CELL_GRAD_THREADS 256
#define CELL_GRAD_BLOCKS_PER_SM 8

// Calls visit(channel) for each channel the cell has, in ascending order: none when it is dark,
// else its block, its item, its mobs (each class's byte holds that class's types as bits), light.
template <typename Visit>
__device__ static inline void for_each_cell_channel(const uint8_t* cell, Visit visit) {
    if (!cell[COMPACT_LIGHT]) return;
    visit(cell[COMPACT_BLOCK]);
    visit(CHANNEL_ITEMS + cell[COMPACT_ITEM]);
    for (int k = 0; k < NUM_MOB_CLASSES; k++) {
        for (unsigned types = cell[COMPACT_MOBS + k]; types != 0; types &= types - 1) {
            visit(CHANNEL_MOBS + k * MOB_TYPES_PER_CLASS + __ffs(types) - 1);
        }
    }
    visit(CHANNEL_LIGHT);
}

// A cell's COMPACT_CELL_BYTES bytes, read as two words (rows start on 4-byte boundaries).
struct CellBytes {
    uint32_t words[2];
    __device__ const uint8_t* bytes() const { return (const uint8_t*)words; }
};

__device__ static inline CellBytes load_cell(const uint8_t* observation, int cell) {
    const uint32_t* words = (const uint32_t*)(observation + cell * COMPACT_CELL_BYTES);
    return CellBytes{{words[0], words[1]}};
}

__device__ static inline void store_cell_part(float* out, const float values[CELL_PART]) {
    float4* vectors = (float4*)out;
    vectors[0] = make_float4(values[0], values[1], values[2], values[3]);
    vectors[1] = make_float4(values[4], values[5], values[6], values[7]);
}

__device__ static inline void store_cell_part(__nv_bfloat16* out, const float values[CELL_PART]) {
    __nv_bfloat162 pairs[CELL_PART / 2];
    for (int i = 0; i < CELL_PART / 2; i++) pairs[i] = __floats2bfloat162_rn(values[2 * i], values[2 * i + 1]);
    *(uint4*)out = *(const uint4*)pairs;
}

__device__ static inline float2 load_pair(const float* grad) { return *(const float2*)grad; }
__device__ static inline float2 load_pair(const __nv_bfloat16* grad) { return __bfloat1622float2(*(const __nv_bfloat162*)grad); }

// One thread per CELL_PART values of a row (rows of columns values, parts of them in all).
template <typename Value>
__global__ void cell_embedding_kernel(const uint8_t* compact, const float* table, int width, Value* out, int columns,
                                      long parts) {
    long part = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (part >= parts) return;
    int row_parts = columns / CELL_PART;
    long row = part / row_parts;
    int first = (int)(part - row * row_parts) * CELL_PART;
    const uint8_t* observation = compact + row * COMPACT_OBS_BYTES;
    float values[CELL_PART] = {0};
    if (first < OBS_CELLS * width) {
        int cell = first / width, column = first - cell * width;
        CellBytes bytes = load_cell(observation, cell);
        for_each_cell_channel(bytes.bytes(), [&](int channel) {
            const float4* source = (const float4*)(table + channel * width + column);
            float4 low = __ldg(source), high = __ldg(source + 1);
            values[0] += low.x, values[1] += low.y, values[2] += low.z, values[3] += low.w;
            values[4] += high.x, values[5] += high.y, values[6] += high.z, values[7] += high.w;
        });
    } else {
        for (int i = 0; i < CELL_PART; i++) {
            int scalar = first + i - OBS_CELLS * width;
            values[i] = scalar < OBS_SCALARS ? observation_scalar(observation, scalar) : 0.0f;
        }
    }
    store_cell_part(out + part * CELL_PART, values);
}

// The table's gradient from the rows' gradient (the scalars' and the padding's columns unread):
// each cell of each row (an instance) adds its width gradient values to the rows of its channels.
// A thread owns two columns of an instance, so a warp passes over 32 / (width / 2) instances at
// once; a block sums into shared memory, then into table_grad (zeroed first). Each of a warp's
// instances sums into a copy of its own, as lanes adding to one address in one instruction wait
// on each other, and neighbouring cells often share a block; the channels that nearly every lit
// cell has, light and no item, are summed in registers instead.
template <typename Value>
__global__ void cell_embedding_grad_kernel(const uint8_t* compact, const Value* grad, int columns, int width,
                                           float* table_grad, long instances) {
    extern __shared__ float block_grad[];
    int lanes = width / 2, copies = 32 / lanes, stride = OBS_CHANNELS * width + 1;  // odd: copies start on other banks
    for (int i = threadIdx.x; i < copies * stride; i += blockDim.x) block_grad[i] = 0.0f;
    __syncthreads();
    int slots = blockDim.x / lanes, slot = threadIdx.x / lanes, column = 2 * (threadIdx.x % lanes);
    float* sums = block_grad + (slot % copies) * stride;
    float2 light = make_float2(0.0f, 0.0f), no_item = make_float2(0.0f, 0.0f);
    for (long instance = (long)blockIdx.x * slots + slot; instance < instances; instance += (long)gridDim.x * slots) {
        long row = instance / OBS_CELLS;
        int cell = (int)(instance - row * OBS_CELLS);
        CellBytes bytes = load_cell(compact + row * COMPACT_OBS_BYTES, cell);
        if (!bytes.bytes()[COMPACT_LIGHT]) continue;
        float2 g = load_pair(grad + row * columns + cell * width + column);
        for_each_cell_channel(bytes.bytes(), [&](int channel) {
            if (channel == CHANNEL_LIGHT) {
                light.x += g.x, light.y += g.y;
            } else if (channel == CHANNEL_ITEMS) {
                no_item.x += g.x, no_item.y += g.y;
            } else {
                atomicAdd(&sums[channel * width + column], g.x);
                atomicAdd(&sums[channel * width + column + 1], g.y);
            }
        });
    }
    atomicAdd(&sums[CHANNEL_LIGHT * width + column], light.x);
    atomicAdd(&sums[CHANNEL_LIGHT * width + column + 1], light.y);
    atomicAdd(&sums[CHANNEL_ITEMS * width + column], no_item.x);
    atomicAdd(&sums[CHANNEL_ITEMS * width + column + 1], no_item.y);
    __syncthreads();
    for (int i = threadIdx.x; i < OBS_CHANNELS * width; i += blockDim.x) {
        float sum = 0.0f;
        for (int copy = 0; copy < copies; copy++) sum += block_grad[copy * stride + i];
        atomicAdd(&table_grad[i], sum);
    }
}

// The table's gradient on tensor cores, for bfloat16 gradients on GPUs of compute capability 8.0
// and up. A warp takes the instances (cells of rows, in order) CELL_TILE at a time: lane l writes
// its instance's channels as column l of a 96 x CELL_TILE matrix of 0/1 and its gradient in the
// block's 16 columns of the table (blockIdx.y) as row l of a CELL_TILE x 16 one; the product adds
// into six 16 x 16 accumulators, one per 16 channel rows, skipping the rows no instance of the tile
// has. A warp loads CELL_MMA_TILES_AT_ONCE tiles before multiplying any: the loads' latency, not
// the products, is what it waits on. No lane adds to an address another adds to until the warps'
// sums meet at the end.
#define CELL_TILE 32
#define CELL_TILE_ROWS 96
#define CELL_SUBTILES (CELL_TILE_ROWS / 16)
#define CELL_MMA_WARPS 4
#define CELL_MMA_TILES_AT_ONCE 2
// The two matrices' rows in shared memory, in values: padded so that the 8 rows a tensor-core load
// reads at once fall on different banks.
#define CELL_PRESENT_STRIDE (CELL_TILE + 8)
#define CELL_GRAD_STRIDE (16 + 8)
// Light's row follows the items', and the mobs' rows start on the next whole 16 rows, so that a
// tile without mobs has rows in three of the six.
#define CELL_FIRST_MOB_ROW ((CHANNEL_MOBS + 1 + 15) / 16 * 16)
CRAFTAX_STATIC_ASSERT(CHANNEL_LIGHT == CHANNEL_MOBS + NUM_MOB_CLASSES * MOB_TYPES_PER_CLASS, "channels: blocks, items, mobs, light");
CRAFTAX_STATIC_ASSERT(CELL_FIRST_MOB_ROW + NUM_MOB_CLASSES * MOB_TYPES_PER_CLASS <= CELL_TILE_ROWS, "channel rows");

__device__ static inline int cell_tile_row(int channel) {
    if (channel == CHANNEL_LIGHT) return CHANNEL_MOBS;
    return channel < CHANNEL_MOBS ? channel : channel - CHANNEL_MOBS + CELL_FIRST_MOB_ROW;
}

__global__ void __launch_bounds__(32 * CELL_MMA_WARPS)
cell_embedding_grad_mma_kernel(const uint8_t* compact, const __nv_bfloat16* grad, int columns, int width,
                               float* table_grad, long instances) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    __shared__ __align__(32) __nv_bfloat16 present_tiles[CELL_MMA_WARPS][CELL_TILE_ROWS * CELL_PRESENT_STRIDE];
    __shared__ __align__(32) __nv_bfloat16 grad_tiles[CELL_MMA_WARPS][CELL_TILE * CELL_GRAD_STRIDE];
    __shared__ float block_sums[CELL_TILE_ROWS * 16];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, first_column = blockIdx.y * 16;
    __nv_bfloat16* present = present_tiles[warp];
    __nv_bfloat16* g = grad_tiles[warp];
    for (int i = threadIdx.x; i < CELL_TILE_ROWS * 16; i += blockDim.x) block_sums[i] = 0.0f;
    for (int i = lane; i < CELL_TILE_ROWS * CELL_PRESENT_STRIDE / 8; i += 32) ((uint4*)present)[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    const __nv_bfloat16 one = __float2bfloat16(1.0f), zero = __float2bfloat16(0.0f);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> sums[CELL_SUBTILES];
#pragma unroll
    for (int i = 0; i < CELL_SUBTILES; i++) wmma::fill_fragment(sums[i], 0.0f);
    long step = (long)gridDim.x * CELL_MMA_WARPS * CELL_TILE * CELL_MMA_TILES_AT_ONCE;
    for (long first = ((long)blockIdx.x * CELL_MMA_WARPS + warp) * CELL_TILE * CELL_MMA_TILES_AT_ONCE; first < instances;
         first += step) {
        // Past the last instance a lane keeps zeros and a dark cell's bytes: it adds nothing.
        uint4 low[CELL_MMA_TILES_AT_ONCE], high[CELL_MMA_TILES_AT_ONCE];
        CellBytes cells[CELL_MMA_TILES_AT_ONCE];
#pragma unroll
        for (int t = 0; t < CELL_MMA_TILES_AT_ONCE; t++) {
            long instance = first + t * CELL_TILE + lane;
            low[t] = high[t] = make_uint4(0, 0, 0, 0);
            cells[t] = CellBytes{{0, 0}};
            if (instance >= instances) continue;
            long row = instance / OBS_CELLS;
            int cell = (int)(instance - row * OBS_CELLS);
            const __nv_bfloat16* source = grad + row * columns + cell * width + first_column;
            low[t] = *(const uint4*)source;
            if (first_column + 8 < width) high[t] = *(const uint4*)(source + 8);
            cells[t] = load_cell(compact + row * COMPACT_OBS_BYTES, cell);
        }
#pragma unroll
        for (int t = 0; t < CELL_MMA_TILES_AT_ONCE; t++) {
            ((uint4*)(g + lane * CELL_GRAD_STRIDE))[0] = low[t];
            ((uint4*)(g + lane * CELL_GRAD_STRIDE))[1] = high[t];
            unsigned subtiles = 0;
            for_each_cell_channel(cells[t].bytes(), [&](int channel) {
                int row = cell_tile_row(channel);
                present[row * CELL_PRESENT_STRIDE + lane] = one;
                subtiles |= 1u << (row / 16);
            });
            subtiles = __reduce_or_sync(0xffffffffu, subtiles);
            __syncwarp();
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> gradient[CELL_TILE / 16];
#pragma unroll
            for (int k = 0; k < CELL_TILE / 16; k++) wmma::load_matrix_sync(gradient[k], g + k * 16 * CELL_GRAD_STRIDE, CELL_GRAD_STRIDE);
#pragma unroll
            for (int i = 0; i < CELL_SUBTILES; i++) {
                if (!(subtiles >> i & 1)) continue;
#pragma unroll
                for (int k = 0; k < CELL_TILE / 16; k++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> rows;
                    wmma::load_matrix_sync(rows, present + i * 16 * CELL_PRESENT_STRIDE + k * 16, CELL_PRESENT_STRIDE);
                    wmma::mma_sync(sums[i], rows, gradient[k], sums[i]);
                }
            }
            __syncwarp();
            for_each_cell_channel(cells[t].bytes(), [&](int channel) { present[cell_tile_row(channel) * CELL_PRESENT_STRIDE + lane] = zero; });
        }
    }
    __syncwarp();
    // The warp's 0/1 matrix, free now, holds one accumulator at a time on its way to block_sums.
    float* accumulator = (float*)present;
#pragma unroll
    for (int i = 0; i < CELL_SUBTILES; i++) {
        wmma::store_matrix_sync(accumulator, sums[i], 16, wmma::mem_row_major);
        __syncwarp();
        for (int k = lane; k < 16 * 16; k += 32) atomicAdd(&block_sums[i * 16 * 16 + k], accumulator[k]);
        __syncwarp();
    }
    __syncthreads();
    for (int i = threadIdx.x; i < OBS_CHANNELS * 16; i += blockDim.x) {
        int channel = i / 16, column = i % 16;
        if (first_column + column < width) {
            atomicAdd(&table_grad[channel * width + first_column + column], block_sums[cell_tile_row(channel) * 16 + column]);
        }
    }
#endif
}

static int cell_embedding_shape_is_valid(const void* compact, long rows, int width, int columns) {
    int width_is_valid = width == 8 || width == 16 || width == 32 || width == 64;  // width / 2 lanes divide a warp
    return rows >= 0 && rows <= INT_MAX && width_is_valid && columns % CELL_PART == 0 &&
           columns >= OBS_CELLS * width + OBS_SCALARS && (uintptr_t)compact % 4 == 0;
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
// envs_per_warp: of the step kernel, 1, 2, 4, ... 32, or 0 to let the device vecenv choose.
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
        const int nvec[1] = {NUM_ACTIONS};
        char* step_observations = compact ? (char*)observations : (char*)env->compact_observations;
        status = vec_gpu_create(&env->vec, host_envs, num_envs, 1, nvec, 1, step_observations, COMPACT_OBS_BYTES, actions,
                                rewards, terminals, truncations, reset_pool_size > 0 ? 0 : WORLDGEN_SCRATCH_BUFFERS,
                                sizeof(WorldgenScratch), envs_per_warp);
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
    VEC_GPU_CHECK(vec_gpu_reset(env->vec, seed, (cudaStream_t)stream));
    return expand_observations(env, (cudaStream_t)stream);
}

int craftax_gpu_step(void* handle, const void* actions, int actions_are_int64, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VEC_GPU_CHECK(vec_gpu_step(env->vec, actions, actions_are_int64, (cudaStream_t)stream));
    return expand_observations(env, (cudaStream_t)stream);
}

// sums: craftax_gpu_sum_count() floats; *bad_index is -1 when every action was valid.
int craftax_gpu_sync_logs(void* handle, float* sums, long long* bad_index, int* bad_value, void* stream) {
    CraftaxGpu* env = (CraftaxGpu*)handle;
    VEC_GPU_CHECK(cudaSetDevice(env->device));
    VecGpuReport report;
    VEC_GPU_CHECK(vec_gpu_sync_logs(env->vec, &report, (cudaStream_t)stream));
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

// CraftaxCells' input: rows compact observations at compact (device memory, 4-byte aligned) into
// rows of columns values at out (float32, or bfloat16 when bfloat16 is nonzero; 16-byte aligned):
// each cell's width values from table (OBS_CHANNELS x width float32, 16-byte aligned), the scalars,
// zeros. width: 8, 16, 32 or 64; columns: a multiple of 8, room for the cells and the scalars.
int craftax_gpu_embed_cells(const void* compact, const float* table, int width, void* out, long rows, int columns,
                            int bfloat16, void* stream) {
    if (!cell_embedding_shape_is_valid(compact, rows, width, columns) || (uintptr_t)table % 16 != 0 ||
        (uintptr_t)out % 16 != 0) {
        return cudaErrorInvalidValue;
    }
    long parts = rows * (columns / CELL_PART);
    if (parts == 0) return cudaSuccess;
    unsigned blocks = (unsigned)((parts + EXPAND_THREADS - 1) / EXPAND_THREADS);
    if (bfloat16) {
        cell_embedding_kernel<<<blocks, EXPAND_THREADS, 0, (cudaStream_t)stream>>>(
            (const uint8_t*)compact, table, width, (__nv_bfloat16*)out, columns, parts);
    } else {
        cell_embedding_kernel<<<blocks, EXPAND_THREADS, 0, (cudaStream_t)stream>>>(
            (const uint8_t*)compact, table, width, (float*)out, columns, parts);
    }
    return cudaGetLastError();
}

// The gradient of craftax_gpu_embed_cells' table: grad (rows of columns values, float32 or
// bfloat16 as bfloat16 says) into table_grad (OBS_CHANNELS x width float32), overwritten.
int craftax_gpu_embed_cells_grad(const void* compact, const void* grad, long rows, int columns, int width, int bfloat16,
                                 float* table_grad, void* stream) {
    if (!cell_embedding_shape_is_valid(compact, rows, width, columns) || (uintptr_t)grad % 4 != 0) {
        return cudaErrorInvalidValue;
    }
    cudaStream_t cuda_stream = (cudaStream_t)stream;
    VEC_GPU_CHECK(cudaMemsetAsync(table_grad, 0, sizeof(float) * OBS_CHANNELS * width, cuda_stream));
    long instances = rows * OBS_CELLS;
    if (instances == 0) return cudaSuccess;
    int device = 0, multiprocessors = 0, major = 0;
    VEC_GPU_CHECK(cudaGetDevice(&device));
    VEC_GPU_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    VEC_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (bfloat16 && major >= 8 && (uintptr_t)grad % 16 == 0) {
        int blocks_per_multiprocessor = 0;
        VEC_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, cell_embedding_grad_mma_kernel,
                                                                    32 * CELL_MMA_WARPS, 0));
        long per_block = CELL_MMA_WARPS * CELL_TILE * CELL_MMA_TILES_AT_ONCE, needed = (instances + per_block - 1) / per_block;
        long most = (long)multiprocessors * blocks_per_multiprocessor;
        dim3 grid((unsigned)(needed < most ? needed : most), (unsigned)((width + 15) / 16));
        cell_embedding_grad_mma_kernel<<<grid, 32 * CELL_MMA_WARPS, 0, cuda_stream>>>(
            (const uint8_t*)compact, (const __nv_bfloat16*)grad, columns, width, table_grad, instances);
        return cudaGetLastError();
    }
    long slots = CELL_GRAD_THREADS / (width / 2);
    long needed = (instances + slots - 1) / slots;
    unsigned blocks = (unsigned)(needed < (long)multiprocessors * CELL_GRAD_BLOCKS_PER_SM ? needed
                                                                                       : (long)multiprocessors * CELL_GRAD_BLOCKS_PER_SM);
    size_t shared = sizeof(float) * (32 / (width / 2)) * (OBS_CHANNELS * width + 1);
    if (bfloat16) {
        cell_embedding_grad_kernel<<<blocks, CELL_GRAD_THREADS, shared, cuda_stream>>>(
            (const uint8_t*)compact, (const __nv_bfloat16*)grad, columns, width, table_grad, instances);
    } else {
        cell_embedding_grad_kernel<<<blocks, CELL_GRAD_THREADS, shared, cuda_stream>>>(
            (const uint8_t*)compact, (const float*)grad, columns, width, table_grad, instances);
    }
    return cudaGetLastError();
}

// 0 when this library has code for the current device (cudaSetDevice), else the CUDA error: a
// GPU of an architecture the library was not compiled for has none (PUFFER_CUDA_ARCH).
int craftax_gpu_runs_here(void) {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, full_observation_kernel<uint2>);
}

}  // extern "C"
