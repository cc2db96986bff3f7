"""``make sim``'s demo for the Cartesian controllers: tool pose targets, and how close the tool came.

Under ``achd_rnea``, ``qpid`` and ``hqpid`` the runner's monitor sends the controlled frame's pose
targets, as a user would with ``ros2 topic pub``: :data:`OFFSET` from where the frame is at the
first state, then back there, one target every :data:`HOLD` simulated seconds, ending where it
started. It reads the frame's position from each joint state (forward kinematics on the
controller's model) and reports, for each target, how long the frame took to come within
:data:`REACHED` of it, and how far off the last target it ended. The controller plans each
approach itself (``core/approach.py``): the monitor does not know the path, only where it ends,
so the report is about arriving, not about following a path.

The frame and the topic are those of the parameter files the nodes read: ``achd_rnea.frame`` on
``~/target_pose``; for the QP controllers the first task of type ``pose`` in ``<controller>.tasks``,
on ``~/<task>/target``. Without such a task, or with a model this process cannot load (the
controller node then says why), there is no demo and the arm holds its pose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from .core.errors import TorqueCtrlError
from .core.robot import RobotModel
from .core.target_checks import base_frame
from .nodes.params import controller_model, file_parameter

OFFSET = np.array([0.0, 0.10, 0.0])
"""Where the first target is (m, base frame) from the frame's position at the first state: 10 cm
along the base's y, the way the README's example target goes."""

HOLD = 3.0
"""Simulated seconds between two targets: the approach of :data:`OFFSET` takes ~1.5 s at the
shipped gains, and the frame then settles."""

REACHED = 1e-3
"""A target counts as reached once the frame's position is this close to it (m)."""


@dataclass
class SentTarget:
    """One target the demo sent: its position (m) and orientation (3 × 3), the simulated time it
    was sent at (s), and when the frame first came within :data:`REACHED` of it (s; nan: not yet)."""

    position: np.ndarray
    rotation: np.ndarray
    sent_at: float
    reached_at: float = math.nan
    closest: float = math.inf

    def quaternion_xyzw(self) -> tuple[float, float, float, float]:
        """The orientation as a unit quaternion ``(x, y, z, w)``, as ``geometry_msgs/Pose`` has it."""
        x, y, z, w = (float(c) for c in pin.Quaternion(self.rotation).coeffs())
        return x, y, z, w


@dataclass
class DemoFigures:
    """What a :class:`PoseDemo` measured up to a moment (:meth:`PoseDemo.snapshot`): how many
    targets it had sent, each one's ``(reached_at, closest)``, the last error (m) and frame
    rotation, and the index of the target that error was measured against (-1: none)."""

    sent: int
    measured: list[tuple[float, float]]
    last_error: float
    last_rotation: np.ndarray
    error_of: int


class PoseDemo:
    """The pose targets for one run and what the frame did (module docstring).

    Args:
        robot: the controller's model (for the frame's forward kinematics).
        frame: the controlled frame.
        topic: the fully qualified target topic.

    Attributes:
        base: the model's base frame, the targets' ``frame_id``.
        sent: the targets sent so far, in order.
    """

    def __init__(self, robot: RobotModel, frame: str, topic: str) -> None:
        self.robot = robot
        self.frame = frame
        self.topic = topic
        self.base = base_frame(robot)
        self.sent: list[SentTarget] = []
        self._plan: list[tuple[float, np.ndarray]] = []  # (time to send, position), in order
        self._rotation = np.eye(3)
        self._order: np.ndarray | None = None  # the model's joints' indices in the states
        self._last_error = math.nan
        self._last_rotation = np.full((3, 3), math.nan)
        self._error_of = -1  # the index of the target _last_error was measured against
        #: Why :meth:`start` planned nothing ("" until it refuses).
        self.refusal = ""

    @classmethod
    def for_controller(cls, controller: str, params_files: Sequence[Path]) -> PoseDemo | None:
        """The demo for ``controller`` as the parameter files ``params_files`` (in the order the
        nodes load them, the shipped one first: it sets every key read here) configure the
        controller node; ``None`` where there is none to give."""
        node = "/controller_node"
        if controller == "achd_rnea":
            frame, topic = file_parameter(params_files, node, "achd_rnea.frame"), f"{node}/target_pose"
        elif controller in ("qpid", "hqpid"):
            tasks = file_parameter(params_files, node, f"{controller}.tasks")
            if not isinstance(tasks, list):
                return None  # no list of task names: the controller node refuses the file, and says why
            poses = [
                t for t in tasks if file_parameter(params_files, node, f"{controller}.{t}.type") == "pose"
            ]
            if not poses:
                return None
            frame = file_parameter(params_files, node, f"{controller}.{poses[0]}.frame")
            topic = f"{node}/{poses[0]}/target"
        else:
            return None
        if not isinstance(frame, str):
            return None
        try:
            robot = controller_model(params_files)
            robot.frame_id(frame)
        except (TorqueCtrlError, OSError):
            return None  # the controller node refuses the same, and says why
        return cls(robot, frame, topic)

    @property
    def started(self) -> bool:
        """Whether the targets are planned (:meth:`start`)."""
        return self._order is not None

    def start(self, names: Sequence[str], q: np.ndarray, t: float, duration: float) -> bool:
        """Plan the targets from the state at ``t`` (s; joint angles ``q`` in rad, in the order of
        ``names``): :data:`OFFSET` and back, one every :data:`HOLD` s, the last back where the frame
        is now with :data:`HOLD` left before the run ends at ``duration`` (s of simulated time, as
        ``t``; 0, until Ctrl-C: a minute from ``t``). Returns False (no demo) when the states lack
        one of the model's joints or are not finite, or not even one move and the way back fit
        (``duration < t + 2·HOLD``); :attr:`refusal` then says which."""
        index = {name: k for k, name in enumerate(names)}
        missing = [name for name in self.robot.joint_names if name not in index]
        if missing:
            self.refusal = f"the joint states lack the model's {missing}"
            return False
        order = np.array([index[name] for name in self.robot.joint_names])
        if not np.isfinite(q[order]).all():
            self.refusal = f"the joint state at t = {t:.2f} s was not finite"
            return False
        end = duration if duration > 0 else t + 60.0
        # Out and back in pairs, the last back with HOLD left to settle: 2·⌊(end − t)/(2·HOLD)⌋.
        count = 2 * int((end - t) // (2.0 * HOLD))
        if count < 2:
            self.refusal = (
                f"the run ends at {end:g} s, before a move and the way back could (from the "
                f"controller's target topic, discovered at t = {t:.2f} s, they need until "
                f"{t + 2 * HOLD:.2f} s)"
            )
            return False
        pose = self.robot.frame_placement(q[order], self.frame)
        home = np.array(pose.translation)
        plan = [(t + k * HOLD, home + OFFSET if k % 2 == 0 else home.copy()) for k in range(count)]
        self._order, self._rotation, self._plan = order, np.array(pose.rotation), plan
        self.refusal = ""
        return True

    def due(self, t: float) -> SentTarget | None:
        """The target to send at simulated time ``t`` (s), if one is due; it then counts as sent."""
        if not self._plan or self._plan[0][0] > t:
            return None
        _, position = self._plan.pop(0)
        target = SentTarget(position, self._rotation.copy(), t)
        self.sent.append(target)
        return target

    def stop(self) -> None:
        """Send no more targets (someone else's came: the demo would replace it at its next)."""
        self._plan.clear()

    def snapshot(self) -> DemoFigures:
        """The figures so far (:meth:`rewind` goes back to them)."""
        measured = [(t.reached_at, t.closest) for t in self.sent]
        return DemoFigures(
            len(self.sent), measured, self._last_error, self._last_rotation.copy(), self._error_of
        )

    def rewind(self, figures: DemoFigures) -> None:
        """Go back to ``figures`` (:meth:`snapshot`): the motion since is not the demo's (a target
        from elsewhere came meanwhile). A target sent since is still counted, as not measured."""
        for target, (reached_at, closest) in zip(self.sent, figures.measured, strict=False):
            target.reached_at, target.closest = reached_at, closest
        for target in self.sent[figures.sent :]:
            target.reached_at, target.closest = math.nan, math.nan
        self._last_error, self._last_rotation = figures.last_error, figures.last_rotation
        self._error_of = figures.error_of

    def observe(self, t: float, q: np.ndarray) -> float:
        """The frame's distance (m) to the last target sent at the state at ``t`` (s; ``q`` in
        rad, in the order :meth:`start` was given); nan before the first target."""
        if not self.sent or self._order is None:
            return math.nan
        pose = self.robot.frame_placement(q[self._order], self.frame)
        target = self.sent[-1]
        error = float(np.linalg.norm(np.asarray(pose.translation) - target.position))
        target.closest = min(target.closest, error)
        if error <= REACHED and math.isnan(target.reached_at):
            target.reached_at = t
        self._last_error, self._error_of = error, len(self.sent) - 1
        self._last_rotation = pose.rotation  # a copy (frame_placement's): the angle for the summary
        return error

    def summary(self) -> str:
        """One line for the run's summary: each target's time to :data:`REACHED` and the end's error."""
        if not self.sent:
            return "none sent (the controller's target topic was not discovered in time)"
        offset = ", ".join(f"{x:+.2f}" for x in OFFSET)
        times = [
            "not measured"
            if math.isnan(t.closest)
            else f"never (closest {t.closest * 1e3:.1f} mm)"
            if math.isnan(t.reached_at)
            else f"after {t.reached_at - t.sent_at:.2f} s"
            for t in self.sent
        ]
        turn = self.sent[-1].rotation.T @ self._last_rotation
        angle = math.degrees(float(np.linalg.norm(pin.log3(turn)))) if np.isfinite(turn).all() else math.nan
        end = (
            "the end not measured"  # none yet, or against an earlier target (rewound to before the last)
            if math.isnan(self._last_error) or self._error_of != len(self.sent) - 1
            else f"the end {self._last_error * 1e3:.3g} mm and {angle:.3g}° off the last"
        )
        return (
            f"{len(self.sent)} sent to {self.frame} on {self.topic} (its start moved by ({offset}) m in "
            f"{self.base} and back, every {HOLD:g} s from t = {self.sent[0].sent_at:.2f} s); within "
            f"{REACHED * 1e3:g} mm of each: {', '.join(times)}; at {end}"
        )


__all__ = ["HOLD", "OFFSET", "REACHED", "DemoFigures", "PoseDemo", "SentTarget"]
