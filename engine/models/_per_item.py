"""Decoding an answer item by item: one odd listing or trade never sinks the others.

A search answer holds up to 2,500 listings, a check-many-project-id answer up to 100
trades. When one of them cannot be read (a price ``"12 USD"``, a trade without its
``project_id``), it is *set aside* with the field and the reason, and every other item is
kept. Only a broken envelope (``success`` unreadable, ``items`` not a list, a body that is
not JSON) fails the whole answer.

The fast path is unchanged: the whole answer is validated from its JSON bytes in
pydantic-core. Only when that fails are the bytes loaded as Python values, the items the
errors point at removed, and the rest validated again.

A response model opts in with :class:`PerItem`, naming where its items are
(``__item_paths__``). Purchase answers never do: an unreadable purchase answer is unknown,
as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import PrivateAttr, ValidationError

from ._types import WireModel

__all__ = ["ANY_KEY", "INDEX", "PerItem", "SetAside", "decode_item", "decode_per_item"]

ANY_KEY = "*"
"""In an item path: any key of an object (v2 search: the item names)."""
INDEX = "#"
"""In an item path: the position of the item in its list (always the last part)."""

M = TypeVar("M", bound=WireModel)

_MAX_ROUNDS = 8
_KEY_FIELDS = ("item_id", "project_id", "id", "name")


@dataclass(frozen=True, slots=True)
class SetAside:
    """One item of an answer that could not be read and was left out of it.

    ``path`` locates it in the answer (``items.AK-47 | Redline (Field-Tested).3``);
    ``field`` is the field at fault with list positions left out (``price``,
    ``stickers.price``; ``(item)`` when the item is not an object), which keeps the
    metric's labels bounded; ``reason`` is what was wrong; ``key`` names the item when it
    could be read (``item_id=31942112123``); ``project_id`` is the trade's project id when
    it could be read (a set-aside trade settles nothing, but it tells whose it may be).
    """

    path: str
    field: str
    reason: str
    key: str | None = None
    project_id: str | None = None

    def __str__(self) -> str:
        named = f" ({self.key})" if self.key else ""
        return f"{self.path}{named}: field {self.field}: {self.reason}"


class PerItem(WireModel):
    """A response model whose items are decoded one by one (see the module docstring).

    ``__item_paths__`` lists where the items are, as paths of keys ending in
    :data:`INDEX`; :data:`ANY_KEY` matches any key (``("items", ANY_KEY, INDEX)``).
    """

    __item_paths__: ClassVar[tuple[tuple[str, ...], ...]] = ()
    _set_aside: tuple[SetAside, ...] = PrivateAttr(default=())

    @classmethod
    def wire_shape(cls, data: Any) -> Any:
        """The answer's JSON value in the shape the model reads (a model that accepts
        several shapes rewrites the others here, and calls this from a before-validator)."""
        return data

    @property
    def set_aside(self) -> tuple[SetAside, ...]:
        """The items left out of this answer because they could not be read."""
        return self._set_aside


def decode_per_item(
    model: type[M], content: bytes | str, *, context: dict[str, Any] | None = None
) -> M:
    """``content`` as ``model``; for a :class:`PerItem` model, unreadable items are set
    aside (see :attr:`PerItem.set_aside`) instead of failing the answer.

    Raises :class:`pydantic.ValidationError` when the answer itself is broken: not JSON,
    or an error outside the items.
    """
    try:
        return model.model_validate_json(content, context=context)
    except ValidationError as exc:
        paths = getattr(model, "__item_paths__", ())
        if not paths or _bad_items(exc, paths) is None:
            raise
        first = exc
    try:
        loaded = json.loads(content)
    except ValueError:  # pydantic-core read it, Python's json does not: keep its verdict
        loaded = None
    if loaded is None:
        raise first
    data = model.wire_shape(loaded)  # type: ignore[attr-defined]
    set_aside: list[SetAside] = []
    error = first
    for _ in range(_MAX_ROUNDS):
        bad = _bad_items(error, paths)
        if bad is None:
            raise error
        set_aside.extend(_remove(data, bad))
        try:
            parsed = model.model_validate(data, context=context)
        except ValidationError as exc:
            error = exc
            continue
        parsed._set_aside = tuple(set_aside)  # type: ignore[attr-defined]
        return parsed
    raise first


def _bad_items(
    exc: ValidationError, paths: Sequence[tuple[str, ...]]
) -> dict[tuple[Any, ...], tuple[str, str]] | None:
    """item location -> (field, reason) for every error, or ``None`` when an error lies
    outside every item (the envelope is broken) or the answer is not JSON."""
    bad: dict[tuple[Any, ...], tuple[str, str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        if error["type"] == "json_invalid":
            return None
        loc = tuple(error["loc"])
        where = next((len(p) for p in paths if _matches(loc, p)), None)
        if where is None:
            return None
        item = loc[:where]
        if item not in bad:
            rest = [str(part) for part in loc[where:] if not isinstance(part, int)]
            bad[item] = (".".join(rest) or "(item)", error["msg"])
    return bad


def _matches(loc: tuple[Any, ...], path: tuple[str, ...]) -> bool:
    if len(loc) < len(path):
        return False
    for part, expected in zip(loc, path, strict=False):
        if expected == INDEX:
            if not isinstance(part, int):
                return False
        elif expected != ANY_KEY and part != expected:
            return False
    return True


def _remove(data: Any, bad: dict[tuple[Any, ...], tuple[str, str]]) -> list[SetAside]:
    """Take the ``bad`` items out of ``data`` (last positions first, so earlier ones keep
    theirs) and say what was taken, in the order the errors came."""
    removed: dict[tuple[Any, ...], SetAside] = {}
    for item in sorted(bad, key=lambda loc: loc[-1], reverse=True):
        container: Any = data
        for part in item[:-1]:
            container = container[part]
        raw = container.pop(item[-1])
        field, reason = bad[item]
        path = ".".join(str(part) for part in item)
        removed[item] = SetAside(path, field, reason, _key(raw), _project_id(raw))
    return [removed[item] for item in bad]


def _key(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    for name in _KEY_FIELDS:
        value = raw.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return f"{name}={str(value)[:80]}"
    return None


def _project_id(raw: Any) -> str | None:
    value = raw.get("project_id") if isinstance(raw, dict) else None
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return str(value)
    return None


def decode_item(model: type[M], content: str | bytes, *, path: str) -> M | SetAside:
    """One item standing alone (a feed event's payload) as ``model``, or the
    :class:`SetAside` saying why it could not be read: ``field`` is the first field at
    fault (``(json)`` when the text is not JSON, ``(item)`` when it is not an object)."""
    try:
        # the model's validator itself: model_validate_json is a Python wrapper around
        # the same call that cost a tenth of a feed event's decoding
        return model.__pydantic_validator__.validate_json(content)  # type: ignore[no-any-return]
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    if first["type"] == "json_invalid":
        return SetAside(path, "(json)", "not JSON")
    parts = [str(part) for part in first["loc"] if not isinstance(part, int)]
    try:
        raw = json.loads(content)
    except ValueError:  # pydantic-core read it, Python's json does not
        raw = None
    return SetAside(path, ".".join(parts) or "(item)", first["msg"], _key(raw))
