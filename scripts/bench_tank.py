"""Seconds of `make tank` after an edit, against a daemon that keeps its build cache.

Usage: python scripts/bench_tank.py [--repeats 3] [--base-image puffertank/bookworm-rootfs] [--prefix puffertank-ci]

Works on a copy of the checkout (made in a temporary folder, with its own .venv-tank). After one
warm-up build, each round times `make tank` with no edit, after a Python edit (pufferlib/spaces.py)
and after a C edit of one env (ocean/squared/squared.h: code, since ccache sees through comments).
The peer, measured in the same run, is what every edit cost before the compile was cached: all
Ocean extensions compiled from scratch on the host (`setup.py build_ext --inplace --parallel 2`,
without the CUDA library). --record stores each edit's median beside the peer as records
(scripts/results.py) for BENCHMARKS.md.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(
    ".git", ".venv", ".venv-tank", "__pycache__", "build", "*.egg-info", "*.so", "binding.c", "experiments", ".ci-cuda"
)


def make_tank(checkout, flags):
    start = time.monotonic()
    result = subprocess.run(
        ["make", "-C", str(checkout), "tank", f"TANK_FLAGS={flags}"], capture_output=True, text=True
    )
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"make tank failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds, result.stdout


def compile_from_scratch(checkout):
    scratch = Path(tempfile.mkdtemp(prefix="bench-tank-compile-"))
    try:
        shutil.copytree(checkout, scratch / "repo", ignore=SKIP)
        start = time.monotonic()
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--parallel", "2"],
            cwd=scratch / "repo",
            env=dict(os.environ, PUFFER_NO_CUDA="1"),
            check=True,
            capture_output=True,
        )
        return time.monotonic() - start
    finally:
        shutil.rmtree(scratch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base-image", default="puffertank/bookworm-rootfs")
    parser.add_argument("--prefix", default="puffertank-ci")
    results.add_record_flag(parser)
    args = parser.parse_args()
    flags = f"--prefix {args.prefix} --base-image {args.base_image}"

    work = Path(tempfile.mkdtemp(prefix="bench-tank-"))
    checkout = work / "repo"
    shutil.copytree(REPO, checkout, symlinks=True, ignore=SKIP)
    try:
        warm_up, _ = make_tank(checkout, flags)
        print(f"warm-up make tank (with .venv-tank's creation): {warm_up:.1f} s")
        rows = {"no edit": [], "Python edit": [], "C edit (squared)": []}
        for _ in range(args.repeats):
            rows["no edit"].append(make_tank(checkout, flags)[0])
            with open(checkout / "pufferlib" / "spaces.py", "a") as file:
                file.write(f"\n# bench edit {uuid.uuid4().hex}\n")
            rows["Python edit"].append(make_tank(checkout, flags)[0])
            with open(checkout / "ocean" / "squared" / "squared.h", "a") as file:
                file.write(f"\nenum {{ bench_edit_{uuid.uuid4().hex} = 1 }};\n")
            seconds, log = make_tank(checkout, flags)
            envs = len(list(checkout.glob("ocean/*/binding.pyx")))
            if f"ccache: {envs - 1} C compiles from the cache, 1 compiled" not in log:
                sys.exit("the C edit did not recompile exactly one extension:\n" + log[-3000:])
            rows["C edit (squared)"].append(seconds)
        peer = compile_from_scratch(checkout)
    finally:
        shutil.rmtree(work)

    print(f"\n| edit | make tank, s (each of {args.repeats}) | median | vs. peer |")
    print("|---|---|---:|---:|")
    for name, times in rows.items():
        median = sorted(times)[len(times) // 2]
        print(f"| {name} | {', '.join(f'{t:.1f}' for t in times)} | {median:.1f} | {peer / median:.0f}x faster |")
    print(f"\npeer, same run: every Ocean extension compiled from scratch on the host: {peer:.1f} s")
    if args.record:
        records = [
            results.measurement("tank", "make tank", name, sorted(times)[len(times) // 2], "s", runs=times,
                                peer={"what": "every Ocean extension compiled from scratch on the host", "value": peer},
                                note=f"images on {args.base_image}")
            for name, times in rows.items()
        ]
        print(f"{len(records)} records stored in {results.record(records, args.record)}")


if __name__ == "__main__":
    main()
