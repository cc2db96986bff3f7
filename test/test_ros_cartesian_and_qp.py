"""The Cartesian and QP controllers over real DDS (issues 4 and 5): targets in, tool moves, diagnostics out.

Lockstep runs of ``controller_node`` (``achd_rnea``, ``qpid``, ``hqpid`` from the shipped YAML)
with ``sim_node``. Targets are sent before the simulator starts, so they are pending when the
first state arrives and the closed loop is deterministic: it must equal the same loop run in
one process (MujocoPlant + controller) to rounding, and the tool must reach the target.
Malformed targets (wrong frame, NaN, zero quaternion, joints out of limits) are refused,
counted in /diagnostics and leave the active target in place.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import (  # noqa: F401 - fixtures
    Probe,
    diagnostic_samples,
    diagnostic_values,
    launch,
    probe,
    requires_rclpy,
    ros_domain,
    run_lockstep_pair,
    shipped_parameters,
    wait_until,
)

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.nodes.params import controller_node_config
from torque_ctrl_ros.sim.plant import MujocoPlant

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "mjcf" / "scene.xml"
URDF = ROOT / "urdf" / "gen3.urdf"
TOOL = "end_effector_link"
BASE = "base_link"


# ----------------------------------------------------------------------------- helpers
def shipped_section(controller: str) -> dict[str, Any]:
    """The controller's parameters as the node gets them from ``config/gen3_controllers.yaml``."""
    params = shipped_parameters("controller_node") | {"controller": controller}
    return controller_node_config(params).controller_params


def home() -> tuple[np.ndarray, pin.SE3]:
    """Joint angles of the ``home`` keyframe and the tool pose there."""
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    robot = RobotModel.from_urdf_file(URDF)
    return plant.q, robot.frame_placement(plant.q, TOOL)


def pose_msg(position: Any, quaternion_xyzw: Any, frame: str = BASE) -> Any:
    """A ``geometry_msgs/PoseStamped``."""
    from geometry_msgs.msg import PoseStamped

    msg = PoseStamped()
    msg.header.frame_id = frame
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(x) for x in position)
    o.x, o.y, o.z, o.w = (float(x) for x in quaternion_xyzw)
    return msg


def quaternion_xyzw(rotation: np.ndarray) -> np.ndarray:
    """``(x, y, z, w)`` of a rotation matrix (geometry_msgs order)."""
    return np.array(pin.Quaternion(rotation).coeffs())


def core_loop(controller: str, steps: int, reference: Any) -> dict[str, np.ndarray]:
    """The same closed loop in one process: plant at ``home``, a constant ``reference`` or one
    a function gives for each state (e.g. a target source's)."""
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    ctrl = create_controller(controller, RobotModel.from_urdf_file(URDF), shipped_section(controller))
    q = np.empty((steps + 1, plant.n))
    v = np.empty((steps + 1, plant.n))
    for k in range(steps):
        q[k], v[k] = plant.q, plant.v
        state = JointState(plant.q, plant.v, k * 1e-3)
        plant.set_torque(ctrl.compute(state, reference(state) if callable(reference) else reference).tau)
        plant.step()
    q[steps], v[steps] = plant.q, plant.v
    return {"q": q, "v": v}


def tool_error_mm(q: np.ndarray, target: pin.SE3) -> tuple[float, float]:
    """Position (mm) and orientation (rad) error of the tool at ``q``."""
    pose = RobotModel.from_urdf_file(URDF).frame_placement(q, TOOL)
    return (
        1e3 * float(np.linalg.norm(target.translation - pose.translation)),
        float(np.linalg.norm(pin.log3(target.rotation @ pose.rotation.T))),
    )


def null_projector(J: np.ndarray) -> np.ndarray:
    """``I − J⁺J``: joint motions that leave the task still."""
    return np.eye(J.shape[1]) - np.linalg.pinv(J) @ J


def running_sample(diags: list[tuple[float, Any]], key: str) -> dict[str, Any]:
    """The last /diagnostics status taken while commands flowed and the watchdog was ok."""
    samples = [
        s
        for s in diagnostic_samples(diags, "controller")
        if key in s and s.get("watchdog_state") == "ok" and s.get("commands_published") not in ("0", None)
    ]
    assert samples, "no /diagnostics sample while the controller was running"
    return samples[-1]


def watchdog_log(log_dir: Path) -> str:
    """The watchdog lines of the controller's log in ``log_dir``, for a failure message. A
    fallback before the simulator's last state (the controller saw no state for 50 ms or more of
    wall time: a process stalled on a loaded host) changes how the controller resumes, so the
    loop over DDS is then no longer the one in one process."""
    lines = (log_dir / "controller_node.log").read_text(errors="replace").splitlines()
    return "controller watchdog: " + " | ".join(
        line.split("]: ", 1)[-1] for line in lines if "watchdog" in line
    )


# ------------------------------------------------------------------ without DDS
def test_the_shipped_config_builds_the_cartesian_and_qp_controllers() -> None:
    robot = RobotModel.from_urdf_file(URDF)
    for name in ("achd_rnea", "qpid", "hqpid"):
        controller = create_controller(name, robot, shipped_section(name))
        assert controller.name == name
    qp = create_controller("hqpid", robot, shipped_section("hqpid"))
    assert [qp.task(n).kind for n in qp.task_names] == ["pose", "posture"]  # type: ignore[attr-defined]
    assert len(qp.levels) == 2  # type: ignore[attr-defined]


@requires_rclpy
def test_pose_message_conversions_and_refusals() -> None:
    from torque_ctrl_ros.core.errors import TargetError
    from torque_ctrl_ros.core.target_checks import base_frame
    from torque_ctrl_ros.nodes.targets import (
        check_frame,
        check_unused_half,
        pose_position,
        pose_reference,
        pose_rotation,
    )

    robot = RobotModel.from_urdf_file(URDF)
    assert base_frame(robot) == BASE
    _, tool = home()
    quat = quaternion_xyzw(tool.rotation)
    ref = pose_reference(pose_msg(tool.translation, quat), "t")
    np.testing.assert_allclose(ref.se3.homogeneous, tool.homogeneous, atol=1e-12)
    np.testing.assert_allclose(pose_rotation(pose_msg((0, 0, 0), quat), "t"), tool.rotation, atol=1e-12)
    # A position task ignores the orientation: the all-zero default quaternion is fine there, but
    # not a NaN or inf in the half a task ignores.
    np.testing.assert_array_equal(pose_position(pose_msg((1, 2, 3), (0, 0, 0, 0)), "t"), [1.0, 2.0, 3.0])
    check_unused_half(pose_msg((1, 2, 3), (0, 0, 0, 0)), "orientation", "t")
    check_unused_half(pose_msg((0, 0, 0), quat), "position", "t")
    with pytest.raises(TargetError, match=r"t: non-finite orientation \(0.0, 0.0, nan, 1.0\)"):
        check_unused_half(pose_msg((1, 2, 3), (0, 0, math.nan, 1)), "orientation", "t")
    with pytest.raises(TargetError, match=r"t: non-finite position \(inf, 0.0, 0.0\)"):
        check_unused_half(pose_msg((math.inf, 0, 0), quat), "position", "t")
    for frame in ("", "world", "tool_frame"):
        with pytest.raises(TargetError, match="frame_id"):
            check_frame(pose_msg(tool.translation, quat, frame), BASE, "t")
    with pytest.raises(TargetError, match="non-finite|finite"):
        pose_reference(pose_msg((math.nan, 0, 0), quat), "t")
    with pytest.raises(TargetError, match="quaternion"):
        pose_reference(pose_msg(tool.translation, (0, 0, 0, 0)), "t")
    with pytest.raises(TargetError, match="quaternion"):
        pose_rotation(pose_msg((0, 0, 0), (math.nan, 0, 0, 1)), "t")


# ------------------------------------------------------------------- over DDS
@pytest.mark.ros
@pytest.mark.slow
@requires_rclpy
def test_achd_rnea_moves_the_tool_to_a_pose_target(launch: Any, probe: Probe, tmp_path: Path) -> None:  # noqa: F811
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped

    steps = 2000
    _, tool = home()
    target = pin.SE3(tool.rotation, tool.translation + np.array([0.05, 0.0, 0.0]))
    quat = quaternion_xyzw(target.rotation)
    diags = probe.collect(DiagnosticArray, "/diagnostics")
    pub = probe.publisher(PoseStamped, "/controller_node/target_pose")
    bad = [
        pose_msg(target.translation, quat, frame="world"),  # wrong frame
        pose_msg(target.translation, quat, frame=""),  # no frame
        pose_msg((math.nan, 0.0, 0.5), quat),  # NaN pose
        pose_msg(target.translation, (0.0, 0.0, 0.0, 0.0)),  # zero quaternion (default message)
    ]

    def send() -> None:
        wait_until(lambda: pub.get_subscription_count() > 0, 30, "the controller's ~/target_pose")
        pub.publish(pose_msg(target.translation, quat))
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_received") == "1", 10, "the target"
        )
        for msg in bad:  # after the good one: if any were taken, the tool would not end at the target
            pub.publish(msg)
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_rejected") == str(len(bad)),
            10,
            "the bad targets to be refused",
        )

    out = run_lockstep_pair(launch, tmp_path, steps * 1e-3, send, controller="achd_rnea")
    rec = out["record"]
    e_mm, e_rad = tool_error_mm(rec["q"][-1], target)
    e0_mm, _ = tool_error_mm(rec["q"][0], target)
    # The node's target source approaches the target from the first state (stamp 0); the same
    # source, fed the same message, gives the core loop its references.
    from ros_helpers import FakeTargetNode

    from torque_ctrl_ros.nodes.targets import PoseTargetSource

    robot = RobotModel.from_urdf_file(URDF)
    source = PoseTargetSource(
        FakeTargetNode(),  # type: ignore[arg-type]
        create_controller("achd_rnea", robot, shipped_section("achd_rnea")),
    )
    source._on_pose(pose_msg(target.translation, quat))
    dev = np.abs(rec["q"] - core_loop("achd_rnea", steps, source.reference)["q"]).max()
    diag = running_sample(diags, "info_position_error")
    last = diagnostic_values(diags, "controller")
    print(
        f"achd_rnea over DDS: 5 cm move in x, tool error {e0_mm:.1f} mm -> {e_mm:.2e} mm, "
        f"{e_rad:.1e} rad after {steps * 1e-3:.1f} s; vs core loop {dev:.1e} rad; targets received "
        f"{last['targets_received']}, rejected {last['targets_rejected']} "
        f"(last: {last['target_last_error']!r}); diagnostics: "
        + ", ".join(f"{k}={v}" for k, v in diag.items() if k.startswith("info_") or k == "target")
    )
    assert e_mm < 1.0 and e_rad < 1e-3
    assert dev <= 1e-9, watchdog_log(tmp_path)
    assert last["targets_received"] == "1" and last["targets_rejected"] == str(len(bad))
    assert diag["target"] == "target_pose"
    for key in ("info_position_error", "info_orientation_error", "info_delassus_condition"):
        float(diag[key])  # formatted numbers ("inf" allowed), never a broken message


@pytest.mark.parametrize("controller", ["qpid", "hqpid"])
@pytest.mark.ros
@pytest.mark.slow
@requires_rclpy
def test_qp_controllers_take_task_targets_and_report(
    controller: str,
    launch: Any,  # noqa: F811
    probe: Probe,  # noqa: F811
    tmp_path: Path,
) -> None:
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState as JointStateMsg

    steps = 2000
    q0, tool = home()
    robot = RobotModel.from_urdf_file(URDF)
    names = list(robot.joint_names)
    target = pin.SE3(tool.rotation, tool.translation + np.array([0.05, 0.0, -0.03]))
    quat = quaternion_xyzw(target.rotation)
    q_posture = q0 + np.array([0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0])  # bends the redundant elbow
    diags = probe.collect(DiagnosticArray, "/diagnostics")
    tool_pub = probe.publisher(PoseStamped, "/controller_node/tool/target")
    joint_pub = probe.publisher(JointStateMsg, "/controller_node/joint_target")
    q_out = q0.copy()
    q_out[1] = robot.position_upper[1] + 0.1

    def send() -> None:
        wait_until(
            lambda: tool_pub.get_subscription_count() > 0 and joint_pub.get_subscription_count() > 0,
            30,
            "the controller's ~/tool/target and ~/joint_target",
        )
        tool_pub.publish(pose_msg(target.translation, quat))
        joint_pub.publish(JointStateMsg(name=names[::-1], position=q_posture[::-1].tolist()))  # by name
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_received") == "2", 10, "the targets"
        )
        tool_pub.publish(pose_msg(target.translation, quat, frame="world"))
        tool_pub.publish(pose_msg((0.4, math.nan, 0.3), quat))
        joint_pub.publish(JointStateMsg(name=names, position=q_out.tolist()))  # beyond joint_2's limit
        joint_pub.publish(JointStateMsg(name=names[:6], position=q0[:6].tolist()))  # a joint missing
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_rejected") == "4",
            10,
            "the bad targets to be refused",
        )

    out = run_lockstep_pair(launch, tmp_path, steps * 1e-3, send, controller=controller)
    rec = out["record"]
    e_mm, e_rad = tool_error_mm(rec["q"][-1], target)
    e0_mm, _ = tool_error_mm(rec["q"][0], target)
    # The posture task may only use the tool task's null space: its error there must vanish.
    null_err = []
    for q in (rec["q"][0], rec["q"][-1]):
        J = robot.frame_jacobian(q, TOOL)
        null_err.append(float(np.linalg.norm(null_projector(J) @ robot.difference(q_posture, q))))
    # The node's target source approaches both targets from the first state (stamp 0); the same
    # source, fed the same messages, gives the core loop its references.
    from ros_helpers import FakeTargetNode

    from torque_ctrl_ros.nodes.targets import TaskTargetSource

    source = TaskTargetSource(
        FakeTargetNode(),  # type: ignore[arg-type]
        create_controller(controller, robot, shipped_section(controller)),
    )
    source._on_pose("tool", pose_msg(target.translation, quat))
    source._on_joint_target(JointStateMsg(name=names[::-1], position=q_posture[::-1].tolist()))
    expected = core_loop(controller, steps, source.reference)
    dev = np.abs(rec["q"] - expected["q"]).max()
    tail_speed = np.abs(rec["v"][-100:]).max()
    diag = running_sample(diags, "info_qp_status")
    last = diagnostic_values(diags, "controller")
    print(
        f"{controller} over DDS: tool 5 cm x / -3 cm z, error {e0_mm:.1f} mm -> {e_mm:.2e} mm, "
        f"{e_rad:.1e} rad; null-space posture error {null_err[0]:.3f} -> {null_err[1]:.1e} rad; "
        f"max |qd| over the last 0.1 s {tail_speed:.1e} rad/s; vs core loop {dev:.1e} rad; "
        f"targets received {last['targets_received']}, rejected {last['targets_rejected']}; diagnostics: "
        + ", ".join(
            f"{k[5:]}={diag[k]}"
            for k in (
                "info_qp_status",
                "info_qp_iterations",
                "info_qp_solve_time_us",
                "info_step_time_us",
                "info_active_constraints",
                "info_slack_total",
                "info_d_min",
                "info_manipulability",
                "info_error.tool",
                "info_fallback",
            )
        )
    )
    assert e_mm < 1.0 and e_rad < 1e-3
    assert tail_speed < 0.05
    assert null_err[1] < 0.05 * null_err[0]
    assert dev <= 1e-9, watchdog_log(tmp_path)
    assert last["targets_received"] == "2" and last["targets_rejected"] == "4"
    assert diag["target"] == "tool,posture"
    assert diag["_level"] == b"\x00" and diag["info_fallback"] == "0" and diag["info_qp_status"] == "0"
    for key in ("info_qp_iterations", "info_qp_solve_time_us", "info_active_constraints", "info_slack_total"):
        assert math.isfinite(float(diag[key])), key
    # The callback's parts, live: the QP controllers also time their prepare and QP solve.
    for part in ("state_in", "prepare", "qp_solve", "command_out"):
        assert 0.0 < float(diag[f"{part}_p50_ms"]) <= float(diag[f"{part}_max_ms"]), part


#: qpid parameters that make every solve at and near home infeasible (see the test below).
_UNREACHABLE_SINGULARITY_ROW: dict[str, Any] = {
    "qpid.singularity.soft": False,
    "qpid.singularity.w_min": 0.05,
    "qpid.singularity.alpha": 100.0,
}


@pytest.mark.ros
@pytest.mark.slow
@requires_rclpy
def test_a_hard_row_that_cannot_hold_is_reported_as_a_warning(
    launch: Any,  # noqa: F811
    probe: Probe,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A hard singularity row the torque limits cannot meet makes every hard QP fail. (The tool's
    manipulability at home is 0.033 m³, below w_min 0.05; α = 100 asks ẅ ≥ α²·0.017 ≈ 170 m³/s² at
    rest, and the solver's primal residual stays at ~60 until its iteration cap, at 50 and at
    1000.) Each step is solved again with the row soft (it fell back to g(q) − K_d·q̇, which holds
    no barrier, before): no fallback, a WARN saying the hard rows could not hold, the soft retries
    counted, and the arm moved away from the singularity as far as the torque allows."""
    from diagnostic_msgs.msg import DiagnosticArray

    diags = probe.collect(DiagnosticArray, "/diagnostics")

    def discovered() -> None:  # the probe must hear the controller before the short run starts
        wait_until(lambda: diagnostic_values(diags, "controller"), 30, "the controller's /diagnostics")

    # 1 s: several reports while it runs (the first one after it is the watchdog's silence error).
    out = run_lockstep_pair(
        launch, tmp_path, 1.0, discovered, controller="qpid", **_UNREACHABLE_SINGULARITY_ROW
    )
    rec = out["record"]
    warn = wait_until(
        lambda: [s for s in diagnostic_samples(diags, "controller") if s["_level"] == b"\x01"],
        5,
        "a WARN status",
    )[-1]
    drift = float(np.abs(rec["q"][-1] - rec["q"][0]).max())
    print(
        f"qpid with a hard singularity row out of reach: {warn['controller_soft_retries']} soft retries, "
        f"{warn['controller_fallbacks']} fallbacks; level WARN, message {warn['_message']!r}; joint drift "
        f"{drift:.2e} rad"
    )
    assert "hard barrier rows could not hold" in warn["_message"]
    assert int(warn["controller_soft_retries"]) > 0 and int(warn["controller_fallbacks"]) == 0
    assert "info_soft_retry" in warn  # the last step's (by then the arm may be past w_min: 0)
    assert drift > 1e-3  # the soft row moves the arm toward a manipulability above w_min
