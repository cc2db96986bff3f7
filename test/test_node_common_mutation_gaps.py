"""Behaviours of the pieces both nodes share that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``nodes/common.py`` (QoS, executor, publisher counts, exit outputs, ``run_node``'s exit statuses),
``nodes/domain.py`` (the ROS domain id leases) and ``nodes/composed.py`` (both nodes on one
executor).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, ReliabilityPolicy
from ros_helpers import requires_rclpy, ros_domain, ros_env  # noqa: F401
from test_node_runtime_guards import nodes  # noqa: F401

from torque_ctrl_ros.core.errors import ModelError
from torque_ctrl_ros.nodes import domain
from torque_ctrl_ros.nodes.common import (
    STOP,
    control_qos,
    make_executor,
    one_line,
    publishing_nodes,
    write_json,
)
from torque_ctrl_ros.nodes.domain import DomainLease
from torque_ctrl_ros.nodes.params import CommonConfig
from torque_ctrl_ros.nodes.scheduling import RT_PRIORITY_ENV

pytestmark = [requires_rclpy]


# ------------------------------------------------------------------------------------------------
# nodes/common.py: the graph, QoS, executor, one-line errors, the JSON summary
# ------------------------------------------------------------------------------------------------
def test_two_nodes_of_one_name_in_two_namespaces_are_two_publishers() -> None:
    """A node is its namespace and its name: ``/left/sim_node`` and ``/right/sim_node`` publishing
    on one topic are two sources (the controller warns of a second state publisher), however many
    endpoints each has. (Mutant: ``publishing_nodes`` counts node names only, so two simulators
    in two namespaces count as one.)"""

    def endpoint(namespace: str) -> Any:
        return SimpleNamespace(node_namespace=namespace, node_name="sim_node", endpoint_gid=bytes(16))

    assert publishing_nodes([endpoint("/left"), endpoint("/right")]) == 2
    assert publishing_nodes([endpoint("/left"), endpoint("/left"), endpoint("/right")]) == 2


@pytest.mark.parametrize(
    ("reliability", "policy"),
    [("reliable", ReliabilityPolicy.RELIABLE), ("best_effort", ReliabilityPolicy.BEST_EFFORT)],
)
def test_the_control_qos_has_the_reliability_asked_for(reliability: str, policy: ReliabilityPolicy) -> None:
    """``reliability`` sets the QoS of /joint_states and the commands, a keep-last queue of
    ``qos_depth`` unless a depth is given. (Mutant: the reliability test inverted in
    ``control_qos``, so the shipped ``reliable`` gives best effort and the other way round; also
    ``KEEP_ALL`` for ``KEEP_LAST``.)"""
    qos = control_qos(CommonConfig(reliability=reliability, qos_depth=25))
    assert qos.reliability == policy
    assert (qos.history, qos.depth) == (HistoryPolicy.KEEP_LAST, 25)
    assert control_qos(CommonConfig(reliability=reliability), depth=123).depth == 123


def test_the_executor_is_the_kind_asked_for(ros_domain: int) -> None:  # noqa: F811
    """``executor: single_threaded`` gives rclpy's SingleThreadedExecutor, ``events`` the
    EventsExecutor (a C++ class: anything else), each serving the context given. (Mutant: the
    ``events`` test inverted in ``make_executor``.)"""
    context = Context()
    rclpy.init(context=context, domain_id=ros_domain)
    try:
        single = make_executor("single_threaded", context)
        events = make_executor("events", context)
        assert type(single) is SingleThreadedExecutor and single.context is context
        assert not isinstance(events, SingleThreadedExecutor)
        single.shutdown()
        events.shutdown()
    finally:
        context.try_shutdown()


def test_a_several_line_start_up_error_becomes_one_line_of_single_spaces() -> None:
    """A parser's message (indented lines, tabs, CRLF) is written as one line with every run of
    whitespace a single space. (Mutant: ``one_line`` replaces each ``\\n`` by a space, keeping
    the indentation and the ``\\r``.)"""
    assert one_line("Error parsing URDF:\r\n    line 3:\tunknown tag  <joint>\n") == (
        "Error parsing URDF: line 3: unknown tag <joint>"
    )


def test_no_stats_file_writes_nothing_and_raises_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stats_file: ""`` (the default) means no summary: nothing is written, and nothing fails
    (each node's exit would otherwise report "could not write stats_file"). (Mutant: the
    empty-path return dropped from ``write_json``, which then writes to ``.``.)"""
    monkeypatch.chdir(tmp_path)
    write_json("", {"steps": 1})
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# nodes/common.py: run_node's exit statuses (in a child process: it installs signal handlers)
# ------------------------------------------------------------------------------------------------
_RUN_NODE = """
import time

from rclpy.exceptions import ParameterException

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.common import STOP, run_node


class Probe:
    def __init__(self):
        print("built", flush=True)

    def run(self):
        {run}

    def close(self):
        print("closed", flush=True)


raise SystemExit(run_node(Probe, "probe", {args}))
"""


def _run_node(domain_id: int, run: str, args: list[str] | None = None, /, **env: str) -> Any:
    """``run_node`` on a stand-in node whose ``run`` executes ``run``, in a child process."""
    code = _RUN_NODE.format(run=run, args=args or [])
    return subprocess.run(
        [sys.executable, "-c", code],
        env=ros_env(domain_id) | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_scheduling_request_refused_at_start_is_exit_status_2(ros_domain: int) -> None:  # noqa: F811
    """A malformed ``$TORQUE_CTRL_RT_PRIORITY`` is a configuration error: status 2, one line
    naming the variable, and no node built. (Mutant: ``return 1`` for it, the status of a crash.)"""
    done = _run_node(ros_domain, "pass", **{RT_PRIORITY_ENV: "abc"})
    assert done.returncode == 2, done.stderr
    assert f"[probe] error: {RT_PRIORITY_ENV}" in done.stderr
    assert "built" not in done.stdout


def test_arguments_rcl_refuses_are_exit_status_2(ros_domain: int) -> None:  # noqa: F811
    """A parameter file rcl cannot read stops the process before any node, with status 2 and
    rcl's words. (Mutant: ``return 0`` when ``rclpy.init`` fails: a launch would take the failed
    start for a clean end.)"""
    done = _run_node(ros_domain, "pass", ["--ros-args", "--params-file", "/no/such.yaml"])
    assert done.returncode == 2, done.stderr
    assert "[probe] error: failed to initialize rcl" in done.stderr
    assert "built" not in done.stdout


def test_a_value_error_while_running_is_a_crash_and_the_node_is_still_closed(
    ros_domain: int,  # noqa: F811
) -> None:
    """Once the node runs, a ValueError is a bug: its traceback and status 1, not a one-line
    "error" with the configuration-error status 2. The node is closed all the same (its summary
    written). (Mutants: the ``runner is not None`` condition dropped, so every ValueError gives
    status 2; ``runner.close()`` dropped.)"""
    crash = _run_node(ros_domain, "raise ValueError('a bug')")
    assert crash.returncode == 1, crash.stderr
    assert "Traceback" in crash.stderr and "ValueError: a bug" in crash.stderr
    assert "[probe] error" not in crash.stderr
    assert crash.stdout.split() == ["built", "closed"]


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        ("ConfigError('probe.x: refused')", "probe.x: refused"),
        ("ParameterException('refused', ['probe.x'])", "refused: ['probe.x']"),
    ],
    ids=["config-error", "rclpy-parameter-exception"],
)
def test_a_configuration_error_while_running_is_one_line_and_status_2(
    ros_domain: int,  # noqa: F811
    raised: str,
    said: str,
) -> None:
    """Our configuration errors and rclpy's parameter refusals are one line, "[node] error: ...",
    and status 2, the node closed, even once it runs. (Mutant: ``ParameterException`` left out of
    the exceptions caught, so rclpy's refusal ends in a traceback.)"""
    refused = _run_node(ros_domain, f"raise {raised}")
    assert refused.returncode == 2, refused.stderr
    assert f"[probe] error: {said}" in refused.stderr and "Traceback" not in refused.stderr
    assert refused.stdout.split() == ["built", "closed"]


_UNTIL_STOPPED = (
    "print('running', flush=True)\n        while not STOP.is_set():\n            time.sleep(0.01)"
)


def test_sigterm_ends_the_run_and_the_node_is_closed(ros_domain: int) -> None:  # noqa: F811
    """SIGTERM (a launch's second stop signal, ``kill``) only sets :data:`STOP`: ``run`` returns,
    the node is closed (its summary written) and the status is 0. (Mutant: the handler installed
    for SIGINT only, so SIGTERM kills the process before any output.)"""
    code = _RUN_NODE.format(run=_UNTIL_STOPPED, args=[])
    with subprocess.Popen(
        [sys.executable, "-c", code],
        env=ros_env(ros_domain),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().split() == ["built"]
        assert child.stdout.readline().split() == ["running"]
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.split() == ["closed"]


# ------------------------------------------------------------------------------------------------
# nodes/domain.py: domain id leases
# ------------------------------------------------------------------------------------------------
def _lock_files_open(lock_dir: Path) -> int:
    """How many of this process's file descriptors are open on a lock file in ``lock_dir``
    (other threads' descriptors, DDS sockets say, are not counted)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        count += target.startswith(f"{lock_dir}{os.sep}")
    return count


@pytest.fixture
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Leases taken under ``tmp_path``: no other test or process holds any id there."""
    monkeypatch.setattr(domain, "LOCK_DIR", tmp_path)
    return tmp_path


def test_leases_hand_out_every_id_from_10_to_100_once_then_refuse(own_lock_dir: Path) -> None:
    """Each lease holds a different id, every id of 10..100 (off the default domain 0 and the low
    ids others use; Fast DDS's ports stay valid up to 101) before the next is refused with a clear
    error; a refused attempt leaves no file descriptor open. (Mutants: ``range(0, 101)``,
    ``range(10, 100)``, the same candidate tried on every pass, a shared lock instead of an
    exclusive one, the descriptor of a taken id not closed.)"""
    held = []
    try:
        for _ in range(91):
            held.append(DomainLease())
        assert sorted(lease.domain for lease in held) == list(range(10, 101))
        assert _lock_files_open(own_lock_dir) == 91
        with pytest.raises(RuntimeError, match=r"^no free ROS domain id in 10\.\.100$"):
            DomainLease()
        assert _lock_files_open(own_lock_dir) == 91
    finally:
        for lease in held:
            lease.release()


def test_the_lock_folder_and_files_are_shared_and_an_id_that_cannot_be_opened_is_taken(
    own_lock_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Created with the umask's modes (``rwxr-xr-x``), another user's run could open none of the
    lock files, and the lease raised a bare PermissionError where ``make sim`` should start (a
    review). The folder is writable by all and sticky, each lock file readable and writable by
    all; a file the lease cannot open counts as taken, the next id is tried; none at all is a
    RuntimeError that names the last cause."""
    monkeypatch.setattr(domain, "DOMAINS", range(10, 12))
    folder = own_lock_dir / "domains"  # not there yet, as on a fresh machine
    monkeypatch.setattr(domain, "LOCK_DIR", folder)
    lease = DomainLease()
    try:
        assert folder.stat().st_mode & 0o7777 == 0o1777
        assert (folder / f"{lease.domain}.lock").stat().st_mode & 0o777 == 0o666
    finally:
        lease.release()
    # One of this user's made before (rwxr-xr-x) is widened too.
    folder.chmod(0o755)
    DomainLease().release()
    assert folder.stat().st_mode & 0o7777 == 0o1777
    opened = domain._lock_file

    def refused_10(path: Path) -> int:
        if path.name == "10.lock":
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path)

    monkeypatch.setattr(domain, "_lock_file", refused_10)
    lease = DomainLease()
    try:
        assert lease.domain == 11
        with pytest.raises(
            RuntimeError, match=r"no free ROS domain id in 10\.\.11 \(last: .*Permission denied"
        ):
            DomainLease()
    finally:
        lease.release()


def test_a_released_id_can_be_leased_again_and_a_second_release_does_nothing(
    own_lock_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``release`` gives the id back (the next lease takes it when it is the only one free) and
    closes its descriptor; a second ``release`` is harmless. (Mutants: the descriptor left open;
    the ``_fd >= 0`` guard dropped, so a second release fails on a closed descriptor.)"""
    monkeypatch.setattr(domain, "DOMAINS", range(10, 13))
    held = [DomainLease() for _ in range(3)]
    freed = held.pop(1)
    try:
        assert _lock_files_open(own_lock_dir) == 3
        freed.release()
        assert _lock_files_open(own_lock_dir) == 2
        freed.release()
        held.append(DomainLease())
        assert held[-1].domain == freed.domain
    finally:
        for lease in held:
            lease.release()


# ------------------------------------------------------------------------------------------------
# nodes/composed.py: both nodes on the simulator's executor
# ------------------------------------------------------------------------------------------------
@pytest.mark.ros
def test_the_composed_controller_answers_every_lockstep_state(nodes: Any) -> None:  # noqa: F811
    """In the composed process the simulator's executor spins the controller's node: a 50-step
    lockstep run gets an answer to every state, none waited out on the safe torque. (Mutant: the
    controller's node not added to the simulator's executor, so nothing answers; the run, which
    waits for a controller first, is then ended by a stop after 60 s.)"""
    built = nodes.make(
        "composed",
        **{
            "sim_node:mode": "lockstep",
            "sim_node:duration": 0.05,
            "sim_node:lockstep_timeout": 5.0,
            "controller_node:controller": "gravity_comp",
        },
    )
    stop = threading.Timer(60.0, STOP.set)
    stop.start()
    try:
        built.run()
    finally:
        stop.cancel()
        STOP.clear()
    assert built.sim.k == 50
    assert built.sim.counts.missing_command_steps == 0
    assert built.controller.counts.commands_published >= 50


@pytest.mark.ros
def test_a_simulator_that_fails_to_start_closes_the_composed_controller(
    nodes: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The simulator refusing its parameters in the composed process closes the controller built
    before it (its node destroyed) and passes the error on, writing no controller summary for the
    run that never started (a review: its stats_file passed for this run's). (Mutant: the
    controller left open.)"""
    from torque_ctrl_ros.nodes.controller_node import ControllerNode

    closed: list[tuple[ControllerNode, bool]] = []
    close = ControllerNode.close

    def record(self: ControllerNode, summary: bool = True) -> None:
        closed.append((self, summary))
        close(self, summary)

    monkeypatch.setattr(ControllerNode, "close", record)
    stats = tmp_path / "controller.json"
    with pytest.raises(ModelError, match="sim_node.keyframe: unknown keyframe 'foo'"):
        nodes.make("composed", **{"sim_node:keyframe": "foo", "controller_node:stats_file": str(stats)})
    assert [summary for _, summary in closed] == [False]
    assert not stats.exists()
