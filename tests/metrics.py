"""The service's /metrics page as samples a test compares before and after what it does.

Every process of a test run writes to one metrics folder (as on one production machine), and
other test processes may run at the same time: a test compares its counters before and after,
and asserts only that they grew by what it did or more.
"""

from __future__ import annotations

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

NS = "agent_console_"


def scrape(client: Client | None = None) -> dict[tuple[str, frozenset], float]:
    """{(sample name, its labels): value} of GET /metrics, read by prometheus-client's own
    parser."""
    response = (client or Client()).get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples, name: str, **labels: str) -> float:
    """The sample `name` (without the namespace) with exactly `labels`; 0 when absent."""
    return samples.get((NS + name, frozenset(labels.items())), 0.0)
