"""Behaviours of ``make sim``'s runner and of the node processes' helpers that a mutation review
found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.run_sim` (the demo trajectory, the monitor's tracking error, the arguments,
the summary) and :mod:`torque_ctrl_ros.node_processes` (``step_parts``, the nodes' environment and
exit statuses). No node process and no DDS: the monitor is built without its rclpy node.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from ros_helpers import requires_rclpy

from torque_ctrl_ros.node_processes import (
    PACKAGE_ROOT,
    NodePair,
    child_env,
    float_or_nan,
    step_parts,
)
from torque_ctrl_ros.nodes.scheduling import PARENT_ENV
from torque_ctrl_ros.paths import data_path
from torque_ctrl_ros.run_sim import (
    ErrorStats,
    Monitor,
    RunOutcome,
    Tracked,
    _duration,
    _latency_figures,
    _not_granted,
    _parse_args,
    _report,
    demo_trajectory,
    print_summary,
    watchdog_summary,
)

pytestmark = [requires_rclpy]  # run_sim imports the nodes' modules

NAMES = [f"joint_{k}" for k in range(1, 8)]
Q0 = np.array([0.1, -0.2, 0.3, 1.2, -0.5, 0.8, 0.05])
#: A whole-run watchdog that went WAITING → OK → FALLBACK when the states stopped at the end.
END_OF_RUN = {
    "watchdog_state": "fallback",
    "watchdog_transitions": 2,
    "watchdog_reason": "no joint state for 120 ms",
    "watchdog_reason_kind": "stale",
}


class _Publisher:
    """The monitor's trajectory publisher: ``subscribers`` matched, the messages it published."""

    def __init__(self, subscribers: int) -> None:
        self.subscribers = subscribers
        self.sent: list[Any] = []

    def get_subscription_count(self) -> int:
        return self.subscribers

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)


def _monitor(
    duration: float,
    sends_trajectory: bool,
    subscribers: int = 1,
    limits: dict[str, tuple[float, float]] | None = None,
) -> Monitor:
    """A :class:`Monitor` without its rclpy node, reading ``(t, q)`` tuples as its states."""
    monitor = object.__new__(Monitor)
    monitor.duration = duration
    monitor.sends_trajectory = sends_trajectory
    monitor.traj_pub = _Publisher(subscribers)  # type: ignore[assignment]  # a fake: no rclpy node
    monitor.names = list(NAMES)
    monitor.q0 = None
    monitor.reference = None
    monitor.t0 = 0.0
    monitor.sent_at = math.nan
    monitor.hold_errors = ErrorStats()
    monitor.errors = monitor.hold_errors
    monitor.refused_at = math.nan
    monitor._rejected_before_demo = 0
    monitor.limits = limits
    monitor.sim_time = 0.0
    monitor.unreadable_states = 0
    monitor.pose_demo = None
    monitor.pose_pub = None
    monitor.tool_error = math.nan
    monitor.no_demo = ""
    monitor.foreign_at = math.nan
    monitor.measured_until = math.nan
    monitor._before_foreign = monitor._error_snapshots(math.nan)
    monitor.publishers = {}
    monitor.diag = {}
    monitor._read_state = lambda raw: cast("tuple[float, np.ndarray]", raw)  # type: ignore[method-assign]
    return monitor


def _raw(t: float, q: np.ndarray) -> bytes:
    """A state for :func:`_monitor`'s monitor: the ``(t, q)`` tuple itself, which its reader passes
    through, typed as the serialized message ``Monitor._on_state`` takes."""
    return cast(bytes, (t, q))


def _publisher(monitor: Monitor) -> _Publisher:
    """The fake publisher :func:`_monitor` gave ``monitor``."""
    assert isinstance(monitor.traj_pub, _Publisher)
    return monitor.traj_pub


def test_the_demo_swings_joints_1_2_4_6_out_and_back_in_turn() -> None:
    """The first waypoint is ``q0 + [0.3, 0.2, 0, 0.3, 0, 0.3, 0]`` rad, the next its mirror
    ``q0 − …``. Mutants: index ``[0, 1, 3, 4]`` (joint 5 instead of 6), amplitude 0.3 on joint 2,
    a first swing of ``−1.0``, no alternation (``sign, t = sign, t + 1.0``)."""
    points = demo_trajectory(Q0, 10.0, 0.5)
    swing = np.array([0.3, 0.2, 0.0, 0.3, 0.0, 0.3, 0.0])
    np.testing.assert_allclose(points[0][1] - Q0, swing, atol=1e-15)
    np.testing.assert_allclose(points[1][1] - Q0, -swing, atol=1e-15)


def test_a_run_of_exactly_start_plus_2_s_gets_its_one_swing() -> None:
    """The demo needs ``start + 2`` s: one swing at +1 s and the way back at +2 s; a run that long
    gets both, only a shorter one none. Mutant: ``start + t + 1.0 < duration``."""
    assert [t for t, _ in demo_trajectory(Q0, 3.0, 1.0)] == [1.0, 2.0]
    assert demo_trajectory(Q0, 2.75, 1.0) == []


def test_the_tracking_error_is_the_largest_joint_error_the_short_way_round() -> None:
    """Against the initial pose (no trajectory): the first state's pose is kept, and a continuous
    joint crossing ±π by 0.03 rad is 0.03 rad off, not 2π − 0.03. Mutants: no wrap
    (``err = q_ref - q``), a signed maximum (``err.max()``), ``q0`` reset at every state."""
    monitor = _monitor(10.0, sends_trajectory=False)
    q_first = Q0.copy()
    q_first[0] = math.pi - 0.01
    monitor._on_state(_raw(1.0, q_first))
    q_next = q_first.copy()
    q_next[0] = -math.pi + 0.02  # 0.03 rad past q_first, across ±π
    monitor._on_state(_raw(1.001, q_next))
    assert monitor.errors.last == pytest.approx(0.03, abs=1e-9)
    assert monitor.errors.max == pytest.approx(0.03, abs=1e-9) and monitor.sim_time == 1.001


def test_the_monitor_sends_the_demo_once_matched_and_tracks_it_on_its_own_timeline() -> None:
    """No trajectory before the controller's subscription is matched (a volatile topic would lose
    it); then one starting 0.5 s after the state that triggered it, and a state on its first
    waypoint (1 s after that start) is 0 rad off. Mutants: no subscription check, ``start = t_now``,
    ``self.t0 = t_now``, ``sample(t)`` instead of ``sample(t - self.t0)``."""
    monitor = _monitor(10.0, sends_trajectory=True, subscribers=0)
    monitor._on_state(_raw(1.0, Q0))
    assert monitor.reference is None and not _publisher(monitor).sent
    _publisher(monitor).subscribers = 1
    monitor._on_state(_raw(2.0, Q0))
    (msg,) = _publisher(monitor).sent
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (2, 500_000_000)
    assert (monitor.t0, monitor.sent_at) == (2.5, 2.0) and list(msg.joint_names) == NAMES
    peak = demo_trajectory(Q0, 10.0, 2.5)[0][1]
    monitor._on_state(_raw(3.5, peak))
    assert monitor.errors.last == pytest.approx(0.0, abs=1e-9)
    assert monitor.tracked().sent == 1


def test_a_run_until_ctrl_c_gets_a_minute_of_demo() -> None:
    """``--duration 0`` (until Ctrl-C): the demo runs for a simulated minute from the state that
    triggered it, not for no time. Mutant: ``demo_trajectory(self.q0, self.duration, start)`` (no
    demo at all)."""
    monitor = _monitor(0.0, sends_trajectory=True)
    monitor._on_state(_raw(2.0, Q0))
    (msg,) = _publisher(monitor).sent
    assert msg.points[-1].time_from_start.sec == 59  # 2.5 s + 59 s + 0.5 s margin ≤ 2 s + 60 s
    np.testing.assert_array_equal(msg.points[-1].positions, Q0)


def test_the_demo_keeps_each_swung_joint_inside_its_limits_by_the_margin() -> None:
    """A swing is cut to end ``DEMO_LIMIT_MARGIN`` inside the nearer limit: joint 4 0.1 rad from
    its lower limit swings 0.05 rad both ways, joint 2 already inside the margin not at all,
    continuous joints (∓inf) the full pattern. Found by a review: from the ``retract`` keyframe
    the demo took joint 4 0.28 rad past its limit and the controller refused the whole demo.
    Mutants: no cut, the cut on one side only, a negative room kept (a swing outward)."""
    from torque_ctrl_ros.run_sim import DEMO_LIMIT_MARGIN

    lower = np.full(7, -math.inf)
    upper = np.full(7, math.inf)
    lower[3], upper[3] = Q0[3] - 0.1, Q0[3] + 2.0  # 0.1 rad of room below joint 4
    lower[1], upper[1] = Q0[1] - 1.0, Q0[1] + 0.03  # joint 2 within the margin of its upper limit
    points = demo_trajectory(Q0, 10.0, 0.5, lower, upper)
    swing = np.array([0.3, 0.0, 0.0, 0.1 - DEMO_LIMIT_MARGIN, 0.0, 0.3, 0.0])
    np.testing.assert_allclose(points[0][1] - Q0, swing, atol=1e-12)
    np.testing.assert_allclose(points[1][1] - Q0, -swing, atol=1e-12)
    for _, q in points:
        assert np.all(q >= lower) and np.all(q <= upper)


def test_the_monitor_cuts_the_demo_to_the_limits_of_the_joints_it_names() -> None:
    """The monitor's limits come by joint name, in the model's order, and are applied in the
    states' order. Mutants: limits taken in the dictionary's order, limits ignored."""
    limits = {name: (-math.inf, math.inf) for name in reversed(NAMES)}
    np.testing.assert_allclose(first_swing(limits), [0.3, 0.2, 0.0, 0.05, 0.0, 0.3, 0.0], atol=1e-12)


def first_swing(limits: dict[str, tuple[float, float]]) -> np.ndarray:
    """The demo's first waypoint less ``Q0`` (rad), sent by a monitor given ``limits`` and, over
    them, joint 4's 0.1 rad of room below ``Q0``."""
    limits = {**limits, "joint_4": (Q0[3] - 0.1, Q0[3] + 2.0)}
    monitor = _monitor(10.0, sends_trajectory=True, limits=limits)
    monitor._on_state(_raw(1.0, Q0))
    (msg,) = _publisher(monitor).sent
    return np.array(msg.points[0].positions) - Q0


def _controller_diagnostics(**values: str) -> Any:
    """A DiagnosticArray-like message with the controller's status holding ``values``."""
    status = SimpleNamespace(
        name="torque_ctrl_ros: controller_node",
        message="ok",
        values=[SimpleNamespace(key=k, value=v) for k, v in values.items()],
    )
    return SimpleNamespace(status=[status])


def test_a_refused_demo_is_not_reported_as_tracking_error() -> None:
    """The controller refusing the demo (its ``targets_rejected`` above 0) leaves the arm holding
    its pose: the summary then reports the error against the initial pose over the whole run,
    and says so, not the distance to a motion that never ran (a review measured "max 0.3 rad vs
    trajectory" for an arm that held still). Until a refusal is seen the error is against the
    trajectory. Mutants: no refusal check, the trajectory's error kept after it."""
    monitor = _monitor(10.0, sends_trajectory=True)
    monitor._on_state(_raw(1.0, Q0))
    assert _publisher(monitor).sent
    peak = demo_trajectory(Q0, 10.0, 1.5)[0][1]
    monitor._on_diag(_controller_diagnostics(targets_received="0", targets_rejected="0"))
    monitor._on_state(_raw(2.5, Q0))  # the arm holds: 0.3 rad from the demo's first waypoint
    assert monitor.errors.last == pytest.approx(0.3, abs=1e-9)
    monitor._on_diag(_controller_diagnostics(targets_received="0", targets_rejected="1"))
    monitor._on_state(_raw(2.6, Q0 + 0.01))
    tracked = monitor.tracked()
    assert tracked.what.startswith("initial pose (the controller refused the demo trajectory")
    assert (tracked.errors.count, tracked.sent) == (3, 1)
    assert tracked.errors.max == pytest.approx(0.01, abs=1e-9)
    assert not np.allclose(peak, Q0)


def test_a_refusal_from_before_the_demo_is_not_read_as_the_demos() -> None:
    """The controller's ``targets_rejected`` counts from its start: a target from elsewhere
    refused before the demo was sent (1 in its last report before) does not make an accepted demo
    read as refused. Mutant: the count compared with 0 (a review: the running total)."""
    monitor = _monitor(10.0, sends_trajectory=True, subscribers=0)
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_diag(_controller_diagnostics(targets_received="0", targets_rejected="1"))
    _publisher(monitor).subscribers = 1
    monitor._on_state(_raw(1.5, Q0))
    assert _publisher(monitor).sent
    monitor._on_diag(_controller_diagnostics(targets_received="1", targets_rejected="1"))
    assert math.isnan(monitor.refused_at) and monitor.tracked().what.startswith("trajectory")
    monitor._on_diag(_controller_diagnostics(targets_received="1", targets_rejected="2"))
    assert monitor.tracked().what.startswith("initial pose (the controller refused")


def test_an_accepted_demo_keeps_its_tracking_error_against_the_trajectory() -> None:
    """No refusal (``targets_rejected`` 0): the error stays the one against the trajectory, the
    states before it was sent included. Mutant: the initial pose's error reported always."""
    monitor = _monitor(10.0, sends_trajectory=True)
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_diag(_controller_diagnostics(targets_received="1", targets_rejected="0"))
    peak = demo_trajectory(Q0, 10.0, 1.5)[0][1]
    monitor._on_state(_raw(2.5, peak))
    tracked = monitor.tracked()
    assert tracked.what.startswith("trajectory (sent at t = 1.00 s")
    assert tracked.errors.count == 2 and tracked.errors.last == pytest.approx(0.0, abs=1e-9)


def test_the_status_line_shows_no_latency_until_both_percentiles_are_known() -> None:
    """A p50 without its p99 is no figure to show (it would print ``p99 nan ms``). Mutant:
    ``math.isnan(p50) and math.isnan(p99)``."""
    assert _latency_figures({"latency_p50_ms": "0.25"}) == "latency: no state answered yet"
    assert _latency_figures({"latency_p99_ms": "0.5"}) == "latency: no state answered yet"


def test_duration_0_runs_until_ctrl_c_and_a_non_number_is_refused() -> None:
    """``--duration 0`` is the documented "until Ctrl-C"; ``abc`` and ``nan`` are no durations.
    Mutants: ``0.0 < value``, and ``value = 0.0`` for text that is no number."""
    assert _duration("0") == 0.0
    for text in ("abc", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"got '{text}'"):
            _duration(text)


def test_the_controller_given_wins_over_the_parameter_files_one() -> None:
    """``make sim CONTROLLER=qpid`` runs qpid though the shipped file names computed_torque.
    Mutant: ``args.controller = file_controller(args.params_file)``."""
    args, _ = _parse_args(["--controller", "qpid"])
    assert args.controller == "qpid"


def test_the_end_of_the_run_is_told_apart_only_without_refused_states() -> None:
    """Superseded states (reordered, not refused) leave the end of the run clean; a stale state
    refused during it, or a summary without the transition count, does not. Mutants: superseded
    counted (``if kind``), ``refused >= 0``, a missing count read as 0."""
    clean = "ok until the states ended, then fallback (no joint state for 120 ms)"
    assert watchdog_summary({**END_OF_RUN, "rejected": {"stale": 0, "superseded": 5}}) == clean
    tripped = "fallback (no joint state for 120 ms)"
    assert watchdog_summary({**END_OF_RUN, "rejected": {"stale": 2, "superseded": 0}}) == tripped
    unknown = {k: v for k, v in END_OF_RUN.items() if k != "watchdog_transitions"}
    assert watchdog_summary({**unknown, "rejected": {}}) == tripped


def test_scheduling_granted_to_one_node_only_is_said_not_granted() -> None:
    """Both nodes asked for SCHED_FIFO and a CPU latency; one got neither. Mutants: ``any`` for
    ``all`` in either check of ``_not_granted``."""
    asked = argparse.Namespace(rt_priority=20, cpu_latency_us="0")
    note = _not_granted(asked, ["fifo:20 cpus:0 cpu_latency:0us", "normal cpus:1"])
    assert "SCHED_FIFO 20 and a CPU latency of 0 µs: not granted" in note


def _write_summaries(out: Path, sim: dict[str, Any], ctrl: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sim.json").write_text(json.dumps(sim))
    (out / "controller.json").write_text(json.dumps(ctrl))


def _pair(out: Path, returncodes: tuple[int | None, int | None]) -> NodePair:
    """A pair whose nodes ran (or not: ``None``) and ended with ``returncodes``."""
    pair = NodePair(0, out, "computed_torque")
    # Stand-ins for the Popen objects: only whether a node ran is read.
    pair.sim, pair.ctrl = (SimpleNamespace() if rc is not None else None for rc in returncodes)  # type: ignore[assignment]
    pair.returncodes = returncodes
    return pair


SIM_SUMMARY = {
    "sim_time_s": 10.0,
    "step_rate_hz": 1000.0,
    "latency": {"p50_ms": 0.4},
    "state_out": {"p50_ms": 0.03, "p99_ms": 0.06},
    "commands_received": 5000,
    "late_steps": 35,
    "steps": 10_000,
}
#: The runner's arguments for a plain run (no scheduling asked).
RUN_ARGS = argparse.Namespace(
    controller="computed_torque", mode="realtime", duration=10.0, rt_priority=0, cpu_latency_us="none"
)
CTRL_SUMMARY = {
    "callback": {"p50_ms": 0.2, "p99_ms": 0.4},
    "targets_received": 1,
    "target_pauses": 2,
    "target_drops": 0,
    "watchdog_state": "ok",
}


def test_the_summary_says_failed_shares_late_steps_of_all_steps_and_keeps_pauses_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A controller that exited with status 1 makes the run ``failed``; late steps are a share of
    the steps (35 of 10 000: 0.35 %, not of the 5 000 commands); 2 pauses and no drop are said as
    such; without steal figures (no ``/proc/stat``) no host line and no crash. Mutants:
    ``'done'`` always, ``_share(…, commands_received)``, pauses and drops swapped,
    ``if steal is not None``."""
    _write_summaries(tmp_path, SIM_SUMMARY, CTRL_SUMMARY)
    errors = ErrorStats()
    errors.add(0.01)
    print_summary(
        _pair(tmp_path, (0, 1)), RUN_ARGS, RunOutcome(Tracked("trajectory", errors, sent=1), False, {})
    )
    out = capsys.readouterr().out
    assert out.startswith("summary (failed): computed_torque, realtime"), out
    assert "late steps 35 = 0.35 %" in out
    assert "paused its target 2 times" in out and "dropped" not in out
    assert "hypervisor" not in out


def test_a_node_stopped_by_sigint_is_no_failure_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGINT is how the runner stops its nodes: status ``-SIGINT`` prints no log tail, a node
    never started is said so. Mutant: ``elif rc != 0`` in ``_report``."""
    _write_summaries(tmp_path, SIM_SUMMARY, CTRL_SUMMARY)
    _report(
        _pair(tmp_path, (-signal.SIGINT, None)),
        RUN_ARGS,
        RunOutcome(Tracked("initial pose", ErrorStats()), True, {}),
    )
    err = capsys.readouterr().err
    assert "exited with status" not in err and "controller_node was not started" in err, err


def test_step_parts_list_the_parts_in_path_order_with_nan_for_a_missing_figure() -> None:
    """The summary's step line goes state out → … → callback → hops; a figure a node did not write
    is NaN, not 0 ms; and without the simulator's ``state_out`` or the controller's ``callback``
    there are no hops (and no crash). Mutants: ``compute`` and ``prepare`` swapped in
    ``STEP_PARTS``, ``0.0 if value is None``, ``"state_out" in parts or "callback" in parts``."""
    parts = {"p50_ms": 0.01, "p99_ms": 0.02}
    sim = {"latency": {"p50_ms": 0.4}, "state_out": parts}
    ctrl = {
        "compute": parts,
        "callback": {"p50_ms": 0.1},
        "callback_parts": {k: parts for k in ("state_in", "prepare", "qp_solve", "command_out")},
    }
    found = step_parts(sim, ctrl)
    assert list(found) == [
        "state_out",
        "state_in",
        "compute",
        "prepare",
        "qp_solve",
        "command_out",
        "callback",
        "hops",
    ]
    assert math.isnan(found["callback"]["p99_ms"]) and math.isnan(float_or_nan(None))
    assert "hops" not in step_parts(sim, {"compute": parts})
    assert "hops" not in step_parts({"latency": {"p50_ms": 0.4}}, ctrl)


def test_the_nodes_run_on_the_runners_domain_and_checkout_and_die_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The domain given wins over one in the environment, this checkout comes first on the
    ``PYTHONPATH``, the venv's prefix is on ``AMENT_PREFIX_PATH`` (the message packages), and the
    nodes know the runner's pid (they stop with it). Mutants: ``setdefault("ROS_DOMAIN_ID", …)``,
    the checkout after ``$PYTHONPATH``, no ``sys.prefix``, no ``PARENT_ENV``."""
    monkeypatch.setenv("ROS_DOMAIN_ID", "7")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("AMENT_PREFIX_PATH", "/opt/ros/jazzy")
    env = child_env(42)
    assert env["ROS_DOMAIN_ID"] == "42"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(PACKAGE_ROOT), "/elsewhere"]
    assert env["AMENT_PREFIX_PATH"].split(os.pathsep) == ["/opt/ros/jazzy", sys.prefix]
    assert env[PARENT_ENV] == str(os.getpid())


def _exited(rc: int) -> SimpleNamespace:
    return SimpleNamespace(poll=lambda: rc)


def test_a_run_is_clean_only_when_a_node_ran_and_each_that_ran_ended_normally(tmp_path: Path) -> None:
    """Status 0 or ``-SIGINT`` for each node started (the composed process alone is one), but not
    a run where none started. Mutants: ``bool(started) and`` dropped, ``signal.SIGINT`` for
    ``-signal.SIGINT``, every return code counted (``started = list(self.returncodes)``)."""
    assert not _pair(tmp_path, (None, None)).clean_exit()
    assert _pair(tmp_path, (-signal.SIGINT, 0)).clean_exit()
    assert not _pair(tmp_path, (signal.SIGINT, 0)).clean_exit()
    assert _pair(tmp_path, (0, None)).clean_exit()  # composed: one process


def test_a_pairs_summaries_log_tail_and_files_come_from_its_own_folder(tmp_path: Path) -> None:
    """``stats()`` is ``(sim, controller)``, ``scheduling()`` says ``unknown`` without a summary,
    the log tail is the log's last lines, and the shipped file passed as ``params_file`` is read
    once. Mutants: ``stats`` swapped, default ``normal``, ``splitlines()[:lines]``, no dedup."""
    pair = NodePair(0, tmp_path, "qpid")
    assert pair.scheduling() == {"sim_node": "unknown", "controller_node": "unknown"}
    _write_summaries(tmp_path, {"who": "sim"}, {"who": "ctrl"})
    assert [s["who"] for s in pair.stats()] == ["sim", "ctrl"]
    (tmp_path / "sim_node.log").write_text("\n".join(f"line {k}" for k in range(20)))
    assert pair.log_tail("sim_node", 2) == "line 18\nline 19"
    shipped = Path(data_path("config", "gen3_controllers.yaml"))
    assert NodePair(0, tmp_path, "qpid", params_file=shipped).params_files == [shipped]


def _with_duration(duration: float) -> argparse.Namespace:
    """:data:`RUN_ARGS` for a run of ``duration`` simulated seconds."""
    return argparse.Namespace(**{**vars(RUN_ARGS), "duration": duration})


def test_a_run_sharing_its_ros_domain_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another run's simulator on the same ROS domain (``Monitor.crowded``): the run that ended
    cleanly is failed, exit 1, and a line says what was seen; interrupted, it says so and stays
    interrupted. A fresh-clone review's run read "summary (done)", exit 0, with the figures of two
    mixed runs. Mutants: the verdict kept, the line left out."""
    _write_summaries(tmp_path, {**SIM_SUMMARY, "steps": 10_000}, CTRL_SUMMARY)
    crowded = Tracked("initial pose", ErrorStats(), crowded="2 nodes published /joint_states")
    ending = print_summary(_pair(tmp_path, (0, 0)), RUN_ARGS, RunOutcome(crowded, False, {}))
    out = capsys.readouterr().out
    assert ending == ("failed: another run on its ROS domain", 1)
    assert out.startswith("summary (failed: another run on its ROS domain): computed_torque")
    assert "  ROS domain       2 nodes published /joint_states during the run: another run" in out
    alone = Tracked("initial pose", ErrorStats())
    assert print_summary(_pair(tmp_path, (0, 0)), RUN_ARGS, RunOutcome(alone, False, {})) == ("done", 0)
    assert "ROS domain" not in capsys.readouterr().out
    ending = print_summary(_pair(tmp_path, (0, 0)), RUN_ARGS, RunOutcome(crowded, True, {}))
    assert ending == ("interrupted", 0) and "ROS domain " in capsys.readouterr().out


def test_a_run_that_ended_early_says_which_node_ended_it_and_when_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both nodes end with status 0 on SIGTERM: a simulator killed at 0.5 s of a 6 s run, or a
    controller that exited at 1.35 s, made a run the runner called ``done`` (exit 0). The header now
    says which node ended it and when, and the exit status is 1; a run of all its steps is done."""
    from torque_ctrl_ros.run_sim import verdict

    tracked = Tracked("initial pose", ErrorStats())
    _write_summaries(tmp_path, {**SIM_SUMMARY, "steps": 500, "sim_time_s": 0.5}, CTRL_SUMMARY)
    ending = print_summary(_pair(tmp_path, (0, 0)), _with_duration(6.0), RunOutcome(tracked, False, {}))
    out = capsys.readouterr().out
    assert out.startswith("summary (ended early: sim_node stopped at t = 0.50 s of 6 s): computed_torque"), (
        out
    )
    assert ending.exit_status == 1
    _write_summaries(tmp_path, {**SIM_SUMMARY, "steps": 6000, "sim_time_s": 6.0}, CTRL_SUMMARY)
    ending = print_summary(_pair(tmp_path, (0, 0)), _with_duration(6.0), RunOutcome(tracked, False, {}, 1.35))
    out = capsys.readouterr().out
    assert out.startswith("summary (ended early: controller_node exited at t = 1.35 s of 6 s): "), out
    assert ending.exit_status == 1
    assert print_summary(_pair(tmp_path, (0, 0)), _with_duration(6.0), RunOutcome(tracked, False, {})) == (
        "done",
        0,
    )
    _write_summaries(tmp_path, {**SIM_SUMMARY, "steps": 5999, "sim_time_s": 5.999}, CTRL_SUMMARY)
    assert verdict(_pair(tmp_path, (0, 0)), *_stats(tmp_path), 6.0, False).exit_status == 1  # one step short
    # Until Ctrl-C: a simulator that ended without one ended early; one interrupted did not.
    assert verdict(_pair(tmp_path, (0, 0)), *_stats(tmp_path), 0.0, False) == (
        "ended early: sim_node stopped at t = 6.00 s (the run was to last until Ctrl-C)",
        1,
    )
    assert verdict(_pair(tmp_path, (0, 0)), *_stats(tmp_path), 0.0, True) == ("interrupted", 0)
    # A node that failed is said failed, with when the run ended where that is known.
    assert verdict(_pair(tmp_path, (0, 1)), *_stats(tmp_path), 6.0, False, 1.35) == (
        "failed: controller_node exited at t = 1.35 s of 6 s",
        1,
    )


def _stats(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return NodePair(0, out, "computed_torque").stats()


def test_a_stop_before_the_nodes_were_up_is_said_so_and_reads_no_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped before the controller started, the runner said ``sim_node and controller_node wrote no
    summary (see the errors above ...)`` with no error above, and exited 0; stopped before any node
    started, it read the summaries a previous run had left in the folder. Now: ``interrupted before
    the nodes were up``, exit status 130, and no summary read from a folder no node of this run wrote
    to. A controller started but not yet answering is no run either."""
    from torque_ctrl_ros.run_sim import verdict

    _write_summaries(tmp_path, SIM_SUMMARY, CTRL_SUMMARY)  # a previous run's
    tracked = Tracked("initial pose", ErrorStats(), no_demo="the controller's target topic was not ...")
    ending = print_summary(_pair(tmp_path, (None, None)), RUN_ARGS, RunOutcome(tracked, True, {}))
    assert (
        capsys.readouterr().out
        == "summary (interrupted before the nodes were up): computed_torque, realtime\n"
    )
    assert ending.exit_status == 130
    (tmp_path / "controller.json").unlink()  # the simulator, stopped, wrote its summary; no controller
    ending = print_summary(_pair(tmp_path, (-signal.SIGINT, None)), RUN_ARGS, RunOutcome(tracked, True, {}))
    out = capsys.readouterr().out
    assert (
        out
        == f"summary (interrupted before the nodes were up): computed_torque, realtime (logs in {tmp_path})\n"
    )
    assert ending.exit_status == 130
    _write_summaries(tmp_path, {**SIM_SUMMARY, "commands_received": 0}, CTRL_SUMMARY)
    assert verdict(_pair(tmp_path, (0, 0)), *_stats(tmp_path), 10.0, True).exit_status == 130
    _write_summaries(tmp_path, SIM_SUMMARY, CTRL_SUMMARY)
    assert verdict(_pair(tmp_path, (0, 0)), *_stats(tmp_path), 10.0, True) == ("interrupted", 0)


class _WatchedPair:
    """What :func:`_watch` uses of a :class:`NodePair`: the simulator runs ``turns`` monitor turns;
    the controller exits after ``controller_turns`` (never: ``None``)."""

    def __init__(self, turns: int, controller_turns: int | None) -> None:
        self.turns, self.controller_turns, self.spun = turns, controller_turns, 0
        self.started = False

    def start(self, before_controller: Any = None) -> None:
        self.started = True

    def sim_running(self) -> bool:
        return self.spun < self.turns

    def controller_exited(self) -> bool:
        return self.controller_turns is not None and self.spun >= self.controller_turns


class _WatchedMonitor:
    """What :func:`_watch` uses of the monitor: each turn is 0.25 simulated seconds."""

    def __init__(self, pair: _WatchedPair, line: str = "t=  0.00 s | rate") -> None:
        self.pair, self.line, self.sim_time = pair, line, 0.0

    def spin(self, seconds: float) -> None:
        self.pair.spun += 1
        self.sim_time += 0.25

    def status_line(self) -> str:
        return self.line

    def count_publishers(self) -> None:
        pass


def test_the_watch_notes_when_the_controller_exited_before_the_simulator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The controller should outlive the simulator: exiting first (SIGTERM: status 0), the
    simulated time of the last state read is kept for the summary; a run to its end keeps none."""
    from torque_ctrl_ros.run_sim import _watch

    pair = _WatchedPair(turns=24, controller_turns=5)
    assert _watch(pair, _WatchedMonitor(pair)) == 1.25  # type: ignore[arg-type]  # stand-ins
    assert "controller_node exited early; see its log" in capsys.readouterr().err
    pair = _WatchedPair(turns=24, controller_turns=None)
    assert _watch(pair, _WatchedMonitor(pair)) is None  # type: ignore[arg-type]  # stand-ins
    assert "exited early" not in capsys.readouterr().err


def test_a_stop_requested_during_the_set_up_starts_no_node() -> None:
    """A Ctrl-C while the monitor was being set up raised ``KeyboardInterrupt`` out of an import
    (a traceback); it now only notes the stop, and the run then ends before starting anything."""
    from torque_ctrl_ros import run_sim

    pair = _WatchedPair(turns=24, controller_turns=None)
    run_sim._STOP_REQUESTED.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sim._watch(pair, _WatchedMonitor(pair))  # type: ignore[arg-type]  # stand-ins
    finally:
        run_sim._STOP_REQUESTED.clear()
    assert not pair.started


class _Terminal:
    """``sys.stdout`` on a terminal: what was written, in the pieces it was written in."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_the_status_line_on_a_terminal_clears_what_it_replaces_and_fits_the_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rewritten in place with ``\\r``, a shorter line left the end of the longer one before it
    (``… late 271 rejected 02 rejected 0``), and a line as wide as the terminal or wider wrapped,
    each refresh leaving a row behind. Now each is cut to the terminal's width less one and clears
    the rest of its row; off a terminal, the lines are as they were."""
    from torque_ctrl_ros.run_sim import _watch, status_output

    long = "t=  1.00 s | rate 1000.0 Hz | late 271 rejected 0 | " + "x" * 80
    assert status_output("late 3 rejected 0", True, 80) == "\rlate 3 rejected 0\x1b[K"
    assert status_output(long, True, 80) == "\r" + long[:79] + "\x1b[K"
    assert status_output(long, False, 80) == long + "\n"
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr("shutil.get_terminal_size", lambda *args: os.terminal_size((40, 24)))
    pair = _WatchedPair(turns=3, controller_turns=None)
    _watch(pair, _WatchedMonitor(pair, long))  # type: ignore[arg-type]  # stand-ins
    assert terminal.writes[0] == "\r" + long[:39] + "\x1b[K", terminal.writes
