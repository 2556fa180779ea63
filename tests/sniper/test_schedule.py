import pytest

from engine.sniper._schedule import SearchSchedule


def make(names: str, batch: int = 3) -> SearchSchedule:
    return SearchSchedule(watched=frozenset(names.split()), batch_size=batch)


def test_never_searched_names_come_first_in_name_order() -> None:
    schedule = make("d c b a")
    assert schedule.next_batch() == ("a", "b", "c")


def test_round_robin_covers_every_name_stalest_first() -> None:
    schedule = make("a b c d e")
    seen: list[str] = []
    for t in range(4):
        batch = schedule.next_batch()
        schedule.searched(batch, at=float(t))
        seen.extend(batch)
    assert set(seen[:5]) == {"a", "b", "c", "d", "e"}
    assert seen[3:6] == ["d", "e", "a"]


def test_flagged_names_jump_the_queue_by_promise() -> None:
    schedule = make("a b c d e")
    schedule.searched(["a", "b", "c", "d", "e"], at=0.0)
    schedule.flag("e", promise=10, at=1.0)
    schedule.flag("d", promise=50, at=2.0)
    assert schedule.next_batch()[:2] == ("d", "e")


def test_flag_keeps_the_best_promise_and_first_time() -> None:
    schedule = make("a b c")
    schedule.flag("c", promise=5, at=1.0)
    schedule.flag("c", promise=3, at=2.0)
    schedule.flag("b", promise=5, at=1.5)
    assert schedule.next_batch()[:2] == ("c", "b")


def test_searching_clears_the_flag() -> None:
    schedule = make("a b c", batch=1)
    schedule.flag("c", promise=1, at=0.0)
    assert schedule.next_batch() == ("c",)
    schedule.searched(["c"], at=1.0)
    assert schedule.hot_count == 0
    assert schedule.next_batch() == ("a",)


def test_unwatched_names_are_never_flagged() -> None:
    schedule = make("a")
    schedule.flag("zzz", promise=100, at=0.0)
    assert schedule.hot_count == 0


def test_rewatching_drops_flags_of_names_no_longer_watched() -> None:
    schedule = make("a b")
    schedule.flag("b", promise=1, at=0.0)
    schedule.watch(["a"])
    assert schedule.next_batch() == ("a",)


@pytest.mark.parametrize("size", [0, 51])
def test_batch_size_is_bounded_by_the_interface(size: int) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        SearchSchedule(batch_size=size)


def test_staleness_reports_median_and_worst() -> None:
    schedule = make("a b c")
    schedule.searched(["a"], at=10.0)
    schedule.searched(["b"], at=5.0)
    median, worst = schedule.staleness(20.0)
    assert median == 15.0
    assert worst == float("inf")


def test_a_batch_keeps_to_the_group_of_its_most_urgent_name() -> None:
    schedule = make("a1 a2 b1 b2 a3", batch=3)
    game = {"a1": "csgo", "a2": "csgo", "a3": "csgo", "b1": "rust", "b2": "rust"}.get
    schedule.flag("b2", promise=1, at=0.0)
    assert schedule.next_batch(game) == ("b2", "b1")
    schedule.searched(["b1", "b2"], at=1.0)
    assert schedule.next_batch(game) == ("a1", "a2", "a3")


@pytest.mark.parametrize(
    ("searched", "flagged", "batch"),
    [
        ("", "", ("a", "b", "c")),  # at start: every name once, what the feed cannot tell
        ("a b", "", ("c", "d")),  # the rest of the first sweep, never the searched again
        ("a b c d", "", ()),  # swept: the feed tells the rest
        ("a", "d", ("d",)),  # a flag first, alone
        ("a b c d", "b", ("b",)),
    ],
)
def test_with_the_feed_trusted_only_flagged_or_never_searched_names_are_searched(
    searched: str, flagged: str, batch: tuple[str, ...]
) -> None:
    schedule = make("a b c d")
    schedule.searched(searched.split(), at=0.0)
    for name in flagged.split():
        schedule.flag(name, promise=1, at=1.0)
    assert schedule.next_batch(flagged_only=True) == batch
    assert schedule.never_searched() == {"a", "b", "c", "d"} - set(searched.split())


@pytest.mark.parametrize(
    ("steps", "never"),
    [
        # each step: "watch NAMES" or "search NAMES"; never_searched asked after each
        (["search a", "search b"], ["b c d", "c d"]),
        (["watch a b c d e", "search e"], ["b c d e", "b c d"]),
        (["search a b c d", "watch a b c d e"], ["", "e"]),
        (["search a", "watch c d", "search c"], ["b c d", "c d", "d"]),
        # z searched before it is watched (a search of a name the rules no longer watch)
        (["search z", "watch a b c d z"], ["b c d", "b c d"]),
        (["search a", "search a"], ["b c d", "b c d"]),
    ],
)
def test_never_searched_follows_every_search_and_every_change_of_watched_names(
    steps: list[str], never: list[str]
) -> None:
    # Asked once per feed event (through Engine.next_due), the answer is kept between
    # changes: it must still follow each of them.
    schedule = make("a b c d")
    schedule.searched(["a"], at=0.0)
    for at, (step, expected) in enumerate(zip(steps, never, strict=True), start=1):
        verb, *names = step.split()
        if verb == "watch":
            schedule.watch(names)
        else:
            schedule.searched(names, at=float(at))
        assert schedule.never_searched() == set(expected.split()), step
