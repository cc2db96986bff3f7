"""The controller node's /diagnostics counts, as a review of 2026-12-07 found them wrong.

* ``handled_share`` counted every state received in the window against the span of the good
  states' stamps: a window ending in refused states (a broken sensor's NaN) read 6.58.
* The /diagnostics published after a command, 1–2 ms on a loaded host, belong to that state's
  handling: the states queued meanwhile are skipped for the newest, and the warning said
  "handling the last one took 2.14 ms" of a controller whose step took 0.25. It now says how much
  of it went into the report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from ros_helpers import (  # noqa: F401
    in_process_controllers,
    joint_state_msg,
    requires_rclpy,
    ros_domain,
    sim_clock,
)
from test_controller_node_backlog import Commands, Queue

pytestmark = [pytest.mark.ros, requires_rclpy]

Q = np.array([0.1, 0.6, -0.2, 1.2, 0.1, -0.4, 0.3])
T0 = 1000.0
DT = 1e-3


@pytest.fixture
def node(ros_domain: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:  # noqa: F811
    """A computed-torque node under sim time, its steady clock ``node.steady[0]`` (s), commands
    going nowhere, its state queue in the test's hands."""
    with in_process_controllers(ros_domain) as make:
        made = make(use_sim_time=True, controller="computed_torque", serialized_io=False)
        made.publisher = Commands()
        made._state_sub = Queue(made._state_sub.msg_type)
        made.steady = [0.0]
        monkeypatch.setattr(time, "perf_counter", lambda: made.steady[0])
        yield made


def test_the_handled_share_counts_the_states_up_to_the_last_good_one(node: Any) -> None:
    """A window of 150 good states then 850 refused (NaN): its stamps span the 150 good ones, and
    so does the count, a share of 1 (all handled). Mutant: every state received counted, 1000 /
    150 = 6.67."""
    at = sim_clock(node)
    bad = Q.copy()
    bad[2] = math.nan

    def hand(k: int, q: np.ndarray) -> None:
        node.steady[0] += DT
        node._on_state_message(joint_state_msg(at(T0 + k * DT), q))

    for k in range(200):
        hand(k, Q)
    start = node._window_start[0]
    node._diagnostic_values(start + 0.2, 0.0, DT, 1)  # the window now starts at the 200th state
    for k in range(200, 350):
        hand(k, Q)
    for k in range(350, 1200):
        hand(k, bad)
    assert node.watchdog.rejected_total == 850
    values = node._diagnostic_values(start + 1.2, 0.0, DT, 1)
    assert values["handled_share"] == pytest.approx(1.0)
    # The next window: nothing good since, no span of stamps: nan, not a share.
    assert math.isnan(node._diagnostic_values(start + 2.2, 0.0, DT, 1)["handled_share"])


def test_the_falling_behind_warning_says_what_the_report_took(node: Any) -> None:
    """The /diagnostics due at a state are published after its command, and take 1.5 ms here:
    the three states queued meanwhile are skipped for the newest, and the warning gives the
    handling's 1.50 ms with the 1.40 ms of the report. A handling that published none says
    nothing of a report. Mutant: the report's time not kept (0), the clause missing."""
    at = sim_clock(node)
    said: list[str] = []
    node.log.warning = lambda key, message, **_: said.append(message)

    def slow_report() -> None:
        node.steady[0] += 1.4e-3

    node._publish_diagnostics = slow_report
    for k in range(20):
        node.steady[0] += DT
        node._on_state_message(joint_state_msg(at(T0 + k * DT), Q))
    node.steady[0] += DT
    node._diagnostics_due = True
    node._on_state_message(joint_state_msg(at(T0 + 20 * DT), Q))
    node._state_started = node._state_done - 1.5e-3
    node._state_sub.messages.extend(joint_state_msg(T0 + k * DT, Q) for k in (21, 22, 23))
    node._on_state_message(joint_state_msg(at(T0 + 24 * DT), Q))
    assert node.counts.behind_skipped == 3
    assert said and "took 1.50 ms, 1.40 ms of it publishing /diagnostics after its command" in said[-1]
    # Again without a report in the handling before.
    node._state_started = node._state_done - 1.5e-3
    node._state_sub.messages.extend(joint_state_msg(T0 + k * DT, Q) for k in (25, 26))
    node.log.warning = lambda key, message, **_: said.append(message)
    node._on_state_message(joint_state_msg(at(T0 + 27 * DT), Q))
    assert node.counts.behind_skipped == 5
    assert "took 1.50 ms against" in said[-1] and "/diagnostics" not in said[-1]
