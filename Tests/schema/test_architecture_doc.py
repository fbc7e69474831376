"""docs/architecture.md names only what exists: every path in backticks is in the tree, and every Swift name in
backticks (a module, `Type`, `function`, `Type.member`) is declared somewhere under Sources/. Renaming a file or a function the
map names fails this test, so the map is fixed in the same change."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def named() -> list[str]:
    # Inline code only: the module diagram in the fenced block is for people (Package.swift is its source).
    text = re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)
    return re.findall(r"`([^`\n]+)`", text)


def declarations() -> set[str]:
    names: set[str] = set()
    pattern = re.compile(
        r"\b(?:func|class|struct|enum|protocol|actor|typealias|case|var|let|extension)\s+([A-Za-z_][A-Za-z0-9_]*)")
    for file in (ROOT / "Sources").rglob("*.swift"):
        names.update(pattern.findall(file.read_text(errors="replace")))
    return names | {module.name for module in (ROOT / "Sources").iterdir() if module.is_dir()}


def test_every_path_the_map_names_exists():
    paths = [n for n in named() if n.startswith(("Sources/", "Tests/", "docs/", "scripts/"))]
    assert len(paths) >= 10, f"the map names only {len(paths)} paths: the test reads the doc wrongly"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_swift_name_the_map_names_is_declared():
    declared = declarations()
    names = [n for n in named() if IDENTIFIER.match(n) and "/" not in n]
    assert len(names) >= 15, f"the map names only {len(names)} Swift names: the test reads the doc wrongly"
    # D-Bus and BlueZ member names are BlueZ's, not ours.
    foreign = {"WriteValue", "AcquireNotify", "StartNotify", "PropertiesChanged", "InterfacesRemoved", "Value"}
    missing = [n for n in names if n not in foreign and n.split(".")[-1] not in declared]
    assert not missing, f"docs/architecture.md names Swift declarations that do not exist: {missing}"
