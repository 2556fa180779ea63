"""Reading a rules file: YAML text -> plain Python values plus where each came from.

ruamel.yaml's safe loader only *composes* the document into nodes here; this module turns
the nodes into values itself. That buys three things a trader needs:

- every value and every key keeps its ``line:column``, so an error names the place;
- a number keeps its source text: ``12.5`` becomes ``Decimal("12.5")``, never the binary
  float ``12.5``, so money written without quotes is still read exactly;
- nothing but the core YAML types is ever constructed (no ``!!python/...`` tags), and a key
  written twice is an error instead of silently keeping the last one.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .._errors import ConfigError

__all__ = ["Document", "Path", "load_yaml"]

Path = tuple[str | int, ...]
"""Where a value sits in the document: ``("rules", 0, "float", "max")``."""

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE, _TIMESTAMP = (_TAG + t for t in ("map", "seq", "merge", "timestamp"))


@dataclass
class Document:
    """A loaded YAML document: ``data`` and the ``line:column`` (1-based) of its parts."""

    filename: str
    data: Any
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: Path, *, key: bool = False) -> str:
        """``file:line:column`` of the value (or the key) at ``path``, falling back to the
        nearest enclosing place that is known."""
        probe = path
        while True:
            table = self.keys if key and probe == path else self.values
            pos = table.get(probe) or self.values.get(probe)
            if pos is not None:
                return f"{self.filename}:{pos[0]}:{pos[1]}"
            if not probe:
                return f"{self.filename}:1:1"
            probe = probe[:-1]


def load_yaml(text: str, filename: str) -> Document:
    """Parse ``text`` (the content of ``filename``) into a :class:`Document`.

    Raises :class:`~engine.ConfigError` naming ``file:line:column`` for malformed YAML, a
    duplicate key, an unsupported tag, or a document that is not a mapping.
    """
    yaml = YAML(typ="safe", pure=True)
    try:
        node = yaml.compose(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{filename}:{mark.line + 1}:{mark.column + 1}" if mark else filename
        problem = exc.problem or exc.context or "malformed YAML"
        raise ConfigError(f"malformed YAML: {problem}", location=where) from None
    except YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", location=filename) from None
    doc = Document(filename=filename, data=None)
    if node is None:
        raise ConfigError("the file is empty; see rules.example.yaml", location=f"{filename}:1:1")
    if not isinstance(node, MappingNode):
        raise ConfigError(
            "the file must be a mapping of `account`, `budgets` and `rules`",
            location=_where(filename, node),
        )
    doc.data = _Builder(doc).build(node, ())
    return doc


def _where(filename: str, node: Node) -> str:
    return f"{filename}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"


class _Builder:
    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def build(self, node: Node, path: Path) -> Any:
        self.doc.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, MappingNode | SequenceNode) and node.tag not in (_MAP, _SEQ):
            raise ConfigError(
                f"the tag {node.tag!r} is not allowed in a rules file (only plain YAML values are)",
                location=self._at(node),
            )
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        return self._scalar(node)

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged.extend(self._merge_sources(value_node))
                continue
            if not isinstance(key_node, ScalarNode):
                raise ConfigError("a key must be plain text", location=self._at(key_node))
            key = str(key_node.value)
            if key in result:
                raise ConfigError(
                    f"key {key!r} is written twice in this mapping", location=self._at(key_node)
                )
            self.doc.keys[(*path, key)] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
            result[key] = self.build(value_node, (*path, key))
        # `<<: *defaults` fills in what the mapping itself does not say.
        for source in merged:
            for key, value in self._mapping(source, path).items():
                result.setdefault(key, value)
        return result

    def _merge_sources(self, node: Node) -> list[MappingNode]:
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise ConfigError("`<<` merges a mapping or a list of mappings", location=self._at(node))

    def _scalar(self, node: ScalarNode) -> Any:
        tag, text = node.tag, str(node.value)
        if tag in (_STR, _TIMESTAMP):
            return text
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return text.lower() in ("true", "yes", "on")
        if tag == _INT:
            try:
                return int(text.replace("_", ""), 0)
            except ValueError:
                return text
        if tag == _FLOAT:
            return _decimal(text)
        raise ConfigError(
            f"the tag {tag!r} is not allowed in a rules file (only plain YAML values are)",
            location=self._at(node),
        )

    def _at(self, node: Node) -> str:
        return _where(self.doc.filename, node)


def _decimal(text: str) -> Decimal | str:
    lowered = text.lower().lstrip("+")
    special = {".inf": "Infinity", "-.inf": "-Infinity", ".nan": "NaN"}
    try:
        return Decimal(special.get(lowered, text.replace("_", "")))
    except InvalidOperation:
        return text
