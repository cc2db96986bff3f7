"""Parameters of the ``qpid`` and ``hqpid`` controllers (:mod:`.qpid`): the config dataclasses,
their parsing from a parameter mapping and the checks that need only the values and the robot model.

The controllers run once per :data:`~torque_ctrl_ros.core.robot.CONTROL_PERIOD` (1 ms, the Gen3's
torque loop; the simulator node refuses any other step), so there is no period parameter: the
``velocity_weight`` term, the barrier ``alpha`` bounds and the fallback damping are all for that
period, and checked with the command as late as the robot's ``command_delay``. The checks that
need the built tasks (weight conditioning, the rows a level leaves to the levels below, and
``velocity_weight``, whose damping depends on the posture tasks: :func:`check_velocity_weight`)
are the controller's (:class:`~.qpid.QPID`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..qp.constraints import MIN_ALPHA, check_barrier_alpha, check_filter_gain
from ..qp.tasks import TASK_TYPES
from ..robot import (
    CONTROL_PERIOD,
    DELAYED_DAMPING,
    RobotModel,
    damping_eigenvalue_bound,
    describe_delay,
    pd_loop_holds,
    pd_spectral_radius,
)
from ..validation import FloatArray, as_positive_float, as_vector, check_choice

_TASK_KEYS = {"type", "frame", "kp", "kd", "weight", "level"}
#: The parameters with no prefix besides ``tasks`` (scalars; all but ``slack_weight`` may be
#: per-joint vectors too).
_TOP_LEVEL_KEYS = {"acceleration_weight", "velocity_weight", "slack_weight", "fallback_damping"}
_SOLVER_KEYS = {"eps_abs", "max_iter"}
#: Loosest solver tolerance accepted: the residuals are in rad/s² and N·m, so a looser "solved"
#: answer is a wrong torque. In MuJoCo from home (shipped weights; raw steps of the tool reference
#: and joints driven to their position limits, 2000 steps each), against a 1e-9 solve of the same
#: states: at 1e-3 hqpid's torques were off by up to 3.8 N·m (on 1135 of 2000 steps by over
#: 0.1 N·m) and qpid's by up to 0.58; at 1e-5 hqpid's by up to 1.7 (83 steps over 0.1 in 8 runs);
#: at 1e-6 qpid's by at most 3e-4, hqpid's over 0.1 on 5 steps of one run (docs/controllers.md).
_MAX_EPS_ABS = 1e-6
#: Most solver iterations per attempt accepted: a failing level runs 2·max_iter of them, ~1.5–2 ms
#: at 50, so already 30–40 ms at this cap (beyond, proxsuite itself refuses values ≥ 2⁶³).
_MAX_ITER = 1000
#: Fewest solver iterations per attempt accepted. With the shipped settings, 1 to 5 made every step
#: fall back, warm ones too; 6 left cold solves (after a reset, or the retry of a failed warm
#: attempt) falling back at 1–4 % of 300 random states, 10 at none. Twice that, for harder problems.
_MIN_ITER = 20
#: Tightest solver tolerance accepted: the residuals cannot get below rounding, so a tighter one
#: makes every solve run out of iterations and every step fall back.
_MIN_EPS_ABS = 1e-14
#: Accepted range of ``slack_weight`` (the default is 1e6). The solver sees the slacks scaled by
#: ``σ = 1/√w_s`` (see :mod:`.qpid`), ``√w_s`` in its cost. With the range lifted, every step fell
#: back from ~1e15 on (the solver runs out of iterations) and below ~1e-307 (``σ²`` overflows the
#: finiteness check of the QP data), while 1e-300 to 1e-6 still solved: the lower bound is a
#: margin, the upper one keeps three decades from the failures.
_SLACK_WEIGHT_RANGE = (1e-6, 1e12)
#: Least ``slack_weight`` accepted per unit of the largest task weight. A slack is used where a
#: task's marginal cost ``2·w·|ẍ|`` exceeds ``w_s``; at 1e4 the barriers hold against task
#: accelerations up to ~5 000 (m/s², rad/s²), where at 1e3 a posture task pushed past the velocity
#: barrier (docs/controllers.md).
MIN_SLACK_PER_WEIGHT = 1e4
#: Largest weight accepted for a task, ``acceleration_weight`` or ``velocity_weight`` entry: the
#: QP data must stay finite (at 1e300 every step falls back), and far below that the level's
#: conditioning bound (:func:`max_weight_ratio`) applies anyway.
MAX_WEIGHT = 1e6


def max_weight_ratio(eps_abs: float) -> float:
    """Largest ratio accepted, in one level, between its largest Cartesian task weight and the
    smallest regularisation of a joint (``acceleration_weight + Δt²·velocity_weight`` plus the
    weight of the level's posture tasks on that joint), at solver tolerance ``eps_abs``.

    The level's Hessian is that ill-conditioned, and beyond the ratio the solver's absolute
    tolerance falls below its rounding: the solves stop at the iteration cap and fall back. From
    ``eps_abs`` 1e-7 on, the bound is twice as high: along raw steps of the tool reference that
    drive the velocity barrier, qpid and hqpid held at 2e6 there and fell back from 2.5e6 (at 1e-9
    from 1.5e6, and at 1e6 on 4 of 1500 control steps of one); at 1e7 they fell back on 11–83 % of
    the control steps of each of the four reference steps tried. With no regularisation at all, a
    lower hqpid level solves rounding noise (the MuJoCo runs behind both: docs/controllers.md,
    "Measurements behind the core's bounds and defaults").
    """
    return 2e6 if eps_abs >= 1e-7 else 1e6


@dataclass(frozen=True)
class TaskConfig:
    """One task: ``type`` in ``pose | position | orientation | posture``; ``frame`` for the
    Cartesian ones; ``kp`` (1/s²), ``kd`` (1/s, default ``2·√kp``) and ``weight`` scalars or
    per axis; ``level`` (0 = highest priority, hqpid only). ``weight`` multiplies the squared
    acceleration error (m/s², rad/s²) of each axis in the cost: the ratios between the weights of
    a level (and to ``acceleration_weight``, ``velocity_weight``) decide the optimum, their size
    how well the solver meets its absolute tolerance (bounds: :data:`MAX_WEIGHT`,
    :func:`max_weight_ratio`)."""

    name: str
    type: str
    frame: str | None = None
    kp: Any = 100.0
    kd: Any = None
    weight: Any = 1.0
    level: int = 0


@dataclass(frozen=True)
class BarrierConfig:
    """One barrier group: ``enabled``, gain ``alpha`` (1/s), ``soft`` (has a slack)."""

    enabled: bool = True
    alpha: float = 10.0
    soft: bool = True


@dataclass(frozen=True)
class CollisionConfig(BarrierConfig):
    """Self-collision barrier: ``d_safe`` (m), capsule ``model`` file, gradient ``filter`` gain,
    ``pairs``: how many of the closest capsule pairs get a row."""

    d_safe: float = 0.02
    model: str = "gen3_collision.yaml"
    filter: float = 0.2
    pairs: int = 2


@dataclass(frozen=True)
class FloorConfig(BarrierConfig):
    """Floor barrier: keep the lowest point of every capsule that moves up and down (capsule
    ``model`` file) ``d_safe`` (m) above the plane ``z = height`` (m, base frame); ``rows``: how
    many of the lowest capsules get a row (with one, two capsules near the plane took turns in it
    and sank up to 20 mm past ``d_safe``; with two, a third fell unchecked and came 2.6 mm inside
    it: docs/controllers.md, "The floor barrier")."""

    height: float = 0.0
    d_safe: float = 0.02
    model: str = "gen3_collision.yaml"
    rows: int = 3


@dataclass(frozen=True)
class SingularityConfig(BarrierConfig):
    """Singularity barrier on ``w = √det(J·Jᵀ)`` of ``frame``: keep ``w ≥ w_min`` (m³: three
    rows of ``J`` are in m, three have no unit)."""

    w_min: float = 0.01
    frame: str = "end_effector_link"


#: The barrier groups by parameter prefix, in the order their rows are stacked.
BARRIER_GROUPS: dict[str, type[BarrierConfig]] = {
    "joint_position_limit": BarrierConfig,
    "joint_velocity_limit": BarrierConfig,
    "self_collision": CollisionConfig,
    "floor": FloorConfig,
    "singularity": SingularityConfig,
}
#: The one first-order barrier group (``ḣ = −α·h``); the others are second order.
_FIRST_ORDER_GROUP = "joint_velocity_limit"
#: Largest ``α·(command_delay − Δt)`` accepted for the joint velocity barrier. Its loop stays stable
#: up to :func:`~torque_ctrl_ros.core.robot.damping_eigenvalue_bound`, but a late command lets the
#: speeds overshoot their limits well before that: MuJoCo, qpid / hqpid, four raw tool steps that
#: bind the barrier, largest speed over its limit at 5 ms 1.018 (α 50, the default), 1.012 / 1.013
#: (75), 1.017 / 1.057 (100), 1.10 / 1.45 (150), 1.41 / 2.43 (347, the stability bound); at 3 ms
#: 1.005 (100), 1.019 / 1.086 (200); at 2 ms 1.004 / 1.018 (300), 1.14 / 1.70 (999); at 1 ms 1.000
#: up to 999 (docs/controllers.md, "Joint velocity barrier's α with the command late").
_VELOCITY_ALPHA_LATENESS = 0.3
#: Names no task may take: the prefixes and keys of the other parameters, which a task's
#: ``<task>.<key>`` parameters would be read as (or read in place of).
RESERVED_TASK_NAMES = frozenset({"tasks", "solver", *BARRIER_GROUPS, *_TOP_LEVEL_KEYS})


@dataclass(frozen=True)
class QPIDConfig:
    """Everything a :class:`~.qpid.QPID` / :class:`~.qpid.HQPID` needs (see :meth:`from_params`
    for the keys).

    Attributes:
        tasks: the tasks, in declaration order.
        acceleration_weight: ``W2`` diagonal (per joint, on ``q̈²`` in (rad/s²)²), regularises ``q̈``.
        velocity_weight: ``W3`` diagonal (per joint, on the velocity one
            :data:`~torque_ctrl_ros.core.robot.CONTROL_PERIOD` ahead squared, (rad/s)²), damps it;
            held to a stable loop with the command ``command_delay`` late
            (:func:`check_velocity_weight`: with the shipped weights, below ~576 at 5 ms).
        slack_weight: ``w_s``, linear cost of each barrier slack (per unit of the row's slack:
            rad/s², m/s², m³/s²); large, so that a slack is used only where the rows cannot hold.
        fallback_damping: ``K_d`` (N·m·s/rad, each > 0) of the fallback torque ``g − K_d·q̇``, held
            for one control period; by default :data:`~..robot.DELAYED_DAMPING`, stable with the command
            up to 5 ms late. A level that fails is the slow path (up to ~2 ms of iterations), so
            fallbacks and late commands come together, and with them the safe brakes' larger
            :data:`~..robot.DEFAULT_DAMPING` rings the wrist (docs/hardware.md, "Damping and the
            delay, measured"). A scalar above ~0.28 is refused with ``command_delay`` 1 ms (the
            simulator's), above ~0.10 at 5 ms (4 periods late).
        eps_abs, max_iter: solver tolerance and cap on the outer iterations of one solve
            attempt; a failed warm attempt is retried cold once (see :mod:`..qp.problem`), so
            an infeasible level is reported after at most ``2·max_iter`` outer iterations
            (~1.5–2 ms at 50 typically, up to ~14 ms measured: no time bound).
    """

    tasks: tuple[TaskConfig, ...]
    acceleration_weight: FloatArray = field(default_factory=lambda: np.array([1e-4]))
    velocity_weight: FloatArray = field(default_factory=lambda: np.array([0.0]))
    slack_weight: float = 1.0e6
    joint_position_limit: BarrierConfig = BarrierConfig(alpha=10.0)
    joint_velocity_limit: BarrierConfig = BarrierConfig(alpha=50.0)
    self_collision: CollisionConfig = CollisionConfig()
    floor: FloorConfig = FloorConfig()
    singularity: SingularityConfig = SingularityConfig()
    fallback_damping: FloatArray = field(default_factory=lambda: np.array(DELAYED_DAMPING))
    eps_abs: float = 1e-9
    max_iter: int = 50

    @classmethod
    def from_params(
        cls, robot: RobotModel, params: Mapping[str, Any], *, section: str = "qpid"
    ) -> QPIDConfig:
        """Validated config from a flat (or nested) parameter mapping.

        Keys (nested mappings are flattened with ``.``)::

            tasks: [tool, posture]              # names, in order
            tool.type: pose                     # pose | position | orientation | posture
            tool.frame: end_effector_link
            tool.kp: 100.0                      # scalar or per axis (1/s²)
            tool.kd: 20.0                       # optional (1/s), default 2·√kp
            tool.weight: [1, 1, 1, 0.1, 0.1, 0.1]
            tool.level: 0                       # hqpid priority, 0 = highest
            acceleration_weight: 1.0e-4         # W2, scalar or per joint
            velocity_weight: 0.0                # W3, scalar or per joint
            slack_weight: 1.0e6
            fallback_damping: [0.4, 1.5, 0.1, 0.8, 0.1, 0.1, 0.08]  # N·m·s/rad per joint
            joint_position_limit.{enabled, alpha, soft}
            joint_velocity_limit.{enabled, alpha, soft}
            self_collision.{enabled, alpha, soft, d_safe, model, filter, pairs}
            floor.{enabled, alpha, soft, height, d_safe, model, rows}
            singularity.{enabled, alpha, soft, w_min, frame}
            solver.{eps_abs, max_iter}

        Raises:
            ConfigError: unknown keys, missing tasks, bad values (the message lists the valid
                names). Frame names are looked up when :class:`~.qpid.QPID` builds its tasks and
                barriers, which refuses an unknown one the same way.
        """
        flat = _flatten(params)
        names = flat.pop("tasks", None)
        if names is None:
            raise ConfigError(f"{section}.tasks: required, a list of task names")
        if isinstance(names, str) or not isinstance(names, Sequence) or not names:
            raise ConfigError(f"{section}.tasks: expected a non-empty list of task names, got {names!r}")
        names = [str(n) for n in names]
        if len(set(names)) != len(names):
            raise ConfigError(f"{section}.tasks: duplicate names in {names}")
        tasks = []
        for name in names:
            _check_task_name(section, name)
            sub = _pop_prefixed(flat, name)
            unknown = sorted(set(sub) - _TASK_KEYS)
            if unknown:
                raise ConfigError(
                    f"{section}.{name}: unknown key(s) {unknown}; valid are {sorted(_TASK_KEYS)}"
                )
            if "type" not in sub:
                raise ConfigError(
                    f"{section}.{name}.type: required for task {name!r} of {section}.tasks, one of "
                    f"{sorted(TASK_TYPES)}"
                )
            tasks.append(TaskConfig(name=name, **sub))
        kwargs: dict[str, Any] = {}
        for group, klass in BARRIER_GROUPS.items():
            sub = _pop_prefixed(flat, group)
            valid = set(klass.__dataclass_fields__)
            unknown = sorted(set(sub) - valid)
            if unknown:
                raise ConfigError(f"{section}.{group}: unknown key(s) {unknown}; valid are {sorted(valid)}")
            default = getattr(cls, group)
            kwargs[group] = klass(**{**default.__dict__, **sub})
        solver = _pop_prefixed(flat, "solver")
        unknown = sorted(set(solver) - _SOLVER_KEYS)
        if unknown:
            raise ConfigError(f"{section}.solver: unknown key(s) {unknown}; valid are {sorted(_SOLVER_KEYS)}")
        unknown = sorted(set(flat) - _TOP_LEVEL_KEYS)
        if unknown:
            valid_keys = sorted(
                _TOP_LEVEL_KEYS | {"tasks", "solver.*", "<task>.*", *(g + ".*" for g in BARRIER_GROUPS)}
            )
            raise ConfigError(f"{section}: unknown parameter(s) {unknown}; valid are {valid_keys}")
        kwargs.update(flat)
        kwargs.update(solver)
        return cls.create(robot, tuple(tasks), section=section, **kwargs)

    def validated(self, robot: RobotModel, section: str = "qpid") -> QPIDConfig:
        """This config through :meth:`create`. A config built directly is unchecked, and its
        per-joint defaults are one-element arrays: used as they are, numpy broadcasting would
        fill the whole ``n × n`` regularisation with the one value."""
        values = {f.name: _scalar_if_one(getattr(self, f.name)) for f in fields(self) if f.name != "tasks"}
        return type(self).create(robot, self.tasks, section=section, **values)

    @classmethod
    def create(
        cls, robot: RobotModel, tasks: Sequence[TaskConfig], *, section: str = "qpid", **kw: Any
    ) -> QPIDConfig:
        """Validated config from typed values (scalars broadcast to every joint).

        Besides each value, it checks the barrier ``alpha`` values and the fallback damping for one
        control period with the command as late as ``robot``'s
        :attr:`~torque_ctrl_ros.core.robot.RobotModel.delay_periods`.
        """
        n = robot.n
        if not tasks:
            raise ConfigError(f"{section}.tasks: expected at least one task")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            raise ConfigError(f"{section}.tasks: duplicate names in {names}")
        for name in names:
            _check_task_name(section, name)
        base = cls(tuple(tasks))
        w2 = as_vector(
            f"{section}.acceleration_weight",
            kw.pop("acceleration_weight", 1e-4),
            n,
            broadcast_scalar=True,
            min_value=0.0,
        )
        w3 = as_vector(
            f"{section}.velocity_weight",
            kw.pop("velocity_weight", 0.0),
            n,
            broadcast_scalar=True,
            min_value=0.0,
        )
        for key, weights in (("acceleration_weight", w2), ("velocity_weight", w3)):
            if weights.max() > MAX_WEIGHT:
                raise ConfigError(f"{section}.{key}: expected at most {MAX_WEIGHT:g}, got {weights.max():g}")
        ws = as_positive_float(f"{section}.slack_weight", kw.pop("slack_weight", base.slack_weight))
        if not _SLACK_WEIGHT_RANGE[0] <= ws <= _SLACK_WEIGHT_RANGE[1]:
            raise ConfigError(
                f"{section}.slack_weight: expected {_SLACK_WEIGHT_RANGE[0]:g} to {_SLACK_WEIGHT_RANGE[1]:g}, "
                f"got {ws!r}"
            )
        # Each > 0: at 0 a joint's fallback is gravity compensation alone, which does not brake it.
        damping = as_vector(
            f"{section}.fallback_damping",
            kw.pop("fallback_damping", base.fallback_damping),
            n,
            broadcast_scalar=True,
            strictly_positive=True,
        )
        eps_abs, max_iter = _check_solver(
            section, kw.pop("eps_abs", base.eps_abs), kw.pop("max_iter", base.max_iter)
        )
        barriers: dict[str, Any] = {}
        for group, klass in BARRIER_GROUPS.items():
            cfg = kw.pop(group, getattr(base, group))
            if not isinstance(cfg, klass):
                raise ConfigError(
                    f"{section}.{group}: expected a {klass.__name__}, got {type(cfg).__name__} "
                    f"(from a parameter mapping, use from_params: {group}.<key>)"
                )
            barriers[group] = _check_barrier(f"{section}.{group}", cfg)
        if kw:
            valid = sorted(_TOP_LEVEL_KEYS | _SOLVER_KEYS | set(BARRIER_GROUPS))
            raise ConfigError(f"{section}: unknown parameter(s) {sorted(kw)}; valid are {valid}")
        _check_barrier_alphas(section, barriers, robot)
        _check_tasks(section, tasks)
        robot.check_damping(f"{section}.fallback_damping", damping)
        return cls(
            tasks=tuple(tasks),
            acceleration_weight=w2,
            velocity_weight=w3,
            slack_weight=ws,
            fallback_damping=damping,
            eps_abs=eps_abs,
            max_iter=max_iter,
            **barriers,
        )


def _check_task_name(section: str, name: str) -> None:
    """A task name usable as a parameter prefix: not empty, no dots, none of
    :data:`RESERVED_TASK_NAMES`."""
    if "." in name or not name:
        raise ConfigError(f"{section}.tasks: invalid task name {name!r} (no dots, not empty)")
    if name in RESERVED_TASK_NAMES:
        raise ConfigError(
            f"{section}.tasks: task name {name!r} is reserved for another parameter; the reserved "
            f"names are {sorted(RESERVED_TASK_NAMES)}"
        )


def _pop_prefixed(flat: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Remove the keys ``<prefix>.<rest>`` from ``flat``; return them as ``{rest: value}``."""
    start = len(prefix) + 1
    return {k[start:]: flat.pop(k) for k in list(flat) if k.startswith(prefix + ".")}


def _check_solver(section: str, eps_abs: Any, max_iter: Any) -> tuple[float, int]:
    """``solver.eps_abs`` (from :data:`_MIN_EPS_ABS` to :data:`_MAX_EPS_ABS`) and ``solver.max_iter``
    (an integer from :data:`_MIN_ITER` to :data:`_MAX_ITER`)."""
    eps = as_positive_float(f"{section}.solver.eps_abs", eps_abs)
    if eps < _MIN_EPS_ABS:
        raise ConfigError(
            f"{section}.solver.eps_abs: expected at least {_MIN_EPS_ABS:g} (the residuals cannot get below "
            f"rounding: every solve would run out of iterations), got {eps!r}"
        )
    if eps > _MAX_EPS_ABS:
        raise ConfigError(
            f"{section}.solver.eps_abs: expected at most {_MAX_EPS_ABS:g} (the residuals are in "
            f"rad/s² and N·m: a looser 'solved' answer is a wrong torque), got {eps!r}"
        )
    is_int = isinstance(max_iter, int | np.integer) and not isinstance(max_iter, bool)
    if not is_int or not _MIN_ITER <= max_iter <= _MAX_ITER:
        raise ConfigError(
            f"{section}.solver.max_iter: expected an integer in [{_MIN_ITER}, {_MAX_ITER}] (fewer stop "
            f"solvable steps short, and they fall back; a failing solve runs 2·max_iter iterations, "
            f"~1.5–2 ms at 50), got {max_iter!r}"
        )
    return eps, int(max_iter)


def _check_barrier_alphas(section: str, barriers: Mapping[str, BarrierConfig], robot: RobotModel) -> None:
    """Each enabled group's ``alpha`` against its closed loop, stepped once per ``Δt =``
    :data:`~torque_ctrl_ros.core.robot.CONTROL_PERIOD` with the torque held and the command
    ``d`` ≥ 1 periods late (``robot``'s :attr:`~torque_ctrl_ros.core.robot.RobotModel.delay_periods`
    of its ``command_delay`` (s); one in the simulator, where a command answers the state of the
    period before):

    * the joint velocity barrier is first order, ``ḣ = −α·h``: ``h⁺ = h − α·Δt·h₋d`` decays only
      while ``α·Δt <`` :func:`~torque_ctrl_ros.core.robot.damping_eigenvalue_bound` ``(d)`` (1 one
      period late, 0.347 four periods late: α below 1000 and 347 1/s); and, with the command
      later than one period, ``α·(command_delay − Δt) ≤`` :data:`_VELOCITY_ALPHA_LATENESS` (0.3:
      α up to 300 at 2 ms, 75 at 5 ms), or the speeds overshoot their limits;
    * the others are second order, ``ḧ = −2α·ḣ − α²·h``, the PD law ``kp = α², kd = 2α`` of
      :func:`~torque_ctrl_ros.core.robot.pd_spectral_radius`: stable only below α = 400 1/s one
      period late (α·Δt 0.4), ~141 four periods late. Without delay their step needs
      ``α·Δt ≤ 1/2`` for both eigenvalues to stay ≥ 0 (beyond, ``h`` alternates in sign and can
      cross 0); the delayed bound is stricter.
    """
    delay, command_delay = robot.delay_periods, robot.command_delay
    for group, cfg in barriers.items():
        if not cfg.enabled:
            continue
        name = f"{section}.{group}.alpha"
        when = f"at {1e-3 / CONTROL_PERIOD:g} kHz with the command {describe_delay(delay)}"
        if group == _FIRST_ORDER_GROUP:
            bound = damping_eigenvalue_bound(delay)
            if not cfg.alpha * CONTROL_PERIOD < bound:
                raise ConfigError(
                    f"{name}: alpha·dt {cfg.alpha * CONTROL_PERIOD:g} (alpha {cfg.alpha:g} 1/s) must stay "
                    f"below {bound:.3g} {when}, or the velocity barrier's loop rings and grows"
                )
            late = command_delay - CONTROL_PERIOD
            if cfg.alpha * late > _VELOCITY_ALPHA_LATENESS * (1.0 + 1e-9):
                raise ConfigError(
                    f"{name}: alpha {cfg.alpha:g} 1/s with the command {command_delay * 1e3:g} ms late "
                    f"(command_delay): alpha·(command_delay − dt) {cfg.alpha * late:.3g} must stay at most "
                    f"{_VELOCITY_ALPHA_LATENESS:g} (alpha at most {_VELOCITY_ALPHA_LATENESS / late:.4g}), "
                    "or the joint speeds overshoot their limits (at 5 ms by 6 % at alpha 100, up to 2.4 "
                    "times at 347)"
                )
            continue
        # α·Δt >= 1 is far past every delay's bound (0.4 one period late), and α² overflows
        # from ~1e154.
        radius = (
            pd_spectral_radius(cfg.alpha**2, 2.0 * cfg.alpha, CONTROL_PERIOD, delay)
            if cfg.alpha * CONTROL_PERIOD < 1.0
            else math.inf
        )
        if not radius < 1.0:
            grows = f"grows by {radius:.3g} per period" if math.isfinite(radius) else "grows"
            raise ConfigError(
                f"{name}: alpha {cfg.alpha:g} 1/s is unstable {when}: the barrier's ḧ = −2α·ḣ − α²·h "
                f"(a PD law kp = α², kd = 2α) {grows}; alpha must stay below "
                f"{_largest_stable_alpha(delay):.4g}"
            )


def _largest_stable_alpha(delay: int) -> float:
    """The ``α`` (1/s) below which a second-order barrier's loop is stable ``delay`` periods late
    (:func:`_check_barrier_alphas`), by bisection: the spectral radius grows with ``α``. For
    messages only (~1 ms)."""
    stable, unstable = 0.0, 1.0 / CONTROL_PERIOD
    for _ in range(40):
        alpha = 0.5 * (stable + unstable)
        if pd_spectral_radius(alpha**2, 2.0 * alpha, CONTROL_PERIOD, delay) < 1.0:
            stable = alpha
        else:
            unstable = alpha
    return stable


def check_velocity_weight(
    section: str,
    velocity_weight: FloatArray,
    acceleration_weight: FloatArray,
    postures: Sequence[tuple[FloatArray, FloatArray, FloatArray]],
    joint_names: Sequence[str],
    delay: int,
) -> None:
    """Refuse a ``velocity_weight`` whose damping makes a joint's loop unstable at 1 kHz with the
    command ``delay`` periods late (the robot's ``command_delay``).

    ``‖Δt·q̈ + q̇‖²_{W3}`` is a damping the QP applies through its own ``q̈``. Where no Cartesian
    task weights a direction (the self-motion), only the regularisation and the posture tasks
    ``i`` (per joint ``w_i``, ``kp_i``, ``kd_i``: ``postures``) do, and the optimum of a joint is::

        q̈ = (Σ w_i·(kp_i·e − kd_i·q̇) − Δt·w3·q̇) / (Σ w_i + w2 + Δt²·w3)

    the PD law ``kp = Σ w_i·kp_i / den``, ``kd = (Σ w_i·kd_i + Δt·w3) / den``, held to the bounds
    of :func:`~torque_ctrl_ros.core.robot.check_pd_gains`
    (:func:`~torque_ctrl_ros.core.robot.pd_loop_holds`). Without posture
    tasks ``Δt·kd = Δt²·w3 / (w2 + Δt²·w3)`` must stay below
    :func:`~torque_ctrl_ros.core.robot.damping_eigenvalue_bound` ``(delay)``: with ``w2 = 0`` it
    is 1, a marginal loop even one period late. A direction a Cartesian task also weights has that
    weight in ``den`` too, so the joint's own bound is the strictest. ``postures`` are those of
    the level that decides the self-motion: qpid's one level, hqpid's last (a level hands what it
    leaves free down to the next, which solves it again).

    With the shipped weights (posture 0.001, kp 10; ``acceleration_weight`` 1e-4) the bound is
    ~576 at 5 ms late; in MuJoCo (``command_delay`` 5 ms, holding home) 560 settled, 580 rang at
    0.06 rad/s and 700 at 0.27 rad/s. At 1 ms late every weight up to :data:`MAX_WEIGHT` passes
    there.

    Args:
        section: the controller's parameter prefix (``qpid``, ``hqpid``).
        velocity_weight, acceleration_weight: ``W3``, ``W2`` per joint (validated).
        postures: ``(weight, kp, kd)`` of each posture task, per joint.
        joint_names: for the message.
        delay: periods of delay (:attr:`~torque_ctrl_ros.core.robot.RobotModel.delay_periods`).

    Raises:
        ConfigError: naming the parameter, the joint and the largest value that holds there.
    """
    for j in np.flatnonzero(velocity_weight > 0.0).tolist():
        posture = [(float(w[j]), float(kp[j]), float(kd[j])) for w, kp, kd in postures]
        w3, w2 = float(velocity_weight[j]), float(acceleration_weight[j])
        kp_loop, kd_loop = _self_motion_gains(w3, w2, posture)
        if pd_loop_holds(kp_loop, kd_loop, delay):
            continue
        largest = _largest_stable_velocity_weight(w2, posture, delay)
        allowed = (
            f"must stay below {largest:.4g}"
            if largest > 0.0
            else "must be 0 (with no acceleration_weight or posture weight there, any is a deadbeat damping)"
        )
        joint = joint_names[j]
        raise ConfigError(
            f"{section}.velocity_weight: {w3:g} on {joint} is unstable at "
            f"{1e-3 / CONTROL_PERIOD:g} kHz with the command {describe_delay(delay)}: the term "
            f"‖Δt·q̈ + q̇‖² damps the joint's self-motion, with posture weight "
            f"{sum(w for w, _, _ in posture):g} and acceleration_weight {w2:g} a loop of kp "
            f"{kp_loop:.3g} 1/s², kd {kd_loop:.3g} 1/s whose velocity rings and grows; at this "
            f"command_delay velocity_weight on {joint} {allowed}"
        )


def _self_motion_gains(
    w3: float, w2: float, posture: Sequence[tuple[float, float, float]]
) -> tuple[float, float]:
    """One joint's PD gains ``(kp, kd)`` (1/s², 1/s) in its self-motion
    (:func:`check_velocity_weight`), from its ``velocity_weight``, ``acceleration_weight`` and
    posture tasks' ``(weight, kp, kd)``."""
    den = sum(w for w, _, _ in posture) + w2 + CONTROL_PERIOD**2 * w3
    kp = sum(w * p for w, p, _ in posture) / den
    kd = (sum(w * d for w, _, d in posture) + CONTROL_PERIOD * w3) / den
    return kp, kd


def _largest_stable_velocity_weight(
    w2: float, posture: Sequence[tuple[float, float, float]], delay: int
) -> float:
    """The ``velocity_weight`` below which one joint's loop (:func:`check_velocity_weight`) holds,
    by bisection up to :data:`MAX_WEIGHT` (the damping grows with it). For messages only."""
    stable, unstable = 0.0, MAX_WEIGHT
    for _ in range(60):
        w3 = 0.5 * (stable + unstable)
        if pd_loop_holds(*_self_motion_gains(w3, w2, posture), delay):
            stable = w3
        else:
            unstable = w3
    return stable


def _check_tasks(section: str, tasks: Sequence[TaskConfig]) -> None:
    """Each task's type and frame (a frame for every task but posture), and levels ``0, 1, …``."""
    for t in tasks:
        check_choice(f"{section}.{t.name}.type", t.type, sorted(TASK_TYPES))
        if t.type == "posture" and t.frame is not None:
            raise ConfigError(f"{section}.{t.name}.frame: a posture task has no frame")
        if t.type != "posture" and t.frame is None:
            raise ConfigError(f"{section}.{t.name}.frame: required for a {t.type} task")
    for t in tasks:
        if isinstance(t.level, bool) or not isinstance(t.level, int | np.integer) or t.level < 0:
            raise ConfigError(f"{section}.{t.name}.level: expected an integer >= 0, got {t.level!r}")
    levels = sorted({int(t.level) for t in tasks})
    if levels != list(range(len(levels))):
        given = ", ".join(f"{t.name}.level {t.level}" for t in tasks)
        raise ConfigError(f"{section}: task levels must be consecutive from 0, got {levels} ({given})")


def _scalar_if_one(value: Any) -> Any:
    """A one-element array as its number (the dataclass defaults), to be broadcast to every joint;
    anything else (numbers, barrier configs) as it is."""
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.reshape(-1)[0].item()
    return value


def _check_barrier(field_name: str, cfg: BarrierConfig) -> BarrierConfig:
    """One group's own values (types, signs, ranges), returned with its numbers as floats (a
    parameter may give ``10`` or the string ``"10.0"``, which the arithmetic after would refuse);
    ``alpha`` against the period and delay is :func:`_check_barrier_alphas`."""
    for key in ("enabled", "soft"):
        if not isinstance(getattr(cfg, key), bool):
            raise ConfigError(f"{field_name}.{key}: expected true or false, got {getattr(cfg, key)!r}")
    # The lower bound (MIN_ALPHA), as the upper one (_check_barrier_alphas), only for a group that
    # is on: one off builds no barrier and acts on nothing.
    check_gain = check_barrier_alpha if cfg.enabled else as_positive_float
    numbers: dict[str, Any] = {"alpha": check_gain(f"{field_name}.alpha", cfg.alpha)}
    if isinstance(cfg, CollisionConfig | FloorConfig):  # the capsule barriers
        numbers["d_safe"] = as_positive_float(f"{field_name}.d_safe", cfg.d_safe, allow_zero=True)
        if not isinstance(cfg.model, str) or not cfg.model:
            raise ConfigError(f"{field_name}.model: expected a file name, got {cfg.model!r}")
    if isinstance(cfg, CollisionConfig):
        numbers["filter"] = check_filter_gain(f"{field_name}.filter", cfg.filter)
    if isinstance(cfg, FloorConfig):
        if isinstance(cfg.height, Sequence) and not isinstance(cfg.height, str):
            raise ConfigError(f"{field_name}.height: expected one number (m), got {cfg.height!r}")
        # Signed: a pedestal stands the base above the floor (height < 0).
        numbers["height"] = float(as_vector(f"{field_name}.height", cfg.height, 1, broadcast_scalar=True)[0])
    if isinstance(cfg, SingularityConfig):
        numbers["w_min"] = as_positive_float(f"{field_name}.w_min", cfg.w_min)
        if not isinstance(cfg.frame, str) or not cfg.frame:
            raise ConfigError(f"{field_name}.frame: expected a frame name, got {cfg.frame!r}")
    return replace(cfg, **numbers)


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``params`` with nested mappings flattened to dotted keys (``{"a": {"b": 1}}`` → ``{"a.b": 1}``)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


__all__ = [
    "BARRIER_GROUPS",
    "MAX_WEIGHT",
    "MIN_ALPHA",
    "MIN_SLACK_PER_WEIGHT",
    "RESERVED_TASK_NAMES",
    "BarrierConfig",
    "CollisionConfig",
    "FloorConfig",
    "QPIDConfig",
    "SingularityConfig",
    "TaskConfig",
    "check_velocity_weight",
    "max_weight_ratio",
]
