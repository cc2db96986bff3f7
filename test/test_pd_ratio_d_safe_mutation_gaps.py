"""Behaviours of the PD damping-ratio check and the self-collision ``d_safe`` bounds that a
mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch:
:func:`~torque_ctrl_ros.core.robot.pd_damping_ratio` and :func:`check_pd_gains` (which gains reach
the arm), and the row-count bounds on ``self_collision.d_safe`` in
:class:`~torque_ctrl_ros.core.qp.constraints.SelfCollisionBarrier`. Of 59 mutants the existing
tests killed 43; these tests kill 9 of the 16 left, the other 7 change no refusal
(the ratio's scale, a boundary of measure zero, modes that cannot fall below the bound). Pure
core: no ROS.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from test_damping_stability import H
from test_qpid import _params

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.joint_space import ComputedTorqueConfig
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.robot import check_pd_gains, pd_damping_ratio, pd_loop_holds


def test_without_delay_a_velocity_that_flips_sign_each_period_reads_lightly_damped() -> None:
    """With the command not late (``delay`` 0), kp 100 and kd 1800 give the velocity the mode
    ``z = 1 − h·kd ≈ −0.8``: it flips sign every period, a damping ratio of
    ``−ln 0.8 / √(ln² 0.8 + π²)`` = 0.071, and the loop is refused although stable. A loop whose
    every mode is fast (kp 1e6, kd 1000: both eigenvalues 0, deadbeat) reads 1 and passes.
    (Mutants: ``_pd_eigenvalues`` without ``.astype(np.complex128)``: every eigenvalue real, the
    real ``np.log(−0.8)`` is nan and the mode is lost; ``_FAST_MODE`` 0.9: the mode (``|z|`` 0.8) is
    left out and the loop reads 1; ``_FAST_MODE`` 0: the deadbeat loop's ``log(0)`` reads nan;
    ``min(ratios, default=0.0)``: a loop with no mode left reads 0 and is refused.)"""
    assert pd_loop_holds(100.0, 1800.0, delay=0)
    z = 1.0 - H * 1800.0
    expected = -math.log(-z) / math.hypot(math.log(-z), math.pi)
    assert pd_damping_ratio(100.0, 1800.0, delay=0) == pytest.approx(expected, rel=2e-3)
    with pytest.raises(ConfigError, match=r"kd 1800 1/s on x leave the error ringing .* ratio of 0\.0708"):
        check_pd_gains("kp/kd", np.array([100.0]), np.array([1800.0]), ["x"], delay=0)
    assert pd_damping_ratio(1e6, 1000.0, delay=0) == 1.0
    check_pd_gains("kp/kd", np.array([1e6]), np.array([1000.0]), ["x"], delay=0)


def test_the_damping_ratio_is_read_one_period_late_by_default() -> None:
    """``pd_damping_ratio``'s ``delay`` defaults to one period, as ``pd_spectral_radius``'s and the
    checks' do: critical damping with kp 1e5 reads 0.16 (its docstring), not the 1.0 of a loop
    without delay. (Mutant: ``delay: int = 0`` in its signature.)"""
    kp, kd = 1e5, 2.0 * math.sqrt(1e5)
    assert pd_damping_ratio(kp, kd) == pd_damping_ratio(kp, kd, delay=1)
    assert pd_damping_ratio(kp, kd) == pytest.approx(0.161, abs=0.002)
    assert pd_damping_ratio(kp, kd, delay=0) > 0.9


@pytest.mark.parametrize(
    ("delay", "kp", "kd"), [(1, 3e5, None), (2, 1e5, None), (3, 5e4, None), (4, 3e4, None), (4, 2.3e4, 180.0)]
)
def test_the_critical_kp_a_refusal_names_passes_and_1_percent_more_does_not(
    delay: int, kp: float, kd: float | None
) -> None:
    """A kp too stiff for the delay (unstable at critical damping, or at delay 4 kp 23 000 with
    kd 180: stable, ratio 0.06, and no kd passes) is refused with the largest kp that passes at
    critical damping for that delay; that kp passes and 1 % more does not. (Mutants:
    ``_CRITICAL_KP_MAX`` back to the stability-only ~1.6e5 / 6.2e4 / 3.2e4 / 2.0e4, which ring;
    ``_CRITICAL_KP_MAX.get(1, …)`` in the "no kd passes" message, naming 1.18e5 at 5 ms.)"""
    with pytest.raises(ConfigError) as refused:
        ComputedTorqueConfig.create(7, kp, kd, delay=delay)
    if kd is not None:
        assert "no kd passes with this kp" in str(refused.value)
    found = re.search(r"kp up to ([0-9.e+]+) passes", str(refused.value))
    assert found is not None, str(refused.value)
    largest = float(found.group(1))
    ComputedTorqueConfig.create(7, largest, delay=delay)
    with pytest.raises(ConfigError, match="ringing|unstable"):
        ComputedTorqueConfig.create(7, 1.01 * largest, delay=delay)


def test_a_d_safe_refusal_names_the_fewest_rows_that_hold_it_at_the_bounds(robot: RobotModel) -> None:
    """``d_safe`` exactly at a row count's bound needs no more rows than that: 0.03 m with one row
    asks for two (they hold 0.03), 0.08 m with two asks for three (``MAX_D_SAFE`` itself, not
    "lower it"); 0.02 m with one row is accepted. (Mutants: ``>= self.d_safe`` becomes ``>`` in
    the ``need`` search, asking for three; ``self.d_safe <= MAX_D_SAFE`` becomes ``<``.)"""
    with pytest.raises(ConfigError, match=r"0\.03 m .* 1 row\(s\) .* at most 0\.02 m.*pairs to 2, or lower"):
        QPID.from_params(robot, _params(**{"self_collision.d_safe": 0.03, "self_collision.pairs": 1}))
    with pytest.raises(ConfigError, match=r"0\.08 m .* 2 row\(s\) .* at most 0\.03 m.*pairs to 3, or lower"):
        QPID.from_params(robot, _params(**{"self_collision.d_safe": 0.08, "self_collision.pairs": 2}))
    QPID.from_params(robot, _params(**{"self_collision.d_safe": 0.02, "self_collision.pairs": 1}))
