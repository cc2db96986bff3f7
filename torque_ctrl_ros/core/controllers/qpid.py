"""QP inverse dynamics with control-barrier-function safety: ``qpid`` and ``hqpid``.

Level 0 (``qpid``: the only level) solves over ``z = [q̈ (n); τ (n); s (n_s)]``, one slack
per row of every soft barrier group (a joint's two limit rows share one)::

    min  Σ_i ‖ẍᵈ_i − J_i·q̈ − J̇_i·q̇‖²_{W1,i} + ‖q̈‖²_{W2} + ‖Δt·q̈ + q̇‖²_{W3} + w_s·1ᵀs
    s.t. M(q)·q̈ + nle(q, q̇) = τ                      ([M −I 0]·z = −nle)
         C_b·q̈ + E·s ≥ l_b                          (barriers, see qp.constraints)
         −τ_max ≤ τ ≤ τ_max,  0 ≤ s

``Δt`` is :data:`~torque_ctrl_ros.core.robot.CONTROL_PERIOD` (1 ms), the period every
controller runs at (the parameters: :mod:`.qpid_config`). In QP standard form
``½·zᵀ·H·z + gᵀ·z`` the ``q̈`` block of ``H`` is ``2·Σ J_iᵀ·W1_i·J_i + 2·W2 + 2·Δt²·W3`` and
the ``q̈`` part of ``g`` is ``−2·Σ J_iᵀ·W1_i·(ẍᵈ_i − J̇_i·q̇) + 2·Δt·W3·q̇``; ``g_s = w_s``
(scaled: see below). Rows do not share slacks across joints: one slack shared by a group, paid
once, would loosen every row of the group by what its worst row needs. ``τ`` stays a variable
with plain bounds: substituting ``τ = M·q̈ + nle`` would halve the variables, but the
torque-limit rows ``M·q̈`` make the solver need many more iterations (docs/performance.md,
"Measured and not adopted").

The solver sees the slacks scaled: its variables are ``ŝ = s/σ`` with ``σ = 1/√w_s``, so the
slack columns carry ``σ`` in the barrier rows and ``w_s·σ = √w_s`` in ``g`` instead of 1 and
``w_s`` (the same problem; ``s = σ·ŝ`` is read back). Unscaled, the cost of 1e6 puts terms of
that size into the dual residual, whose rounding then sits at the 1e-9 tolerance, and solves
that have converged keep iterating; ``σ = 1/w_s`` over-corrects where the slacks are in use
(figures: docs/performance.md, "Scaled slack variables").

Level 0's cost also damps the self-motion its tasks leave, ``w·‖Z₁ᵀ·(q̈ + k·q̇)‖²`` with ``Z₁``
a basis of their null space (:data:`SELF_MOTION_DAMPING`; nothing where they weight every DoF,
as with a posture task; fading out below the singularity barrier's ``w_min``, where the barrier
needs that motion: :data:`SELF_MOTION_RECOVERY_BAND`). ``qpid`` puts every task in that one QP
(their ``level`` is ignored). ``hqpid`` puts the tasks with ``level == 0`` there, then solves each
level ``k > 0`` over what the levels above left free: ``q̈ = q̈*_{k−1} + Z_k·u``, where the
columns of ``Z_k`` (n × r_k) are an orthonormal basis of the null space of the stacked
Jacobian rows with weight > 0 of every
task above (``r_k = n −`` those rows, from a QR factorisation; a row with weight 0 has no
cost, so it freezes nothing: a pose task weighted ``[1, 1, 1, 0, 0, 0]`` freezes what a
position task does). Level ``k`` minimises its tasks' cost (plus the regularisation) over
``u`` subject to every barrier, with the slack level 0 used kept, and the torque limits
``|M·q̈ + nle| ≤ τ_max``; the weighted task accelerations of the levels above cannot change
(``J_j[w_j > 0]·Z_k = 0``) and ``u = 0`` is always feasible. A level with ``r_k = 0`` (the
tasks above weight every DoF) is refused: its tasks could never act. These QPs are small
(``r_k`` variables, no equality rows): keeping ``[q̈; τ; s]`` on every level and freezing the
tasks above with equality rows instead makes degenerate problems that need hundreds of
iterations. The torque sent is ``τ = M·q̈ + nle`` for the final ``q̈``.

Each level owns one :class:`~torque_ctrl_ros.core.qp.problem.DenseQP`, initialised once
and then updated in place and warm-started.

Safe failure: if the level-0 solve fails (infeasible, iteration cap, non-finite), the
torque is the fallback ``g(q) − K_d·q̇`` and ``info["fallback"] = 1``. With barrier groups
configured hard (``soft: false``) the step is first solved again with every group soft (a second
controller, built only then; ``info["soft_retry"] = 1``, its own ``info`` otherwise): the
fallback holds no barrier, and hard rows fail exactly where they matter. In MuJoCo, posture
targets past three joint limits at kp 400, α 300: hard rows fell back 96 times, the arm 9.5 mrad
into a limit stop at 2.9 times a speed limit; soft ones held 3.7 mrad at 1.0 times. A lower level whose
solve fails with a finite iterate ``u`` (in practice: it stops at the iteration cap) is not
dropped: ``u = 0`` meets
every row, so ``s·u`` with the largest ``s ≤ 1`` that meets every row, and no larger than the
minimiser of the level's cost along ``u``, keeps its rows within the room of where the level
above left them and the tasks above exact, and costs no more than ``u = 0`` (convexity);
``info["scaled_level"]`` names it (the first such level). Solves stop short there where rows
level 0 holds nearly opposite leave a wedge as wide as the room (the solver settings measured
against it: docs/performance.md, "The QP solver"). If a lower level's ``u`` is not finite, or
its cost does not decrease along ``u`` (no ``s > 0`` to take), the solution of the levels above
it is used (it satisfies every hard constraint) and
``info["failed_level"]`` names the level that failed.

Diagnostics (all floats). Every step's ``info``: ``qp_status`` (:class:`SolveStatus` of
the first level whose solve did not succeed, scaled back or failed, else 0),
``qp_iterations`` (sum over levels), ``qp_primal_residual``, ``qp_dual_residual`` (max over
levels), ``qp_solve_time_us`` (sum: update + solve),
``prepare_time_us`` (kinematics, tasks, barriers: :meth:`~_QPController.prepare`), ``step_time_us``,
``fallback`` (0/1), ``soft_retry`` (0/1: the step was solved with every barrier soft),
``failed_level`` (−1 if none), ``scaled_level`` (−1 if none; counted in ``levels_solved``),
``levels_solved``. On demand,
:meth:`~_QPController.diagnostics` for the last step: ``slack_total``, ``slack.<group>`` (the sum of
the group's row slacks),
``active_constraints``, ``active.<group>`` (rows at their bound), ``margin.<group>``
(barrier value ``h``: rad, rad/s, m, m³), ``d_min`` (m), ``floor_clearance`` (m: the lowest
moving capsule above the floor barrier's plane), ``manipulability`` (m³),
``error.<task>`` (norm of the task error). Those cost ~12 µs a step (a tenth of qpid's
step) and a node publishes them a few times per second, so they are not computed at 1 kHz.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ...paths import find_data_file
from ..errors import ConfigError, TargetError
from ..qp.collision import CollisionSpec, FloorModel, SelfCollisionModel
from ..qp.constraints import (
    Barrier,
    FloorBarrier,
    JointPositionBarrier,
    JointVelocityBarrier,
    SelfCollisionBarrier,
    SingularityBarrier,
)
from ..qp.problem import DenseQP, ProblemData, Solution, SolveStatus, WarmReplay, WarmReplays, snapshot
from ..qp.tasks import TASK_TYPES, KinematicsState, Task
from ..robot import CONTROL_PERIOD, RobotModel, sample_configurations
from ..types import JointState
from ..validation import FloatArray
from .base import Controller
from .qpid_config import (
    BARRIER_GROUPS,
    MAX_WEIGHT,
    MIN_SLACK_PER_WEIGHT,
    QPIDConfig,
    check_velocity_weight,
    max_weight_ratio,
)

#: A controller reference: task name → target (see each task class for accepted types). A task
#: reads a target object once, when first given it: pass a new object to change a target, not
#: the same array or SE3 changed in place (it would be skipped as already seen).
QPReference = Mapping[str, Any]

_MISSING = object()
# Rows within this distance of their bound count as active in diagnostics.
_ACTIVE_TOL = 1e-6
#: Room (rad/s², m/s², N·m: the rows' units) a lower HQPID level has past a bound the level above
#: left at its edge: at 10·eps_abs the bounds of rows active above are slabs too thin for ProxSuite,
#: which then runs out of iterations (docs/performance.md, "Measurements behind the core's choices").
_LOWER_LEVEL_ROOM = 1e-6
#: Outer iterations of a lower hqpid level's warm attempt (``DenseQP``'s ``warm_max_iter``; of at
#: most 50 inner ones each) before it is retried cold: warm-started on the preconditioner of the
#: first problem, the middle level of a three-level hqpid took up to 1 564 inner iterations (8.8 ms)
#: on one step of a closed loop where a cold solve takes at most ~70 (docs/performance.md).
LOWER_WARM_MAX_ITER = 10
# The LAPACK gufuncs behind numpy.linalg.qr(mode="complete"), without the wrapper's checks
# (numpy.linalg.qr where they are missing).
_ulinalg = getattr(np.linalg, "_umath_linalg", None)
_qr_r_raw: Any = getattr(_ulinalg, "qr_r_raw", None)
_qr_complete: Any = getattr(_ulinalg, "qr_complete", None)


#: Gain ``k`` (1/s) of the damping of the self-motion level 0's tasks leave (to hqpid's levels below,
#: or left free in qpid without a posture task): level 0's cost gets ``w·‖Zᵀ·(q̈ + k·q̇)‖²``, ``Z``
#: the null space of its tasks (hqpid: level 1's). Without
#: it level 0 priced that motion only through ``acceleration_weight`` and did not damp it, and where
#: a barrier held it (the singularity barrier stopping the tool short of its target: level 0 met the
#: barrier by the self-motion alone) the level below had no room left to: in MuJoCo the elbow swung
#: at up to 1.36 rad/s for as long as the target stayed, the command 1, 2 or 5 ms late. With it,
#: over the same 28 targets at 5 ms, the largest speed 6–8 s on was 0.019 rad/s (``k`` 30;
#: 0.049 at 10). Where no barrier holds the self-motion the levels below set it as before (their
#: ``u`` spans ``Z``). ``h·k`` is far below any delay's damping bound (0.347 at 5 ms).
SELF_MOTION_DAMPING = 30.0
#: ``w`` of :data:`SELF_MOTION_DAMPING` as a multiple of the largest diagonal entry of level 0's
#: regularisation, ``acceleration_weight + Δt²·velocity_weight`` (the shipped 1e-4): at 10 the elbow
#: still swung at up to 0.71 rad/s on 4 of the 28 targets (5 ms), at 100 it settled. (The
#: regularisation may be all ``velocity_weight``: the damping must not vanish with ``acceleration_weight``.)
SELF_MOTION_WEIGHT_SHARE = 100.0
#: Below the singularity barrier's ``w_min`` the barrier needs the self-motion to raise the
#: manipulability, and :data:`SELF_MOTION_DAMPING` priced it: level 0 met the barrier partly by moving
#: the tool, which the level below cannot undo. The damping's share fades from 1 at ``w_min`` to 0 at
#: ``(1 − band)·w_min`` (``band`` this fraction, unitless). In MuJoCo, 5 ms late, holding a pose at
#: 0.0053 (``w_min`` 0.01) the tool left its hold by 0.80 mm (13.4 with the damping whole; 0.09 without
#: it; a band of 0.2: 1.75). Over 9 such starts (3 s) 4 did better (0.43–2.6 mm against 5.0–13.4), 5
#: as before (0.9–82 mm; on the 3 worst no damping at all did no better: the tool must give way there).
#: Where the barrier holds the arm at ``w_min`` (the targets above: ``w − w_min`` ≥ −1e-8) the damping
#: is whole: the same speeds 6–8 s on, to 1e-4 rad/s, at 1 and 5 ms.
SELF_MOTION_RECOVERY_BAND = 0.1


def _null_space_basis(J: FloatArray, work: FloatArray, out: FloatArray) -> None:
    """``out`` (n × r, r = n − m): orthonormal columns with ``J·out = 0`` for ``J`` (m × n, m < n).

    They are the last r columns of ``Q`` in the complete QR factorisation ``Jᵀ = Q·R``: the
    columns of ``Jᵀ`` lie in the span of the first m columns of ``Q`` whatever the rank of ``J``,
    so the others are orthogonal to every row of ``J`` (and span its whole null space when ``J``
    has full row rank). ``work`` (n × m) is overwritten. Cheaper than an SVD, about a third of its
    time for a 6 × 7 ``J`` (docs/performance.md, "What was changed for speed").
    """
    m = J.shape[0]
    if _qr_r_raw is None or _qr_complete is None:
        out[:] = np.linalg.qr(J.T, mode="complete")[0][:, m:]
        return
    work[:] = J.T
    householder = _qr_r_raw(work)  # Householder factorisation of work, in place: its scalars
    out[:] = _qr_complete(work, householder)[:, m:]


@contextmanager
def _in_section(section: str) -> Iterator[None]:
    """Put ``section.`` before the message of a :class:`ConfigError` raised inside.

    Tasks and barriers name their keys within the controller's section (``tool.kp``,
    ``singularity.w_min``): they are built from a config, not from the parameters, and a test
    builds them bare. The parameter is ``qpid.tool.kp`` or ``hqpid.tool.kp``.
    """
    try:
        yield
    except ConfigError as exc:
        raise ConfigError(f"{section}.{exc}") from None


def _larger_keeping_nan(largest: float, value: float) -> float:
    """The larger of ``largest`` and ``value``, NaN once either is. A refused solve reports NaN
    residuals, which must show in the step's info; ``max()`` keeps a NaN only where it comes first
    (``max(0.0, nan)`` is 0)."""
    if math.isnan(largest) or value <= largest:
        return largest
    return value  # the larger one, or NaN (every comparison with NaN is false)


# ------------------------------------------------------------------------ QP levels
class _TaskTerms(NamedTuple):
    """A task's share of a level's cost, refilled every step (see :meth:`_QPController.prepare`)."""

    task: Task
    two_w: FloatArray  # 2·W as a column (dim × 1)
    WJ: FloatArray  # 2·W·J (dim × n)
    res: FloatArray  # ẍᵈ − J̇·q̇ (dim)
    H: FloatArray  # 2·JᵀW·J (n × n)
    g: FloatArray  # 2·JᵀW·(ẍᵈ − J̇·q̇) (n)


class _LevelsOutcome(NamedTuple):
    """What solving the levels of one step gave (:meth:`_QPController._solve_levels`)."""

    solutions: list[Solution]  # one per level tried, in order
    status: SolveStatus  # of the first level whose solve did not succeed, else SOLVED
    failed_level: int  # the level that failed (its q̈ share dropped, the levels below skipped), −1 if none
    scaled_level: int  # the first level scaled back, −1 if none
    levels_solved: int  # scaled-back levels included


class _FrozenRows:
    """The weighted rows of ``frozen`` tasks stacked (``J_frozen``, ``Jᶠ = [J_j[w_j > 0]]_j``) and
    an orthonormal basis ``Z`` (n × (n − rows), when there are fewer rows than n) of their null
    space. ``frozen_rows`` holds, per task, its Jacobian buffer, the block of ``J_frozen`` it fills
    and the indices of its weighted rows (``None`` when every row is weighted: a plain copy)."""

    def __init__(self, frozen: list[Task], n: int) -> None:
        self.frozen = frozen
        self.J_frozen = np.zeros((sum(int(np.count_nonzero(t.weight > 0.0)) for t in frozen), n))
        self.frozen_rows: list[tuple[FloatArray, FloatArray, NDArray[np.intp] | None]] = []
        row = 0
        for t in frozen:
            weighted = np.flatnonzero(t.weight > 0.0)
            block = self.J_frozen[row : row + weighted.size]
            self.frozen_rows.append((t.J, block, None if weighted.size == t.dim else weighted))
            row += weighted.size
        self.qr_work = np.zeros((n, self.J_frozen.shape[0]))  # J_frozenᵀ, factorised in place for Z
        self.Z = np.zeros((n, max(n - self.J_frozen.shape[0], 0)))

    def fill_frozen(self) -> None:
        """``J_frozen`` from the frozen tasks' Jacobians as they stand (weighted rows only)."""
        for J, block, weighted in self.frozen_rows:
            if weighted is None:
                np.copyto(block, J)
            else:
                J.take(weighted, 0, block)

    def update_null_space(self) -> None:
        """``J_frozen`` and ``Z`` for the Jacobians as they stand."""
        self.fill_frozen()
        _null_space_basis(self.J_frozen, self.qr_work, self.Z)


class _Level(_FrozenRows):
    """One priority level: its tasks, the tasks above it and its persistent QP.

    Level 0 solves over ``z = [q̈; τ; s]`` (dynamics as equality rows; barrier, torque and
    slack rows). A level ``k > 0`` solves over ``u`` in ``q̈ = q̈*_{k−1} + Z·u``; its rows are
    ``C_b·Z`` and ``M·Z`` (the levels above always leave some: :meth:`_QPController._check_frozen_rows`).

    The frozen tasks (:class:`_FrozenRows`) are the tasks above, and ``Z`` spans the null space
    of their weighted rows: ``nz = n − rows(Jᶠ)`` (weights are fixed at construction, so are the
    rows).
    """

    def __init__(
        self,
        index: int,
        tasks: list[Task],
        frozen: list[Task],
        n: int,
        n_b: int,
        soft_rows: list[tuple[int, int, int]],
        n_s: int,
        slack_scale: float,
        eps_abs: float,
        max_iter: int,
    ) -> None:
        self.index = index
        self.tasks = tasks
        self.terms: list[_TaskTerms] = []  # the tasks' cost terms, set by the controller
        super().__init__(frozen, n)
        n_frozen = self.J_frozen.shape[0]
        self.nz = 2 * n + n_s if index == 0 else n - n_frozen  # > 0: checked by _check_frozen_rows
        self.Z = np.zeros((n, self.nz))
        self.HZ = np.zeros((n, self.nz))  # H·Z, a work array
        self.qp: DenseQP
        if index > 0:
            # u = 0 meets every row (see _fill_lower): an infeasibility report is a false alarm.
            qp = self.qp = DenseQP(
                self.nz,
                0,
                n_b + n,
                eps_abs=eps_abs,
                max_iter=max_iter,
                known_feasible=True,
                warm_max_iter=min(LOWER_WARM_MAX_ITER, max_iter),
            )
            qp.u[:n_b] = np.inf
            return
        # With a slack on every barrier row, τ = 0 (inside the torque box), q̈ = −M⁻¹·nle and large
        # enough slacks meet every row: an infeasibility report is a false alarm there too (a review
        # found 64 of 300 cold states at 10–50 times the speed limits reported infeasible). The
        # solver's test is left as it is (problem.py's module docs: strict, it only takes longer).
        every_row_soft = sum(stop - start for start, stop, _ in soft_rows) == n_b
        qp = self.qp = DenseQP(
            self.nz,
            n,
            n_b + n + n_s,
            eps_abs=eps_abs,
            max_iter=max_iter,
            known_feasible=every_row_soft,
            strict_infeasibility=False,
        )
        # Constant parts, filled once.
        qp.A[:, n : 2 * n] = -np.eye(n)
        for start, stop, s_col in soft_rows:
            qp.C[start:stop, 2 * n + s_col] = slack_scale
        qp.C[n_b : n_b + n, n : 2 * n] = np.eye(n)
        qp.C[n_b + n :, 2 * n :] = np.eye(n_s)
        qp.l[:n_b] = -np.inf
        qp.u[:n_b] = np.inf
        qp.l[n_b + n :] = 0.0
        qp.u[n_b + n :] = np.inf


class _QPController(Controller[QPReference]):
    """Shared algebra of :class:`QPID` and :class:`HQPID`: tasks, barriers, QP levels."""

    hierarchical: bool = False

    def __init__(
        self, robot: RobotModel, config: QPIDConfig, *, extra_barriers: Sequence[Barrier] = ()
    ) -> None:
        super().__init__(robot)
        # Validated again: a config built directly is unchecked, and one from from_params was
        # checked against the robot's command_delay as it stood then.
        self.config = config = config.validated(robot, self.name)
        self.kin = KinematicsState(robot)
        self.tasks = self._build_tasks(config)
        self._task_by_name = {t.name: t for t in self.tasks}
        self.collision_barrier: SelfCollisionBarrier | None = None
        self.floor_barrier: FloorBarrier | None = None
        self.singularity_barrier: SingularityBarrier | None = None
        self.barriers = self._build_barriers(config, extra_barriers)
        soft_rows = self._stack_barrier_rows()
        self.levels = self._build_levels(config, soft_rows)
        self._build_cost_terms(config)
        self.last_solutions: list[Solution] = []
        self._last_fallback = False
        self._check_level_conditioning()
        self._check_velocity_weight()
        hard = [g for g in BARRIER_GROUPS if getattr(config, g).enabled and not getattr(config, g).soft]
        #: The same controller with every barrier group soft, solved where level 0 fails with hard
        #: ones (:meth:`_soft_retry`); ``None`` where no group is hard.
        self.soft_twin: _QPController | None = None
        if hard:
            soft = {g: dataclasses.replace(getattr(config, g), soft=True) for g in hard}
            # Copies: a barrier writes its rows into the arrays of the controller that bound it.
            extra = [copy.deepcopy(b) for b in extra_barriers]
            self.soft_twin = type(self)(robot, dataclasses.replace(config, **soft), extra_barriers=extra)
        self._twin_current = False  # whether the twin stepped at the previous state too

    def _build_tasks(self, config: QPIDConfig) -> list[Task]:
        """One task object per configured task, in the configured order."""
        tasks: list[Task] = []
        for tc in config.tasks:
            klass = TASK_TYPES[tc.type]
            kwargs: dict[str, Any] = dict(kp=tc.kp, kd=tc.kd, weight=tc.weight, level=tc.level)
            if tc.type != "posture":
                kwargs["frame"] = tc.frame
            with _in_section(self.name):
                tasks.append(klass(tc.name, self.robot, **kwargs))
        return tasks

    def _build_barriers(self, c: QPIDConfig, extra_barriers: Sequence[Barrier]) -> list[Barrier]:
        """The enabled barrier groups, then ``extra_barriers``."""
        robot = self.robot
        barriers: list[Barrier] = []
        # An enabled group the model gives nothing to hold (e.g. an MJCF has no velocity limits)
        # is refused rather than left out: the safety it stands for would silently be missing.
        if c.joint_position_limit.enabled:
            with _in_section(self.name):
                jp = JointPositionBarrier(
                    robot, c.joint_position_limit.alpha, soft=c.joint_position_limit.soft
                )
            if not jp.rows:
                raise ConfigError(
                    f"{self.name}.joint_position_limit: enabled, but no joint of the model has position "
                    "limits (set enabled: false for such a model)"
                )
            barriers.append(jp)
        if c.joint_velocity_limit.enabled:
            with _in_section(self.name):
                jv = JointVelocityBarrier(
                    robot, c.joint_velocity_limit.alpha, soft=c.joint_velocity_limit.soft
                )
            if not jv.rows:
                also = (
                    f", and {self.name}.self_collision.enabled: false, which needs it"
                    if c.self_collision.enabled
                    else ""
                )
                raise ConfigError(
                    f"{self.name}.joint_velocity_limit: enabled, but no joint of the model has a velocity "
                    f"limit (an MJCF gives none; use the URDF, or set enabled: false{also})"
                )
            barriers.append(jv)
        if c.self_collision.enabled:
            cc = c.self_collision
            spec = self._capsules("self_collision", cc.model)
            # The collision model's messages name its file or its keys, not the parameters.
            try:
                model = SelfCollisionModel(robot, spec, cc.pairs)
            except ConfigError as exc:
                raise ConfigError(f"{self.name}.self_collision: {exc}") from None
            with _in_section(self.name):
                self.collision_barrier = SelfCollisionBarrier(
                    robot, model, cc.alpha, cc.d_safe, filter_gain=cc.filter, soft=cc.soft
                )
            barriers.append(self.collision_barrier)
        if c.floor.enabled:
            fc = c.floor
            spec = self._capsules("floor", fc.model)
            try:
                floor = FloorModel(robot, spec, fc.height, fc.rows)
            except ConfigError as exc:
                # Its own keys' messages start with "floor."; the capsule file's name the file.
                text = str(exc)
                where = f"{self.name}." if text.startswith("floor") else f"{self.name}.floor: "
                raise ConfigError(where + text) from None
            with _in_section(self.name):
                self.floor_barrier = FloorBarrier(robot, floor, fc.alpha, fc.d_safe, soft=fc.soft)
            barriers.append(self.floor_barrier)
        if c.singularity.enabled:
            sc = c.singularity
            with _in_section(self.name):
                self.singularity_barrier = SingularityBarrier(
                    robot, sc.frame, sc.alpha, sc.w_min, soft=sc.soft
                )
            barriers.append(self.singularity_barrier)
        barriers.extend(extra_barriers)
        names = [b.name for b in barriers]
        if len(set(names)) != len(names):
            raise ConfigError(f"barrier names must be unique, got {names}")
        capped = any(isinstance(b, JointVelocityBarrier) and b.rows for b in barriers)
        if not capped and any(isinstance(b, SelfCollisionBarrier) for b in barriers):
            # The distance model leaves out the normal's rotation, an error that grows with the
            # speed squared, and the rows go to the closest pairs: with the joint speeds capped it
            # held d_safe to ~2 mm; uncapped, the capsules went 5–14 mm inside d_safe with the QP
            # solved and no slack used, or overlapped (tool kp 225–400), nothing reported.
            raise ConfigError(
                f"{self.name}.self_collision: a self-collision barrier needs a joint velocity barrier "
                "with rows: it holds d_safe only while the joint speeds stay within their limits "
                f"(without, the capsules went 5-14 mm inside d_safe or overlapped); got barriers {names}: "
                f"enable {self.name}.joint_velocity_limit (the model needs velocity limits) or disable "
                f"{self.name}.self_collision"
            )
        return barriers

    def _capsules(self, group: str, model_file: str) -> CollisionSpec:
        """Barrier group ``group``'s capsule file, found as the nodes find their model files: as
        given, else a bare name in the package's ``config/`` (:func:`~...paths.find_data_file`)."""
        try:
            return CollisionSpec.from_file(find_data_file(model_file, "config"))
        except (ConfigError, FileNotFoundError) as exc:
            raise ConfigError(f"{self.name}.{group}.model: {exc}") from None

    def _stack_barrier_rows(self) -> list[tuple[int, int, int]]:
        """Bind every barrier to its rows of the stacked ``C_b``, ``l_b``; the soft rows as
        ``(start, stop, slack column)``."""
        n = self.robot.n
        # Stacked barrier rows, computed once per step and copied into every level.
        self.n_b = sum(b.rows for b in self.barriers)
        # [C_b; M]: the barrier rows, and below them M, which lower levels multiply alike.
        self._CbM = np.zeros((self.n_b + n, n))
        self._Cb = self._CbM[: self.n_b]
        self._lb = np.zeros(self.n_b)
        self._barrier_rows: list[tuple[int, int]] = []
        soft_rows: list[tuple[int, int, int]] = []
        row = 0
        # Each group's slacks as a slice of s (empty for hard groups); see qp.constraints.
        self._group_slack: list[slice] = []
        n_s = 0
        for b in self.barriers:
            b.bind(self._Cb[row : row + b.rows], self._lb[row : row + b.rows])
            self._barrier_rows.append((row, row + b.rows))
            if b.soft:
                soft_rows.extend((row + i, row + i + 1, n_s + int(k)) for i, k in enumerate(b.slack_of_row))
                self._group_slack.append(slice(n_s, n_s + b.slacks))
                n_s += b.slacks
            else:
                self._group_slack.append(slice(0, 0))
            row += b.rows
        self.n_s = n_s
        # Each barrier row's slack (0 for hard rows): E·s = s[row_slack]·row_soft.
        self._row_slack = np.zeros(self.n_b, dtype=np.intp)
        self._row_soft = np.zeros(self.n_b)
        for start, stop, s_col in soft_rows:
            self._row_slack[start:stop] = s_col
            self._row_soft[start:stop] = 1.0
        # For the diagnostics: the keys.
        self._barrier_keys = [
            (f"slack.{b.name}", f"active.{b.name}", f"margin.{b.name}") for b in self.barriers
        ]
        self._error_keys = [(f"error.{t.name}", t) for t in self.tasks]
        return soft_rows

    def _build_levels(self, c: QPIDConfig, soft_rows: list[tuple[int, int, int]]) -> list[_Level]:
        """One level per priority (one for ``qpid``), each with its persistent QP."""
        robot, n = self.robot, self.robot.n
        if self.hierarchical:
            n_levels = max(t.level for t in self.tasks) + 1
            groups = [[t for t in self.tasks if t.level == k] for k in range(n_levels)]
        else:
            groups = [list(self.tasks)]
        levels: list[_Level] = []
        frozen: list[Task] = []
        # Level 0's slack variables are s/σ (see the module docs).
        self._slack_scale = 1.0 / math.sqrt(c.slack_weight)
        self._check_frozen_rows(groups)
        for k, group in enumerate(groups):
            levels.append(
                _Level(
                    k,
                    group,
                    list(frozen),
                    n,
                    self.n_b,
                    soft_rows,
                    self.n_s,
                    self._slack_scale,
                    c.eps_abs,
                    c.max_iter,
                )
            )
            frozen.extend(group)
        self._tau_max = robot.effort_limit.copy()  # inf where the model gives none
        top = levels[0].qp
        top.l[self.n_b : self.n_b + n] = -self._tau_max
        top.u[self.n_b : self.n_b + n] = self._tau_max
        top.g[2 * n :] = c.slack_weight * self._slack_scale
        return levels

    def _build_cost_terms(self, c: QPIDConfig) -> None:
        """Each task's cost-term buffers (constant ones filled once), the regularisation and the
        per-step work arrays."""
        n = self.robot.n
        # Per task, filled per step: its cost terms 2·JᵀW·J and 2·JᵀW·(ẍᵈ − J̇·q̇), with the
        # work arrays 2·W·J and ẍᵈ − J̇·q̇ (a tuple per task: no dict lookups on the hot path).
        self._terms = {
            t.name: _TaskTerms(
                t,
                2.0 * t.weight[:, None],
                np.zeros((t.dim, n)),
                np.zeros(t.dim),
                np.zeros((n, n)),
                np.zeros(n),
            )
            for t in self.tasks
        }
        for t, two_w, WJ, _, H, _ in self._terms.values():
            if t.constant_jacobian:
                np.multiply(t.J, two_w, out=WJ)
                t.J.T.dot(WJ, out=H)
        # The terms refilled every step: the cost matrices of constant-Jacobian tasks are fixed.
        self._term_list = [(terms, not terms.task.constant_jacobian) for terms in self._terms.values()]
        for lv in self.levels:
            lv.terms = [self._terms[t.name] for t in lv.tasks]
        dt = CONTROL_PERIOD
        self._H_reg = np.diag(2.0 * c.acceleration_weight + 2.0 * dt**2 * c.velocity_weight)
        self._g_reg_gain = 2.0 * dt * c.velocity_weight
        # Level 0's damping of the self-motion it leaves (SELF_MOTION_DAMPING): 2·w·Z·Zᵀ in H,
        # 2·w·k·Z·Zᵀ·q̇ in g; work arrays for both.
        self._damp_h = (
            2.0 * SELF_MOTION_WEIGHT_SHARE * float(np.max(c.acceleration_weight + dt**2 * c.velocity_weight))
        )
        self._damp_g = self._damp_h * SELF_MOTION_DAMPING
        self._ZZt = np.zeros((n, n))
        self._ZZt_v = np.zeros(n)
        # Whose Z spans the self-motion level 0's tasks leave: level 1's (its frozen tasks are level
        # 0's), or with one level its tasks' own null space, if they leave one (none with a posture).
        level0 = self.levels[0].tasks
        self._self_motion: _FrozenRows | None = (
            self.levels[1] if len(self.levels) > 1 else _FrozenRows(level0, n)
        )
        if self._self_motion.Z.shape[1] == 0:
            self._self_motion = None
        # Per-step work arrays: the level cost in q̈, the solution so far, row offsets.
        self._Hq = np.zeros((n, n))
        self._gq = np.zeros(n)
        self._qdd = np.zeros(n)
        self._s = np.zeros(self.n_s)
        self._Es = np.zeros(self.n_b)  # E·s: each barrier row's share of level 0's slack
        self._tol = max(10.0 * c.eps_abs, _LOWER_LEVEL_ROOM)
        self._rows_b = np.zeros(self.n_b)
        self._rows = np.zeros(self.n_b + n)
        self._lo = np.zeros(self.n_b + n)
        self._hi = np.full(self.n_b + n, np.inf)

    def _check_level_conditioning(self) -> None:
        """Refuse a joint no weight of a level of posture tasks only regularises (its acceleration
        undetermined, undamped), task weights above :data:`~.qpid_config.MAX_WEIGHT`, a ``slack_weight`` under
        :data:`~.qpid_config.MIN_SLACK_PER_WEIGHT` times the largest of them, and a level whose
        Cartesian task weights are more than :func:`~.qpid_config.max_weight_ratio` above the smallest
        regularisation of a joint in that level (its posture tasks included): the solver cannot meet
        its tolerance on such a level, or (with none) solves rounding noise."""
        c = self.config
        heaviest = max(self.tasks, key=lambda t: float(t.weight.max()))
        most = float(heaviest.weight.max())
        if most > MAX_WEIGHT:
            raise ConfigError(
                f"{self.name}.{heaviest.name}.weight: expected at most {MAX_WEIGHT:g}, got {most:g}"
            )
        base = c.acceleration_weight + CONTROL_PERIOD**2 * c.velocity_weight
        bound = max_weight_ratio(c.eps_abs)
        for lv in self.levels:
            reg = base + sum((t.weight for t in lv.tasks if t.kind == "posture"), np.zeros(self.robot.n))
            cartesian = [t for t in lv.tasks if t.kind != "posture"]
            if not cartesian:
                if not float(reg.min()) > 0.0:
                    joint = self.robot.joint_names[int(np.argmin(reg))]
                    raise ConfigError(
                        f"{self.name}: in level {lv.index}, nothing weights {joint} (acceleration_weight + "
                        "Δt²·velocity_weight + the level's posture weights is 0): its acceleration is left "
                        "to the solver and nothing damps it (posture weight 0 on joint_7: it went on at "
                        "0.5 rad/s for 2 s); give acceleration_weight or a posture weight on it"
                    )
                continue
            top = max(cartesian, key=lambda t: float(t.weight.max()))
            weight, least = float(top.weight.max()), float(reg.min())
            if not weight <= bound * least:
                joint = self.robot.joint_names[int(np.argmin(reg))]
                raise ConfigError(
                    f"{self.name}: in level {lv.index}, {top.name}.weight {weight:g} is "
                    f"{weight / least if least > 0.0 else math.inf:.3g} times the regularisation of "
                    f"{joint} ({least:g}: acceleration_weight + Δt²·velocity_weight + the level's posture "
                    f"weights), more than {bound:g} (at solver.eps_abs {c.eps_abs:g}): the solver cannot "
                    "meet its tolerance on so ill-conditioned a QP (its solves stop at the iteration cap "
                    "and fall back); raise acceleration_weight or lower the task's weight"
                )
        if not c.slack_weight >= MIN_SLACK_PER_WEIGHT * most:
            raise ConfigError(
                f"{self.name}.slack_weight: {c.slack_weight:g} is less than {MIN_SLACK_PER_WEIGHT:g} times "
                f"the largest task weight ({heaviest.name}: {most:g}): the tasks would push the barriers "
                "aside (at 1e3 times, a joint ran at 5.1 times its velocity limit)"
            )

    def _check_velocity_weight(self) -> None:
        """:func:`~.qpid_config.check_velocity_weight` against the robot's delay, with the posture
        tasks of the last level: the self-motion is decided there (each level above hands what
        it leaves free down to the next, which solves it again)."""
        c = self.config
        postures = [(t.weight, t.kp, t.kd) for t in self.levels[-1].tasks if t.kind == "posture"]
        check_velocity_weight(
            self.name,
            c.velocity_weight,
            c.acceleration_weight,
            postures,
            self.robot.joint_names,
            self.robot.delay_periods,
        )

    def _check_frozen_rows(self, groups: Sequence[Sequence[Task]]) -> None:
        """Refuse a level (``groups[k]``, its tasks) below tasks whose weighted rows hide freedom
        they leave, or leave none; a level whose tasks add no rank to the levels above; and, with
        more than one level, levels that together leave a self-motion.

        ``Z`` has ``n − rows`` columns, which spans the whole null space only for independent rows:
        a position task above a pose task on the same frame freezes 9 rows of rank 6, and the
        posture level below would be skipped (``nz = 0``) though the self-motion is free; a pose task
        on a frame that 4 joints move freezes 6 rows of rank 4. The rank is the largest over a few
        random configurations (a singular pose lowers it anywhere). Nearly dependent rows still
        count: a forearm position (its origin 6 mm off joint 3's axis) below a tool position,
        singular values 3e-5 to 8e-5 of the largest, leaves the level below a DoF short, which went
        undamped (0.3 rad/s still after 5 s; a review; not refused). Rows above
        that take every DoF leave a level nothing to act on: refused too, as is a level whose tasks
        the levels above already set (a tool position below the tool's pose). The self-motion the
        levels leave is damped only in level 0 (:data:`SELF_MOTION_DAMPING`), for the levels below
        to set: one the last level leaves drifted (1.37 rad in 3 s below a tool pose and its
        orientation; a review), so with more than one level the last must set it (a posture task).
        With one level (``qpid``) its tasks' own ``Z`` is where that damping acts, so their rows
        must be independent too: a tool pose and its orientation (9 rows of rank 6) left ``Z``
        empty and the self-motion undamped (1.4 rad in 3 s with barriers only; a review).
        """
        n = self.robot.n
        samples = sample_configurations(self.robot, 5)
        if len(groups) == 1:
            tasks = list(groups[0])
            rows = sum(int(np.count_nonzero(t.weight > 0.0)) for t in tasks)
            rank = self._rank(tasks, samples)
            lost = (n - rank) - max(n - rows, 0)  # DoFs the tasks leave free that Z would not span
            if lost > 0:
                raise ConfigError(
                    f"{self.name}: its tasks ({[t.name for t in tasks]}) weight {rows} rows, of which "
                    f"only {rank} are independent: the damping of the self-motion they leave would miss "
                    f"{lost} DoF(s); " + self._dependent_rows_hint(tasks)
                )
        for k in range(1, len(groups)):
            frozen = [t for group in groups[:k] for t in group]
            rows = sum(int(np.count_nonzero(t.weight > 0.0)) for t in frozen)
            rank = self._rank(frozen, samples)
            names = [t.name for t in frozen]
            lost = (n - rank) - max(n - rows, 0)  # DoFs left free above that Z would not span
            if lost > 0:
                raise ConfigError(
                    f"{self.name}: the tasks above level {k} ({names}) weight {rows} rows, of which "
                    f"only {rank} are independent: level {k} would lose {lost} DoF(s); "
                    + self._dependent_rows_hint(frozen)
                )
            level = [t.name for t in groups[k]]
            if rank >= n:
                raise ConfigError(
                    f"{self.name}: the tasks above level {k} ({names}) weight all {n} DoFs, so the "
                    f"tasks of level {k} ({level}) could never act; put them higher, or weight fewer "
                    "axes above"
                )
            if self._rank([*frozen, *groups[k]], samples) <= rank:
                raise ConfigError(
                    f"{self.name}: the tasks of level {k} ({level}) move nothing the tasks above it "
                    f"({names}) leave free, so they could never act; put them higher, or drop them"
                )
        if len(groups) > 1 and (rank := self._rank([t for g in groups for t in g], samples)) < n:
            raise ConfigError(
                f"{self.name}: the levels together set only {rank} of the {n} DoFs, and the self-motion "
                f"they leave is damped only at level 0, for the levels below to set: add a posture task "
                f"to the last level ({[t.name for t in groups[-1]]})"
            )

    def _rank(self, tasks: Sequence[Task], samples: FloatArray) -> int:
        """The rank of ``tasks``' weighted rows stacked, the largest over the configurations
        ``samples`` (one per row)."""
        n = self.robot.n
        rank = 0
        for q in samples:
            self.kin.update(q, np.zeros(n))
            for t in tasks:
                t.update(self.kin)
            rank = max(rank, int(np.linalg.matrix_rank(np.vstack([t.J[t.weight > 0.0] for t in tasks]))))
        return rank

    def _dependent_rows_hint(self, frozen: Sequence[Task]) -> str:
        """What to change where ``frozen``'s weighted rows are dependent: a task weighting more
        axes than its frame has joints moving it, else tasks sharing axes."""
        for t in frozen:
            frame = getattr(t, "frame", None)  # posture tasks have none: n rows on n joints
            weighted = int(np.count_nonzero(t.weight > 0.0))
            if frame is not None and weighted > (dofs := self.robot.dofs_moving(frame)):
                return (
                    f"{t.name} has {weighted} weighted rows on frame {frame!r}, which {dofs} joint(s) "
                    "move: weight fewer axes or use a frame further out"
                )
        return (
            "e.g. two tasks on one frame sharing axes, or a frame whose origin lies on a joint's axis "
            "next to a task further out (a wrist position beside the tool's): weight fewer axes, merge "
            "those tasks or use another frame"
        )

    # --------------------------------------------------------------- construction
    @classmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> _QPController:
        """Build from a parameter mapping; see :meth:`QPIDConfig.from_params` for the keys."""
        return cls(robot, QPIDConfig.from_params(robot, params, section=cls.name))

    @property
    def task_names(self) -> tuple[str, ...]:
        """Names of the tasks (the keys of a reference)."""
        return tuple(t.name for t in self.tasks)

    def task(self, name: str) -> Task:
        """The task called ``name``; the error lists the valid names."""
        try:
            return self._task_by_name[name]
        except KeyError:
            raise TargetError(
                f"{self.name}: unknown task {name!r}; tasks are {list(self.task_names)}"
            ) from None

    def hold_reference(self, state: JointState) -> dict[str, Any]:
        """Every task's target at its current value (frame poses, joint angles)."""
        q, v = self.robot.check_state(state.q, state.v)
        self.kin.update(q, np.zeros_like(v))
        return {t.name: t.hold_target(self.kin) for t in self.tasks}

    def bounds_past(self, state: JointState) -> list[str]:
        """The barrier bounds ``state`` is already past: joint position limits, ``self_collision.d_safe``,
        ``floor.d_safe``, ``singularity.w_min``. A barrier started past its bound moves the arm back
        (soft or hard, as fast as its ``alpha`` and the velocity barrier allow): in MuJoCo from
        home, whose tool manipulability is 0.033 m³, qpid holding home with ``singularity.w_min``
        0.05 m³ moved the arm 0.23 rad at up to 0.6 of a speed limit, and with 0.1 at its speed
        limits for 4 s. (It overwrites the robot's kinematics data: for start, not inside a step.)"""
        q, _ = self.robot.check_state(state.q, state.v)
        notes: list[str] = []
        for b in self.barriers:
            if isinstance(b, JointPositionBarrier) and b.rows:
                past = [
                    self.robot.joint_names[j]
                    for j, x, lo, hi in zip(b.index, q[b.index], b.q_min, b.q_max, strict=True)
                    if not lo <= x <= hi
                ]
                if past:
                    notes.append(
                        f"joint_position_limit: {past} past their position limits: the barrier moves "
                        "them back inside"
                    )
        cb = self.collision_barrier
        if cb is not None:
            d = cb.collision.closest_distance(q)
            if d < cb.d_safe:
                notes.append(
                    f"self_collision: the closest capsules are {1e3 * d:.1f} mm apart, less than d_safe "
                    f"{1e3 * cb.d_safe:g} mm: the barrier moves the arm until they are d_safe apart"
                )
        fb = self.floor_barrier
        if fb is not None:
            d = fb.floor.closest_distance(q)
            if d < fb.d_safe:
                notes.append(
                    f"floor: the lowest capsule is {1e3 * d:.1f} mm above the plane z = {fb.floor.height:g} "
                    f"m, less than d_safe {1e3 * fb.d_safe:g} mm: the barrier lifts the arm until it is "
                    "d_safe above"
                )
        sb = self.singularity_barrier
        if sb is not None:
            w = sb.manipulability_at(q)
            if w < sb.w_min:
                notes.append(
                    f"singularity: the manipulability of {sb.frame!r} is {w:.3g} m³, below w_min "
                    f"{sb.w_min:g} m³: the barrier moves the arm (up to its speed limits) until it is above"
                )
        return notes

    def reset(self) -> None:
        """Cold-start every QP and restart the gradient filter (e.g. after a state jump)."""
        for lv in self.levels:
            lv.qp.reset()
        if self.collision_barrier is not None:
            self.collision_barrier.reset()
        if self.soft_twin is not None:
            self.soft_twin.reset()
        self._twin_current = False

    # ---------------------------------------------------------------------- step
    def _set_reference(self, reference: QPReference) -> None:
        if not isinstance(reference, Mapping):
            raise TargetError(
                f"{self.name}: expected a mapping task name → target, got {type(reference).__name__}"
            )
        # As many entries as tasks and one for each task: exactly the tasks' names.
        if len(reference) == len(self.tasks):
            for t in self.tasks:
                target = reference.get(t.name, _MISSING)
                if target is _MISSING:
                    break
                t.set_target(target)
            else:
                return
        missing = [n for n in self._task_by_name if n not in reference]
        unknown = [n for n in reference if n not in self._task_by_name]
        raise TargetError(
            f"{self.name}: reference must give a target for every task; missing {missing}, "
            f"unknown {unknown}; tasks are {list(self.task_names)}"
        )

    def prepare(self, q: FloatArray, v: FloatArray, reference: QPReference) -> None:
        """Kinematics, tasks and barriers for one state (the first half of :meth:`torque`)."""
        self._set_reference(reference)
        kin = self.kin
        kin.update(q, v)
        for (t, two_w, WJ, res, H, g), varying in self._term_list:
            t.update(kin)
            if varying:
                np.multiply(t.J, two_w, out=WJ)
                t.J.T.dot(WJ, out=H)
            np.subtract(t.desired, t.drift, out=res)
            res.dot(WJ, out=g)
        for b in self.barriers:
            b.update(kin)

    def _level_cost(self, lv: _Level, Hq: FloatArray, gq: FloatArray) -> None:
        """``Hq``, ``gq`` (outputs): the cost of ``lv``'s tasks and the regularisation, in ``q̈``."""
        np.copyto(Hq, self._H_reg)
        np.multiply(self._g_reg_gain, self.kin.v, out=gq)
        for terms in lv.terms:
            Hq += terms.H
            gq -= terms.g

    def _fill_top(self, lv: _Level, qp: DenseQP) -> None:
        """Level 0 over ``z = [q̈; τ; s]``, with the damping of the self-motion its tasks leave
        (:data:`SELF_MOTION_DAMPING`; over level 1's ``Z``, filled here, or with one level over the
        null space of its tasks, when they leave one)."""
        n, kin, nb = self.robot.n, self.kin, self.n_b
        self._level_cost(lv, qp.H[:n, :n], qp.g[:n])
        free = self._self_motion
        if free is not None:
            free.update_null_space()
            ZZt, ZZt_v = self._ZZt, self._ZZt_v
            free.Z.dot(free.Z.T, out=ZZt)
            ZZt.dot(kin.v, out=ZZt_v)
            share = self._self_motion_damping_share()
            ZZt *= self._damp_h * share
            ZZt_v *= self._damp_g * share
            qp.H[:n, :n] += ZZt
            qp.g[:n] += ZZt_v
        qp.A[:, :n] = kin.M
        np.negative(kin.nle, out=qp.b)
        qp.C[:nb, :n] = self._Cb
        qp.l[:nb] = self._lb

    def _self_motion_damping_share(self) -> float:
        """The share (0 to 1) of level 0's damping of the self-motion (:data:`SELF_MOTION_DAMPING`) this
        step: 1 unless the manipulability is below the singularity barrier's ``w_min``, fading to 0 at
        ``(1 − SELF_MOTION_RECOVERY_BAND)·w_min`` (:data:`SELF_MOTION_RECOVERY_BAND`)."""
        sb = self.singularity_barrier
        if sb is None or sb.margin >= 0.0:
            return 1.0
        return max(1.0 + sb.margin / (SELF_MOTION_RECOVERY_BAND * sb.w_min), 0.0)

    def _fill_lower(self, lv: _Level, qp: DenseQP) -> None:
        """Level ``k > 0`` over ``u``, ``q̈ = q̈*_{k−1} + Z·u``, slack fixed at level 0's.

        ``Z`` spans the null space of ``Jᶠ = [J_j[w_j > 0]]_j``, the weighted rows of the tasks
        above (see :class:`_Level`).
        """
        kin, nb, tol = self.kin, self.n_b, self._tol
        if lv.index > 1:  # level 1's Z: filled with level 0 (_fill_top)
            lv.update_null_space()
        Z, qdd = lv.Z, self._qdd
        self._level_cost(lv, self._Hq, self._gq)
        self._Hq.dot(Z, out=lv.HZ)
        Z.T.dot(lv.HZ, out=qp.H)
        self._gq += self._Hq.dot(qdd)
        self._gq.dot(Z, out=qp.g)
        # Rows [C_b; M]·Z·u against their bounds less [C_b; M]·q̈*: barriers ≥ l_b − E·s*₀,
        # torque −τ_max − nle ≤ M·q̈ ≤ τ_max − nle. A bound the level above met only to within
        # the solver's tolerance stays where that level left it (else rounding that used up the
        # tolerance at one level makes u = 0 infeasible at the next), and every level gets
        # _LOWER_LEVEL_ROOM past them again.
        CbM, lo, hi, rows = self._CbM, self._lo, self._hi, self._rows
        CbM[nb:] = kin.M
        CbM.dot(Z, out=qp.C)
        CbM.dot(qdd, out=rows)
        np.copyto(lo[:nb], self._lb)
        if self.n_s:
            lo[:nb] -= self._Es
        np.subtract(-self._tau_max, kin.nle, out=lo[nb:])
        np.subtract(self._tau_max, kin.nle, out=hi[nb:])
        np.minimum(lo, rows, out=lo)
        np.maximum(hi, rows, out=hi)
        np.subtract(lo, rows, out=qp.l)
        qp.l -= tol
        np.subtract(hi, rows, out=qp.u)
        qp.u += tol

    def torque(
        self, q: FloatArray, v: FloatArray, reference: QPReference
    ) -> tuple[FloatArray, dict[str, float]]:
        """QP torque (N·m) and diagnostics; the fallback torque if level 0 cannot be solved."""
        t0 = time.perf_counter()
        self.prepare(q, v, reference)
        prepare_time = time.perf_counter() - t0
        outcome = self._solve_levels()
        self.last_solutions = outcome.solutions
        self._last_fallback = fallback = outcome.failed_level == 0
        if fallback and self.soft_twin is not None:
            tau, info = self._soft_retry(q, v, reference)
            # The step's cost includes the failed hard solve before the retry.
            info["prepare_time_us"] += 1e6 * prepare_time
            info["qp_solve_time_us"] += 1e6 * sum(s.solve_time for s in outcome.solutions)
            info["qp_iterations"] += float(sum(s.iterations for s in outcome.solutions))
        else:
            self._twin_current = False
            tau = self._torque_or_fallback(q, v, fallback)
            info = self._step_info(outcome, fallback, prepare_time)
        info["step_time_us"] = 1e6 * (time.perf_counter() - t0)
        return tau, info

    def _soft_retry(
        self, q: FloatArray, v: FloatArray, reference: QPReference
    ) -> tuple[FloatArray, dict[str, float]]:
        """The step of :attr:`soft_twin`, where level 0 failed with hard barrier rows: the rows held
        as far as the torque limits allow, the rest taken up by their slacks (the fallback would
        hold none). Its warm start and gradient filter are those of the last step it took, so it
        starts cold unless that was the step before. This controller's :meth:`diagnostics`,
        :attr:`joint_acceleration` and :attr:`slack` are then the twin's."""
        twin = self.soft_twin
        assert twin is not None
        if not self._twin_current:
            twin.reset()
        tau, info = twin.torque(q, v, reference)
        self._twin_current = True
        self.last_solutions = twin.last_solutions
        info["soft_retry"] = 1.0
        return tau, info

    def _solve_levels(self) -> _LevelsOutcome:
        """Fill and solve each level in turn, adding its share to ``q̈`` (:attr:`joint_acceleration`).

        A lower level that stops short is scaled back (:meth:`_scaled_back`) and counts as solved;
        at the first level that fails otherwise the levels below are skipped, ``q̈`` stays that of
        the levels above (meaningless if it is level 0: the caller falls back).
        """
        n = self.robot.n
        sols: list[Solution] = []
        failed_level = scaled_level = -1
        levels_solved = 0
        status = SolveStatus.SOLVED
        for lv in self.levels:
            qp = lv.qp
            if lv.index == 0:
                self._fill_top(lv, qp)
            else:
                self._fill_lower(lv, qp)
            sol = qp.solve()
            sols.append(sol)
            if not sol.ok:
                if status is SolveStatus.SOLVED:
                    status = sol.status  # the first level that stopped short, scaled back or not
                # The failed level's iterate is no warm start; start it cold next step.
                qp.reset()
                step = self._scaled_back(qp, sol.x) if lv.index > 0 else 0.0
                if step > 0.0:
                    levels_solved += 1
                    if scaled_level < 0:
                        scaled_level = lv.index
                    self._qdd += lv.Z.dot(sol.x) * step
                    continue
                failed_level = lv.index
                break
            levels_solved += 1
            if lv.index == 0:
                np.copyto(self._qdd, sol.x[:n])
                np.multiply(sol.x[2 * n :], self._slack_scale, out=self._s)
                if len(self.levels) > 1:  # E·s, for the lower levels' barrier bounds
                    self._update_slack_rows()
            else:
                self._qdd += lv.Z.dot(sol.x)
        return _LevelsOutcome(sols, status, failed_level, scaled_level, levels_solved)

    def _torque_or_fallback(self, q: FloatArray, v: FloatArray, fallback: bool) -> FloatArray:
        """``τ = M·q̈ + nle`` for the solved ``q̈``, or the fallback ``g(q) − K_d·q̇`` (N·m)."""
        if fallback:
            return self.robot.gravity(q) - self.config.fallback_damping * v
        tau = self.kin.M.dot(self._qdd)
        tau += self.kin.nle
        return tau

    @staticmethod
    def _step_info(outcome: _LevelsOutcome, fallback: bool, prepare_time: float) -> dict[str, float]:
        """The step's ``info`` but ``step_time_us`` (see the module docstring); ``prepare_time`` in s."""
        iterations, solve_time = 0, 0.0
        primal = dual = 0.0
        for sol in outcome.solutions:  # one pass: this runs every step
            iterations += sol.iterations
            solve_time += sol.solve_time
            primal = _larger_keeping_nan(primal, sol.primal_residual)
            dual = _larger_keeping_nan(dual, sol.dual_residual)
        return {
            "qp_status": float(outcome.status.value),
            "qp_iterations": float(iterations),
            "qp_primal_residual": primal,
            "qp_dual_residual": dual,
            "qp_solve_time_us": 1e6 * solve_time,
            "prepare_time_us": 1e6 * prepare_time,
            "fallback": 1.0 if fallback else 0.0,
            "soft_retry": 0.0,
            "failed_level": float(outcome.failed_level),
            "scaled_level": float(outcome.scaled_level),
            "levels_solved": float(outcome.levels_solved),
        }

    @staticmethod
    def _scaled_back(qp: DenseQP, x: FloatArray) -> float:
        """The step ``s`` in ``[0, 1]`` that makes ``s·x`` usable for a lower level's unfinished solve ``x``.

        Every row has ``l < 0 < u`` there (the room), so ``C·(s·x) = s·C·x`` meets a row that ``x``
        misses for ``s`` up to ``l/(C·x)`` (or ``u/(C·x)``): ``s`` is the smallest of those and 1,
        then no more than the minimiser ``−gᵀx / xᵀHx`` of the cost along ``x``. 0 (drop the level)
        when ``x`` is not finite or the cost does not decrease along it.
        """
        if not math.isfinite(float(x.dot(x))):
            return 0.0
        slope = float(qp.g.dot(x))
        if slope >= 0.0:
            return 0.0
        rows = qp.C.dot(x)
        step = 1.0
        low = rows < qp.l
        if low.any():
            step = min(step, float((qp.l[low] / rows[low]).min()))
        high = rows > qp.u
        if high.any():
            step = min(step, float((qp.u[high] / rows[high]).min()))
        curvature = float(x.dot(qp.H.dot(x)))
        if curvature > 0.0:
            step = min(step, -slope / curvature)
        return step

    def _update_slack_rows(self) -> None:
        """``E·s``: each barrier row's share of level 0's slack (0 on hard rows)."""
        if self.n_s:
            np.multiply(self._s[self._row_slack], self._row_soft, out=self._Es)

    def diagnostics(self) -> dict[str, float]:
        """Barrier and task diagnostics of the last step (see the module docstring).

        ``slack.*``, ``active.*``, ``margin.*`` per barrier group and their totals, ``d_min``,
        ``floor_clearance``, ``manipulability`` and ``error.<task>``. A row is active when
        ``C_b·q̈ + E·s − l_b ≤ 1e-6``; after a fallback no row is active and no slack is used.
        """
        if self._twin_current and self.soft_twin is not None:
            return self.soft_twin.diagnostics()  # the last step was the twin's
        info: dict[str, float] = {}
        if not self._last_fallback and self.n_b:
            resid = self._rows_b
            self._Cb.dot(self._qdd, out=resid)
            self._update_slack_rows()
            resid += self._Es
            resid -= self._lb
            # Per group by slices (np.add.reduceat miscounts an empty group and fails on a last one).
            active = (resid <= _ACTIVE_TOL).tolist()
            active_counts = [sum(active[r0:r1]) for r0, r1 in self._barrier_rows]
            slack = self._s.tolist()
            slacks = [sum(slack[group]) for group in self._group_slack]
        else:
            active_counts = [0] * len(self.barriers)
            slacks = [0.0] * len(self.barriers)
        for b, keys, s, active in zip(self.barriers, self._barrier_keys, slacks, active_counts, strict=True):
            info[keys[0]] = s
            info[keys[1]] = float(active)
            info[keys[2]] = float(b.margin)
        info["active_constraints"] = float(sum(active_counts))
        info["slack_total"] = float(sum(slacks))
        if self.collision_barrier is not None:
            info["d_min"] = float(self.collision_barrier.distance)
        if self.floor_barrier is not None:
            info["floor_clearance"] = float(self.floor_barrier.distance)
        if self.singularity_barrier is not None:
            info["manipulability"] = float(self.singularity_barrier.value)
        for key, t in self._error_keys:
            info[key] = t.error_norm()
        return info

    # ---------------------------------------------------------------- benchmark
    def qp_replay(
        self, qs: FloatArray, vs: FloatArray, references: Sequence[Any] | None = None
    ) -> WarmReplays:
        """The QP floor the benchmark compares with: calling the result with ``k`` runs bare warm
        solves of this controller's QP(s) at state ``k``.

        The controller runs once through the states ``(qs[k], vs[k])`` on ``references[k]`` (as
        the compute benchmark does; without references, holding the one at the first state) and
        every level's problem is recorded as it was passed to the solver; one
        :class:`~..qp.problem.WarmReplay` per level then re-solves them in order (``hqpid``: one QP
        per level, all in one call).
        The controller is cold-started again afterwards, so a benchmark that steps it
        through the same states meets the same problems. No timing here: the caller times
        the calls (``bench.compute``).
        """
        if references is None:
            references = [self.hold_reference(JointState(qs[0], vs[0]))] * len(qs)
        qps = [lv.qp for lv in self.levels]
        recorded: list[list[ProblemData]] = [[] for _ in qps]
        for q, v, reference in zip(qs, vs, references, strict=True):
            self.compute(JointState(q, v), reference)
            for qp, problems in zip(qps, recorded, strict=True):
                problems.append(snapshot(qp))
        self.reset()
        c = self.config
        return WarmReplays(
            [
                WarmReplay(
                    problems,
                    eps_abs=c.eps_abs,
                    max_iter=c.max_iter,
                    reset_proximal=qp.reset_proximal,
                    strict_infeasibility=qp.strict_infeasibility,
                    warm_max_iter=qp.warm_max_iter,
                )
                for qp, problems in zip(qps, recorded, strict=True)
            ]
        )

    # ------------------------------------------------------------------ helpers
    @property
    def joint_acceleration(self) -> FloatArray:
        """``q̈`` (rad/s²) of the last solution used (meaningless after a fallback)."""
        if self._twin_current and self.soft_twin is not None:
            return self.soft_twin.joint_acceleration
        return self._qdd

    @property
    def slack(self) -> FloatArray:
        """Barrier slacks of the last solution used (level 0's)."""
        if self._twin_current and self.soft_twin is not None:
            return self.soft_twin.slack
        return self._s


class QPID(_QPController):
    """Weighted QP inverse dynamics: every task in one QP (see the module docstring)."""

    name = "qpid"
    hierarchical = False


class HQPID(_QPController):
    """Hierarchical QP inverse dynamics: one persistent QP per priority level."""

    name = "hqpid"
    hierarchical = True


__all__ = ["HQPID", "QPID", "QPReference"]
