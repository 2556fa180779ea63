"""Recording the market and backtesting rules on the recordings.

``snipe record`` writes what the engine receives (prices snapshots as compressed diffs,
search and catalogue answers, the live listing feed's events, with their times) in the
versioned format of
docs/recording-format.md (:class:`RecordWriter`, :func:`read_records`). ``snipe backtest``
replays a recording through the live engine's own code: the client talks to a replay
marketplace (:class:`ReplayTransport` over a :class:`ReplayMarket`, with its fill model),
the ledger is the same code in memory, and time is a :class:`~engine.VirtualClock` moved
step by step (:func:`run_backtest`).
"""

from ._against import run_against
from ._feedrecord import decode_feed, encode_feed, event_time
from ._format import (
    FORMAT_VERSION,
    Record,
    RecordingError,
    RecordWriter,
    read_header,
    read_records,
    recording_span,
    write_cut,
)
from ._lookahead import (
    Cut,
    Difference,
    ListFinding,
    LookaheadReport,
    check_lookahead,
    cut_times,
    dated_lists,
    replayed_recording,
    replaying,
)
from ._market import FillModel, ReplayMarket, ReplayTrade
from ._record import Recorder, RecorderSettings
from ._report import Report, build_report, feed_text, later_label, seen_first_text, write_report
from ._run import BacktestOptions, BacktestRun, run_backtest
from ._sweep import SweepStats, load_sweep, run_sweep, sweep_serially
from ._tee import LiveRecorder, RecordingTransport, attach_recorder
from ._transport import ReplayTransport

__all__ = [
    "FORMAT_VERSION",
    "BacktestOptions",
    "BacktestRun",
    "Cut",
    "Difference",
    "FillModel",
    "ListFinding",
    "LiveRecorder",
    "LookaheadReport",
    "Record",
    "RecordWriter",
    "Recorder",
    "RecorderSettings",
    "RecordingError",
    "RecordingTransport",
    "ReplayMarket",
    "ReplayTrade",
    "ReplayTransport",
    "Report",
    "SweepStats",
    "attach_recorder",
    "build_report",
    "check_lookahead",
    "cut_times",
    "dated_lists",
    "decode_feed",
    "encode_feed",
    "event_time",
    "feed_text",
    "later_label",
    "load_sweep",
    "read_header",
    "read_records",
    "recording_span",
    "replayed_recording",
    "replaying",
    "run_against",
    "run_backtest",
    "run_sweep",
    "seen_first_text",
    "sweep_serially",
    "write_cut",
    "write_report",
]
