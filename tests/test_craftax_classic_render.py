"""Craftax-Classic's pixel frames (ocean/craftax_classic/render_pixels.h) against the reference's
jitted Classic render_craftax_pixels, bit for bit, over states chosen to show every part of a
frame: the surface by day, at dusk and by night, sleep, every mob kind and arrow direction, every
block, full and empty inventories, low and high intrinsics and the map's edges. Tests marked
``reference`` need jax and craftax; the others need only craftax's textures.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_device_source, unavailable

from pufferlib.exceptions import ParameterError

ROOT = Path(__file__).resolve().parents[1]

binding = pytest.importorskip("ocean.craftax_classic.binding", reason="build the extensions first: python setup.py build_ext --inplace")
classic_env = pytest.importorskip("ocean.craftax_classic")
textures = pytest.importorskip("ocean.craftax.textures")
state_view = pytest.importorskip("ocean.craftax_classic.state_view")


@pytest.fixture(scope="module")
def atlases():
    try:
        textures.installed_assets("craftax_classic")
    except FileNotFoundError as error:
        unavailable(str(error))
    return {block: textures.load_atlas(block, game="craftax_classic") for block in textures.CLASSIC_REFERENCE_BLOCK_SIZES}


# Scenario states: a generated world (64 x 64; the view is 7 x 9) with fields rewritten.

def world(seed, steps=0):
    """The world of seed ``seed`` after ``steps`` random actions."""
    w = binding.World(binding.split(np.array([0, seed], np.uint32), 1))
    rng = np.random.default_rng(seed)
    for step in range(steps):
        w.step(binding.split(np.array([1, seed * 100_000 + step], np.uint32), 0), int(rng.integers(0, 17)))
    return w.state_bytes()


def edited(raw, **fields):
    """``raw`` with fields replaced (``inventory__wood`` names inventory.wood)."""
    record = np.frombuffer(raw, dtype=state_view.STATE_DTYPE).copy()
    for name, value in fields.items():
        if "__" in name:
            outer, inner = name.split("__")
            record[outer][inner] = value
        else:
            record[name] = value
    return record.tobytes()


def with_mobs(raw, kind, offsets, directions=None):
    """Mobs of ``kind`` alive at ``offsets`` cells from the player (slots in order), the rest dead."""
    record = np.frombuffer(raw, dtype=state_view.STATE_DTYPE).copy()
    here = record["player_position"][0]
    mobs = record[kind][0]
    mobs["mask"][:] = 0
    for slot, offset in enumerate(offsets):
        mobs["position"][slot] = here + np.asarray(offset)
        mobs["mask"][slot] = 1
    if directions is not None:
        record["arrow_directions"][0][: len(directions)] = directions
    return record.tobytes()


def every_block(raw):
    """The view's cells cycling through every block type."""
    record = np.frombuffer(raw, dtype=state_view.STATE_DTYPE).copy()
    row, col = record["player_position"][0]
    for k, (r, c) in enumerate((r, c) for r in range(row - 3, row + 4) for c in range(col - 4, col + 5)):
        record["map"][0][r, c] = k % 17
    return record.tobytes()


def full_inventory(raw, count):
    fields = {f"inventory__{name}": count for name in state_view.INVENTORY}
    return edited(raw, **fields)


def scenarios():
    states = []

    def keep(name, raw):
        states.append((name, raw))

    for light in (1.0, 0.8, 0.5, 0.45, 0.2, 0.0):
        keep(f"the surface at light {light}", edited(world(1), light_level=light))
    keep("asleep by day", edited(world(2), is_sleeping=1, light_level=1.0))
    keep("asleep at night", edited(world(2), is_sleeping=1, light_level=0.1))
    for direction in (1, 2, 3, 4):
        keep(f"facing {direction}", edited(world(3), player_direction=direction))
    keep("every block", every_block(world(4)))
    for kind, slots in (("zombies", 3), ("cows", 3), ("skeletons", 2)):
        offsets = [(-1, 0), (2, -3), (0, 4)][:slots]
        keep(f"{kind} in view", with_mobs(world(5), kind, offsets))
        keep(f"{kind} at night", edited(with_mobs(world(6), kind, offsets), light_level=0.3))
    keep("a mob over the player", with_mobs(world(7), "zombies", [(0, 0)]))
    keep("mobs out of view", with_mobs(with_mobs(world(7), "cows", [(4, 0), (0, -5), (-9, 9)]), "zombies", [(3, 5)]))
    keep("arrows up, down, left", with_mobs(world(8), "arrows", [(-1, 0), (1, 0), (0, -1)], [(-1, 0), (1, 0), (0, -1)]))
    keep("arrows right and diagonal", with_mobs(world(9), "arrows", [(0, 1), (2, 2), (-2, -2)], [(0, 1), (1, 1), (-1, -1)]))
    keep("an arrow at dusk", edited(with_mobs(world(9), "arrows", [(0, 2)], [(0, -1)]), light_level=0.6))
    keep("an empty inventory", full_inventory(world(10), 0))
    keep("one of everything", full_inventory(world(10), 1))
    keep("nine of everything", full_inventory(world(11), 9))
    keep("more than nine of everything", full_inventory(world(11), 37))
    keep("low intrinsics", edited(world(12), player_health=1, player_food=0, player_drink=2, player_energy=0))
    keep("high intrinsics", edited(world(12), player_health=9, player_food=9, player_drink=9, player_energy=9))
    keep("intrinsics above nine and below zero", edited(world(13), player_health=12, player_food=-1, player_drink=10,
                                                         player_energy=-3))
    for corner in ((0, 0), (0, 63), (63, 0), (63, 63), (2, 30), (61, 5)):
        keep(f"at {corner}", edited(world(14), player_position=corner))
    for seed in (20, 21, 22):
        keep(f"seed {seed} after 300 random steps", world(seed, 300))
    return states


SCENARIOS = scenarios()


@pytest.fixture(scope="module")
def reference():
    """The reference's jitted Classic render_craftax_pixels for each block size, and the
    conversion of a C state into its EnvState."""
    try:
        import jax
        import jax.numpy as jnp
        from craftax.craftax_classic import constants, renderer
        from craftax.craftax_classic.envs.craftax_symbolic_env import CraftaxClassicSymbolicEnv
    except ImportError as error:
        unavailable(f"craftax/jax reference not installed ({error}); pip install -r requirements-craftax.txt")

    env = CraftaxClassicSymbolicEnv()
    template = jax.eval_shape(lambda key: env.reset(key, env.default_params), jax.random.PRNGKey(0))[1]
    renderers = {}
    original = renderer.load_all_textures
    try:
        for block in textures.CLASSIC_REFERENCE_BLOCK_SIZES:
            # The reference would process every size and write a cache into its package folder.
            loaded = {block: constants.load_all_textures_given_size(block)}
            renderer.load_all_textures = lambda loaded=loaded: loaded
            renderers[block] = (jax.jit(renderer.make_craftax_pixel_renderer(block)), loaded[block])
    finally:
        renderer.load_all_textures = original

    def as_array(value, like):
        return jnp.asarray(np.asarray(value).reshape(like.shape).astype(like.dtype))

    def env_state(raw):
        fields = state_view.state_fields(raw)
        replaced = {}
        for name, value in vars(template).items():
            if hasattr(value, "__dataclass_fields__"):
                replaced[name] = value.replace(**{sub: as_array(fields[f"{name}.{sub}"], subvalue)
                                                  for sub, subvalue in vars(value).items()})
            elif name in fields:
                replaced[name] = as_array(fields[name], value)
            else:  # world generation's noise angles, which the C state leaves out and frames never read
                replaced[name] = jax.tree_util.tree_map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), value)
        return template.replace(**replaced)

    def render(raw, block):
        return np.asarray(renderers[block][0](env_state(raw)))

    render.textures = lambda block: renderers[block][1]
    return render


def bitwise(mine, reference):
    return mine.dtype == np.float32 and np.array_equal(mine.view(np.uint32), reference.astype(np.float32).view(np.uint32))


def state_array(raw):
    return np.frombuffer(raw, np.uint8)


@pytest.mark.reference
@pytest.mark.parametrize("name,raw", SCENARIOS, ids=[name for name, _ in SCENARIOS])
def test_frames_equal_the_reference_bit_for_bit(reference, atlases, name, raw):
    for block in (7, 16):
        ref = reference(raw, block)
        mine = binding.render_pixels(state_array(raw), atlases[block], block)
        assert bitwise(mine, ref), f"{name} at {block} pixels a cell: {np.count_nonzero(mine != ref)} values differ"
        assert np.array_equal(binding.render_frame(state_array(raw), atlases[block], block), ref.astype(np.uint8))


@pytest.mark.reference
def test_human_sized_cells_equal_the_reference(reference, atlases):
    for name, raw in SCENARIOS[::6]:
        ref = reference(raw, 64)
        mine = binding.render_pixels(state_array(raw), atlases[64], 64)
        assert bitwise(mine, ref), f"{name}: {np.count_nonzero(mine != ref)} values differ"


@pytest.mark.reference
def test_night_noise_weights_are_the_reference_texture(reference):
    for block in textures.CLASSIC_REFERENCE_BLOCK_SIZES:
        expected = np.asarray(reference.textures(block)["night_noise_intensity_texture"])[:, :, 0]
        assert bitwise(binding.night_noise_weights(block), expected)


# Without the reference: the env surface, final frames and the device build.

def test_rgb_array_env_renders_frames_of_the_reference_layout(atlases):
    env = classic_env.CraftaxClassic(num_envs=2, render_mode="rgb_array", render_block_size=7)
    env.reset(0)
    frame = env.render(1)
    assert frame.shape == (9 * 7, 9 * 7, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, binding.render_frame(binding.env_state_bytes(env.c_envs, 1), atlases[7], 7))
    env.step(np.zeros(2, np.int32))
    assert env.render(0).shape == (63, 63, 3)
    env.close()
    text = classic_env.CraftaxClassic(num_envs=1)
    text.reset(0)
    assert isinstance(text.render(0), str)
    text.close()


def test_bad_render_options_are_clear_errors(tmp_path):
    with pytest.raises(ParameterError, match="render_mode"):
        classic_env.CraftaxClassic(render_mode="human")
    with pytest.raises(ParameterError, match="render_block_size"):
        classic_env.CraftaxClassic(render_mode="rgb_array", render_block_size=5)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        classic_env.CraftaxClassic(render_mode="rgb_array", textures=tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="lacks"):
        classic_env.CraftaxClassic(render_mode="rgb_array", textures=tmp_path)


def test_a_named_texture_folder_draws_its_own_textures(tmp_path, atlases):
    folder = tmp_path / "assets"
    shutil.copytree(textures.installed_assets("craftax_classic"), folder)
    assert np.array_equal(textures.load_atlas(16, folder, game="craftax_classic"), atlases[16])
    pixels = np.zeros((16, 16, 4), np.uint8)
    pixels[:, :, 0] = 200
    pixels[:, :, 3] = 255
    import imageio.v3 as iio

    iio.imwrite(folder / "grass.png", pixels)
    changed = textures.load_atlas(16, folder, game="craftax_classic")
    raw = every_block(world(4))
    frame = binding.render_frame(state_array(raw), changed, 16)
    assert not np.array_equal(frame, binding.render_frame(state_array(raw), atlases[16], 16))


def test_the_state_an_episode_ended_in_is_kept_and_drawn_as_its_final_frame(atlases):
    env = classic_env.CraftaxClassic(num_envs=2, render_mode="rgb_array", render_block_size=7)
    env.keep_final_frames()
    env.reset(3)
    assert env.final_frame(0) is None  # no episode has ended yet
    # Env 0's episode reaches the time limit in 3 steps, with a full inventory.
    raw = edited(binding.env_state_bytes(env.c_envs, 0), timestep=10_000 - 3, inventory__wood=9)
    binding.load_env_state_bytes(env.c_envs, 0, raw)
    for _ in range(3):
        env.step(np.zeros(2, np.int32))
    assert env.truncations[0] and not env.truncations[1]
    kept = env._final_states.reshape(2, binding.STATE_BYTES)
    ended = state_view.state_fields(kept[0].tobytes())
    assert ended["timestep"][0] == 10_000 and ended["inventory.wood"][0] == 9  # after its last step, before the reset
    assert env.state(0)["timestep"][0] == 0  # the live state is the next episode's
    final = env.final_frame(0)
    assert final.shape == (63, 63, 3) and np.array_equal(final, binding.render_frame(kept[0], atlases[7], 7))
    assert not np.array_equal(final, env.render(0))
    assert env.final_frame(1) is None
    env.close()


def test_final_states_survive_a_checkpoint_restore(atlases):
    env = classic_env.CraftaxClassic(num_envs=1, render_mode="rgb_array", render_block_size=7)
    env.keep_final_frames()
    env.reset(5)
    saved = env.get_state()
    other = classic_env.CraftaxClassic(num_envs=1, render_mode="rgb_array", render_block_size=7)
    other.keep_final_frames()
    other.set_state(saved)
    env.close()  # the saved bytes point at this env's buffer, which restore must not keep
    binding.load_env_state_bytes(other.c_envs, 0, edited(binding.env_state_bytes(other.c_envs, 0), timestep=10_000 - 1))
    other.step(np.zeros(1, np.int32))
    assert other.truncations[0]
    assert other.final_frame(0) is not None
    other.close()


RENDER_KERNEL = """#include "render_pixels.h"
__global__ void render_kernel(const ClassicState* states, const uint8_t* atlas, int block, float* scratch, uint8_t* frames) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    ClassicTextures t = {block, atlas};
    long values = (long)classic_render_height(block) * classic_render_width(block) * 3;
    classic_render_frame(&states[i], &t, scratch + i * values, frames + i * values);
}
"""


def test_renderer_compiles_as_cpp(tmp_path):
    """nvcc compiles the headers as C++: check that much with the host's g++."""
    compile_device_source(RENDER_KERNEL, ROOT / "ocean" / "craftax_classic", tmp_path, with_nvcc=False)


@pytest.mark.slow
def test_renderer_compiles_with_nvcc(tmp_path):
    compile_device_source(RENDER_KERNEL, ROOT / "ocean" / "craftax_classic", tmp_path, with_nvcc=True)


# Recording a policy: puffer eval's video files.

@pytest.fixture(scope="module")
def trained_classic(tmp_path_factory):
    """A data folder holding a briefly trained puffer_craftax_classic policy."""
    from pufferlib import cli

    data = tmp_path_factory.mktemp("craftax_classic_run")
    assert cli.main(["train", "puffer_craftax_classic", "--train.total-timesteps", "512", "--vec.num-envs", "8",
                     "--train.minibatch-size", "512", "--train.dashboard", "off", "--train.data-dir", str(data)]) == 0
    return data


@pytest.mark.slow
def test_eval_gif_shows_each_episode_to_the_frame_it_ended_in(atlases, trained_classic, tmp_path, monkeypatch, capsys):
    import imageio.v3 as iio

    from pufferlib import cli, player

    # Agent 0's first episode starts 5 steps short of the time limit.
    envs, recorded = [], []
    reset, save = classic_env.CraftaxClassic.reset, player.Playback.save

    def reset_near_the_time_limit(self, seed=0):
        result = reset(self, seed)
        binding.load_env_state_bytes(self.c_envs, 0, edited(binding.env_state_bytes(self.c_envs, 0), timestep=10_000 - 5))
        envs.append(self)
        return result

    def keep_frames(self, output, fps):
        recorded.extend(self.frames)
        return save(self, output, fps)

    monkeypatch.setattr(classic_env.CraftaxClassic, "reset", reset_near_the_time_limit)
    monkeypatch.setattr(player.Playback, "save", keep_frames)
    output = tmp_path / "agent.gif"
    assert cli.main(["eval", "puffer_craftax_classic", "--eval.output", str(output), "--eval.episodes", "1",
                     "--eval.fps", "8", "--train.data-dir", str(trained_classic)]) == 0
    out = capsys.readouterr().out
    assert "Episode 1 of 1: return" in out and f"to {output}" in out and "\x1b" not in out
    (env,) = envs
    # The first frame, one after each of the 5 steps, the last the state the episode ended in.
    assert len(recorded) == 6
    ended = env._final_states.reshape(env.num_envs, binding.STATE_BYTES)[0]
    assert state_view.state_fields(ended.tobytes())["timestep"][0] == 10_000
    assert np.array_equal(recorded[-1], binding.render_frame(ended, atlases[16], 16))
    frames = iio.imread(output)
    assert frames.shape == (6, 9 * 16, 9 * 16, 3)
