"""Approaches: how a new target is reached from the current reference instead of being stepped into.

A target stepped into a PD law asks for the whole error at once. Stepped into the computed-torque
law, a joint target 1 rad away drives joint_1 at 3.7 rad/s against its 1.4 rad/s limit (a
critically damped step peaks at ``ω_n/e`` per rad of distance); into achd_rnea's, a pose 0.3 m
away drives joint_5 at 3.9 times its limit; into qpid's, a tool target 0.3 m away runs
joints 1 and 5 at exactly their limits, where the velocity barriers held them.

An approach moves the reference instead, along a rest-to-rest quintic (minimum jerk), from where
the reference stands (its velocity and acceleration too) to the target:

* :class:`JointApproachPlanner`: joint space, a :class:`~.trajectory.JointTrajectory`;
* :class:`PoseApproachPlanner`: a frame's pose, a :class:`PoseApproach` (a straight line and a
  fixed rotation axis).

Each is timed by three bounds: the peak acceleration ``10/√3·|Δx|/T²`` at most ``kp·|Δx|``, what
the step into the law would have asked at once (``T ≥ √(5.77/min kp)``: 0.24 s for ``kp`` 100),
every joint at most :data:`SPEED_SHARE` of its velocity limit at the peak speed ``15/8·|Δx|/T``,
and every joint's acceleration at most its bound ``a_max`` (:func:`~.trajectory.acceleration_limits`,
the bound a user's trajectory is held to): ``T ≥ √(5.77·|Δqᵢ|/a_maxᵢ)``. The first two alone let a
joint approach ask up to ``v_max·√(0.41·kp)`` (``kp·|Δq|`` against ``0.41·v_max²/|Δq|``): 8.9
rad/s² on joint_1 at ``kp`` 100, within its 25.9, but 89 at ``kp`` 1e4; the third decides only
from ``kp`` ≈ 830 on (joints 1–2). Joint stops and quintics from a moving reference are lengthened
until their exact peak is within the bound (or within the start's own acceleration, when that
is larger, over the whole quintic);
pose approaches and stops are timed on their predicted joint motion (:class:`PoseApproachPlanner`).

From a moving reference (a new target while an approach is under way), one quintic from its
position, velocity and acceleration takes the target when it stays on course: no axis backs away
from its start or passes the goal by more than :data:`COURSE_TOLERANCE` of its move (and, for
joints, every speed within :data:`DIRECT_SPEED_SHARE` or the start's own). So a stream of
targets (an interactive marker, a teleoperation device at 30 Hz) is followed: stopping first for
each one would keep the reference from ever setting off. Otherwise the reference first stops,
along a quintic to ``x₀ + ẋ₀·T_s/2`` over ``T_s = max(shortest, 15/8 / min kd)`` (decelerating
at most ``1.5·|ẋ₀|/T_s``, at most ``0.8·kd·|ẋ₀|``: within the law's own ``kd·|ẋ|``; a stop held
short of a position limit or a rest point, or one that would carry a joint still speeding up past
its velocity limit, is shorter and may decelerate harder, within the acceleration bounds), and the
move after it is timed from there: one quintic from a reference moving away from the target would
carry it on the wrong way (0.75 rad, at 0.74 of joint_1's limit, for a joint target 3 rad behind a
reference at 0.7 rad/s). The stop is where
the motion under way comes to rest (its own stop, its goal, a trajectory's waypoint at rest)
when that is within ``T_s``, so a stream's targets keep the stop under way instead of restarting
it. In joint space it is never past a position limit, nor farther toward a rest point further off
than the motion under way goes before it rests there (that point, or past it where the motion
passes it and comes back: a trajectory passing its end point seconds before it returns there does
not hold the stop to it). The sources take a target sent again (a device repeating its last pose)
as no new target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from .controllers.cartesian import PoseReference, check_pose_reference
from .errors import TargetError
from .robot import RobotModel
from .trajectory import LIMIT_TOLERANCE, JointTrajectory, MotionWording, acceleration_limits, check_motion
from .validation import FloatArray, as_positive_float

SPEED_SHARE = 0.5
"""Share of each joint's velocity limit an approach may reach at its peak (see the module docs)."""

#: Steps of the predicted joint path a pose approach is timed on, and the damping (m, rad) of the
#: least-squares joint rates along it, which keeps them finite at a singularity.
PATH_SAMPLES = 40
PATH_DAMPING = 1e-3
#: Along the predicted path (:meth:`PoseApproachPlanner.joint_speed_time`): ``τ`` = 0 to 1 in
#: :data:`PATH_SAMPLES` steps, ``Δσ`` over each (``σ(τ) = 10τ³ − 15τ⁴ + 6τ⁵``), and
#: ``(τ·(1 − τ))²`` at each one's middle, ``σ'(τ)/30`` there.
_PATH_TAU = np.linspace(0.0, 1.0, PATH_SAMPLES + 1)
_PATH_SIGMA = _PATH_TAU**3 * (10.0 + _PATH_TAU * (6.0 * _PATH_TAU - 15.0))
_PATH_STEPS = _PATH_SIGMA[1:] - _PATH_SIGMA[:-1]
_PATH_SPEED_PROFILE = np.array([(m * (1.0 - m)) ** 2 for m in 0.5 * (_PATH_TAU[:-1] + _PATH_TAU[1:])])
#: Singular values of the frame Jacobian below this share of the largest are left out of the bound
#: taken at the start of a pose approach.
START_RCOND = 1e-4
#: Largest share of a pose move the predicted joint path may end short of it: beyond, a singularity
#: on the straight line stops it (refused where the planner is asked to).
SHORTFALL = 0.2
#: Where the planner refuses shortfalls: a goal the frame cannot reach within the joint limits by more
#: than these (m, rad, on the planner's axes) is refused. The predicted path is no test of it: it
#: missed reachable goals by 28 mm at the median (0.37 m at worst) over 100 random moves, and ended
#: 160 mm short of a pose 0.87 m above the shoulder (18.9 % of that move, under :data:`SHORTFALL`),
#: which achd_rnea then strained toward at 2.09 times joint_5's velocity limit (a review).
REACH_POSITION = 0.01
REACH_ROTATION = 0.05
#: Levenberg-Marquardt steps toward the goal from the predicted path's end, then from the arm, that
#: :data:`REACH_POSITION` is judged on (:meth:`PoseApproachPlanner._nearest`), on the error in
#: shares of the tolerance (position rows over :data:`REACH_POSITION`, rotation rows over
#: :data:`REACH_ROTATION`), the damping in those units adapted from :data:`REACH_DAMPING` within
#: [:data:`MIN_REACH_DAMPING`, :data:`MAX_REACH_DAMPING`]. Judged by how far they brought the
#: frame in m + rad, the steps (taken on m and rad) stopped short of minima. Measured against
#: bounded least squares (four reviews; their ground truth needs finite bounds on the continuous
#: joints, ±1e9 stalled it): of 400 tool targets 2–30 cm and up to 0.6 rad from starts inside the
#: limits, 41 are refused, some of them reachable from some start (~6 in a review's 51 before the
#: rows were weighted); of 200 goals with a joint at its limit, none. An accepted move's plan
#: costs ~0.1 ms more (up to ~0.9), a refusal ~4 ms.
REACH_ITERATIONS = 30
REACH_DAMPING = 6.0
#: A goal within these (m, rad) of the last one refused for lack of reach, the arm within
#: :data:`REPEAT_ARM` (rad) of where it was then, is refused again without a search, where that
#: one's offset exceeds the tolerance by more than the difference (a stream past reach).
REPEAT_POSITION = 1e-3
REPEAT_ROTATION = 5e-3
REPEAT_ARM = 0.01
MIN_REACH_DAMPING = 1e-3
MAX_REACH_DAMPING = 600.0

#: A new target reached from a moving reference by one quintic (no stop first) may take it past the
#: goal or back beyond its start by this share of the move on each axis, plus :data:`COURSE_MARGIN`
#: (rad, m); farther, the reference stops first.
COURSE_TOLERANCE = 0.01
COURSE_MARGIN = 1e-4
#: A pose move whose joint motion, to first order at its start, is at most this (rad) on every
#: joint is timed on that first-order motion alone: the predicted path (~0.4 ms) adds nothing there,
#: and a stream of targets plans one move per message.
LINEAR_MOVE = 0.1
#: The most a stop may take a joint past its velocity limit (a share of it) where no stop within
#: the acceleration bounds keeps inside (:meth:`JointApproachPlanner.stop`): from joint_1's limit
#: at 25 rad/s², near its bound, the least passing one reaches 1.104. Farther (a user's trajectory
#: accelerating joint_7 at thousands of rad/s² near its limit: up to 48 times it in a review), the
#: stop is refused and the reference held at once.
MAX_STOP_OVERSPEED = 1.15

#: The share of each velocity limit one quintic from a moving reference may reach. A reference
#: still speeding up toward a target sent further ahead has no quintic within :data:`SPEED_SHARE`
#: (joint_1 at 0.61 rad/s, 1.2 rad short of it: 0.714 rad/s at best against the share's 0.698),
#: and stopping it for that would bring the arm to rest and set it off again.
DIRECT_SPEED_SHARE = 0.625

# A rest-to-rest quintic over ``T`` (minimum jerk) peaks at 15/8·Δq/T in speed and 10/√3·Δq/T² in
# acceleration.
QUINTIC_PEAK_SPEED = 15.0 / 8.0
QUINTIC_PEAK_ACCELERATION = 10.0 / np.sqrt(3.0)

#: A quintic from a moving start lengthened to bring its acceleration within the bounds is searched
#: over durations growing by this factor, in chunks of :data:`_STRETCH_CHUNK`, then refined twice by
#: as many even steps (the least duration found to ~1e-5 of itself), up to :data:`_STRETCH_MOST`
#: times the first.
_STRETCH_RATIO = 1.05
_STRETCH_CHUNK = 64
_STRETCH_MOST = 1e4
#: A chunk's durations over the longest before it: ``1.05^k``, ``k = 1…64``.
_STRETCH_STEPS = _STRETCH_RATIO ** np.arange(1.0, _STRETCH_CHUNK + 1.0)


#: How :func:`~.trajectory.check_motion` words a refused approach or stop: planned here, not
#: written by the user (no waypoints to add); only a start moving fast toward a limit makes one
#: pass it, which a target sent once the arm has slowed avoids.
_SLOWED = "send the target again once the arm has slowed"
APPROACH_WORDING = MotionWording("the approach from the current motion", "into it", _SLOWED, _SLOWED, _SLOWED)
STOP_WORDING = MotionWording("the stop from the current motion", "into it", "", "", "")


def approach_times(kp: FloatArray, kd: FloatArray) -> tuple[float, float]:
    """``(shortest, stop)`` (s) for the approaches of a PD law with gains ``kp`` (1/s²) and ``kd``
    (1/s), one per axis: the shortest approach asks at most the acceleration ``kp·|Δx|`` a step
    of ``Δx`` would at once (``10/√3·|Δx|/T² ≤ kp·|Δx|``), and a moving reference stops in no less
    time, over ``T = 15/8/kd`` at least. The stop, ``x₀ + ẋ·T·(s − s³ + s⁴/2)``, decelerates at
    most ``1.5·|ẋ|/T`` (at ``s = ½``), so at most ``0.8·kd·|ẋ|``: a fifth below what the law's
    ``kd·|ẋ|`` asks of a velocity error ``ẋ`` at once."""
    shortest = float(np.sqrt(QUINTIC_PEAK_ACCELERATION / np.min(kp)))
    damping = float(np.min(kd))
    return shortest, max(shortest, QUINTIC_PEAK_SPEED / damping) if damping > 0.0 else shortest


def time_within_speed_limits(robot: RobotModel, extent: FloatArray) -> float:
    """The least ``T`` (s) for which joint speeds of ``extent/T`` (``extent`` in rad, one per joint,
    or rows of them: the largest counts) stay within :data:`SPEED_SHARE` of the velocity limits,
    ``T = maxᵢ |extentᵢ|/(share·v_maxᵢ)`` (no bound where a joint has none: its limit is inf)."""
    return float(np.max(np.abs(extent) / (SPEED_SHARE * robot.velocity_limit)))


class PoseApproach:
    """A move of a pose reference from ``start`` to rest at ``goal`` over ``duration`` (s).

    The position and the rotation vector ``θ`` of ``R = R₀·exp(θ)`` (``R₀`` the start rotation)
    follow quintics (:class:`~torque_ctrl_ros.core.trajectory.JointTrajectory` on
    ``[p; θ]``) from the start's pose, twist and acceleration to ``[p₁; log(R₀ᵀ·R₁)]`` at rest.
    Sampled::

        R = R₀·exp(θ),   ω = R·J_r(θ)·θ̇,   ω̇ = R·(J_r(θ)·θ̈ + J̇_r·θ̇)     (base axes)

    ``J_r`` the right Jacobian of ``exp`` (``Ṙ·J_r·θ̇ = R·[J_r·θ̇]×·J_r·θ̇`` is 0). ``J̇_r·θ̇``,
    the derivative of ``J_r`` along ``θ̇`` times ``θ̇``, is 0 when ``θ̇ ∥ θ`` (a straight move
    from a start at rest); from a moving start it is not in general (the stop bends the path, and
    the line from the stop point to the goal need not pass ``θ = 0``), so it is taken by a central
    difference (:func:`_jr_dot_theta_dot`).

    A moving start first stops, over ``stop_time`` (s), at ``stop`` (by default at ``[p; θ]`` moved
    on by half its speed times ``stop_time``); the move to ``goal`` then takes ``duration`` more.
    :attr:`duration` is the whole, past which ``goal`` is returned; :attr:`stop` is ``(stop_time,
    the pose it stops at)``, or ``None`` without a stop.
    """

    def __init__(
        self,
        start: PoseReference,
        goal: PoseReference,
        duration: float,
        stop_time: float = 0.0,
        stop: PoseReference | None = None,
    ) -> None:
        start, goal = check_pose_reference(start), check_pose_reference(goal)
        self.goal = goal
        duration = as_positive_float("approach duration", duration)
        stop_time = as_positive_float("approach stop time", stop_time, allow_zero=True)
        self._r0 = start.rotation
        r0t = start.rotation.T
        twist = np.zeros(6) if start.twist is None else start.twist
        acc = np.zeros(6) if start.acceleration is None else start.acceleration
        # At θ = 0, J_r = I and the dropped terms vanish: the start's twist and acceleration map exactly.
        begin = (
            np.concatenate((start.position, np.zeros(3))),
            np.concatenate((twist[:3], r0t @ twist[3:])),
            np.concatenate((acc[:3], r0t @ acc[3:])),
        )
        end = np.concatenate((goal.position, pin.log3(r0t @ goal.rotation)))
        times, points = [duration], [end]
        self.stop: tuple[float, PoseReference] | None = None
        if stop_time > 0.0 and (begin[1].any() or begin[2].any()):
            if stop is None:
                at = begin[0] + 0.5 * stop_time * begin[1]
                stop = PoseReference(at[:3], start.rotation @ pin.exp3(at[3:]))
            else:
                at = np.concatenate((stop.position, pin.log3(r0t @ stop.rotation)))
            # The goal's rotation vector nearest the stop's: the principal one (at most π from
            # the start) is the long way round from a stop that turned on past the half-turn
            # (a goal 3.12 rad ahead turned 3.199 rad where 3.085 led there; a review).
            end[3:] = _nearest_turn(end[3:], at[3:])
            times, points = [stop_time, stop_time + duration], [at, end]
            self.stop = (stop_time, stop)
        self.duration = times[-1]
        rest = np.zeros((len(times), 6))
        self._path = JointTrajectory(times, np.array(points), rest, rest, start=begin)

    @property
    def path(self) -> JointTrajectory:
        """The quintic(s) of ``[p; θ]`` (m, rad) over time, from the start's to the goal's."""
        return self._path

    def base_path(self) -> JointTrajectory:
        """The quintic(s) of ``[p; R₀·θ]`` (m, rad): the rotation vector in base axes, of ``R·R₀ᵀ =
        exp(R₀·θ)``, the turn from the start as the laws' base axes read it (the planner's axes
        are base axes). A quintic is linear in its knots' positions, velocities and
        accelerations, so mapping them maps the path exactly."""
        path, to_base = self._path, np.eye(6)
        to_base[3:, 3:] = self._r0
        # Quintic knots: accelerations are there wherever velocities are (see __init__).
        assert path.accelerations is not None
        return JointTrajectory(
            path.times,
            path.positions @ to_base.T,
            path.velocities @ to_base.T,
            path.accelerations @ to_base.T,
        )

    def sample(self, t: float) -> PoseReference:
        """The reference ``t`` s after the start (``goal`` itself from ``duration`` on)."""
        if t >= self.duration:
            return self.goal
        x, xd, xdd = self._path.sample(t)
        theta, theta_d = x[3:], xd[3:]
        rotation = self._r0.dot(pin.exp3(theta))
        jr = pin.Jexp3(theta)
        return PoseReference(
            x[:3],
            rotation,
            np.concatenate((xd[:3], rotation.dot(jr.dot(theta_d)))),
            np.concatenate((xdd[:3], rotation.dot(jr.dot(xdd[3:]) + _jr_dot_theta_dot(theta, theta_d)))),
        )


def _nearest_turn(theta: FloatArray, near: FloatArray) -> FloatArray:
    """The rotation vector of the rotation ``exp(θ)`` nearest ``near`` (rad): one of
    ``(|θ| + 2πk)·θ/|θ|``, ``k`` ∈ {−1, 0, 1} (``θ`` itself for no rotation)."""
    angle = float(np.linalg.norm(theta))
    if angle == 0.0:
        return theta
    turns = [(angle + 2.0 * np.pi * k) / angle * theta for k in (-1, 0, 1)]
    return min(turns, key=lambda turn: float(np.linalg.norm(turn - near)))


def _jr_dot_theta_dot(theta: FloatArray, theta_d: FloatArray) -> FloatArray:
    """``J̇_r·θ̇ = (d/ds J_r(θ + s·θ̇))·θ̇`` at ``s = 0`` (rad/s²), by a central difference.

    The step, 1e-4 rad of rotation vector each way, balances the difference's O(step²) error
    against rounding (~1e-16 / 1e-4): checked against differences of the sampled twist to 4e-9
    rad/s² (test_achd).
    """
    speed = float(np.linalg.norm(theta_d))
    if speed == 0.0:
        return np.zeros(3)
    step = 1e-4 / speed  # s, so that the rotation vector moves 1e-4 rad each way
    ahead, behind = pin.Jexp3(theta + step * theta_d), pin.Jexp3(theta - step * theta_d)
    return (ahead - behind).dot(theta_d) / (2.0 * step)


class JointApproachPlanner:
    """Joint approaches for a PD law with gains ``kp`` (1/s²) and ``kd`` (1/s) per joint.

    ``T = max(√(5.77/min kp), maxᵢ 1.875·|Δqᵢ|/(share·v_maxᵢ), maxᵢ √(5.77·|Δqᵢ|/a_maxᵢ))``:
    0.24 s at least with ``kp`` 100, 2.7 s for 1 rad on joint_1. On continuous joints the short
    way round. ``a_max``: :attr:`acceleration_limit`; stops and quintics from a moving reference
    are lengthened until their exact peak acceleration is within it (:meth:`_within_bounds`).
    """

    def __init__(self, robot: RobotModel, kp: FloatArray, kd: FloatArray) -> None:
        self.robot = robot
        self.shortest, self.stop_time = approach_times(kp, kd)
        #: Largest |q̈| (rad/s²) per joint the approaches and stops ask (:func:`acceleration_limits`).
        self.acceleration_limit = acceleration_limits(robot)
        self._direct_speed = DIRECT_SPEED_SHARE * robot.velocity_limit  # rad/s

    def plan(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        goal: FloatArray,
        under_way: tuple[JointTrajectory, float] | None = None,
    ) -> JointTrajectory:
        """The approach from ``start`` = ``(q, q̇, q̈)`` (rad, rad/s, rad/s²; ``None`` for 0) to
        ``goal`` (rad), at rest there.

        ``under_way``: the motion the reference follows and the time (s) into it ``start`` was
        sampled at. Where a moving reference has to stop first and that motion comes to rest
        within the stop time (an earlier approach's stop, or its goal), it is kept until there:
        restarted with every new target of a stream, a stop would hold the reference for seconds.

        Raises:
            TargetError: its motion passes a position or velocity limit (a start moving fast
                toward one).
        """
        q0, v0, a0 = start
        if not ((v0 is not None and v0.any()) or (a0 is not None and a0.any())):
            approach = self._quintics(start, [self._duration(q0, goal)], [goal])
            check_motion(self.robot, approach, wording=APPROACH_WORDING)
            return approach
        distance = self.robot.difference(goal, q0)
        duration = self._within_bounds(start, lambda _: distance, self._duration(q0, goal))
        direct = self._quintics(start, [duration], [goal])
        if self._keeps_course(direct, q0):
            check_motion(self.robot, direct, wording=APPROACH_WORDING)
            return direct
        # One quintic from a reference moving away from the goal would carry it on the wrong way:
        # it stops first.
        t_stop, q_stop = self._stop_point(start, under_way)
        approach = self._quintics(start, [t_stop, t_stop + self._duration(q_stop, goal)], [q_stop, goal])
        check_motion(self.robot, approach, wording=APPROACH_WORDING)
        return approach

    def stop(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        under_way: tuple[JointTrajectory, float] | None = None,
    ) -> JointTrajectory:
        """A stop of the reference ``start`` = ``(q, q̇, q̈)`` (rad, rad/s, rad/s²; ``None`` for 0):
        one quintic from it to rest, the stop a target behind it would begin with (the module
        docs), placed and timed by :meth:`_stop_point`: where ``under_way`` comes to rest if within
        the stop time, else ``q + q̇·T_s/2`` after ``T_s`` (not past a position limit, nor farther
        toward the next rest point of ``under_way`` than that motion goes before it rests there,
        and then over no more than ``2.5·d/|q̇|`` for the joints held ``d`` short, so that the
        quintic does not pass the point it is held to: :func:`_monotone_stop_time`). Its velocity and
        acceleration start at the reference's, so the law's torque does not step. From ``q̇`` and
        no acceleration, ``q(s) = q₀ + q̇·T_s·(s − s³ + s⁴/2)``, ``s = t/T_s``: it decelerates at most
        ``1.5·|q̇|/T_s`` (at ``s = ½``); from 1.125 rad/s on joint_1 with ``kp`` 100 it runs on 0.135
        rad over 0.24 s at up to 7.0 rad/s², where a step to rest would ask −5.75 N·m at once.
        ``T_s`` grows past the stop time where that peak (exact, from any start) would pass
        :attr:`acceleration_limit`: from 1 rad/s on joint_1 with ``kp`` 1e4 (stop time 0.024 s,
        62 rad/s²), to ``1.5·1/25.9`` = 0.058 s.

        A joint near its velocity limit and still speeding up carries its acceleration on into the
        stop and passes the limit (0.975 of joint_1's at 10 rad/s², ``kp`` 100: 1.052 of it over
        0.24 s): the stop is shortened until it keeps inside (:meth:`_within_speed`; 0.105 s there,
        at 22.5 of its 25.9 rad/s²). Where no stop within the acceleration bounds does (from 0.985
        of the limit at 10 rad/s², 0.935 at 20), the one passing the velocity limit least is
        returned if it keeps within :data:`MAX_STOP_OVERSPEED` of it: 1.02 of joint_1's limit for
        12 ms from the limit at 10 rad/s², 1.10 for 27 ms at 25. Held at once instead, the
        reference's speed steps by all of ``|q̇|``: the law's acceleration steps from ``q̈₀`` to
        ``−kd·|q̇|`` (28 rad/s² at ``kd`` 20, past the bound) and the arm runs 0.05 rad past the
        point held and back.
        :func:`~.trajectory.check_motion` on the result says whether it passes a velocity limit.

        Raises:
            TargetError: its motion passes a position limit (a start moving fast toward one, its
                rest point within a hair of it: where the acceleration bound needs longer than
                ``2.5·d/|q̇|``, the quintic passes the limit; 0.01 rad from joint_2's at 0.8 rad/s,
                no stop within its 25.7 rad/s² stays inside), or a velocity limit by more than
                :data:`MAX_STOP_OVERSPEED`.
        """
        t_stop, q_stop = self._stop_point(start, under_way)
        stopping = self._quintics(start, [t_stop], [q_stop])
        speed_cap = MAX_STOP_OVERSPEED * self.robot.velocity_limit
        check_motion(self.robot, stopping, wording=STOP_WORDING, velocity_limit=speed_cap)
        return stopping

    def _stop_point(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        under_way: tuple[JointTrajectory, float] | None,
    ) -> tuple[float, FloatArray]:
        """``(time (s), q (rad))`` a moving reference ``start`` = ``(q₀, q̇₀, q̈₀)`` stops at: where
        the motion under way comes to rest if that is within the stop time; else half its speed
        times the stop time on, clipped to the position limits and, on each joint moving toward
        where the motion under way comes to rest next, to no farther than that motion goes before
        it rests there (:func:`_reach_toward_rest`: that rest point, or the farthest point past it
        where the motion passes it and comes back), the time then shortened so that the quintic
        does not pass the point it is held to (:func:`_monotone_stop_time`). Held to a rest point
        the motion passes on its way, seconds before it comes back to it, a stop ends short of
        where the motion runs on to in the meantime, over a fraction of the stop time (0.064 s and
        21.6 rad/s² instead of 0.24 s and 4.9 rad/s², for a trajectory passing its end point 4.8 s
        before it returns there). The time is lengthened
        where the quintic there would pass :attr:`acceleration_limit` (the default point moving on
        with it, ``q̇₀·T/2``), then shortened where it would pass a velocity limit
        (:meth:`_within_speed`)."""
        q0, v0 = start[0], start[1]
        rest = _next_rest(under_way)
        if rest is not None and rest[0] <= self.stop_time:
            distance = rest[1] - q0

            def to_rest(_: FloatArray) -> FloatArray:
                return distance

            t_stop = self._within_bounds(start, to_rest, rest[0])
            return self._within_speed(start, to_rest, t_stop), rest[1]
        reach: list[FloatArray] = []  # _reach_toward_rest (~0.4 ms), once a stop point passes the rest point

        def stop_at(t_stop: FloatArray) -> FloatArray:
            q_stop = q0 if v0 is None else q0 + (0.5 * t_stop) * v0
            if rest is not None and under_way is not None:
                toward = rest[1] - q0
                if not reach and np.any((q_stop - rest[1]) * toward > 0.0):
                    reach.append(_reach_toward_rest(under_way, rest[2], q0))
                if reach:
                    q_stop = np.where((q_stop - reach[0]) * toward > 0.0, reach[0], q_stop)
            return np.clip(q_stop, self.robot.position_lower, self.robot.position_upper)

        def move(t_stop: FloatArray) -> FloatArray:
            return stop_at(t_stop) - q0

        t_stop = self.stop_time
        if v0 is not None:
            # Never shorter than a stop from v0 within the acceleration bounds can take (a peak of
            # 1.5·|v0|/T): a point a hair ahead would ask for an arbitrarily short stop, which the
            # search of _within_bounds, relative to where it starts, might not lengthen enough.
            # Such a stop passes the point; past a position limit, check_motion then refuses it.
            shortest = float(np.max(_STOP_PEAK * np.abs(v0) / self.acceleration_limit))
            # Where the point is not held, the move is v0·T/2 itself: rounded, q0 + v0·T/2 − q0 can
            # read a little short on a joint barely moving (1e-16 rad at 1e-15 rad/s on a joint at
            # 0.96 rad), as if held, and shortened the stop (0.21 s instead of 0.24).
            default = (0.5 * t_stop) * v0
            at = stop_at(np.asarray(t_stop))
            monotone = _monotone_stop_time(np.where(at == q0 + default, default, at - q0), v0)
            t_stop = min(t_stop, max(monotone, shortest))
        t_stop = self._within_speed(start, move, self._within_bounds(start, move, t_stop))
        return t_stop, stop_at(np.asarray(t_stop))

    def _within_speed(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        distance: Callable[[FloatArray], FloatArray],
        duration: float,
    ) -> float:
        """``duration`` (s) if the stop over it from ``start`` = ``(q₀, q̇₀, q̈₀)`` to rest at ``q₀ +
        distance(T)`` (as in :meth:`_within_bounds`) passes no position or velocity limit (or only
        as far as the start does), else the longest of ``duration·``:data:`_SHORTER_STOPS` that
        does and keeps the acceleration bounds of :meth:`_within_bounds`; where none does, the
        one of those passing the velocity limits least (rated on :func:`_peak_speed`) and no
        position limit; where none does that either, ``duration`` (refused by the caller's check).

        A joint speeding up near its velocity limit carries its acceleration ``q̈₀`` on into the
        stop: the longer the stop, the longer before it turns, and the further past the limit."""
        robot = self.robot
        lower, upper, limit = robot.position_lower, robot.position_upper, robot.velocity_limit

        def inside(T: float, move: FloatArray, speed_limit: FloatArray | float) -> bool:
            stopping = self._quintics(start, [T], [start[0] + move])
            return stopping.within_limits(lower, upper, speed_limit)

        if inside(duration, distance(np.asarray(duration)), limit):
            return duration
        n = robot.n
        v0 = np.zeros(n) if start[1] is None else np.asarray(start[1], dtype=np.float64)
        a0 = np.zeros(n) if start[2] is None else np.asarray(start[2], dtype=np.float64)
        durations = duration * _SHORTER_STOPS
        T = durations[:, None]
        moves = np.broadcast_to(distance(T), (durations.size, n))  # a fixed rest point: one row
        bound = np.maximum(self.acceleration_limit, np.abs(a0)) + LIMIT_TOLERANCE
        fits: NDArray[np.bool_] = np.all(_peak_acceleration(moves, v0, a0, T) <= bound, axis=1)
        fits[0] = True  # the duration given: as long as the acceleration bounds need
        # The share of its velocity limit (or of the start's speed, where higher) each stop takes
        # the fastest joint to: sampled, a lower bound of the exact one.
        share = np.max(_peak_speed(moves, v0, a0, T) / np.maximum(limit, np.abs(v0)), axis=1)
        # The longest rated within the limits first, then the others passing them least.
        order = np.lexsort((-durations, np.maximum(share, 1.0)))
        order = order[fits[order]]
        for k in order[share[order] <= 1.0]:
            if inside(float(durations[k]), moves[k], limit):
                return float(durations[k])
        for k in order:
            if inside(float(durations[k]), moves[k], np.inf):
                return float(durations[k])
        return duration

    def _duration(self, q: FloatArray, goal: FloatArray) -> float:
        """The rest-to-rest quintic's duration (s) from ``q`` to ``goal``: see the class docs."""
        distance = np.abs(self.robot.difference(goal, q))
        return max(
            self.shortest,
            time_within_speed_limits(self.robot, QUINTIC_PEAK_SPEED * distance),
            float(np.max(np.sqrt(QUINTIC_PEAK_ACCELERATION * distance / self.acceleration_limit))),
        )

    def _within_bounds(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        distance: Callable[[FloatArray], FloatArray],
        duration: float,
    ) -> float:
        """``duration`` (s) if the quintic over it from ``start`` = ``(q₀, q̇₀, q̈₀)`` to rest at
        ``q₀ + distance(T)`` keeps every joint's ``|q̈|`` within :attr:`acceleration_limit` or the
        start's own ``|q̈₀|`` (where every quintic from it starts, whatever its duration), else the
        first longer duration found that does, to ~1e-5 of itself. ``distance`` maps durations
        (K × 1, s) to moves (K × n, rad): the default stop point moves on with its time. Searched
        over growing durations (:data:`_STRETCH_RATIO`), not solved for: the peak need not fall
        monotonically with ``T`` (a start moving toward the goal cancels part of the move's
        acceleration)."""
        n = self.robot.n
        v0 = np.zeros(n) if start[1] is None else np.asarray(start[1], dtype=np.float64)
        a0 = np.zeros(n) if start[2] is None else np.asarray(start[2], dtype=np.float64)
        bound = np.maximum(self.acceleration_limit, np.abs(a0)) + LIMIT_TOLERANCE

        def first_within(durations: FloatArray) -> int | None:
            T = durations[:, None]
            ok = (_peak_acceleration(distance(T), v0, a0, T) <= bound).all(axis=1)
            return int(np.argmax(ok)) if ok.any() else None

        if first_within(np.array([duration])) is not None:
            return duration
        low = duration
        while low < _STRETCH_MOST * duration:
            grid = low * _STRETCH_STEPS
            k = first_within(grid)
            if k is None:
                low = float(grid[-1])
                continue
            high = float(grid[k])
            low = float(grid[k - 1]) if k > 0 else low
            for _ in range(2):  # refine between the last duration past the bound and the first within
                grid = np.linspace(low, high, _STRETCH_CHUNK + 1)[1:]
                k = first_within(grid)
                assert k is not None  # the grid ends at ``high``
                high = float(grid[k])
                low = float(grid[k - 1]) if k > 0 else low
            return high
        return low  # none within _STRETCH_MOST times the first: the longest tried

    def _quintics(
        self,
        start: tuple[FloatArray, FloatArray | None, FloatArray | None],
        times: list[float],
        waypoints: list[FloatArray],
    ) -> JointTrajectory:
        rest = np.zeros((len(times), self.robot.n))
        return JointTrajectory(
            times, np.array(waypoints), rest, rest, start=start, continuous=self.robot.continuous
        )

    def _keeps_course(self, approach: JointTrajectory, q0: FloatArray) -> bool:
        """Whether one quintic from the moving start stays between its start and goal on every
        joint (within :data:`COURSE_TOLERANCE`) and within :data:`DIRECT_SPEED_SHARE` of the
        velocity limits (or of the start's own speed, where that is higher)."""
        goal = approach.positions[-1]  # unwrapped against the start
        slack = COURSE_TOLERANCE * np.abs(goal - q0) + COURSE_MARGIN
        # Within the position limits too: past one, it stops first instead of being refused.
        robot = self.robot
        return approach.within_limits(
            np.maximum(np.minimum(q0, goal) - slack, robot.position_lower),
            np.minimum(np.maximum(q0, goal) + slack, robot.position_upper),
            self._direct_speed,
        )


def _peak_acceleration(distance: FloatArray, v0: FloatArray, a0: FloatArray, T: FloatArray) -> FloatArray:
    """Largest ``|q̈|`` (rad/s², K × n) of the quintics from ``(0, v0, a0)`` to ``(distance, 0, 0)``
    (rad, rad/s, rad/s², at rest) over ``T`` (s, K × 1): exact.

    With ``s = t/T`` and the quintic Hermite basis, ``q̈(s) = a0·(1 − 9s + 18s² − 10s³) +
    v0/T·(−36s + 96s² − 60s³) + distance/T²·(60s − 180s² + 120s³)``, a cubic in ``s``: its
    largest magnitude is at ``s`` = 0, 1 or a real root of ``q⃛`` (a quadratic) in between.
    """
    u = 1.0 / T
    d, v = distance * (u * u), v0 * u
    # c₁ = 60·d − 36·v − 9·a0, c₂ = −180·d + 96·v + 18·a0, c₃ = 120·d − 60·v − 10·a0, as one
    # 3 × K × n array (the same roundings: x − (−y) is x + y): a third of the calls, each ~1 µs.
    c1, c2, c3 = _JERK_D * d - _JERK_V * v - _JERK_A * a0
    triple = 3.0 * c3
    # Roots of 3c₃·s² + 2c₂·s + c₁ without cancellation; NaN or ±inf where there are none. Both
    # in one 2 × K × n array, evaluated at once.
    s = np.empty((2, *c1.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(c2 + np.copysign(np.sqrt(c2 * c2 - triple * c1), c2))
        np.divide(h, triple, out=s[0])
        np.divide(c1, h, out=s[1])
    s = np.where((s > 0.0) & (s < 1.0), s, 0.0)  # outside (and NaN): the start, counted below
    at_roots = np.abs(((c3 * s + c2) * s + c1) * s + a0).max(axis=0)
    return np.maximum(at_roots, np.abs(a0))  # and at s = 0; at s = 1 it is 0 (at rest)


#: The factors of ``d = distance/T²``, ``v = v0/T`` and ``a0`` in ``c₁, c₂, c₃`` (:func:`_peak_acceleration`),
#: ``v``'s and ``a0``'s negated (subtracted).
_JERK_D = np.array([60.0, -180.0, 120.0])[:, None, None]
_JERK_V = np.array([36.0, -96.0, 60.0])[:, None, None]
_JERK_A = np.array([9.0, -18.0, 10.0])[:, None, None]


#: The durations a stop passing a velocity limit is tried over (:meth:`JointApproachPlanner._within_speed`),
#: as shares of the one first found: itself, then shorter by :data:`_STRETCH_RATIO` each, down to
#: 1/22.7 of it (the acceleration bounds end it sooner: at 1/2.8 of 0.24 s on joint_1 at ``kp`` 100).
_SHORTER_STOPS = _STRETCH_RATIO ** -np.arange(0.0, _STRETCH_CHUNK + 1.0)
#: Where along a quintic (``s = t/T``) :func:`_peak_speed` samples its speed.
_SPEED_SAMPLES = np.linspace(0.0, 1.0, 65)[:, None, None]


def _peak_speed(distance: FloatArray, v0: FloatArray, a0: FloatArray, T: FloatArray) -> FloatArray:
    """Largest ``|q̇|`` (rad/s, K × n) of the quintics of :func:`_peak_acceleration`, sampled at
    :data:`_SPEED_SAMPLES`: ``q̇(s) = v0 + T·(a0·s + c₁·s²/2 + c₂·s³/3 + c₃·s⁴/4)``, the integral
    of that function's ``q̈(s)``. A lower bound, to rate durations by; the one taken is checked
    exactly."""
    u = 1.0 / T
    d, v = distance * (u * u), v0 * u
    c1, c2, c3 = _JERK_D * d - _JERK_V * v - _JERK_A * a0
    s = _SPEED_SAMPLES
    speed = v0 + T * ((((0.25 * c3) * s + c2 / 3.0) * s + 0.5 * c1) * s + a0) * s  # s × K × n
    return np.abs(speed).max(axis=0)


#: A quintic from ``(0, v, 0)`` to rest at ``d`` over ``T`` moves at ``q̇ = v·(1 − s)²·(1 + 2s +
#: β·s²)``, ``β = 30·d/(v·T) − 15``, ``s = t/T``: it never turns back (past ``d``) while ``β ≥ −3``
#: (``1 + 2s − 3s² = (1 − s)·(1 + 3s)``), i.e. ``d ≥ 0.4·v·T``. The default stop, ``d = v·T/2``,
#: is; one held short of that (to a limit or a rest point) is only within ``T ≤ 2.5·d/v``.
_MONOTONE_STOP = 2.5

#: The default stop ``q₀ + v·T·(s − s³ + s⁴/2)`` decelerates at most ``1.5·|v|/T`` (at ``s = ½``).
_STOP_PEAK = 1.5


def _monotone_stop_time(distance: FloatArray, v0: FloatArray) -> float:
    """The longest stop time (s) over which the quintic from ``v0`` (rad/s, no acceleration) to
    rest ``distance`` (rad) on does not pass that point on any joint held short of ``v0·T/2``:
    ``minᵢ 2.5·dᵢ/v0ᵢ`` over the joints moving toward a point ahead (``inf`` where none: the
    others' stops are at least ``0.4·v0·T`` on, or they do not move)."""
    ahead = distance * v0 > 0.0
    if not ahead.any():
        return float("inf")
    return float(np.min(_MONOTONE_STOP * distance[ahead] / v0[ahead]))


def _next_rest(under_way: tuple[JointTrajectory, float] | None) -> tuple[float, FloatArray, int] | None:
    """``(time left (s), q, index)`` of the first waypoint after ``t`` where the motion ``under_way =
    (trajectory, t)`` is at rest (no velocity, and no acceleration but at the last point, after
    which it is held), or ``None``."""
    if under_way is None:
        return None
    trajectory, t = under_way
    for i in range(len(trajectory.times)):
        if trajectory.times[i] <= t:
            continue
        still = not trajectory.velocities[i].any()
        last = i == len(trajectory.times) - 1  # held at rest after it, whatever its acceleration
        if still and (last or trajectory.accelerations is None or not trajectory.accelerations[i].any()):
            return float(trajectory.times[i] - t), trajectory.positions[i], i
    return None


def _reach_toward_rest(under_way: tuple[JointTrajectory, float], rest: int, q0: FloatArray) -> FloatArray:
    """How far (rad, per joint) the motion ``under_way = (trajectory, t)`` goes toward its waypoint
    ``rest`` (the next at rest, :func:`_next_rest`), seen from ``q0`` (the reference at ``t``),
    before it comes to rest there: the waypoint's own value where the motion approaches it without
    passing it, the farthest point past it where it passes it and comes back (a user's trajectory
    passing its end point on the way out, seconds before it returns there); exact
    (:meth:`~.trajectory.JointTrajectory.position_range` of the motion from ``t`` to that waypoint:
    the segments ahead, and the one under way from its state at ``t``, the same polynomial over
    what is left of it)."""
    trajectory, t = under_way
    ahead = np.arange(int(np.searchsorted(trajectory.times, t, side="right")), rest + 1)
    accelerations = None if trajectory.accelerations is None else trajectory.accelerations[ahead]
    lowest, highest = JointTrajectory(
        trajectory.times[ahead] - t,
        trajectory.positions[ahead],
        trajectory.velocities[ahead],
        accelerations,
        start=trajectory.sample(t),
    ).position_range()
    return np.where(trajectory.positions[rest] > q0, highest, lowest)


def _is_moving(start: PoseReference) -> bool:
    """Whether the pose reference ``start`` moves: a twist or an acceleration other than 0."""
    return (start.twist is not None and bool(start.twist.any())) or (
        start.acceleration is not None and bool(start.acceleration.any())
    )


def _rest_within(
    under_way: tuple[PoseApproach, float] | None, stop_time: float
) -> tuple[float, PoseReference] | None:
    """``(time left (s), pose)`` where the approach ``under_way = (approach, t)``, ``t`` s into it,
    comes to rest next (its stop, if still ahead, else its goal), if that is within ``stop_time``
    (s) and still ahead; else ``None``.

    Within the stop time as lengthened (:meth:`PoseApproachPlanner._stop_time`), not the law's
    alone: a joint stop that would run past the rest point is held to it joint by joint
    (:meth:`JointApproachPlanner._stop_point`), which a pose's rotation does not allow, so a longer
    stop here keeps the rest point instead of running past it. Reached at its own time, it is the
    motion under way."""
    if under_way is None:
        return None
    approach, t = under_way
    rest = approach.stop if approach.stop is not None and approach.stop[0] > t else None
    rest = rest or (approach.duration, approach.goal)
    if 0.0 < rest[0] - t <= stop_time:
        return rest[0] - t, rest[1]
    return None


def _half_speed_stop(start: PoseReference, twist: FloatArray, stop_time: float) -> PoseReference:
    """The default stop point of the moving ``start`` (twist ``twist``, m/s and rad/s, base axes):
    half its speed times ``stop_time`` (s) on, ``p + ẋ·T_s/2`` and the rotation turned by
    ``ω·T_s/2``."""
    half = 0.5 * stop_time
    return PoseReference(
        start.position + half * twist[:3],
        start.rotation @ pin.exp3(half * (start.rotation.T @ twist[3:])),
    )


class _ArmJacobian(NamedTuple):
    """The frame Jacobian at the arm's joint angles ``q`` (rad) on a planner's axes (rows × n: m/rad,
    rad/rad) and its pseudo-inverse ``J⁺`` (n × rows, singular values below :data:`START_RCOND` of
    the largest left out): what the first-order bounds of every move a plan times start from."""

    q: FloatArray
    jacobian: FloatArray
    inverse: NDArray[np.floating[Any]]


class PoseApproachPlanner:
    """Pose approaches of ``frame`` for a PD law on the axes ``rows`` (indices of ``x, y, z, rx,
    ry, rz``) with gains ``kp`` (1/s²) and ``kd`` (1/s) on those axes.

    The duration ``T`` keeps each joint at most :data:`SPEED_SHARE` of its velocity limit both
    along the joint path predicted for the move (:meth:`joint_speed_time`) and to first order at
    its start (``q̇ = J⁺·ξ·σ̇``, ``σ̇`` peaking at ``1.875/T``, for the move ``ξ`` on the axes),
    each joint's move ``Δqᵢ`` (the larger of those two predictions) within its acceleration bound
    as a rest-to-rest quintic (``T ≥ √(5.77·|Δqᵢ|/a_maxᵢ)``, :attr:`acceleration_limit`), and at
    least :func:`approach_times`' shortest. A stop lasts long enough for ``1.5·|J⁺·ẋ|/T_s``
    within the same bounds; a quintic from a moving start straight to the goal, or kept to an
    earlier approach's stop, is not held to them. These are predictions, not guarantees: from
    home, 0.1–0.3 m moves under achd_rnea peaked at 0.38–0.53 of a limit, but from other poses at
    up to 0.75 (a review: 48 random starts and targets in MuJoCo, four over 0.6), as achd_rnea
    spreads the motion over the joints mass-weighted (Gauss's principle), not as the path's
    unweighted least squares predicts (joint_7 moved 0.31 rad where 0.105 were predicted). Near
    a singularity the start's bound makes the move slow (65 s for 0.1 m sideways, 0.03 rad from
    the stretched pose).

    Planning takes ~0.2 ms for a move of at most :data:`LINEAR_MOVE` per joint (timed on its
    start), ~0.7 ms for a longer one, most of it the predicted path (:meth:`joint_speed_time`: 40
    Jacobians and damped solves, each from the point the one before reached); a moving reference
    that has to stop first times two moves (~1.4 ms). With shortfalls refused, the reach of the
    goal adds ~0.1 ms (:meth:`_check_reach`), and a goal out of reach takes ~4 ms to refuse (one
    within 1 mm of the last refused, at once).

    Args:
        refuse_shortfall: refuse a move more than :data:`SHORTFALL` of which lies along directions
            the start's Jacobian has (nearly) lost, or whose predicted path ends more than that
            short (a singularity on the straight line, e.g. from the stretched pose itself), which
            a law without a singularity barrier would cross at many times a velocity limit.

    Raises:
        FrameNotFoundError: ``frame`` is not in the model (the message lists its frames).
    """

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        rows: ArrayLike,
        kp: FloatArray,
        kd: FloatArray,
        *,
        refuse_shortfall: bool = True,
    ) -> None:
        self.robot = robot
        self.frame = frame
        self.rows = np.asarray(rows, dtype=np.intp)
        self.shortest, self.stop_time = approach_times(kp, kd)
        self.refuse_shortfall = refuse_shortfall
        #: Largest |q̈| (rad/s²) per joint the predicted joint motion may ask (:func:`acceleration_limits`).
        self.acceleration_limit = acceleration_limits(robot)
        self._frame_id = robot.frame_id(frame)
        # All six axes in order: the Jacobian as it comes, without a copy of its rows.
        self._all_rows = np.array_equal(self.rows, np.arange(6))
        #: Which of ``[p; θ]`` the planner's axes are (the course check bounds only those).
        self._tracked = np.zeros(6, dtype=bool)
        self._tracked[self.rows] = True
        #: ``λ²·I`` (m², rad²) of the predicted path's damped least squares.
        self._path_damping = PATH_DAMPING**2 * np.eye(self.rows.size)
        #: The goal of the plan under way once :meth:`_check_reach` found it within reach: a plan
        #: stopping first times two moves to it, and searches once.
        self._within_reach: PoseReference | None = None
        #: Each of the planner's rows over its tolerance (1/m, 1/rad): the reach search's weights.
        self._reach_weight = np.where(self.rows < 3, 1.0 / REACH_POSITION, 1.0 / REACH_ROTATION)
        #: The last goal refused for lack of reach, the arm then (rad) and how far the search left
        #: it (m, rad): a stream repeating it (a marker dragged past reach, one message a step) is
        #: refused again at once rather than searched each time (~4 ms a search, several control
        #: steps late each). Forgotten once a goal is found within reach.
        self._out_of_reach: tuple[PoseReference, FloatArray, FloatArray] | None = None

    def plan(
        self,
        q: FloatArray,
        start: PoseReference,
        goal: PoseReference,
        under_way: tuple[PoseApproach, float] | None = None,
    ) -> PoseApproach:
        """The approach from ``start`` (the reference, with its twist and acceleration) to ``goal``,
        the arm at ``q`` (rad: where the joint path is predicted from).

        ``under_way``: the approach the reference follows and the time (s) into it ``start`` was
        sampled at; where a moving reference has to stop first, that approach's stop (or its
        goal) is kept when it comes within the stop time (as lengthened for the joints'
        acceleration bounds: a default stop no shorter would run past it), as in joint space.

        Raises:
            TargetError: ``refuse_shortfall`` and the predicted joint path ends short of the goal,
                or more than :data:`SHORTFALL` of the move lies along a direction the start's
                Jacobian has lost (a singular direction).
        """
        # Every move of this plan (the direct one, the one after a stop) and the stop itself are
        # timed from the arm at q: its Jacobian and J⁺ once.
        arm = self._arm_jacobian(q)
        self._within_reach = None
        direct = PoseApproach(start, goal, self._duration(arm, start, goal))
        if not _is_moving(start) or self._keeps_course(direct):
            return direct
        return self._stopping_first(arm, start, goal, under_way)

    def _stopping_first(
        self,
        arm: _ArmJacobian,
        start: PoseReference,
        goal: PoseReference,
        under_way: tuple[PoseApproach, float] | None,
    ) -> PoseApproach:
        """The approach from the moving ``start`` that stops first, then moves to ``goal``: where the
        approach under way comes to rest soon enough (:func:`_rest_within`; a new stop with every
        message of a stream turning back would carry the reference on the wrong way), else half its
        speed times the stop time on (:meth:`_stop_time`). The move after the stop is timed from
        there: from the start, a target behind the moving reference would look nearer than it will
        be."""
        twist = np.zeros(6) if start.twist is None else start.twist
        stop_time = self._stop_time(arm, twist)
        rest = _rest_within(under_way, stop_time)
        if rest is not None:
            delay, pose = rest
            return PoseApproach(start, goal, self._duration(arm, pose, goal), delay, pose)
        stop = _half_speed_stop(start, twist, stop_time)
        # PoseApproach places that stop itself, on its rotation vector unwrapped (given as a
        # rotation, a run-on beyond π would be folded back: a slow stop turning the tool back).
        return PoseApproach(start, goal, self._duration(arm, stop, goal), stop_time)

    def _stop_time(self, arm: _ArmJacobian, twist: FloatArray) -> float:
        """How long (s) a stop from the twist ``twist`` (m/s, rad/s; all six axes) takes: the law's
        stop time, lengthened where the joints would decelerate past their acceleration bounds.

        The stop decelerates at most ``1.5·|ẋ|/T_s`` (:meth:`JointApproachPlanner.stop`); the
        joints, to first order, ``1.5·|J⁺·ẋ|/T_s``, held within their bounds (at high gains the
        law's stop time alone is short enough to pass them)."""
        return max(
            self.stop_time,
            float(np.max(_STOP_PEAK * np.abs(arm.inverse @ twist[self.rows]) / self.acceleration_limit)),
        )

    def _jacobian(self, q: FloatArray) -> FloatArray:
        """The frame Jacobian at ``q`` (rad) on the planner's axes (rows × n), base-aligned as
        :meth:`RobotModel.frame_jacobian`'s: Pinocchio's own array, no name looked up or copied
        (the predicted path takes 40 in turn)."""
        robot = self.robot
        jacobian = pin.computeFrameJacobian(
            robot.model, robot.data, robot.configuration(q), self._frame_id, pin.LOCAL_WORLD_ALIGNED
        )
        return jacobian if self._all_rows else jacobian[self.rows]

    def _arm_jacobian(self, q: FloatArray) -> _ArmJacobian:
        """:class:`_ArmJacobian` at ``q`` (rad)."""
        jacobian = self._jacobian(q)
        return _ArmJacobian(q, jacobian, np.linalg.pinv(jacobian, rcond=START_RCOND))

    def _duration(self, arm: _ArmJacobian, start: PoseReference, goal: PoseReference) -> float:
        """The duration (s) of the rest-to-rest move from ``start`` to ``goal`` (see the class
        docstring), the arm where ``arm`` was taken.

        Raises:
            TargetError: ``refuse_shortfall`` and the predicted joint path ends short of the goal,
                or more than :data:`SHORTFALL` of the move lies along a direction the start's
                Jacobian has lost (a singular direction).
        """
        q, jacobian = arm.q, arm.jacobian
        move = np.concatenate(
            (goal.position - start.position, start.rotation @ pin.log3(start.rotation.T @ goal.rotation))
        )[self.rows]
        # Near a singularity the arm does not follow the predicted path, and a move timed by it
        # alone passes the velocity limits; the first-order bound at the start is far longer
        # there (minutes: the arm crawls) and holds it in the limits.
        at_start = arm.inverse @ move  # rad per unit σ
        slowest = time_within_speed_limits(self.robot, QUINTIC_PEAK_SPEED * at_start)
        size = max(float(np.linalg.norm(move)), 1e-12)
        if self.refuse_shortfall:
            # Mostly along a direction the start's Jacobian has (nearly) lost: the predicted path
            # cannot see it either where its damping exceeds that singular value, and times the
            # move far too short for the joint speeds it takes.
            dropped = float(np.linalg.norm(jacobian @ at_start - move)) / size
            if dropped > SHORTFALL:
                raise TargetError(
                    f"the straight move there from the current reference leaves along a singular "
                    f"direction of {self.frame} ({dropped:.0%} of the move)"
                )
        moved = np.abs(at_start)
        if not self._linear(q, jacobian, at_start, move, size):
            along_path, q_end = self.joint_speed_time(q, move)
            slowest = max(slowest, along_path)
            moved = np.maximum(moved, np.abs(q_end - q))
            if self.refuse_shortfall:
                self._check_shortfall(q, q_end, move, size)
                self._check_reach(q, q_end, goal)
        elif self.refuse_shortfall:
            self._check_reach(q, q + at_start, goal)
        # Each joint's move as a rest-to-rest quintic within its acceleration bound (the path's
        # curvature left out, as in the speeds' first-order bound): at high gains the shortest
        # time alone makes short moves fast enough to pass it.
        accelerating = float(np.sqrt(QUINTIC_PEAK_ACCELERATION * np.max(moved / self.acceleration_limit)))
        return max(self.shortest, slowest, accelerating)

    def _linear(
        self, q: FloatArray, jacobian: FloatArray, at_start: FloatArray, move: FloatArray, size: float
    ) -> bool:
        """Whether the move is small enough to time on its first-order joint motion ``J⁺·ξ`` alone:
        at most :data:`LINEAR_MOVE` on every joint, met to 1 % by it, and the same at the end of
        that motion (heading into a singularity, a move 0.1 rad long at the start can need 0.6
        at its end: timed on the start alone, it drives achd_rnea's joint_4 at 3.6 times its limit)."""
        if float(np.abs(at_start).max()) > LINEAR_MOVE:
            return False
        if float(np.linalg.norm(jacobian @ at_start - move)) > 0.01 * size:
            return False
        at_end = self._jacobian(q + at_start)
        return float(np.abs(np.linalg.pinv(at_end, rcond=START_RCOND) @ move).max()) <= LINEAR_MOVE

    def _check_shortfall(self, q: FloatArray, q_end: FloatArray, move: FloatArray, size: float) -> None:
        """Refuse the move if the path predicted from ``q`` to ``q_end`` ends more than
        :data:`SHORTFALL` of it short (measured from the arm: it may stand off its reference).

        The miss is what is left from the path's end to where the move ends: a rotation of it is
        small where the path ends near its goal. The rotation the path made, ``log3`` of it, is
        at most π: a turn of π that the path ended a little past read as one the other way round,
        2π off (every half-turn of the tool refused, "200 % of the move short"; a review)."""
        begin = self.robot.frame_placement(q, self._frame_id)
        end = self.robot.frame_placement(q_end, self._frame_id)
        full = np.zeros(6)
        full[self.rows] = move
        miss = np.concatenate(
            (
                end.translation - begin.translation - full[:3],
                pin.log3(pin.exp3(full[3:]) @ begin.rotation @ end.rotation.T),
            )
        )
        shortfall = float(np.linalg.norm(miss[self.rows])) / size
        if shortfall > SHORTFALL:
            raise TargetError(
                f"the straight move there from the current reference passes a singularity of "
                f"{self.frame} (the predicted joint path ends {shortfall:.0%} of the move short)"
            )

    def _check_reach(self, q: FloatArray, q_end: FloatArray, goal: PoseReference) -> None:
        """Refuse ``goal`` where no joint angles within the limits bring the frame within
        :data:`REACH_POSITION` and :data:`REACH_ROTATION` of it on the planner's axes: from the
        predicted end ``q_end`` (a first guess), then from the arm at ``q``, :data:`REACH_ITERATIONS`
        Levenberg-Marquardt steps each (:meth:`_nearest`). (The frame's reach bound and the stretch
        margin, checked before, look at the position alone: a pose the wrist cannot turn to there
        passes them.)"""
        if goal is self._within_reach:
            return
        tolerance = np.array([REACH_POSITION, REACH_ROTATION])
        best = self._still_out_of_reach(goal, q, tolerance)
        if best is None:
            best = np.full(2, np.inf)
            for guess in (q_end, q):
                off = self._nearest(guess, goal)
                if (off <= tolerance).all():
                    self._within_reach, self._out_of_reach = goal, None
                    return
                if (off / tolerance).sum() < (best / tolerance).sum():
                    best = off
            self._out_of_reach = (goal, q.copy(), best)
        raise TargetError(
            f"{self.frame} cannot reach the target within the joint limits: the nearest pose found is "
            f"{best[0] * 1e3:.0f} mm and {best[1]:.2f} rad off it on the constrained axes (a law "
            "straining toward it would pass the joints' velocity limits)"
        )

    def _still_out_of_reach(
        self, goal: PoseReference, q: FloatArray, tolerance: FloatArray
    ) -> FloatArray | None:
        """The last refused goal's offset (:attr:`_out_of_reach`) where ``goal`` lies within
        :data:`REPEAT_POSITION` and :data:`REPEAT_ROTATION` of it on the planner's axes, the arm
        ``q`` within :data:`REPEAT_ARM` of where it was (the search starts from the arm: from
        elsewhere it may find the goal), and that offset stays beyond ``tolerance`` by more than
        the difference; else ``None`` (search)."""
        if self._out_of_reach is None:
            return None
        refused, arm, best = self._out_of_reach
        if float(np.abs(q - arm).max()) > REPEAT_ARM:
            return None
        apart = self._apart(goal.position - refused.position, pin.log3(goal.rotation @ refused.rotation.T))
        near = apart[0] <= REPEAT_POSITION and apart[1] <= REPEAT_ROTATION
        return best if near and (best > tolerance + apart).any() else None

    def _nearest(self, q: FloatArray, goal: PoseReference) -> FloatArray:
        """How far (m, rad) the frame stays from ``goal`` on the planner's axes after
        :data:`REACH_ITERATIONS` Levenberg-Marquardt steps from ``q`` (rad) within the joint limits;
        they stop once within :data:`REACH_POSITION` and :data:`REACH_ROTATION`.

        ``q`` is first clipped into the limits (a guess past one had a pose reachable only past it
        taken: 40 of 40 with joint_4 past its limit, a review). A joint at a limit that the step
        would push on past it is left out of the step, which is solved again without it: clipped
        instead, the step stalled there (13 of 118 goals with a joint at its limit refused). The
        rotation rows are those of ``log3(R_goal·Rᵀ)``'s derivative (``−Jlog3·J_ω``): far from 0, as
        a free tilt makes it, it is no longer ``−J_ω``'s. Rows and error are weighted by the
        tolerance (:attr:`_reach_weight`), and the damping adapts (Levenberg-Marquardt), from
        :data:`REACH_DAMPING`: halved after a step that lowered the weighted squared error, a step
        that did not undone and the damping quadrupled. Held at 0.1 (m, rad), the search crawled
        once a joint sat at its limit (33 → 18.5 mm in 45 steps, a 62 mm move refused; a review)."""
        lower, upper = self.robot.position_lower, self.robot.position_upper
        q = np.clip(q, lower, upper)
        off, error, turn = self._off(q, goal)
        jacobian: FloatArray | None = None  # at q, taken once a step from q is needed
        damping = REACH_DAMPING
        for _ in range(REACH_ITERATIONS):
            if off[0] <= REACH_POSITION and off[1] <= REACH_ROTATION:
                break
            if jacobian is None:
                jacobian = self._reach_jacobian(q, turn)
            step = self._reach_step(jacobian, error, damping)
            past = ((q + step < lower) & (q <= lower)) | ((q + step > upper) & (q >= upper))
            if past.any():
                step = self._reach_step(np.where(past, 0.0, jacobian), error, damping)
            tried = np.clip(q + step, lower, upper)
            tried_off, tried_error, tried_turn = self._off(tried, goal)
            if tried_error.dot(tried_error) < error.dot(error):
                q, off, error, turn, jacobian = tried, tried_off, tried_error, tried_turn, None
                damping = max(0.5 * damping, MIN_REACH_DAMPING)
            elif damping >= MAX_REACH_DAMPING:
                break  # no step, however short, lowers the weighted error: a minimum (or a limit's)
            else:
                damping = min(4.0 * damping, MAX_REACH_DAMPING)
        return off

    def _reach_step(self, jacobian: FloatArray, error: FloatArray, damping: float) -> FloatArray:
        """The least-squares joint step (rad) damped by ``damping`` taking the weighted ``error``
        to 0 to first order through the weighted ``jacobian`` (its derivative, rows × n)."""
        square = jacobian @ jacobian.T
        square[np.diag_indices_from(square)] += damping * damping
        return jacobian.T @ np.linalg.solve(square, error)

    def _off(self, q: FloatArray, goal: PoseReference) -> tuple[FloatArray, FloatArray, FloatArray]:
        """At ``q``: the frame's distance (m) and rotation (rad) from ``goal`` on the planner's axes,
        its error ``e = [p_goal − p; log3(R_goal·Rᵀ)]`` on them (base axes, as the laws read it)
        weighted by :attr:`_reach_weight`, and ``R_goal·Rᵀ``."""
        frame = self.robot.frame_placement(q, self._frame_id)
        turn = goal.rotation @ frame.rotation.T
        error = np.concatenate((goal.position - frame.translation, pin.log3(turn)))
        return self._apart(error[:3], error[3:]), error[self.rows] * self._reach_weight, turn

    def _apart(self, offset: FloatArray, rotation: FloatArray) -> FloatArray:
        """How far apart two poses are on the planner's axes: the norms (m, rad) of the tracked
        components of the position ``offset`` and of the rotation vector ``rotation``."""
        return np.array(
            [np.linalg.norm(offset[self._tracked[:3]]), np.linalg.norm(rotation[self._tracked[3:]])]
        )

    def _reach_jacobian(self, q: FloatArray, turn: FloatArray) -> FloatArray:
        """``−∂e/∂q`` at ``q`` on the planner's axes (rows × n, weighted as :meth:`_off`'s ``e``),
        ``turn`` being :meth:`_off`'s ``R_goal·Rᵀ`` there: ``R_goal·Rᵀ`` changes by ``−[ω]×`` on its
        right as ``R`` turns by ``ω``, so ``d log3 = −Jlog3·ω``."""
        robot = self.robot
        full = pin.computeFrameJacobian(
            robot.model, robot.data, robot.configuration(q), self._frame_id, pin.LOCAL_WORLD_ALIGNED
        )
        derivative = np.vstack((full[:3], pin.Jlog3(turn) @ full[3:]))[self.rows]
        return self._reach_weight[:, None] * derivative

    def _keeps_course(self, approach: PoseApproach) -> bool:
        """Whether one quintic from the moving start stays between its start and goal on the
        planner's axes of ``[p; R₀·θ]`` (within :data:`COURSE_TOLERANCE`; base axes,
        :meth:`PoseApproach.base_path`: on ``θ``, in the start's own axes, a planner on ``x, y, z,
        rz`` had bounded the turn about another axis and let the tool turn 0.167 rad the wrong
        way about ``z``, a review). Its speed is not checked:
        a moving pose reference comes from an earlier approach, planned within the speed share.
        A yes or no (:meth:`~.trajectory.JointTrajectory.within_limits`): mostly no, for a
        reference to turn back, which a sample past the bounds settles."""
        path = approach.base_path()
        begin, end = path.positions[0], path.positions[-1]
        slack = COURSE_TOLERANCE * np.abs(end - begin) + COURSE_MARGIN
        lower = np.where(self._tracked, np.minimum(begin, end) - slack, -np.inf)
        upper = np.where(self._tracked, np.maximum(begin, end) + slack, np.inf)
        return path.within_limits(lower, upper, np.inf)

    def joint_speed_time(self, q: FloatArray, move: FloatArray) -> tuple[float, FloatArray]:
        """The shortest ``T`` (s) keeping every joint at most :data:`SPEED_SHARE` of its velocity
        limit along the predicted joint path of the move ``ξ`` (a constant twist per unit ``σ`` on
        the planner's axes), and the joint angles that path ends at.

        With ``σ(τ) = 10τ³ − 15τ⁴ + 6τ⁵``, ``τ = t/T``, the joints move at ``q̇ = q'(σ)·σ'(τ)/T``,
        ``q'(σ) = Jᵀ·(J·Jᵀ + λ²·I)⁻¹·ξ`` (damped least squares, ``J = J(q)`` on the axes, ``λ`` =
        :data:`PATH_DAMPING`), integrated from ``q`` over :data:`PATH_SAMPLES` steps of ``τ``:
        each joint speed is judged where along the move it happens, with the Jacobian of that
        point. Each step needs the point before it; the speeds are judged once the path is done.
        """
        q = np.array(q, dtype=np.float64)
        rates = np.empty((PATH_SAMPLES, q.size))  # q'(σ) on each step (rad per unit σ)
        for k, step in enumerate(_PATH_STEPS):
            jacobian = self._jacobian(q)
            rate = jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + self._path_damping, move)
            rates[k] = rate
            q += step * rate
        # σ'(τ) = 30·(τ·(1 − τ))² at each step's middle, T = 1 s: the speeds per unit 1/T.
        return time_within_speed_limits(self.robot, rates * 30.0 * _PATH_SPEED_PROFILE[:, None]), q


__all__ = [
    "APPROACH_WORDING",
    "MAX_STOP_OVERSPEED",
    "SPEED_SHARE",
    "STOP_WORDING",
    "JointApproachPlanner",
    "PoseApproach",
    "PoseApproachPlanner",
    "approach_times",
    "time_within_speed_limits",
]
