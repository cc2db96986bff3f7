"""Small validators shared by the configuration objects and the controllers.

Every failure raises :class:`~torque_ctrl_ros.core.errors.ConfigError` (or the
error type passed in) with a message naming the field, what was expected and
what was received, so a wrong YAML value is found without reading code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import ConfigError, TorqueCtrlError

FloatArray = NDArray[np.float64]


def _numeric(value: Any) -> bool:
    """Whether ``value`` holds only real numbers: ints, floats, or strings of them (PyYAML, a
    YAML 1.1 reader, reads ``1.0e6`` as a string), not bools, which numpy would turn into 0 / 1,
    nor complex numbers or other objects."""
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError, OverflowError):  # ragged nesting, ...
        return True  # let the conversion report it
    return kind in "iufU" and not _has_bool(value)


def _has_bool(value: Any) -> bool:
    """A bool anywhere in nested lists / tuples: numpy gives ``[1.0, True]`` a float dtype."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (list, tuple)) and any(_has_bool(v) for v in value)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def as_vector(
    field: str,
    value: ArrayLike,
    size: int,
    *,
    broadcast_scalar: bool = False,
    min_value: float | None = None,
    strictly_positive: bool = False,
    allow_inf: bool = False,
    error: type[TorqueCtrlError] = ConfigError,
) -> FloatArray:
    """Return ``value`` as a new float64 vector of length ``size`` or raise ``error``.

    Args:
        field: name used in the message (e.g. ``"computed_torque.kp"``).
        value: a sequence of numbers, or a scalar when ``broadcast_scalar``.
        size: expected length.
        broadcast_scalar: accept a scalar and repeat it ``size`` times.
        min_value: reject entries below this bound.
        strictly_positive: reject entries ``<= 0``.
        allow_inf: accept ``±inf`` entries (never NaN).

    A finite float64 vector of the right length without bounds to check (a reference a node may
    pass every control step) is copied after :func:`all_finite`, ~0.8 µs against ~2 for the
    checks below.
    """
    if (
        type(value) is np.ndarray
        and value.dtype == np.float64
        and value.shape == (size,)
        and min_value is None
        and not strictly_positive
        and all_finite(value)
    ):
        return value.copy()
    expected = f"a number or {size} numbers" if broadcast_scalar else f"{size} numbers"
    if not _numeric(value):
        raise error(f"{field}: expected {expected}, got {_describe(value)}")
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{field}: expected {expected}, got {_describe(value)} ({exc})") from None
    if arr.ndim == 0 and broadcast_scalar:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise error(f"{field}: expected {expected}, got shape {arr.shape}: {_describe(value)}")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        raise error(f"{field}: expected finite numbers, got {_describe(arr.tolist())}")
    if min_value is not None and (arr < min_value).any():
        raise error(f"{field}: expected every entry >= {min_value}, got {_describe(arr.tolist())}")
    if strictly_positive and (arr <= 0.0).any():
        raise error(f"{field}: expected every entry > 0, got {_describe(arr.tolist())}")
    return arr


#: Largest ``‖RᵀR − I‖`` (Frobenius norm) accepted for a rotation matrix.
ROTATION_TOLERANCE = 1e-6


def as_rotation(field: str, value: Any, *, error: type[TorqueCtrlError] = ConfigError) -> FloatArray:
    """Return ``value`` as a new finite 3 × 3 proper rotation matrix or raise ``error``.

    Proper: ``‖RᵀR − I‖ ≤`` :data:`ROTATION_TOLERANCE` and ``det R > 0`` (a reflection or a
    scaled rotation would give a meaningless orientation error).

    A plain float64 3 × 3 array (a target a node may pass every control step) is checked on
    Python floats first, ~1 µs against ~7 for the numpy calls; one that this check does not
    accept clearly (within a margin of the tolerance, where the two round differently) goes
    through them too, which decide and word the message.
    """
    if (
        type(value) is np.ndarray
        and value.dtype == np.float64
        and value.shape == (3, 3)
        and _is_proper_rotation(value.tolist())
    ):
        return value.copy()
    try:
        if not _numeric(value):
            raise TypeError("not numbers")
        R = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise error(f"{field}: expected a 3 x 3 rotation matrix, got {_describe(value)}") from None
    if R.shape != (3, 3) or not np.isfinite(R).all():
        raise error(f"{field}: expected a finite 3 x 3 rotation matrix, got {_describe(R.tolist())}")
    if np.linalg.norm(R.T @ R - np.eye(3)) > ROTATION_TOLERANCE or np.linalg.det(R) <= 0.0:
        raise error(f"{field}: not a rotation matrix: {_describe(R.tolist())}")
    return R


_FAST_ROTATION_BOUND = (ROTATION_TOLERANCE * (1.0 - 1e-6)) ** 2


def _is_proper_rotation(rows: list[list[float]]) -> bool:
    """``‖RᵀR − I‖`` at most :data:`ROTATION_TOLERANCE` less a relative margin of 1e-6 (the
    numpy check, rounded differently, refused matrices 1e-16 over the tolerance that this sum
    accepted) and ``det R > 0``, for ``R`` given by its rows; ``False`` for any NaN or infinite
    entry (every comparison with NaN is false)."""
    (a, b, c), (d, e, f), (g, h, i) = rows
    # Entries of RᵀR − I: the columns' squared norms less 1 and their pairwise dot products.
    n00, n11, n22 = a * a + d * d + g * g - 1.0, b * b + e * e + h * h - 1.0, c * c + f * f + i * i - 1.0
    n01, n02, n12 = a * b + d * e + g * h, a * c + d * f + g * i, b * c + e * f + h * i
    squared_norm = n00 * n00 + n11 * n11 + n22 * n22 + 2.0 * (n01 * n01 + n02 * n02 + n12 * n12)
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    return squared_norm <= _FAST_ROTATION_BOUND and det > 0.0


def all_finite(x: FloatArray) -> bool:
    """``True`` if every entry of the float64 array ``x`` is finite (no NaN, no ±inf).

    For a vector this is one sum of Python floats: ``Σ xᵢ`` is finite exactly when every entry is
    (an inf gives ±inf or NaN, a NaN gives NaN), unless finite entries near 1.8e308 overflow it,
    which the elementwise test then settles. Python's float arithmetic never warns, where numpy's
    ``x·x`` warned of an overflow for entries beyond ~1e154 (a garbage target, a rogue state).
    ~0.3 µs for a 7-vector; ``np.isfinite(x).all()`` costs ~1.3 µs.
    """
    if x.ndim == 1 and math.isfinite(sum(x.tolist())):
        return True
    return bool(np.isfinite(x).all())


def as_positive_float(field: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float ``> 0`` (``>= 0`` with ``allow_zero``)."""
    try:
        if isinstance(value, bool | bytes) or not _numeric(value):
            raise TypeError("not a number")
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{field}: expected a number, got {_describe(value)}") from None
    if not np.isfinite(x) or x < 0.0 or (x == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{field}: expected a finite number {bound}, got {_describe(value)}")
    return x


def as_seconds(
    field: str, value: Any, at_most: float, *, allow_zero: bool = False, at_least: float = 0.0
) -> float:
    """Return ``value`` as a duration (s): as :func:`as_positive_float`, ``<= at_most`` and, unless
    zero is allowed and given, ``>= at_least``.

    The upper bound catches a time written in milliseconds (``max_age: 20`` would accept states 20
    s old); each caller's is far beyond any sensible setting. The lower bound, where a caller gives
    one, is the shortest time the setting can mean anything for: a timeout shorter than one control
    period expires before the next state or command can come.
    """
    x = as_positive_float(field, value, allow_zero=allow_zero)
    if x > at_most:
        raise ConfigError(
            f"{field}: {x:g} s is more than the {at_most:g} s accepted (the value is in seconds, "
            "not milliseconds)"
        )
    if x < at_least and not (allow_zero and x == 0.0):
        raise ConfigError(f"{field}: {x:g} s is less than the {at_least:g} s accepted")
    return x


def check_choice(field: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise listing them."""
    if value not in choices:
        raise ConfigError(f"{field}: expected one of {list(choices)}, got {_describe(value)}")
    return str(value)
