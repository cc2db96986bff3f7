"""Safety logic between a joint-state stream and a controller (pure: no ROS here).

Two pieces:

* :class:`JointNameMap`: maps the joint names of an incoming message (any order, extra
  joints ignored) onto a controller's joint order, with the index array cached per name
  tuple so the hot path is a single ``np.take``.
* :class:`Watchdog`: decides, for each incoming joint state, whether a torque may be
  computed from it. A state that is stale, non-finite or inconsistent produces no torque
  computed from it; instead the caller sends a safe command (braking from the last good
  state, :class:`~torque_ctrl_ros.core.braking.SafeBrake`) for at most ``fallback_duration``
  seconds, after which it stops publishing.
  Given the robot's limits, it also refuses states no arm can be in (a position far past a
  joint limit, a velocity many times its limit): a sensor or driver fault, not a motion; and a
  state whose position no motion could have reached from the last good state's in the time
  between their stamps: a second publisher on the joint-state topic, its states interleaved
  with the driver's (:meth:`Watchdog.check`). :data:`CONFLICT_JUMPS` such jumps within
  :data:`CONFLICT_WINDOW` stop it at once, until no state has jumped from the one before it for
  that long (the arm may move meanwhile).

State machine (``WatchdogState``)::

    WAITING --good--> OK --bad--> FALLBACK --bad for > fallback_duration--> STOPPED
                       ^             |                                         |
                       +----good-----+------------good (if auto_recover)-------+

    OK or FALLBACK --CONFLICT_JUMPS jumps within CONFLICT_WINDOW--> STOPPED, every state refused
    until none jumped from the one before it for CONFLICT_WINDOW

All times are in seconds on the caller's clock (ROS time: simulated when ``use_sim_time``).
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import ConfigError, StateError
from .robot import CONTROL_PERIOD, DEFAULT_DAMPING
from .validation import FloatArray, as_positive_float, as_seconds

MAX_ANGLE = 1.0e6
"""Largest |q| (rad) taken from a joint without position limits: at 1e6 rad a float64 angle
still resolves 1e-10 rad; far beyond it the reading cannot be a position any more."""

CONFLICT_WINDOW = 1.0
"""Time (s, the receiver's clock) over which jumps (:meth:`Watchdog.check`) are counted, and for
which none may be seen before a stop on :data:`CONFLICT_JUMPS` of them ends."""

CONFLICT_JUMPS = 4
"""Jumps within :data:`CONFLICT_WINDOW` that mean two sources of this arm's states, not a glitch.

One bad reading (the stream back after it) is one jump, a glitch every 2 s never two in the
window; a second publisher at ``f`` Hz after the driver's first state is ``f`` a second (4 in
0.3 s at 10 Hz: any ``f`` above 3 Hz), and before it the driver's states are refused one after
another (4 in 3 ms at 1 kHz). A slower second publisher whose first state came after the
driver's is still refused state by state, each answered by one safe command from the driver's
pose."""


#: Most names an error message quotes from a message: the text is logged and kept on
#: /diagnostics, so a message naming a million joints must not make it megabytes long.
PREVIEW_NAMES = 16


def _preview(names: Sequence[str]) -> str:
    """``names`` as a list, each cut to 64 characters and the list after :data:`PREVIEW_NAMES`
    (with the count of the rest)."""
    shown = ", ".join(repr(n[:64]) for n in names[:PREVIEW_NAMES])
    rest = len(names) - PREVIEW_NAMES
    return f"[{shown}, … {rest} more]" if rest > 0 else f"[{shown}]"


class JointNameMap:
    """Reorder per-joint message arrays into a fixed joint order.

    Args:
        joint_names: the target order (the controller's joints).
    """

    def __init__(self, joint_names: Sequence[str]) -> None:
        names = tuple(joint_names)
        if len(set(names)) != len(names):
            raise ConfigError(f"joints: duplicate names in {list(names)}")
        if not names:
            raise ConfigError("joints: expected at least one joint name")
        self.joint_names: tuple[str, ...] = names
        self.n = len(names)
        self._needed = frozenset(names)
        self._cache: dict[tuple[str, ...], NDArray[np.intp]] = {}

    def indices(self, names: Sequence[str], what: str = "joint state") -> NDArray[np.intp]:
        """Index into a message array for each target joint: ``target = msg[indices]``.

        Extra names are ignored, also when repeated. Only a name tuple that passed these checks
        is cached, so a hit costs one dict lookup and no check.

        Raises:
            StateError: a target joint is missing or named more than once (the message names them):
                with two values for one joint there is no telling which is right.
        """
        key = names if isinstance(names, tuple) else tuple(names)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        position: dict[str, int] = {}
        duplicated: list[str] = []
        for i, name in enumerate(key):
            if name not in position:
                position[name] = i
            elif name in self._needed and name not in duplicated:
                duplicated.append(name)
        if duplicated:
            raise StateError(
                f"{what}: joint(s) {duplicated} named more than once; each of {list(self.joint_names)} "
                f"must appear once, got {_preview(key)}"
            )
        missing = [n for n in self.joint_names if n not in position]
        if missing:
            raise StateError(
                f"{what} lacks joint(s) {missing}; expected {list(self.joint_names)}, got {_preview(key)}"
            )
        idx = np.array([position[n] for n in self.joint_names], dtype=np.intp)
        if len(self._cache) >= 64:  # a stream with ever-changing names must not grow memory
            self._cache.clear()
        self._cache[key] = idx
        return idx

    def take(
        self,
        names: Sequence[str],
        values: FloatArray,
        out: FloatArray,
        field: str = "values",
        what: str = "joint state",
    ) -> FloatArray:
        """Write ``values`` (one per entry of ``names``) into ``out`` in target order.

        Raises:
            StateError: missing joints, or ``len(values) != len(names)``.
        """
        if len(values) != len(names):
            raise StateError(f"{what} {field}: {len(values)} entries for {len(names)} names")
        return np.take(values, self.indices(names, what), out=out)


class WatchdogState(enum.Enum):
    """What the node does with the state stream."""

    WAITING = "waiting"  # no good state yet: nothing to compute, nothing published
    OK = "ok"  # torque computed from each good state
    FALLBACK = "fallback"  # bad states: safe command from the last good state
    STOPPED = "stopped"  # bad for longer than the fallback window: nothing published


class Action(enum.Enum):
    """What the caller must do with one joint state."""

    COMPUTE = "compute"  # the state is good: run the controller on it
    FALLBACK = "fallback"  # publish the safe command on ``Watchdog.last_good``
    NONE = "none"  # publish nothing


class RejectReason(enum.Enum):
    """Why a joint state was refused."""

    STALE = "stale"
    NON_FINITE = "non_finite"
    # An unreadable message, missing joints, lengths that disagree, a stamp not finite or more than
    # max_future ahead; every state while the stream jumps between poses (two publishers: the states
    # disagree with each other, none need be implausible). An older stamp is SUPERSEDED.
    INCONSISTENT = "inconsistent"
    # Finite but implausible: far past a position or velocity limit, or farther from the last good
    # state than that velocity bound allows in the time between their stamps (a jump).
    OUT_OF_RANGE = "out_of_range"
    CONTROLLER_ERROR = "controller_error"  # the controller raised on a state that looked good
    # Stamped before a state already answered (the clock not gone back), not stale: a duplicate or
    # a pair swapped on the way. Dropped, not a fault: no safe command, no fallback (counted in
    # ``Watchdog.rejected`` only): refused as inconsistent, each would send a brake mid-motion and
    # reset the controller, two state transitions for every swapped pair.
    SUPERSEDED = "superseded"


#: Largest ``watchdog.velocity_factor``: at a hundred times the Gen3's speed limits (1.2–1.4 rad/s)
#: the bound is already far beyond any motor; a larger factor only stops the speed and jump checks
#: from catching corrupt values (a wrapped encoder count, degrees read as radians).
MAX_VELOCITY_FACTOR = 100.0


@dataclass(frozen=True)
class WatchdogConfig:
    """Watchdog parameters.

    Attributes:
        max_age: a state older than this (s) on the receiver's clock is stale.
        max_future: a state stamped more than this (s) ahead of the clock is inconsistent.
        fallback_duration: how long (s) the safe command is sent before stopping.
        auto_recover: resume normal control from STOPPED on the next good state.
        position_margin: how far (rad) past a bounded joint's position limit a measured
            position may be before the state is refused.
        velocity_factor: a measured speed above ``velocity_factor`` × the joint's velocity limit
            refuses the state, and so does a position farther from the last good state's than
            that speed covers in the time between their stamps (at least ``max_age``).
        overspeed_factor: 0 (off), or from 1 to ``velocity_factor``: a measured speed above
            ``overspeed_factor`` × the joint's velocity limit refuses the state as over-speed (the
            safe brake takes over, as for any refused state). A bound on the arm's motion, where
            ``velocity_factor`` is one on plausible readings: the jump check keeps the latter, so
            the arm's travel while refused for speed is no "jump" once it slows (bound on
            ``velocity_factor``, after 25 ms at 1.5–1.8 times a limit the states that followed were
            refused as jumps and the watchdog stopped for a second on "two publishers").

    The plausibility bounds are wide on purpose: they catch values no motion produces (1e6 rad,
    a wrapped encoder count, a unit mix-up, another publisher's pose), not a controller pushing
    against a limit; ``overspeed_factor`` is that.
    """

    max_age: float = 0.02
    max_future: float = 1.0
    fallback_duration: float = 0.5
    auto_recover: bool = True
    position_margin: float = 0.5
    velocity_factor: float = 10.0
    overspeed_factor: float = 0.0

    @classmethod
    def create(cls, **fields: Any) -> WatchdogConfig:
        """Validated config from the given fields (the rest at the defaults above; an unknown
        name is a :class:`TypeError`): finite bounds > 0 (``position_margin`` and
        ``fallback_duration`` may be 0), ``velocity_factor`` from 1 to :data:`MAX_VELOCITY_FACTOR`,
        ``overspeed_factor`` 0 or from 1 to ``velocity_factor``,
        ``position_margin`` at most π (rad), and times (s) of at most 1 s (``max_age``) and 10 s
        (``max_future``, ``fallback_duration``). ``max_age`` is at least
        one control period (1 ms): a state is never younger than its transport, a fraction of a
        millisecond. ``max_future`` is at least two: a controller on the simulator's time reads
        each state one step ahead of its clock (see ``nodes/sim_node.py``)."""
        given = cls(**fields)
        margin = as_positive_float("watchdog.position_margin", given.position_margin, allow_zero=True)
        if margin > math.pi:
            # Degrees read as radians: 30 would let positions 30 rad past a limit through.
            raise ConfigError(
                f"watchdog.position_margin: expected at most π (rad, not degrees), got {margin:g}"
            )
        factor = as_positive_float("watchdog.velocity_factor", given.velocity_factor)
        if not 1.0 <= factor <= MAX_VELOCITY_FACTOR:
            raise ConfigError(
                f"watchdog.velocity_factor: expected from 1 to {MAX_VELOCITY_FACTOR:g} (a bound "
                "below the velocity limit would refuse allowed motions, one far above it turns the "
                f"speed and jump checks off), got {factor:g}"
            )
        overspeed = as_positive_float("watchdog.overspeed_factor", given.overspeed_factor, allow_zero=True)
        if overspeed != 0.0 and not 1.0 <= overspeed <= factor:
            raise ConfigError(
                f"watchdog.overspeed_factor: expected 0 (off) or from 1 to watchdog.velocity_factor "
                f"({factor:g}; below 1 it would refuse allowed motions, above velocity_factor the "
                f"plausibility bound refuses first), got {overspeed:g}"
            )
        return cls(
            as_seconds("watchdog.max_age", given.max_age, 1.0, at_least=CONTROL_PERIOD),
            as_seconds("watchdog.max_future", given.max_future, 10.0, at_least=2.0 * CONTROL_PERIOD),
            as_seconds("watchdog.fallback_duration", given.fallback_duration, 10.0, allow_zero=True),
            bool(given.auto_recover),
            margin,
            factor,
            overspeed,
        )


#: Age (s) past which a stale state is said to be stamped on another clock: an hour.
_OTHER_CLOCK_S = 3600.0


class _Jumps:
    """What :meth:`Watchdog.check` keeps for its jump test and the stop on two sources.

    ``span_cap`` (s, per joint): past it a joint's reach ``speed_max · Δt`` covers its whole
    plausible range and more (no step between two plausible positions is longer), so the reach is
    capped there: it stays finite where ``speed_max`` is the largest float (uncapped it overflows
    to inf, with a warning, once Δt > 1 s); inf where ``speed_max`` is 0 (the reach stays 0).
    ``span_plain``: the shortest of them; up to it no joint needs the cap (Gen3: 0.46 s, joint_2).
    """

    __slots__ = (
        "count",
        "largest",
        "last_at",
        "last_jump",
        "last_q",
        "message",
        "span_cap",
        "span_plain",
        "steady",
        "stopped",
        "stops",
        "times",
    )

    def __init__(
        self, speed_max: FloatArray, half_width: FloatArray, steady: Callable[[], float] | None
    ) -> None:
        self.steady = steady  # the clock (s) the stop on two sources is timed on, if not the caller's
        with np.errstate(divide="ignore"):
            self.span_cap: FloatArray = (2.0 * half_width + 1.0) / speed_max
        self.span_plain = float(self.span_cap.min())
        self.times: deque[float] = deque(maxlen=CONFLICT_JUMPS)  # receiver's clock (s) of the last jumps
        self.stopped = False  # stopped on two sources
        self.stops = 0
        # While stopped: the last jump seen and the last finite state received (clock, s; q, rad),
        # the largest step (rad) of this stop's jumps, how many in how long stopped it, and why.
        self.last_jump = -math.inf
        self.last_at = -math.inf
        self.last_q = np.zeros(speed_max.shape)
        self.largest = 0.0
        self.count = ""
        self.message = ""


@dataclass
class LastGood:
    """The last accepted state, in controller order: ``q`` (rad), ``v`` (rad/s), ``stamp`` (s)."""

    q: FloatArray
    v: FloatArray
    stamp: float


class Watchdog:
    """Classifies joint states and runs the OK / FALLBACK / STOPPED state machine.

    Use :meth:`check` to classify a decoded state, then :meth:`accept` or :meth:`reject`;
    both return the :class:`Action` to take. :meth:`silence` lets a periodic timer (on a
    steady clock) move OK → FALLBACK → STOPPED when no states arrive at all.
    """

    #: The over-speed bound per joint (rad/s), ``None`` where ``overspeed_factor`` is 0 (off).
    overspeed_max: FloatArray | None = None

    def __init__(
        self,
        n: int,
        config: WatchdogConfig | None = None,
        position_limits: tuple[FloatArray, FloatArray] | None = None,
        velocity_limit: FloatArray | None = None,
        joint_names: Sequence[str] | None = None,
        steady_clock: Callable[[], float] | None = None,
    ) -> None:
        """``position_limits`` = (lower, upper) (rad) and ``velocity_limit`` (rad/s), ``n`` each,
        ±inf / inf where a joint has none, bound the plausible states (see
        :class:`WatchdogConfig`); without them, states need only be finite with ``|q| <=``
        :data:`MAX_ANGLE`. ``joint_names`` (controller order) name the joint in refusals.
        ``steady_clock`` (s, e.g. ``time.monotonic``) times the stop on two sources
        (:data:`CONFLICT_WINDOW`) instead of the caller's ``now``: under ``use_sim_time`` that
        clock runs at the simulator's pace, which in lockstep advances one period per
        ``lockstep_timeout`` while nothing is published (timed on it, the 1 s stop would last
        ~1000 timeouts), and without ``/clock`` not at all."""
        self.n = n
        self.config = config or WatchdogConfig()
        self.joint_names = tuple(joint_names) if joint_names is not None else tuple(f"#{i}" for i in range(n))
        if len(self.joint_names) != n:
            raise ConfigError(f"watchdog: {len(self.joint_names)} joint names for {n} joints")
        no_limit = np.full(n, np.inf)
        lower, upper = (-no_limit, no_limit) if position_limits is None else position_limits
        lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        vmax = np.asarray(no_limit if velocity_limit is None else velocity_limit, dtype=np.float64)
        if not lower.shape == upper.shape == vmax.shape == (n,):
            raise ConfigError(f"watchdog: expected {n} position and velocity limits")
        margin = min(self.config.position_margin, 2.0 * MAX_ANGLE)  # more changes nothing below
        bounded = np.isfinite(lower) & np.isfinite(upper)
        # A joint without limits (continuous) is still refused beyond MAX_ANGLE: past it the
        # angle has lost its fractional radians, so it is a broken reading, not a position.
        # No range is wider than that, so its width stays finite (it must: |inf − c| ≤ inf).
        self.position_min = np.where(bounded, np.maximum(lower - margin, -MAX_ANGLE), -MAX_ANGLE)
        self.position_max = np.where(bounded, np.minimum(upper + margin, MAX_ANGLE), MAX_ANGLE)
        # The largest float, not inf, where the model has no limit: |v| <= it still refuses inf.
        self.speed_max = np.minimum(vmax * self.config.velocity_factor, np.finfo(np.float64).max)
        if self.config.overspeed_factor > 0.0:
            # An instance attribute only when on: each one more makes every attribute read of
            # check() a little slower (docs/performance.md), and off is the class's None.
            self.overspeed_max = np.minimum(vmax * self.config.overspeed_factor, np.finfo(np.float64).max)
        # Jumps (see check): the shortest time a step is measured over, and the reach over it.
        self.jump_floor = self.config.max_age
        self._reach_floor = self.speed_max * self.jump_floor
        self._wrap_scale = np.where(bounded, 0.0, 2.0 * math.pi)  # short way round where no limits
        # |q - centre| <= half_width and |v| <= speed_max also fail on NaN: one test per array.
        self._centre = 0.5 * (self.position_min + self.position_max)
        self._half_width = 0.5 * (self.position_max - self.position_min)
        self._buf = np.empty(n)
        self._reach = np.empty(n)
        self._ok = np.empty(n, dtype=bool)
        self.state = WatchdogState.WAITING
        self.last_good = LastGood(np.zeros(n), np.zeros(n), -math.inf)
        self.has_good = False
        self.fallback_since = math.nan
        # The fallback window open when the last state was accepted (nan: none), reopened by
        # controller_failed: a state the controller cannot answer does not end the window.
        self._window_before_accept = math.nan
        self.last_reason: RejectReason | None = None
        self.last_message = ""
        self._silent = False  # the fallback came from silence(), and no state was refused since
        self.rejected: dict[RejectReason, int] = dict.fromkeys(RejectReason, 0)
        self._rejected_total = (
            0  # the sum of ``rejected`` but superseded, read on every state by the Supervisor
        )
        self.transitions = 0
        self.clock_resets = 0  # accepted states stamped before the last good one (see check)
        self._accepted_at = -math.inf  # the receiver's clock (s) at the last accepted state
        self._order_stamp = -math.inf  # what a new stamp must not be older than (see check)
        # The 29th attribute: the jump test keeps its own in _Jumps, because with a 30th every
        # attribute read of check() gets slower (CPython 3.11; docs/performance.md).
        self._jumps = _Jumps(self.speed_max, self._half_width, steady_clock)

    def check(
        self, q: FloatArray, v: FloatArray, stamp: float, now: float, clock_lag: float = 0.0
    ) -> tuple[RejectReason, str] | None:
        """Reason (and message) to refuse the state, or ``None`` if it is usable.

        ``q``, ``v`` in controller order (rad, rad/s), ``stamp`` and ``now`` in s; ``clock_lag``
        (s): how far ``now`` may lag behind the states (a caller catching up under sim time, its
        ``/clock`` messages queued with the states: :meth:`~.supervisor.Supervisor.step`), added
        to ``max_future`` (the newest state after a 25 ms stall was refused as stamped in the
        future under a 20 ms ``max_future``; a review). Call it once per state received: the stop
        on two sources counts them. Refused, in this order:

        * while stopped on two sources (:meth:`_conflicted`), every state: INCONSISTENT;
        * implausible (:meth:`_plausible`): NON_FINITE or OUT_OF_RANGE;
        * a stamp that is not finite: INCONSISTENT;
        * older than ``max_age``: STALE;
        * stamped before the last accepted state: SUPERSEDED (a reordered or replayed message),
          unless the receiver's clock went back too (a restarted simulator or a looped recording
          under ``use_sim_time``): the stream then starts over from this state, and
          :meth:`accept` counts it in :attr:`clock_resets`;
        * stamped more than ``max_future`` ahead: INCONSISTENT;
        * over-speed, where ``overspeed_factor`` is set: a speed above it times a joint's velocity
          limit: OUT_OF_RANGE (:meth:`_overspeed`);
        * a jump: OUT_OF_RANGE, a position no motion could have reached from the last good one::

              |q − q_good| > speed_max · max(Δt, max_age),   Δt = t − t_good   (on some joint)

          It catches a second publisher of the arm's joints (a joint_state_publisher next to the
          driver), whose states the controller would otherwise answer in turn with the driver's.
          The floor ``max_age`` keeps the bound from shrinking with a driver's stamp jitter; after
          a gap the bound grows with ``Δt``, so the first state after a fallback or stop is taken
          where the arm could have got to. Not checked before the first good state nor after a
          clock reset. The :data:`CONFLICT_JUMPS`-th jump within :data:`CONFLICT_WINDOW` stops
          the watchdog on two sources (:meth:`_jumped`).

        Every stamp counts as at most ``max_age`` ahead of the clock that received it, so one
        state stamped far ahead does not make the correct ones after it look out of reach, and
        older than it only for ``max_age``: those stamped within ``max_age`` of its arrival are
        dropped as SUPERSEDED (nothing sent for them), not every one until the clock reaches its
        stamp.
        """
        if self._jumps.stopped and self._conflicted(q, now):
            return RejectReason.INCONSISTENT, self._jumps.message
        if not self._plausible(q, v):
            return self._implausible(q, v)
        if not math.isfinite(stamp):
            return RejectReason.INCONSISTENT, f"joint state stamp {stamp} is not finite"
        age = now - stamp
        if age > self.config.max_age:
            # Hours or years old: the stamps are on another clock than `now` (sim time against
            # wall time: a node left on its default use_sim_time), not late.
            # Exactly 0 on the wall clock: no stamp at all (a driver leaving header.stamp unset).
            hint = ""
            if age > _OTHER_CLOCK_S:
                hint = (
                    ": unstamped (header.stamp 0)"
                    if stamp == 0.0
                    else ": stamped on another clock? (use_sim_time)"
                )
            return (
                RejectReason.STALE,
                f"joint state is {age * 1e3:.1f} ms old (max {self.config.max_age * 1e3:.1f} ms){hint}",
            )
        if self.has_good and stamp < self._order_stamp and not now < self._accepted_at:
            return (
                RejectReason.SUPERSEDED,
                f"joint state stamp {stamp:.6f} s is older than the last accepted "
                f"{self.last_good.stamp:.6f} s: dropped",
            )
        if -age > self.config.max_future + clock_lag:
            return RejectReason.INCONSISTENT, f"joint state stamped {-age:.3f} s in the future"
        # After the stamp checks: a stale or superseded state is that, whatever its speed.
        if self.overspeed_max is not None and not self._within(v, self.overspeed_max):
            return self._overspeed(v)
        if self.has_good and not stamp < self._order_stamp:  # older: a clock reset, let through above
            dt = min(stamp, now + self.config.max_age) - self._order_stamp
            if not self._reachable(q, dt):
                return self._jumped(q, dt, now)
        return None

    def _reachable(self, q: FloatArray, dt: float) -> bool:
        """Whether ``|q − q_good| <= speed_max · max(dt, jump_floor)`` on every joint, taking
        the plain difference (every step: no allocation). A joint without limits that fails it
        may still be within reach the short way round: :meth:`_jumped` decides (seldom)."""
        buf = self._buf
        np.subtract(q, self.last_good.q, out=buf)
        np.abs(buf, out=buf)
        if dt <= self.jump_floor:
            reach = self._reach_floor
        elif dt <= self._jumps.span_plain:  # finite on every joint uncapped: one ufunc less (0.4 µs)
            reach = np.multiply(self.speed_max, dt, out=self._reach)
        else:
            reach = np.multiply(
                self.speed_max, np.minimum(self._jumps.span_cap, dt, out=self._reach), out=self._reach
            )
        # count_nonzero, not .all(): 0.2 µs against 0.9 µs for seven booleans.
        return int(np.count_nonzero(np.less_equal(buf, reach, out=self._ok))) == self.n

    def _reach_over(self, span: float) -> FloatArray:
        """``speed_max · max(span, jump_floor)`` per joint (rad), capped where it covers the whole
        plausible range (allocates: off the hot path)."""
        return self.speed_max * np.minimum(self._jumps.span_cap, max(span, self.jump_floor))

    def _step(
        self, q: FloatArray, q_from: FloatArray, span: float
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(step, reach, excess)`` per joint (rad): ``q − q_from``, the short way round on a
        joint without limits; :meth:`_reach_over` ``(span)``; ``|step| − reach`` (> 0: a jump)."""
        step = np.subtract(q, q_from)
        step -= self._wrap_scale * np.rint(step * (0.5 / math.pi))
        reach = self._reach_over(span)
        return step, reach, np.abs(step) - reach

    def _jumped(self, q: FloatArray, dt: float, now: float) -> tuple[RejectReason, str] | None:
        """The refusal of a state out of reach of the last good one, received at ``now`` (s),
        naming the joint farthest past its reach; the stop on two sources if it is the
        :data:`CONFLICT_JUMPS`-th within :data:`CONFLICT_WINDOW`; ``None`` if every joint is
        within reach the short way round."""
        step, reach, excess = self._step(q, self.last_good.q, dt)
        i = int(np.argmax(excess))
        if not excess[i] > 0.0:
            return None
        if self._jumps.steady is not None:
            now = self._jumps.steady()
        times = self._jumps.times
        if times and now < times[-1] - self.config.max_age:
            times.clear()  # the clock went back (a restarted simulator): those were another run's
        times.append(now)
        if len(times) == CONFLICT_JUMPS and now - times[0] <= CONFLICT_WINDOW:
            return self._start_conflict(q, now, step, excess)
        span = max(dt, self.jump_floor)
        others = int(np.count_nonzero(excess > 0.0)) - 1
        also = f" (and {others} other joint{'s' if others > 1 else ''})" if others else ""
        return (
            RejectReason.OUT_OF_RANGE,
            f"joint {self.joint_names[i]} jumped {step[i]:+.4g} rad{also} in {dt * 1e3:.3g} ms since "
            f"the last good state, farther than {reach[i]:.3g} rad "
            f"({self.speed_max[i]:.3g} rad/s, watchdog.velocity_factor × the velocity limit, over "
            f"{span * 1e3:.3g} ms): is a second node publishing this arm's joints on the joint-state "
            f"topic (a joint_state_publisher next to the driver)?",
        )

    def _start_conflict(
        self, q: FloatArray, now: float, step: FloatArray, excess: FloatArray
    ) -> tuple[RejectReason, str]:
        """Stop on two sources (:meth:`check`) at the jump of ``q`` (received at ``now``, s)."""
        jumps = self._jumps
        first = jumps.times[0]
        jumps.times.clear()
        jumps.stopped = True
        jumps.stops += 1
        jumps.largest = 0.0
        jumps.last_jump = jumps.last_at = now
        np.copyto(jumps.last_q, q)
        jumps.count = f"{CONFLICT_JUMPS} jumps refused within {(now - first) * 1e3:.3g} ms"
        self._note_conflict_step(step, excess)
        return RejectReason.INCONSISTENT, jumps.message

    def _conflicted(self, q: FloatArray, now: float) -> bool:
        """While stopped on two sources: note a jump of ``q`` (received at ``now``, s) from the last
        finite state received; whether the stop goes on (else it ends: judge ``q`` as usual).

        The stop (:attr:`conflict`; :meth:`reject` goes to STOPPED, nothing is published and the
        driver's command timeout holds the arm) refuses every state as INCONSISTENT: the states
        disagree with each other, none need be implausible, and a brake from a pose that may be
        the other publisher's cannot be trusted. Jumps are looked for between consecutive received
        states, over the time between their arrivals plus ``max_age``: the other publisher's
        stamps may be on another clock, and the bound from the last good state grows with the
        time since it. Each jump starts the window again; the first state that did not jump,
        :data:`CONFLICT_WINDOW` after the last jump, ends the stop and is judged as any state
        after a stop."""
        jumps = self._jumps
        if jumps.steady is not None:
            now = jumps.steady()
        if now < jumps.last_jump - self.config.max_age:
            jumps.last_jump = now  # the clock went back: the window starts again from here
        if np.isfinite(q).all():
            step, _, excess = self._step(q, jumps.last_q, abs(now - jumps.last_at) + self.jump_floor)
            np.copyto(jumps.last_q, q)
            jumps.last_at = now
            if (excess > 0.0).any():
                jumps.last_jump = now
                self._note_conflict_step(step, excess)
                return True
        if now - jumps.last_jump <= CONFLICT_WINDOW:
            return True
        jumps.stopped = False
        return False

    def _note_conflict_step(self, step: FloatArray, excess: FloatArray) -> None:
        """Keep the largest step (rad) of this stop's jumps in its message (when it grew)."""
        i = int(np.argmax(np.where(excess > 0.0, np.abs(step), -1.0)))
        jumps = self._jumps
        if not abs(step[i]) > jumps.largest:
            return
        jumps.largest = abs(float(step[i]))
        jumped = ", ".join(self.joint_names[j] for j in np.flatnonzero(excess > 0.0))
        jumps.message = (
            f"joint states jump between poses ({jumps.count}; largest step "
            f"{step[i]:+.4g} rad on joint {self.joint_names[i]}, of {jumped}): more than one node may "
            f"publish this arm's joints on the joint-state topic (a joint_state_publisher next to "
            f"the driver?); stopped, every state refused; control resumes once no jump was seen "
            f"for {CONFLICT_WINDOW:g} s"
        )

    def _plausible(self, q: FloatArray, v: FloatArray) -> bool:
        """Finite, within ``position_min..max`` and ``|v| <= speed_max`` (every step: no allocation)."""
        buf, ok, n = self._buf, self._ok, self.n
        np.subtract(q, self._centre, out=buf)
        np.abs(buf, out=buf)
        if np.count_nonzero(np.less_equal(buf, self._half_width, out=ok)) != n:  # not .all(): see _reachable
            return False
        np.abs(v, out=buf)
        return int(np.count_nonzero(np.less_equal(buf, self.speed_max, out=ok))) == n

    def _within(self, v: FloatArray, bound: FloatArray) -> bool:
        """``|v| <= bound`` on every joint (every step: no allocation)."""
        buf = np.abs(v, out=self._buf)
        return int(np.count_nonzero(np.less_equal(buf, bound, out=self._ok))) == self.n

    def _overspeed(self, v: FloatArray) -> tuple[RejectReason, str]:
        """The refusal of a state over :attr:`overspeed_max`, naming the fastest joint past it."""
        assert self.overspeed_max is not None
        ratio = np.abs(v) / self.overspeed_max
        i = int(np.argmax(ratio))
        return (
            RejectReason.OUT_OF_RANGE,
            f"over-speed: joint {self.joint_names[i]} at {v[i]:.4g} rad/s, above "
            f"{self.overspeed_max[i]:.4g} rad/s (watchdog.overspeed_factor × its velocity limit)",
        )

    def _implausible(self, q: FloatArray, v: FloatArray) -> tuple[RejectReason, str]:
        """The reason and a message naming the first offending joint (off the hot path)."""
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return RejectReason.NON_FINITE, "joint state has non-finite position or velocity"
        out_q = np.flatnonzero((q < self.position_min) | (q > self.position_max))
        if out_q.size:
            i = int(out_q[0])
            return (
                RejectReason.OUT_OF_RANGE,
                f"joint {self.joint_names[i]} position {q[i]:.6g} rad is outside the plausible "
                f"[{self.position_min[i]:.6g}, {self.position_max[i]:.6g}] rad "
                f"(limits widened by watchdog.position_margin)",
            )
        i = int(np.flatnonzero(np.abs(v) > self.speed_max)[0])
        return (
            RejectReason.OUT_OF_RANGE,
            f"joint {self.joint_names[i]} velocity {v[i]:.6g} rad/s is beyond the plausible "
            f"{self.speed_max[i]:.6g} rad/s (watchdog.velocity_factor × the velocity limit)",
        )

    def accept(self, q: FloatArray, v: FloatArray, stamp: float, now: float) -> Action:
        """Record a good state (copied) received at ``now`` (s) and return what to do with it."""
        if self.state is WatchdogState.STOPPED and not self.config.auto_recover:
            return Action.NONE
        reset = self.has_good and stamp < self._order_stamp  # let through by check(): clock reset
        if reset:
            self.clock_resets += 1
        self._accepted_at = now
        self._order_stamp = min(stamp, now + self.config.max_age)
        np.copyto(self.last_good.q, q)
        np.copyto(self.last_good.v, v)
        self.last_good.stamp = stamp
        self.has_good = True
        # A window from before a clock reset belongs to the old run (its start may lie ahead).
        self._window_before_accept = math.nan if reset else self.fallback_since
        self._set(WatchdogState.OK)
        self.fallback_since = math.nan
        return Action.COMPUTE

    def controller_failed(self, message: str, now: float) -> Action:
        """The controller raised on the state just accepted (received at ``now``, s): what to do.

        Like :meth:`reject` with :attr:`RejectReason.CONTROLLER_ERROR`, except that a fallback
        window already open before that state stays open from where it started: the window runs
        from the last state a torque was computed for, so a controller failing on every state
        ends in STOPPED after ``fallback_duration`` like a stream of bad states does (were each
        accepted state to restart the window, the safe torque would go on for ever). With
        ``auto_recover`` each later state is tried again and, if the controller still fails,
        stays stopped.
        """
        if self._window_before_accept <= now:  # not when none was open (nan) or from another clock
            self.fallback_since = self._window_before_accept
            self._set(WatchdogState.FALLBACK)  # so that tick() keeps that window, not a new one
        return self.reject(RejectReason.CONTROLLER_ERROR, message, now)

    def reject(self, reason: RejectReason, message: str, now: float) -> Action:
        """Record a refused state received at ``now`` (s) and return what to do instead
        (:attr:`RejectReason.SUPERSEDED`: nothing; it is not counted in :attr:`rejected_total`)."""
        self.rejected[reason] += 1
        if reason is RejectReason.SUPERSEDED:
            return Action.NONE  # the newer state was answered: not a fault of the stream
        self._rejected_total += 1
        self.last_reason = reason
        self.last_message = message
        self._silent = False
        if self._jumps.stopped:
            # Two sources (see check): no safe command braking from a pose that may be the other's.
            self._set(WatchdogState.STOPPED)
            return Action.NONE
        return self.tick(now, bad=True)

    def tick(self, now: float, bad: bool = False) -> Action:
        """Advance the state machine at ``now`` (s); ``bad`` when a refused state just arrived."""
        if self.state is WatchdogState.STOPPED or not self.has_good:
            return Action.NONE
        if self.state is WatchdogState.OK:
            if not bad:
                return Action.NONE
            self.fallback_since = now
            self._set(WatchdogState.FALLBACK)
        elif self.fallback_since - now > self.config.max_age:
            # The clock went back past the window's start (a restarted simulator, a clock step):
            # the window could not end by this clock for as long as it was ahead, and the safe
            # command was timed on the old clock. Nothing trustworthy is left to send. (A step
            # of up to max_age, as a system clock's adjustment, only lengthens the window.)
            self._set(WatchdogState.STOPPED)
            return Action.NONE
        if now - self.fallback_since > self.config.fallback_duration:
            self._set(WatchdogState.STOPPED)
            return Action.NONE
        return Action.FALLBACK

    def silence(self, now: float, silent_for: float) -> None:
        """Note that no state at all arrived for ``silent_for`` s (``now``: the caller's clock).

        ``silent_for`` is on one of two clocks, by caller (:meth:`.Supervisor.silence`): the
        node's timer passes steady (monotonic) seconds since the last state arrived; a state
        arriving after a gap passes the gap in the stamps, each counted at most ``max_age`` ahead
        (:meth:`.Supervisor.step`).

        A silent stream counts as stale once ``silent_for > max_age``: the state machine
        goes to FALLBACK (nothing can be published without a state to answer) and then
        to STOPPED, so the report says what happened. ``silent_for`` ends the fallback window
        too, not only ``now``: under ``use_sim_time`` ``now`` stops with the simulator, and a
        FALLBACK kept open by a frozen clock would answer the next run's first state with a safe
        torque computed from this run's last pose (the timer's steady seconds run on).
        """
        cfg = self.config
        if self.state is WatchdogState.OK and silent_for > cfg.max_age:
            self.last_reason = RejectReason.STALE
            self.last_message = f"no joint state for {silent_for * 1e3:.0f} ms"
            # The window opens max_age after the last state, on the caller's clock. On the wall
            # clock `now − silent_for` is when it came; under sim time the clock may lag (back
            # from a stall, the /clock messages of the stall are still queued) and the time it
            # read when that state came is the later, right one: from `now − silent_for` the
            # window would be over by the first state after the stall, and the target dropped.
            # Never after `now`: a clock gone back (a restarted simulator) reads before it.
            came = min(max(now - silent_for, self._accepted_at), now)
            self.fallback_since = came + cfg.max_age
            self._silent = True
            self._set(WatchdogState.FALLBACK)
        if self.state is WatchdogState.FALLBACK and (
            now - self.fallback_since > cfg.fallback_duration
            or silent_for - cfg.max_age > cfg.fallback_duration
        ):
            if self._silent:
                # A silence that goes on: the stop's reason, as long as now. (A fallback on
                # refused states keeps theirs: the Supervisor counts its silence from the last good
                # state, so a stream of NaN states would be reported as no state at all.)
                self.last_message = f"no joint state for {silent_for * 1e3:.0f} ms"
            self._set(WatchdogState.STOPPED)

    def end_window(self) -> None:
        """End an open fallback window now (FALLBACK → STOPPED): the caller found it over by the
        states' own stamps, which go on where the clock given as ``now`` may stand still
        (``use_sim_time`` without ``/clock``: timed by it, refused states would be answered for
        ever)."""
        if self.state is WatchdogState.FALLBACK:
            self._set(WatchdogState.STOPPED)

    @property
    def safe_since(self) -> float:
        """When (s, the caller's clock) the safe command took over from :attr:`last_good`: the
        start of the fallback window, or the arrival of the last good state if later (the
        controller failed on it). ``nan`` outside a fallback."""
        if math.isnan(self.fallback_since):
            return math.nan
        return max(self.fallback_since, self._accepted_at)

    @property
    def conflict(self) -> bool:
        """Stopped on two sources of states (:meth:`check`): every state is refused until none
        jumped from the one before it for :data:`CONFLICT_WINDOW`."""
        return self._jumps.stopped

    @property
    def conflicts(self) -> int:
        """Number of stops on two sources since start."""
        return self._jumps.stops

    @property
    def steady_clock(self) -> Callable[[], float] | None:
        """The clock (s) the stop on two sources is timed on; ``None``: the caller's ``now``."""
        return self._jumps.steady

    @steady_clock.setter
    def steady_clock(self, clock: Callable[[], float] | None) -> None:
        self._jumps.steady = clock

    @property
    def rejected_total(self) -> int:
        """Number of refused states since start."""
        return self._rejected_total

    def _set(self, state: WatchdogState) -> None:
        if state is not self.state:
            self.transitions += 1
            self.state = state


__all__ = [
    "CONFLICT_JUMPS",
    "CONFLICT_WINDOW",
    "DEFAULT_DAMPING",
    "MAX_ANGLE",
    "Action",
    "JointNameMap",
    "LastGood",
    "RejectReason",
    "Watchdog",
    "WatchdogConfig",
    "WatchdogState",
]
