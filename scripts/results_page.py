"""Writes BENCHMARKS.md from the records in benchmarks/results.jsonl (scripts/results.py).

Usage: python scripts/results_page.py            # rewrites BENCHMARKS.md
       python scripts/results_page.py --check    # exits 1 if BENCHMARKS.md is not what the records give

The page is generated: edit the records (rerun a bench script with --record) and this script's
area descriptions, never the page itself. For each area: what is measured and how to rerun it,
then one table per machine and command, each figure beside the peer measured in the same run and
the ratio between them.
"""

import argparse
import re
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results  # noqa: E402

PAGE = results.REPO / "BENCHMARKS.md"

# Area: (heading, what is measured, how to rerun it).
AREAS = {
    "ocean": (
        "Ocean: steps per second, per core and over threads",
        "Every Ocean env stepped by its C vecenv with uniformly random actions, copied into the action "
        "buffer each step as a trainer would; agent steps per second. The peer, measured in the same run, "
        "is the same Squared game written as vectorized numpy over all envs, the fastest way to write it "
        "without C. The fixed cost is one `step()` call from Python on a single env. Threads wait passively "
        "unless `OMP_WAIT_POLICY=active` is set: spinning is faster on a dedicated machine and collapses "
        "throughput on shared cores.",
        "python scripts/bench_ocean.py --record   # make bench",
    ),
    "games": (
        "Ocean games: one core against numpy",
        "Breakout, pong, snake and connect4 on one thread with random actions, at the sizes the original "
        "Ocean's figures were measured at, against the same game as vectorized numpy "
        "(`scripts/numpy_games.py`: same rules and constants) in the same process. The note gives the "
        "target: 1.5x the original Ocean's figure on the Xeon hosts. Rows `against PufferLib 3.0` step each "
        "game PufferLib 3.0.0 also ships (built from its sdist by `scripts/build_pufferlib3.py`) alternating "
        "with Ocean round by round, at matched rules where the games allow it (the note states what still "
        "differs), each round's figure the median `step()` call's rate.",
        "python scripts/bench_ocean.py --envs none --counts 4096 --craftax-envs 0 --seconds 2 --record",
    ),
    "vector": (
        "Vectorization against Gymnasium",
        "Gymnasium's vector envs and pufferlib's backends step the same env stack side by side, 16 envs, "
        "random actions drawn ahead of time, each configuration the median of interleaved runs so that load "
        "from other processes hits all alike. Each pufferlib backend's best layout is shown against "
        "Gymnasium's best configuration (the pool against the faster `AsyncVectorEnv`); synthetic envs burn "
        "a random amount of CPU time per step. Below them, polling a semaphore before blocking against "
        "blocking at once, and the cost of the checks every `send` makes on its actions.",
        "python scripts/bench_vector.py --record",
    ),
    "craftax-cpu": (
        "Craftax on the CPU",
        "The C Craftax env (`ocean/craftax/`) through the Ocean vecenv, random actions, full (8,268 floats) "
        "and compact (996 bytes) observations, with a reset pool of pregenerated worlds and without one "
        "(every reset generates a world, as the JAX reference does). Rows `against the JAX reference` "
        "(`scripts/bench_craftax_cpu.py`) step Craftax-Classic and the pixel env on one thread and on every "
        "core beside the reference's jitted, vmapped env on the same CPU, round by round.",
        "python scripts/bench_ocean.py --envs none --games none --counts 1024 --craftax-envs 1024 --seconds 3 --record\n"
        "    python scripts/bench_craftax_cpu.py --record",
    ),
    "craftax-gpu": (
        "Craftax on the GPU: env-only steps per second",
        "`CraftaxCompactGPU` and `CraftaxGPU`, one CUDA thread per env, random actions drawn on the GPU "
        "every step (included in the time), timed with CUDA events, a reset pool of 1,024 worlds. The peer "
        "is the C env with the same observation on every host core in the same run; the JAX reference "
        "(jit, vmap and a scan of 64 steps) where the `craftax` package is importable. `CraftaxClassicGPU` "
        "rows (`--classic`) stand beside craftax.cu's own Classic CUDA env (`craftax_classic bench`, built from "
        "a checkout of github.com/Infatoshi/craftax.cu) at the same env count in the same run; craftax.cu "
        "generates every world, so the rows without a pool are the like-for-like ones and those with a pool "
        "are the setting Classic trains in.",
        "python scripts/bench_craftax_gpu.py --record\n"
        "    python scripts/bench_craftax_gpu.py --classic --pool 1024 --peer-craftax-cu PATH --record",
    ),
    "training": (
        "Training",
        "PuffeRL end to end: the Ocean sanity suite and the games trained to the end with their shipped "
        "configs (final policy scored on fresh episodes), CartPole-v1 against Stable-Baselines3 and a "
        "CleanRL-style PPO in one process, sweep results against the shipped configs, third-party "
        "families, training steps per second of the GPU recipe (`scripts/bench_train.py sps`: rollout "
        "and update together), and the Craftax learning records. Scores against `random play` or `the "
        "untrained policy` compare with the policy before training.",
        "python scripts/bench_train.py sps   # also: cartpole, cartpole-config; python scripts/sanity.py",
    ),
    "tank": (
        "Tank rebuilds",
        "Seconds of `make tank` (all three images) after an edit, on a copy of the checkout, against a "
        "daemon that keeps its build cache. The peer, measured in the same run, is what every edit cost "
        "before the compile was cached: every Ocean extension compiled from scratch on the host.",
        "python scripts/bench_tank.py --record",
    ),
}

UNIT_SUFFIX = {"s": " s", "ms": " ms", "us": " us", "GiB": " GiB", "%": "%", "x": "x", "score": "", "steps": ""}


def format_figure(value, unit):
    """A figure as the page shows it: rates and step counts with M or K and four significant digits."""
    if unit in ("steps/s", "steps"):
        for scale, suffix in ((1e6, "M"), (1e4, "K")):
            if abs(value) >= scale:
                return f"{value / (scale if suffix == 'M' else 1e3):.4g}{suffix}"
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if unit == "score":
        return f"{value:.4g}"
    if unit == "%":
        return f"{value:.2f}%"
    if unit == "us":
        return f"{value:.2f} us"
    return f"{value:.1f}{UNIT_SUFFIX[unit]}" if abs(value) < 100 else f"{value:,.0f}{UNIT_SUFFIX[unit]}"


def format_with_runs(value, runs, unit):
    shown = format_figure(value, unit)
    if runs and len(runs) > 1:
        shown += f" ({format_figure(min(runs), unit)} to {format_figure(max(runs), unit)}, {len(runs)} runs)"
    return shown


def cell(text):
    return str(text).replace("|", "\\|")


def table(entries):
    """Markdown rows for records of one machine and command; peer and note columns only where used."""
    with_peer = any("peer" in entry for entry in entries)
    with_note = any("note" in entry for entry in entries)
    header = ["what", "setting", "figure"]
    header += ["peer, same run", "peer's figure", "ratio"] if with_peer else []
    header += ["date"] + (["note"] if with_note else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if name in ("figure", "peer's figure", "ratio")
                                                             else "---" for name in header) + "|"]
    for entry in entries:
        row = [entry["what"], entry["setting"], "**" + format_with_runs(entry["value"], entry.get("runs"), entry["unit"]) + "**"]
        if with_peer:
            peer = entry.get("peer")
            if peer is None:
                row += ["", "", ""]
            else:
                theirs = format_with_runs(peer["value"], peer.get("runs"), entry["unit"]) if "value" in peer else "-"
                better = results.ratio(entry)
                row += [peer["what"], theirs, "-" if better is None else f"{better:.2f}x"]
        row.append(entry["date"])
        if with_note:
            row.append(entry.get("note", ""))
        lines.append("| " + " | ".join(cell(part) for part in row) + " |")
    return lines


def row_order(entry):
    """Rows by what was measured, then by the numbers of the setting (env counts, then threads)."""
    numbers = [float(number) for number in re.findall(r"\d+(?:\.\d+)?", entry["setting"].replace(",", ""))]
    return entry["what"], numbers, entry["setting"]


def grouped(entries, field):
    """Entries grouped by a derived field, groups in order of first appearance."""
    groups = {}
    for entry in entries:
        groups.setdefault(field(entry), []).append(entry)
    return groups.items()


def page(entries):
    introduction = (
        "The current figure of every measurement, with the command that measured it, the machine (CPU model "
        "and the cores it used, and the GPU card), the date, and the peer measured in the same run. "
        "A ratio above 1 means ours is better: rates compare as ours / peer, seconds as peer / ours. "
        "Figures of several runs show the median and the range. The bench scripts store their figures with "
        "`--record` (`scripts/results.py`); `make results-page` rewrites this page from them, and "
        "`tests/test_results.py` holds this page and every figure README.md and docs/ quote to the records. "
        "Earlier figures are in the history of `benchmarks/results.jsonl`."
    )
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by scripts/results_page.py from benchmarks/results.jsonl: edit those, not this page. -->",
        "",
        *textwrap.wrap(introduction, 100),
        "",
    ]
    present = [area for area in results.AREAS if any(entry["area"] == area for entry in entries)]
    lines += [f"- [{AREAS[area][0]}](#{anchor(AREAS[area][0])})" for area in present] + [""]
    for area in present:
        heading, description, rerun = AREAS[area]
        lines += [f"## {heading}", "", *textwrap.wrap(description, 100), "", f"    {rerun}", ""]
        in_area = [entry for entry in entries if entry["area"] == area]
        for machine, on_machine in grouped(in_area, lambda entry: results.machine_label(entry["machine"])):
            lines += [f"### {machine}", ""]
            for command, measured in grouped(on_machine, lambda entry: entry["command"]):
                lines += [f"`{command}`", ""] + table(sorted(measured, key=row_order)) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(character for character in heading.lower() if character.isalnum() or character in " -_")
    return kept.replace(" ", "-")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=str(results.RESULTS), help="the records to read")
    parser.add_argument("--page", default=str(PAGE), help="the page to write")
    parser.add_argument("--check", action="store_true", help="only compare the page with what the records give")
    args = parser.parse_args()
    if not Path(args.results).exists():
        parser.error(f"{args.results} does not exist: store figures there first with a bench script's --record")
    try:
        text = page(results.load(args.results))
    except results.ResultError as error:
        parser.exit(2, f"results_page.py: error: {error}\n")
    if args.check:
        if Path(args.page).read_text() != text:
            parser.exit(1, f"{args.page} is not what {args.results} gives: run python scripts/results_page.py\n")
        return
    results.write_atomically(args.page, text)
    print(f"wrote {args.page}: {text.count(chr(10))} lines from {args.results}")


if __name__ == "__main__":
    main()
