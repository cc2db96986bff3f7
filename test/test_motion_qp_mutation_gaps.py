"""Behaviours of the resume logic, the QP controllers' soft twin, the approaches, the trajectories'
acceleration bounds, the pose intake and the QP task targets that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.core.resume` (when a fallback window ends by the stamps, what period a
slowing stream is learnt at), :mod:`torque_ctrl_ros.core.controllers.qpid` (extra barriers and the
soft twin's cold start), :mod:`torque_ctrl_ros.core.approach` (the approaches' shortest time, peak
acceleration and monotone stop), :mod:`torque_ctrl_ros.core.trajectory` (the Gen3's acceleration
bounds), :mod:`torque_ctrl_ros.nodes.targets` (the unused half of a pose message) and
:mod:`torque_ctrl_ros.core.target_tracking` (what a QP task's approach feeds to the axes it does
not track). All pure core but the pose-message test, which needs rclpy's message types.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy
from test_approach_acceleration import HOME_Q, TOOL
from test_qpid import HOME, _params
from test_resume import CONFIG, DT, N, _plain_difference
from test_ros_cartesian_and_qp import pose_msg

from torque_ctrl_ros.core import JointState, RobotModel, TargetError
from torque_ctrl_ros.core.approach import (
    QUINTIC_PEAK_ACCELERATION,
    _monotone_stop_time,
    _peak_acceleration,
    approach_times,
)
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.qp.constraints import LinearBarrier
from torque_ctrl_ros.core.qp.tasks import CartesianTarget
from torque_ctrl_ros.core.resume import ResumeTracker, StreamPeriod
from torque_ctrl_ros.core.target_tracking import TaskTargetTracker
from torque_ctrl_ros.core.trajectory import JointTrajectory, acceleration_limits
from torque_ctrl_ros.nodes.targets import check_unused_half


# ------------------------------------------------------------------ resume.py
def test_a_frozen_clock_window_after_the_clock_went_back_ends_after_its_duration_of_stamps() -> None:
    """A fallback window opened at a clock reading of 10 s, the clock then back at 5 s and frozen
    there (``/clock`` restarted earlier and died) while the refused states' stamps advance 1 ms
    each: the clock spent nothing of the window, so the stamps end it after ``fallback_duration``
    (0.5 s: the 501st state), not after that plus the 5 s the clock went back. (Mutant:
    ``clock_spent = now - self._window_opened_at`` without ``max(0.0, …)`` in
    ``ResumeTracker.note_fallback``: 5 501 states.)"""
    tracker = ResumeTracker(N, CONFIG, _plain_difference)
    assert not tracker.note_fallback(100.0, now=10.0)
    ended = next((k for k in range(1, 10_001) if tracker.note_fallback(100.0 + k * DT, now=5.0)), None)
    assert ended is not None
    assert ended == pytest.approx(CONFIG.fallback_duration / DT + 1, abs=1)


def test_a_slowing_stream_learns_the_longer_of_its_two_silent_steps() -> None:
    """A 1 kHz stream slowing down, its next two steps 60 then 50 ms (each a silence then): both
    are learnt once the second came, so the period is the longer, 60 ms, and a step of 85 ms
    (within 1.5 periods, 90 ms) is no silence. (Mutant: ``self._steps.append(step)`` for
    ``self._steps.extend((self._silent_step, step))`` in ``StreamPeriod.computed``: only the 50 ms
    step is learnt, silence after 75 ms.)"""
    stream = StreamPeriod()
    stamp = 0.0
    stream.computed(stamp, True)
    for _ in range(12):
        stamp += 0.001
        stream.computed(stamp, True, silent=0.001 > stream.silence_after(CONFIG))
    assert stream.period == pytest.approx(0.001)
    for step in (0.060, 0.050):
        stamp += step
        assert step > stream.silence_after(CONFIG)
        stream.computed(stamp, True, silent=True)
    assert stream.period == pytest.approx(0.060)
    assert stream.silence_after(CONFIG) == pytest.approx(0.090)
    assert not 0.085 > stream.silence_after(CONFIG)


# ------------------------------------------------------------------ controllers/qpid.py
def test_an_extra_barrier_binds_a_controller_with_a_soft_twin_and_its_twin(robot: RobotModel) -> None:
    """A hard extra row ``q̈₁ ≥ 5`` rad/s² on a qpid with hard joint-limit rows (so it has a soft
    twin, built with the extra barriers too): holding at home, the controller itself meets the
    row (``q̈₁`` = 5), and so does its twin, each with rows of its own (a barrier writes its rows
    into the arrays of the controller that bound it). (Mutant: ``extra = list(extra_barriers)``
    for the ``copy.deepcopy`` in ``_QPController.__init__``: the twin, bound last, takes the
    shared barrier's rows, and the controller's own row reads 0: ``q̈₁`` = 0.)"""
    row = np.zeros((1, robot.n))
    row[0, 0] = 1.0
    config = QPID.from_params(robot, _params(**{"joint_position_limit.soft": False})).config
    controller = QPID(robot, config, extra_barriers=[LinearBarrier("push", row, np.array([5.0]))])
    twin = controller.soft_twin
    assert twin is not None
    state = JointState(HOME, np.zeros(robot.n))
    _, info = controller.torque(HOME, np.zeros(robot.n), controller.hold_reference(state))
    assert info["fallback"] == 0.0 and info.get("soft_retry", 0.0) == 0.0
    assert controller.joint_acceleration[0] == pytest.approx(5.0, abs=1e-4)
    _, info = twin.torque(HOME, np.zeros(robot.n), twin.hold_reference(state))
    assert info["fallback"] == 0.0
    assert twin.joint_acceleration[0] == pytest.approx(5.0, abs=1e-4)


def _past_joint_2(robot: RobotModel, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """joint_2 0.5 rad past its upper (``sign`` +1) or lower (−1) limit, moving on outward at its
    velocity limit, the other joints at home: no torque within the limits holds the hard
    joint-limit row there (level 0 fails)."""
    q = HOME.copy()
    q[1] = (robot.position_upper[1] if sign > 0 else robot.position_lower[1]) + sign * 0.5
    v = np.zeros(robot.n)
    v[1] = sign * robot.velocity_limit[1]
    return q, v


def test_a_soft_retry_after_steps_the_twin_did_not_take_starts_its_gradient_filter_cold(
    robot: RobotModel,
) -> None:
    """A qpid with hard self-collision and joint-limit rows retries a failed step on its soft twin,
    whose self-collision gradient filter runs on only while the twin steps at every state: a retry
    at one state (joint_2 past its upper limit), a hard step at home, then a retry at another
    (past its lower limit) starts the twin cold, its filtered gradient the raw one there; a retry
    right after a retry filters it. (Mutant: ``if False:`` for ``if not self._twin_current:`` before
    ``twin.reset()`` in ``_soft_retry``: the second retry filters on from the first state's
    gradient, 0.15 off.)"""
    params = _params(**{"self_collision.soft": False, "joint_position_limit.soft": False})
    controller = QPID.from_params(robot, params)
    twin = controller.soft_twin
    assert twin is not None and twin.collision_barrier is not None
    barrier = twin.collision_barrier

    def step(q: np.ndarray, v: np.ndarray) -> dict[str, float]:
        return controller.torque(q, v, controller.hold_reference(JointState(q, v)))[1]

    assert step(*_past_joint_2(robot, 1.0)).get("soft_retry") == 1.0
    assert step(HOME, np.zeros(robot.n)).get("soft_retry", 0.0) == 0.0
    assert step(*_past_joint_2(robot, -1.0)).get("soft_retry") == 1.0
    np.testing.assert_array_equal(barrier.gradients, barrier.collision.gradients)
    # Retried again at the next state, the twin is warm: its gradient is filtered.
    q, v = _past_joint_2(robot, 1.0)
    assert step(q, v).get("soft_retry") == 1.0
    assert np.abs(barrier.gradients - barrier.collision.gradients).max() > 0.05


# ------------------------------------------------------------------ approach.py
def test_the_peak_acceleration_of_a_quintic_counts_its_start() -> None:
    """``_peak_acceleration`` of 300 seeded random quintics from ``(0, v0, a0)`` to rest at
    ``distance`` over 2 s matches the largest ``|q̈|`` of the same quintics sampled densely
    (:class:`JointTrajectory`), also where that is the start's own acceleration. (Mutant: ``return
    at_roots`` without ``np.maximum(…, np.abs(a0))`` in ``_peak_acceleration``: 36 of the 300 under,
    by up to 98 %.)"""
    rng = np.random.default_rng(7)
    n, duration = 300, 2.0
    distance, v0, a0 = (rng.normal(size=n) for _ in range(3))
    rest = np.zeros(n)
    trajectory = JointTrajectory([0.0, duration], [rest, distance], [v0, rest], [a0, rest])
    sampled = np.abs([trajectory.sample(t)[2] for t in np.linspace(0.0, duration, 4001)]).max(axis=0)
    np.testing.assert_allclose(trajectory.sample(0.0)[2], a0, rtol=1e-12, atol=1e-12)
    peak = _peak_acceleration(distance[None, :], v0[None, :], a0[None, :], np.full((1, 1), duration))[0]
    np.testing.assert_allclose(peak, sampled, rtol=1e-5)
    assert np.all(peak >= sampled * (1.0 - 1e-12))


def test_the_shortest_approach_is_timed_by_the_smallest_kp() -> None:
    """``approach_times`` with ``kp`` [100, 400] (``kd`` [20, 40]): the shortest approach asks at
    most ``kp·|Δx|`` of the axis with the least ``kp``, ``√(10/√3/100)`` = 0.240 s, whatever the
    axes' order, and the stop is no shorter. (Mutant: ``np.max(kp)`` for ``np.min(kp)``: 0.120 s.)"""
    expected = math.sqrt(QUINTIC_PEAK_ACCELERATION / 100.0)
    assert expected == pytest.approx(0.2403, abs=1e-4)
    for kp, kd in (([100.0, 400.0], [20.0, 40.0]), ([400.0, 100.0], [40.0, 20.0])):
        shortest, stop = approach_times(np.array(kp), np.array(kd))
        assert shortest == pytest.approx(expected, rel=1e-12)
        assert stop == pytest.approx(expected, rel=1e-12)  # 15/8/20 = 0.094 s is shorter


def test_the_monotone_stop_time_leaves_out_idle_joints() -> None:
    """``_monotone_stop_time`` bounds the stop by the joints moving toward a point ahead: with a
    second joint at rest and no distance to go, 2.5·0.1/1 = 0.25 s; with no joint moving, none
    (``inf``). (Mutant: ``ahead = distance * v0 >= 0.0``: the idle joint's ``0/0`` makes it NaN.)"""
    assert _monotone_stop_time(np.array([0.1, 0.0]), np.array([1.0, 0.0])) == pytest.approx(0.25)
    assert _monotone_stop_time(np.array([0.1, -0.2]), np.array([1.0, 0.5])) == pytest.approx(0.25)
    assert _monotone_stop_time(np.zeros(2), np.zeros(2)) == math.inf


# ------------------------------------------------------------------ trajectory.py
def test_the_gen3_acceleration_limits_are_those_its_docstring_states(robot: RobotModel) -> None:
    """``acceleration_limits`` of the Gen3, per joint ``i`` ``1 / max over q, j of |M_ji|/τ_maxⱼ``
    (a column of the mass matrix over the effort limits): 25.9, 25.7, 92, 70, 518, 459, 8001
    rad/s², as its docstring states. (Mutant: ``.max(axis=1)`` for ``.max(axis=0)``: per row.)"""
    expected = [25.9, 25.7, 92.0, 70.0, 518.0, 459.0, 8001.0]
    np.testing.assert_allclose(acceleration_limits(robot), expected, rtol=1e-2)


# ------------------------------------------------------------------ nodes/targets.py
@requires_rclpy
@pytest.mark.parametrize("component", range(4), ids=["x", "y", "z", "w"])
def test_a_nan_anywhere_in_an_unused_quaternion_is_refused(component: int) -> None:
    """A position task's pose message with a NaN in its (unused) orientation is refused, whichever
    of the quaternion's x, y, z or w holds it: the sender is broken. (Mutant: ``check_unused_half``
    checking ``(o.x, o.y, o.z)`` only: a NaN w is taken.)"""
    quaternion = [0.0, 0.0, 0.0, 1.0]
    quaternion[component] = math.nan
    with pytest.raises(TargetError, match=r"t: non-finite orientation .*nan"):
        check_unused_half(pose_msg((0.4, 0.0, 0.3), quaternion), "orientation", "t")


# ------------------------------------------------------------------ target_tracking.py
def test_a_frame_task_axis_with_kp_0_gets_no_reference_velocity_or_acceleration(robot: RobotModel) -> None:
    """A position task with ``kp`` [100, 100, 0] (weight 1 on every axis) tracks x and y only: an
    approach to a target 0.1 m on in x and in z is planned with the gains of x and y, and the
    reference it feeds moves z's position but asks no velocity or acceleration of z (fed there,
    they would drive an axis its gains leave free). (Mutants: ``_tracked`` without ``& (task.kp >
    0.0)``: the planner times z with ``kp`` 0, an infinite approach, and taking the target raises
    a ConfigError; and ``twist`` fed without ``* feed`` in ``TaskTargetTracker.reference``:
    z's reference velocity is x's.)"""
    params: dict[str, Any] = {
        "tasks": ["tool", "posture"],
        "tool": {"type": "position", "frame": TOOL, "kp": [100.0, 100.0, 0.0], "kd": [20.0, 20.0, 1.0]},
        "posture": {"type": "posture", "kp": 10.0, "weight": 1e-3},
    }
    errors: list[str] = []
    tracker = TaskTargetTracker(create_controller("qpid", robot, params), refuse=errors.append)  # type: ignore[arg-type]
    start = tracker.reference(JointState(HOME_Q, np.zeros(7), 1.0))["tool"]
    tracker.submit("tool", start + np.array([0.1, 0.0, 0.1]))
    tracker.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    assert errors == [] and "tool" in tracker.pose_moves
    duration = tracker.pose_moves["tool"].move.duration
    for t in np.linspace(1.0, 1.0 + duration, 12)[1:-1]:
        target = tracker.reference(JointState(HOME_Q, np.zeros(7), float(t)))["tool"]
        assert isinstance(target, CartesianTarget)
        assert target.velocity is not None and target.acceleration is not None
        assert target.velocity[0] > 1e-3
        assert target.velocity[2] == 0.0 and target.acceleration[2] == 0.0
        moved = target.pose.translation - start
        assert moved[2] == pytest.approx(moved[0], abs=1e-9)  # z's position moves all the same
