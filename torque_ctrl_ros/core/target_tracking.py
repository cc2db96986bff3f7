"""Target tracking: how accepted targets become a controller's reference, joint state by joint state.

The controller node's target sources (:mod:`torque_ctrl_ros.nodes.targets`) subscribe and turn
messages into numpy data, checked by :mod:`.target_checks`; the trackers here decide what the
reference is. One tracker per controller family:

* :class:`JointTargetTracker` (``computed_torque``): joint targets, trajectories and stops;
* :class:`PoseTargetTracker` (``achd_rnea``): the tool pose;
* :class:`TaskTargetTracker` (``qpid``, ``hqpid``): one target per task.

Each is driven by ``submit…`` calls (already parsed targets) and by ``reference(state)`` for
every accepted joint state (``state.stamp`` in s, the state clock), and reports a target it
refuses when it takes effect through its ``refuse`` callback (the node counts and logs it).
The rules they share:

* A submitted target is *pending*: it takes effect in the next ``reference`` call, at that
  state's stamp. The reference therefore depends only on the state stream (deterministic in
  lockstep), never on when a message happened to arrive. The node asks ``reference(state,
  plan=False)`` and plans with ``take_due(state)`` once the state's command is out: the
  approach still starts at that state, from the reference given there, so the references are
  the same.
* A frame or joint target is planned at most once per :data:`MIN_TAKE_PERIOD` of the states'
  stamps (per task for the QP controllers); one submitted sooner stays pending, replaced by any
  newer one, until the period is over. A lone target is taken at the next state; a trajectory
  or a stop always is.
* A target is reached along an approach from the current reference, its velocity and
  acceleration included (:mod:`.approach`), never stepped into (a trajectory is followed as
  given); the move and the stamp it started at are a :class:`TimedMove`. When it has arrived,
  its end is held at rest.
* The target under way sent again changes nothing (:func:`same_target`): a device that keeps
  publishing its last pose would otherwise replan from the moving reference every message,
  overshoot the target (38 mrad on joint_1) and ring for seconds.
* ``pause(since, until)``: no torque was computed over that span (s, the state clock: a
  fallback, the arm on the safe torque). Every move's start moves on by the pause, so the move
  takes up where it stood when the safe torque took over rather than where it would be by now
  (0.35 rad ahead of the held arm after a 0.4 s fallback: 14 N·m on the first torque).
* ``reset()``: the targets are forgotten (after a stop, or a simulator restart), those still
  pending too; the next state's pose is held. The one exception is a joint trajectory stamped
  to start after the last state the tracker saw: it still starts at its stamp after a stop on
  the same clock, and is dropped (and refused) only after ``reset(clock_reset=True)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .approach import STOP_WORDING, JointApproachPlanner, PoseApproach, PoseApproachPlanner
from .constrained_dynamics import AXIS_NAMES
from .controllers import HQPID, QPID, AchdRnea, ComputedTorque, PoseReference
from .errors import TargetError
from .qp.tasks import CartesianTarget, FrameTask, Task
from .robot import RobotModel
from .trajectory import JointTrajectory, check_motion
from .types import JointReference, JointState
from .validation import FloatArray

START_TOLERANCE = 0.01
"""Farthest (rad, on each joint) a trajectory's first point at ``time_from_start`` 0 may be from
the current reference or the measured position (the nearer of the two, joint by joint): the
value of MoveIt's ``allowed_start_tolerance``, which MoveIt checks against the measured state
its first point is taken from. Such a point is taken at once, so a point farther away would make
the reference jump: 3 rad away on joint_1, the torques clipped joint by joint spin joints 3, 5
and 7, which have no error, to 13–16 times their velocity limits. Near the measured position the
jump only takes the error down (an arm lagging its reference under a load the model lacks:
0.044 rad on joint_6 with 20 g more).

Its velocities, if given, must be within :attr:`JointTargetTracker.velocity_step_tolerance` of
the reference's (:func:`step_tolerances`); the trajectory then starts from the reference's
velocity (positions only: always), so it does not step: taken as given, a first point with
velocity 0 steps a reference moving 1.125 rad/s on joint_1 to rest, −5.75 N·m at once. With
accelerations given (quintics) it starts from the reference's acceleration too: they are not
compared, the first segment blends from the reference's to the next point's (held to the
acceleration bound like any segment). Without them (cubics, C¹ only) the acceleration steps
there as at every waypoint: taking over an approach under way, 7.5–7.9 rad/s² on joint_2 and a
4.1–4.3 N·m torque step under computed torque at kp 100 (a review). Compared, the
time-optimal trajectories MoveIt plans at full acceleration scaling, which start the wrist at
~10 rad/s² from rest, would be refused."""

MAX_START_DELAY = 60.0
"""Latest start (s after the node's clock) a trajectory may ask for: a later ``header.stamp`` is
taken for one on another clock (a sender on wall time, ~1.8e9 s, to a node on sim time), which
would otherwise wait for ever."""

SLOW_APPROACH = 10.0
"""Approach duration (s) beyond which a frame target is taken with a warning: the planner times
it so that no joint passes half its velocity limit along the predicted path, and near the base's
axis or a singularity a short Cartesian move asks large joint motions (qpid's tool from the
``home`` keyframe: (0.1, 0, 0.3) m planned over 65 s, (0, 0, 0.1) m over 183 s, the arm seeming
not to answer; from home rounded to 0.01 rad, over 74 s and 124 s: that close to the axis, the
duration follows the start pose closely)."""

MIN_TAKE_PERIOD = 0.01
"""Shortest time (s, between the stamps of the states they are taken at) from one frame or joint
target planned to the next: of a stream faster than that, only the newest target is planned once
a period, at most 100 plans a second. A plan takes a few tenths of a ms on the control thread, on
top of the controller's own step, so planning every target of a 1 kHz stream makes most steps
late; once per 10 ms takes most of that back, and the tool trails a streamed path by about as
much either way (each target is approached over 0.24 s at least). (Figures: docs/performance.md,
"Measurements behind the core's choices".)"""

LATE_LEAD = MIN_TAKE_PERIOD
"""Least time (s) from the state a late trajectory takes effect at to the first point it keeps.

A trajectory stamped ``late`` s before that state drops its points already due and reaches the
next one from the current reference. Were that point kept however soon it comes, lateness alone
would make the first segment arbitrarily short: a 1 kHz-dense 0.1 rad minimum-jerk trajectory
stamped 0.99 ms late left 10 µs to its next point, 6927 rad/s² (accepted 0.5 ms late, refused
0.9 ms late: a sender stamping ``now`` hits either by its transport delay). Points due at most
this long after the state are dropped too (one due exactly ``LATE_LEAD`` after it included), so
the first segment lasts at least ``LATE_LEAD``, and the reference, starting where the trajectory
did, covers what the trajectory covers in ``t_k`` within ``t_k − late ≥ LATE_LEAD``: for ``late``
up to ``LATE_LEAD``, on average at most twice as fast. Transport delays
and a late control step or two are well within 10 ms, the period the tracker already takes for a
plan to matter (:data:`MIN_TAKE_PERIOD`); a segment shorter than a control period would not even
be sampled. A trajectory whose remaining points all come sooner keeps its last point, reached
``LATE_LEAD`` after the state."""

Report = Callable[[str], object]
"""Where a tracker reports a refusal or a warning (one line, naming what it is about); what it
returns is ignored."""


_RESET_REASON = "control resumes holding where the arm is; send it again to move"
"""Why a target received but not yet taken is dropped when control resumes after a stop or a
clock reset: it was meant for the motion the stop ended, and an arm resuming after a fault does
not set off on its own."""


def _unreported(_message: str) -> None:
    """A :data:`Report` that drops the message."""


def _warn_dropped(warn: Report, what: str) -> None:
    """Say that ``what`` (``joint target``, ``target pose``, ``tool target``…), received but not yet
    taken, is dropped by a reset (:data:`_RESET_REASON`)."""
    warn(f"{what} received while the arm was not controlled dropped: {_RESET_REASON}")


class _PlanPacer:
    """The plan throttle of one target stream: a target is planned at most once per
    :data:`MIN_TAKE_PERIOD` of the state stamps (a tracker holds one per stream: per task for the
    QP controllers).

    It remembers the stamp (s) of the state the last target was planned at, ``None`` since the
    start or a reset (:meth:`forget`). :meth:`may_plan` is asked at every state while a target is
    pending: one call, one comparison.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: float | None = None

    def may_plan(self, stamp: float) -> bool:
        """Whether a target may be planned at the state stamp ``stamp`` (s): none planned since the
        start or a reset, the last one :data:`MIN_TAKE_PERIOD` or more before, or the clock went
        back."""
        last = self._last
        # 1 ns slack: stamps are nanoseconds read as float seconds, and 0.011 − 0.001 < 0.01 in them.
        return last is None or not 0.0 <= stamp - last < MIN_TAKE_PERIOD - 1e-9

    def planned(self, stamp: float) -> None:
        """A target was planned (taken or refused) at the state stamp ``stamp`` (s): the next waits
        :data:`MIN_TAKE_PERIOD` from it."""
        self._last = stamp

    def forget(self) -> None:
        """A reset: the next target may be planned at once."""
        self._last = None


def _warn_if_slow(warn: Report, what: str, duration: float) -> None:
    """Say so where a target taken is approached over more than :data:`SLOW_APPROACH`."""
    if duration > SLOW_APPROACH:
        warn(
            f"{what}: taken, approached over {duration:.0f} s: along the predicted joint path some "
            "joint needs a large motion for this move (near the base's axis or a singularity), and "
            "the approach keeps every joint within half its velocity limit"
        )


class TargetTracker(Protocol):
    """What every tracker offers the node (besides its own ``submit…`` methods)."""

    def reference(self, state: JointState, plan: bool = True) -> Any:
        """The controller's reference at ``state`` (``state.stamp`` in s); ``plan`` false: a
        due joint or frame target is left for :meth:`take_due`."""

    def take_due(self, state: JointState) -> bool:
        """Plan the joint or frame target due at ``state`` that :meth:`reference` left; whether
        one was taken. Its approach starts at ``state``, from the reference given there, so the
        references from the next state on are those planning inside :meth:`reference` gives (the
        node calls it once the command is out)."""

    def pause(self, since: float, until: float) -> bool:
        """No torque was computed from ``since`` to ``until`` (s, the state clock): a move under
        way takes up where it stood. Returns whether a target not yet started was held up too (a
        trajectory stamped to start during the pause), which :meth:`describe` does not name."""

    def reset(self, clock_reset: bool = False) -> None:
        """Forget the targets, pending ones included (``clock_reset``: the clock went back, a
        simulator restart; only a trajectory stamped for later tells the two apart)."""

    def describe(self) -> str:
        """One word on what is tracked, for /diagnostics."""


def same_target(target: PoseReference | ArrayLike, last: PoseReference | ArrayLike | None) -> bool:
    """Whether ``target`` is ``last`` bit for bit (the same target sent again): poses by position
    and rotation (:class:`PoseReference`), anything else as arrays (joint positions, a position,
    a rotation matrix)."""
    if last is None:
        return False
    if isinstance(target, PoseReference):
        return (
            isinstance(last, PoseReference)
            and np.array_equal(target.position, last.position)
            and np.array_equal(target.rotation, last.rotation)
        )
    return not isinstance(last, PoseReference) and bool(np.array_equal(target, last))


# ------------------------------------------------------------------ moves in time
S = TypeVar("S", covariant=True)


class Move(Protocol[S]):
    """A motion of a reference sampled by the time (s) since it started: a
    :class:`~.trajectory.JointTrajectory` or a :class:`~.approach.PoseApproach`. From
    ``duration`` on it stands at its end, at rest."""

    @property
    def duration(self) -> float: ...

    def sample(self, t: float) -> S: ...


M = TypeVar("M", bound=Move[Any])
R = TypeVar("R")


@dataclass(eq=False)
class TimedMove(Generic[M, R]):
    """``move`` started at the state stamp ``t0`` (s), sampled at state stamps.

    :meth:`shift` moves ``t0`` on by a pause, so that the move takes up where it stood.

    Attributes:
        move: the motion (``R`` is what its ``sample`` returns).
        t0: the state stamp (s) its time 0 falls on.
    """

    move: M
    t0: float

    def sample(self, stamp: float) -> R:
        """The reference at the state stamp ``stamp`` (s): the move ``stamp − t0`` s in."""
        sample: R = self.move.sample(stamp - self.t0)
        return sample

    def arrived(self, stamp: float) -> bool:
        """Whether the move stands at its end at ``stamp`` (s), at rest."""
        return stamp - self.t0 >= self.move.duration

    def under_way(self, stamp: float) -> tuple[M, float]:
        """``(move, s into it)`` at ``stamp``: what a planner continues from."""
        return self.move, stamp - self.t0

    def shift(self, dt: float) -> None:
        """Start ``dt`` s later (a pause of ``dt`` s)."""
        self.t0 += dt


JointMove = TimedMove[JointTrajectory, tuple[FloatArray, FloatArray, FloatArray]]
"""A joint trajectory in time: samples ``(q, q̇, q̈)`` (rad, rad/s, rad/s²)."""

PoseMove = TimedMove[PoseApproach, PoseReference]
"""A pose approach in time: samples a :class:`PoseReference`."""


# ------------------------------------------------------------------ joint targets and trajectories
class TrajectoryPoints(NamedTuple):
    """A trajectory's waypoints in model order (``m`` points, ``n`` joints)."""

    times: FloatArray
    """``(m,)`` s from the trajectory's start, increasing."""
    positions: FloatArray
    """``m × n`` rad."""
    velocities: FloatArray | None
    """``m × n`` rad/s, or ``None`` (estimated)."""
    accelerations: FloatArray | None
    """``m × n`` rad/s², or ``None``; given only with velocities."""

    def select(self, rows: slice | NDArray[np.bool_]) -> TrajectoryPoints:
        """The points at ``rows``, their times unchanged."""
        return TrajectoryPoints(
            self.times[rows],
            self.positions[rows],
            None if self.velocities is None else self.velocities[rows],
            None if self.accelerations is None else self.accelerations[rows],
        )


class JointMotion(NamedTuple):
    """Where and how a joint reference moves: what a trajectory or an approach starts from."""

    q: FloatArray
    """rad."""
    v: FloatArray | None
    """rad/s, ``None`` for 0."""
    a: FloatArray | None
    """rad/s², ``None`` for 0."""


def step_tolerances(kp: ArrayLike, kd: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(velocity (rad/s), acceleration (rad/s²))`` per joint: how far the reference's velocity
    and acceleration may step at once, for a PD law with gains ``kp`` (1/s²) and ``kd`` (1/s).

    The law commands ``q̈_ref + kp·e + kd·ė``; :data:`START_TOLERANCE` lets the position step by
    0.01 rad, i.e. the command by ``kp·0.01``, and the same step is let through for ``kd·Δq̇``
    and ``Δq̈``: ``Δq̇ ≤ kp·0.01/kd``, ``Δq̈ ≤ kp·0.01`` (0.05 rad/s and 1 rad/s² with kp 100, kd
    20; ``inf`` where ``kd`` is 0).

    The velocity tolerance bounds how far a trajectory's first point at time 0 may set a velocity
    other than the reference's (the trajectory then starts from the reference's). Both bound the
    step of stopping at once: a trajectory of one point at time 0 (at rest there) is refused
    from a reference moving faster, and a stop (an empty trajectory) holds such a slow reference
    at once instead of running it to rest. A first point's acceleration is never compared (the
    first segment blends into it: :data:`START_TOLERANCE`).
    """
    step = START_TOLERANCE * np.asarray(kp, dtype=np.float64)
    kd = np.asarray(kd, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(kd > 0.0, step / kd, np.inf), step


class JointMode(Enum):
    """What a :class:`JointTargetTracker`'s reference follows."""

    START = auto()
    """Nothing yet: the next state's position is held."""
    HOLD = auto()
    """:attr:`JointTargetTracker.held`, at rest."""
    STOPPING = auto()
    """A stop (:meth:`~.approach.JointApproachPlanner.stop`); where it ends is held after it."""
    JOINT_TARGET = auto()
    """The approach to :attr:`JointTargetTracker.goal`; the goal is held after it."""
    TRAJECTORY = auto()
    """A trajectory; its last point is held after it."""

    @property
    def label(self) -> str:
        """The word /diagnostics shows: ``joint_target``, ``trajectory``, else ``hold``."""
        if self is JointMode.JOINT_TARGET:
            return "joint_target"
        if self is JointMode.TRAJECTORY:
            return "trajectory"
        return "hold"


@dataclass(frozen=True)
class PendingTarget:
    """A joint target waiting for the next state: ``q`` (rad, model order), held at rest."""

    q: FloatArray


@dataclass(frozen=True)
class PendingStop:
    """A stop (an empty trajectory) waiting for the next state."""


@dataclass(frozen=True)
class PendingTrajectory:
    """A trajectory waiting for its start: ``stamp`` (s, the state clock; 0: the next state)."""

    stamp: float
    points: TrajectoryPoints


PendingJoint = PendingTarget | PendingStop | PendingTrajectory


class JointTargetTracker:
    """Joint targets, trajectories and stops for :class:`~.controllers.ComputedTorque`.

    * A joint target (:meth:`submit_target`) is reached along a quintic from the current
      reference, planned with the law's gains (:class:`~.approach.JointApproachPlanner`: every
      joint at most half its velocity limit, 0.24 s at least with the default ``kp`` 100, 2.7 s
      for 1 rad on joint_1; a moving reference goes on into it when that stays on course, within
      0.625 of the limits, else stops first), and then held until replaced; the target under way
      sent again changes nothing.
    * A trajectory (:meth:`submit_trajectory`, stamp 0: start at the next state) starts from the
      current reference when its first point is later than 0, else at that point, which must then
      lie within :data:`START_TOLERANCE` of the reference or of the measured position, with the
      reference's velocity (given velocities may differ by :attr:`velocity_step_tolerance`, else it
      is refused) and, for a quintic, its acceleration (given accelerations are blended into over
      the first segment; a cubic's acceleration steps there, see :data:`START_TOLERANCE`). One
      stamped later than the last state seen waits for its stamp while the active target runs on
      (switched early, the reference would stand still at the start until the stamp and then set
      off: a torque step each time), and starts whole at the first state at or after its stamp, as
      if stamped 0 there (the states come no closer to the stamp than their spacing: a fraction of a
      period late, it was taken as late, which dropped its first point unchecked); held up by a stop
      of the control (:meth:`pause`, :meth:`reset`), it starts whole once the states resume. One
      stamped at or before the last state seen when it arrives (a state came after its stamp: it is
      late) drops the points already due and reaches the next one from the current reference (no
      sooner than :data:`LATE_LEAD` after the state: points due within it are dropped too); one that
      ended before it is refused. After its end the last point is held. On continuous joints every
      segment takes the short way round (the waypoints are unwrapped against the one before, the
      start first). Its motion is held to the position and velocity limits and to
      :attr:`acceleration_limit` (25.9 rad/s² on the Gen3's joint_1): checked when submitted, and
      the segments from the start again when it takes effect.
    * A stop (:meth:`submit_stop`) brings a moving reference smoothly to rest and holds it there.
    """

    def __init__(self, controller: ComputedTorque, *, refuse: Report, warn: Report = _unreported) -> None:
        """``refuse``: where a target refused when it takes effect is reported; ``warn``: where a
        stop that could not be run smoothly is, and a target received but not yet taken that
        :meth:`reset` drops."""
        self.robot: RobotModel = controller.robot
        kp, kd = controller.config.kp, controller.config.kd
        self.planner = JointApproachPlanner(self.robot, kp, kd)
        #: Largest |q̈| (rad/s²) per joint a trajectory may ask: the planner's own bound
        #: (:func:`~.trajectory.acceleration_limits`).
        self.acceleration_limit: FloatArray = self.planner.acceleration_limit
        #: How far the reference's velocity may step at once (rad/s per joint,
        #: :func:`step_tolerances`): a first point at time 0 setting another, a stop holding a
        #: reference this slow at once.
        self.velocity_step_tolerance: FloatArray
        #: How far its acceleration may (rad/s² per joint): a lone point at time 0, a stop at once.
        self.acceleration_step_tolerance: FloatArray
        self.velocity_step_tolerance, self.acceleration_step_tolerance = step_tolerances(kp, kd)
        self._refuse = refuse
        self._warn = warn
        self.mode = JointMode.START
        #: The point held (:attr:`JointMode.HOLD`), the same object every state.
        self.held: JointReference | None = None
        #: The joint target (rad) of :attr:`JointMode.JOINT_TARGET`.
        self.goal: FloatArray | None = None
        #: The move the reference follows (a stop, an approach, a trajectory), its end held after it.
        self.active: JointMove | None = None
        #: The target waiting for the next state (a trajectory: for its stamp).
        self.pending: PendingJoint | None = None
        #: The stamp (s) of the last state :meth:`reference` was asked for (0 before any): a
        #: pending trajectory stamped after it waits for its stamp (:meth:`reset` keeps it).
        self._last_stamp = 0.0
        self._seen_state = False  # whether :meth:`reference` was asked for any state yet
        #: Whether the pending trajectory waited for its stamp (stamped after the last state seen,
        #: or a state came before it) or was kept by :meth:`reset`: it then starts whole when it
        #: takes effect, not as a late one.
        self._waited = False
        #: Plans joint targets at most once per :data:`MIN_TAKE_PERIOD`.
        self._pacer = _PlanPacer()

    # ---------------------------------------------------------------- targets
    def submit_target(self, q: FloatArray) -> None:
        """Hold ``q`` (rad, model order, within the limits), approached from the next state on
        (from the first state :data:`MIN_TAKE_PERIOD` after the last joint target planned).

        A pending trajectory (waiting for its stamp, or for the next state) is replaced, which is
        said; the target under way sent again changes nothing, and leaves it pending (a device
        re-sending its last target had dropped it without a word, a review)."""
        waiting = self.pending
        if isinstance(waiting, PendingTrajectory):
            if self.mode is JointMode.JOINT_TARGET and same_target(q, self.goal):
                return
            self._warn_replaced(waiting, "a joint target")
        self.pending = PendingTarget(q)

    def _warn_replaced(self, waiting: PendingTrajectory, by: str) -> None:
        """Say that the pending trajectory ``waiting`` was replaced by ``by`` before it started."""
        self._warn(
            f"joint trajectory stamped {waiting.stamp:.3f} s, pending, replaced by {by} before it started"
        )

    def submit_stop(self) -> None:
        """Stop the reference at the next state (an empty trajectory).

        A moving reference (of a trajectory, an approach or a stop) stops along
        :meth:`~.approach.JointApproachPlanner.stop`: its velocity and acceleration carried on,
        at rest ``q̇·T_s/2`` further on after ``T_s`` (0.24 s with kp 100), so the torque does not
        step. Stepped to rest at once, a reference moving 1.125 rad/s on joint_1 would ask −5.75
        N·m and the arm overshoot the held point by 0.041 rad; the smooth stop runs on 0.135 rad.
        A reference moving within :func:`step_tolerances` is held at once where it stands (the
        step it asks is no larger than a start's); from a hold, the point held stays (where the
        arm is only before any reference). A pending trajectory is dropped, which is said.
        """
        if isinstance(self.pending, PendingTrajectory):
            self._warn_replaced(self.pending, "a stop (an empty trajectory)")
        self.pending = PendingStop()

    def submit_trajectory(self, points: TrajectoryPoints, stamp: float, now: float) -> None:
        """Follow ``points`` from ``stamp`` (s, the state clock; 0: from the next state), ``now``
        (s) being the node's clock; replaces a pending target.

        Raises:
            TargetError: its motion between the waypoints passes a position, velocity or
                acceleration limit; ``stamp`` is negative or more than :data:`MAX_START_DELAY`
                after ``now``.
        """
        # The start is added when it takes effect, where the first waypoint's estimated velocity
        # changes with it (0 here): that first segment is checked then, with the next. Checked
        # here, it would refuse motions that never run but lie within the limits. A first point
        # at time 0 takes the reference's velocity and acceleration then, which changes its
        # segment only from a moving one.
        first = 1 if points.times[0] > 0.0 and points.velocities is None else 0
        if points.accelerations is not None:
            # The first segment's bounds are widened to its first point's (a start's, where the
            # reference stands); a waypoint's own acceleration is the user's, held here (else
            # refused only once the trajectory takes effect, up to a minute after "received"). At
            # time 0 too: that point's acceleration gives way to the reference's when it takes
            # effect, but one beyond the bound widened the check of its segment here, which then
            # failed only then (60 rad/s² against 25.85: "received", refused 30 s later; a review).
            over = np.flatnonzero(np.abs(points.accelerations[0]) > self.acceleration_limit)
            if over.size:
                j = int(over[0])
                a, bound = points.accelerations[0, j], self.acceleration_limit[j]
                raise TargetError(
                    f"trajectory: point 0 accelerates {self.robot.joint_names[j]} at {a:.2f} rad/s², above "
                    f"its bound {bound:.2f} rad/s² (where the inertial torque alone reaches an effort limit)"
                )
        check_motion(
            self.robot,
            JointTrajectory(*points, continuous=self.robot.continuous),
            first,
            acceleration_limit=self.acceleration_limit,
        )
        if stamp < 0.0:
            raise TargetError(
                f"trajectory header.stamp {stamp:.3f} s is negative (0 starts it at the next state)"
            )
        if stamp - now > MAX_START_DELAY:
            raise TargetError(
                f"trajectory header.stamp {stamp:.3f} s is {stamp - now:.0f} s after this node's clock "
                f"({now:.3f} s; more than {MAX_START_DELAY:g} s): another clock (wall time to a node on "
                "sim time)?"
            )
        self.pending = PendingTrajectory(stamp, points)
        # Stamped after the last state seen, no state missed it: due at the next one, which falls
        # a fraction of a period after the stamp, it starts whole (taken as that fraction late,
        # its first point at time 0 was dropped unchecked and the reference ran to the next one
        # from wherever it stood; a review).
        self._waited = self._seen_state and stamp > self._last_stamp

    # ---------------------------------------------------------------- reference
    def reference(self, state: JointState, plan: bool = True) -> JointReference:
        """The reference at ``state`` (its stamp in s; its position where nothing is held yet),
        after the pending target took effect if due (a joint target only with ``plan``: else
        :meth:`take_due` plans it; a stop and a trajectory take effect here)."""
        self._last_stamp = state.stamp
        self._seen_state = True
        if self.pending is not None and self._due(state.stamp):
            if plan or not isinstance(self.pending, PendingTarget):
                self._activate(state)
        elif isinstance(self.pending, PendingTrajectory):
            self._waited = True
        if self.active is not None:
            return JointReference(*self.active.sample(state.stamp))
        if self.held is None:
            self.held = JointReference(np.array(state.q, dtype=np.float64))
            self.mode = JointMode.HOLD
        return self.held

    def take_due(self, state: JointState) -> bool:
        """Plan the joint target :meth:`reference` left at ``state`` (:meth:`TargetTracker.take_due`)."""
        if isinstance(self.pending, PendingTarget) and self._due(state.stamp):
            self._activate(state)
            return True
        return False

    def current(self, state: JointState) -> JointMotion:
        """The reference at ``state`` before a new target takes over."""
        if self.active is not None:
            return JointMotion(*self.active.sample(state.stamp))
        if self.held is not None:
            return JointMotion(self.held.q, self.held.v, self.held.a)
        return JointMotion(np.array(state.q, dtype=np.float64), None, None)

    def pause(self, since: float, until: float) -> bool:
        """No torque was computed from ``since`` to ``until`` (s): the move takes up where it
        stood, and a pending trajectory stamped before ``until`` (``0 < stamp < until``) starts
        as much later as the pause held it up: at ``stamp + until − max(stamp, since)``, i.e. at
        ``until`` when its stamp fell in the pause, ``until − since`` later when it was due
        before (started late, it would be compressed into the time left: 1 s asked, 0.6 s run).
        Returns whether such a pending trajectory was held up."""
        if self.active is not None:
            self.active.shift(until - since)
        pending = self.pending
        if isinstance(pending, PendingTrajectory) and 0.0 < pending.stamp < until:
            stamp = pending.stamp
            self.pending = PendingTrajectory(stamp + until - max(stamp, since), pending.points)
            return True
        return False

    def reset(self, clock_reset: bool = False) -> None:
        """Forget the active target and the pending one: hold where the arm is at the next state.

        Pending and dropped, with a warning: a joint target, a trajectory due at the next state
        (stamp 0, or one not after the last state seen), all meant for the motion the reset ended
        (a pending stop is dropped without one: the arm holds anyway). Kept: a
        trajectory stamped after the last state seen, which still starts at its stamp after a
        stop on the same clock (one sent while the arm was stopped is meant to run); after
        ``clock_reset`` (a simulator restart) it is dropped too and refused, as its stamp belongs
        to the timeline the clock left. A kept one whose stamp passes before the states resume
        starts whole at the first state after them, as after :meth:`pause` (taken as late, its
        points due meanwhile were dropped and the rest run in the time left: a 2 s move resumed
        1.3 s late at 2.9 times its speed)."""
        self.mode, self.held, self.goal, self.active = JointMode.START, None, None, None
        self._pacer.forget()
        pending, self.pending = self.pending, None
        if (
            isinstance(pending, PendingTrajectory)
            and pending.stamp > 0.0
            and (pending.stamp > self._last_stamp or clock_reset)
        ):
            if not clock_reset:
                self.pending = pending
                self._waited = True
                return
            self._refuse(
                f"trajectory stamped {pending.stamp:.3f} s dropped: the clock went back "
                "(simulator restarted?)"
            )
        elif pending is not None and not isinstance(pending, PendingStop):
            _warn_dropped(self._warn, "joint target" if isinstance(pending, PendingTarget) else "trajectory")

    def describe(self) -> str:
        """``hold``, ``joint_target`` or ``trajectory``."""
        return self.mode.label

    # ---------------------------------------------------------------- taking effect
    def _due(self, stamp: float) -> bool:
        """Whether the pending target takes effect at the state stamp ``stamp`` (s): at once,
        except a trajectory stamped later, which waits for its stamp, and a joint target, which
        waits :data:`MIN_TAKE_PERIOD` from the last one planned."""
        pending = self.pending
        if isinstance(pending, PendingTarget):
            return self._pacer.may_plan(stamp)
        return not isinstance(pending, PendingTrajectory) or pending.stamp <= stamp

    def _activate(self, state: JointState) -> None:
        """Take the pending joint target, stop or trajectory at ``state`` (its clock and pose)."""
        pending, self.pending = self.pending, None
        if isinstance(pending, PendingTarget):
            self._activate_target(state, pending.q)
        elif isinstance(pending, PendingStop):
            self._activate_stop(state)
        elif isinstance(pending, PendingTrajectory):
            self._activate_trajectory(state, pending.stamp, pending.points)

    def _activate_target(self, state: JointState, q: FloatArray) -> None:
        """Approach the joint target ``q`` (rad) from the current reference at ``state``, as
        :meth:`submit_target` says; the target under way sent again changes nothing, and one
        whose approach passes a limit is refused, the active target running on."""
        if self.mode is JointMode.JOINT_TARGET and same_target(q, self.goal):
            return
        self._pacer.planned(state.stamp)
        under_way = None if self.active is None else self.active.under_way(state.stamp)
        try:
            approach = self.planner.plan(self.current(state), q, under_way)
        except TargetError as exc:  # its motion passes a limit (a start moving fast toward one)
            self._refuse(f"joint target: {exc}")
            return
        self.mode, self.goal, self.held = JointMode.JOINT_TARGET, q, None
        self.active = TimedMove(approach, state.stamp)

    def _activate_stop(self, state: JointState) -> None:
        """Stop the reference as :meth:`submit_stop` says."""
        self.goal = None
        if self.active is None:
            # Nothing moves to bring to rest: the point held stays where it stands (moved to the
            # arm, a second stop would lower it to where the arm sags under a load the model
            # lacks). Before any reference, the arm's position is held.
            if self.held is None:
                self.held = JointReference(np.array(state.q, dtype=np.float64))
            self.mode = JointMode.HOLD
            return
        current = self.current(state)
        q, v, a = current
        slow = (v is None or bool(np.all(np.abs(v) <= self.velocity_step_tolerance))) and (
            a is None or bool(np.all(np.abs(a) <= self.acceleration_step_tolerance))
        )
        if not slow:
            try:
                stopping = self.planner.stop(current, self.active.under_way(state.stamp))
            except TargetError as exc:  # rare: its rest point within a hair of a limit
                self._warn(f"stop: held at once, its smooth stop refused ({exc})")
            else:
                try:
                    check_motion(self.robot, stopping, wording=STOP_WORDING)
                except TargetError as exc:
                    # A joint at its velocity limit still speeding up: no stop within the
                    # acceleration bounds keeps inside, and the one passing it least is milder
                    # than holding at once (a step of the whole speed).
                    self._warn(f"stop: smooth, though it passes a velocity limit briefly ({exc})")
                self.mode, self.held = JointMode.STOPPING, None
                self.active = TimedMove(stopping, state.stamp)
                return
        self.mode, self.held = JointMode.HOLD, JointReference(np.array(q, dtype=np.float64))
        self.active = None

    def _activate_trajectory(self, state: JointState, stamp: float, points: TrajectoryPoints) -> None:
        """Follow ``points`` from ``stamp`` (s; 0: from ``state``) as the class docstring says:
        the points already due at ``state``, or due within :data:`LATE_LEAD` of it, dropped (the
        last one kept, reached no sooner than that), a first point at time 0 taken as the start
        (:meth:`_from_first_point`), else the trajectory started from the current reference; the
        segments from the start checked against the limits. Refused (the active target running
        on) where it ended before ``state`` or a check fails. One that waited for its stamp, or
        was kept by :meth:`reset`, starts whole at ``state``, as one stamped 0."""
        t0 = stamp if stamp > 0.0 and not self._waited else state.stamp
        self._waited = False
        late = state.stamp - t0
        current = self.current(state)
        if late > 0.0:
            # Stamped before this state: the points already due, or due within LATE_LEAD, are
            # dropped and the rest keep their times, reached from the current reference (no jump
            # into the middle).
            end = float(points.times[-1])
            if end <= late:
                self._refuse(
                    f"trajectory ended {late - end:.3f} s before the joint state it arrived at "
                    f"(header.stamp {stamp:.3f} s, last point at {end:.3f} s)"
                )
                return
            if points.times[0] == 0.0:
                # The sender's path starts there, at its stamp: checked as on time, against the
                # reference then. Dropped unchecked, a first point 1 rad off had the reference run
                # straight to the next one, a path nobody planned (a review); checked against the
                # reference now with room for its speed now, one sent as a move slowed to rest was
                # refused (a later review).
                then = self.active.sample(t0)[0] if self.active is not None else current.q
                try:
                    self._check_first_position(points.positions[0], then, state.q, at_stamp=True)
                except TargetError as exc:
                    self._refuse(str(exc))
                    return
            ahead = points.times - late > LATE_LEAD
            ahead[-1] = True
            kept = points.select(ahead)
            points = kept._replace(times=np.maximum(kept.times - late, LATE_LEAD))
            t0 = state.stamp
        try:
            if points.times[0] == 0.0:
                points, current = self._from_first_point(state, current, points)
            trajectory = JointTrajectory(*points, start=current, continuous=self.robot.continuous)
            # Only the segment from the start and the next one differ from those checked when it
            # was submitted (the first waypoint's estimated velocity changes with the start).
            check_motion(
                self.robot,
                trajectory,
                last=2,
                offset=max(late, 0.0),
                acceleration_limit=self.acceleration_limit,
            )
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self.mode, self.held, self.goal = JointMode.TRAJECTORY, None, None
        self.active = TimedMove(trajectory, t0)

    def _from_first_point(
        self, state: JointState, current: JointMotion, points: TrajectoryPoints
    ) -> tuple[TrajectoryPoints, JointMotion]:
        """``(the points after a first point at time 0, the start that replaces it)``: its position
        (within :data:`START_TOLERANCE` of the reference or the arm), the reference's velocity and
        acceleration (the given velocities within :attr:`velocity_step_tolerance` of the
        reference's; the given accelerations are left for the first segment to blend into). A
        lone point is the trajectory's end, at rest: the reference must be slow enough to stop
        there at once (:func:`step_tolerances`); the points are then returned as they are.

        Raises:
            TargetError: the point is farther than that, or asks a larger step (the message
                names the joint).
        """
        first = points.positions[0]
        self._check_first_position(first, current.q, state.q)
        n = self.robot.n
        v_ref = np.zeros(n) if current.v is None else current.v
        a_ref = np.zeros(n) if current.a is None else current.a
        self._check_first_steps(points, v_ref, a_ref)
        if len(points.times) == 1:
            return points, current
        return points.select(slice(1, None)), JointMotion(first, v_ref, a_ref)

    def _check_first_position(
        self, first: FloatArray, q_ref: FloatArray, q_arm: FloatArray, *, at_stamp: bool = False
    ) -> None:
        """Refuse a first point at time 0 at ``first`` (rad) farther than :data:`START_TOLERANCE`
        on some joint from both the reference ``q_ref`` and the arm ``q_arm`` (rad): taken at once,
        it would make the reference jump. ``at_stamp``: ``q_ref`` is the reference at a late
        trajectory's stamp (said so in the message).

        Raises:
            TargetError: the point is too far (the message names the farthest joint).
        """
        off = np.minimum(
            np.abs(self.robot.difference(first, q_ref)),
            np.abs(self.robot.difference(first, q_arm)),
        )
        worst = int(np.argmax(off))
        if off[worst] > START_TOLERANCE:
            reference = "the reference at its header.stamp" if at_stamp else "the current reference"
            raise TargetError(
                f"trajectory: its first point, at time_from_start 0, is {off[worst]:.3f} rad from "
                f"{reference} and from the arm on {self.robot.joint_names[worst]} (at most "
                f"{START_TOLERANCE:g} rad): give it a time_from_start > 0 to reach it from there"
            )

    def _check_first_steps(self, points: TrajectoryPoints, v_ref: FloatArray, a_ref: FloatArray) -> None:
        """Refuse a first point at time 0 that would step the reference's velocity ``v_ref`` (rad/s)
        or acceleration ``a_ref`` (rad/s²) by more than :func:`step_tolerances` allow: a given
        velocity compared with ``v_ref``; a lone point, at rest (the trajectory's end), compared in
        both. A given acceleration of a point followed by others is not compared (the first
        segment blends into it). The velocity is checked first.

        Raises:
            TargetError: a step too large (the message names the joint).
        """
        n = self.robot.n
        lone = len(points.times) == 1
        vel = points.velocities
        given_v = np.zeros(n) if lone else vel[0] if vel is not None else None
        given_a = np.zeros(n) if lone else None  # a lone point is at rest: no acceleration
        if given_v is not None:
            self._check_step("velocity", "rad/s", given_v, v_ref, self.velocity_step_tolerance, lone)
        if given_a is not None:
            self._check_step("acceleration", "rad/s²", given_a, a_ref, self.acceleration_step_tolerance, lone)

    def _check_step(
        self, what: str, unit: str, given: FloatArray, ref: FloatArray, tolerance: FloatArray, lone: bool
    ) -> None:
        """Refuse a first point at time 0 whose ``what`` (``velocity`` or ``acceleration``, in
        ``unit``), ``given`` per joint, differs from the reference's ``ref`` by more than
        ``tolerance`` on some joint (``lone``: the point is the trajectory's only one, at rest).

        Raises:
            TargetError: the step is too large (the message names the joint that passes its
                tolerance by the most).
        """
        excess = np.abs(given - ref) - tolerance
        j = int(np.argmax(excess))
        if excess[j] > 0.0:
            point = (
                "its only point, at time_from_start 0, is at rest"
                if lone
                else f"its first point, at time_from_start 0, has {what} {given[j]:.3f} {unit}"
            )
            raise TargetError(
                f"trajectory: {point} on {self.robot.joint_names[j]} where the current reference has "
                f"{ref[j]:.3f} {unit} (at most {tolerance[j]:.3g} {unit} apart: the reference "
                f"would step); give the point the reference's {what} or a time_from_start > 0, "
                "or stop with an empty trajectory"
            )


# ------------------------------------------------------------------ pose targets
class PoseTargetTracker:
    """The tool pose of :class:`~.controllers.AchdRnea`, reached along a
    :class:`~.approach.PoseApproach` from the current reference and then held until replaced.

    The approach is planned on the constrained axes with the law's gains
    (:class:`~.approach.PoseApproachPlanner`: every joint at most half its velocity limit along
    the predicted joint path and at its start); a target whose predicted path ends more than a
    fifth of the move short (a singularity on the straight line, e.g. from the stretched pose
    itself) is refused, the active target running on, and so is a pose out of reach within the
    joint limits (:meth:`~.approach.PoseApproachPlanner._check_reach`). Planning takes 0.2–0.7 ms,
    once per target, on the control thread, ~1.4 ms when a moving reference has to stop first
    (both moves are planned), ~4 ms to refuse a pose out of reach (a stream repeating it within
    1 mm: at once): each target of a stream that turns back then makes its step late. Of a stream
    faster than :data:`MIN_TAKE_PERIOD`, only the newest target is planned once a period.
    """

    def __init__(self, controller: AchdRnea, *, refuse: Report, warn: Report = _unreported) -> None:
        """``refuse``: where a target refused when it takes effect is reported; ``warn``: where one
        taken with an approach longer than :data:`SLOW_APPROACH` is, and one received but not yet
        taken that :meth:`reset` drops."""
        self.controller = controller
        config = controller.config
        rows = np.array([AXIS_NAMES.index(a) for a in config.constrained_axes])
        kp, kd = np.asarray(config.kp)[rows], np.asarray(config.kd)[rows]
        self.planner = PoseApproachPlanner(controller.robot, config.frame, rows, kp, kd)
        self._refuse = refuse
        self._warn = warn
        #: The target waiting for the next state.
        self.pending: PoseReference | None = None
        #: The target taken last (``None`` while holding where the arm was).
        self.goal: PoseReference | None = None
        #: The reference held at rest when no move is under way (the goal once arrived).
        self.held: PoseReference | None = None
        #: The approach under way.
        self.active: PoseMove | None = None
        #: Plans targets at most once per :data:`MIN_TAKE_PERIOD`.
        self._pacer = _PlanPacer()

    def submit(self, goal: PoseReference) -> None:
        """Move to ``goal`` (base frame, within reach) from the next state on (from the first
        state :data:`MIN_TAKE_PERIOD` after the last target planned)."""
        self.pending = goal

    def reference(self, state: JointState, plan: bool = True) -> PoseReference:
        """The reference at ``state``, after the pending target took effect if due (with
        ``plan``; else :meth:`take_due` plans it)."""
        if plan:
            self.take_due(state)
        if self.active is not None:
            reference = self.active.sample(state.stamp)
            if self.active.arrived(state.stamp):
                self.held, self.active = reference, None
            return reference
        if self.held is None:
            self.held = self.controller.hold_reference(state)
        return self.held

    def take_due(self, state: JointState) -> bool:
        """Plan the target due at ``state`` (:meth:`TargetTracker.take_due`)."""
        if self.pending is not None and self._pacer.may_plan(state.stamp):
            goal, self.pending = self.pending, None
            if not same_target(goal, self.goal):
                self._pacer.planned(state.stamp)
                self._take(goal, state)
                return True
        return False

    def current(self, state: JointState) -> PoseReference:
        """The reference at ``state`` before a new target takes over."""
        if self.active is not None:
            return self.active.sample(state.stamp)
        return self.held if self.held is not None else self.controller.hold_reference(state)

    def pause(self, since: float, until: float) -> bool:
        """No torque was computed from ``since`` to ``until`` (s): the approach takes up where it
        stood. A pose target has no start to hold up: returns ``False``."""
        if self.active is not None:
            self.active.shift(until - since)
        return False

    def reset(self, clock_reset: bool = False) -> None:
        """Forget the target, a pending one too (with a warning): hold where the arm is at the next
        state (the same after a clock reset: a pose target has no stamp to wait for)."""
        if self.pending is not None:
            _warn_dropped(self._warn, "target pose")
        self.pending, self.goal, self.held, self.active = None, None, None, None
        self._pacer.forget()

    def describe(self) -> str:
        """``target_pose`` or ``hold``."""
        return "hold" if self.goal is None else "target_pose"

    def _take(self, goal: PoseReference, state: JointState) -> None:
        """Start the approach to ``goal`` from the current reference, the joint path predicted
        from the arm at ``state``; refused (the active target runs on) where that path ends short
        of the goal."""
        under_way = None if self.active is None else self.active.under_way(state.stamp)
        try:
            approach = self.planner.plan(state.q, self.current(state), goal, under_way)
        except TargetError as exc:
            self._refuse(f"target pose: {exc}; move the arm away from it first, or use qpid")
            return
        self.goal, self.held, self.active = goal, None, TimedMove(approach, state.stamp)
        _warn_if_slow(self._warn, "target pose", approach.duration)


# ------------------------------------------------------------------ QP task targets
TaskTarget = PoseReference | FloatArray
"""A frame or posture task's target: a pose (pose task), a position (m, position task), a
rotation matrix (orientation task) or joint positions (rad, posture task)."""


def _tracked(task: Task) -> NDArray[np.bool_]:
    """Per row of ``task`` (its axes, or its joints), whether it tracks it: weight and ``kp`` above 0."""
    return np.asarray((task.weight > 0.0) & (task.kp > 0.0))


def _tracked_axes(task: FrameTask) -> NDArray[np.intp]:
    """The axes (indices of x, y, z, rx, ry, rz) frame task ``task`` tracks."""
    return np.arange(6)[task.rows][_tracked(task)]


def _feed_mask(task: Task) -> FloatArray:
    """1 on the axes ``task`` tracks and 0 elsewhere: of x, y, z, rx, ry, rz for a frame task, per
    joint for a posture task. An approach's velocity and acceleration are fed to the task times it."""
    if not isinstance(task, FrameTask):  # posture
        return _tracked(task).astype(np.float64)
    feed = np.zeros(6)
    feed[_tracked_axes(task)] = 1.0
    return feed


def _frame_planners(robot: RobotModel, frame_tasks: dict[str, FrameTask]) -> dict[str, PoseApproachPlanner]:
    """By task, the approach planner of each frame task that tracks at least one axis, with the
    task's gains on those axes; not refused near a singularity (the QP's barriers hold there)."""
    planners: dict[str, PoseApproachPlanner] = {}
    for name, task in frame_tasks.items():
        tracked = _tracked(task)
        if tracked.any():
            planners[name] = PoseApproachPlanner(
                robot,
                task.frame,
                _tracked_axes(task),
                task.kp[tracked],
                task.kd[tracked],
                refuse_shortfall=False,
            )
    return planners


def _posture_planner(robot: RobotModel, posture_tasks: list[Task]) -> JointApproachPlanner | None:
    """One joint approach planner for all the posture tasks, timed by their gains on the joints
    they track (``kp`` above 0), or ``None`` where none tracks a joint."""
    if not posture_tasks:
        return None
    kp = np.concatenate([task.kp for task in posture_tasks])
    if not (kp > 0.0).any():
        return None
    kd = np.concatenate([task.kd for task in posture_tasks])
    return JointApproachPlanner(robot, kp[kp > 0.0], kd[kp > 0.0])


class TaskTargetTracker:
    """One target per task of a QP controller (:class:`~.controllers.QPID`,
    :class:`~.controllers.HQPID`); every task holds its start value until it gets one.

    Each target is reached along an approach from the task's current reference, planned with the
    task's gains on the axes it tracks (weight and ``kp`` above 0): a
    :class:`~.approach.PoseApproach` for a frame task (:class:`~.approach.PoseApproachPlanner`,
    every joint at most half its velocity limit along the predicted path, not refused near a
    singularity: the QP's barriers hold there), a joint quintic for the posture tasks
    (:class:`~.approach.JointApproachPlanner`, timed by the slowest posture task's gains). A task
    that tracks no axis takes its target at once. Stepped into the QP, a tool target 0.3 m away
    would run joints 1 and 5 at exactly their velocity limits (the barriers holding them there).
    Planning a frame task's approach takes 0.2–0.7 ms, once per target, on the control thread
    (~1.4 ms when a moving reference has to stop first); of a stream faster than
    :data:`MIN_TAKE_PERIOD`, only a task's newest target is planned once a period.

    An approach's velocity and acceleration are fed only to the axes the task tracks: fed to an
    axis with kp 0, they would turn the tool toward an orientation its configuration leaves free
    (2.2 rad, at up to 121 rad/s²).

    The reference is one ``{task: target}`` mapping, rebuilt only while a target moves or when one
    changes (the tasks skip revalidating target objects they have already seen).
    """

    def __init__(self, controller: QPID | HQPID, *, refuse: Report, warn: Report = _unreported) -> None:
        """``refuse``: where a target refused when it takes effect is reported; ``warn``: where one
        taken with an approach longer than :data:`SLOW_APPROACH` is, and one received but not yet
        taken that :meth:`reset` drops."""
        self.controller = controller
        robot = controller.robot
        self.robot = robot
        self._refuse = refuse
        self._warn = warn
        tasks = {name: controller.task(name) for name in controller.task_names}
        #: Each task's kind (``pose``, ``position``, ``orientation``, ``posture``), in task order.
        self.kinds = {name: task.kind for name, task in tasks.items()}
        self.posture_tasks = tuple(n for n, k in self.kinds.items() if k == "posture")
        #: The tasks on a frame (pose, position, orientation).
        self.frame_tasks = {name: task for name, task in tasks.items() if isinstance(task, FrameTask)}
        #: Per task, 1 on the axes it tracks and 0 elsewhere (x, y, z, rx, ry, rz; or per joint).
        self._feed = {name: _feed_mask(task) for name, task in tasks.items()}
        #: Approach planners of the frame tasks that track at least one axis.
        self._pose_planners = _frame_planners(robot, self.frame_tasks)
        #: The posture tasks' approach planner (``None``: none of them tracks a joint).
        self._joint_planner = _posture_planner(robot, [tasks[n] for n in self.posture_tasks])
        #: Targets waiting for the next state, by task.
        self.pending: dict[str, TaskTarget] = {}
        self._reference: dict[str, Any] | None = None
        #: Each planned frame task's pose reference at rest (both parts, whatever the task reads).
        self.poses: dict[str, PoseReference] = {}
        #: Approaches under way, by task.
        self.pose_moves: dict[str, PoseMove] = {}
        self.joint_moves: dict[str, JointMove] = {}
        #: The target each task took last.
        self.goals: dict[str, TaskTarget] = {}
        #: The tasks that took a target since the last reset.
        self.targeted: set[str] = set()
        #: By task, what plans its targets at most once per :data:`MIN_TAKE_PERIOD`.
        self._pacers = {name: _PlanPacer() for name in tasks}

    def submit(self, task: str, target: TaskTarget) -> None:
        """Move frame task ``task`` to ``target`` (its kind's form, within reach) from the next
        state on (from the first state :data:`MIN_TAKE_PERIOD` after the task's last target
        planned).

        Raises:
            TargetError: ``task`` is no frame task of the controller (the error lists them).
        """
        if task not in self.frame_tasks:
            raise TargetError(f"no frame task {task!r}; the frame tasks are {sorted(self.frame_tasks)}")
        self.pending[task] = target

    def submit_posture(self, q: FloatArray) -> None:
        """Move every posture task to ``q`` (rad, model order, within the limits), as
        :meth:`submit` does."""
        for name in self.posture_tasks:
            self.pending[name] = q

    def reference(self, state: JointState, plan: bool = True) -> dict[str, Any]:
        """The ``{task: target}`` mapping at ``state``, after the pending targets took effect if
        due (with ``plan``; else :meth:`take_due` takes them)."""
        if self._reference is None:
            self._start(state)
        if plan:
            self.take_due(state)
        assert self._reference is not None
        if not (self.pose_moves or self.joint_moves):
            return self._reference
        # A new mapping: the controller sees a different object; the unchanged targets stay the
        # same objects and are not revalidated.
        reference = dict(self._reference)
        for name, pose_move in list(self.pose_moves.items()):
            pose = pose_move.sample(state.stamp)
            feed = self._feed[name]
            twist, acceleration = pose.twist, pose.acceleration
            reference[name] = CartesianTarget(
                pose.se3,
                None if twist is None else twist * feed,
                None if acceleration is None else acceleration * feed,
            )
            if pose_move.arrived(state.stamp):
                self.poses[name] = pose
                del self.pose_moves[name]
        for name, joint_move in list(self.joint_moves.items()):
            q, v, a = joint_move.sample(state.stamp)
            if joint_move.arrived(state.stamp):
                reference[name] = q
                del self.joint_moves[name]
            else:
                reference[name] = JointReference(q, v * self._feed[name], a * self._feed[name])
        self._reference = reference
        return reference

    def take_due(self, state: JointState) -> bool:
        """Take the targets due at ``state`` (:meth:`TargetTracker.take_due`; :meth:`reference`
        calls it with ``plan``). One a task takes without an approach is in the mapping from then
        on: this state's with ``plan``, the next state's when called after the command."""
        due = self._due(state)
        if not due or self._reference is None:
            return False
        reference = dict(self._reference)
        try:
            for name in due:
                self._take(name, self.pending.pop(name), state, reference)
        finally:  # what was taken before a failing plan stays taken
            self._reference = reference
        return True

    def _due(self, state: JointState) -> list[str]:
        """The tasks whose pending target may be taken at ``state`` (:data:`MIN_TAKE_PERIOD`)."""
        if not self.pending:
            return []
        return [n for n in self.pending if self._pacers[n].may_plan(state.stamp)]

    def pause(self, since: float, until: float) -> bool:
        """No torque was computed from ``since`` to ``until`` (s): the approaches take up where
        they stood. Task targets have no start to hold up: returns ``False``."""
        for pose_move in self.pose_moves.values():
            pose_move.shift(until - since)
        for joint_move in self.joint_moves.values():
            joint_move.shift(until - since)
        return False

    def reset(self, clock_reset: bool = False) -> None:
        """Forget the targets, pending ones too (with a warning each): every task holds where the
        arm is at the next state (the same after a clock reset: task targets have no stamp to wait
        for)."""
        for name in self.pending:
            _warn_dropped(self._warn, f"{name} target")
        self.pending = {}
        self._reference = None
        self.pose_moves.clear()
        self.joint_moves.clear()
        self.goals.clear()
        self.targeted.clear()
        for pacer in self._pacers.values():
            pacer.forget()

    def describe(self) -> str:
        """The targeted tasks, comma-separated in task order, or ``hold``."""
        if not self.targeted:
            return "hold"
        return ",".join(n for n in self.kinds if n in self.targeted)

    def _start(self, state: JointState) -> None:
        """Hold every task where it stands at ``state`` (the moves and goals are empty: no state
        since the start or a reset)."""
        self._reference = dict(self.controller.hold_reference(state))
        for name, planner in self._pose_planners.items():
            self.poses[name] = PoseReference.from_se3(self.robot.frame_placement(state.q, planner.frame))

    def _take(self, name: str, target: TaskTarget, state: JointState, reference: dict[str, Any]) -> None:
        """Start the approach of task ``name`` to ``target`` from its current reference (or step
        ``reference`` there, for a task that tracks no axis)."""
        if same_target(target, self.goals.get(name)):
            return
        if self.kinds[name] == "posture":
            self._take_joint_target(name, np.asarray(target), state, reference)
            return
        planner = self._pose_planners.get(name)
        if planner is None:
            reference[name] = target
            self.targeted.add(name)
            return
        self._pacers[name].planned(state.stamp)
        moving = self.pose_moves.get(name)
        current = moving.sample(state.stamp) if moving is not None else self.poses[name]
        kind = self.kinds[name]
        goal: PoseReference
        if kind == "position":
            goal = PoseReference(np.array(target, dtype=np.float64), current.rotation)
        elif kind == "orientation":
            goal = PoseReference(current.position.copy(), np.array(target, dtype=np.float64))
        else:
            assert isinstance(target, PoseReference)
            goal = target
        under_way = None if moving is None else moving.under_way(state.stamp)
        approach = planner.plan(state.q, current, goal, under_way)
        self.pose_moves[name] = TimedMove(approach, state.stamp)
        self.goals[name] = target
        self.targeted.add(name)
        _warn_if_slow(self._warn, f"{name} target", approach.duration)

    def _take_joint_target(
        self, name: str, q: FloatArray, state: JointState, reference: dict[str, Any]
    ) -> None:
        """Start the approach of posture task ``name`` to ``q`` (rad) from its current reference
        (the move under way, or the joint angles it holds, at rest), timed by the posture tasks'
        gains; step ``reference`` there where no posture task tracks a joint. Refused where the
        approach passes a limit, the active target running on."""
        if self._joint_planner is None:
            reference[name] = q
            self.targeted.add(name)
            return
        self._pacers[name].planned(state.stamp)
        moving = self.joint_moves.get(name)
        start: JointMotion
        under_way = None
        if moving is not None:
            under_way = moving.under_way(state.stamp)
            start = JointMotion(*moving.sample(state.stamp))
        else:
            held = reference[name]  # joint angles (rad), or a JointReference
            at = held.q if isinstance(held, JointReference) else held
            start = JointMotion(np.array(at, dtype=np.float64), None, None)
        try:
            approach = self._joint_planner.plan(start, q, under_way)
        except TargetError as exc:  # the active target runs on
            self._refuse(f"joint target: {exc}")
            return
        self.joint_moves[name] = TimedMove(approach, state.stamp)
        self.goals[name] = q
        self.targeted.add(name)
