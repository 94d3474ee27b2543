// The random numbers of one step, drawn before the step from its key, consuming keys exactly as
// the reference's craftax_step, update_mobs and spawn_mobs (craftax/craftax/game_logic.py) do.
//
// Within an env a step's keys form a chain of about a hundred threefry hashes, each split feeding
// the next, which made hashing most of a step's cost when done one env at a time. No key depends
// on the game state, so every draw a step may use is made up front for KEY_LANES envs at once, one
// SIMD lane per env; the game logic (step.h, mobs.h) reads them from StepDraws. Draws a step does
// not use (a mob that does not chase, nothing spawning) are simply not read.
#pragma once
#include "game_tables.h"
#include "jax_random.h"

typedef struct {
    float chase_roll;          // uniform: chases when below 0.75 and near enough
    float axis_roll;           // uniform of step_towards_player's axis choice
    int32_t random_direction;  // 1 + randint(0, 4): the move when not chasing
} MeleeMobDraws;

typedef struct {
    int32_t direction;  // 1 + randint(0, 8); 5 to 8 stand still
} PassiveMobDraws;

typedef struct {
    int32_t random_direction;  // 1 + randint(0, 4)
    float axis_roll;           // uniform of step_towards_player's axis choice
    float keep_roll;           // uniform: keeps its purposeful move when above 0.85
} RangedMobDraws;

typedef struct {
    float roll;       // uniform: spawns when below the floor's chance
    float cell_roll;  // uniform of choose_spawn_cell's jax.random.choice
} SpawnDraws;

typedef struct {
    // The keys of the actions that draw only when taken.
    Key do_key;
    Key book_key;
    Key enchant_key;
    MeleeMobDraws melee[MAX_MELEE_MOBS];
    PassiveMobDraws passive[MAX_PASSIVE_MOBS];
    RangedMobDraws ranged[MAX_RANGED_MOBS];
    SpawnDraws spawn[3];  // by MobClass: passive, melee, ranged, the order spawn_mobs draws in
    Key state_rng;  // the state's rng after the step
} StepDraws;

// out[lane].FIELD = VALUE for every lane, where VALUE may use the lane index l.
#define FOR_EACH_LANE(out, field, value) \
    for (int l = 0; l < KEY_LANES; l++) (out)[l].field = (value)

#define UNIFORM_LANE(bits) uniform_from_bits(LANE(bits, l))

// rng, sub = jax.random.split(rng), in every lane.
CRAFTAX_HOT_FN void lanes_split2(KeyLanes* rng, KeyLanes* sub) {
    lanes_split_at(rng, 1, sub);
    lanes_split_at(rng, 0, rng);
}

// The uniform bits, or the randint offset, of the next sub-key split off rng.
CRAFTAX_HOT_FN void lanes_next_bits(KeyLanes* rng, LaneWord* bits) {
    KeyLanes sub;
    lanes_split2(rng, &sub);
    lanes_bits(&sub, bits);
}

CRAFTAX_HOT_FN void lanes_next_randint_offset(KeyLanes* rng, int32_t minval, int32_t maxval, LaneWord* offset) {
    KeyLanes sub;
    lanes_split2(rng, &sub);
    lanes_randint_offset(&sub, minval, maxval, offset);
}

// update_mobs's draws from its key: one scan per mob class, each starting from split(rng)[0].
CRAFTAX_HOT_FN void draw_mobs(const KeyLanes* mobs_key, StepDraws* out) {
    KeyLanes rng;
    lanes_split_at(mobs_key, 0, &rng);
    for (int m = 0; m < MAX_MELEE_MOBS; m++) {
        LaneWord direction, axis, chase;
        lanes_next_randint_offset(&rng, 0, 4, &direction);
        lanes_next_bits(&rng, &axis);
        lanes_next_bits(&rng, &chase);
        lanes_split_at(&rng, 1, &rng);
        FOR_EACH_LANE(out, melee[m].random_direction, 1 + (int32_t)LANE(direction, l));
        FOR_EACH_LANE(out, melee[m].axis_roll, UNIFORM_LANE(axis));
        FOR_EACH_LANE(out, melee[m].chase_roll, UNIFORM_LANE(chase));
    }
    lanes_split_at(&rng, 0, &rng);
    for (int m = 0; m < MAX_PASSIVE_MOBS; m++) {
        LaneWord direction;
        lanes_next_randint_offset(&rng, 0, 8, &direction);
        FOR_EACH_LANE(out, passive[m].direction, 1 + (int32_t)LANE(direction, l));
    }
    lanes_split_at(&rng, 0, &rng);
    for (int m = 0; m < MAX_RANGED_MOBS; m++) {
        LaneWord direction, axis, keep;
        lanes_next_randint_offset(&rng, 0, 4, &direction);
        lanes_next_bits(&rng, &axis);
        lanes_next_bits(&rng, &keep);
        FOR_EACH_LANE(out, ranged[m].random_direction, 1 + (int32_t)LANE(direction, l));
        FOR_EACH_LANE(out, ranged[m].axis_roll, UNIFORM_LANE(axis));
        FOR_EACH_LANE(out, ranged[m].keep_roll, UNIFORM_LANE(keep));
    }
}

// spawn_mobs's draws from its key: per class, the spawn draw's split, then the position's.
CRAFTAX_HOT_FN void draw_spawns(const KeyLanes* spawn_key, StepDraws* out) {
    KeyLanes rng = *spawn_key;
    for (int c = MOB_PASSIVE; c <= MOB_RANGED; c++) {
        LaneWord roll, cell;
        lanes_next_bits(&rng, &roll);
        lanes_next_bits(&rng, &cell);
        FOR_EACH_LANE(out, spawn[c].roll, UNIFORM_LANE(roll));
        FOR_EACH_LANE(out, spawn[c].cell_roll, UNIFORM_LANE(cell));
    }
}

// Every draw of the step of each lane from craftax_step's rng, into out[0 .. KEY_LANES - 1]:
// each subsystem's key is split(rng)[1] in turn, the state keeping split(rng)[1] of what is left.
CRAFTAX_LANES_FN void draw_step_lanes(const KeyLanes* step_rng, StepDraws* out) {
    KeyLanes rng = *step_rng;
    KeyLanes do_key, book_key, enchant_key, mobs_key, spawn_key, state_rng;
    lanes_split2(&rng, &do_key);
    lanes_split2(&rng, &book_key);
    lanes_split2(&rng, &enchant_key);
    lanes_split2(&rng, &mobs_key);
    lanes_split2(&rng, &spawn_key);
    lanes_split_at(&rng, 1, &state_rng);
    draw_mobs(&mobs_key, out);
    draw_spawns(&spawn_key, out);
    FOR_EACH_LANE(out, do_key, lane_key(&do_key, l));
    FOR_EACH_LANE(out, book_key, lane_key(&book_key, l));
    FOR_EACH_LANE(out, enchant_key, lane_key(&enchant_key, l));
    FOR_EACH_LANE(out, state_rng, lane_key(&state_rng, l));
}

// The draws of one env's step (the other lanes hash copies of its key).
CRAFTAX_FN void draw_step(Key rng, StepDraws* out) {
    KeyLanes lanes;
    for (int l = 0; l < KEY_LANES; l++) set_lane_key(&lanes, l, rng);
    StepDraws all[KEY_LANES];
    draw_step_lanes(&lanes, all);
    *out = all[0];
}
