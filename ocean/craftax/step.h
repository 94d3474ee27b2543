// One environment step, as craftax_step in craftax/craftax/game_logic.py and step_env in
// envs/craftax_symbolic_env.py: the subsystems in the reference's order, with the random numbers
// drawn from the step's key before the step (draws.h), the reward (achievement weights plus
// 0.1 x change in health) and termination.
#pragma once
#include "interaction.h"
#include "mobs.h"
#include "player.h"

// calculate_light_level: a day of DAY_LENGTH steps, darkest around its 60% mark. In the jitted
// step XLA divides by the day length as a multiplication by its float32 reciprocal and fuses
// 1 - c * c^2 into one FMA.
// timestep: 0 .. MAX_TIMESTEPS (the device reads the host's results, see ReferenceTrig).
CRAFTAX_FN float light_level_at(int32_t timestep) {
#ifdef __CUDA_ARCH__
    return reference_trig.light_levels[timestep];
#else
    float progress = fmodf((float)timestep * (1.0f / (float)DAY_LENGTH), 1.0f) + 0.3f;
    float c = fabsf(reference_cosf(3.14159274f * progress));
    return fmaf(-c, c * c, 1.0f);
#endif
}

// is_game_over: the step limit, death, or the necromancer defeated.
CRAFTAX_FN int is_game_over(const GameState* s) {
    return s->timestep >= MAX_TIMESTEPS || s->player_health <= 0.0f || has_beaten_boss(s);
}

CRAFTAX_FN float craftax_step(const StepDraws* draws, GameState* s, int action) {
    uint8_t initial_achievements[NUM_ACHIEVEMENTS];
    memcpy(initial_achievements, s->achievements, sizeof(initial_achievements));
    float initial_health = s->player_health;

    // Sleeping and resting ignore the action.
    if (s->is_sleeping || s->is_resting) action = ACTION_NOOP;

    change_floor(s, action);
    prefetch_mob_surroundings(s);
    do_crafting(s, action);
    if (action == ACTION_DO) do_action(draws->do_key, s);
    place_block(s, action);
    shoot_arrow(s, action);
    cast_spell(s, action);
    drink_potion(s, action);
    if (action == ACTION_READ_BOOK) read_book(draws->book_key, s, action);
    if (action == ACTION_ENCHANT_SWORD || action == ACTION_ENCHANT_ARMOUR || action == ACTION_ENCHANT_BOW) {
        enchant(draws->enchant_key, s, action);
    }
    boss_logic(s);
    level_up_attributes(s, action);
    move_player(s, action);
    // The player's place is final: the view's rows load while the mobs move.
    prefetch_view(s);
    update_mobs(draws, s);
    spawn_mobs(draws, s);
    update_plants(s);
    update_player_intrinsics(s, action);
    clip_inventory_and_intrinsics(s);
    inventory_achievements(s);

    int32_t achievement_reward = 0;
    for (int a = 0; a < NUM_ACHIEVEMENTS; a++) {
        achievement_reward += ((int32_t)s->achievements[a] - (int32_t)initial_achievements[a]) * TABLE(ACHIEVEMENT_REWARD)[a];
    }
    // XLA fuses the health term into one FMA with the achievement term.
    float reward = fmaf(s->player_health - initial_health, 0.1f, (float)achievement_reward);

    s->timestep += 1;
    s->light_level = light_level_at(s->timestep);
    s->state_rng = draws->state_rng;
    return reward;
}

// The auto-resetting env's step (EnvironmentAutoReset.step): the step key and the reset key are
// the halves of `key`; a finished episode continues from a world generated with the reset key.
// Returns whether the episode ended; *reward is the reward of the finishing step.
CRAFTAX_FN int craftax_env_step(Key key, GameState* s, int action, float* reward, WorldgenScratch* scratch) {
    StepDraws draws;
    draw_step(key_split_at(key, 0), &draws);
    *reward = craftax_step(&draws, s, action);
    int done = is_game_over(s);
    if (done) generate_world(key_split_at(key_split_at(key, 1), 1), s, scratch);
    return done;
}
