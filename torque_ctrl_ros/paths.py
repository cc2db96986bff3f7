"""Locate the package's data files (URDF, MJCF, config) without ROS.

Works from a source checkout, a ``pip install -e`` (where ``data_files`` are not
installed), a ``pip install --target DIR`` (``DIR/share/torque_ctrl_ros``) and a colcon/ament
install (``<prefix>/share/torque_ctrl_ros``), sourced or not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_NAME = "torque_ctrl_ros"


def share_dir() -> Path:
    """Return the directory holding ``urdf/``, ``mjcf/``, ``config/`` and ``launch/``.

    Looks from this module's own location, see :func:`find_share_dir`.
    """
    return find_share_dir(Path(__file__).resolve().parent)


def share_dir_candidates(package_dir: Path) -> list[Path]:
    """Possible ``share/torque_ctrl_ros`` directories of the package at ``package_dir``, in order.

    ``<p>/share/torque_ctrl_ros`` for ``p`` in: the folder holding the package (``pip install
    --target p``); ``p`` three levels above it, for ``p/lib/pythonX.Y/site-packages/torque_ctrl_ros``
    (a colcon install used without sourcing it); each ``$AMENT_PREFIX_PATH`` entry; ``sys.prefix``
    (a plain ``pip install .``).
    """
    site = package_dir.parent
    # The copies next to the running code come before the environment's, which may be another install.
    prefixes = [site, *site.parents[2:3]]
    prefixes += [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes.append(Path(sys.prefix))
    return [prefix / "share" / PACKAGE_NAME for prefix in prefixes]


def find_share_dir(package_dir: Path) -> Path:
    """Data directory of the package at ``package_dir``.

    First the source tree next to the package (checkouts, editable installs and tests), then
    :func:`share_dir_candidates`.
    """
    source_root = package_dir.parent
    if (source_root / "mjcf").is_dir() and (source_root / "urdf").is_dir():
        return source_root
    for candidate in share_dir_candidates(package_dir):
        if (candidate / "mjcf").is_dir():
            return candidate
    raise FileNotFoundError(
        f"cannot find the {PACKAGE_NAME} share directory (looked next to the sources of {package_dir}, "
        f"in share/{PACKAGE_NAME} above them, in AMENT_PREFIX_PATH and in {sys.prefix}/share)"
    )


def data_path(*parts: str) -> Path:
    """Path of a data file, e.g. ``data_path("urdf", "gen3.urdf")``."""
    return share_dir().joinpath(*parts)


def find_data_file(name: str, folder: str) -> Path:
    """The file a parameter names: ``name`` as given (absolute, or relative to the working
    directory), else in the package's data.

    A relative ``name`` with a folder in it is read from the share directory
    (``mjcf/scene_table.xml``, ``urdf/gen3.urdf``), a bare one from the share directory's
    ``folder`` (``scene_table.xml`` in ``mjcf``): the same parameter file works from any working
    directory, as under ``ros2 launch``.

    Raises:
        FileNotFoundError: no such file; the message lists, on one line, every place tried.
    """
    path = Path(name)
    tried = [path] if path.is_absolute() else [Path.cwd() / path]
    missing_share = ""
    if not path.is_absolute():
        try:
            share = share_dir()
        except FileNotFoundError as exc:
            missing_share = f"; {exc}"
        else:
            tried.append(share / path if len(path.parts) > 1 else share / folder / path)
    for candidate in tried:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{name!r} does not exist (tried {', '.join(map(str, tried))}){missing_share}")


def find_model_file(name: str, launch_file: str) -> Path:
    """The file a launch file's ``model_file`` argument names (:func:`find_data_file`, bare names
    in ``urdf``), looked up before any process starts.

    Raises:
        FileNotFoundError: no such file, the message beginning ``<launch_file>: model_file:``.
    """
    try:
        return find_data_file(name, "urdf")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{launch_file}: model_file: {exc}") from None
