"""The docs run as written: every fenced ``python``, ``bash`` and ``sh`` block of README.md and
docs/*.md is run, so a doc cannot rot silently.

Python blocks run in a fresh interpreter, bash and sh blocks in bash with ``set -e`` and this
interpreter's ``bin`` folder first on PATH (what ``source .venv/bin/activate`` gives a reader);
both with the checkout first on PYTHONPATH. The blocks of one document share a temporary working
folder and run in the document's order, as a reader following it would run them: a block may use
the runs an earlier one trained.

A block that cannot run here says so in an HTML comment on the line just above its fence, which
the rendered Markdown hides:

- ``<!-- doc-test: skip REASON -->``: not run (docker, a GPU, the network, minutes of training);
  the test is skipped with REASON.
- ``<!-- doc-test: slow -->``: run only with the slow tests (seconds to a minute of training).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = ("python", "bash", "sh")
FENCE = re.compile(r"^(`{3,})([\w-]*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(skip|slow)\b\s*(.*?)\s*-->$")
TIMEOUT = {"fast": 120, "slow": 600}


class Block:
    def __init__(self, document, line, language, code, directive, reason):
        self.document, self.line, self.language, self.code = document, line, language, code
        self.directive, self.reason = directive, reason

    @property
    def name(self):
        return f"{shown(self.document)}:{self.line}"


def shown(path):
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def extract_blocks(path):
    """The fenced blocks of ``path`` in the languages run here, each with the directive above it."""
    lines = path.read_text().splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, language = opening.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise AssertionError(f"{shown(path)}:{index + 1}: fence {fence}{language} is never closed")
        if language in LANGUAGES:
            above = lines[index - 1].strip() if index else ""
            directive = DIRECTIVE.match(above)
            if above.startswith("<!--") and "doc-test" in above and not directive:
                raise AssertionError(
                    f"{shown(path)}:{index}: unreadable directive {above!r}; write "
                    "<!-- doc-test: skip REASON --> or <!-- doc-test: slow -->"
                )
            kind, reason = directive.groups() if directive else (None, "")
            if kind == "skip" and not reason:
                raise AssertionError(f"{shown(path)}:{index}: a skipped block must say why")
            blocks.append(Block(path, index + 2, language, "\n".join(lines[index + 1 : end]) + "\n", kind, reason))
        index = end + 1
    return blocks


BLOCKS = [block for document in DOCUMENTS for block in extract_blocks(document)]


def parameters():
    return [
        pytest.param(block, id=block.name, marks=[pytest.mark.slow] if block.directive == "slow" else [])
        for block in BLOCKS
    ]


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One working folder per document, shared by its blocks."""
    folders = {}

    def folder(document):
        if document not in folders:
            folders[document] = tmp_path_factory.mktemp(document.stem)
        return folders[document]

    return folder


def block_environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_block(block, cwd):
    if block.language == "python":
        command = [sys.executable, "-c", block.code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    timeout = TIMEOUT["slow" if block.directive == "slow" else "fast"]
    return subprocess.run(
        command, cwd=cwd, env=block_environment(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize("block", parameters())
def test_doc_block_runs_as_written(block, workdirs):
    if block.directive == "skip":
        pytest.skip(f"{block.name}: {block.reason}")
    result = run_block(block, workdirs(block.document))
    assert result.returncode == 0, (
        f"{block.name} ({block.language}) exited {result.returncode}\n--- block ---\n{block.code}"
        f"--- stdout (end) ---\n{result.stdout[-3000:]}\n--- stderr (end) ---\n{result.stderr[-3000:]}"
    )


def test_the_docs_have_blocks_of_every_kind_run_here():
    languages = {block.language for block in BLOCKS if block.directive != "skip"}
    assert {"python", "bash"} <= languages, languages
    assert any(block.document.name == "README.md" and block.directive is None for block in BLOCKS)


def test_directives_are_read_and_malformed_ones_refused(tmp_path):
    document = tmp_path / "doc.md"
    document.write_text(
        "<!-- doc-test: skip needs docker -->\n```bash\ndocker ps\n```\n\n"
        "<!-- doc-test: slow -->\n```python\nprint(1)\n```\n\n```text\nnot run\n```\n\n```sh\necho hi\n```\n"
    )
    blocks = extract_blocks(document)
    assert [(b.language, b.directive, b.reason, b.line) for b in blocks] == [
        ("bash", "skip", "needs docker", 3),
        ("python", "slow", "", 8),
        ("sh", None, "", 16),
    ]
    document.write_text("<!-- doc-test: skipp docker -->\n```bash\ndocker ps\n```\n")
    with pytest.raises(AssertionError, match="unreadable directive"):
        extract_blocks(document)
    document.write_text("<!-- doc-test: skip -->\n```bash\ndocker ps\n```\n")
    with pytest.raises(AssertionError, match="must say why"):
        extract_blocks(document)
    document.write_text("```python\nprint(1)\n")
    with pytest.raises(AssertionError, match="never closed"):
        extract_blocks(document)


def test_a_failing_block_fails_its_test(tmp_path):
    block = Block(tmp_path / "doc.md", 1, "python", "import numpy\nundefined_name\n", None, "")
    result = run_block(block, tmp_path)
    assert result.returncode != 0 and "NameError" in result.stderr
    block = Block(tmp_path / "doc.md", 1, "bash", "false\necho reached\n", None, "")
    result = run_block(block, tmp_path)
    assert result.returncode != 0 and "reached" not in result.stdout
