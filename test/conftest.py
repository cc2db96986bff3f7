"""Shared fixtures: the canonical Gen3 description files and models built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from torque_ctrl_ros.core import RobotModel

ROOT = Path(__file__).resolve().parent.parent
URDF_PATH = ROOT / "urdf" / "gen3.urdf"
SCENE_PATH = ROOT / "mjcf" / "scene.xml"
TOOL_FRAME = "end_effector_link"


@pytest.fixture(scope="session")
def urdf_path() -> Path:
    """The controller-side description."""
    return URDF_PATH


@pytest.fixture(scope="session")
def scene_path() -> Path:
    """The simulator-side description (Gen3 + floor + keyframes)."""
    return SCENE_PATH


@pytest.fixture
def robot() -> RobotModel:
    """A fresh Gen3 RobotModel from the URDF (each test gets its own Pinocchio data)."""
    return RobotModel.from_urdf_file(URDF_PATH)
