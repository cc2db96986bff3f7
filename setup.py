"""ament_python packaging: ``colcon build`` installs executables to ``lib/torque_ctrl_ros``."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "torque_ctrl_ros"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
        (f"share/{PACKAGE}/mjcf", glob("mjcf/*.xml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="torque_ctrl_ros maintainers",
    maintainer_email="maintainers@torque-ctrl-ros.invalid",
    description="Torque control of a Kinova Gen3 on ROS 2 (MuJoCo, Pinocchio, ProxSuite).",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            f"sim_node = {PACKAGE}.nodes.sim_node:main",
            f"controller_node = {PACKAGE}.nodes.controller_node:main",
            f"sim_and_controller = {PACKAGE}.nodes.composed:main",
        ],
    },
)
