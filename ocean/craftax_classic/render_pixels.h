// Pixel frames of Craftax-Classic, as its own render_craftax_pixels (craftax/craftax_classic/
// renderer.py) draws them: the 7 x 9 view above a 2-row inventory, each cell block x block
// pixels, float32 RGB. The reference computes the frame in float32 inside a jitted program; this
// reproduces its values bit for bit, including where XLA fuses a multiply and an add into one FMA.
//
// The textures are the reference's Classic PNGs, decoded and resized (nearest neighbour, as PIL
// does) by the caller into one RGBA atlas in CLASSIC_RENDER_TEXTURE_FILES order. The player's and
// the mobs' alpha stays 0 .. 255 (the reference blends them with alpha / 255); every other
// texture's alpha is reduced to 0 or 1 (the reference keeps only fully opaque pixels).
#pragma once
#include "../craftax/canvas.h"
#include "state.h"

#define CLASSIC_RENDER_INVENTORY_ROWS 2
#define CLASSIC_RENDER_ROWS (CLASSIC_VIEW_ROWS + CLASSIC_RENDER_INVENTORY_ROWS)

// Atlas slots. Full-size textures (block x block) first, then the inventory's smaller icons
// (int(0.8 block) square), then the digits (int(0.6 block) square).
enum ClassicRenderTexture {
    CTEX_BLOCK = 0,
    CTEX_PLAYER = CTEX_BLOCK + CLASSIC_NUM_BLOCKS,  // facing left, right, up, down; asleep
    CTEX_ZOMBIE = CTEX_PLAYER + 5,
    CTEX_COW,
    CTEX_SKELETON,
    CTEX_ARROW,
    CTEX_FULL_END,
    // Inventory icons.
    CTEX_ICON_MATERIAL = CTEX_FULL_END,  // wood, stone, coal, iron, diamond
    CTEX_ICON_HEALTH = CTEX_ICON_MATERIAL + 5,
    CTEX_ICON_FOOD,
    CTEX_ICON_DRINK,
    CTEX_ICON_ENERGY,
    CTEX_ICON_SAPLING,
    CTEX_ICON_PICKAXE,  // wood, stone, iron
    CTEX_ICON_SWORD = CTEX_ICON_PICKAXE + 3,  // wood, stone, iron
    CTEX_ICON_END = CTEX_ICON_SWORD + 3,
    CTEX_DIGIT = CTEX_ICON_END,  // 1 .. 9 (the reference draws nothing for 0)
    CLASSIC_RENDER_TEXTURE_COUNT = CTEX_DIGIT + 9,
};

// The file of each slot, as load_all_textures_given_size names them; NULL where the reference
// draws a plain colour instead (out of bounds: grey 128).
static const char* const CLASSIC_RENDER_TEXTURE_FILES[CLASSIC_RENDER_TEXTURE_COUNT] = {
    // Blocks, in BlockType order.
    "debug_tile.png", NULL, "grass.png", "water.png", "stone.png", "tree.png", "wood.png", "path.png", "coal.png",
    "iron.png", "diamond.png", "table.png", "furnace.png", "sand.png", "lava.png", "plant_on_grass.png",
    "ripe_plant_on_grass.png",
    "player-left.png", "player-right.png", "player-up.png", "player-down.png", "player-sleep.png",
    "zombie.png", "cow.png", "skeleton.png", "arrow-up.png",
    // Inventory icons.
    "wood.png", "stone.png", "coal.png", "iron.png", "diamond.png",
    "health.png", "food.png", "drink.png", "energy.png", "sapling.png",
    "wood_pickaxe.png", "stone_pickaxe.png", "iron_pickaxe.png",
    "wood_sword.png", "stone_sword.png", "iron_sword.png",
    "1.png", "2.png", "3.png", "4.png", "5.png", "6.png", "7.png", "8.png", "9.png",
};

// Whether a slot keeps the file's alpha (0 .. 255) instead of reducing it to 0 or 1: the
// reference loads the player and the mobs with clamp_alpha=False.
CRAFTAX_FN int classic_texture_keeps_alpha(int slot) { return slot >= CTEX_PLAYER && slot <= CTEX_SKELETON; }

// Sizes as the reference computes them in Python: int(block * 0.8) and int(block * 0.6).
CRAFTAX_FN int classic_icon_size(int block) { return (int)(block * 0.8); }
CRAFTAX_FN int classic_digit_size(int block) { return (int)(block * 0.6); }

// The side in pixels of a slot's texture.
CRAFTAX_FN int classic_texture_size(int slot, int block) {
    if (slot < CTEX_FULL_END) return block;
    if (slot < CTEX_ICON_END) return classic_icon_size(block);
    return classic_digit_size(block);
}

// Offset in bytes of a slot's RGBA texture in the atlas; CLASSIC_RENDER_TEXTURE_COUNT gives its size.
CRAFTAX_FN long classic_texture_offset(int slot, int block) {
    long full = (long)block * block * 4, icon = (long)classic_icon_size(block) * classic_icon_size(block) * 4;
    long digit = (long)classic_digit_size(block) * classic_digit_size(block) * 4;
    if (slot <= CTEX_FULL_END) return slot * full;
    if (slot <= CTEX_ICON_END) return CTEX_FULL_END * full + (slot - CTEX_FULL_END) * icon;
    return CTEX_FULL_END * full + (CTEX_ICON_END - CTEX_FULL_END) * icon + (slot - CTEX_ICON_END) * digit;
}

typedef struct {
    int block;             // pixels per cell side
    const uint8_t* atlas;  // classic_texture_offset(CLASSIC_RENDER_TEXTURE_COUNT, block) bytes
} ClassicTextures;

CRAFTAX_FN int classic_render_height(int block) { return CLASSIC_RENDER_ROWS * block; }
CRAFTAX_FN int classic_render_width(int block) { return CLASSIC_VIEW_COLS * block; }

CRAFTAX_FN const uint8_t* classic_texture(const ClassicTextures* t, int slot) {
    return t->atlas + classic_texture_offset(slot, t->block);
}

// A texture with alpha 0 .. 255 over the view's cell (r, c): each pixel times 1 - alpha / 255,
// plus the texture's RGB times alpha / 255, the product of the texture fused into the sum.
CRAFTAX_FN void blend_cell(const Canvas* canvas, int block, int r, int c, const uint8_t* texture) {
    int first_row, end_row, first_col, end_col;
    clip_span(r * block, block, canvas->top, canvas->bottom, &first_row, &end_row);
    clip_span(c * block, block, canvas->left, canvas->right, &first_col, &end_col);
    for (int i = first_row; i < end_row; i++) {
        for (int j = first_col; j < end_col; j++) {
            float* out = canvas_pixel(canvas, r * block + i, c * block + j);
            const uint8_t* px = texture + ((long)i * block + j) * 4;
            float alpha = (float)px[3] / 255.0f;
            for (int ch = 0; ch < 3; ch++) out[ch] = fmaf((float)px[ch], alpha, out[ch] * (1.0f - alpha));
        }
    }
}

// Whether a mob is alive and in view, and its view cell (r, c).
CRAFTAX_FN int classic_view_cell(const ClassicState* s, const int32_t position[2], uint8_t alive, int* r, int* c) {
    *r = position[0] - s->player_position[0] + CLASSIC_VIEW_ROWS / 2;
    *c = position[1] - s->player_position[1] + CLASSIC_VIEW_COLS / 2;
    return alive && *r >= 0 && *r < CLASSIC_VIEW_ROWS && *c >= 0 && *c < CLASSIC_VIEW_COLS;
}

CRAFTAX_FN void blend_mobs(const Canvas* canvas, const ClassicTextures* t, const ClassicState* s,
                           const int32_t (*position)[2], const uint8_t* mask, int count, int slot) {
    for (int m = 0; m < count; m++) {
        int r, c;
        if (classic_view_cell(s, position[m], mask[m], &r, &c)) blend_cell(canvas, t->block, r, c, classic_texture(t, slot));
    }
}

// night_noise_intensity_texture: 1 - exp(-0.5 (x^2 + y^2) / 0.5^2) over np.linspace(-1, 1, n)
// grids of the view's rows and columns, computed in float64 as numpy does, then stored as float32.
CRAFTAX_FN double classic_linspace(int i, int n) {
    if (i == n - 1) return 1.0;
    return i * (2.0 / (n - 1)) + -1.0;
}

CRAFTAX_FN float classic_night_noise_weight(int y, int x, int height, int width) {
    double a = classic_linspace(y, height), b = classic_linspace(x, width);
    return (float)(1.0 - exp(-0.5 * (a * a + b * b) / (0.5 * 0.5)));
}

// The reference's luminance 0.299 r + 0.587 g + 0.114 b, fused as XLA fuses it: the red product
// into the sum with the green one, then the blue product into that.
CRAFTAX_FN float classic_luminance(const float p[3]) { return fmaf(0.114f, p[2], fmaf(0.299f, p[0], 0.587f * p[1])); }

// Night and sleep over the view's pixels that the canvas holds, in place. The night's noise
// weighs nothing while the daylight is at least half; the rest of the night (greyed, tinted and
// blended in by 1 - daylight) applies whenever the daylight is below 1.
CRAFTAX_FN void classic_shade_view(const Canvas* canvas, int block, float daylight, int sleeping, Key key) {
    float night_intensity = 2.0f * (0.5f - daylight);
    if (night_intensity < 0.0f) night_intensity = 0.0f;
    const float tint_half[3] = {0.0f, 8.0f, 32.0f};
    const float sleep_tint_half[3] = {0.0f, 0.0f, 8.0f};
    int height = CLASSIC_VIEW_ROWS * block, width = CLASSIC_VIEW_COLS * block;
    int end_row = canvas->bottom < height ? canvas->bottom : height;
    for (int y = canvas->top; y < end_row; y++) {
        for (int x = canvas->left; x < canvas->right; x++) {
            float* px = canvas_pixel(canvas, y, x);
            float night[3] = {px[0], px[1], px[2]};
            if (daylight < 0.5f) {
                float mask = night_intensity * classic_night_noise_weight(y, x, height, width);
                float noise = night_noise(key, (uint32_t)(y * width + x));
                for (int ch = 0; ch < 3; ch++) night[ch] = fmaf(mask, noise, (1.0f - mask) * px[ch]);
            }
            float lum = classic_luminance(night);
            for (int ch = 0; ch < 3; ch++) {
                float enhanced = fmaf(night[ch], 0.4f, 0.6f * lum);
                float tinted = fmaf(0.5f, enhanced, tint_half[ch]);
                px[ch] = fmaf(daylight, px[ch], (1.0f - daylight) * tinted);
            }
            if (sleeping) {
                float grey = 0.5f * classic_luminance(px);
                for (int ch = 0; ch < 3; ch++) px[ch] = grey + sleep_tint_half[ch];
            }
        }
    }
}

// The view: blocks, the player, zombies, cows, skeletons, arrows; then night and sleep.
CRAFTAX_FN void classic_render_view(const ClassicState* s, const ClassicTextures* t, const Canvas* canvas) {
    int block = t->block;
    if (canvas->top >= CLASSIC_VIEW_ROWS * block) return;
    int first_row = canvas->top / block, first_col = canvas->left / block;
    int end_row = (canvas->bottom + block - 1) / block, end_col = (canvas->right + block - 1) / block;
    if (end_row > CLASSIC_VIEW_ROWS) end_row = CLASSIC_VIEW_ROWS;
    for (int r = first_row; r < end_row; r++) {
        for (int c = first_col; c < end_col; c++) {
            int wr = s->player_position[0] - CLASSIC_VIEW_ROWS / 2 + r, wc = s->player_position[1] - CLASSIC_VIEW_COLS / 2 + c;
            int inside = wr >= 0 && wr < CLASSIC_MAP_SIZE && wc >= 0 && wc < CLASSIC_MAP_SIZE;
            int b = inside ? s->map[wr][wc] : (int)CB_OUT_OF_BOUNDS;
            // A block id outside BlockType matches none of the textures the reference sums.
            if (b == CB_OUT_OF_BOUNDS || b >= CLASSIC_NUM_BLOCKS) {
                fill_rectangle(canvas, r * block, c * block, block, block, b == CB_OUT_OF_BOUNDS ? 128.0f : 0.0f);
            } else {
                draw_texture(canvas, r * block, c * block, classic_texture(t, CTEX_BLOCK + b), block, DRAW_RGB, 0);
            }
        }
    }
    int facing = s->is_sleeping ? 4 : table_index(s->player_direction - 1, 5);
    blend_cell(canvas, block, CLASSIC_VIEW_ROWS / 2, CLASSIC_VIEW_COLS / 2, classic_texture(t, CTEX_PLAYER + facing));
    blend_mobs(canvas, t, s, s->zombies.position, s->zombies.mask, CLASSIC_MAX_ZOMBIES, CTEX_ZOMBIE);
    blend_mobs(canvas, t, s, s->cows.position, s->cows.mask, CLASSIC_MAX_COWS, CTEX_COW);
    blend_mobs(canvas, t, s, s->skeletons.position, s->skeletons.mask, CLASSIC_MAX_SKELETONS, CTEX_SKELETON);
    for (int m = 0; m < CLASSIC_MAX_ARROWS; m++) {
        int r, c;
        if (!classic_view_cell(s, s->arrows.position[m], s->arrows.mask[m], &r, &c)) continue;
        const int32_t* direction = s->arrow_directions[m];
        int orientation = (direction[0] > 0 || direction[1] > 0 ? TEXTURE_FLIP : 0) | (direction[1] != 0 ? TEXTURE_TRANSPOSE : 0);
        draw_texture(canvas, r * block, c * block, classic_texture(t, CTEX_ARROW), block, DRAW_BLEND, orientation);
    }
    classic_shade_view(canvas, block, s->light_level, s->is_sleeping, s->state_rng);
}

// The frame row where the inventory starts.
CRAFTAX_FN int classic_inventory_top(int block) { return CLASSIC_VIEW_ROWS * block; }

// The icon of inventory cell (x, y) when `count` is positive, else the empty (black) icon, then
// the count's digit in the cell's bottom right corner (none for 0; 9 for anything above).
CRAFTAX_FN void draw_classic_item(const Canvas* canvas, const ClassicTextures* t, int x, int y, int32_t count, int slot,
                                  int mode) {
    int block = t->block, size = classic_icon_size(block), digit_size = classic_digit_size(block);
    int space = (block - size) / 2 - 1, top = classic_inventory_top(block) + y * block;
    draw_texture(canvas, top + space, x * block + space, count > 0 ? classic_texture(t, slot) : NULL, size,
                 count > 0 ? mode : DRAW_EMPTY, 0);
    int digit = table_index(count, 10);
    if (digit == 0) return;
    int corner = block - digit_size - 1;
    draw_texture(canvas, top + corner, x * block + corner, classic_texture(t, CTEX_DIGIT + digit - 1), digit_size,
                 DRAW_BLEND, 0);
}

// The inventory rows (CLASSIC_RENDER_INVENTORY_ROWS x CLASSIC_VIEW_COLS cells).
CRAFTAX_FN void classic_render_inventory(const ClassicState* s, const ClassicTextures* t, const Canvas* canvas) {
    const ClassicInventory* inv = &s->inventory;
    int block = t->block;
    if (canvas->bottom <= classic_inventory_top(block)) return;
    fill_rectangle(canvas, classic_inventory_top(block), 0, CLASSIC_RENDER_INVENTORY_ROWS * block,
                   classic_render_width(block), 0.0f);
    const int32_t needs[4] = {s->player_health, s->player_food, s->player_drink, s->player_energy};
    for (int k = 0; k < 4; k++) draw_classic_item(canvas, t, k, 0, needs[k], CTEX_ICON_HEALTH + k, DRAW_RGB);
    const int32_t materials[5] = {inv->wood, inv->stone, inv->coal, inv->iron, inv->diamond};
    const int material_cells[5][2] = {{5, 0}, {6, 0}, {7, 0}, {8, 0}, {0, 1}};
    for (int k = 0; k < 5; k++) {
        draw_classic_item(canvas, t, material_cells[k][0], material_cells[k][1], materials[k], CTEX_ICON_MATERIAL + k,
                          DRAW_RGB);
    }
    draw_classic_item(canvas, t, 4, 0, inv->sapling, CTEX_ICON_SAPLING, DRAW_RGB);
    // The wooden pickaxe is drawn without its alpha, the other tools with it.
    const int32_t tools[6] = {inv->wood_pickaxe, inv->stone_pickaxe, inv->iron_pickaxe,
                              inv->wood_sword, inv->stone_sword, inv->iron_sword};
    for (int k = 0; k < 6; k++) {
        draw_classic_item(canvas, t, 1 + k, 1, tools[k], CTEX_ICON_PICKAXE + k, k == 0 ? DRAW_RGB : DRAW_PREMULTIPLIED);
    }
}

// The whole frame: classic_render_height(block) x classic_render_width(block) x 3 float32 values.
CRAFTAX_FN void classic_render_pixels(const ClassicState* s, const ClassicTextures* t, float* frame) {
    int height = classic_render_height(t->block), width = classic_render_width(t->block);
    Canvas canvas = {frame, width, 0, 0, height, width};
    classic_render_view(s, t, &canvas);
    classic_render_inventory(s, t, &canvas);
}

// The frame as bytes: each value truncated toward zero, as numpy's astype(uint8) converts it.
// `scratch` holds one float frame.
CRAFTAX_FN void classic_render_frame(const ClassicState* s, const ClassicTextures* t, float* scratch, uint8_t* frame) {
    classic_render_pixels(s, t, scratch);
    long values = (long)classic_render_height(t->block) * classic_render_width(t->block) * 3;
    for (long k = 0; k < values; k++) frame[k] = (uint8_t)scratch[k];
}
