"""Reference prices: what an item is worth, for ``discount.versus``.

- :class:`MarketBook`: the ``market.*`` source, learned from snapshot diffs (sans-I/O);
- :class:`ReferenceHub`: one per engine: the book, the ``service.*`` and ``file.*`` price
  lists, the reference file beside the ledger (:class:`PriceStore`), and the quotes of an
  evaluation batch;
- :func:`parse_price_list`: JSON or CSV price lists.
"""

from ._book import BUCKETS, STATISTICS, MarketBook, MarketKey, MarketStats, StoredBucket
from ._hub import ReferenceHub, SourceReading, StoreMode
from ._lists import ListRows, parse_price_list, service_tables
from ._store import PriceList, PriceStore, store_path_for

__all__ = [
    "BUCKETS",
    "STATISTICS",
    "ListRows",
    "MarketBook",
    "MarketKey",
    "MarketStats",
    "PriceList",
    "PriceStore",
    "ReferenceHub",
    "SourceReading",
    "StoreMode",
    "StoredBucket",
    "parse_price_list",
    "service_tables",
    "store_path_for",
]
