"""Behaviours of the CDR codecs (nodes/wire.py) that a second mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: which
serialized states take the fast path, the self-checks that keep a codec off the per-step path where
the RMW's serializer disagrees with it, and which malformed or foreign commands the simulator hands
to rclpy instead of refusing them or raising. No DDS traffic.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rclpy.type_support import Msg
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray
from test_wire import GEN3, NS

from torque_ctrl_ros.nodes import wire
from torque_ctrl_ros.nodes.conversions import JointStateEncoder, command_stamp_ns
from torque_ctrl_ros.nodes.wire import ClockWire, CommandWire, JointStateWire


def test_a_learned_layout_whose_last_name_leaves_one_byte_past_4_alignment_is_read() -> None:
    """A driver that sends our seven joints and then ``finger_joint`` (12 characters: its string,
    length field and NUL included, ends one byte past a multiple of 4) takes the fast path once
    learned. (Mutant: ``_names_len = len(section) - 1``: the position count is then read 4 bytes
    early, from the name's NUL and padding, and every such state fell back to rclpy: the ~40 µs a
    step the module exists to save.)"""
    names = [*GEN3, "finger_joint"]
    q, v = np.arange(8.0) * 0.1, -np.arange(8.0)
    codec = JointStateWire(GEN3)
    assert codec.learn(names)
    decoded = codec.decode(serialize_message(JointStateEncoder(names).encode(3 * NS, q, v, q)))
    assert decoded is not None and decoded[0] == 3 * NS
    assert np.array_equal(decoded[1], q[:7]) and np.array_equal(decoded[2], v[:7])


def _bump_nanosec(msg: JointStateMsg) -> None:
    msg.header.stamp.nanosec += 1


def _other_frame(msg: JointStateMsg) -> None:
    msg.header.frame_id += "_x"


def _other_names(msg: JointStateMsg) -> None:
    msg.name = list(reversed(msg.name))


def _other_efforts(msg: JointStateMsg) -> None:
    msg.effort = [e + 1.0 for e in msg.effort]


def _wider_layout(msg: Float64MultiArray) -> None:
    msg.layout.dim[0].size += 1


def _later_clock(msg: ClockMsg) -> None:
    msg.clock.nanosec += 1


def _joint_states() -> JointStateWire:
    return JointStateWire(GEN3, "base_link")


def _commands() -> CommandWire:
    return CommandWire(7)


@pytest.mark.parametrize(
    ("make", "misread"),
    [
        (_joint_states, _bump_nanosec),
        (_joint_states, _other_frame),
        (_joint_states, _other_names),
        (_joint_states, _other_efforts),
        (_commands, _wider_layout),
        (ClockWire, _later_clock),
    ],
)
def test_a_codec_whose_bytes_rclpy_reads_otherwise_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[], JointStateWire | CommandWire | ClockWire],
    misread: Callable[[Msg], None],
) -> None:
    """Each codec checks every field of its probe as rclpy reads its bytes back: where the RMW
    reads one otherwise than written, the codec is not available and the nodes publish messages
    instead. (Mutants: ``JointStateWire._check`` drops its stamp, ``frame_id``, ``name`` or
    ``effort`` comparison; ``CommandWire._check`` drops ``msg.layout.dim[0].size == n``;
    ``ClockWire`` takes itself as available without comparing the probe's stamp. Each made a codec
    whose bytes the RMW misreads the per-step path: wrong stamps, names or layouts on every step,
    or the simulation time published wrong.)"""
    assert make().available

    def misreading(raw: bytes, msg_type: type[Msg]) -> Msg:
        msg = deserialize_message(raw, msg_type)
        misread(msg)
        return msg

    monkeypatch.setattr(wire, "deserialize_message", misreading)
    assert not make().available


def test_a_joint_state_codec_that_reads_rclpys_stamp_otherwise_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other direction of the same check: where the RMW writes a state's stamp where the codec
    reads another (here 1 ns later), the codec is not available, although its values still match.
    (Mutant: ``JointStateWire._check`` drops ``decoded[0] == stamp + 1``: the controller then
    decoded every state with a wrong stamp, which decides what state a command answers.)"""

    def later_stamp(msg: Msg) -> bytes:
        raw = bytearray(serialize_message(msg))
        (nanosec,) = struct.unpack_from("<I", raw, 8)  # after the 4-byte header and int32 sec
        struct.pack_into("<I", raw, 8, nanosec + 1)
        return bytes(raw)

    monkeypatch.setattr(wire, "serialize_message", later_stamp)
    assert not JointStateWire(GEN3).available


def test_a_command_codec_that_reads_rclpys_stamp_label_otherwise_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the RMW's command bytes decode to another answered-state stamp than it was given
    (here the label's last digit changed), the command codec is not available, although the
    torques still match. (Mutant: ``CommandWire._check`` drops ``decoded[1] == stamp``: the
    simulator then read every tagged command as the answer to another state.)"""

    def other_label(msg: Msg) -> bytes:
        raw = bytearray(serialize_message(msg))
        tag = raw.find(b"joints@")
        if tag >= 0:
            last = raw.index(0, tag) - 1  # the last nanosecond digit, before the label's NUL
            raw[last] = ord("1") if raw[last] != ord("1") else ord("2")
        return bytes(raw)

    monkeypatch.setattr(wire, "serialize_message", other_label)
    assert not CommandWire(7).available


def _big_endian_command(tau: np.ndarray, label: str) -> bytes:
    """A ``Float64MultiArray`` in big-endian CDR (header ``00 00 00 00``): one dimension labelled
    ``label`` of ``len(tau)`` values from offset 0, then ``tau``."""
    text = label.encode() + b"\0"
    body = struct.pack(">II", 1, len(text)) + text
    body += bytes(-len(body) % 4) + struct.pack(">IIII", len(tau), len(tau), 0, len(tau))
    body += bytes(-len(body) % 8) + np.asarray(tau, dtype=">f8").tobytes()
    return b"\x00\x00\x00\x00" + body


def test_a_big_endian_command_does_not_overclaim() -> None:
    """A command in big-endian CDR, which rclpy reads, is left to rclpy: not decoded in place and
    not taken for one claiming more dimensions than it holds (its count, read little-endian, is
    16 777 216). (Mutant: ``overclaims`` reading the count little-endian whatever the header
    says: the simulator refused every command of a big-endian publisher unread.)"""
    tau = np.linspace(-2.0, 2.0, 7)
    raw = _big_endian_command(tau, "joints@5.000000000")
    msg = deserialize_message(raw, Float64MultiArray)
    assert np.array_equal(np.frombuffer(msg.data, dtype=np.float64), tau)
    assert command_stamp_ns(msg) == 5 * NS
    assert CommandWire.decode(raw) is None
    assert not CommandWire.overclaims(raw)


def test_a_big_endian_command_claiming_more_dimensions_than_it_holds_overclaims() -> None:
    """The count read in the header's byte order: a big-endian command claiming 2^28 dimensions,
    which rclpy reads on past as an untagged command of misaligned bytes (finite, 7 long: the
    simulator held it), is refused as a little-endian one is. (The check had returned False for
    any header but little-endian; a review.)"""
    tau = np.arange(1.0, 8.0)
    for order, header in (("<", wire.CDR_LE), (">", b"\x00\x00\x00\x00")):
        raw = (
            header + struct.pack(order + "II", 0x10000000, 7) + bytes(4) + tau.astype(order + "f8").tobytes()
        )
        misread = np.frombuffer(deserialize_message(raw, Float64MultiArray).data, dtype=np.float64)
        assert not np.array_equal(misread, tau)
        assert CommandWire.decode(raw) is None
        assert CommandWire.overclaims(raw), order


def test_a_big_endian_label_with_a_nul_is_garbled() -> None:
    """``joints\\0@<stamp>`` big-endian: rclpy cuts the label at the NUL, an untagged command
    (in realtime it answers the current state, the staleness check skipped); refused like the
    little-endian one. (The check had returned False for any header but little-endian; a review.)"""
    tau = np.linspace(-2.0, 2.0, 7)
    raw = _big_endian_command(tau, "joints\0@5.000000000")
    assert command_stamp_ns(deserialize_message(raw, Float64MultiArray)) is None
    assert CommandWire.garbled_label(raw)
    assert not CommandWire.garbled_label(_big_endian_command(tau, "joints@5.000000000"))


@pytest.mark.parametrize(
    "tail", [b"", b"\x01", b"\x01\x00", b"\x01\x00\x00"], ids=lambda tail: f"{4 + len(tail)} bytes"
)
def test_a_command_too_short_for_its_dimension_count_does_not_raise(tail: bytes) -> None:
    """A little-endian buffer cut inside its dimension count (4 to 7 bytes) is not decoded and does
    not overclaim: the simulator hands it to rclpy, which refuses it as unreadable. (Mutant:
    ``overclaims`` without ``len(raw) < _HEADER + 4``: reading the count raised ``struct.error``
    out of the simulator's command callback, ending the simulation on one malformed message.)"""
    raw = wire.CDR_LE + tail
    assert CommandWire.decode(raw) is None
    assert CommandWire.overclaims(raw) is False
    with pytest.raises(Exception, match="deserialize"):
        deserialize_message(raw, Float64MultiArray)
