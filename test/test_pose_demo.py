"""make sim's pose demo for the Cartesian controllers (``torque_ctrl_ros/pose_demo.py``), without
nodes: which frame and topic it picks from the parameter files, the targets it plans, when it
sends them, and what it reports. test_make_sim.py runs it with the nodes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.paths import data_path
from torque_ctrl_ros.pose_demo import HOLD, OFFSET, REACHED, PoseDemo

SHIPPED = [Path(data_path("config", "gen3_controllers.yaml"))]
HOME = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
NAMES = [f"joint_{i}" for i in range(1, 8)]


def _demo(controller: str = "qpid") -> PoseDemo:
    demo = PoseDemo.for_controller(controller, SHIPPED)
    assert demo is not None
    return demo


@pytest.mark.parametrize(
    ("controller", "topic"),
    [
        ("achd_rnea", "/controller_node/target_pose"),
        ("qpid", "/controller_node/tool/target"),
        ("hqpid", "/controller_node/tool/target"),
    ],
)
def test_the_cartesian_controllers_get_their_frame_and_target_topic(controller: str, topic: str) -> None:
    demo = _demo(controller)
    assert (demo.frame, demo.topic, demo.base) == ("end_effector_link", topic, "base_link")


@pytest.mark.parametrize("controller", ["gravity_comp", "computed_torque", "no_such_controller"])
def test_the_joint_space_controllers_get_none(controller: str) -> None:
    assert PoseDemo.for_controller(controller, SHIPPED) is None


def test_the_first_pose_task_is_taken_and_none_without_one(tmp_path: Path) -> None:
    """Tasks are looked up by type, in their order: a position task is not a pose."""
    layered = tmp_path / "tasks.yaml"
    layered.write_text(
        "controller_node:\n  ros__parameters:\n    qpid:\n      tasks: [elbow, grip, posture]\n"
        "      elbow: {type: position, frame: forearm_link}\n"
        "      grip: {type: pose, frame: bracelet_link}\n"
    )
    demo = PoseDemo.for_controller("qpid", [*SHIPPED, layered])
    assert demo is not None and (demo.frame, demo.topic) == ("bracelet_link", "/controller_node/grip/target")
    layered.write_text("controller_node:\n  ros__parameters:\n    qpid:\n      tasks: [posture]\n")
    assert PoseDemo.for_controller("qpid", [*SHIPPED, layered]) is None


def test_a_frame_or_model_the_controller_would_refuse_gives_no_demo(tmp_path: Path) -> None:
    """The controller node refuses them and says why; the runner must not fail before it."""
    layered = tmp_path / "bad.yaml"
    layered.write_text("controller_node:\n  ros__parameters:\n    achd_rnea:\n      frame: no_such_frame\n")
    assert PoseDemo.for_controller("achd_rnea", [*SHIPPED, layered]) is None
    layered.write_text("controller_node:\n  ros__parameters:\n    model_file: /no/such/model.urdf\n")
    assert PoseDemo.for_controller("achd_rnea", [*SHIPPED, layered]) is None


def test_the_targets_go_out_and_back_keeping_the_orientation_and_end_where_the_frame_started(
    robot: RobotModel,
) -> None:
    demo = _demo()
    # States in another order than the model's: mapped by name.
    order = [6, 0, 5, 1, 4, 2, 3]
    assert demo.start([NAMES[k] for k in order], HOME[order], 2.0, duration=15.0)
    start = robot.frame_placement(HOME, "end_effector_link")
    sent = []
    for k in range(14000):
        t = 2.0 + k * 1e-3
        target = demo.due(t)
        if target is not None:
            sent.append(target)
    # 2·⌊13 s / 6 s⌋ = 4 targets, every HOLD s from the first state, alternating.
    assert [round(s.sent_at, 3) for s in sent] == [2.0, 2.0 + HOLD, 2.0 + 2 * HOLD, 2.0 + 3 * HOLD]
    for k, target in enumerate(sent):
        expected = start.translation + (OFFSET if k % 2 == 0 else 0.0)
        np.testing.assert_allclose(target.position, expected, atol=1e-12)
        np.testing.assert_allclose(target.rotation, start.rotation, atol=1e-12)
        x, y, z, w = target.quaternion_xyzw()
        np.testing.assert_allclose(pin.Quaternion(w, x, y, z).matrix(), start.rotation, atol=1e-12)
    assert demo.due(1e9) is None


@pytest.mark.parametrize(
    ("start", "duration", "count"),
    [
        (0.0, 6.0, 2),
        (0.0, 11.9, 2),
        (0.0, 12.0, 4),
        (4.0, 12.0, 2),
        (4.0, 16.0, 4),
        (0.0, 0.0, 20),
        (4.0, 0.0, 20),
    ],
)
def test_the_run_holds_whole_pairs_of_targets(start: float, duration: float, count: int) -> None:
    """Each pair ends back at the start with HOLD s left to settle before the run's end, which is
    ``duration`` in simulated time like the start (not counted from it); duration 0 (until Ctrl-C):
    a minute from the start."""
    demo = _demo()
    assert demo.start(NAMES, HOME, start, duration)
    sent = [t for t in np.arange(start, start + 61.0, 0.5) if demo.due(float(t)) is not None]
    assert len(sent) == count and sent[-1] <= (duration or start + 60.0) - HOLD


def test_the_first_target_is_10_cm_along_the_base_y(robot: RobotModel) -> None:
    """The README and the summary say so; a target along another axis would still be reached."""
    np.testing.assert_array_equal(OFFSET, [0.0, 0.10, 0.0])
    demo = _demo("achd_rnea")
    assert demo.start(NAMES, HOME, 0.0, 10.0)
    out = demo.due(0.0)
    assert out is not None
    start = robot.frame_placement(HOME, "end_effector_link").translation
    np.testing.assert_allclose(out.position - start, [0.0, 0.10, 0.0], atol=1e-12)


def test_too_short_a_run_or_unusable_states_give_no_demo() -> None:
    demo = _demo()
    assert not demo.start(NAMES, HOME, 0.0, 2 * HOLD - 0.01)
    assert not demo.start(NAMES, HOME, 4.0, 4.0 + 2 * HOLD - 0.01)
    assert not demo.started
    assert "the run ends at 9.99 s, before a move and the way back could" in demo.refusal
    assert not demo.start(NAMES[:6], HOME[:6], 0.0, 10.0)  # a joint of the model missing
    assert demo.refusal == "the joint states lack the model's ['joint_7']"
    with_nan = HOME.copy()
    with_nan[3] = np.nan
    assert not demo.start(NAMES, with_nan, 0.5, 10.0)  # its targets would be NaN (and refused)
    assert demo.refusal == "the joint state at t = 0.50 s was not finite"
    assert demo.summary() == "none sent (the controller's target topic was not discovered in time)"


def test_the_report_says_when_each_target_was_reached_and_how_far_off_the_end_is(robot: RobotModel) -> None:
    demo = _demo()
    assert demo.start(NAMES, HOME, 0.0, 10.0)
    assert math.isnan(demo.observe(0.0, HOME))  # nothing sent yet
    out = demo.due(0.0)
    assert out is not None
    assert demo.observe(0.0, HOME) == pytest.approx(np.linalg.norm(OFFSET))
    # A configuration whose frame is within REACHED of the target: one Newton step on position.
    J = robot.frame_jacobian(HOME, "end_effector_link")[:3]
    q_out = HOME + np.linalg.pinv(J) @ OFFSET
    for _ in range(3):
        miss = out.position - robot.frame_placement(q_out, "end_effector_link").translation
        q_out += np.linalg.pinv(robot.frame_jacobian(q_out, "end_effector_link")[:3]) @ miss
    assert demo.observe(1.25, q_out) < REACHED
    demo.observe(1.5, HOME)  # moving away again does not undo the arrival
    assert out.reached_at == 1.25
    back = demo.due(HOLD)
    assert back is not None
    demo.observe(HOLD + 0.5, q_out)  # never back: its closest is reported
    summary = demo.summary()
    assert "2 sent to end_effector_link on /controller_node/tool/target" in summary
    assert "within 1 mm of each: after 1.25 s, never (closest 100.0 mm)" in summary, summary
    end = robot.frame_placement(q_out, "end_effector_link")
    off_mm = 1e3 * np.linalg.norm(end.translation - back.position)
    off_deg = math.degrees(np.linalg.norm(pin.log3(back.rotation.T @ end.rotation)))
    assert summary.endswith(f"at the end {off_mm:.3g} mm and {off_deg:.3g}° off the last"), summary
    assert 99.0 < off_mm < 101.0


@pytest.mark.parametrize("tasks", ["5", "tool"])
def test_tasks_that_are_no_list_of_names_give_no_demo(tmp_path: Path, tasks: str) -> None:
    """``qpid: {tasks: 5}`` had raised TypeError in the runner; the controller node refuses the
    file itself, with its own message, and the runner is then only without a demo."""
    layered = tmp_path / "tasks.yaml"
    layered.write_text(f"controller_node:\n  ros__parameters:\n    qpid:\n      tasks: {tasks}\n")
    assert PoseDemo.for_controller("qpid", [*SHIPPED, layered]) is None
