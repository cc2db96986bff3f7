"""Validation helpers: numbers are numbers, not bools (numpy would turn them into 0 / 1)."""

from __future__ import annotations

import numpy as np
import pytest

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.validation import as_positive_float, as_rotation, as_vector


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
        as_vector("f", value, 3)


def test_as_vector_takes_numbers() -> None:
    assert as_vector("f", [1, 2.5, np.float32(3)], 3).tolist() == [1.0, 2.5, 3.0]
    assert as_vector("f", np.arange(3), 3).tolist() == [0.0, 1.0, 2.0]
    assert as_vector("f", 2, 3, broadcast_scalar=True).tolist() == [2.0, 2.0, 2.0]
    # PyYAML (a YAML 1.1 reader) reads 1.0e6 as a string: numeric strings are numbers.
    assert as_vector("f", ["1.0e6", 2, "-3"], 3).tolist() == [1e6, 2.0, -3.0]
    with pytest.raises(ConfigError, match="expected 3 numbers"):
        as_vector("f", True, 3, broadcast_scalar=True)


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
