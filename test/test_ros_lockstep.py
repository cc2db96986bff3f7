"""Lockstep closed loops over real DDS, compared with the same loop run in one process.

In lockstep the simulator publishes state k, applies the command that answers it and only then
steps; doubles cross DDS bit-exactly, so the result must equal the pure-core loop (MujocoPlant +
controller in one process) to rounding: DDS is invisible to the result.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import (  # noqa: F401
    Probe,
    diagnostic_values,
    launch,
    probe,
    requires_rclpy,
    ros_domain,
    run_lockstep_pair,
    wait_until,
)

from torque_ctrl_ros.core import JointReference, JointState, RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.trajectory import JointTrajectory
from torque_ctrl_ros.sim.plant import MujocoPlant

pytestmark = [pytest.mark.ros, pytest.mark.slow, requires_rclpy]

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "mjcf" / "scene.xml"
URDF = ROOT / "urdf" / "gen3.urdf"
TOOL = "end_effector_link"
KP = 100.0
KD = 20.0


def core_loop(
    controller_name: str, params: dict[str, Any], steps: int, reference_at: Any = None
) -> dict[str, np.ndarray]:
    """The pure-core closed loop: same plant, keyframe, controller and step count as the nodes.

    ``reference_at(k, state)`` gives the reference for step k (``None``: the controller's hold).
    Returns q, v like the simulator's record (state k before step k) and ``tau``, the command
    answering state k (the record's ``tau`` row k + 1: applied in the step after it).
    """
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    robot = RobotModel.from_urdf_file(URDF)
    controller = create_controller(controller_name, robot, params)
    q = np.empty((steps + 1, plant.n))
    v = np.empty((steps + 1, plant.n))
    tau = np.empty((steps, plant.n))
    hold = None
    for k in range(steps):
        q[k], v[k] = plant.q, plant.v
        state = JointState(plant.q, plant.v, k * 1_000_000 * 1e-9)
        if reference_at is None:
            hold = controller.hold_reference(state) if hold is None else hold
            ref = hold
        else:
            ref = reference_at(k, state)
        tau[k] = controller.compute(state, ref).tau
        plant.set_torque(tau[k])
        plant.step()
    q[steps], v[steps] = plant.q, plant.v
    return {"q": q, "v": v, "tau": tau}


def command_deviation(rec: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> float:
    """Largest difference (N·m) between the torques the simulator applied after each state and the
    core loop's commands for the same states: a command applied a step early or late, or another
    joint's, shows here as soon as the torques change from step to step."""
    return float(np.abs(rec["tau"][1:] - expected["tau"]).max())


def run_lockstep(
    launch: Any,  # noqa: F811 - the fixture, passed on
    tmp_path: Path,
    controller: str,
    duration: float,
    before_sim: Any = None,
) -> dict[str, Any]:
    """Controller node + lockstep sim for ``duration`` simulated s; returns the record and stats."""
    return run_lockstep_pair(launch, tmp_path, duration, before_sim, controller=controller)


def tool_position(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    return robot.frame_placement(q, TOOL).translation.copy()


def test_gravity_comp_lockstep_matches_the_core_loop(launch: Any, tmp_path: Path) -> None:  # noqa: F811 - pytest fixtures
    steps = 3000
    out = run_lockstep(launch, tmp_path, "gravity_comp", steps * 1e-3)
    rec = out["record"]
    assert rec["q"].shape == (steps + 1, 7)
    expected = core_loop("gravity_comp", {"damping": 0.0}, steps)
    dq = np.abs(rec["q"] - expected["q"]).max()
    dv = np.abs(rec["v"] - expected["v"]).max()
    robot = RobotModel.from_urdf_file(URDF)
    drift_mm = 1e3 * np.linalg.norm(tool_position(robot, rec["q"][-1]) - tool_position(robot, rec["q"][0]))
    print(
        f"gravity comp over DDS vs core loop: |dq| {dq:.1e} rad, |dv| {dv:.1e} rad/s; tool drift "
        f"{drift_mm:.2e} mm"
    )
    # At rest every step's torque is the same, so this loop cannot tell a command applied a step
    # late; the computed-torque loops below, whose torques change, do (command_deviation).
    assert dq <= 1e-9 and dv <= 1e-9 and command_deviation(rec, expected) <= 1e-9
    assert drift_mm < 0.01


def test_computed_torque_to_a_joint_target(launch: Any, probe: Probe, tmp_path: Path) -> None:  # noqa: F811 - pytest fixtures
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState as JointStateMsg

    steps, offset = 1500, 0.1
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    names = list(plant.joint_names)
    q_target = plant.q + offset
    diags = probe.collect(DiagnosticArray, "/diagnostics")
    pub = probe.publisher(JointStateMsg, "/controller_node/joint_target")

    def send_target() -> None:
        wait_until(lambda: pub.get_subscription_count() > 0, 30, "the controller's ~/joint_target")
        msg = JointStateMsg(name=names[::-1], position=q_target[::-1].tolist())  # any order
        pub.publish(msg)
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_received") == "1",
            10,
            "the target to arrive",
        )

    out = run_lockstep(launch, tmp_path, "computed_torque", steps * 1e-3, send_target)
    rec = out["record"]
    robot = RobotModel.from_urdf_file(URDF)
    # The node reaches the target along a rest-to-rest quintic from the first state (stamp 0),
    # timed by its documented rule: no joint past half its velocity limit, no acceleration above
    # kp·|Δq| (here the wrist's limit decides: 0.31 s).
    duration = max(
        math.sqrt(10.0 / math.sqrt(3.0) / KP), float(np.max(1.875 * offset / (0.5 * robot.velocity_limit)))
    )
    approach = JointTrajectory(
        [duration], [q_target], np.zeros((1, 7)), np.zeros((1, 7)), start=(plant.q, None)
    )

    def ref(k: int, state: JointState) -> JointReference:
        return JointReference(*approach.sample(state.stamp))

    expected = core_loop("computed_torque", {"kp": KP, "kd": KD}, steps, ref)
    errors = robot.difference(np.broadcast_to(q_target, rec["q"].shape), rec["q"])
    dev_core = np.abs(rec["q"] - expected["q"]).max()
    peak = (np.abs(rec["v"]).max(axis=0) / robot.velocity_limit).max()
    print(
        f"computed torque to a 0.1 rad target over {duration:.3f} s: final |e| "
        f"{np.abs(errors[-1]).max():.1e} rad; vs core loop {dev_core:.1e} rad; peak speed "
        f"{peak:.2f} of the limit"
    )
    assert dev_core <= 1e-9 and command_deviation(rec, expected) <= 1e-9
    assert 0.4 < peak <= 0.55  # the approach is what moved the arm, at its speed
    assert np.abs(errors[-1]).max() < 1e-4


def _trajectory_message(q0: np.ndarray, names: list[str]) -> Any:
    """Three waypoints from ``q0`` (0.8, 1.6, 2.2 s) as a ``trajectory_msgs/JointTrajectory``."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    msg = TrajectoryMsg(joint_names=names)
    for t, q in [(0.8, q0 + 0.15), (1.6, q0 - 0.1), (2.2, q0)]:
        sec = int(t)
        msg.points.append(
            JointTrajectoryPoint(
                positions=q.tolist(), time_from_start=Duration(sec=sec, nanosec=round((t - sec) * 1e9))
            )
        )
    return msg


def _trajectory_sender(probe: Probe, msg: Any) -> Callable[[], None]:  # noqa: F811 - the fixture, passed on
    """What sends ``msg`` to the controller's ``~/joint_trajectory`` once it listens, and waits
    for the controller to say it received it (run before the simulator starts)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg

    diags = probe.collect(DiagnosticArray, "/diagnostics")
    pub = probe.publisher(TrajectoryMsg, "/controller_node/joint_trajectory")

    def send() -> None:
        wait_until(lambda: pub.get_subscription_count() > 0, 30, "the controller's ~/joint_trajectory")
        pub.publish(msg)
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("targets_received") == "1",
            10,
            "the trajectory to arrive",
        )

    return send


def _as_trajectory(msg: Any, q0: np.ndarray) -> JointTrajectory:
    """``msg`` as the node times it: from the first state's stamp (0), starting at ``q0``."""
    points = [
        (p.time_from_start.sec + p.time_from_start.nanosec * 1e-9, np.array(p.positions), None, None)
        for p in msg.points
    ]
    return JointTrajectory.from_points(points, 7, start=(q0, None))


def test_computed_torque_along_a_joint_trajectory(launch: Any, probe: Probe, tmp_path: Path) -> None:  # noqa: F811 - pytest fixtures
    steps = 2500
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    q0 = plant.q
    msg = _trajectory_message(q0, list(plant.joint_names))
    out = run_lockstep(launch, tmp_path, "computed_torque", steps * 1e-3, _trajectory_sender(probe, msg))
    rec = out["record"]
    # The node times the trajectory from the first state's stamp and starts it at the measured q0.
    traj = _as_trajectory(msg, q0)

    def ref(k: int, state: JointState) -> JointReference:
        q, v, a = traj.sample(state.stamp - 0.0)
        return JointReference(q, v, a)

    expected = core_loop("computed_torque", {"kp": KP, "kd": KD}, steps, ref)
    q_ref = np.array([traj.sample(k * 1e-3)[0] for k in range(steps + 1)])
    robot = RobotModel.from_urdf_file(URDF)
    tracking = np.abs(robot.difference(q_ref, rec["q"])).max()
    dev_core = np.abs(rec["q"] - expected["q"]).max()
    print(
        f"computed torque along a trajectory: max tracking error {tracking:.2e} rad; vs core loop "
        f"{dev_core:.1e} rad"
    )
    assert dev_core <= 1e-9 and command_deviation(rec, expected) <= 1e-9
    # Exact model, started on the path: the error stays at the discretisation level.
    assert tracking < 1e-3
    assert np.abs(rec["q"][-1] - q0).max() < 1e-3  # ends at the last waypoint


def delayed_core_loop(steps: int, traj: JointTrajectory, predict: bool) -> dict[str, np.ndarray]:
    """:func:`core_loop` for computed torque along ``traj`` with the commands 5 ms late as both
    nodes make them: the simulator's :class:`DelayLine` (four steps; its safe torque, ``hold``
    with the shipped ``safe_damping``, before the first command arrives) and, with ``predict``,
    the controller on the state carried over the four commands in flight (:class:`DelayPredictor`)
    and stamped four periods on, the time it is predicted for. The node times a trajectory that
    starts at the next state from that state's stamp (``t0``): the predicted one, where its first
    command acts."""
    from torque_ctrl_ros.core.prediction import DelayPredictor
    from torque_ctrl_ros.core.safety import DEFAULT_DAMPING
    from torque_ctrl_ros.sim.commands import DelayLine

    plant = MujocoPlant(SCENE)
    plant.reset("home")
    robot = RobotModel.from_urdf_file(URDF)
    robot.set_command_delay(0.005)
    controller = create_controller("computed_torque", robot, {"kp": KP, "kd": KD})
    predictor = DelayPredictor(robot, 4 if predict else 0)
    line = DelayLine(plant.n, 4)
    t0 = predictor.horizon  # the first state's stamp
    q = np.empty((steps + 1, plant.n))
    v = np.empty((steps + 1, plant.n))
    tau = np.empty((steps, plant.n))
    for k in range(steps):
        q[k], v[k] = plant.q, plant.v
        q_hat, v_hat = predictor.predict(plant.q, plant.v)
        state = JointState(q_hat, v_hat, k * 1e-3 + predictor.horizon)
        tau[k] = controller.compute(state, JointReference(*traj.sample(state.stamp - t0))).tau
        predictor.sent(tau[k])
        applied = line.pass_on(tau[k])
        plant.set_torque(
            plant.safe_torque(np.array(DEFAULT_DAMPING), hold=True) if applied is None else applied
        )
        plant.step()
    q[steps], v[steps] = plant.q, plant.v
    return {"q": q, "v": v, "tau": tau}


@pytest.mark.parametrize("predict", [True, False])
def test_five_ms_late_the_nodes_match_the_core_loop(
    launch: Any,  # noqa: F811 - pytest fixtures
    probe: Probe,  # noqa: F811
    tmp_path: Path,
    predict: bool,
) -> None:
    """Both nodes at ``command_delay`` 5 ms, computed torque along a trajectory: the simulator holds
    each command four steps on its way to the plant, the controller computes on the state carried
    over the four in flight (``predict_delay``) or on the measured one. Over DDS both runs equal
    the core loop doing the same to rounding, and the torque the plant got after state k is the
    command answering state k − 4 (the safe torque before the first arrived). Predicted, the arm
    follows the trajectory from where its first command acts, 4 ms on, to ~0.2 mrad; on the
    measured state it lags behind it, ~2.4 mrad off the trajectory from the first state."""
    steps = 2500
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    q0 = plant.q
    msg = _trajectory_message(q0, list(plant.joint_names))
    rec = run_lockstep_pair(
        launch,
        tmp_path,
        steps * 1e-3,
        _trajectory_sender(probe, msg),
        sim_params={"command_delay": 0.005},
        controller="computed_torque",
        command_delay=0.005,
        predict_delay=predict,
    )["record"]
    traj = _as_trajectory(msg, q0)
    expected = delayed_core_loop(steps, traj, predict)
    t0 = 0.004 if predict else 0.0  # where the node starts the trajectory
    q_ref = np.array([traj.sample(max(k * 1e-3 - t0, 0.0))[0] for k in range(steps + 1)])
    tracking = np.abs(RobotModel.from_urdf_file(URDF).difference(q_ref, rec["q"])).max()
    dev_core = np.abs(rec["q"] - expected["q"]).max()
    late = float(np.abs(rec["tau"][5:] - expected["tau"][:-4]).max())
    print(
        f"computed torque 5 ms late, prediction {'on' if predict else 'off'}: max tracking error "
        f"{tracking:.2e} rad; vs core loop {dev_core:.1e} rad; applied vs answer 4 back {late:.1e} N·m"
    )
    assert dev_core <= 1e-9 and late <= 1e-9
    assert tracking < 3e-4 if predict else tracking > 2e-3
    np.testing.assert_allclose(rec["tau"][1:5], np.broadcast_to(rec["tau"][1], (4, 7)), atol=0.05)
    assert np.abs(rec["tau"][4] - expected["tau"][0]).max() > 1e-6  # the safe torque, not a command


def test_a_stop_request_ends_a_lockstep_wait_at_once(launch: Any, tmp_path: Path) -> None:  # noqa: F811 - pytest fixtures
    """SIGINT while the simulator waits (lockstep_timeout 30 s) for a controller that never answers."""
    sim = launch(
        "sim_node",
        mode="lockstep",
        wait_for_controller=False,
        lockstep_timeout=30.0,
        stats_file=str(tmp_path / "sim.json"),
    )
    # Its start-up line comes just before it publishes state 0 and waits for the answer. (A
    # subscriber here could miss that one state: it is published once, before discovery.)
    wait_until(lambda: "lockstep simulation of" in sim.log(), 30, "the simulator's start")
    time.sleep(1.0)  # now inside the 30 s wait
    t0 = time.monotonic()
    rc = sim.stop(timeout=20.0)
    elapsed = time.monotonic() - t0
    assert rc == 0, sim.log()
    # One wait slice (0.1 s) plus the summary and shutdown; before, the whole 30 s.
    assert elapsed < 5.0, f"took {elapsed:.1f} s to stop"
    assert json.loads((tmp_path / "sim.json").read_text())["steps"] == 0


def test_lockstep_ignores_commands_that_do_not_say_which_state_they_answer(
    launch: Any,  # noqa: F811 - pytest fixtures
    probe: Probe,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A controller answering every state with an untagged command (no answered stamp in the
    layout): taken for the current state, one extra answer shifted every later step by one, so
    lockstep refuses them and steps on the safe torque, counting them.

    The probe answers state 0 (republished while the simulator waits for a controller) with a
    tagged command, which starts the run once the two have discovered each other, and every later
    state untagged: the 199 later steps all go on the safe torque, none on an untagged answer. (A
    run that did not wait for a controller ended after its ~4 s of timeouts, which DDS discovery
    here can take most of: the probe could see too few states.)"""
    from sensor_msgs.msg import JointState as JointStateMsg
    from std_msgs.msg import Float64MultiArray

    from torque_ctrl_ros.nodes.conversions import CommandEncoder, stamp_to_ns

    pub = probe.publisher(Float64MultiArray, "/effort_controller/commands", depth=100)
    tagged = CommandEncoder(7)
    stamps: list[int] = []  # of the states received, in order; the first is state 0's

    def answer(msg: Any) -> None:
        stamps.append(stamp_to_ns(msg.header.stamp))
        if stamps[-1] == stamps[0]:
            pub.publish(tagged.encode(np.zeros(7), stamps[0]))
        else:
            pub.publish(Float64MultiArray(data=[0.0] * 7))

    probe.node.create_subscription(JointStateMsg, "/joint_states", answer, 100)
    sim = launch(
        "sim_node",
        mode="lockstep",
        wait_for_controller=True,
        lockstep_timeout=0.02,
        duration=0.2,
        stats_file=str(tmp_path / "sim.json"),
    )
    assert sim.wait(timeout=60) == 0, sim.log()
    stats = json.loads((tmp_path / "sim.json").read_text())
    later = len(set(stamps)) - 1
    print(
        f"untagged answers to {later} states after state 0: {stats['untagged_commands']} ignored, "
        f"{stats['missing_command_steps']} of {stats['steps']} steps on the safe torque"
    )
    assert later >= 20 and stats["untagged_commands"] >= 20
    assert stats["steps"] == 200 and stats["missing_command_steps"] == 199
    assert "command without the answered state's stamp" in sim.log()
