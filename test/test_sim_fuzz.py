"""Seeded fuzz of the simulator node (``nodes/sim_node.py``) on hostile command streams: a real
:class:`SimNode` running its own loop (:meth:`SimNode.run`, realtime and lockstep), its command
callbacks (``_on_command_bytes`` with ``serialized_io``, else ``_on_command``) fed by a stand-in
for the executor, the states, ``/clock`` and ``/diagnostics`` kept by
:class:`~test_node_runtime_guards.Recorder` s. No DDS traffic and no real sleep: the module's
``time`` is the test's (:class:`FakeTime`), and ``_spin_until`` is replaced by one that hands the
node the queued commands one at a time, as ``executor.spin_once`` would, returning once the state
is answered when the loop asks for that, else once the queue is empty (the wait then lasts to its
deadline).

Each step the stream queues a batch (:data:`EVENTS`): valid answers to the current state (torques
within the actuators' ranges, past them, or huge but finite), answers to past or future states
and to times between two states or before state 0 (never published), duplicates, untagged
commands, wrong lengths, NaN / ±inf, layouts other than ``len(data)`` values from offset 0,
malformed ``joints@`` labels, mutated or unreadable bytes (:func:`~test_target_fuzz._mutated`),
bursts, a second controller's answers, silences (the command timeouts) and stalls of the
simulator itself (realtime: the catch-up, one message a step).

An independent model (:class:`Expected`) applies the rules of the module docstring and
docs/interfaces.md to what was sent: which command the plant should get at each step (the latest
valid one while fresh, else the safe torque) and the counts. Checked after every callback and
every step:

- nothing raises out of a callback;
- the step gets the command the rules say (or the safe torque ``g(q) − K_d·q̇`` / ``−K_d·q̇`` / 0
  of the state before it), and the plant applies it clamped to the actuators' ranges (read from
  the MuJoCo model, not from the plant's code): finite and within range; the state stays finite;
- ``commands_received``, ``rejected_commands``, ``stale_answers``, ``untagged_commands``,
  ``missing_command_steps``, ``late_steps`` and ``answered_states`` are the model's (so never
  decrease); ``commands_via_rclpy`` never decreases, is 0 on the message path and never exceeds
  what was received;
- ``/diagnostics`` publish at any moment (``_diag_next = 0``), with the node's counts and finite
  numbers (percentiles of an empty window are NaN).

``TORQUE_CTRL_SIM_FUZZ_SEEDS=N`` runs each case with N seeds (a campaign) instead of one.
"""

from __future__ import annotations

import os
import re
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mujoco
import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import Nodes, Recorder, nodes  # noqa: F401
from test_target_fuzz import _mutated

pytestmark = [pytest.mark.ros, requires_rclpy]

STEPS = 400  #: steps of one stream (simulated ms)
COMMAND_TIMEOUT = 0.01  #: realtime ``command_timeout`` (s): 10 steps, so that silences outlast it
LOCKSTEP_TIMEOUT = 0.25  #: lockstep ``lockstep_timeout`` (s): three polls of the fake clock
EVENTS = (
    "valid",
    "valid",
    "valid",
    "past_limits",
    "huge",
    "past",
    "old",
    "future",
    "off_grid",
    "wild_stamp",
    "duplicate",
    "untagged",
    "wrong_length",
    "non_finite",
    "layout",
    "extra_dims",
    "bad_label",
    "mutated",
    "unreadable",
    "burst",
    "second_controller",
    "silence",
    "stall",
)
#: Labels tagged as a stamp (``joints`` before their first ``@``, ignoring case and surrounding
#: spaces) and not one as the encoders write it (``joints@<sec>.<9 digits>``).
BAD_LABELS = (
    "joints@",
    "joints@1.5",
    "joints@1_0.000000000",
    "joints@ 1.000000000",
    "joints@1.000000000 ",
    "joints@-.000000000",
    "joints@12345678901.000000000",
    "joints@\u0661.000000000",
    "joints@0.00000000\u0661",
    "joints@1.0000000000",
    "joints@" + "9" * 5000 + ".000000000",
    "joints@1.000000000\n",
    "Joints@1.000000000",
    "joints @1.000000000",
)
#: Labels read as untagged (no ``@``, or another name than ``joints`` before it).
UNTAGGED_LABELS = ("joints", "", "Joints", "other@1.000000000", "effort", "joints@"[:-1] + "#0.000000000")
_STAMP_LABEL = re.compile(r"joints@(-?[0-9]{1,10})\.([0-9]{9})")
_NAN_OK = ("_p50_ms", "_p90_ms", "_p99_ms", "_max_ms")


@dataclass(frozen=True)
class Case:
    """One simulator's configuration."""

    mode: str
    serialized: bool
    safe_torque: str
    wait_for_controller: bool
    joints: tuple[str, ...] = ()  # the plant's joint order ("": the model's)

    def __str__(self) -> str:
        cdr = "cdr" if self.serialized else "msg"
        order = "-reordered" if self.joints else ""
        wait = "-wait" if self.wait_for_controller else ""
        return f"{self.mode}-{cdr}-{self.safe_torque}{wait}{order}"


REORDERED = ("joint_7", "joint_2", "joint_5", "joint_1", "joint_4", "joint_6", "joint_3")
CASES = (
    Case("realtime", True, "hold", False),
    Case("realtime", False, "damping", True, REORDERED),
    Case("lockstep", True, "zero", True),
    Case("lockstep", False, "hold", False, REORDERED),
)


class FakeTime:
    """``time.monotonic`` and ``time.perf_counter`` of sim_node.py: stands still until moved."""

    def __init__(self) -> None:
        import time

        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now


@dataclass
class Reading:
    """What a command says, read by the rules (not by the node's code): ``kind`` ``unreadable``
    (bytes rclpy cannot deserialize), ``bad_label`` or ``ok``; the stamp it answers (``None``:
    untagged), its torques, and whether its layout is ``len(data)`` values from offset 0."""

    kind: str
    stamp: int | None = None
    data: np.ndarray | None = None
    layout_ok: bool = True


def read_message(msg: Any) -> Reading:
    """A ``Float64MultiArray`` read by the documented rules."""
    dims = msg.layout.dim
    data = np.array(msg.data, dtype=np.float64)
    stamp = None
    name, at, _ = dims[0].label.partition("@") if dims else ("", "", "")
    if at and name.strip().casefold() == "joints":
        match = _STAMP_LABEL.fullmatch(dims[0].label)
        if match is None:
            return Reading("bad_label")
        stamp = int(match[1]) * 1_000_000_000 + int(match[2])
    layout_ok = msg.layout.data_offset == 0 and (not dims or dims[0].size == dims[0].stride == data.size)
    return Reading("ok", stamp, data, layout_ok)


def read_bytes(raw: bytes, serialized: bool) -> Reading:
    """Serialized bytes read as rclpy reads them (the CDR fast path must agree); with
    ``serialized`` (the node reads the bytes itself), little-endian CDR whose layout claims more
    dimensions than its bytes hold (12 each at least) is unreadable: rclpy would read on past the
    failed sequence, the node refuses it."""
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    if serialized and raw[:2] == b"\x00\x01" and len(raw) >= 8:
        if int.from_bytes(raw[4:8], "little") > (len(raw) - 8) // 12:
            return Reading("unreadable")
    try:
        msg = deserialize_message(raw, Float64MultiArray)
    except Exception:  # rclpy's RMWError, not importable by a stable name
        return Reading("unreadable")
    return read_message(msg)


class Expected:
    """The simulator's rules, applied to what it was sent: the held command (realtime), the answer
    to the current state, the counts."""

    def __init__(self, mode: str, n: int, t0: int, dt: int, timeout_ns: int) -> None:
        self.mode, self.n, self.t0, self.dt, self.timeout_ns = mode, n, t0, dt, timeout_ns
        self.k = 0
        self.held: tuple[np.ndarray, int, int | None] | None = None  # torques, arrival step, stamp
        self.answer: tuple[bool, np.ndarray | None] | None = None  # the current state's: valid, torques
        self.answered: set[int] = set()  # states (steps) whose first answer came
        self.newest_answered = -(2**62)  # realtime: the latest state a tagged command offered answers
        self.torque_range = (np.full(n, -np.inf), np.full(n, np.inf))  # set from the model (N·m)
        self.counts: Counter[str] = Counter()
        self.late = 0
        self.events: Counter[str] = Counter()

    @property
    def current(self) -> int:
        return self.t0 + self.k * self.dt

    def take(self, reading: Reading) -> None:
        """One command delivered at the current step."""
        counts = self.counts
        counts["commands_received"] += 1
        if reading.kind != "ok":  # answers nothing: the held command is dropped
            counts["rejected_commands"] += 1
            self.held = None
            self.events["outcome:rejected"] += 1
            return
        stamp, current = reading.stamp, self.current
        if (
            stamp is not None
            and (stamp - self.t0) % self.dt == 0
            and 0 <= (stamp - self.t0) // self.dt <= self.k
        ):
            self.answered.add((stamp - self.t0) // self.dt)
        realtime = self.mode == "realtime"
        if stamp is not None and ((realtime and current - stamp > self.timeout_ns) or stamp > current):
            counts["stale_answers"] += 1
            self.events["outcome:stale"] += 1
            return
        if stamp is not None and (stamp < self.t0 or (stamp - self.t0) % self.dt != 0):
            counts["stale_answers"] += 1  # a state never published, also within the timeout
            self.events["outcome:unpublished"] += 1
            return
        if not realtime and stamp != current:
            # One more answer to state 0 (republished at start) is no news: not counted.
            if stamp != self.t0:
                counts["untagged_commands" if stamp is None else "stale_answers"] += 1
            self.events["outcome:untagged" if stamp is None else "outcome:stale"] += 1
            return
        if realtime and stamp is not None:
            if stamp < self.newest_answered:  # after an answer to a later state: out of order
                counts["stale_answers"] += 1
                self.events["outcome:out_of_order"] += 1
                return
            self.newest_answered = stamp
        data = reading.data
        assert data is not None
        answers_current = stamp is None or stamp == current
        if not (reading.layout_ok and data.shape == (self.n,) and np.isfinite(data).all()):
            counts["rejected_commands"] += 1
            self.held = None
            if answers_current:
                self.answer = (False, None)
            self.events["outcome:rejected"] += 1
            return
        self.held = (data.copy(), self.k, stamp)
        if answers_current:
            self.answer = (True, data.copy())
        low, high = self.torque_range
        if (data < low).any() or (data > high).any():
            counts["clipped_commands"] += 1
        self.events["outcome:taken"] += 1
        self.events["outcome:taken_untagged"] += stamp is None

    def command(self) -> np.ndarray | None:
        """The torques the next step applies by the rules, ``None`` for the safe torque."""
        if self.mode == "lockstep":
            return self.answer[1] if self.answer is not None and self.answer[0] else None
        if self.held is None:
            return None
        tau, k, stamp = self.held
        if (self.k - k) * self.dt > self.timeout_ns:
            self.events["expired:since_arrival" if stamp is None else "expired:since_state"] += 1
            return None
        if stamp is not None and self.current - stamp > self.timeout_ns:
            self.events["expired:since_state"] += 1
            return None
        return tau

    def stepped(self, used_command: bool) -> None:
        if not used_command:
            self.counts["missing_command_steps"] += 1
        self.k += 1
        self.answer = None


def torque_range(plant: Any) -> tuple[np.ndarray, np.ndarray]:
    """The joint torques (N·m) the model's motors can give, in the plant's joint order, from the
    MuJoCo model: ``gear·gain·ctrlrange`` within ``forcerange`` (a motor's force is ``gain·ctrl``)."""
    model = plant.model
    low, high = np.full(plant.n, -np.inf), np.full(plant.n, np.inf)
    for i, name in enumerate(plant.joint_names):
        joint = model.joint(name).id
        (act,) = [a for a in range(model.nu) if model.actuator_trnid[a, 0] == joint]
        gear, gain = model.actuator_gear[act, 0], model.actuator_gainprm[act, 0]
        assert gear > 0 and gain > 0  # the Gen3's motors; other signs swap the ends
        lo, hi = -np.inf, np.inf
        if model.actuator_ctrllimited[act]:
            lo, hi = gain * model.actuator_ctrlrange[act]
        if model.actuator_forcelimited[act]:
            lo, hi = max(lo, model.actuator_forcerange[act, 0]), min(hi, model.actuator_forcerange[act, 1])
        low[i], high[i] = gear * lo, gear * hi
    return low, high


class Fuzz:
    """One simulator node, its stream of commands and the checks."""

    def __init__(self, nodes: Nodes, monkeypatch: pytest.MonkeyPatch, case: Case, seed: int) -> None:  # noqa: F811
        import torque_ctrl_ros.nodes.sim_node as sim_module

        params: dict[str, Any] = {
            "mode": case.mode,
            "serialized_io": case.serialized,
            "safe_torque": case.safe_torque,
            "wait_for_controller": case.wait_for_controller,
            "command_timeout": COMMAND_TIMEOUT,
            "lockstep_timeout": LOCKSTEP_TIMEOUT,
            "duration": STEPS * 1e-3,
        }
        if case.joints:
            params["joints"] = list(case.joints)
        self.sim = sim = nodes.make("sim", **params)
        assert sim.serialized == case.serialized
        self.case, self.seed = case, seed
        self.rng = np.random.default_rng(seed)
        sim.state_pub, sim.clock_pub, sim.diag_pub = Recorder(), Recorder(), Recorder()
        self.clock = FakeTime()
        monkeypatch.setattr(
            sim_module,
            "time",
            SimpleNamespace(monotonic=self.clock.monotonic, perf_counter=self.clock.monotonic),
        )
        monkeypatch.setattr(sim, "_spin_until", self._spin_until)
        self._node_step = sim._step
        monkeypatch.setattr(sim, "_step", self._step)
        n = sim.n
        self.expected = Expected(case.mode, n, sim.t0_ns, sim.dt_ns, round(COMMAND_TIMEOUT * 1e9))
        self.low, self.high = torque_range(sim.plant)
        self.expected.torque_range = (self.low, self.high)
        cfg = sim.config
        model_order = [name for name in sim.plant.model_joint_names if name in sim.plant.joint_names]
        kd = np.broadcast_to(np.asarray(cfg.safe_damping, dtype=np.float64), (len(model_order),))
        self.kd = np.array([kd[model_order.index(name)] for name in sim.plant.joint_names])
        if case.safe_torque == "zero":
            self.kd[:] = 0.0
        self.queue: deque[Any] = deque()
        self.queued_for = -1  # the step whose batch was queued
        self.last_sent: Any = None
        self.silent_until = -1
        self.counts_before = dict(sim._counts())
        self.published_states = 0

    # ------------------------------------------------------------ the executor's stand-in
    def _spin_until(self, deadline: float, until_answered: bool) -> None:
        sim = self.sim
        if self.queued_for != sim.k or (not sim._looping and not self.queue):
            self.queued_for = sim.k
            self._queue_batch()
        if deadline <= self.clock.now:  # behind (a catch-up step): one waiting message, no wait
            if self.queue:
                self._deliver(self.queue.popleft())
            return
        while self.queue and not (until_answered and sim.commands.answered):
            self._deliver(self.queue.popleft())
            self.clock.now += 5e-6
        if not (until_answered and sim.commands.answered):
            self.clock.now = max(self.clock.now, deadline)

    def _deliver(self, item: Any) -> None:
        sim, case = self.sim, self.case
        reading = read_bytes(item, case.serialized) if isinstance(item, bytes) else read_message(item)
        if not case.serialized and reading.kind == "unreadable":
            return  # rclpy drops it before any callback
        if not case.serialized and isinstance(item, bytes):
            from rclpy.serialization import deserialize_message
            from std_msgs.msg import Float64MultiArray

            item = deserialize_message(item, Float64MultiArray)
        self.expected.take(reading)
        try:
            if case.serialized:
                sim._on_command_bytes(item)
            else:
                sim._on_command(item)
        except Exception as exc:
            raise AssertionError(
                f"{self.where()}: the command callback raised {exc!r} on {item!r:.300}"
            ) from exc
        self.check_counts("after a command")

    # ------------------------------------------------------------ the stream
    def stamp(self, k: int) -> int:
        return self.sim.t0_ns + k * self.sim.dt_ns

    def torques(self, scale: float = 1.0) -> np.ndarray:
        return self.rng.uniform(self.low, self.high) * scale

    def message(
        self, data: Any, stamp: int | None, label: str | None = None, dims: int = 1, offset: int = 0
    ) -> Any:
        """A command as the controllers write it, then as told: another ``label``, ``dims``
        dimensions (0: none), a ``data_offset``."""
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension

        data = np.asarray(data, dtype=np.float64)
        if label is None:
            label = "joints" if stamp is None else f"joints@{stamp // 10**9}.{stamp % 10**9:09d}"
        msg = Float64MultiArray()
        msg.data = data.tolist()
        msg.layout.data_offset = offset
        msg.layout.dim = [
            MultiArrayDimension(label=label if d == 0 else f"extra{d}", size=data.size, stride=data.size)
            for d in range(dims)
        ]
        return msg

    def send(self, msg: Any) -> None:
        """Queue ``msg`` as the node's subscription would get it (bytes with ``serialized_io``)."""
        from rclpy.serialization import serialize_message

        item = serialize_message(msg) if self.case.serialized else msg
        self.queue.append(item)
        self.last_sent = item

    def event(self, name: str) -> None:
        """Queue the commands of event ``name`` at the current step."""
        rng, k, n = self.rng, self.sim.k, self.sim.n
        now = self.stamp(k)
        self.expected.events[name] += 1
        if name == "valid":
            self.send(self.message(self.torques(), now))
        elif name == "past_limits":
            self.send(self.message(self.torques(rng.uniform(1.0, 5.0)), now))
        elif name == "huge":
            values = self.torques()
            values[rng.integers(n, size=rng.integers(1, n + 1))] = rng.choice(
                [1e300, -1e300, 1.7e308, -1e30, 5e-324]
            )
            self.send(self.message(values, now))
        elif name == "past":  # a state within the timeout (realtime: still valid)
            self.send(self.message(self.torques(), self.stamp(max(0, k - int(rng.integers(1, 11))))))
        elif name == "old":
            back = 11 if rng.random() < 0.5 else int(rng.integers(12, 1000))  # 11: just past the timeout
            self.send(self.message(self.torques(), self.stamp(k - back)))
        elif name == "future":
            self.send(self.message(self.torques(), self.stamp(k + int(rng.integers(1, 2000)))))
        elif name == "off_grid":  # between two published states, or before state 0
            before = now if rng.random() < 0.8 else self.stamp(0)
            self.send(self.message(self.torques(), before - int(rng.integers(1, 3 * self.sim.dt_ns))))
        elif name == "wild_stamp":
            sec = int(rng.choice([-(10**10) + 1, -1, 0, 2**31, 9_999_999_999]))
            self.send(self.message(self.torques(), None, f"joints@{sec}.{int(rng.integers(10**9)):09d}"))
        elif name == "duplicate":
            if self.last_sent is not None:
                self.queue.append(self.last_sent)
        elif name == "untagged":
            label = str(rng.choice(UNTAGGED_LABELS))
            self.send(self.message(self.torques(), None, label, dims=int(rng.integers(2))))
        elif name == "wrong_length":
            size = int(rng.choice([0, 1, n - 1, n + 1, 2 * n, 100]))
            self.send(self.message(rng.uniform(-5.0, 5.0, size), now if rng.random() < 0.8 else None))
        elif name == "non_finite":
            values = self.torques()
            values[rng.integers(n)] = rng.choice([np.nan, np.inf, -np.inf])
            self.send(self.message(values, now if rng.random() < 0.8 else None))
        elif name == "layout":
            msg = self.message(self.torques(), now, offset=int(rng.choice([0, 1, 7, 2**32 - 1])))
            if rng.random() < 0.7:
                dim = msg.layout.dim[0]
                dim.size, dim.stride = rng.choice([0, 1, n - 1, n, n + 1, 2**32 - 1], 2).tolist()
            self.send(msg)
        elif name == "extra_dims":  # dimensions after the first are not read: valid
            self.send(self.message(self.torques(), now, dims=int(rng.integers(2, 5))))
        elif name == "bad_label":
            self.send(self.message(self.torques(), None, str(rng.choice(BAD_LABELS))))
        elif name == "mutated":
            from rclpy.serialization import serialize_message

            raw = _mutated(rng, serialize_message(self.message(self.torques(), now)))
            self.queue.append(raw)
            self.last_sent = raw
        elif name == "unreadable":
            self.queue.append(bytes(rng.integers(0, 256, int(rng.integers(0, 40))).tolist()))
        elif name == "burst":
            for _ in range(int(rng.integers(5, 60))):
                self.event(str(rng.choice([e for e in EVENTS if e not in ("burst", "silence", "stall")])))
        elif name == "second_controller":  # two controllers answering the same states
            first, second = self.message(self.torques(), now), self.message(self.torques(), now)
            for msg in (first, second) if rng.random() < 0.5 else (second, first):
                self.send(msg)
            if k > 0:
                self.send(self.message(self.torques(), self.stamp(k - 1)))  # one a state behind
        elif name == "silence":  # after a last command that the timeouts then drop
            last = int(rng.integers(4))
            if last == 1:
                self.send(self.message(self.torques(), now))
            elif last == 2:  # untagged: held for command_timeout from its arrival
                self.send(self.message(self.torques(), None))
            elif last == 3:
                self.send(self.message(self.torques(), self.stamp(max(0, k - int(rng.integers(1, 6))))))
            self.silent_until = k + int(rng.integers(5, 25))
        elif name == "stall":  # this process away 0.1–0.3 s: the realtime loop catches up
            self.clock.now += float(rng.uniform(0.1, 0.3))
            self.event("valid")
        else:
            raise AssertionError(f"unknown event {name}")

    def _queue_batch(self) -> None:
        rng = self.rng
        if self.sim.k < self.silent_until:
            if self.sim._looping:
                return
            self.silent_until -= 1  # the start-up wait, which republishes state 0: a silence of spins
        draw = rng.random()
        if draw < 0.58:
            self.event("valid")
        elif draw < 0.6:
            self.event("silence")  # its last command is the batch's last
        else:
            for _ in range(int(rng.integers(1, 4))):
                self.event(str(rng.choice([e for e in EVENTS if e != "silence"])))

    # ------------------------------------------------------------ the step and the checks
    def _step(self, use_command: bool) -> None:
        sim, plant, exp = self.sim, self.sim.plant, self.expected
        want = exp.command()
        where = self.where()
        assert use_command == (want is not None), (
            f"{where}: stepped on {'the command' if use_command else 'the safe torque'}"
        )
        if want is None:
            tau = -self.kd * plant.v
            if self.case.safe_torque == "hold":
                tau += plant.gravity()
        else:
            tau = want
        if exp.mode == "realtime":
            valid_answer = exp.answer is not None and exp.answer[0]
            exp.late += not valid_answer
        self._node_step(use_command)
        exp.stepped(use_command)
        applied = plant.tau_applied
        assert np.isfinite(applied).all() and (self.low <= applied).all() and (applied <= self.high).all(), (
            f"{where}: applied {applied.tolist()} outside [{self.low.tolist()}, {self.high.tolist()}]"
        )
        np.testing.assert_allclose(
            applied, np.clip(tau, self.low, self.high), rtol=0.0, atol=1e-9, err_msg=where
        )
        assert np.isfinite(plant.q).all() and np.isfinite(plant.v).all(), f"{where}: the state is not finite"
        assert sim.k == exp.k
        self.check_counts("after a step")
        self.check_diagnostics()

    def check_counts(self, when: str) -> None:
        sim, exp = self.sim, self.expected
        counts = dict(sim._counts())
        where = f"{self.where()} {when}"
        for key in (
            "commands_received",
            "rejected_commands",
            "stale_answers",
            "untagged_commands",
            "missing_command_steps",
            "clipped_commands",
        ):
            assert counts[key] == exp.counts[key], f"{where}: {key} {counts[key]}, expected {exp.counts[key]}"
        for key, value in counts.items():
            assert value >= self.counts_before[key], f"{where}: {key} went down"
        assert counts["commands_via_rclpy"] <= counts["commands_received"]
        if not self.case.serialized:
            assert counts["commands_via_rclpy"] == 0
        if exp.mode == "realtime":
            assert counts["late_steps"] == exp.late, (
                f"{where}: late_steps {counts['late_steps']}, expected {exp.late}"
            )
        assert sim.answered_states == len(exp.answered), f"{where}: answered_states"
        self.counts_before = counts

    def check_diagnostics(self) -> None:
        sim = self.sim
        sim._diag_next = 0.0
        sent = len(sim.diag_pub.sent)
        sim._maybe_diagnostics()
        assert len(sim.diag_pub.sent) == sent + 1
        values = {kv.key: kv.value for kv in sim.diag_pub.sent[-1].status[0].values}
        for key, value in sim._counts().items():
            assert values[key] == str(value), f"{self.where()}: /diagnostics {key}"
        for key, value in values.items():
            try:
                number = float(value)
            except ValueError:
                continue
            assert np.isfinite(number) or key.endswith(_NAN_OK), (
                f"{self.where()}: /diagnostics {key} = {value}"
            )

    def where(self) -> str:
        return f"{self.case} seed {self.seed} step {self.sim.k}"

    def run(self) -> None:
        sim = self.sim
        sim.run()
        assert sim.k == STEPS, self.where()
        self.check_counts("at the end")
        self.check_diagnostics()
        # Every state published once (state 0 as often as the start-up wait republished it), with /clock.
        assert len(sim.state_pub.sent) >= STEPS + 1 and len(sim.clock_pub.sent) == len(sim.state_pub.sent)


def _seeds() -> list[int]:
    return list(range(int(os.environ.get("TORQUE_CTRL_SIM_FUZZ_SEEDS", "1"))))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_command_streams_drive_the_plant_by_the_rules(
    nodes: Nodes,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    case: Case,
) -> None:
    """Every step applies the latest valid, fresh command or the safe torque, clamped to the
    actuators' ranges; no callback raises; the counts are what was sent (module docstring)."""
    import rclpy

    totals: Counter[str] = Counter()
    for seed in _seeds():
        with monkeypatch.context() as patches:
            fuzz = Fuzz(nodes, patches, case, seed)
            fuzz.run()
        totals += fuzz.expected.events
        totals["steps"] += fuzz.sim.k
        totals["safe_steps"] += fuzz.sim.counts.missing_command_steps
        nodes.close(fuzz.sim)
        rclpy.shutdown()
    # The stream reaches every outcome: commands taken, rejected, ignored as stale or unpublished.
    outcomes: tuple[str, ...] = ("taken", "rejected", "stale", "unpublished")
    if case.mode == "realtime":  # answers to older states after newer ones (lockstep: stale)
        outcomes += ("out_of_order",)
    assert all(totals[f"outcome:{outcome}"] for outcome in outcomes), totals
    assert 0 < totals["safe_steps"] < totals["steps"], totals
    if os.environ.get("TORQUE_CTRL_SIM_FUZZ_SEEDS"):
        print(f"\n{case}: {dict(sorted(totals.items()))}")


def test_a_huge_command_to_a_motor_without_ctrlrange_is_clamped_not_zeroed(tmp_path: Path) -> None:
    """A motor limited by its ``forcerange`` alone: a finite command over MuJoCo's ``mjMAXVAL``
    (1e10) on one joint had MuJoCo take the control for a diverged one and zero every actuator's
    (mjWARN_BADCTRL): all seven joints unpowered for the step, the 5 N·m on joint_4 too, instead
    of joint_1 clamped to its 39 N·m. The sim node passes any finite command on."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    mjcf = Path(__file__).resolve().parent.parent / "mjcf"
    arm = re.sub(r'ctrlrange="[^"]*" ', "", (mjcf / "gen3.xml").read_text())
    (tmp_path / "gen3.xml").write_text(arm)
    (tmp_path / "scene.xml").write_text((mjcf / "scene.xml").read_text())
    plant = MujocoPlant(tmp_path / "scene.xml")
    assert not plant.model.actuator_ctrllimited.any() and plant.model.actuator_forcelimited.all()
    plant.reset("home")
    for huge in (1e11, -1e300, 1.7e308):
        plant.set_torque([huge, 0.0, 0.0, 5.0, 0.0, 0.0, -huge])
        plant.step()
        np.testing.assert_array_equal(
            plant.tau_applied, [np.sign(huge) * 39.0, 0, 0, 5.0, 0, 0, -np.sign(huge) * 9.0]
        )
        assert not plant.data.warning[int(mujoco.mjtWarning.mjWARN_BADCTRL)].number


def test_a_lockstep_wait_for_an_answer_ends_whatever_the_clock_reads(
    nodes: Nodes,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without an answer, ``_await_answer`` ends after ``lockstep_timeout`` of waits, here three,
    on a clock that a wait moves to its deadline (the fuzz's executor stand-in). It summed the
    waits in floats: at a reading of 15299.11 s (and at 874 of 2000 others up to 20000 s) the
    remainder fell below half an ulp of the clock, ``start + wait == start``, the clock stood
    still and the loop spun for ever (the lockstep fuzz cases hung at such uptimes)."""
    import torque_ctrl_ros.nodes.sim_node as sim_module

    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, lockstep_timeout=LOCKSTEP_TIMEOUT)
    sim.diag_pub = Recorder()
    clock = FakeTime()
    clock.now = start = 15299.114917634619
    monkeypatch.setattr(
        sim_module, "time", SimpleNamespace(monotonic=clock.monotonic, perf_counter=clock.monotonic)
    )
    deadlines: list[float] = []

    def spin_until(deadline: float, until_answered: bool) -> None:
        deadlines.append(deadline)
        assert len(deadlines) <= 10, f"the wait goes on: deadlines {deadlines[-3:]}, clock {clock.now!r}"
        clock.now = max(clock.now, deadline)

    monkeypatch.setattr(sim, "_spin_until", spin_until)
    sim._await_answer(LOCKSTEP_TIMEOUT)
    assert len(deadlines) == 3 and not sim.commands.answered
    assert clock.now == pytest.approx(start + LOCKSTEP_TIMEOUT, abs=1e-9)
