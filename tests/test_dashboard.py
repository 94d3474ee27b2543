"""The terminal dashboard (pufferlib.dashboard), drawn by a real trainer after two epochs: it reads
at 80 and 200 columns, counts the statistics it has no room for, and abbreviates labels by choice."""

import io
import re

import pytest
from rich.console import Console

from pufferlib import assemble, pufferl
from pufferlib.config import apply_flags, load_config
from pufferlib.dashboard import Dashboard, abbreviate


@pytest.fixture(scope="module")
def trainer():
    config = apply_flags(load_config("puffer_squared"), ["--vec.num-envs", "32", "--train.device", "cpu"])
    vecenv = assemble.make_vecenv("puffer_squared", config)
    trainer = pufferl.PuffeRL(config, vecenv, assemble.make_policy(vecenv, config))
    for _ in range(2):
        trainer.collect()
        trainer.train()
    yield trainer
    trainer.close()


def draw(dashboard, width, height):
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(dashboard.render(12_345.6, width=width, height=height))
    return console.export_text()


@pytest.mark.parametrize("width, height", [(80, 24), (200, 50)])
def test_dashboard_reads_at_80_and_200_columns(trainer, width, height):
    dashboard = Dashboard(trainer, "experiments/puffer_squared_20261201-030653", "off", 2.0)
    dashboard.messages.append("Training puffer_squared on cpu: MLP 64x1 (4.2k parameters), 32 agents, batch 1024, "
                              "1 minibatches of 1024, 5.0M steps. Run: experiments/puffer_squared_20261201-030653")
    text = draw(dashboard, width, height)
    lines = text.splitlines()
    assert len(lines) <= height and all(len(line) <= width for line in lines)
    assert "…" not in text
    for label in ("policy loss", "value loss", "entropy", "explained var", "learning rate", "score", "return", "length",
                  "rollout", "train", "Process RAM", "Process CPU", "SPS 12.3k", "Epoch 2 / "):
        assert label in text, label
    assert "experiments/puffer_squared_20261201-030653" in text.replace("│", "").replace(" ", "").replace("\n", "")
    for key, value in trainer.losses.items():  # every value in full
        assert f"{value:.4g}" in text, key
    ram = re.search(r"Process RAM ([\d.]+) GiB \(([\d.]+)% of (\d+) GiB\)", text)
    assert ram and abs(float(ram[1]) / float(ram[3]) * 100 - float(ram[2])) < 0.2 + 5 / float(ram[3])


@pytest.mark.parametrize("width, height", [(80, 24), (200, 50)])
def test_dashboard_counts_the_statistics_it_has_no_room_for(trainer, width, height):
    from ocean.craftax import binding

    dashboard = Dashboard(trainer, "experiments/run", "off", 2.0)
    shown = trainer.env_stats
    trainer.env_stats = {name: 0.5 for name in binding.LOG_FIELDS}  # Craftax's 70 statistics
    try:
        text = draw(dashboard, width, height)
    finally:
        trainer.env_stats = shown
    assert len(text.splitlines()) <= height and "…" not in text
    hidden = re.search(r"\+(\d+) more in metrics.jsonl", text)
    visible = sum(abbreviate(name) in text for name in binding.LOG_FIELDS)
    assert visible + (int(hidden[1]) if hidden else 0) >= len(binding.LOG_FIELDS) and visible >= 6
    assert bool(hidden) == (width == 80)  # 70 statistics fill 24 lines, not 50 lines of 200


def test_labels_are_abbreviated_by_choice_not_cut():
    assert abbreviate("explained_variance") == "explained var"
    assert abbreviate("achievements/defeat_fire_elemental") == "ach./defe. fire eleme."
    long = abbreviate("achievements/defeat_fire_elemental_in_the_realm", width=22)
    assert len(long) <= 22 and "…" not in long and long.startswith("a") and "." in long
