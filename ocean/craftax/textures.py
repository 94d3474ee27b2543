"""The textures of Craftax's pixel frames, and of Craftax-Classic's: the reference's own PNGs,
read at run time from the installed ``craftax`` package (or a folder of the same files that the
user names), decoded and resized as the reference's ``load_texture`` does, and packed into the
atlas that the game's ``render_pixels.h`` draws from. Nothing is fetched and no texture ships with
this project.
"""

import importlib
import importlib.util
from pathlib import Path

import numpy as np

# Block sizes the reference draws: its agent's pixel observation (10), its image size (16) and
# its human view (64). Any size from binding.MIN_BLOCK_PIXELS up draws.
REFERENCE_BLOCK_SIZES = (10, 16, 64)
# Classic's: its agent's pixel observation (7), its image size (16) and its human view (64).
CLASSIC_REFERENCE_BLOCK_SIZES = (7, 16, 64)

# Each game's binding (its atlas layout), its textures' folder inside the craftax package and its name.
GAMES = {"craftax": ("ocean.craftax.binding", "craftax", "Craftax"),
         "craftax_classic": ("ocean.craftax_classic.binding", "craftax_classic", "Craftax-Classic")}


def installed_assets(game="craftax"):
    """The texture folder of ``game`` in the installed ``craftax`` package, found without
    importing it (that would import JAX)."""
    spec = importlib.util.find_spec("craftax")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "Craftax's pixel frames draw the textures of the JAX package craftax, which is not installed: "
            "pip install craftax, or pass textures=<folder> naming a folder that holds its assets/*.png"
        )
    return Path(list(spec.submodule_search_locations)[0]) / GAMES[game][1] / "assets"


def read_texture(path, size, clamp_alpha=True):
    """load_texture(filename, size, clamp_alpha) of craftax/craftax/constants.py (and of
    craftax_classic's): RGBA with alpha 1 where the pixel is fully opaque, else 0 (with
    ``clamp_alpha=False`` the file's alpha), resized from 16 x 16 by nearest neighbour."""
    import imageio.v3 as iio
    from PIL import Image

    rgba = np.asarray(iio.imread(path, mode="RGBA")).astype(np.int64)
    if rgba.shape != (16, 16, 4):
        raise ValueError(f"{path}: a Craftax texture is 16 x 16 RGBA, got shape {rgba.shape}")
    if clamp_alpha:
        rgba[:, :, 3] //= 255
    image = rgba.astype(np.uint8)
    if size != 16:
        image = np.asarray(Image.fromarray(image).resize((size, size), resample=Image.NEAREST))
    return image


def load_atlas(block_size, assets=None, game="craftax"):
    """Every texture ``game``'s renderer ("craftax" or "craftax_classic") draws at ``block_size``
    pixels a cell, as one uint8 atlas; ``assets`` is a folder of the reference's PNGs for that
    game (default: the installed package's)."""
    if game not in GAMES:
        raise ValueError(f"game must be one of {', '.join(GAMES)}, got {game!r}")
    binding = importlib.import_module(GAMES[game][0])
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < binding.MIN_BLOCK_PIXELS:
        raise ValueError(f"block_size must be an integer >= {binding.MIN_BLOCK_PIXELS} (pixels a cell), got {block_size!r}")
    folder = Path(assets) if assets is not None else installed_assets(game)
    if not folder.is_dir():
        raise FileNotFoundError(f"textures={folder}: no such folder; name the folder that holds {GAMES[game][2]}'s assets/*.png")
    # Classic's layout also says which textures keep their alpha 0 .. 255.
    layout = [(*entry, False)[:4] for entry in binding.texture_layout(block_size)]
    atlas = np.zeros(binding.atlas_bytes(block_size), np.uint8)
    missing = [name for name, *_ in layout if name is not None and not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {len(missing)} of {GAMES[game][2]}'s textures ({', '.join(missing[:4])}, ...): "
                                f"name the craftax package's {GAMES[game][1]}/assets folder")
    decoded = {}
    for name, offset, size, keeps_alpha in layout:
        if name is None:
            continue
        if (name, size, keeps_alpha) not in decoded:
            decoded[name, size, keeps_alpha] = read_texture(folder / name, size, clamp_alpha=not keeps_alpha)
        atlas[offset:offset + size * size * 4] = decoded[name, size, keeps_alpha].ravel()
    atlas.flags.writeable = False
    return atlas
