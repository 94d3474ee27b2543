"""The benchmark records (benchmarks/results.jsonl), the page generated from them (BENCHMARKS.md),
and every figure README.md and docs/*.md quote from them.

A quoted figure is a link to its section of the page whose title names its record:

    about [159M](BENCHMARKS.md#craftax-on-the-gpu-env-only-steps-per-second "craftax-gpu/...")

The title is the record's key (scripts/results.py), followed by `:peer` for the peer's figure or
`:ratio` for the ratio to it. The figure must be the record's, rounded to the digits shown; a
range (`53-60M`) is the lowest and highest of its runs. Figures of the kinds the page holds (rates,
ratios, percentages) may appear in prose only as such links, unless listed in NOT_MEASURED.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import results  # noqa: E402
import results_page  # noqa: E402

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
QUOTE = re.compile(r'\[([^\[\]\n]+)\]\((?:\.\./)?BENCHMARKS\.md#([\w-]+) "([^"]+)"\)')
FIGURE = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?)(?:-(\d[\d,]*(?:\.\d+)?))?\s*(M|K|x|%|s|us)?(?: steps/s)?$")
SCALE = {"M": 1e6, "K": 1e3}
SUFFIX_UNITS = {"%": {"%"}, "s": {"s"}, "us": {"us"}, "M": {"steps/s", "steps"}, "K": {"steps/s", "steps"}}
# Numbers in prose that look like benchmark figures but are facts of the design, not measurements.
NOT_MEASURED = {
    "README.md": ["horizon 64, 60M steps"],
    "docs/craftax.md": ["33x fewer bytes"],
    "docs/training.md": ["busy 96.6% of the rollouts", "near 100%"],
}
FIGURE_IN_PROSE = re.compile(r"\b\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?(?:M\b|K\b|x\b|%|\s?steps/s)")


def quoted(text):
    """(shown figure, anchor, key, selector) of every figure quoted from the records."""
    found = []
    for shown, anchor, title in QUOTE.findall(text):
        key, _, selector = title.partition(":")
        found.append((shown, anchor, key, selector or "value"))
    return found


def disagreement(shown, entry, selector):
    """Why a quoted figure does not match its record, or None when it does."""
    match = FIGURE.match(shown.strip())
    if not match:
        return f"{shown!r} is not a figure: a number or a range, then M, K, x, %, s or us"
    low, high, suffix = match.groups()
    if selector == "ratio":
        if suffix != "x":
            return f"{shown!r} quotes a ratio: write it as 1.26x"
        actual = [results.ratio(entry)]
        if actual[0] is None:
            return "the record has no peer to compare with"
    else:
        if suffix == "x":
            return f"{shown!r} is a ratio: the link's title must end in :ratio"
        if suffix in SUFFIX_UNITS and entry["unit"] not in SUFFIX_UNITS[suffix]:
            return f"{shown!r} is in {suffix} but the record is in {entry['unit']}"
        source = entry if selector == "value" else entry.get("peer")
        if source is None or "value" not in source:
            return f"the record has no {selector} figure"
        actual = [min(source["runs"]), max(source["runs"])] if high else [source["value"]]
        if high and "runs" not in source:
            return f"{shown!r} is a range, but the record holds one run"
    scale = SCALE.get(suffix, 1.0)
    for text, value in zip([low, high] if high else [low], actual):
        decimals = len(text.split(".")[1]) if "." in text else 0
        if abs(float(text.replace(",", "")) * scale - value) > 0.5 * 10**-decimals * scale * (1 + 1e-9):
            return f"{shown!r}, but the record says {value:g}{' (runs ' + str(actual) + ')' if high else ''}"
    return None


def prose(text):
    """The text a reader reads as sentences: no fenced blocks, inline code, comments or quoted figures."""
    text = re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = QUOTE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.fixture(scope="module")
def records():
    return {results.key(entry): entry for entry in results.load()}


def test_the_page_is_what_the_records_give():
    expected = results_page.page(results.load())
    assert (REPO / "BENCHMARKS.md").read_text() == expected, (
        "BENCHMARKS.md is stale: run python scripts/results_page.py (make results-page)")


def test_every_area_of_the_records_has_its_heading_and_text():
    assert set(results_page.AREAS) == set(results.AREAS)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_quoted_figure_agrees_with_its_record(document, records):
    wrong = []
    for shown, anchor, key, selector in quoted(document.read_text()):
        entry = records.get(key)
        if entry is None:
            wrong.append(f"{shown!r}: no record {key}")
            continue
        expected = results_page.anchor(results_page.AREAS[entry["area"]][0])
        if anchor != expected:
            wrong.append(f"{shown!r} links #{anchor}; its record is in #{expected}")
        problem = disagreement(shown, entry, selector)
        if problem:
            wrong.append(f"{key}: {problem}")
    assert wrong == [], f"{document.name}: figures that disagree with benchmarks/results.jsonl:\n" + "\n".join(wrong)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_figures_in_prose_are_quoted_from_the_records(document):
    text = prose(document.read_text())
    for phrase in NOT_MEASURED.get(str(document.relative_to(REPO)), []):
        assert phrase in text, f"NOT_MEASURED lists {phrase!r}, which {document.name} no longer says"
        text = text.replace(phrase, "")
    bare = FIGURE_IN_PROSE.findall(text)
    assert bare == [], (f"{document.name} quotes {bare} without naming their records: link each to its "
                        'record as [figure](BENCHMARKS.md#area "key"), see tests/test_results.py')


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_links_into_the_page_land_on_its_headings(document):
    page = (REPO / "BENCHMARKS.md").read_text()
    headings = {results_page.anchor(line.lstrip("#").strip()) for line in page.splitlines() if line.startswith("#")}
    linked = set(re.findall(r"\((?:\.\./)?BENCHMARKS\.md#([\w-]+)", document.read_text()))
    assert linked - headings == set(), f"{document.name} links sections BENCHMARKS.md does not have"


def test_the_docs_quote_figures():
    assert sum(len(quoted(document.read_text())) for document in DOCUMENTS) >= 20


def test_a_figure_that_differs_from_its_record_is_reported():
    entry = results.checked({
        "area": "craftax-gpu", "what": "CraftaxCompactGPU", "setting": "655,360 envs", "value": 158.57e6,
        "unit": "steps/s", "runs": [150.2e6, 158.57e6], "peer": {"what": "C env", "value": 6.55e6},
        "command": "python scripts/bench_craftax_gpu.py", "machine": {"cpu": "Xeon", "cores": 16, "gpu": "H200"},
        "date": "2026-12-04"})
    assert disagreement("159M", entry, "value") is None
    assert disagreement("158.6M", entry, "value") is None
    assert "record says" in disagreement("150M", entry, "value")
    assert "record says" in disagreement("158.5M", entry, "value")
    assert disagreement("150-159M", entry, "value") is None
    assert "record says" in disagreement("150-160M", entry, "value")
    assert disagreement("6.55M", entry, "peer") is None
    assert disagreement("24.2x", entry, "ratio") is None
    assert "record says" in disagreement("20x", entry, "ratio")
    assert ":ratio" in disagreement("24.2x", entry, "value")
    assert "record is in steps/s" in disagreement("159 s", entry, "value")


def test_an_unquoted_figure_in_prose_is_found():
    text = "Craftax steps [1.3M](BENCHMARKS.md#craftax-on-the-cpu \"k\") on one core, 2.4x the C env at `64M`.\n"
    assert FIGURE_IN_PROSE.findall(prose(text)) == ["2.4x"]


def sample(**changes):
    entry = {"area": "ocean", "what": "puffer_squared", "setting": "4,096 envs, 1 thread", "value": 175.3e6,
             "unit": "steps/s", "command": "python scripts/bench_ocean.py", "date": "2026-12-05",
             "machine": {"cpu": "AMD EPYC", "cores": 2, "gpu": None}}
    entry.update(changes)
    return entry


def test_recording_again_replaces_the_record_of_the_same_key_and_adds_new_ones(tmp_path):
    path = tmp_path / "results.jsonl"
    results.record([sample(), sample(setting="1,024 envs, 1 thread", value=158.1e6)], path)
    results.record([sample(value=180.0e6, date="2026-12-06"), sample(area="games", what="puffer_pong")], path)
    stored = results.load(path)
    assert [(entry["setting"], entry["value"]) for entry in stored] == [
        ("4,096 envs, 1 thread", 180.0e6), ("1,024 envs, 1 thread", 158.1e6), ("4,096 envs, 1 thread", 175.3e6)]
    assert [entry["area"] for entry in stored] == ["ocean", "ocean", "games"]
    assert all(json.loads(line) for line in path.read_text().splitlines())
    assert [file.name for file in tmp_path.iterdir()] == ["results.jsonl"]


def test_the_same_setting_on_another_machine_is_another_record(tmp_path):
    path = tmp_path / "results.jsonl"
    results.record([sample(), sample(machine={"cpu": "Intel(R) Xeon(R) Processor", "cores": 16, "gpu": None})], path)
    assert len(results.load(path)) == 2


def test_a_failed_write_leaves_the_stored_records_whole(tmp_path, monkeypatch):
    path = tmp_path / "results.jsonl"
    results.record([sample()], path)
    before = path.read_text()

    def interrupted(*_):
        raise OSError("disk full")

    monkeypatch.setattr(results.os, "replace", interrupted)
    with pytest.raises(OSError, match="disk full"):
        results.record([sample(value=1.0)], path)
    assert path.read_text() == before
    assert [file.name for file in tmp_path.iterdir()] == ["results.jsonl"]


@pytest.mark.parametrize(("changes", "message"), [
    ({"area": "oceans"}, "area 'oceans': use one of"),
    ({"unit": "Msteps/s"}, "unit 'Msteps/s': use one of"),
    ({"value": float("nan")}, "not a finite number"),
    ({"peer": {"value": 3.0}}, "a peer is"),
    ({"date": "5 Dec 2026"}, "dates are YYYY-MM-DD"),
    ({"machine": {"cpu": "AMD EPYC"}}, "a machine is"),
    ({"speed": 1}, "unknown fields ['speed']"),
])
def test_a_bad_record_is_refused_naming_the_field(changes, message, tmp_path):
    with pytest.raises(results.ResultError, match=re.escape(message)):
        results.record([sample(**changes)], tmp_path / "results.jsonl")


def test_a_file_with_one_key_twice_is_refused(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(sample()) + "\n" + json.dumps(sample(value=1.0)) + "\n")
    with pytest.raises(results.ResultError, match="keep the newer one"):
        results.load(path)


def test_a_measurement_names_its_machine_date_commit_and_command():
    entry = results.measurement("ocean", "puffer_squared", "64 envs, 1 thread", 1.23456789e6, "steps/s",
                                peer={"what": "numpy", "value": 0.5e6})
    assert entry["machine"]["cpu"] == results.cpu_model() and entry["machine"]["cores"] >= 1
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["date"])
    assert entry["value"] == 1.23457e6 and results.ratio(entry) == pytest.approx(2.46914)
    assert "commit" in entry and entry["command"].startswith("python ")


def test_the_command_line_leaves_out_where_the_records_went():
    script = str(REPO / "scripts" / "bench_ocean.py")
    assert results.command_line([script, "--envs", "pong", "--record", "/tmp/r.jsonl", "--seconds", "2"]) == (
        "python scripts/bench_ocean.py --envs pong --seconds 2")
    assert results.command_line([script, "--record", "--seconds", "2"]) == "python scripts/bench_ocean.py --seconds 2"
    assert results.command_line([script, "--record=/tmp/r.jsonl"]) == "python scripts/bench_ocean.py"


@pytest.mark.slow
def test_bench_ocean_records_its_figures_with_their_peers(tmp_path):
    path = tmp_path / "results.jsonl"
    bench = [sys.executable, str(REPO / "scripts" / "bench_ocean.py"), "--envs", "bandit", "--counts", "64",
             "--seconds", "0.02", "--games", "pong", "--craftax-envs", "0", "--record", str(path)]
    subprocess.run(bench, check=True, capture_output=True, text=True, timeout=120)
    stored = {(entry["area"], entry["what"], entry["setting"]): entry for entry in results.load(path)}
    assert ("ocean", "puffer_bandit", "64 envs, 1 thread") in stored
    squared = stored[("ocean", "puffer_squared against numpy", "64 envs, 1 thread")]
    assert squared["peer"]["value"] > 0 and squared["value"] > 0
    pong = stored[("games", "puffer_pong", "4,096 x 1 agents, 1 thread")]
    assert pong["peer"]["what"] == "the same game as vectorized numpy"
    assert all(entry["command"].endswith("--craftax-envs 0") for entry in stored.values())
    assert stored[("ocean", "step() call from Python", "1 bandit env")]["unit"] == "us"


def test_the_page_script_rewrites_a_stale_page_and_check_reports_it(tmp_path):
    records, page = tmp_path / "results.jsonl", tmp_path / "BENCHMARKS.md"
    results.record([sample()], records)
    page.write_text("# Benchmarks\n\nhand-edited\n")
    script = [sys.executable, str(REPO / "scripts" / "results_page.py"), "--results", str(records), "--page", str(page)]
    stale = subprocess.run([*script, "--check"], capture_output=True, text=True)
    assert stale.returncode == 1 and "run python scripts/results_page.py" in stale.stderr
    subprocess.run(script, check=True, capture_output=True)
    assert "**175.3M**" in page.read_text()
    assert subprocess.run([*script, "--check"], capture_output=True).returncode == 0
    missing = subprocess.run([*script[:3], str(tmp_path / "none.jsonl")], capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
