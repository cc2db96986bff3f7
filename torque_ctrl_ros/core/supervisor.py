"""What the controller node does with each joint state, decided without ROS.

:class:`Supervisor` joins the three pieces of the safety logic between a joint-state stream and a
controller: the :class:`~.safety.Watchdog` (is this state good?), the
:class:`~.resume.ResumeTracker` (what does the target do when control resumes?) and the
:class:`~.braking.SafeBrake` (the safe command while no state can be trusted). For each state the
caller converts the message, reads its clock and asks :meth:`Supervisor.step` what to do; the
:class:`Decision` says whether to run the controller (and on which state, after which resets),
which safe command to send instead, or to send nothing, and what to log. The caller runs the
controller itself and reports back: :meth:`Supervisor.command_computed` when it answered,
:meth:`Supervisor.controller_failed` when it raised (that decision then carries the safe command).

A caller's loop, per state (``stamp`` on the states' clock, ``now`` on the caller's, s)::

    decision = supervisor.step(q, v, stamp, now)        # q None: unreadable, with an error
    if decision.action is Action.COMPUTE:
        # reset the controller if decision.reset_controller, apply decision.resume to the target
        try:
            out = controller.compute(decision.state, reference)
        except Exception as exc:
            decision = supervisor.controller_failed(decision, exc, now)
        else:
            supervisor.command_computed(out.tau)
    if decision.action is Action.FALLBACK and decision.command is not None:
        out = decision.command                          # the safe brake's, saturated

and :meth:`Supervisor.silence` from a timer when no state arrives at all (``silent_for`` then
on a steady clock: the time since the last state arrived).

With ``predict_delay`` the controller computes on the state the command will act on rather than
the one measured: the measured state carried over the commands still in flight
(:class:`~.prediction.DelayPredictor`, on the robot's ``command_delay``; nothing to carry in the
simulator), stamped with the time it is predicted for, where the target is then sampled; which
is why :meth:`Supervisor.command_computed` takes the command sent.

All times are in seconds.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from .braking import FIRST_HOLD_PERIODS, SafeBrake
from .errors import TorqueCtrlError
from .prediction import DelayPredictor, commands_in_flight, forward_step
from .resume import KEEP, Resume, ResumeKind, ResumeTracker
from .robot import CONTROL_PERIOD, RobotModel
from .safety import Action, RejectReason, Watchdog, WatchdogConfig, WatchdogState
from .saturation import TorqueLimiter
from .types import ControlOutput, JointState
from .validation import FloatArray, all_finite


@dataclass(frozen=True)
class Transition:
    """The watchdog changed state: from ``previous`` to ``state``, ``message`` its reason then."""

    previous: WatchdogState
    state: WatchdogState
    message: str

    @property
    def urgent(self) -> bool:
        """Whether it must be said at once rather than held back with others: into or out of
        STOPPED (at most one per fallback window; no line may wait while the arm gets no torque),
        or out of WAITING (once a run)."""
        return WatchdogState.STOPPED in (self.previous, self.state) or self.previous is WatchdogState.WAITING


class Notice(enum.Enum):
    """What to say about a state that moved the watchdog to no other state."""

    NONE = "none"
    REFUSED = "refused"  # refused: :attr:`Watchdog.last_reason` and ``last_message`` say why
    FAILED = "failed"  # good, but the controller failed on it: ``Watchdog.last_message`` says how
    IGNORED = "ignored"  # good, but the watchdog stopped for good (``auto_recover`` false)


@dataclass(slots=True)
class Decision:
    """What to do with one joint state (:meth:`Supervisor.step`).

    Attributes:
        action: ``COMPUTE``: run the controller on :attr:`state`; ``FALLBACK``: send
            :attr:`command` (none when :attr:`withheld`); ``NONE``: send nothing.
        stamp: the state's stamp as it came (s).
        effective_stamp: the stamp counted at most ``max_age`` ahead of the clock,
            ``min(stamp, now + max_age)`` (s), as the watchdog orders states, or as it came while
            the caller catches up (:meth:`Supervisor.step`): what the controller, the target and
            the state's age go by.
        previous: the watchdog's state before this one (after the silence its stamp showed).
        silence: the transition of that silence (a gap in the stamps), said before the rest.
        clock_reset: the state starts over on a clock gone back (a restarted simulator): the
            caller drops its target and resets its controller.
        state: ``COMPUTE``: the accepted state (controller order) stamped ``effective_stamp``;
            when the supervisor predicts the delay, carried over the commands in flight and
            stamped ``effective_stamp + predictor.horizon``, the time it is predicted for (the
            target is sampled there, where the command acts). Its arrays are the watchdog's or
            the predictor's, valid until the next :meth:`Supervisor.step` (compute on it at once;
            copy them to keep them).
        reset_controller: ``COMPUTE``: the arm moved under the safe command or stopped since the
            controller's last step (or there was none): what it carried from that step belongs to
            another state (warm starts, filtered collision gradients: 17 N·m off on the first
            step at a new pose). Not after a silence that left the arm where that step did
            (:attr:`.Resume.unbroken`).
        resume: ``COMPUTE``: what the target does (:meth:`ResumeTracker.decide_resume`); a
            pause's times on the clock of :attr:`state`'s stamps (the predicted ones included).
        command: ``FALLBACK``: the safe command, saturated and finite.
        withheld: ``FALLBACK``: the safe command, not finite: not to be sent.
        transition: the watchdog's transition on this state, if any.
        notice: otherwise, what else to say about it.
    """

    action: Action
    stamp: float
    effective_stamp: float
    previous: WatchdogState
    silence: Transition | None = None
    clock_reset: bool = False
    state: JointState | None = None
    reset_controller: bool = False
    resume: Resume = KEEP
    command: ControlOutput | None = None
    withheld: ControlOutput | None = None
    transition: Transition | None = None
    notice: Notice = Notice.NONE


def failure_message(error: BaseException) -> str:
    """The watchdog's reason for a controller that raised ``error``: its type and text, said
    ``unexpected`` unless it is one of this package's errors (a bug or a library's error)."""
    text = f"{type(error).__name__}: {error}"
    return text if isinstance(error, TorqueCtrlError) else f"unexpected {text}"


class Supervisor:
    """Decides, state by state, between the controller's torque, the safe brake and nothing.

    The watchdog's states (:class:`~.safety.WatchdogState`): WAITING (no good state yet: nothing
    computed, nothing sent), OK (the controller's torque on every good state), FALLBACK (the safe
    brake's command while states are refused or missing, for at most ``fallback_duration``) and
    STOPPED (nothing sent, until a good state with ``auto_recover``).

    *Two sources*: two publishers of this arm's states (a second node publishing another pose on
    the same topic, its states interleaved with the driver's), told from a glitch by
    :data:`~.safety.CONFLICT_JUMPS` jumps (a position no motion could have reached from the last
    good state's, :meth:`~.safety.Watchdog.check`) within :data:`~.safety.CONFLICT_WINDOW` s; the
    watchdog then stops at once (no brake can be predicted from a pose that cannot be trusted)
    and refuses every state until none jumped from the one before it for that long.

    Args:
        robot: the controller's model (limits for the watchdog, dynamics for the brake).
        config: the watchdog's settings (``fallback_duration`` is also the brake's horizon).
        fallback_damping: ``K_d`` (N·m·s/rad, ``n`` values) of the safe brake, checked by the
            caller (:meth:`RobotModel.check_damping`).
        steady_clock: the clock (s) the watchdog times its stop on two sources on, if not the
            caller's ``now`` (:class:`~.safety.Watchdog`).

    Attributes:
        watchdog: classifies the states and runs the WAITING / OK / FALLBACK / STOPPED state
            machine.
        resume_tracker: bookkeeping for what the target does when control resumes (its
            decision, a :class:`~.resume.Resume`, is :attr:`Decision.resume`).
        brake: the safe command, predicted from the last good state.
        limiter: saturation of the safe command to the model's effort limits.
        predictor: carries each accepted state over the commands in flight
            (:class:`~.prediction.DelayPredictor`); none to carry without ``predict_delay`` or
            with a ``command_delay`` of one period.
    """

    def __init__(
        self,
        robot: RobotModel,
        config: WatchdogConfig,
        fallback_damping: FloatArray,
        steady_clock: Callable[[], float] | None = None,
        *,
        predict_delay: bool = False,
    ) -> None:
        self.watchdog = Watchdog(
            robot.n,
            config,
            (robot.position_lower, robot.position_upper),
            robot.velocity_limit,
            robot.joint_names,
            steady_clock=steady_clock,
        )
        self.resume_tracker = ResumeTracker(robot.n, config, robot.difference)
        self.brake = SafeBrake(robot, fallback_damping, config.fallback_duration)
        self.limiter = TorqueLimiter(robot.joint_names, robot.effort_limit)
        self.predictor = DelayPredictor(
            robot, commands_in_flight(robot.command_delay) if predict_delay else 0
        )
        # The effective stamp (s) of the last step, and of the state the last command noted by the
        # predictor answered (nan: none): the periods between two tell how long each command acted.
        self._step_stamp = self._noted_stamp = math.nan
        self._brake_since = math.nan  # the Watchdog.safe_since the brake was started for
        # When the brake started (the caller's clock, s), and how far the states' stamps have run
        # since (s, each step at most max_age), from the newest finite stamp seen (nan: none yet).
        self._brake_start = self._stamps_run = self._last_brake_stamp = math.nan
        # The last step's stamp within a period of the caller's clock and its lag (s, step()), and
        # that of the last safe command's state: the stamps' gap between two safe commands, for
        # the command timeout (_safe_command).
        self._gap_stamp = self._last_safe_gap_stamp = math.nan
        self._step_clock = math.nan
        # The last command sent (N·m, saturated; None: not known), the one a driver holds while no
        # state comes, and the step clock (s) the last good state was handled on: since when
        # (_carried_over_silence).
        self._last_command: FloatArray | None = None
        self._good_clock = math.nan
        self._data = robot.model.createData()  # for the carry over a silence

    @property
    def stream_period(self) -> float:
        """The states' period (s), learnt from the stamps of those computed on
        (:attr:`StreamPeriod.period`: the longest of the last steps); 0 until two states in a row
        were computed on."""
        return self.resume_tracker.stream.period

    @property
    def typical_stream_step(self) -> float:
        """The usual step (s) between the states computed on (:attr:`StreamPeriod.typical`: the
        median of the last steps), ``nan`` until a full window of steps was learnt (one or two
        steps between states sent by hand tell nothing of a stream)."""
        stream = self.resume_tracker.stream
        return stream.typical if stream.full else math.nan

    @property
    def resume_tolerance(self) -> float:
        """Farthest (rad, any joint) the arm may move between two states computed on for the target
        to take up again (:attr:`ResumeTracker.tolerance`); beyond, :attr:`Decision.resume` drops it."""
        return self.resume_tracker.tolerance

    def step(
        self,
        q: FloatArray | None,
        v: FloatArray | None,
        stamp: float,
        now: float,
        error: str = "",
        clock_lag: float = 0.0,
        skipped: int = 0,
    ) -> Decision:
        """What to do with a state stamped ``stamp`` (s), received at ``now`` (s, the caller's
        clock): ``q`` (rad), ``v`` (rad/s) in controller order, or ``None`` for a state that could
        not be read (``error`` says why; refused as inconsistent). ``clock_lag`` (s): how far the
        caller's clock may lag behind the states: while it catches up with the states queued
        while it was away (:class:`~.backlog.CatchUp`) on a clock that lags with them (sim time),
        how long it was away; 0 otherwise, and always on the wall clock, which does not lag:
        there a stamp ahead of it (a driver's clock set or stepped ahead) is no sign of a backlog.
        ``skipped``: how many states queued before this one the caller skipped for it
        (:mod:`.backlog`): the step from the last one computed on is then not learnt as the
        stream's period, and the delay prediction counts their periods as run on the last command
        (:meth:`DelayPredictor.held`; it counts the periods from the stamps too: :meth:`_note_periods`).

        First the gap before it, on the states' clock (s)::

            effective_stamp = min(stamp, now + max_age + clock_lag)
            gap = min(effective_stamp, now + clock_lag + max(period, 1 ms))
                  − the last accepted state's effective_stamp   (−inf before the first good state)
            a silence of gap s (:meth:`silence`)  when  silence_after() < gap < inf
            silence_after() = min(max(max_age, 1.5·period), max_age + fallback_duration)
                                                    once the stream's period is known,
                              max_age + fallback_duration  before (only a gap that stops the arm)

        (:meth:`ResumeTracker.silence_after`). A gap in the stamps is a silence whether or not the
        caller's timer (:meth:`silence`) ticked inside it: the watchdog falls back, or stops after
        a long one, and a trajectory pauses for it. Read from the stamps, the arm's time or sim
        time (which a slow or paused simulator keeps continuous); 1.5 periods so that a 40 Hz
        driver's states, 25 ms apart, are no silence. A state that cannot be used still tells by
        its stamp how long the stream was silent (unreadable bytes carry the last good stamp: no
        gap). Its stamp counts as at most ``max_age`` ahead of the clock, here and for the
        controller and the target: a state stamped well ahead would otherwise count as a silence
        up to it, and the target would be sampled that far ahead; for the gap it counts at most a
        period ahead (under sim time a state comes a step before its ``/clock``), since one state
        stamped ``max_age`` ahead among states 1 ms apart is no silence. While the caller catches up its
        clock lags behind the states by up to the time it was away (under sim time ``/clock``
        comes in the same backlog), and clamped to that clock the stamps' gap would be hidden: no
        pause, and the target would run on with the stamps, ahead of the arm the simulator braked
        meanwhile; hence ``clock_lag``. A stamp more than ``max_future`` (+ ``clock_lag``) ahead
        is refused (:meth:`Watchdog.check`).
        """
        wd = self.watchdog
        effective_stamp = min(stamp, now + wd.config.max_age + clock_lag)
        # From the last accepted state's stamp as it counted then: its raw stamp, far ahead,
        # would hide a silence after it. This stamp counts at most a period ahead of the clock
        # here (under sim time a state comes a step before its /clock): at max_age ahead, one
        # state stamped well ahead among states 1 ms apart read as a silence of max_age + 1 ms.
        ahead = max(self.resume_tracker.stream.period, CONTROL_PERIOD)
        gap = min(effective_stamp, now + clock_lag + ahead) - self.resume_tracker.stream.last_stamp
        # A stamp far behind (refused as stale) tells no gap either: within a period of the clock.
        self._gap_stamp = min(max(stamp, now + clock_lag - ahead), now + clock_lag + ahead)
        silent = self.resume_tracker.silence_after() < gap < math.inf
        silence = self.silence(now, gap) if silent else None
        previous, rejected_before, resets = wd.state, wd.rejected_total, wd.clock_resets
        if q is None or v is None:
            action = wd.reject(RejectReason.INCONSISTENT, error, now)
        else:
            refused = wd.check(q, v, stamp, now, clock_lag)
            action = wd.reject(refused[0], refused[1], now) if refused else wd.accept(q, v, stamp, now)
        decision = Decision(action, stamp, effective_stamp, previous, silence, wd.clock_resets != resets)
        self._step_stamp = effective_stamp
        self._step_clock = now + clock_lag  # the clock the step's answer goes out on, on the stamps' time
        if action is Action.COMPUTE:
            period = self.resume_tracker.stream.period  # as known before this state's step
            resume = self.resume_tracker.decide_resume(previous, wd, effective_stamp, skipped > 0)
            # After a stop too the driver held the last command published (a safe one) until its
            # timeout: the gap from it tells whether it still acts (_note_periods).
            self._note_periods(effective_stamp, skipped, decision.clock_reset, period)
            lead = self.predictor.horizon
            if lead and resume.kind is ResumeKind.PAUSE:
                # On the target's clock: that of the states it is sampled at, the predicted ones.
                resume = replace(resume, since=resume.since + lead, until=resume.until + lead)
            decision.resume = resume
            decision.reset_controller = previous is not WatchdogState.OK and not decision.resume.unbroken
            q_hat, v_hat = self.predictor.predict(wd.last_good.q, wd.last_good.v)
            decision.state = JointState(q_hat, v_hat, effective_stamp + self.predictor.horizon)
            self._brake_since = math.nan  # the next fallback predicts from a state not yet seen
            self._good_clock = self._step_clock
        refused_now = wd.rejected_total != rejected_before  # counted as refused by the watchdog
        return self._answer(decision, now, Notice.REFUSED if refused_now else Notice.NONE)

    def _note_periods(self, stamp: float, skipped: int, unknown: bool, stream_period: float) -> None:
        """Before predicting at the state stamped ``stamp`` (s, effective): the periods since the
        state the last command noted answered ran on that command (the driver held it): one period
        for each beyond the first, from the stamps (a stream slower than 1 kHz holds each command
        for several; a dropped or skipped state's period too; the ``skipped`` states' count where
        the stamps tell no time; a copy of that state, the same stamp: none, and its new answer
        replaces the last). The commands are forgotten where they no longer tell where the arm goes:
        ``unknown`` (a clock reset: the commands belong to another run), or a gap longer than the
        command timeout the brake assumes, plus the step a command may still drive (the
        simulator's ``command_timeout`` + one step: :data:`~.braking.FIRST_HOLD_PERIODS` + 1, or
        1.5 of ``stream_period``, s, where longer; 0 while not known): past it the driver's own
        timeout took over. Within it the driver held the last command, whatever the cause: a
        slower stream's step, states dropped, states skipped after a stall of this process
        (forgotten after more than the commands in flight, a 100 Hz stream's every step and five
        states skipped at 1 kHz had been carried at constant velocity, 3e-3–1e-2 rad/s off), a
        stop (the last safe command sent before it is held as any other: forgotten at once, the
        first state after a stop 20–40 ms on was 4e-2–7e-2 rad/s off; reviews). A fallback's safe
        commands were noted (:meth:`_answer`), so after one the prediction goes on."""
        if unknown:
            self.predictor.reset()
            return
        if not (math.isfinite(stamp) and math.isfinite(self._noted_stamp)):
            self.predictor.held(skipped)  # no time told: the skipped states' periods
            return
        if stamp == self._noted_stamp:
            # A copy of the state the last command answered (the lockstep simulator repeats state
            # 0 until it is answered; two or three copies handled back to back each added an
            # answer the simulator ignored, 5e-6 rad off the plant in a CI run): this answer
            # replaces that one, it is no new period.
            self.predictor.unsend()
            return
        periods = round((stamp - self._noted_stamp) / self.predictor.period)
        # + 1: the simulator's command drives the step starting at its timeout too.
        timeout = self._command_timeout(stream_period) + 1
        if periods > max(self.predictor.in_flight + 1, timeout):
            self.predictor.reset()
        else:
            self.predictor.held(periods - 1)

    def command_computed(self, tau: FloatArray | None = None) -> None:
        """The controller answered the state of the last :meth:`step` with ``tau`` (N·m, saturated:
        the command sent). ``None`` where the command is not known: the delay prediction then
        carries the commands in flight up to here at constant velocity."""
        self.resume_tracker.torque_computed()
        if tau is None:
            self.predictor.reset()
            self._last_command = None
        else:
            self.predictor.sent(tau)
            self._noted_stamp = self._step_stamp
            self._last_command = tau.copy()

    def controller_failed(self, decision: Decision, error: BaseException, now: float) -> Decision:
        """The controller raised ``error`` on the state of ``decision`` (``COMPUTE``, from the last
        :meth:`step`, at ``now``): what to do instead, the safe command while the fallback window
        lasts (:meth:`Watchdog.controller_failed`). What ``decision`` said before the controller
        ran (its silence, clock reset, resets and resume) was acted on and is not repeated."""
        action = self.watchdog.controller_failed(failure_message(error), now)
        failed = Decision(action, decision.stamp, decision.effective_stamp, decision.previous)
        return self._answer(failed, now, Notice.FAILED)

    def silence(self, now: float, silent_for: float) -> Transition | None:
        """No state arrived for ``silent_for`` s up to ``now`` (s, the caller's clock):
        :meth:`Watchdog.silence`; the transition it made, if any.

        ``silent_for`` is on the clock of whoever noticed the silence: from the caller's timer,
        steady (monotonic) seconds since the last state arrived; from :meth:`step`, the gap in the
        states' stamps (effective, as :meth:`step` counts them). Once the stream's period is
        known, up to :meth:`ResumeTracker.silence_after` it is none: between two states of a stream
        slower than ``max_age`` allows (a 10 Hz driver's), the timer would otherwise fall back at
        every tick that came between them. (Before, ``max_age`` is the limit, as
        :meth:`Watchdog.silence` has it.)"""
        wd = self.watchdog
        previous = wd.state
        tracker = self.resume_tracker
        if (
            wd.state is WatchdogState.OK
            and tracker.stream.period > 0.0
            and silent_for <= tracker.silence_after()
        ):
            return None
        wd.silence(now, silent_for)
        return None if wd.state is previous else Transition(previous, wd.state, wd.last_message)

    def first_hold(self) -> int:
        """Periods the brake's first command is expected to be held (:meth:`SafeBrake.start`):
        the stream's period (in brake periods, at least 1) when it answers a good state the
        controller failed on (the stream is alive), else :data:`FIRST_HOLD_PERIODS`; also
        :data:`FIRST_HOLD_PERIODS` while that period is not known yet (fewer than two states in a
        row computed on): the stream may be a slow one, whose commands are held for long."""
        period = self.resume_tracker.stream.period
        if self.watchdog.last_reason is not RejectReason.CONTROLLER_ERROR or period <= 0.0:
            return FIRST_HOLD_PERIODS
        return max(1, round(period / self.brake.period))

    def _command_timeout(self, stream_period: float) -> int:
        """The periods (of ``h``) a driver applies a command at most, as the brake and the delay
        prediction assume it: :data:`~.braking.FIRST_HOLD_PERIODS` (the simulator's timeout), or
        1.5 of ``stream_period`` (s; 0 while unknown) where longer, the step a slow stream's
        driver holds each command over, with the room a late state gets."""
        return max(FIRST_HOLD_PERIODS, round(1.5 * stream_period / self.brake.period))

    def _answer(self, decision: Decision, now: float, notice: Notice) -> Decision:
        """Complete ``decision`` at ``now``: the safe command of a FALLBACK, what to log
        (``notice``: what to say of the state when the watchdog made no transition on it:
        ``REFUSED``, ``FAILED`` or ``NONE``)."""
        wd = self.watchdog
        if decision.action is Action.FALLBACK and self.resume_tracker.note_fallback(decision.stamp, now):
            wd.end_window()  # over by the stamps while the caller's clock stands still
            decision.action = Action.NONE
        if decision.action is Action.FALLBACK:
            out = self._safe_command(decision.stamp, decision.effective_stamp, now)
            if out is None:  # no safe command says where the arm goes: the watchdog's message says why
                decision.action = Action.NONE
            elif all_finite(out.tau):
                decision.command = out
                self.predictor.sent(out.tau)
                self._last_command = out.tau.copy()
                # An unreadable state carries the last good stamp, which tells no time: a safe
                # command answering one is noted at the clock (with its lag) it went out on,
                # else the gap to the next good state reads from the last good one and forgets
                # the commands in flight (a review: 4e-2–7e-2 rad/s off after a stop).
                ahead = max(self.resume_tracker.stream.period, CONTROL_PERIOD)
                noted = decision.effective_stamp
                self._noted_stamp = noted if noted >= self._step_clock - ahead else self._step_clock
            else:  # a prediction gone non-finite (the watchdog refuses such states)
                decision.withheld = out
        if wd.state is not decision.previous:
            decision.transition = Transition(decision.previous, wd.state, wd.last_message)
        elif notice is not Notice.NONE:
            decision.notice = notice
        elif (
            decision.action is Action.NONE
            and wd.state is WatchdogState.STOPPED
            and not wd.config.auto_recover
        ):
            # With auto_recover the next good state resumes: a state let pass (an older stamp,
            # superseded) is no sign that a restart is needed.
            decision.notice = Notice.IGNORED
        return decision

    def _safe_command(self, stamp: float, effective_stamp: float, now: float) -> ControlOutput | None:
        """The safe brake's command (saturated) for a state stamped ``stamp`` (s; ``effective_stamp``
        as :meth:`step` counts it) that the watchdog refused or the controller failed on, at
        ``now`` (s). ``None`` (the watchdog's message says why) when the last safe command has
        been out longer than the driver applies one (:data:`~.braking.FIRST_HOLD_PERIODS`, or 1.5
        of the stream's period where longer, as :meth:`ResumeTracker.silence_after` allows a
        slow stream's states to come late), by the brake's clock
        (:meth:`SafeBrake.held_past_timeout`) or by the states' stamps, each counted within a period
        of the caller's clock and its lag (so that a gap a catch-up's lagging clock hides still
        counts, and one wild stamp, ahead or behind, counts no gap): the arm was not braked by it
        since, and no prediction from it says where the arm is (the window ends). ``None`` too,
        the window running on, when the window's first safe command would follow a silence longer
        than that (:meth:`_carried_over_silence`).

        The brake's prediction runs on the larger of the time the caller's clock and the states'
        stamps have run since it started (each stamp's step counted up to ``max_age``): either
        alone can stand still while the arm moves on (``use_sim_time`` without ``/clock`` freezes
        the clock; a driver can repeat a stamp), and a prediction that stands still repeats one
        command, which spins the wrist up (:mod:`.braking`). The larger of the two totals, not
        of each step: with states delivered unevenly, the larger step each time would run the
        prediction ahead of both (7–15 ms in 0.2 s with 0.2–0.5 ms of jitter). A stamp that is
        not finite tells no time: the stamps' total runs between the finite ones (a ``+inf`` kept
        as the newest would stop it for the rest of the window, a NaN between two finite stamps
        would lose the step between them)."""
        wd = self.watchdog
        self.resume_tracker.safe_command(effective_stamp)
        since = wd.safe_since
        if since != self._brake_since:  # a new window, or a new last good state
            # Timed from this first safe command, not from `since`: after a silence the
            # window opened before any command could go out (core/braking.py).
            # From the last good state carried over the commands in flight (none without a
            # delay): the brake's first command acts after them; then over the silence before
            # this state, if any (_carried_over_silence). From the state itself, a 450 ms
            # fallback 5 ms late ended with the arm at 1.55–1.97 rad/s where the brake's
            # prediction read 0.54 (0.62 against 0.53 from the carried state; a review's runs).
            q0, v0 = self.predictor.predict(wd.last_good.q, wd.last_good.v)
            timeout = self._command_timeout(self.resume_tracker.stream.period)
            carried = self._carried_over_silence(q0, v0, timeout)
            if carried is None:
                return None
            self.brake.start(*carried, now, hold=self.first_hold(), timeout=timeout)
            self._last_safe_gap_stamp = math.nan
            self._brake_since = since
            self._brake_start, self._stamps_run = now, 0.0
            self._last_brake_stamp = stamp if math.isfinite(stamp) else math.nan
        elif math.isfinite(stamp):  # one that is not (refused as inconsistent) tells no time
            self._stamps_run += min(_forward(stamp - self._last_brake_stamp), wd.config.max_age)
            if not stamp < self._last_brake_stamp:  # never back (nan: the first finite one)
                self._last_brake_stamp = stamp
        elapsed = max(_forward(now - self._brake_start), self._stamps_run)
        held = self.brake.held_past_timeout(self._brake_start + elapsed)
        stamp_gap = round(min(_forward(self._gap_stamp - self._last_safe_gap_stamp) / self.brake.period, 1e9))
        if stamp_gap > self.brake.timeout:
            held = max(held, stamp_gap)
        if math.isfinite(self._gap_stamp) and not self._gap_stamp < self._last_safe_gap_stamp:
            self._last_safe_gap_stamp = self._gap_stamp
        if held:
            period_ms = 1e3 * self.brake.period
            wd.last_message = (
                f"no safe command for {held * period_ms:.0f} ms in the fallback window, longer than the "
                f"{self.brake.timeout * period_ms:.0f} ms a driver applies one: the arm was not braked "
                f"by it meanwhile (its command timeout took over); stopped"
            )
            wd.end_window()
            return None
        return self.limiter.apply(self.brake.torque(self._brake_start + elapsed))

    def _carried_over_silence(
        self, q: FloatArray, v: FloatArray, timeout: int
    ) -> tuple[FloatArray, FloatArray] | None:
        """Where the arm is when the first safe command of a window goes out: ``(q, v)`` (rad,
        rad/s; the last good state carried over the commands in flight) carried on over the
        periods beyond one since that state was handled, by the caller's clock, under the last
        command sent, which the driver held while no state came (the step carries it with the
        model, as the brake does); none for a good state the controller failed on. ``None`` (the
        watchdog's message says why) when those periods exceed ``timeout``, the periods a driver
        applies a command: its own timeout took over and nothing here says where the arm is, so no
        safe command goes out; the window runs on (a good state within it resumes, as after a
        silence alone, rather than a stop dropping the target).

        Started from the last good state as if it were measured now, after a 30–45 ms silence and
        refused states, the brake's prediction was 0.65–0.97 rad off the arm in MuJoCo, which it
        drove to 3.2–5.2 times joint_6's velocity limit (a review); carried, 0.02 rad and 0.42–0.43
        times, as without a silence. The clock rather than the stamps: a refused state's stamp can
        be anywhere (stale, ahead, the last good one for an unreadable state), and a stream whose
        stamps lag the clock would count the lag as a silence."""
        periods = round(_forward(self._step_clock - self._good_clock) / self.brake.period) - 1
        if periods <= 0 or self._last_command is None:
            return q, v
        if periods > timeout:
            period_ms = 1e3 * self.brake.period
            self.watchdog.last_message = (
                f"no joint state for {(periods + 1) * period_ms:.0f} ms before this one, longer than the "
                f"{timeout * period_ms:.0f} ms a driver applies a command: the arm was not held by the "
                "last one meanwhile (its command timeout took over), and no safe command can start from "
                "where it was; none sent"
            )
            return None
        q, v = q.copy(), v.copy()
        for _ in range(periods):
            forward_step(self.brake.robot, self._data, q, v, self._last_command, self.brake.period)
        return q, v


def _forward(step: float) -> float:
    """``step`` (s) where it moves forward, else 0 (backward, or NaN)."""
    return step if step > 0.0 else 0.0


__all__ = ["Decision", "Notice", "Supervisor", "Transition", "failure_message"]
