"""How many examples a property test draws. `make test` (and so CI) gives each test its full
budget; `make test-fast` loads Hypothesis's "fast" profile (registered in tests/conftest.py),
which draws about a third of every budget, as Hypothesis's docs suggest for the loop run while
working. Every example budget in the tests goes through `examples()`."""

from hypothesis import settings

FAST_PROFILE_EXAMPLES = 34
_DEFAULT_EXAMPLES = 100  # Hypothesis's own default max_examples


def examples(full: int) -> int:
    """`full` under the default profile; scaled as the loaded profile scales the default."""
    return max(1, round(full * settings.default.max_examples / _DEFAULT_EXAMPLES))
