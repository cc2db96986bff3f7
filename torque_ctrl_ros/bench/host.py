"""The host's own timing floor: how late a bare 1 kHz timer loop wakes up, no ROS, no compute.

A closed-loop step over DDS needs several threads in two processes to wake on time within one
millisecond. When the host itself (here a VM sharing 2 vCPUs) delays a wake-up, the step can be
late whatever the controller does. This loop measures that delay alone, with the scheduling
the nodes get, right before each controller's DDS run, so that the run's late steps can be read
against what the host allowed in the same minutes::

    tick_k = t_0 + k·T;   sleep until tick_k;   lateness_k = clock() − tick_k

After a stall of ``D`` the loop does not skip ticks (it catches up), so a stall shows as
``≈ D/T`` consecutive late ticks. The simulator catches up the same way, and shows such a stall
as late steps, only while it is at most 50 ms behind; further behind, it restarts its pacing
(``sim_node``'s ``_RESYNC_S``, counted as ``overruns``) and skips the ticks this loop still takes.

The loop runs before a closed-loop run, not during it. What the hypervisor took during the run
itself comes from the guest kernel's *steal* counters (``/proc/stat``: time a CPU of this VM was
ready to run but the host ran something else): :func:`cpu_ticks` before and after,
:func:`steal_between` for the difference, in ms of CPU time per CPU.

Run alone: ``python -m torque_ctrl_ros.bench.host --seconds 3`` (``$TORQUE_CTRL_RT_PRIORITY``
and ``$TORQUE_CTRL_CPUS`` place it as they place the nodes) prints the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..nodes.scheduling import (
    UNPLACED,
    Placement,
    current_policy,
    request_cpu_latency,
    request_cpus,
    request_realtime,
)

#: Wake-ups later than this (s) leave a 1 kHz step less than the ~0.5 ms that the simulator's
#: own work, the DDS round trip and a controller's compute need: such a step is likely late.
LATE_THRESHOLD_S = 0.5e-3


def timer_lateness(seconds: float, period_s: float = 1e-3) -> np.ndarray:
    """Lateness (s, ≥ 0 up to clock resolution) of each tick of a periodic sleep loop."""
    count = max(1, round(seconds / period_s))
    out = np.empty(count)
    clock = time.monotonic
    tick = clock()
    for k in range(count):
        tick += period_s
        rest = tick - clock()
        if rest > 0.0:
            time.sleep(rest)
        out[k] = clock() - tick
    return out


def summarize(lateness_s: np.ndarray, threshold_s: float = LATE_THRESHOLD_S) -> dict[str, float]:
    """Median / p99 / max lateness (µs) and the share of ticks later than ``threshold_s`` (%)."""
    us = 1e6 * np.asarray(lateness_s, dtype=np.float64)
    return {
        "p50_us": float(np.median(us)),
        "p99_us": float(np.percentile(us, 99)),
        "max_us": float(us.max()),
        "late_percent": float(100.0 * np.mean(us > 1e6 * threshold_s)),
        "threshold_ms": 1e3 * threshold_s,
        "ticks": int(us.size),
    }


#: ``/proc/stat``'s per-CPU columns up to ``steal``, in clock ticks (``guest`` and ``guest_nice``
#: follow and are already counted in ``user`` and ``nice``).
_STAT_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_ticks(stat_text: str | None = None) -> dict[str, tuple[int, int]]:
    """``{cpu: (steal, total)}`` clock ticks since boot, ``cpu`` being ``cpu`` (all) or ``cpuN``.

    Read from ``/proc/stat`` unless ``stat_text`` is given; ``{}`` where it cannot be read or
    has no steal column (not Linux, or a kernel without it).
    """
    if stat_text is None:
        try:
            stat_text = Path("/proc/stat").read_text()
        except OSError:
            return {}
    out: dict[str, tuple[int, int]] = {}
    for line in stat_text.splitlines():
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or len(fields) <= len(_STAT_COLUMNS):
            continue
        ticks = [int(f) for f in fields[1 : 1 + len(_STAT_COLUMNS)]]
        out[fields[0]] = (ticks[-1], sum(ticks))
    return out


def steal_between(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], tick_s: float | None = None
) -> dict[str, Any]:
    """CPU time the hypervisor took between two :func:`cpu_ticks` readings.

    ``steal_ms`` per CPU (and ``cpu``: all of them together) is ``Δsteal · tick``; ``percent`` is
    ``Δsteal / Δtotal`` over all CPUs (%). The counters tick at ``tick_s`` (``1/SC_CLK_TCK``,
    10 ms on Linux), so a figure below a few ticks is only a hint. ``{}`` when either reading is
    empty.
    """
    if "cpu" not in before or "cpu" not in after:
        return {}
    if tick_s is None:
        tick_s = 1.0 / os.sysconf("SC_CLK_TCK")
    steal_ms = {cpu: 1e3 * tick_s * (after[cpu][0] - before[cpu][0]) for cpu in after if cpu in before}
    d_steal, d_total = (after["cpu"][i] - before["cpu"][i] for i in (0, 1))
    return {
        "steal_ms": steal_ms,
        "percent": 100.0 * d_steal / d_total if d_total > 0 else float("nan"),
        "tick_ms": 1e3 * tick_s,
    }


def measure(seconds: float, placement: Placement = UNPLACED, period_s: float = 1e-3) -> dict[str, Any]:
    """Run the loop in a fresh process placed as the simulator (``SCHED_FIFO`` when permitted, its CPUs,
    the CPU latency request).

    A child process, so that the benchmark's own process keeps its scheduling. Returns
    :func:`summarize`'s fields plus ``scheduling`` (what the child got), or ``{"error": …}``
    when the child fails.
    """
    env = {**os.environ, **placement.env("sim_node")}
    cmd = [sys.executable, "-m", __name__, "--seconds", str(seconds), "--period", str(period_s)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 60.0, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: measure in this process and print the summary as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--period", type=float, default=1e-3, help="tick period (s)")
    args = parser.parse_args(argv)
    request_realtime()
    request_cpus()
    request_cpu_latency()
    summary: dict[str, Any] = summarize(timer_lateness(args.seconds, args.period))
    summary["scheduling"] = current_policy()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
