"""Behaviours of the benchmark's instruments that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``torque_ctrl_ros/bench/``: the host timer's summary and its child process (``host.py``), the
compute section's wiring and the QP step's parts (``compute.py``), the revision comparison's sides,
restarts, ratio, refusals and table (``compare.py``), and the conversion rows (``conversions.py``).
No test here times anything for real: clocks, samples and child processes are injected.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray
from test_bench import _STAT_AFTER, _STAT_BEFORE
from test_bench_mutation_gaps import FakeClock, _ScriptedController
from test_qp_terms import HOME

from torque_ctrl_ros.bench import compare, compute, conversions, host
from torque_ctrl_ros.bench.configs import BENCH_CONFIGS
from torque_ctrl_ros.bench.stats import WARMUP
from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.nodes.scheduling import CPUS_ENV, Placement


class _Timings:
    """A stand-in for a timing function of :mod:`.bench.stats`: records the function, count and
    warm-up of each call and gives every call 1 µs."""

    def __init__(self) -> None:
        self.fns: list[Any] = []
        self.counts: list[int] = []
        self.warmups: list[int] = []

    def __call__(self, fn: Any, count: int, warmup: int = WARMUP, **_: Any) -> np.ndarray:
        self.fns.append(fn)
        self.counts.append(count)
        self.warmups.append(warmup)
        return np.full(count, 1_000)


def test_the_host_summary_judges_late_ticks_strictly_past_half_a_millisecond() -> None:
    """By default a tick is late past 0.5 ms: 0.6 ms is, 0.4 ms is not, and one exactly at the
    threshold is not ("later than"); ``threshold_ms`` reads 0.5. Mutants: ``>=`` for ``>``, a 1 ms
    ``LATE_THRESHOLD_S``, ``threshold_ms`` in µs."""
    s = host.summarize(np.array([0.4e-3, 0.5e-3, 0.6e-3, 0.1e-3]))
    assert s["late_percent"] == 25.0 and s["threshold_ms"] == 0.5


def test_steal_is_counted_in_the_kernels_clock_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``tick_s`` the counters tick at ``1 / SC_CLK_TCK``: at 250 Hz, 20 ticks of steal are
    80 ms (mutants: a fixed 10 ms tick, another sysconf name); an unreadable second reading gives
    no figure rather than a ``KeyError`` (mutant: only the first reading checked)."""
    asked: list[str] = []

    def sysconf(name: str) -> int:
        asked.append(name)
        return 250

    monkeypatch.setattr(host.os, "sysconf", sysconf)
    before, after = host.cpu_ticks(_STAT_BEFORE), host.cpu_ticks(_STAT_AFTER)
    steal = host.steal_between(before, after)
    assert asked == ["SC_CLK_TCK"] and steal["tick_ms"] == 4.0
    assert steal["steal_ms"] == pytest.approx({"cpu": 80.0, "cpu0": 60.0, "cpu1": 20.0})
    assert host.steal_between(before, {}) == {}


def test_the_host_floor_runs_in_a_child_placed_as_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    """``measure`` runs this module's loop for the given seconds and period in a child with the
    simulator's placement and returns its JSON; a failing child (exit 1) gives its last error line.
    Mutants: the controller's placement or none, ``--period`` not passed, a failure read only when
    the child is killed (``returncode < 0``), the first stderr line for the last."""
    runs: list[tuple[list[str], dict[str, str]]] = []
    answers = iter(
        [
            subprocess.CompletedProcess([], 0, stdout='{"p50_us": 12.5}', stderr=""),
            subprocess.CompletedProcess([], 1, stdout="", stderr="Traceback …\n  line\nOSError: no timer\n"),
        ]
    )

    def run(cmd: list[str], env: dict[str, str], **_: Any) -> subprocess.CompletedProcess[str]:
        runs.append((cmd, env))
        return next(answers)

    monkeypatch.setattr(host.subprocess, "run", run)
    placement = Placement(sim_cpus="0", controller_cpus="1")
    assert host.measure(0.25, placement, period_s=2e-3) == {"p50_us": 12.5}
    assert host.measure(0.25, placement) == {"error": ["OSError: no timer"]}
    cmd, env = runs[0]
    assert cmd == [sys.executable, "-m", host.__name__, "--seconds", "0.25", "--period", "0.002"]
    assert env[CPUS_ENV] == "0"


def test_the_host_timer_command_asks_for_the_nodes_scheduling(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m torque_ctrl_ros.bench.host`` asks for real-time priority, its CPUs and the CPU
    latency before the loop, runs it at ``--period`` and prints the summary with the scheduling it
    got. Mutants: any of the three requests dropped, the loop at its default period."""
    asked: list[object] = []
    monkeypatch.setattr(host, "request_realtime", lambda: asked.append("realtime"))
    monkeypatch.setattr(host, "request_cpus", lambda: asked.append("cpus"))
    monkeypatch.setattr(host, "request_cpu_latency", lambda: asked.append("cpu_latency"))
    monkeypatch.setattr(host, "current_policy", lambda: "SCHED_FIFO:10")

    def loop(seconds: float, period_s: float = 1e-3) -> np.ndarray:
        asked.append((seconds, period_s))
        return np.full(4, 1e-4)

    monkeypatch.setattr(host, "timer_lateness", loop)
    assert host.main(["--seconds", "0.008", "--period", "0.002"]) == 0
    assert asked == ["realtime", "cpus", "cpu_latency", (0.008, 0.002)]
    printed = json.loads(capsys.readouterr().out)
    assert printed["ticks"] == 4 and printed["scheduling"] == "SCHED_FIFO:10"


def test_compute_run_times_the_restart_the_paced_states_and_a_fresh_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``compute.run`` on 8 states with ``paced=5``: the QP controller's restart runs between the
    warm-up and the timed run; the paced figure and the step's parts cover the first 5 states; the
    paced figure times a fresh controller, not the one just timed. Mutants: no ``after_warmup``,
    the parts or the paced figure over every state, ``stepper(controller, …)`` for the paced one."""
    restarts: list[object] = []
    passed: list[object] = []
    stepped: list[object] = []
    calls, stepper = compute.controller_calls, compute.stepper

    def recorded_calls(controller: Any, states: list[JointState], references: Any = None) -> Any:
        timed, restart = calls(controller, states, references)
        restarts.append(restart)
        return timed, restart

    def recorded_stepper(controller: Any, states: list[JointState], references: Any = None) -> Any:
        stepped.append(controller)
        return stepper(controller, states, references)

    def timed(calls: dict[str, Any], count: int, *, after_warmup: Any = None, **_: Any) -> Any:
        passed.append(after_warmup)
        return {name: np.full(count, 1_000) for name in calls}

    paced = _Timings()
    parts_states: list[int] = []

    def parts(
        name: str, params: Any, robot: RobotModel, states: list[JointState], references: Any = None
    ) -> dict[str, float]:
        parts_states.append(len(states))
        assert references is not None and len(references) == len(states)  # tracking, a reference a state
        return {}

    monkeypatch.setattr(compute, "controller_calls", recorded_calls)
    monkeypatch.setattr(compute, "stepper", recorded_stepper)
    monkeypatch.setattr(compute, "time_interleaved", timed)
    monkeypatch.setattr(compute, "time_calls_paced", paced)
    monkeypatch.setattr(compute, "qp_step_parts", parts)
    result = compute.run({"qpid": BENCH_CONFIGS["qpid"]}, count=8, paced=5)
    assert restarts[0] is not None and passed == restarts
    assert paced.counts == [5] and parts_states == [5] and result["paced_states"] == 5
    timed_controller, paced_controller = stepped
    assert paced_controller is not timed_controller


def test_each_part_of_the_qp_step_times_only_itself_in_microseconds(
    monkeypatch: pytest.MonkeyPatch, robot: RobotModel
) -> None:
    """On a fake clock where the step takes 100 µs, the kinematics 7 µs, every task 3 µs, every
    barrier 5 µs and a replayed solve 11 µs, the parts read exactly those; and the second pass
    replays state k right after the kinematics, tasks and barriers at state k. Mutants: a part in
    ms (``/ 1e6``), a timer started after its part (kinematics, replay), the second pass without
    its kinematics or without its tasks and barriers."""
    clock = FakeClock(wake_ns=0)
    monkeypatch.setattr(compute, "time", clock)
    log: list[tuple[str, float]] = []

    def costs(fn: Any, duration_ns: int, event: Any) -> Any:
        def timed(*args: Any) -> Any:
            log.append(event(*args))
            clock.call(duration_ns)
            return fn(*args)

        return timed

    made: list[Any] = []
    create = compute.create_controller

    def instrumented(name: str, model: RobotModel, params: Any) -> Any:
        controller: Any = create(name, model, params)
        if not made:  # the stepped instance: its step, and the floor's replay it records
            controller.compute = costs(controller.compute, 100_000, lambda s, r: ("step", s.q[0]))
            replay = controller.qp_replay

            def recorded_replay(qs: np.ndarray, vs: np.ndarray, references: Any = None) -> Any:
                return costs(replay(qs, vs, references), 11_000, lambda k: ("replay", qs[k][0]))

            controller.qp_replay = recorded_replay
        else:  # the second instance: the parts of prepare, one by one
            kin = controller.kin
            kin.update = costs(kin.update, 7_000, lambda q, v: ("kinematics", q[0]))
            for kind, items, ns in (
                ("task", controller.tasks, 3_000),
                ("barrier", controller.barriers, 5_000),
            ):
                for item in items:
                    part = f"{kind}.{item.name}"
                    item.update = costs(item.update, ns, lambda k, part=part: (part, kin.q[0]))
        made.append(controller)
        return controller

    monkeypatch.setattr(compute, "create_controller", instrumented)
    states = [JointState(HOME + 0.01 * k, np.zeros(7)) for k in range(3)]
    parts = compute.qp_step_parts("qpid", BENCH_CONFIGS["qpid"], robot, states)
    prepare = [name for name in parts if name.startswith(("task.", "barrier."))]
    assert prepare and parts["compute"] == 100.0 and parts["kinematics"] == 7.0
    assert parts["qp_floor_after_prepare"] == 11.0
    assert {name: parts[name] for name in prepare} == {
        name: 3.0 if name.startswith("task.") else 5.0 for name in prepare
    }
    second_pass = [(name, float(q0)) for name, q0 in log[-(len(prepare) + 2) * len(states) :]]
    expected = [
        event
        for q0 in (float(s.q[0]) for s in states)
        for event in [("kinematics", q0), *((name, q0) for name in prepare), ("replay", q0)]
    ]
    assert second_pass == expected


def test_compare_builds_this_trees_controller_against_the_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compare.compare`` times this tree's controller as ``this`` and the exported revision's as
    ``other``, so that ``ratio`` = this / other compares the two versions. Mutants: this tree on
    both sides (a ratio of ~1 whatever changed), the sides swapped (the ratio inverted)."""
    revision = ModuleType("torque_ctrl_ros_0123456789ab")
    monkeypatch.setattr(
        compare, "realistic_motion", lambda count, seed: (np.zeros((count, 7)), np.zeros((count, 7)), [])
    )
    monkeypatch.setattr(compare, "_controller", lambda package, name, qs, vs, motion: package.__name__)
    monkeypatch.setattr(compare, "_time_pair", lambda this, other, count: {"this": this, "other": other})
    result = compare.compare(revision, ["qpid"], 3)
    # A revision without bench/configs.py runs on this tree's parameters.
    assert result == {"qpid": {"this": "torque_ctrl_ros", "other": revision.__name__, "same_parameters": 1.0}}


class _LoggedController(_ScriptedController):
    """A scripted controller that logs its resets and the states it computes."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[object] = []

    def reset(self) -> None:
        self.log.append("reset")

    def compute(self, state: int, reference: object) -> SimpleNamespace:
        self.log.append(state)
        return super().compute(state, reference)


def test_compare_restarts_both_sides_cold_and_takes_the_ratio_of_medians(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each version is warmed up, reset and stepped once at state 0 untimed before its timed run,
    and reset again before the torque check from a cold start; ``ratio`` is median(this) /
    median(other): here 2 / 4, where the median of the per-call ratios is 1. Mutants: no
    ``after_warmup``, the restart without its step at state 0 or for ``this`` only, no reset before
    the torque check, ``median(this / other)``."""
    count = 3

    def timed(calls: dict[str, Any], n: int, *, after_warmup: Any = None, **_: Any) -> dict[str, np.ndarray]:
        for fn in calls.values():
            fn(0)
        if after_warmup is not None:
            after_warmup()
        return {"this": np.array([1_000, 2_000, 9_000]), "other": np.array([1_000, 4_000, 5_000])}

    monkeypatch.setattr(compare, "time_interleaved", timed)
    a, b = _LoggedController(), _LoggedController()
    r = compare._time_pair((a, [0, 1, 2], [None] * 3), (b, [0, 1, 2], [None] * 3), count)
    assert r["ratio"] == 0.5
    assert a.log == b.log == [0, "reset", 0, "reset", *range(count)]


def test_compare_refuses_no_states_and_no_controllers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--states 0`` and an empty ``--controllers`` are usage errors before anything is exported.
    Mutants: ``states < 0`` for ``< 1``, the empty list let through."""

    def export(*_: Any) -> str:
        raise AssertionError("exported a revision for a refused command")

    monkeypatch.setattr(compare, "export_revision", export)
    for argv in (["--states", "0"], ["--controllers", ","]):
        with pytest.raises(SystemExit):
            compare.main(argv)
    assert capsys.readouterr().err.count("states >= 1") == 2


def test_compare_prints_each_figure_in_its_column(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The table reads this, other, ratio (this / other), this p99, other p99, max |Δτ|, from the
    comparison's figures. Mutants: the medians' columns swapped, a median in the p99 column, the
    ratio printed inverted."""

    def export(revision: str, repository: Path, folder: Path) -> str:
        (folder / "tcr_fake_revision.py").write_text("")
        return "tcr_fake_revision"

    figures = {
        "this_median_us": 100.0,
        "other_median_us": 200.0,
        "ratio": 0.5,
        "this_p99_us": 150.0,
        "other_p99_us": 300.0,
        "max_torque_difference": 1e-3,
        "same_parameters": 1.0,
    }
    monkeypatch.setattr(compare, "export_revision", export)
    tracked: list[bool] = []

    def fake_compare(other: object, names: list[str], count: int, tracking: bool) -> dict[str, Any]:
        tracked.append(tracking)
        return {"qpid": figures}

    monkeypatch.setattr(compare, "compare", fake_compare)
    assert compare.main(["--controllers", "qpid"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("qpid"))
    assert row.split() == ["qpid", "100.0", "200.0", "0.500", "150.0", "300.0", "1.00e-03"]
    # Tracking by default, as make bench; --reference held holds one.
    assert compare.main(["--controllers", "qpid", "--reference", "held"]) == 0
    assert tracked == [True, False]
    capsys.readouterr()
    figures["same_parameters"] = 0.0
    assert compare.main(["--controllers", "qpid"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("qpid"))
    assert row.endswith("1.00e-03  (not on the same benchmark parameters)")


def test_conversions_time_each_row_back_to_back_and_paced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conversion is timed back to back over ``count`` calls after the usual warm-up, and
    paced at 1 kHz over ``count // 10`` calls. Mutants: ``count // 100`` (at least 10) paced calls,
    the paced figure timed back to back, no warm-up."""
    back_to_back, paced = _Timings(), _Timings()
    monkeypatch.setattr(conversions, "time_calls", back_to_back)
    monkeypatch.setattr(conversions, "time_calls_paced", paced)
    rows = len(conversions.run(300))
    assert back_to_back.counts == [300] * rows and back_to_back.warmups == [WARMUP] * rows
    assert paced.counts == [30] * rows and paced.fns == back_to_back.fns


def test_both_paths_of_each_conversion_convert_the_same_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``*_bytes`` row and its ``*_message*`` row do the same conversion, so that the two paths'
    costs compare like with like: the same messages out, the same arrays in, at the call's stamp.
    Mutants: the joint state row encoding a command, the clock message without its stamp or the
    clock bytes at stamp 0, a message row that stops before its conversion's end (no decoding, no
    serialization)."""
    timed = _Timings()
    monkeypatch.setattr(conversions, "time_calls", timed)
    monkeypatch.setattr(conversions, "time_calls_paced", _Timings())
    rows = dict(zip(conversions.run(10), timed.fns, strict=True))

    def messages(path: str, message_path: str, message_type: Any) -> list[Any]:
        return [deserialize_message(raw, message_type) for raw in (rows[path](5), rows[message_path](5))]

    state = messages("arrays_to_joint_state_bytes", "arrays_to_joint_state_message_to_bytes", JointStateMsg)
    clock = messages("stamp_to_clock_bytes", "stamp_to_clock_message_to_bytes", ClockMsg)
    command = messages("arrays_to_command_bytes", "arrays_to_command_message_to_bytes", Float64MultiArray)
    assert state[0] == state[1] and clock[0] == clock[1] and command[0] == command[1]
    assert state[0].header.stamp.nanosec == clock[0].clock.nanosec == 5
    np.testing.assert_equal(rows["command_bytes_to_arrays"](5), rows["command_bytes_to_message_to_arrays"](5))
    decoded = rows["joint_state_bytes_to_arrays"](5), rows["joint_state_bytes_to_message_to_arrays"](5)
    efforts = rows["joint_state_bytes_to_efforts"](5), rows["joint_state_message_to_efforts"](5)
    assert efforts[0] is not None and efforts[1] is not None
    np.testing.assert_equal(efforts[0], efforts[1])
    np.testing.assert_equal(decoded[0][-2:], decoded[1])
