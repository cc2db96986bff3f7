"""Behaviours of :class:`~torque_ctrl_ros.core.supervisor.Supervisor` that a third mutation review found
unpinned.

What the supervisor does with stamps and clocks that are not finite, go back or run ahead of each
other: how far the safe brake's prediction runs on a clock that stands still (``use_sim_time``
without ``/clock``), where a target's pause starts after a state stamped ahead of the clock, what
counts as a clock reset; and the refusals and log notices around them. Each test names the
behaviour it pins and the source change (mutant) it was written to catch. Pure core: no ROS.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_supervisor import DT, KD, NAN, Q0, T0, V0, _clip, _good, _run, _supervisor
from test_supervisor_safety_mutation_gaps import _brake_from_q0, _safe_tau

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import SolverError
from torque_ctrl_ros.core.resume import ResumeKind
from torque_ctrl_ros.core.safety import CONFLICT_JUMPS, Action, RejectReason, WatchdogConfig, WatchdogState
from torque_ctrl_ros.core.supervisor import Notice, Supervisor

PERIOD_40HZ = 0.025  #: a slow driver's period (s), longer than the default ``max_age`` (20 ms)


@pytest.mark.parametrize(
    "stamps",
    [
        [math.inf, 2, 3, 4, 5, 6],
        [-math.inf, 2, 3, 4, 5, 6],
        [1, 2, math.inf, 4, 5, 6],
        [1, math.nan, 3, math.nan, 5, math.nan, 7],
    ],
    ids=["inf-first", "minus-inf-first", "inf-between", "nan-between"],
)
def test_stamps_that_are_not_finite_neither_freeze_nor_jump_the_brake_on_a_frozen_clock(
    robot: RobotModel, stamps: list[float]
) -> None:
    """``use_sim_time`` without ``/clock``: refused states 1 ms apart in their stamps, some stamped
    not finite (refused as inconsistent), while ``now`` stands still. A stamp that is not finite
    tells no time: the brake's prediction runs by the finite stamps alone, from the first of them,
    1 ms a period. Counted as stamps, a ``+inf`` would freeze the prediction for the rest of the
    window (no finite stamp is newer), ``-inf`` run it ``max_age`` ahead at once, and a NaN between
    two finite stamps lose the step between them (every other one NaN: frozen): one command
    repeated, which spins the wrist up. (Mutants: ``Supervisor._safe_command`` starting the
    stamps' count at a stamp that is not finite, or counting a step to or from one.)"""
    sup = _supervisor(robot)
    last = _run(sup, 3)
    now = last + DT
    expected = _brake_from_q0(robot, now)
    first_finite = math.nan
    for periods in stamps:
        stamp = last + periods * DT if math.isfinite(periods) else periods
        tau = _safe_tau(sup, stamp, now)
        if not math.isfinite(stamp):
            continue
        if math.isnan(first_finite):
            first_finite = stamp
        np.testing.assert_allclose(tau, _clip(robot, expected.torque(now + stamp - first_finite)), atol=1e-9)
    assert expected.k > 0  # the prediction ran on


@pytest.mark.parametrize("missing", ["q", "v"])
def test_a_state_without_positions_or_velocities_is_refused_as_inconsistent(
    robot: RobotModel, missing: str
) -> None:
    """A state given without its positions or without its velocities (``None``: unreadable) is
    refused as inconsistent, with the caller's reason, and answered by the safe brake; it is
    never checked as a state. (Mutant: ``q is None and v is None`` in ``Supervisor.step``, which
    passes a ``None`` on to ``Watchdog.check``.)"""
    sup = _supervisor(robot)
    t = _run(sup, 3) + DT
    q, v = (None, V0) if missing == "q" else (Q0, None)
    decision = sup.step(q, v, t, t, f"joint state without {missing}")
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert sup.watchdog.last_reason is RejectReason.INCONSISTENT
    assert sup.watchdog.last_message == f"joint state without {missing}"


def test_a_receiver_clock_stepped_back_while_the_stamps_go_on_is_no_clock_reset(robot: RobotModel) -> None:
    """The controller's wall clock stepped back 50 ms (more than ``max_age``) while the driver's
    stamps go on: the next state, stamped 1 ms after the last, is no new run of the stream: no
    clock reset (which would drop the target and reset the controller), the target kept. The
    stamp as it came is what orders states; capped at ``now + max_age`` it would read as older
    than the last. (Mutant: ``Watchdog.accept`` given ``effective_stamp`` in ``Supervisor.step``.)"""
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 5)
    decision = _good(sup, last + DT, now=last - 0.05)
    assert decision.action is Action.COMPUTE and not decision.clock_reset
    assert sup.watchdog.clock_resets == 0
    assert decision.resume.kind is ResumeKind.KEEP and not decision.reset_controller


def test_a_superseded_state_while_running_is_not_called_ignored_without_auto_recover(
    robot: RobotModel,
) -> None:
    """With ``auto_recover`` false, a state stamped before the last one (reordered) while the
    watchdog is OK is dropped without a word: "ignored" says the watchdog stopped for good and
    the node must be restarted, which is said only while it is STOPPED. (Mutant: the ``wd.state
    is STOPPED`` test dropped from the IGNORED notice in ``Supervisor._answer``.)"""
    sup = _supervisor(robot, auto_recover=False)
    last = _run(sup, 3)
    decision = sup.step(Q0, V0, last - 0.5 * DT, last + DT)
    assert decision.action is Action.NONE and decision.notice is Notice.NONE
    assert sup.watchdog.state is WatchdogState.OK
    assert _good(sup, last + DT).action is Action.COMPUTE


@pytest.mark.parametrize(("answered", "resumed_after"), [("refused", 0.035), ("failed", 0.05)])
def test_a_pause_starts_at_the_first_safe_command_s_stamp_as_the_target_counts_it(
    robot: RobotModel, answered: str, resumed_after: float
) -> None:
    """A 40 Hz stream; a state stamped 30 ms after the last, received 5 ms after it (25 ms ahead
    of the clock: counted as ``now + max_age``), is refused, or accepted and the controller fails
    on it; the safe brake answers it. When a good state resumes, the target's pause runs from that
    first safe command's stamp as the target counted it, ``effective_stamp``, on the same clock as
    the pause's end: 5 ms later than the stamp as it came would have it start (refused), and
    from the last computed stamp, not 5 ms after it (failed). (Mutants: ``Supervisor._safe_command``
    passes ``stamp`` to ``ResumeTracker.safe_command``, or does not call it at all; and
    ``Supervisor.controller_failed`` builds its decision with ``stamp`` as its
    ``effective_stamp``.)"""
    sup = _supervisor(robot, max_age=0.02)
    for k in range(6):
        _good(sup, T0 + k * PERIOD_40HZ)
    last = T0 + 5 * PERIOD_40HZ
    ahead, now = last + 0.03, last + 0.005
    if answered == "refused":
        decision = sup.step(Q0, NAN, ahead, now)
    else:
        computing = sup.step(Q0, V0, ahead, now)
        assert computing.action is Action.COMPUTE
        decision = sup.controller_failed(computing, SolverError("no solution"), now)
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert decision.effective_stamp == pytest.approx(last + 0.025)
    resumed = _good(sup, last + resumed_after)
    assert resumed.action is Action.COMPUTE and resumed.silence is None
    assert resumed.resume.kind is ResumeKind.PAUSE
    assert resumed.resume.since == decision.effective_stamp
    assert resumed.resume.until == last + resumed_after


def test_the_stop_on_two_sources_is_timed_on_the_steady_clock_given(robot: RobotModel) -> None:
    """A steady clock given to the supervisor times the stop on two sources: jumps 1 ms apart by
    the caller's clock but 0.6 s apart by the steady one (sim time running fast) are not
    :data:`CONFLICT_JUMPS` within the 1-s window, so the watchdog brakes rather than stops. (Mutant:
    ``Supervisor.__init__`` does not pass ``steady_clock`` on to its ``Watchdog``.)"""
    ticks = itertools.count(0.0, 0.6)
    sup = Supervisor(robot, WatchdogConfig.create(), KD, steady_clock=lambda: next(ticks))
    last = _run(sup, 3)
    other = np.zeros(7)  # a second publisher at the zero pose
    for k in range(1, 1 + CONFLICT_JUMPS):
        decision = sup.step(other, np.zeros(7), last + k * DT, last + k * DT)
        assert decision.action is Action.FALLBACK
        assert sup.watchdog.last_reason is RejectReason.OUT_OF_RANGE
    assert not sup.watchdog.conflict and sup.watchdog.state is WatchdogState.FALLBACK


def test_a_controller_failure_opens_its_window_on_the_caller_s_clock(robot: RobotModel) -> None:
    """The controller fails on a state received 15 ms after its stamp (late, within ``max_age``),
    then refused states follow 1 ms apart: the fallback window runs ``fallback_duration`` (50.5
    ms) from when the failure was seen on the caller's clock, 50 safe commands, not from the
    state's stamp, which would end it 15 ms early. (Mutant: ``Supervisor.controller_failed``
    gives the watchdog the state's ``effective_stamp`` as ``now``.)"""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.0505)
    last = _run(sup, 3)
    stamp, now = last + DT, last + 0.016
    computing = sup.step(Q0, V0, stamp, now)
    assert computing.action is Action.COMPUTE
    assert sup.controller_failed(computing, SolverError("no solution"), now).action is Action.FALLBACK
    actions = [sup.step(Q0, NAN, stamp + k * DT, now + k * DT).action for k in range(1, 61)]
    assert actions[:50] == [Action.FALLBACK] * 50 and set(actions[50:]) == {Action.NONE}


def test_a_brake_after_a_silence_on_a_frozen_clock_is_timed_from_its_first_command(robot: RobotModel) -> None:
    """``use_sim_time`` without ``/clock`` (``now`` stands still): the diagnostics timer's silence
    of 100 ms opens a window ``max_age`` after the clock's last reading, ahead of it; then refused
    states come 1 ms apart. The brake's prediction runs from its first command, 1 ms a state by
    the stamps, not from the window's start, 20 ms ahead of that clock. (Mutant:
    ``Supervisor._safe_command`` takes ``Watchdog.safe_since`` as the brake's start time.)"""
    sup = _supervisor(robot, max_age=0.02)
    _good(sup, T0)
    assert sup.silence(T0, 0.1) is not None  # the steady timer's seconds; the clock stood at T0
    expected = _brake_from_q0(robot, T0)
    for k in range(1, 6):
        tau = _safe_tau(sup, T0 + k * DT, T0)
        np.testing.assert_allclose(tau, _clip(robot, expected.torque(T0 + (k - 1) * DT)), atol=1e-9)


def test_the_safe_command_is_saturated_to_the_model_s_effort_limits(robot: RobotModel) -> None:
    """The controller fails on a state moving joint 1 at 12 rad/s (plausible: within 10 × its
    limit): the brake's first command, damped in full at 1 kHz, asks ``g − K_d·v`` ≈ −42.6 N·m
    there, past the 39 N·m effort limit; the arm gets −39 N·m, the joint named as saturated.
    (Mutant: the ``TorqueLimiter`` of ``Supervisor`` built on twice the effort limits.)"""
    sup = _supervisor(robot)
    t = _run(sup, 5) + DT
    fast = V0.copy()
    fast[1] = 12.0
    computing = sup.step(Q0, fast, t, t)
    assert computing.action is Action.COMPUTE
    decision = sup.controller_failed(computing, SolverError("no solution"), t)
    assert decision.command is not None
    np.testing.assert_allclose(decision.command.tau_unsaturated, robot.gravity(Q0) - KD * fast, atol=1e-9)
    assert decision.command.tau_unsaturated[1] < -robot.effort_limit[1]
    assert decision.command.tau[1] == -robot.effort_limit[1]
    assert decision.command.saturated_joints == (robot.joint_names[1],)
