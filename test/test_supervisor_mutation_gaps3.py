"""Behaviours of :class:`~torque_ctrl_ros.core.supervisor.Supervisor` that a third mutation review found
unpinned.

What the supervisor does with stamps and clocks that are not finite, go back or run ahead of each
other: how far the safe brake's prediction runs on a clock that stands still (``use_sim_time``
without ``/clock``), where a target's pause starts after a state stamped ahead of the clock, what
counts as a clock reset; and the refusals and log notices around them. Each test names the
behaviour it pins and the source change (mutant) it was written to catch. Pure core: no ROS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_supervisor import DT, _clip, _run, _supervisor
from test_supervisor_safety_mutation_gaps import _brake_from_q0, _safe_tau

from torque_ctrl_ros.core import RobotModel


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
    1 ms a period. Before the fix a ``+inf`` stamp froze the prediction for the rest of the window
    (no finite stamp is newer), ``-inf`` ran it ``max_age`` ahead at once, and a NaN between two
    finite stamps lost the step between them (every other one NaN: frozen), so one command was
    repeated, which spins the wrist up. (Mutant: the HEAD code of ``Supervisor._safe_command``,
    which keeps a stamp that is not finite as the last one.)"""
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
