"""Credits as rollups count them: a run's float credits held exactly as a decimal."""

from decimal import ROUND_HALF_UP, Decimal

CREDIT_PLACES = Decimal("0.000000001")


def credits_decimal(value: float | None) -> Decimal:
    """15 significant digits (what a float holds, and what PostgreSQL's float-to-numeric cast
    keeps), then 9 decimals: float deltas added and subtracted would drift from the rows' sum."""
    if value is None:
        return Decimal(0)
    return Decimal(format(value, ".15g")).quantize(CREDIT_PLACES, rounding=ROUND_HALF_UP)
