"""Behaviours of a day's review fixes that a mutation review found unpinned.

Modules reviewed (the lines changed by the fixes): :mod:`torque_ctrl_ros.run_sim` (the demo's
limit cut, the monitor's refused demo, ``watchdog_summary``, ``_given_up_text``,
``_position_limits``), :mod:`torque_ctrl_ros.core.robot` (limits out of order, ``_check_inertia``,
the damping overflow), :mod:`torque_ctrl_ros.core.target_tracking` (``_seen_state`` / ``_waited``,
the first waypoint's acceleration), :mod:`torque_ctrl_ros.nodes.controller_diagnostics`
(``watchdog_warning``) and its use in :mod:`torque_ctrl_ros.nodes.controller_node`,
:mod:`torque_ctrl_ros.nodes.sim_node` (the joined message, ``safe_torque_said``,
``EARLIER_START``), :mod:`torque_ctrl_ros.nodes.params` and :mod:`torque_ctrl_ros.core.reach`.
Each test names the behaviour it pins and the source change (mutant) it was written to catch.
"""

# ruff: noqa: F811 (the `nodes` fixture, imported from test_node_runtime_guards, is the node tests' argument)
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import (  # noqa: F401
    HOME,
    Nodes,
    Recorder,
    _latest_status,
    _node_on_sim_time,
    _state_msg,
    nodes,
)
from test_run_sim_mutation_gaps import (
    NAMES,
    Q0,
    SIM_SUMMARY,
    _controller_diagnostics,
    _monitor,
    _pair,
    _publisher,
    _raw,
    _with_duration,
    _write_summaries,
    first_swing,
)
from test_target_tracking import _at_rest, _joint_tracker, _points

from torque_ctrl_ros.core import ModelError, RobotModel, TargetError
from torque_ctrl_ros.core.target_tracking import TrajectoryPoints
from torque_ctrl_ros.nodes.controller_diagnostics import watchdog_warning
from torque_ctrl_ros.paths import data_path
from torque_ctrl_ros.run_sim import (
    ErrorStats,
    RunOutcome,
    Tracked,
    _given_up_text,
    _position_limits,
    demo_trajectory,
    print_summary,
)

pytestmark = [requires_rclpy]  # run_sim and the node helpers import the nodes' modules


# ------------------------------------------------------------------ run_sim.py: the monitor
def test_a_refusal_is_dated_by_the_state_before_its_first_report_and_kept() -> None:
    """The refused demo is dated at the simulated time of the last state before the first report
    that showed ``targets_rejected`` above 0 (2.50 s), not the time the demo was sent (1.00 s),
    and later reports that still show the refusal do not move the date. Mutants:
    ``refused_at = self.sent_at``; the ``not math.isnan(self.refused_at)`` guard dropped (each
    report re-dates it)."""
    monitor = _monitor(10.0, sends_trajectory=True)
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_state(_raw(2.5, Q0))
    monitor._on_diag(_controller_diagnostics(targets_received="0", targets_rejected="1"))
    monitor._on_state(_raw(3.5, Q0))
    monitor._on_diag(_controller_diagnostics(targets_received="0", targets_rejected="1"))
    assert monitor.tracked().what == (
        "initial pose (the controller refused the demo trajectory sent at t = 1.00 s, seen at t = 2.50 s)"
    )


def test_the_trajectorys_error_counts_the_states_held_before_it_was_sent() -> None:
    """Until the controller's topic is discovered the arm holds ``q0``; those states' errors
    against the initial pose stay in the error reported once the demo is sent (5 states: 3
    before, 2 after; the largest, 0.02 rad, from before). Mutant: ``self.errors = ErrorStats()``
    when the demo is sent (the states before it lost)."""
    monitor = _monitor(10.0, sends_trajectory=True, subscribers=0)
    monitor._on_state(_raw(0.5, Q0))
    monitor._on_state(_raw(0.6, Q0 + 0.02))
    monitor._on_state(_raw(0.7, Q0))
    _publisher(monitor).subscribers = 1
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_state(_raw(1.1, Q0))
    tracked = monitor.tracked()
    assert tracked.what.startswith("trajectory (sent at t = 1.00 s")
    assert tracked.errors.count == 5
    assert tracked.errors.max == pytest.approx(0.02, abs=1e-12)


def test_without_a_demo_the_error_is_against_the_initial_pose_and_says_no_refusal() -> None:
    """A controller that takes no trajectory: nothing is sent, the error is against the initial
    pose and reads just ``initial pose``. Mutant: ``if self.errors is self.hold_errors`` without
    ``sent`` (a refusal of a demo never sent, at t = nan s)."""
    monitor = _monitor(10.0, sends_trajectory=False)
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_state(_raw(1.1, Q0 + 0.01))
    tracked = monitor.tracked()
    assert (tracked.what, tracked.sent, tracked.errors.count) == ("initial pose", 0, 2)


def test_a_joint_the_limits_do_not_name_swings_its_full_pattern() -> None:
    """Limits known for six joints only: the seventh's are none (∓inf), so the swung joint 6
    keeps its 0.3 rad while joint 4, named, is cut to its room. Mutant: a missing joint's
    limits taken as ``(0, 0)`` (no room: not swung)."""
    limits = {name: (-math.inf, math.inf) for name in NAMES if name != "joint_6"}
    np.testing.assert_allclose(first_swing(limits), [0.3, 0.2, 0.0, 0.05, 0.0, 0.3, 0.0], atol=1e-12)


def test_the_position_limits_come_from_the_controllers_model_lower_then_upper(tmp_path: Path) -> None:
    """``_position_limits`` of the shipped parameters: the Gen3's joints by name, each ``(lower,
    upper)`` as the model has them (joint_2 ±2.24 rad, joint_1 continuous ∓inf); a parameter file
    that is not there gives ``None`` (the controller node says why), not an error that ends the
    run before it starts. Mutants: the bounds zipped upper first (every demo swing cut to
    nothing, or outward); ``except OSError`` alone (the missing file's ``ConfigError`` raised)."""
    assert _position_limits([tmp_path / "missing.yaml"]) is None
    shipped = Path(data_path("config", "gen3_controllers.yaml"))
    limits = _position_limits([shipped])
    assert limits is not None and list(limits) == [f"joint_{k}" for k in range(1, 8)]
    assert limits["joint_1"] == (-math.inf, math.inf)
    assert limits["joint_2"] == pytest.approx((-2.24, 2.24), abs=0.01)
    assert all(lo < hi for lo, hi in limits.values())
    assert demo_trajectory(np.zeros(7), 10.0, 0.5, *np.array(list(limits.values())).T)[0][1][0] == 0.3


# ------------------------------------------------------------------ run_sim.py: the summary
def test_the_ticks_given_up_say_the_overruns_in_their_own_number() -> None:
    """``time`` / ``times`` follow the overruns, not the ticks (5 ticks in 1 overrun, 1 tick in
    2), and a summary without the overrun count says ``?`` times. Mutants: ``'s' if ticks != 1``,
    ``else "0 times"``."""
    assert _given_up_text(5, 1) == ", 5 ticks given up (1 time over 50 ms behind: no step ran at them)"
    assert _given_up_text(1, 2) == ", 1 tick given up (2 times over 50 ms behind: no step ran at them)"
    assert _given_up_text(5, None) == ", 5 ticks given up (? over 50 ms behind: no step ran at them)"


def test_the_summary_puts_the_skipped_ticks_before_the_overruns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands line reads the simulator's ``skipped_ticks`` (1428) as the ticks and its
    ``overruns`` (28) as the times. Mutant: the two arguments of ``_given_up_text`` swapped."""
    sim = {**SIM_SUMMARY, "skipped_ticks": 1428, "overruns": 28}
    _write_summaries(tmp_path, sim, {"watchdog_state": "ok"})
    tracked = Tracked("initial pose", ErrorStats())
    print_summary(_pair(tmp_path, (0, 0)), _with_duration(10.0), RunOutcome(tracked, False, {}))
    assert ", 1428 ticks given up (28 times over 50 ms behind" in capsys.readouterr().out


# ------------------------------------------------------------------ core/robot.py
def _bracelet_inertial(urdf: str) -> str:
    """The ``<inertial>`` block of the Gen3 URDF's last link (``bracelet_link``, after joint_7)."""
    block = urdf[urdf.index('<link name="bracelet_link">') :]
    inertial = block[: block.index("</inertial>") + len("</inertial>")]
    return inertial[inertial.index("<inertial>") :]


def test_an_inertia_a_few_billionths_of_the_largest_is_refused(urdf_path: Path) -> None:
    """The last link at 1e-6 kg and 1e-10 kg·m² leaves ``M``'s smallest eigenvalue 1e-10 against
    its largest 0.385 (a ratio of 2.6e-10, under ``_SINGULAR_INERTIA`` 1e-9): refused, naming
    joint_7; its ``M⁻¹`` (1e10) would ring every damping check. Mutant: ``_SINGULAR_INERTIA =
    1e-13`` (only a link without any inertia refused)."""
    urdf = urdf_path.read_text()
    tiny = (
        '<inertial><mass value="1e-6"/>'
        '<inertia ixx="1e-10" ixy="0" ixz="0" iyy="1e-10" iyz="0" izz="1e-10"/></inertial>'
    )
    with pytest.raises(ModelError, match=r"joint_7 moves almost no inertia .* smallest eigenvalue 1e-10"):
        RobotModel.from_urdf_string(urdf.replace(_bracelet_inertial(urdf), tiny, 1))


def test_an_inertia_overflowing_to_inf_is_refused_as_not_finite(urdf_path: Path) -> None:
    """A link of 1.7e308 kg (a double's largest, near enough) overflows ``M(q)`` to ``inf``: a
    :class:`ModelError` saying so, not numpy's eigensolver failing on it. Mutant: the
    ``np.isfinite(M)`` check dropped."""
    urdf = urdf_path.read_text()
    heavy = urdf.replace('<mass value="0.5"/>', '<mass value="1.7e308"/>', 1)
    with pytest.raises(ModelError, match=r"the joint-space inertia is not finite at q = "):
        RobotModel.from_urdf_string(heavy)


# ------------------------------------------------------------------ core/target_tracking.py
def test_a_trajectory_stamped_before_the_first_state_is_late_not_waited_for(robot: RobotModel) -> None:
    """Submitted before any state, stamped 5.0 s, with the first state at 5.5 s: it is 0.5 s late
    (no state was seen, so none was waited for), and a lone point at its time 0 has ended: refused
    as such, not started whole at 5.5 s. Mutant: ``self._waited = stamp > self._last_stamp``
    (``_seen_state`` dropped: before any state, every stamp above 0 counts as waited for)."""
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    tracker, errors = _joint_tracker(robot)
    tracker.submit_trajectory(_points([(0.0, q0 + np.eye(7)[0] * 0.005)]), 5.0, now=5.0)
    ref = tracker.reference(_at_rest(q0, 5.5))
    assert len(errors) == 1 and "ended 0.500 s before" in errors[0], errors
    np.testing.assert_allclose(ref.q, q0, atol=1e-12)


def test_a_first_waypoints_acceleration_is_held_to_the_bound_in_both_directions(robot: RobotModel) -> None:
    """A quintic whose first point (at 0.5 s) asks −40 rad/s² of joint_1 (bound 25.85) and
    −30 of joint_2 is refused on arrival, naming joint_1, the first over: the bound holds the
    acceleration's magnitude. Mutant: ``np.abs`` dropped (a braking first point passed, refused
    only when it took effect)."""
    tracker, _ = _joint_tracker(robot)
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    tracker.reference(_at_rest(q0, 1.0))
    positions = np.tile(q0, (2, 1))
    positions[1, 0] -= 0.02
    accelerations = np.zeros((2, 7))
    accelerations[0, :2] = [-40.0, -30.0]
    points = TrajectoryPoints(np.array([0.5, 0.8]), positions, np.zeros((2, 7)), accelerations)
    with pytest.raises(TargetError, match=r"point 0 accelerates joint_1 at -40\.00 rad/s², above its bound"):
        tracker.submit_trajectory(points, 5.0, 1.0)


# ------------------------------------------------------------------ controller_diagnostics.py
def test_the_watchdog_warning_names_only_the_reasons_refused_since_the_last_report() -> None:
    """A reason refused before the last report but not since (0 new) is left out of the list; a
    report with fallbacks alone names them alone; nothing new is "". Mutants: the ``if count``
    filter dropped (``stale 0`` listed), ``if refused`` guarding the fallbacks' part."""
    assert watchdog_warning(0, {"stale": 0, "non_finite": 2}) == (
        "the watchdog refused 2 joint state(s) (non_finite 2) since the last report"
    )
    assert watchdog_warning(3, {"stale": 0}) == "the watchdog fell back 3 time(s) since the last report"
    assert watchdog_warning(0, {"stale": 0}) == ""


# ------------------------------------------------------------------ controller_node.py
@pytest.mark.ros
def test_a_fallback_while_the_states_came_counts_before_the_last_state(nodes: Nodes, tmp_path: Path) -> None:
    """One non-finite state among good ones: the watchdog falls back once and recovers while the
    states keep coming; the summary's ``watchdog_fallbacks_before_last_state`` (what make sim
    reads as the fallbacks during the run) is that 1. Mutant: the count not taken at each state
    (always 0: the fallback during the run read as a clean end)."""
    from rclpy.time import Time

    from torque_ctrl_ros.core.safety import WatchdogState

    stats = tmp_path / "controller.json"
    node = nodes.make("controller", controller="computed_torque", use_sim_time=True, stats_file=str(stats))
    clock = node.node.get_clock()

    def at(k: int, q: np.ndarray) -> None:
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(q, 100.0 + k * 1e-3))

    bad = HOME.copy()
    bad[2] = math.nan
    for k in range(600):
        at(k, bad if k == 50 else HOME)
    assert node.watchdog.state is WatchdogState.OK
    nodes.close(node)
    summary = json.loads(stats.read_text())
    assert summary["watchdog_fallbacks_before_last_state"] == 1, summary


@pytest.mark.ros
def test_a_superseded_state_is_no_refusal_in_the_watchdogs_warning(nodes: Nodes) -> None:
    """A state stamped before the last one (reordered or replayed) is dropped as superseded, no
    fault: the next report stays OK and names no refusal. Mutant: ``SUPERSEDED`` kept in the
    counts the warning reads (``refused 1 joint state(s) (superseded 1)``)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from torque_ctrl_ros.core.safety import RejectReason

    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 50):
        at(k, HOME)
    node._publish_diagnostics()
    at(50, HOME)
    node._on_state_message(_state_msg(HOME, 100.045))  # older than the last one, on the clock at 100.05
    for k in range(51, 100):
        at(k, HOME)
    assert node.watchdog.rejected.get(RejectReason.SUPERSEDED) == 1
    node._publish_diagnostics()
    status = _latest_status(node)
    assert (status.level, status.message) == (DiagnosticStatus.OK, "ok"), status.message


# ------------------------------------------------------------------ sim_node.py
@pytest.mark.ros
def test_safe_torque_steps_over_by_the_report_are_said_under_its_warn(nodes: Nodes) -> None:
    """Steps on the safe torque since the last report, with a valid command again by the report
    (no ERROR to say them): the WARN says them. Mutant: ``safe_torque_said=True`` always (they
    are left out, never said)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim.diag_pub = Recorder()
    sim.counts.missing_command_steps += 3
    assert not sim.safe_active
    sim._diag_next = 0.0
    sim._maybe_diagnostics()
    status = sim.diag_pub.sent[-1].status[0]
    assert (status.level, status.message) == (
        DiagnosticStatus.WARN,
        "since the last report: 3 step(s) on the safe torque (no valid command)",
    )


@pytest.mark.ros
def test_problems_while_waiting_are_said_in_place_of_the_waiting(nodes: Nodes) -> None:
    """Waiting for a controller with commands rejected since the last report (something does
    send them): the WARN says the problems only, as before the review's joining; with none it
    says ``waiting for a controller``. Mutant: ``elif waiting:`` (the waiting said first, the
    problems joined after it)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim.diag_pub = Recorder()
    sim._diag_next = 0.0
    sim._maybe_diagnostics(waiting=True)
    assert sim.diag_pub.sent[-1].status[0].message == "waiting for a controller"
    sim.counts.rejected_commands += 2
    sim._diag_next = 0.0
    sim._maybe_diagnostics(waiting=True)
    status = sim.diag_pub.sent[-1].status[0]
    assert (status.level, status.message) == (
        DiagnosticStatus.WARN,
        "since the last report: 2 command(s) rejected",
    )
