"""Helpers both nodes use (nodes/common.py): the fallback from serialized I/O to messages and the
warning of several command publishers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from ros_helpers import requires_rclpy

pytestmark = [requires_rclpy]


class _Logger:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def _node() -> Any:
    logger = _Logger()
    return SimpleNamespace(get_logger=lambda: logger, logger=logger)


@pytest.mark.parametrize(
    ("requested", "available", "serialized", "warned"),
    [
        (True, (True, True), True, False),
        (True, (True, False), False, True),  # one codec failed its self-check: messages, said so
        (False, (True, True), False, False),
        (False, (False, False), False, False),  # not asked for: nothing to say
    ],
)
def test_serialized_io_needs_every_codec_and_says_when_it_falls_back(
    requested: bool, available: tuple[bool, ...], serialized: bool, warned: bool
) -> None:
    from torque_ctrl_ros.nodes.common import use_serialized_io

    node = _node()
    codecs = [SimpleNamespace(available=a) for a in available]
    assert use_serialized_io(node, requested, *codecs) is serialized
    assert node.logger.warnings == (
        ["serialized_io: the CDR codecs failed their self-check; using messages"] if warned else []
    )


def test_the_command_publishers_warning() -> None:
    from torque_ctrl_ros.nodes.common import command_publishers_warning

    assert command_publishers_warning(0) == "" and command_publishers_warning(1) == ""
    assert command_publishers_warning(2, "/arm/commands", "each state's first answer") == (
        "2 nodes publish on /arm/commands: more than one node commands this arm, and the arm gets "
        "each state's first answer"
    )
