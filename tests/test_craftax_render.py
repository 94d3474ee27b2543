"""Craftax's pixel frames (ocean/craftax/render_pixels.h) against the reference's jitted
render_craftax_pixels, bit for bit, over game states chosen to show every part of a frame: the
surface by day and by night, every dungeon floor's darkness, each mob and projectile kind in every
direction, the inventory's icons, counts and enchantments, the status bars, sleep, the boss, the
ladders and the map's edge. Tests marked ``reference`` need jax and craftax; the others need only
craftax's textures.
"""

import base64
from pathlib import Path

import numpy as np
import pytest
import test_watch
from conftest import compile_device_source, unavailable
from test_watch import ARTIFACTS, get_json, wait_for, watch_config

from pufferlib import watch
from pufferlib.exceptions import APIUsageError, ParameterError

ROOT = Path(__file__).resolve().parents[1]

# The watch page's headless Chromium, as its own tests start it.
browser = test_watch.browser

binding = pytest.importorskip("ocean.craftax.binding", reason="build the extensions first: python setup.py build_ext --inplace")
craftax_env = pytest.importorskip("ocean.craftax")
textures = pytest.importorskip("ocean.craftax.textures")


def require_textures():
    try:
        return textures.installed_assets()
    except FileNotFoundError as error:
        unavailable(str(error))


@pytest.fixture(scope="module")
def atlases():
    require_textures()
    return {block: textures.load_atlas(block) for block in textures.REFERENCE_BLOCK_SIZES}


def world(seed):
    return binding.World(binding.split(np.array([0, seed], np.uint32), 2)[1])


def step_randomly(w, steps, seed):
    rng = np.random.default_rng(seed)
    for step in range(steps):
        w.step(binding.split(np.array([1, seed * 100_000 + step], np.uint32), 2)[0], int(rng.integers(0, 43)))
    return w


# Scenario states: a generated world with fields rewritten. Floors are 48 x 48; the view is 9 x 11.

def go_to_floor(w, level):
    """The player on floor ``level``, standing where it arrives (the up ladder; on the surface its
    start), with the light of a dark floor as generated."""
    ladders = w.field("up_ladders").reshape(9, 2)
    if level:
        w.set_field("player_position", ladders[level])
    w.set_field("player_level", [level])
    return w


def place(w, kind, slot, offset, type_id, direction=None):
    """Mob or projectile ``slot`` of ``kind`` (melee_mobs, ..., player_projectiles) alive at
    ``offset`` cells from the player, on the player's floor."""
    level = int(w.field("player_level")[0])
    here = w.field("player_position").astype(np.int32)
    fields = {name: w.field(f"{kind}.{name}") for name in ("position", "mask", "type_id")}
    slots = fields["mask"].size // 9
    fields["position"].reshape(9, slots, 2)[level, slot] = here + np.asarray(offset)
    fields["mask"].reshape(9, slots)[level, slot] = 1
    fields["type_id"].reshape(9, slots)[level, slot] = type_id
    for name, values in fields.items():
        w.set_field(f"{kind}.{name}", values)
    if direction is not None:
        name = "mob_projectile_directions" if kind == "mob_projectiles" else "player_projectile_directions"
        directions = w.field(name).reshape(9, -1, 2)
        directions[level, slot] = direction
        w.set_field(name, directions)


def light_everything(w):
    w.set_field("light_map", np.ones(9 * 48 * 48, np.float32))


def set_fields(w, **fields):
    for name, value in fields.items():
        w.set_field(name.replace("__", "."), np.atleast_1d(value))
    return w


def rich_inventory(w):
    return set_fields(
        w, inventory__wood=12, inventory__stone=99, inventory__coal=7, inventory__iron=10, inventory__diamond=3,
        inventory__sapphire=1, inventory__ruby=140, inventory__sapling=5, inventory__torches=20, inventory__arrows=31,
        inventory__books=2, inventory__pickaxe=4, inventory__sword=3, inventory__bow=1,
        inventory__armour=[1, 2, 2, 1], inventory__potions=[1, 0, 10, 3, 99, 5], learned_spells=[1, 1],
        sword_enchantment=1, bow_enchantment=2, armour_enchantments=[1, 2, 0, 2],
        player_xp=12, player_dexterity=3, player_strength=5, player_intelligence=2,
        player_health=7.75, player_food=0, player_drink=10, player_energy=4, player_mana=15,
    )


def scenarios():
    """(name, state bytes) of each scenario."""
    states = []

    def keep(name, w):
        states.append((name, w._bytes().copy()))

    keep("surface at the start", world(0))
    for steps, seed in ((120, 1), (190, 2), (260, 3), (300, 4)):
        keep(f"surface after {steps} random steps (light level varies through the day)", step_randomly(world(seed), steps, seed))
    w = world(5)
    keep("night, darkest", set_fields(w, light_level=0.02, timestep=180))
    keep("night, dusk", set_fields(world(6), light_level=0.4))
    keep("night while asleep", set_fields(world(7), light_level=0.1, is_sleeping=1))
    keep("asleep by day", set_fields(world(8), is_sleeping=1, light_level=1.0))
    for direction in (1, 2, 3, 4):
        keep(f"facing {direction}", set_fields(world(9), player_direction=direction))
    for level in range(1, 9):
        keep(f"floor {level} in its darkness", go_to_floor(world(10 + level), level))
    w = go_to_floor(world(20), 3)
    set_fields(w, monsters_killed=np.full(9, 8))
    light_everything(w)
    keep("a cleared floor's open ladder, all lit", w)
    for corner, position in (("top left", [0, 0]), ("bottom right", [47, 47]), ("left edge", [20, 2])):
        keep(f"the map's edge, {corner}", set_fields(world(21), player_position=position))
    for type_id in range(8):
        w = world(30 + type_id)
        light_everything(w)
        place(w, "melee_mobs", 0, (-1, 0), type_id)
        place(w, "ranged_mobs", 0, (2, -3), type_id)
        place(w, "passive_mobs", 0, (0, 4), type_id % 3)
        place(w, "mob_projectiles", 0, (-3, -5), type_id, direction=[[-1, 0], [1, 0], [0, -1], [0, 1]][type_id % 4])
        place(w, "player_projectiles", 1, (4, 5), 7 - type_id, direction=[[0, 1], [0, -1], [1, 0], [-1, 0]][type_id % 4])
        place(w, "melee_mobs", 1, (9, 0), type_id)  # out of view: not drawn
        keep(f"mobs and projectiles of type {type_id}", w)
    w = go_to_floor(world(40), 8)
    light_everything(w)
    fields = w.field("map").reshape(9, 48, 48)
    row, col = w.field("player_position")
    fields[8, row - 1, col] = 32  # the necromancer, vulnerable: no mobs and no boss countdown
    w.set_field("map", fields)
    for kind, slots in (("melee_mobs", 3), ("ranged_mobs", 2)):
        w.set_field(f"{kind}.mask", np.zeros(9 * slots, np.uint8))
    keep("the necromancer, vulnerable", set_fields(w, boss_timesteps_to_spawn_this_round=0))
    keep("the necromancer, shielded", set_fields(w, boss_timesteps_to_spawn_this_round=3))
    keep("a full inventory", rich_inventory(world(50)))
    keep("a full inventory at night, asleep", set_fields(rich_inventory(world(51)), light_level=0.05, is_sleeping=1))
    keep("an arrowless bow keeps its enchantment off the arrows", set_fields(rich_inventory(world(52)), inventory__arrows=0))
    keep("below one health shows 1", set_fields(world(53), player_health=0.4, player_xp=0, player_level=0))
    return states


SCENARIOS = scenarios()


# The renderer compiles for the device from the same source (CRAFTAX_FN functions).

RENDER_KERNEL = """#include "render_pixels.h"
__global__ void render_kernel(const GameState* states, const uint8_t* atlas, int block, float* scratch, uint8_t* frames) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    RenderTextures t = {block, atlas};
    long values = (long)render_height(block) * render_width(block) * 3;
    render_frame(&states[i], &t, scratch + i * values, frames + i * values);
}
"""


def test_renderer_compiles_as_cpp(tmp_path):
    """nvcc compiles the headers as C++: check that much with the host's g++."""
    compile_device_source(RENDER_KERNEL, ROOT / "ocean" / "craftax", tmp_path, with_nvcc=False)


@pytest.mark.slow
def test_renderer_compiles_with_nvcc(tmp_path):
    compile_device_source(RENDER_KERNEL, ROOT / "ocean" / "craftax", tmp_path, with_nvcc=True)


# Without the reference: the env surface and its checks.

def test_rgb_array_env_renders_frames_of_the_reference_layout(atlases):
    env = craftax_env.Craftax(num_envs=2, render_mode="rgb_array", render_block_size=10)
    with pytest.raises(APIUsageError, match="reset"):
        env.render()
    env.reset(3)
    frame = env.render(1)
    assert frame.shape == (130, 110, 3) and frame.dtype == np.uint8
    states = env._states.states.reshape(2, binding.STATE_BYTES)
    assert np.array_equal(frame, binding.render_frame(states[1], atlases[10], 10))
    assert not np.array_equal(frame, env.render(0))
    assert env.final_frame(0) is None
    env.close()


def test_frames_are_the_float_frame_truncated_and_sleep_halves_the_view(atlases):
    state = SCENARIOS[0][1].copy()
    pixels = binding.render_pixels(state, atlases[16], 16)
    assert pixels.shape == (208, 176, 3)
    assert np.array_equal(binding.render_frame(state, atlases[16], 16), pixels.astype(np.uint8))
    fields = binding.state_fields(state)
    fields["light_level"][:] = 1.0
    awake = binding.render_pixels(state, atlases[16], 16)
    fields["is_sleeping"][:] = 1
    asleep = binding.render_pixels(state, atlases[16], 16)
    # Asleep, the view is half as bright and the player lies down; the inventory is as it was.
    view = np.zeros((208, 176), bool)
    view[:9 * 16] = True
    view[4 * 16:5 * 16, 5 * 16:6 * 16] = False
    assert np.array_equal(asleep[view], awake[view] * 0.5)
    assert np.array_equal(asleep[9 * 16:], awake[9 * 16:])
    assert not np.array_equal(asleep[4 * 16:5 * 16, 5 * 16:6 * 16], awake[4 * 16:5 * 16, 5 * 16:6 * 16] * 0.5)


def test_rendering_leaves_the_game_as_it_was(atlases):
    """Frames are read from the state: drawing them changes no observation, reward or flag."""
    runs = []
    for render_mode in ("ansi", "rgb_array"):
        env = craftax_env.Craftax(num_envs=4, render_mode=render_mode, render_block_size=10, reset_pool_size=4)
        obs, _ = env.reset(7)
        rng = np.random.default_rng(0)
        trace = [obs.copy()]
        for _ in range(50):
            obs, rewards, terminals, truncations, _ = env.step(rng.integers(0, 43, 4).astype(np.int32))
            env.render(0)
            trace += [obs.copy(), rewards.copy(), terminals.copy(), truncations.copy()]
        runs.append(trace)
        env.close()
    assert all(np.array_equal(a, b) for a, b in zip(*runs))


def test_bad_render_options_are_clear_errors(tmp_path, atlases):
    with pytest.raises(ParameterError, match="render_mode must be one of ansi, rgb_array"):
        craftax_env.Craftax(render_mode="human")
    with pytest.raises(ParameterError, match="render_block_size must be between"):
        craftax_env.Craftax(render_mode="rgb_array", render_block_size=2)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        craftax_env.Craftax(render_mode="rgb_array", textures=tmp_path / "missing")
    (tmp_path / "grass.png").write_bytes((require_textures() / "grass.png").read_bytes())
    with pytest.raises(FileNotFoundError, match="lacks .* of Craftax's textures"):
        craftax_env.Craftax(render_mode="rgb_array", textures=tmp_path)
    with pytest.raises(ValueError, match="atlas for 10-pixel cells is"):
        binding.render_frame(SCENARIOS[0][1], atlases[16], 10)
    with pytest.raises(ValueError, match="a game state is"):
        binding.render_frame(SCENARIOS[0][1][:-1], atlases[10], 10)


def test_a_named_texture_folder_draws_its_own_textures(tmp_path, atlases):
    assets = require_textures()
    for png in assets.glob("*.png"):
        (tmp_path / png.name).write_bytes(png.read_bytes())
    assert np.array_equal(textures.load_atlas(10, tmp_path), atlases[10])
    # Grass drawn in another colour shows in the frame.
    from PIL import Image

    Image.new("RGBA", (16, 16), (255, 0, 255, 255)).save(tmp_path / "grass.png")
    env = craftax_env.Craftax(render_mode="rgb_array", render_block_size=10, textures=str(tmp_path))
    env.reset(0)
    frame = env.render().astype(int)
    env.close()
    # At least one grass cell of 10 x 10 pixels in view, magenta in the morning light.
    assert ((frame[:, :, 0] > 200) & (frame[:, :, 1] < 20) & (frame[:, :, 2] > 200)).sum() >= 100


# Against the reference. Its own texture loader takes over a minute for 64-pixel cells (it
# computes the night's texture one pixel at a time), so 64 is compared only by hand.
COMPARED_BLOCK_SIZES = (10, 16)

@pytest.fixture(scope="module")
def reference():
    """The reference's jitted render_craftax_pixels for each block size, and the conversion of a
    C state into its EnvState."""
    try:
        import jax
        import jax.numpy as jnp
        from craftax.craftax import constants, renderer
    except ImportError as error:
        unavailable(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")
    from ocean.craftax import parity

    env, _ = parity.reference_env()
    # The EnvState's structure, shapes and dtypes, without compiling world generation.
    template = jax.eval_shape(env.reset, jax.random.PRNGKey(0))[1]
    renderers = {}
    original = renderer.load_all_textures
    try:
        for block in COMPARED_BLOCK_SIZES:
            # The reference would process every size and write a cache into its package folder.
            loaded = {block: constants.load_all_textures_given_size(block)}
            renderer.load_all_textures = lambda loaded=loaded: loaded
            renderers[block] = jax.jit(renderer.make_craftax_pixel_renderer(block))
    finally:
        renderer.load_all_textures = original

    def as_array(value, like):
        return jnp.asarray(np.asarray(value).reshape(like.shape).astype(like.dtype))

    def env_state(state):
        fields = binding.state_fields(state)
        replaced = {}
        for name, value in vars(template).items():
            if name == "fractal_noise_angles":
                continue
            if hasattr(value, "__dataclass_fields__"):
                replaced[name] = value.replace(**{sub: as_array(fields[f"{name}.{sub}"], subvalue)
                                                  for sub, subvalue in vars(value).items()})
            else:
                replaced[name] = as_array(fields[name], value)
        return template.replace(**replaced)

    def render(state, block):
        return np.asarray(renderers[block](env_state(state)))

    # Craftax-Pixels' get_obs: the frame at 10 pixels a cell over 255, inside the jitted program.
    observe = jax.jit(lambda state: renderers[10].__wrapped__(state) / 255.0)
    render.observation = lambda state: np.asarray(observe(env_state(state)))
    return render


def bitwise(mine, reference):
    return mine.dtype == np.float32 and np.array_equal(mine.view(np.uint32), reference.astype(np.float32).view(np.uint32))


@pytest.mark.reference
@pytest.mark.parametrize("name,state", SCENARIOS, ids=[name for name, _ in SCENARIOS])
def test_frames_equal_the_reference_bit_for_bit(reference, atlases, name, state):
    ref = reference(state, 10)
    mine = binding.render_pixels(state, atlases[10], 10)
    assert bitwise(mine, ref), f"{name}: {np.count_nonzero(mine != ref)} values differ"
    assert np.array_equal(binding.render_frame(state, atlases[10], 10), ref.astype(np.uint8))


@pytest.mark.reference
@pytest.mark.reference
def test_pixel_observations_equal_the_reference_pixel_envs(reference, atlases):
    env = craftax_env.CraftaxPixels(num_envs=len(SCENARIOS[::4]))
    env.reset(0)
    states = env._states.states.reshape(env.num_envs, binding.STATE_BYTES)
    for i, (_, state) in enumerate(SCENARIOS[::4]):
        states[i] = state
    env._draw_observations()
    for i, (name, state) in enumerate(SCENARIOS[::4]):
        assert bitwise(env.observations[i], reference.observation(state)), name
    env.close()


@pytest.mark.reference
def test_sixteen_pixel_cells_equal_the_reference(reference, atlases):
    for name, state in SCENARIOS[::3]:
        assert bitwise(binding.render_pixels(state, atlases[16], 16), reference(state, 16)), name


# The pixel observation and its policy.

def test_pixel_observations_are_the_frames_over_255_through_autoresets(atlases):
    pixels = craftax_env.CraftaxPixels(num_envs=4, reset_pool_size=2, num_threads=2)
    compact = craftax_env.CraftaxCompact(num_envs=4, reset_pool_size=2)
    assert pixels.single_observation_space.shape == (130, 110, 3) and pixels.observations.dtype == np.float32
    pixels.reset(11)
    compact.reset(11)
    rng = np.random.default_rng(1)
    ended = 0
    for step in range(400):
        actions = rng.integers(0, 43, 4).astype(np.int32)
        _, rewards, terminals, _, _ = pixels.step(actions)
        compact.step(actions)
        assert np.array_equal(rewards, compact.rewards) and np.array_equal(terminals, compact.terminals)
        ended += int(terminals.sum())
        if step % 20 == 0 or terminals.any():
            states = pixels._states.states.reshape(4, binding.STATE_BYTES)
            assert np.array_equal(states, compact._states.states.reshape(4, binding.STATE_BYTES))
            for i in range(4):
                expected = binding.render_pixels(states[i], atlases[10], 10) * np.float32(1 / 255)
                assert np.array_equal(pixels.observations[i], expected)
    assert ended >= 1  # the observation after an episode ends is the next episode's first
    pixels.close()
    compact.close()


def test_pixel_cnn_acts_on_pixel_observations():
    import torch

    from pufferlib.models import PixelCNN

    env = craftax_env.CraftaxPixels(num_envs=3)
    observations, _ = env.reset(0)
    policy = PixelCNN(env, hidden_size=64)
    logits, values, _ = policy.forward_eval(torch.as_tensor(observations))
    assert logits.shape == (3, 43) and values.shape == (3,)
    (logits.logsumexp(-1).sum() + values.sum()).backward()
    assert policy.network[0].weight.grad.abs().sum() > 0
    env.close()
    with pytest.raises(APIUsageError, match="PixelCNN needs image observations of rank 3"):
        PixelCNN(craftax_env.CraftaxCompact())


# Watching and recording a policy: puffer watch's page and puffer eval's video files.

def health_icon(frame, block=16):
    """The inventory's first cell, the health icon's square (which no count covers)."""
    top, left = 9 * block + (block - int(0.8 * block)) // 2, (block - int(0.8 * block)) // 2
    return frame[top:top + int(0.4 * block), left:left + int(0.4 * block)]


def test_watch_serves_craftax_frames_in_pixels(tmp_path, atlases):
    config = watch_config("puffer_craftax", tmp_path, "--eval.fps", "50", "--env.reset-pool-size", "2")
    server, player = watch.start("puffer_craftax", config, [], port=0)
    try:
        frame = wait_for(lambda: get_json(server, "/frame") if get_json(server, "/frame")["index"] > 2 else None, 30, "frames")
    finally:
        watch.stop(server, player)
    assert (frame["kind"], frame["height"], frame["width"], frame["error"]) == ("rgb", 208, 176, None)
    rgb = np.frombuffer(base64.b64decode(frame["rgba"]), np.uint8).reshape(208, 176, 4)[:, :, :3]
    state = binding.state_fields(SCENARIOS[0][1].copy())
    expected = health_icon(binding.render_frame(SCENARIOS[0][1], atlases[16], 16))
    assert state["player_health"][0] >= 1 and np.array_equal(health_icon(rgb), expected)


def test_the_watch_page_paints_craftax_pixels(browser, tmp_path):
    config = watch_config("puffer_craftax", tmp_path, "--eval.fps", "20", "--env.reset-pool-size", "2")
    server, player = watch.start("puffer_craftax", config, [], port=0)
    try:
        browser.get(server.url)
        canvas = browser.find_element("id", "env")
        first = int(wait_for(lambda: int(canvas.get_attribute("data-index") or 0), 30, "a first frame"))
        wait_for(lambda: int(canvas.get_attribute("data-index")) >= first + 5, 30, "frames to advance")
        # The surface's grass: green pixels, and the inventory's heart: red ones.
        counts = browser.execute_script(
            "const c = document.getElementById('env'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let green = 0, red = 0; for (let i = 0; i < d.length; i += 4) {"
            "if (d[i + 1] > 90 && d[i] < 90 && d[i + 2] < 90) green++; if (d[i] > 180 && d[i + 1] < 60) red++; }"
            "return [green, red];")
        assert counts[0] > 1000 and counts[1] > 10, counts
        ARTIFACTS.mkdir(exist_ok=True)
        assert browser.save_screenshot(str(ARTIFACTS / "watch_craftax.png"))
    finally:
        watch.stop(server, player)


def test_the_state_an_episode_ended_in_is_kept_and_drawn_as_its_final_frame(atlases):
    env = craftax_env.Craftax(num_envs=2, render_mode="rgb_array", render_block_size=10, reset_pool_size=2)
    env.keep_final_frames()
    env.reset(3)
    assert env.final_frame(0) is None  # no episode has ended yet
    states = env._states.states.reshape(2, binding.STATE_BYTES)
    fields = binding.state_fields(states[0])
    fields["timestep"][:] = 100_000 - 3  # env 0's episode reaches the time limit in 3 steps
    fields["inventory.wood"][:] = 9
    for _ in range(3):
        env.step(np.zeros(2, np.int32))
    assert env.truncations[0] and not env.truncations[1]
    kept = env._final_states.reshape(2, binding.STATE_BYTES)
    ended = binding.state_fields(kept[0].copy())
    assert ended["timestep"][0] == 100_000 and ended["inventory.wood"][0] == 9  # after its last step, before the reset
    assert binding.state_fields(states[0].copy())["timestep"][0] == 0  # the live state is the next episode's
    final = env.final_frame(0)
    assert final.shape == (130, 110, 3) and np.array_equal(final, binding.render_frame(kept[0], atlases[10], 10))
    assert not np.array_equal(final, env.render(0))
    assert env.final_frame(1) is None
    env.close()


@pytest.fixture(scope="module")
def trained_craftax(tmp_path_factory):
    """A data folder holding a briefly trained puffer_craftax policy."""
    from pufferlib import cli

    data = tmp_path_factory.mktemp("craftax_run")
    assert cli.main(["train", "puffer_craftax", "--train.total-timesteps", "512", "--vec.num-envs", "8",
                     "--env.reset-pool-size", "4", "--train.minibatch-size", "512", "--base.solve-episodes", "4",
                     "--train.dashboard", "off", "--train.data-dir", str(data)]) == 0
    return data


@pytest.mark.slow
def test_eval_video_shows_each_episode_to_the_frame_it_ended_in(trained_craftax, tmp_path, monkeypatch, capsys):
    from pufferlib import cli, player

    # Agent 0's first episode starts 5 steps short of the time limit.
    envs, recorded = [], []
    reset, save = craftax_env.Craftax.reset, player.Playback.save

    def reset_near_the_time_limit(self, seed=0):
        result = reset(self, seed)
        binding.state_fields(self._states.states.reshape(self.num_envs, binding.STATE_BYTES)[0])["timestep"][:] = 100_000 - 5
        envs.append(self)
        return result

    def keep_frames(self, output, fps):
        recorded.extend(self.frames)
        return save(self, output, fps)

    monkeypatch.setattr(craftax_env.Craftax, "reset", reset_near_the_time_limit)
    monkeypatch.setattr(player.Playback, "save", keep_frames)
    assert cli.main(["eval", "puffer_craftax", "--eval.output", str(tmp_path / "agent.gif"), "--eval.episodes", "1",
                     "--eval.fps", "8", "--train.data-dir", str(trained_craftax)]) == 0
    assert "Episode 1 of 1: return" in capsys.readouterr().out
    (env,) = envs
    # The first frame, one after each of the 5 steps, the last the state the episode ended in.
    assert len(recorded) == 6
    ended = env._final_states.reshape(env.num_envs, binding.STATE_BYTES)[0]
    assert binding.state_fields(ended.copy())["timestep"][0] == 100_000
    assert np.array_equal(recorded[-1], binding.render_frame(ended, env._atlas, env.render_block_size))


@pytest.mark.slow
def test_eval_records_a_trained_craftax_policy_to_mp4_and_gif(trained_craftax, tmp_path, capsys):
    import imageio.v3 as iio

    from pufferlib import cli

    flags = ["--train.data-dir", str(trained_craftax)]
    for name in ("agent.mp4", "agent.gif"):
        capsys.readouterr()
        assert cli.main(["eval", "puffer_craftax", "--eval.output", str(tmp_path / name), "--eval.episodes", "1",
                         "--eval.max-steps", "40", "--eval.fps", "8", *flags]) == 0
        out = capsys.readouterr().out
        assert f"to {tmp_path / name}" in out and "\x1b" not in out  # pixels, not text, are what was shown
        frames = iio.imread(tmp_path / name)
        assert frames.shape[1:3] == (208, 176) and len(frames) >= 2
        assert len({frame.tobytes() for frame in frames}) >= 2  # the game moves
