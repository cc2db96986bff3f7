"""Behaviours of the per-step message paths that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: the
CDR codecs (nodes/wire.py), the message conversions (nodes/conversions.py), the scheduling
requests of a node process (nodes/scheduling.py) and the simulator's command rules
(sim/commands.py). No DDS traffic.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64MultiArray
from test_conversions_and_params import _in_child_process
from test_sim_commands import DT, T0, TIMEOUT, N, stamp, tau
from test_wire import GEN3, NS

from torque_ctrl_ros.core.errors import ConfigError, StateError
from torque_ctrl_ros.nodes import scheduling as sch
from torque_ctrl_ros.nodes import wire
from torque_ctrl_ros.nodes.conversions import CommandEncoder, JointStateEncoder, decode_command
from torque_ctrl_ros.nodes.scheduling import CPUS_ENV, Placement, parse_cpus
from torque_ctrl_ros.nodes.wire import CommandWire, JointStateWire
from torque_ctrl_ros.sim.commands import CommandRules, Verdict

# ------------------------------------------------------------------------------------------------
# nodes/wire.py and nodes/conversions.py: what a message is read as
# ------------------------------------------------------------------------------------------------


def test_a_learned_layout_of_our_joints_in_order_then_extra_ones_is_read() -> None:
    """A driver that sends the seven joints in our order and then a gripper's: once learned, its
    states decode to the first seven values. (Mutant: ``_expect`` compares the joint order with
    ``range(len(order))`` instead of ``range(len(names))``: such a layout then counts as ours,
    and copying its eight values into seven raised out of :meth:`JointStateWire.decode`.)"""
    names = [*GEN3, "gripper"]
    q, v = np.arange(8.0) * 0.1, -np.arange(8.0)
    raw = serialize_message(JointStateEncoder(names).encode(3 * NS, q, v, q))
    codec = JointStateWire(GEN3)
    assert codec.learn(names)
    decoded = codec.decode(raw)
    assert decoded is not None and decoded[0] == 3 * NS
    assert np.array_equal(decoded[1], q[:7]) and np.array_equal(decoded[2], v[:7])


@pytest.mark.parametrize("make", [lambda: JointStateWire(GEN3), lambda: CommandWire(7)])
def test_a_codec_that_cannot_read_rclpys_bytes_is_not_available(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], JointStateWire | CommandWire]
) -> None:
    """The self-check holds a codec to both directions: where the RMW serializes otherwise (here
    big-endian, which the decoders leave to rclpy) its bytes do not decode to the probe, and the
    codec is not available even though rclpy still reads the codec's own bytes. (Mutants:
    ``JointStateWire._check`` returns ``ours_ok`` alone; ``CommandWire._check`` drops its
    ``decoded`` comparison.)"""
    assert make().available

    def big_endian(msg: object) -> bytes:
        return b"\x00\x00" + serialize_message(msg)[2:]

    monkeypatch.setattr(wire, "serialize_message", big_endian)
    assert not make().available


@pytest.mark.parametrize("answers", [None, 5 * NS + 7])
def test_both_command_encoders_publish_the_same_message(answers: int | None) -> None:
    """The CDR encoder and the message encoder write one message, the untagged one included
    (layout label ``joints``, as the module documents it). (Mutant: ``CommandWire.encode`` labels
    an untagged command ``""``: rclpy reads it as untagged all the same, so only the message
    differs.)"""
    torques = np.linspace(-3.0, 3.0, 7)
    ours = deserialize_message(CommandWire(7).encode(torques, answers), Float64MultiArray)
    assert ours == CommandEncoder(7).encode(torques, answers)


def test_a_plain_command_of_the_wrong_length_is_refused_for_its_length() -> None:
    """Three torques under a layout saying three are refused for their count, not for a layout
    that says exactly what the data holds. (Mutant: ``decode_command`` checks the layout against
    ``n`` instead of ``len(data)``: the refusal then claims the layout disagrees with data.)"""
    msg = CommandEncoder(3).encode(np.ones(3), 4 * NS)
    with pytest.raises(StateError, match=re.escape("effort command has 3 entries, expected 7")):
        decode_command(msg, 7)


# ------------------------------------------------------------------------------------------------
# nodes/scheduling.py: what a node process asks the kernel for
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["1 2", "0, 1 2", "1_0", "+1", "٣"])
def test_a_cpu_number_is_ascii_digits_not_whatever_int_reads(text: str) -> None:
    """``TORQUE_CTRL_CPUS="1 2"`` (a list written with a space) is refused: it had been read as
    CPU 12 (spaces were removed before splitting), pinning the node silently to another CPU on a
    machine that has one, and ``1_0`` or an Arabic-Indic ``3`` as whatever ``int`` makes of them.
    Spaces around a number stay allowed. (A bug this review found; the mutant is the old parser:
    ``text.replace(" ", "")``, then ``int`` of each bound.)"""
    with pytest.raises(ConfigError, match=CPUS_ENV):
        parse_cpus(text)
    assert parse_cpus(" 1 - 2 , 4 ") == {1, 2, 4}


@pytest.mark.parametrize("text", ["1_0", "+5", "٣", "-0"])
def test_a_priority_or_latency_is_read_as_the_cpu_lists_are(text: str) -> None:
    """The real-time priority and the CPU latency take ASCII digits only, like the CPU list:
    ``int`` had read ``1_0`` as 10, ``+5`` as 5 and an Arabic-Indic digit as its value.
    Spaces around the number stay allowed."""
    with pytest.raises(ConfigError, match=sch.RT_PRIORITY_ENV):
        sch.request_realtime({sch.RT_PRIORITY_ENV: text})
    with pytest.raises(ConfigError, match="cpu latency"):
        sch.parse_cpu_latency(text)
    assert sch.request_realtime({sch.RT_PRIORITY_ENV: " 0 "}) == "normal"
    assert sch.parse_cpu_latency(" 50 ") == 50


def test_the_largest_documented_values_are_accepted() -> None:
    """A CPU latency of 1 000 000 µs and priority 99 are in range, by the environment and by a
    runner's placement alike. (Mutants: ``<`` for ``<=`` in ``parse_cpu_latency`` and in both
    checks of ``Placement.from_spec``.)"""
    assert sch.parse_cpu_latency("1000000") == 1_000_000
    placed = Placement.from_spec(99, "none", 1_000_000)
    assert (placed.rt_priority, placed.cpu_latency_us) == (99, 1_000_000)


def test_auto_placement_takes_the_first_two_usable_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--cpus auto`` puts the simulator on the first usable CPU and the controller on the
    second, wherever the usable set lies. (Mutant: the controller on ``allowed[-1]``, the same
    on a two-CPU machine.)"""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 5, 7, 9})
    auto = Placement.from_spec(0, "auto")
    assert (auto.sim_cpus, auto.controller_cpus) == ("2", "5")


@pytest.mark.parametrize("cpus", ["none", "", "auto"])
def test_a_cpu_latency_request_is_kept_without_pinning(monkeypatch: pytest.MonkeyPatch, cpus: str) -> None:
    """``--cpu-latency-us 0`` without ``--cpus`` (or ``auto`` on one CPU) still reaches both
    nodes. (Mutants: the ``none`` branch, or the one-CPU ``auto`` branch, of
    ``Placement.from_spec`` builds the placement without ``cpu_latency_us``: the request was
    dropped silently.)"""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    placed = Placement.from_spec(0, cpus, 0)
    assert placed.cpu_latency_us == 0
    assert (
        placed.env("sim_node")[sch.CPU_LATENCY_ENV]
        == placed.env("controller_node")[sch.CPU_LATENCY_ENV]
        == "0"
    )


def test_a_latency_request_the_device_refuses_leaves_no_descriptor_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write the device refuses (``/dev/full``: ENOSPC) is reported as not held, holds nothing
    and closes the descriptor it opened. (Mutant: the ``except`` around the write no longer closes
    ``fd``: each failed request leaked a descriptor.)"""
    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("no /dev/full")
    opened: list[int] = []
    closed: list[int] = []
    real_open, real_close = os.open, os.close

    def recording_open(*args: Any, **kwargs: Any) -> int:
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    def recording_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "close", recording_close)
    got = sch.request_cpu_latency({sch.CPU_LATENCY_ENV: "0"}, full)
    assert got.startswith("cpu latency 0 us not held: "), got
    assert len(opened) == 1 and opened[0] in closed
    assert "cpu_latency" not in sch.current_policy()


def test_pinning_covers_the_threads_already_running() -> None:
    """``request_cpus`` pins every thread of the process, those started before it too (by the
    imports, in a node). Run in a child process, so the mask does not stick to the test runner.
    (Mutant: ``os.sched_setaffinity(0, cpus)``, the calling thread alone.)"""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one usable CPU: every thread is on it already")
    target = allowed[-1]
    code = (
        "import os, threading; from torque_ctrl_ros.nodes.scheduling import request_cpus; "
        "stop = threading.Event(); t = threading.Thread(target=stop.wait); t.start(); "
        f"request_cpus({{'{CPUS_ENV}': '{target}'}}); "
        "print(sorted(os.sched_getaffinity(t.native_id))); stop.set(); t.join()"
    )
    assert _in_child_process(code).strip() == f"[{target}]"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_node_whose_named_parent_is_already_gone_interrupts_itself() -> None:
    """``stop_with_parent`` with a pid that is not the process's parent (the runner ended before
    the request): the process sends itself the SIGINT it would have got; with its real parent it
    just returns. (Mutant: the ``os.getppid() != parent`` check skipped: such a node ran on for
    good.)

    The child sets Python's SIGINT handler itself, as the nodes set theirs before the call: a test
    run started as a background job inherits SIGINT ignored, and Python then installs none (the
    SIGINT, sent all the same, did nothing: 'gone True')."""
    code = (
        "import os, signal; from torque_ctrl_ros.nodes.scheduling import PARENT_ENV, stop_with_parent as s\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "print('parent', s({PARENT_ENV: str(os.getppid())}))\n"
        "try:\n"
        "    print('gone', s({PARENT_ENV: str(os.getpid())}))\n"
        "except KeyboardInterrupt:\n"
        "    print('gone interrupted')\n"
    )
    assert _in_child_process(code).split("\n")[:2] == ["parent True", "gone interrupted"]


# ------------------------------------------------------------------------------------------------
# sim/commands.py: which command drives the arm
# ------------------------------------------------------------------------------------------------


def test_the_state_grid_counts_from_state_0_not_from_time_0() -> None:
    """With state 0 stamped off a multiple of the step (``t0 = T0 + DT/3``), an answer to an
    earlier state is taken and one on the ``k·dt`` grid of time 0 is no state's. (Mutant: the
    UNPUBLISHED check tests ``stamp % dt`` instead of ``(stamp - t0) % dt``: every answer to an
    earlier state was ignored, and answers to states never published held.)"""
    t0 = T0 + DT // 3
    rules = CommandRules(N, "realtime", DT, t0, TIMEOUT)
    k = 5
    assert rules.offer(t0 + 3 * DT, tau(1.0), k) is Verdict.ACCEPTED
    assert rules.offer(stamp(3), tau(2.0), k) is Verdict.UNPUBLISHED
    assert np.array_equal(rules.tau, tau(1.0))


def test_a_timeout_in_ns_is_rounded_not_truncated() -> None:
    """``command_timeout`` 0.00207 s is 2 070 000 ns although ``0.00207 * 1e9`` is a hair under it:
    with 10 µs steps an answer to the state exactly 207 steps back is still taken and held, as
    the module promises (integer ns, no rounding moves a command across a limit). (Mutant:
    ``int(command_timeout * 1e9)``, 1 ns shorter: that answer was STALE.)"""
    dt = 10_000
    rules = CommandRules(N, "realtime", dt, 0, 0.00207)
    assert rules.offer(0, tau(1.0), 207) is Verdict.ACCEPTED
    assert rules.fresh(207)
