"""The base every /v1 view stands on, and the platform's own operation: the JSON 404."""

from collections.abc import Callable
from typing import Any, cast

import orjson
from django.db import connection
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.response import Response
from rest_framework.viewsets import ViewSet

from apps.api.credentials import Credential
from apps.api.pagination import unknown_query_check
from apps.common.errors import BadRequest, NotFound
from apps.common.keyset import Keyset, page_request, paginate
from apps.common.listing import ListQuery, compiled_list
from apps.common.shapes import Shape


class ApiViewSet(ViewSet):
    """The base every /v1 view stands on (views of an Agent: apps.workspaces.viewsets).

    `required_scopes` maps each action to the permission it needs; `credential_kinds` says
    which kinds of credential (apps.api.credentials) the view serves, others are 403.
    """

    required_scopes: dict[str, str | None] = {}
    credential_kinds: tuple[str, ...] = ("api_key",)

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        # No stored id contains NUL (PostgreSQL text cannot hold it): such a path names
        # nothing, and must not reach the database as a query.
        if any("\x00" in value for value in kwargs.values() if isinstance(value, str)):
            raise NotFound()
        # A parameter given twice has no meaning here (none is a list): refuse it rather than
        # silently take one of the values.
        for name, values in request._request.GET.lists():
            if len(values) > 1:
                raise BadRequest(f"{name}: given {len(values)} times; send it once.")
        # A list refuses query parameters it does not take (apps.api.pagination.list_operation):
        # a misspelt filter would otherwise silently answer every row.
        unknown_query_check(self, request._request.GET)

    def check_permissions(self, request) -> None:
        # The rate limit counts before the scope check (DRF counts after it): a request the key
        # may not make still costs a request, and its 403 carries the RateLimit headers like
        # every other answer to an authenticated request.
        super().check_throttles(request)
        super().check_permissions(request)

    def check_throttles(self, request) -> None:
        """Done first thing in `check_permissions`."""

    @property
    def credential(self) -> Credential:
        return cast(Credential, self.request.auth)

    def paginated(self, queryset, *, keyset: Keyset, render: Callable[[Any], dict]) -> HttpResponse:
        """One keyset page of `queryset` in the list envelope, `limit`/`after` from the query."""
        page = paginate(queryset, keyset=keyset, page=page_request(self.request.query_params))
        return json_response(page.envelope(render))

    def paginated_shape(self, query: ListQuery, *, keyset: Keyset, shape: Shape) -> HttpResponse:
        """`paginated` for a contract object: on PostgreSQL through SQL compiled once per shape
        of query, its rows straight into the output (apps.common.listing), elsewhere through
        the ORM and the models."""
        wanted = page_request(self.request.query_params)
        if connection.vendor != "postgresql":
            page = paginate(query.queryset(), keyset=keyset, page=wanted)
            query.check_empty_page(page.rows)
            return json_response(page.envelope(shape.from_model))
        page = compiled_list(query.model, shape, keyset).page(query, wanted)
        query.check_empty_page(page.rows)
        return json_response(page.envelope(shape.from_row))


def require_no_body_fields(request) -> None:
    """For operations that take no body: none, or an empty JSON object. Anything else is 400,
    as an unknown field is for every strict body."""
    raw = request._request
    if not raw.body.strip():
        return
    if raw.content_type == "multipart/form-data" and not raw.POST and not raw.FILES:
        return  # an empty form: what some clients send for "no body"
    data = request.data
    if not isinstance(data, dict):
        raise BadRequest("This operation takes no body; send none, or {}.")
    if data:
        raise BadRequest(
            f"This operation takes no body fields; unknown: {', '.join(sorted(map(str, data)))}."
        )


def json_response(data, *, status: int = 200) -> HttpResponse:
    """Plain-function output path: no serializer, straight to orjson."""
    return HttpResponse(orjson.dumps(data), status=status, content_type="application/json")


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
@authentication_classes([])
@permission_classes([])
def unknown_path(request, rest: str = "") -> Response:
    raise NotFound(f"No operation at {request.path}.")
