"""Controller compute per step, next to the floor measured in the same run.

States come from a realistic trajectory: the simulated Gen3 tracking a smooth joint-space
motion under computed torque, so the controllers see the velocities and configurations
they would see in use. The floor is a bare ``pinocchio.rnea`` call at the same states
(and, for QP controllers, a bare warm ProxSuite solve of the same size, when the controller
exposes its QP).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pinocchio as pin

from ..core import JointReference, JointState, RobotModel
from ..core.controllers import ComputedTorque, ComputedTorqueConfig, Controller, create_controller
from ..paths import data_path
from ..sim.plant import MujocoPlant
from .stats import summarize_us, time_calls


def realistic_states(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (q, q̇) pairs along a simulated smooth motion from ``home`` (1 kHz samples)."""
    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    plant = MujocoPlant(data_path("mjcf", "scene.xml"))
    plant.reset("home")
    home = plant.q
    rng = np.random.default_rng(seed)
    amplitude = rng.uniform(0.2, 0.5, robot.n)
    freq = rng.uniform(0.2, 0.5, robot.n)
    tracker = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    qs = np.empty((count, robot.n))
    vs = np.empty((count, robot.n))
    for k in range(count):
        t = k * plant.timestep
        w = 2 * np.pi * freq
        ref = JointReference(
            home + amplitude * np.sin(w * t),
            amplitude * w * np.cos(w * t),
            -amplitude * w**2 * np.sin(w * t),
        )
        qs[k], vs[k] = plant.q, plant.v
        plant.set_torque(tracker.compute(JointState(qs[k], vs[k]), ref).tau)
        plant.step()
    return qs, vs


def rnea_floor(robot: RobotModel, qs: np.ndarray, vs: np.ndarray) -> dict[str, float]:
    """A bare ``pin.rnea`` on preconverted configurations: the cheapest dynamics call."""
    q_pin = np.array([robot.configuration(q).copy() for q in qs])
    a = np.zeros(robot.n)
    model, data = robot.model, robot.data
    return summarize_us(time_calls(lambda i: pin.rnea(model, data, q_pin[i], vs[i], a), len(qs)))


def controller_compute(
    controller: Controller[Any],
    reference_for: Callable[[JointState], Any],
    qs: np.ndarray,
    vs: np.ndarray,
) -> dict[str, float]:
    """Time ``controller.compute`` (validation + torque + saturation) at each state."""
    states = [JointState(q, v) for q, v in zip(qs, vs, strict=True)]
    reference = reference_for(states[0])
    return summarize_us(time_calls(lambda i: controller.compute(states[i], reference), len(states)))


def run(controllers: Mapping[str, Mapping[str, Any]], count: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Benchmark each ``name → params`` controller; returns floor, per-controller figures and ratios."""
    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    qs, vs = realistic_states(count, seed)
    floor = rnea_floor(robot, qs, vs)
    results: dict[str, Any] = {"states": count, "floor_rnea": floor, "controllers": {}}
    for name, params in controllers.items():
        controller = create_controller(name, robot, params)
        figures = controller_compute(controller, controller.hold_reference, qs, vs)
        figures["ratio_to_rnea_median"] = figures["median_us"] / floor["median_us"]
        qp_floor = getattr(controller, "benchmark_qp_floor", None)
        if callable(qp_floor):
            solve = qp_floor(qs, vs)
            figures["floor_qp"] = solve
            figures["ratio_to_qp_median"] = figures["median_us"] / solve["median_us"]
        results["controllers"][name] = figures
    return results
