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
    """PyYAML's safe loader, refusing a key written twice in one mapping, two keys that read as one
    value (``on`` and ``yes`` are both ``True``; rcl takes them as two parameters, a dictionary as
    one) and a key that is not a scalar."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping of ``node``.

        Raises:
            ValueError: ``line <n>: key <key> given twice in one mapping``, two keys reading as
                one value, or a key that is not a scalar (a list or a mapping).
        """
        seen: dict[Any, str] = {}
        for key_node, _ in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise ValueError(f"line {line}: a key that is not a scalar ({key_node.id})")
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                if seen[key] == key_node.value:
                    raise ValueError(f"line {line}: key {key_node.value!r} given twice in one mapping")
                raise ValueError(
                    f"line {line}: key {key_node.value!r} reads as {key!r}, as {seen[key]!r} before it "
                    "does: rename one"
                )
            seen[key] = key_node.value
        return super().construct_mapping(node, deep=deep)


def load_unique(stream: str | IO[str]) -> Any:
    """The YAML document of ``stream`` (text or a text file), each mapping's keys once
    (:class:`UniqueKeyLoader`)."""
    return yaml.load(stream, Loader=UniqueKeyLoader)  # a SafeLoader


__all__ = ["UniqueKeyLoader", "load_unique"]
