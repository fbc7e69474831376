"""The timeline's list of event kinds (the report's counts, the dashboard's filters) is the control API's: every kind
the event log can write, from Sources/Control/openapi.json (made from ControlContract.EventKind, which a Swift test
keeps equal to the emulator's own list); docs/control.md lists the same kinds."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_timeline_knows_every_event_kind():
    document = json.loads((ROOT / "Sources" / "Control" / "openapi.json").read_text())
    kinds = document["components"]["schemas"]["Event"]["properties"]["event"]["enum"]
    source = (ROOT / "Sources" / "Control" / "Dashboard" / "timeline.js").read_text()
    listed = re.search(r"const KINDS = \[(.*?)\];", source, re.S)
    assert listed, "timeline.js declares no KINDS"
    assert re.findall(r'"([^"]+)"', listed.group(1)) == kinds


def test_the_control_docs_list_every_event_kind():
    document = json.loads((ROOT / "Sources" / "Control" / "openapi.json").read_text())
    kinds = document["components"]["schemas"]["Event"]["properties"]["event"]["enum"]
    docs = (ROOT / "docs" / "control.md").read_text()
    listed = re.search(r"Kinds:\n`([^`]+)`", docs)
    assert listed, "docs/control.md has no `Kinds:` list"
    assert listed.group(1).split() == kinds
