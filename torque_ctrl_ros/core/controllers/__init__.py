"""Torque controllers, selected by name with :func:`create_controller`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..robot import RobotModel
from .base import Controller
from .cartesian import AchdRnea, AchdRneaConfig, PoseReference
from .joint_space import (
    ComputedTorque,
    ComputedTorqueConfig,
    GravityCompensation,
    GravityCompensationConfig,
)
from .qpid import HQPID, QPID

#: Every controller by the value of the ``controller`` parameter that selects it.
CONTROLLERS: dict[str, type[Controller[Any]]] = {
    GravityCompensation.name: GravityCompensation,
    ComputedTorque.name: ComputedTorque,
    AchdRnea.name: AchdRnea,
    QPID.name: QPID,
    HQPID.name: HQPID,
}


def create_controller(
    name: str, robot: RobotModel, params: Mapping[str, Any] | None = None
) -> Controller[Any]:
    """Build controller ``name`` from its parameter section; errors list the valid names."""
    if name not in CONTROLLERS:
        raise ConfigError(f"controller: unknown {name!r}; valid controllers are {sorted(CONTROLLERS)}")
    return CONTROLLERS[name].from_params(robot, params or {})


__all__ = [
    "CONTROLLERS",
    "HQPID",
    "QPID",
    "AchdRnea",
    "AchdRneaConfig",
    "ComputedTorque",
    "ComputedTorqueConfig",
    "Controller",
    "GravityCompensation",
    "GravityCompensationConfig",
    "PoseReference",
    "create_controller",
]
