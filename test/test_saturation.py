"""The torque scale toward the bias at a joint's limit (core/saturation.py, no ROS).

The scaling itself (``τ' = c + s·(τ − c)``) is tested with the controllers' fast paths
(test_step_fast_paths.py); here, which joints set ``s`` as their bias reaches a limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from torque_ctrl_ros.core.saturation import ROUNDING, TorqueLimiter

LIMIT = 10.0


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["upper", "lower"])
def test_the_command_is_continuous_as_the_bias_reaches_a_limit(sign: float) -> None:
    """Joint a's bias at its limit, its share (0.5) pushing past it: a bounds ``s`` to
    room/0.5, b (share 20) to 0.5. Within ROUNDING of the limit a's bound rises to no bound, so
    ``s`` goes from a's to b's continuously: b's torque had switched between 10 and 0 across
    1e-12 N·m of a's bias (a at the limit set ``s`` to 0, a past it set none)."""
    limiter = TorqueLimiter(("a", "b"), np.array([LIMIT, LIMIT]))
    tau = sign * np.array([LIMIT + 0.5, 20.0])

    def command(c_a: float) -> tuple[np.ndarray, float]:
        out = limiter.apply(tau, bias=sign * np.array([c_a, 0.0]))
        return out.tau, out.torque_scale

    for c_a in (LIMIT + 1e-12, LIMIT, LIMIT - 1e-12):
        tau_out, scale = command(c_a)
        assert scale == pytest.approx(0.5)
        np.testing.assert_allclose(tau_out, sign * np.array([LIMIT, LIMIT]), rtol=0, atol=1e-9)
    # Two ROUNDINGs of room: a's exact bound, its command landing on its limit.
    tau_out, scale = command(LIMIT - 2 * ROUNDING)
    assert scale == pytest.approx(2 * ROUNDING / (0.5 + 2 * ROUNDING), rel=1e-9)
    assert tau_out[0] == pytest.approx(sign * LIMIT, abs=1e-12)
    # From 3 ROUNDINGs inside to one past, in steps of ROUNDING/100: s moves at most 1/ROUNDING
    # per N·m of bias, so b's torque by at most 20/100 a step.
    steps = [command(c_a)[0][1] for c_a in LIMIT + ROUNDING * np.linspace(-3.0, 1.0, 401)]
    assert np.max(np.abs(np.diff(steps))) <= 20.0 / 100 * (1 + 1e-6)


def test_a_joint_past_one_limit_pushed_back_past_the_other_sets_the_scale() -> None:
    """Joint a's bias (1.5) is past its upper limit 1, but its share (−5) pushes it down through
    its range and past its lower limit: it has 2.5 N·m of room that way and bounds ``s`` to 0.5,
    landing on −1 with b's share halved too. Left out because its bias was past a limit, a had
    been clipped at −1 with b's share whole (s = 1): the direction lost."""
    limiter = TorqueLimiter(("a", "b"), np.array([1.0, 10.0]))
    out = limiter.apply(np.array([-3.5, 5.0]), bias=np.array([1.5, 0.0]))
    assert out.torque_scale == pytest.approx(0.5)
    np.testing.assert_allclose(out.tau, [-1.0, 2.5], rtol=0, atol=1e-12)
    assert out.saturated_joints == ("a",)


def test_no_joint_with_room_leaves_the_command_unscaled() -> None:
    """Every joint that moves has its bias at (a) or past (b) the limit its share pushes toward,
    and c has no share and no room (0/0): ``s`` stays 1 and each joint is clipped. a at its limit
    had set ``s`` to 0, b's command scaled to its bias."""
    limiter = TorqueLimiter(("a", "b", "c"), np.array([1.0, 2.0, 3.0]))
    out = limiter.apply(np.array([3.0, -4.0, -3.0]), bias=np.array([1.0, -2.5, -3.0]))
    assert out.torque_scale == 1.0
    np.testing.assert_array_equal(out.tau, [1.0, -2.0, -3.0])
    assert out.saturated_joints == ("a", "b")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_bias_leaves_the_command_clipped_joint_by_joint(bad: float) -> None:
    """A bias with a non-finite entry is not used: ``c + s·(τ − c)`` would turn the finite command
    into NaN (``inf − inf``), which left the limiter unreported. The command is clipped joint by
    joint instead, finite, with the saturated joint named and ``s`` 1."""
    limiter = TorqueLimiter(("a", "b"), np.array([LIMIT, LIMIT]))
    out = limiter.apply(np.array([2 * LIMIT, 1.0]), bias=np.array([bad, 0.0]))
    np.testing.assert_array_equal(out.tau, [LIMIT, 1.0])
    assert out.saturated_joints == ("a",) and out.torque_scale == 1.0


def test_a_nan_command_comes_out_nan_for_its_caller_to_refuse() -> None:
    """The limiter checks no finiteness (its callers do): a NaN joint stays NaN, not clipped to a
    limit where it would pass for a valid torque, and an infinite one is clipped and reported."""
    limiter = TorqueLimiter(("a", "b"), np.array([LIMIT, LIMIT]))
    out = limiter.apply(np.array([np.nan, np.inf]))
    assert np.isnan(out.tau[0]) and out.tau[1] == LIMIT
    assert out.saturated_joints == ("b",)
