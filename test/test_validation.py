"""Validation helpers: numbers are numbers, not bools (numpy would turn them into 0 / 1)."""

from __future__ import annotations

import numpy as np
import pytest

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.validation import (
    ROTATION_TOLERANCE,
    all_finite,
    as_positive_float,
    as_rotation,
    as_vector,
)


def test_as_vector_float64_fast_path_copies_and_still_checks() -> None:
    """A float64 vector of the right length skips the general checks only when it is finite and no
    bound is asked: the result is a copy, and bad values or bounds get the same refusals."""
    given = np.array([1.0, -2.0, 3.0])
    out = as_vector("f", given, 3)
    assert out.tolist() == [1.0, -2.0, 3.0] and out is not given and not np.shares_memory(out, given)
    strided = np.arange(6.0)[::2]  # a view: the copy is a contiguous vector of its own
    assert as_vector("f", strided, 3).flags.c_contiguous
    for bad in (np.array([1.0, np.nan, 3.0]), np.array([1.0, np.inf, 3.0])):
        with pytest.raises(ConfigError, match="f: expected finite numbers"):
            as_vector("f", bad, 3)
    assert as_vector("f", np.array([1.0, np.inf, 3.0]), 3, allow_inf=True)[1] == np.inf
    with pytest.raises(ConfigError, match="expected 3 numbers, got shape"):
        as_vector("f", np.zeros(4), 3)
    with pytest.raises(ConfigError, match="expected every entry >= 0"):
        as_vector("f", given, 3, min_value=0.0)
    with pytest.raises(ConfigError, match="expected every entry > 0"):
        as_vector("f", given, 3, strictly_positive=True)
    for other in (np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0], dtype=np.float32)):
        assert as_vector("f", other, 3).dtype == np.float64  # not the fast path's copy


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    "value, finite",
    [
        ([1e200, 0.0, 0.0], True),  # numpy's x·x overflowed here, with a RuntimeWarning
        ([1e308, 1e308, 1.0], True),  # the sum overflows: the elementwise test settles it
        ([np.inf, -np.inf, 0.0], False),
        ([1.0, np.nan, 2.0], False),
        ([-np.inf, 1.0, 2.0], False),
        ([0.0, 1.0, 2.0], True),
    ],
)
def test_all_finite_is_exact_and_never_warns(value: list[float], finite: bool) -> None:
    assert all_finite(np.array(value)) is finite
    assert all_finite(np.array([value, value])) is finite  # the elementwise path
    if finite:
        assert as_vector("f", np.array(value), 3).tolist() == value


@pytest.mark.parametrize(
    "value",
    [
        [True, False, True],
        [1, True, 1],  # numpy gives it an int dtype: the bool would be taken as 1
        [1.0, 2.0, np.True_],
        [[1.0], [True], [2.0]],
        np.array([1, 0, 1], dtype=bool),
        ["1", "x", "3"],
        "123",
        [1j, 2, 3],
        [10**400, 1, 2],
    ],
)
def test_as_vector_refuses_what_is_not_numbers(value: object) -> None:
    with pytest.raises(ConfigError, match="expected 3 numbers"):
        as_vector("f", value, 3)  # type: ignore[arg-type]  # not numbers, on purpose: refused


def test_as_vector_takes_numbers() -> None:
    # A list mixing int, float and np.float32, which NumPy's ArrayLike stub does not spell out.
    assert as_vector("f", [1, 2.5, np.float32(3)], 3).tolist() == [1.0, 2.5, 3.0]  # type: ignore[arg-type]
    assert as_vector("f", np.arange(3), 3).tolist() == [0.0, 1.0, 2.0]
    assert as_vector("f", 2, 3, broadcast_scalar=True).tolist() == [2.0, 2.0, 2.0]
    # PyYAML (a YAML 1.1 reader) reads 1.0e6 as a string: numeric strings are numbers.
    yaml_numbers: list[str | int] = ["1.0e6", 2, "-3"]
    assert as_vector("f", yaml_numbers, 3).tolist() == [1e6, 2.0, -3.0]
    with pytest.raises(ConfigError, match="expected a number or 3 numbers"):
        as_vector("f", True, 3, broadcast_scalar=True)
    # Where a scalar is taken, the message says so (not "7 numbers" for a typo in a scalar kp).
    with pytest.raises(ConfigError, match="f: expected a number or 3 numbers, got '10O'"):
        as_vector("f", "10O", 3, broadcast_scalar=True)


@pytest.mark.parametrize("value", [True, False, "one", b"2", 10**400, float("nan"), "inf", -1.0])
def test_as_positive_float_refuses_non_numbers_and_bad_values(value: object) -> None:
    with pytest.raises(ConfigError, match="f: expected a"):
        as_positive_float("f", value)


def test_as_positive_float_takes_numbers() -> None:
    assert as_positive_float("f", 3) == 3.0 and as_positive_float("f", np.float64(0.5)) == 0.5
    assert as_positive_float("f", 0, allow_zero=True) == 0.0
    assert as_positive_float("f", "1.0e6") == 1e6  # as PyYAML reads it


def test_as_rotation_refuses_bools_and_non_numbers() -> None:
    assert as_rotation("R", np.eye(3)).tolist() == np.eye(3).tolist()
    for value in (np.eye(3, dtype=bool), [["1", "0", "0"], ["0", "x", "0"], ["0", "0", "1"]], "eye"):
        with pytest.raises(ConfigError, match="expected a .*3 x 3 rotation matrix"):
            as_rotation("R", value)


def _reference_is_rotation(R: np.ndarray) -> bool:
    """The check as the general path writes it, on numpy."""
    return bool(
        np.isfinite(R).all()
        and np.linalg.norm(R.T @ R - np.eye(3)) <= ROTATION_TOLERANCE
        and np.linalg.det(R) > 0.0
    )


def test_as_rotation_float_path_agrees_with_the_numpy_check() -> None:
    """float64 matrices take a check on Python floats; it accepts and refuses what numpy's does,
    near the tolerance too, and a refused one gets the general path's message."""
    rng = np.random.default_rng(3)
    candidates = [np.eye(3), -np.eye(3), np.diag([1.0, 1.0, -1.0]), np.zeros((3, 3))]
    for _ in range(300):
        Q, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        Q *= np.sign(np.linalg.det(Q))  # proper
        E = rng.normal(size=(3, 3))
        E /= np.linalg.norm(Q.T @ (Q + E) - np.eye(3))  # scaled below so ‖RᵀR − I‖ straddles the tolerance
        for scale in (0.0, 0.3e-6, 0.9e-6, 1.1e-6, 3e-6, 1e-3):
            candidates.append(Q + scale * E)
        candidates.append(Q * 1.01)
        candidates.append(Q @ np.diag([1.0, 1.0, -1.0]))
    for bad in (np.nan, np.inf, -np.inf):
        R = np.eye(3)
        R[1, 2] = bad
        candidates.append(R)
    accepted = refused = 0
    for R in candidates:
        expected = _reference_is_rotation(R)
        if expected:
            out = as_rotation("R", R)
            assert out.tolist() == R.tolist() and out is not R
            accepted += 1
        else:
            with pytest.raises(ConfigError, match="R: (not a rotation matrix|expected a finite 3 x 3)"):
                as_rotation("R", R)
            refused += 1
    assert accepted > 600 and refused > 900  # both sides of the tolerance were met


def test_as_rotation_float_path_leaves_the_tolerance_itself_to_numpy() -> None:
    """At the tolerance the two computations round differently: this matrix's ‖RᵀR − I‖ is
    1.0000000000021e-6 by numpy (refused) and was accepted by the sum on Python floats. A subclass
    of ndarray comes back as a plain ndarray, as through np.array."""
    R = np.array(
        [
            [-0.09566781070428741, -0.3346386333174422, -0.9374778709545402],
            [-0.07981846240397479, -0.9361860692959444, 0.34232242678560887],
            [-0.9922081689194552, 0.10757673975448401, 0.06285240707347362],
        ]
    )
    assert not _reference_is_rotation(R)
    with pytest.raises(ConfigError, match="not a rotation matrix"):
        as_rotation("R", R)
    # Bisection on the scale of a perturbation: every matrix around the tolerance agrees.
    rng = np.random.default_rng(5)
    for _ in range(20):
        Q, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        Q *= np.sign(np.linalg.det(Q))
        E = rng.normal(size=(3, 3))
        lo, hi = 0.0, 1e-5
        for _step in range(60):
            mid = 0.5 * (lo + hi)
            if _reference_is_rotation(Q + mid * E):
                lo = mid
            else:
                hi = mid
        for scale in (lo, hi, lo * (1 - 1e-12), hi * (1 + 1e-12)):
            R = Q + scale * E
            if _reference_is_rotation(R):
                assert as_rotation("R", R).tolist() == R.tolist()
            else:
                with pytest.raises(ConfigError):
                    as_rotation("R", R)

    class Subclass(np.ndarray):
        pass

    plain = as_rotation("R", np.eye(3).view(Subclass))
    assert type(plain) is np.ndarray and plain.tolist() == np.eye(3).tolist()
