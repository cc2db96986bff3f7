"""docs/interfaces.md ("`/diagnostics`, key by key") is the reference of the nodes' /diagnostics:
every key a node publishes is explained there, and every key its tables name is published, so a
key added, renamed or dropped without the reference following fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import HOME, Recorder, _state_msg, nodes  # noqa: F401

pytestmark = [pytest.mark.ros, requires_rclpy]

DOC = Path(__file__).resolve().parents[1] / "docs" / "interfaces.md"
TIMING = re.compile(r"^(.+)_(p50|p90|p99|max)_ms$")


def _section() -> str:
    text = DOC.read_text()
    start = text.index("## `/diagnostics`, key by key")
    return text[start : text.index("\n## ", start + 1)]


def _table(node: str) -> str:
    """The rows of the table of ``node`` (``controller`` or ``simulator``)."""
    section = _section()
    start = section.index(f"**The {node} node**")
    end = section.find("\n\n", section.index("|---|", start))
    return section[start:end]


def _named_in_table(table: str) -> set[str]:
    """The keys the table's first column names, ``<x>_*`` as ``<x>_p50_ms``."""
    named = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            for key in re.findall(r"`([^`]+)`", row.split("|")[1]):
                named.add(key.replace("_*", "_p50_ms"))
    return named


def _explained(key: str, table: str, section: str) -> bool:
    """Whether ``key`` (as published) is explained: a timing as ``<x>_*``, a refusal reason by name,
    a controller's ``info_`` key in the paragraph on them (``slack.<barrier>`` and the barrier's
    name, ``error.<task>``)."""
    cells = {c for row in table.splitlines() for c in re.findall(r"`([^`]+)`", row)}
    if key in cells:
        return True
    timing = TIMING.match(key)
    if timing:
        return f"{timing.group(1)}_*" in cells
    if key.startswith("rejected_") and key != "rejected_total":
        return "rejected_<reason>" in cells and f"`{key.removeprefix('rejected_')}`" in table
    if key.startswith("info_"):
        info = key.removeprefix("info_")
        kind, dot, name = info.partition(".")
        if not dot:
            return f"`{info}`" in section
        if kind == "error":
            return "`error.<task>`" in section
        return f"`{kind}.<barrier>`" in section and f"`{name}`" in section
    return False


def _published(nodes: Any, kind: str) -> list[str]:  # noqa: F811
    """The keys of one /diagnostics of a ``kind`` node (``sim`` or a controller's name) after 50
    states at HOME."""
    from rclpy.time import Time

    if kind == "sim":
        sim = nodes.make("sim", mode="realtime")
        sim.diag_pub = Recorder()
        sim._diag_next = 0.0
        sim._maybe_diagnostics()
        return [kv.key for kv in sim.diag_pub.sent[-1].status[0].values]
    node = nodes.make("controller", controller=kind, use_sim_time=True)
    clock = node.node.get_clock()
    for k in range(50):
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(HOME, 100.0 + k * 1e-3))
    assert node.counts.commands_published == 50
    node._publish_diagnostics()
    return [kv.key for kv in node.diag_publisher.sent[-1].status[0].values]


@pytest.mark.parametrize("kind", ["sim", "gravity_comp", "computed_torque", "achd_rnea", "qpid", "hqpid"])
def test_every_key_a_node_publishes_is_explained(nodes: Any, kind: str) -> None:  # noqa: F811
    table = _table("simulator" if kind == "sim" else "controller")
    keys = _published(nodes, kind)
    missing = [key for key in keys if not _explained(key, table, _section())]
    assert not missing, f"docs/interfaces.md, '/diagnostics, key by key', does not explain {missing}"


@pytest.mark.parametrize("kind", ["sim", "qpid"])
def test_every_key_the_tables_name_is_published(nodes: Any, kind: str) -> None:  # noqa: F811
    """The simulator's table against the simulator, the controller's against QPID (which publishes
    every key of the table, the QP parts included)."""
    table = _table("simulator" if kind == "sim" else "controller")
    named = _named_in_table(table) - {"rejected_<reason>", "info_<key>"}
    published = set(_published(nodes, kind))
    assert named <= published, f"named in docs/interfaces.md but not published: {sorted(named - published)}"


def test_the_reference_is_parsed() -> None:
    """The parsing above finds the rows (a reworded heading would otherwise pass both tests
    vacuously, were it not an error)."""
    assert {"callback_p50_ms", "watchdog_state", "handled_share"} <= _named_in_table(_table("controller"))
    assert {"latency_p50_ms", "overruns"} <= _named_in_table(_table("simulator"))
    assert not _explained("no_such_key", _table("controller"), _section())
    assert _explained("info_margin.floor", "", _section())
    assert not _explained("info_margin.no_such_barrier", "", _section())
