"""Behaviours of the per-step message paths that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: the
CDR codecs (nodes/wire.py), the message conversions (nodes/conversions.py), the scheduling
requests of a node process (nodes/scheduling.py) and the simulator's command rules
(sim/commands.py). No DDS traffic.
"""

from __future__ import annotations

import pytest

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.scheduling import CPUS_ENV, parse_cpus


@pytest.mark.parametrize("text", ["1 2", "0, 1 2", "1_0", "+1", "٣"])
def test_a_cpu_number_is_ascii_digits_not_whatever_int_reads(text: str) -> None:
    """``TORQUE_CTRL_CPUS="1 2"`` (a list written with a space) is refused: it had been read as
    CPU 12 (spaces were removed before splitting), pinning the node silently to another CPU on a
    machine that has one, and ``1_0`` or an Arabic-Indic ``3`` as whatever ``int`` makes of them.
    Spaces around a number stay allowed. (Mutant: HEAD's ``text.replace(" ", "")`` and ``int``.)"""
    with pytest.raises(ConfigError, match=CPUS_ENV):
        parse_cpus(text)
    assert parse_cpus(" 1 - 2 , 4 ") == {1, 2, 4}
