"""Behaviours of the simulator node (``nodes/sim_node.py``) that a second mutation review found
unpinned: its realtime pacing, the lockstep and start-up waits, ``/clock`` and what the summary
times.

Each test names the behaviour it pins and the source change (mutant) it was written to catch. The
nodes are built in this process on their own domain id; where time matters the module's ``time``
is the test's (:class:`~test_sim_fuzz.FakeTime`, moved only by the waits of the executor's
stand-in), so nothing on the host changes the result.
"""

# ruff: noqa: F811 (the `nodes` fixture, imported from test_node_runtime_guards, is every test's argument)
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import Nodes, Recorder, nodes  # noqa: F401
from test_sim_fuzz import FakeTime
from test_sim_node_mutation_gaps import _answer_current_state, _AnsweringExecutor, _values

pytestmark = [pytest.mark.ros, requires_rclpy]


def _fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    """sim_node.py's ``time.monotonic`` and ``time.perf_counter``: the returned clock, standing
    still until moved."""
    import torque_ctrl_ros.nodes.sim_node as sim_module

    clock = FakeTime()
    read = clock.monotonic
    monkeypatch.setattr(sim_module, "time", SimpleNamespace(monotonic=read, perf_counter=read))
    return clock


def _reject_current_state(sim: Any) -> None:
    """An invalid answer (NaN torques) to the state the simulator published last."""
    sim._take_command(np.full(sim.n, np.nan), sim.t0_ns + sim.k * sim.dt_ns)


class _ClockedExecutor(_AnsweringExecutor):
    """The executor on a :class:`FakeTime`: after its first ``answer_from`` calls (``None``:
    never), ``spin_once`` answers the current state at once if it is unanswered (with ``answer``);
    a call that answers nothing lets its whole timeout pass. Keeps the calls' timeouts."""

    def __init__(
        self,
        sim: Any,
        clock: FakeTime,
        answer_from: int | None = 0,
        answer: Callable[[Any], None] = _answer_current_state,
    ) -> None:
        super().__init__(sim)
        self.clock, self.answer_from, self.answer = clock, answer_from, answer
        self.timeouts: list[float | None] = []

    def spin_once(self, timeout_sec: float | None = None) -> None:
        self.timeouts.append(timeout_sec)
        assert len(self.timeouts) < 1000, "the node waits on and on"
        answering = self.answer_from is not None and len(self.timeouts) > self.answer_from
        if answering and not self.sim.commands.answered:
            self.answer(self.sim)
        else:
            self.clock.now += timeout_sec or 0.0


def _stepped_at(sim: Any, clock: FakeTime, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The clock's readings at each step of the plant, from now on."""
    times: list[float] = []
    step = sim.plant.step

    def stepping() -> None:
        times.append(clock.now)
        step()

    monkeypatch.setattr(sim.plant, "step", stepping)
    return times


# ---------------------------------------------------------------- realtime pacing
def _promptly_answered_realtime_run(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch, steps: int, diagnostics_due: bool = False
) -> tuple[Any, list[float], float]:
    """A realtime run of ``steps`` steps whose every state is answered at once (no time passing),
    /diagnostics due at its start if ``diagnostics_due``: the node, the clock's reading at each
    step and at the start."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, duration=steps * 1e-3)
    sim.diag_pub = Recorder()
    if diagnostics_due:
        sim._diag_next = 0.0
    clock = _fake_time(monkeypatch)
    sim.executor = _ClockedExecutor(sim, clock)
    times = _stepped_at(sim, clock, monkeypatch)
    start = clock.now
    sim.run()
    return sim, times, start


def test_a_realtime_step_answered_early_still_waits_for_its_tick(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Realtime is paced by the clock: a controller answering every state at once does not speed
    the plant up, step k is taken at its tick, (k + 1) ms after the start, on the answer. (Mutant:
    the idle ``_spin_until(next_tick, until_answered=False)`` after the answer dropped: each step
    is taken as soon as its state is answered, all five at the start, faster than real time.)"""
    sim, times, start = _promptly_answered_realtime_run(nodes, monkeypatch, 5)
    assert [t - start for t in times] == pytest.approx([0.001 * (k + 1) for k in range(5)], abs=1e-9)
    assert (sim.counts.missing_command_steps, sim.late.count) == (0, 0)


def test_a_realtime_run_publishes_diagnostics_from_its_loop(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The realtime loop publishes /diagnostics when due (here at once, the first period having
    passed: at step 0 of a run answered at once), and then not before another period.
    (Mutant: the realtime branch's ``_maybe_diagnostics`` dropped: a realtime run publishes none.)"""
    sim, times, _ = _promptly_answered_realtime_run(nodes, monkeypatch, 3, diagnostics_due=True)
    assert len(times) == 3
    sent = [_values(a.status[0]) for a in sim.diag_pub.sent]
    assert [(v["mode"], v["steps"]) for v in sent] == [("realtime", "0")]


def test_the_step_time_is_the_simulators_own_work_not_its_waits(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``step_time`` (/diagnostics and the summary) is the simulator's own time per step, physics
    and publishing: in a realtime run answered at once, on a clock that only the waits move, it is
    0 at every step, not the 1 ms each step idles until its tick. (Mutant: ``t_work = clock()``
    taken before the wait for the answer: every sample is the whole tick.)"""
    sim, times, _ = _promptly_answered_realtime_run(nodes, monkeypatch, 5)
    assert len(times) == 5
    assert sim.step_time.window().tolist() == [0.0] * 5


def test_catching_up_at_the_deadline_itself_still_takes_a_waiting_message(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wait whose deadline is now (a realtime tick reached exactly, catching up) takes one
    waiting message without blocking, as one past it does: the answer waiting is taken for this
    step. (Mutant: ``deadline < time.monotonic()``: at the deadline itself nothing is read and the
    step goes on the safe torque or an older command.)"""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    clock = _fake_time(monkeypatch)
    sim.executor = executor = _ClockedExecutor(sim, clock)
    sim._spin_until(clock.now, until_answered=True)
    assert sim.commands.answered_validly and executor.timeouts == [0.0]


# ---------------------------------------------------------------- lockstep waits
def test_a_lockstep_wait_ends_as_soon_as_the_answer_is_in(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lockstep steps on the answer: the wait for it ends at the call that took it, no time
    passing. (Mutant: ``_await_answer`` waits with ``until_answered=False``: every step waits out
    the 0.1 s poll after its answer came, a lockstep run at 10 steps a second.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False)
    sim._publish_state()
    clock = _fake_time(monkeypatch)
    start = clock.now
    sim.executor = executor = _ClockedExecutor(sim, clock)
    sim._await_answer(1.0)
    assert sim.commands.answered_validly
    assert (len(executor.timeouts), clock.now) == (1, start)


def test_lockstep_waits_lockstep_timeout_for_an_answer_not_command_timeout(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an answer, a lockstep step goes on the safe torque after ``lockstep_timeout``
    (0.3 s here) of waiting; ``command_timeout`` (0.05 s) is realtime's. (Mutant: the loop calls
    ``_await_answer(cfg.command_timeout)``: a controller taking 50 ms for one answer would be
    overridden in lockstep, whose results should not depend on the machine's load.)"""
    sim = nodes.make(
        "sim", mode="lockstep", wait_for_controller=False, duration=0.001, lockstep_timeout=0.3,
        command_timeout=0.05,
    )  # fmt: skip
    sim.diag_pub = Recorder()
    clock = _fake_time(monkeypatch)
    sim.executor = _ClockedExecutor(sim, clock, answer_from=None)
    times = _stepped_at(sim, clock, monkeypatch)
    start = clock.now
    sim.run()
    assert [t - start for t in times] == pytest.approx([0.3], abs=1e-9)
    assert sim.counts.missing_command_steps == 1


def test_a_stop_during_a_lockstep_wait_takes_no_step(nodes: Nodes) -> None:
    """SIGINT / SIGTERM (:data:`STOP`) while lockstep waits for an answer ends the run there: no
    step on the safe torque for a command that never came, no new state. (Mutant: the ``break``
    on ``STOP`` after ``_await_answer`` dropped: one more step, counted as a missing command.)"""
    from torque_ctrl_ros.nodes.common import STOP

    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=0.005)
    sim.state_pub, sim.clock_pub, sim.diag_pub = Recorder(), Recorder(), Recorder()

    class StoppedWhileWaiting(_AnsweringExecutor):
        """The executor: a stop request comes in the first wait, no answer."""

        def spin_once(self, timeout_sec: float | None = None) -> None:
            STOP.set()

    sim.executor = StoppedWhileWaiting(sim)
    try:
        sim.run()
    finally:
        STOP.clear()
    assert (sim.k, sim.counts.missing_command_steps, len(sim.state_pub.sent)) == (0, 0, 1)


# ---------------------------------------------------------------- the start-up wait
def test_the_start_up_wait_republishes_state_0_each_poll_and_ends_at_its_answer(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``wait_for_controller``: state 0 (and /clock) is published again every 0.1 s until a
    command answers it, so that a controller started later gets it; the wait ends at the call
    that took the answer. Two unanswered polls, the answer in the third: three states, all
    stamped ``t0``, 0.2 s. (Mutants: state 0 published once before the loop, a controller
    joining later waits for ever; the poll made with ``until_answered=False``, 0.1 s more; the
    poll lasts 1 s.)"""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState as JointStateMsg

    sim = nodes.make("sim", mode="lockstep", wait_for_controller=True, serialized_io=True)
    sim.state_pub, sim.clock_pub, sim.diag_pub = Recorder(), Recorder(), Recorder()
    clock = _fake_time(monkeypatch)
    start = clock.now
    sim.executor = executor = _ClockedExecutor(sim, clock, answer_from=2)
    sim._wait_for_controller()
    assert sim.commands.answered_validly
    stamps = [deserialize_message(raw, JointStateMsg).header.stamp for raw in sim.state_pub.sent]
    assert [s.sec * 10**9 + s.nanosec for s in stamps] == [sim.t0_ns] * 3
    assert len(sim.clock_pub.sent) == 3
    assert executor.timeouts == pytest.approx([0.1, 0.1, 0.1])
    assert clock.now - start == pytest.approx(0.2, abs=1e-9)


def test_a_rejected_answer_ends_the_start_up_wait(nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up wait holds state 0 until a command answers it, valid or not: an invalid one
    (NaN) ends it too; the loop then steps on the safe torque, reported as an error on
    /diagnostics, instead of the simulator standing still "waiting for a controller" that does
    answer. (Mutant: the wait runs ``while not self.commands.answered_validly``.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=True)
    sim.state_pub, sim.clock_pub, sim.diag_pub = Recorder(), Recorder(), Recorder()
    clock = _fake_time(monkeypatch)
    sim.executor = executor = _ClockedExecutor(sim, clock, answer=_reject_current_state)
    sim._wait_for_controller()
    assert sim.commands.answered and not sim.commands.answered_validly
    assert (len(executor.timeouts), len(sim.state_pub.sent), sim.counts.rejected_commands) == (1, 1, 1)


# ---------------------------------------------------------------- what the summary times
def test_the_stepping_loop_is_timed_from_the_end_of_the_start_up_wait(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run`` starts the summary's wall time when the stepping loop starts: after a 0.3 s
    start-up wait and 2 s since the loop started, ``wall_time_s`` is 2 s and the 2 steps make
    1 Hz. (Mutant: ``loop_start_wall = time.monotonic()`` dropped from ``run``: the wall time is
    counted from the node's construction, start-up wait included.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=True, duration=0.002)
    sim.state_pub, sim.clock_pub, sim.diag_pub = Recorder(), Recorder(), Recorder()
    clock = _fake_time(monkeypatch)
    clock.now = sim.started_wall + 100.0  # the node's construction is long past
    sim.executor = _ClockedExecutor(sim, clock, answer_from=3)
    sim.run()
    assert sim.k == 2 and sim.counts.missing_command_steps == 0
    clock.now += 2.0
    summary = sim.summary()
    assert summary["wall_time_s"] == pytest.approx(2.0, abs=1e-9)
    assert summary["step_rate_hz"] == pytest.approx(1.0)


def test_the_answers_in_the_stepping_loop_are_timed(nodes: Nodes) -> None:
    """Each state's first answer taken in the stepping loop is timed (state → command latency
    on /diagnostics and in the summary): a lockstep run of 3 steps, answered at once and without a
    start-up wait, times the answers of its 4 states. (Mutant: ``_looping = True`` dropped from
    ``run``: no latency is ever recorded.)"""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=0.003)
    sim.executor = _AnsweringExecutor(sim)
    sim.run()
    summary = sim.summary()
    assert (summary["answered_states"], summary["latency"]["count"]) == (4, 4)


# ---------------------------------------------------------------- /clock
class _Tap:
    """Stands in for a publisher: appends ``(name, stamp in ns)`` of each message to ``log``, read
    when it is published (the node reuses its /clock message)."""

    def __init__(self, name: str, log: list[tuple[str, int]], read: Callable[[Any], Any]) -> None:
        self.name, self.log, self.read = name, log, read

    def publish(self, msg: Any) -> None:
        stamp = self.read(msg)
        self.log.append((self.name, stamp.sec * 10**9 + stamp.nanosec))


@pytest.mark.parametrize("serialized", [True, False], ids=["cdr", "msg"])
def test_clock_is_the_state_stamp_published_right_after_the_state(nodes: Nodes, serialized: bool) -> None:
    """/clock carries the simulated time of the state just published, and comes right after
    it (the controller waits for the state, see the module docstring), on both message paths;
    a run's first /clock comes before its first state: a controller still on the clock of a run
    the simulator restarted within a second (``max_age`` + ``fallback_duration``) took state 0
    for a stale one and braked from the old run's pose (12.5 N·m off; a review). (Mutants:
    /clock at ``stamp + dt`` with ``serialized_io``, the same on the message path, /clock
    published before every state, and after state 0.)"""
    from rclpy.serialization import deserialize_message
    from rosgraph_msgs.msg import Clock as ClockMsg
    from sensor_msgs.msg import JointState as JointStateMsg

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, serialized_io=serialized)
    assert sim.serialized == serialized
    log: list[tuple[str, int]] = []

    def state_stamp(m: Any) -> Any:
        return (deserialize_message(m, JointStateMsg) if serialized else m).header.stamp

    def clock_stamp(m: Any) -> Any:
        return (deserialize_message(m, ClockMsg) if serialized else m).clock

    sim.state_pub, sim.clock_pub = _Tap("state", log, state_stamp), _Tap("clock", log, clock_stamp)
    sim._publish_state()
    sim._step(use_command=False)
    sim._publish_state()
    t0, t1 = sim.t0_ns, sim.t0_ns + sim.dt_ns
    assert log == [("clock", t0), ("state", t0), ("state", t1), ("clock", t1)]


# ---------------------------------------------------------------- record_file
def test_the_record_holds_the_torque_applied_in_the_step_before_each_state(
    nodes: Nodes, tmp_path: Path
) -> None:
    """``record_file``'s row k holds the torque applied in the step that led to state k: zeros
    for state 0, the command for state 1 (0.25 N·m on every joint, within their ranges), the
    safe torque (gravity held) for state 2. (Mutant: the rows' torques recorded as 0.)"""
    path = tmp_path / "r.npz"
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=0.002, record_file=str(path))
    sim._publish_state()
    sim._take_command(np.full(sim.n, 0.25), sim.t0_ns)
    sim._step(sim.commands.answered_validly)
    sim._publish_state()
    sim._step(use_command=False)
    sim._publish_state()
    safe = sim.plant.tau_applied
    nodes.close(sim)
    tau = np.load(path)["tau"]
    assert tau.shape == (3, sim.n) and not tau[0].any()
    np.testing.assert_allclose(tau[1], np.full(sim.n, 0.25), rtol=0.0, atol=1e-12)
    assert np.abs(safe).max() > 1.0  # holding the arm against gravity
    np.testing.assert_array_equal(tau[2], safe)
