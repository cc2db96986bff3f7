"""Behaviours of the simulator node (``nodes/sim_node.py``) that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch:
which commands drive the plant, what the node refuses, and what it reports. The nodes are built
in this process on their own domain id and their callbacks called directly (no DDS traffic).
"""

# ruff: noqa: F811 (the `nodes` fixture, imported from test_node_runtime_guards, is every test's argument)
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import Nodes, Recorder, nodes  # noqa: F401

from torque_ctrl_ros.nodes.wire import CommandWire
from torque_ctrl_ros.sim.commands import MAX_COMMAND_BYTES

pytestmark = [pytest.mark.ros, requires_rclpy]


def test_a_command_of_exactly_the_most_bytes_is_read_and_taken(nodes: Nodes) -> None:
    """A serialized command whose bytes are exactly :data:`MAX_COMMAND_BYTES` (a good answer to
    the current state, padded) is read and drives the plant: the bound is the largest size read,
    not the first refused. (Mutant: ``_on_command_bytes`` refuses ``len(raw) >= MAX_COMMAND_BYTES``.)"""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, serialized_io=True)
    sim._publish_state()
    tau = np.full(sim.n, 0.25)
    good = CommandWire(sim.n).encode(tau, sim.t0_ns)
    sim._on_command_bytes(good + bytes(MAX_COMMAND_BYTES - len(good)))
    assert (sim.counts.commands_received, sim.counts.rejected_commands) == (1, 0), sim.last_reject
    assert sim.commands.answered_validly
    np.testing.assert_array_equal(sim.commands.tau, tau)


def _answer_current_state(sim: Any) -> None:
    """A valid answer (zero torques) to the state the simulator published last."""
    sim._take_command(np.zeros(sim.n), sim.t0_ns + sim.k * sim.dt_ns)


class _AnsweringExecutor:
    """Stands in for the node's executor: each ``spin_once`` answers the current state if it is
    unanswered, at once, as a controller on the topic would; other attributes are the real
    executor's."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.executor = sim.executor

    def spin_once(self, timeout_sec: float | None = None) -> None:
        if not self.sim.commands.answered:
            _answer_current_state(self.sim)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.executor, name)


def _values(status: Any) -> dict[str, str]:
    """A diagnostic status's values by key."""
    return {v.key: v.value for v in status.values}


def test_diagnostics_during_the_start_up_wait_say_the_simulator_waits_for_a_controller(
    nodes: Nodes,
) -> None:
    """While state 0 waits for its first answer (``wait_for_controller``), /diagnostics warn
    "waiting for a controller" and report ``waiting_for_controller: True``. (Mutant:
    ``_wait_for_controller`` publishes them with ``waiting=False``: an ok status for a simulator
    standing still.)"""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="lockstep", wait_for_controller=True)
    sim.diag_pub = Recorder()
    sim._diag_next = 0.0
    waits: list[float] = []

    def spin_until(deadline: float, until_answered: bool) -> None:
        """Nothing comes in the first wait; the answer does in the second."""
        waits.append(deadline)
        if len(waits) == 2:
            _answer_current_state(sim)

    sim._spin_until = spin_until
    sim._wait_for_controller()
    assert sim.commands.answered and sim.diag_pub.sent
    status = sim.diag_pub.sent[0].status[0]
    assert (status.level, status.message) == (DiagnosticStatus.WARN, "waiting for a controller")
    assert _values(status)["waiting_for_controller"] == "True"


def test_a_finished_run_waits_for_the_answer_to_its_last_state(nodes: Nodes) -> None:
    """After its last step the simulator still takes the answer to the last state it published
    (for up to 50 ms): the summary's ``last_state_answered`` and ``answered_states`` count it, and
    the benchmark does not take it for lost. (Mutant: the closing ``_spin_until`` dropped.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=0.002)

    sim.executor = _AnsweringExecutor(sim)
    sim.run()
    summary = sim.summary()
    assert (sim.k, summary["answered_states"], summary["last_state_answered"]) == (2, 3, True)


def test_the_step_rate_and_realtime_factor_cover_the_last_diagnostics_period_only(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/diagnostics' ``step_rate_hz`` and ``realtime_factor`` are those since the previous
    diagnostics (600 steps, 0.6 s simulated, in 2 s of wall time: 300 Hz and 0.3), not averages
    since start, which would hide a slowdown in a long run. (Mutants: ``step_rate_hz`` is
    ``k / span``; ``realtime_factor`` is ``sim_now / span``.)"""
    import torque_ctrl_ros.nodes.sim_node as sim_module

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    now = time.monotonic()
    monkeypatch.setattr(sim_module, "time", SimpleNamespace(monotonic=lambda: now))
    sim.diag_pub = Recorder()
    sim._diag_next = 0.0
    sim.k = 1000
    sim._diag_window = (now - 2.0, 400, 0.4)  # the previous diagnostics: step 400, 0.4 s simulated
    sim._maybe_diagnostics()
    values = _values(sim.diag_pub.sent[-1].status[0])
    assert float(values["step_rate_hz"]) == pytest.approx(300.0)
    assert float(values["realtime_factor"]) == pytest.approx(0.3)
    assert sim._diag_window == (now, 1000, pytest.approx(1.0))


def test_a_step_on_the_safe_torque_is_an_error_on_the_diagnostics(nodes: Nodes) -> None:
    """After a step on the safe torque (no valid command) /diagnostics are at ERROR level, saying
    which safe torque; after a commanded step, OK again. An arm no controller drives is a fault, not
    a warning such as a second command publisher. (Mutant: the safe-torque status is WARN.)"""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, safe_torque="hold")
    sim.diag_pub = Recorder()
    levels = []
    for use_command in (False, True):
        sim._step(use_command)
        sim._diag_next = 0.0
        sim._maybe_diagnostics()
        status = sim.diag_pub.sent[-1].status[0]
        levels.append((status.level, status.message, _values(status)["safe_torque_active"]))
    assert levels == [
        (DiagnosticStatus.ERROR, "safe torque (hold): no valid command", "True"),
        (DiagnosticStatus.OK, "ok", "False"),
    ]


def test_a_last_state_answered_by_a_rejected_command_counts_as_answered(nodes: Nodes) -> None:
    """The summary's ``last_state_answered`` says whether the last state's answer arrived (else it
    may still have been in flight, which the benchmark's lost count lets off): a rejected answer
    arrived. (Mutant: it reads ``answered_validly``, so the benchmark would excuse a command that
    was received, and rejected, as one possibly in flight.)"""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    sim._take_command(np.full(sim.n, np.nan), sim.t0_ns)
    assert sim.counts.rejected_commands == 1 and not sim.commands.answered_validly
    assert sim.summary()["last_state_answered"] is True


def test_a_lockstep_run_answered_at_once_publishes_diagnostics_between_steps(nodes: Nodes) -> None:
    """Lockstep with a controller that answers every state at once (no answer wait ever reaches
    the diagnostics): /diagnostics are still published from the stepping loop when due. (Mutant:
    the lockstep branch's ``_maybe_diagnostics`` after each step dropped: a healthy lockstep run
    publishes none.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=0.003)
    sim.diag_pub = Recorder()
    sim.executor = _AnsweringExecutor(sim)
    sim._diag_next = 0.0
    sim.run()
    assert sim.k == 3 and sim.counts.missing_command_steps == 0
    assert [_values(a.status[0])["steps"] for a in sim.diag_pub.sent][:1] == ["1"]


def test_overdue_diagnostics_go_out_once_and_the_next_a_period_later(nodes: Nodes) -> None:
    """/diagnostics long overdue (the loop held up, a start-up wait) go out once, and the next are
    due a ``diagnostics_period`` after them, not in a burst making up the missed periods.
    (Mutant: ``_diag_next += diagnostics_period`` instead of ``now + diagnostics_period``.)"""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, diagnostics_period=0.5)
    sim.diag_pub = Recorder()
    sim._diag_next = 0.0  # overdue by the whole uptime of the monotonic clock
    sim._maybe_diagnostics()
    sim._maybe_diagnostics()
    assert len(sim.diag_pub.sent) == 1
    assert sim._diag_next > time.monotonic()


def test_the_summary_times_the_stepping_loop_not_the_start_up_wait(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary's ``wall_time_s``, ``step_rate_hz`` and ``realtime_factor`` are over the
    stepping loop (1000 steps in 2 s: 500 Hz, 0.5), not from the node's start, which includes the
    wait for a controller (98 s here). (Mutant: ``summary`` measures from ``started_wall``.)"""
    import torque_ctrl_ros.nodes.sim_node as sim_module

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    now = time.monotonic()
    monkeypatch.setattr(sim_module, "time", SimpleNamespace(monotonic=lambda: now))
    sim.started_wall, sim.loop_start_wall, sim.k = now - 100.0, now - 2.0, 1000
    summary = sim.summary()
    assert summary["wall_time_s"] == pytest.approx(2.0)
    assert (summary["step_rate_hz"], summary["realtime_factor"]) == pytest.approx((500.0, 0.5))
