"""Controller compute per step, next to the floor measured in the same run.

States come from a realistic trajectory: the simulated Gen3 tracking a smooth joint-space
motion under computed torque, so the controllers see the velocities and configurations
they would see in use; each controller tracks that motion too, a new reference at every state
(:func:`tracking_references`), as the node hands it one when it follows a target. The floors are
a bare ``pinocchio.rnea`` call at the same states and, for the QP controllers, bare warm
ProxSuite solves of the QPs they build, each timed in blocks interleaved with the controller
(see :func:`run`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np
import pinocchio as pin

from ..core import JointReference, JointState, RobotModel
from ..core.controllers import ComputedTorque, ComputedTorqueConfig, Controller, create_controller
from ..paths import data_path
from ..sim.plant import MujocoPlant
from .stats import WARMUP, summarize_us, time_calls_paced, time_interleaved


def realistic_states(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (q, q̇) pairs along a simulated smooth motion from ``home`` (1 kHz samples)
    (:func:`realistic_motion`)."""
    qs, vs, _ = realistic_motion(count, seed)
    return qs, vs


def realistic_motion(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[JointReference]]:
    """``count`` (q, q̇) pairs along a simulated smooth motion from ``home`` (1 kHz samples), and the
    joint reference (q, q̇, q̈) the arm tracked at each.

    Each joint swings ``a·sin(2π·f·t)`` about home, ``a`` 0.2–0.5 rad and ``f`` 0.2–0.5 Hz drawn
    at random, ``a`` cut so that its peak speed ``2π·f·a`` is at most 0.8 of the joint's limit
    (uncut, joint_6 would reach 1.39 rad/s, over its 1.22, on 30 % of the states).
    """
    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    plant = MujocoPlant(data_path("mjcf", "scene.xml"))
    plant.reset("home")
    home = plant.q
    rng = np.random.default_rng(seed)
    amplitude = rng.uniform(0.2, 0.5, robot.n)
    freq = rng.uniform(0.2, 0.5, robot.n)
    amplitude = np.minimum(amplitude, 0.8 * robot.velocity_limit / (2 * np.pi * freq))
    tracker = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    qs = np.empty((count, robot.n))
    vs = np.empty((count, robot.n))
    refs: list[JointReference] = []
    for k in range(count):
        t = k * plant.timestep
        w = 2 * np.pi * freq
        ref = JointReference(
            home + amplitude * np.sin(w * t),
            amplitude * w * np.cos(w * t),
            -amplitude * w**2 * np.sin(w * t),
        )
        qs[k], vs[k] = plant.q, plant.v
        refs.append(ref)
        plant.set_torque(tracker.compute(JointState(qs[k], vs[k]), ref).tau)
        plant.step()
    return qs, vs, refs


def tracking_references(
    name: str,
    params: Mapping[str, Any],
    robot: Any,
    motion: list[JointReference],
    package: ModuleType | None = None,
) -> list[Any]:
    """A new reference of controller ``name`` for each state, following ``motion`` (the joint
    reference the states tracked): computed torque takes it as it is (positions, velocities,
    accelerations); the others their hold reference at its positions (``hold_reference``: the
    tool's pose there, each QP task's target there), built on an instance of their own, so that
    the timed one's kinematics are not touched. A new object each step is checked each step, as
    when the node follows a target; one object held (``stepper`` without references) is checked
    once, and costs less: computed torque 19.6 against 26.4 µs (11.5× against 15.5× ``rnea``) on
    2026-12-07 (docs/performance.md, "What a review of the benchmark found").

    ``package``: the package whose classes build them (``bench.compare``'s other version, its
    ``robot`` of that package too); this one by default."""
    name_of = (package or importlib.import_module(__package__.rsplit(".", 1)[0])).__name__
    core = importlib.import_module(f"{name_of}.core")
    controllers = importlib.import_module(f"{name_of}.core.controllers")
    builder = controllers.create_controller(name, robot, params)
    if isinstance(builder, controllers.ComputedTorque):
        return [core.JointReference(r.q.copy(), _copy(r.v), _copy(r.a)) for r in motion]
    zero = np.zeros(robot.n)
    return [builder.hold_reference(core.JointState(r.q, zero)) for r in motion]


def _copy(values: np.ndarray | None) -> np.ndarray | None:
    return None if values is None else values.copy()


def run(
    controllers: Mapping[str, Mapping[str, Any]], count: int = 10_000, seed: int = 0, paced: int = 2_000
) -> dict[str, Any]:
    """Benchmark each ``name → params`` controller next to its floors; figures and ratios.

    Per controller, three calls are timed at every state, interleaved in blocks
    (:func:`.stats.time_interleaved`): ``controller.compute`` (validation + torque +
    saturation, on a new reference each state: :func:`tracking_references`; the figures up to
    2026-12-07 held one reference for every state), a bare ``pin.rnea`` on preconverted
    configurations (the cheapest dynamics call, :func:`rnea_floor`), and for the QP controllers
    bare warm ProxSuite solves of the very QPs the controller builds (``qp_replay``). Ratios are
    of medians taken over the same stretch of time. Then a fresh controller is timed over the
    first ``paced`` states at one call per millisecond (``paced_1khz``,
    :func:`.stats.time_calls_paced`), and the QP controllers' step part by part over the same
    states (``parts_us``, :func:`qp_step_parts`).

    Not timed, and recorded in the result: the back-to-back and the paced series are preceded by
    ``warmup`` calls at states ``0 … warmup−1`` (:data:`.stats.WARMUP`); before the back-to-back
    series a QP controller is then reset and stepped once more, cold, at state 0 (see
    :func:`controller_calls`; the paced series starts at state 0 warm from state ``warmup − 1``);
    the parts have no warm-up (their first step is the cold one, one of their medians' samples);
    ``paced_states`` says how many of the first states the paced figure and the parts cover.
    """
    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    qs, vs, motion = realistic_motion(count, seed)
    states = [JointState(q, v) for q, v in zip(qs, vs, strict=True)]
    paced = min(count, paced)
    results: dict[str, Any] = {
        "states": count,
        "warmup": WARMUP,
        "paced_states": paced,
        "reference": "tracking",  # a new reference each state (tracking_references)
        "controllers": {},
    }
    rnea = rnea_floor(robot, states)
    for name, params in controllers.items():
        controller: Controller[Any] = create_controller(name, robot, params)
        references = tracking_references(name, params, robot, motion)
        calls, reset = controller_calls(controller, states, references)
        calls["rnea"] = rnea
        times = time_interleaved(calls, count, warmup=WARMUP, after_warmup=reset)
        figures: dict[str, Any] = dict(summarize_us(times["compute"]))
        figures["floor_rnea"] = summarize_us(times["rnea"])
        figures["ratio_to_rnea_median"] = figures["median_us"] / figures["floor_rnea"]["median_us"]
        if "qp" in times:
            figures["floor_qp"] = summarize_us(times["qp"])
            figures["ratio_to_qp_median"] = figures["median_us"] / figures["floor_qp"]["median_us"]
            figures["parts_us"] = qp_step_parts(name, params, robot, states[:paced], references[:paced])
        # The same calls once per millisecond, idle in between: the compute a 1 kHz node sees.
        fresh = stepper(create_controller(name, robot, params), states, references)
        figures["paced_1khz"] = summarize_us(time_calls_paced(fresh, paced, warmup=WARMUP))
        results["controllers"][name] = figures
    return results


def rnea_floor(robot: RobotModel, states: list[JointState]) -> Callable[[int], object]:
    """A bare ``pin.rnea(model, data, q, q̇, 0)`` at state ``i``: the floor of every controller.

    The configurations (``robot.configuration``, pinocchio's form) and velocities are put in
    Python lists here, once, so that the timed call only indexes a list, as the controller's
    does (its states are a list of :class:`JointState`): indexing a numpy row inside the timed
    call added a view's creation, 3–10 % of an rnea, to the floor alone.
    """
    model, data = robot.model, robot.data
    q_rows = [robot.configuration(s.q).copy() for s in states]
    v_rows = [s.v for s in states]
    zero = np.zeros(robot.n)

    def rnea(i: int) -> object:
        return pin.rnea(model, data, q_rows[i], v_rows[i], zero)

    return rnea


def stepper(
    controller: Controller[Any], states: list[JointState], references: list[Any] | None = None
) -> Callable[[int], object]:
    """``controller.compute`` at state ``i`` on ``references[i]``; without references, on one held
    at the first state."""
    if references is not None:
        return lambda i: controller.compute(states[i], references[i])
    reference = controller.hold_reference(states[0])
    return lambda i: controller.compute(states[i], reference)


def controller_calls(
    controller: Controller[Any], states: list[JointState], references: list[Any] | None = None
) -> tuple[dict[str, Callable[[int], object]], Callable[[], None] | None]:
    """The calls timed for ``controller`` (``compute``; ``qp``, its bare warm solves, for the QP
    controllers) and what to run between the warm-up and the timed run (``None``: nothing).

    The warm-up leaves the QPs warm and the collision gradient filtered: a timed run from state 0
    then met slightly other problems than the ones recorded cold. So the controller is reset and
    its cold solve at state 0 taken untimed, as the replay took it at its set-up (timed, it had
    been the compute "max", ~500 µs, against a warm floor).
    """
    calls: dict[str, Callable[[int], object]] = {"compute": stepper(controller, states, references)}
    qp_replay = getattr(controller, "qp_replay", None)
    if not callable(qp_replay):
        return calls, None
    qs = np.array([s.q for s in states])
    vs = np.array([s.v for s in states])
    calls["qp"] = qp_replay(qs, vs, references)  # also cold-starts the controller again
    compute = calls["compute"]

    def restart() -> None:
        controller.reset()
        compute(0)

    return calls, restart


def qp_step_parts(
    name: str,
    params: Mapping[str, Any],
    robot: RobotModel,
    states: list[JointState],
    references: list[Any] | None = None,
) -> dict[str, float]:
    """Medians (µs) of the parts of a QP controller's step, back to back over ``states``.

    From the step itself (its ``info``): ``prepare`` (kinematics, tasks, barriers),
    ``qp_solve`` (every level's update and solve), ``step`` (the whole ``torque`` call) and
    ``fill_and_rest = step − prepare − qp_solve`` per step (the QP matrices, hqpid's null
    spaces, the torque ``M·q̈ + nle``, the ``info``); ``compute`` adds the state check and the
    saturation around the step. The parts of ``prepare`` are timed one by one, in its order,
    on a second instance of the controller, right after the first one's step at each state:
    ``kinematics``, ``task.<name>``, ``barrier.<name>`` (their sum leaves out the tasks' cost
    terms and the reference, ~4 µs).

    ``qp_floor_after_prepare``: in a second pass, the bare warm solves of the same problems (the
    floor's replay), each timed right after the second instance's kinematics, tasks and barriers
    at that state. Inside the step the solve took 1.29× its bare replay with the same iterations
    (on an AMD host); run after that work, the replay takes what the step's solve does:
    the step's other work leaves the CPU's caches and predictors colder for ProxSuite. The
    floor of the targets stays the bare replay.
    """
    clock = time.perf_counter_ns
    controller: Any = create_controller(name, robot, params)
    if references is None:
        references = [controller.hold_reference(states[0])] * len(states)
    second: Any = create_controller(name, robot, params)
    kin = second.kin
    updates = [(f"task.{t.name}", t.update) for t in second.tasks]
    updates += [(f"barrier.{b.name}", b.update) for b in second.barriers]
    in_step = {"prepare": "prepare_time_us", "qp_solve": "qp_solve_time_us", "step": "step_time_us"}
    order = ["compute", "step", "prepare", "kinematics", *(part for part, _ in updates), "qp_solve"]
    samples: dict[str, list[float]] = {part: [] for part in [*order, "fill_and_rest"]}
    replay = controller.qp_replay(
        np.array([s.q for s in states]), np.array([s.v for s in states]), references
    )
    for state, reference in zip(states, references, strict=True):
        t0 = clock()
        info = controller.compute(state, reference).info
        samples["compute"].append((clock() - t0) / 1e3)
        for part, key in in_step.items():
            samples[part].append(info[key])
        samples["fill_and_rest"].append(
            info["step_time_us"] - info["prepare_time_us"] - info["qp_solve_time_us"]
        )
        t0 = clock()
        kin.update(state.q, state.v)
        samples["kinematics"].append((clock() - t0) / 1e3)
        for part, update in updates:
            t0 = clock()
            update(kin)
            samples[part].append((clock() - t0) / 1e3)
    after_prepare = samples["qp_floor_after_prepare"] = []
    for k, state in enumerate(states):
        kin.update(state.q, state.v)
        for _, update in updates:
            update(kin)
        t0 = clock()
        replay(k)
        after_prepare.append((clock() - t0) / 1e3)
    return {part: float(np.median(values)) for part, values in samples.items()}
