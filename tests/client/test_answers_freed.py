"""An answer is freed as soon as the client is done with it: no reference cycle keeps a
search answer (hundreds of KB) or a streamed snapshot alive until the cyclic garbage
collector runs (a long backtest held hundreds of them; a bot running for weeks pays the
collections)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import httpx
import pytest
from client_support import BASE_URL, KEY, Recorder

from engine import Clock, SystemClock, Unavailable, VirtualClock
from engine.client import MarketClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Answers:
    """Answers whose objects the test can see die."""

    def __init__(self, make: Callable[[], httpx.Response]) -> None:
        self.make = make
        self.made: list[weakref.ref[httpx.Response]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        response = self.make()
        self.made.append(weakref.ref(response))
        return response

    def alive(self) -> int:
        return sum(ref() is not None for ref in self.made)


SEARCH = {"success": True, "items": {"AWP | Asiimov (Field-Tested)": []}}


@pytest.mark.parametrize("clock", [VirtualClock, SystemClock], ids=["virtual", "system"])
@pytest.mark.usefixtures("no_cyclic_gc")
async def test_a_search_answer_dies_with_its_last_reference(
    recorder: Recorder, clock: Callable[[], Clock]
) -> None:
    answers = Answers(lambda: httpx.Response(200, json=SEARCH))
    recorder.reply(answers)
    async with MarketClient(
        KEY, base_url=BASE_URL, transport=recorder.transport, clock=clock()
    ) as client:
        for _ in range(3):
            await client.search_items_by_name(["AWP | Asiimov (Field-Tested)"])
        assert len(answers.made) == 3
        assert answers.alive() == 0


@pytest.mark.usefixtures("no_cyclic_gc")
async def test_a_refused_answer_dies_with_its_error(recorder: Recorder) -> None:
    answers = Answers(lambda: httpx.Response(503, text="busy"))
    recorder.reply(answers)
    async with MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport) as client:
        for _ in range(2):
            with pytest.raises(Unavailable):
                await client.search_items_by_name(["AWP | Asiimov (Field-Tested)"])
        assert answers.alive() == 0


@pytest.mark.usefixtures("no_cyclic_gc")
async def test_a_streamed_snapshot_dies_once_read(recorder: Recorder) -> None:
    answers = Answers(
        lambda: httpx.Response(200, content=b"id,price\n", headers={"content-type": "text/csv"})
    )
    recorder.reply(answers)
    async with MarketClient(KEY, base_url=BASE_URL, transport=recorder.transport) as client:
        for _ in range(2):
            async with client.snapshot_csv(game="csgo") as stream:
                async for _chunk in stream:
                    pass
            del stream
        assert answers.alive() == 0
