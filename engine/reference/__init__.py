"""Reference prices: what an item is worth, for ``discount.versus``.

- :class:`MarketBook`: the ``market`` source, learned from snapshot diffs (sans-I/O);
"""

from ._book import BUCKETS, MarketBook, MarketKey, MarketStats, StoredBucket

__all__ = ["BUCKETS", "MarketBook", "MarketKey", "MarketStats", "StoredBucket"]
