"""Seeded fuzz of the safety supervisor (core/supervisor.py) on hostile joint-state streams.

Each case drives a :class:`Supervisor`, built as the controller node builds it from
``config/gen3_controllers.yaml`` (its ``watchdog`` and ``fallback_damping``, variants of them
below), through a stream of a few hundred to a few thousand states: mostly a benign 1 kHz stream
of a gently moving arm, interleaved with hostile events (:data:`EVENTS`): stamps going back (a
little, or to 0: a restarted simulator), duplicates, stamps far ahead or jumping forward by
seconds, negative, huge and non-finite stamps, NaN / inf positions or velocities, positions past
the limits, a second source's pose interleaved, unreadable states, the caller's clock standing
still (sim time paused) or jumping, the clock standing still while refused states come stamped
not finite, repeating a stamp or going back (sim time without ``/clock``:
:meth:`Stream.still_refused`), silences noted by the diagnostics timer, and controller failures.
Each stream ends with a benign tail. Clocks are wall-clock-like (``now`` a little after
each stamp, on the rate of the steady clock) or sim-time-like (``now`` the simulator's time, which
stands still, jumps and restarts with it; a catch-up's clock lag passed on), with ``auto_recover``
true and false.

Invariants checked at every state (from the docstrings of core/supervisor.py, core/safety.py and
core/resume.py):

- nothing raises out of the supervisor, whatever the input;
- ``COMPUTE``: the watchdog is OK and the state is finite, within the plausible bounds
  (``position_min..max``, ``|v| <= speed_max``), stamped ``effective_stamp`` (finite, at most
  ``max_age + clock_lag`` ahead of ``now``); it carries no command. ``FALLBACK``: the watchdog is in
  FALLBACK and exactly one of ``command`` (finite, within the effort limits) and ``withheld`` (not
  finite) is set. ``NONE``: neither. No command at all while WAITING or STOPPED, none on a
  controller failure after a stop; a safe command only within ``fallback_duration`` (on the
  caller's clock) of the watchdog being seen to go into FALLBACK, and not more than ``max_age``
  before it (a clock gone back);
- a frozen clock (:meth:`ResumeTracker.note_fallback`): a fallback window runs from the first
  safe command (or withheld one) after a torque was last computed; while the caller's ``now``
  stands at one reading, each later one is given only if, counting it and the answers since the
  first at that reading, ``max(0, reading − now at the window's first) + (newest − first finite
  stamp answered) + repeats·step <= fallback_duration``: ``repeats`` the answers whose stamp was
  not newer than every finite one before it (repeated, gone back, or not finite), ``step`` the
  stream's typical step (:attr:`StreamPeriod.typical`, ``CONTROL_PERIOD`` while unknown). With no
  stamp newer, at most ``1 + fallback_duration / step`` safe commands, not the same one for ever,
  whether the clock stood still from the window's first answer or stopped later. Windows do end
  this way;
- a stop with ``auto_recover`` false is final (no state leaves STOPPED, nothing is sent after it);
  with ``auto_recover`` true the benign tail is computed on again within :func:`recovery_bound`
  states (the stop on two sources lasts :data:`CONFLICT_WINDOW` after the last jump on the
  steady clock; after it, and after any fallback or stop, the first good state is taken: past a
  gap the jump bound covers any pose; a stamp accepted ahead counts at most ``max_age`` ahead),
  and stays computed on from then;
- counters never decrease; ``rejected_total`` is the sum of ``rejected`` but ``SUPERSEDED``; a
  state moves it by at most one; ``REFUSED`` is said exactly when it moved and no transition is;
  a state change is always reported (``silence`` or ``transition``), from ``previous``;
- resume: ``DROP`` or ``PAUSE`` only after a non-OK period (``previous`` FALLBACK or STOPPED,
  which a silence also leads to); a ``PAUSE`` runs from no earlier than the last state computed
  on to the resuming state's ``effective_stamp`` (its shift positive and at most the span held);
  a target kept or paused after a non-OK period only where the arm moved at most
  :data:`RESUME_TOLERANCE` since the last state computed on (unless the clock was reset: the node
  drops the target then); the controller is reset on every resume not marked ``unbroken``;
- clock resets: a simulator restarted at 0 (stamps and clock back together) after a run longer
  than :func:`recovery_bound` states is computed on again, counted in ``clock_resets``, within
  that bound, unless stopped for good (after a shorter run, within three times it:
  :meth:`Stream.restart`).

:class:`NodeDriver` makes the calls the node makes (``_handle_state``, ``_compute``,
``_check_silence``), with its :class:`CatchUp`; the steady clock it gives the supervisor is the
stream's, not ``time.monotonic``. ``TORQUE_CTRL_SUPERVISOR_FUZZ_SEEDS=N`` runs the cases with N
seeds (a campaign) instead of 6.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from ros_helpers import shipped_parameters
from test_node_runtime_guards import HOME

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.backlog import CatchUp
from torque_ctrl_ros.core.errors import SolverError
from torque_ctrl_ros.core.resume import RESUME_TOLERANCE, ResumeKind
from torque_ctrl_ros.core.robot import CONTROL_PERIOD
from torque_ctrl_ros.core.safety import CONFLICT_WINDOW, Action, RejectReason, WatchdogConfig, WatchdogState
from torque_ctrl_ros.core.supervisor import Decision, Notice, Supervisor
from torque_ctrl_ros.nodes.params import controller_node_config

PERIOD = 1e-3  #: the benign stream's period (s)
ZERO = np.zeros(7)
#: The stamps of :meth:`Stream.still_refused`.
STILL_STAMPS = ("nan", "inf", "-inf", "repeat", "stale")
EVENTS = (
    "back_small",
    "restart",
    "duplicate",
    "far_future",
    "forward",
    "wild_stamp",
    "non_finite",
    "past_limits",
    "second_source",
    "unreadable",
    "clock_still",
    "clock_jump",
    "still_refused",
    "silence",
    "controller_fails",
)


def shipped_config() -> tuple[WatchdogConfig, np.ndarray, RobotModel]:
    """The watchdog config and safe-brake damping of the shipped controller node, and its robot."""
    cfg = controller_node_config(shipped_parameters("controller_node"))
    robot = RobotModel.from_file(cfg.model_file)
    return cfg.watchdog, cfg.fallback_damping_vector(robot.n, robot), robot


def recovery_bound(config: WatchdogConfig) -> int:
    """States of a benign 1 kHz tail within which control resumes (``auto_recover``): the stop
    on two sources ends :data:`CONFLICT_WINDOW` after the last jump (the tail's first state at
    the latest), stamps ahead of the clock hold the order for at most ``max_age``, and one state
    more for the window's end to be seen."""
    return math.ceil((CONFLICT_WINDOW + 2 * config.max_age) / PERIOD) + 3


@dataclass
class Stats:
    """What a case went through, for the report and for the checks that each path was taken."""

    actions: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    resumes: Counter[str] = field(default_factory=Counter)
    states: int = 0
    recoveries: int = 0
    clock_resets: int = 0
    conflicts: int = 0
    withheld: int = 0
    frozen_answers: int = 0  #: safe commands checked against the stamps' budget (clock standing still)
    frozen_stops: int = 0  #: windows ended by the stamps on a clock standing still


@dataclass
class StampWindow:
    """A fallback window as its states' stamps measure it (:meth:`ResumeTracker.note_fallback`):
    from the first safe command (or withheld one) after a torque was last computed, the stamps
    counted since the caller's clock last moved."""

    opened: float  #: the caller's clock (s) at its first answer
    now: float  #: the caller's clock (s) at the first answer the stamps are counted from
    first: float = math.nan  #: the first finite stamp (s) answered since; nan while none
    newest: float = math.nan  #: the newest finite stamp (s) answered since; nan while none
    repeats: int = 0  #: answers after that first with no stamp newer than every finite one before

    def restart(self, stamp: float, now: float) -> None:
        """Count the stamps again from an answer to a state stamped ``stamp`` at ``now`` (s)."""
        self.now, self.repeats = now, 0
        self.first = self.newest = stamp if math.isfinite(stamp) else math.nan

    def answer(self, stamp: float) -> None:
        """One more answer, to a state stamped ``stamp`` (s, as it came)."""
        if math.isfinite(stamp) and stamp > self.newest:  # False while newest is nan
            self.newest = stamp
            return
        self.repeats += 1
        if math.isfinite(stamp) and math.isnan(self.first):
            self.first = self.newest = stamp

    def spent(self, step: float) -> float:
        """How much of ``fallback_duration`` (s) the window used, ``step`` s a repeat::

        max(0, now − opened) + newest − first + repeats·step"""
        span = 0.0 if math.isnan(self.first) else self.newest - self.first
        return max(0.0, self.now - self.opened) + span + self.repeats * step


class NodeDriver:
    """The controller node's calls on its supervisor, without ROS (``ControllerNode._handle_state``,
    ``_compute``, ``_check_silence``): per state, :class:`CatchUp` on the steady clock (its clock
    lag passed on under sim time), :meth:`Supervisor.step`, the controller when the decision is to
    compute (here it fails when told to: :meth:`Supervisor.controller_failed`, else
    :meth:`Supervisor.command_computed`), the safe command of a fallback unless withheld. No queue
    is modelled: each state is handed over alone (the catch-up takes none behind it). Checks the
    invariants of the module docstring on every call."""

    def __init__(self, sup: Supervisor, robot: RobotModel, sim_time: bool, stats: Stats) -> None:
        self.sup, self.robot, self.sim_time, self.stats = sup, robot, sim_time, stats
        self.wd = sup.watchdog
        self.steady = 0.0
        self.sup.watchdog.steady_clock = lambda: self.steady
        self.catch_up = CatchUp(self.wd.config.max_age)
        self.computed_q: np.ndarray | None = None  # the last state computed on (rad)
        self.computed_stamp = -math.inf  # its effective stamp (s)
        self.stopped_for_good = False
        self.window_opened = math.nan  # the caller's clock (s) when FALLBACK was last seen to begin
        self._in_fallback = False
        self.stamp_window: StampWindow | None = None  # since a torque was last computed
        self.accepted = False  # the last state was accepted (computed on, or the controller failed)
        self.counters = self._counters()

    def _counters(self) -> tuple[int, ...]:
        wd = self.wd
        return (
            *(wd.rejected[r] for r in RejectReason),
            wd.rejected_total,
            wd.transitions,
            wd.clock_resets,
            wd.conflicts,
        )

    def state(
        self, q: np.ndarray | None, v: np.ndarray | None, stamp: float, now: float, arrival: float, fail: bool
    ) -> Decision:
        """A state handled as the node does (``arrival`` on the steady clock, s); ``fail``: the
        controller raises on it."""
        self.steady = arrival
        wd, sup = self.wd, self.sup
        lag = 0.0
        if self.catch_up.begin(arrival, sup.stream_period):
            lag = self.catch_up.away if self.sim_time else 0.0
        before_state, before_total = wd.state, wd.rejected_total
        before_sum = sum(wd.rejected.values())
        decision = sup.step(q, v, stamp, now, "" if q is not None else "unreadable", lag)
        if self.catch_up.active:
            self.catch_up.handled(stamp, sup.stream_period)
        self.stats.states += 1
        self._check_step(decision, before_state, before_total, before_sum, now, lag)
        self.accepted = decision.action is Action.COMPUTE
        if self.accepted:
            self._check_compute(decision)
            if fail:
                decision = sup.controller_failed(decision, SolverError("fuzz: the controller failed"), now)
                self._check_answer(decision, now)
                self.stats.actions["failed"] += 1
            else:
                sup.command_computed()
                self.stamp_window = None
        self.stats.actions[decision.action.value] += 1
        self._check_counters()
        return decision

    def silence(self, now: float, silent_for: float) -> None:
        """The diagnostics timer: no state for ``silent_for`` s (steady) up to ``now`` (none noted
        before the first state, as in ``ControllerNode._check_silence``)."""
        if not self.stats.states:
            return
        before = self.wd.state
        transition = self.sup.silence(now, silent_for)
        if transition is None:
            assert self.wd.state is before
        else:
            assert (transition.previous, transition.state) == (
                before,
                self.wd.state,
            ) and before is not self.wd.state
        self._check_final()
        self._note_window(now)
        self._check_counters()

    # ------------------------------------------------------------------ invariants
    def _check_final(self) -> None:
        wd = self.wd
        if self.stopped_for_good:
            assert wd.state is WatchdogState.STOPPED, "left STOPPED with auto_recover false"
        if wd.state is WatchdogState.STOPPED and not wd.config.auto_recover:
            self.stopped_for_good = True

    def _check_counters(self) -> None:
        wd = self.wd
        now_counters = self._counters()
        assert all(b >= a for a, b in zip(self.counters, now_counters, strict=True)), "a counter went down"
        self.counters = now_counters
        assert wd.rejected_total == sum(wd.rejected.values()) - wd.rejected[RejectReason.SUPERSEDED]

    def _check_step(
        self, d: Decision, before: WatchdogState, before_total: int, before_sum: int, now: float, lag: float
    ) -> None:
        wd = self.wd
        assert d.previous is (before if d.silence is None else d.silence.state)
        if d.silence is not None:
            assert d.silence.previous is before and d.silence.state is not before
        moved = sum(wd.rejected.values()) - before_sum
        assert moved in (0, 1), "one state refused more than once"
        if d.action is Action.COMPUTE:
            assert moved == 0 and wd.state is WatchdogState.OK
        refused = wd.rejected_total != before_total
        if wd.state is not d.previous:
            assert d.transition is not None
            assert (d.transition.previous, d.transition.state) == (d.previous, wd.state)
        else:
            assert d.transition is None
            assert (d.notice is Notice.REFUSED) == refused
        if d.clock_reset:
            assert d.action is Action.COMPUTE
        self._check_answer(d, now)
        if d.action is not Action.COMPUTE:
            assert d.state is None and d.resume.kind is ResumeKind.KEEP and not d.reset_controller
        if math.isfinite(d.stamp) and math.isfinite(now):
            assert d.effective_stamp == min(d.stamp, now + wd.config.max_age + lag)

    def _note_window(self, now: float) -> None:
        """Note ``now`` (s) when the watchdog is seen to have gone into FALLBACK."""
        fallback = self.wd.state is WatchdogState.FALLBACK
        if fallback and not self._in_fallback:
            self.window_opened = now
        self._in_fallback = fallback

    def _check_answer(self, d: Decision, now: float) -> None:
        """What is sent for a decision (after the controller, if it failed) at ``now`` (s)."""
        wd = self.wd
        self._check_final()
        self._note_window(now)
        if d.action is Action.FALLBACK:
            assert wd.state is WatchdogState.FALLBACK
            cfg = wd.config
            assert -cfg.max_age <= now - self.window_opened <= cfg.fallback_duration, "outside the window"
            self._check_stamp_window(d.stamp, now)
            assert (d.command is None) != (d.withheld is None)
            if d.command is not None:
                tau = d.command.tau
                assert np.isfinite(tau).all(), tau
                assert (np.abs(tau) <= self.robot.effort_limit).all(), tau
            else:
                self.stats.withheld += 1
        else:
            assert d.command is None and d.withheld is None
        window = self.stamp_window
        stopped = d.transition is not None and d.transition.state is WatchdogState.STOPPED
        if stopped and window is not None and now == window.now and not wd.conflict:
            self.stats.frozen_stops += 1
        if d.action is not Action.COMPUTE and wd.state in (WatchdogState.WAITING, WatchdogState.STOPPED):
            assert d.action is Action.NONE
        if self.stopped_for_good:
            assert d.action is Action.NONE

    def _check_stamp_window(self, stamp: float, now: float) -> None:
        """A safe command (or a withheld one) answers a state stamped ``stamp`` at ``now`` (s): on
        a clock standing at one reading, within ``fallback_duration`` by the clock up to that
        reading and the stamps since (:class:`StampWindow`; a repeat counts the stream's typical
        step)."""
        window = self.stamp_window
        if window is None:
            self.stamp_window = window = StampWindow(now, now)
            window.restart(stamp, now)
            return
        if now != window.now:
            window.restart(stamp, now)  # the caller's clock times the window while it runs (above)
            return
        window.answer(stamp)
        step = self.sup.resume_tracker.stream.typical or CONTROL_PERIOD
        spent, duration = window.spent(step), self.wd.config.fallback_duration
        assert spent <= duration, f"a safe command {spent:.6f} s into a frozen window of {duration} s"
        self.stats.frozen_answers += 1

    def _check_compute(self, d: Decision) -> None:
        wd, state = self.wd, d.state
        assert state is not None
        q, v = state.q, state.v
        assert np.isfinite(q).all() and np.isfinite(v).all()
        assert ((wd.position_min <= q) & (q <= wd.position_max)).all()
        assert (np.abs(v) <= wd.speed_max).all()
        assert state.stamp == d.effective_stamp and math.isfinite(d.effective_stamp)
        resume = d.resume
        self.stats.resumes[resume.kind.value] += 1
        after_break = d.previous in (WatchdogState.FALLBACK, WatchdogState.STOPPED)
        if resume.kind is not ResumeKind.KEEP:
            assert after_break, f"{resume.kind} after {d.previous}"
        if resume.unbroken:
            assert resume.kind is ResumeKind.KEEP and after_break
        if after_break and not resume.unbroken:
            assert d.reset_controller
        if resume.kind is ResumeKind.PAUSE:
            assert resume.until == d.effective_stamp
            assert self.computed_stamp <= resume.since < resume.until, resume
        if after_break and resume.kind is not ResumeKind.DROP and not d.clock_reset:
            assert self.computed_q is not None
            moved = np.abs(self.robot.difference(q, self.computed_q)).max()
            assert moved <= RESUME_TOLERANCE, f"{resume.kind} after the arm moved {moved} rad"
        if d.clock_reset:
            self.stats.clock_resets += 1
        self.computed_q = q.copy()
        self.computed_stamp = d.effective_stamp


# ------------------------------------------------------------------------------ streams
@dataclass
class Case:
    """One fuzz case: its seed, clock, ``auto_recover`` and other watchdog settings."""

    seed: int
    sim_time: bool
    auto_recover: bool
    states: int  #: benign states between the hostile events, in all (the tail not counted)
    hostile: float  #: chance of a hostile event before each benign state
    overrides: dict[str, float] = field(default_factory=dict)


class Stream:
    """A benign 1 kHz stream of a moving arm, with hostile events (:data:`EVENTS`) on demand.

    ``t`` is the arm's time (the stamps), ``offset`` how far the caller's clock is off it (its
    ``now`` is ``t + offset``, plus a little latency on the wall clock), ``steady`` the steady
    clock (s). On the wall clock ``now`` runs with the steady clock; under sim time it is the
    simulator's, which may run slower than real time, stand still, jump and restart."""

    def __init__(self, case: Case, driver: NodeDriver, rng: np.random.Generator) -> None:
        self.case, self.driver, self.rng = case, driver, rng
        self.sim = case.sim_time
        self.t = 5.0 if self.sim else 1.7e9  # wall-clock stamps resolve ~240 ns: as the node's
        self.offset = 0.0
        self.steady = 100.0
        self.frozen: float | None = None  # the caller's clock standing still at this value
        self.base = HOME.copy()
        self.phase = rng.uniform(0, 2 * np.pi, 7)
        self.failing = 0  # states the controller still fails on
        self.last_stamp = 0.0  # the last stamp computed on, as the node keeps it for unreadable states
        self.last_order = -math.inf  # what the watchdog orders the stamps after (Watchdog.check)

    def pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The arm at time ``t`` (s): 0.3 rad about ``base`` at 0.5 Hz, ~1 rad/s at most."""
        w = np.pi
        arg = w * (t % 1000.0) + self.phase
        return self.base + 0.3 * np.sin(arg), 0.3 * w * np.cos(arg)

    def now(self) -> float:
        if self.frozen is not None:
            return self.frozen
        latency = 0.0 if self.sim else float(self.rng.uniform(0.0, 3e-4))
        return self.t + self.offset + latency

    def send(
        self,
        q: np.ndarray | None = None,
        v: np.ndarray | None = None,
        stamp: float | None = None,
        now: float | None = None,
        *,
        pose: bool = True,
    ) -> Decision:
        """One state: the arm's at ``t`` unless given, stamped ``t`` unless given."""
        if pose:
            q0, v0 = self.pose(self.t)
            q = q0 if q is None else q
            v = v0 if v is None else v
        stamp = self.t if stamp is None else stamp
        fail = self.failing > 0
        now = self.now() if now is None else now
        d = self.driver.state(q, v, stamp, now, self.steady, fail)
        if self.driver.accepted:
            self.last_stamp, self.last_order = stamp, min(stamp, now + self.driver.wd.config.max_age)
            self.failing -= 1
        return d

    def tick(self, steps: int = 1) -> None:
        """The arm's time and the steady clock run on by ``steps`` periods."""
        self.t += steps * PERIOD
        self.steady += steps * PERIOD * (float(self.rng.uniform(1.0, 3.0)) if self.sim else 1.0)

    def benign(self) -> Decision:
        self.tick()
        return self.send()

    # -------------------------------------------------------------- hostile events
    def event(self, name: str) -> None:
        rng = self.rng
        self.driver.stats.events[name] += 1
        if name == "back_small":
            self.send(stamp=self.t - float(rng.uniform(5e-4, 0.05)))
        elif name == "restart":
            self.restart()
        elif name == "duplicate":
            for _ in range(int(rng.integers(1, 4))):
                self.send()
        elif name == "far_future":
            for _ in range(int(rng.integers(1, 3))):
                self.tick()
                self.send(stamp=self.t + float(rng.choice([0.005, 0.03, 0.5, 0.99, 1.5, 50.0])))
        elif name == "forward":
            jump = float(rng.uniform(0.5, 5.0))
            how = rng.integers(3)
            if how == 0:  # both clocks jump (a stall: steady too)
                self.t += jump
                self.steady += jump
            elif how == 1:  # stamps and the caller's clock jump, the process ran on (sim time)
                self.t += jump
            else:  # the stamps alone jump ahead (a driver's clock stepped) for a while
                self.offset -= jump
                for _ in range(int(rng.integers(1, 50))):
                    self.benign()
                self.offset += jump
        elif name == "wild_stamp":
            wild = [-1e9, -1.0, 0.0, -0.0, 1e18, 1e300, -1e300, math.nan, math.inf, -math.inf]
            self.send(stamp=float(rng.choice(wild)))
        elif name == "non_finite":
            for _ in range(int(rng.integers(1, 30))):
                q, v = self.pose(self.t)
                bad = rng.choice([math.nan, math.inf, -math.inf])
                (q if rng.random() < 0.5 else v)[rng.integers(7)] = bad
                self.send(q, v)
                self.tick()
        elif name == "past_limits":
            for _ in range(int(rng.integers(1, 30))):
                q, v = self.pose(self.t)
                j = int(rng.integers(7))
                r = rng.integers(3)
                if r == 0:
                    q[j] = (self.driver.wd.position_max[j] + float(rng.uniform(1e-3, 5.0))) * rng.choice(
                        [-1, 1]
                    )
                elif r == 1:
                    q[j] = float(rng.choice([1e7, -1e300, 1e300]))
                else:
                    v[j] = self.driver.wd.speed_max[j] * float(rng.uniform(1.001, 1e3))
                self.send(q, v)
                self.tick()
        elif name == "second_source":
            other = ZERO if rng.random() < 0.5 else rng.uniform(-2.0, 2.0, 7)
            every = int(rng.choice([1, 3, 100]))  # its states among the driver's
            own_clock = rng.random() < 0.3
            for k in range(int(rng.integers(2, 400))):
                self.tick()
                if k % every == 0:
                    self.send(other.copy(), ZERO.copy(), stamp=(k * 0.1 if own_clock else None))
                else:
                    self.send()
        elif name == "unreadable":
            for _ in range(int(rng.integers(1, 5))):
                self.tick()
                self.send(stamp=self.last_stamp, pose=False)
        elif name == "clock_still":
            self.frozen = self.now()
            for _ in range(int(rng.integers(1, 800))):
                self.benign()
            self.frozen = None
        elif name == "clock_jump":
            jump = float(rng.choice([-5.0, -0.5, -0.03, -0.01, 0.01, 0.03, 0.5, 5.0]))
            self.offset += jump
            for _ in range(int(rng.integers(1, 100))):
                self.benign()
            self.offset -= jump
        elif name == "still_refused":
            self.still_refused()
        elif name == "silence":
            self.silence(float(rng.choice([0.005, 0.03, 0.1, 0.3, 0.6, 3.0])))
        elif name == "controller_fails":
            self.failing = int(rng.choice([1, 2, 10, 100, 700]))
        else:
            raise ValueError(f"unknown event {name!r}; expected one of {EVENTS}")

    def silence(self, span: float) -> None:
        """No state for ``span`` s (steady), noted by the diagnostics timer every 0.1 s of it: the
        stamps jump by it (the driver stalled), or go on without a gap (sim time: the simulator
        stalled too, its clock standing still with them)."""
        stall = self.sim and self.rng.random() < 0.5
        start, waited = self.steady, 0.0
        while waited + 0.1 < span:
            waited += 0.1
            self.steady = start + waited
            now = self.now() if stall else self.now() + waited
            self.driver.silence(now, waited)
        self.steady = start + span
        if not stall:
            self.t += span

    def still_refused(self) -> None:
        """The caller's clock standing still (sim time without ``/clock``) while states come that
        the watchdog refuses, stamped NaN or ±inf, unreadable with the last stamp computed on, or
        stale (back past ``max_age``): all one kind, or mixed. Half the runs are longer than a
        window by the stamps allows with no stamp newer (1 + ``fallback_duration`` / period
        answers), so that a window they open must end (:meth:`NodeDriver._check_stamp_window`)."""
        rng, config = self.rng, self.driver.wd.config
        longest = math.ceil(config.fallback_duration / PERIOD) + 1
        count = int(rng.integers(1, 20)) + (longest if rng.random() < 0.5 else 0)
        kinds = STILL_STAMPS if rng.random() < 0.3 else (str(rng.choice(STILL_STAMPS)),)
        self.frozen = self.now()
        for _ in range(count):
            self.steady += PERIOD
            kind = str(rng.choice(kinds))
            if kind == "repeat":
                self.send(stamp=self.last_stamp, pose=False)
            elif kind == "stale":
                self.send(stamp=self.frozen - config.max_age - float(rng.uniform(1e-3, 1.0)))
            else:
                self.send(stamp=float(kind))  # "nan", "inf" or "-inf"
        self.frozen = None

    def restart(self) -> None:
        """Under sim time, a restarted simulator: stamps and clock start again near 0, the arm at
        another pose. Where the old run's stamps went on for longer than :func:`recovery_bound`
        states, its first state taken is a clock reset (its clock is behind the last accepted
        state's), within that bound. Otherwise nothing tells the new run from the old one once
        its clock passes the old run's last stamp: its states are jumps from the old run's last
        pose until their stamps are far enough from it for any pose to be reachable (~0.5 s on
        the Gen3), each 4 of them a stop on two sources (1 s on the steady clock): control is
        back within three times that bound. On the wall clock, one state stamped near 0 (stale).
        """
        if not self.sim:
            self.send(stamp=float(self.rng.uniform(0.0, 1.0)))
            return
        driver = self.driver
        bound = recovery_bound(driver.wd.config)
        resets = driver.wd.clock_resets
        self.t = float(self.rng.uniform(0.0, 0.01))
        self.offset = 0.0
        self.base = HOME + self.rng.uniform(-0.5, 0.5, 7)
        self.failing = 0
        told = driver.wd.has_good and self.last_order > self.t + bound * PERIOD
        for k in range(bound if told else 3 * bound):
            d = self.benign() if k else self.send()
            if d.action is Action.COMPUTE:
                if told:
                    assert d.clock_reset and driver.wd.clock_resets == resets + 1
                return
        assert driver.stopped_for_good, f"no good state in {k + 1} after the simulator restarted"


def run_case(case: Case) -> Stats:
    """Run ``case``: its stream with hostile events, then a benign tail on which control must
    resume (``auto_recover``, or no stop) and stay."""
    config, damping, robot = shipped_config()
    fields = {
        "max_age": config.max_age,
        "max_future": config.max_future,
        "fallback_duration": config.fallback_duration,
        "position_margin": config.position_margin,
        "velocity_factor": config.velocity_factor,
    }
    config = WatchdogConfig.create(**(fields | case.overrides | {"auto_recover": case.auto_recover}))
    stats = Stats()
    driver = NodeDriver(Supervisor(robot, config, damping), robot, case.sim_time, stats)
    rng = np.random.default_rng(case.seed)
    stream = Stream(case, driver, rng)
    for _ in range(case.states):
        if rng.random() < case.hostile:
            stream.event(str(rng.choice(EVENTS)))
        stream.benign()
    stream.frozen, stream.offset, stream.failing = None, 0.0, 0
    bound = recovery_bound(config)
    tail = [stream.benign().action for _ in range(bound + 50)]
    if driver.stopped_for_good:
        assert set(tail) == {Action.NONE}
    else:
        first = tail.index(Action.COMPUTE) if Action.COMPUTE in tail else len(tail)
        assert first < bound, f"control resumed only after {first} good states (bound {bound})"
        assert set(tail[first:]) == {Action.COMPUTE}, "control did not stay up on a benign stream"
        stats.recoveries += 1
    stats.conflicts = driver.wd.conflicts
    return stats


#: The guard's cases: per seed, both clocks, ``auto_recover`` true and false, a long calm stream
#: and a short hostile one; the shipped settings, the hardware's shorter window, and a tight one.
SETTINGS: tuple[dict[str, float], ...] = (
    {},
    {"fallback_duration": 0.1},
    {"max_age": 0.005, "fallback_duration": 0.0},
)
CASES = [
    Case(seed, sim, recover, states, hostile, SETTINGS[seed % len(SETTINGS)])
    for seed in range(int(os.environ.get("TORQUE_CTRL_SUPERVISOR_FUZZ_SEEDS", "6")))
    for sim in (False, True)
    for recover in (True, False)
    for states, hostile in ((1500, 0.02), (400, 0.3))
]


def test_the_supervisor_stays_sound_under_hostile_streams() -> None:
    total = Stats()
    for case in CASES:
        try:
            stats = run_case(case)
        except AssertionError as exc:
            raise AssertionError(f"{case}: {exc}") from exc
        for name in ("actions", "events", "resumes"):
            getattr(total, name).update(getattr(stats, name))
        for name in (
            "states",
            "recoveries",
            "clock_resets",
            "conflicts",
            "withheld",
            "frozen_answers",
            "frozen_stops",
        ):
            setattr(total, name, getattr(total, name) + getattr(stats, name))
    print(f"\n{len(CASES)} cases: {total}")
    # Every path was taken: the invariants were checked on it.
    assert set(total.events) == set(EVENTS)
    assert set(total.actions) == {"compute", "fallback", "none", "failed"}
    assert set(total.resumes) == {"keep", "pause", "drop"}
    assert (
        min(total.clock_resets, total.conflicts, total.recoveries, total.frozen_answers, total.frozen_stops)
        > 0
    )
