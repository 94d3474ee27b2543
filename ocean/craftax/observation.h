// Observation encoding, as render_craftax_symbolic in craftax/craftax/renderer.py: a 9 x 11 local
// view (83 channels per cell: 37 block one-hot, 5 item one-hot, 40 mob class x type, 1 light flag;
// everything but the light flag zeroed on dark cells) followed by 51 scalars. 8,268 floats.
//
// The compact option carries the same information in 996 bytes: per cell 8 uint8 (block id, item
// id, one bitmask of visible mob types per mob class, light flag; ids 0 on dark cells), then the
// same 51 scalars as little-endian float32.
#pragma once
#include "game_utils.h"

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

// The bytes of a compact observation's cell.
#define COMPACT_BLOCK 0
#define COMPACT_ITEM 1
#define COMPACT_MOBS 2
#define COMPACT_LIGHT 7
CRAFTAX_STATIC_ASSERT(COMPACT_MOBS + NUM_MOB_CLASSES == COMPACT_LIGHT && OBS_CELLS <= 128, "compact cell layout");
CRAFTAX_STATIC_ASSERT(COMPACT_MAP_BYTES % 4 == 0 && COMPACT_OBS_BYTES % 4 == 0, "compact observations are whole words");

// A 32-bit store into an observation. The device's observation rows start on 4-byte boundaries
// (COMPACT_OBS_BYTES is whole words), so it stores the word at once instead of byte by byte.
CRAFTAX_FN void store_word(uint8_t* out, uint32_t word) {
#ifdef __CUDA_ARCH__
    *(uint32_t*)out = word;
#else
    memcpy(out, &word, sizeof(word));
#endif
}

// A mob's part in the reference's scatter of the mob channels over the lit cells already written:
// the bit of its type is set at its view position when it is on screen and alive, and cleared
// there otherwise. Negative view coordinates wrap (jax index normalisation) and positions still
// outside the view are dropped, so a hidden mob can clear a visible one's bit; dark cells stay
// blank. cell is -1 where nothing is written, and also off only_row (the view row a device thread
// writes; -1 for all rows).
typedef struct {
    int cell;
    int on_screen;
    uint8_t bit;
    uint8_t mob_class;
} MobMark;

CRAFTAX_FN MobMark mob_mark(const uint64_t lit[2], int pr, int pc, const int32_t* position, uint8_t alive,
                            uint8_t type, int mob_class, int only_row) {
    int lr = position[0] - pr + OBS_ROWS / 2;
    int lc = position[1] - pc + OBS_COLS / 2;
    int r = lr < 0 ? lr + OBS_ROWS : lr;
    int c = lc < 0 ? lc + OBS_COLS : lc;
    int in_view = r >= 0 && r < OBS_ROWS && c >= 0 && c < OBS_COLS && (only_row < 0 || r == only_row);
    int cell = in_view ? r * OBS_COLS + c : 0;
    MobMark mark;
    mark.cell = in_view && (lit[cell >> 6] >> (cell & 63) & 1) ? cell : -1;
    mark.on_screen = lr >= 0 && lr < OBS_ROWS && lc >= 0 && lc < OBS_COLS && alive;
    mark.bit = (uint8_t)(1u << type);
    mark.mob_class = (uint8_t)mob_class;
    return mark;
}

// The marks of one mob class's count slots, into marks[n ...]; returns the next free index.
CRAFTAX_FN int mark_mob_class(MobMark* marks, int n, const uint64_t lit[2], int pr, int pc, const int32_t (*position)[2],
                              const uint8_t* mask, const uint8_t* type_id, int count, int mob_class, int only_row) {
    for (int m = 0; m < count; m++) marks[n + m] = mob_mark(lit, pr, pc, position[m], mask[m], type_id[m], mob_class, only_row);
    return n + count;
}

#define VIEW_MOB_SLOTS (MAX_MELEE_MOBS + MAX_PASSIVE_MOBS + MAX_RANGED_MOBS + MAX_MOB_PROJECTILES + MAX_PLAYER_PROJECTILES)

// Every mob's mark is worked out before any is written, so that the mobs' loads are in flight
// together (the output may alias the state as far as the compiler knows); the marks are then
// written in the reference's scan order. Only a handful reach the view, so their bits are
// read-modify-written in place.
CRAFTAX_FN void scatter_mobs(uint8_t* out, const uint64_t lit[2], const GameState* s, int only_row) {
    int l = s->player_level, pr = s->player_position[0], pc = s->player_position[1];
    MobMark marks[VIEW_MOB_SLOTS];
    int n = mark_mob_class(marks, 0, lit, pr, pc, s->melee_mobs.position[l], s->melee_mobs.mask[l],
                           s->melee_mobs.type_id[l], MAX_MELEE_MOBS, 0, only_row);
    n = mark_mob_class(marks, n, lit, pr, pc, s->passive_mobs.position[l], s->passive_mobs.mask[l],
                       s->passive_mobs.type_id[l], MAX_PASSIVE_MOBS, 1, only_row);
    n = mark_mob_class(marks, n, lit, pr, pc, s->ranged_mobs.position[l], s->ranged_mobs.mask[l],
                       s->ranged_mobs.type_id[l], MAX_RANGED_MOBS, 2, only_row);
    n = mark_mob_class(marks, n, lit, pr, pc, s->mob_projectiles.position[l], s->mob_projectiles.mask[l],
                       s->mob_projectiles.type_id[l], MAX_MOB_PROJECTILES, 3, only_row);
    mark_mob_class(marks, n, lit, pr, pc, s->player_projectiles.position[l], s->player_projectiles.mask[l],
                   s->player_projectiles.type_id[l], MAX_PLAYER_PROJECTILES, 4, only_row);
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < VIEW_MOB_SLOTS; k++) {
        if (marks[k].cell < 0) continue;
        uint8_t* bits = out + marks[k].cell * COMPACT_CELL_BYTES + COMPACT_MOBS + marks[k].mob_class;
        *bits = marks[k].on_screen ? (uint8_t)(*bits | marks[k].bit) : (uint8_t)(*bits & ~marks[k].bit);
    }
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

#ifdef CRAFTAX_SSE2
CRAFTAX_STATIC_ASSERT(OBS_COLS == 11 && COMPACT_CELL_BYTES == 8 && COMPACT_LIGHT == 7,
                      "the SSE2 row: 11 cells of two words, the light flag the second's top byte");
// write_compact_view_row's cells on the host, 16 columns at a time: map and items are the view
// row's first cell in the map and item rows, out the row's first cell. Reads 16 bytes from each:
// past the map row's end they run into the next row or the next map of GameState, never past it.
static inline void write_compact_view_row_sse2(const uint8_t* map, const uint8_t* items, uint32_t row_lit, uint8_t* out) {
    __m128i blocks = _mm_loadu_si128((const __m128i*)map), item_ids = _mm_loadu_si128((const __m128i*)items);
    // 16-bit lanes: 0xFFFF where the column is lit (row_lit holds columns 0-10 only).
    __m128i lit_bits = _mm_set1_epi16((short)row_lit);
    __m128i low_columns = _mm_setr_epi16(1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7);
    __m128i high_columns = _mm_slli_epi16(low_columns, 8);
    __m128i lit_low = _mm_cmpeq_epi16(_mm_and_si128(lit_bits, low_columns), low_columns);     // columns 0-7
    __m128i lit_high = _mm_cmpeq_epi16(_mm_and_si128(lit_bits, high_columns), high_columns);  // columns 8-15
    // Per column the 16 bits block | item << 8, zeroed where dark.
    __m128i ids_low = _mm_and_si128(_mm_unpacklo_epi8(blocks, item_ids), lit_low);
    __m128i ids_high = _mm_and_si128(_mm_unpackhi_epi8(blocks, item_ids), lit_high);
    // Columns 0-3, 4-7 and 8-11 as 32-bit words: the ids word and the light word of each cell.
    __m128i zero = _mm_setzero_si128(), light = _mm_set1_epi32(1 << 24);
    __m128i ids[3] = {_mm_unpacklo_epi16(ids_low, zero), _mm_unpackhi_epi16(ids_low, zero), _mm_unpacklo_epi16(ids_high, zero)};
    __m128i lights[3] = {_mm_and_si128(_mm_unpacklo_epi16(lit_low, lit_low), light),
                         _mm_and_si128(_mm_unpackhi_epi16(lit_low, lit_low), light),
                         _mm_and_si128(_mm_unpacklo_epi16(lit_high, lit_high), light)};
    for (int quad = 0; quad < 3; quad++) {
        uint8_t* cells = out + 4 * COMPACT_CELL_BYTES * quad;
        _mm_storeu_si128((__m128i*)cells, _mm_unpacklo_epi32(ids[quad], lights[quad]));  // two cells
        __m128i next_two = _mm_unpackhi_epi32(ids[quad], lights[quad]);
        if (quad < 2) {
            _mm_storeu_si128((__m128i*)(cells + 2 * COMPACT_CELL_BYTES), next_two);
        } else {
            _mm_storel_epi64((__m128i*)(cells + 2 * COMPACT_CELL_BYTES), next_two);  // column 10 alone
        }
    }
}
#endif

// View row r of the compact observation, mobs aside: each cell's block and item ids and light
// flag (ids 0 on dark cells). The row's map, item and light values are all loaded before any of
// its cells is stored, so the loads are in flight together (the output may alias the state as
// far as the compiler knows). Returns the row's lit cells, bit c for column c.
CRAFTAX_FN uint32_t write_compact_view_row(const GameState* s, uint8_t* out, int r) {
    int l = s->player_level;
    int wr = s->player_position[0] - OBS_ROWS / 2 + r, left = s->player_position[1] - OBS_COLS / 2;
    int row_inside = wr >= 0 && wr < MAP_SIZE;
    // The row's lit cells at once: the map row's light bits shifted to the view's first column;
    // columns off the map take no bits (a shift past either end leaves none).
    uint64_t lit_bits = row_inside ? s->lit_rows[l][wr] : 0;
    uint32_t row_lit = (uint32_t)((left >= 0 ? lit_bits >> left : lit_bits << -left) & ((1u << OBS_COLS) - 1));
    // Dark cells (cells off the map are dark) take column 0 of a row on the map, so every read
    // stays in the map; their ids are zeroed.
    const uint8_t* map = &s->map[l][row_inside ? wr : 0][0];
    const uint8_t* items = &s->item_map[l][row_inside ? wr : 0][0];
#ifdef CRAFTAX_SSE2
    if (left >= 0) {
        write_compact_view_row_sse2(map + left, items + left, row_lit, out + r * OBS_COLS * COMPACT_CELL_BYTES);
        return row_lit;
    }
#endif
    uint32_t ids[OBS_COLS];  // block and item id, bytes 0 and 1 of the cell
#ifdef __CUDA_ARCH__
    // The row's map and item bytes as the four aligned words of each that hold them, shifted so
    // that byte c of the words is column c: eight loads, not twenty-two. Words before the map row
    // hold dark columns only and are not read; words past its end read into the next row or the
    // next map of GameState, and their columns are dark too.
    CRAFTAX_STATIC_ASSERT(OBS_COLS <= 13 && MAP_SIZE % 4 == 0, "a view row's bytes fit four aligned words");
    int first_word = left & ~3;
    uint32_t shift = (uint32_t)(left - first_word) * 8u;
    uint32_t map_words[5], item_words[5];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        int offset = first_word + 4 * k;
        map_words[k] = offset >= 0 ? load_word32(map + offset) : 0u;
        item_words[k] = offset >= 0 ? load_word32(items + offset) : 0u;
    }
    map_words[4] = item_words[4] = 0u;
#pragma unroll
    for (int c = 0; c < OBS_COLS; c++) {
        int k = c / 4, byte = 8 * (c % 4);
        uint32_t block = __funnelshift_r(map_words[k], map_words[k + 1], shift) >> byte & 0xFFu;
        uint32_t item = __funnelshift_r(item_words[k], item_words[k + 1], shift) >> byte & 0xFFu;
        ids[c] = row_lit >> c & 1 ? block | item << 8 : 0u;
    }
#else
    for (int c = 0; c < OBS_COLS; c++) {
        int is_lit = row_lit >> c & 1;
        int column = is_lit ? left + c : 0;
        ids[c] = is_lit ? (uint32_t)map[column] | (uint32_t)items[column] << 8 : 0u;
    }
#endif
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int c = 0; c < OBS_COLS; c++) {
        int cell = r * OBS_COLS + c;
        store_word(out + cell * COMPACT_CELL_BYTES, ids[c]);
        store_word(out + cell * COMPACT_CELL_BYTES + 4, (row_lit >> c & 1) << 8 * (COMPACT_LIGHT - 4));
    }
    return row_lit;
}

// Marks view row r's lit cells (write_compact_view_row's bits) in the view's cell bitset: the
// row's bits land at bit r * OBS_COLS of the 128, in one word or across the two.
CRAFTAX_FN void mark_lit_row(uint64_t lit[2], int r, uint32_t row_lit) {
    int first = r * OBS_COLS;
    if (first < 64) lit[0] |= (uint64_t)row_lit << first;
    if (first + OBS_COLS > 64) lit[1] |= first >= 64 ? (uint64_t)row_lit << (first - 64) : (uint64_t)row_lit >> (64 - first);
}

// The 51 scalars after the compact view, as little-endian float32 words.
CRAFTAX_FN void write_compact_scalars(const GameState* s, uint8_t* out, int in_step) {
    float scalars[OBS_SCALARS];
    write_scalars(s, scalars, in_step);
    for (int k = 0; k < OBS_SCALARS; k++) {
        uint32_t bits;
        memcpy(&bits, &scalars[k], sizeof(bits));
        store_word(out + COMPACT_MAP_BYTES + 4 * k, bits);
    }
}

// The compact observation (COMPACT_OBS_BYTES bytes); in_step: see tenth().
CRAFTAX_FN void write_compact_observation(const GameState* s, uint8_t* out, int in_step) {
    uint64_t lit[2] = {0, 0};
    for (int r = 0; r < OBS_ROWS; r++) mark_lit_row(lit, r, write_compact_view_row(s, out, r));
    scatter_mobs(out, lit, s, -1);
    write_compact_scalars(s, out, in_step);
}

// The compact observation in parts that threads of their own can write side by side: part r <
// OBS_ROWS is view row r with the mobs on it, part OBS_ROWS the scalars. Together they write
// what write_compact_observation does.
#define COMPACT_OBSERVATION_PARTS (OBS_ROWS + 1)
CRAFTAX_FN void write_compact_observation_part(const GameState* s, uint8_t* out, int part, int in_step) {
    if (part == OBS_ROWS) {
        write_compact_scalars(s, out, in_step);
        return;
    }
    uint64_t lit[2] = {0, 0};
    mark_lit_row(lit, part, write_compact_view_row(s, out, part));
    scatter_mobs(out, lit, s, part);
}

// The full 8,268-float observation (in_step: see tenth()): the compact one's cells as one-hot
// channels, then the same scalars.
CRAFTAX_FN void write_observation(const GameState* s, float* out, int in_step) {
    uint8_t compact[COMPACT_OBS_BYTES];
    write_compact_observation(s, compact, in_step);
    memset(out, 0, sizeof(float) * OBS_CELLS * OBS_CHANNELS);
    for (int cell = 0; cell < OBS_CELLS; cell++) {
        const uint8_t* bytes = compact + cell * COMPACT_CELL_BYTES;
        if (!bytes[COMPACT_LIGHT]) continue;
        float* channels = out + cell * OBS_CHANNELS;
        channels[bytes[COMPACT_BLOCK]] = 1.0f;
        channels[CHANNEL_ITEMS + bytes[COMPACT_ITEM]] = 1.0f;
        for (int k = 0; k < NUM_MOB_CLASSES; k++) {
            for (int t = 0; t < MOB_TYPES_PER_CLASS; t++) {
                if (bytes[COMPACT_MOBS + k] >> t & 1) channels[CHANNEL_MOBS + k * MOB_TYPES_PER_CLASS + t] = 1.0f;
            }
        }
        channels[CHANNEL_LIGHT] = 1.0f;
    }
    memcpy(out + OBS_CELLS * OBS_CHANNELS, compact + COMPACT_MAP_BYTES, sizeof(float) * OBS_SCALARS);
}

// The full observation's channels read off the compact observation (the same information), for
// the device env, which writes compact observations in its step and expands them in one coalesced
// pass. The channels' 0/1 values are the bits of CHANNEL_WORDS 32-bit words, float k being bit
// k % 32 of word k / 32: the expansion computes a row's words once and then writes each float
// with a shift and a mask.
#define CHANNEL_VALUES (OBS_CELLS * OBS_CHANNELS)
#define CHANNEL_WORDS ((CHANNEL_VALUES + 31) / 32)

// Eight bits into a cell's channel bits at channel position (they may straddle two words).
CRAFTAX_FN void or_channel_bits(uint32_t bits[4], int position, uint32_t byte) {
    uint64_t shifted = (uint64_t)byte << (position & 31);
    bits[position >> 5] |= (uint32_t)shifted;
    bits[(position >> 5) + 1] |= (uint32_t)(shifted >> 32);
}

// One cell's OBS_CHANNELS channels as bits (channel c is bit c % 32 of bits[c / 32]): its block,
// its item, its mobs (each class's byte holds that class's types as bits) and the light channel,
// or none at all when the cell is dark. bits[3] is spare room for or_channel_bits.
CRAFTAX_FN void cell_channel_bits(const uint8_t* cell, uint32_t bits[4]) {
    CRAFTAX_STATIC_ASSERT(MOB_TYPES_PER_CLASS == 8, "a mob class's types are the bits of one byte");
    CRAFTAX_STATIC_ASSERT(OBS_CHANNELS <= 96, "a cell's channels fit three words");
    bits[0] = bits[1] = bits[2] = bits[3] = 0;
    if (!cell[COMPACT_LIGHT]) return;
    or_channel_bits(bits, cell[COMPACT_BLOCK], 1);
    or_channel_bits(bits, CHANNEL_ITEMS + cell[COMPACT_ITEM], 1);
    for (int k = 0; k < NUM_MOB_CLASSES; k++) {
        or_channel_bits(bits, CHANNEL_MOBS + k * MOB_TYPES_PER_CLASS, cell[COMPACT_MOBS + k]);
    }
    or_channel_bits(bits, CHANNEL_LIGHT, 1);
}

// Word w of the channel bits: from the cell that bit 32 w falls in and, where the word runs past
// that cell's last channel, from the next cell (a cell's 83 channels outnumber a word's bits).
CRAFTAX_FN uint32_t channel_word(const uint8_t* compact, int w) {
    int cell = 32 * w / OBS_CHANNELS, offset = 32 * w - cell * OBS_CHANNELS;
    uint32_t bits[4];
    cell_channel_bits(compact + cell * COMPACT_CELL_BYTES, bits);
    int low = offset >> 5;
    uint32_t word = (uint32_t)((((uint64_t)bits[low + 1] << 32) | bits[low]) >> (offset & 31));
    int taken = OBS_CHANNELS - offset;
    if (taken < 32 && cell + 1 < OBS_CELLS) {
        cell_channel_bits(compact + (cell + 1) * COMPACT_CELL_BYTES, bits);
        word |= bits[0] << taken;
    }
    return word;
}

// Scalar i of the full observation (its float OBS_CELLS * OBS_CHANNELS + i), as the compact one stores it.
CRAFTAX_FN float observation_scalar(const uint8_t* compact, int i) {
    float scalar;
    memcpy(&scalar, compact + COMPACT_MAP_BYTES + sizeof(float) * i, sizeof(float));
    return scalar;
}

CRAFTAX_FN float full_observation_from_compact(const uint8_t* compact, int k) {
    if (k >= CHANNEL_VALUES) return observation_scalar(compact, k - CHANNEL_VALUES);
    return (float)(channel_word(compact, k >> 5) >> (k & 31) & 1);
}
