"""Behaviours of the controller node's clock handling that a third mutation review of
``nodes/controller_node.py`` found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch. The
nodes are built in this process and their callbacks called directly (no DDS traffic), those on the
wall clock on one that stands still until the test moves it (:class:`StoppedWallClock`), as in
test_controller_node_mutation_gaps.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import (  # noqa: F401
    HOME,
    StoppedWallClock,
    _now,
    _state_msg,
    nodes,
)

from torque_ctrl_ros.core.safety import WatchdogState
from torque_ctrl_ros.nodes.controller_diagnostics import diagnostic_status

#: An unreadable serialized JointState: refused, its safe command stamped with the last good state's.
UNREADABLE = b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f"


@pytest.mark.ros
@requires_rclpy
def test_a_silence_opens_the_fallback_window_on_the_nodes_clock(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timer measures a silence on the steady clock, but the watchdog's fallback window is
    timed on the node's clock, the one every state's ``now`` is read on: it opens ``max_age``
    after the last state came, and a good state inside it resumes control (FALLBACK → OK), not a
    stop. (Mutant: ``_check_silence`` passes its steady ``now_wall`` to the supervisor as ``now``,
    a clock seconds since boot beside the states' seconds since 1970.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False)
    clock = StoppedWallClock(node, monkeypatch)
    for _ in range(3):
        clock.advance(1e-3)
        node._on_state_message(_state_msg(HOME, _now(node)))
    last = _now(node)
    clock.advance(0.1)
    node._on_diagnostics_timer()
    assert node.watchdog.state is WatchdogState.FALLBACK
    assert node.watchdog.fallback_since == pytest.approx(last + node.config.watchdog.max_age, abs=1e-6)
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.watchdog.state is WatchdogState.OK and node.counts.watchdog_stops == 0


@pytest.mark.ros
@requires_rclpy
def test_a_command_repeating_the_last_stamp_keeps_the_state_period(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline a miss is measured against is the stream's period, learnt from the states
    computed on: the safe command of an unreadable state, which repeats the last good stamp (a
    step of 0), leaves it as it was, so a callback of a few µs is no miss. (Mutant: the deadline
    taken from the steps between the commands' stamps, ``0 <= step``: every later callback late.)"""
    import torque_ctrl_ros.nodes.controller_node as controller_module

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False)
    clock = StoppedWallClock(node, monkeypatch)
    ticks = iter(range(10**6))
    # Each perf_counter reading 1 µs after the last: every callback takes a few µs, none 1 ms.
    monkeypatch.setattr(
        controller_module,
        "time",
        SimpleNamespace(monotonic=clock.monotonic, perf_counter=lambda: next(ticks) * 1e-6),
    )
    for _ in range(3):
        clock.advance(1e-3)
        node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_bytes(UNREADABLE)
    assert node.counts.fallback_commands == 1 and node.counts.commands_published == 4
    assert node.counts.deadline_misses == 0


@pytest.mark.ros
@requires_rclpy
def test_the_diagnostics_timer_runs_on_the_steady_clock_under_sim_time(nodes: Any) -> None:  # noqa: F811
    """On ``use_sim_time`` the node's clock stands still while no /clock comes (a simulator
    stopped or not started): the /diagnostics timer, which is also what notes a silence of the
    states, runs on the steady clock so that it still fires then. (Mutant: the timer is created
    on the node's own clock, the ROS time of /clock.)"""
    from rclpy.clock import ClockType

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=True)
    assert node.node.get_clock().clock_type is ClockType.ROS_TIME
    assert [timer.clock.clock_type for timer in node.node.timers] == [ClockType.STEADY_TIME]


def test_a_stopped_watchdog_says_why_in_the_diagnostics() -> None:
    """STOPPED is an ERROR whose /diagnostics message gives the watchdog's reason, as FALLBACK's
    does: "stopped" alone would not tell an operator whether the states stopped or went bad.
    (Mutant: ``diagnostic_status`` adds the reason in FALLBACK only.)"""
    reason = "no joint state for 620 ms"
    assert diagnostic_status(WatchdogState.STOPPED, reason, 0, {}, "") == (
        DiagnosticStatus.ERROR,
        f"stopped: {reason}",
    )
