// Pixel frames of the game, as render_craftax_pixels (craftax/craftax/renderer.py) draws them: the
// 9 x 11 view above a 4-row inventory, each cell block x block pixels, float32 RGB in [0, 255].
// The reference computes the frame in float32 inside a jitted program; this reproduces its values
// bit for bit, including where XLA fuses a multiply and an add into one FMA (the night blend).
//
// The textures are the reference's PNGs, decoded and resized (nearest neighbour, as PIL does) by
// the caller into one RGBA atlas in RENDER_TEXTURE_FILES order, alpha already reduced to 0 or 1
// (the reference keeps only fully opaque pixels). Everything here is CRAFTAX_FN, so the device
// build draws frames from the same source. The host draws a whole frame at once, each draw over
// the pixels it covers in turn; a device thread draws a few pixels of a row, making every draw of
// the frame clipped to them (a Canvas of those pixels), so that each pixel's value comes from the
// same operations in the same order.
#pragma once
#include "canvas.h"
#include "observation.h"

#define RENDER_INVENTORY_ROWS 4
#define RENDER_ROWS (OBS_ROWS + RENDER_INVENTORY_ROWS)

// Atlas slots. Full-size textures (block x block) first, then the inventory's smaller icons
// (int(0.8 block) square), then the digits (int(0.4 block) square).
enum RenderTexture {
    TEX_BLOCK = 0,
    TEX_ITEM = TEX_BLOCK + NUM_BLOCK_TYPES,
    TEX_PLAYER = TEX_ITEM + NUM_ITEM_TYPES,  // facing left, right, up, down; asleep
    TEX_MELEE = TEX_PLAYER + 5,
    TEX_PASSIVE = TEX_MELEE + MOB_TYPES_PER_CLASS,
    TEX_RANGED = TEX_PASSIVE + 3,
    TEX_PROJECTILE = TEX_RANGED + MOB_TYPES_PER_CLASS,
    TEX_FULL_END = TEX_PROJECTILE + MOB_TYPES_PER_CLASS,
    // Inventory icons.
    TEX_ICON_MATERIAL = TEX_FULL_END,  // wood, stone, coal, iron, diamond, sapphire, ruby
    TEX_ICON_HEALTH = TEX_ICON_MATERIAL + 7,
    TEX_ICON_FOOD,
    TEX_ICON_DRINK,
    TEX_ICON_ENERGY,
    TEX_ICON_MANA,
    TEX_ICON_PICKAXE,                   // wood, stone, iron, diamond
    TEX_ICON_SWORD = TEX_ICON_PICKAXE + 4,
    TEX_ICON_ARMOUR = TEX_ICON_SWORD + 4,  // iron then diamond: helmet, chestplate, pants, boots
    TEX_ICON_BOW = TEX_ICON_ARMOUR + 8,
    TEX_ICON_ARROW,
    TEX_ICON_SAPLING,
    TEX_ICON_TORCH,
    TEX_ICON_POTION,  // red, green, blue, pink, cyan, yellow
    TEX_ICON_BOOK = TEX_ICON_POTION + NUM_POTIONS,
    TEX_ICON_FIREBALL,
    TEX_ICON_ICEBALL,
    TEX_ICON_XP,
    TEX_ICON_DEXTERITY,
    TEX_ICON_STRENGTH,
    TEX_ICON_INTELLIGENCE,
    TEX_ICON_ARMOUR_ENCHANTMENT,  // fire then ice: helmet, chestplate, pants, boots
    TEX_ICON_SWORD_ENCHANTMENT = TEX_ICON_ARMOUR_ENCHANTMENT + 8,  // fire, ice
    TEX_ICON_ARROW_ENCHANTMENT = TEX_ICON_SWORD_ENCHANTMENT + 2,  // fire, ice
    TEX_ICON_END = TEX_ICON_ARROW_ENCHANTMENT + 2,
    TEX_DIGIT = TEX_ICON_END,  // 0 .. 9
    RENDER_TEXTURE_COUNT = TEX_DIGIT + 10,
};

// The file of each slot, as load_all_textures_given_size names them; NULL where the reference
// draws a plain colour instead (out of bounds: grey 128; darkness: black).
static const char* const RENDER_TEXTURE_FILES[RENDER_TEXTURE_COUNT] = {
    // Blocks, in BlockType order.
    "debug_tile.png", NULL, "grass.png", "water.png", "stone.png", "tree.png", "wood.png", "path.png",
    "coal.png", "iron.png", "diamond.png", "table.png", "furnace.png", "sand.png", "lava.png",
    "plant_on_grass.png", "ripe_plant_on_grass.png", "wall2.png", NULL, "wall_moss.png", "stalagmite.png",
    "sapphire.png", "ruby.png", "chest.png", "fountain.png", "fire_grass.png", "ice_grass.png", "gravel.png",
    "fire_tree.png", "ice_shrub.png", "enchantment_table_fire.png", "enchantment_table_ice.png",
    "necromancer.png", "grave.png", "grave2.png", "grave3.png", "necromancer_vulnerable.png",
    // Items, in ItemType order.
    "debug.png", "torch_in_inventory.png", "ladder_down.png", "ladder_up.png", "ladder_down_blocked.png",
    "player-left.png", "player-right.png", "player-up.png", "player-down.png", "player-sleep.png",
    "zombie.png", "gnome_warrior.png", "orc_soldier.png", "lizard.png", "knight.png", "troll.png", "pigman.png",
    "frost_troll.png",
    "cow.png", "bat.png", "snail.png",
    "skeleton.png", "gnome_archer.png", "orc_mage.png", "kobold.png", "knight_archer.png", "deep_thing.png",
    "fire_elemental.png", "ice_elemental.png",
    "arrow-up.png", "dagger.png", "fireball.png", "iceball.png", "arrow-up.png", "slimeball.png", "fireball.png",
    "iceball.png",
    // Inventory icons.
    "wood.png", "stone.png", "coal.png", "iron.png", "diamond.png", "sapphire.png", "ruby.png",
    "health.png", "food.png", "drink.png", "energy.png", "mana.png",
    "wood_pickaxe.png", "stone_pickaxe.png", "iron_pickaxe.png", "diamond_pickaxe.png",
    "wood_sword.png", "stone_sword.png", "iron_sword.png", "diamond_sword.png",
    "iron_helmet.png", "iron_chestplate.png", "iron_pants.png", "iron_boots.png",
    "diamond_helmet.png", "diamond_chestplate.png", "diamond_pants.png", "diamond_boots.png",
    "bow.png", "arrow-up.png", "sapling.png", "torch_in_inventory.png",
    "potion_red.png", "potion_green.png", "potion_blue.png", "potion_pink.png", "potion_cyan.png",
    "potion_yellow.png",
    "book.png", "fireball.png", "iceball.png", "xp.png", "dexterity.png", "strength.png", "intelligence.png",
    "helmet_fire_enchantment.png", "chestplate_fire_enchantment.png", "pants_fire_enchantment.png",
    "boots_fire_enchantment.png", "helmet_ice_enchantment.png", "chestplate_ice_enchantment.png",
    "pants_ice_enchantment.png", "boots_ice_enchantment.png",
    "sword_fire_enchantment.png", "sword_ice_enchantment.png",
    "arrow_fire_enchantment.png", "arrow_ice_enchantment.png",
    "0.png", "1.png", "2.png", "3.png", "4.png", "5.png", "6.png", "7.png", "8.png", "9.png",
};

// Sizes as the reference computes them in Python: int(block * 0.8) and int(block * 0.4).
CRAFTAX_FN int render_icon_size(int block) { return (int)(block * 0.8); }
CRAFTAX_FN int render_digit_size(int block) { return (int)(block * 0.4); }

// The side in pixels of a slot's texture.
CRAFTAX_FN int render_texture_size(int slot, int block) {
    if (slot < TEX_FULL_END) return block;
    if (slot < TEX_ICON_END) return render_icon_size(block);
    return render_digit_size(block);
}

// Offset in bytes of a slot's RGBA texture in the atlas; RENDER_TEXTURE_COUNT gives its size.
CRAFTAX_FN long render_texture_offset(int slot, int block) {
    long full = (long)block * block * 4, icon = (long)render_icon_size(block) * render_icon_size(block) * 4;
    long digit = (long)render_digit_size(block) * render_digit_size(block) * 4;
    if (slot <= TEX_FULL_END) return slot * full;
    if (slot <= TEX_ICON_END) return TEX_FULL_END * full + (slot - TEX_FULL_END) * icon;
    return TEX_FULL_END * full + (TEX_ICON_END - TEX_FULL_END) * icon + (slot - TEX_ICON_END) * digit;
}

typedef struct {
    int block;            // pixels per cell side
    const uint8_t* atlas;  // render_texture_offset(RENDER_TEXTURE_COUNT, block) bytes
} RenderTextures;

CRAFTAX_FN int render_height(int block) { return RENDER_ROWS * block; }
CRAFTAX_FN int render_width(int block) { return OBS_COLS * block; }

CRAFTAX_FN const uint8_t* render_texture(const RenderTextures* t, int slot) {
    return t->atlas + render_texture_offset(slot, t->block);
}

// Python's floor division and modulo by 10, as jnp's // and % compute them.
CRAFTAX_FN int32_t floor_div10(int32_t x) { return x >= 0 ? x / 10 : -((-x + 9) / 10); }

// The frame row where the inventory starts.
CRAFTAX_FN int render_inventory_top(int block) { return OBS_ROWS * block; }

// The inventory's icon cell (x, y): the icon square centred in the cell.
CRAFTAX_FN void draw_icon(const Canvas* canvas, const RenderTextures* t, int x, int y, int slot, int mode) {
    int block = t->block, size = render_icon_size(block);
    int left_space = (block - size) / 2;
    draw_texture(canvas, render_inventory_top(block) + y * block + left_space, x * block + left_space,
                 slot < 0 ? NULL : render_texture(t, slot), size, slot < 0 ? DRAW_EMPTY : mode, 0);
}

// The icon of a count: its texture while the count is positive, else the empty icon.
CRAFTAX_FN void draw_count_icon(const Canvas* canvas, const RenderTextures* t, int x, int y, int32_t count, int slot) {
    draw_icon(canvas, t, x, y, count > 0 ? slot : -1, DRAW_RGB);
}

// A digit in the bottom right corner of cell (x, y), `column` digits from the right: multiplied
// by 1 - alpha, then its premultiplied RGB added. Digit 0 is drawn blank unless `zero` is set.
CRAFTAX_FN void draw_digit(const Canvas* canvas, const RenderTextures* t, int x, int y, int column, int digit, int zero) {
    int block = t->block, size = render_digit_size(block);
    if (digit == 0 && !zero) return;
    const uint8_t* texture = render_texture(t, TEX_DIGIT + digit);
    int top = render_inventory_top(block) + y * block + block - size, left = x * block + block - (column + 1) * size;
    draw_texture(canvas, top, left, texture, size, DRAW_BLEND, 0);
}

// _render_digit: one digit, its index clamped as the reference's table lookup clamps it.
CRAFTAX_FN void draw_number_digit(const Canvas* canvas, const RenderTextures* t, int x, int y, int32_t number) {
    draw_digit(canvas, t, x, y, 0, table_index(number, 10), 0);
}

// _render_two_digit_number: the ones (a 0 shown unless the number is 0) and the tens (blank for 0).
CRAFTAX_FN void draw_two_digit_number(const Canvas* canvas, const RenderTextures* t, int x, int y, int32_t number) {
    int32_t tens = floor_div10(number), ones = number - 10 * tens;
    draw_digit(canvas, t, x, y, 0, table_index(ones, 10), number != 0);
    draw_digit(canvas, t, x, y, 1, table_index(tens, 10), 0);
}

// The inventory rows (RENDER_INVENTORY_ROWS x OBS_COLS cells), in the reference's drawing order:
// later icons cover earlier ones where they share a cell.
CRAFTAX_FN void render_inventory(const GameState* s, const RenderTextures* t, const Canvas* canvas) {
    const Inventory* inv = &s->inventory;
    int block = t->block;
    if (canvas->bottom <= render_inventory_top(block)) return;
    fill_rectangle(canvas, render_inventory_top(block), 0, RENDER_INVENTORY_ROWS * block, render_width(block), 0.0f);

    float health_floor = floorf(s->player_health);
    int32_t health = (int32_t)(health_floor > 1.0f ? health_floor : 1.0f);
    draw_icon(canvas, t, 0, 0, TEX_ICON_HEALTH, DRAW_RGB);
    draw_two_digit_number(canvas, t, 0, 0, health);
    const int32_t needs[4] = {s->player_food, s->player_drink, s->player_energy, s->player_mana};
    for (int k = 0; k < 4; k++) {
        draw_count_icon(canvas, t, 1 + k, 0, needs[k], TEX_ICON_FOOD + k);
        draw_two_digit_number(canvas, t, 1 + k, 0, needs[k]);
    }

    const int32_t materials[7] = {inv->wood, inv->stone, inv->coal, inv->iron, inv->diamond, inv->sapphire, inv->ruby};
    const int material_cells[7][2] = {{0, 2}, {1, 2}, {0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}};
    for (int k = 0; k < 7; k++) {
        draw_count_icon(canvas, t, material_cells[k][0], material_cells[k][1], materials[k], TEX_ICON_MATERIAL + k);
        draw_two_digit_number(canvas, t, material_cells[k][0], material_cells[k][1], materials[k]);
    }
    draw_count_icon(canvas, t, 5, 1, inv->sapling, TEX_ICON_SAPLING);
    draw_two_digit_number(canvas, t, 5, 1, inv->sapling);

    // Tool tables hold the empty icon at level 0.
    int pickaxe = table_index(inv->pickaxe, 5), sword = table_index(inv->sword, 5), bow = table_index(inv->bow, 2);
    draw_icon(canvas, t, 8, 2, pickaxe ? TEX_ICON_PICKAXE + pickaxe - 1 : -1, DRAW_PREMULTIPLIED);
    draw_icon(canvas, t, 8, 1, sword ? TEX_ICON_SWORD + sword - 1 : -1, DRAW_PREMULTIPLIED);
    draw_icon(canvas, t, 6, 1, bow ? TEX_ICON_BOW : -1, DRAW_RGB);
    draw_icon(canvas, t, 6, 2, inv->arrows > 0 ? TEX_ICON_ARROW : -1, DRAW_PREMULTIPLIED);
    draw_two_digit_number(canvas, t, 6, 2, inv->arrows);
    for (int k = 0; k < 4; k++) {
        int level = table_index(inv->armour[k], 3);
        draw_icon(canvas, t, 7, k, level ? TEX_ICON_ARMOUR + (level - 1) * 4 + k : -1, DRAW_PREMULTIPLIED);
    }
    draw_count_icon(canvas, t, 2, 2, inv->torches, TEX_ICON_TORCH);
    draw_two_digit_number(canvas, t, 2, 2, inv->torches);
    for (int k = 0; k < NUM_POTIONS; k++) {
        draw_count_icon(canvas, t, k, 3, inv->potions[k], TEX_ICON_POTION + k);
        draw_two_digit_number(canvas, t, k, 3, inv->potions[k]);
    }
    draw_count_icon(canvas, t, 3, 2, inv->books, TEX_ICON_BOOK);
    draw_two_digit_number(canvas, t, 3, 2, inv->books);
    draw_icon(canvas, t, 4, 2, s->learned_spells[0] ? TEX_ICON_FIREBALL : -1, DRAW_RGB);
    draw_icon(canvas, t, 5, 2, s->learned_spells[1] ? TEX_ICON_ICEBALL : -1, DRAW_RGB);

    // Enchantments glow over their item; level 0 draws nothing.
    int sword_enchantment = table_index(s->sword_enchantment, 3);
    if (sword_enchantment) draw_icon(canvas, t, 8, 1, TEX_ICON_SWORD_ENCHANTMENT + sword_enchantment - 1, DRAW_BLEND);
    int arrow_enchantment = table_index(s->bow_enchantment * (inv->arrows > 0), 3);
    if (arrow_enchantment) draw_icon(canvas, t, 6, 2, TEX_ICON_ARROW_ENCHANTMENT + arrow_enchantment - 1, DRAW_BLEND);
    for (int k = 0; k < 4; k++) {
        int level = table_index(s->armour_enchantments[k], 3);
        if (level) draw_icon(canvas, t, 7, k, TEX_ICON_ARMOUR_ENCHANTMENT + (level - 1) * 4 + k, DRAW_BLEND);
    }

    draw_number_digit(canvas, t, 6, 0, s->player_level);
    draw_count_icon(canvas, t, 9, 0, s->player_xp, TEX_ICON_XP);
    draw_number_digit(canvas, t, 9, 0, s->player_xp);
    const int32_t attributes[3] = {s->player_dexterity, s->player_strength, s->player_intelligence};
    for (int k = 0; k < 3; k++) {
        draw_icon(canvas, t, 9, 1 + k, TEX_ICON_DEXTERITY + k, DRAW_RGB);
        draw_number_digit(canvas, t, 9, 1 + k, attributes[k]);
    }
}

// A mob (or projectile) of one class: drawn over its cell when it is alive and in view.
CRAFTAX_FN void draw_mob(const Canvas* canvas, const RenderTextures* t, const GameState* s, const int32_t position[2],
                         uint8_t alive, int type, int first_slot, int types, int orientation) {
    int r = position[0] - s->player_position[0] + OBS_ROWS / 2;
    int c = position[1] - s->player_position[1] + OBS_COLS / 2;
    if (!alive || r < 0 || r >= OBS_ROWS || c < 0 || c >= OBS_COLS) return;
    int block = t->block;
    draw_texture(canvas, r * block, c * block, render_texture(t, first_slot + table_index(type, types)), block,
                 DRAW_BLEND, orientation);
}

CRAFTAX_FN int projectile_orientation(const int16_t direction[2]) {
    return (direction[0] > 0 || direction[1] > 0 ? TEXTURE_FLIP : 0) | (direction[1] != 0 ? TEXTURE_TRANSPOSE : 0);
}

// Light, night and sleep over the view's pixels that the canvas holds, in place (`light` holds
// the light of the cells they are in). Night falls on the surface only
// (`daylight` 1 elsewhere). Its noise weighs nothing while the daylight is at least half, and the
// blend leaves the pixels as they are in full daylight: both are skipped then. The noise weighs
// more away from the centre: the reference's texture of distances divided by the farthest, a
// division XLA makes a multiplication by the reciprocal. The blends are fused into FMAs where the
// reference's compiled program fuses them. Compiled for several x86 extensions (CRAFTAX_LANES_FN):
// with FMA in hardware each fmaf is one instruction instead of a call; the results are the same.
CRAFTAX_LANES_FN void shade_view(const Canvas* canvas, int block, const float light[OBS_ROWS][OBS_COLS], float daylight,
                                 int sleeping, Key key) {
    float night_intensity = 2.0f * (0.5f - daylight);
    if (night_intensity < 0.0f) night_intensity = 0.0f;
    const float night_colour_half[3] = {0.0f, 8.0f, 32.0f};
    int height = OBS_ROWS * block, width = OBS_COLS * block;
    int centre_row = height / 2, centre_col = width / 2;
    float farthest = sqrtf((float)(centre_row * centre_row + centre_col * centre_col));
    float sleep = sleeping ? 0.5f : 1.0f;
    int end_row = canvas->bottom < height ? canvas->bottom : height;
    for (int y = canvas->top; y < end_row; y++) {
        float* row = canvas_pixel(canvas, y, canvas->left);
        for (int x = canvas->left; x < canvas->right; x++) {
            float* px = row + (x - canvas->left) * 3;
            float cell_light = light[y / block][x / block];
            float mask = 0.0f, noise = 0.0f;
            if (night_intensity > 0.0f) {
                int dy = y - centre_row, dx = x - centre_col;
                mask = sqrtf((float)(dy * dy + dx * dx)) * (1.0f / farthest) * night_intensity;
                noise = night_noise(key, (uint32_t)(y * width + x));
            }
            for (int ch = 0; ch < 3; ch++) {
                float p = cell_light * px[ch];
                if (daylight != 1.0f) {
                    float night = fmaf(mask, noise, (1.0f - mask) * p);
                    night = fmaf(0.5f, night, night_colour_half[ch]);
                    p = fmaf(daylight, p, (1.0f - daylight) * night);
                }
                px[ch] = sleep * p;
            }
        }
    }
}

// The view: blocks, items, the player, mobs, projectiles; then darkness, night and sleep. The
// light comes from `light_maps`' light maps: the state's own, or on the device the pool world's
// that the state borrows until it places a torch (craftax.h).
CRAFTAX_FN void render_view(const GameState* s, const GameState* light_maps, const RenderTextures* t,
                            const Canvas* canvas) {
    int l = s->player_level, block = t->block;
    if (canvas->top >= OBS_ROWS * block) return;
    int vulnerable = is_boss_vulnerable(s);
    int ladder_open = s->monsters_killed[l] >= MONSTERS_KILLED_TO_CLEAR_LEVEL;
    // The cells the canvas covers.
    int first_row = canvas->top / block, first_col = canvas->left / block;
    int end_row = (canvas->bottom + block - 1) / block, end_col = (canvas->right + block - 1) / block;
    if (end_row > OBS_ROWS) end_row = OBS_ROWS;
    float light[OBS_ROWS][OBS_COLS];
    for (int r = first_row; r < end_row; r++) {
        for (int c = first_col; c < end_col; c++) {
            int wr = s->player_position[0] - OBS_ROWS / 2 + r, wc = s->player_position[1] - OBS_COLS / 2 + c;
            int inside = wr >= 0 && wr < MAP_SIZE && wc >= 0 && wc < MAP_SIZE;
            int b = inside ? s->map[l][wr][wc] : (int)BLOCK_OUT_OF_BOUNDS;
            int item = inside ? s->item_map[l][wr][wc] : (int)ITEM_NONE;
            light[r][c] = inside ? light_maps->light_map[l][wr][wc] : 0.0f;
            if (b == BLOCK_NECROMANCER && vulnerable) b = BLOCK_NECROMANCER_VULNERABLE;
            if (item == ITEM_LADDER_DOWN && !ladder_open) item = ITEM_LADDER_DOWN_BLOCKED;
            if (b == BLOCK_OUT_OF_BOUNDS || b == BLOCK_DARKNESS) {
                fill_rectangle(canvas, r * block, c * block, block, block, b == BLOCK_OUT_OF_BOUNDS ? 128.0f : 0.0f);
            } else {
                draw_texture(canvas, r * block, c * block, render_texture(t, TEX_BLOCK + b), block, DRAW_RGB, 0);
            }
            if (item != ITEM_NONE && item < NUM_ITEM_TYPES) {
                draw_texture(canvas, r * block, c * block, render_texture(t, TEX_ITEM + item), block, DRAW_BLEND, 0);
            }
        }
    }
    int facing = s->is_sleeping ? 4 : table_index(s->player_direction - 1, 5);
    draw_texture(canvas, (OBS_ROWS / 2) * block, (OBS_COLS / 2) * block, render_texture(t, TEX_PLAYER + facing), block,
                 DRAW_BLEND, 0);
    for (int m = 0; m < MAX_MELEE_MOBS; m++)
        draw_mob(canvas, t, s, s->melee_mobs.position[l][m], s->melee_mobs.mask[l][m], s->melee_mobs.type_id[l][m],
                 TEX_MELEE, MOB_TYPES_PER_CLASS, 0);
    for (int m = 0; m < MAX_PASSIVE_MOBS; m++)
        draw_mob(canvas, t, s, s->passive_mobs.position[l][m], s->passive_mobs.mask[l][m], s->passive_mobs.type_id[l][m],
                 TEX_PASSIVE, 3, 0);
    for (int m = 0; m < MAX_RANGED_MOBS; m++)
        draw_mob(canvas, t, s, s->ranged_mobs.position[l][m], s->ranged_mobs.mask[l][m], s->ranged_mobs.type_id[l][m],
                 TEX_RANGED, MOB_TYPES_PER_CLASS, 0);
    for (int m = 0; m < MAX_MOB_PROJECTILES; m++)
        draw_mob(canvas, t, s, s->mob_projectiles.position[l][m], s->mob_projectiles.mask[l][m],
                 s->mob_projectiles.type_id[l][m], TEX_PROJECTILE, MOB_TYPES_PER_CLASS,
                 projectile_orientation(s->mob_projectile_directions[l][m]));
    for (int m = 0; m < MAX_PLAYER_PROJECTILES; m++)
        draw_mob(canvas, t, s, s->player_projectiles.position[l][m], s->player_projectiles.mask[l][m],
                 s->player_projectiles.type_id[l][m], TEX_PROJECTILE, MOB_TYPES_PER_CLASS,
                 projectile_orientation(s->player_projectile_directions[l][m]));

    float daylight = l == 0 ? s->light_level : 1.0f;
    shade_view(canvas, block, light, daylight, s->is_sleeping, s->state_rng);
}

// The whole frame: render_height(block) x render_width(block) x 3 float32 values.
CRAFTAX_FN void render_pixels(const GameState* s, const RenderTextures* t, float* frame) {
    int height = render_height(t->block), width = render_width(t->block);
    Canvas canvas = {frame, width, 0, 0, height, width};
    render_view(s, s, t, &canvas);
    render_inventory(s, t, &canvas);
}

// The frame as bytes: each value truncated toward zero, as numpy's astype(uint8) converts it.
// `scratch` holds one float frame.
CRAFTAX_FN void render_frame(const GameState* s, const RenderTextures* t, float* scratch, uint8_t* frame) {
    render_pixels(s, t, scratch);
    long values = (long)render_height(t->block) * render_width(t->block) * 3;
    for (long k = 0; k < values; k++) frame[k] = (uint8_t)scratch[k];
}

// The reference pixel env's observation (Craftax-Pixels): the frame divided by 255, which XLA
// computes as a multiplication by the float32 reciprocal of 255.
CRAFTAX_FN void render_observation(const GameState* s, const RenderTextures* t, float* observation) {
    render_pixels(s, t, observation);
    long values = (long)render_height(t->block) * render_width(t->block) * 3;
    const float scale = 1.0f / 255.0f;
    for (long k = 0; k < values; k++) observation[k] *= scale;
}

// Pixels (y, x) .. (y, x + count - 1) of render_observation's values, 3 channels each, into `out`:
// every draw of the frame made over those pixels alone, as a device thread draws its run of a
// row. `light_maps` as render_view's.
CRAFTAX_FN void render_observation_run(const GameState* s, const GameState* light_maps, const RenderTextures* t, int y,
                                       int x, int count, float* out) {
    Canvas canvas = {out, count, y, x, y + 1, x + count};
    render_view(s, light_maps, t, &canvas);
    render_inventory(s, t, &canvas);
    const float scale = 1.0f / 255.0f;
    for (int k = 0; k < count * 3; k++) out[k] *= scale;
}
