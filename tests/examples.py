"""How much a test that samples does: the examples a property test draws, the rounds of a race,
the rows of a bulk check, the values of a junk matrix. `make test` (and so CI) gives each test its
full budget; `make test-fast` loads Hypothesis's "fast" profile (registered in
tests/conftest.py), which draws about a third of every budget, as Hypothesis's docs suggest for
the loop run while working. Every such budget in the tests goes through `examples()` or
`share()`."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TypeVar

from hypothesis import settings

FAST_PROFILE_EXAMPLES = 34
_DEFAULT_EXAMPLES = 100  # Hypothesis's own default max_examples

T = TypeVar("T")


def examples(full: int) -> int:
    """`full` under the default profile; scaled as the loaded profile scales the default."""
    return max(1, round(full * settings.default.max_examples / _DEFAULT_EXAMPLES))


def share(values: Iterable[T]) -> list[T]:
    """Every one of `values` under the default profile; under the fast profile a random share
    of them, scaled as `examples()` scales (at least one), drawn anew at each call, so a matrix
    sampled per row still sends every value somewhere in one run. The callers' assertions name
    the value, so a failure seen in a sample is reproduced from its message."""
    values = list(values)
    wanted = min(len(values), examples(len(values)))
    return values if wanted == len(values) else random.sample(values, wanted)
