"""Behaviours of the robot model, the validators and the node parameters that a mutation review
found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/robot.py``, ``core/validation.py`` and the ROS-free validation of ``nodes/params.py``: the
refusals of bad input and the checks that decide which gains, dampings and delays reach the arm.
No ROS.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TOOL_FRAME, URDF_PATH
from test_robot_model import _ONE_LINK

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.errors import ConfigError, FrameNotFoundError, ModelError
from torque_ctrl_ros.core.robot import (
    MAX_COMMAND_DELAY,
    check_damping_stability,
    damping_configurations,
    delay_periods,
    random_configurations,
)
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING
from torque_ctrl_ros.core.validation import as_rotation
from torque_ctrl_ros.nodes.params import controller_node_config, file_parameter, sim_node_config


def test_as_rotation_refuses_a_bool_inside_a_row() -> None:
    """A YAML ``true`` among a rotation's numbers is refused, not read as 1: numpy gives
    ``[[True, 0, 0], [0, 1, 0], [0, 0, 1]]`` an integer dtype, so only a look inside each row finds
    it. (Mutant: ``_has_bool`` looks one level deep, ``any(isinstance(v, (bool, np.bool_)) for v
    in value)``, sees three lists and lets the identity through.)"""
    with pytest.raises(ConfigError, match=r"^R: expected a 3 x 3 rotation matrix, got \[\[True"):
        as_rotation("R", [[True, 0, 0], [0, 1, 0], [0, 0, 1]])


@pytest.mark.parametrize(("column", "toward"), [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)])
def test_as_rotation_refuses_unit_columns_that_are_not_orthogonal(column: int, toward: int) -> None:
    """A float64 identity with column ``column`` tilted by 0.1 rad toward axis ``toward``: every
    column is a unit vector and ``det R = cos 0.1 > 0``, but columns ``column`` and ``toward`` have
    the dot product ``sin 0.1``, all of it from row ``toward``; the float path refuses it as numpy
    does. Each case pins one product of the float path's column dot products. (Mutant: its ``n12``
    drops ``h·i``, so ``[[1, 0, 0], [0, cos 0.1, 0], [0, sin 0.1, 1]]``, case (1, 2), passed as a
    rotation.)"""
    R = np.eye(3)
    R[column, column] = np.cos(0.1)
    R[toward, column] = np.sin(0.1)
    with pytest.raises(ConfigError, match="^R: not a rotation matrix"):
        as_rotation("R", R)


def test_a_zero_stiffness_is_refused_where_the_gain_must_be_positive(robot: RobotModel) -> None:
    """computed_torque's ``kp`` (and every ``strictly_positive`` vector) refuses an entry of 0:
    that joint would hold no position, its error left to drift. (Mutant: ``as_vector`` tests
    ``(arr < 0.0)`` for ``strictly_positive``, which lets 0 through.)"""
    with pytest.raises(ConfigError, match=r"^computed_torque\.kp: expected every entry > 0"):
        create_controller("computed_torque", robot, {"kp": [100.0] * 6 + [0.0]})


def test_the_longest_command_delay_is_accepted_and_just_beyond_it_refused() -> None:
    """``command_delay`` takes ``[CONTROL_PERIOD, MAX_COMMAND_DELAY]`` with both ends: 50 ms is
    accepted, 50.001 ms refused. (Mutant: ``value < MAX_COMMAND_DELAY`` in
    ``check_command_delay`` refused 50 ms.)"""
    assert controller_node_config({"command_delay": MAX_COMMAND_DELAY}).command_delay == MAX_COMMAND_DELAY
    with pytest.raises(ConfigError, match=r"^controller_node\.command_delay: expected 0\.001 to 0\.05 s"):
        controller_node_config({"command_delay": MAX_COMMAND_DELAY + 1e-6})


def test_a_delay_a_rounding_error_above_whole_periods_counts_those_periods() -> None:
    """``delay_periods`` rounds up, but not a delay that only rounding put above whole periods:
    37 ms computed as ``370 * 0.0001`` (0.037000000000000005 s) is 36 periods beyond the first, as
    is 0.037 itself; 37.1 ms is 37. (Mutant: ``math.ceil(command_delay / period - 1.0)``, without
    the 1e-9, gave 37 and held the gains to a bound one period later than the delay set.)"""
    assert 370 * 0.0001 > 0.037
    assert delay_periods(370 * 0.0001) == delay_periods(0.037) == 36
    assert delay_periods(0.0371) == 37


def test_limits_as_large_as_pinocchios_none_are_no_limits() -> None:
    """A revolute joint whose bounds, effort and velocity are ∓1e300 (beyond ``_NO_LIMIT``, what
    Pinocchio writes for "none") has no limits: it is continuous, ``±inf`` in position, and
    ``inf`` in effort and velocity, not a bound of 1e300 that sampling and the QP's velocity rows
    would take as real; a one-sided range (lower −1, upper 1e300) is refused, not kept as a range
    nor taken for none (its lower limit lost; until a review it was). (Mutants: the continuity
    test drops ``abs(hi) < _NO_LIMIT`` and keeps a one-sided range; ``_limit_or_inf`` drops
    ``~(np.abs(out) < _NO_LIMIT)`` and keeps 1e300.)"""
    limit = '<limit lower="-1e300" upper="1e300" effort="1e300" velocity="1e300"/>'
    robot = RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", "revolute").replace("LIMIT", limit))
    assert robot.continuous.tolist() == [True]
    assert robot.position_lower.tolist() == [-np.inf] and robot.position_upper.tolist() == [np.inf]
    assert robot.effort_limit.tolist() == [np.inf] and robot.velocity_limit.tolist() == [np.inf]
    one_sided = '<limit lower="-1" upper="1e300" effort="1" velocity="1"/>'
    with pytest.raises(ModelError, match=r"position limits \[-1, 1e\+300\] rad: expected a lower limit"):
        RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", "revolute").replace("LIMIT", one_sided))


def test_a_bool_is_not_taken_as_a_frame_index(robot: RobotModel) -> None:
    """``frame: true`` is refused listing the frames, not read as frame index 1 (``base_link``).
    (Mutant: ``frame_id`` takes any ``int``, a bool included, as an index.)"""
    with pytest.raises(FrameNotFoundError, match=r"^frame True is not in .*valid frames are \['universe'"):
        robot.frame_id(True)


def test_a_model_file_extension_in_capitals_is_read(tmp_path: Path) -> None:
    """``from_file`` picks the parser by the extension whatever its case: ``GEN3.URDF`` loads as
    the URDF it is. (Mutant: ``Path(path).suffix`` without ``.lower()`` refused it as neither
    ``.urdf`` nor ``.xml``.)"""
    path = tmp_path / "GEN3.URDF"
    shutil.copyfile(URDF_PATH, path)
    assert RobotModel.from_file(path).joint_names == RobotModel.from_urdf_file(URDF_PATH).joint_names


def test_a_joint_damping_without_twist_damping_is_checked_as_a_joint_damping(robot: RobotModel) -> None:
    """With ``B = 0``, ``check_frame_damping`` is ``check_damping``: the Gen3's default joint
    damping scaled to ``λ ≈ 0.99`` passes (below 1) and returns the same ``λ``, without the 2 %
    margin the twist check keeps for poses between the samples. (Mutant: the ``if not b.any()``
    shortcut removed, so the margin refused it at ``>= 0.98``.)"""
    kd = np.array(DEFAULT_DAMPING) * 0.99 / robot.check_damping("f", DEFAULT_DAMPING)
    expected = robot.check_damping("f", kd)
    assert 0.98 < expected < 1.0
    assert robot.check_frame_damping("f", kd, TOOL_FRAME, 0.0) == expected


def test_an_output_file_in_a_folder_that_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``stats_file`` or ``record_file`` in a folder this process may not write is refused at
    start, not found at exit with the whole run's output lost. ``os.access`` is told the folder is
    read-only: as root (the CI) a chmod would not stop a write. (Mutant: ``_output_file``'s
    ``os.access(folder, os.W_OK)`` check removed.)"""
    readable_only = tmp_path / "ro"
    readable_only.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != readable_only and real_access(p, mode))
    with pytest.raises(ConfigError, match=r"^sim_node\.record_file: folder '.*ro' is not writable"):
        sim_node_config({"record_file": str(readable_only / "r.npz"), "duration": 1.0})
    with pytest.raises(ConfigError, match=r"^controller_node\.stats_file: folder '.*ro' is not writable"):
        controller_node_config({"stats_file": str(readable_only / "s.json")})


@pytest.mark.parametrize(
    ("joints", "reason"),
    [
        (["joint_1", ""], r"expected a list of joint names, got \['joint_1', ''\]"),
        (["joint_2"] * 2, "duplicate"),
    ],
    ids=["empty-name", "duplicate"],
)
def test_a_joints_list_with_an_empty_or_repeated_name_is_refused_without_ros(
    joints: list[str], reason: str
) -> None:
    """Both nodes' ``joints`` refuse an empty name and a name given twice while the parameters are
    read, before any node, plant or model exists (the ROS tests find the duplicate only in a started
    controller node). (Mutants: ``_names`` checks ``isinstance(v, str)`` without ``and v``; its
    duplicate check removed.)"""
    for read, node in ((sim_node_config, "sim_node"), (controller_node_config, "controller_node")):
        with pytest.raises(ConfigError, match=rf"^{node}\.joints: {reason}"):
            read({"joints": joints})


def test_a_robot_description_wins_over_a_model_file_that_does_not_exist() -> None:
    """With ``robot_description`` given, ``model_file`` is not used, so a leftover name of a file
    that does not exist is not looked for (config/gen3_controllers.yaml: "wins over model_file").
    (Mutant: ``model_file`` resolved whenever it is not empty, which refused the description.)"""
    description = URDF_PATH.read_text()
    cfg = controller_node_config({"robot_description": description, "model_file": "nope.urdf"})
    assert cfg.robot_description == description and cfg.model_file == "nope.urdf"


def test_a_column_of_gains_is_refused_not_kept_two_dimensional(robot: RobotModel) -> None:
    """A gain given as a 7 × 1 column (``[[100], [100], …]``) is refused by its shape: kept as one,
    ``kp·e`` would broadcast to a 7 × 7 matrix. (Mutant: ``as_vector`` compares ``arr.size`` with
    ``size`` instead of the shape with ``(size,)`` and returned the column.)"""
    with pytest.raises(
        ConfigError, match=r"^computed_torque\.kp: expected a number or 7 numbers, got shape \(7, 1\)"
    ):
        create_controller("computed_torque", robot, {"kp": [[100.0]] * 7})


def test_a_section_whose_name_only_starts_with_a_controllers_is_unknown() -> None:
    """``gravity_compx.damping`` is not in gravity_comp's section: it is refused as an unknown
    parameter, not ignored. (Mutant: the sections other controllers may keep are matched by the
    controller's name without the dot, so any name starting with one passed unread.)"""
    with pytest.raises(
        ConfigError, match=r"^controller_node: unknown parameter\(s\) \['gravity_compx\.damping'\]"
    ):
        controller_node_config({"gravity_compx.damping": 1.0})


def test_a_parameter_file_section_does_not_reach_a_node_it_names_only_the_start_of(tmp_path: Path) -> None:
    """A section ``controller:`` reaches ``/controller``, not ``/controller_node``: rcl matches
    whole names, so ``file_parameter`` (how run_sim reads the controller's name) gives ``None``
    there. (Mutant: the section's pattern is tested with ``re.match``, a prefix, not
    ``fullmatch``.)"""
    path = tmp_path / "p.yaml"
    path.write_text("controller:\n  ros__parameters:\n    controller: qpid\n")
    assert file_parameter([path], "/controller", "controller") == "qpid"
    assert file_parameter([path], "/controller_node", "controller") is None


def test_random_configurations_cover_both_signs_of_a_continuous_joint() -> None:
    """Where a bound is infinite the samples are uniform in ``[-π, π]`` (a continuous joint repeats
    after 2π), both signs: 200 samples reach beyond ±3 rad. (Mutant: an infinite lower bound
    taken as 0, which left the negative half of every continuous joint unchecked.)"""
    qs = random_configurations(np.full(2, -np.inf), np.full(2, np.inf), 200)
    assert (qs.min(axis=0) < -3.0).all() and (qs.max(axis=0) > 3.0).all()
    assert (np.abs(qs) <= np.pi).all()


def test_damping_configurations_stay_within_a_range_that_excludes_zero() -> None:
    """Every damping configuration, the zero pose and the corner grid included, lies within the
    limits, also for a joint whose range ``[0.5, 1]`` leaves out 0: there the zero pose is clipped
    to 0.5. (Mutant: the zero pose not clipped, which put rows at 0, outside that joint's range.)"""
    lower, upper = np.array([-1.0, 0.5, -np.inf]), np.array([1.0, 1.0, np.inf])
    qs = damping_configurations(lower, upper, count=20)
    assert qs[0].tolist() == [0.0, 0.5, 0.0]
    assert (qs >= lower).all() and (qs <= upper).all()


def test_an_unstable_damping_names_the_configuration_where_it_is_worst() -> None:
    """The refusal names the configuration of the largest eigenvalue: of ``M⁻¹`` 0.1 at q = 0.25
    and 2 at q = 0.75, ``K_d`` 600 reaches 1.2 at 0.75 (0.06 at 0.25). (Mutant: the message takes
    the first configuration's q.)"""
    m_inv = np.stack([np.eye(1) * 0.1, np.eye(1) * 2.0])
    with pytest.raises(ConfigError, match=r"eigenvalue 1\.2 >= 1 \(at q = \[0\.75\] rad\)"):
        check_damping_stability("f", np.array([600.0]), 1e-3, m_inv, np.array([[0.25], [0.75]]), ["j"])
