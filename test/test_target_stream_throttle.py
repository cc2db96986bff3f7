"""A stream of targets faster than ``MIN_TAKE_PERIOD`` (``core/target_tracking.py``, no ROS): each
tracker plans the newest pending frame or joint target at most once a period of the states'
stamps; a lone target, a stop and a trajectory take effect at the next state, and a reset lets
the next target through at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from ros_helpers import shipped_parameters
from test_target_tracking import HOME_Q, TOOL

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import (
    AchdRnea,
    ComputedTorque,
    ComputedTorqueConfig,
    PoseReference,
    create_controller,
)
from torque_ctrl_ros.core.target_tracking import (
    MIN_TAKE_PERIOD,
    JointMode,
    JointTargetTracker,
    PoseTargetTracker,
    TaskTargetTracker,
    TrajectoryPoints,
)
from torque_ctrl_ros.nodes.params import controller_node_config

DT = 1e-3  # s, the states' period: a stream at the control rate
PERIOD_STATES = round(MIN_TAKE_PERIOD / DT)  # states per MIN_TAKE_PERIOD (10)


def _state(k: int, t0: float = 0.0) -> JointState:
    """State ``k`` of a 1 kHz stream from ``t0`` (s), the arm at rest at home (stamps k·1e-3 s, as
    a node reads them: not multiples of the period in floating point)."""
    return JointState(HOME_Q, np.zeros(7), t0 + k * DT)


class Stream:
    """A tracker fed a new target every state, the goals its planner was asked for recorded as
    ``(stamp s, target index)``."""

    def __init__(self, kind: str, robot: RobotModel) -> None:
        self.kind = kind
        self.planned: list[tuple[float, int]] = []
        self.tracker: Any
        self.controller: Any
        self._submit: Callable[[Any], None]
        if kind == "joint":
            self.controller = ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
            self.tracker = JointTargetTracker(ctrl, refuse=self._unexpected)
            self._spy(self.tracker.planner, goal_arg=1)
            self._submit = self.tracker.submit_target
        elif kind == "pose":
            self.controller = AchdRnea(robot)
            self.tracker = PoseTargetTracker(self.controller, refuse=self._unexpected)
            self._spy(self.tracker.planner, goal_arg=2)
            self._submit = self.tracker.submit
        else:
            params = shipped_parameters("controller_node") | {"controller": "qpid"}
            self.controller = create_controller(
                "qpid", robot, controller_node_config(params).controller_params
            )
            self.tracker = TaskTargetTracker(self.controller, refuse=self._unexpected)
            self._spy(self.tracker._pose_planners["tool"], goal_arg=2)
            self._submit = lambda target: self.tracker.submit("tool", target)
        self.home = robot.frame_placement(HOME_Q, TOOL)
        self._stamp = 0.0

    @staticmethod
    def _unexpected(message: str) -> None:
        raise AssertionError(f"unexpected refusal: {message}")

    def _spy(self, planner: Any, goal_arg: int) -> None:
        """Record every ``planner.plan`` call's goal (its index, the 0.1 mm or 0.1 mrad offset)."""
        plan = planner.plan

        def spied(*args: Any) -> Any:
            goal = args[goal_arg]
            offset = (
                goal[0] - HOME_Q[0] if self.kind == "joint" else goal.position[1] - self.home.translation[1]
            )
            self.planned.append((self._stamp, round(float(offset) * 1e4)))
            return plan(*args)

        planner.plan = spied

    def target(self, index: int) -> Any:
        """Target ``index``: ``index`` × 0.1 mrad on joint_1, or × 0.1 mm in y from the home tool pose."""
        if self.kind == "joint":
            return HOME_Q + np.array([index * 1e-4, 0, 0, 0, 0, 0, 0])
        return PoseReference(self.home.translation + np.array([0.0, index * 1e-4, 0.0]), self.home.rotation)

    def submit(self, index: int) -> None:
        self._submit(self.target(index))

    def reference(self, state: JointState) -> Any:
        self._stamp = state.stamp
        return self.tracker.reference(state)


KINDS = ["joint", "pose", "qp"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_1khz_stream_is_planned_once_a_period_the_newest_target_each_time(
    kind: str, robot: RobotModel
) -> None:
    """A new target before every state for 45 states: planned at states 0, 10, 20, 30, 40 (not
    45 times), each time the one submitted just before; the last, held back when the stream
    stops, is taken once its period is over."""
    stream = Stream(kind, robot)
    for k in range(45):
        stream.submit(k)
        stream.reference(_state(k))
    taken = [0, 10, 20, 30, 40]
    assert [index for _, index in stream.planned] == taken
    assert [stamp for stamp, _ in stream.planned] == [k * DT for k in taken]
    for k in range(45, 50):  # the stream stopped; target 44 waits for its period
        stream.reference(_state(k))
    assert [index for _, index in stream.planned] == taken
    stream.reference(_state(50))
    assert stream.planned[-1] == (50 * DT, 44)


@pytest.mark.parametrize("kind", KINDS)
def test_a_lone_target_is_taken_at_the_next_state(kind: str, robot: RobotModel) -> None:
    """A target that is not part of a fast stream is planned at the state after it: the first one,
    and one a period or more after the last one planned."""
    stream = Stream(kind, robot)
    stream.reference(_state(0))
    stream.submit(1)
    stream.reference(_state(3))
    stream.submit(2)
    stream.reference(_state(3 + PERIOD_STATES))
    assert stream.planned == [(3 * DT, 1), ((3 + PERIOD_STATES) * DT, 2)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("clock_reset", [False, True])
def test_after_a_reset_the_next_target_is_taken_at_once(
    kind: str, clock_reset: bool, robot: RobotModel
) -> None:
    """A target planned, a reset (a stop, or the clock going back 5 ms: a simulator restart), then
    a target at the next state: planned there, however soon after the last one."""
    stream = Stream(kind, robot)
    stream.submit(1)
    stream.reference(_state(5))
    stream.tracker.reset(clock_reset=clock_reset)
    stream.submit(2)
    after = _state(0) if clock_reset else _state(6)
    stream.reference(after)
    assert stream.planned == [(5 * DT, 1), (after.stamp, 2)]


def test_a_stop_and_a_trajectory_are_not_held_back_by_a_stream(robot: RobotModel) -> None:
    """Joint targets planned every state until a stop: the stop replaces the pending target and
    takes effect at the next state; a trajectory after it too (neither waits for the period)."""
    stream = Stream("joint", robot)
    tracker: JointTargetTracker = stream.tracker
    stream.submit(1)
    stream.reference(_state(0))
    stream.submit(2)  # held back: within the period
    stream.reference(_state(1))
    assert tracker.pending is not None and [i for _, i in stream.planned] == [1]
    tracker.submit_stop()
    stream.reference(_state(2))
    assert tracker.mode in (JointMode.STOPPING, JointMode.HOLD) and tracker.pending is None
    goal = HOME_Q + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0])
    tracker.submit_trajectory(TrajectoryPoints(np.array([0.5]), goal[None, :], None, None), 0.0, 3 * DT)
    stream.reference(_state(3))
    assert tracker.mode is JointMode.TRAJECTORY and tracker.pending is None
    assert [i for _, i in stream.planned] == [1]  # target 2, replaced by the stop, never planned


def test_each_qp_task_has_its_own_period(robot: RobotModel) -> None:
    """A posture target submitted while the tool's stream is held back is planned at the next
    state: the period is counted per task."""
    stream = Stream("qp", robot)
    tracker: TaskTargetTracker = stream.tracker
    stream.submit(1)
    stream.reference(_state(0))
    stream.submit(2)  # the tool's: held back
    tracker.submit_posture(HOME_Q + np.array([0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0]))
    stream.reference(_state(1))
    assert "posture" in tracker.joint_moves and set(tracker.pending) == {"tool"}


def _step_both(inside: Stream, after: Stream, k: int, failed: bool = False) -> None:
    """State ``k`` for a tracker planning inside ``reference`` and one planning after the command
    (``reference(state, plan=False)``, then ``take_due``, as the node does): nothing is planned
    inside the latter's ``reference``, and their torques are the same (to 1e-9 N·m). ``failed``:
    the controller fails on the state (no command: the node plans nothing after it)."""
    state = _state(k)
    expected = inside.reference(state)
    after._stamp = state.stamp
    planned_before = len(after.planned)
    got = after.tracker.reference(state, plan=False)
    assert len(after.planned) == planned_before  # nothing planned inside
    if failed:
        return
    after.tracker.take_due(state)
    tau = after.controller.compute(state, got).tau
    np.testing.assert_allclose(tau, inside.controller.compute(state, expected).tau, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_a_target_planned_after_the_command_gives_the_same_references(kind: str, robot: RobotModel) -> None:
    """The node plans a target once its command is out: the approach still starts at that state,
    from the reference given there, so every reference is the one planning inside ``reference``
    gives. Targets at states 0, 3, 4 (a stream) and 30."""
    inside, after = Stream(kind, robot), Stream(kind, robot)
    submitted = {0: 1, 3: 2, 4: 3, 30: 4}
    for k in range(400):
        if k in submitted:
            inside.submit(submitted[k])
            after.submit(submitted[k])
        _step_both(inside, after, k)
    assert after.planned == inside.planned
    assert [index for _, index in after.planned] == [1, 3, 4]  # 3 replaced 2 within the period


@pytest.mark.parametrize("kind", KINDS)
def test_a_target_due_on_a_state_the_controller_fails_on_gives_the_same_references(
    kind: str, robot: RobotModel
) -> None:
    """The controller fails on the state a target is due at (the safe torque answers it), and
    control resumes at the next, the motion paused for the state between. Planned inside the
    reference the target was taken at the failed state; after the command, at the resumed one,
    from the paused reference: the same approach, the same torques from there on."""
    inside, after = Stream(kind, robot), Stream(kind, robot)
    inside.submit(1)
    after.submit(1)
    for k in range(60):
        _step_both(inside, after, k)
    inside.submit(2)
    after.submit(2)
    _step_both(inside, after, 60, failed=True)
    for stream in (inside, after):
        stream.tracker.pause(_state(60).stamp, _state(61).stamp)
    for k in range(61, 300):
        _step_both(inside, after, k)
    assert [index for _, index in after.planned] == [1, 2] == [index for _, index in inside.planned]


def test_a_failing_plan_keeps_what_was_taken_before_it(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tasks due at one state, the second's plan raising: the first's target, taken into the
    mapping, stays there (the node logs the exception and goes on)."""
    tracker: TaskTargetTracker = Stream("qp", robot).tracker
    tracker.reference(_state(0))
    tracker.submit_posture(HOME_Q)
    tracker.submit("tool", tracker.poses["tool"])
    first, second = list(tracker.pending)

    def take(name: str, target: Any, state: JointState, reference: dict[str, Any]) -> None:
        if name == second:
            raise np.linalg.LinAlgError("SVD did not converge")
        reference[name] = "taken"

    monkeypatch.setattr(tracker, "_take", take)
    with pytest.raises(np.linalg.LinAlgError):
        tracker.take_due(_state(1))
    assert tracker.reference(_state(2), plan=False)[first] == "taken"
