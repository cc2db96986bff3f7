"""The controller node in this process, its callbacks called directly: the paths between a state
and its command that no other test reaches. The command order given by ``joints``, the safe
torque when the controller raises, a model from ``robot_description``, wrong ``joints`` lists
refused at start, saturated commands counted, and what the trajectory topic does with empty,
malformed and superseded trajectories. Every expected value is computed here from the robot
model, not taken from the node. No DDS traffic is needed; the node is built on its own domain id."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import in_process_controllers, node_now, requires_rclpy, ros_domain, sim_clock  # noqa: F401

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import ConfigError, SolverError
from torque_ctrl_ros.core.trajectory import JointTrajectory
from torque_ctrl_ros.core.types import JointReference, JointState

pytestmark = [pytest.mark.ros, requires_rclpy]

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf" / "gen3.urdf"
JOINTS = [f"joint_{i}" for i in range(1, 8)]
KP, KD = 100.0, 20.0
#: Stale only after 1 s: a loaded machine handling a state late must not turn it into a fallback.
PARAMS: dict[str, Any] = {
    "use_sim_time": False,
    "controller": "computed_torque",
    "computed_torque.kp": KP,
    "computed_torque.kd": KD,
    "watchdog.max_age": 1.0,
}


class Commands:
    """Stands in for the command publisher: keeps a copy of every torque (command order), from
    a message or from CDR bytes (read back with rclpy, not with the package's codec)."""

    def __init__(self) -> None:
        self.torques: list[np.ndarray] = []

    def publish(self, msg: Any) -> None:
        from rclpy.serialization import deserialize_message
        from std_msgs.msg import Float64MultiArray

        if isinstance(msg, (bytes, bytearray)):
            msg = deserialize_message(bytes(msg), Float64MultiArray)
        self.torques.append(np.array(msg.data, dtype=np.float64))  # the encoder reuses its message


class Recorder:
    """Stands in for the /diagnostics publisher."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)


@pytest.fixture
def make_controller(ros_domain: int) -> Iterator[Callable[..., Any]]:  # noqa: F811
    """``make(*params_files, **params)``: a ControllerNode on the shipped YAML, then the given
    files, then :data:`PARAMS` and ``params``; commands go to :class:`Commands` (``node.publisher``)."""
    with in_process_controllers(ros_domain) as make_node:

        def make(*params_files: Path, **params: Any) -> Any:
            node = make_node(*params_files, **{**PARAMS, **params})
            node.publisher = Commands()
            node.diag_publisher = Recorder()
            return node

        yield make


_now = node_now


def _state_msg(q: np.ndarray, v: np.ndarray, stamp: float, names: list[str] = JOINTS) -> Any:
    """A joint state message, ``q`` and ``v`` given in ``names`` order."""
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(name=list(names), position=q.tolist(), velocity=v.tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


def _joint_target(q: np.ndarray, names: list[str] = JOINTS) -> Any:
    from sensor_msgs.msg import JointState as JointStateMsg

    return JointStateMsg(name=list(names), position=q.tolist())


def _computed_torque(
    robot: RobotModel, q: np.ndarray, v: np.ndarray, q_ref: np.ndarray, ref: JointReference | None = None
) -> np.ndarray:
    """Unsaturated computed torque (model order) holding ``q_ref`` at rest, or tracking ``ref``."""
    if ref is None:
        return robot.rnea(q, v, KP * (q_ref - q) - KD * v)
    v_ref = np.zeros(7) if ref.v is None else ref.v
    a_ref = np.zeros(7) if ref.a is None else ref.a
    return robot.rnea(q, v, a_ref + KP * (ref.q - q) + KD * (v_ref - v))


def _clip(robot: RobotModel, tau: np.ndarray) -> np.ndarray:
    return np.clip(tau, -robot.effort_limit, robot.effort_limit)


def _scaled(robot: RobotModel, tau: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Computed torque as sent: beyond the limits, ``c + s·(τ − c)`` with ``s`` the largest that
    fits every joint (``c = C·q̇ + g``, within the limits in these tests)."""
    c = robot.nonlinear_effects(q, v)
    s = 1.0
    for t, b, limit in zip(tau, c, robot.effort_limit, strict=True):
        if abs(t) > limit:
            s = min(s, (math.copysign(limit, t) - b) / (t - b))
    return c + s * (tau - c)


# ---------------------------------------------------------------- 1. the joints parameter's order
@pytest.mark.parametrize(
    "order",
    [JOINTS[::-1], ["joint_3", "joint_7", "joint_1", "joint_5", "joint_2", "joint_6", "joint_4"]],
    ids=["reversed", "permuted"],
)
def test_commands_are_in_the_order_of_the_joints_parameter(
    make_controller: Callable[..., Any], robot: RobotModel, order: list[str]
) -> None:
    node = make_controller(joints=order)
    rng = np.random.default_rng(11)
    q_target = rng.uniform(-0.4, 0.4, 7)
    # The target and the states name their joints in yet another order: read by name.
    shuffled = [JOINTS[i] for i in (4, 0, 6, 2, 5, 1, 3)]
    pick = [JOINTS.index(j) for j in shuffled]
    node.target._on_joint_target(_joint_target(q_target[pick], shuffled))
    for _ in range(3):
        q, v = rng.uniform(-0.5, 0.5, 7), rng.uniform(-0.3, 0.3, 7)
        msg = _state_msg(q[pick], v[pick], _now(node), shuffled)
        node._on_state_message(msg)
        stamp = (msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec) * 1e-9  # as the node reads it
        np.testing.assert_allclose(node.target.tracker.goal, q_target)  # model order
        # The target's approach at this state (sampled again: the same reference).
        reference = node.target.reference(JointState(q, v, stamp))
        expected = _scaled(robot, _computed_torque(robot, q, v, q_target, reference), q, v)  # model order
        reorder = [JOINTS.index(j) for j in order]
        np.testing.assert_allclose(node.publisher.torques[-1], expected[reorder], rtol=0, atol=1e-9)
        # The permutation matters for this state: the model order would not pass.
        assert np.abs(expected[reorder] - expected).max() > 1e-3
    assert len(node.publisher.torques) == 3 and node.counts.fallback_commands == 0


@pytest.mark.parametrize("serialized", [False, True], ids=["message", "cdr-bytes"])
@pytest.mark.parametrize("reversed_joints", [False, True], ids=["same-order", "reversed"])
def test_states_in_another_order_than_the_commands_are_warned_about_once(
    make_controller: Callable[..., Any], serialized: bool, reversed_joints: bool
) -> None:
    """Commands carry no names: a receiver taking them in its states' order (this package's
    simulator does) with `joints` set otherwise would apply each torque to another joint
    (a reviewer's run: −1362 rad/s² in one step). Said at the first state; nothing when the
    orders agree."""
    from rclpy.serialization import serialize_message

    node = make_controller(joints=JOINTS[::-1] if reversed_joints else JOINTS)
    receive = (
        (lambda msg: node._on_state_bytes(serialize_message(msg))) if serialized else node._on_state_message
    )
    receive(_state_msg(np.zeros(7), np.zeros(7), _now(node)))
    assert bool(node.order_warning) is reversed_joints
    if reversed_joints:
        assert "joint_7" in node.order_warning
        assert (
            "sends its commands, which carry no joint names, in its own `joints` order" in node.order_warning
        )
        assert "must take them in that order" in node.order_warning
    receive(_state_msg(np.zeros(7), np.zeros(7), _now(node)))
    assert len(node.publisher.torques) == 2  # commanded all the same


# ---------------------------------------------------------------- 2. controller error -> safe torque
def test_a_controller_error_sends_the_safe_torque_of_the_last_good_state(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    from torque_ctrl_ros.core.safety import RejectReason

    damping = np.array([1.0, 1.5, 0.4, 0.8, 0.1, 0.15, 0.05])
    node = make_controller(fallback_damping=damping.tolist())
    q1, v1 = np.full(7, 0.1), np.full(7, 0.05)
    # States 1 ms apart by their stamps: the safe command is damped for the stream's period, which
    # states stamped by the clock as sent would make as long as a loaded host is slow.
    t = _now(node)
    node._on_state_message(_state_msg(q1, v1, t))
    np.testing.assert_allclose(
        node.publisher.torques[-1],
        _scaled(robot, _computed_torque(robot, q1, v1, q1), q1, v1),
        rtol=0,
        atol=1e-9,
    )
    computed = node.controller.compute
    calls: list[JointState] = []

    def failing(state: JointState, reference: Any) -> Any:
        calls.append(state)
        raise SolverError("test: no solution")

    node.controller.compute = failing
    said: list[tuple[str, str]] = []
    node.log.error = lambda key, message, **_: said.append((key, message))
    q2, v2 = np.linspace(-0.3, 0.4, 7), np.linspace(0.2, -0.1, 7)
    for k in (1, 2):
        node._on_state_message(_state_msg(q2, v2, t + 1e-3 * k))
        assert len(calls) == k  # the state was good: the controller was asked
        assert len(node.publisher.torques) == 1 + k
        # g(q) − K_d·q̇ of the state the controller failed on (the last good one), saturated.
        safe = _clip(robot, robot.gravity(q2) - damping * v2)
        np.testing.assert_allclose(node.publisher.torques[-1], safe, rtol=0, atol=1e-9)
        assert np.abs(safe - node.publisher.torques[0]).max() > 1e-3
        assert node.counts.fallback_commands == k and node.counts.commands_published == 1 + k
        assert node.watchdog.rejected[RejectReason.CONTROLLER_ERROR] == k
        assert node.watchdog.last_reason is RejectReason.CONTROLLER_ERROR
        assert "SolverError: test: no solution" in node.watchdog.last_message
        assert node.watchdog.state.value == "fallback"
    # The first failure is the transition to fallback; the second, already in fallback, is said
    # as a failure on a good state, not as a refused state.
    assert [key for key, _ in said] == ["transition", "controller failed"]
    assert said[1][1] == "controller failed on the joint state: SolverError: test: no solution"
    # The controller works again: computed torques, the watchdog back to ok.
    node.controller.compute = computed
    node._on_state_message(_state_msg(q1, v1, t + 3e-3))
    assert node.watchdog.state.value == "ok" and node.counts.fallback_commands == 2
    np.testing.assert_allclose(
        node.publisher.torques[-1], node.publisher.torques[0], rtol=0, atol=1e-9
    )  # the held reference: q1, as before the failures


def test_an_unexpected_exception_in_the_controller_also_gets_the_safe_command(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """Not a TorqueCtrlError (a bug, a library's RuntimeError): the state is answered with the
    safe command and the node carries on, instead of the callback's exception ending it."""
    from torque_ctrl_ros.core.safety import DEFAULT_DAMPING, RejectReason

    node = make_controller()
    q, v = np.full(7, 0.1), np.full(7, 0.05)
    # States 1 ms apart by their stamps: the safe command is damped for the stream's period, and
    # stamped by the clock as sent, a slow host had made that 2 ms (2/3 of the damping sent).
    t = _now(node)
    node._on_state_message(_state_msg(q, v, t))

    def broken(state: JointState, reference: Any) -> Any:
        raise RuntimeError("test: a library failed")

    computed = node.controller.compute
    node.controller.compute = broken
    node._on_state_message(_state_msg(q, v, t + 0.001))
    np.testing.assert_allclose(
        node.publisher.torques[-1], _clip(robot, robot.gravity(q) - np.array(DEFAULT_DAMPING) * v), atol=1e-9
    )
    assert node.watchdog.last_reason is RejectReason.CONTROLLER_ERROR
    assert "unexpected RuntimeError: test: a library failed" in node.watchdog.last_message
    node.controller.compute = computed
    node._on_state_message(_state_msg(q, v, t + 0.002))
    assert node.watchdog.state.value == "ok" and len(node.publisher.torques) == 3


def test_a_controller_reset_that_raises_gets_the_safe_command(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """The controller's reset, asked for on the first state, raises (a bug): that state is answered
    with the safe command as if the compute had failed, and the node carries on. (Mutant: the
    reset called before the compute's guard, so its exception leaves the callback and ends the
    node.)"""
    from torque_ctrl_ros.core.safety import RejectReason

    node = make_controller()
    q, v = np.full(7, 0.1), np.zeros(7)

    def broken() -> None:
        raise RuntimeError("test: reset failed")

    reset = node.controller.reset
    node.controller.reset = broken
    t = _now(node)
    node._on_state_message(_state_msg(q, v, t))
    assert node.counts.fallback_commands == 1 and len(node.publisher.torques) == 1
    np.testing.assert_allclose(node.publisher.torques[-1], _clip(robot, robot.gravity(q)), atol=1e-9)
    assert node.watchdog.last_reason is RejectReason.CONTROLLER_ERROR
    assert "unexpected RuntimeError: test: reset failed" in node.watchdog.last_message
    node.controller.reset = reset
    node._on_state_message(_state_msg(q, v, t + 0.001))
    assert node.watchdog.state.value == "ok" and len(node.publisher.torques) == 2


@pytest.mark.parametrize("deferred", [False, True], ids=["timer", "after-a-state"])
def test_diagnostics_that_raise_are_an_error_status_not_the_nodes_end(
    make_controller: Callable[..., Any], deferred: bool
) -> None:
    """The controller's diagnostics raise (a bug) when /diagnostics are built, from the timer or
    deferred to the end of a state's handling: the state's command is out, an ERROR status names
    the exception, and the next states are computed on; the next report is whole again. (Mutant:
    the exception raised from the callback, ending the node.)"""
    from diagnostic_msgs.msg import DiagnosticStatus

    node = make_controller()
    q, v = np.full(7, 0.1), np.zeros(7)
    t = _now(node)
    node._on_state_message(_state_msg(q, v, t))

    def broken() -> dict[str, float]:
        raise RuntimeError("test: diagnostics failed")

    details = node.controller.diagnostics
    node.controller.diagnostics = broken
    if deferred:
        node._diagnostics_due = True
        node._on_state_message(_state_msg(q, v, t + 0.001))
        assert len(node.publisher.torques) == 2 and not node._diagnostics_due
    else:
        node._publish_diagnostics()
    status = node.diag_publisher.sent[-1].status[0]
    assert status.level == DiagnosticStatus.ERROR
    assert "RuntimeError: test: diagnostics failed" in status.message
    node.controller.diagnostics = details
    node._on_state_message(_state_msg(q, v, t + 0.002))
    node._publish_diagnostics()
    assert node.diag_publisher.sent[-1].status[0].level == DiagnosticStatus.OK
    assert node.watchdog.state.value == "ok" and node.counts.fallback_commands == 0


_Q_GOOD = np.full(7, 0.1)
_V_GOOD = np.array([0.3, -0.2, 0.4, 0.5, 0.6, -0.5, 0.5])


def test_bad_states_get_the_braking_prediction_not_a_held_torque(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """Non-finite states after a good one, at 1 kHz then with gaps of 3 and 7 ms: each safe
    command is SafeBrake's prediction from the good state, advanced under the commands sent, so
    the damping term follows the predicted motion instead of repeating −K_d·q̇ of the good state."""
    from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS, SafeBrake
    from torque_ctrl_ros.core.safety import DEFAULT_DAMPING

    node = make_controller(use_sim_time=True)
    at = sim_clock(node)
    node._on_state_message(_state_msg(_Q_GOOD, _V_GOOD, at(1000.0)))
    expected = SafeBrake(robot, np.array(DEFAULT_DAMPING), horizon=0.5)
    nan = np.full(7, np.nan)
    times = [1000.0 + 1e-3 * k for k in range(1, 41)] + [1000.043, 1000.050]
    for i, t in enumerate(times):
        node._on_state_message(_state_msg(nan, nan, at(t)))
        assert node.watchdog.state.value == "fallback"
        if i == 0:
            expected.start(_Q_GOOD, _V_GOOD, t)
        np.testing.assert_allclose(
            node.publisher.torques[-1], _clip(robot, expected.torque(t)), rtol=0, atol=1e-9
        )
    # The first answers a refused state: damping made safe to hold for FIRST_HOLD_PERIODS.
    first = _clip(
        robot, robot.gravity(_Q_GOOD) - np.array(DEFAULT_DAMPING) * (2 / FIRST_HOLD_PERIODS) * _V_GOOD
    )
    np.testing.assert_allclose(node.publisher.torques[1], first, rtol=0, atol=1e-9)
    assert np.abs(node.publisher.torques[-1] - first).max() > 0.1  # not the same torque held
    assert node.counts.fallback_commands == len(times) and expected.k == 49


@pytest.mark.parametrize("timer_ticked", [False, True], ids=["no-tick", "tick"])
@pytest.mark.parametrize("silence", [0.03, 0.3])
def test_the_first_safe_command_after_a_silence_brakes_from_the_good_state(
    make_controller: Callable[..., Any], robot: RobotModel, timer_ticked: bool, silence: float
) -> None:
    """A good state, 30 ms without any, then a non-finite one: its command is the first of the
    braking, from the good state carried over the 29 periods the driver held its command,
    ``g(q̂) − K_d·(2/50)·q̂̇``, whether or not the node's timer noted the silence first (that had
    opened the window at the tick and started the prediction there, for an arm that had got no
    safe command yet). After 0.3 s, past the 50 ms a driver holds a command, no safe command goes
    out (nothing says where the arm is), the watchdog in its fallback, saying why."""
    from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS
    from torque_ctrl_ros.core.prediction import forward_step
    from torque_ctrl_ros.core.safety import DEFAULT_DAMPING

    nan = np.full(7, np.nan)
    node = make_controller(use_sim_time=True, **{"watchdog.max_age": 0.02})
    at = sim_clock(node)
    node._on_state_message(_state_msg(_Q_GOOD, _V_GOOD, at(1000.0)))
    held = np.array(node.publisher.torques[-1])
    if timer_ticked:
        tick = silence - 0.005
        node._note_silence(at(1000.0 + tick), tick)
        assert node.watchdog.state.value == "fallback"
    node._on_state_message(_state_msg(nan, nan, at(1000.0 + silence)))
    assert node.watchdog.state.value == "fallback"
    if silence > 0.05:
        assert len(node.publisher.torques) == 1
        assert "no joint state for 300 ms before this one" in node.watchdog.last_message
        return
    q, v = _Q_GOOD.copy(), _V_GOOD.copy()
    data = robot.model.createData()
    for _ in range(round(silence / 1e-3) - 1):
        forward_step(robot, data, q, v, held, 1e-3)
    first = _clip(robot, robot.gravity(q) - np.array(DEFAULT_DAMPING) * (2 / FIRST_HOLD_PERIODS) * v)
    np.testing.assert_allclose(node.publisher.torques[-1], first, rtol=0, atol=1e-9)


def test_a_clock_gone_back_in_a_fallback_stops_the_safe_command(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """Under sim time, a fallback at 1000 s, then non-finite states from a simulator restarted
    at 5 s: not answered (the window cannot be timed on the new clock; the safe command had
    been sent for ever); the new run's first good state is controlled again."""
    node = make_controller(use_sim_time=True)
    at = sim_clock(node)
    node._on_state_message(_state_msg(_Q_GOOD, _V_GOOD, at(1000.0)))
    nan = np.full(7, np.nan)
    node._on_state_message(_state_msg(nan, nan, at(1000.001)))
    assert node.watchdog.state.value == "fallback" and len(node.publisher.torques) == 2
    for k in range(20):
        node._on_state_message(_state_msg(nan, nan, at(5.0 + 1e-3 * k)))
    assert node.watchdog.state.value == "stopped" and len(node.publisher.torques) == 2
    node._on_state_message(_state_msg(_Q_GOOD, np.zeros(7), at(5.02)))
    assert node.watchdog.state.value == "ok" and len(node.publisher.torques) == 3


def test_a_saturated_safe_command_is_counted(make_controller: Callable[..., Any], robot: RobotModel) -> None:
    """The brake hands the node its command before saturation, so a clipped safe command is
    counted and named like any other (it had been clipped unseen). Here the controller fails on
    a good state: the stream is alive, the brake damps with K_d in full."""
    node = make_controller(use_sim_time=True)
    at = sim_clock(node)
    q, fast = np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0]), np.zeros(7)
    fast[1] = 10.0  # rad/s on joint 2, arm stretched out: g − K_d·q̇ is −43 N·m, past its 39
    node._on_state_message(_state_msg(q, fast, at(1000.0)))
    before = node.counts.saturated_commands

    def fail(*_: Any) -> None:
        raise RuntimeError("test: the controller failed")

    node.controller.compute = fail
    node._on_state_message(_state_msg(q, fast, at(1000.001)))
    assert node.watchdog.state.value == "fallback" and node.counts.fallback_commands == 1
    assert node.counts.saturated_commands == before + 1 and "joint_2" in node.last_saturated
    assert abs(node.publisher.torques[-1][1]) == robot.effort_limit[1]


# ---------------------------------------------------------------- 3. robot_description
@pytest.mark.parametrize("edited", [False, True], ids=["same-urdf", "heavier-link-3"])
def test_robot_description_builds_the_robot_it_describes(
    make_controller: Callable[..., Any], tmp_path: Path, robot: RobotModel, edited: bool
) -> None:
    """The URDF text as a parameter (a user's ``params_file`` may pass it so, e.g. for an arm with
    a gripper) is the model used, over ``model_file``: the same torque as from the file, and a
    different one when the text differs."""
    import yaml

    text = URDF.read_text()
    if edited:  # link 3 (1.1636 kg, the first of two) made heavier: other torques under gravity
        text = text.replace('<mass value="1.1636"/>', '<mass value="3.0"/>', 1)
    described = RobotModel.from_urdf_string(text)
    params = tmp_path / "description.yaml"
    params.write_text(yaml.safe_dump({"controller_node": {"ros__parameters": {"robot_description": text}}}))
    node = make_controller(params, model_file=str(URDF))
    q, v = np.array([0.2, 0.6, -0.3, 1.2, 0.1, -0.5, 0.3]), np.full(7, 0.1)
    node._on_state_message(_state_msg(q, v, _now(node)))
    tau = node.publisher.torques[-1]
    np.testing.assert_allclose(
        tau, _scaled(described, _computed_torque(described, q, v, q), q, v), rtol=0, atol=1e-9
    )
    from_file = _scaled(robot, _computed_torque(robot, q, v, q), q, v)
    if edited:
        assert np.abs(tau - from_file).max() > 0.1  # the description won over model_file
    else:
        np.testing.assert_allclose(tau, from_file, rtol=0, atol=1e-9)
    assert node.robot.joint_names == robot.joint_names


# ---------------------------------------------------------------- 4. wrong joints lists
@pytest.mark.parametrize(
    ("joints", "match"),
    [
        ([*JOINTS[:6], "joint_8"], r"joints: must list every joint of the model once, got \[.*'joint_8'\]"),
        (JOINTS[:6], r"joints: must list every joint of the model once, got \[.*'joint_6'\]; model joints"),
        ([*JOINTS, "joint_1"], r"joints: duplicate names in \['joint_1'.*'joint_1'\]"),
        ([*JOINTS[:6], "joint_6"], r"joints: duplicate names in"),
    ],
    ids=["unknown-name", "one-missing", "duplicate-extra", "duplicate-instead"],
)
def test_a_wrong_joints_list_is_refused_at_start(
    make_controller: Callable[..., Any], joints: list[str], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        make_controller(joints=joints)


# ---------------------------------------------------------------- 5. saturation
def test_saturated_commands_are_clipped_and_counted(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    node = make_controller()
    q, v = np.zeros(7), np.zeros(7)
    q_target = np.array([0.0, 1.2, 0.0, -1.5, 0.0, 1.0, 0.0])
    node._on_state_message(_state_msg(q_target, v, _now(node)))  # no target: held there
    assert node.counts.saturated_commands == 0
    node._on_state_message(_state_msg(q, v, _now(node)))  # far: large accelerations asked
    raw = _computed_torque(robot, q, v, q_target)
    over = np.abs(raw) > robot.effort_limit
    assert over.any() and not over.all()  # the case this test is about
    np.testing.assert_allclose(node.publisher.torques[-1], _scaled(robot, raw, q, v), rtol=0, atol=1e-9)
    assert np.all(np.abs(node.publisher.torques[-1]) <= robot.effort_limit)
    names = tuple(j for j, o in zip(JOINTS, over, strict=True) if o)
    assert node.counts.saturated_commands == 1 and node.last_saturated == names
    # Near the target nothing saturates: counted no further, the last saturated joints kept.
    q_near = q_target - 0.01
    node._on_state_message(_state_msg(q_near, v, _now(node)))
    near = _computed_torque(robot, q_near, v, q_target)
    assert np.all(np.abs(near) < robot.effort_limit)
    np.testing.assert_allclose(node.publisher.torques[-1], near, rtol=0, atol=1e-9)
    node._on_state_message(_state_msg(q, v, _now(node)))
    assert node.counts.saturated_commands == 2 and node.counts.commands_published == 4
    node._publish_diagnostics()
    values = {kv.key: kv.value for kv in node.diag_publisher.sent[-1].status[0].values}
    assert values["saturated_commands"] == "2" and values["last_saturated_joints"] == ",".join(names)


# ---------------------------------------------------------------- 6. trajectories
T0 = 100.0  # stamp (s) of the first state: the target source is called directly with any stamps
TIMES = np.array([1.0, 2.0])
POSITIONS = np.array([[0.0, 0.2, 0.0, 0.3, 0.0, 0.0, 0.0], [0.0, 0.4, 0.0, 0.6, 0.0, 0.2, 0.0]])


def _trajectory_msg(
    positions: list[list[float]], times: list[float], velocities: list[list[float]] | None = None
) -> Any:
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    msg = JointTrajectoryMsg(joint_names=JOINTS)  # header.stamp 0: starts at the next state
    for k, (pos, at) in enumerate(zip(positions, times, strict=True)):
        sec, nanosec = divmod(round(at * 1e9), 10**9)
        point = JointTrajectoryPoint(positions=pos, time_from_start=Duration(sec=sec, nanosec=nanosec))
        if velocities is not None:
            point.velocities = velocities[k]
        msg.points.append(point)
    return msg


def _expected_trajectory(robot: RobotModel, q0: np.ndarray) -> JointTrajectory:
    """The motion the trajectory message should become: from ``q0`` at rest through POSITIONS."""
    return JointTrajectory(TIMES, POSITIONS, None, None, start=(q0, None), continuous=robot.continuous)


def _at(q: np.ndarray, t: float) -> JointState:
    return JointState(q, np.zeros(7), t)


def _running_trajectory(node: Any, q0: np.ndarray) -> Any:
    target = node.target
    target._on_trajectory(_trajectory_msg(POSITIONS.tolist(), TIMES.tolist()))
    target.reference(_at(q0, T0))
    assert target.describe() == "trajectory" and target.received == 1
    return target


def test_an_empty_trajectory_holds_the_reference_reached(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """Stopping brings the reference to rest from where the trajectory had got to, its velocity
    and acceleration carried on (stepped to rest at once, 1.125 rad/s had asked −5.75 N·m): half
    its speed times the stop time on, then held: not the measured position, not the rest of the
    trajectory."""
    node = make_controller()
    q0 = np.zeros(7)
    target = _running_trajectory(node, q0)
    expected = _expected_trajectory(robot, q0)
    ref = target.reference(_at(q0, T0 + 0.5))
    np.testing.assert_allclose(ref.q, expected.sample(0.5)[0], rtol=0, atol=1e-12)
    target._on_trajectory(_trajectory_msg([], []))
    assert target.received == 2 and target.rejected == 0
    measured = np.full(7, 0.05)  # not where the reference is
    q, v, a = expected.sample(1.2)
    assert np.abs(v).max() > 0.1
    ref = target.reference(_at(measured, T0 + 1.2))
    for got, want in ((ref.q, q), (ref.v, v), (ref.a, a)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    stop_time = target.tracker.planner.stop_time
    held = q + 0.5 * stop_time * v
    assert np.abs(held - measured).max() > 0.05 and np.abs(held - POSITIONS[-1]).max() > 0.05
    for t in (T0 + 1.2 + stop_time, T0 + 1.7, T0 + 5.0):  # past the trajectory's end too
        ref = target.reference(_at(measured, t))
        np.testing.assert_allclose(ref.q, held, rtol=0, atol=1e-12)
        assert ref.v is None or not np.any(ref.v)
        assert ref.a is None or not np.any(ref.a)
        assert target.describe() == "hold"


def test_an_empty_trajectory_after_a_joint_target_holds_where_the_arm_is(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    """A joint target 1.3 rad from the arm, then an empty trajectory (stop): the arm is held where
    its approach stands, near where it is, not driven on to the target while /diagnostics said
    "hold"."""
    node = make_controller()
    target = node.target
    goal = np.zeros(7)
    goal[1] = 1.5
    target._on_joint_target(_joint_target(goal, list(robot.joint_names)))
    measured = np.zeros(7)
    measured[1] = 0.2
    np.testing.assert_allclose(target.reference(_at(measured, T0)).q, measured)  # the approach's start
    assert target.describe() == "joint_target"
    target._on_trajectory(_trajectory_msg([], []))
    for t in (0.001, 5.0):
        ref = target.reference(_at(measured, T0 + t))
        np.testing.assert_allclose(ref.q, measured, rtol=0, atol=1e-6)
        assert target.describe() == "hold" and (ref.v is None or not np.any(ref.v))


@pytest.mark.parametrize(
    ("positions", "velocities", "match"),
    [
        ([[0.0, 0.1, 0.0, 0.1, 0.0, 0.0], [0.0] * 7], None, r"trajectory point 0: 6 positions for 7 joints"),
        ([[0.0] * 7, [0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0]], None, r"point 1: 8 positions for 7 joints"),
        ([[0.0] * 7, [0.0] * 7], [[0.0] * 7, [0.0] * 6], r"trajectory point 1: 6 velocities for 7 joints"),
        ([[0.0] * 7, [0.0] * 7], [[0.0] * 8, [0.0] * 7], r"trajectory point 0: 8 velocities for 7 joints"),
        # Velocities for some points only had all been ignored without a word.
        ([[0.0] * 7, [0.0] * 7], [[0.1] * 7, []], r"trajectory point 1: no velocities while other points"),
    ],
    ids=["6-positions", "8-positions", "6-velocities", "8-velocities", "some-velocities"],
)
def test_malformed_trajectory_points_are_refused_and_counted(
    make_controller: Callable[..., Any],
    robot: RobotModel,
    positions: list[list[float]],
    velocities: list[list[float]] | None,
    match: str,
) -> None:
    node = make_controller()
    q0 = np.zeros(7)
    target = _running_trajectory(node, q0)
    target._on_trajectory(_trajectory_msg(positions, [0.5, 3.0], velocities))
    assert target.rejected == 1 and target.received == 1
    assert re.search(match, target.last_error), target.last_error
    # The running trajectory is untouched.
    expected = _expected_trajectory(robot, q0)
    for t in (0.3, 1.5):
        ref = target.reference(_at(q0, T0 + t))
        np.testing.assert_allclose(ref.q, expected.sample(t)[0], rtol=0, atol=1e-12)
        assert target.describe() == "trajectory"
    assert target.diagnostics()["targets_rejected"] == 1


def test_a_joint_target_replaces_a_running_trajectory(
    make_controller: Callable[..., Any], robot: RobotModel
) -> None:
    node = make_controller()
    q0 = np.zeros(7)
    target = _running_trajectory(node, q0)
    np.testing.assert_allclose(
        target.reference(_at(q0, T0 + 0.5)).q, _expected_trajectory(robot, q0).sample(0.5)[0], atol=1e-12
    )
    q_target = np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7])
    target._on_joint_target(_joint_target(q_target))
    assert target.received == 2
    # Taken over where the trajectory stands, in position, velocity and acceleration (a zero start
    # acceleration had stepped the feed-forward torque).
    ref = target.reference(_at(q0, T0 + 0.6))
    for got, want in zip((ref.q, ref.v, ref.a), _expected_trajectory(robot, q0).sample(0.6), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    for t in (T0 + 5.0, T0 + 10.0):  # then held at the target, at rest
        ref = target.reference(_at(q0, t))
        np.testing.assert_allclose(ref.q, q_target, rtol=0, atol=1e-12)
        assert ref.v is None or not np.any(ref.v)
        assert ref.a is None or not np.any(ref.a)
        assert target.describe() == "joint_target"
