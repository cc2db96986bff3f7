"""The watchdog refuses a joint state that jumped from the last good one farther than any motion
could in the time between their stamps (a second publisher on the joint-state topic), and lets
through wraps of continuous joints, fast real motion, long gaps and restarted runs; it stops on
two sources of states (CONFLICT_JUMPS jumps within CONFLICT_WINDOW) until one alone is left, and
not on a glitch (pure core)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import URDF_PATH

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.resume import ResumeKind, ResumeTracker
from torque_ctrl_ros.core.safety import (
    CONFLICT_JUMPS,
    CONFLICT_WINDOW,
    Action,
    RejectReason,
    Watchdog,
    WatchdogConfig,
    WatchdogState,
)

HOME = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])  # scene.xml
ZERO = np.zeros(7)  # where a joint_state_publisher puts the arm: every joint at 0
LATENCY = 3e-4  # s from a state's stamp to its receipt


@pytest.fixture(scope="module")
def gen3() -> RobotModel:
    return RobotModel.from_urdf_file(URDF_PATH)


def _watchdog(robot: RobotModel, **config: float) -> Watchdog:
    limits = (robot.position_lower, robot.position_upper)
    return Watchdog(robot.n, WatchdogConfig.create(**config), limits, robot.velocity_limit, robot.joint_names)


def _feed(wd: Watchdog, q: np.ndarray, stamp: float, now: float | None = None) -> tuple[Action, str | None]:
    """Check, then accept or reject, as the controller node does: (action, refusal message)."""
    now = stamp + LATENCY if now is None else now
    v = np.zeros(wd.n)
    refused = wd.check(q, v, stamp, now)
    if refused is None:
        return wd.accept(q, v, stamp, now), None
    return wd.reject(*refused, now), refused[1]


def test_a_second_publisher_at_the_zero_pose_is_refused_and_the_driver_kept_until_it_stops_it(
    gen3: RobotModel,
) -> None:
    """The driver at 1 kHz moves the arm slowly about home, with jittery stamps; a
    joint_state_publisher sends the zero pose every 100 ms, stamped on its own clock. Each of its
    first CONFLICT_JUMPS − 1 states is refused naming the joint that jumped, each of the driver's
    computed on; the CONFLICT_JUMPS-th (0.3 s after the first) stops the watchdog."""
    wd = _watchdog(gen3)
    rng = np.random.default_rng(7)
    amplitude, omega = 0.3, 2.0 * math.pi * 0.5  # rad, rad/s: up to 0.94 rad/s, 67 % of a limit
    interlopers = 0
    for k in range(1000):
        t = 10.0 + 1e-3 * k + rng.uniform(-4.5e-4, 4.5e-4)
        q = HOME + amplitude * math.sin(omega * (t - 10.0)) * np.ones(7)
        action, message = _feed(wd, q, t)
        assert action is Action.COMPUTE and message is None, (k, message)
        if k % 100 == 50:
            interlopers += 1
            action, message = _feed(wd, ZERO, t + 1e-4)
            if interlopers == CONFLICT_JUMPS:
                break
            assert action is Action.FALLBACK and wd.last_reason is RejectReason.OUT_OF_RANGE, message
            # joint_3 is π from the zero pose (the short way round), joint_4 2.3 rad.
            assert message is not None and message.startswith("joint joint_3 jumped"), message
            assert "(and " in message and "second node publishing" in message, message
            assert np.allclose(wd.last_good.q, q)  # the safe command brakes from the driver's pose
    assert (action, wd.state, wd.last_reason) == (
        Action.NONE,
        WatchdogState.STOPPED,
        RejectReason.INCONSISTENT,
    )
    assert k == 350 and wd.conflict and wd.conflicts == 1
    assert (
        wd.rejected[RejectReason.OUT_OF_RANGE] == CONFLICT_JUMPS - 1 and wd.rejected_total == CONFLICT_JUMPS
    )


def test_a_jump_says_which_joint_by_how_much_and_in_how_long(gen3: RobotModel) -> None:
    wd = _watchdog(gen3)
    _feed(wd, HOME, 1.0)
    q = HOME.copy()
    q[1] += 0.5  # joint_2, bounded: 0.5 rad in 2 ms, 0.28 rad allowed
    refusal = wd.check(q, np.zeros(7), 1.002, 1.002 + LATENCY)
    assert refusal is not None
    reason, message = refusal
    assert reason is RejectReason.OUT_OF_RANGE
    assert message.startswith("joint joint_2 jumped +0.5 rad in 2 ms since the last good state"), message
    assert "farther than 0.279 rad (14 rad/s" in message and "over 20 ms" in message, message
    assert "(and " not in message and "joint_state_publisher" in message, message


def test_a_continuous_joint_wrapping_across_pi_has_not_jumped() -> None:
    """From +π−ε to −π+ε is 2ε the short way round on a joint without limits; on a joint with
    limits (wide enough to hold both) it is a jump of 2π − 2ε."""
    limits = (np.array([-np.inf, -4.0]), np.array([np.inf, 4.0]))
    wd = Watchdog(2, WatchdogConfig.create(), limits, np.array([1.0, 1.0]), ("spin", "hinge"))
    stamp = 5.0
    for q0 in np.arange(math.pi - 0.01, math.pi + 0.01, 1e-3):  # 1 rad/s across +π, reported wrapped
        q = (q0 + math.pi) % (2.0 * math.pi) - math.pi
        assert _feed(wd, np.array([q, 0.0]), stamp) == (Action.COMPUTE, None)
        stamp += 1e-3
    assert wd.last_good.q[0] < -math.pi + 0.01
    # Far along in turns (an accumulated angle) against a wrapped reading: the same angle.
    assert _feed(wd, np.array([-math.pi + 0.011 + 40.0 * math.pi, 0.0]), stamp) == (Action.COMPUTE, None)
    wd = Watchdog(2, WatchdogConfig.create(), limits, np.array([1.0, 1.0]), ("spin", "hinge"))
    _feed(wd, np.array([0.0, math.pi - 1e-3]), 1.0)
    action, message = _feed(wd, np.array([0.0, -math.pi + 1e-3]), 1.001)
    assert (
        action is Action.FALLBACK and message is not None and message.startswith("joint hinge jumped -6.28")
    )


def test_fast_but_possible_motion_is_accepted_up_to_the_bound(gen3: RobotModel) -> None:
    """The continuous joints at their velocity limit for 0.5 s at 1 kHz, then at velocity_factor
    times it (speed_max), with stamps 0.1 ms and 1.9 ms apart in turn: all accepted (0.1 ms at
    speed_max covers 1.4 mrad, not the 14 mrad each step moves: the max_age floor lets it through).
    Over a 50 ms step (a 20 Hz driver) the bound is speed_max · 50 ms on every joint: 5 % short
    of it is accepted, 5 % past it refused."""
    wd = _watchdog(gen3)
    vmax = gen3.velocity_limit
    q, t = HOME.copy(), 3.0
    direction = np.where(np.isfinite(gen3.position_lower), 0.0, 1.0)  # continuous joints: room to run
    for factor in (1.0, 10.0):
        for k in range(500):
            step = 1e-4 if k % 2 else 1.9e-3  # jittery: pairs stamped 0.1 ms apart, 1 ms on average
            q = q + direction * factor * vmax * 1e-3  # as if 1 ms had passed each time
            t += step
            assert _feed(wd, q, t) == (Action.COMPUTE, None), (factor, k)
    speed_max = 10.0 * vmax
    for fraction, expected in ((0.95, Action.COMPUTE), (1.05, Action.FALLBACK)):
        wd = _watchdog(gen3)
        _feed(wd, HOME, 1.0)
        action, message = _feed(wd, HOME + fraction * speed_max * 0.05, 1.05)
        assert action is expected, message


def test_a_far_pose_after_a_gap_is_accepted_when_the_gap_allows_it(gen3: RobotModel) -> None:
    """The bound grows with the time since the last good state: the zero pose, π from home on
    joint_3 (0.23 s at 10 × 1.4 rad/s), is refused 0.1 s after it, accepted after 1 s; so is the
    first state of all, and the first after a fallback and a stop."""
    wd = _watchdog(gen3)
    assert _feed(wd, ZERO, 1.0) == (Action.COMPUTE, None)  # nothing to compare with yet
    assert _feed(wd, HOME, 1.1)[0] is Action.FALLBACK
    assert _feed(wd, HOME, 2.0) == (Action.COMPUTE, None)
    # A stream that stopped, then a silence the node noted: FALLBACK, STOPPED, then a new pose.
    wd.silence(2.3, 0.3)
    wd.silence(2.6, 0.6)
    assert wd.state is WatchdogState.STOPPED
    assert _feed(wd, ZERO, 3.0) == (Action.COMPUTE, None)
    assert wd.state is WatchdogState.OK


def test_a_restarted_simulator_starts_over_at_its_new_pose(gen3: RobotModel) -> None:
    """Sim time and the stamps go back to 0 with the arm at another pose: a new run, accepted
    (and counted as a clock reset); jumps in the new run are measured from its first state.
    A reordered message (the clock went on) is dropped as superseded, whatever its pose."""
    wd = _watchdog(gen3)
    for k in range(10):
        _feed(wd, HOME, 100.0 + 1e-3 * k)
    refusal = wd.check(ZERO, np.zeros(7), 100.005, 100.0095)
    assert refusal is not None
    reason, _ = refusal
    assert reason is RejectReason.SUPERSEDED
    assert _feed(wd, ZERO, 0.001, 0.0015) == (Action.COMPUTE, None)
    assert wd.clock_resets == 1 and np.array_equal(wd.last_good.q, ZERO)
    assert _feed(wd, ZERO, 0.002) == (Action.COMPUTE, None)
    action, message = _feed(wd, HOME, 0.003)
    assert action is Action.FALLBACK and message is not None and "jumped" in message


def test_a_jump_stamped_ahead_of_the_clock_counts_its_stamp_as_at_most_max_age_ahead(
    gen3: RobotModel,
) -> None:
    """A state stamped 0.5 s ahead (within max_future) does not get 0.5 s worth of reach."""
    wd = _watchdog(gen3)
    _feed(wd, HOME, 1.0)
    action, message = _feed(wd, ZERO, 1.5, now=1.001)
    assert action is Action.FALLBACK and message is not None and "jumped" in message, message


# ------------------------------------------------------------------ two sources


class Stream:
    """A watchdog and a resume tracker driven as the controller node drives them, fed the merged
    states of several publishers in order of arrival; what became of each state is recorded."""

    def __init__(self, robot: RobotModel, **config: float) -> None:
        self.wd = _watchdog(robot, **config)
        self.tracker = ResumeTracker(robot.n, self.wd.config, robot.difference)
        self.log: list[tuple[float, str, Action, WatchdogState]] = []  # (arrival, source, action, state)
        self.decisions: list[tuple[float, ResumeKind]] = []
        self.brake_poses: list[np.ndarray] = []  # last_good.q of each safe command

    def feed(self, events: list[tuple[float, str, np.ndarray]]) -> None:
        for stamp, source, q in sorted(events, key=lambda e: e[0]):
            now = stamp + LATENCY
            previous = self.wd.state
            action, _ = _feed(self.wd, q, stamp, now)
            if action is Action.COMPUTE:
                self.decisions.append((stamp, self.tracker.decide_resume(previous, self.wd, stamp).kind))
                self.tracker.torque_computed()
            elif action is Action.FALLBACK:
                self.tracker.safe_command(stamp)
                self.brake_poses.append(self.wd.last_good.q.copy())
            self.log.append((now, source, action, self.wd.state))

    def count(self, source: str, action: Action, after: float = -math.inf, before: float = math.inf) -> int:
        return sum(1 for t, s, a, _ in self.log if s == source and a is action and after < t < before)

    def stopped_at(self) -> float:
        return next(t for t, _, _, state in self.log if state is WatchdogState.STOPPED)


def _events(
    source: str, q: np.ndarray, start: float, stop: float, period: float
) -> list[tuple[float, str, np.ndarray]]:
    """States of one publisher every ``period`` s over [start, stop); a publisher's first state
    comes first of all those stamped at the same time (the sort keeps the order given)."""
    return [(start + k * period, source, q) for k in range(math.ceil((stop - start) / period - 1e-6))]


@pytest.mark.parametrize("fallback_duration", [0.5, 0.1])
@pytest.mark.parametrize("first", ["interloper", "driver"])
def test_two_publishers_stop_the_watchdog_whichever_came_first(
    gen3: RobotModel, first: str, fallback_duration: float
) -> None:
    """A joint_state_publisher at the zero pose at 10 Hz next to the driver at 1 kHz, for 3 s.
    Without the stop on two sources: with the publisher's state first, 30 torques computed on the
    zero pose and 3000 safe commands braking from it, never stopped; with the driver's first, 30
    refusals each answered by a safe command. With it: stopped within 0.5 s (3 ms, 0.35 s),
    nothing computed nor braked after that, each state refused as INCONSISTENT with a message
    that says why."""
    run = Stream(gen3, fallback_duration=fallback_duration)
    driver = _events("driver", HOME, 10.0, 13.0, 1e-3)
    interloper = _events("jsp", ZERO, 10.0 if first == "interloper" else 10.05, 13.0, 0.1)
    run.feed(interloper + driver if first == "interloper" else driver + interloper)
    stop = run.stopped_at()
    assert stop - 10.0 < (0.005 if first == "interloper" else 0.36), stop
    assert (
        run.count("driver", Action.COMPUTE, after=stop) == run.count("jsp", Action.COMPUTE, after=stop) == 0
    )
    assert (
        run.count("driver", Action.FALLBACK, after=stop) == run.count("jsp", Action.FALLBACK, after=stop) == 0
    )
    assert all(state is WatchdogState.STOPPED for t, _, _, state in run.log if t >= stop)
    wd = run.wd
    assert wd.conflict and wd.conflicts == 1 and wd.state is WatchdogState.STOPPED
    assert wd.last_reason is RejectReason.INCONSISTENT
    assert wd.rejected[RejectReason.INCONSISTENT] == sum(1 for t, *_ in run.log if t >= stop)
    message = wd.last_message
    assert message.startswith("joint states jump between poses (4 jumps refused within"), message
    # joint_3, π the short way round: from the zero pose to the driver's, or back.
    sign = "+" if first == "interloper" else "-"
    assert f"largest step {sign}3.142 rad on joint joint_3, of joint_3, joint_4, joint_6, joint_7)" in message
    assert "more than one node may publish this arm's joints on the joint-state topic" in message, message
    assert "control resumes once no jump was seen for 1 s" in message, message
    if first == "interloper":
        # One torque on the zero pose (nothing told the streams apart yet) and three safe commands
        # braking from it, 3 ms in all (without the stop: 30 and 3000 over 3 s).
        assert run.count("jsp", Action.COMPUTE) == 1 and run.count("driver", Action.COMPUTE) == 0
        assert len(run.brake_poses) == CONFLICT_JUMPS - 1
    else:
        # The driver's pose throughout, up to its state at 10.35 s: each of the publisher's first
        # three states answered by one safe command braking from it.
        assert run.count("jsp", Action.COMPUTE) == 0 and run.count("driver", Action.COMPUTE) == 351
        assert len(run.brake_poses) == CONFLICT_JUMPS - 1
        assert all(np.array_equal(q, HOME) for q in run.brake_poses)


@pytest.mark.parametrize("first", ["interloper", "driver"])
def test_when_the_second_publisher_stops_the_driver_is_computed_on_again_and_the_target_dropped(
    gen3: RobotModel, first: str
) -> None:
    """The joint_state_publisher publishes for 2 s, then stops: its last state at 11.95 s, the
    driver's right after it the last jump seen. The stop goes on for CONFLICT_WINDOW more, then
    the driver's states are computed on (auto_recover), the first decision after the stop DROP
    (states were refused: the target no longer stands where the arm is trusted to be)."""
    run = Stream(gen3)
    driver = _events("driver", HOME, 10.0, 14.0, 1e-3)
    interloper = _events("jsp", ZERO, 10.0 if first == "interloper" else 10.05, 12.0, 0.1)
    run.feed(interloper + driver if first == "interloper" else driver + interloper)
    last_jump = interloper[-1][0] + 1e-3 + LATENCY  # the driver's state after the publisher's last
    resumed = next(t for t, s, a, _ in run.log if a is Action.COMPUTE and t > 11.0)
    assert last_jump + CONFLICT_WINDOW - 1e-9 < resumed < last_jump + CONFLICT_WINDOW + 1.5e-3, resumed
    assert run.count("driver", Action.NONE, after=resumed) == 0  # each one computed on after it
    assert run.count("driver", Action.FALLBACK, after=resumed) == 0
    assert not run.wd.conflict and run.wd.state is WatchdogState.OK and run.wd.conflicts == 1
    after_stop = [kind for stamp, kind in run.decisions if stamp + LATENCY >= resumed]
    assert after_stop[0] is ResumeKind.DROP and set(after_stop[1:]) == {ResumeKind.KEEP}
    assert np.array_equal(run.wd.last_good.q, HOME)


def test_without_auto_recover_a_stop_on_two_sources_stays(gen3: RobotModel) -> None:
    run = Stream(gen3, auto_recover=False)
    run.feed(_events("driver", HOME, 10.0, 13.0, 1e-3) + _events("jsp", ZERO, 10.05, 11.0, 0.1))
    assert run.wd.state is WatchdogState.STOPPED and not run.wd.conflict  # the stop itself is over
    assert run.count("driver", Action.COMPUTE, after=run.stopped_at()) == 0


def test_the_stop_goes_on_while_the_states_jump_however_long_since_the_last_good_one(
    gen3: RobotModel,
) -> None:
    """After the stop, a jump is looked for between consecutive states: from the last good state
    the bound grows past any pose after 0.23 s. A second publisher at 2 Hz (slower than any
    stop would start on) keeps the stop going once it started; so does one stamping on another
    clock (its states refused as stale before the stop): the time between arrivals counts."""
    run = Stream(gen3)
    events = _events("driver", HOME, 10.0, 15.0, 1e-3) + _events("jsp", ZERO, 10.0, 10.4, 0.1)
    events += _events("jsp", ZERO, 10.4, 13.0, 0.5)
    run.feed(events)
    stop, last = run.stopped_at(), events[-1][0] + 1e-3 + LATENCY  # the driver after the last jump
    assert stop < 10.31 and last == pytest.approx(12.901 + LATENCY)
    assert run.count("driver", Action.COMPUTE, after=stop, before=last + CONFLICT_WINDOW - 1e-6) == 0
    assert run.count("driver", Action.NONE, after=last + CONFLICT_WINDOW + 1e-3) == 0
    # Another clock: stamps 1000 s behind, arrivals 0.1 s apart as before.
    wd = _watchdog(gen3)
    for t in np.arange(10.0, 10.004, 1e-3):
        _feed(wd, HOME, t)
    for k in range(CONFLICT_JUMPS):  # a burst of bad readings stops it too
        _feed(wd, ZERO, 10.004 + 1e-3 * k)
    assert wd.conflict and wd.state is WatchdogState.STOPPED
    for k in range(1, 30):
        t = 10.1 + 1e-3 * k
        _feed(wd, HOME, t)
        if k % 10 == 0:
            assert _feed(wd, ZERO, t - 1000.0, now=t + LATENCY)[0] is Action.NONE
    assert wd.conflict and wd.rejected[RejectReason.STALE] == 0  # refused as inconsistent while stopped
    last_jump = 10.121  # the driver's state after the other clock's last
    assert _feed(wd, HOME, last_jump + CONFLICT_WINDOW - 0.002)[0] is Action.NONE
    assert _feed(wd, HOME, last_jump + CONFLICT_WINDOW + 0.002) == (Action.COMPUTE, None)


def test_a_restarted_clock_during_the_stop_does_not_hold_it_for_the_old_run(gen3: RobotModel) -> None:
    """A simulator restarted while stopped: its clock back at 0, the stop lasts CONFLICT_WINDOW on
    the new clock (not until the new clock passes the old run's last jump)."""
    wd = _watchdog(gen3)
    _feed(wd, HOME, 100.0)
    for k in range(CONFLICT_JUMPS):
        _feed(wd, ZERO, 100.001 + 1e-3 * k)
    assert wd.conflict
    for t in np.arange(0.0, 1.0, 1e-3):
        assert _feed(wd, ZERO, t)[0] is Action.NONE
    assert _feed(wd, ZERO, 1.0 + 2e-3) == (Action.COMPUTE, None)
    assert wd.clock_resets == 1


def test_one_glitch_or_one_every_two_seconds_does_not_stop_it(gen3: RobotModel) -> None:
    """One bad reading, the stream back after it: refused (a jump), one safe command, the next
    state computed on, as before; a glitch every 2 s for 10 s, or a burst of CONFLICT_JUMPS − 1,
    no stop."""
    run = Stream(gen3)
    driver = _events("driver", HOME, 10.0, 20.0, 1e-3)
    glitches = [(10.5 + 2.0 * k + 3e-4, "glitch", ZERO) for k in range(5)]
    glitches += [(19.6 + 1e-3 * k + 3e-4, "glitch", ZERO) for k in range(CONFLICT_JUMPS - 1)]
    run.feed(driver + glitches)
    assert run.wd.conflicts == 0 and run.wd.state is WatchdogState.OK
    assert run.count("glitch", Action.FALLBACK) == len(glitches) == len(run.brake_poses)
    assert run.count("driver", Action.COMPUTE) == len(driver)
    assert run.wd.rejected[RejectReason.OUT_OF_RANGE] == run.wd.rejected_total == len(glitches)
    assert all(np.array_equal(q, HOME) for q in run.brake_poses)


@pytest.mark.parametrize(("rate", "stops"), [(2.0, False), (4.0, True)])
def test_a_second_publisher_after_the_driver_stops_it_from_above_three_hertz(
    gen3: RobotModel, rate: float, stops: bool
) -> None:
    """CONFLICT_JUMPS refusals within CONFLICT_WINDOW: a second publisher whose first state came
    after the driver's stops the watchdog at 4 Hz (in 0.75 s); at 2 Hz it never does, each of its
    states refused and answered by one safe command braking from the driver's pose."""
    run = Stream(gen3)
    run.feed(_events("driver", HOME, 10.0, 14.0, 1e-3) + _events("jsp", ZERO, 10.0005, 14.0, 1.0 / rate))
    assert (run.wd.conflicts == 1) is stops
    if stops:
        assert run.stopped_at() - 10.0 < 0.76
    else:
        assert run.count("jsp", Action.FALLBACK) == 8 and run.count("driver", Action.COMPUTE) == 4000


# ------------------------------------------------------------------ no velocity limits


def test_without_velocity_limits_a_long_gap_warns_nothing() -> None:
    """speed_max is then the largest float: uncapped, speed_max · Δt overflows (a RuntimeWarning)
    once stamps are more than 1 s apart. The reach is capped where it covers every plausible pose."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wd = Watchdog(7)
        q, v = np.zeros(7), np.zeros(7)
        wd.accept(q, v, 0.0, 0.0)
        for stamp in (2.0, 1e3, 1e6):
            assert wd.check(q + 1.0, v, stamp, stamp) is None
            wd.accept(q + 1.0, v, stamp, stamp)
            q = q + 1.0
        # One joint with a limit, one without: the limited one still refused, the message finite.
        limits = (np.array([-np.inf, -50.0]), np.array([np.inf, 50.0]))
        wd = Watchdog(2, None, limits, np.array([np.inf, 1.0]), ("free", "slow"))
        wd.accept(np.zeros(2), np.zeros(2), 0.0, 0.0)
        refused = wd.check(np.array([5e5, 30.0]), np.zeros(2), 2.0, 2.0)
        assert refused is not None and refused[1].startswith("joint slow jumped +30 rad"), refused
        assert "farther than 20 rad" in refused[1] and "nan" not in refused[1] and "inf" not in refused[1]
        assert wd.check(np.array([-5e5, 19.0]), np.zeros(2), 2.0, 2.0) is None
        assert np.isfinite(wd._reach_over(1e300)).all()


def test_the_stop_on_two_sources_is_timed_on_the_steady_clock_when_given(gen3: RobotModel) -> None:
    """Under sim time in lockstep, the node publishing nothing while stopped, the simulator moves
    one period per lockstep_timeout: timed on that clock the 1 s stop would last ~1000 timeouts,
    and with the clock standing still (no /clock) for ever. Timed on a steady clock it ends 1 s
    of it after the last jump, whatever the caller's ``now`` did."""
    wall = [0.0]
    limits = (gen3.position_lower, gen3.position_upper)
    wd = Watchdog(
        gen3.n,
        WatchdogConfig.create(),
        limits,
        gen3.velocity_limit,
        gen3.joint_names,
        steady_clock=lambda: wall[0],
    )
    frozen = 10.0  # the node's (sim) clock stands still while nothing is answered
    stamp = 10.0
    for k in range(8):  # the driver and a zero-pose publisher in turn: 4 jumps, stopped
        wall[0] += 0.01
        stamp += 1e-3
        _feed(wd, HOME if k % 2 == 0 else ZERO, stamp, frozen)
    assert wd.conflict and wd.state is WatchdogState.STOPPED
    for _ in range(99):  # the driver alone, one state per 10 ms of wall time: 0.99 s
        wall[0] += 0.01
        stamp += 1e-3
        assert _feed(wd, HOME, stamp, frozen)[0] is Action.NONE
    for _ in range(2):  # past 1 s without a jump: judged as after any stop, and computed on
        wall[0] += 0.01
        stamp += 1e-3
        action, _ = _feed(wd, HOME, stamp, frozen)
    assert action is Action.COMPUTE and not wd.conflict and wd.state is WatchdogState.OK
