// The CraftaxCells policy's first layer on the GPU (ocean/craftax/policy.py): its input, each
// cell of a compact observation embedded by a learned table, and the table's gradient. Built by
// setup.py into the GPU env's library (ocean/craftax/libcraftax_gpu.so) beside craftax_gpu.cu,
// which it shares nothing with but the observation's layout (observation.h); gpu.py calls it
// through ctypes on the caller's stream.
//
// Every entry point returns a cudaError_t (0 on success).
#include <climits>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "observation.h"

#define EMBED_THREADS 256
// Any failed CUDA call ends the calling function with its error.
#define CELL_CHECK(call)                                    \
    do {                                                    \
        cudaError_t cell_status = (call);                   \
        if (cell_status != cudaSuccess) return cell_status; \
    } while (0)

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

extern "C" {

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
    unsigned blocks = (unsigned)((parts + EMBED_THREADS - 1) / EMBED_THREADS);
    if (bfloat16) {
        cell_embedding_kernel<<<blocks, EMBED_THREADS, 0, (cudaStream_t)stream>>>(
            (const uint8_t*)compact, table, width, (__nv_bfloat16*)out, columns, parts);
    } else {
        cell_embedding_kernel<<<blocks, EMBED_THREADS, 0, (cudaStream_t)stream>>>(
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
    CELL_CHECK(cudaMemsetAsync(table_grad, 0, sizeof(float) * OBS_CHANNELS * width, cuda_stream));
    long instances = rows * OBS_CELLS;
    if (instances == 0) return cudaSuccess;
    int device = 0, multiprocessors = 0, major = 0;
    CELL_CHECK(cudaGetDevice(&device));
    CELL_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    CELL_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (bfloat16 && major >= 8 && (uintptr_t)grad % 16 == 0) {
        int blocks_per_multiprocessor = 0;
        CELL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, cell_embedding_grad_mma_kernel,
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

}  // extern "C"
