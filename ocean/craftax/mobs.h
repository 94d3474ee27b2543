// Mobs, as update_mobs and spawn_mobs in craftax/craftax/game_logic.py: melee mobs chase and
// hit, passive mobs wander, ranged mobs keep their distance and shoot, projectiles fly and hit,
// and new mobs spawn around the player. Their random numbers were drawn before the step (draws.h).
//
// As in the reference, mobs that are not alive still move (their positions are part of the
// state and can clear observation channels), and dead projectiles keep flying off the map.
#pragma once
#include "combat.h"
#include "draws.h"

CRAFTAX_FN int sign(int x) { return (x > 0) - (x < 0); }
CRAFTAX_FN int iabs(int x) { return x < 0 ? -x : x; }

// A mob's move towards the player along one axis, chosen at random among the axes of largest
// distance (jax.random.choice over p = is_max / total distance, given the choice's uniform draw).
CRAFTAX_FN void step_towards_player(float axis_roll, const PlayerFloor* f, int row, int col, int* dr, int* dc) {
    int d0 = f->player_row - row, d1 = f->player_col - col;
    int a0 = iabs(d0), a1 = iabs(d1);
    int largest = a0 > a1 ? a0 : a1;
    float total = (float)(a0 + a1);
    float weights[2] = {(float)(a0 == largest) / total, (float)(a1 == largest) / total};
    int axis = choice_small_by(axis_roll, weights, 2);
    *dr = axis == 0 ? sign(d0) : 0;
    *dc = axis == 1 ? sign(d1) : 0;
}

// The mob map bookkeeping every mob does after moving from (row, col): leave the old cell if
// alive, enter the new one if still alive.
CRAFTAX_FN void move_on_mob_map(const PlayerFloor* f, int row, int col, int alive, const int* next, int still_alive) {
    int old_cell = map_write_index(row, col);
    if (old_cell >= 0 && alive) f->mobs[old_cell] = 0;
    int new_cell = map_write_index(next[0], next[1]);
    if (new_cell >= 0 && still_alive) f->mobs[new_cell] = 1;
}

CRAFTAX_FN int manhattan_to_player(const PlayerFloor* f, int row, int col) {
    return iabs(row - f->player_row) + iabs(col - f->player_col);
}

// Each mob's fields and draws are read into locals before its first store, which would make the
// compiler read them again (PlayerFloor).
CRAFTAX_FN void move_melee_mob(const MeleeMobDraws* draws, const PlayerFloor* f, int m) {
    GameState* s = f->s;
    int l = f->level;
    MeleeMobDraws d = *draws;
    int32_t* position = s->melee_mobs.position[l][m];
    int row = position[0], col = position[1];
    int type = s->melee_mobs.type_id[l][m];
    int alive = s->melee_mobs.mask[l][m];
    int cooldown = s->melee_mobs.attack_cooldown[l][m];
    int distance = manhattan_to_player(f, row, col);
    int chasing = (distance < 10 || is_boss_floor(f)) && d.chase_roll < 0.75f;
    int proposed[2];
    if (chasing) {
        int towards_r, towards_c;
        step_towards_player(d.axis_roll, f, row, col, &towards_r, &towards_c);
        proposed[0] = row + towards_r;
        proposed[1] = col + towards_c;
    } else {
        proposed[0] = row + direction_row(d.random_direction);
        proposed[1] = col + direction_col(d.random_direction);
    }

    int attacking = distance == 1 && cooldown <= 0 && alive;
    if (attacking) {
        proposed[0] = row;
        proposed[1] = col;
        float scale = 1.0f + 2.5f * (float)s->is_sleeping;
        s->player_health -= damage_to_player(s, &TABLE(MOB_DAMAGE)[(type * 4 + MOB_MELEE) * 3], scale);
        unlock(s, ACH_WAKE_UP, s->is_sleeping);
        s->is_sleeping = 0;
        s->is_resting = 0;
    }
    int next[2] = {row, col};
    if (is_free_on(f, proposed[0], proposed[1], &TABLE(MOB_COLLISION)[COLLISION_INDEX(type, MOB_MELEE)])) {
        next[0] = proposed[0];
        next[1] = proposed[1];
    }
    int stays = distance < MOB_DESPAWN_DISTANCE || is_boss_floor(f);
    int still_alive = alive && stays;
    move_on_mob_map(f, row, col, alive, next, still_alive);
    s->melee_mobs.attack_cooldown[l][m] = attacking ? 5 : cooldown - 1;
    position[0] = next[0];
    position[1] = next[1];
    s->melee_mobs.mask[l][m] = (uint8_t)still_alive;
}

CRAFTAX_FN void move_passive_mob(const PassiveMobDraws* draws, const PlayerFloor* f, int m) {
    GameState* s = f->s;
    int l = f->level;
    // Eight choices, the last four of which stand still.
    int direction = draws->direction;
    int32_t* position = s->passive_mobs.position[l][m];
    int row = position[0], col = position[1];
    int type = s->passive_mobs.type_id[l][m];
    int alive = s->passive_mobs.mask[l][m];
    int next[2] = {row, col};
    int r = row + direction_row(direction), c = col + direction_col(direction);
    if (is_free_on(f, r, c, &TABLE(MOB_COLLISION)[COLLISION_INDEX(type, MOB_PASSIVE)])) {
        next[0] = r;
        next[1] = c;
    }
    int still_alive = alive && manhattan_to_player(f, row, col) < MOB_DESPAWN_DISTANCE;
    move_on_mob_map(f, row, col, alive, next, still_alive);
    position[0] = next[0];
    position[1] = next[1];
    s->passive_mobs.mask[l][m] = (uint8_t)still_alive;
}

CRAFTAX_FN void move_ranged_mob(const RangedMobDraws* draws, const PlayerFloor* f, int m) {
    GameState* s = f->s;
    int l = f->level;
    RangedMobDraws d = *draws;
    int32_t* position = s->ranged_mobs.position[l][m];
    int row = position[0], col = position[1];
    int type = s->ranged_mobs.type_id[l][m];
    int alive = s->ranged_mobs.mask[l][m];
    int cooldown = s->ranged_mobs.attack_cooldown[l][m];
    const uint8_t* collision = &TABLE(MOB_COLLISION)[COLLISION_INDEX(type, MOB_RANGED)];
    int random_proposed[2] = {row + direction_row(d.random_direction), col + direction_col(d.random_direction)};
    int towards_r, towards_c;
    step_towards_player(d.axis_roll, f, row, col, &towards_r, &towards_c);
    int distance = manhattan_to_player(f, row, col);
    int too_close = distance <= 3;
    int proposed[2] = {random_proposed[0], random_proposed[1]};
    if (distance >= 6) {
        proposed[0] = row + towards_r;
        proposed[1] = col + towards_c;
    }
    if (too_close) {
        proposed[0] = row - towards_r;
        proposed[1] = col - towards_c;
    }
    if (!(d.keep_roll > 0.85f)) {
        proposed[0] = random_proposed[0];
        proposed[1] = random_proposed[1];
    }
    // Shoots from 4 or 5 away, or when too close with its retreat blocked.
    int attacking = (distance >= 4 && distance <= 5) || (too_close && !is_free_on(f, proposed[0], proposed[1], collision));
    attacking = attacking && cooldown <= 0 && alive;
    if (attacking) {
        if (count_alive(s->mob_projectiles.mask[l], MAX_MOB_PROJECTILES) < MAX_MOB_PROJECTILES) {
            SPAWN_PROJECTILE(s->mob_projectiles, s->mob_projectile_directions, l, MAX_MOB_PROJECTILES, row, col,
                             towards_r, towards_c, TABLE(RANGED_MOB_PROJECTILE)[type]);
        }
        proposed[0] = row;
        proposed[1] = col;
    }
    int next[2] = {row, col};
    if (is_free_on(f, proposed[0], proposed[1], collision)) {
        next[0] = proposed[0];
        next[1] = proposed[1];
    }
    int still_alive = alive && (distance < MOB_DESPAWN_DISTANCE || is_boss_floor(f));
    move_on_mob_map(f, row, col, alive, next, still_alive);
    s->ranged_mobs.attack_cooldown[l][m] = attacking ? 4 : cooldown - 1;
    position[0] = next[0];
    position[1] = next[1];
    s->ranged_mobs.mask[l][m] = (uint8_t)still_alive;
}

// A blocking cell for projectiles: solid blocks (water never is).
CRAFTAX_FN int blocks_projectile(const PlayerFloor* f, int r, int c) {
    uint8_t block = f->map[map_read_index(r, c)];
    return TABLE(SOLID_BLOCK)[block] && block != BLOCK_WATER;
}

// Dead projectiles keep flying (their positions are part of the state) and do nothing else.
CRAFTAX_FN void move_mob_projectile(const PlayerFloor* f, int p) {
    GameState* s = f->s;
    int l = f->level;
    int32_t* position = s->mob_projectiles.position[l][p];
    int row = position[0], col = position[1];
    int r = row + s->mob_projectile_directions[l][p][0];
    int c = col + s->mob_projectile_directions[l][p][1];
    if (s->mob_projectiles.mask[l][p]) {
        int type = s->mob_projectiles.type_id[l][p];
        int hit_player = (row == f->player_row && col == f->player_col) || (r == f->player_row && c == f->player_col);
        int continues = in_bounds(r, c) & !blocks_projectile(f, r, c) & !is_in_mob_on(f, r, c) & !hit_player;
        // Projectiles destroy crafting tables and furnaces they fly into.
        uint8_t block = f->map[map_read_index(r, c)];
        if (block == BLOCK_FURNACE || block == BLOCK_CRAFTING_TABLE) {
            int cell = map_write_index(r, c);
            if (cell >= 0) f->map[cell] = BLOCK_PATH;
        }
        if (hit_player) {
            s->player_health -= damage_to_player(s, &TABLE(MOB_DAMAGE)[(type * 4 + MOB_PROJECTILE) * 3], 1.0f);
            s->is_sleeping = 0;
            s->is_resting = 0;
        }
        s->mob_projectiles.mask[l][p] = (uint8_t)continues;
    }
    position[0] = r;
    position[1] = c;
}

// A dead projectile's hits are skipped as well: the reference makes them with zero damage, and as
// every living mob's health is above zero (a mob dies when it falls to zero), they change nothing.
CRAFTAX_FN void move_player_projectile(const PlayerFloor* f, int p) {
    GameState* s = f->s;
    int l = f->level;
    int32_t* position = s->player_projectiles.position[l][p];
    int row = position[0], col = position[1];
    int r = row + s->player_projectile_directions[l][p][0];
    int c = col + s->player_projectile_directions[l][p][1];
    if (s->player_projectiles.mask[l][p]) {
        int type = s->player_projectiles.type_id[l][p];
        float damage[3];
        for (int k = 0; k < 3; k++) damage[k] = TABLE(MOB_DAMAGE)[(type * 4 + MOB_PROJECTILE) * 3 + k];
        int is_arrow = type == PROJECTILE_ARROW || type == PROJECTILE_ARROW2;
        if (is_arrow && s->bow_enchantment != 0) damage[s->bow_enchantment] += damage[0] / 2.0f;
        if (is_arrow) {
            float dexterity = 1.0f + 0.2f * (float)(s->player_dexterity - 1);
            for (int k = 0; k < 3; k++) damage[k] *= dexterity;
        }
        if (type == PROJECTILE_FIREBALL || type == PROJECTILE_ICEBALL) {
            float intelligence = 1.0f + 0.5f * (float)(s->player_intelligence - 1);
            for (int k = 0; k < 3; k++) damage[k] *= intelligence;
        }
        int stopped = !in_bounds(r, c) || blocks_projectile(f, r, c);
        // It hits a mob where it is (one may have walked in) or else where it flies to.
        int hit = attack_mob(s, row, col, damage, 0, 0);
        if (hit) {
            for (int k = 0; k < 3; k++) damage[k] *= 0.0f;
        }
        hit |= attack_mob(s, r, c, damage, 0, 0);
        s->player_projectiles.mask[l][p] = (uint8_t)(!stopped && !hit);
    }
    position[0] = r;
    position[1] = c;
}

// Prefetches the block and mob map rows around each mob of the floor, alive or not (every mob
// tests the cells next to it for collisions); see CRAFTAX_PREFETCH.
CRAFTAX_FN void prefetch_mob_surroundings_of(const GameState* s, const int32_t (*position)[2], int count) {
    int l = s->player_level;
    for (int m = 0; m < count; m++) {
        int c = iclamp(position[m][1], 0, MAP_SIZE - 1);
        for (int dr = -1; dr <= 1; dr++) {
            int r = iclamp(position[m][0] + dr, 0, MAP_SIZE - 1);
            CRAFTAX_PREFETCH(&s->map[l][r][c]);
            CRAFTAX_PREFETCH(&s->mob_map[l][r][c]);
        }
    }
}

CRAFTAX_FN void prefetch_mob_surroundings(const GameState* s) {
    int l = s->player_level;
    prefetch_mob_surroundings_of(s, s->melee_mobs.position[l], MAX_MELEE_MOBS);
    prefetch_mob_surroundings_of(s, s->passive_mobs.position[l], MAX_PASSIVE_MOBS);
    prefetch_mob_surroundings_of(s, s->ranged_mobs.position[l], MAX_RANGED_MOBS);
}

CRAFTAX_FN void update_mobs(const StepDraws* draws, GameState* s) {
    PlayerFloor f = player_floor(s);
    for (int m = 0; m < MAX_MELEE_MOBS; m++) move_melee_mob(&draws->melee[m], &f, m);
    for (int m = 0; m < MAX_PASSIVE_MOBS; m++) move_passive_mob(&draws->passive[m], &f, m);
    for (int m = 0; m < MAX_RANGED_MOBS; m++) move_ranged_mob(&draws->ranged[m], &f, m);
    for (int p = 0; p < MAX_MOB_PROJECTILES; p++) move_mob_projectile(&f, p);
    for (int p = 0; p < MAX_PLAYER_PROJECTILES; p++) move_player_projectile(&f, p);
}

// Where a mob class may spawn this step: on which blocks, and at which squared distances from
// the player (the reference compares sqrt(d2) with integers, which gives the same results).
enum SpawnArea { SPAWN_PASSIVE, SPAWN_MONSTER, SPAWN_MONSTER_IN_WATER, SPAWN_BOSS_WAVE };

typedef struct {
    uint8_t blocks[NUM_BLOCK_TYPES];
    int min_d2, max_d2;  // inclusive bounds
} SpawnRule;

#define DESPAWN_D2 (MOB_DESPAWN_DISTANCE * MOB_DESPAWN_DISTANCE - 1)
// Blocks: grass, path, fire grass and ice grass; water; the three graves.
CRAFTAX_TABLE(SpawnRule, SPAWN_RULES, 4, {
    {{0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 10, DESPAWN_D2},
    {{0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 82, DESPAWN_D2},
    {{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 82, DESPAWN_D2},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0}, 0, 36},
})

// jax.random.choice over the cells allowed by `area`, with p = allowed / count, without building
// the 2304-entry cumsum: every non-zero weight equals w = 1 / count, so the XLA-order prefix sum
// at cell i is S[k] (k allowed cells so far in i's block of 16, summed one by one from 0) plus
// the XLA-order prefix of the block totals before it, and the binary search only needs the
// prefix sums it probes. Allowed cells lie within distance 14 of the player; only the ring of
// each rule's distances is scanned. Returns -1 when no cell is allowed.
#define SPAWN_BLOCKS (MAP_CELLS / 16)
CRAFTAX_STATIC_ASSERT(MAP_SIZE == 48 && NUM_BLOCK_TYPES <= 64, "choose_spawn_cell packs a map row into three 16-bit blocks");

// floor(sqrt(n)) for 0 <= n < 2^24, exact.
CRAFTAX_FN int isqrt_floor(int n) {
    int w = (int)sqrtf((float)n);
    while (w * w > n) w--;
    while ((w + 1) * (w + 1) <= n) w++;
    return w;
}

// The rule's blocks as a bit set (NUM_BLOCK_TYPES <= 64), so a cell's test is a shift.
CRAFTAX_FN uint64_t spawn_block_set(const SpawnRule* rule) {
    uint64_t block_set = 0;
    for (int b = 0; b < NUM_BLOCK_TYPES; b++) block_set |= (uint64_t)(rule->blocks[b] != 0) << b;
    return block_set;
}

#ifdef CRAFTAX_SSE2
// Every cell of a map row allowed by the rule's blocks (block_set) and free of mobs, as bits (bit
// c: column c), 16 columns at a time: a rule allows at most a few blocks, each one comparison per
// 16 columns.
static inline uint64_t spawn_row_allowed_sse2(uint64_t block_set, const uint8_t* map_row, const uint8_t* mob_row) {
    enum { CHUNKS = MAP_SIZE / 16 };
    __m128i blocks[CHUNKS], on_block[CHUNKS];
    for (int chunk = 0; chunk < CHUNKS; chunk++) {
        blocks[chunk] = _mm_loadu_si128((const __m128i*)(map_row + 16 * chunk));
        on_block[chunk] = _mm_setzero_si128();
    }
    for (uint64_t set = block_set; set; set &= set - 1) {
        __m128i block = _mm_set1_epi8((char)lowest_set_bit(set));
        for (int chunk = 0; chunk < CHUNKS; chunk++) {
            on_block[chunk] = _mm_or_si128(on_block[chunk], _mm_cmpeq_epi8(blocks[chunk], block));
        }
    }
    uint64_t allowed = 0;
    for (int chunk = 0; chunk < CHUNKS; chunk++) {
        __m128i free = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)(mob_row + 16 * chunk)), _mm_setzero_si128());
        allowed |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_and_si128(on_block[chunk], free)) << (16 * chunk);
    }
    return allowed;
}
#endif

// The same without SSE2 (and on the GPU), four cells per 32-bit word: a map row is 12 aligned
// words (GameState is 16-byte aligned and its maps' rows 48 bytes), read at once into registers.
// A byte's test is exact, carry-free arithmetic: 0x80 where the byte is zero.
CRAFTAX_FN uint32_t zero_bytes(uint32_t w) { return ~(((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w | 0x7F7F7F7Fu); }

CRAFTAX_FN uint64_t spawn_row_allowed_words(uint64_t block_set, const uint8_t* map_row, const uint8_t* mob_row) {
    enum { WORDS = MAP_SIZE / 4 };
    uint32_t blocks[WORDS], on_block[WORDS];
    for (int k = 0; k < WORDS; k++) {
        blocks[k] = load_word32(map_row + 4 * k);
        on_block[k] = 0;
    }
    for (uint64_t set = block_set; set; set &= set - 1) {
        uint32_t block = 0x01010101u * (uint32_t)lowest_set_bit(set);
        for (int k = 0; k < WORDS; k++) on_block[k] |= zero_bytes(blocks[k] ^ block);
    }
    uint64_t allowed = 0;
    for (int k = 0; k < WORDS; k++) {
        uint32_t mobs = load_word32(mob_row + 4 * k);
        // Byte j's flag (bit 7) to bit j of a nibble: the product's byte 3 sums flag j << j.
        uint32_t flags = (on_block[k] & zero_bytes(mobs)) >> 7;
        allowed |= (uint64_t)((flags * 0x01020408u) >> 24) << (4 * k);
    }
    return allowed;
}

// Map row r's allowed cells as bits (bit c: column c), kept only inside the ring
// min_d2 <= d2 <= max_d2 around the player (pr, pc): |dc| up to outer, and, when the inner disc
// reaches this row, not up to inner.
CRAFTAX_FN uint64_t spawn_row_bits(const SpawnRule* rule, uint64_t block_set, const uint8_t* map, const uint8_t* mobs,
                                   int r, int pr, int pc) {
    int dr2 = (r - pr) * (r - pr);
    if (dr2 > rule->max_d2) return 0;
    int outer = isqrt_floor(rule->max_d2 - dr2);
    int inner = rule->min_d2 - 1 - dr2 >= 0 ? isqrt_floor(rule->min_d2 - 1 - dr2) : -1;
    uint64_t row_bits = 0;
    const uint8_t* map_row = map + r * MAP_SIZE;
    const uint8_t* mob_row = mobs + r * MAP_SIZE;
#ifdef CRAFTAX_SSE2
    uint64_t row_allowed = spawn_row_allowed_sse2(block_set, map_row, mob_row);
#else
    uint64_t row_allowed = spawn_row_allowed_words(block_set, map_row, mob_row);
#endif
    for (int side = 0; side < 2; side++) {
        // side 0: columns pc - outer .. pc - inner - 1; side 1: pc + inner + 1 .. pc + outer
        // (one segment pc - outer .. pc + outer when inner < 0, split at pc).
        int first = side ? pc + inner + 1 : pc - outer, last = side ? pc + outer : pc - inner - 1;
        if (inner < 0 && side == 0) last = pc - 1;
        if (inner < 0 && side == 1) first = pc;
        first = imax(first, 0);
        last = imin(last, MAP_SIZE - 1);
        if (first <= last) row_bits |= row_allowed & ((2ull << last) - (1ull << first));
    }
    return row_bits;
}

// The XLA-order prefix sum at cell i: its block's first cells (running[k]: k weights added one by
// one) plus the prefix of the block totals before it.
CRAFTAX_FN float spawn_prefix_at(const uint16_t* allowed_bits, const float* running, const float* block_prefix, int i) {
    return running[popcount32(allowed_bits[i >> 4] & (uint16_t)((2u << (i & 15)) - 1))] +
           (i >> 4 ? block_prefix[(i >> 4) - 1] : 0.0f);
}

// jax.random.choice's draw: searchsorted_left over the prefix sums (no NaN here: some cell is
// allowed).
CRAFTAX_FN int spawn_search(float cell_roll, const uint16_t* allowed_bits, const float* running, const float* block_prefix) {
    float draw = spawn_prefix_at(allowed_bits, running, block_prefix, MAP_CELLS - 1) * (1.0f - cell_roll);
    int low = 0, high = MAP_CELLS;
    for (int level = 0; level < 12; level++) {
        int mid = (low + high) / 2;
        if (draw <= spawn_prefix_at(allowed_bits, running, block_prefix, mid)) {
            high = mid;
        } else {
            low = mid;
        }
    }
    return high;
}

CRAFTAX_FN int choose_spawn_cell(float cell_roll, GameState* s, int area) {
    uint16_t allowed_bits[SPAWN_BLOCKS];  // bit j: cell 16 * block + j is allowed
    memset(allowed_bits, 0, sizeof(allowed_bits));
    const SpawnRule* rule = &TABLE(SPAWN_RULES)[area];
    uint64_t block_set = spawn_block_set(rule);
    int pr = s->player_position[0], pc = s->player_position[1];
    int count = 0;
    int reach = MOB_DESPAWN_DISTANCE - 1;
    for (int r = imax(pr - reach, 0); r <= imin(pr + reach, MAP_SIZE - 1); r++) {
        uint64_t row_bits = spawn_row_bits(rule, block_set, level_map(s), level_mobs(s), r, pr, pc);
        // A map row is exactly three blocks of 16 cells.
        allowed_bits[r * 3 + 0] = (uint16_t)row_bits;
        allowed_bits[r * 3 + 1] = (uint16_t)(row_bits >> 16);
        allowed_bits[r * 3 + 2] = (uint16_t)(row_bits >> 32);
        count += popcount32((uint32_t)row_bits) + popcount32((uint32_t)(row_bits >> 32));
    }
    if (count == 0) return -1;
    float w = 1.0f / (float)count;
    float running[17];
    running[0] = 0.0f;
    for (int k = 1; k <= 16; k++) running[k] = running[k - 1] + w;
    float totals[SPAWN_BLOCKS], block_prefix[SPAWN_BLOCKS], scratch[SPAWN_BLOCKS / 7 + 32];
    for (int b = 0; b < SPAWN_BLOCKS; b++) totals[b] = running[popcount32(allowed_bits[b])];
    xla_cumsum(totals, block_prefix, SPAWN_BLOCKS, scratch);
    return spawn_search(cell_roll, allowed_bits, running, block_prefix);
}

#ifdef __CUDA_ARCH__
// On the device the few lanes of a warp whose env spawns would each run the choice above alone,
// a long chain of dependent local-memory reads while the other lanes idle. Instead the whole warp
// makes each of those choices in turn: the lanes scan a row each, sum a block of 16 totals each
// in XLA's order, and share the results in shared memory, giving the same cell bit for bit.
// Every lane that steps calls it at each of the step's spawns (lanes: the warp's stepping lanes).
#define SPAWN_SUPERBLOCKS (SPAWN_BLOCKS / 16)
CRAFTAX_STATIC_ASSERT(SPAWN_BLOCKS % 16 == 0 && SPAWN_SUPERBLOCKS <= 16, "xla_cumsum's two levels");

typedef struct {
    uint16_t allowed_bits[SPAWN_BLOCKS];
    float block_prefix[SPAWN_BLOCKS];
    float running[17];
    float superblock_prefix[SPAWN_SUPERBLOCKS];
    GameState* state;  // the env whose choice the warp is making
    float cell_roll;
    int area;
    int count;
} SpawnWarpScratch;

__device__ static SpawnWarpScratch* spawn_warp_scratch(void) {
    __shared__ SpawnWarpScratch scratch[CRAFTAX_WARPS_PER_BLOCK];
    return &scratch[threadIdx.x / 32];
}

__device__ static int choose_spawn_cell_in_warp(unsigned lanes, int spawning, float cell_roll, GameState* s, int area) {
    SpawnWarpScratch* w = spawn_warp_scratch();
    int lane = (int)(threadIdx.x % 32);
    int rank = __popc(lanes & ((1u << lane) - 1)), size = __popc(lanes);
    int chosen = -1;
    for (unsigned waiting = __ballot_sync(lanes, spawning); waiting; waiting &= waiting - 1) {
        int leader = __ffs(waiting) - 1;
        if (lane == leader) {
            w->state = s;
            w->cell_roll = cell_roll;
            w->area = area;
            w->count = 0;
        }
        for (int b = rank; b < SPAWN_BLOCKS; b += size) w->allowed_bits[b] = 0;
        __syncwarp(lanes);
        GameState* env = w->state;
        const SpawnRule* rule = &TABLE(SPAWN_RULES)[w->area];
        uint64_t block_set = spawn_block_set(rule);
        int pr = env->player_position[0], pc = env->player_position[1];
        int reach = MOB_DESPAWN_DISTANCE - 1;
        int count = 0;
        for (int r = imax(pr - reach, 0) + rank; r <= imin(pr + reach, MAP_SIZE - 1); r += size) {
            uint64_t row_bits = spawn_row_bits(rule, block_set, level_map(env), level_mobs(env), r, pr, pc);
            w->allowed_bits[r * 3 + 0] = (uint16_t)row_bits;
            w->allowed_bits[r * 3 + 1] = (uint16_t)(row_bits >> 16);
            w->allowed_bits[r * 3 + 2] = (uint16_t)(row_bits >> 32);
            count += __popcll(row_bits);
        }
        atomicAdd(&w->count, count);
        __syncwarp(lanes);
        int total = w->count;
        if (total > 0) {  // the same for every lane
            float weight = 1.0f / (float)total;
            for (int k = rank; k <= 16; k += size) {
                float running = 0.0f;
                for (int j = 0; j < k; j++) running += weight;
                w->running[k] = running;
            }
            __syncwarp(lanes);
            // xla_cumsum over the block totals: blocks of 16 summed one by one...
            for (int superblock = rank; superblock < SPAWN_SUPERBLOCKS; superblock += size) {
                float sum = 0.0f;
                for (int j = 0; j < 16; j++) {
                    int b = superblock * 16 + j;
                    sum += w->running[popcount32(w->allowed_bits[b])];
                    w->block_prefix[b] = sum;
                }
            }
            __syncwarp(lanes);
            // ... their totals' prefix summed one by one (at most 16 of them) ...
            if (rank == 0) {
                float sum = 0.0f;
                for (int superblock = 0; superblock < SPAWN_SUPERBLOCKS; superblock++) {
                    sum += w->block_prefix[superblock * 16 + 15];
                    w->superblock_prefix[superblock] = sum;
                }
            }
            __syncwarp(lanes);
            // ... and added to every block after the first 16.
            for (int b = 16 + rank; b < SPAWN_BLOCKS; b += size) w->block_prefix[b] += w->superblock_prefix[b / 16 - 1];
            __syncwarp(lanes);
            if (lane == leader) chosen = spawn_search(w->cell_roll, w->allowed_bits, w->running, w->block_prefix);
        }
        __syncwarp(lanes);  // the scratch is the next choice's
    }
    return chosen;
}
#endif

// The spawn of one mob class into `slot`, its first free slot: the chance was drawn already; the
// slot's type is set even when nothing spawns (as in the reference, where it can retype a live
// mob on the boss floor).
#define SPAWN_MOB(f, mobs, slot, mob_class, type, spawning, cell_roll, area)                                      \
    spawn_mob(f, (mobs).position[(f)->level], (mobs).health[(f)->level], (mobs).mask[(f)->level],                 \
              (mobs).type_id[(f)->level], slot, mob_class, type, spawning, cell_roll, area)

CRAFTAX_FN void spawn_mob(const PlayerFloor* f, int32_t (*position)[2], float* health, uint8_t* mask, uint8_t* type_id,
                          int slot, int mob_class, int type, int spawning, float cell_roll, int area) {
    int row = position[slot][0], col = position[slot][1];
    int alive = mask[slot];
#ifdef __CUDA_ARCH__
    int cell = choose_spawn_cell_in_warp(craftax_stepping_lanes(), spawning, cell_roll, f->s, area);
#else
    int cell = spawning ? choose_spawn_cell(cell_roll, f->s, area) : -1;
#endif
    if (cell >= 0) {
        row = cell / MAP_SIZE;
        col = cell % MAP_SIZE;
        alive = 1;
        position[slot][0] = row;
        position[slot][1] = col;
        health[slot] = TABLE(MOB_HEALTH)[type * 4 + mob_class];
        mask[slot] = 1;
    }
    type_id[slot] = (uint8_t)type;
    int map_cell = map_write_index(row, col);
    if (map_cell >= 0 && alive) f->mobs[map_cell] = 1;
}

// Everything the three spawns read of the state is read before the first of them writes
// (PlayerFloor); the spawn choice reads the maps as each spawn leaves them.
CRAFTAX_FN void spawn_mobs(const StepDraws* draws, GameState* s) {
    PlayerFloor f = player_floor(s);
    int l = f.level;
    int boss = is_boss_floor(&f);
    // Triple rate on floors not cleared yet; the boss floor spawns in waves.
    int coefficient = 1 + (s->monsters_killed[l] < MONSTERS_KILLED_TO_CLEAR_LEVEL) * 2;
    coefficient *= boss ? is_boss_spawn_wave(s) * 1000 : 1;
    const float* chance = &TABLE(FLOOR_MOB_SPAWN_CHANCE)[l * 4];
    int boss_floor_types = iclamp(s->boss_progress, 0, NUM_LEVELS - 1) * 3;
    float darkness = 1.0f - s->light_level;
    SpawnDraws passive = draws->spawn[MOB_PASSIVE], melee = draws->spawn[MOB_MELEE], ranged = draws->spawn[MOB_RANGED];
    const uint8_t* passive_mask = s->passive_mobs.mask[l];
    const uint8_t* melee_mask = s->melee_mobs.mask[l];
    const uint8_t* ranged_mask = s->ranged_mobs.mask[l];
    int passive_alive = count_alive(passive_mask, MAX_PASSIVE_MOBS), passive_slot = first_free_slot(passive_mask, MAX_PASSIVE_MOBS);
    int melee_alive = count_alive(melee_mask, MAX_MELEE_MOBS), melee_slot = first_free_slot(melee_mask, MAX_MELEE_MOBS);
    int ranged_alive = count_alive(ranged_mask, MAX_RANGED_MOBS), ranged_slot = first_free_slot(ranged_mask, MAX_RANGED_MOBS);

    int spawning = passive_alive < MAX_PASSIVE_MOBS && !boss && passive.roll < chance[0];
    SPAWN_MOB(&f, s->passive_mobs, passive_slot, MOB_PASSIVE, TABLE(FLOOR_MOB_TYPE)[l * 3 + MOB_PASSIVE], spawning,
              passive.cell_roll, SPAWN_PASSIVE);

    int melee_type = TABLE(FLOOR_MOB_TYPE)[(boss ? boss_floor_types : l * 3) + MOB_MELEE];
    float melee_chance = chance[1] + chance[3] * (darkness * darkness);
    spawning = melee_alive < MAX_MELEE_MOBS && melee.roll < melee_chance * (float)coefficient;
    SPAWN_MOB(&f, s->melee_mobs, melee_slot, MOB_MELEE, melee_type, spawning, melee.cell_roll,
              boss ? SPAWN_BOSS_WAVE : SPAWN_MONSTER);

    int ranged_type = TABLE(FLOOR_MOB_TYPE)[(boss ? boss_floor_types : l * 3) + MOB_RANGED];
    spawning = ranged_alive < MAX_RANGED_MOBS && ranged.roll < chance[2] * (float)coefficient;
    // Deep things (ranged type 5) live in water.
    int area = boss ? SPAWN_BOSS_WAVE : (ranged_type == 5 ? SPAWN_MONSTER_IN_WATER : SPAWN_MONSTER);
    SPAWN_MOB(&f, s->ranged_mobs, ranged_slot, MOB_RANGED, ranged_type, spawning, ranged.cell_roll, area);
}
