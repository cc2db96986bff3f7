"""Message conversion cost per step, on both paths the nodes can take.

- ``serialized_io: true`` (default): the nodes publish and take CDR bytes and convert them
  with :mod:`torque_ctrl_ros.nodes.wire`: ``*_bytes`` rows;
- ``serialized_io: false``: the nodes fill and read Python messages
  (:mod:`torque_ctrl_ros.nodes.conversions`), which rclpy serializes inside ``publish`` and
  deserializes inside the executor: ``*_message*`` rows, with that (de)serialization, since it
  is what the path costs.

Each conversion is timed back to back and, like the compute section, once per ms with the
thread idle in between (``paced_1khz``), which is how the nodes call them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray

from ..nodes.conversions import (
    CommandEncoder,
    JointStateDecoder,
    JointStateEncoder,
    decode_command,
    ns_to_stamp,
)
from ..nodes.wire import ClockWire, CommandWire, JointStateWire
from .stats import summarize_us, time_calls, time_calls_paced

JOINTS = tuple(f"joint_{i}" for i in range(1, 8))


def run(count: int = 10_000, paced_count: int | None = None) -> dict[str, Any]:
    """Time each conversion the nodes do every step, on messages shaped like the Gen3's.

    ``paced_count`` (default ``count // 10``, at least 10) calls of each at 1 kHz.
    """
    n = len(JOINTS)
    rng = np.random.default_rng(0)
    q, v, tau = rng.normal(size=(3, n))
    state_raw = serialize_message(JointStateEncoder(JOINTS).encode(123_456_789, q, v, tau))
    command_raw = serialize_message(CommandEncoder(n).encode(tau, 123_456_789))
    decoder = JointStateDecoder(JOINTS)
    state_encoder = JointStateEncoder(JOINTS)
    command_encoder = CommandEncoder(n)
    state_wire = JointStateWire(JOINTS)
    command_wire = CommandWire(n)
    clock_wire = ClockWire()
    clock_msg = ClockMsg()
    state_wire.decode(state_raw)  # the efforts are read after the state, in the layout it learnt
    state_msg = deserialize_message(state_raw, JointStateMsg)

    def clock_message_to_bytes(stamp_ns: int) -> bytes:
        ns_to_stamp(stamp_ns, clock_msg.clock)
        return serialize_message(clock_msg)

    calls: dict[str, Callable[[int], object]] = {
        # what the simulator does with each state and command
        "arrays_to_joint_state_bytes": lambda i: state_wire.encode(i, q, v, tau),
        "arrays_to_joint_state_message_to_bytes": lambda i: serialize_message(
            state_encoder.encode(i, q, v, tau)
        ),
        "command_bytes_to_arrays": lambda i: command_wire.decode(command_raw),
        "command_bytes_to_message_to_arrays": lambda i: decode_command(
            deserialize_message(command_raw, Float64MultiArray), n
        ),
        "stamp_to_clock_bytes": lambda i: clock_wire.encode(i),  # /clock, after each state
        "stamp_to_clock_message_to_bytes": clock_message_to_bytes,
        # what the controller does
        "joint_state_bytes_to_arrays": lambda i: state_wire.decode(state_raw),
        "joint_state_bytes_to_message_to_arrays": lambda i: decoder.decode(
            deserialize_message(state_raw, JointStateMsg)
        ),
        # and, once the command is out, the efforts (the delay the efforts show), from the bytes
        # or from the message already deserialized for the state
        "joint_state_bytes_to_efforts": lambda i: state_wire.decode_effort(state_raw),
        "joint_state_message_to_efforts": lambda i: decoder.decode_effort(state_msg),
        "arrays_to_command_bytes": lambda i: command_wire.encode(tau, i),
        "arrays_to_command_message_to_bytes": lambda i: serialize_message(command_encoder.encode(tau, i)),
    }
    paced = paced_count if paced_count is not None else max(10, count // 10)
    out: dict[str, Any] = {}
    for name, fn in calls.items():
        out[name] = summarize_us(time_calls(fn, count))
        out[name]["paced_1khz"] = summarize_us(time_calls_paced(fn, paced))
    return out
