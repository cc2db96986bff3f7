"""Which torque commands the simulator takes, and for how long it applies one (no ROS).

The simulator publishes state ``k``, stamped ``t0 + k·dt`` (ns), and each command may carry the
stamp of the state it answers (untagged: a plain ros2_control publisher). :meth:`CommandRules.offer`
gives every command one :class:`Verdict`:

- ``STALE``: realtime, it answers a state more than ``command_timeout`` (s) of simulated time
  older than the current one: a controller that far behind must not drive the arm. (In
  lockstep the limit is the int64 range, ~292 years: only a wild stamp reaches it.)
- ``FUTURE``: it answers a state after the current one, which this simulator never published
  (another run on the same ROS domain).
- ``UNPUBLISHED``: its stamp is before the current state's but no state's this simulator
  published, however recent: between two states (off the ``t0 + k·dt`` grid) or before state 0
  (another run, or a controller stamping its commands by its own clock).
- realtime only: ``OUT_OF_ORDER``, it answers a state before the one a command offered earlier
  answers (two controllers on the topic, or messages reordered on the way): taken, it would
  replace the answer to a newer state with an older one.
- lockstep only, where each state waits for its own answer: ``UNTAGGED``, no stamp (taken for
  the current state, an extra answer would shift every later step by one); ``EARLIER``, it
  answers an earlier state (a controller a state behind, or a second one on the topic);
  ``EARLIER_START``, one more answer to state 0, which the start-up wait republishes.
- ``REJECTED``: it passed the checks above but its torques are invalid (the caller's check):
  the held command is dropped, and an answer to the current state answers it, invalidly.
- ``ACCEPTED``: held as the command (zero-order hold) until a newer one comes.

In realtime an untagged command answers the current state; ignored commands (all but ACCEPTED
and REJECTED) change nothing. :meth:`CommandRules.fresh` says whether the held command may drive
step ``k``: for at most ``command_timeout`` of simulated time since it came and, when tagged,
since the state it answers.
"""

from __future__ import annotations

import enum

import numpy as np

from ..core.validation import FloatArray

#: The simulator's modes (``sim_node.mode``).
MODES = ("realtime", "lockstep")


class Verdict(enum.Enum):
    """What became of a command (module docstring)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    STALE = "stale"
    FUTURE = "future"
    UNPUBLISHED = "unpublished"
    UNTAGGED = "untagged"
    EARLIER = "earlier"
    EARLIER_START = "earlier_start"
    OUT_OF_ORDER = "out_of_order"


#: The verdict of nearly every command, as a module global for the simulator's command path:
#: a member lookup (``Verdict.ACCEPTED``) costs ~80 ns on Python 3.11, a global ~20 ns.
ACCEPTED = Verdict.ACCEPTED

MAX_COMMAND_BYTES = 65_536
"""Largest serialized command read (bytes); a larger one is rejected unread. A Gen3 command is
~110 bytes (7 torques and the stamp label); a 16 MiB one of 2²⁰ layout dimensions held the
simulator's loop 0.23 s in this package's reader and ~2 s (254 MiB) in rclpy's."""


class CommandRules:
    """The held command and the answer to the current state, by the rules of the module docstring.

    The caller passes the current step ``k`` to each call and calls :meth:`new_state` when it
    publishes a state; everything is in integer ns of simulated time, so no rounding moves a
    command across a limit.
    """

    def __init__(self, n: int, mode: str, dt_ns: int, t0_ns: int, command_timeout: float) -> None:
        """``n`` joints; ``mode``: one of :data:`MODES`; ``dt_ns``: the step (ns); ``t0_ns``: the
        stamp of state 0 (ns); ``command_timeout`` (s): realtime's limit on a command's age (unused
        in lockstep, where a command answers one state and is never held past it).

        Raises:
            ValueError: an unknown ``mode``, ``n`` or ``dt_ns`` not positive, or (realtime) a
                ``command_timeout`` that is not a positive finite number of seconds.
        """
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: expected one of {list(MODES)}")
        if n < 1 or dt_ns < 1:
            raise ValueError(f"n = {n} joints, dt_ns = {dt_ns} ns: both must be positive")
        if mode == "realtime" and not 0.0 < command_timeout < float("inf"):
            raise ValueError(f"command_timeout = {command_timeout} s: expected a positive finite time")
        self.lockstep = mode == "lockstep"
        self.dt_ns = dt_ns
        self.t0_ns = t0_ns
        #: An answer to a state this much older than the current one is stale (ns); none in lockstep.
        self.stale_after_ns = np.iinfo(np.int64).max if self.lockstep else round(command_timeout * 1e9)
        self.tau = np.zeros(n)  #: the held command (N·m), written in place
        self.held = False  # whether ``tau`` is a valid command to apply
        self.held_k = -(2**62)  # the step at which it arrived
        self.held_stamp: int | None = None  # the state it answers (ns), None if untagged
        # Realtime: the newest state a tagged command offered so far answers (ns), taken or rejected.
        self.newest_answered = -(2**62)
        self.answered = False  # the current state has been answered (validly or not)
        self.answer_valid = False

    @property
    def answered_validly(self) -> bool:
        """Whether a valid command answered the current state (a rejected answer leaves the plant
        on the safe torque, as no answer does)."""
        return self.answered and self.answer_valid

    def offer(self, stamp: int | None, tau: FloatArray | None, k: int) -> Verdict:
        """Take or ignore a command at step ``k``: ``stamp`` (ns), the state it answers (``None``:
        untagged); ``tau`` (N·m), its torques, ``None`` if the caller found them invalid. An
        ACCEPTED ``tau`` is copied into :attr:`tau`."""
        current = self.t0_ns + k * self.dt_ns
        if stamp is not None and stamp != current:
            if current - stamp > self.stale_after_ns:
                return Verdict.STALE
            if stamp > current:
                return Verdict.FUTURE
            if stamp < self.t0_ns or (stamp - self.t0_ns) % self.dt_ns:
                return Verdict.UNPUBLISHED
        if self.lockstep and stamp != current:
            if stamp is None:
                return Verdict.UNTAGGED
            return Verdict.EARLIER_START if stamp == self.t0_ns else Verdict.EARLIER
        if stamp is not None and not self.lockstep:
            if stamp < self.newest_answered:
                return Verdict.OUT_OF_ORDER
            self.newest_answered = stamp
        answers_current = stamp is None or stamp == current
        if tau is None:
            self.held = False
            if answers_current:
                self.answered, self.answer_valid = True, False
            return Verdict.REJECTED
        np.copyto(self.tau, tau)
        self.held = True
        self.held_k = k
        self.held_stamp = stamp
        if answers_current:
            self.answered, self.answer_valid = True, True
        return ACCEPTED

    def drop(self) -> None:
        """A command that could not be read at all (its bytes, its stamp label): it answers no
        state, and the held command stops being applied, as after a REJECTED one."""
        self.held = False

    def new_state(self) -> None:
        """A state was published (state 0 again included): it is unanswered."""
        self.answered = self.answer_valid = False

    def fresh(self, k: int) -> bool:
        """Realtime: whether the held command may drive step ``k``: every step that starts at most
        ``command_timeout`` of simulated time after it came and, when tagged, after the state it
        answers, so the plant runs on it up to ``command_timeout`` + one step (by arrival alone, a
        command that came when its state was nearly ``command_timeout`` old would drive the arm for
        up to twice that). Simulated, not wall
        time: while the simulator is stopped or descheduled the plant stands still too, and the
        answer to the current state, held through such a stall, still answers it (by the wall
        clock one step after a 60 ms stall ran on the safe torque, a torque blip of up to 4 % of
        the effort limit on the Gen3's shoulder mid-trajectory)."""
        if not self.held or (k - self.held_k) * self.dt_ns > self.stale_after_ns:
            return False
        stamp = self.held_stamp
        return stamp is None or self.t0_ns + k * self.dt_ns - stamp <= self.stale_after_ns


class DelayLine:
    """The commands' way to the actuators, ``periods`` steps long (``sim_node.command_delay``).

    The simulator decides at each step which command drives the arm (:meth:`CommandRules.fresh`,
    or in lockstep the answer to the current state) and passes it in, or ``None`` when it has
    none (the safe torque then). What comes out is what was passed in ``periods`` steps before:
    the plant gets a command that many steps late, as a real arm's command goes through its
    controller and bus (the Gen3 shows a command ~5 ms after the state it answers: ``periods``
    4 at 1 kHz). ``None`` out means no command reached the actuators at this step: the caller
    applies its safe torque, computed on the current state as an arm's own fallback would be.
    The first ``periods`` steps, before any command can arrive, are such steps. With ``periods``
    0 what goes in comes out (no copy).
    """

    def __init__(self, n: int, periods: int) -> None:
        if periods < 0:
            raise ValueError(f"periods = {periods}: expected >= 0")
        self.periods = periods
        self._slots = np.zeros((periods, n))  # in flight, written in place
        self._full = np.zeros(periods, dtype=bool)  # which slots hold a command
        self._next = 0  # the oldest slot: the one to come out next
        self._out = np.zeros(n)  # what came out last

    def pass_on(self, tau: FloatArray | None) -> FloatArray | None:
        """Put ``tau`` (N·m, copied; ``None``: no command) in, and take out what went in
        ``periods`` steps ago (a buffer valid until the next call, or ``None``)."""
        if not self.periods:
            return tau
        i = self._next
        out: FloatArray | None = None
        if self._full[i]:
            np.copyto(self._out, self._slots[i])
            out = self._out
        if tau is None:
            self._full[i] = False
        else:
            np.copyto(self._slots[i], tau)
            self._full[i] = True
        self._next = (i + 1) % self.periods
        return out
