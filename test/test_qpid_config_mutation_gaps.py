"""Behaviours of the QP controllers' parameters and of the controller registry that a mutation
review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.core.controllers.qpid_config` (defaults, parsing and refusals) and
:mod:`torque_ctrl_ros.core.controllers` (``create_controller``, :class:`Controller`). Pure core:
no ROS.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import pytest
from ros_helpers import shipped_parameters
from test_qp_terms import HOME
from test_qpid import _params

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import ComputedTorque, GravityCompensation, create_controller
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.controllers.qpid_config import QPIDConfig, check_velocity_weight, max_weight_ratio
from torque_ctrl_ros.core.errors import ConfigError, StateError
from torque_ctrl_ros.core.types import JointState


def _section(controller: str) -> dict[str, Any]:
    """``controller``'s section of the shipped ``config/gen3_controllers.yaml``, keys without
    the ``<controller>.`` prefix."""
    prefix = controller + "."
    shipped = shipped_parameters("controller_node")
    return {k.removeprefix(prefix): v for k, v in shipped.items() if k.startswith(prefix)}


def _same(a: Any, b: Any) -> bool:
    """Equal config values: arrays element by element, the rest with ``==``."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


@pytest.mark.parametrize("controller", ["qpid", "hqpid"])
def test_omitted_parameters_default_to_the_shipped_reference_values(
    robot: RobotModel, controller: str
) -> None:
    """``config/gen3_controllers.yaml`` writes out every QP parameter with the value a section
    that omits it gets: the config from its tasks alone equals the one from the whole section in
    every field (barriers, weights, solver, fallback damping). A changed default goes unnoticed
    otherwise, as mutants ``d_safe: float = 0.03`` (the capsules' safety distance) and
    ``max_iter: int = 50`` → ``40`` in the dataclasses did."""
    section = _section(controller)
    task_keys = {"tasks"} | {k for k in section if k.split(".")[0] in section["tasks"]}
    whole = QPIDConfig.from_params(robot, section, section=controller)
    tasks_only = QPIDConfig.from_params(robot, {k: section[k] for k in task_keys}, section=controller)
    assert len(section) > len(task_keys) + 20  # the section does write out the other parameters
    for f in fields(QPIDConfig):
        a, b = getattr(tasks_only, f.name), getattr(whole, f.name)
        assert _same(a, b), f"{controller}.{f.name}: default {a!r}, shipped {b!r}"


def test_the_weight_ratio_bound_is_the_looser_one_from_eps_abs_1e_7_on() -> None:
    """From ``solver.eps_abs`` 1e-7 on (included) a level's weight ratio may reach 2e6, below it
    1e6 (``config/gen3_controllers.yaml`` says ``2e6 with eps_abs >= 1e-7``). Mutant
    ``eps_abs > 1e-7`` in :func:`max_weight_ratio` refused ratios up to 2e6 at exactly 1e-7. The
    bound was 1e7 there, where raw tool reference steps fell back on 11–83 % of the steps in MuJoCo
    (docs/controllers.md)."""
    assert max_weight_ratio(1e-7) == 2e6
    assert max_weight_ratio(0.99e-7) == 1e6
    assert max_weight_ratio(1e-3) == 2e6


def test_an_unknown_barrier_key_is_a_config_error_naming_the_valid_keys(robot: RobotModel) -> None:
    """A misspelt barrier key (``self_collision.dsafe``) is refused by name, with the group's
    valid keys. Mutant: the unknown-key check of :meth:`QPIDConfig.from_params` removed, the
    key reached the dataclass and a bare ``TypeError`` came out instead."""
    with pytest.raises(
        ConfigError, match=r"qpid\.self_collision: unknown key\(s\) \['dsafe'\]; valid are .*'d_safe'"
    ):
        QPID.from_params(robot, _params(**{"self_collision.dsafe": 0.05}))


def test_an_unknown_solver_key_is_refused_naming_the_solver_section(robot: RobotModel) -> None:
    """A misspelt solver key (``solver.eps``) is refused as a ``qpid.solver`` key, with the valid
    ones. Mutant: the solver's unknown-key check removed; the key then fell through to the
    top-level check, whose message names ``eps`` among the top-level parameters, not the
    ``solver.`` section it was given in."""
    with pytest.raises(
        ConfigError, match=r"qpid\.solver: unknown key\(s\) \['eps'\]; valid are \['eps_abs', 'max_iter'\]"
    ):
        QPID.from_params(robot, _params(**{"solver.eps": 1e-9}))


@pytest.mark.parametrize(
    ("names", "match"),
    [
        ("tool", "expected a non-empty list of task names, got 'tool'"),
        ([], "expected a non-empty list of task names, got \\[\\]"),
        (["tool", "tool"], "duplicate names in \\['tool', 'tool'\\]"),
        (["tool", ""], "invalid task name '' \\(no dots, not empty\\)"),
    ],
)
def test_task_lists_that_are_no_list_or_repeat_a_name_are_refused_as_such(
    robot: RobotModel, names: Any, match: str
) -> None:
    """``tasks`` must be a non-empty list of distinct names, and the error says that. Mutants
    in :meth:`QPIDConfig.from_params`: without ``isinstance(names, str)`` a string was read as
    the task names ``t, o, o, l`` (error: ``qpid.t.type`` required); without ``not names`` the
    empty list met a later check; without the duplicate check the second ``tool`` found its keys
    taken by the first and was reported as having no ``type``; without ``not name`` in
    ``_check_task_name`` the empty name was reported as ``qpid..type`` missing."""
    with pytest.raises(ConfigError, match=rf"qpid\.tasks: {match}"):
        QPID.from_params(robot, _params(tasks=names))


@pytest.mark.parametrize(
    ("key", "ends", "outside"),
    [
        ("slack_weight", (1e-6, 1e12), (0.99e-6, 1.01e12)),
        ("solver.eps_abs", (1e-14, 1e-6), (0.99e-14, 1.01e-6)),
        ("solver.max_iter", (20, 1000), (19, 1001)),
        ("acceleration_weight", (0.0, 1e6), (-1e-9, 1.01e6)),
    ],
)
def test_the_documented_ranges_include_their_ends(
    robot: RobotModel, key: str, ends: tuple[float, float], outside: tuple[float, float]
) -> None:
    """The ranges ``config/gen3_controllers.yaml`` and the messages give are closed: both ends are
    accepted (as given), the next values out refused naming the key. Mutants: ``<`` for ``<=``
    (or the reverse) at either end of the ``slack_weight``, ``eps_abs`` and ``max_iter`` checks
    and of the ``acceleration_weight`` cap :data:`~.qpid_config.MAX_WEIGHT`; dropping either end
    of the ``slack_weight`` range."""
    for value in ends:
        config = QPIDConfig.from_params(robot, _params(**{key: value}))
        assert np.all(getattr(config, key.removeprefix("solver.")) == value)
    for value in outside:
        with pytest.raises(ConfigError, match=rf"qpid\.{key}: expected"):
            QPIDConfig.from_params(robot, _params(**{key: value}))


def test_a_per_joint_weight_is_capped_on_every_joint(robot: RobotModel) -> None:
    """``acceleration_weight`` and ``velocity_weight`` above :data:`~.qpid_config.MAX_WEIGHT` on
    the last joint only are refused as well. Mutant ``weights[0] > MAX_WEIGHT`` (for
    ``weights.max()``) checked the first joint alone."""
    for key in ("acceleration_weight", "velocity_weight"):
        weights = [0.0] * 6 + [2e6]
        with pytest.raises(ConfigError, match=rf"qpid\.{key}: expected at most 1e\+06, got 2e\+06"):
            QPIDConfig.from_params(robot, _params(**{key: weights}))


def test_a_velocity_weight_below_1_with_no_regularisation_is_refused(robot: RobotModel) -> None:
    """``velocity_weight`` 0.5 on a joint with no ``acceleration_weight`` and no posture task is a
    deadbeat damping (``Δt·kd = 1``): refused, with "must be 0". Mutant
    ``np.flatnonzero(velocity_weight > 1.0)`` in :func:`check_velocity_weight` checked only the
    weights above 1 and passed it."""
    weights = np.zeros(robot.n)
    weights[-1] = 0.5
    with pytest.raises(ConfigError, match=r"qpid\.velocity_weight: 0\.5 on joint_7 .* must be 0"):
        check_velocity_weight("qpid", weights, np.zeros(robot.n), [], robot.joint_names, 1)


def test_a_cartesian_task_without_a_frame_is_refused_naming_its_frame_key(robot: RobotModel) -> None:
    """A position task with no ``frame`` is refused as ``qpid.tool.frame: required``. Mutant: that
    check of ``_check_tasks`` removed; the task then failed later, on the frame name ``None``."""
    with pytest.raises(ConfigError, match=r"qpid\.tool\.frame: required for a position task"):
        QPIDConfig.from_params(robot, {**_params(), "tool.frame": None})


def test_values_only_an_enabled_barrier_is_held_to_and_a_zero_d_safe_are_accepted(robot: RobotModel) -> None:
    """A disabled group's ``alpha`` need only be positive (0.5 is below ``MIN_ALPHA`` 1, refused
    when the group is on), and ``self_collision.d_safe`` may be 0 (capsules may touch). Mutants in
    ``_check_barrier``: ``check_barrier_alpha`` for every group, on or off; ``allow_zero`` dropped
    from the ``d_safe`` check."""
    off = QPIDConfig.from_params(robot, _params(**{"singularity.enabled": False, "singularity.alpha": 0.5}))
    assert off.singularity.alpha == 0.5
    with pytest.raises(ConfigError, match=r"qpid\.singularity\.alpha"):
        QPIDConfig.from_params(robot, _params(**{"singularity.alpha": 0.5}))
    touching = QPIDConfig.from_params(robot, _params(**{"self_collision.d_safe": 0}))
    assert touching.self_collision.d_safe == 0.0


@pytest.mark.parametrize("controller", ["gravity_comp", "qpid"])
def test_compute_refuses_a_malformed_state_before_any_torque(robot: RobotModel, controller: str) -> None:
    """:meth:`Controller.compute` checks the state first: a NaN angle or a velocity of 6 entries
    is a :class:`StateError` naming the problem, not a torque or another error from deeper down.
    Mutant: ``robot.check_state`` in ``compute`` replaced by ``np.asarray`` (the NaN became a
    non-finite torque, the short vector a Pinocchio error)."""
    c = create_controller(controller, robot, _params() if controller == "qpid" else None)
    nan_q = HOME.copy()
    nan_q[2] = np.nan
    with pytest.raises(StateError, match=r"joint positions: expected finite numbers"):
        c.compute(JointState(nan_q, np.zeros(robot.n)), c.hold_reference(JointState(HOME, np.zeros(robot.n))))
    with pytest.raises(StateError, match=r"joint velocities: expected 7 numbers"):
        c.compute(JointState(HOME, np.zeros(6)), c.hold_reference(JointState(HOME, np.zeros(robot.n))))


def test_create_controller_without_a_section_builds_the_defaults(robot: RobotModel) -> None:
    """``create_controller(name, robot)`` with no parameter section builds the controller from its
    defaults, as an empty section would. Mutant ``from_params(robot, params)`` (for
    ``params or {}``) handed ``None`` to ``from_params``, which failed on it."""
    assert isinstance(create_controller("gravity_comp", robot), GravityCompensation)
    assert isinstance(create_controller("computed_torque", robot), ComputedTorque)
