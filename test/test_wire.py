"""CDR codecs of the per-step messages (nodes/wire.py) against rclpy's own serialization; no DDS traffic.

Every check goes both ways: our bytes deserialized by rclpy, and rclpy's bytes decoded by us,
including with the padding bytes (undefined in CDR) filled with garbage, as they arrive from
real publishers. Layouts the fast path does not take must come back as ``None`` (the nodes then
deserialize with rclpy), never as wrong numbers; a seeded differential fuzz holds each decoder to
rclpy's reading of thousands of mutated messages.
"""

from __future__ import annotations

import array
import functools
import re
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rclpy.type_support import Msg
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from torque_ctrl_ros.nodes.conversions import (
    CommandEncoder,
    JointStateDecoder,
    JointStateEncoder,
    command_stamp_ns,
    stamp_to_ns,
)
from torque_ctrl_ros.nodes.wire import ClockWire, CommandWire, JointStateWire

GEN3 = [f"joint_{i}" for i in range(1, 8)]
# Names and frame ids whose lengths leave padding between the strings and before the doubles.
ODD = ["a", "bb", "ccc", "dddd", "shoulder_lift", "x"]
NS = 1_000_000_000


def _padding_positions(raw: bytes, msg_type: type[Msg]) -> list[int]:
    """Bytes of ``raw`` that rclpy ignores: changing one leaves the message as it was."""
    reference = deserialize_message(raw, msg_type)
    out: list[int] = []
    for i in range(4, len(raw)):
        mutated = bytearray(raw)
        mutated[i] ^= 0xA5
        try:
            if deserialize_message(bytes(mutated), msg_type) == reference:
                out.append(i)
        except Exception:  # a length field: not padding
            pass
    return out


def _with_garbage_padding(raw: bytes, msg_type: type[Msg]) -> bytes:
    mutated = bytearray(raw)
    for i in _padding_positions(raw, msg_type):
        mutated[i] = 0xEE
    assert deserialize_message(bytes(mutated), msg_type) == deserialize_message(raw, msg_type)
    return bytes(mutated)


@pytest.mark.parametrize(("names", "frame_id"), [(GEN3, ""), (GEN3, "base_link"), (ODD, "w"), (ODD, "")])
def test_joint_state_bytes_match_rclpy_both_ways(names: list[str], frame_id: str) -> None:
    wire = JointStateWire(names, frame_id)
    assert wire.available
    n = len(names)
    rng = np.random.default_rng(n + len(frame_id))
    for stamp in (0, 17 * NS + 5, 1_700_000_000 * NS + 999_999_999):
        q, v, e = rng.normal(size=(3, n))
        msg = deserialize_message(wire.encode(stamp, q, v, e), JointStateMsg)
        assert stamp_to_ns(msg.header.stamp) == stamp and msg.header.frame_id == frame_id
        assert list(msg.name) == names
        for got, want in ((msg.position, q), (msg.velocity, v), (msg.effort, e)):
            assert np.array_equal(np.frombuffer(got, dtype=np.float64), want)  # bit-exact

        # rclpy's bytes, from a publisher with any frame id, padding full of garbage.
        for their_frame in ("", "f", "base_link", "tool_frame_x"):
            raw = serialize_message(JointStateEncoder(names, their_frame).encode(stamp, q, v, e))
            padded = _with_garbage_padding(raw, JointStateMsg)
            decoded = wire.decode(padded)
            assert decoded is not None, their_frame
            assert decoded[0] == stamp
            assert np.array_equal(decoded[1], q) and np.array_equal(decoded[2], v)
            effort = wire.decode_effort(padded)
            assert effort is not None and np.array_equal(effort, e)


def test_joint_state_layouts_the_fast_path_does_not_take() -> None:
    wire = JointStateWire(GEN3)
    q, v = np.arange(7.0), -np.arange(7.0)

    def raw(**fields: object) -> bytes:
        msg = JointStateEncoder(GEN3).encode(5, q, v, q)
        for key, value in fields.items():
            setattr(msg, key, value)
        return serialize_message(msg)

    assert wire.decode(raw()) is not None
    assert wire.decode(raw(name=list(reversed(GEN3)))) is None  # another order: until learned
    assert wire.decode(raw(name=[*GEN3, "gripper"], position=[*q, 0.0], velocity=[*v, 0.0])) is None
    assert wire.decode(raw(name=[*GEN3[:2], "joint_x", *GEN3[3:]])) is None  # misnamed
    assert wire.decode(raw(position=q[:6].tolist())) is None  # short
    assert wire.decode(raw(velocity=[])) is None  # no velocities
    good = raw()
    assert len(good) == 300  # 4 + stamp 8 + frame 8 + names 88 + 3 × (count 4 + pad 4 + 56)
    for cut in (2, 10, 40, 150, 200, 235, 240, 292):  # truncated anywhere, efforts included
        assert wire.decode(good[:cut]) is None, cut
    assert wire.decode(b"\x00\x00" + good[2:]) is None  # big-endian CDR: rclpy's job
    # Efforts may be empty, or not one per joint: the state is read, its efforts are not (the
    # controller reads them for the delay they show only).
    for efforts in ([], q[:6].tolist(), [*q, 0.0]):
        bare = raw(effort=efforts)
        decoded = wire.decode(bare)
        assert decoded is not None and np.array_equal(decoded[1], q)
        assert wire.decode_effort(bare) is None


@pytest.mark.parametrize(
    "names",
    [
        list(reversed(GEN3)),  # another order
        ["gripper", *GEN3[4:], "wrist_cam_tilt", *GEN3[:4]],  # extra joints anywhere, odd lengths
    ],
)
def test_a_learned_layout_is_read_by_name(names: list[str]) -> None:
    """A driver's layout (order, extra joints) is adopted once rclpy has read it, then decoded
    in place into our joint order exactly as the by-name decoder reads it."""
    wire = JointStateWire(GEN3)
    decoder = JointStateDecoder(GEN3)
    rng = np.random.default_rng(len(names))
    q, v = rng.normal(size=(2, len(names)))
    raw = serialize_message(JointStateEncoder(names, "base").encode(42, q, v, q))
    assert wire.decode(raw) is None  # not the expected layout yet
    assert wire.learn(names) and not wire.learn(names)  # adopted once
    for stamp in (43, 7 * NS):
        q, v = rng.normal(size=(2, len(names)))
        msg = JointStateEncoder(names, "base_link_x").encode(stamp, q, v, q)
        msg.effort = (-q).tolist()
        want_q, want_v = (a.copy() for a in decoder.decode(msg))
        want_effort = decoder.decode_effort(msg)
        padded = _with_garbage_padding(serialize_message(msg), JointStateMsg)
        decoded = wire.decode(padded)
        assert decoded is not None and decoded[0] == stamp
        assert np.array_equal(decoded[1], want_q) and np.array_equal(decoded[2], want_v)
        effort = wire.decode_effort(padded)
        assert want_effort is not None and effort is not None and np.array_equal(effort, want_effort)
    # The simulator's own layout is now the unexpected one, until learned back.
    own = serialize_message(JointStateEncoder(GEN3).encode(1, q[:7], v[:7], q[:7]))
    assert wire.decode(own) is None
    assert wire.learn(GEN3) and wire.decode(own) is not None


def test_layouts_without_every_joint_once_are_not_learned() -> None:
    wire = JointStateWire(GEN3)
    assert not wire.learn(GEN3[:6])  # a joint missing
    assert not wire.learn([*GEN3, "joint_1"])  # a joint twice
    assert not wire.learn(GEN3)  # already the expected layout


def test_joint_state_non_finite_values_pass_through_for_the_watchdog() -> None:
    wire = JointStateWire(GEN3)
    q = np.where(np.arange(7) == 3, np.nan, 0.1)
    decoded = wire.decode(serialize_message(JointStateEncoder(GEN3).encode(1, q, q, q)))
    assert decoded is not None and np.isnan(decoded[1][3])  # the caller refuses it, as before


#: Not one row of 7 values: too few, too many, 2-D (even holding 7), scalars.
NOT_ONE_ROW = [
    np.ones(0),
    np.ones(1),
    np.ones(3),
    np.ones(8),
    np.ones((2, 7)),
    np.ones((1, 7)),
    np.ones((7, 1)),
    np.float64(2.0),
    2.0,
]


@pytest.mark.parametrize("field", ["q", "v", "effort"])
@pytest.mark.parametrize("bad", NOT_ONE_ROW)
def test_joint_state_encoders_refuse_arrays_not_one_per_joint(field: str, bad: Any) -> None:
    """Copied into the wire's 7-value buffers, one value or a scalar had filled all 7 positions
    silently. Both encoders refuse them alike, naming the field; a (1, 7) or (7, 1) array too (the
    wire had refused one and failed with numpy's broadcast error on the other, the rclpy encoder
    flattened both)."""
    arrays = {"q": np.zeros(7), "v": np.zeros(7), "effort": np.zeros(7)} | {field: bad}
    expected = f"joint state {field}: 7 values expected, got shape {np.shape(bad)}"
    for encoder in (JointStateWire(GEN3), JointStateEncoder(GEN3)):
        with pytest.raises(ValueError, match=re.escape(expected)):
            encoder.encode(5, arrays["q"], arrays["v"], arrays["effort"])


@pytest.mark.parametrize("stamp", [None, 0, 999_999_999, 7 * NS, 1_700_000_123 * NS + 42])
def test_command_bytes_match_rclpy_both_ways(stamp: int | None) -> None:
    n = 7
    wire = CommandWire(n)
    assert wire.available
    tau = np.random.default_rng(1).normal(size=n) * 30.0
    msg = deserialize_message(wire.encode(tau, stamp), Float64MultiArray)
    assert np.array_equal(np.frombuffer(msg.data, dtype=np.float64), tau)
    assert command_stamp_ns(msg) == stamp
    assert (msg.layout.dim[0].size, msg.layout.dim[0].stride, msg.layout.data_offset) == (n, n, 0)

    raw = serialize_message(CommandEncoder(n).encode(-tau, stamp))
    decoded = wire.decode(_with_garbage_padding(raw, Float64MultiArray))
    assert decoded is not None
    assert np.array_equal(decoded[0], -tau) and decoded[1] == stamp


def test_command_decode_reads_any_float64_multiarray() -> None:
    """Any well-formed command decodes (length and finiteness are the caller's checks)."""
    plain = Float64MultiArray(data=[1.0, 2.0, 3.0])
    tau, stamp = CommandWire.decode(serialize_message(plain)) or (None, None)
    assert tau is not None and tau.tolist() == [1.0, 2.0, 3.0] and stamp is None
    dims = [MultiArrayDimension(label="joints@3.000000004", size=2, stride=2), MultiArrayDimension(label="x")]
    two = Float64MultiArray(data=[np.nan, 5.0])
    two.layout.dim = dims
    tau, stamp = CommandWire.decode(serialize_message(two)) or (None, None)
    assert tau is not None and np.isnan(tau[0]) and tau[1] == 5.0 and stamp == 3 * NS + 4
    empty = CommandWire.decode(serialize_message(Float64MultiArray()))
    assert empty is not None and empty[0].size == 0
    raw = serialize_message(CommandEncoder(7).encode(np.ones(7), 5))
    assert CommandWire.decode(raw[: len(raw) - 8]) is None
    assert CommandWire.decode(b"\x00\x00" + raw[2:]) is None
    # A label without its NUL: rclpy reads one character more (another stamp), so not ours to read.
    no_nul = bytearray(raw)
    no_nul[no_nul.index(b"\0", no_nul.index(b"joints@"))] = ord("9")
    assert CommandWire.decode(bytes(no_nul)) is None


@pytest.mark.parametrize("tau", NOT_ONE_ROW)
@pytest.mark.parametrize("stamp", [None, 5 * NS])
def test_command_encoders_refuse_torques_not_one_per_joint(tau: Any, stamp: int | None) -> None:
    """Written as given, 3 torques had gone out under a layout saying 7 (a malformed command; 14
    for ``(2, 7)``). Both encoders refuse them alike, naming the count and the shape, and a (1, 7)
    or (7, 1) array as well (both had flattened it)."""
    expected = f"effort command tau: 7 values expected, got shape {np.shape(tau)}"
    for encoder in (CommandWire(7), CommandEncoder(7)):
        with pytest.raises(ValueError, match=re.escape(expected)):
            encoder.encode(tau, stamp)


# ((dim[0] label or None for no dimension, size, stride, data_offset, values), plain: n values from 0).
_LAYOUTS = [
    (("joints@3.000000004", 7, 7, 0, 7), True),
    (("joints", 3, 3, 0, 3), True),  # plain, of another length: the length is the caller's to check
    ((None, 0, 0, 0, 7), True),  # no dimension (``ros2 topic pub {data: [...]}``): untagged
    (("joints@3.000000004", 7, 7, 1, 7), False),
    (("joints@3.000000004", 6, 6, 0, 7), False),
    (("joints@3.000000004", 8, 8, 0, 7), False),
    (("joints@3.000000004", 7, 14, 0, 7), False),
    (("joints@3.000000004", 0, 0, 0, 7), False),  # a default MultiArrayDimension with a label set
    ((None, 0, 0, 2, 7), False),
]


@pytest.mark.parametrize(("layout", "plain"), _LAYOUTS)
def test_command_layouts_are_checked_alike_on_both_paths(layout: tuple, plain: bool) -> None:
    """``dim[0].size`` / ``stride`` and ``data_offset`` are compared with ``data``: a command saying
    it holds 6 torques, or 7 from offset 1, is not applied as its 7 values. Both paths agree:
    the CDR decoder leaves all but a plain layout to rclpy (``None``), whose message is refused,
    saying what the layout claimed."""
    from torque_ctrl_ros.core.errors import StateError
    from torque_ctrl_ros.nodes.conversions import check_command_layout, decode_command

    label, size, stride, offset, count = layout
    msg = Float64MultiArray(data=[float(k) for k in range(count)])
    msg.layout.data_offset = offset
    if label is not None:
        msg.layout.dim = [MultiArrayDimension(label=label, size=size, stride=stride)]
    raw = serialize_message(msg)
    decoded = CommandWire.decode(_with_garbage_padding(raw, Float64MultiArray))
    if plain:
        assert decoded is not None and decoded[0].tolist() == list(msg.data)
        check_command_layout(msg.layout, count)
        if count == 7:
            assert decode_command(msg, 7)[0].tolist() == list(msg.data)
        return
    assert decoded is None
    claimed = f"dim[0].size {size}, dim[0].stride {stride}" if label is not None else "no dimension"
    with pytest.raises(
        StateError, match=re.escape(f"layout claims {claimed}, data_offset {offset} for {count} values")
    ):
        check_command_layout(deserialize_message(raw, Float64MultiArray).layout, count)
    with pytest.raises(StateError, match="layout claims"):
        decode_command(msg, 7)


def test_clock_bytes() -> None:
    wire = ClockWire()
    assert wire.available
    for stamp in (0, 1, 123 * NS + 456):
        assert stamp_to_ns(deserialize_message(wire.encode(stamp), ClockMsg).clock) == stamp


def test_trajectory_sizes_read_the_bytes_as_rclpy_writes_them() -> None:
    """Names and frame ids of every length modulo 4 (the alignment), with and without points."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from torque_ctrl_ros.nodes.wire import trajectory_sizes

    rng = np.random.default_rng(1)
    for trial in range(500):
        names = ["j" * int(rng.integers(0, 13)) for _ in range(int(rng.integers(0, 9)))]
        msg = JointTrajectory(joint_names=names)
        msg.header.frame_id = "f" * int(rng.integers(0, 11))
        msg.header.stamp.sec = int(rng.integers(-5, 5))
        m = int(rng.integers(0, 30))
        msg.points = [
            JointTrajectoryPoint(positions=[0.1] * int(rng.integers(0, 4)), time_from_start=Duration(sec=k))
            for k in range(m)
        ]
        assert trajectory_sizes(serialize_message(msg), 64) == (len(names), m), trial
    raw = serialize_message(JointTrajectory(joint_names=["a"] * 5))
    assert trajectory_sizes(raw, 4) == (5, None)  # more names than asked for: not walked
    assert trajectory_sizes(raw, 5) == (5, 0)  # as many as asked for: walked
    assert trajectory_sizes(b"\x00\x00" + raw[2:], 64) is None  # big-endian: left to rclpy
    assert trajectory_sizes(raw[:9], 64) is None and trajectory_sizes(b"", 64) is None


# ---------------------------------------------------------------------------------------------
# Differential fuzz: each decoder on mutated bytes against rclpy's reading of the same bytes.
#
# A decoder may answer ``None`` for anything (its caller then deserializes with rclpy, which
# decides), except a message in the layout it is built for: those it must take, mutated only by
# junk appended after the message or cut no shorter than the message. Any answer must be what the
# message path makes of rclpy's reading:
#
# - ``JointStateWire.decode``: rclpy reads the bytes; its stamp, and its positions and velocities
#   as the message path's ``JointStateDecoder`` takes them by name (raising nothing), equal the
#   decoded ones bit for bit. No leniency: the decoder skips the frame id and the efforts' values,
#   but rclpy refuses neither for its contents (invalid UTF-8 is replaced, not refused), so a
#   message rclpy cannot read must never decode.
# - ``CommandWire.decode``: rclpy reads the bytes, its layout passes ``check_command_layout``, its
#   data (bit for bit) and label stamp equal the decoded ones. A ``StateError`` (a malformed
#   ``joints@`` label) must be the very error ``command_stamp_ns`` raises on rclpy's message.
#   Labels of dimensions after the first are read on neither path.
# - ``trajectory_sizes``: reads counts only (no string, no point). When rclpy reads the message,
#   the name count and, unless more than ``max_names`` names, the point count are its. When rclpy
#   cannot, any answer goes: the caller refuses counts over its limits and deserializes any other
#   message, so such a message is refused either way (only the reason given differs).
#
# rclpy (rmw_fastrtps_cpp, Fast-CDR) raises on every mutation here rather than crashing, so no
# kind of mutation is left out. Its complaints ("sequence size exceeds remaining buffer") go to
# the C stderr, which pytest captures.

_STR, _UINT, _DOUBLES = "string", "uint32", "float64[]"
# Each message as CDR lays it out, as far as lengths go: its fields in order, ("seq", fields) a
# counted sequence of structures.
_JOINT_STATE_LAYOUT: tuple = (_UINT, _UINT, _STR, ("seq", (_STR,)), _DOUBLES, _DOUBLES, _DOUBLES)
_COMMAND_LAYOUT: tuple = (("seq", (_STR, _UINT, _UINT)), _UINT, _DOUBLES)
_POINT_LAYOUT = (_DOUBLES, _DOUBLES, _DOUBLES, _DOUBLES, _UINT, _UINT)  # the last two: time_from_start
_TRAJECTORY_LAYOUT: tuple = (_UINT, _UINT, _STR, ("seq", (_STR,)), ("seq", _POINT_LAYOUT))
_LENGTH_VALUES = (0, 1, 2, 3, 4, 7, 8, 64, 0x7FFFFFFF, 0x80000000, 0xFFFFFFF8, 0xFFFFFFFF)
_MUTATIONS = ("flip", "zero", "truncate", "insert", "delete", "length", "unterminated", "append", "options")

#: ``check(raw, what, must_answer)``: asserts the contract above for one input (``what`` names it
#: in failures); returns whether the decoder answered something rclpy reads.
_Check = Callable[[bytes, str, bool], bool]


def _length_fields(raw: bytes, layout: tuple) -> tuple[list[tuple[int, str]], int]:
    """The string lengths and sequence counts in ``raw`` (a message as rclpy serializes it), as
    ``(offset, _STR or _DOUBLES or "seq")``, and where the message ends, found by walking ``layout``.
    rclpy's bytes may run on past the message (with empty arrays, its buffer is sized by an
    estimate larger than what it writes)."""
    fields: list[tuple[int, str]] = []

    def aligned(at: int, size: int) -> int:
        return at + (-(at - 4)) % size  # CDR aligns from the byte after the 4-byte header

    def walk(items: tuple, at: int) -> int:
        for item in items:
            at = aligned(at, 4)  # every field here starts with a uint32
            if item == _UINT:
                at += 4
                continue
            fields.append((at, item if isinstance(item, str) else "seq"))
            (k,) = struct.unpack_from("<I", raw, at)
            at += 4
            if item == _STR:
                at += k
            elif item == _DOUBLES:
                at = aligned(at, 8) + 8 * k if k else at  # an empty sequence is not aligned
            else:
                for _ in range(k):
                    at = walk(item[1], at)
        return at

    end = walk(layout, 4)
    assert end <= len(raw)
    return fields, end


def _mutant(raw: bytes, fields: list[tuple[int, str]], rng: np.random.Generator) -> tuple[str, bytes]:
    """One random mutation of ``raw`` (valid, with its length fields ``fields``): its kind (one of
    ``_MUTATIONS``) and the bytes."""
    strings = [at for at, item in fields if item == _STR and raw[at] > 0]
    kind = str(rng.choice([k for k in _MUTATIONS if strings or k != "unterminated"]))
    out = bytearray(raw)
    size = len(out)
    if kind in ("flip", "zero"):  # 1–4 bytes anywhere, the header included
        for at in rng.integers(0, size, size=int(rng.integers(1, 5))):
            out[at] = 0 if kind == "zero" else out[at] ^ int(rng.integers(1, 256))
    elif kind == "truncate":
        del out[int(rng.integers(0, size)) :]
    elif kind == "insert":
        at = int(rng.integers(0, size + 1))
        out[at:at] = rng.bytes(int(rng.integers(1, 9)))
    elif kind == "delete":
        at = int(rng.integers(0, size))
        del out[at : at + int(rng.integers(1, 9))]
    elif kind == "length":  # a string length or sequence count, off by a little or a lot
        at = fields[int(rng.integers(len(fields)))][0]
        (old,) = struct.unpack_from("<I", out, at)
        choices = [*_LENGTH_VALUES, old + 1, max(old - 1, 0), old + 8, int(rng.integers(0, 2**32))]
        struct.pack_into("<I", out, at, choices[int(rng.integers(len(choices)))] % 2**32)
    elif kind == "unterminated":  # a string's NUL made another character
        at = int(rng.choice(strings))
        out[at + 3 + raw[at]] = int(rng.integers(1, 256))  # (lengths here are under 256)
    elif kind == "options":  # the encapsulation options: their two low bits count end padding
        out[2:4] = rng.bytes(2)
    else:
        out += rng.bytes(int(rng.integers(1, 17)))
    return kind, bytes(out)


def _fuzz(
    rng: np.random.Generator,
    draw: Callable[[], tuple[bytes, bool, _Check]],
    layout: tuple,
    cases: int,
    cut: int,
) -> dict[str, list[int]]:
    """Check ``cases`` messages from ``draw`` (bytes, whether they are in the decoder's layout, the
    check), each as serialized and mutated once, then every cut of ``cut`` more messages.
    Returns ``[inputs, answered]`` by kind of mutation (``"cut"`` for the cuts)."""
    kinds: dict[str, list[int]] = {kind: [0, 0] for kind in (*_MUTATIONS, "cut")}
    for case in range(cases):
        raw, takes, check = draw()
        fields, _ = _length_fields(raw, layout)
        check(raw, f"case {case} as serialized", takes)
        kind, mutated = _mutant(raw, fields, rng)
        kinds[kind][0] += 1
        kinds[kind][1] += check(mutated, f"case {case} ({kind})", takes and kind == "append")
    for _ in range(cut):
        raw, takes, check = draw()
        _, end = _length_fields(raw, layout)
        for length in range(len(raw) + 1):
            kinds["cut"][0] += 1
            kinds["cut"][1] += check(raw[:length], f"cut at {length} of {raw.hex()}", takes and length >= end)
    # Enough answers that the comparisons ran, not only refusals.
    assert min(kinds[kind][1] for kind in ("flip", "zero", "options", "append")) > 50, kinds
    assert kinds["cut"][1] > 0, kinds
    return kinds


def _doubles(rng: np.random.Generator, n: int) -> array.array:
    """``n`` doubles, mostly ordinary, some NaN (with payloads, either sign), ±inf, -0.0, denormal
    or arbitrary bit patterns; as an ``array.array`` so no payload passes through a Python float."""
    bits = rng.normal(size=n).view(np.uint64).copy()
    special = np.array(
        [0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 0x7FF0000000000000,
         0xFFF0000000000000, 0x8000000000000000, 0x0000000000000001],
        dtype=np.uint64,
    )  # fmt: skip
    for k in range(n):
        draw = rng.random()
        if draw < 0.15:
            bits[k] = special[int(rng.integers(len(special)))]
        elif draw < 0.25:
            bits[k] = rng.integers(0, 2**64, dtype=np.uint64)
    return array.array("d", bits.tobytes())


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float64 and a.shape == b.shape and a.tobytes() == b.tobytes()


def _rclpy_reading(raw: bytes, msg_type: type) -> Any:
    """rclpy's message from ``raw``, or ``None`` where it cannot read it."""
    try:
        return deserialize_message(raw, msg_type)
    except Exception:  # rclpy's RMWError (not importable by a stable name)
        return None


def _text(rng: np.random.Generator, low: int, high: int) -> str:
    return "".join(rng.choice(list("abcxyz_019/"), size=int(rng.integers(low, high))))


def _check_joint_state(wire: JointStateWire, raw: bytes, what: str, must_answer: bool) -> bool:
    decoded = wire.decode(raw)
    if decoded is None:
        assert not must_answer, f"{what}: in the decoder's layout, not decoded: {raw.hex()}"
        return False
    msg = _rclpy_reading(raw, JointStateMsg)
    assert msg is not None, f"{what}: decoded, but rclpy cannot read {raw.hex()}"
    q, v = JointStateDecoder(wire.names).decode(msg)  # raises where the message path refuses
    assert decoded[0] == stamp_to_ns(msg.header.stamp), f"{what}: stamp of {raw.hex()}"
    assert _same_bits(decoded[1], q) and _same_bits(decoded[2], v), f"{what}: values of {raw.hex()}"
    return True


def test_joint_state_decode_fuzzed_against_rclpy() -> None:
    """Mutated states, in each decoder's layout (its own, odd name lengths, a learned one) and in
    others (another order, extra or missing joints), decode as rclpy reads them or not at all."""
    rng = np.random.default_rng(20240611)
    driver = ["gripper", *GEN3[4:], "wrist_cam_tilt", *GEN3[:4]]
    learned = JointStateWire(GEN3)
    assert learned.learn(driver)
    wires = [(JointStateWire(GEN3), GEN3), (JointStateWire(ODD), ODD), (learned, driver)]

    def draw() -> tuple[bytes, bool, _Check]:
        wire, expected = wires[int(rng.integers(len(wires)))]
        names = list(expected)
        if rng.random() < 0.2:  # a layout this decoder has not adopted
            names = [*rng.permutation(names)] if rng.random() < 0.5 else [*names, "extra"]
            names = names if rng.random() < 0.7 else names[1:]
        msg = JointStateMsg(name=names)
        msg.header.frame_id = _text(rng, 0, 13)  # every alignment of what follows
        msg.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
        msg.header.stamp.nanosec = int(rng.integers(0, 2**32))  # rclpy takes any uint32, so must we
        n = len(names)
        msg.position = _doubles(rng, n if rng.random() < 0.9 else int(rng.integers(0, n + 2)))
        msg.velocity = _doubles(rng, n if rng.random() < 0.9 else int(rng.integers(0, n + 2)))
        msg.effort = _doubles(rng, int(rng.choice([n, 0, int(rng.integers(0, n + 2))])))
        takes = names == list(expected) and len(msg.position) == len(msg.velocity) == n
        return bytes(serialize_message(msg)), takes, functools.partial(_check_joint_state, wire)

    print("joint states, [inputs, decoded]:", _fuzz(rng, draw, _JOINT_STATE_LAYOUT, 4000, 12))


def _check_command(raw: bytes, what: str, must_answer: bool) -> bool:
    from torque_ctrl_ros.core.errors import StateError
    from torque_ctrl_ros.nodes.conversions import check_command_layout

    try:
        decoded = CommandWire.decode(raw)
    except StateError as exc:
        msg = _rclpy_reading(raw, Float64MultiArray)
        assert msg is not None, f"{what}: {exc}, but rclpy cannot read {raw.hex()}"
        with pytest.raises(StateError) as on_message_path:
            command_stamp_ns(msg)
        assert str(on_message_path.value) == str(exc), f"{what}: {raw.hex()}"
        return True
    if decoded is None:
        assert not must_answer, f"{what}: in the decoder's layout, not decoded: {raw.hex()}"
        return False
    msg = _rclpy_reading(raw, Float64MultiArray)
    assert msg is not None, f"{what}: decoded, but rclpy cannot read {raw.hex()}"
    data = np.frombuffer(msg.data, dtype=np.float64)
    check_command_layout(msg.layout, data.size)  # raises where the message path refuses
    assert _same_bits(decoded[0], data), f"{what}: values of {raw.hex()}"
    assert decoded[1] == command_stamp_ns(msg), f"{what}: stamp of {raw.hex()}"
    return True


def test_command_decode_fuzzed_against_rclpy() -> None:
    """Mutated commands decode as rclpy reads them or not at all, raising only the ``StateError``
    the message path raises for the same label."""
    rng = np.random.default_rng(20240612)

    def draw() -> tuple[bytes, bool, _Check]:
        """Mostly a tagged command of 7 torques as the controller writes it, else other lengths,
        labels (malformed stamps too), dimensions and offsets."""
        n = int(rng.choice([7, 7, 7, 7, 7, 7, 0, 0, 1, 3, 8]))
        msg = Float64MultiArray(data=_doubles(rng, n))
        for k in range(int(rng.choice([1, 1, 1, 0, 2, 3]))):
            sec, nsec = int(rng.integers(-(2**31), 2**31)), int(rng.integers(0, NS))
            labels = [f"joints@{sec}.{nsec:09d}", "joints", f"joints@{sec}.{nsec}", _text(rng, 0, 12)]
            plain = k > 0 or rng.random() < 0.8
            size, stride = (n, n) if plain else (int(rng.integers(0, 10)), int(rng.integers(0, 10)))
            label = labels[int(rng.integers(len(labels)))]
            msg.layout.dim.append(MultiArrayDimension(label=label, size=size, stride=stride))
        msg.layout.data_offset = 0 if rng.random() < 0.9 else int(rng.integers(0, 3))
        dims = msg.layout.dim
        takes = msg.layout.data_offset == 0 and (not dims or dims[0].size == dims[0].stride == n)
        return bytes(serialize_message(msg)), takes, _check_command

    print("commands, [inputs, decoded]:", _fuzz(rng, draw, _COMMAND_LAYOUT, 4000, 24))


def _check_trajectory_sizes(max_names: int, raw: bytes, what: str, must_answer: bool) -> bool:
    from trajectory_msgs.msg import JointTrajectory

    from torque_ctrl_ros.nodes.wire import trajectory_sizes

    sizes = trajectory_sizes(raw, max_names)
    assert sizes is not None or not must_answer, f"{what}: a trajectory, not read: {raw.hex()}"
    msg = _rclpy_reading(raw, JointTrajectory)
    if sizes is None or msg is None:  # refused on either path
        return False
    names, points = sizes
    assert names == len(msg.joint_names), f"{what}: names of {raw.hex()}"
    if names > max_names:
        assert points is None, f"{what}: {raw.hex()}"
    else:
        assert points == len(msg.points), f"{what}: points of {raw.hex()}"
    return True


def test_trajectory_sizes_fuzzed_against_rclpy() -> None:
    """Mutated trajectories: the counts are rclpy's wherever rclpy reads the message."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    rng = np.random.default_rng(20240613)

    def draw() -> tuple[bytes, bool, _Check]:
        """0–8 names and 0–6 points of every alignment; as many names as allowed, or more."""
        msg = JointTrajectory(joint_names=[_text(rng, 0, 13) for _ in range(int(rng.integers(0, 9)))])
        msg.header.frame_id = _text(rng, 0, 13)
        msg.header.stamp.sec = int(rng.integers(-5, 5))
        for k in range(int(rng.integers(0, 7))):
            point = JointTrajectoryPoint(positions=_doubles(rng, int(rng.integers(0, 4))))
            point.velocities = _doubles(rng, int(rng.integers(0, 3)))
            point.time_from_start.sec = k
            msg.points.append(point)
        max_names = int(rng.choice([64, 64, 3, 0]))
        return bytes(serialize_message(msg)), True, functools.partial(_check_trajectory_sizes, max_names)

    print("trajectories, [inputs, answered]:", _fuzz(rng, draw, _TRAJECTORY_LAYOUT, 4000, 12))


def test_end_padding_declared_by_the_encapsulation_options_is_not_read() -> None:
    """The two low bits of the encapsulation options (header bytes 2–3) count padding bytes at the
    end of the buffer; rclpy leaves them out of the message when the buffer's length is a multiple
    of 4. A state or command whose last field reaches into them is one rclpy cannot read, so the
    decoders leave it to rclpy (``None``) instead of accepting it; with bytes to spare after the
    message, or a length not a multiple of 4, both read it."""
    q = np.arange(7.0)
    state = bytes(serialize_message(JointStateEncoder(GEN3).encode(5, q, q, q)))
    command = bytes(serialize_message(CommandEncoder(7).encode(q, 5)))
    wire = JointStateWire(GEN3)
    for raw, msg_type, decode in (
        (state, JointStateMsg, wire.decode),
        (command, Float64MultiArray, CommandWire.decode),
    ):
        assert len(raw) % 4 == 0 and decode(raw) is not None  # the message fills the buffer
        for pad in (1, 2, 3):
            padded = raw[:3] + bytes([pad]) + raw[4:]
            with pytest.raises(Exception, match="deserialize"):
                deserialize_message(padded, msg_type)
            assert decode(padded) is None, (msg_type, pad)
            for spare in (b"\0" * 4, b"\0"):
                assert deserialize_message(padded + spare, msg_type) == deserialize_message(raw, msg_type)
                assert decode(padded + spare) is not None, (msg_type, pad, len(spare))
