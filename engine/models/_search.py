"""A v2 search answer decoded for a buyer: only the listings that can matter are built.

A search answer holds up to 2,500 listings; building a :class:`Listing` for each is most
of the cost of reading it (bench/bench_parse.py), yet a listing whose name no rule watches,
or whose price is above every ceiling for its name, can never be bought. With a
*prefilter* (item name -> the highest price any rule would pay for it, ``None`` when no rule
watches the name), :func:`decode_search` reads the answer once into plain values
(pydantic-core's ``from_json``, the same parser as the full path), passes over those
listings by their ``name`` and ``price`` alone, and builds the others one by one.

What is built keeps the per-item behaviour of :func:`decode_per_item`: a candidate that
cannot be read is set aside with the same path (its position in the answer as sent),
field, reason and key. A listing is passed over only when its name is a string and its
price a JSON integer (or a string of digits) above the ceiling; anything odder is built
first, so an unreadable candidate is never hidden, and then passed over by its read
price. What was passed over is counted (:attr:`SearchResponse.passed_over`),
and the phases of passed-over listings are kept (:attr:`SearchResponse.passed_over_phases`),
for callers that learn from every listing seen. A broken envelope falls back to the full
decode, which gives its usual error.

With a *screen* instead (item name -> a judge of :class:`RawListing` stand-ins, or
``None`` to build every listing of the name; what an engine compiles from its rules:
``engine.rules.RawScreen``), a listing is passed over only when its values are all in
a plain form (:func:`read_plain`: one the model surely accepts, read to the same values)
and the judge says no rule could accept it; it is kept as its stand-in, in its place,
in :attr:`SearchResponse.judged_items`, so a caller judging or counting every listing
sees each one (the rules turn the stand-in down for the reasons they would give its
model). An odd listing is never passed over: it is built, and set aside as without a
screen.

Without a prefilter every listing is built (the full decode's listings), and with a
:class:`ListingMemo` a listing sent exactly as in an earlier answer is that answer's
:class:`Listing` again: searches repeat most of their listings, and a backtest's whole
market is searched again every few minutes, so most of the building is skipped.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import eq, indexOf
from typing import Any, NamedTuple, cast

from msgspec import Raw
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from ._market import Listing, SearchResponse
from ._per_item import SetAside, _key, decode_per_item
from ._raw import RawListing, read_array, read_plain, split_parts

__all__ = ["ListingMemo", "Prefilter", "Screen", "decode_search"]

_UNKNOWN: Any = object()

Prefilter = Callable[[str], int | None] | Mapping[str, int | None]
"""Item name -> the highest price (USD x 1000) any rule would pay for it, or ``None`` when
no rule watches the name (a mapping is read with ``.get``)."""

Screen = Callable[[str], Callable[[RawListing], bool] | None]
"""Item name -> a judge of the name's plain listings (``True``: some rule could accept
it, build it; ``False``: every rule turns it down, pass it over), or ``None``: build every
listing of the name (see :func:`decode_search`)."""


class ScreenedPart(NamedTuple):
    """What a screened decode made of one searched name's listings."""

    keep: tuple[Listing, ...]
    """The listings built (the name's :attr:`SearchResponse.items`)."""
    every: tuple[Listing | RawListing, ...]
    """Every listing read, the stand-ins passed over in their places."""
    phases: tuple[tuple[str, str], ...]
    """(item id, phase) of the stand-ins that carry a phase."""
    passed_over: int
    judges: tuple[tuple[str, object], ...]
    """(item name, judge) of the stand-ins: the same judges pass them over again."""
    whole: bool
    """No listing was set aside (only such a part is held: an unreadable listing is
    always read again)."""
    texts: tuple[Raw, ...]
    """Each listing's JSON text (holding its own bytes), in order: with a memo, the
    name's next part's listings are compared with them where they lie in its answer,
    not copied out first."""


class ListingMemo:
    """The listings one client built lately, by item id, with the values they were built
    from: a listing sent again exactly as before (most of a search's, from one search to
    the next) is the same :class:`Listing` (immutable), not built again. Only listings
    that were read are kept, so a value that is set aside is always read (and set aside)
    again. Tied to one decode context (the client's image base address). A screened
    decode keys by each listing's JSON text instead (:meth:`recall`, :meth:`remember`),
    and holds the stand-ins it passed over too."""

    __slots__ = ("_by_text", "_held", "_parts", "held_at_most")

    def __init__(self, held_at_most: int = 100_000) -> None:
        self._held: dict[Any, tuple[dict[str, Any], Listing]] = {}
        self._by_text: dict[bytes, tuple[Listing | RawListing, object]] = {}
        self._parts: dict[str, tuple[bytes, ScreenedPart]] = {}
        self.held_at_most = held_at_most

    def __len__(self) -> int:
        return len(self._held) + len(self._by_text)

    def recall_part(self, key: str) -> tuple[bytes, ScreenedPart] | None:
        """What a screened decode made of the listings of searched name ``key`` the last
        time, with the JSON text (the array) they were sent as."""
        return self._parts.get(key)

    def remember_part(self, key: str, text: bytes, part: ScreenedPart) -> None:
        """Hold what was made of ``key``'s listings sent as ``text`` (its last one only):
        a name's part of a search answer is often sent again unchanged, and is then
        neither split nor looked up listing by listing; else mostly a listing or two
        changed, and only those are read."""
        if key not in self._parts and len(self._parts) >= self.held_at_most // 5:
            self._parts.clear()
        self._parts[key] = (text, part)

    def recall(self, text: bytes) -> tuple[Listing | RawListing, object] | None:
        """What was made of a listing sent as exactly this JSON ``text`` (a screened
        decode's): its listing, or the stand-in a screen passed it over as, with the judge
        that did (the same judge need not be asked again)."""
        return self._by_text.get(text)

    def remember(self, text: bytes, made: Listing | RawListing, judge: object = None) -> None:
        """Hold what was made of ``text`` (and the judge that passed a stand-in over):
        the same text sent again gives the same object (an engine keeps the decisions
        of unchanged listings by identity)."""
        if len(self._by_text) >= self.held_at_most:
            self._by_text.clear()
            self._parts.clear()  # their listings are made afresh as well
        self._by_text[text] = (made, judge)

    def build(self, entry: dict[str, Any], context: dict[str, Any] | None) -> Listing:
        """``entry`` as a :class:`Listing` (raises :class:`ValidationError` as
        ``Listing.model_validate`` does)."""
        key = entry.get("item_id")
        if type(key) is not str and type(key) is not int:
            return Listing.model_validate(entry, context=context)  # odd ids: never kept
        held = self._held.get(key)
        # Python's equality (in C, nested values included): 1, 1.0 and true are equal, and
        # the listing's fields read them alike (lax int, float and bool)
        if held is not None and held[0] == entry:
            return held[1]
        listing = Listing.model_validate(entry, context=context)
        if held is None and len(self._held) >= self.held_at_most:
            self._held.clear()  # simplest bound: a backtest's market has fewer than this
        self._held[key] = (entry, listing)
        return listing


def decode_search(
    content: bytes | str,
    prefilter: Prefilter | None,
    *,
    context: dict[str, Any] | None = None,
    memo: ListingMemo | None = None,
    screen: Screen | None = None,
) -> SearchResponse:
    """``content`` (a v2 search answer) with only the listings ``prefilter`` or
    ``screen`` lets through built (see the module docstring; every listing without
    either), those sent as before taken from ``memo`` when given. Raises
    :class:`pydantic.ValidationError` as :func:`decode_per_item` does when the answer
    itself is broken."""
    if screen is not None:
        # The parsed values are freed by reference counting as soon as the answer is
        # decoded: the cyclic collector, triggered by their ~20,000 allocations and then
        # by the candidates' models, would only walk objects that are about to go anyway
        # or hold no cycle (about a tenth of the decode in bench_parse.py).
        paused = gc.isenabled()
        gc.disable()
        try:
            return _screened(content, screen, context, memo)
        finally:
            if paused:
                gc.enable()
    ceiling: Any
    if prefilter is None:
        ceiling = None
    else:
        ceiling = prefilter.get if isinstance(prefilter, Mapping) else prefilter
    # asked once per distinct name (an engine's ceiling looks at every rule watching it)
    limits: dict[str, int | None] = {}
    known = limits.get
    # The parsed values are freed by reference counting as soon as the answer is decoded:
    # the cyclic collector, triggered by their ~20,000 allocations, would only walk
    # objects that are about to go anyway (about 5% of the decode in bench_parse.py).
    paused = gc.isenabled()
    gc.disable()
    try:
        data = from_json(content)
    except ValueError:
        data = None
    finally:
        if paused:
            gc.enable()
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(type(v) is list for v in items.values()):
        # not JSON, or the envelope is odd: the full path gives its usual verdict
        return decode_per_item(SearchResponse, content, context=context)
    envelope = SearchResponse.model_validate({**data, "items": {}}, context=context)
    validate = _build if memo is None else memo.build
    built: dict[str, tuple[Listing, ...]] = {}
    set_aside: list[SetAside] = []
    phases: list[tuple[str, str]] = []
    passed_over = 0
    for key, found in items.items():
        keep: list[Listing] = []
        for position, entry in enumerate(found):
            if ceiling is not None and type(entry) is dict:
                name = entry.get("name")
                price = entry.get("price")
                if type(price) is str and price.isascii() and price.isdigit():
                    price = int(price)  # "990000", "000027867": as pydantic's int reads them
                if type(name) is str and type(price) is int:
                    limit = known(name, _UNKNOWN)
                    if limit is _UNKNOWN:
                        limit = limits[name] = ceiling(name)
                    if limit is None or price > limit:
                        passed_over += 1
                        phase = entry.get("phase")
                        if phase and type(phase) is str:
                            phases.append((str(entry.get("item_id")), phase))
                        continue
            try:
                listing = validate(entry, context)
            except ValidationError:
                set_aside.append(_unreadable(entry, f"items.{key}.{position}", context))
                continue
            if ceiling is None:
                keep.append(listing)
                continue
            limit = ceiling(listing.name)  # rare: built listings only
            if limit is None or listing.price > limit:  # a price in an odder form
                passed_over += 1
                if listing.phase:
                    phases.append((listing.item_id, listing.phase))
                continue
            keep.append(listing)
        built[key] = tuple(keep)
    # the fields the answer carried, as the full path has them: a missing success flag is
    # told from a refusal by them
    answer = SearchResponse.model_construct(
        set(envelope.model_fields_set), success=envelope.success, msg=envelope.msg, items=built
    )
    answer._set_aside = tuple(set_aside)
    answer._passed_over = passed_over
    answer._passed_over_phases = tuple(phases)
    return answer


def _screened(
    content: bytes | str,
    screen: Screen,
    context: dict[str, Any] | None,
    memo: ListingMemo | None,
) -> SearchResponse:
    """:func:`decode_search` with a screen (see the module docstring)."""
    split = split_parts(content)
    if split is None:  # not JSON, or the envelope is odd: the full path gives its verdict
        return decode_per_item(SearchResponse, content, context=context)
    fields, parts = split
    envelope = SearchResponse.model_validate({**fields, "items": {}}, context=context)
    judges: dict[str, Callable[[RawListing], bool] | None] = {}

    def judge_of(name: str) -> Callable[[RawListing], bool] | None:
        judge = judges.get(name, _UNKNOWN)
        if judge is _UNKNOWN:
            judge = judges[name] = screen(name)
        return judge  # type: ignore[no-any-return]

    built: dict[str, tuple[Listing, ...]] = {}
    judged: dict[str, tuple[Listing | RawListing, ...]] = {}
    set_aside: list[SetAside] = []
    phases: list[tuple[str, str]] = []
    passed_over = 0
    for key, part in parts.items():
        if memo is None:
            found = read_array(part)
            if found is None:  # not an array: the full path gives its verdict
                return decode_per_item(SearchResponse, content, context=context)
            held = _screen_part(key, found, range(len(found)), judge_of, context, None, set_aside)
        else:
            text = bytes(part)
            last = memo.recall_part(key)
            # its stand-ins passed over by the same judges as now, or read afresh
            if last is not None:
                for name, judge in last[1].judges:
                    if judge_of(name) is not judge:
                        last = None
                        break
            if last is not None and last[0] == text:
                held = last[1]  # the same text as the name's last part
            else:
                found = read_array(part)
                if found is None:
                    return decode_per_item(SearchResponse, content, context=context)
                if last is None:
                    held = _screen_part(
                        key, found, range(len(found)), judge_of, context, memo, set_aside
                    )
                else:
                    held = _screen_changed(key, found, last[1], judge_of, context, memo, set_aside)
                if held.whole:
                    memo.remember_part(key, text, held)
        built[key] = held.keep
        judged[key] = held.every
        if held.passed_over:
            passed_over += held.passed_over
            phases += held.phases
    # the fields the answer carried, as the full path has them: a missing success flag is
    # told from a refusal by them
    answer = SearchResponse.model_construct(
        set(envelope.model_fields_set), success=envelope.success, msg=envelope.msg, items=built
    )
    answer._set_aside = tuple(set_aside)
    answer._passed_over = passed_over
    answer._passed_over_phases = tuple(phases)
    answer._judged = judged if passed_over else None
    return answer


def _same_start(a: Iterable[Raw], b: Iterable[Raw]) -> int:
    """How many items ``a`` and ``b`` begin with alike (compared in C; -1: all as far as
    the shorter goes)."""
    try:
        return indexOf(map(eq, a, b), False)
    except ValueError:  # alike as far as the shorter goes
        return -1


def _screen_changed(
    key: str,
    found: list[Raw],
    before: ScreenedPart,
    judge_of: Callable[[str], Callable[[RawListing], bool] | None],
    context: dict[str, Any] | None,
    memo: ListingMemo,
    set_aside: list[SetAside],
) -> ScreenedPart:
    """:func:`_screen_part` of a name's listings (``found``: their JSON texts) when
    ``before`` is what was made of its last part, by the same judges: a listing sent as
    one of ``before`` is what was made of it then (found in C: by position where the two
    begin and end alike, and in between mostly by position too, else by text); only the
    others are read (mostly one or two: a listing came, went or changed its price)."""
    old = before.texts
    n, m = len(found), len(old)
    start = _same_start(found, old)
    if start < 0:
        start = min(n, m)
    end = _same_start(reversed(found), reversed(old))
    end = min(n, m) - start if end < 0 else min(end, min(n, m) - start)
    came = found[start : n - end]
    gone = old[start : m - end]
    k, g = len(came), len(gone)
    # mostly one listing came and one went, the listings between them moved by one: the
    # one that came is first and the others were the first ones of those before, or it
    # is last and they were the last ones (compared in C, not hashed)
    made: list[Listing | RawListing | None]
    texts: list[Raw | None]
    if 0 < k <= g + 1 and came[1:] == list(gone[: k - 1]):
        made = [None, *before.every[start : start + k - 1]]
        texts = [None, *gone[: k - 1]]
        fresh = [0]
    elif 0 < k <= g + 1 and came[:-1] == list(gone[g - k + 1 :]):
        made = [*before.every[m - end - k + 1 : m - end], None]
        texts = [*gone[g - k + 1 :], None]
        fresh = [k - 1]
    else:  # found by text
        was = dict(zip(map(bytes, gone), before.every[start : m - end], strict=True))
        made = list(map(was.get, map(bytes, came)))
        texts = list(map(Raw.copy, came))
        fresh = [at for at, x in enumerate(made) if x is None]
    unread = len(set_aside)
    mid = _screen_part(
        key,
        [came[at] for at in fresh],
        [start + at for at in fresh],
        judge_of,
        context,
        memo,
        set_aside,
    )
    if not mid.whole:  # one was set aside: read them all, each in its place
        del set_aside[unread:]
        return _screen_part(key, found, range(n), judge_of, context, memo, set_aside)
    for at, x, text in zip(fresh, mid.every, mid.texts, strict=True):
        made[at] = x
        texts[at] = text
    every = (
        before.every[:start]
        + tuple(cast("list[Listing | RawListing]", made))
        + before.every[m - end :]
    )
    keep: tuple[Listing, ...]
    if not before.passed_over and not mid.passed_over:
        keep = every  # type: ignore[assignment]  # every listing built
    elif not before.keep and not mid.keep:
        keep = ()  # every listing passed over
    else:
        keep = tuple(x for x in every if type(x) is not RawListing)  # type: ignore[misc]
    phases = before.phases
    if phases or mid.phases:  # where they were is not kept: read again (rare)
        phases = tuple(
            (x.item_id, x.phase)  # type: ignore[misc]  # RawListing: read as text
            for x in every
            if type(x) is RawListing and x.phase
        )
    judges = before.judges
    if mid.judges and mid.judges != judges:
        # the judges of stand-ins gone too: only asked whether they are still the same
        judges = tuple({**dict(judges), **dict(mid.judges)}.items())
    return ScreenedPart(
        keep,
        every,
        phases,
        len(every) - len(keep),
        judges,
        True,
        old[:start] + tuple(cast("list[Raw]", texts)) + old[m - end :],
    )


def _screen_part(
    key: str,
    found: Sequence[bytes | Raw],
    positions: Iterable[int],
    judge_of: Callable[[str], Callable[[RawListing], bool] | None],
    context: dict[str, Any] | None,
    memo: ListingMemo | None,
    set_aside: list[SetAside],
) -> ScreenedPart:
    """One searched name's listings (the JSON texts of those at ``positions``) screened
    one by one (with ``memo``, each text sent before taken from it); the unreadable ones
    added to ``set_aside``."""
    recall = None
    if memo is not None:
        recall = memo.recall
        found = list(map(bytes, found))  # keys for the memo (bytes are kept as they are)
    keep: list[Listing] = []
    every: list[Listing | RawListing] = []
    phases: list[tuple[str, str]] = []
    used: dict[str, object] = {}
    unread = len(set_aside)
    for position, text in zip(positions, found, strict=True):
        held = None if recall is None else recall(text)
        made = None if held is None else held[0]
        if made is not None and type(made) is not RawListing:  # the same text: the same listing
            keep.append(made)  # type: ignore[arg-type]
            every.append(made)
            continue
        stand_in = read_plain(text) if made is None else made
        if stand_in is not None:
            judge = judge_of(stand_in.name)
            # a stand-in this very judge passed over before is passed over again
            if judge is not None and (
                (held is not None and held[1] is judge) or not judge(stand_in)
            ):
                if memo is not None and (held is None or held[1] is not judge):
                    memo.remember(text, stand_in, judge)
                used[stand_in.name] = judge
                if stand_in.phase:
                    phases.append((stand_in.item_id, stand_in.phase))  # type: ignore[arg-type]
                every.append(stand_in)
                continue
        data = text if type(text) is bytes else bytes(text)
        try:  # in JSON mode, as the full decode reads it
            listing = Listing.model_validate_json(data, context=context)
        except ValidationError as exc:
            set_aside.append(_set_aside(exc, data, f"items.{key}.{position}"))
            continue
        if memo is not None:
            memo.remember(data, listing)
        keep.append(listing)
        every.append(listing)
    kept = tuple(keep)
    return ScreenedPart(
        kept,
        kept if len(every) == len(keep) else tuple(every),
        tuple(phases),
        len(every) - len(keep),
        tuple(used.items()),
        len(set_aside) == unread,
        () if memo is None else tuple(map(Raw, found)),  # over the memo's keys
    )


def _set_aside(exc: ValidationError, text: bytes, path: str) -> SetAside:
    """A listing that could not be read, worded as the full path words it."""
    first = exc.errors(include_url=False, include_input=False)[0]
    field = ".".join(str(p) for p in first["loc"] if not isinstance(p, int)) or "(item)"
    try:
        entry = from_json(text)
    except ValueError:
        entry = None
    return SetAside(path, field, first["msg"], _key(entry))


def _build(entry: dict[str, Any], context: dict[str, Any] | None) -> Listing:
    return Listing.model_validate(entry, context=context)


def _unreadable(entry: Any, path: str, context: dict[str, Any] | None) -> SetAside:
    """The set-aside item, worded as the full path words it: validated again from its JSON
    text (rare: only unreadable candidates come here), so messages match the JSON mode."""
    try:
        Listing.model_validate_json(to_json(entry), context=context)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(p) for p in first["loc"] if not isinstance(p, int)) or "(item)"
        return SetAside(path, field, first["msg"], _key(entry))
    # read from JSON but not from the Python values: say so rather than guess a field
    return SetAside(path, "(item)", "could not be read", _key(entry))
