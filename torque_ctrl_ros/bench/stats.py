"""Timing helpers: per-call durations → median / p99 / max in microseconds."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Mapping

import numpy as np

#: Untimed calls before every timed series (the first states' calls), so that imports, caches and
#: the solvers' first factorisations are not in the figures.
WARMUP = 50


def summarize_us(durations_ns: np.ndarray) -> dict[str, float]:
    """Median, p95, p99 and max of durations given in ns, returned in µs."""
    us = np.asarray(durations_ns, dtype=np.float64) / 1e3
    return {
        "median_us": float(np.median(us)),
        "p95_us": float(np.percentile(us, 95)),
        "p99_us": float(np.percentile(us, 99)),
        "max_us": float(us.max()),
        "samples": int(us.size),
    }


def time_calls(fn: Callable[[int], object], count: int, warmup: int = WARMUP) -> np.ndarray:
    """Call ``fn(i)`` for ``i`` in ``range(count)`` and return each call's duration (ns)."""
    return time_interleaved({"fn": fn}, count, block=max(count, 1), warmup=warmup)["fn"]


def time_interleaved(
    calls: Mapping[str, Callable[[int], object]],
    count: int,
    *,
    block: int = 250,
    warmup: int = WARMUP,
    after_warmup: Callable[[], object] | None = None,
) -> dict[str, np.ndarray]:
    """Durations (ns) of ``fn(i)`` for ``i`` in ``range(count)``, for every ``fn``, in alternating blocks.

    Block ``b`` of every call runs before block ``b + 1`` of any (``a(0…249)``,
    ``b(0…249)``, ``a(250…499)``, …): each still sees its indices in order (a controller's
    warm start carries over from one block to the next), and all of them share the host's
    fast and slow phases, so their ratios do not depend on when in the run each one was
    measured. On this shared 2-core VM the speed of the same code drifts by up to 1.7× within
    minutes; timed one after the other, a ratio to a floor measured earlier moves with it.
    ``after_warmup`` runs between the warm-up and the timed calls (e.g. a controller's reset,
    so that its timed run meets the problems a cold run meets).
    """
    for fn in calls.values():
        for i in range(min(warmup, count)):
            fn(i)
    if after_warmup is not None:
        after_warmup()
    out = {name: np.empty(count, dtype=np.int64) for name in calls}
    clock = time.perf_counter_ns
    for start in range(0, count, block):
        stop = min(start + block, count)
        for name, fn in calls.items():
            durations = out[name]
            for i in range(start, stop):
                t0 = clock()
                fn(i)
                durations[i] = clock() - t0
    return out


def time_calls_paced(
    fn: Callable[[int], object], count: int, period_s: float = 0.001, warmup: int = WARMUP
) -> np.ndarray:
    """Durations (ns) of ``fn(i)`` for ``i`` in ``range(count)``, one call per ``period_s``.

    After each call the thread sleeps until the next period starts, as a controller node at
    1 kHz idles between states. On this VM a call that follows an idle stretch is 1.6–4.7×
    slower than the same call back to back (caches and the vCPU's idle exit): this is the
    compute the node actually sees.
    """
    for i in range(min(warmup, count)):
        fn(i)
    out = np.empty(count, dtype=np.int64)
    clock = time.perf_counter_ns
    period_ns = int(period_s * 1e9)
    next_start = clock()
    for i in range(count):
        t0 = clock()
        fn(i)
        out[i] = clock() - t0
        next_start = max(next_start + period_ns, t0)
        rest = next_start - clock()
        if rest > 0:
            time.sleep(rest * 1e-9)
    return out


def machine_description() -> dict[str, object]:
    """What the figures were measured on."""
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average_1_5_15": list(load),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
