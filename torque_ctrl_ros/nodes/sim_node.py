"""Simulation node: the MuJoCo Gen3 as an effort-controlled arm on ROS topics.

Topics:
    /joint_states (sensor_msgs/JointState, out): every step; effort = torque actually applied (N·m).
    /clock (rosgraph_msgs/Clock, out): simulated time, every step, right after the state, which is
        what the controller waits for (fewer late steps than with /clock first, see
        docs/performance.md). A controller on sim time therefore reads each state one step ahead
        of its clock (state age ≈ −1 ms, within the watchdog's ``max_future``); references follow
        the state stamps. State 0's /clock goes first, so a restart is seen as one.
    /effort_controller/commands (std_msgs/Float64MultiArray, in): one torque per joint, ``joints`` order.
    /diagnostics (out): step rate, real-time factor, state→command latency, the simulator's own
        time per step (physics + publishing) and publishing the state (``state_out``), late
        steps (with the runs they came in: ``late_runs``, ``longest_late_run``), the command
        counts of :class:`Counters` (``missing_command_steps``, ``rejected_commands``,
        ``stale_answers``, ``untagged_commands``, ...), whether the safe torque is applied. Every
        key: docs/interfaces.md, "`/diagnostics`, key by key".

Which commands count, and how long one is held, is decided in ``torque_ctrl_ros/sim/commands.py``
(no ROS): answers to a state too old or never published, and in lockstep untagged commands and
answers to earlier states, are ignored; invalid ones are rejected (wrong length, NaN/inf, a layout
other than ``len(data)`` values from offset 0, unreadable bytes with ``serialized_io``; with plain
messages rclpy drops unreadable ones before this node sees them). This node counts and logs them
(throttled).

Modes:
    realtime: paced by the wall clock; the latest valid command is held (zero-order hold) while
        fresh. A step whose state was not validly answered before the next tick counts as late.
    lockstep: publish state k, wait for the command that answers it (matched by the stamp the
        controller echoes, see conversions.py), then step. Results do not depend on machine load
        while every answer comes within ``lockstep_timeout`` s of this node's own waiting (time it
        spent stopped or descheduled does not count); past that, it steps on the safe torque
        (counted in ``missing_command_steps``).

Without a valid, fresh command the plant gets the safe torque (by default ``hold``,
``g(q) − K_d·q̇``; ``damping``, ``−K_d·q̇``; or zero), reported on /diagnostics.

``command_delay`` (s, from a state to the first state showing the command that answers it, as the
controller node's parameter) longer than one step makes the commands reach the plant that much
later, the real Gen3's ~5 ms for one (:class:`~torque_ctrl_ros.sim.commands.DelayLine`): each
step's command, decided as above, drives the step ``⌈command_delay / dt⌉ − 1`` steps later;
a step whose command had not been decided (the first ones, or a gap) gets the safe torque, on the
current state.

Parameters (``config/gen3_controllers.yaml``) are read once at start-up: later changes are refused.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray, MultiArrayLayout

from ..core.errors import ConfigError, ModelError, StateError
from ..core.prediction import commands_in_flight
from ..core.robot import CONTROL_PERIOD
from ..sim.commands import ACCEPTED, MAX_COMMAND_BYTES, CommandRules, DelayLine, Verdict
from ..sim.plant import MujocoPlant
from .common import (
    CLOCK_TOPIC,
    COMMAND_TOPIC,
    DIAGNOSTICS_TOPIC,
    STATE_TOPIC,
    STOP,
    Runs,
    ThrottledLog,
    TimingLog,
    command_publishers_warning,
    control_qos,
    exit_if_stuck,
    make_executor,
    one_line,
    parameters_of,
    percentiles_ms,
    publishing_nodes,
    refuse_parameter_changes,
    run_node,
    spin_once,
    status,
    use_serialized_io,
    write_json,
    write_output,
)
from .conversions import (
    JointStateEncoder,
    check_command,
    check_command_layout,
    command_stamp_ns,
    ns_to_stamp,
)
from .params import SimNodeConfig, sim_node_config
from .scheduling import current_policy
from .wire import ClockWire, CommandWire, JointStateWire

NODE_NAME = "sim_node"
_RING = 4096  # publish times kept for latency matching (steps)
_RESYNC_S = 0.05  # realtime: further behind than this, restart the pacing instead of catching up
#: Most memory (bytes) ``record_file`` may keep: 1 GiB is 1.7 h of the Gen3 (176 bytes a state) at 1 kHz.
_MAX_RECORD_BYTES = 2**30
_STOP_POLL_S = 0.1  # longest single wait for messages: how soon a stop request is seen
#: Lockstep: an answer wait with less than this left (s) is over. Summed in floats, the waits can
#: leave a remainder below the rounding of a monotonic reading (uptime·1.1e-16 s, 2e-12 s after
#: 5 h), which no wait moves the clock by: the loop would never end. Far above that rounding, far
#: below any answer time.
_MIN_WAIT_S = 1e-6


class _Record:
    """``record_file``'s rows: state k's stamp (ns), angles (rad), velocities (rad/s) and the
    torques applied in the step before it (N·m); ``count`` rows written (state k is row k)."""

    @staticmethod
    def row_bytes(n: int) -> int:
        """Memory of one row (bytes) for ``n`` joints."""
        return 8 * (1 + 3 * n)

    def __init__(self, rows: int, n: int) -> None:
        self.t = np.zeros(rows, dtype=np.int64)
        self.q = np.zeros((rows, n))
        self.v = np.zeros((rows, n))
        self.tau = np.zeros((rows, n))
        self.count = 0


def step_count(cfg: SimNodeConfig, timestep: float, node_name: str = NODE_NAME) -> int:
    """Steps (of ``timestep`` s, the plant's) that ``cfg.duration`` runs, 0 for "until stopped",
    once the settings that depend on the step are checked.

    Raises:
        ConfigError: a step other than :data:`CONTROL_PERIOD`, a duration shorter than half a
            step, or in realtime a ``command_timeout`` shorter than two steps.
    """
    if abs(timestep - CONTROL_PERIOD) > 1e-12:
        # The controllers check their gains and dampings for one command per CONTROL_PERIOD
        # (the default damping's eigenvalue, 0.975 at 1 ms, is 1.95 at 2 ms: unstable).
        raise ConfigError(
            f"{node_name}.mjcf: {cfg.mjcf} steps {timestep * 1e3:g} ms; the controllers here "
            f"run at {CONTROL_PERIOD * 1e3:g} ms (the Gen3's torque loop) and check their gains for "
            "that period: set the model's <option timestep>"
        )
    # The nearest whole number of steps, halves rounded up (round() takes them to even).
    steps = math.floor(cfg.duration * 1e9 / round(timestep * 1e9) + 0.5) if cfg.duration > 0 else 0
    if cfg.duration > 0 and steps == 0:  # 0 steps would mean "until stopped"
        raise ConfigError(
            f"{node_name}.duration: {cfg.duration!r} s is less than half a step "
            f"({timestep:g} s); 0 runs until stopped"
        )
    if cfg.mode == "realtime" and cfg.command_timeout < 2.0 * timestep:
        # Ages count in simulated steps (CommandRules.fresh): under one step, an answer that
        # comes after its state's tick is ignored as stale and the held command lapses after
        # one step, so every step whose answer is late runs on the safe torque; at two, an
        # answer up to two steps late still drives the arm.
        raise ConfigError(
            f"{node_name}.command_timeout: {cfg.command_timeout!r} s is less than two steps "
            f"({2.0 * timestep:g} s): an answer that misses its state's tick would be ignored as stale "
            "and that step run on the safe torque"
        )
    return steps


def load_plant(cfg: SimNodeConfig, node_name: str) -> MujocoPlant:
    """The plant of ``mjcf`` driving ``joints``, reset to ``keyframe``; a model that cannot be
    loaded, joints it does not have, or a keyframe it does not have (or that puts a joint outside
    its range) are refused naming the parameters, on one line (the plant's words name the file,
    and MuJoCo's parse errors span lines)."""
    try:
        plant = MujocoPlant(cfg.mjcf, cfg.joints or None)
    except ModelError as exc:
        names = "mjcf, joints" if cfg.joints else "mjcf"
        raise ModelError(f"{node_name}.{names}: {one_line(str(exc))}") from None
    try:
        plant.reset(cfg.keyframe or None)
    except ModelError as exc:
        raise ModelError(f"{node_name}.keyframe: {one_line(str(exc))}") from None
    # The states' stamps are simulated time: builtin_interfaces/Time holds whole seconds in an
    # int32 (the CDR writer refused a larger one mid-run, rclpy's sent it wrapped to negative).
    end = plant.time + cfg.duration
    if not (0.0 <= plant.time and end < _STAMP_SECONDS_END):
        raise ModelError(
            f"{node_name}.keyframe: the simulation would run from {plant.time:g} s to {end:g} s of "
            f"simulated time, whose stamps must lie in [0, 2^31) s (builtin_interfaces/Time)"
        )
    return plant


#: The first second a state's stamp cannot hold (``builtin_interfaces/Time.sec`` is an int32).
_STAMP_SECONDS_END = 2.0**31


@dataclass
class Counters:
    """Events since start, by the names they have in ``/diagnostics`` and the summary (with the
    late steps' ``late_steps``, ``late_runs``, ``longest_late_run``, which :class:`~.common.Runs`
    counts)."""

    commands_received: int = 0
    commands_via_rclpy: int = 0  # serialized commands the CDR codec left to rclpy
    rejected_commands: int = 0
    # Steps with no valid command for them. The plant runs each on the safe torque, command_delay
    # later; with a longer delay than one step the first steps run on it too (the delay line
    # still empty) without being counted here.
    missing_command_steps: int = 0
    stale_answers: int = 0  # commands answering a state too old, earlier or never published (ignored)
    untagged_commands: int = 0  # lockstep: commands not saying which state they answer (ignored)
    overruns: int = 0  # realtime: the pacing restarted, this node being over _RESYNC_S behind
    # realtime: the ticks those restarts gave up (whole steps of the wall clock behind), which no
    # step ran and no late step counts: the arm's loop would have run them without a fresh command.
    skipped_ticks: int = 0
    # Commands taken with a torque beyond a drive's range: applied clamped to it, as an actuator
    # gives no more than it can.
    clipped_commands: int = 0


class SimNode:
    """Steps a :class:`MujocoPlant` and exchanges states and commands over DDS; which commands
    drive it, :class:`~torque_ctrl_ros.sim.commands.CommandRules` decides."""

    def __init__(self, node_name: str = NODE_NAME) -> None:
        self.node = node = Node(
            node_name, allow_undeclared_parameters=True, automatically_declare_parameters_from_overrides=True
        )
        cfg = self.config = sim_node_config(parameters_of(node), node_name)
        self.plant = plant = load_plant(cfg, node_name)
        self.n = plant.n
        self.safe_damping = cfg.damping_vector(plant.model_joint_names, plant.joint_names, plant)
        self._hold = cfg.safe_torque == "hold"
        self.max_steps = step_count(cfg, plant.timestep, node_name)
        self.dt_ns = round(plant.timestep * 1e9)
        self.t0_ns = round(plant.time * 1e9)
        self.k = 0

        # States, clock and commands as CDR bytes when the codecs pass their self-check.
        self.encoder = JointStateEncoder(plant.joint_names)
        self.clock_msg = ClockMsg()
        self.state_wire = JointStateWire(plant.joint_names)
        self.clock_wire = ClockWire()
        self.command_wire = CommandWire(self.n)
        self.serialized = use_serialized_io(
            node, cfg.common.serialized_io, self.state_wire, self.clock_wire, self.command_wire
        )

        qos = control_qos(cfg.common)
        self.clock_pub = node.create_publisher(ClockMsg, CLOCK_TOPIC, 10)
        self.state_pub = node.create_publisher(JointStateMsg, STATE_TOPIC, qos)
        self.command_sub = node.create_subscription(
            Float64MultiArray,
            COMMAND_TOPIC,
            self._on_command_bytes if self.serialized else self._on_command,
            control_qos(cfg.common, cfg.command_queue_depth),
            raw=self.serialized,
        )
        self.diag_pub = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)

        # The held command and the current state's answer, written by the callback and read by
        # the loop (same thread).
        self.commands = CommandRules(self.n, cfg.mode, self.dt_ns, self.t0_ns, cfg.command_timeout)
        # The commands' way to the plant (none beyond the step after their state by default).
        self.delay_line = DelayLine(self.n, commands_in_flight(cfg.command_delay, plant.timestep))
        self.published_wall = np.full(_RING, np.nan)
        self.published_stamp = np.full(_RING, -1, dtype=np.int64)

        keep_all = bool(cfg.common.stats_file)  # whole-run samples only for the stats_file summary
        self.latency = TimingLog(keep_all=keep_all)
        # The simulator's own work per step: physics + publishing (s).
        self.step_time = TimingLog(keep_all=keep_all)
        # Encoding and publishing a state: where its latency starts (s).
        self.state_out = TimingLog(keep_all=keep_all)
        self.counts = Counters()
        # realtime: steps taken before the current state was answered, and their runs (a
        # controller stall makes one; the catch-up after a simulator stall, which takes answers
        # as they come, several short ones).
        self.late = Runs()
        self.answered_states = 0  # states whose (first) answer arrived, the start-up one included
        self._looping = False  # the stepping loop has started (the start-up wait is over)
        self.safe_active = False
        self.last_reject = ""
        self._tau_low, self._tau_high = plant.torque_range  # what the drives give (N·m)
        # The counts of what went wrong at the last /diagnostics: those that grew since make a WARN.
        self._problems_reported = self._problems()
        self.log = ThrottledLog(node.get_logger())  # per-command errors, each kind at most once a second
        self.started_wall = time.monotonic()
        self.loop_start_wall = self.started_wall
        self._diag_next = self.started_wall + cfg.common.diagnostics_period
        self._diag_window = (self.started_wall, 0, 0.0)
        self._record = self._allocate_record() if cfg.record_file else None
        self.executor = make_executor(cfg.common.executor)
        self.executor.add_node(node)
        refuse_parameter_changes(node)
        node.get_logger().info(
            f"{cfg.mode} simulation of {cfg.mjcf} from keyframe {cfg.keyframe!r}, {self.n} joints "
            f"{list(plant.joint_names)}, step {plant.timestep * 1e3:g} ms, torque mode {plant.torque_mode}"
        )
        passive = plant.passive_terms()
        if passive:
            node.get_logger().warning(
                f"{cfg.mjcf} gives the simulated arm {'; '.join(passive)}: physics no controller's "
                "rigid-body model has; each torque commanded is applied exactly, and the arm answers it "
                "with these terms too (the shipped model has none)"
            )

    # ---------------------------------------------------------------- commands
    def _on_command_bytes(self, raw: bytes) -> None:
        """A serialized command: read in place, or deserialized by rclpy where
        :meth:`CommandWire.decode` leaves it (not little-endian CDR, truncated, a layout other than
        plain); one over :data:`~torque_ctrl_ros.sim.commands.MAX_COMMAND_BYTES`, whose layout
        claims more dimensions than its bytes hold (:meth:`CommandWire.overclaims`) or whose label
        is garbled (:meth:`CommandWire.garbled_label`) is rejected unread."""
        if len(raw) > MAX_COMMAND_BYTES:
            self._unreadable(f"command message of {len(raw)} bytes, over {MAX_COMMAND_BYTES}: not read")
            return
        try:
            fast = self.command_wire.decode(raw)
        except StateError as exc:  # a malformed stamp label
            self._unreadable(str(exc))
            return
        if fast is not None:
            self._take_command(fast[0], fast[1])
            return
        if CommandWire.overclaims(raw):
            self._unreadable(
                f"command message of {len(raw)} bytes whose layout claims more dimensions than it holds"
            )
            return
        if CommandWire.garbled_label(raw):
            self._unreadable("command whose stamp label holds a NUL byte or is not UTF-8: not read")
            return
        self.counts.commands_via_rclpy += 1
        try:
            msg = deserialize_message(raw, Float64MultiArray)
        except Exception as exc:  # rclpy's RMWError (not importable by a stable name)
            # Refused like an invalid command; raised here it would end the simulation. Received
            # all the same: left out, rejected ones outnumbered received ones and the benchmark
            # counted them as lost.
            self._unreadable(f"unreadable command message ({len(raw)} bytes): {exc}")
            return
        self._on_command(msg)

    def _on_command(self, msg: Float64MultiArray) -> None:
        try:
            stamp = command_stamp_ns(msg)
        except StateError as exc:  # a malformed stamp label
            self._unreadable(str(exc))
            return
        self._take_command(np.frombuffer(msg.data, dtype=np.float64), stamp, msg.layout)

    def _take_command(
        self, data: np.ndarray, stamp: int | None, layout: MultiArrayLayout | None = None
    ) -> None:
        """Offer ``data`` (N·m) to the rules; ``stamp``: the state it answers (ns), if tagged;
        ``layout``: the message's, to be checked (``None``: the CDR decoder took only a plain one)."""
        now = time.monotonic()
        self.counts.commands_received += 1
        if stamp is not None:
            self._record_latency(stamp, now)
        try:
            if layout is not None:
                check_command_layout(layout, data.size)
            tau: np.ndarray | None = check_command(data, self.n)
            reason = ""
        except StateError as exc:
            tau, reason = None, str(exc)
        verdict = self.commands.offer(stamp, tau, self.k)
        if verdict is not ACCEPTED:
            self._report(verdict, stamp, reason)
        elif (data < self._tau_low).any() or (data > self._tau_high).any():
            self.counts.clipped_commands += 1
            self.log.warning(
                "clipped",
                f"command {data.tolist()} N·m beyond the drives' ranges {self._tau_high.tolist()} N·m: "
                "applied clamped to them (counted as clipped_commands)",
            )

    def _unreadable(self, reason: str) -> None:
        """A command that could not be read (its bytes, its stamp label): received and rejected."""
        self.counts.commands_received += 1
        self.commands.drop()
        self._report(Verdict.REJECTED, None, reason)

    def _report(self, verdict: Verdict, stamp: int | None, reason: str) -> None:
        """Count and log a command that was not taken (``reason``: why a REJECTED one is invalid)."""
        counts = self.counts
        ago_s = 0.0 if stamp is None else (self.t0_ns + self.k * self.dt_ns - stamp) * 1e-9  # its state's age
        match verdict:
            case Verdict.REJECTED:
                counts.rejected_commands += 1
                self.last_reject = reason
                self.log.error("rejected", f"command rejected: {reason}")
            case Verdict.STALE:
                counts.stale_answers += 1
                self.log.error(
                    "stale answer",
                    f"command answering the state of {ago_s:.3f} s ago ignored "
                    f"(older than command_timeout {self.config.command_timeout:g} s)",
                )
            case Verdict.FUTURE:
                counts.stale_answers += 1
                self.log.error(
                    "future answer",
                    f"command answering a state {-ago_s:.3f} s after the current one ignored "
                    "(not published by this simulator: another run on the same ROS domain?)",
                )
            case Verdict.UNPUBLISHED:
                counts.stale_answers += 1
                self.log.error(
                    "unpublished answer",
                    f"command answering a state this simulator never published ({ago_s:.6f} s before "
                    f"the current one; its states are stamped {self.t0_ns * 1e-9:g} s + "
                    f"k·{self.dt_ns * 1e-6:g} ms) ignored (another run on the same ROS domain?)",
                )
            case Verdict.UNTAGGED:
                counts.untagged_commands += 1
                self.log.error(
                    "untagged",
                    "lockstep: command without the answered state's stamp (layout.dim[0].label "
                    "'joints@<sec>.<nanosec>', see conversions.py) ignored",
                )
            case Verdict.EARLIER:
                counts.stale_answers += 1
                self.log.warning(
                    "earlier answer",
                    f"lockstep: command answering the state of {ago_s:.3f} s ago "
                    "ignored, the current state waits for its own (a controller a state behind, "
                    "or two controllers on the command topic?)",
                )
            case Verdict.OUT_OF_ORDER:
                counts.stale_answers += 1
                self.log.error(
                    "out of order",
                    f"command answering the state of {ago_s:.3f} s ago ignored: a command answering a "
                    "later state came before it (two controllers on the command topic, or messages "
                    "reordered on the way?)",
                )
            case Verdict.EARLIER_START:
                # One more answer to state 0, which the start-up wait republished: no news, not
                # counted (counted, it turned the first report WARN with nothing logged; a review).
                pass

    def _record_latency(self, stamp: int, now: float) -> None:
        k = (stamp - self.t0_ns) // self.dt_ns
        slot = k % _RING
        if 0 <= k <= self.k and self.published_stamp[slot] == stamp:
            self.answered_states += 1
            # Not the answer that ends the start-up wait: it includes the controller's first,
            # cold call, which would be the "max" latency of most benchmark runs.
            if self._looping:
                self.latency.add(now - self.published_wall[slot])
            self.published_stamp[slot] = -1  # count each state's first answer only

    # ---------------------------------------------------------------- stepping
    def _publish_state(self) -> None:
        stamp = self.t0_ns + self.k * self.dt_ns
        plant = self.plant
        tau = plant.tau_applied if self.k else np.zeros(self.n)
        q, v = plant.q, plant.v
        rec = self._record
        if rec is not None and rec.count == self.k:  # state 0 may be republished
            rec.t[self.k] = stamp
            rec.q[self.k], rec.v[self.k], rec.tau[self.k] = q, v, tau
            rec.count += 1
        slot = self.k % _RING
        self.published_stamp[slot] = stamp
        if self.k == 0:
            # A run's first /clock before its first state: a controller still on a previous run's
            # clock (the simulator restarted within a second) had refused state 0 as stale and
            # braked from that run's pose; its clock gone back first, it takes state 0 as a new run.
            self._publish_clock(stamp)
        self.published_wall[slot] = t_out = time.monotonic()
        if self.serialized:
            self.state_pub.publish(self.state_wire.encode(stamp, q, v, tau))
        else:
            self.state_pub.publish(self.encoder.encode(stamp, q, v, tau))
        self.state_out.add(time.monotonic() - t_out)
        if self.k:
            # /clock after the state, off the controller's critical path (see the module docstring).
            self._publish_clock(stamp)
        self.commands.new_state()

    def _publish_clock(self, stamp: int) -> None:
        """``/clock`` at ``stamp`` (ns)."""
        if self.serialized:
            self.clock_pub.publish(self.clock_wire.encode(stamp))
        else:
            ns_to_stamp(stamp, self.clock_msg.clock)
            self.clock_pub.publish(self.clock_msg)

    def _command_fresh(self) -> bool:
        """Realtime: whether the held command may drive the next step (:meth:`CommandRules.fresh`)."""
        return self.commands.fresh(self.k)

    def _step(self, use_command: bool) -> None:
        plant = self.plant
        if not use_command:
            self.counts.missing_command_steps += 1
        tau = self.delay_line.pass_on(self.commands.tau if use_command else None)
        if tau is not None:
            plant.set_torque(tau)
            self.safe_active = False
        else:
            plant.set_torque(plant.safe_torque(self.safe_damping, hold=self._hold))
            self.safe_active = True
        plant.step()
        self.k += 1

    def _spin_until(self, deadline: float, until_answered: bool) -> None:
        """Run callbacks until ``deadline`` (monotonic s) or, with ``until_answered``, until the
        current state is answered.

        Already past the deadline (the realtime loop catching up after a stall), it still takes
        one waiting message without blocking. Otherwise no command would be taken during the
        catch-up steps, and beyond ``command_queue_depth`` queued ones would be dropped.
        """
        if deadline <= time.monotonic():
            spin_once(self.executor, 0.0, self.log)
            return
        while not (until_answered and self.commands.answered) and not STOP.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                return
            # At most _STOP_POLL_S per wait: SIGINT / SIGTERM only set STOP, and a lockstep wait
            # for an absent controller lasts lockstep_timeout (seconds).
            spin_once(self.executor, min(remaining, _STOP_POLL_S), self.log)

    def _await_answer(self, timeout: float) -> None:
        """Lockstep: take commands until the current state is answered or this node has waited
        ``timeout`` (s) for it. Each wait of at most :data:`_STOP_POLL_S` counts at most as long
        as it was to last: one that ended later found this process stopped or descheduled
        (SIGSTOP, a paused VM), a time the controller could not answer in, and an answer that
        came meanwhile is taken by the next wait instead of the timeout's safe torque. Past
        :data:`_STOP_POLL_S` without an answer, ``/diagnostics`` (when due) and the log say what
        it waits for: else a gone controller would leave both quiet for the whole timeout (up to
        a minute), the last status standing."""
        waited = 0.0
        while not self.commands.answered and not STOP.is_set():
            if timeout - waited < _MIN_WAIT_S:
                return
            wait = min(timeout - waited, _STOP_POLL_S)
            start = time.monotonic()
            self._spin_until(start + wait, until_answered=True)
            waited += min(time.monotonic() - start, wait)
            if not self.commands.answered and waited > _STOP_POLL_S:
                self._maybe_diagnostics(answer_wait=waited)
                self.log.warning(
                    "awaiting answer",
                    f"lockstep: no answer to state {self.k} for {waited:.1f} s (safe torque after "
                    f"lockstep_timeout {timeout:g} s)",
                )

    def _wait_for_controller(self) -> None:
        """Hold state 0, republishing it, until a command answers it."""
        last_note = time.monotonic()
        while not self.commands.answered and not STOP.is_set():
            self._publish_state()
            self._spin_until(time.monotonic() + 0.1, until_answered=True)
            if time.monotonic() - last_note > 5.0:
                last_note = time.monotonic()
                self.node.get_logger().info(f"waiting for a controller on {COMMAND_TOPIC}")
            self._maybe_diagnostics(waiting=True)

    def run(self) -> None:
        """The simulation loop: returns after ``duration`` simulated seconds or once a stop is
        requested (SIGINT / SIGTERM set :data:`~.common.STOP`)."""
        cfg = self.config
        if cfg.wait_for_controller:
            self._wait_for_controller()
        else:
            self._publish_state()
        self.loop_start_wall = time.monotonic()
        self._looping = True
        dt = self.dt_ns * 1e-9
        next_tick = time.monotonic() + dt
        clock = time.perf_counter
        while (self.max_steps == 0 or self.k < self.max_steps) and not STOP.is_set():
            if cfg.mode == "lockstep":
                self._await_answer(cfg.lockstep_timeout)
                if STOP.is_set():  # stopped while waiting: no step on a command that never came
                    break
                t_work = clock()
                self._step(self.commands.answered_validly)
            else:
                # /diagnostics (~0.15 ms) in the idle rest of the tick once the state is
                # answered: published right after a state, they held up taking its answer.
                self._spin_until(next_tick, until_answered=True)
                self._maybe_diagnostics()
                # Idle until the tick. Behind it (catching up), the call above took one waiting
                # message; polling again cost ~80 µs a step with nothing waiting.
                if time.monotonic() < next_tick:
                    self._spin_until(next_tick, until_answered=False)
                t_work = clock()
                self.late.add(not self.commands.answered_validly)
                self._step(self._command_fresh())
                next_tick += dt
                behind = time.monotonic() - next_tick
                if behind > _RESYNC_S:
                    self.counts.overruns += 1
                    # The ticks from next_tick up to now run no step: behind/dt whole periods
                    # after next_tick, and next_tick itself. (The next step, at now + dt, takes
                    # the tick at or before it.)
                    self.counts.skipped_ticks += int(behind / dt) + 1
                    next_tick = time.monotonic() + dt
            self._publish_state()
            self.step_time.add(clock() - t_work)
            if cfg.mode == "lockstep":
                self._maybe_diagnostics()
        if STOP.is_set():
            return
        # Let the answer to the last state arrive before closing.
        self._spin_until(time.monotonic() + 0.05, until_answered=True)

    # ---------------------------------------------------------------- reporting
    def _maybe_diagnostics(self, waiting: bool = False, answer_wait: float = 0.0) -> None:
        now = time.monotonic()
        if now < self._diag_next:
            return
        self._diag_next = now + self.config.common.diagnostics_period
        self.log.flush()
        t_start, k0, sim0 = self._diag_window
        span = max(now - t_start, 1e-9)
        sim_now = self.k * self.dt_ns * 1e-9
        self._diag_window = (now, self.k, sim_now)
        values: dict[str, Any] = {
            "mode": self.config.mode,
            "waiting_for_controller": waiting,
            "sim_time_s": sim_now,
            "step_rate_hz": (self.k - k0) / span,
            "realtime_factor": (sim_now - sim0) / span,
            "steps": self.k,
            **self._counts(),
            "safe_torque_active": self.safe_active,
            "last_rejected": self.last_reject,
            **{f"latency_{k}": v for k, v in percentiles_ms(self.latency.window()).items()},
            **{f"step_time_{k}": v for k, v in percentiles_ms(self.step_time.window()).items()},
            **{f"state_out_{k}": v for k, v in percentiles_ms(self.state_out.window()).items()},
        }
        # Two controllers on the topic answer every state, and neither drives the arm alone: in
        # lockstep each state's first answer does (they share the steps, e.g. 202 and 98 of 300),
        # in realtime the later one's command is held. Counted by node and DDS participant
        # (publishing_nodes).
        topic = self.command_sub.topic_name
        commanders = publishing_nodes(self.node.get_publishers_info_by_topic(topic))
        values["command_publishers"] = commanders
        applied = (
            "each state's first answer" if self.config.mode == "lockstep" else "whichever command came last"
        )
        commanders_warning = command_publishers_warning(commanders, topic, applied)
        if commanders_warning:
            self.log.warning("commanders", commanders_warning)
        problems = self._new_problems(safe_torque_said=self.safe_active)
        if self.safe_active:
            level, message = (
                DiagnosticStatus.ERROR,
                f"safe torque ({self.config.safe_torque}): no valid command",
            )
        elif answer_wait > 0.0:
            level, message = (
                DiagnosticStatus.WARN,
                f"lockstep: no answer to state {self.k} for {answer_wait:.1f} s",
            )
        elif waiting and not (commanders_warning or problems):
            level, message = DiagnosticStatus.WARN, "waiting for a controller"
        elif commanders_warning or problems:
            level, message = DiagnosticStatus.WARN, ""
        else:
            level, message = DiagnosticStatus.OK, "ok"
        # Every warning said, whichever set the level: the problems are counted from the last
        # report on, so one left out here was never said (a second publisher's warning, which a
        # node sending bad commands always brings, hid those commands; a review).
        since = f"since the last report: {problems}" if problems else ""
        said = [commanders_warning, since]
        message = "; ".join(m for m in (message, *said) if m)
        array = DiagnosticArray()
        ns_to_stamp(self.t0_ns + self.k * self.dt_ns, array.header.stamp)
        array.status = [status(f"{self.node.get_name()}: simulation", "mujoco_gen3", level, message, values)]
        self.diag_pub.publish(array)

    def _problems(self) -> tuple[int, int, int, int]:
        """The counts of what went wrong: steps run on the safe torque for want of a valid command,
        commands rejected, answers ignored, commands clipped."""
        c = self.counts
        return c.missing_command_steps, c.rejected_commands, c.stale_answers, c.clipped_commands

    def _new_problems(self, safe_torque_said: bool = False) -> str:
        """What went wrong since the last call, in words ("" if nothing): a status that is
        otherwise OK turns WARN on it, since the last step alone (``safe_torque_active``) would miss
        a stream with every other command bad. ``safe_torque_said``: the status's ERROR says the
        safe torque, so its steps are left out (the other problems are not)."""
        now = self._problems()
        grown = [b - a for a, b in zip(self._problems_reported, now, strict=True)]
        self._problems_reported = now
        if safe_torque_said:
            grown[0] = 0
        words = (
            "step(s) on the safe torque (no valid command)",
            "command(s) rejected",
            "answer(s) ignored (stale_answers)",
            "command(s) clipped to the drives' ranges",
        )
        return ", ".join(f"{d} {w}" for d, w in zip(grown, words, strict=True) if d)

    def _counts(self) -> dict[str, int]:
        """Event counters since start, in both ``/diagnostics`` and the summary."""
        late = self.late
        return {
            **asdict(self.counts),
            "late_steps": late.count,
            "late_runs": late.runs,
            "longest_late_run": late.longest,
        }

    def summary(self) -> dict[str, Any]:
        """Whole-run figures (written to ``stats_file`` at exit)."""
        wall = max(time.monotonic() - self.loop_start_wall, 1e-9)
        sim = self.k * self.dt_ns * 1e-9
        return {
            "node": self.node.get_name(),
            "scheduling": current_policy(),
            "serialized_io": self.serialized,
            "mode": self.config.mode,
            "steps": self.k,
            "sim_time_s": sim,
            "wall_time_s": wall,
            "step_rate_hz": self.k / wall,
            "realtime_factor": sim / wall,
            **self._counts(),
            # Whether the last state published got its answer before the node stopped (else
            # that answer may still have been in flight: the benchmark's "lost" lets it off).
            "last_state_answered": self.commands.answered,
            "latency": {**percentiles_ms(self.latency.everything()), "count": self.latency.count},
            "answered_states": self.answered_states,
            "step_time": percentiles_ms(self.step_time.everything()),
            "state_out": percentiles_ms(self.state_out.everything()),
        }

    def close(self) -> None:
        """Stop spinning, write the summary and the record, destroy the node.

        Each output is written on its own: one that fails (a full disk, a folder removed during
        the run) is reported and does not cost the other one or the node's shutdown.
        """
        self.executor.shutdown()
        self.log.flush()
        write_output("stats_file", lambda: write_json(self.config.common.stats_file, self.summary()))
        if self._record is not None and self._record.count:
            write_output("record_file", self._write_record)
        with exit_if_stuck():
            self.node.destroy_node()

    def _allocate_record(self) -> _Record:
        """Rows for every state of the run (``t`` in ns; ``q``, ``v``, ``tau``: n each), allocated
        at start: no allocation per step, and a run over the cap is refused now, not hours in."""
        node, rows = self.node.get_name(), self.max_steps + 1
        if self.max_steps == 0:
            raise ConfigError(
                f"{node}.record_file: needs a duration > 0 (the record is kept in memory until exit); "
                "record an open-ended run with ros2 bag"
            )
        row = _Record.row_bytes(self.n)
        size = rows * row
        if size > _MAX_RECORD_BYTES:
            raise ConfigError(
                f"{node}.record_file: {rows} states of {self.n} joints take {size / 2**30:.2f} GiB, over the "
                f"{_MAX_RECORD_BYTES / 2**30:g} GiB kept in memory (duration up to "
                f"{_MAX_RECORD_BYTES // row * self.plant.timestep:.0f} s); "
                "shorten duration or use ros2 bag"
            )
        return _Record(rows, self.n)

    def _write_record(self) -> None:
        rec = self._record
        assert rec is not None
        rows = rec.count
        # Through a file object: given a name, numpy writes `<name>.npz` unless it already ends so.
        with open(self.config.record_file, "wb") as out:
            np.savez(
                out,
                t=rec.t[:rows] * 1e-9,
                q=rec.q[:rows],
                v=rec.v[:rows],
                tau=rec.tau[:rows],
                joint_names=np.array(self.plant.joint_names),
            )


def main(args: list[str] | None = None) -> int:
    """Entry point of the ``sim_node`` executable."""
    return run_node(SimNode, NODE_NAME, args)


if __name__ == "__main__":
    raise SystemExit(main())
