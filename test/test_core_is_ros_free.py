"""The core must stay usable without ROS (no rclpy import anywhere under core/), and rosdep must
install what the package imports (package.xml declares every imported package)."""

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


#: Imported modules that are not ROS packages, with the package.xml key that provides each.
_NOT_ROS = {"numpy": "python3-numpy", "yaml": "python3-yaml", "mujoco": "python3-mujoco-pip"}


def test_every_imported_package_is_declared_in_package_xml() -> None:
    """What the package imports (launch files included), rosdep must install: ``rcl_interfaces``
    was imported by the nodes without an exec_depend (rclpy happened to bring it)."""
    import xml.etree.ElementTree as ET

    root = CORE.parent.parent
    manifest = ET.parse(root / "package.xml").getroot()
    declared = {e.text for e in manifest if e.tag in ("depend", "exec_depend") and e.text}
    stdlib = set(sys.stdlib_module_names)
    sources = [*(root / "torque_ctrl_ros").rglob("*.py"), *(root / "launch").glob("*.py")]
    missing: dict[str, list[str]] = {}
    for path in sources:
        for module in _imported_top_level_modules(path) - stdlib - {"torque_ctrl_ros"}:
            if _NOT_ROS.get(module, module) not in declared:
                missing.setdefault(module, []).append(str(path.relative_to(root)))
    assert not missing, f"imported but not in package.xml: {missing}"
