"""ROS messages ↔ numpy, with preallocated buffers on the per-step paths.

rclpy stores ``float64[]`` message fields as ``array.array('d')``, which exposes the buffer
protocol: ``np.frombuffer`` reads it without a copy, and doubles cross DDS bit-exactly, so
a state or a command arrives exactly as it was sent.

Commands carry the stamp of the joint state they answer in the label of their single layout
dimension (``"joints@<sec>.<nanosec>"``): the simulator uses it to match commands to states
(lockstep) and to measure state→command latency, and a driver can use it to time commands out.
Consumers that read only ``data`` (ros2_control's forward command controller) are unaffected.
"""

from __future__ import annotations

import array
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from ..core.errors import StateError
from ..core.safety import JointNameMap
from ..core.validation import FloatArray

COMMAND_LABEL = "joints"
_NS = 1_000_000_000


def stamp_to_ns(stamp: Time) -> int:
    """A ``builtin_interfaces/Time`` as integer nanoseconds."""
    return int(stamp.sec) * _NS + int(stamp.nanosec)


def ns_to_stamp(ns: int, out: Time | None = None) -> Time:
    """Integer nanoseconds as a ``builtin_interfaces/Time`` (written into ``out`` if given)."""
    out = out if out is not None else Time()
    out.sec, out.nanosec = divmod(int(ns), _NS)
    return out


def as_double_array(values: FloatArray) -> array.array:
    """``values`` as ``array.array('d')``: the type rclpy stores, so assignment skips its checks."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


class JointStateDecoder:
    """``sensor_msgs/JointState`` → ``q`` (rad), ``v`` (rad/s) in a fixed joint order.

    The returned arrays are internal buffers, overwritten by the next :meth:`decode`.
    """

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.map = JointNameMap(joint_names)
        self.q = np.zeros(self.map.n)
        self.v = np.zeros(self.map.n)
        self.effort = np.zeros(self.map.n)

    def decode(self, msg: JointStateMsg) -> tuple[FloatArray, FloatArray]:
        """Reorder position and velocity by name (any order, extras ignored).

        Raises:
            StateError: missing joints, or position/velocity lengths that disagree with ``name``
                (a torque controller needs velocities). Finiteness is checked by the caller.
        """
        names = msg.name
        if len(msg.velocity) != len(names):
            raise StateError(
                f"joint state velocity: {len(msg.velocity)} entries for {len(names)} names"
                + (" (velocities are required)" if len(msg.velocity) == 0 else "")
            )
        self.map.take(names, np.frombuffer(msg.position, dtype=np.float64), self.q, "position")
        self.map.take(names, np.frombuffer(msg.velocity, dtype=np.float64), self.v, "velocity")
        return self.q, self.v

    def decode_effort(self, msg: JointStateMsg) -> FloatArray | None:
        """Reordered effort (N·m), or ``None`` when the message has none of the right length."""
        if len(msg.effort) != len(msg.name):
            return None
        return self.map.take(msg.name, np.frombuffer(msg.effort, dtype=np.float64), self.effort, "effort")


class JointStateEncoder:
    """Numpy state → one reused ``sensor_msgs/JointState`` (the caller publishes it)."""

    def __init__(self, joint_names: Sequence[str], frame_id: str = "") -> None:
        self.msg = JointStateMsg()
        self.msg.name = list(joint_names)
        self.msg.header.frame_id = frame_id
        self.n = len(self.msg.name)

    def encode(self, stamp_ns: int, q: FloatArray, v: FloatArray, effort: FloatArray) -> JointStateMsg:
        """Fill the message: angles (rad), velocities (rad/s), applied torques (N·m).

        Raises:
            ValueError: ``q``, ``v`` or ``effort`` is not one row of one value per joint
                (:func:`check_size`).
        """
        msg = self.msg
        ns_to_stamp(stamp_ns, msg.header.stamp)
        msg.position = self._field("joint state q", q)
        msg.velocity = self._field("joint state v", v)
        msg.effort = self._field("joint state effort", effort)
        return msg

    def _field(self, field: str, values: FloatArray) -> array.array:
        """``values`` as a message field, if it is one row of ``n`` values."""
        check_size(field, values, self.n)
        return as_double_array(values)


class CommandEncoder:
    """Torques → one reused ``std_msgs/Float64MultiArray`` in the ``joints`` order."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.msg = Float64MultiArray()
        self._dim = MultiArrayDimension(label=COMMAND_LABEL, size=n, stride=n)
        self.msg.layout.dim = [self._dim]

    def encode(self, tau: FloatArray, answers_stamp_ns: int | None = None) -> Float64MultiArray:
        """Fill the message with ``tau`` (N·m), tagged with the stamp of the state it answers.

        Raises:
            ValueError: ``tau`` is not one row of ``n`` values (:func:`check_size`).
        """
        check_size("effort command tau", tau, self.n)
        data = as_double_array(tau)
        self._dim.label = command_label(answers_stamp_ns)
        self.msg.data = data
        return self.msg


def check_size(field: str, values: FloatArray, n: int) -> None:
    """Refuse ``values`` of ``field`` unless it is one row of ``n`` values (shape ``(n,)``).

    Encoded as given, a command would say ``n`` values (``dim[0].size``) and hold another number,
    a joint state would not hold one value per name, and one value copied into the ``n`` of
    :class:`~torque_ctrl_ros.nodes.wire.JointStateWire`'s buffer would fill them all. A ``(1, n)``
    or ``(n, 1)`` array holds ``n`` values, but is refused too, so that the four encoders agree.
    The nodes always pass the ``n`` values of their joints: anything else is a programming error,
    hence a plain ``ValueError`` (:class:`StateError` is for what arrives).

    Raises:
        ValueError: ``"<field>: <n> values expected, got shape <shape>"``.
    """
    try:
        shape = values.shape  # an array's own attribute: np.shape costs twice as much
    except AttributeError:
        shape = np.shape(values)
    if shape != (n,):
        raise ValueError(f"{field}: {n} values expected, got shape {shape}")


def decode_command(msg: Float64MultiArray, n: int) -> tuple[FloatArray, int | None]:
    """``(tau, answered_stamp_ns)`` from a command; the stamp is ``None`` when untagged.

    ``tau`` is a read-only view of the message buffer.

    Raises:
        StateError: a layout other than ``len(data)`` values from offset 0
            (:func:`check_command_layout`), wrong length, non-finite entries, or a malformed
            stamp label.
    """
    tau = np.frombuffer(msg.data, dtype=np.float64)
    check_command_layout(msg.layout, tau.size)
    return check_command(tau, n), command_stamp_ns(msg)


def plain_layout(count: int, data_offset: int, size: int | None, stride: int | None) -> bool:
    """Whether a ``Float64MultiArray`` layout describes its ``count`` values from offset 0, as the
    encoders write it: ``data_offset`` 0 and, if there is a first dimension (``size``, ``stride``;
    ``None`` without one), its ``size`` and ``stride`` both ``count``. Dimensions after the first
    are not read."""
    return data_offset == 0 and (size is None or size == stride == count)


def check_command_layout(layout: MultiArrayLayout, count: int) -> None:
    """Refuse a command whose ``layout`` says anything but ``count`` values from offset 0.

    Read as its layout says (``dim[0].size`` values from ``data_offset``), such a command holds
    other torques than ``data``, or fewer: applied as ``data``, it is not what its sender described.
    No dimension at all is a plain (untagged) command.

    Raises:
        StateError: saying what the layout claimed.
    """
    dims = layout.dim
    size, stride = (dims[0].size, dims[0].stride) if dims else (None, None)
    if plain_layout(count, layout.data_offset, size, stride):
        return
    claimed = (
        f"dim[0].size {size}, dim[0].stride {stride}, data_offset {layout.data_offset}"
        if dims
        else f"no dimension, data_offset {layout.data_offset}"
    )
    raise StateError(
        f"effort command layout claims {claimed} for {count} values in data; expected dim[0].size = "
        "dim[0].stride = len(data) and data_offset 0"
    )


def check_command(tau: FloatArray, n: int) -> FloatArray:
    """``tau`` itself if it holds ``n`` finite torques.

    Raises:
        StateError: wrong length or non-finite entries.
    """
    if tau.shape != (n,):
        raise StateError(f"effort command has {tau.size} entries, expected {n}")
    if not np.isfinite(tau).all():
        raise StateError(f"effort command has non-finite entries: {tau.tolist()}")
    return tau


def command_stamp_ns(msg: Float64MultiArray) -> int | None:
    """The answered-state stamp (ns) carried in the layout label, or ``None``."""
    dims = msg.layout.dim
    return label_stamp_ns(dims[0].label) if dims else None


def command_label(answers_stamp_ns: int | None) -> str:
    """The label of a command answering the state stamped ``answers_stamp_ns`` (ns):
    ``joints@<sec>.<nanosec>`` (nanosec nine digits), or ``joints`` untagged (``None``); what
    :func:`label_stamp_ns` reads."""
    if answers_stamp_ns is None:
        return COMMAND_LABEL
    sec, nsec = divmod(int(answers_stamp_ns), _NS)
    return f"{COMMAND_LABEL}@{sec}.{nsec:09d}"


def label_stamp_ns(label: str) -> int | None:
    """The answered-state stamp (ns) in a ``joints@<sec>.<nanosec>`` label as the encoders write it
    (``sec`` an integer, ``nanosec`` nine digits: ``sec·1e9 + nanosec``), or ``None`` for an
    untagged command: a label without ``@`` (empty, ``joints``, a publisher's own), or whose name
    before the ``@`` is not ``joints`` even ignoring case and surrounding spaces (``other@1``).

    Raises:
        StateError: a label tagged otherwise: ``joints@`` followed by anything but the stamp as
            the encoders write it, or ``joints`` in another case or with spaces before the ``@``
            (``Joints@1.000000001``, ``joints @1.000000001``). Taken as untagged, such a command
            would skip the check of the state it answers (in realtime an untagged command answers
            the current state, however old the state it was sent for). Read loosely,
            ``joints@1.5`` would be 1 s and 5 ns, and ``1_0`` ten seconds (``int`` takes
            underscores and spaces). So is a ``sec`` of more than ten digits
            (``builtin_interfaces/Time`` holds an int32): one of 5 000 digits would raise out of
            the simulator's command callback (Python refuses to convert over 4 300) and end the
            process.
    """
    name, at, stamp = label.partition("@")
    if not at or name.strip().casefold() != COMMAND_LABEL:
        return None
    sec, _, nsec = stamp.partition(".")
    digits = sec[1:] if sec[:1] == "-" else sec
    if not (
        name == COMMAND_LABEL
        and len(nsec) == 9
        and 0 < len(digits) <= 10
        and nsec.isascii()
        and nsec.isdigit()
        and digits.isascii()
        and digits.isdigit()
    ):
        raise StateError(
            f"command layout label {label[:40]!r}: expected {COMMAND_LABEL}@<sec>.<nanosec> (an integer of "
            "at most ten digits, then nine digits), the stamp of the state it answers"
        )
    return int(sec) * _NS + int(nsec)
