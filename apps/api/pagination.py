"""The OpenAPI description of the keyset list parameters (the machinery is apps.common.keyset)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from apps.common.keyset import DEFAULT_LIMIT, MAX_LIMIT

# The `limit` and `after` query parameters of every list operation, for the OpenAPI document.
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        description="Page size, 1 to 100 (default 20); a value outside the range is a 400.",
    ),
    OpenApiParameter(
        "after", OpenApiTypes.STR, description="The previous page's `next_cursor`; opaque."
    ),
]
