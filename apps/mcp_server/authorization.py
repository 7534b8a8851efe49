"""The OAuth authorization server's endpoints where ours differ from django-oauth-toolkit's:
dynamic registration with our client rules (RFC 7591), and rate limits on registration and on
the token endpoint. The protocol stays the toolkit's.

Registration is open (MCP clients register themselves), so it is limited per client address,
parsed with the API's nesting limit, and refused unless it asks for what this server offers:
the code grant with PKCE and refresh tokens, and redirect URIs as RFC 8252 allows them.
"""

import orjson
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider import views as oauth_views
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import dynamic_client_registration as dcr

from apps.api.parsing import check_depth
from apps.api.throttling import rate_window_hit
from apps.common.errors import BadRequest
from apps.mcp_server.oauth import (
    GRANT_TYPES,
    client_metadata_problem,
    resource_problem,
    service_origin,
)

# A registration body is a few hundred bytes; anything near this is not a client's metadata.
MAX_REGISTRATION_BYTES = 64 * 1024


def _error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


def _rate_limited(request: HttpRequest, *, what: str, rate_text: str) -> JsonResponse | None:
    """A 429 with Retry-After once the client address used up `rate_text`; None to go on."""
    address = request.META.get("REMOTE_ADDR", "")
    state = rate_window_hit(identifier=f"oauth-{what}:{address}", rate_text=rate_text)
    if state is None or state.allowed:
        return None
    response = _error(
        "rate_limited",
        f"Too many {what} requests from this address; retry in {state.reset_seconds} s.",
        status=429,
    )
    response["Retry-After"] = str(state.reset_seconds)
    return response


def _metadata(request: HttpRequest) -> dict | JsonResponse:
    """The body as client metadata checked against our rules, or the error to answer."""
    body = request.body
    if len(body) > MAX_REGISTRATION_BYTES:
        return _error("invalid_client_metadata", "The registration body is too large.")
    try:
        data = orjson.loads(body)
        check_depth(data)
    except orjson.JSONDecodeError:
        return _error("invalid_client_metadata", "The body must be a JSON object.")
    except BadRequest as exc:
        return _error("invalid_client_metadata", exc.message)
    problem = client_metadata_problem(data)
    if problem:
        redirect = problem.startswith("redirect_uris")
        return _error("invalid_redirect_uri" if redirect else "invalid_client_metadata", problem)
    return data


class ClientRegistrationView(oauth_views.DynamicClientRegistrationView):
    """POST /oauth/register/: the toolkit's registration, after our rules. The toolkit's model
    validation allows only http and https redirect URIs, while RFC 8252 also allows a native
    app's private-use scheme; our rules (`redirect_uri_problem`) check them instead, and the
    model validates its other fields."""

    def post(self, request, *args, **kwargs):
        refused = _rate_limited(
            request, what="registration", rate_text=settings.OAUTH_REGISTRATION_RATE_LIMIT
        )
        if refused is not None:
            return refused
        data = _metadata(request)
        if isinstance(data, JsonResponse):
            return data
        application_model = get_application_model()
        application = application_model(
            user=None, registration_source=application_model.RegistrationSource.DCR
        )
        error = _apply_metadata(application, data)
        if error is not None:
            return error
        raw_secret = (
            application.client_secret if application.client_type == "confidential" else None
        )
        with transaction.atomic():
            application.save()
            raw_registration_token = dcr._issue_registration_token(application, None)
        answer = dcr._application_to_response(application, raw_registration_token, request)
        if raw_secret:
            answer["client_secret"] = raw_secret
        return JsonResponse(answer, status=201)


def _apply_metadata(application, data: dict) -> JsonResponse | None:
    """Set checked client metadata on an application and validate its fields, or the error to
    answer. The fields only, not the model's `clean()`: that allows http and https redirect URIs
    alone, and ours (`redirect_uri_problem`, already applied) allow what RFC 8252 allows."""
    app_kwargs, error = dcr._build_application_kwargs(data)
    if error is not None:
        return error
    for field, value in app_kwargs.items():
        setattr(application, field, value)
    try:
        application.clean_fields()
    except ValidationError as exc:
        return _error("invalid_client_metadata", dcr._validation_error_description(exc))
    return None


class ClientManagementView(oauth_views.DynamicClientRegistrationManagementView):
    """RFC 7592 reads, updates and deletes; an update follows the registration's rules (the
    toolkit's own update would refuse a private-use redirect scheme that registration allows)."""

    def put(self, request, client_id: str, *args, **kwargs):
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        data = _metadata(request)
        if isinstance(data, JsonResponse):
            return data
        application = auth.application
        error = _apply_metadata(application, data)
        if error is not None:
            return error
        token = auth.presented_token
        with transaction.atomic():
            application.save()
            if oauth2_settings.DCR_ROTATE_REGISTRATION_TOKEN_ON_UPDATE:
                token = dcr._issue_registration_token(application, application.user)
                auth.registration_token.delete()
        return JsonResponse(dcr._application_to_response(application, token, request))


# The longest value each OAuth parameter may have (the toolkit's columns, or far past any real
# value); past it, or with a NUL (which PostgreSQL text cannot hold), a request is refused before
# it reaches the toolkit, whose queries would fail with a database error (a 500).
_PARAMETER_MAX_LENGTH = {
    "client_id": 100,
    "code_challenge": 128,
    "code_challenge_method": 10,
    "code_verifier": 128,
    "nonce": 255,
    "response_type": 64,
    "grant_type": 128,
    "token_type_hint": 64,
}
_DEFAULT_MAX_LENGTH = 2048


def oauth_parameter_problem(request: HttpRequest) -> str | None:
    """What is wrong with the request's query or form parameters, or None."""
    sources = [request.GET]
    if request.method == "POST" and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        sources.append(request.POST)
    for source in sources:
        for name, values in source.lists():
            limit = _PARAMETER_MAX_LENGTH.get(name, _DEFAULT_MAX_LENGTH)
            for value in values:
                if "\x00" in value or "\x00" in name:
                    return f"{name[:40]}: a parameter may not hold a NUL character."
                if len(value) > limit:
                    return f"{name[:40]}: longer than {limit} characters."
    return None


def _invalid_request(description: str) -> JsonResponse:
    return _error("invalid_request", description)


class RateLimitedTokenView(oauth_views.TokenView):
    """POST /oauth/token/, limited per client address; parameters checked first, and only the
    two grants this server offers reach the toolkit (RFC 6749 5.2 `unsupported_grant_type`)."""

    def post(self, request, *args, **kwargs):
        refused = _rate_limited(request, what="token", rate_text=settings.OAUTH_TOKEN_RATE_LIMIT)
        if refused is not None:
            return refused
        problem = oauth_parameter_problem(request)
        if problem:
            return _invalid_request(problem)
        if request.POST.get("grant_type") not in GRANT_TYPES:
            return _error(
                "unsupported_grant_type",
                "This server offers the authorization_code and refresh_token grants only.",
            )
        # RFC 8707 2.2: a token for another resource than this service's MCP server is
        # refused, whatever the grant it comes from was for.
        for resource in request.POST.getlist("resource"):
            problem = resource_problem(resource, origin=service_origin(request))
            if problem:
                return _error("invalid_target", problem)
        return super().post(request, *args, **kwargs)


class CheckedRevokeTokenView(oauth_views.RevokeTokenView):
    """POST /oauth/revoke_token/ (RFC 7009), parameters checked first."""

    def post(self, request, *args, **kwargs):
        problem = oauth_parameter_problem(request)
        if problem:
            return _invalid_request(problem)
        return super().post(request, *args, **kwargs)
