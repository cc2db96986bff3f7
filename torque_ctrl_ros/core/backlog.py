"""After this process was away, or while it falls behind: handle the newest queued joint state,
not each in turn.

A controller process that was stopped or descheduled (``SIGSTOP``, a paused VM, a host stall)
finds, when it runs again, the states queued while it was away. On the wall clock they are
refused as stale. Under sim time they are not: the ``/clock`` messages of the same moments come
in the same backlog, so the node's clock lags with them and each state looks fresh. Computed on
in turn, they give answers a realtime simulator ignores as stale (it moved on, and applied its
own safe torque after its ``command_timeout``), while the target runs on with their stamps,
ahead of the arm the simulator braked: the first answer it takes then steps the torque (after a
0.3 s stop up to 32 % of joint_1's effort limit in the runs that found it, 5–26 % of a joint's
in the nine of docs/interfaces.md; 8–12 % there with the newest state handled).

:class:`CatchUp` says when the caller should take every state queued behind the one it was
handed and handle only the newest. The middleware hands such a backlog over in bursts (here the
states of ~0.1 s at a time, a few ms apart), and between two bursts the next state queued can
follow the one handled without a gap: the stamps alone cannot tell the last burst. So a
catch-up lasts from the first state after this process heard nothing for longer than the stream
allows (a silence on its own steady clock) for as long again on that clock (at most
:data:`LONGEST`), and then until a state handled follows the one handled before it without a gap
in their stamps. Taking the newest is harmless once caught up (nothing else is queued, or what
is will be handled next anyway), so the catch-up errs on the long side. The newest state wins
whatever the sender's pace: a simulator slower than real time has its current state handled,
never dropped. In normal running nothing is taken: states come closer together than that
silence. Lockstep is unaffected: the simulator waits for each answer, so at most the one state
it waits on is queued.

A node whose callback takes longer than the stream's period (a QP controller on a slow or busy
host) falls behind without ever being away: handled in turn, the states queue up to the
subscription's depth and each command answers a state that many periods old (HQPID in the
realtime simulator on a slow phase of the 2-core VM: latency p50 7.4–10.5 ms; 1.7 ms with the
newest taken, docs/interfaces.md), a delay the gains and dampings were not checked for.
:func:`queued_behind` tells it: a state's handling that outlasted the stream's period left the
next ones queued (one arrives every period), and the newest queued is taken instead. A handling
shorter than the period takes nothing (in normal running and in lockstep, where the simulator
waits for each answer): the queue then empties by itself, and a take that finds nothing costs
~3 µs. Either way, the step from the last state handled over those skipped is not the stream's
period (:meth:`.Supervisor.step`'s ``skipped``).
"""

from __future__ import annotations

import math

from .resume import silence_gap

LONGEST = 1.0
"""Longest a catch-up lasts (s, steady) before the stamps can end it: the backlog after a stall
of any length comes within a few tens of ms, and the unclamped stamps of a catch-up
(:meth:`.Supervisor.step`'s ``clock_lag``) should not outlast it for long."""


def queued_behind(started: float, done: float, period: float) -> bool:
    """Whether the last state's handling, from ``started`` to ``done`` (s, steady clock; both
    ``-inf`` before any), outlasted the stream's ``period`` (s; 0 while not known: never), so
    that the states arriving meanwhile are queued behind the next one handed over::

        done − started > period > 0
    """
    return period > 0.0 and done - started > period


class CatchUp:
    """When to take the newest of the queued joint states (module docstring).

    Per state, in the subscription's callback: ``if catch_up.begin(arrival, period)``, take
    every state queued behind it, keeping the newest, and tell :meth:`taken` how many; once that
    state's stamp is read, :meth:`handled`.

    Args:
        max_age: the watchdog's ``max_age`` (s): states farther apart than this (or 1.5 of the
            stream's period, when longer: :func:`~.resume.silence_gap`), on the steady clock or in
            their stamps, are a silence.

    Attributes:
        away: how long (s, steady) the silence that started the last catch-up lasted.
        skipped: states skipped in the last catch-up, each followed by a newer one handled instead.
    """

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self.away = 0.0
        self.skipped = 0
        self._last_arrival = math.inf  # steady clock (s) of the last state; none yet: no silence
        self._began = math.nan  # steady clock (s) of the state that began the catch-up
        self._active = False
        self._last_stamp = math.nan  # stamp (s) of the last state handled in this catch-up

    @property
    def active(self) -> bool:
        """Whether a catch-up is under way: the states queued behind the next one are taken too,
        and the caller's clock may lag behind their stamps."""
        return self._active

    def begin(self, arrival: float, period: float = 0.0) -> bool:
        """A state arrived at ``arrival`` (s, steady clock); ``period``: the stream's (s, 0 when
        not known yet). Returns whether to take the states queued behind it, keeping the newest.

        A catch-up starts when this process heard nothing for longer than the stream allows::

            arrival − last_arrival > max(max_age, 1.5·period)
        """
        away = arrival - self._last_arrival
        self._last_arrival = arrival
        if away > silence_gap(self.max_age, period):
            self._active = True
            self.away, self.skipped, self._last_stamp, self._began = away, 0, math.nan, arrival
        return self._active

    def taken(self, count: int) -> None:
        """``count`` states were taken behind the one handed over: the newest is handled, the
        others and the one handed over are skipped."""
        self.skipped += count

    def handled(self, stamp: float, period: float = 0.0) -> bool:
        """The state handled in a catch-up is stamped ``stamp`` (s). Returns whether the catch-up
        ended with it: as long after it began as it had been away (at most :data:`LONGEST`), and
        no gap from the one handled before::

            arrival − began >= min(away, LONGEST)  and  stamp − last_stamp <= max(max_age, 1.5·period)

        (the stamps of a burst jump by the states it skipped; after the last one they follow on).
        """
        if not self._active:
            return False
        last, self._last_stamp = self._last_stamp, stamp
        long_enough = self._last_arrival - self._began >= min(self.away, LONGEST)
        if long_enough and stamp - last <= silence_gap(self.max_age, period):  # not for the first (nan)
            self._active = False
            return True
        return False


__all__ = ["LONGEST", "CatchUp", "queued_behind"]
