"""ClassicState (state.h) as a numpy structured dtype, its fields named as the reference's EnvState."""

import numpy as np

MAP_SIZE = 64


def _mobs(count):
    return np.dtype([("position", "<i4", (count, 2)), ("health", "<i4", (count,)), ("mask", "u1", (count,)),
                     ("attack_cooldown", "<i4", (count,))], align=True)


INVENTORY = ("wood", "stone", "coal", "iron", "diamond", "sapling", "wood_pickaxe", "stone_pickaxe",
             "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword")

STATE_DTYPE = np.dtype([
    ("map", "u1", (MAP_SIZE, MAP_SIZE)),
    ("mob_map", "u1", (MAP_SIZE, MAP_SIZE)),
    ("player_position", "<i4", (2,)),
    ("player_direction", "<i4"),
    ("player_health", "<i4"), ("player_food", "<i4"), ("player_drink", "<i4"), ("player_energy", "<i4"),
    ("is_sleeping", "u1"),
    ("player_recover", "<f4"), ("player_hunger", "<f4"), ("player_thirst", "<f4"), ("player_fatigue", "<f4"),
    ("inventory", np.dtype([(name, "<i4") for name in INVENTORY], align=True)),
    ("zombies", _mobs(3)),
    ("cows", _mobs(3)),
    ("skeletons", _mobs(2)),
    ("arrows", _mobs(3)),
    ("arrow_directions", "<i4", (3, 2)),
    ("growing_plants_positions", "<i4", (10, 2)),
    ("growing_plants_age", "<i4", (10,)),
    ("growing_plants_mask", "u1", (10,)),
    ("light_level", "<f4"),
    ("achievements", "u1", (22,)),
    ("state_rng", "<u4", (2,)),
    ("timestep", "<i4"),
], align=True)


def state_fields(raw):
    """The state's bytes as {reference field name: flat numpy array} (nested as "zombies.mask")."""
    record = np.frombuffer(raw, dtype=STATE_DTYPE)[0]
    fields = {}
    for name in STATE_DTYPE.names:
        value = record[name]
        sub = STATE_DTYPE[name]
        if sub.names:
            for inner in sub.names:
                fields[f"{name}.{inner}"] = np.asarray(value[inner]).ravel()
        else:
            fields[name] = np.asarray(value).ravel()
    return fields
