"""The core must stay usable without ROS: no rclpy import anywhere under core/."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "torque_ctrl_ros" / "core"
ALLOWED_THIRD_PARTY = {"numpy", "pinocchio", "proxsuite", "coal", "yaml"}


def _imported_top_level_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_ros_or_simulator_imports_in_core_sources() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert files, "core/ has no Python files"
    stdlib = set(sys.stdlib_module_names)
    offenders = {}
    for path in files:
        foreign = {
            m
            for m in _imported_top_level_modules(path)
            if m not in stdlib and m not in ALLOWED_THIRD_PARTY and m != "torque_ctrl_ros"
        }
        if foreign:
            offenders[str(path.relative_to(CORE))] = sorted(foreign)
    assert not offenders, f"core/ imports modules outside {sorted(ALLOWED_THIRD_PARTY)}: {offenders}"


def test_importing_core_loads_no_rclpy() -> None:
    code = (
        "import sys, importlib, pkgutil, torque_ctrl_ros.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'torque_ctrl_ros.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'mujoco')]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
