"""Announcements of usage thresholds, so other apps can react without usage knowing them.

As in apps.activity.events, the dependency is one-way: webhooks (a `usage.threshold_reached`
delivery per subscribed Agent) registers a listener in its `AppConfig.ready()`; usage imports
no listener. Listeners run inside the transaction that recorded the threshold, so what they
write commits or rolls back with it, and they must not do network I/O.

The event carries the threshold in the contract's shape (apps.usage.rendering), and
`threshold_example` gives a listener that shape without a real threshold (a webhook's test
send): a listener reads this module only, never usage's models or services.
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from apps.common.events import Announcement


@dataclass(frozen=True)
class ThresholdAnnounced:
    workspace_id: str
    # `threshold_to_dict` of the recorded threshold: the event's data as the contract shows it.
    data: dict
    at: datetime


threshold_reached: Announcement[ThresholdAnnounced] = Announcement()
# The names listeners and the threshold service use.
on_threshold_reached = threshold_reached.listen
announce_threshold_reached = threshold_reached.announce


def threshold_example(*, workspace_id: str, now: datetime) -> dict:
    """An example threshold's data, rendered by usage's own `threshold_to_dict`, so it has
    exactly the shape of a real event."""
    # Imported here: apps.usage.rendering reads the services, which announce through here.
    from apps.usage.models import ThresholdReached
    from apps.usage.rendering import threshold_to_dict

    example = ThresholdReached(
        workspace_id=workspace_id,
        month=now.date().replace(day=1),
        percent=80,
        credit_limit=Decimal("1000"),
        credits_used=Decimal("812.5"),
    )
    return threshold_to_dict(example)
