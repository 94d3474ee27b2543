"""Imports run one way: every import in pufferlib/ and ocean/ obeys docs/architecture.md's table."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pufferlib", "ocean")


def layer_table():
    """[(layer, module)] in the table's order, read from docs/architecture.md."""
    rows = re.findall(r"^\| (\w+) \| `([\w.]+)` \|", (ROOT / "docs" / "architecture.md").read_text(), re.MULTILINE)
    assert rows, "docs/architecture.md has no layer table"
    return rows


def module_names():
    """{module name: source path} for every module of the two packages."""
    names = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(path):
    """Absolute imports of the two packages in one source file, with their line numbers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] in PACKAGES]


def entry_of(module, entries):
    """The table row a module belongs to: the longest listed name that is it or contains it."""
    matches = [i for i, name in enumerate(entries) if module == name or module.startswith(name + ".")]
    return max(matches, key=lambda i: len(entries[i]), default=None)


def test_every_module_is_in_the_table():
    entries = [module for _, module in layer_table()]
    assert [name for name in module_names() if entry_of(name, entries) is None] == []


def test_imports_run_up_the_table():
    entries = [module for _, module in layer_table()]
    wrong = []
    for name, path in module_names().items():
        own = entry_of(name, entries)
        for imported, line in imports_of(path):
            target = entry_of(imported, entries)
            if target is None or target > own:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} imports {imported}")
    assert wrong == [], "imports against docs/architecture.md:\n" + "\n".join(wrong)


def test_the_trainer_never_imports_an_env_family():
    layers = dict((module, layer) for layer, module in layer_table())
    assert layers["ocean"] == "envs" and layers["pufferlib.pufferl"] == "trainer"
    trainer = [name for name in module_names() if layers.get(name) in ("trainer", "commands")]
    for name in trainer:
        for imported, line in imports_of(module_names()[name]):
            assert not imported.startswith(("ocean", "pufferlib.environments")), f"{name}:{line} imports {imported}"
