"""The query parameters of the /v1 lists: their OpenAPI description and the check that refuses
any other (the paging machinery is apps.common.keyset)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from apps.common.errors import BadRequest
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


def list_operation(**schema):
    """`extend_schema` for a list operation whose query takes exactly the query parameters
    of its `parameters` (which must include PAGE_PARAMETERS): the one table a list declares
    is both its OpenAPI description and what `ApiViewSet.initial` accepts. Any other query
    parameter is a 400 naming it, before the view runs; a filter added to the table is
    documented and accepted in one line. Malformed values are the list's parser's to refuse
    (for example apps.activity.selectors.filters_parse)."""
    parameters = schema.get("parameters") or []
    names = frozenset(
        parameter.name
        for parameter in parameters
        if isinstance(parameter, OpenApiParameter) and parameter.location == OpenApiParameter.QUERY
    )
    assert {"limit", "after"} <= names, "a list takes PAGE_PARAMETERS"

    def decorate(function):
        function.list_query_names = names
        return extend_schema(**schema)(function)

    return decorate


def unknown_query_check(view, query: dict) -> None:
    """Refuse query parameters a list operation (`list_operation`) does not take."""
    action = getattr(view, "action", None)
    names = getattr(getattr(view, action, None), "list_query_names", None) if action else None
    if names is None:
        return
    unknown_query_refuse(query, names)


def unknown_query_refuse(query, allowed, *, what: str = "list") -> None:
    """A 400 naming the query parameters not in `allowed` (at most five shown, each cut at 64
    characters): the one wording every /v1 list and read operation uses."""
    unknown = sorted(name for name in query if name not in allowed)
    if unknown:
        shown = ", ".join(name[:64] for name in unknown[:5])
        raise BadRequest(
            f"Unknown query parameter{'s' if len(unknown) > 1 else ''}: {shown}. This {what} "
            f"takes: {', '.join(sorted(allowed))}."
        )
