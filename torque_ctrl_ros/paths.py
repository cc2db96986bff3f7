"""Locate the package's data files (URDF, MJCF, config) without ROS.

Works from a source checkout, a ``pip install -e`` (where ``data_files`` are not
installed) and a colcon/ament install (``<prefix>/share/torque_ctrl_ros``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_NAME = "torque_ctrl_ros"


def share_dir() -> Path:
    """Return the directory holding ``urdf/``, ``mjcf/``, ``config/`` and ``launch/``.

    Order: the source tree next to this package (editable installs and tests), then
    ``$AMENT_PREFIX_PATH`` entries, then ``sys.prefix`` (a plain ``pip install .``).
    """
    source_root = Path(__file__).resolve().parent.parent
    if (source_root / "mjcf").is_dir() and (source_root / "urdf").is_dir():
        return source_root
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes.append(sys.prefix)
    for prefix in prefixes:
        candidate = Path(prefix) / "share" / PACKAGE_NAME
        if (candidate / "mjcf").is_dir():
            return candidate
    raise FileNotFoundError(
        f"cannot find the {PACKAGE_NAME} share directory (looked next to the sources, "
        f"in AMENT_PREFIX_PATH and in {sys.prefix}/share)"
    )


def data_path(*parts: str) -> Path:
    """Path of a data file, e.g. ``data_path("urdf", "gen3.urdf")``."""
    return share_dir().joinpath(*parts)
