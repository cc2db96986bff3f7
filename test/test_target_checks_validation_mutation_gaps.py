"""Behaviours of the target checks and the shared validators that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/target_checks.py`` (joint targets, waypoints, references) and ``core/validation.py`` (the
checks of parameters and arrays).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_target_checks import HOME, _refusal

from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.target_checks import MAX_TARGET_ACCELERATION, checked_joint_reference
from torque_ctrl_ros.core.validation import _describe, as_seconds, as_vector, check_choice


# ------------------------------------------------------------------------------------------------
# core/target_checks.py
# ------------------------------------------------------------------------------------------------
def test_a_reference_acceleration_one_ulp_above_its_bound_is_refused() -> None:
    """An acceleration of the next float above :data:`MAX_TARGET_ACCELERATION` (1e4 rad/s²) is
    refused, naming the reference and the field. Mutant: the acceleration's bound in
    ``check_target_rates`` loosened (``1e4 + 1``), which the 1e308 case alone let through."""
    a = np.zeros(7)
    a[6] = np.nextafter(MAX_TARGET_ACCELERATION, np.inf)
    assert _refusal(checked_joint_reference, "reference", 7, HOME, None, a).startswith(
        "reference acceleration: an entry above 10000 rad/s² or m/s² in size"
    )


@pytest.mark.parametrize("field", ["position", "velocity", "acceleration"])
def test_a_reference_part_of_the_wrong_length_is_a_target_error_naming_it(field: str) -> None:
    """Six numbers for a 7-joint reference's positions, velocities or accelerations: a
    :class:`TargetError` (what a target source refuses a message with, not a configuration error)
    whose message begins with ``what`` and the part. Mutants in ``checked_joint_reference``:
    ``error=TargetError`` dropped from the acceleration's ``as_vector`` (a ``ConfigError``);
    ``"position"`` for ``f"{what} position"`` (the message no longer said whose positions)."""
    parts: dict[str, object] = {"position": HOME, "velocity": None, "acceleration": None}
    parts[field] = [0.0] * 6
    with pytest.raises(TargetError, match=rf"^posture target {field}: expected 7 numbers, got shape \(6,\)"):
        checked_joint_reference("posture target", 7, *parts.values())


# ------------------------------------------------------------------------------------------------
# core/validation.py
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [(1.0, True, 2.0), (1, 2, np.True_)])
def test_as_vector_refuses_a_bool_inside_a_tuple(value: object) -> None:
    """A bool in a tuple is no number, as in a list: numpy would read ``True`` as 1. Mutant:
    ``_has_bool`` recursing into lists only, so ``(1.0, True, 2.0)`` came back as
    ``[1.0, 1.0, 2.0]``."""
    with pytest.raises(ConfigError, match=r"^f: expected 3 numbers, got "):
        as_vector("f", value, 3)  # type: ignore[arg-type]  # a bool among numbers, on purpose


def test_as_seconds_takes_its_upper_bound_itself() -> None:
    """The upper bound is inclusive: a duration of exactly ``at_most`` is accepted, the next float
    above it refused naming the field. Mutant: ``x >= at_most`` for ``x > at_most`` in
    ``as_seconds`` (the bound itself refused as milliseconds)."""
    assert as_seconds("timeout", 2.0, 2.0) == 2.0
    with pytest.raises(ConfigError, match=r"^timeout: 2 s is more than the 2 s accepted"):
        as_seconds("timeout", np.nextafter(2.0, 3.0), 2.0)


def test_a_long_value_is_cut_to_120_characters_in_a_message() -> None:
    """A refused value's text is cut to 117 characters and ``...`` (a wrong-length vector of 10⁴
    entries is no 100 kB log line); one of 120 characters is kept whole. Mutant: ``_describe``
    returning the whole ``repr``."""
    assert _describe("x" * 118) == repr("x" * 118)
    text = _describe(list(range(10_000)))
    assert len(text) == 120 and text.endswith("...")
    with pytest.raises(ConfigError) as info:
        as_vector("kp", list(range(10_000)), 7)
    assert len(str(info.value)) < 200


def test_check_choice_refuses_a_missing_value_by_name() -> None:
    """A YAML ``null`` (``None``) is no choice: refused listing the valid ones, not returned as
    the string ``"None"``. Mutant: ``value is not None`` added to the refusal's condition."""
    with pytest.raises(ConfigError, match=r"^mode: expected one of \['a', 'b'\], got None$"):
        check_choice("mode", None, ["a", "b"])
