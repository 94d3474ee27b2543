// The symbolic observation, as craftax/craftax_classic/renderer.py's render_craftax_symbolic:
// the 7 x 9 view of one-hot blocks (cells off the map are OUT_OF_BOUNDS) and mob kinds, the
// inventory and intrinsics (float16 values / 10), the direction one-hot, light and sleeping.
#pragma once
#include "worldgen.h"

// x rounded to the nearest float16 (ties to even), for x a normal float16 or zero: the
// reference computes the inventory in float16 before the observation widens it to float32.
CRAFTAX_FN float classic_round_to_half(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    bits += 0xFFFu + ((bits >> 13) & 1u);
    bits &= ~0x1FFFu;
    memcpy(&x, &bits, 4);
    return x;
}

// float16(value) / 10 as the reference's XLA program computes it: a float16 multiplication by
// float16(0.1), whose product (exact in float32 for small integers) is rounded to float16.
CRAFTAX_FN float classic_tenth(int32_t value) { return classic_round_to_half((float)value * classic_round_to_half(0.1f)); }

// A mob kind's channel of the view: each mob in turn writes whether it is live and on screen to
// its view cell, as the reference's scatter does (a negative view index is normalised once and a
// write still outside the view is dropped, so a mob just off screen can clear a cell).
CRAFTAX_FN void classic_observe_mobs(float* obs, const int32_t (*position)[2], const uint8_t* mask, int count, int channel,
                                     const int32_t* player) {
    for (int k = 0; k < count; k++) {
        int r = position[k][0] - player[0] + CLASSIC_VIEW_ROWS / 2;
        int c = position[k][1] - player[1] + CLASSIC_VIEW_COLS / 2;
        int on_screen = r >= 0 && r < CLASSIC_VIEW_ROWS && c >= 0 && c < CLASSIC_VIEW_COLS && mask[k];
        if (r < 0) r += CLASSIC_VIEW_ROWS;
        if (c < 0) c += CLASSIC_VIEW_COLS;
        if (r >= 0 && r < CLASSIC_VIEW_ROWS && c >= 0 && c < CLASSIC_VIEW_COLS)
            obs[(r * CLASSIC_VIEW_COLS + c) * CLASSIC_VIEW_CHANNELS + CLASSIC_NUM_BLOCKS + channel] = (float)on_screen;
    }
}

// The block one-hot of view cell (vr, vc); obs starts zeroed. Block and mob channels are apart,
// so cells and mobs may be written in any order: the device writes an env's cells from many threads.
CRAFTAX_FN void classic_observe_cell(const ClassicState* s, int vr, int vc, float* obs) {
    int r = s->player_position[0] - CLASSIC_VIEW_ROWS / 2 + vr, c = s->player_position[1] - CLASSIC_VIEW_COLS / 2 + vc;
    int in_map = r >= 0 && r < CLASSIC_MAP_SIZE && c >= 0 && c < CLASSIC_MAP_SIZE;
    int block = in_map ? s->map[r][c] : CB_OUT_OF_BOUNDS;
    obs[(vr * CLASSIC_VIEW_COLS + vc) * CLASSIC_VIEW_CHANNELS + block] = 1.0f;
}

// Every mob kind's channel, in the reference's order (a later mob's write wins); obs starts zeroed.
CRAFTAX_FN void classic_observe_all_mobs(const ClassicState* s, float* obs) {
    const int32_t* player = s->player_position;
    classic_observe_mobs(obs, s->zombies.position, s->zombies.mask, CLASSIC_MAX_ZOMBIES, 0, player);
    classic_observe_mobs(obs, s->cows.position, s->cows.mask, CLASSIC_MAX_COWS, 1, player);
    classic_observe_mobs(obs, s->skeletons.position, s->skeletons.mask, CLASSIC_MAX_SKELETONS, 2, player);
    classic_observe_mobs(obs, s->arrows.position, s->arrows.mask, CLASSIC_MAX_ARROWS, 3, player);
}

// The values after the view: inventory, intrinsics, direction, light and sleeping; obs starts zeroed.
CRAFTAX_FN void classic_observe_status(const ClassicState* s, float* obs) {
    float* rest = obs + CLASSIC_VIEW_ROWS * CLASSIC_VIEW_COLS * CLASSIC_VIEW_CHANNELS;
    const int32_t* items = &s->inventory.wood;
    for (int i = 0; i < CLASSIC_INVENTORY_ITEMS; i++) rest[i] = classic_tenth(items[i]);
    rest += CLASSIC_INVENTORY_ITEMS;
    rest[0] = classic_tenth(s->player_health);
    rest[1] = classic_tenth(s->player_food);
    rest[2] = classic_tenth(s->player_drink);
    rest[3] = classic_tenth(s->player_energy);
    rest += 4;
    if (s->player_direction >= 1 && s->player_direction <= 4) rest[s->player_direction - 1] = 1.0f;
    rest[4] = classic_observed_light_level(s->timestep);
    rest[5] = (float)s->is_sleeping;
}

CRAFTAX_FN void classic_observe(const ClassicState* s, float* obs) {
    memset(obs, 0, CLASSIC_OBS_SIZE * sizeof(float));
    for (int vr = 0; vr < CLASSIC_VIEW_ROWS; vr++) {
        for (int vc = 0; vc < CLASSIC_VIEW_COLS; vc++) classic_observe_cell(s, vr, vc, obs);
    }
    classic_observe_all_mobs(s, obs);
    classic_observe_status(s, obs);
}
