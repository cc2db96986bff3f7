"""Behaviours of the core safety modules that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch:
the watchdog, supervisor, resume, braking and saturation logic that decides what torque reaches
the arm when its joint states are bad or late. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from test_resume import Loop
from test_supervisor import DT, KD, NAN, Q0, T0, V0, _supervisor

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.backlog import CatchUp
from torque_ctrl_ros.core.braking import SafeBrake
from torque_ctrl_ros.core.errors import StateError, TargetError
from torque_ctrl_ros.core.resume import ResumeKind, StreamPeriod
from torque_ctrl_ros.core.safety import (
    CONFLICT_JUMPS,
    Action,
    JointNameMap,
    RejectReason,
    Watchdog,
    WatchdogConfig,
    WatchdogState,
)
from torque_ctrl_ros.core.supervisor import Decision, Supervisor
from torque_ctrl_ros.core.target_checks import check_target_rates, checked_joint_reference

Q1 = Q0 + 0.002  # another pose, within reach of Q0 in 1 ms


def _good(sup: Supervisor, stamp: float, now: float, q: np.ndarray = Q0, v: np.ndarray = V0) -> Decision:
    """A good state, the controller answering it."""
    decision = sup.step(q, v, stamp, now)
    assert decision.action is Action.COMPUTE
    sup.command_computed()
    return decision


def _safe_tau(decision: Decision) -> np.ndarray:
    assert decision.action is Action.FALLBACK and decision.command is not None
    return decision.command.tau


def test_a_new_fallback_on_a_frozen_clock_brakes_from_the_new_last_good_state(robot: RobotModel) -> None:
    """A fallback, a good state, then another fallback, all at one ``now`` (use_sim_time without
    /clock): the second brake starts from the good state between them, not from the first
    window's pose. (Mutant: ``Supervisor.step`` no longer forgets ``_brake_since`` on COMPUTE, so
    a window whose ``safe_since`` equals the old one keeps the stale prediction.)"""
    now = T0
    sup = _supervisor(robot)
    _good(sup, T0, now)
    first = _safe_tau(sup.step(NAN, NAN, T0 + DT, now))
    _good(sup, T0 + 2 * DT, now, q=Q1, v=-V0)
    second = _safe_tau(sup.step(NAN, NAN, T0 + 3 * DT, now))

    fresh = _supervisor(robot)
    _good(fresh, T0 + 2 * DT, now, q=Q1, v=-V0)
    expected = _safe_tau(fresh.step(NAN, NAN, T0 + 3 * DT, now))
    np.testing.assert_allclose(second, expected, atol=1e-12)
    assert not np.allclose(second, first)


def test_stamps_going_back_do_not_run_the_brake_ahead_on_a_frozen_clock(robot: RobotModel) -> None:
    """Refused states on a frozen clock whose stamps go back and forth (T, T − 10 ms, T, …): the
    brake's prediction runs by how far the newest stamp got, not by each return to it, so it
    gives the command of a prediction that stood still. (Mutant: ``_safe_command`` takes every
    stamp as the last, also one that went back, so each return counts up to ``max_age`` again.)"""
    now = T0

    def commands(stamps: list[float]) -> list[np.ndarray]:
        sup = _supervisor(robot)
        _good(sup, T0, now)
        return [_safe_tau(sup.step(NAN, NAN, s, now)).copy() for s in stamps]

    back_and_forth = commands([T0 + DT, T0 + DT - 0.01, T0 + DT, T0 + DT - 0.01, T0 + DT])
    repeated = commands([T0 + DT] * 5)
    for got, want in zip(back_and_forth, repeated, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


class _Loop(Loop):
    """test_resume's watchdog and resume tracker (three joints, fed as the supervisor feeds them),
    with a ``max_age`` of the test's choice and every good state asserted to be computed on."""

    def __init__(self, max_age: float = 0.02) -> None:
        super().__init__(config=WatchdogConfig.create(max_age=max_age, fallback_duration=0.5))
        self.resumes = self.decisions

    def good(self, stamp: float, q: np.ndarray | None = None, now: float | None = None) -> None:
        computed = len(self.decisions)
        super().good(stamp, q, now)
        assert len(self.decisions) == computed + 1  # accepted and computed on


def test_an_arm_moved_exactly_the_tolerance_is_taken_up_again() -> None:
    """The target is dropped only when the arm moved *more* than the resume tolerance: exactly
    0.1 rad is taken up again (a pause). (Mutant: ``not moved.max() < tolerance`` in
    ``ResumeTracker._decide``.)"""
    loop = _Loop()
    for k in range(5):
        loop.good(1.0 + k * 0.001)
    loop.bad(1.005)
    loop.good(1.006, np.array([0.0, 0.1, 0.0]))  # 0.1 − 0.0 is exactly the tolerance
    assert loop.tracker.tolerance == 0.1
    assert loop.resumes[-1].kind is ResumeKind.PAUSE


def test_a_clock_silence_ending_exactly_one_silence_gap_on_is_unbroken() -> None:
    """A fallback from a silence on the clock alone, nothing refused, and the next state stamped
    exactly ``silence_gap`` after the last computed one: no gap in the stamps, so the target and
    the controller's state are kept (``UNBROKEN``), not paused. (Mutant: ``stamp < silent_after``
    in ``ResumeTracker._decide``.)"""
    loop = _Loop(max_age=0.03125)
    for k in range(5):
        loop.good(1.0 + k * 0.0009765625)  # 2⁻¹⁰ s: exact steps, period below max_age/1.5
    last = 1.0 + 4 * 0.0009765625
    loop.wd.silence(last + 0.001, 0.1)  # the node's steady timer: 0.1 s without a state
    assert loop.wd.state is WatchdogState.FALLBACK
    loop.good(last + 0.03125)
    resume = loop.resumes[-1]
    assert resume.kind is ResumeKind.KEEP and resume.unbroken


def test_a_second_fallback_pauses_from_its_own_first_safe_command() -> None:
    """Two fallbacks with computed states between them: the second pause starts at the second
    window's first safe command, not at the last computed state. (Mutant: ``decide_resume`` no
    longer forgets the first safe command's stamp, so the second window reuses the first's.)"""
    loop = _Loop()
    for k in range(5):
        loop.good(1.0 + k * 0.001)
    loop.bad(1.005)
    loop.good(1.006)
    loop.good(1.007)
    loop.bad(1.008)
    loop.bad(1.009)
    loop.good(1.010)
    resume = loop.resumes[-1]
    assert resume.kind is ResumeKind.PAUSE
    assert resume.since == 1.008 and resume.until == 1.010


def test_repeated_stamps_end_a_frozen_window_by_the_streams_typical_step() -> None:
    """On a frozen clock, refused states repeating one stamp each count one *typical* step of the
    stream (25 ms at 40 Hz), so the 0.5 s window ends after ~20 of them, not after 500 as at the
    1 kHz default. (Mutant: ``note_fallback`` counts each repeat as ``CONTROL_PERIOD``.)"""
    loop = _Loop()
    for k in range(12):
        loop.good(1.0 + k * 0.025)
    assert abs(loop.tracker.stream.typical - 0.025) < 1e-9
    stamp = now = 1.0 + 12 * 0.025
    answered = 0
    while loop.bad(stamp, now) is Action.FALLBACK:
        answered += 1
        assert answered < 30, "the window never ended on a frozen clock"
    assert loop.wd.state is WatchdogState.STOPPED


def test_a_state_repeating_the_last_stamp_is_no_step_of_the_stream() -> None:
    """Two states computed on with one stamp (a driver repeating it) add no 0 s step: the typical
    step stays the stream's. (Mutant: ``0.0 <= step`` in ``StreamPeriod.computed``.)"""
    stream = StreamPeriod()
    for stamp in (1.0, 1.001, 1.001, 1.002, 1.002):
        stream.computed(stamp, none_refused_since=True)
    assert abs(stream.typical - 0.001) < 1e-9


def test_a_gap_of_exactly_the_silence_after_is_no_silence(robot: RobotModel) -> None:
    """A state stamped exactly ``silence_after()`` after the last good one (before the period is
    known: ``max_age + fallback_duration``) is no silence: nothing to say before it. (Mutant:
    ``silence_after() <= gap`` in ``Supervisor.step``.)"""
    sup = _supervisor(robot, max_age=0.03125, fallback_duration=0.5)
    _good(sup, T0, T0)
    assert sup.resume_tracker.silence_after() == 0.53125
    decision = sup.step(Q0, V0, T0 + 0.53125, T0 + 0.53125)
    assert decision.action is Action.COMPUTE
    assert decision.silence is None


def test_no_catch_up_after_a_pause_of_exactly_the_silence_gap() -> None:
    """Arrivals exactly ``max(max_age, 1.5·period)`` apart are no silence: no catch-up begins.
    (Mutant: ``away >= silence_gap`` in ``CatchUp.begin``.)"""
    catch_up = CatchUp(0.25)
    catch_up.begin(1.0)
    assert not catch_up.begin(1.25)
    assert not catch_up.active


def test_a_catch_up_ends_on_stamps_exactly_one_silence_gap_apart() -> None:
    """Once back long enough, a handled state stamped exactly ``silence_gap`` after the one before
    it follows on: the catch-up ends. (Mutant: ``stamp − last < silence_gap`` in
    ``CatchUp.handled``.)"""
    catch_up = CatchUp(0.25)
    catch_up.begin(0.0)
    assert catch_up.begin(1.0)  # away 1 s
    assert not catch_up.handled(10.0)
    for k in range(1, 9):  # states 0.125 s apart (no new silence) until back as long as away
        assert catch_up.begin(1.0 + k * 0.125)
    assert catch_up.handled(10.25)
    assert not catch_up.active


def test_a_catch_up_goes_on_while_the_stamps_still_jump_after_it_lasted_long_enough() -> None:
    """Back as long as it was away, a catch-up still goes on while the handled states' stamps jump
    (a burst of the backlog, states skipped): it ends only at one that follows on. (Mutant:
    ``CatchUp.handled`` ends on ``long_enough`` alone.)"""
    catch_up = CatchUp(0.02)
    catch_up.begin(0.0)
    assert catch_up.begin(0.3)  # away 0.3 s
    assert not catch_up.handled(5.0)
    for k in range(1, 32):  # states 10 ms apart until back longer than it was away
        assert catch_up.begin(0.3 + k * 0.01)
    assert not catch_up.handled(5.1)  # the stamps jumped 0.1 s: still a burst
    assert catch_up.active
    assert catch_up.begin(0.62)
    assert catch_up.handled(5.101)  # follows on: over


def test_each_catch_up_counts_only_its_own_skipped_states() -> None:
    """``CatchUp.skipped`` is the count of the *last* catch-up (the node reports it when one ends):
    a new catch-up starts it from 0. (Mutant: ``begin`` no longer resets ``skipped``.)"""
    catch_up = CatchUp(0.02)
    catch_up.begin(0.0)
    assert catch_up.begin(0.3)
    catch_up.taken(9)
    assert catch_up.skipped == 9
    for k in range(1, 40):  # back longer than away; then the stamps follow on
        catch_up.begin(0.3 + k * 0.01)
        catch_up.handled(5.0 + k * 0.001)
    assert not catch_up.active
    assert catch_up.begin(1.0)  # away again
    catch_up.taken(2)
    assert catch_up.skipped == 2


def test_the_brakes_prediction_runs_on_the_saturated_torque_the_arm_gets(robot: RobotModel) -> None:
    """A brake command past the effort limits: the prediction integrates the saturated torque
    (what the arm really gets), not the unclipped command. (Mutant: ``SafeBrake.torque`` passes
    ``command`` to ABA instead of ``tau``.)"""
    v = np.full(7, 1.0)
    brake = SafeBrake(robot, np.full(7, 200.0), horizon=0.5)
    brake.start(Q0, v, 0.0, hold=1)
    assert (np.abs(brake.command) > robot.effort_limit).any()
    held = brake.tau.copy()
    a = pin.aba(robot.model, robot.data, robot.configuration(Q0), v, held)
    brake.torque(0.001)
    np.testing.assert_allclose(brake.v, v + 0.001 * a, rtol=1e-12, atol=1e-12)


def test_the_brake_predicts_up_to_a_horizon_that_is_not_a_whole_number_of_periods(robot: RobotModel) -> None:
    """A horizon of 2.5 periods is predicted to its end (3 periods: the whole horizon covered),
    not cut half a period short. (Mutant: ``math.floor`` for ``max_periods`` in ``SafeBrake``.)"""
    brake = SafeBrake(robot, KD, horizon=0.0025)
    brake.start(Q0, V0, 0.0)
    brake.torque(1.0)
    assert brake.k == 3


@pytest.mark.parametrize("field", ["velocity", "acceleration"])
def test_a_target_rate_far_below_minus_the_bound_is_refused(field: str) -> None:
    """Target rates are bounded in size, both signs: −1e5 rad/s (or rad/s²) is refused like
    +1e5. (Mutant: ``within`` checks only ``x <= bound``.)"""
    huge = np.full(7, -1e5)
    args = (huge, None) if field == "velocity" else (None, huge)
    with pytest.raises(TargetError, match=field):
        check_target_rates("reference", *args)
    with pytest.raises(TargetError, match=field):
        checked_joint_reference("reference", 7, Q0, *args)


def _bounded_watchdog(**config: object) -> Watchdog:
    """Three joints within ±1 rad, 1 rad/s (plausible speed 10 rad/s: reach 0.2 rad in 20 ms)."""
    limits = (np.full(3, -1.0), np.full(3, 1.0))
    return Watchdog(3, WatchdogConfig.create(**config), limits, np.ones(3))


def _feed(wd: Watchdog, q: np.ndarray, stamp: float) -> RejectReason | None:
    """A state received at its stamp: accepted or refused; the reason it was refused."""
    refused = wd.check(q, np.zeros(3), stamp, stamp)
    if refused is None:
        wd.accept(q, np.zeros(3), stamp, stamp)
        return None
    wd.reject(refused[0], refused[1], stamp)
    return refused[0]


def test_jumps_of_a_run_before_a_clock_reset_do_not_count_toward_a_stop_on_two_sources() -> None:
    """Three glitches (jumps) at 100 s, then the clock restarts at 0 (a restarted simulator) and
    one more glitch comes: the old run's jumps are forgotten, so it is one jump, refused as such,
    not the fourth of a stop on two sources. (Mutant: ``Watchdog._jumped`` no longer clears the
    jump times when the clock went back.)"""
    wd = _bounded_watchdog()
    z, far = np.zeros(3), np.full(3, 0.9)
    assert _feed(wd, z, 100.0) is None
    for k in range(3):
        assert _feed(wd, far, 100.001 + 0.002 * k) is RejectReason.OUT_OF_RANGE
        assert _feed(wd, z, 100.002 + 0.002 * k) is None
    assert _feed(wd, z, 0.0) is None and wd.clock_resets == 1
    assert _feed(wd, far, 0.001) is RejectReason.OUT_OF_RANGE
    assert not wd.conflict and wd.conflicts == 0


def test_a_silence_of_exactly_max_age_is_not_stale() -> None:
    """A stream silent for exactly ``max_age`` is not yet stale: no fallback (it is from *more*
    than ``max_age``). (Mutant: ``silent_for >= max_age`` in ``Watchdog.silence``.)"""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.03125))
    z = np.zeros(3)
    wd.accept(z, z, 1.0, 1.0)
    wd.silence(1.03125, 0.03125)
    assert wd.state is WatchdogState.OK
    wd.silence(1.0625, 0.0625)
    assert wd.state is WatchdogState.FALLBACK


def test_a_stop_after_refused_states_keeps_their_reason_though_a_silence_opened_the_window() -> None:
    """A fallback opened by a silence, then a refused state (NaN), then the window runs out: the
    stop reports the refusal, not "no joint state" (states did come). (Mutant: ``Watchdog.reject``
    no longer clears the flag that the fallback came from silence.)"""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    z = np.zeros(3)
    wd.accept(z, z, 1.0, 1.0)
    wd.silence(1.05, 0.05)
    assert wd.state is WatchdogState.FALLBACK
    assert wd.reject(RejectReason.NON_FINITE, "joint state has non-finite position", 1.06) is Action.FALLBACK
    wd.silence(1.7, 0.7)
    assert wd.state is WatchdogState.STOPPED
    assert wd.last_reason is RejectReason.NON_FINITE
    assert wd.last_message == "joint state has non-finite position"


def test_a_repeated_stamp_is_no_clock_reset(robot: RobotModel) -> None:
    """A driver repeating the last accepted stamp: the state is computed on as usual, not taken
    for a clock gone back (which drops the target and resets the controller). (Mutant:
    ``stamp <= _order_stamp`` counts as a reset in ``Watchdog.accept``.)"""
    sup = _supervisor(robot)
    _good(sup, T0, T0)
    decision = _good(sup, T0, T0 + DT)
    assert not decision.clock_reset
    assert sup.watchdog.clock_resets == 0


def test_a_message_with_more_values_than_names_is_refused() -> None:
    """``JointNameMap.take`` refuses values whose count is not the names' count, more as well as
    fewer: with 8 positions for 7 names there is no telling which belongs to which joint.
    (Mutant: ``len(values) < len(names)``.)"""
    names = [f"joint_{i}" for i in range(1, 8)]
    joints = JointNameMap(names)
    with pytest.raises(StateError, match="8 entries for 7 names"):
        joints.take(names, np.arange(8.0), np.empty(7), "position")


def test_a_tick_without_a_refused_state_keeps_ok() -> None:
    """``Watchdog.tick(now)`` without a refused state leaves OK as it is (only a refused state or a
    silence opens a window). (Mutant: ``tick`` no longer returns at once on OK when not ``bad``.)"""
    wd = Watchdog(3)
    z = np.zeros(3)
    wd.accept(z, z, 1.0, 1.0)
    assert wd.tick(1.001) is Action.NONE
    assert wd.state is WatchdogState.OK


def test_handled_outside_a_catch_up_ends_nothing() -> None:
    """``CatchUp.handled`` answers ``False`` when no catch-up is under way, also right after one
    ended (the node logs the skipped count when it answers ``True``). (Mutant: ``handled`` no
    longer returns at once when not active.)"""
    catch_up = CatchUp(0.02)
    assert not catch_up.handled(1.0)
    catch_up.begin(0.0)
    assert catch_up.begin(0.1)
    assert not catch_up.handled(5.0)
    for k in range(1, 12):
        catch_up.begin(0.1 + k * 0.01)
    assert catch_up.handled(5.001)  # ended
    catch_up.begin(0.221)
    assert not catch_up.active
    assert not catch_up.handled(5.002)


def test_the_period_is_still_learnt_after_a_fallback() -> None:
    """After a fallback, steps between states computed in a row are the stream's again: a stream
    that then slows to 40 Hz has its period learnt (else each later state would be a silence).
    (Mutant: ``decide_resume`` no longer notes the refused count at the last computed state, so
    every step after the first refusal ever counts as one across refused states.)"""
    loop = _Loop()
    for k in range(5):
        loop.good(1.0 + k * 0.001)
    loop.bad(1.005)
    for k in range(6):
        loop.good(1.006 + k * 0.025)
    assert abs(loop.tracker.stream.period - 0.025) < 1e-9


def _stopped_on_two_sources(wd: Watchdog, z: np.ndarray, far: np.ndarray, t: float) -> float:
    """Feed the driver's ``z`` and another publisher's ``far`` alternately from ``t`` until the
    watchdog stops on two sources; the time of the stop."""
    assert _feed(wd, z, t) is None
    for k in range(2 * CONFLICT_JUMPS):
        t += 0.001
        _feed(wd, far if k % 2 == 0 else z, t)
        if wd.conflict:
            return t
    raise AssertionError("no stop on two sources")


def test_a_non_finite_state_during_a_stop_on_two_sources_hides_no_jump() -> None:
    """Stopped on two sources, a NaN state between two poses does not become the pose the next
    state is compared with: the jump after it still counts, and the stop goes on for
    :data:`CONFLICT_WINDOW` from that jump. (Mutant: ``Watchdog._conflicted`` also takes a
    non-finite state as the last received.)"""
    wd = _bounded_watchdog()
    z, far = np.zeros(3), np.full(3, 0.9)
    stop = _stopped_on_two_sources(wd, z, far, 10.0)
    assert _feed(wd, z, stop + 0.001) is RejectReason.INCONSISTENT  # a jump back to z
    assert _feed(wd, np.full(3, np.nan), stop + 0.002) is RejectReason.INCONSISTENT
    assert _feed(wd, far, stop + 0.003) is RejectReason.INCONSISTENT  # jumped from z
    assert _feed(wd, far, stop + 1.002) is RejectReason.INCONSISTENT  # 0.999 s after that jump
    assert wd.conflict
