"""Message conversion cost per step: JointState → arrays and arrays → Float64MultiArray."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..nodes.conversions import CommandEncoder, JointStateDecoder, JointStateEncoder, decode_command
from .stats import summarize_us, time_calls

JOINTS = tuple(f"joint_{i}" for i in range(1, 8))


def run(count: int = 10_000) -> dict[str, Any]:
    """Time each conversion the nodes do every step, on messages shaped like the Gen3's."""
    rng = np.random.default_rng(0)
    q, v, tau = rng.normal(size=(3, len(JOINTS)))
    state_msg = JointStateEncoder(JOINTS).encode(123_456_789, q, v, tau)
    state_msg.name = list(reversed(JOINTS))  # the controller maps by name, in any order
    decoder = JointStateDecoder(JOINTS)
    state_encoder = JointStateEncoder(JOINTS)
    command_encoder = CommandEncoder(len(JOINTS))
    command_msg = command_encoder.encode(tau, 123_456_789)
    return {
        "joint_state_to_arrays": summarize_us(time_calls(lambda i: decoder.decode(state_msg), count)),
        "arrays_to_joint_state": summarize_us(
            time_calls(lambda i: state_encoder.encode(i, q, v, tau), count)
        ),
        "arrays_to_command": summarize_us(time_calls(lambda i: command_encoder.encode(tau, i), count)),
        "command_to_arrays": summarize_us(
            time_calls(lambda i: decode_command(command_msg, len(JOINTS)), count)
        ),
    }
