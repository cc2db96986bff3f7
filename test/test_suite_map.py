"""test/README.md, the map of the test suite, names every file in test/ and none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent


def test_the_map_names_every_test_file_and_only_those() -> None:
    text = (TEST_DIR / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Za-z0-9_]+\.py)`", text))
    present = {p.name for p in TEST_DIR.glob("*.py")}
    assert sorted(present - named) == [], "test files missing from test/README.md"
    gone = {n for n in named if n.startswith(("test_", "conftest", "ros_helpers")) and n not in present}
    assert sorted(gone) == [], "test/README.md names files that test/ does not have"
