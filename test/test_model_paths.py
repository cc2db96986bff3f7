"""Model files named by parameters (``sim_node.mjcf``, ``controller_node.model_file``, the QP
controllers' ``self_collision.model``): found from any working directory, as ``ros2 launch`` runs
the nodes from wherever it was started."""

from __future__ import annotations

from pathlib import Path

import pytest

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.params import controller_node_config, sim_node_config
from torque_ctrl_ros.paths import find_data_file

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("name", "folder", "expected"),
    [
        ("mjcf/scene_table.xml", "mjcf", "mjcf/scene_table.xml"),
        ("scene_table.xml", "mjcf", "mjcf/scene_table.xml"),
        ("urdf/gen3.urdf", "urdf", "urdf/gen3.urdf"),
        ("gen3.urdf", "urdf", "urdf/gen3.urdf"),
        ("mjcf/gen3.xml", "urdf", "mjcf/gen3.xml"),  # a model_file may be MJCF
    ],
)
def test_a_relative_name_is_found_in_the_package_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, folder: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_data_file(name, folder) == ROOT / expected


def test_the_parameters_name_package_files_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert sim_node_config({"mjcf": "mjcf/scene_table.xml"}).mjcf == str(ROOT / "mjcf" / "scene_table.xml")
    assert controller_node_config({"model_file": "urdf/gen3.urdf"}).model_file == str(
        ROOT / "urdf" / "gen3.urdf"
    )


def test_the_working_directory_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the user's beside them wins over the package's of the same name."""
    (tmp_path / "mjcf").mkdir()
    mine = tmp_path / "mjcf" / "scene_table.xml"
    mine.write_text("<mujoco/>")
    monkeypatch.chdir(tmp_path)
    assert sim_node_config({"mjcf": "mjcf/scene_table.xml"}).mjcf == str(mine)
    assert find_data_file(str(mine), "mjcf") == mine


def test_a_missing_file_names_the_parameter_and_every_place_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as refused:
        sim_node_config({"mjcf": "mjcf/nope.xml"})
    message = str(refused.value)
    assert message == (
        f"sim_node.mjcf: 'mjcf/nope.xml' does not exist "
        f"(tried {tmp_path / 'mjcf' / 'nope.xml'}, {ROOT / 'mjcf' / 'nope.xml'})"
    )
    with pytest.raises(ConfigError) as refused:
        controller_node_config({"model_file": "nope.urdf"})
    message = str(refused.value)
    assert (
        message.startswith("controller_node.model_file: 'nope.urdf' does not exist") and "\n" not in message
    )
    assert f"{tmp_path / 'nope.urdf'}, {ROOT / 'urdf' / 'nope.urdf'}" in message
    assert message.endswith("and robot_description is empty")
    with pytest.raises(
        ConfigError, match=r"^sim_node\.mjcf: '/no/such\.xml' does not exist \(tried /no/such\.xml\)$"
    ):
        sim_node_config({"mjcf": "/no/such.xml"})


def test_without_the_package_data_only_the_working_directory_is_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_share() -> Path:
        raise FileNotFoundError("cannot find the torque_ctrl_ros share directory")

    monkeypatch.setattr("torque_ctrl_ros.paths.share_dir", no_share)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as missing:
        find_data_file("scene.xml", "mjcf")
    assert str(missing.value) == (
        f"'scene.xml' does not exist (tried {tmp_path / 'scene.xml'}); "
        "cannot find the torque_ctrl_ros share directory"
    )


@pytest.mark.parametrize("name", ["gen3_collision.yaml", "config/gen3_collision.yaml"])
def test_the_collision_model_is_found_as_the_node_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from torque_ctrl_ros.core import RobotModel
    from torque_ctrl_ros.core.controllers import create_controller
    from torque_ctrl_ros.core.controllers.qpid import QPID

    robot = RobotModel.from_urdf_file(ROOT / "urdf" / "gen3.urdf")
    monkeypatch.chdir(tmp_path)
    params = {"tasks": ["tool"], "tool": {"type": "pose", "frame": "end_effector_link"}}
    qpid = create_controller("qpid", robot, params | {"self_collision": {"model": name}})
    assert isinstance(qpid, QPID) and qpid.collision_barrier is not None
    with pytest.raises(
        ConfigError, match=r"^qpid\.self_collision\.model: 'nope\.yaml' does not exist \(tried "
    ):
        create_controller("qpid", robot, params | {"self_collision": {"model": "nope.yaml"}})
