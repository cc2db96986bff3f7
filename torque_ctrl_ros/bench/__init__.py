"""Benchmarks that make speed a measured property of the package (``make bench``).

Each section returns plain dicts so :mod:`torque_ctrl_ros.bench.__main__` can print a table
and write JSON. Figures are medians and percentiles of per-call wall-clock times on
whatever machine runs them; the JSON records that machine.
"""
