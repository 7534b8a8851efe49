"""A check every keyset-paged console list shares: Older, then Newer, lands on the same rows."""

import re
from html import unescape
from urllib.parse import urljoin


def _link(html: str, link_id: str, *, base: str) -> str | None:
    """The link's URL as a browser would follow it from `base` (hrefs may be "?after=...")."""
    match = re.search(rf'id="{link_id}" href="([^"]+)"', html)
    return urljoin(base, unescape(match.group(1))) if match else None


def assert_older_then_newer_retraces(
    client, first_url: str, *, older_id: str, newer_id: str, row_pattern: str
) -> None:
    first = client.get(first_url).content.decode()
    assert _link(first, newer_id, base=first_url) is None  # the newest page has nothing newer
    older = _link(first, older_id, base=first_url)
    assert older is not None, "the list has a second page"
    second = client.get(older).content.decode()
    newer = _link(second, newer_id, base=older)
    assert newer is not None, "a second page links back to newer rows"
    back = client.get(newer).content.decode()
    rows_first = re.findall(row_pattern, first)
    assert rows_first and re.findall(row_pattern, back) == rows_first
    assert set(re.findall(row_pattern, second)).isdisjoint(rows_first)
