"""Behaviours of hqpid's self-motion damping and of the bounds-past warning that a mutation review
found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: the
term level 0's cost gets for the self-motion it leaves the levels below (``SELF_MOTION_DAMPING``,
``SELF_MOTION_WEIGHT_SHARE``, ``_fill_top``), the bounds :meth:`Controller.bounds_past` names, and
the controller node's warning of them after its first computed command.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import MAX_AGE_1S, _ErrorSpy, _now, _state_msg, nodes  # noqa: F401
from test_qpid import HOME, TOOL, _params

import torque_ctrl_ros.core.controllers.qpid as qpid_module
from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.controllers.qpid import HQPID, QPID
from torque_ctrl_ros.core.types import JointState

#: Per joint, so that its largest entry (3e-4, joint 4) is not its smallest.
ACCELERATION_WEIGHT = [1e-4, 2e-4, 1e-4, 3e-4, 1e-4, 2e-4, 1e-4]


def _hqpid_with_weight_share(robot: RobotModel, levels: int, weight_share: float) -> HQPID:
    """hqpid with the tool's position at level 0, its orientation at level 1 (with three levels)
    and a posture at the last level; ``SELF_MOTION_WEIGHT_SHARE`` as given while it is built."""
    params = _params(
        **{"tool.level": 0, "posture.level": levels - 1, "acceleration_weight": ACCELERATION_WEIGHT},
        **{"singularity.enabled": False, "self_collision.enabled": False},
    )
    if levels == 3:
        params["tasks"] = ["tool", "ori", "posture"]
        params.update({"ori.type": "orientation", "ori.frame": TOOL, "ori.level": 1})
    share = qpid_module.SELF_MOTION_WEIGHT_SHARE
    qpid_module.SELF_MOTION_WEIGHT_SHARE = weight_share
    try:
        controller = HQPID.from_params(robot, params)
    finally:
        qpid_module.SELF_MOTION_WEIGHT_SHARE = share
    assert isinstance(controller, HQPID)
    return controller


@pytest.mark.parametrize("levels", [2, 3])
def test_level_0_s_cost_gets_the_damping_of_the_self_motion_over_level_1_s_null_space(
    robot: RobotModel, levels: int
) -> None:
    """Level 0's cost with levels below gets ``w·‖Zᵀ·(q̈ + k·q̇)‖²``, ``Z`` level 1's null space
    (that of level 0's weighted rows, whatever lies below level 1): ``2·w·Z·Zᵀ`` in ``H`` and
    ``2·w·k·Z·Zᵀ·q̇`` in ``g``, with ``k`` 30 1/s and ``w`` 100 times the LARGEST
    ``acceleration_weight`` (``velocity_weight`` 0 here; the values documented and measured).
    Compared with the same controller built with the weight share at 0, at one state, against
    ``Z·Zᵀ = I − J⁺·J``.
    (Mutants, those marked * passing test_qpid.py's MuJoCo runs: ``SELF_MOTION_DAMPING`` 0* or
    3*; ``_damp_g`` without it* or without ``_damp_h``; ``g`` scaled by ``_damp_h``*; the weight
    share 1* (10 is caught there); ``_damp_h`` without its 2*; ``np.min`` of
    ``acceleration_weight``*; the ``H`` or ``g``* term dropped or of the other sign; ``g`` from
    ``q̇`` unprojected or from ``q̈``; ``H`` over the identity or the complement of ``Z·Zᵀ``; the
    damping only from three levels; the last level's ``Z``.)"""
    damped = _hqpid_with_weight_share(robot, levels, qpid_module.SELF_MOTION_WEIGHT_SHARE)
    plain = _hqpid_with_weight_share(robot, levels, 0.0)
    rng = np.random.default_rng(7)
    state = JointState(HOME + rng.uniform(-0.2, 0.2, 7), rng.uniform(-0.5, 0.5, 7))
    ref = damped.hold_reference(JointState(HOME, np.zeros(7)))
    H, g = [], []
    for c in (damped, plain):
        c.compute(state, ref)
        H.append(c.levels[0].qp.H[:7, :7].copy())
        g.append(c.levels[0].qp.g[:7].copy())
    J = damped.task("tool").J
    assert J.shape == (3, 7)  # level 0 freezes the tool's position rows only
    ZZt = np.eye(7) - np.linalg.pinv(J) @ J
    w = 100.0 * 3e-4
    np.testing.assert_allclose(H[0] - H[1], 2.0 * w * ZZt, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(g[0] - g[1], 2.0 * w * 30.0 * ZZt @ state.v, rtol=0.0, atol=1e-11)
    assert np.abs(ZZt @ state.v).max() > 0.1  # the state has self-motion to damp


def test_a_joint_below_its_lower_position_limit_is_named(robot: RobotModel) -> None:
    """``bounds_past`` names a joint past its LOWER position limit as well as its upper one (the
    shipped test holds one past its upper limit only), and none of the joints within them.
    (Mutant: ``if not x <= hi``, the lower bound dropped.)"""
    controller = QPID.from_params(robot, _params())
    q = HOME.copy()
    q[3] = robot.position_lower[3] - 0.05
    notes = controller.bounds_past(JointState(q, np.zeros(7)))
    assert len(notes) == 1 and notes[0].startswith("joint_position_limit: ['joint_4'] past"), notes


@pytest.mark.parametrize("name", ["gravity_comp", "computed_torque", "achd_rnea"])
def test_a_controller_that_keeps_no_bounds_names_none(robot: RobotModel, name: str) -> None:
    """The controllers without barriers name no bound (``Controller.bounds_past``'s default), even
    at a state past a joint's position limit: the node would otherwise warn at every start of
    them of a bound nothing keeps. (Mutant: the default returns a note.)"""
    q = HOME.copy()
    q[1] = robot.position_upper[1] + 0.05
    assert create_controller(name, robot).bounds_past(JointState(q, np.zeros(7))) == []


@pytest.mark.ros
@requires_rclpy
def test_each_bound_the_arm_starts_past_is_warned_of(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """qpid with ``d_safe`` 5 cm (three rows) and ``w_min`` 0.1 m³, the first state's wrist bent
    1.1 rad up: the capsules are 34.5 mm apart and the manipulability below 0.1, and each of the two
    bounds gets its own warning after the first command, once. (Mutant: only the first note
    logged.)"""
    spy = _ErrorSpy(monkeypatch, "the arm starts past a bound qpid keeps")
    node = nodes.make(
        "controller",
        controller="qpid",
        use_sim_time=False,
        **{"qpid.singularity.w_min": 0.1, "qpid.self_collision.d_safe": 0.05, "qpid.self_collision.pairs": 3},
        **MAX_AGE_1S,
    )
    bent = HOME.copy()
    bent[5] += 1.1
    for _ in range(2):
        node._on_state_message(_state_msg(bent, _now(node)))
    assert node.counts.commands_published == 2
    assert len(spy.calls) == 2 and spy.calls == node.bounds_warnings, spy.calls
    assert "self_collision: the closest capsules are 34.5 mm apart" in spy.calls[0]
    assert "below w_min 0.1 m³" in spy.calls[1]


@pytest.mark.ros
@requires_rclpy
def test_a_bounds_check_that_fails_is_logged_once_and_control_goes_on(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bounds_past`` raising: it is called once the first command is out (not before, holding that
    command up), the error is logged, the check is not tried again and every state still gets its
    command. (Mutants: the check made before the command is published; ``bounds_warnings`` set
    only once the check returned, so it runs again at every state; the ``except`` dropped, the
    error escaping the state's handler.)"""
    spy = _ErrorSpy(monkeypatch, "no bounds today")
    node = nodes.make("controller", controller="qpid", use_sim_time=False, **MAX_AGE_1S)
    tried: list[int] = []  # the commands out at each call

    def fails(state: JointState) -> list[str]:
        tried.append(node.counts.commands_published)
        raise RuntimeError("no bounds today")

    monkeypatch.setattr(node.controller, "bounds_past", fails)
    for _ in range(3):
        node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.commands_published == 3 and tried == [1], tried
    assert node.bounds_warnings == []
    assert len(spy.calls) == 1 and "bounds_past" in spy.calls[0], spy.calls  # the traceback
    assert spy.calls[0].startswith("checking the bounds the arm starts past failed (control goes on)")


def test_the_self_motion_damping_does_not_vanish_with_acceleration_weight(robot: RobotModel) -> None:
    """The damping's ``w`` is 100 times level 0's largest regularisation, ``acceleration_weight +
    Δt²·velocity_weight``: with ``acceleration_weight`` 0 and ``velocity_weight`` 100 (accepted)
    it is 100·1e-4 = 1e-2, not 0. (It had been taken from ``acceleration_weight`` alone: a
    mutation review found the damping gone in that configuration.)"""
    params = _params(
        **{"tool.level": 0, "posture.level": 1, "acceleration_weight": 0.0, "velocity_weight": 100.0},
        **{"singularity.enabled": False, "self_collision.enabled": False},
    )
    share = qpid_module.SELF_MOTION_WEIGHT_SHARE
    damped = HQPID.from_params(robot, params)
    qpid_module.SELF_MOTION_WEIGHT_SHARE = 0.0
    try:
        plain = HQPID.from_params(robot, params)
    finally:
        qpid_module.SELF_MOTION_WEIGHT_SHARE = share
    state = JointState(HOME, np.full(7, 0.2))
    ref = damped.hold_reference(JointState(HOME, np.zeros(7)))
    H = []
    for c in (damped, plain):
        c.compute(state, ref)
        H.append(c.levels[0].qp.H[:7, :7].copy())
    J = damped.task("tool").J
    np.testing.assert_allclose(H[0] - H[1], 2.0 * 1e-2 * (np.eye(7) - np.linalg.pinv(J) @ J), atol=1e-12)
