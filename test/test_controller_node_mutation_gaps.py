"""Behaviours of the controller node that a second, deeper mutation review of
``nodes/controller_node.py`` found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: how a
JointState becomes a state (joint order, stamps, the clock), which command goes out for it (the
controller's, the safe brake's) and with which stamp, what /diagnostics say, and what is refused
at start-up. The nodes are built in this process and their callbacks called directly (no DDS
traffic), as in test_node_runtime_guards.py.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.serialization import serialize_message
from ros_helpers import ROOT, in_process_controllers, requires_rclpy, ros_domain  # noqa: F401
from sensor_msgs.msg import JointState as JointStateMsg
from test_controller_node_backlog import DT, Queue, _gripper_msg, _pauses, _running
from test_controller_node_backlog import _state_msg as _arm_msg
from test_node_runtime_guards import (  # noqa: F401
    HOME,
    JOINTS,
    MAX_AGE_1S,
    StoppedWallClock,
    _ErrorSpy,
    _node_on_sim_time,
    _now,
    _state_msg,
    nodes,
)

from torque_ctrl_ros.core.errors import ConfigError, SolverError
from torque_ctrl_ros.core.safety import WatchdogState
from torque_ctrl_ros.nodes.controller_diagnostics import StepParts, diagnostic_status
from torque_ctrl_ros.nodes.controller_node import NODE_NAME, _load_robot
from torque_ctrl_ros.nodes.conversions import label_stamp_ns
from torque_ctrl_ros.nodes.params import controller_node_config
from torque_ctrl_ros.nodes.wire import CommandWire


# ------------------------------------------------------------------ start-up
def test_a_model_without_effort_limits_is_refused_at_start() -> None:
    """Saturation is the last thing applied to every command: a model giving no effort limit (the
    MJCF, read by Pinocchio without its actuator limits) is refused, naming the joints, before any
    controller is made. (Mutants: ``_load_robot`` skips the check, so a controller could send any
    torque; it takes only a NaN limit for none, letting an infinite one through.)"""
    cfg = controller_node_config({"model_file": str(ROOT / "mjcf" / "gen3.xml")}, NODE_NAME)
    with pytest.raises(ConfigError, match=r"gives no effort limit for joint\(s\) \['joint_1', .*'joint_7'\]"):
        _load_robot(cfg, NODE_NAME)


# ------------------------------------------------------------------ joint order
@pytest.mark.ros
@requires_rclpy
def test_the_joint_order_warning_is_logged_at_the_first_state_only(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """States naming the joints in another order than ``joints``: the warning goes to the log at
    the first state, not at every state (an unthrottled rclpy log call costs ~0.1 ms on the control
    thread). (Mutant: ``_on_state`` compares the order at every state, not only the first.)"""
    spy = _ErrorSpy(monkeypatch, "joint states name the joints in the order")
    node = nodes.make(
        "controller", controller="gravity_comp", use_sim_time=False, joints=JOINTS[::-1], **MAX_AGE_1S
    )
    for _ in range(3):
        node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.commands_published == 3 and len(spy.calls) == 1, spy.calls


@pytest.mark.ros
@requires_rclpy
def test_extra_joints_in_the_states_do_not_make_the_order_differ(nodes: Any) -> None:  # noqa: F811
    """A driver naming a gripper's joint after the arm's, in the arm's own order: the commands' order
    is the states' order, so nothing is warned of. (Mutant: ``_note_state_order`` compares every
    name of the state, the gripper's included, with ``joints``.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    q = np.append(HOME, 0.4)
    node._on_state_message(_state_msg(q, _now(node), [*JOINTS, "finger_joint"]))
    assert node.counts.commands_published == 1 and node.order_warning == ""


@pytest.mark.ros
@requires_rclpy
def test_a_bound_the_arm_starts_past_is_warned_of_once_after_the_first_command(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """qpid with ``singularity.w_min`` above home's manipulability: holding home, its barrier moves
    the arm (test_qpid.py), so the first computed command is followed by a warning naming the
    bound, once (the shipped w_min names nothing: test_qpid.py). (Mutants: no check; a check at
    every state.)"""
    spy = _ErrorSpy(monkeypatch, "the arm starts past a bound qpid keeps")
    node = nodes.make(
        "controller", controller="qpid", use_sim_time=False, **{"qpid.singularity.w_min": 0.05}, **MAX_AGE_1S
    )
    assert node.bounds_warnings is None  # not before the first command
    for _ in range(3):
        node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.commands_published == 3 and len(spy.calls) == 1, spy.calls
    assert node.bounds_warnings == spy.calls and "below w_min 0.05 m³" in spy.calls[0]


# ------------------------------------------------------------------ stamps of the commands
@pytest.mark.ros
@requires_rclpy
@pytest.mark.parametrize("serialized", [True, False], ids=["cdr-bytes", "message"])
def test_the_safe_command_of_a_refused_state_answers_that_states_stamp(
    nodes: Any,  # noqa: F811
    serialized: bool,
) -> None:
    """A readable state refused as non-finite gets the safe torque labelled with its own stamp (in
    lockstep the simulator waits for the answer to its state), not the last good one's. (Mutants:
    the command is encoded with ``_last_good_stamp_ns``, on the CDR path or the message path.)"""
    node = nodes.make(
        "controller", controller="gravity_comp", use_sim_time=False, serialized_io=serialized, **MAX_AGE_1S
    )
    assert node.serialized is serialized
    receive = (
        (lambda msg: node._on_state_bytes(serialize_message(msg))) if serialized else node._on_state_message
    )
    good_ns = node.node.get_clock().now().nanoseconds
    bad_ns = good_ns + 1_000_000
    receive(_state_msg(HOME, good_ns * 1e-9))
    receive(_state_msg(np.full(7, np.nan), bad_ns * 1e-9))
    assert node.counts.fallback_commands == 1
    sent = node.publisher.sent[-1]
    if serialized:
        decoded = CommandWire.decode(sent)
        assert decoded is not None
        stamp_ns = decoded[1]
    else:
        stamp_ns = label_stamp_ns(sent.layout.dim[0].label)
    assert stamp_ns == pytest.approx(bad_ns, abs=1_000)


# ------------------------------------------------------------------ back from away
def _nameless_msg(stamp: float) -> Any:
    """A state naming no joint at all: a bad state of this arm, not another device's."""
    msg = JointStateMsg(position=HOME.tolist(), velocity=[0.0] * 7)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


@pytest.mark.ros
@requires_rclpy
def test_back_from_away_a_grippers_state_handed_over_is_counted_foreign_not_skipped(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back from 0.3 s away, the executor hands over a gripper's state with three of the arm's
    queued behind it: the newest of the arm's is handled, the gripper's is counted as foreign and
    only the two older arm states as skipped. (Mutant: ``_newest_queued`` takes the state handed
    over as the arm's, so it counts as a skipped arm state and never as foreign.)"""
    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, False, monkeypatch)
        node._state_sub = queue = Queue(JointStateMsg)
        back = node.watchdog.last_good.stamp + 0.3
        arm = [back + k * DT for k in range(1, 4)]
        queue.messages.extend(_arm_msg(t) for t in arm)
        steady[0] += 0.3
        node._on_state_message(_gripper_msg(back))
        assert node.watchdog.last_good.stamp == pytest.approx(arm[-1])
        assert (node.counts.foreign_states, node.counts.backlog_skipped) == (1, 2)


@pytest.mark.ros
@requires_rclpy
def test_back_from_away_a_nameless_state_queued_last_is_refused_not_ignored(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back from away (40 ms: within the 50 ms a driver holds a command, so the safe torque can
    start), the newest state queued names no joint at all: it is this arm's newest state, handled
    and refused (the safe torque goes out), not set aside as another device's. (Mutant:
    ``_foreign_names`` takes an empty name list as naming none of the arm's joints.)"""
    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, False, monkeypatch)
        node._state_sub = queue = Queue(JointStateMsg)
        back = node.watchdog.last_good.stamp + 0.04
        queue.messages.extend([_arm_msg(back + DT), _nameless_msg(back + 2 * DT)])
        steady[0] += 0.04
        node._on_state_message(_arm_msg(back))
        assert node.counts.foreign_states == 0 and node.counts.backlog_skipped == 2
        assert node.watchdog.rejected_total == 1 and node.counts.fallback_commands == 1


@pytest.mark.ros
@requires_rclpy
def test_back_from_away_an_empty_state_queued_last_is_set_aside_for_the_arms_newest(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back from away, the newest state queued is empty (no names, no values): another device's,
    counted as foreign, and the arm's newest before it is handled, with no refusal. (Mutant:
    ``_foreign_names`` takes an empty state as this arm's: it is handled, refused, and the brake
    goes out instead of the arm's command.)"""
    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, False, monkeypatch)
        node._state_sub = queue = Queue(JointStateMsg)
        back = node.watchdog.last_good.stamp + 0.3
        empty = JointStateMsg()
        empty.header.stamp.sec, empty.header.stamp.nanosec = divmod(round((back + 2 * DT) * 1e9), 10**9)
        queue.messages.extend([_arm_msg(back + DT), empty])
        steady[0] += 0.3
        node._on_state_message(_arm_msg(back))
        assert node.counts.foreign_states == 1 and node.counts.backlog_skipped == 1
        assert node.watchdog.rejected_total == 0 and node.counts.fallback_commands == 0
        assert node.watchdog.last_good.stamp == pytest.approx(back + DT)


@pytest.mark.ros
@requires_rclpy
def test_on_the_wall_clock_a_stamp_ahead_after_a_long_silence_counts_max_age_ahead(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the wall clock no state queued while the node was away is newer than the clock: after a
    0.3 s silence a state stamped 0.9 s ahead (a driver's clock stepped) counts ``max_age``
    (20 ms) ahead of the clock, so the trajectory pauses for 0.32 s and the arm is not stopped.
    (Mutant: ``_handle_state`` lets the clock lag by the time away on the wall clock as on sim
    time: the state counted 0.62 s after the last good one, past ``fallback_duration``.)"""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, serialized_io=False)
    clock = StoppedWallClock(node, monkeypatch)
    pauses = _pauses(node)
    node.target.describe = lambda: "a trajectory"
    for _ in range(20):
        clock.advance(DT)
        node._on_state_message(_state_msg(HOME, _now(node)))
    last_good = node.watchdog.last_good.stamp
    clock.advance(0.3)
    node._on_state_message(_state_msg(HOME, _now(node) + 0.9))
    assert node.counts.watchdog_stops == 0 and node.counts.commands_published == 21
    assert pauses == [pytest.approx((last_good, last_good + 0.32), abs=1e-6)]


# ------------------------------------------------------------------ what is timed and reported
@pytest.mark.ros
@requires_rclpy
def test_a_controller_failure_is_not_timed_as_a_computed_step(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The controller raising on a good state: the safe torque goes out, but the step's callback
    parts (``state_in``, ``command_out``) hold only the computed steps. (Mutant: ``_handle_state``
    adds the parts whenever the controller was called, its failures included.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))

    def failing(*_args: Any) -> Any:
        raise SolverError("no solution")

    monkeypatch.setattr(node.controller, "compute", failing)
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.fallback_commands == 1
    assert (node.parts.state_in.count, node.parts.command_out.count) == (1, 1)


@pytest.mark.ros
@requires_rclpy
def test_after_a_safe_command_the_diagnostics_hold_no_controller_details(nodes: Any) -> None:  # noqa: F811
    """QPID's costlier diagnostics (barrier margins, manipulability) describe its last computed step:
    they are in /diagnostics after one, and left out after a safe command, when that step is not
    what the arm got. (Mutants: ``_handle_state`` marks every published command as computed;
    ``_diagnostic_values`` asks the controller for them whatever the last command was.)"""
    node = nodes.make("controller", controller="qpid", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    computed = node._diagnostic_values(time.monotonic(), 0.0, 1e-3, 1)
    node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))
    braked = node._diagnostic_values(time.monotonic(), 0.0, 1e-3, 1)
    assert node.counts.fallback_commands == 1
    assert "info_manipulability" in computed and "info_manipulability" not in braked


@pytest.mark.ros
@requires_rclpy
def test_a_late_command_followed_by_a_plan_is_one_deadline_miss(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """States 1 ms apart whose controller takes 2 ms, each followed by a target's plan: every state
    after the first (the period is known from the second on) is one deadline miss, the late
    command's, not a second one for the plan after it. (Mutant: the plan's miss is counted
    whether or not the command was already late.)"""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **MAX_AGE_1S)
    clock = StoppedWallClock(node, monkeypatch)
    compute = node.controller.compute

    def slow_compute(*args: Any) -> Any:
        clock.advance(0.002)
        return compute(*args)

    monkeypatch.setattr(node.controller, "compute", slow_compute)
    monkeypatch.setattr(node.target, "take_due", lambda _state: True)
    start = _now(node)
    for k in range(4):
        node._on_state_message(_state_msg(HOME, start + k * DT))
    assert node.counts.commands_published == 4 and node.plan_time.count == 4
    assert node.counts.deadline_misses == 3


@pytest.mark.ros
@requires_rclpy
def test_a_long_gap_in_the_stamps_is_not_taken_as_the_state_period(nodes: Any) -> None:  # noqa: F811
    """A stream at 1 kHz, then a state 2 s later (a pause, not the stream's step): the deadline
    stays 1 ms, so a 0.5 s callback on that state is a deadline miss. (Mutant: the deadline taken
    from any positive step of the stamps, here 2 s.)"""
    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 12):
        at(k, HOME)
    at(2011, HOME)
    assert node._deadline() == pytest.approx(1e-3)
    misses = node.counts.deadline_misses  # the states' own handling may have been a miss on a busy host
    node._time_callback(0.5, node._deadline())
    assert node.counts.deadline_misses == misses + 1


@pytest.mark.ros
@requires_rclpy
def test_a_fallback_while_only_holding_counts_no_target_pause(nodes: Any) -> None:  # noqa: F811
    """A computed-torque node holding (no target ever sent) through 20 ms of non-finite states:
    there is no target to take up where it stood, so ``target_pauses`` stays 0 (it tells an
    operator a motion ran late). (Mutant: ``_resume_target`` counts a pause whether or not there
    was anything to say.)"""
    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 21):
        at(k, np.full(7, np.nan))
    at(21, HOME)
    assert node.watchdog.state.value == "ok" and node.target.describe() == "hold"
    assert (node.counts.watchdog_fallbacks, node.counts.target_pauses) == (1, 0)


@pytest.mark.ros
@requires_rclpy
def test_the_joint_order_is_named_as_a_cause_only_of_states_jumping(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the warning on the joint order, a fallback on a non-finite state is logged with the
    watchdog's reason alone: torques moving other joints explain states jumping between poses
    (``watchdog.conflict``), not a NaN. (Mutant: ``_with_order_note`` adds the joint order as a
    cause when either the warning was given or the states jumped.)"""
    spy = _ErrorSpy(monkeypatch, "watchdog ok -> fallback")
    node = nodes.make(
        "controller", controller="gravity_comp", use_sim_time=False, joints=JOINTS[::-1], **MAX_AGE_1S
    )
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))
    assert node.order_warning and node.counts.fallback_commands == 1
    assert len(spy.calls) == 1 and "other joints than meant" not in spy.calls[0], spy.calls


# ------------------------------------------------------------------ /diagnostics
@pytest.mark.ros
@requires_rclpy
def test_the_diagnostics_timer_defers_only_while_states_come_in(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timer firing 1 ms after a state leaves /diagnostics to the end of the next state's
    handling; firing 0.2 s after the last state (none coming in) it publishes them at once, or a
    silent stream would have no /diagnostics at all. (Mutant: ``_on_diagnostics_timer`` compares
    the time since the last state the other way round.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    clock = StoppedWallClock(node, monkeypatch)
    node._on_state_message(_state_msg(HOME, _now(node)))
    clock.advance(DT)
    node._on_diagnostics_timer()
    assert node.diag_publisher.sent == []
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert len(node.diag_publisher.sent) == 1  # after that state's command
    clock.advance(0.2)
    node._on_diagnostics_timer()
    assert len(node.diag_publisher.sent) == 2


def test_a_controller_fallback_warning_names_only_the_qp_figures() -> None:
    """The WARN of steps answered by the controller's own safe torque names the QP's figures of the
    last one (``qp_*``), not the rest of its ``info`` (the fallback flag, timings). (Mutant:
    ``diagnostic_status`` lists every key of ``fallback_info``.)"""
    info = {"fallback": 1.0, "qp_status": 3.0, "qp_iterations": 1000.0, "prepare_time_us": 120.0}
    assert diagnostic_status(WatchdogState.OK, "", 2, info, "") == (
        DiagnosticStatus.WARN,
        "controller fallback on 2 step(s) since the last report: qp_status 3, qp_iterations 1e+03",
    )


def test_a_stream_warning_never_lowers_an_error_nor_hides_its_reason() -> None:
    """A warning on the state stream (a second publisher) while the watchdog is in FALLBACK: the
    status stays an ERROR whose message gives the watchdog's reason, the warning after it; only
    an OK status becomes that warning's WARN. (Mutant: ``diagnostic_status`` makes every status
    with a stream warning a WARN saying only the warning.)"""
    warning = "2 publishers on /joint_states"
    assert diagnostic_status(WatchdogState.FALLBACK, "no joint state for 30 ms", 0, {}, warning) == (
        DiagnosticStatus.ERROR,
        f"fallback: no joint state for 30 ms; {warning}",
    )
    assert diagnostic_status(WatchdogState.OK, "", 0, {}, warning) == (DiagnosticStatus.WARN, warning)


def test_the_compute_parts_a_controller_reports_in_microseconds_are_kept_in_seconds() -> None:
    """A QP controller reports its parts in µs (``qp_solve_time_us``, ``prepare_time_us``): kept in
    s like every timing, they read back in ms in /diagnostics (250 µs: 0.25 ms). (Mutant:
    ``StepParts.add`` scales them by 1e-3, reading 250 ms.)"""
    parts = StepParts(keep_all=False)
    parts.add(1e-4, 2e-4, {"qp_solve_time_us": 250.0, "prepare_time_us": 100.0})
    values = parts.diagnostics()
    assert values["qp_solve_p50_ms"] == pytest.approx(0.25)
    assert values["prepare_p50_ms"] == pytest.approx(0.1)


@pytest.mark.ros
@requires_rclpy
def test_the_callback_parts_are_each_timed_where_they_are_spent(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A computed step whose watchdog takes 0.3 ms (before the controller) and whose publish takes
    0.1 ms (after it): ``state_in`` reads 0.3 ms and ``command_out`` 0.1 ms. (Mutant:
    ``_handle_state`` hands ``StepParts.add`` the two parts swapped.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    clock = StoppedWallClock(node, monkeypatch)
    step, publish = node.supervisor.step, node.publisher.publish

    def slow_step(*args: Any) -> Any:
        clock.advance(3e-4)
        return step(*args)

    def slow_publish(msg: Any) -> None:
        clock.advance(1e-4)
        publish(msg)

    monkeypatch.setattr(node.supervisor, "step", slow_step)
    monkeypatch.setattr(node.publisher, "publish", slow_publish)
    node._on_state_message(_state_msg(HOME, _now(node)))
    values = node.parts.diagnostics()
    assert values["state_in_p50_ms"] == pytest.approx(0.3, abs=1e-6)
    assert values["command_out_p50_ms"] == pytest.approx(0.1, abs=1e-6)


@pytest.mark.ros
@requires_rclpy
def test_only_a_planned_target_is_timed_as_a_plan(nodes: Any) -> None:  # noqa: F811
    """A computed-torque node holding (no target sent): nothing is planned after its commands, so
    ``plan_time`` stays empty and its percentiles say nothing rather than the cost of asking.
    (Mutant: ``_take_due_targets`` times every call, planned or not.)"""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **MAX_AGE_1S)
    for _ in range(2):
        node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.commands_published == 2 and node.plan_time.count == 0


@pytest.mark.ros
@requires_rclpy
def test_the_age_of_a_state_stamped_ahead_is_counted_from_its_effective_stamp(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A state stamped 0.5 s ahead of the wall clock (within ``max_future``) counts as stamped
    ``max_age`` (20 ms) ahead, and so does its age: −20 ms, the age the controller computed on.
    (Mutant: ``_compute`` takes the age from the stamp as it came, −500 ms.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False)
    StoppedWallClock(node, monkeypatch)
    node._on_state_message(_state_msg(HOME, _now(node) + 0.5))
    assert node.counts.commands_published == 1
    assert node.state_age.window().tolist() == [pytest.approx(-0.02, abs=1e-6)]


# ------------------------------------------------------------------ shutdown
@pytest.mark.ros
@requires_rclpy
def test_a_refusal_held_back_by_the_log_throttle_is_written_at_shutdown(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three non-finite states, then the node closes: the first is logged as the watchdog's
    transition, the second as refused, and the third, held back by the once-a-second throttle, is
    written at shutdown, so the log ends on the last thing that happened. (Mutant: ``close``
    writes the summary without flushing the held-back messages.)"""
    spy = _ErrorSpy(monkeypatch, "joint state refused")
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    for _ in range(3):
        node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))
    assert len(spy.calls) == 1, spy.calls
    nodes.close(node)
    assert len(spy.calls) == 2, spy.calls


def test_soft_retries_are_warned_of_with_what_they_mean() -> None:
    """Steps whose hard barrier rows could not hold, solved again soft: valid commands, but a bound
    configured hard gave way. Said when there were any since the last report, and only then."""
    from torque_ctrl_ros.nodes.controller_diagnostics import soft_retry_warning

    assert soft_retry_warning(0) == ""
    assert soft_retry_warning(3).startswith(
        "hard barrier rows could not hold on 3 step(s) since the last report"
    )
