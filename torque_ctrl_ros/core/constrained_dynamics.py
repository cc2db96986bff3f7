"""Constrained forward dynamics at one frame: Gauss's principle of least constraint.

This is the solve that KDL's Vereshchagin hybrid-dynamics solver ("ACHD") performs,
written on Pinocchio with gravity kept in the dynamics (not as a root acceleration).

Problem
-------
For a frame ``f`` (the tool), ``n_c`` unit constraint directions ``α`` (6 × n_c, columns
``[linear; angular]`` in the base frame) and desired "acceleration energies" ``β`` (n_c),
find the joint accelerations ``q̈`` (rad/s²) that solve::

    min_q̈  ½ (q̈ − q̈_free)ᵀ M (q̈ − q̈_free)
    s.t.   αᵀ ẍ_f = β,   ẍ_f = J q̈ + J̇ q̇

where

* ``J`` (6 × n) is the frame Jacobian in ``LOCAL_WORLD_ALIGNED`` (velocity of the frame
  origin and angular velocity, both in base axes) and ``J̇ q̇`` the drift of the frame's
  *classical* acceleration (a point on a circle has its centripetal term here);
* ``q̈_free = M⁻¹ (τ_ff + Jᵀ f_ext − c)`` is the unconstrained motion under the
  feed-forward torque ``τ_ff`` (N·m), an optional external wrench ``f_ext`` = ``[f; m]``
  (N, N·m) acting at the frame origin in base axes, and ``c = C(q, q̇) q̇ + g(q)``.

With ``A = J_c = αᵀ J`` (n_c × n), ``b = β − αᵀ J̇ q̇`` and the Delassus matrix
``D = A M⁻¹ Aᵀ`` (n_c × n_c, the inverse operational-space inertia along ``α``)::

    λ  = D⁻¹ (b − A q̈_free)           (the Lagrange multipliers: N or N·m per column)
    q̈  = q̈_free + M⁻¹ Aᵀ λ
    M q̈ + c = τ_ff + Jᵀ f_ext + J_cᵀ λ   (exactly, by construction)

``J_cᵀ λ`` is the constraint torque. The torque that realises ``q̈`` on a plant whose
only inputs are the joint torques is ``RNEA(q, q̇, q̈) = M q̈ + c`` (no external wrench).

Gravity
-------
``β`` is the desired acceleration of the frame in the *inertial* base frame (a held tool
has ``β = 0``). Gravity is part of ``c`` through Pinocchio's ``model.gravity``; it is not
modelled as a fictitious root acceleration. In KDL's convention (root acceleration ``+g``)
the solver's constraint torque is ``≈ M q̈ − c`` instead; sending that to a plant without
gravity compensation leaves a ``−2 M⁻¹ c`` error, which is why the command here is always
the full RNEA torque.

Regularisation
--------------
``D`` becomes singular when the constraint directions cannot all be moved (a kinematic
singularity, or ``α`` along a direction the arm cannot reach). With eigenvalues
``d_min ≤ … ≤ d_max`` of ``D`` and ``ε = rcond · max(d_max, d_ref)``, if ``d_min < ε`` the solve
uses ``(D + μ I)⁻¹`` with ``μ = ε (1 − (max(d_min, 0)/ε)²)`` (continuous in the state,
``0 < μ ≤ ε``; a rounding-negative ``d_min`` gets ``μ = ε``), the usual damped least squares;
the result says so and reports the constraint residual. The equation of motion above still
holds exactly: only the constraint is relaxed.

``d_ref`` is the workspace scale of ``D`` for these ``α``, fixed for the frame:
``d_ref = max_j Σ_i s_i α_ij²`` with ``s_i`` the largest ``(J M⁻¹ Jᵀ)_ii`` over sample
configurations (:func:`delassus_axis_scale`; 1/kg along a linear axis, 1/(kg·m²) along an
angular one). A threshold relative to ``d_max`` alone never damps a Delassus matrix whose
eigenvalues all shrink together: one constrained axis (``D`` is 1 × 1, ``d_min = d_max``), or
``y, z`` at the stretched pose. With ``z`` alone, 1e-6 rad from the Gen3's stretched pose,
``D = 1.1e-11`` went undamped and a target 2.8 cm lower asked 8.5e6 rad/s². With six axes
``d_max`` stayed within 3 % of ``d_ref`` over 20 000 random Gen3 poses: ``d_ref`` changes
little there. A frame that no joint moves has ``d_ref = 0`` and ``D = 0``: ``ε = rcond``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from .errors import ConfigError, SolverError, TargetError, TorqueCtrlError
from .robot import ROW_CHECK_SAMPLES, RobotModel, sample_configurations
from .validation import FloatArray, as_vector

# The generalised ufunc behind numpy.linalg.eigh (LAPACK syevd, lower triangle): the same
# results without the wrapper's checks, which cost as much as the 6 × 6 solve itself. Falls
# back to numpy.linalg.eigh on a numpy without that private module.
_eigh_lower: Callable[[FloatArray], tuple[FloatArray, FloatArray]] = getattr(
    getattr(np.linalg, "_umath_linalg", None), "eigh_lo", np.linalg.eigh
)

#: Names of the six Cartesian axes, in the order of a ``[linear; angular]`` 6-vector.
AXIS_NAMES: tuple[str, ...] = ("x", "y", "z", "rx", "ry", "rz")

#: A column of ``α`` must have norm ``1 ± UNIT_TOLERANCE``.
UNIT_TOLERANCE = 1e-6
#: ``α`` must have smallest singular value above this (its columns are unit vectors).
RANK_TOLERANCE = 1e-6
#: Smallest ``rcond``. ``D``'s eigenvalues carry rounding of ~1e-16·d_max (a ``d_min`` of
#: −6.6e-14 against ``d_max`` 1570 at the stretched pose). Below ~1e-15, ``ε`` falls under that
#: rounding, a rounding-negative ``d_min`` can leave ``d_min + μ < 0``, and the solve follows the
#: rounding (at the zero pose, a target 2.8 cm lower: largest torque 0.001 N·m with rcond 1e-6
#: or 1e-12, 0.014 with 1e-15, 0.445 with 1e-17). 1e-12 keeps ``ε`` well above the rounding.
MIN_RCOND = 1e-12


def alpha_from_axes(axes: Sequence[str], *, error: type[TorqueCtrlError] = TargetError) -> FloatArray:
    """Constraint directions ``α`` (6 × n_c) for named base-frame axes.

    Args:
        axes: a non-empty subset of :data:`AXIS_NAMES` (``x, y, z`` linear, ``rx, ry, rz``
            angular), in the order the columns should have; no duplicates.
        error: the exception type raised on a bad list.
    """
    if isinstance(axes, str) or not isinstance(axes, Sequence):
        raise error(f"constrained axes: expected a list of names from {list(AXIS_NAMES)}, got {axes!r}")
    names = [str(a).strip().lower() for a in axes]
    unknown = [a for a in names if a not in AXIS_NAMES]
    if unknown:
        raise error(f"constrained axes: unknown name(s) {unknown}; valid names are {list(AXIS_NAMES)}")
    if len(set(names)) != len(names):
        raise error(f"constrained axes: duplicate names in {names}")
    if not names:
        raise error(f"constrained axes: expected 1 to 6 names from {list(AXIS_NAMES)}, got none")
    alpha = np.zeros((6, len(names)))
    for col, name in enumerate(names):
        alpha[AXIS_NAMES.index(name), col] = 1.0
    return alpha


def check_alpha(alpha: ArrayLike, *, error: type[TorqueCtrlError] = TargetError) -> FloatArray:
    """Return ``α`` as a float (6 × n_c) array, or raise ``error``.

    Requirements: 1 ≤ n_c ≤ 6 columns, finite, each column of unit norm
    (±:data:`UNIT_TOLERANCE`), linearly independent (smallest singular value of ``α``
    above :data:`RANK_TOLERANCE`). For :meth:`ConstrainedDynamics.solve`, which takes any ``α``
    (the tests' random ones); the controller's comes from :func:`alpha_from_axes`, valid by
    construction.
    """
    try:
        a = np.array(alpha, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"alpha: expected a 6 x n_c array of numbers ({exc})") from None
    if a.ndim == 1 and a.shape == (6,):
        a = a.reshape(6, 1)
    if a.ndim != 2 or a.shape[0] != 6 or not 1 <= a.shape[1] <= 6:
        raise error(f"alpha: expected shape (6, n_c) with 1 <= n_c <= 6, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise error(f"alpha: expected finite numbers, got {a.tolist()}")
    norms = np.linalg.norm(a, axis=0)
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_TOLERANCE)
    if bad.size:
        raise error(
            f"alpha: every column must be a unit vector; column(s) {bad.tolist()} have norm "
            f"{norms[bad].tolist()}"
        )
    sigma_min = float(np.linalg.svd(a, compute_uv=False)[-1])
    if sigma_min <= RANK_TOLERANCE:
        raise error(
            f"alpha: the {a.shape[1]} columns are linearly dependent (smallest singular value "
            f"{sigma_min:.3g}); each constraint direction must be independent of the others"
        )
    return a


def delassus_axis_scale(robot: RobotModel, frame_index: int, samples: FloatArray | None = None) -> FloatArray:
    """Workspace scale ``s`` (6,) of the Delassus matrix along each base axis of a frame.

    ``s_i = max_k (J M⁻¹ Jᵀ)_ii`` over the configurations ``q_k`` (rad), with ``J`` the frame's
    ``LOCAL_WORLD_ALIGNED`` Jacobian: the largest inverse inertia the frame shows along axis
    ``i`` (1/kg for ``x, y, z``, 1/(kg·m²) for ``rx, ry, rz``). ``samples`` (m × n) defaults to
    :data:`~.robot.ROW_CHECK_SAMPLES` of :func:`~.robot.sample_configurations`. Zero along an axis
    no joint moves (every axis of ``base_link``). Uses a data buffer of its own.
    """
    model = robot.model
    data = model.createData()
    qs = sample_configurations(robot, ROW_CHECK_SAMPLES) if samples is None else samples
    scale = np.zeros(6)
    for q in qs:
        q_pin = robot.configuration(q)
        pin.computeJointJacobians(model, data, q_pin)
        pin.updateFramePlacement(model, data, frame_index)
        jac = pin.getFrameJacobian(model, data, frame_index, pin.LOCAL_WORLD_ALIGNED)
        pin.crba(model, data, q_pin)
        pin.cholesky.decompose(model, data)
        m_inv_jt = pin.cholesky.computeMinv(model, data).dot(jac.T)  # M⁻¹ Jᵀ (n × 6)
        np.maximum(scale, np.einsum("ij,ji->i", jac, m_inv_jt), out=scale)
    return scale


def selection_rows(alpha: FloatArray) -> slice | np.ndarray | None:
    """Rows ``r`` with ``αᵀ·X = X[r]`` exactly when every column of ``α`` is a unit axis, else ``None``.

    Consecutive ascending axes (e.g. all six) give a ``slice``, so ``X[r]`` is a view.
    """
    ones = alpha == 1.0
    if not (bool(np.all(ones | (alpha == 0.0))) and bool(np.all(ones.sum(axis=0) == 1))):
        return None
    rows = np.argmax(ones, axis=0)
    if np.array_equal(rows, np.arange(rows[0], rows[0] + rows.size)):
        return slice(int(rows[0]), int(rows[0]) + rows.size)
    return rows


@dataclass(slots=True)
class FrameKinematics:
    """Kinematics of the constrained frame at one state (base frame, LOCAL_WORLD_ALIGNED).

    A record made every control step, read-only by convention: not a frozen dataclass, whose
    ``__init__`` sets each field through ``object.__setattr__`` (1.45 µs for 11 fields against
    0.29, Python 3.11), as :class:`ConstrainedDynamicsResult` and ``AchdSolution`` are not.

    Attributes:
        placement: pose of the frame in the base frame.
        jacobian: ``J`` (6 × n): ``[ṗ; ω] = J q̇`` (m/s, rad/s).
        velocity: ``J q̇`` (6,): linear (m/s) and angular (rad/s) velocity.
        drift: ``J̇ q̇`` (6,): classical acceleration at ``q̈ = 0`` (m/s², rad/s²).
    """

    placement: pin.SE3
    jacobian: FloatArray
    velocity: FloatArray
    drift: FloatArray


@dataclass(slots=True)
class ConstrainedDynamicsResult:
    """Output of :meth:`ConstrainedDynamics.solve`, read-only by convention (a record made every
    control step: see :class:`FrameKinematics`).

    Attributes:
        qdd: joint accelerations ``q̈`` (rad/s²).
        lam: Lagrange multipliers ``λ`` (n_c,): force (N) or moment (N·m) along each column of α.
        constraint_torque: ``J_cᵀ λ`` (N·m), the joint torque the constraints exert.
        qdd_free: the unconstrained accelerations ``q̈_free`` (rad/s²).
        regularised: ``True`` if the Delassus matrix was damped (see the module docs).
        damping: the damping ``μ`` added to the Delassus matrix (0 when not regularised).
        delassus_condition: ``d_max / d_min`` of ``D`` (``inf`` if ``d_min <= 0``).
        constraint_residual: ``‖αᵀ(J q̈ + J̇ q̇) − β‖`` (mixed m/s², rad/s²); ~0 unless regularised.
        kinematics: the frame kinematics the solve used.
        constraint_jacobian: ``J_c = αᵀ J`` (n_c × n).
        delassus_eigen: ``(V, d + μ)``: the eigenvectors and damped eigenvalues of the Delassus
            matrix, ``(D + μ·I)⁻¹ = V·diag(1/(d + μ))·Vᵀ``.
    """

    qdd: FloatArray
    lam: FloatArray
    constraint_torque: FloatArray
    qdd_free: FloatArray
    regularised: bool
    damping: float
    delassus_condition: float
    constraint_residual: float
    kinematics: FrameKinematics
    constraint_jacobian: FloatArray
    delassus_eigen: tuple[FloatArray, FloatArray]

    def beta_torque(self, beta: FloatArray) -> FloatArray:
        """``J_cᵀ·(D + μ·I)⁻¹·β`` (N·m): the share of ``β`` in the command ``τ = M·q̈ + c``.

        ``q̈ = q̈_free + M⁻¹·J_cᵀ·(D + μ·I)⁻¹·(β − αᵀJ̇q̇ − J_c·q̈_free)`` is affine in ``β``, so
        ``τ(β) − τ(0) = M·M⁻¹·J_cᵀ·(D + μ·I)⁻¹·β`` (the same state, ``τ_ff`` and wrench).
        """
        vectors, damped = self.delassus_eigen
        return self.constraint_jacobian.T.dot(vectors.dot(vectors.T.dot(beta) / damped))


class ConstrainedDynamics:
    """Gauss-principle constrained dynamics of ``robot`` with constraints at one frame.

    Owns its own Pinocchio data buffer, so it does not disturb :attr:`RobotModel.data`
    (still not thread-safe: one instance per thread).

    Cost per control step: :meth:`kinematics` runs one ``pinocchio.computeAllTerms`` pass
    (placements, velocities, bias accelerations at ``q̈ = 0``, joint Jacobians, ``M``,
    ``c`` and ``g``); a :meth:`solve` given those kinematics reuses ``M``, ``c`` and ``g``
    instead of running CRBA and RNEA again, and works on ``n × n_c`` matrices only.

    Args:
        robot: the arm.
        frame: name of the constrained frame (e.g. ``"end_effector_link"``).
        rcond: relative threshold on the Delassus eigenvalues below which the solve is
            damped (see the module docs), in ``[MIN_RCOND, 1)``.

    Attributes:
        axis_scale: :func:`delassus_axis_scale` of the frame (6,), computed once: the ``s_i`` of
            ``d_ref`` (module docs, "Regularisation").
    """

    def __init__(self, robot: RobotModel, frame: str, *, rcond: float = 1e-6) -> None:
        if not (isinstance(rcond, float | int) and MIN_RCOND <= float(rcond) < 1.0):
            raise ConfigError(f"rcond: expected a number in [{MIN_RCOND:g}, 1), got {rcond!r}")
        self.robot = robot
        self.frame = frame
        self.frame_index = robot.frame_id(frame)
        self.rcond = float(rcond)
        self._model = robot.model
        self._data = robot.model.createData()
        self.axis_scale = delassus_axis_scale(robot, self.frame_index)
        self._scale_key: object = None  # the selection _axis_scale_of last read, and its d_ref
        self._scale_of_rows = 0.0
        n = robot.n
        #: Pinocchio configuration of the last :meth:`kinematics` call.
        self.configuration = np.zeros(robot.model.nq)
        # Dynamics terms at the state of the last kinematics() call, and the FrameKinematics
        # object they belong to: solve() reuses them only when handed that very object.
        self._terms_of: FrameKinematics | None = None
        self._nle = np.zeros(n)
        self._m_inv: FloatArray | None = None

    # ------------------------------------------------------------ kinematics
    def kinematics(self, q: FloatArray, v: FloatArray) -> FrameKinematics:
        """Pose, Jacobian, velocity and acceleration drift of the frame at ``(q, q̇)``.

        One ``computeAllTerms`` pass; ``M(q)``, ``c(q, q̇)`` and ``g(q)`` are kept for a
        :meth:`solve` (and :meth:`gravity`) given the returned object.
        """
        model, data, fid = self._model, self._data, self.frame_index
        q_pin = self.configuration
        np.copyto(q_pin, self.robot.configuration(q))
        # Placements, velocities, bias accelerations (q̈ = 0), joint Jacobians, M (both
        # triangles from the Python binding), nle and g in one pass.
        pin.computeAllTerms(model, data, q_pin, v)
        pin.updateFramePlacement(model, data, fid)
        drift = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        jac = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)  # a new array
        # data.nle and data.g stay valid until the next pass on this buffer (the next
        # kinematics() call, or a solve() handed other kinematics): no copies needed.
        self._nle = data.nle
        self._m_inv = None  # factorised lazily: hold_reference() needs no inverse
        kin = FrameKinematics(data.oMf[fid].copy(), jac, jac.dot(v), np.array(drift))
        self._terms_of = kin
        return kin

    def gravity(self, q: FloatArray, kinematics: FrameKinematics | None = None) -> FloatArray:
        """``g(q)`` (N·m); free when ``kinematics`` is the last :meth:`kinematics` result at ``q``."""
        if kinematics is not None and kinematics is self._terms_of:
            return self._data.g.copy()
        return self.robot.gravity(q)

    def _terms(self, q: FloatArray, v: FloatArray, kin: FrameKinematics) -> tuple[FloatArray, FloatArray]:
        """``M⁻¹`` (n × n) and ``c`` (n,) at ``(q, q̇)``, reusing :meth:`kinematics`' pass when possible."""
        model, data = self._model, self._data
        if kin is not self._terms_of:
            # Kinematics from elsewhere: compute the dynamics terms for (q, q̇) afresh.
            self._terms_of = None
            q_pin = self.robot.configuration(q)
            self._nle = np.array(pin.nonLinearEffects(model, data, q_pin, v))
            pin.crba(model, data, q_pin)
            self._m_inv = None
        if self._m_inv is None:
            # Cholesky of M (Pinocchio's sparse, tree-structured one), then M⁻¹ from it.
            pin.cholesky.decompose(model, data)
            self._m_inv = pin.cholesky.computeMinv(model, data)  # a new array
        return self._m_inv, self._nle

    # ----------------------------------------------------------------- solve
    def solve(
        self,
        q: FloatArray,
        v: FloatArray,
        alpha: ArrayLike,
        beta: ArrayLike,
        tau_ff: ArrayLike | None = None,
        f_ext: ArrayLike | None = None,
        *,
        kinematics: FrameKinematics | None = None,
    ) -> ConstrainedDynamicsResult:
        """Solve Gauss's principle for ``q̈`` and ``λ`` (formulas in the module docs), any ``α``.

        The checked entry point, the reference the tests compare with: every input but ``q`` and
        ``v`` (the caller's to check) is validated on each call (:func:`check_alpha` included). The
        controller validates once and calls :meth:`solve_validated` each step.

        Args:
            q, v: joint angles (rad) and velocities (rad/s), already validated.
            alpha: unit constraint directions (6 × n_c, base frame, ``[linear; angular]``).
            beta: desired acceleration along each column, ``αᵀ ẍ_f`` (m/s² or rad/s²).
            tau_ff: feed-forward joint torque (N·m), default zero.
            f_ext: external wrench ``[f; m]`` (N, N·m) on the frame, at its origin, base
                axes; default zero. It enters the free motion as ``Jᵀ f_ext``.
            kinematics: :meth:`kinematics` at the same ``(q, v)`` if the caller already has it.

        Raises:
            TargetError: malformed ``alpha``, ``beta``, ``tau_ff`` or ``f_ext``.
            SolverError: the result is not finite (never returned).
        """
        n = self.robot.n
        a_mat = check_alpha(alpha)
        n_c = a_mat.shape[1]
        b_vec = as_vector("beta", beta, n_c, error=TargetError)
        tau = np.zeros(n) if tau_ff is None else as_vector("tau_ff", tau_ff, n, error=TargetError)
        wrench = None if f_ext is None else as_vector("f_ext", f_ext, 6, error=TargetError)
        return self.solve_validated(q, v, a_mat, b_vec, tau, wrench, kinematics)

    def _axis_scale_of(self, rows: slice | np.ndarray) -> float:
        """``d_ref`` of the axes ``rows`` selects (``max_j Σ_i s_i α_ij²`` for unit columns: the
        largest ``s_i`` of those axes), kept for the last selection (by its contents: an array
        changed in place is another selection): a controller passes the same one every step, and
        indexing with it each time was 3 % of an ``achd_rnea`` step."""
        if isinstance(rows, slice):
            key: object = (rows.start, rows.stop, rows.step)
        else:  # the dtype and shape too: int64 [3] and int32 [3, 0] are the same bytes
            key = (rows.dtype.str, rows.shape, rows.tobytes())
        if key != self._scale_key:
            self._scale_key, self._scale_of_rows = key, float(self.axis_scale[rows].max())
        return self._scale_of_rows

    def solve_validated(
        self,
        q: FloatArray,
        v: FloatArray,
        alpha: FloatArray,
        beta: FloatArray,
        tau_ff: FloatArray,
        f_ext: FloatArray | None = None,
        kinematics: FrameKinematics | None = None,
        alpha_rows: slice | np.ndarray | None = None,
    ) -> ConstrainedDynamicsResult:
        """:meth:`solve` for inputs the caller has already validated (the per-step path).

        ``alpha`` (6 × n_c) as :func:`check_alpha` returns it; ``beta`` (n_c,), ``tau_ff``
        (n,) and ``f_ext`` (6,) finite float64 arrays. Same results and errors otherwise.
        ``alpha_rows``: when ``α`` selects Cartesian axes (every column a unit axis, as
        :func:`alpha_from_axes` gives), :func:`selection_rows` of it; then ``αᵀ·X = X[rows]``
        exactly and two matrix products are saved.
        """
        kin = self.kinematics(q, v) if kinematics is None else kinematics
        tau = tau_ff if f_ext is None else tau_ff + kin.jacobian.T.dot(f_ext)
        m_inv, c = self._terms(q, v, kin)

        rows = alpha_rows
        if rows is not None:
            jc = kin.jacobian[rows]  # = αᵀ J, n_c × n
            drift_c = kin.drift[rows]  # = αᵀ J̇ q̇ (n_c,)
            d_ref = self._axis_scale_of(rows)
        else:
            jc = alpha.T.dot(kin.jacobian)
            drift_c = alpha.T.dot(kin.drift)
            d_ref = float(self.axis_scale.dot(alpha * alpha).max())
        qdd_free = m_inv.dot(tau - c)
        rhs = beta - drift_c - jc.dot(qdd_free)
        m_inv_jct = m_inv.dot(jc.T)  # n × n_c
        delassus = jc.dot(m_inv_jct)  # symmetric up to rounding
        # The eigendecomposition reads the lower triangle only, which is as good as the
        # symmetric part ½(D + Dᵀ) (they differ by rounding). Should LAPACK fail, the
        # eigenvalues are NaN and the finiteness check below raises SolverError.
        eigval, eigvec = _eigh_lower(delassus)
        d_min, d_max = float(eigval[0]), float(eigval[-1])
        condition = d_max / d_min if d_min > 0.0 else float("inf")
        # The floor d_ref: relative to d_max alone, a D whose eigenvalues all shrink together
        # (one constrained axis, d_min = d_max) would never be damped however small it got.
        scale = max(d_max, d_ref)
        eps = self.rcond * scale if scale > 0.0 else self.rcond
        regularised = not d_min >= eps
        mu = eps * (1.0 - (max(d_min, 0.0) / eps) ** 2) if regularised else 0.0
        # A null Delassus matrix (no joint moves the constrained axes) still gets mu = eps > 0.
        damped = eigval + mu
        lam = eigvec.dot(eigvec.T.dot(rhs) / damped)
        qdd = qdd_free + m_inv_jct.dot(lam)
        r = jc.dot(qdd) + drift_c - beta
        residual = math.sqrt(float(r.dot(r)))
        constraint_torque = jc.T.dot(lam)
        # Squared norms are non-finite iff an entry is (or an entry exceeds ~1e154, which is
        # no usable acceleration either): two dot products instead of isfinite() + all().
        if not math.isfinite(float(qdd.dot(qdd)) + float(lam.dot(lam))):
            raise SolverError(
                f"constrained dynamics at {self.frame!r}: non-finite result "
                f"(Delassus eigenvalues {eigval.tolist()})"
            )
        return ConstrainedDynamicsResult(
            qdd=qdd,
            lam=lam,
            constraint_torque=constraint_torque,
            qdd_free=qdd_free,
            regularised=regularised,
            damping=mu,
            delassus_condition=condition,
            constraint_residual=residual,
            kinematics=kin,
            constraint_jacobian=jc,
            delassus_eigen=(eigvec, damped),
        )


__all__ = [
    "AXIS_NAMES",
    "ConstrainedDynamics",
    "ConstrainedDynamicsResult",
    "FrameKinematics",
    "alpha_from_axes",
    "check_alpha",
    "delassus_axis_scale",
    "selection_rows",
]
