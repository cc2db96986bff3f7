"""The make sim runner's own logic, without nodes or DDS: the summary's wording, the demo
trajectory, the argument checks (test_make_sim.py runs the runner itself)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.params import file_parameter
from torque_ctrl_ros.run_sim import (
    ErrorStats,
    Tracked,
    _given_up_text,
    demo_trajectory,
    file_controller,
    takes_joint_trajectory,
    tracking_line,
    watchdog_summary,
)

pytestmark = [requires_rclpy]  # run_sim imports the nodes' modules


def test_the_watchdog_line_tells_the_end_of_the_run_from_a_trip_during_it() -> None:
    end = {
        "watchdog_state": "fallback",
        "watchdog_transitions": 2,  # waiting → ok → fallback
        "watchdog_reason": "no joint state for 391 ms",
        "watchdog_reason_kind": "stale",
        "rejected": {"stale": 0, "non_finite": 0},
    }
    assert watchdog_summary(end) == "ok until the states ended, then fallback (no joint state for 391 ms)"
    stopped = {**end, "watchdog_state": "stopped", "watchdog_transitions": 3}
    assert watchdog_summary(stopped).startswith("ok until the states ended, then stopped")
    # A refused state, or a trip and a recovery before the end, is no clean end.
    non_finite = "joint state has non-finite position or velocity"
    refused = {
        **end,
        "rejected": {"stale": 0, "non_finite": 4},
        "watchdog_reason": non_finite,
        "watchdog_reason_kind": "non_finite",
    }
    assert watchdog_summary(refused) == f"fallback ({non_finite})"
    tripped = {**end, "watchdog_transitions": 4}
    assert watchdog_summary(tripped) == "fallback (no joint state for 391 ms)"
    # A silence during the run, then the end's: said as both (it had read as the end's alone).
    assert watchdog_summary({**tripped, "watchdog_fallbacks": 2}) == (
        "fell back once during the run (no state for a while; controller_node.log says how long), then at "
        "the end fallback (no joint state for 391 ms)"
    )
    assert watchdog_summary({**end, "watchdog_state": "ok", "watchdog_transitions": 3}) == "ok"
    assert watchdog_summary({}) == "?"


def test_the_fallbacks_during_the_run_are_counted_with_states_refused_too() -> None:
    """A run with one stale state refused and three fallbacks before its end (a loaded host):
    the line counts them before the state it ended in, as without refusals; the end's trip is
    then no clean end. Mutant: counted only without refused states (the line read "fallback
    (...)", and "ok" after 477 fallbacks in a fresh-clone run)."""
    run = {
        "watchdog_state": "fallback",
        "watchdog_transitions": 9,
        "watchdog_reason": "no joint state for 502 ms",
        "watchdog_reason_kind": "stale",
        "watchdog_fallbacks": 4,
        "watchdog_fallbacks_before_last_state": 3,
        "rejected": {"stale": 1, "non_finite": 0},
    }
    assert watchdog_summary(run) == (
        "fell back 3 times during the run (controller_node.log says why), ended fallback "
        "(no joint state for 502 ms)"
    )
    ok = {**run, "watchdog_state": "ok", "watchdog_fallbacks_before_last_state": 477}
    assert watchdog_summary(ok) == (
        "fell back 477 times during the run (controller_node.log says why), ended ok"
    )
    assert watchdog_summary({**run, "watchdog_fallbacks_before_last_state": 0}) == (
        "fallback (no joint state for 502 ms)"
    )


def test_a_fallback_during_the_run_shows_when_the_end_goes_straight_to_stopped() -> None:
    """The end of a run may take the watchdog from OK straight to STOPPED (the silence first checked
    past ``max_age + fallback_duration``), adding no fallback: the fallbacks before the last state,
    from the node's summary, are those of the run (every fallback but one had hidden it: "stopped
    (...)" alone, a review); a run whose end went through FALLBACK is still a clean end."""
    one_during = {
        "watchdog_state": "stopped",
        "watchdog_transitions": 4,  # waiting → ok → fallback → ok → stopped
        "watchdog_fallbacks": 1,
        "watchdog_fallbacks_before_last_state": 1,
        "watchdog_reason": "no joint state for 286 ms",
        "watchdog_reason_kind": "stale",
        "rejected": {"stale": 0},
    }
    assert watchdog_summary(one_during) == (
        "fell back once during the run (no state for a while; controller_node.log says how long), then at "
        "the end stopped (no joint state for 286 ms)"
    )
    clean = {**one_during, "watchdog_transitions": 3, "watchdog_fallbacks_before_last_state": 0}
    assert watchdog_summary(clean) == "ok until the states ended, then stopped (no joint state for 286 ms)"


def test_the_tracking_error_is_summarised_in_constant_memory() -> None:
    """Max, RMS, last and count, kept as running values (a list of every state's error would grow
    by ~100 MB an hour at 1 kHz in a run without end)."""
    import math

    from torque_ctrl_ros.run_sim import ErrorStats

    stats = ErrorStats()
    assert stats.count == 0 and math.isnan(stats.rms) and math.isnan(stats.last)
    for value in (0.1, 0.3, 0.2):
        stats.add(value)
    assert (stats.count, stats.max, stats.last) == (3, 0.3, 0.2)
    assert stats.rms == pytest.approx(math.sqrt((0.01 + 0.09 + 0.04) / 3), rel=1e-12)


def test_the_demo_swings_only_when_its_way_back_fits_in_the_run() -> None:
    """Waypoints a second apart, the last back at the start pose by the end of the run; a run too
    short for one swing gets none (not a lone point at the start pose, which would report
    tracking a trajectory the arm never moved on)."""
    q0 = np.zeros(7)
    points = demo_trajectory(q0, 10.0, 0.7)
    times = [t for t, _ in points]
    assert times == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0] and 0.7 + times[-1] <= 10.0
    np.testing.assert_array_equal(points[-1][1], q0)
    assert np.abs(points[0][1]).max() == pytest.approx(0.3)
    assert [t for t, _ in demo_trajectory(q0, 3.0, 0.7)] == [1.0, 2.0]
    assert demo_trajectory(q0, 2.0, 0.7) == []


def test_the_demo_trajectory_goes_to_the_controllers_whose_target_source_takes_one() -> None:
    """Asked of the controller node's target sources (nodes/targets.py), not decided by name here."""
    from torque_ctrl_ros.core.controllers import CONTROLLERS

    assert {name for name in CONTROLLERS if takes_joint_trajectory(name)} == {"computed_torque"}
    assert not takes_joint_trajectory("no_such_controller")


def test_the_summary_words_counts_and_what_was_not_granted() -> None:
    """Refused states by reason (none when all are 0), late steps as a share of the steps, the
    states skipped catching up after a stall or falling behind, the commands a state is predicted
    over (where any), and a scheduling request the nodes did not get."""
    import argparse

    from torque_ctrl_ros.run_sim import (
        _backlog_text,
        _counts_text,
        _delay_text,
        _not_granted,
        _prediction_text,
        _share,
    )

    assert _counts_text({"stale": 0, "non_finite": 0}) == "none"
    assert _counts_text({"stale": 3, "non_finite": 0, "inconsistent": 1}) == "stale 3, inconsistent 1"
    assert _counts_text(None) == "?"
    assert _share(35, 10_000) == " = 0.35 %" and _share("?", 10) == "" and _share(3, 0) == ""
    assert _backlog_text(17) == ", 17 queued states skipped catching up after a stall"
    both = ", 17 queued states skipped catching up after a stall, 40 skipped falling behind"
    assert _backlog_text(17, 40) == both
    assert _backlog_text(0, 1) == ", 1 skipped falling behind" and _backlog_text(None, None) == ""
    assert _backlog_text(1).startswith(", 1 queued state skipped")
    assert _backlog_text(0) == "" and _backlog_text(None) == ""
    assert _prediction_text(4) == ", each state predicted over 4 commands in flight"
    assert _prediction_text(0) == "" and _prediction_text(None) == ""
    assert _delay_text(5.0) == ", the efforts show each command 5 ms after its state"
    assert _delay_text(float("nan")) == "" and _delay_text(None) == "" and _delay_text("5") == ""
    asked = argparse.Namespace(rt_priority=20, cpu_latency_us="0")
    assert _not_granted(asked, ["fifo:20 cpus:0 cpu_latency:0us", "fifo:20 cpus:1 cpu_latency:0us"]) == ""
    note = _not_granted(asked, ["normal cpus:0", "normal cpus:1"])
    assert "SCHED_FIFO 20 and a CPU latency of 0 µs: not granted" in note
    assert _not_granted(argparse.Namespace(rt_priority=0, cpu_latency_us="none"), ["normal"]) == ""


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--duration", "-1"], "--duration (make: DURATION=): expected simulated seconds >= 0"),
        (["--duration", "inf"], "expected simulated seconds >= 0"),
        (["--rt-priority", "-5"], "--rt-priority (make: RT=): expected an integer 0..99"),
        (["--rt-priority", "200"], "--rt-priority (make: RT=): expected an integer 0..99"),
        (["--cpus", "0"], "--cpus (make: PIN=): expected none, auto or SIM:CONTROLLER"),
        (["--cpu-latency-us", "x"], "--cpu-latency-us (make: CPU_LATENCY=): expected none or an integer"),
        (["--controller", "qpd"], "--controller (make: CONTROLLER=): invalid choice: 'qpd'"),
    ],
)
def test_bad_runner_arguments_stop_it_before_any_node_starts(
    args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Caught by the runner's own argument parser (the nodes would refuse them under names the
    user never typed: sim_node.duration, TORQUE_CTRL_RT_PRIORITY), naming the option and the
    make variable that sets it (``make sim`` users type ``RT=``, not ``--rt-priority``)."""
    from torque_ctrl_ros.run_sim import main

    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2 and error in capsys.readouterr().err


def test_the_tracking_line_says_what_the_error_is_not_measured_against() -> None:
    """States the monitor could not read, and targets the controller took from elsewhere (a user's
    ``ros2 topic pub`` during the run), are said next to the error."""
    errors = ErrorStats()
    assert tracking_line(Tracked("initial pose", errors)) == ""
    assert (
        tracking_line(Tracked("initial pose", errors, skipped=3))
        == "  tracking error   none: no state read, 3 unreadable states skipped"
    )
    errors.add(0.002)
    errors.add(0.001)
    line = tracking_line(Tracked("initial pose", errors))
    assert line.endswith("final 1.00e-03 rad (2 states)") and "max 2.00e-03 rad" in line, line
    assert tracking_line(Tracked("initial pose", errors, skipped=1)).endswith(
        "(2 states, 1 unreadable state skipped)"
    )
    # The demo trajectory is the monitor's own target; a second one came from elsewhere.
    assert tracking_line(Tracked("trajectory", errors, sent=1), 1).endswith("(2 states)")
    assert tracking_line(Tracked("trajectory", errors, sent=1), 3).endswith(
        "(2 states); the controller also took 2 targets from elsewhere, not tracked here"
    )
    assert tracking_line(Tracked("initial pose", errors), "?").endswith("(2 states)")  # no summary
    # Measured on the trajectory's own timeline: a target the controller paused runs late by each
    # pause, a dropped one is no longer followed.
    assert tracking_line(Tracked("trajectory", errors, sent=1), 1, 2, 0).endswith(
        "(2 states); the controller paused its target 2 times (late by each pause)"
    )
    assert tracking_line(Tracked("trajectory", errors, sent=1), 1, 1, 1).endswith(
        "; the controller paused its target once (late by each pause); the controller dropped its "
        "target once (then held the arm)"
    )
    assert tracking_line(Tracked("trajectory", errors, sent=1), 1, "?", "?").endswith("(2 states)")


def test_a_parameter_files_value_is_the_last_one_reaching_the_node(tmp_path: Path) -> None:
    """As rcl loads them: later sections and later files override, wildcards reach the node,
    sections for other nodes do not, nested parameters by their dotted name."""
    first = tmp_path / "first.yaml"
    first.write_text(
        "controller_node:\n  ros__parameters:\n    controller: achd_rnea\n"
        "    watchdog:\n      max_age: 0.05\n"
        "sim_node:\n  ros__parameters:\n    controller: gravity_comp\n"
    )
    second = tmp_path / "second.yaml"
    second.write_text(
        "/**:\n  ros__parameters:\n    controller: qpid\n"
        "other_node:\n  ros__parameters:\n    controller: hqpid\n"
    )
    assert file_parameter([first], "/controller_node", "controller") == "achd_rnea"
    assert file_parameter([first, second], "/controller_node", "controller") == "qpid"
    assert file_parameter([second, first], "/controller_node", "controller") == "achd_rnea"
    assert file_parameter([first], "/controller_node", "watchdog.max_age") == 0.05
    assert file_parameter([first], "/controller_node", "watchdog.period") is None
    assert file_parameter([first], "/sim_node", "controller") == "gravity_comp"


def test_make_sim_runs_the_controller_its_parameter_files_name_unless_one_is_given(tmp_path: Path) -> None:
    """``make sim PARAMS=file`` with the file's ``controller`` runs that one: the runner's own default
    had overridden it."""
    assert file_controller(None) == "computed_torque"  # the shipped file's
    own = tmp_path / "own.yaml"
    own.write_text("controller_node:\n  ros__parameters:\n    controller: qpid\n")
    assert file_controller(own) == "qpid"
    own.write_text("controller_node:\n  ros__parameters:\n    kp: 50.0\n")
    assert file_controller(own) == "computed_torque"
    own.write_text("controller_node:\n  ros__parameters:\n    controller: qpd\n")
    with pytest.raises(ConfigError, match=re.escape("'qpd' in ") + ".*expected one of .*'qpid'"):
        file_controller(own)


def test_a_parameter_file_naming_no_controller_stops_the_runner_before_any_node_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from torque_ctrl_ros.run_sim import main

    own = tmp_path / "own.yaml"
    own.write_text("controller_node:\n  ros__parameters:\n    controller: qpd\n")
    with pytest.raises(SystemExit) as stop:
        main(["--params-file", str(own)])
    assert stop.value.code == 2 and "'qpd' in " in capsys.readouterr().err


def test_two_joint_orders_stop_the_runner_before_any_node_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Commands carry no joint names: the simulator applies them in its ``joints`` order, the
    controller sends them in its own. Two orders put each torque on another joint (the arm flailed
    and the run still said "done"), so the runner refuses them, naming both; an unset order is the
    node's model's."""
    from torque_ctrl_ros.joint_order import joint_order_error
    from torque_ctrl_ros.run_sim import _parse_args, parameter_files

    names = [f"joint_{k}" for k in range(1, 8)]
    assert joint_order_error(parameter_files(None)) == ""  # the simulator's model order is joint_1..7

    def own(sim: list[str] | None = None, controller: list[str] | None = None, mjcf: str = "") -> Path:
        path = tmp_path / "own.yaml"
        sections: dict[str, dict[str, list[str] | str | None]] = {
            "sim_node": {"joints": sim, "mjcf": mjcf or None},
            "controller_node": {"joints": controller},
        }
        path.write_text(
            "".join(
                f"{node}:\n  ros__parameters:\n"
                + "".join(f"    {key}: {value!r}\n" for key, value in params.items() if value)
                for node, params in sections.items()
            )
        )
        return path

    with pytest.raises(SystemExit) as stop:
        _parse_args(["--params-file", str(own(sim=names[::-1]))])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert f"sim_node.joints {names[::-1]} and controller_node.joints {names} differ" in err
    assert "go out in controller_node.joints order" in err
    assert joint_order_error(parameter_files(own(sim=names[::-1], controller=names[::-1]))) == ""
    assert f"sim_node.joints {names} (unset: its model's order) and controller_node.joints {names[::-1]}" in (
        joint_order_error(parameter_files(own(controller=names[::-1])))
    )
    # An order that cannot be worked out (no such model) is left to the node, which says why.
    assert joint_order_error(parameter_files(own(controller=names[::-1], mjcf="nope.xml"))) == ""


def test_a_controller_model_of_another_arm_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``model_file`` given to the controller alone, its bracelet 0.3 kg heavier than the
    simulated arm's: the controller commands another arm's gravity (the simulated one drifts by
    the difference). ``make sim`` says so and runs; with the shipped files nothing is said."""
    from torque_ctrl_ros.joint_order import model_mismatch
    from torque_ctrl_ros.run_sim import _parse_args, parameter_files

    assert model_mismatch(parameter_files(None)) == ""
    urdf = (Path(__file__).resolve().parent.parent / "urdf" / "gen3.urdf").read_text()
    heavy = tmp_path / "heavy.urdf"
    head, tail = urdf.split('<link name="bracelet_link">')
    heavy.write_text(
        head + '<link name="bracelet_link">' + tail.replace('<mass value="0.5"/>', '<mass value="0.8"/>', 1)
    )
    params = tmp_path / "heavy.yaml"
    params.write_text(f"controller_node:\n  ros__parameters:\n    model_file: {heavy}\n")
    said = model_mismatch(parameter_files(params))
    assert said.startswith(f"the controller's model ({heavy}) and the simulator's arm ("), said
    assert "gravity torques are up to" in said
    _parse_args(["--params-file", str(params)])
    assert f"make sim: warning: {said}" in capsys.readouterr().err


def test_a_simulated_arm_with_joint_physics_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The simulator's MJCF with damping on joint_4 and the same rigid bodies: the gravity torques
    agree, but the simulated arm answers every torque with a damping torque the controller's model
    has no term for. ``make sim`` says so, naming the joint and value, and runs."""
    from torque_ctrl_ros.joint_order import model_mismatch
    from torque_ctrl_ros.run_sim import _parse_args, parameter_files

    root = Path(__file__).resolve().parent.parent
    arm = (root / "mjcf" / "gen3.xml").read_text()
    assert arm.count('<joint name="joint_4" ') == 1
    (tmp_path / "gen3.xml").write_text(
        arm.replace('<joint name="joint_4" ', '<joint name="joint_4" damping="0.5" ')
    )
    (tmp_path / "scene.xml").write_text(
        (root / "mjcf" / "scene.xml")
        .read_text()
        .replace('file="gen3.xml"', f'file="{tmp_path / "gen3.xml"}"')
    )
    params = tmp_path / "damped.yaml"
    params.write_text(f"sim_node:\n  ros__parameters:\n    mjcf: {tmp_path / 'scene.xml'}\n")
    said = model_mismatch(parameter_files(params))
    assert "the simulator's has joint damping (joint_4 0.5), which no rigid-body model has" in said, said
    assert "gravity torques" not in said
    _parse_args(["--params-file", str(params)])
    assert f"make sim: warning: {said}" in capsys.readouterr().err


def test_a_keyframe_past_a_joint_range_does_not_stop_the_model_check(tmp_path: Path) -> None:
    """The simulator starts at its ``keyframe`` (home); another keyframe of its MJCF past joint_2's
    range, which the plant refuses to reset to, had the model check raise out of ``make sim``'s
    start (a review). It is left out of the comparison."""
    from torque_ctrl_ros.joint_order import model_mismatch
    from torque_ctrl_ros.run_sim import _parse_args, parameter_files

    root = Path(__file__).resolve().parent.parent
    scene = (root / "mjcf" / "scene.xml").read_text()
    assert scene.count('<key name="home"') == 1
    outside = '<key name="outside" qpos="0 3.0 3.14159265 -2.26892803 0 0.95993109 1.57079633"/>\n    '
    text = scene.replace('<key name="home"', outside + '<key name="home"')
    (tmp_path / "scene.xml").write_text(
        text.replace('file="gen3.xml"', f'file="{root / "mjcf" / "gen3.xml"}"')
    )
    params = tmp_path / "outside.yaml"
    params.write_text(f"sim_node:\n  ros__parameters:\n    mjcf: {tmp_path / 'scene.xml'}\n")
    assert model_mismatch(parameter_files(params)) == ""
    _parse_args(["--params-file", str(params)])


def test_a_stop_signal_during_a_callback_stops_the_run_between_callbacks() -> None:
    """SIGTERM (as Ctrl-C and SIGHUP) arriving while a monitor callback runs does not raise in
    that callback, where the executor would log it as a fatal error with a traceback: the
    monitor's next turn raises ``KeyboardInterrupt``, which ends the run as interrupted."""
    import os
    import signal

    from torque_ctrl_ros import run_sim

    calls: list[str] = []

    class Executor:
        def spin_once(self, timeout_sec: float) -> None:
            calls.append("callback")
            os.kill(os.getpid(), signal.SIGTERM)  # delivered here, inside the "callback"
            calls.append("callback finished")

    monitor = object.__new__(run_sim.Monitor)
    monitor.executor = Executor()  # type: ignore[assignment]  # a stand-in: only spin_once is called
    previous = signal.signal(signal.SIGTERM, run_sim._request_stop)
    try:
        with pytest.raises(KeyboardInterrupt):
            monitor.spin(5.0)
    finally:
        signal.signal(signal.SIGTERM, previous)
        run_sim._STOP_REQUESTED.clear()
    assert calls == ["callback", "callback finished"]


def test_a_pose_demo_is_reported_in_place_of_the_joint_error() -> None:
    """The joints go where the controller takes them: the report is the pose demo's
    (:meth:`~torque_ctrl_ros.pose_demo.PoseDemo.summary`), with the skipped states and the targets
    from elsewhere said as for a trajectory."""
    errors = ErrorStats()
    errors.add(0.3)  # joint error before the demo started: not reported once it did
    tracked = Tracked("pose targets", errors, skipped=1, sent=2, poses="2 sent to end_effector_link (...)")
    assert tracking_line(tracked, 3) == (
        "  tool targets     2 sent to end_effector_link (...), 1 unreadable state skipped; the controller "
        "also took 1 target from elsewhere, not tracked here"
    )
    alone = tracking_line(tracked._replace(skipped=0), 2)
    assert alone == "  tool targets     2 sent to end_effector_link (...)"
    # A target the controller refused (out of reach, below the floor) is never reached: said so.
    assert tracking_line(tracked._replace(skipped=0), 1, refused=1).endswith(
        "(...); the controller refused 1 target (its log says why)"
    )
    both = tracking_line(tracked._replace(skipped=0), 0, refused=2)
    assert both.endswith("refused 2 targets (its log says why)")


def test_the_monitor_sends_the_pose_targets_once_matched_and_measures_the_tool_against_them() -> None:
    """The first target waits for the controller's subscription (a volatile topic would lose it);
    each goes out as a PoseStamped in the base frame, stamped with the state it was sent at; the
    status line and the summary then speak of the tool, not of joint errors."""
    import math

    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped
    from test_run_sim_mutation_gaps import Q0, _monitor, _Publisher, _raw

    from torque_ctrl_ros.paths import data_path
    from torque_ctrl_ros.pose_demo import HOLD, OFFSET, PoseDemo

    demo = PoseDemo.for_controller("qpid", [Path(data_path("config", "gen3_controllers.yaml"))])
    assert demo is not None
    monitor = _monitor(10.0, sends_trajectory=False)
    monitor.pose_demo, monitor._pose_msg = demo, PoseStamped
    monitor.pose_pub = publisher = _Publisher(0)  # type: ignore[assignment]  # a fake: no rclpy node
    monitor.diag = {"sim": {"step_rate_hz": "1000", "commands_received": "5"}}
    monitor._on_state(_raw(0.5, Q0))
    assert not publisher.sent and not demo.started
    assert "tracking 0.0e+00 rad" in monitor.status_line()  # the joints are tracked until it starts
    publisher.subscribers = 1
    monitor._on_state(_raw(1.25, Q0))
    (msg,) = publisher.sent
    start = demo.robot.frame_placement(Q0, "end_effector_link")
    assert msg.header.frame_id == "base_link"
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1, 250_000_000)
    p, o = msg.pose.position, msg.pose.orientation
    np.testing.assert_allclose([p.x, p.y, p.z], start.translation + OFFSET, atol=1e-12)
    np.testing.assert_allclose(pin.Quaternion(o.w, o.x, o.y, o.z).matrix(), start.rotation, atol=1e-12)
    assert monitor.tool_error == pytest.approx(np.linalg.norm(OFFSET))
    assert "tool 100.0 mm from its target" in monitor.status_line()
    monitor._on_state(_raw(1.25 + HOLD, Q0))  # the way back is due, and the tool is there
    assert len(publisher.sent) == 2 and monitor.tool_error == pytest.approx(0.0, abs=1e-12)
    tracked = monitor.tracked()
    assert (tracked.what, tracked.sent) == ("pose targets", 2) and tracked.poses == demo.summary()
    assert math.isnan(demo.sent[0].reached_at) and demo.sent[1].reached_at == 1.25 + HOLD


def _controller_diagnostics(targets_received: int) -> Any:
    """A /diagnostics message holding the controller's status with ``targets_received``."""
    from types import SimpleNamespace

    value = SimpleNamespace(key="targets_received", value=str(targets_received))
    status = SimpleNamespace(name="torque_ctrl_ros: controller", message="", values=[value])
    return SimpleNamespace(status=[status])


def test_a_target_from_elsewhere_stops_the_demo() -> None:
    """``make sim DURATION=0`` and a target from a second shell: the pose demo replaced it at its
    next target, for a minute. Once the controller counts more targets than the monitor sent, the
    demo sends no more, and the error is no longer measured against it."""
    from geometry_msgs.msg import PoseStamped
    from test_run_sim_mutation_gaps import Q0, _monitor, _Publisher, _publisher, _raw

    from torque_ctrl_ros.paths import data_path
    from torque_ctrl_ros.pose_demo import HOLD, PoseDemo

    demo = PoseDemo.for_controller("qpid", [Path(data_path("config", "gen3_controllers.yaml"))])
    assert demo is not None
    monitor = _monitor(0.0, sends_trajectory=False)
    monitor.pose_demo, monitor._pose_msg = demo, PoseStamped
    monitor.pose_pub = publisher = _Publisher(1)  # type: ignore[assignment]  # a fake: no rclpy node
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_diag(_controller_diagnostics(1))  # its own target: nothing foreign
    assert len(publisher.sent) == 1 and math.isnan(monitor.foreign_at)
    monitor._on_state(_raw(2.0, Q0))
    monitor._on_diag(_controller_diagnostics(2))
    assert monitor.foreign_at == 2.0
    monitor.diag["sim"] = {"step_rate_hz": "1000", "commands_received": "5"}
    assert "a target from elsewhere since t=2.00 s" in monitor.status_line()
    monitor._on_state(_raw(1.0 + 2 * HOLD, Q0))  # the demo's next two were due
    assert len(publisher.sent) == 1
    assert tracking_line(monitor.tracked(), 2).endswith(
        "; the demo stopped at t = 2.00 s, on the first target from elsewhere (measured up to t = 1.00 s, "
        "the controller's last report before it)"
    )
    # Under computed_torque: the joint error stops at it too, and goes back to the controller's last
    # report before it: the target may have been taken any time since, the arm moving to it.
    joints = _monitor(0.0, sends_trajectory=True)
    joints._on_state(_raw(1.0, Q0))
    assert joints.reference is not None and joints.errors.count == 1
    joints._on_diag(_controller_diagnostics(1))  # its own trajectory only
    joints._on_state(_raw(1.5, Q0 + 0.2))  # moving to the target from elsewhere, not yet seen
    joints._on_state(_raw(1.6, Q0 + 0.3))
    assert joints.errors.count == 3 and joints.hold_errors.max == pytest.approx(0.3)
    joints._on_diag(_controller_diagnostics(2))
    joints._on_state(_raw(1.7, Q0 + 0.3))
    assert joints.foreign_at == 1.6 and joints.measured_until == 1.0
    assert joints.errors.count == 1 and joints.hold_errors.count == 1 and joints.hold_errors.max == 0.0
    assert joints.tracked().errors is joints.errors and joints.tracked().measured_until == 1.0
    # Seen at the controller's first report: nothing measured before it counts.
    early = _monitor(0.0, sends_trajectory=True)
    early._on_state(_raw(1.0, Q0 + 0.1))
    early._on_diag(_controller_diagnostics(2))
    assert early.errors.count == early.hold_errors.count == 0 and math.isnan(early.measured_until)
    # Its line still says what happened, though nothing was measured.
    assert tracking_line(early.tracked(), 2) == (
        "  tracking error   none measured; the controller also took 1 target from elsewhere, not tracked "
        "here; the demo stopped at t = 1.00 s, on the first target from elsewhere (nothing measured: it "
        "came before the controller's first report)"
    )
    # A target from elsewhere before the trajectory topic matched: no demo is sent over it.
    first = _monitor(0.0, sends_trajectory=True, subscribers=0)
    first._on_state(_raw(1.0, Q0))
    first._on_diag(_controller_diagnostics(1))
    _publisher(first).subscribers = 1
    first._on_state(_raw(1.5, Q0))
    assert first.reference is None and not _publisher(first).sent
    assert first.tracked().no_demo == ""  # not "the topic was not discovered": it was stopped


def test_a_target_from_elsewhere_takes_the_pose_demos_figures_back_to_the_last_report() -> None:
    """The pose demo's figures (each target's closest approach, the end's error) go back to the
    controller's last report before a target from elsewhere, as the joint error does: the tool's
    move toward that target, up to a report before it was seen, is not the demo's (a review's run
    read "at the end 27.6 mm off the last" after the demo's target had been reached). Mutant: the
    demo's figures not rewound."""
    from geometry_msgs.msg import PoseStamped
    from test_run_sim_mutation_gaps import Q0, _monitor, _Publisher, _raw

    from torque_ctrl_ros.paths import data_path
    from torque_ctrl_ros.pose_demo import PoseDemo

    demo = PoseDemo.for_controller("qpid", [Path(data_path("config", "gen3_controllers.yaml"))])
    assert demo is not None
    monitor = _monitor(0.0, sends_trajectory=False)
    monitor.pose_demo, monitor._pose_msg = demo, PoseStamped
    monitor.pose_pub = _Publisher(1)  # type: ignore[assignment]  # a fake: no rclpy node
    monitor._on_state(_raw(1.0, Q0))  # the demo's first target sent, 10 cm from the tool
    monitor._on_diag(_controller_diagnostics(1))
    before = demo.summary()
    assert "at the end 100 mm" in before
    moved = Q0.copy()
    moved[0] += 0.3  # the arm turning toward a target from elsewhere
    monitor._on_state(_raw(1.5, moved))
    assert demo.summary() != before
    monitor._on_diag(_controller_diagnostics(2))
    assert monitor.foreign_at == 1.5 and monitor.measured_until == 1.0
    assert demo.summary() == before


def test_the_demos_end_error_is_not_given_against_a_target_sent_after_the_report() -> None:
    """Target 1 (10 cm off) sent at 1 s, the last good report at 3.9 s, target 2 (back at the
    start, where the tool is) at 4.0 s, a target from elsewhere seen at 4.3 s: rewound, the end's
    error is the one measured against target 1, not the last target's; said as not measured
    (it read "at the end 100 mm … off the last", a review). Mutant: the error's target not kept."""
    from geometry_msgs.msg import PoseStamped
    from test_run_sim_mutation_gaps import Q0, _monitor, _Publisher, _raw

    from torque_ctrl_ros.paths import data_path
    from torque_ctrl_ros.pose_demo import PoseDemo

    demo = PoseDemo.for_controller("achd_rnea", [Path(data_path("config", "gen3_controllers.yaml"))])
    assert demo is not None
    monitor = _monitor(0.0, sends_trajectory=False)
    monitor.pose_demo, monitor._pose_msg = demo, PoseStamped
    monitor.pose_pub = _Publisher(1)  # type: ignore[assignment]  # a fake: no rclpy node
    monitor._on_state(_raw(1.0, Q0))
    monitor._on_diag(_controller_diagnostics(1))
    monitor._on_state(_raw(3.9, Q0))
    monitor._on_diag(_controller_diagnostics(1))
    monitor._on_state(_raw(4.0, Q0))
    assert "at the end 0 mm" in demo.summary()
    monitor._on_state(_raw(4.3, Q0))
    monitor._on_diag(_controller_diagnostics(3))
    assert demo.summary().endswith("never (closest 100.0 mm), not measured; at the end not measured")


def test_the_summary_says_why_no_demo_was_sent() -> None:
    """A demo that did not fit in the run (discovery came late, or the run is short) or whose topic
    was never discovered is said on the tracking line, so that a skipped demo does not read as a
    controller that ignored it."""
    from pathlib import Path

    from test_run_sim_mutation_gaps import Q0, _monitor, _raw

    from torque_ctrl_ros.paths import data_path
    from torque_ctrl_ros.pose_demo import PoseDemo

    late = _monitor(3.0, sends_trajectory=True)
    late._on_state(_raw(0.75, Q0))  # the demo needs until 0.75 + 2.5 s
    tracked = late.tracked()
    assert tracked.sent == 0 and tracked.no_demo == (
        "the run ends at 3 s, before a swing and the way back could (from the controller's trajectory "
        "topic, discovered at t = 0.75 s, they need until 3.25 s)"
    )
    assert tracking_line(tracked).endswith(f"(1 states); no demo: {tracked.no_demo}")
    never = _monitor(10.0, sends_trajectory=True, subscribers=0)
    never._on_state(_raw(0.5, Q0))
    assert never.tracked().no_demo == "the controller's target topic was not discovered during the run"
    assert _monitor(10.0, sends_trajectory=False).tracked().no_demo == ""  # no demo to give: nothing said
    # Said also where no state was read at all.
    nothing = Tracked("initial pose", ErrorStats(), no_demo="the controller's target topic was ...")
    assert tracking_line(nothing) == (
        "  tracking error   none: no state read; no demo: the controller's target topic was ..."
    )

    pose = _monitor(7.0, sends_trajectory=False)
    shipped = [Path(data_path("config", "gen3_controllers.yaml"))]
    pose.pose_demo = PoseDemo.for_controller("achd_rnea", shipped)
    pose.pose_pub = _monitor(0.0, False, subscribers=1).traj_pub
    pose._on_state(_raw(1.5, Q0))  # a move and the way back need until 7.5 s
    assert pose.pose_demo is None and pose.tracked().no_demo == (
        "the run ends at 7 s, before a move and the way back could (from the controller's target "
        "topic, discovered at t = 1.50 s, they need until 7.50 s)"
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("abc", "ROS_DOMAIN_ID=abc: expected a whole number 0..232"),
        ("300", "ROS_DOMAIN_ID=300: expected a whole number 0..232"),  # DDS refuses it later
        ("-1", "ROS_DOMAIN_ID=-1: expected a whole number 0..232"),
    ],
)
def test_a_ros_domain_id_that_is_none_stops_the_runner_before_anything_starts(
    value: str, error: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``int()`` of it had raised a ValueError traceback after the run's banner; an id over 232
    reached Fast DDS, which failed later."""
    from torque_ctrl_ros.run_sim import _parse_args

    monkeypatch.setenv("ROS_DOMAIN_ID", value)
    with pytest.raises(SystemExit) as stop:
        _parse_args(["--duration", "1"])
    assert stop.value.code == 2 and error in capsys.readouterr().err


def test_out_naming_a_file_stops_the_runner_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It had raised FileExistsError from the nodes' start, a traceback after the run's banner."""
    from torque_ctrl_ros.run_sim import _parse_args

    (tmp_path / "a_file").write_text("")
    with pytest.raises(SystemExit) as stop:
        _parse_args(["--out", str(tmp_path / "a_file")])
    assert stop.value.code == 2 and f"--out: {tmp_path / 'a_file'} is a file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        _parse_args(["--out", str(tmp_path / "a_file" / "below")])
    assert stop.value.code == 2 and "--out: cannot make" in capsys.readouterr().err
    args, _ = _parse_args(["--out", str(tmp_path / "new" / "folder")])
    assert args.out.is_dir()


def test_a_controller_that_is_no_name_is_refused_as_no_controller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``controller: [a]`` had raised TypeError (a list is not hashable) instead of the runner's error."""
    from torque_ctrl_ros.run_sim import main

    own = tmp_path / "own.yaml"
    own.write_text("controller_node:\n  ros__parameters:\n    controller: [a]\n")
    with pytest.raises(ConfigError, match=re.escape("['a'] in ") + ".*is no controller"):
        file_controller(own)
    with pytest.raises(SystemExit) as stop:
        main(["--params-file", str(own)])
    assert stop.value.code == 2 and "controller_node controller: ['a'] in " in capsys.readouterr().err


class _SetUpMonitor:
    """The monitor, whose set-up (rclpy's imports and init) takes a Ctrl-C; nothing of rclpy."""

    def __init__(self, *args: object) -> None:
        import signal

        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise AssertionError("a Ctrl-C during the set-up raised KeyboardInterrupt") from None
        self.sim_time = 0.0

    def tracked(self) -> Tracked:
        return Tracked("initial pose", ErrorStats())

    def close(self) -> None:
        pass


def test_a_ctrl_c_during_the_set_up_ends_the_runner_without_a_traceback_or_a_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C right after ``logs and stats:`` landed in the monitor's imports: a KeyboardInterrupt
    traceback. Now the stop is noted, no node starts, the runner says it was interrupted before the
    nodes were up and exits with 130, its empty temp folder removed and the signal handlers restored."""
    import signal
    import tempfile

    from torque_ctrl_ros import node_processes, run_sim

    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(run_sim, "Monitor", _SetUpMonitor)
    monkeypatch.setattr(node_processes, "start_node", lambda *args: pytest.fail("a node was started"))
    handler = signal.getsignal(signal.SIGINT)
    assert run_sim.main(["--controller", "gravity_comp", "--duration", "1"]) == 130
    out = capsys.readouterr().out
    assert "logs and stats: " + str(tmp_path) in out
    assert out.endswith("summary (interrupted before the nodes were up): gravity_comp, realtime\n"), out
    assert not list(tmp_path.iterdir())
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_start_refused_before_any_node_leaves_no_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A parameter file that keeps an override from winning is refused before any node starts
    (NodePair.start); the temp folder made for the run's logs was left behind, empty."""
    import tempfile

    from torque_ctrl_ros import run_sim

    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(run_sim, "Monitor", lambda *args: _Idle())
    params = tmp_path / "own_override_section.yaml"
    params.write_text(
        "/**/controller_node:\n  ros__parameters:\n    qos_depth: 10\n"
        "/**:\n  ros__parameters:\n    controller: hqpid\n"
    )
    assert run_sim.main(["--controller", "qpid", "--params-file", str(params)]) == 2
    assert "keeps ['controller'] from being overridden" in capsys.readouterr().err
    assert not list((tmp_path / "tmp").iterdir())


class _Idle:
    """A monitor that never sees a state (the start is refused before it would)."""

    sim_time = 0.0

    def tracked(self) -> Tracked:
        return Tracked("initial pose", ErrorStats())

    def close(self) -> None:
        pass


def test_the_summary_says_the_ticks_a_realtime_simulator_gave_up() -> None:
    """The late steps count the steps run; the ticks given up when the simulator fell over 50 ms
    behind ran none, and the summary says how many (a review: 74.5 % late reported, 80.2 % of the
    ticks); nothing where none were, or where the figure is missing."""
    assert (
        _given_up_text(1428, 28) == ", 1428 ticks given up (28 times over 50 ms behind: no step ran at them)"
    )
    assert _given_up_text(1, 1) == ", 1 tick given up (1 time over 50 ms behind: no step ran at them)"
    assert _given_up_text(0, 0) == _given_up_text(None, None) == ""
