"""MuJoCo plant for the Gen3 (no ROS)."""

from torque_ctrl_ros.sim.plant import MujocoPlant

__all__ = ["MujocoPlant"]
