"""Behaviours of the target trackers and the reach bound that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/target_tracking.py`` (what reference reaches the controller: when a target is taken, what
a pause or a reset does to it, what a move starts from) and ``core/reach.py``. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from test_target_tracking import HOME_Q, _at_rest, _joint_tracker, _points, _pose_tracker, _qp_tracker

from torque_ctrl_ros.core import RobotModel, TargetError
from torque_ctrl_ros.core.controllers import PoseReference
from torque_ctrl_ros.core.reach import Reach
from torque_ctrl_ros.core.target_tracking import TaskTargetTracker

JOINT_1 = np.eye(7)[0]  # a unit move on joint_1 (rad)


def _posture_approach(robot: RobotModel, move: float) -> tuple[TaskTargetTracker, list[str]]:
    """qpid's tracker with a posture target ``move`` rad along joint_1 from home planned at the
    state stamp 1.0 s (the arm at rest at home), and the refusals it reports."""
    tracker, errors = _qp_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_posture(HOME_Q + move * JOINT_1)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    return tracker, errors


# ------------------------------------------------------------------ the plan throttle
def test_a_target_after_the_clock_went_back_is_planned_at_once(robot: RobotModel) -> None:
    """A pose target planned at the state stamp 5.0 s, then the stamps go back to 1.0 s with no
    reset: the next target is planned at once, not held back until the clock gets to 5.01 s
    again (for as long as the clock took to come back). (Mutant: ``_PlanPacer.may_plan`` drops
    its ``0.0 <=``, so a stamp before the last plan counts as within the period.)"""
    tracker, errors = _pose_tracker(robot)
    start = tracker.reference(_at_rest(HOME_Q, 5.0))
    tracker.submit(PoseReference(start.position + np.array([0.0, 0.05, 0.0]), start.rotation))
    tracker.reference(_at_rest(HOME_Q, 5.0))
    goal = PoseReference(start.position + np.array([0.0, 0.0, 0.05]), start.rotation)
    tracker.submit(goal)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    assert tracker.pending is None and tracker.goal is goal and errors == []


def test_posture_targets_are_planned_at_most_once_a_period(robot: RobotModel) -> None:
    """A posture target planned at 1.000 s, another at 1.001 s: the second waits, pending, for
    the period (as the tool's targets do), and is planned at 1.010 s. (Mutant:
    ``_take_joint_target`` no longer calls ``self._pacers[name].planned``, so a 1 kHz posture
    stream is planned every state.)"""
    tracker, errors = _posture_approach(robot, 0.1)
    second = HOME_Q + 0.2 * JOINT_1
    tracker.submit_posture(second)
    tracker.reference(_at_rest(HOME_Q, 1.001))
    assert tracker.joint_moves["posture"].t0 == 1.0 and list(tracker.pending) == ["posture"]
    assert tracker.pending["posture"] is second
    tracker.reference(_at_rest(HOME_Q, 1.01))
    assert tracker.joint_moves["posture"].t0 == 1.01 and tracker.goals["posture"] is second
    assert errors == []


def test_a_target_for_the_posture_task_by_name_is_refused(robot: RobotModel) -> None:
    """``submit`` takes frame tasks only: a target for the posture task by its name is refused,
    naming the frame tasks (joint targets go through ``submit_posture``). (Mutant: ``submit``
    checks ``task not in self.kinds``, which takes any task, so a 3-vector would be planned as a
    posture target.)"""
    tracker, _ = _qp_tracker(robot)
    with pytest.raises(TargetError, match=r"no frame task 'posture'; the frame tasks are \['tool'\]"):
        tracker.submit("posture", np.zeros(3))
    assert not tracker.pending


# ------------------------------------------------------------------ joint trajectories
def test_a_pause_leaves_a_trajectory_due_at_the_next_state_as_it_is(robot: RobotModel) -> None:
    """A trajectory with stamp 0 (start at the next state) received during a fallback from 5.0 to
    5.4 s is not held up (``pause`` returns ``False``) and runs from the resuming state as
    given. (Mutant: ``pause`` shifts pending trajectories with ``0.0 <= pending.stamp``, which
    gives this one the stamp 0.4 s: 5 s late at 5.401 s, it is refused as ended.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 5.0))
    tracker.submit_trajectory(_points([(1.0, HOME_Q + 0.2 * JOINT_1)]), 0.0, 5.2)
    assert not tracker.pause(5.0, 5.4)
    tracker.reference(_at_rest(HOME_Q, 5.401))
    assert errors == [] and tracker.describe() == "trajectory"
    assert tracker.active is not None and tracker.active.t0 == 5.401
    assert tracker.reference(_at_rest(HOME_Q, 6.401)).q[0] == pytest.approx(HOME_Q[0] + 0.2)


def test_a_reset_drops_a_trajectory_stamped_at_the_last_state_seen(robot: RobotModel) -> None:
    """A trajectory stamped exactly at the last state's stamp (a sender stamping ``now`` in
    lockstep) is due at the next state: a stop drops it with a warning and the arm holds where
    it is; kept, it would set the resuming arm moving. (Mutant: ``reset`` keeps a pending
    trajectory with ``pending.stamp >= self._last_stamp``.)"""
    warnings: list[str] = []
    tracker, errors = _joint_tracker(robot, warnings)
    tracker.reference(_at_rest(HOME_Q, 2.0))
    tracker.submit_trajectory(_points([(1.0, HOME_Q + 0.2 * JOINT_1)]), 2.0, 2.0)
    tracker.reset()
    assert tracker.pending is None and errors == []
    assert len(warnings) == 1 and warnings[0].startswith("trajectory received while")
    np.testing.assert_array_equal(tracker.reference(_at_rest(HOME_Q, 2.5)).q, HOME_Q)
    assert tracker.describe() == "hold"


def test_a_lone_point_at_time_zero_is_refused_from_a_reference_accelerating(robot: RobotModel) -> None:
    """A trajectory of one point at time 0, where the reference stands, 4 ms into a trajectory
    starting off on joint_1: the reference's velocity (0.02 rad/s) is within the velocity step
    tolerance (0.05) but its acceleration (6.5 rad/s²) is not (1 rad/s²): stopped there at once,
    the torque would step by ``M·6.5``; refused, naming the acceleration. (Mutant:
    ``_check_first_steps`` sets ``given_a = None`` for a lone point too, so only the velocity is
    compared.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_trajectory(_points([(0.3, HOME_Q + 0.1 * JOINT_1)]), 0.0, 1.0)
    tracker.reference(_at_rest(HOME_Q, 1.001))
    moving = tracker.reference(_at_rest(HOME_Q, 1.004))
    assert moving.v is not None and moving.a is not None
    assert abs(moving.v[0]) < tracker.velocity_step_tolerance[0]
    assert abs(moving.a[0]) > 5.0 * tracker.acceleration_step_tolerance[0]
    tracker.submit_trajectory(_points([(0.0, moving.q)]), 0.0, 1.004)
    tracker.reference(_at_rest(HOME_Q, 1.004))
    assert len(errors) == 1 and "rad/s² (at most 1 rad/s² apart" in errors[0], errors
    assert tracker.active is not None and tracker.active.move.duration > 0.2  # the first runs on


def test_a_late_trajectory_refused_names_the_time_in_its_own_timeline(robot: RobotModel) -> None:
    """A trajectory stamped 50 ms before the state it takes effect at, its first point 0.3 rad
    away at 0.1 s: its points keep their times, so the start is reached at 0.05 s of the message's
    ``time_from_start`` and the first segment, 50 ms long, is refused there, the refusal naming
    0.0500 s (the sender's timeline), not 0.0000 s. (Mutant: ``_activate_trajectory`` checks
    with ``offset=0.0``, reporting times from the state instead.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 10.0))
    far = HOME_Q + 0.3 * JOINT_1
    tracker.submit_trajectory(_points([(0.1, far), (1.1, far)]), 9.95, 10.0)
    tracker.reference(_at_rest(HOME_Q, 10.0))
    assert len(errors) == 1 and "joint_1 at 720.00 rad/s² at 0.0500 s (time_from_start)" in errors[0], errors
    assert tracker.describe() == "hold"


# ------------------------------------------------------------------ what a move starts from
def test_a_pose_target_starts_from_the_held_reference_not_from_the_arm(robot: RobotModel) -> None:
    """The tool held at its home pose, the arm sagged 0.04 rad on joint_2 (a load the model
    lacks): a new pose target's approach starts where the held reference is, so the reference
    does not jump to the sagged tool (about 2 cm). (Mutant: ``PoseTargetTracker.current``
    returns ``hold_reference(state)``, the arm's pose, whenever no move is under way.)"""
    tracker, errors = _pose_tracker(robot)
    held = tracker.reference(_at_rest(HOME_Q, 1.0))
    sagged = HOME_Q + 0.04 * np.eye(7)[1]
    assert (
        np.linalg.norm(robot.frame_placement(sagged, "end_effector_link").translation - held.position) > 0.01
    )
    tracker.submit(PoseReference(held.position + np.array([0.0, 0.05, 0.0]), held.rotation))
    first = tracker.reference(_at_rest(sagged, 1.001))
    assert errors == [] and tracker.active is not None
    np.testing.assert_allclose(first.position, held.position, atol=1e-12)
    np.testing.assert_allclose(first.rotation, held.rotation, atol=1e-12)


def test_a_new_posture_target_mid_approach_goes_on_at_the_reference_velocity(robot: RobotModel) -> None:
    """A posture approach half way (0.7 rad/s on joint_1) given a farther target: the new approach
    starts where and as fast as the reference moved, so the torque does not step. (Mutant:
    ``_take_joint_target`` starts from ``moving.sample(...)[0]`` at rest.)"""
    tracker, errors = _posture_approach(robot, 0.4)
    half = 1.0 + tracker.joint_moves["posture"].move.duration / 2
    before = tracker.reference(_at_rest(HOME_Q, half))["posture"]
    assert before.v[0] > 0.5
    tracker.submit_posture(HOME_Q + 0.6 * JOINT_1)
    after = tracker.reference(_at_rest(HOME_Q, half))["posture"]
    assert tracker.joint_moves["posture"].t0 == half and errors == []
    np.testing.assert_allclose(after.q, before.q, atol=1e-12)
    np.testing.assert_allclose(after.v, before.v, atol=1e-9)


def test_a_pause_shifts_a_posture_approach(robot: RobotModel) -> None:
    """A posture approach under way when a 0.4 s fallback starts takes up where it stood when
    control resumes. (Mutant: ``TaskTargetTracker.pause`` shifts only the frame tasks' moves,
    so the posture reference is 0.4 s further on: a jump toward the goal on the first torque.)"""
    tracker, errors = _posture_approach(robot, 0.4)
    stood = tracker.reference(_at_rest(HOME_Q, 1.2))["posture"]
    assert tracker.pause(1.2, 1.6) is False
    resumed = tracker.reference(_at_rest(HOME_Q, 1.6))["posture"]
    np.testing.assert_allclose(resumed.q, stood.q, atol=1e-12)
    np.testing.assert_allclose(resumed.v, stood.v, atol=1e-12)
    assert errors == []


# ------------------------------------------------------------------ the reach bound
def test_a_nan_position_is_refused_by_both_reach_checks(robot: RobotModel) -> None:
    """A NaN coordinate is at no distance the bound takes: ``Reach.check`` and
    ``check_clear_of_stretch`` both refuse it (each compares with ``not distance <= bound``).
    (Mutants: ``if distance > self.radius`` in ``check``, ``if distance > limit`` in
    ``check_clear_of_stretch``: NaN compares false and passes.)"""
    reach = Reach.of(robot, "end_effector_link")
    nan = np.array([np.nan, 0.0, 0.3])
    with pytest.raises(TargetError, match=r"position \(nan, 0, 0.3\) m is nan m from the circle joint_1"):
        reach.check(nan, "target pose")
    with pytest.raises(TargetError, match=r"position \(nan, 0, 0.3\) m is nan m from the circle joint_1"):
        reach.check_clear_of_stretch(nan, "target pose")


def test_a_frame_fixed_on_the_base_reaches_only_its_own_place(robot: RobotModel) -> None:
    """A frame on the root body 0.1 m out and 0.2 m up (a mount): it cannot move, so its reach is
    its own position within the margin; a target 2 cm from it is refused. (Mutant: ``Reach.of``
    centres a root-body frame's bound on the base origin, ``np.zeros(3)``, accepting the base
    origin and refusing the frame's own place.)"""
    mount = pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.2]))
    robot.model.addFrame(pin.Frame("mount", 0, 0, mount, pin.FrameType.OP_FRAME))
    reach = Reach.of(robot, "mount")
    reach.check(mount.translation, "mount target")
    with pytest.raises(TargetError, match=r"is 0.02 m from the frame's fixed position"):
        reach.check(mount.translation + np.array([0.0, 0.02, 0.0]), "mount target")
