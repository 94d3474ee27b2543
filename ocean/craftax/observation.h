// Observation encoding, as render_craftax_symbolic in craftax/craftax/renderer.py: a 9 x 11 local
// view (83 channels per cell: 37 block one-hot, 5 item one-hot, 40 mob class x type, 1 light flag;
// everything but the light flag zeroed on dark cells) followed by 51 scalars. 8,268 floats.
//
// The compact option carries the same information in 996 bytes: per cell 8 uint8 (block id, item
// id, one bitmask of visible mob types per mob class, light flag; ids 0 on dark cells), then the
// same 51 scalars as little-endian float32.
#pragma once
#include "state.h"

#define OBS_CELLS (OBS_ROWS * OBS_COLS)
#define OBS_CHANNELS (NUM_BLOCK_TYPES + NUM_ITEM_TYPES + NUM_MOB_CLASSES * MOB_TYPES_PER_CLASS + 1)
#define OBS_SCALARS 51
#define OBS_SIZE (OBS_CELLS * OBS_CHANNELS + OBS_SCALARS)
#define COMPACT_CELL_BYTES 8
#define COMPACT_MAP_BYTES (OBS_CELLS * COMPACT_CELL_BYTES)
#define COMPACT_OBS_BYTES (COMPACT_MAP_BYTES + OBS_SCALARS * 4)

#define CHANNEL_ITEMS NUM_BLOCK_TYPES
#define CHANNEL_MOBS (NUM_BLOCK_TYPES + NUM_ITEM_TYPES)
#define CHANNEL_LIGHT (OBS_CHANNELS - 1)

CRAFTAX_STATIC_ASSERT(OBS_SIZE == 8268, "symbolic observation size");

// Visible mobs per view cell: bit t of masks[cell][class] is mob type t of that class.
typedef struct {
    uint8_t masks[OBS_CELLS][NUM_MOB_CLASSES];
} MobView;

// One mob class's contribution, in the reference's scan order. Its scatter writes on_screen at
// the mob's view position: negative view coordinates wrap (jax index normalisation) and
// positions still outside the view are dropped, so a hidden mob can clear a visible one's bit.
CRAFTAX_FN void view_mob_class(MobView* view, const GameState* s, int mob_class, int count,
                               const int32_t (*position)[2], const uint8_t* mask, const uint8_t* type_id) {
    for (int m = 0; m < count; m++) {
        int lr = position[m][0] - s->player_position[0] + OBS_ROWS / 2;
        int lc = position[m][1] - s->player_position[1] + OBS_COLS / 2;
        int on_screen = lr >= 0 && lr < OBS_ROWS && lc >= 0 && lc < OBS_COLS && mask[m];
        int r = lr < 0 ? lr + OBS_ROWS : lr;
        int c = lc < 0 ? lc + OBS_COLS : lc;
        if (r < 0 || r >= OBS_ROWS || c < 0 || c >= OBS_COLS) continue;
        uint8_t bit = (uint8_t)(1u << type_id[m]);
        uint8_t* cell = &view->masks[r * OBS_COLS + c][mob_class];
        *cell = on_screen ? (uint8_t)(*cell | bit) : (uint8_t)(*cell & ~bit);
    }
}

CRAFTAX_FN void build_mob_view(MobView* view, const GameState* s) {
    memset(view, 0, sizeof(*view));
    int l = s->player_level;
    view_mob_class(view, s, 0, MAX_MELEE_MOBS, s->melee_mobs.position[l], s->melee_mobs.mask[l], s->melee_mobs.type_id[l]);
    view_mob_class(view, s, 1, MAX_PASSIVE_MOBS, s->passive_mobs.position[l], s->passive_mobs.mask[l], s->passive_mobs.type_id[l]);
    view_mob_class(view, s, 2, MAX_RANGED_MOBS, s->ranged_mobs.position[l], s->ranged_mobs.mask[l], s->ranged_mobs.type_id[l]);
    view_mob_class(view, s, 3, MAX_MOB_PROJECTILES, s->mob_projectiles.position[l], s->mob_projectiles.mask[l], s->mob_projectiles.type_id[l]);
    view_mob_class(view, s, 4, MAX_PLAYER_PROJECTILES, s->player_projectiles.position[l], s->player_projectiles.mask[l], s->player_projectiles.type_id[l]);
}

// The map cell under view cell (r, c), or -1 outside the map (out-of-bounds block, no item,
// no light).
CRAFTAX_FN int view_cell_index(const GameState* s, int r, int c) {
    int wr = s->player_position[0] - OBS_ROWS / 2 + r;
    int wc = s->player_position[1] - OBS_COLS / 2 + c;
    if (wr < 0 || wr >= MAP_SIZE || wc < 0 || wc >= MAP_SIZE) return -1;
    return wr * MAP_SIZE + wc;
}

// Prefetches the map, item and light rows under the view (see CRAFTAX_PREFETCH).
CRAFTAX_FN void prefetch_view(const GameState* s) {
    int l = s->player_level;
    int first_col = iclamp(s->player_position[1] - OBS_COLS / 2, 0, MAP_SIZE - 1);
    int last_col = iclamp(s->player_position[1] + OBS_COLS / 2, 0, MAP_SIZE - 1);
    for (int r = 0; r < OBS_ROWS; r++) {
        int wr = iclamp(s->player_position[0] - OBS_ROWS / 2 + r, 0, MAP_SIZE - 1);
        CRAFTAX_PREFETCH(&s->light_map[l][wr][first_col]);
        CRAFTAX_PREFETCH(&s->light_map[l][wr][last_col]);
        CRAFTAX_PREFETCH(&s->map[l][wr][first_col]);
        CRAFTAX_PREFETCH(&s->map[l][wr][last_col]);
        CRAFTAX_PREFETCH(&s->item_map[l][wr][first_col]);
        CRAFTAX_PREFETCH(&s->item_map[l][wr][last_col]);
    }
}

CRAFTAX_FN int is_boss_vulnerable(const GameState* s) {
    int l = s->player_level;
    int melee = 0, ranged = 0;
    for (int m = 0; m < MAX_MELEE_MOBS; m++) melee += s->melee_mobs.mask[l][m];
    for (int m = 0; m < MAX_RANGED_MOBS; m++) ranged += s->ranged_mobs.mask[l][m];
    return melee == 0 && ranged == 0 && s->boss_timesteps_to_spawn_this_round <= 0;
}

// x / 10 as the reference's observation computes it. Inside its jitted step XLA rewrites the
// division as a multiplication by 0.1f; the first observation of an episode is made of
// constants that XLA folds with an exact division. in_step selects the step's rounding.
CRAFTAX_FN float tenth(float x, int in_step) { return in_step ? x * 0.1f : x / 10.0f; }
CRAFTAX_FN float sqrt_count(int32_t n, int in_step) { return tenth(sqrtf((float)n), in_step); }

// The 51 scalars after the map: inventory, potions, intrinsics, direction, armour, special values.
CRAFTAX_FN void write_scalars(const GameState* s, float* out, int in_step) {
    const Inventory* inv = &s->inventory;
    int k = 0;
    out[k++] = sqrt_count(inv->wood, in_step);
    out[k++] = sqrt_count(inv->stone, in_step);
    out[k++] = sqrt_count(inv->coal, in_step);
    out[k++] = sqrt_count(inv->iron, in_step);
    out[k++] = sqrt_count(inv->diamond, in_step);
    out[k++] = sqrt_count(inv->sapphire, in_step);
    out[k++] = sqrt_count(inv->ruby, in_step);
    out[k++] = sqrt_count(inv->sapling, in_step);
    out[k++] = sqrt_count(inv->torches, in_step);
    out[k++] = sqrt_count(inv->arrows, in_step);
    out[k++] = (float)inv->books / 2.0f;
    out[k++] = (float)inv->pickaxe / 4.0f;
    out[k++] = (float)inv->sword / 4.0f;
    out[k++] = (float)s->sword_enchantment;
    out[k++] = (float)s->bow_enchantment;
    out[k++] = (float)inv->bow;
    for (int p = 0; p < NUM_POTIONS; p++) out[k++] = sqrt_count(inv->potions[p], in_step);
    out[k++] = tenth(s->player_health, in_step);
    out[k++] = tenth((float)s->player_food, in_step);
    out[k++] = tenth((float)s->player_drink, in_step);
    out[k++] = tenth((float)s->player_energy, in_step);
    out[k++] = tenth((float)s->player_mana, in_step);
    out[k++] = tenth((float)s->player_xp, in_step);
    out[k++] = tenth((float)s->player_dexterity, in_step);
    out[k++] = tenth((float)s->player_strength, in_step);
    out[k++] = tenth((float)s->player_intelligence, in_step);
    for (int d = 0; d < 4; d++) out[k++] = s->player_direction - 1 == d ? 1.0f : 0.0f;
    for (int a = 0; a < 4; a++) out[k++] = (float)inv->armour[a] / 2.0f;
    for (int a = 0; a < 4; a++) out[k++] = (float)s->armour_enchantments[a];
    out[k++] = s->light_level;
    out[k++] = (float)s->is_sleeping;
    out[k++] = (float)s->is_resting;
    out[k++] = (float)s->learned_spells[0];
    out[k++] = (float)s->learned_spells[1];
    out[k++] = tenth((float)s->player_level, in_step);
    out[k++] = s->monsters_killed[s->player_level] >= MONSTERS_KILLED_TO_CLEAR_LEVEL ? 1.0f : 0.0f;
    out[k++] = (float)is_boss_vulnerable(s);
}

// The full 8,268-float observation; in_step: see tenth().
CRAFTAX_FN void write_observation(const GameState* s, float* out, int in_step) {
    MobView view;
    build_mob_view(&view, s);
    int l = s->player_level;
    memset(out, 0, sizeof(float) * OBS_CELLS * OBS_CHANNELS);
    for (int r = 0; r < OBS_ROWS; r++) {
        for (int c = 0; c < OBS_COLS; c++) {
            int cell = r * OBS_COLS + c;
            int index = view_cell_index(s, r, c);
            if (index < 0 || !((&s->light_map[l][0][0])[index] > 0.05f)) continue;
            float* channels = out + cell * OBS_CHANNELS;
            channels[(&s->map[l][0][0])[index]] = 1.0f;
            channels[CHANNEL_ITEMS + (&s->item_map[l][0][0])[index]] = 1.0f;
            for (int k = 0; k < NUM_MOB_CLASSES; k++) {
                for (int t = 0; t < MOB_TYPES_PER_CLASS; t++) {
                    if (view.masks[cell][k] >> t & 1) channels[CHANNEL_MOBS + k * MOB_TYPES_PER_CLASS + t] = 1.0f;
                }
            }
            channels[CHANNEL_LIGHT] = 1.0f;
        }
    }
    write_scalars(s, out + OBS_CELLS * OBS_CHANNELS, in_step);
}

// The compact observation (COMPACT_OBS_BYTES bytes); in_step: see tenth().
CRAFTAX_FN void write_compact_observation(const GameState* s, uint8_t* out, int in_step) {
    MobView view;
    build_mob_view(&view, s);
    int l = s->player_level;
    memset(out, 0, COMPACT_MAP_BYTES);
    for (int r = 0; r < OBS_ROWS; r++) {
        for (int c = 0; c < OBS_COLS; c++) {
            int cell = r * OBS_COLS + c;
            int index = view_cell_index(s, r, c);
            if (index < 0 || !((&s->light_map[l][0][0])[index] > 0.05f)) continue;
            uint8_t* bytes = out + cell * COMPACT_CELL_BYTES;
            bytes[0] = (&s->map[l][0][0])[index];
            bytes[1] = (&s->item_map[l][0][0])[index];
            for (int k = 0; k < NUM_MOB_CLASSES; k++) bytes[2 + k] = view.masks[cell][k];
            bytes[7] = 1;
        }
    }
    float scalars[OBS_SCALARS];
    write_scalars(s, scalars, in_step);
    memcpy(out + COMPACT_MAP_BYTES, scalars, sizeof(scalars));
}

// Float k of the full observation, read off the compact one (the same information): the device
// env writes compact observations in its step and expands them with one coalesced pass.
CRAFTAX_FN float full_observation_from_compact(const uint8_t* compact, int k) {
    if (k >= OBS_CELLS * OBS_CHANNELS) {
        float scalar;
        memcpy(&scalar, compact + COMPACT_MAP_BYTES + sizeof(float) * (k - OBS_CELLS * OBS_CHANNELS), sizeof(float));
        return scalar;
    }
    const uint8_t* bytes = compact + (k / OBS_CHANNELS) * COMPACT_CELL_BYTES;
    int channel = k % OBS_CHANNELS;
    if (!bytes[7]) return 0.0f;
    if (channel < CHANNEL_ITEMS) return bytes[0] == channel ? 1.0f : 0.0f;
    if (channel < CHANNEL_MOBS) return bytes[1] == channel - CHANNEL_ITEMS ? 1.0f : 0.0f;
    if (channel < CHANNEL_LIGHT) {
        int mob = channel - CHANNEL_MOBS;
        return (bytes[2 + mob / MOB_TYPES_PER_CLASS] >> (mob % MOB_TYPES_PER_CLASS)) & 1 ? 1.0f : 0.0f;
    }
    return 1.0f;
}
