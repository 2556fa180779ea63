"""Whole-market snapshot: parse a 1.3-million-row gzip CSV and diff it against the previous.

Targets: parse + diff in at most 2x the time of a bare gzip inflate of the same file,
measured in the same run (issue 20; issue 5 asked for 3x), and at most 300 MB peak memory.

Two realistic snapshots are generated deterministically into a temporary directory (the
second is the first with ~2% of rows changed: removals, new listings, price drops and
raises), then:

  (a) bare: the second file inflated with zlib, 64 KiB pieces, output discarded;
  (b) parse + diff, as the engine does it: ``SnapshotTracker.update_csv`` on the second
      file, read in the same pieces, by a tracker that learnt the first one (the steady
      state of polling: only the rows whose bytes changed are parsed); events and the
      per-name summary included;
  (c) for reference, the whole parse: ``parse_csv_snapshot`` + ``SnapshotTracker.update``
      (every row parsed), timed once;
  (d) the floor of (b)'s design: inflate, split into rows and hash every row, nothing
      else (what (b) cannot avoid as long as it tells changed rows by their hashes).

Peak memory is measured in a fresh subprocess per way that follows the two snapshots as
the engine does (the first learnt, the second diffed; for (c) both parsed snapshots are
held): its peak RSS (VmHWM), and that minus the RSS after imports.

    python bench/bench_snapshot_diff.py [--rows 1300000] [--repeat 3] [--keep DIR]

Last measured (issue 20, 2 cores shared with six other engineers' jobs, load 6-9, CPython
3.11; figures move by +-20% from run to run; two runs): inflate 0.51-0.56 s CPU; (b)
1.49-1.72 s CPU, 2.54-2.88x wall and 2.90-3.06x CPU, target NOT MET (issue 20 measured
2.45x on a quieter machine); (d) the floor alone 2.00-2.08x: split + hash of every row
costs as much as the inflate, so (b) spends 0.3-0.7 s beyond its floor. (c) 2.8-3.1 s
CPU, 6.2-9.9x wall. Peak RSS (b) 264-268 MB, target met ((c) 299-301 MB).

Where (b) goes (cProfile of one update, CPU): inflate ~0.8 s profiled; hashing every row
~0.45 s and ``bytes.split`` into rows ~0.35 s (one bytes object per row); lining the
hashes up ~0.45 s (galloping ``memcmp`` of ``array`` slices: ~26,000 runs of ~50 rows; a
lazy ``compress(map(ne, ...))`` over memoryviews was tried and is slower, 0.35 s vs 0.29 s
for the run search); applying the ~26,000 changed and gone rows ~0.13 s; events and
summary ~0.15 s. Getting to 2x needs fewer objects than one per row: split on a
content-defined separator (a newline followed by a short byte string found at ~1 row in
8, chosen from the first snapshot and kept with its hashes) and hash chunks of rows,
falling back to rows only inside chunks that changed. Measured on 90,000 rows: split + hash
by ~9-row chunks 30 ms vs 63 ms by rows (~20% of chunks hold a change at 2% changed rows).
A market whose row order changes completely costs about what (c) costs, and ~420 MB peak
(every row is then matched through a dict of the previous rows' hashes); the generated
market keeps its order between polls, which is what the speed assumes (wire-notes.md does
not say either way).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from array import array
from pathlib import Path

CHUNK = 1 << 16
TIME_TARGET = 2.0  # issue 20 (issue 5 asked for 3x)
MEMORY_TARGET_MB = 300

_WEAPONS = [
    "AK-47",
    "M4A1-S",
    "M4A4",
    "AWP",
    "Desert_Eagle",
    "Glock-18",
    "USP-S",
    "P250",
    "Five-SeveN",
    "Tec-9",
    "CZ75-Auto",
    "MP9",
    "MAC-10",
    "UMP-45",
    "P90",
    "PP-Bizon",
    "FAMAS",
    "Galil_AR",
    "SG_553",
    "AUG",
    "SSG_08",
    "Nova",
    "XM1014",
    "MAG-7",
    "Sawed-Off",
    "Negev",
    "M249",
    "R8_Revolver",
    "Dual_Berettas",
    "P2000",
    "MP7",
    "MP5-SD",
    "G3SG1",
    "SCAR-20",
]
_KNIVES = [
    "Karambit",
    "Butterfly_Knife",
    "M9_Bayonet",
    "Bayonet",
    "Flip_Knife",
    "Gut_Knife",
    "Huntsman_Knife",
    "Falchion_Knife",
    "Bowie_Knife",
    "Shadow_Daggers",
    "Talon_Knife",
    "Stiletto_Knife",
    "Ursus_Knife",
    "Navaja_Knife",
    "Classic_Knife",
    "Skeleton_Knife",
    "Nomad_Knife",
    "Survival_Knife",
    "Paracord_Knife",
    "Kukri_Knife",
]
_WEARS = ("Factory New", "Minimal Wear", "Field-Tested", "Well-Worn", "Battle-Scarred")
_PHASES = ("Phase 1", "Phase 2", "Phase 3", "Phase 4", "Ruby", "Sapphire", "Black Pearl")


def _names(rnd: random.Random) -> list[str]:
    syllables = [
        "ra",
        "ko",
        "mi",
        "ne",
        "su",
        "ta",
        "lo",
        "ve",
        "xi",
        "da",
        "zo",
        "pe",
        "gu",
        "ni",
        "ha",
        "fu",
        "ly",
        "or",
        "an",
        "el",
    ]
    skins = sorted(
        {
            " ".join(
                "".join(rnd.choice(syllables) for _ in range(rnd.randint(2, 4))).title()
                for _ in range(rnd.randint(1, 2))
            )
            for _ in range(900)
        }
    )
    names = []
    for weapon in _WEAPONS:
        for skin in rnd.sample(skins, 120):
            for wear in _WEARS:
                prefix = "StatTrak™ " if rnd.random() < 0.3 else ""
                names.append(f"{prefix}{weapon.replace('_', ' ')} | {skin} ({wear})")
    for knife in _KNIVES:
        for wear in _WEARS[:3]:
            for phase in _PHASES:
                names.append(f"★ {knife.replace('_', ' ')} | Doppler {phase} ({wear})")
            for skin in rnd.sample(skins, 15):
                names.append(f"★ {knife.replace('_', ' ')} | {skin} ({wear})")
    for i in range(600):
        names.append(f"Sticker | {rnd.choice(skins)} {i} | Paris 2023")
    # A few names with a comma or a quote: those rows are quoted, as CSV requires.
    names += [f"Sticker | Hello, {skin}" for skin in skins[:15]]
    names += [f'Graffiti | "{skin}" (Tiger Orange)' for skin in skins[15:20]]
    return names


def _csv_cell(text: str) -> str:
    if "," in text or '"' in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _row(item_id: int, name: str, price: int) -> str:
    # The other columns belong to the listing, so they are the same in every snapshot.
    owner = 76561197960265728 + item_id * 40503 % 10**9
    inspect = (
        f"steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20"
        f"S{owner}A{item_id}D{(item_id * 6364136223846793005 + 1442695040888963407) % 2**64}"
    )
    auto = "true" if item_id % 3 else "false"
    return f"{item_id},{_csv_cell(name)},{price:012d},{auto},{inspect}\n"


def generate(directory: Path, rows: int, seed: int = 20261122) -> tuple[Path, Path]:
    """Write prev.csv.gz and next.csv.gz; the same arguments always give the same files."""
    rnd = random.Random(seed)
    names = _names(rnd)
    weights = [1.0 / (1 + i % 97) for i in range(len(names))]  # some names are common
    base_ids = rnd.sample(range(30_000_000_000, 39_000_000_000), rows)
    listing_names = rnd.choices(range(len(names)), weights=weights, k=rows)
    prices = [int(rnd.lognormvariate(8.5, 1.6)) + 30 for _ in range(rows)]
    # A dump ordered by name, as a database would produce it.
    order = sorted(range(rows), key=listing_names.__getitem__)
    first = [(base_ids[i], listing_names[i], prices[i]) for i in order]

    second: list[tuple[int, int, int]] = []
    next_id = 40_000_000_000
    for item_id, name, price in first:
        roll = rnd.random()
        if roll < 0.007:
            continue  # sold or delisted
        if roll < 0.010:
            price = max(30, price - rnd.randint(1, max(1, price // 5)))  # price drop
        elif roll < 0.013:
            price += rnd.randint(1, max(1, price // 5))  # price raise
        second.append((item_id, name, price))
        if rnd.random() < 0.007:  # a new listing appears next to similar ones
            next_id += rnd.randint(1, 50)
            second.append((next_id, name, int(price * rnd.uniform(0.8, 1.2)) + 1))

    paths = []
    header = "item_id,name,price,auto,inspect\n"
    for label, table in (("prev", first), ("next", second)):
        path = directory / f"{label}.csv.gz"
        with gzip.open(path, "wt", encoding="utf-8", newline="", compresslevel=6) as out:
            out.write(header)
            for start in range(0, len(table), 10_000):
                out.write(
                    "".join(
                        _row(item_id, names[name], price)
                        for item_id, name, price in table[start : start + 10_000]
                    )
                )
        paths.append(path)
    return paths[0], paths[1]


def _pieces(path: Path):
    with path.open("rb") as handle:
        while piece := handle.read(CHUNK):
            yield piece


def bare_inflate(path: Path) -> tuple[float, float, int]:
    start, start_cpu = time.perf_counter(), time.process_time()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    size = 0
    for piece in _pieces(path):
        size += len(inflater.decompress(piece))
    size += len(inflater.flush())
    return time.perf_counter() - start, time.process_time() - start_cpu, size


def inflate_split_hash(path: Path) -> tuple[float, float]:
    """The floor of the row-hash design: inflate, cut into blocks of whole lines as the
    parser does (1 MiB), split each block into rows and hash every row; nothing else."""
    start, start_cpu = time.perf_counter(), time.process_time()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = b""
    hashes = array("q")
    for piece in _pieces(path):
        pending += inflater.decompress(piece)
        if len(pending) >= 1 << 20:
            cut = pending.rfind(b"\n") + 1
            hashes.extend(map(hash, pending[:cut].split(b"\n")))
            pending = pending[cut:]
    hashes.extend(map(hash, (pending + inflater.flush()).split(b"\n")))
    return time.perf_counter() - start, time.process_time() - start_cpu


def _timed(run):
    start, start_cpu = time.perf_counter(), time.process_time()
    changes = run()
    events = sum(1 for _ in changes)
    names = len(changes.names_cheapest_first())
    return time.perf_counter() - start, time.process_time() - start_cpu, changes, events, names


def csv_way(tracker, path: Path):
    return _timed(lambda: tracker.update_csv(_pieces(path)))


def whole_way(tracker, path: Path):
    from engine.snapshot import parse_csv_snapshot

    return _timed(lambda: tracker.update(parse_csv_snapshot(_pieces(path))))


def _peak_rss_mb() -> float:
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child would report its parent's.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_child(way: str, prev: Path, nxt: Path) -> None:
    from engine.snapshot import SnapshotTracker, parse_csv_snapshot

    baseline = _current_rss_mb()
    tracker = SnapshotTracker()
    if way == "csv":
        tracker.update_csv(_pieces(prev))
        changes = tracker.update_csv(_pieces(nxt))
        kept = None
    else:
        kept = parse_csv_snapshot(_pieces(prev))  # held, as a caller comparing two would
        tracker.update(kept)
        changes = tracker.update(parse_csv_snapshot(_pieces(nxt)))
    sum(1 for _ in changes)
    changes.names_cheapest_first()
    print(f"{baseline:.1f} {_peak_rss_mb():.1f} {len(tracker) + (kept is not None)}")


def _memory(way: str, prev: Path, nxt: Path) -> tuple[float, float]:
    child = subprocess.run(
        [sys.executable, __file__, "--memory-child", way, str(prev), str(nxt)],
        check=True,
        capture_output=True,
        text=True,
    )
    baseline, peak, _ = (float(x) for x in child.stdout.split())
    return baseline, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_300_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best is kept")
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this directory")
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        way, prev, nxt = args.memory_child
        memory_child(way, Path(prev), Path(nxt))
        return 0

    with tempfile.TemporaryDirectory(prefix="snipe-bench-") as tmp:
        directory = args.keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        prev, nxt = directory / "prev.csv.gz", directory / "next.csv.gz"
        if not (prev.exists() and nxt.exists()):
            start = time.perf_counter()
            prev, nxt = generate(directory, args.rows)
            print(f"generated two snapshots in {time.perf_counter() - start:.1f} s")
        from engine.snapshot import SnapshotTracker

        tracker = SnapshotTracker()
        tracker.update_csv(_pieces(prev))  # the steady state: the tracker knows the last market
        runs, bares, floors = [], [], []
        for n in range(args.repeat):  # interleaved, so that all see the same load
            if n:
                tracker.update_csv(_pieces(prev))  # back to the first market, untimed
            bares.append(bare_inflate(nxt))
            runs.append(csv_way(tracker, nxt))
            floors.append(inflate_split_hash(nxt))
        bare_s, bare_cpu, unpacked = min(bares)
        total_s, total_cpu, changes, events, names = min(runs, key=lambda run: run[0])
        best_cpu = min(run[1] for run in runs)
        print(
            f"snapshot: {args.rows:,} rows (first file), {nxt.stat().st_size / 1e6:.1f} MB gzip, "
            f"{unpacked / 1e6:.1f} MB unpacked"
        )
        reference = SnapshotTracker()
        reference.update_csv(_pieces(prev))
        whole_s, whole_cpu, whole, _, _ = whole_way(reference, nxt)
        assert list(whole) == list(changes), "the two ways disagree"
        ratio = total_s / bare_s
        floor_s, floor_cpu = min(floors)
        print(f"(a) bare gzip inflate:  {bare_s:6.2f} s  (CPU {bare_cpu:.2f} s)")
        print(
            f"(b) parse + diff:       {total_s:6.2f} s  (CPU {total_cpu:.2f} s; best CPU of "
            f"{args.repeat}: {best_cpu:.2f} s)  update_csv, changed rows parsed only"
        )
        print(f"    {changes!r}; {events} events over {names} names")
        print(
            f"(c) whole parse + diff: {whole_s:6.2f} s  (CPU {whole_cpu:.2f} s)  "
            f"parse_csv_snapshot + update, for reference: {whole_s / bare_s:.2f}x"
        )
        print(
            f"(d) inflate + split + hash every row: {floor_s:6.2f} s  (CPU {floor_cpu:.2f} s)  "
            f"the floor of (b)'s design: {floor_s / bare_s:.2f}x; (b) spends "
            f"{total_s - floor_s:.2f} s beyond it"
        )
        print(
            f"ratio (b)/(a): {ratio:.2f}x wall, {total_cpu / bare_cpu:.2f}x CPU "
            f"(best CPU: {best_cpu / min(b[1] for b in bares):.2f}x)  "
            f"target <= {TIME_TARGET}x  {'MET' if ratio <= TIME_TARGET else 'NOT MET'}"
        )
        for way, label in (("csv", "(b) update_csv"), ("whole", "(c) whole parse")):
            baseline, peak = _memory(way, prev, nxt)
            print(
                f"peak RSS, {label} (fresh process: learn the first, diff the second): "
                f"{peak:.0f} MB ({peak - baseline:.0f} MB above the {baseline:.0f} MB after "
                f"imports)  target <= {MEMORY_TARGET_MB} MB  "
                f"{'MET' if peak <= MEMORY_TARGET_MB else 'NOT MET'}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
