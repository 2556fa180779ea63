"""The look-ahead check (``snipe lookahead``): does any decision depend on the future?

A backtest is only worth its numbers if each decision at time t used what was known at t.
The engine's own code reads the recording through a market brought up to the clock, but a
plugin (a criterion, a price source, a veto) may read more: a file written later, a cache
filled by an earlier run, the recording itself. This check does not trust any of them:

1. It replays the whole recording once (the *full run*) and keeps, for every search step,
   the step's time and each decision (rule, item, buy at what price or skip, vetoed or
   not), and every purchase written to the ledger.
2. It replays the same recording cut at ``cuts`` times T spread over its span (the records
   after T removed: the stream stops reading there; a copy cut at T is written only if a
   plugin asks for the recording, :func:`replayed_recording`) and compares each cut run
   with the full run: every decision of a step that began before T, and every purchase
   written before T, must be the same. Only the future differs between the two runs, so a
   difference is a decision that depended on the future.

The boundary, honestly: a step at exactly T is left out. The records stamped T are in the
cut, but a record's time is when its answer arrived, and an answer arriving at T is the
one thing a cut at T may hold or not depending on rounding; comparing only the steps that
began before T keeps every compared decision strictly inside the cut. Left out too is
what a purchase sent before T learned after it: its answer arrives ``latency`` later, so
its outcome (bought, refused, gone) may depend on records after T. The decision to buy,
any veto, and the purchase being written are compared; how it ended is not.

Each run loads the rules again with a fresh plugin host, as a separate ``snipe backtest``
would, and the full run goes first: a plugin that keeps what it saw in one run (module
state, a cache file) and uses it in the next shows up too, since the cut runs then see
data from after their cut. Price lists read from files are read as they are now, not as
they were: a list file written after the recording began is reported on its own
(:func:`dated_lists`), since cutting the recording cannot change a file.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._money import format_usd
from .._plugins import PluginHost
from ..hookspecs import hookimpl
from ..rules import Decision, RuleSet
from ._format import Record, read_records, recording_span, write_cut
from ._run import BacktestOptions, run_backtest

__all__ = [
    "Cut",
    "Difference",
    "ListFinding",
    "LookaheadReport",
    "check_lookahead",
    "cut_times",
    "dated_lists",
    "replayed_recording",
    "replaying",
]

SHOWN = 20
"""Differing decisions kept per cut (the first differing step's; later steps are counted)."""

Entry = tuple[str, str, str, str]
"""One decision as compared: ``(rule, item_id, name, verdict)``; the verdict is ``buy at
$X``, ``skip`` or ``buy at $X, vetoed (...)``."""

Step = tuple[float, tuple[Entry, ...]]

MakeHost = Callable[[Sequence[tuple[str, object]]], PluginHost]
"""``(extra plugins) -> a new plugin host`` with them registered."""

LoadRules = Callable[[PluginHost], RuleSet]

OnStep = Callable[[float, list[Decision], dict[tuple[str, str], str], RuleSet, PluginHost], None]
"""``(step time, its decisions, the vetoes among them, the run's rules, its host)``."""


_REPLAYED: ContextVar[Callable[[], Path] | None] = ContextVar("snipe_replayed", default=None)


def replayed_recording() -> Path | None:
    """The recording directory the backtest running here replays, for a plugin that
    reads recorded history (a price source of past prices, say); ``None`` outside
    ``snipe backtest`` and the look-ahead check.

    A run of the look-ahead check cut at T gets a copy of the recording without the
    records after T (written when first asked for): a plugin that reads past the
    replay's clock decides differently there, and is caught."""
    get = _REPLAYED.get()
    return None if get is None else get()


@contextmanager
def replaying(directory: str | os.PathLike[str] | Callable[[], Path]) -> Iterator[None]:
    """Within the block (and the tasks started in it), :func:`replayed_recording` is
    ``directory`` (or what the callable returns, asked when a plugin asks)."""
    get = directory if callable(directory) else (lambda: Path(directory))
    token = _REPLAYED.set(get)
    try:
        yield
    finally:
        _REPLAYED.reset(token)


class _LazyCut:
    """The recording cut at ``until``, written into ``scratch`` when first asked for."""

    def __init__(self, data: Path, scratch: Path, until: float) -> None:
        self.data, self.scratch, self.until = data, scratch, until
        self.path: Path | None = None

    def __call__(self) -> Path:
        if self.path is None:
            self.path = write_cut(self.data, self.scratch, self.until)
        return self.path


def utc(epoch: float) -> str:
    """``2026-01-01T00:02:30Z`` (with tenths when the time has them)."""
    moment = datetime.fromtimestamp(epoch, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    tenths = round((epoch % 1) * 10) % 10
    return f"{text}.{tenths}Z" if tenths else f"{text}Z"


@dataclass(frozen=True)
class Difference:
    """A decision that was not the same when only the future changed."""

    at: float
    """When the step that decided began."""
    rule: str
    item_id: str
    name: str
    full: str
    """What the full run decided (``not decided``: the listing was not judged then)."""
    cut: str
    """What the run cut at the cut's time decided."""
    reasons: tuple[str, ...]
    """The cut run's reasons (what it measured, against which references)."""
    involved: tuple[str, ...]
    """The rule's criteria and price sources, each with the plugin that provides it, and
    the plugins that may veto a purchase."""
    suspects: tuple[str, ...]
    """The plugins involved that are not built in."""
    full_reasons: tuple[str, ...] = ()
    """The full run's reasons, when it bought (those of a skip are not kept)."""

    def describe(self) -> list[str]:
        lines = [
            f"{utc(self.at)} {self.name} (item {self.item_id}), rule {self.rule!r}",
            f"    full run: {self.full}",
        ]
        lines.extend(f"      - {reason}" for reason in self.full_reasons)
        lines.append(f"    cut run:  {self.cut}")
        lines.extend(f"      - {reason}" for reason in self.reasons)
        if self.involved:
            lines.append(f"    involved: {'; '.join(self.involved)}")
        return lines


@dataclass
class Cut:
    """One cut: the recording replayed up to ``at`` and compared with the full run."""

    at: float
    compared: int = 0
    """Decisions (and purchases) compared: those of steps that began before ``at``."""
    differences: list[Difference] = field(default_factory=list)
    """The differing decisions of the first step that differed (at most :data:`SHOWN`)."""
    more: int = 0
    """Differing decisions beyond those shown (later ones may follow from the first)."""
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not self.differences

    @property
    def when(self) -> str:
        """The cut's time, UTC (``2026-01-01T00:02:30Z``)."""
        return utc(self.at)


@dataclass(frozen=True)
class ListFinding:
    """A price list file written after decisions that read it: read as it is now, it
    holds prices not known when those decisions were made."""

    source: str
    path: str
    written_at: float
    first_decision: float
    """The first decision of the full run (its rules read the list)."""

    def describe(self) -> str:
        return (
            f"price list {self.source} ({self.path}) was written at {utc(self.written_at)}, "
            f"after the replay's decisions from {utc(self.first_decision)}: a backtest "
            "reads it as it is now, with prices not known then"
        )


@dataclass
class LookaheadReport:
    """What :func:`check_lookahead` found."""

    start: float
    end: float
    cuts: list[Cut]
    lists: list[ListFinding]
    decisions: int
    """Decisions of the full run."""
    warnings: list[str] = field(default_factory=list)
    full_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def found(self) -> bool:
        """Whether any look-ahead was found (a differing decision or a later list)."""
        return bool(self.lists) or any(not c.clean for c in self.cuts)

    @property
    def suspects(self) -> list[str]:
        names = {s for c in self.cuts for d in c.differences for s in d.suspects}
        return sorted(names)

    def to_json(self) -> dict[str, Any]:
        return {
            "lookahead": self.found,
            "start": utc(self.start),
            "end": utc(self.end),
            "decisions": self.decisions,
            "suspects": self.suspects,
            "cuts": [
                {
                    "at": utc(c.at),
                    "compared": c.compared,
                    "clean": c.clean,
                    "more": c.more,
                    "differences": [asdict(d) | {"at": utc(d.at)} for d in c.differences],
                }
                for c in self.cuts
            ],
            "price_lists": [
                asdict(f) | {"written_at": utc(f.written_at), "first": utc(f.first_decision)}
                for f in self.lists
            ],
            "warnings": self.warnings,
            "seconds": {"full_run": round(self.full_seconds, 3), "total": round(self.seconds, 3)},
        }


def cut_times(start: float, end: float, cuts: int, times: Sequence[float] = ()) -> list[float]:
    """``cuts`` times spread evenly over ``(start, end)``: at ``i / (cuts + 1)`` of the
    span, each moved to the nearest of ``times`` (the steps that decided) when given, so a
    cut falls where there is something to compare; duplicates dropped."""
    span = end - start
    out: list[float] = []
    for i in range(1, cuts + 1):
        at = start + span * i / (cuts + 1)
        if times:
            at = min(times, key=lambda t: (abs(t - at), t))
        if start < at < end + 1e-9 and at not in out:
            out.append(at)
    return sorted(out)


class _Observer:
    """Registered on each run's host: the vetoes of the step being run (a veto never
    reaches the decisions a step returns, nor the ledger)."""

    def __init__(self) -> None:
        self.vetoed: dict[tuple[str, str], str] = {}

    @hookimpl
    def snipe_purchase(self, decision: Decision, outcome: str, detail: str | None) -> None:
        if outcome == "vetoed":
            self.vetoed[decision.rule, decision.item_id] = detail or "vetoed"


def _verdict(decision: Decision, vetoed: dict[tuple[str, str], str]) -> str:
    if not decision.accepted:
        return "skip"
    veto = vetoed.get((decision.rule, decision.item_id))
    text = f"buy at {format_usd(decision.price)}"
    return f"{text}, {veto}" if veto else text


@dataclass
class _Run:
    """What one replay decided, as compared."""

    steps: list[Step]
    purchases: list[tuple[float, str, str, int]]
    """``(written at, item_id, rule, price)`` of every purchase in the ledger."""
    bought: dict[tuple[float, str, str], tuple[str, ...]] = field(default_factory=dict)
    """``(step time, rule, item_id)`` -> the reasons of each decision to buy (the full
    run's: what it measured, shown beside a cut run's different decision)."""


def _records(data: Path, until: float | None) -> Iterator[Record]:
    records = read_records(data)
    if until is None:
        return records
    return itertools.takewhile(lambda r: r.t <= until, records)


async def _replay(
    load: LoadRules,
    make_host: MakeHost,
    data: Path,
    end: float,
    options: BacktestOptions,
    on_step: OnStep,
    until: float | None = None,
    progress: Callable[[float], None] | None = None,
) -> _Run:
    """One replay (cut at ``until``, if given); the steps are kept for the full run only
    (a cut run is compared as it goes)."""
    observer = _Observer()
    host = make_host((("lookahead.observer", observer),))
    ruleset = load(host)
    steps: list[Step] = []
    bought: dict[tuple[float, str, str], tuple[str, ...]] = {}

    def decided(at: float, decisions: list[Decision]) -> None:
        vetoed, observer.vetoed = observer.vetoed, {}
        entries = tuple((d.rule, d.item_id, d.name, _verdict(d, vetoed)) for d in decisions)
        if until is None:
            steps.append((at, entries))
            for d in decisions:
                if d.accepted:
                    bought[at, d.rule, d.item_id] = d.reasons
        on_step(at, decisions, vetoed, ruleset, host)

    run = await run_backtest(
        ruleset,
        _records(data, until),
        host=host,
        end=end if until is None else until,
        options=options,
        on_decisions=decided,
        progress=progress,
    )
    purchases = [(p["created_at"], p["item_id"], p["rule"], p["price"]) for p in run.purchases]
    return _Run(steps, purchases, bought)


def _involved(
    ruleset: RuleSet, host: PluginHost, rule_name: str, *, vetoes: bool
) -> tuple[list[str], set[str]]:
    """What a rule's decisions depend on besides the market, and the plugins not built
    in among their providers: its criteria and price sources, or, when both runs
    accepted (``vetoes``: the difference came after the rule's checks), the plugins
    that may veto a purchase."""
    builtin = {p.name for p in host.plugins() if p.source == "built in"}
    builtin.add("lookahead.observer")
    rule = next((r for r in ruleset.rules if r.name == rule_name), None)
    parts: list[str] = []
    suspects: set[str] = set()

    def by(plugin: str | None) -> str:
        if plugin is None:
            return ""
        if plugin not in builtin:
            suspects.add(plugin)
            return f" (plugin {plugin!r})"
        return " (built in)"

    if vetoes:
        for impl in host.pm.hook.snipe_veto_purchase.get_hookimpls():
            if impl.plugin_name not in builtin:
                parts.append(f"veto{by(impl.plugin_name)}")
        return parts, suspects
    if rule is not None:
        for key in rule.criteria:
            parts.append(f"criterion {key}{by(host.criterion_owner(key))}")
        for source in rule.references:
            if source.startswith("file."):
                parts.append(f"price list {source} (prices.lists.{source[5:]})")
            else:
                parts.append(f"price source {source}{by(host.source_owners.get(source))}")
    return parts, suspects


class _Compare:
    """Compares a cut run's steps with the full run's as the cut run goes (so a
    differing decision's reasons are read at once, from the state it was decided in)."""

    def __init__(self, full: _Run, cut: Cut) -> None:
        self.full = full
        self.cut = cut
        self.index = 0
        self.first_found = False

    def step(
        self,
        at: float,
        decisions: list[Decision],
        vetoed: dict[tuple[str, str], str],
        ruleset: RuleSet,
        host: PluginHost,
    ) -> None:
        if at >= self.cut.at:
            return
        index, self.index = self.index, self.index + 1
        entries = tuple((d.rule, d.item_id, d.name, _verdict(d, vetoed)) for d in decisions)
        self.cut.compared += len(entries)
        full = self.full.steps[index] if index < len(self.full.steps) else None
        if full is not None and full == (at, entries):
            return
        differences = self._differences(at, full, entries, decisions, ruleset, host)
        if self.first_found:
            self.cut.more += len(differences)
            return
        self.first_found = True
        self.cut.differences = differences[:SHOWN]
        self.cut.more += len(differences) - len(self.cut.differences)

    def _differences(
        self,
        at: float,
        full: Step | None,
        entries: tuple[Entry, ...],
        decisions: list[Decision],
        ruleset: RuleSet,
        host: PluginHost,
    ) -> list[Difference]:
        if full is None or full[0] != at:
            when = "no step" if full is None else f"a step at {utc(full[0])}"
            schedule = ("the engine's schedule (built in)",)
            return [Difference(at, "-", "-", "-", when, f"a step at {utc(at)}", (), schedule, ())]
        theirs = {(e[0], e[1]): e for e in full[1]}
        ours = {(e[0], e[1]): (e, d) for e, d in zip(entries, decisions, strict=True)}
        out: list[Difference] = []
        for key in dict.fromkeys([*theirs, *ours]):
            full_entry = theirs.get(key)
            mine = ours.get(key)
            if mine is not None and full_entry == mine[0]:
                continue
            rule, item_id = key
            name = (mine[0] if mine else full_entry or ("", "", "", ""))[2]
            reasons = mine[1].reasons if mine is not None else ()
            verdicts = (full_entry[3] if full_entry else "", mine[0][3] if mine else "")
            vetoes = all(v.startswith("buy") for v in verdicts)
            involved, suspects = _involved(ruleset, host, rule, vetoes=vetoes)
            out.append(
                Difference(
                    at,
                    rule,
                    item_id,
                    name,
                    full_entry[3] if full_entry else "not decided",
                    mine[0][3] if mine else "not decided",
                    tuple(reasons),
                    tuple(involved),
                    tuple(sorted(suspects)),
                    self.full.bought.get((at, rule, item_id), ()),
                )
            )
        return out

    def finish(self, cut_run: _Run) -> None:
        """After the cut run: the full run must not have had more steps before the cut,
        and the purchases written before it must be the same (a veto or a buyer's check
        that read the future shows there even when the decisions agree)."""
        before = self.cut.at
        missing = [s for s in self.full.steps[self.index :] if s[0] < before]
        if missing and not self.first_found:
            self.first_found = True
            at = missing[0][0]
            self.cut.differences.append(
                Difference(
                    at,
                    "-",
                    "-",
                    "-",
                    f"a step at {utc(at)}",
                    "no step",
                    (),
                    ("the engine's schedule (built in)",),
                    (),
                )
            )
        full = [p for p in self.full.purchases if p[0] < before]
        cut = [p for p in cut_run.purchases if p[0] < before]
        self.cut.compared += len(full)
        if full == cut or self.cut.differences:
            return
        theirs, ours = set(full), set(cut)
        for p in sorted(theirs ^ ours):
            written, item_id, rule, price = p
            bought = f"purchase written at {utc(written)} for {format_usd(price)}"
            self.cut.differences.append(
                Difference(
                    written,
                    rule,
                    item_id,
                    "-",
                    bought if p in theirs else "no purchase",
                    bought if p in ours else "no purchase",
                    (),
                    ("the buyer's checks and the plugins' vetoes",),
                    (),
                )
            )


def dated_lists(ruleset: RuleSet, first_decision: float | None) -> list[ListFinding]:
    """The ``file.*`` price lists a rule reads whose file was written after the replay's
    first decision: it is read as it is now (its modification time says when that is)."""
    if first_decision is None:
        return []
    out = []
    for name, settings in sorted(ruleset.prices.lists.items()):
        source = f"file.{name}"
        if settings.path is None or source not in ruleset.sources_used:
            continue
        try:
            written = os.stat(settings.path).st_mtime
        except OSError:
            continue  # the replay itself reports a list it cannot read
        if written > first_decision:
            out.append(ListFinding(source, settings.path, written, first_decision))
    return out


def _undated_lists(ruleset: RuleSet) -> list[str]:
    out = []
    for name, settings in sorted(ruleset.prices.lists.items()):
        if settings.url is not None and f"file.{name}" in ruleset.sources_used:
            out.append(
                f"price list file.{name} ({settings.origin}) is fetched as it is now and "
                "cannot be dated: a backtest may read prices from after the recording"
            )
    return out


async def check_lookahead(
    load: LoadRules,
    data: str | os.PathLike[str],
    *,
    make_host: MakeHost,
    cuts: int = 4,
    options: BacktestOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> LookaheadReport:
    """Replay ``data`` whole and cut at ``cuts`` times; see the module docstring. The
    replays run one after another (one core), each reading the recording as a stream."""
    say = progress or (lambda text: None)
    options = options or BacktestOptions()
    root = Path(data)
    start, end = recording_span(root)
    began = time.perf_counter()
    say(f"full run over {(end - start) / 3600:.2f} h of recording")
    with replaying(root):
        ticker = _ticker("full run", start, end, say)
        full = await _replay(load, make_host, root, end, options, _ignore, progress=ticker)
    full_seconds = time.perf_counter() - began
    times = [at for at, entries in full.steps if entries]
    decisions = sum(len(entries) for _, entries in full.steps)
    say(f"full run: {decisions} decisions in {len(full.steps)} steps, {full_seconds:.1f} s")
    probe = load(make_host(()))
    report = LookaheadReport(
        start,
        end,
        [],
        dated_lists(probe, times[0] if times else None),
        decisions,
        warnings=_undated_lists(probe),
    )
    for number, at in enumerate(cut_times(start, end, cuts, times), start=1):
        cut = Cut(at)
        compare = _Compare(full, cut)
        t0 = time.perf_counter()
        with (
            tempfile.TemporaryDirectory(prefix="snipe-lookahead-") as scratch,
            replaying(_LazyCut(root, Path(scratch) / "cut", at)),
        ):
            ticker = _ticker(f"cut {number}", start, at, say)
            run = await _replay(load, make_host, root, end, options, compare.step, at, ticker)
        compare.finish(run)
        cut.seconds = time.perf_counter() - t0
        report.cuts.append(cut)
        verdict = "same decisions" if cut.clean else "DIFFERENT decisions"
        say(
            f"cut {number} at {utc(at)}: {cut.compared} decisions compared, {verdict} "
            f"({cut.seconds:.1f} s)"
        )
    report.full_seconds = full_seconds
    report.seconds = time.perf_counter() - began
    return report


def _ticker(
    label: str, start: float, stop: float, say: Callable[[str], None], every: float = 5.0
) -> Callable[[float], None]:
    """A replay's progress (its clock), said at most every ``every`` seconds of wall time:
    a short replay says nothing."""
    said = [time.perf_counter()]

    def tick(now: float) -> None:
        wall = time.perf_counter()
        if wall - said[0] >= every and now < stop:
            said[0] = wall
            done = (now - start) / (stop - start) if stop > start else 1.0
            say(f"{label}: {done:.0%} replayed, at {utc(now)}")

    return tick


def _ignore(*_: object) -> None:
    return None
