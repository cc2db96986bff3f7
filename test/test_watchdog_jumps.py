"""The watchdog refuses a joint state that jumped from the last good one farther than any motion
could in the time between their stamps (a second publisher on the joint-state topic), and lets
through wraps of continuous joints, fast real motion, long gaps and restarted runs (pure core)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import URDF_PATH

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.safety import Action, RejectReason, Watchdog, WatchdogConfig, WatchdogState

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


def test_a_second_publisher_at_the_zero_pose_is_refused_and_the_driver_kept(gen3: RobotModel) -> None:
    """The driver at 1 kHz moves the arm slowly about home, with jittery stamps; a
    joint_state_publisher sends the zero pose every 100 ms, stamped on its own clock. Each of
    its states is refused naming the joint that jumped; each of the driver's is computed on."""
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
            assert action is Action.FALLBACK and wd.last_reason is RejectReason.OUT_OF_RANGE, message
            # joint_3 is π from the zero pose (the short way round), joint_4 2.3 rad.
            assert message is not None and message.startswith("joint joint_3 jumped"), message
            assert "(and " in message and "second node publishing" in message, message
            assert np.allclose(wd.last_good.q, q)  # the safe command brakes from the driver's pose
    assert wd.rejected[RejectReason.OUT_OF_RANGE] == wd.rejected_total == interlopers == 10
    assert wd.state is WatchdogState.OK


def test_a_jump_says_which_joint_by_how_much_and_in_how_long(gen3: RobotModel) -> None:
    wd = _watchdog(gen3)
    _feed(wd, HOME, 1.0)
    q = HOME.copy()
    q[1] += 0.5  # joint_2, bounded: 0.5 rad in 2 ms, 0.28 rad allowed
    reason, message = wd.check(q, np.zeros(7), 1.002, 1.002 + LATENCY)
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
    A reordered message (the clock went on) stays inconsistent, whatever its pose."""
    wd = _watchdog(gen3)
    for k in range(10):
        _feed(wd, HOME, 100.0 + 1e-3 * k)
    reason, _ = wd.check(ZERO, np.zeros(7), 100.005, 100.0095)
    assert reason is RejectReason.INCONSISTENT
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
