"""Behaviours of the shared checks, the joint-space controllers and the composed process that a
mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/validation.py`` (the checks of parameters and arrays), ``core/controllers/joint_space.py``
(gravity compensation, computed torque) and ``nodes/composed.py`` (the simulator and the
controller on one executor).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import nodes  # noqa: F401
from test_qp_terms import HOME

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.joint_space import DEFAULT_KP, ComputedTorque, GravityCompensation
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.robot import CONTROL_PERIOD
from torque_ctrl_ros.core.types import JointReference, JointState
from torque_ctrl_ros.core.validation import as_rotation, as_seconds


# ------------------------------------------------------------------------------------------------
# core/validation.py
# ------------------------------------------------------------------------------------------------
def test_as_rotation_refuses_columns_skewed_only_in_their_third_row() -> None:
    """Unit columns, ``det > 0``, but the first two columns meet at ``R[2,0]·R[2,1] = 0.1``
    (``‖RᵀR − I‖ = 0.14``): refused as a float64 array, whose check runs on Python floats.
    Mutant: ``g * h`` dropped from ``n01`` in ``_is_proper_rotation``, so that dot product read 0
    and the skewed matrix came back as an orientation target."""
    h = 0.1
    R = np.array([[0.0, 0.0, -1.0], [0.0, np.sqrt(1.0 - h * h), 0.0], [1.0, h, 0.0]])
    assert np.linalg.det(R) > 0.0
    assert np.linalg.norm(R.T @ R - np.eye(3)) == pytest.approx(np.sqrt(2.0) * h)
    with pytest.raises(ConfigError, match="R: not a rotation matrix"):
        as_rotation("R", R)


@pytest.mark.parametrize("shape", [(4, 4), (3,), (3, 3, 1)])
def test_as_rotation_refuses_a_float64_array_of_another_shape_by_name(shape: tuple[int, ...]) -> None:
    """A float64 array that is not 3 × 3 is a :class:`ConfigError` naming the field and saying
    what was expected. Mutant: ``value.shape == (3, 3)`` dropped from the float path's test, so
    the unpacking of its rows raised a bare ``ValueError`` / ``TypeError`` instead."""
    with pytest.raises(ConfigError, match=r"^R: expected a finite 3 x 3 rotation matrix"):
        as_rotation("R", np.ones(shape))


def test_as_seconds_takes_its_lower_bound_itself_and_an_allowed_zero_below_it() -> None:
    """The lower bound is inclusive: ``watchdog.max_age`` of exactly one control period (1 ms) is
    accepted, half of it refused; and an allowed zero stays allowed below ``at_least``.
    Mutants: ``x <= at_least`` for ``x < at_least`` (the bound itself refused); the
    ``not (allow_zero and x == 0.0)`` exemption dropped (a zero refused as too short)."""
    assert as_seconds("watchdog.max_age", CONTROL_PERIOD, 1.0, at_least=CONTROL_PERIOD) == CONTROL_PERIOD
    with pytest.raises(ConfigError, match=r"watchdog.max_age: 0.0005 s is less than the 0.001 s accepted"):
        as_seconds("watchdog.max_age", 0.5 * CONTROL_PERIOD, 1.0, at_least=CONTROL_PERIOD)
    assert as_seconds("t", 0.0, 1.0, allow_zero=True, at_least=CONTROL_PERIOD) == 0.0
    with pytest.raises(ConfigError, match=r"t: 0.0005 s is less than the 0.001 s accepted"):
        as_seconds("t", 0.5 * CONTROL_PERIOD, 1.0, allow_zero=True, at_least=CONTROL_PERIOD)


# ------------------------------------------------------------------------------------------------
# core/controllers/joint_space.py
# ------------------------------------------------------------------------------------------------
def test_gravity_comp_refuses_a_misspelt_parameter(robot: RobotModel) -> None:
    """``gravity_comp.dampng`` (a typo of ``damping``) is a :class:`ConfigError` naming it and the
    valid key, not an undamped arm. Mutant: ``reject_unknown_keys`` dropped from
    ``GravityCompensation.from_params`` (the node passes the controller's section on unchecked)."""
    with pytest.raises(
        ConfigError, match=r"gravity_comp: unknown parameter\(s\) \['dampng'\]; valid are \['damping'\]"
    ):
        GravityCompensation.from_params(robot, {"dampng": 0.1})


def test_gravity_comp_built_without_a_config_is_undamped(robot: RobotModel) -> None:
    """``GravityCompensation(robot)`` commands ``g(q)`` alone while the arm moves, as its config's
    default ``damping = 0`` says (checked against ``pin.rnea`` at rest, no acceleration). Mutant:
    the constructor's default config built with a damping of 0.05 N·m·s/rad (stable, so no check
    refused it; the 5 s hold test still held)."""
    controller = GravityCompensation(robot)
    assert controller.config.damping.tolist() == [0.0] * 7
    rest = np.zeros(7)
    g = pin.rnea(robot.model, robot.model.createData(), robot.configuration(HOME).copy(), rest, rest)
    moving = JointState(HOME, np.full(7, 0.8))
    assert np.abs(controller.compute(moving, None).tau - g).max() < 1e-9


@pytest.mark.parametrize(
    ("v_ref", "a_ref"), [(0.3, None), (None, 2.0)], ids=["velocity-only", "acceleration-only"]
)
def test_computed_torque_with_half_a_feed_forward(
    robot: RobotModel, v_ref: float | None, a_ref: float | None
) -> None:
    """A reference with a velocity and no acceleration (or the reverse) commands
    ``RNEA(q, q̇, K_p·e + K_d·(q̇_ref − q̇) + q̈_ref)`` with the missing part 0 (``q̇_ref = 0`` damps
    ``q̇`` alone), written out here with ``pin.rnea`` at the default gains ``K_p = 100``,
    ``K_d = 2·√K_p``. Mutant: the branch on ``reference.v is None`` testing ``reference.a is None``,
    so a velocity without acceleration lost its feed-forward (``−K_d·q̇`` alone) and an
    acceleration without velocity failed on ``None − q̇``."""
    q, v = HOME, np.linspace(-0.5, 0.5, 7)
    e = np.full(7, 0.02)
    v_part = np.zeros(7) if v_ref is None else np.full(7, v_ref)
    a_part = np.zeros(7) if a_ref is None else np.full(7, a_ref)
    reference = JointReference(
        q + e, None if v_ref is None else v_part.copy(), None if a_ref is None else a_part.copy()
    )
    tau = ComputedTorque(robot).compute(JointState(q, v), reference).tau_unsaturated
    kd = 2.0 * np.sqrt(DEFAULT_KP)
    qdd = DEFAULT_KP * e + kd * (v_part - v) + a_part
    expected = pin.rnea(robot.model, robot.model.createData(), robot.configuration(q).copy(), v, qdd)
    np.testing.assert_allclose(tau, expected, rtol=0.0, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# nodes/composed.py
# ------------------------------------------------------------------------------------------------
@requires_rclpy
@pytest.mark.ros
def test_closing_the_composed_process_writes_both_summaries(nodes: Any, tmp_path: Path) -> None:  # noqa: F811
    """Closing the composed process closes both nodes: each writes its ``stats_file`` summary
    under its own name. Mutants: ``self.controller.close()`` or ``self.sim.close()`` dropped from
    ``Composed.close`` (that node's summary never written, its node never destroyed)."""
    sim_stats, controller_stats = tmp_path / "sim.json", tmp_path / "controller.json"
    built = nodes.make(
        "composed",
        **{
            "sim_node:stats_file": str(sim_stats),
            "controller_node:stats_file": str(controller_stats),
            "controller_node:controller": "gravity_comp",
        },
    )
    nodes.close(built)
    assert json.loads(sim_stats.read_text())["node"] == "sim_node"
    summary = json.loads(controller_stats.read_text())
    assert summary["node"] == "controller_node" and summary["controller"] == "gravity_comp"


@requires_rclpy
@pytest.mark.ros
def test_an_interrupt_while_the_simulator_loads_closes_the_composed_controller(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``KeyboardInterrupt`` (not an ``Exception``) raised while the simulator node is built
    still closes the controller node built before it, and goes on up. Mutant: ``except
    BaseException`` narrowed to ``except Exception``, which left the controller open."""
    from torque_ctrl_ros.nodes import composed
    from torque_ctrl_ros.nodes.controller_node import ControllerNode

    closed: list[ControllerNode] = []

    class RecordedController(ControllerNode):
        def close(self, summary: bool = True) -> None:
            closed.append(self)
            super().close(summary)

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(composed, "ControllerNode", RecordedController)
    monkeypatch.setattr(composed, "SimNode", interrupted)
    with pytest.raises(KeyboardInterrupt):
        nodes.make("composed")
    assert len(closed) == 1
