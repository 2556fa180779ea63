"""The prices snapshot, built column by column and streamed.

A full market snapshot has about 1.3 million rows. Holding a dict per row would cost
gigabytes, so a :class:`Snapshot` keeps one typed array per column (ids, prices, lock times,
an index into a table of distinct names) and writes CSV, gzip and JSON in chunks straight
from those arrays: memory is a few dozen bytes a row, and serving never builds the whole
file in memory.
"""

from __future__ import annotations

import itertools
import json
import random
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ._catalogue import GAMES, CatalogueItem, build_catalogue, phase_multiplier
from ._market import Listing, phased_name

__all__ = ["Snapshot", "gzip_chunks"]

_ROWS_PER_CHUNK = 8192
_GENERATE_BLOCK = 65_536
_RARE_PHASES = frozenset({"Ruby", "Sapphire", "Black Pearl", "Emerald"})


def _csv_field(text: str) -> bytes:
    if any(c in text for c in ',"\r\n'):
        text = '"' + text.replace('"', '""') + '"'
    return text.encode("utf-8")


@dataclass(slots=True)
class Snapshot:
    """Every listing of the market at ``timestamp`` (epoch seconds), one array per column.
    ``unlock_at``/``send_until`` are 0 on listings that are not trade-locked."""

    timestamp: int
    names: list[str]
    name_index: array[int]
    item_ids: array[int]
    prices: array[int]
    unlock_at: array[int]
    send_until: array[int]
    games: array[int]

    def __len__(self) -> int:
        return len(self.item_ids)

    @classmethod
    def empty(cls, timestamp: int) -> Snapshot:
        return cls(
            timestamp=timestamp,
            names=[],
            name_index=array("I"),
            item_ids=array("q"),
            prices=array("q"),
            unlock_at=array("q"),
            send_until=array("q"),
            games=array("B"),
        )

    @classmethod
    def from_listings(cls, listings: Iterable[Listing], *, timestamp: float) -> Snapshot:
        """The live market's listings as they are at ``timestamp``."""
        snap = cls.empty(int(timestamp))
        index: dict[str, int] = {}
        game_index = {game: i for i, game in enumerate(GAMES)}
        for listing in sorted(listings, key=lambda li: li.item_id):
            name = listing.snapshot_name
            position = index.get(name)
            if position is None:
                position = index[name] = len(snap.names)
                snap.names.append(name)
            locked = listing.locked(timestamp)
            snap.name_index.append(position)
            snap.item_ids.append(listing.item_id)
            snap.prices.append(listing.price)
            snap.unlock_at.append(int(listing.unlock_at or 0) if locked else 0)
            snap.send_until.append(int(listing.send_until or 0) if locked else 0)
            snap.games.append(game_index[listing.game])
        return snap

    @classmethod
    def generate(
        cls,
        rows: int,
        *,
        seed: int,
        timestamp: float,
        catalogue: Sequence[CatalogueItem] | None = None,
        hold_share: float = 0.15,
    ) -> Snapshot:
        """A synthetic full-size snapshot (``rows`` listings) drawn straight into columns,
        without creating a listing object per row: what the benchmark serves."""
        rng = random.Random(f"snapshot:{seed}")
        items = list(catalogue or build_catalogue())
        variants: list[tuple[str, int, int]] = []  # (snapshot name, reference, game)
        weights: list[float] = []
        for item in items:
            for phase in item.phases or (None,):
                name = phased_name(item.name, phase) if phase else item.name
                variants.append(
                    (name, round(item.reference * phase_multiplier(phase)), GAMES.index(item.game))
                )
                rare = phase in _RARE_PHASES
                weights.append(item.popularity / len(item.phases or (None,)) / (10 if rare else 1))
        snap = cls.empty(int(timestamp))
        snap.names = [name for name, _, _ in variants]
        snap.item_ids = array("q", range(40_000_001, 40_000_001 + rows))
        ts = int(timestamp)
        cum_weights = list(itertools.accumulate(weights))
        # Drawn in blocks so that no per-row Python list of the whole size ever exists.
        for first in range(0, rows, _GENERATE_BLOCK):
            count = min(_GENERATE_BLOCK, rows - first)
            picks = rng.choices(range(len(variants)), cum_weights=cum_weights, k=count)
            snap.name_index.extend(picks)
            snap.games.extend(variants[p][2] for p in picks)
            snap.prices.extend(
                max(10, int(variants[p][1] * rng.lognormvariate(0.0, 0.12))) for p in picks
            )
            unlocks = [
                ts + rng.randrange(3600, 7 * 86400) if rng.random() < hold_share else 0
                for _ in range(count)
            ]
            snap.unlock_at.extend(unlocks)
            snap.send_until.extend(u + 43_200 if u else 0 for u in unlocks)
        return snap

    # -- output -----------------------------------------------------------------------

    def _selected(self, *, include_hold: bool, game: str | None) -> Iterator[int]:
        game_code = GAMES.index(game) if game in GAMES else None
        unlock, games = self.unlock_at, self.games
        for row in range(len(self.item_ids)):
            if unlock[row] and not include_hold:
                continue
            if game_code is not None and games[row] != game_code:
                continue
            yield row

    def csv_chunks(self, *, include_hold: bool = False, game: str | None = None) -> Iterator[bytes]:
        """The CSV text in chunks: header ``item_id,name,price,auto,inspect`` (and
        ``unlock_at,send_until`` with ``include_hold``), prices zero-padded to 12 digits as
        the real snapshot does."""
        header = b"item_id,name,price,auto,inspect"
        yield header + (b",unlock_at,send_until\n" if include_hold else b"\n")
        names = [_csv_field(name) for name in self.names]
        ids, prices, name_index = self.item_ids, self.prices, self.name_index
        unlock, send = self.unlock_at, self.send_until
        lines: list[bytes] = []
        for row in self._selected(include_hold=include_hold, game=game):
            if include_hold:
                u = unlock[row]
                lines.append(
                    b"%d,%s,%012d,,,%s,%s\n"
                    % (
                        ids[row],
                        names[name_index[row]],
                        prices[row],
                        b"%d" % u if u else b"",
                        b"%d" % send[row] if u else b"",
                    )
                )
            else:
                lines.append(b"%d,%s,%012d,,\n" % (ids[row], names[name_index[row]], prices[row]))
            if len(lines) >= _ROWS_PER_CHUNK:
                yield b"".join(lines)
                lines.clear()
        if lines:
            yield b"".join(lines)

    def json_chunks(
        self, *, include_hold: bool = False, game: str | None = None, compact: bool = False
    ) -> Iterator[bytes]:
        """``{"success": true, "timestamp": ..., "items": [{item_id, price, name}]}`` in
        chunks. Prices are numeric strings, as the service sends them."""
        yield b'{"success":true,"timestamp":%d,"items":[' % self.timestamp
        names = [json.dumps(name, ensure_ascii=False).encode("utf-8") for name in self.names]
        first = True
        parts: list[bytes] = []
        for row in self._selected(include_hold=include_hold, game=game):
            entry = b'{"item_id":"%d","price":"%d","name":%s' % (
                self.item_ids[row],
                self.prices[row],
                names[self.name_index[row]],
            )
            if include_hold and self.unlock_at[row] and not compact:
                entry += b',"unlock_at":%d,"send_until":%d' % (
                    self.unlock_at[row],
                    self.send_until[row],
                )
            parts.append(entry + b"}" if first else b"," + entry + b"}")
            first = False
            if len(parts) >= _ROWS_PER_CHUNK:
                yield b"".join(parts)
                parts.clear()
        parts.append(b"]}")
        yield b"".join(parts)


def gzip_chunks(chunks: Iterable[bytes], *, level: int = 6) -> Iterator[bytes]:
    """Gzip a stream of chunks as it goes (a complete ``.gz`` member)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()
