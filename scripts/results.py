"""Benchmark figures as data: one record per measurement in benchmarks/results.jsonl.

A record is one JSON object on one line:

    {"area": "ocean", "what": "squared", "setting": "4,096 envs, 1 thread",
     "value": 175300000.0, "unit": "steps/s", "runs": [...],
     "peer": {"what": "the same game as vectorized numpy", "value": 92300000.0},
     "command": "python scripts/bench_ocean.py --seconds 1",
     "machine": {"cpu": "AMD EPYC", "cores": 2, "gpu": null},
     "date": "2026-12-01", "commit": "61cd3f9", "note": "..."}

`runs` (each run's value, when several were taken), `peer` (what was measured beside it in the
same run: its `value`, or only the `ratio` where that is all the source gave), `commit` and `note`
are optional. A record's key is its area, what, setting and machine: recording a measurement again
replaces the record of the same key, so the file holds the current figure of every measurement
and git holds the earlier ones. BENCHMARKS.md is generated from this file by
scripts/results_page.py.

A bench script makes records with `measurement(...)` and writes them with `record(...)`; the
machine, date, commit and command line are filled in here.
"""

import datetime
import functools
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results.jsonl"

# Areas in the order BENCHMARKS.md shows them; scripts/results_page.py holds each one's heading.
AREAS = ("ocean", "games", "vector", "craftax-cpu", "craftax-gpu", "training", "tank")
# Units whose smaller figure is the better one: ratios against a peer are then peer / ours.
LOWER_IS_BETTER = {"s", "ms", "us", "GiB"}
UNITS = {"steps/s", "score", "%", "steps", "x"} | LOWER_IS_BETTER
FIELDS = {"area", "what", "setting", "value", "unit", "runs", "peer", "command", "machine", "date", "commit", "note"}
REQUIRED = ("area", "what", "setting", "value", "unit", "command", "machine", "date")


class ResultError(ValueError):
    """A record that cannot be stored or read: the message names the field and the fix."""


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def this_machine(gpu=None, cores=None):
    """The machine a measurement ran on: CPU model, the cores it used, and the GPU card if any."""
    return {"cpu": cpu_model(), "cores": cores or len(os.sched_getaffinity(0)), "gpu": gpu}


@functools.cache
def current_commit():
    """The checkout's commit, marked `+changes` when tracked files differ from it; None outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+changes" if changed else "")


def command_line(argv=None):
    """The command that ran, as someone would retype it: the script's path from the repository
    root and its arguments, without --record."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    shown = str(script.relative_to(REPO)) if script.is_relative_to(REPO) else argv[0]
    arguments, after_record = [], False
    for argument in argv[1:]:
        if after_record and not argument.startswith("-"):
            after_record = False  # the file --record wrote to, as argparse read it
            continue
        after_record = argument == "--record"
        if not after_record and not argument.startswith("--record="):
            arguments.append(argument)
    return " ".join(["python", shown, *arguments])


def measurement(area, what, setting, value, unit, *, peer=None, runs=None, machine=None, command=None,
                date=None, commit=None, note=None):
    """One record, checked, with the machine, the date, the commit and the command line filled in
    from this process where not given. `peer` is {"what": ..., "value": ...}."""
    fields = {
        "area": area, "what": what, "setting": setting, "value": significant(value), "unit": unit,
        "runs": None if runs is None else significant(runs),
        "peer": None if peer is None else {name: significant(field) for name, field in peer.items()},
        "command": command or command_line(), "machine": machine or this_machine(),
        "date": date or datetime.date.today().isoformat(),
        "commit": commit if commit is not None else current_commit(), "note": note,
    }
    return checked({name: field for name, field in fields.items() if field is not None})


def significant(number, digits=6):
    """A measured figure to the digits a benchmark can resolve, so that the file stays readable."""
    if isinstance(number, list):
        return [significant(item, digits) for item in number]
    return float(f"{number:.{digits}g}") if isinstance(number, float) else number


def checked(entry, where="a record"):
    """The record itself when every field is as described above; else ResultError naming what is wrong."""
    if not isinstance(entry, dict):
        raise ResultError(f"{where} is a {type(entry).__name__}: a record is a JSON object")
    unknown = set(entry) - FIELDS
    if unknown:
        raise ResultError(f"{where} has unknown fields {sorted(unknown)}: the fields are {sorted(FIELDS)}")
    missing = [name for name in REQUIRED if name not in entry]
    if missing:
        raise ResultError(f"{where} lacks {missing}: every record names {list(REQUIRED)}")
    if entry["area"] not in AREAS:
        raise ResultError(f"{where} has area {entry['area']!r}: use one of {list(AREAS)}")
    if entry["unit"] not in UNITS:
        raise ResultError(f"{where} has unit {entry['unit']!r}: use one of {sorted(UNITS)}")
    numbers = [entry["value"], *entry.get("runs", [])]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) for n in numbers):
        raise ResultError(f"{where} has a value or run that is not a finite number: {numbers}")
    peer = entry.get("peer")
    if peer is not None and (not isinstance(peer, dict) or "what" not in peer or not ({"value", "ratio"} & set(peer))):
        raise ResultError(f"{where} has peer {peer!r}: a peer is {{'what': ..., 'value': ...}} (or 'ratio')")
    machine = entry["machine"]
    if not isinstance(machine, dict) or not machine.get("cpu") or not isinstance(machine.get("cores"), int):
        raise ResultError(f"{where} has machine {machine!r}: a machine is {{'cpu': ..., 'cores': N, 'gpu': ... or null}}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(entry["date"])):
        raise ResultError(f"{where} has date {entry['date']!r}: dates are YYYY-MM-DD")
    return entry


def machine_label(machine):
    """How the page names a machine: the GPU card on its host's cores, or the CPU and its cores."""
    cores = f"{machine['cores']} cores of {machine['cpu']}"
    return f"{machine['gpu']} on {cores}" if machine.get("gpu") else cores


def slug(text):
    return re.sub(r"[^a-z0-9.]+", "-", str(text).lower().replace(",", "")).strip("-")


def key(entry):
    """What identifies a measurement, as one readable path: area, what, setting, and the machine
    (its GPU card where it has one, else its CPU and cores)."""
    machine = entry["machine"]
    host = machine["gpu"] if machine.get("gpu") else f"{machine['cpu']} {machine['cores']} cores"
    return "/".join(slug(part) for part in (entry["area"], entry["what"], entry["setting"], host))


def ratio(entry):
    """How many times better than its peer a record is (above 1: better), or None without a peer's
    figure to compare with. Seconds and other costs compare as peer / ours, rates as ours / peer."""
    peer = entry.get("peer")
    if not peer:
        return None
    if "value" not in peer:
        return peer["ratio"]
    ours, theirs = entry["value"], peer["value"]
    if ours <= 0 or theirs <= 0:
        return None
    return theirs / ours if entry["unit"] in LOWER_IS_BETTER else ours / theirs


def load(path=RESULTS):
    """Every record of the file, checked, in the file's order."""
    path = Path(path)
    if not path.exists():
        return []
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ResultError(f"{path}:{number} is not JSON ({error}): one record per line") from error
            entries.append(checked(entry, f"{path}:{number}"))
    seen = {}
    for number, entry in enumerate(entries, 1):
        if key(entry) in seen:
            raise ResultError(f"{path}: records {seen[key(entry)]} and {number} are both {key(entry)}: keep the newer one")
        seen[key(entry)] = number
    return entries


def record(entries, path=RESULTS):
    """Stores the records: each replaces the stored record of its key, or is added after the others.
    The file is rewritten whole through a temporary file, so a reader never sees half of it."""
    path = Path(path)
    stored = load(path)
    position = {key(entry): index for index, entry in enumerate(stored)}
    for entry in entries:
        entry = checked(entry)
        if key(entry) in position:
            stored[position[key(entry)]] = entry
        else:
            position[key(entry)] = len(stored)
            stored.append(entry)
    write_atomically(path, "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in stored))
    return path


def write_atomically(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def add_record_flag(parser):
    """The --record flag every bench script takes."""
    parser.add_argument("--record", nargs="?", const=str(RESULTS), metavar="FILE",
                        help=f"store the figures as records (default file: {RESULTS.relative_to(REPO)}); "
                        "then `python scripts/results_page.py` regenerates BENCHMARKS.md")
