// Craftax's pixel observation on the device (CraftaxPixelsGPU in ocean/craftax/gpu.py): each env's
// frame at `block` pixels a cell over 255, bit for bit the CPU env's (CraftaxPixels), drawn by
// render_pixels.h from a texture atlas in device memory. Linked into libcraftax_gpu.so beside the
// env (craftax_gpu.cu), whose states it reads after each reset or step, on the same stream.
//
// A thread per run of PIXEL_RUN pixels of a row, not per env: a frame is 14,300 pixels at 10 a
// cell, and one thread drawing a whole frame would leave the GPU idle at any env count a trainer
// runs. Each thread makes every draw of the frame over its own pixels (render_observation_run):
// the same operations in the same order as the host's renderer, so the same values. A draw's
// setup (which cell, which texture, the state's fields) is shared by the run's pixels. A block's
// threads draw consecutive runs of one env, so they read the same state fields and neighbouring
// texels, and write a contiguous stretch of the observation.
#include <climits>
#include <cstdint>

// The envs' layout as craftax_gpu.cu compiles it.
#define CRAFTAX_OBSERVATION_KERNEL
#include "craftax.h"
#include "render_pixels.h"

#define PIXEL_THREADS 256
#define PIXEL_RUN 8

extern "C" const Craftax* craftax_gpu_envs(void* handle, int* num_envs);  // craftax_gpu.cu

CRAFTAX_FN int runs_per_row(int block) { return (render_width(block) + PIXEL_RUN - 1) / PIXEL_RUN; }

// Block b draws runs [(b % blocks_per_env) * PIXEL_THREADS, ...) of env b / blocks_per_env; run r
// is pixels [x, x + PIXEL_RUN) of row y = r / runs_per_row, x = r % runs_per_row * PIXEL_RUN,
// the row's last run cut at its end.
__global__ void pixel_observation_kernel(const Craftax* envs, RenderTextures textures, int blocks_per_env,
                                         float* observations) {
    int env = blockIdx.x / blocks_per_env;
    int run = (blockIdx.x % blocks_per_env) * PIXEL_THREADS + threadIdx.x;
    int height = render_height(textures.block), width = render_width(textures.block);
    int runs = runs_per_row(textures.block);
    if (run >= height * runs) return;
    int y = run / runs, x = run % runs * PIXEL_RUN;
    int count = width - x < PIXEL_RUN ? width - x : PIXEL_RUN;
    const GameState* state = envs[env].state;
    // A device pool reset leaves the light maps in the pool world until the env places a torch.
    const GameState* light_maps = envs[env].light_maps_from != NULL ? envs[env].light_maps_from : state;
    float values[PIXEL_RUN * 3];
    render_observation_run(state, light_maps, &textures, y, x, count, values);
    float* out = observations + ((size_t)env * height * width + (size_t)y * width + x) * 3;
    for (int k = 0; k < count * 3; k++) out[k] = values[k];
}

extern "C" {

// The pixel observations of the env `handle` (craftax_gpu_create's) into `observations` (device
// memory, num_envs x render_height(block) x render_width(block) x 3 float32), drawn from `atlas`
// (device memory, render_texture_offset(RENDER_TEXTURE_COUNT, block) bytes: textures.py's
// load_atlas(block)) on the caller's stream; nothing synchronizes.
int craftax_gpu_pixel_observations(void* handle, const uint8_t* atlas, int block, float* observations, void* stream) {
    int num_envs = 0;
    const Craftax* envs = craftax_gpu_envs(handle, &num_envs);
    if (block < 1 || atlas == NULL || observations == NULL) return cudaErrorInvalidValue;
    int blocks_per_env = (render_height(block) * runs_per_row(block) + PIXEL_THREADS - 1) / PIXEL_THREADS;
    if ((long)blocks_per_env * num_envs > INT_MAX) return cudaErrorInvalidValue;
    RenderTextures textures = {block, atlas};
    pixel_observation_kernel<<<(unsigned)(blocks_per_env * num_envs), PIXEL_THREADS, 0, (cudaStream_t)stream>>>(
        envs, textures, blocks_per_env, observations);
    return cudaGetLastError();
}

// The bytes of the atlas for cells of `block` pixels as this library was compiled, which gpu.py
// checks against the CPU binding's.
long craftax_gpu_atlas_bytes(int block) { return render_texture_offset(RENDER_TEXTURE_COUNT, block); }

}  // extern "C"
