"""Behaviours of a node process's scheduling requests and of the message conversions that a second
mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch:
what a node asks the kernel for (nodes/scheduling.py: real-time priority, CPU pinning, CPU latency,
the runners' placement) and what a command or joint state message is read or written as
(nodes/conversions.py). The scheduling calls are recorded instead of made, and the latency
requests go to /dev/null, so nothing sticks to the test runner; no DDS traffic.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from test_conversions_and_params import _command
from test_wire import GEN3, NS

from torque_ctrl_ros.core.errors import ConfigError, StateError
from torque_ctrl_ros.nodes import scheduling as sch
from torque_ctrl_ros.nodes.conversions import JointStateEncoder, decode_command, label_stamp_ns
from torque_ctrl_ros.nodes.wire import CommandWire

NULL = Path("/dev/null")  # a character device that takes any write, as the latency device does


@contextmanager
def _another_thread() -> Iterator[threading.Thread]:
    """A thread of this process that waits until the block ends (one already running when a
    request is made, as the imports' threads are in a node)."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join()


def _record_affinity(
    monkeypatch: pytest.MonkeyPatch, usable: set[int], ended: int | None = None
) -> dict[int, set[int]]:
    """Make ``usable`` the CPUs this process may use and record each thread's pinning
    (thread id → CPUs) instead of making it; pinning thread ``ended`` fails as for a thread that
    ended meanwhile (ESRCH)."""
    pinned: dict[int, set[int]] = {}

    def set_affinity(tid: int, cpus: Any) -> None:
        if tid == ended:
            raise ProcessLookupError(errno.ESRCH, "No such process")
        pinned[tid] = set(cpus)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(usable))
    monkeypatch.setattr(os, "sched_setaffinity", set_affinity)
    return pinned


def _record_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    """The arguments of each call of ``os.<name>`` from now on (the call is still made)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(os, name)

    def recording(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, name, recording)
    return calls


# ------------------------------------------------------------------------------------------------
# nodes/scheduling.py: what a node process asks the kernel for
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("priority", [1, 99])
def test_a_realtime_request_covers_every_thread_at_the_priority_asked(
    monkeypatch: pytest.MonkeyPatch, priority: int
) -> None:
    """``$TORQUE_CTRL_RT_PRIORITY`` 1 (the lowest SCHED_FIFO priority) or 99 puts the calling
    thread and the threads already running (rclpy's, started by the imports) under SCHED_FIFO at
    that priority. (Mutants: the ``_all_threads`` call of ``request_realtime`` dropped, so the
    threads started before it stayed on the normal policy; ``priority == 0`` → ``priority <= 1``,
    so priority 1 meant normal scheduling.)"""
    asked: dict[int, tuple[int, int]] = {}
    monkeypatch.setattr(
        os,
        "sched_setscheduler",
        lambda tid, policy, param: asked.update({tid: (policy, param.sched_priority)}),
    )
    with _another_thread() as running:
        got = sch.request_realtime({sch.RT_PRIORITY_ENV: str(priority)})
    assert got == f"fifo:{priority}"
    assert asked[0] == asked[threading.get_native_id()] == (os.SCHED_FIFO, priority)
    assert running.native_id is not None and asked[running.native_id] == (os.SCHED_FIFO, priority)


def test_pinning_to_every_usable_cpu_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TORQUE_CTRL_CPUS`` naming exactly the CPUs the process may use (``3`` in a container
    given CPU 3 alone) pins every thread there. (Mutant: ``cpus <= allowed`` → ``cpus < allowed``
    in ``request_cpus``: the node refused to start, saying CPU 3 was not available.)"""
    pinned = _record_affinity(monkeypatch, {3})
    assert sch.request_cpus({sch.CPUS_ENV: "3"}) == "cpus:3"
    assert pinned[threading.get_native_id()] == {3}


def test_a_thread_that_ends_while_pinning_does_not_fail_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread listed in /proc/self/task that has ended by the time it is pinned (ESRCH) is
    skipped: the others are pinned and the node starts. (Mutant: ``_all_threads`` catches only
    ``ValueError``: the ``ProcessLookupError`` ended the node at start, now and then.)"""
    with _another_thread() as ending:
        pinned = _record_affinity(monkeypatch, {0, 1}, ended=ending.native_id)
        assert sch.request_cpus({sch.CPUS_ENV: "1"}) == "cpus:1"
    assert pinned[threading.get_native_id()] == {1} and ending.native_id not in pinned


def test_the_latency_request_is_the_kernels_four_byte_integer(monkeypatch: pytest.MonkeyPatch) -> None:
    """25 µs goes to the device as one native-endian s32, the only binary form
    /dev/cpu_dma_latency reads (other lengths are parsed as hex text: eight bytes are refused, so
    no request held). (Mutant: ``struct.pack("=q", us)``: the child-process test of the real
    device accepts "not held", and /dev/null takes any bytes.)"""
    writes = _record_calls(monkeypatch, "write")
    try:
        assert sch.request_cpu_latency({sch.CPU_LATENCY_ENV: "25"}, NULL) == "cpu_latency:25us"
    finally:
        sch.release_cpu_latency()
    assert [data for _, data in writes] == [(25).to_bytes(4, sys.byteorder, signed=True)]


def test_a_replaced_or_released_latency_request_closes_its_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel holds a latency request while its file stays open: a new request closes the
    earlier one's descriptor, and ``release_cpu_latency`` closes the last. (Mutants: the request
    keeps its value but not its descriptor (``_latency_fd, _latency_us = None, us``); the
    ``os.close`` of ``release_cpu_latency`` dropped. Either way the earlier request held on, and
    its descriptor leaked, while the policy named only the new one.)"""
    closes = _record_calls(monkeypatch, "close")
    try:
        assert sch.request_cpu_latency({sch.CPU_LATENCY_ENV: "0"}, NULL) == "cpu_latency:0us"
        first = sch._latency_fd
        assert sch.request_cpu_latency({sch.CPU_LATENCY_ENV: "25"}, NULL) == "cpu_latency:25us"
        second = sch._latency_fd
        assert closes == [(first,)]
    finally:
        sch.release_cpu_latency()
    assert closes == [(first,), (second,)]


def test_the_policy_says_normal_or_fifo_as_the_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summaries' scheduling reads ``normal`` for a thread on the normal policy and
    ``fifo:<priority>`` for one under SCHED_FIFO (a runner reads it to tell whether real-time
    was granted). (Mutant: ``== os.SCHED_FIFO`` → ``!=`` in ``current_policy``: a normal node
    reported ``fifo:0``, a real-time one ``normal``.)"""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "sched_getparam", lambda pid: os.sched_param(20))
    monkeypatch.setattr(os, "sched_getscheduler", lambda pid: os.SCHED_OTHER)
    assert sch.current_policy() == "normal"
    monkeypatch.setattr(os, "sched_getscheduler", lambda pid: os.SCHED_FIFO)
    assert sch.current_policy() == "fifo:20"


@pytest.mark.parametrize("node", ["sim_node", "controller_node", "composed"])
def test_a_runners_priority_reaches_every_node(node: str) -> None:
    """``--rt-priority 20`` goes into each node's ``$TORQUE_CTRL_RT_PRIORITY``. (Mutant:
    ``Placement.env`` writes ``"0"``: every node ran on the normal policy, silently.)"""
    assert sch.Placement.from_spec(20, "none").env(node)[sch.RT_PRIORITY_ENV] == "20"


@pytest.mark.parametrize("priority", [-1, 100])
def test_a_runners_priority_out_of_range_is_refused_before_any_node_starts(priority: int) -> None:
    """A placement with a priority outside 0..99 is refused by the runner, naming its option,
    as a latency out of range is. (Mutant: the upper bound of ``Placement.from_spec`` is 100: the
    runner started the nodes, which then exited over ``$TORQUE_CTRL_RT_PRIORITY``.)"""
    with pytest.raises(
        ConfigError,
        match=re.escape(f"rt priority: expected an integer 0..99 (0: normal scheduling), got {priority}"),
    ):
        sch.Placement.from_spec(priority, "none")


# ------------------------------------------------------------------------------------------------
# nodes/conversions.py: what a message is read or written as
# ------------------------------------------------------------------------------------------------


def test_a_joint_state_carries_the_frame_it_was_built_with() -> None:
    """``JointStateEncoder(names, frame_id)`` writes ``frame_id`` into every state's header (the
    CDR codec's self-check builds its probe so, to read past a frame that is not empty).
    (Mutant: the constructor no longer sets ``header.frame_id``: every state said ``""``.)"""
    zeros = np.zeros(len(GEN3))
    msg = JointStateEncoder(GEN3, "base_link").encode(2 * NS, zeros, zeros, zeros)
    assert msg.header.frame_id == "base_link"


@pytest.mark.parametrize(("size", "stride"), [(6, 7), (14, 7)])
def test_a_command_whose_size_disagrees_with_its_data_is_refused(size: int, stride: int) -> None:
    """Seven torques under a layout whose ``dim[0].size`` says 6 (or 14) are refused although the
    stride says 7: read as the layout says, the command holds other torques than ``data``. The CDR
    decoder leaves such a message to rclpy, whose copy is refused saying what the layout claimed.
    (Mutant: ``plain_layout`` compares only the stride with the count.)"""
    msg = _command("joints@3.000000004")
    msg.layout.dim[0].size, msg.layout.dim[0].stride = size, stride
    claimed = f"layout claims dim[0].size {size}, dim[0].stride {stride}, data_offset 0 for 7 values"
    with pytest.raises(StateError, match=re.escape(claimed)):
        decode_command(msg, 7)
    assert CommandWire.decode(serialize_message(msg)) is None


@pytest.mark.parametrize("label", ["joints@+1.000000000", "joints@+0.000000001"])
def test_a_stamp_with_a_plus_sign_is_refused(label: str) -> None:
    """The seconds of a ``joints@`` label are an optional minus and then ASCII digits, as the
    encoders write them: a leading ``+`` is refused as the malformed tag it is, like the
    ``1_0`` that ``int`` would also read. (Mutant: the ``+`` stripped like the minus in
    ``label_stamp_ns``: ``joints@+1.000000000`` read as 1 s.)"""
    with pytest.raises(StateError, match=re.escape(f"{label!r}: expected joints@<sec>.<nanosec>")):
        label_stamp_ns(label)
