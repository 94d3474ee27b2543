// Craftax's pixel observation on the device (CraftaxPixelsGPU in ocean/craftax/gpu.py): each env's
// frame at `block` pixels a cell over 255, bit for bit the CPU env's (CraftaxPixels), drawn by
// render_pixels.h from a texture atlas in device memory. Linked into libcraftax_gpu.so beside the
// env (craftax_gpu.cu), whose states it reads after each reset or step, on the same stream.
//
// A thread per pixel, not per env: a frame is 14,300 pixels at 10 a cell, and one thread drawing
// a whole frame would leave the GPU idle at any env count a trainer runs. Each thread makes every
// draw of the frame over its own pixel (render_observation_pixel): the same operations in the same
// order as the host's renderer, so the same values. A block's threads draw consecutive pixels of
// one env, so they read the same state fields and neighbouring texels, and write a contiguous run
// of the observation.
#include <climits>
#include <cstdint>

// The envs' layout as craftax_gpu.cu compiles it.
#define CRAFTAX_OBSERVATION_KERNEL
#include "craftax.h"
#include "render_pixels.h"

#define PIXEL_THREADS 256

extern "C" const Craftax* craftax_gpu_envs(void* handle, int* num_envs);  // craftax_gpu.cu

// Block b draws pixels [(b % blocks_per_env) * PIXEL_THREADS, ...) of env b / blocks_per_env.
__global__ void pixel_observation_kernel(const Craftax* envs, RenderTextures textures, int blocks_per_env,
                                         float* observations) {
    int env = blockIdx.x / blocks_per_env;
    int pixel = (blockIdx.x % blocks_per_env) * PIXEL_THREADS + threadIdx.x;
    int width = render_width(textures.block), pixels = render_height(textures.block) * width;
    if (pixel >= pixels) return;
    const GameState* state = envs[env].state;
    // A device pool reset leaves the light maps in the pool world until the env places a torch.
    const GameState* light_maps = envs[env].light_maps_from != NULL ? envs[env].light_maps_from : state;
    float values[3];
    render_observation_pixel(state, light_maps, &textures, pixel / width, pixel % width, values);
    float* out = observations + ((size_t)env * pixels + pixel) * 3;
    for (int ch = 0; ch < 3; ch++) out[ch] = values[ch];
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
    int pixels = render_height(block) * render_width(block);
    int blocks_per_env = (pixels + PIXEL_THREADS - 1) / PIXEL_THREADS;
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
