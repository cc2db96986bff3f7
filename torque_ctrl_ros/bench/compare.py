"""Controller compute of this tree against a git revision, interleaved in one process.

``python -m torque_ctrl_ros.bench.compare --against HEAD~1 --controllers qpid,hqpid``

Each controller tracks the benchmark's motion, a new reference at every state, as in ``make bench``
(:func:`.compute.tracking_references`, built by each version's own classes); ``--reference held``
holds one reference at the first state instead, as this comparison did up to 2026-12-07 (a
change to the reference's checks then shows no difference).

On this shared VM the speed of the same code drifts by up to 1.7× within minutes, so two runs
of ``make bench`` one after the other cannot tell a 3 % change from the host's minute. Here the
revision's package (and its ``urdf/``, ``mjcf/``, ``config/``) is exported with ``git archive``
into a temporary folder under another name, and both versions of each controller are timed in
alternating blocks over the same states (:func:`.stats.time_interleaved`), so both meet the
same minutes of the host: run against itself, the ratio read 0.997–1.004 (QPID and HQPID, 3 000
states, two runs), where two ``make bench`` runs minutes apart differ by 5 % and more.

Both controllers also compute the first states from the same cold start and the largest
difference between their torques is printed: rounding (up to ~2e-12 N·m between two instances of
the same code here) unless the change alters what the controller computes.

Each version runs on its own benchmark parameters (``bench/configs.py`` of that revision, this
tree's where it has none): a revision from before a parameter existed refuses it. Where the two
differ the comparison says so, and then times two configurations as well as two codes (against
the revision before the floor barrier, the barrier is in one of them only).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..paths import PACKAGE_NAME
from .compute import realistic_motion, tracking_references
from .configs import BENCH_CONFIGS
from .stats import time_interleaved

#: States both versions compute from the same cold start for the torque comparison.
TORQUE_CHECK_STATES = 200


def export_revision(revision: str, repository: Path, folder: Path) -> str:
    """Write ``revision``'s package and data folders into ``folder``; returns the package's import name.

    The package is renamed (``torque_ctrl_ros_<sha>``) so that it imports next to this one, and its
    data are found next to it (``paths.share_dir``). The modules the comparison loads (``core``,
    ``paths``, the package's ``__init__``) must import each other relatively: an absolute
    ``torque_ctrl_ros`` import there would load this tree's code in its place.

    Raises:
        ValueError: ``revision`` is not a commit of ``repository``, lacks one of the folders, or one
            of the modules the comparison loads (``core``, ``paths``, ``__init__``) imports
            ``torque_ctrl_ros`` by name (git's message or the lines found).
    """
    try:
        sha = subprocess.run(
            ["git", "-C", str(repository), "rev-parse", "--short=12", f"{revision}^{{commit}}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise ValueError(f"cannot resolve {revision!r} in {repository}: {exc}") from None
    loaded = [
        f"{PACKAGE_NAME}/core",
        f"{PACKAGE_NAME}/paths.py",
        f"{PACKAGE_NAME}/__init__.py",
        f"{PACKAGE_NAME}/bench/configs.py",
    ]
    absolute = subprocess.run(
        [
            "git",
            "-C",
            str(repository),
            "grep",
            "-nE",
            rf"^\s*(from|import) {PACKAGE_NAME}\b",
            sha,
            "--",
            *loaded,
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if absolute:
        raise ValueError(
            f"{revision}: imports {PACKAGE_NAME} by name where the comparison needs its own code:\n{absolute}"
        )
    try:
        archive = subprocess.run(
            ["git", "-C", str(repository), "archive", sha, PACKAGE_NAME, "urdf", "mjcf", "config"],
            check=True,
            capture_output=True,
        ).stdout
    except subprocess.CalledProcessError as exc:
        raise ValueError(f"cannot export {revision}: {exc.stderr.decode().strip()}") from None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    name = f"{PACKAGE_NAME}_{sha}"
    (folder / PACKAGE_NAME).rename(folder / name)
    return name


def bench_configs(package: ModuleType) -> dict[str, dict[str, Any]]:
    """The benchmark parameters of ``package`` (either version): its ``bench/configs.py``, this
    tree's where it has none."""
    try:
        configs: dict[str, dict[str, Any]] = importlib.import_module(
            f"{package.__name__}.bench.configs"
        ).BENCH_CONFIGS
    except ModuleNotFoundError:
        return BENCH_CONFIGS
    return configs


def _controller(
    package: ModuleType, name: str, qs: np.ndarray, vs: np.ndarray, motion: list[Any] | None
) -> tuple[Any, list[Any], list[Any]]:
    """``name`` built by ``package`` (either version) with its benchmark parameters
    (:func:`bench_configs`), the states as that package's ``JointState`` s and a reference per
    state: one following ``motion`` (the joint reference the states tracked), as
    :func:`.compute.tracking_references` builds it, with that package's classes; without
    ``motion``, the reference held at the first state, at every state."""
    core = importlib.import_module(f"{package.__name__}.core")
    controllers = importlib.import_module(f"{package.__name__}.core.controllers")
    paths = importlib.import_module(f"{package.__name__}.paths")
    robot = core.RobotModel.from_urdf_file(paths.data_path("urdf", "gen3.urdf"))
    params = bench_configs(package)[name]
    controller = controllers.create_controller(name, robot, params)
    states = [core.JointState(q, v) for q, v in zip(qs, vs, strict=True)]
    if motion is None:
        return controller, states, [controller.hold_reference(states[0])] * len(states)
    return controller, states, tracking_references(name, params, robot, motion, package)


def compare(
    other: ModuleType, controllers: Sequence[str], count: int, seed: int = 0, tracking: bool = True
) -> dict[str, dict[str, float]]:
    """Per controller: medians and p99 (µs) of ``compute`` in this tree (``this``) and in ``other``,
    timed interleaved, ``ratio`` = this / other (medians), ``max_torque_difference`` (N·m)
    over the first :data:`TORQUE_CHECK_STATES` states from a cold start, and
    ``same_parameters`` (1.0 or 0.0: whether both ran on the same benchmark parameters).
    ``tracking``: a new reference each state (:func:`_controller`), else one held."""
    this = importlib.import_module(PACKAGE_NAME)
    qs, vs, motion = realistic_motion(count, seed)
    followed = motion if tracking else None
    theirs = bench_configs(other)
    return {
        name: _time_pair(
            _controller(this, name, qs, vs, followed), _controller(other, name, qs, vs, followed), count
        )
        | {"same_parameters": float(theirs.get(name) == BENCH_CONFIGS[name])}
        for name in controllers
    }


def _time_pair(
    this: tuple[Any, list[Any], list[Any]], other: tuple[Any, list[Any], list[Any]], count: int
) -> dict[str, float]:
    """:func:`compare` for one controller: ``(controller, states, references)`` of each version."""
    (a, states_a, refs_a), (b, states_b, refs_b) = this, other

    def restart() -> None:
        # As compute.run does: the timed run starts cold, its cold step untimed.
        for controller, states, refs in (this, other):
            controller.reset()
            controller.compute(states[0], refs[0])

    times = time_interleaved(
        {
            "this": lambda i: a.compute(states_a[i], refs_a[i]),
            "other": lambda i: b.compute(states_b[i], refs_b[i]),
        },
        count,
        after_warmup=restart,
    )
    a.reset()
    b.reset()
    difference = max(
        float(np.abs(a.compute(states_a[i], refs_a[i]).tau - b.compute(states_b[i], refs_b[i]).tau).max())
        for i in range(min(count, TORQUE_CHECK_STATES))
    )
    this_us, other_us = times["this"] / 1e3, times["other"] / 1e3
    return {
        "this_median_us": float(np.median(this_us)),
        "this_p99_us": float(np.percentile(this_us, 99)),
        "other_median_us": float(np.median(other_us)),
        "other_p99_us": float(np.percentile(other_us, 99)),
        "ratio": float(np.median(this_us) / np.median(other_us)),
        "max_torque_difference": difference,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torque_ctrl_ros.bench.compare",
        description="Controller compute of this tree against a git revision, interleaved in one process.",
    )
    parser.add_argument("--against", default="HEAD", help="git revision to compare with (HEAD)")
    parser.add_argument("--controllers", default="qpid,hqpid", help="comma-separated (qpid,hqpid)")
    parser.add_argument("--states", type=int, default=4000, help="states along the benchmark motion (4000)")
    parser.add_argument(
        "--reference",
        choices=("tracking", "held"),
        default="tracking",
        help="a new reference each state, as make bench (tracking), or one held at the first state",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.controllers.split(",") if n]
    unknown = sorted(set(names) - set(BENCH_CONFIGS))
    if unknown or not names or args.states < 1:
        parser.error(
            f"controllers must be among {sorted(BENCH_CONFIGS)} (got {unknown or names}); states >= 1"
        )
    repository = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="tcr_compare_") as folder:
        try:
            package_name = export_revision(args.against, repository, Path(folder))
        except ValueError as exc:
            parser.error(str(exc))
        sys.path.insert(0, folder)
        try:
            other = importlib.import_module(package_name)
            results = compare(other, names, args.states, tracking=args.reference == "tracking")
        finally:
            sys.path.remove(folder)
            # Its modules point into the folder about to be deleted: a second comparison in this
            # process must import them afresh.
            for module in [m for m in sys.modules if m == package_name or m.startswith(package_name + ".")]:
                del sys.modules[module]
            importlib.invalidate_caches()
    print(
        f"compute per step (µs), this tree against {args.against} ({package_name}), "
        f"{args.states} states, interleaved, {args.reference} reference"
    )
    print(
        f"{'controller':<16} {'this':>9} {'other':>9} {'ratio':>7} {'this p99':>9} {'other p99':>9}"
        "  max |Δτ| N·m"
    )
    for name, r in results.items():
        print(
            f"{name:<16} {r['this_median_us']:>9.1f} {r['other_median_us']:>9.1f} {r['ratio']:>7.3f} "
            f"{r['this_p99_us']:>9.1f} {r['other_p99_us']:>9.1f}  {r['max_torque_difference']:.2e}"
            + ("" if r["same_parameters"] else "  (not on the same benchmark parameters)")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
