"""Fault injection: the nasty ways the real service fails, on purpose.

A scenario (a YAML or JSON file, or :meth:`FaultPlan.add` from a test) lists faults per
endpoint. Each fault fires for the next ``count`` matching calls, or with ``probability`` on
every matching call (drawn from the sandbox's seeded random source, so a run repeats).

Kinds:

``latency``
    wait ``seconds`` of market time, then answer normally.
``timeout_after_commit``
    do the work (a purchase is committed, a buy order created and filled from what the
    market offers), then never answer in time: the classic double-buy trap.
``drop_connection``
    do the work when ``commit`` is true (the default for purchases), then break the
    connection without a complete answer.
``http_error``
    answer ``status`` (default 503) with an HTML error page.
``html_200``
    answer 200 with an HTML challenge page instead of JSON.
``rate_limit``
    answer 429 as the search limit does (``msBeforeNext``), a "429 storm" with ``count``.
``system_busy``
    answer 200 ``{"success": false, "msg": "System busy"}``.
``hidden_commit``
    (purchases) do the work, lose the answer like ``timeout_after_commit``, and keep the
    trade out of check-many-project-id *and* my-history for ``seconds`` of market time: a
    purchase that turns up long after a client has released it as not bought.
``late_accept``
    (purchases) do the work and answer; the trade then stays at status 4 ("sent") until
    ``seconds`` after its ``send_until``, and completes: an acceptance after the deadline.
``refuse_after_commit``
    do the work (for a bulk purchase only the first ``portion`` of its items), then answer
    200 ``{"success": false, "msg": msg}`` as if nothing had been done.
``empty_success``
    answer 200 ``{"success": true}`` with nothing else (check-many-project-id without
    ``trades``: it says nothing about any id).

A scenario may also set ``project_id_delay`` (seconds before a purchase shows in
check-many-project-id: a lagging service) and ``history_delay`` (the same for my-history).

``commit`` (``http_error``, ``html_200``, ``drop_connection``) decides whether the request
is carried out before the failure is shown. ``timeout_after_commit`` always commits.

The live listing feed (``/socket.io/``) has its own section, ``feed:``, with its heartbeat
(``ping_interval``, ``ping_timeout``, market seconds) and its ``faults``. A feed fault has
no endpoint; it is drawn once per event the feed sends (over all connections: ``after: 100,
count: 1`` fires on the 101st event), except ``relist``, drawn once per listing that leaves
the market::

    feed:
      ping_interval: 25
      ping_timeout: 20
      faults:
        - {kind: stall, after: 200, count: 1, seconds: 120}
        - {kind: duplicate, probability: 0.02}

(or one at a time on a running sandbox: ``POST /_sandbox/feed-faults`` with the fields of
one entry as a JSON body; ``DELETE`` disarms them all.)

Kinds:

``stall``
    before this event, send nothing at all (no events, no pings, no answers) for
    ``seconds`` (default 120) while the connection stays open.
``disconnect``
    end the connection at once instead of sending this event: no Engine.IO or Socket.IO
    goodbye (the server closes the websocket with 1011, as a crashing server does).
``duplicate``
    send this event twice.
``out_of_order``
    hold this event back and send it after the next one.
``burst``
    after this event, send ``rate`` (default 3000) events per second for ``seconds``
    (default 1): ``update`` events of the subscribed games' listings as they are.
``malformed``
    send a malformed frame before this event (truncated JSON, a payload of the wrong
    shape or types, an unknown packet type), in turn.
``relist``
    a listing that left the market (not one that was bought) comes back ``seconds``
    later (default 30) under the same ``item_id`` at a price within 10% of its last,
    as a ``new`` event and in every answer: a removal is not a sale.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .._errors import ConfigError

__all__ = [
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FeedFault",
    "FeedFaultKind",
    "FeedFaultPlan",
    "FeedScenario",
    "Scenario",
    "load_scenario",
]

FaultKind = Literal[
    "latency",
    "timeout_after_commit",
    "drop_connection",
    "http_error",
    "html_200",
    "rate_limit",
    "system_busy",
    "hidden_commit",
    "late_accept",
    "refuse_after_commit",
    "empty_success",
]

_ALWAYS_COMMIT = frozenset({"timeout_after_commit", "hidden_commit", "late_accept"})


class Fault(BaseModel):
    """One fault. ``endpoint`` is ``"METHOD /path"``, a bare ``/path`` (any method) or
    ``"*"`` (every interface endpoint)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str
    kind: FaultKind
    count: int | None = Field(default=None, ge=1)
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    after: int = Field(default=0, ge=0, description="let this many matching calls pass first")
    seconds: float | None = Field(
        default=None, ge=0.0, description="latency (default 2), or how long a timeout hangs"
    )
    status: int = Field(default=503, ge=500, le=599)
    retry_ms: int = Field(default=5000, ge=0, description="msBeforeNext of a rate_limit fault")
    commit: bool | None = None
    msg: str = Field(default="System busy", description="msg of a refuse_after_commit answer")
    portion: float = Field(
        default=1.0, gt=0.0, le=1.0, description="share of a bulk purchase carried out"
    )

    @model_validator(mode="after")
    def _exactly_one_trigger(self) -> Fault:
        if (self.count is None) == (self.probability is None):
            raise ValueError("give exactly one of 'count' or 'probability'")
        if not (self.endpoint == "*" or self.endpoint.startswith("/") or " /" in self.endpoint):
            raise ValueError("endpoint must be '*', '/path' or 'METHOD /path'")
        return self

    def matches(self, method: str, path: str) -> bool:
        if self.endpoint == "*":
            return True
        if self.endpoint.startswith("/"):
            return self.endpoint == path
        want_method, _, want_path = self.endpoint.partition(" ")
        return want_method.upper() == method and want_path == path

    @property
    def delay(self) -> float:
        """Market seconds to wait: a latency (default 2 s) or a timeout's hang (1 h)."""
        if self.seconds is not None:
            return self.seconds
        return 3600.0 if self.kind in ("timeout_after_commit", "hidden_commit") else 2.0

    def commits(self, purchase: bool) -> bool:
        """Is the request carried out before the failure shows? A dropped connection on a
        purchase endpoint commits unless told otherwise; an error page does not."""
        if self.kind in _ALWAYS_COMMIT or self.kind == "refuse_after_commit":
            return True
        if self.kind in ("rate_limit", "system_busy", "latency", "empty_success"):
            return False
        if self.commit is not None:
            return self.commit
        return purchase and self.kind == "drop_connection"


FeedFaultKind = Literal[
    "stall", "disconnect", "duplicate", "out_of_order", "burst", "malformed", "relist"
]

_FEED_DEFAULT_SECONDS = {"stall": 120.0, "burst": 1.0, "relist": 30.0}


class FeedFault(BaseModel):
    """One fault of the live listing feed (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FeedFaultKind
    count: int | None = Field(default=None, ge=1)
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    after: int = Field(default=0, ge=0, description="let this many events pass first")
    seconds: float | None = Field(
        default=None, ge=0.0, description="a stall's length, a burst's, a relist's delay"
    )
    rate: int = Field(default=3000, ge=1, le=100_000, description="a burst's events per second")

    @model_validator(mode="after")
    def _exactly_one_trigger(self) -> FeedFault:
        if (self.count is None) == (self.probability is None):
            raise ValueError("give exactly one of 'count' or 'probability'")
        return self

    @property
    def delay(self) -> float:
        """Market seconds: how long a stall or a burst lasts, or when a relist comes."""
        if self.seconds is not None:
            return self.seconds
        return _FEED_DEFAULT_SECONDS.get(self.kind, 0.0)


class FeedScenario(BaseModel):
    """The ``feed:`` section of a scenario file."""

    model_config = ConfigDict(extra="forbid")

    ping_interval: float | None = Field(default=None, gt=0.0)
    ping_timeout: float | None = Field(default=None, gt=0.0)
    faults: list[FeedFault] = Field(default_factory=list)


class Scenario(BaseModel):
    """A scenario file: ``faults:``, ``feed:`` and optional market settings."""

    model_config = ConfigDict(extra="forbid")

    faults: list[Fault] = Field(default_factory=list)
    feed: FeedScenario = Field(default_factory=FeedScenario)
    busy_probability: float = Field(default=0.0, ge=0.0, le=1.0)
    project_id_delay: float | None = Field(default=None, ge=0.0)
    history_delay: float | None = Field(default=None, ge=0.0)
    jitter_ms: tuple[float, float] | None = Field(
        default=None, description="network delay each way, [low, high] milliseconds"
    )

    @model_validator(mode="after")
    def _ordered_jitter(self) -> Scenario:
        if self.jitter_ms is not None and not 0 <= self.jitter_ms[0] <= self.jitter_ms[1]:
            raise ValueError("jitter_ms is [low, high] with 0 <= low <= high")
        return self


@dataclass
class _Armed:
    fault: Fault | FeedFault
    seen: int = 0
    fired: int = 0

    def spent(self) -> bool:
        return self.fault.count is not None and self.fired >= self.fault.count


class FaultPlan:
    """The faults in force. Thread-free and sans-I/O: :meth:`draw` decides, the HTTP layer
    acts."""

    def __init__(self, faults: list[Fault] | None = None, *, seed: int = 0) -> None:
        self._armed: list[_Armed] = []
        self._rng = random.Random(f"faults:{seed}")
        for fault in faults or ():
            self.add(fault)

    def add(self, fault: Fault | None = None, /, **fields: Any) -> Fault:
        """Arm a fault, given as a :class:`Fault` or as its fields
        (``plan.add(endpoint="GET /v1/buy-one-p2p", kind="timeout_after_commit", count=1)``).
        """
        made = fault if fault is not None else Fault(**fields)
        self._armed.append(_Armed(made))
        return made

    def clear(self) -> None:
        self._armed.clear()

    def draw(self, method: str, path: str) -> Fault | None:
        """The fault for this call, if one fires. Every armed fault that matches sees the
        call, so ``after`` and ``count`` mean what they say even when faults overlap."""
        chosen: Fault | None = None
        for armed in self._armed:
            fault = armed.fault
            assert isinstance(fault, Fault)
            if armed.spent() or not fault.matches(method, path):
                continue
            armed.seen += 1
            if armed.seen <= fault.after or chosen is not None:
                continue
            probability = fault.probability
            if probability is not None and self._rng.random() >= probability:
                continue
            armed.fired += 1
            chosen = fault
        self._armed = [a for a in self._armed if not a.spent()]
        return chosen

    def __len__(self) -> int:
        return len(self._armed)


class FeedFaultPlan:
    """The feed's faults in force; sans-I/O like :class:`FaultPlan`: the feed asks, acts."""

    def __init__(self, faults: list[FeedFault] | None = None, *, seed: int = 0) -> None:
        self._armed: list[_Armed] = []
        self._rng = random.Random(f"feed-faults:{seed}")
        for fault in faults or ():
            self.add(fault)

    def add(self, fault: FeedFault | None = None, /, **fields: Any) -> FeedFault:
        made = fault if fault is not None else FeedFault(**fields)
        self._armed.append(_Armed(made))
        return made

    def clear(self) -> None:
        self._armed.clear()

    def __len__(self) -> int:
        return len(self._armed)

    def draw(self, kinds: frozenset[str]) -> list[FeedFault]:
        """The faults of ``kinds`` that fire for this event: each armed one sees it, and
        several kinds may fire together (a duplicated event that is also held back)."""
        fired: list[FeedFault] = []
        for armed in self._armed:
            fault = armed.fault
            assert isinstance(fault, FeedFault)
            if armed.spent() or fault.kind not in kinds:
                continue
            armed.seen += 1
            if armed.seen <= fault.after or any(f.kind == fault.kind for f in fired):
                continue
            if fault.probability is not None and self._rng.random() >= fault.probability:
                continue
            armed.fired += 1
            fired.append(fault)
        self._armed = [a for a in self._armed if not a.spent()]
        return fired

    def relist(self, price: int, at: float) -> tuple[float, int, float] | None:
        """For a listing that left at ``at`` for ``price``: (back at, new price, leaves
        again at), if a ``relist`` fault fires."""
        fired = self.draw(frozenset({"relist"}))
        if not fired:
            return None
        back = at + fired[0].delay
        new_price = max(10, round(price * self._rng.uniform(0.9, 1.1)))
        return back, new_price, back + self._rng.expovariate(1 / 1800.0)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (YAML or JSON). Errors name ``file:line:column``
    and the field."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read scenario: {exc.strerror}", location=str(path)) from None
    yaml = YAML(typ="rt")  # round-trip keeps line numbers; it builds only plain data
    try:
        data = yaml.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or exc
        raise ConfigError(f"not valid YAML/JSON: {problem}", location=where) from None
    if data is None:
        data = {}
    try:
        return Scenario.model_validate(json.loads(json.dumps(data)))
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        raise ConfigError(
            error["msg"], location=_location(path, data, loc), field=".".join(map(str, loc))
        ) from None


def _location(path: Path, data: Any, loc: tuple[Any, ...]) -> str:
    """``file:line:column`` of the deepest node of ``loc`` that exists in the document."""
    line, column = 0, 0
    node = data
    for key in loc:
        lc = getattr(node, "lc", None)
        try:
            if lc is not None:
                line, column = lc.key(key) if isinstance(key, str) else lc.item(key)
            node = node[key]
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return f"{path}:{line + 1}:{column + 1}"
