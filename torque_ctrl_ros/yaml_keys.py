"""YAML read with each key of a mapping once.

PyYAML keeps the last of two equal keys without a word. In the description a link pasted twice
under one name would replace the first (``tools/generate_gen3_description.py``); in a parameter
file rcl merges the two, so a check reading the last alone would see other parameters than the
nodes get (:mod:`torque_ctrl_ros.nodes.params`). Both read through :class:`UniqueKeyLoader`.
"""

from __future__ import annotations

from typing import IO, Any

import yaml


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping of ``node``.

        Raises:
            ValueError: ``line <n>: key <key> given twice in one mapping``.
        """
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ValueError(
                    f"line {key_node.start_mark.line + 1}: key {key!r} given twice in one mapping"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_unique(stream: str | IO[str]) -> Any:
    """The YAML document of ``stream`` (text or a text file), each mapping's keys once
    (:class:`UniqueKeyLoader`)."""
    return yaml.load(stream, Loader=UniqueKeyLoader)  # a SafeLoader


__all__ = ["UniqueKeyLoader", "load_unique"]
