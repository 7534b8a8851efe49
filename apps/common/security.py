"""The console's Content-Security-Policy: scripts, styles and everything else from this site
only, no inline handlers or style attributes, no framing.

Images from other hosts load only on a view where an owner asked for them (the view marks the
request with `allow_remote_images`); otherwise even a sanitizer slip could not make an owner's
browser fetch a URL an end user chose. The API (`/v1/`, JSON, and its Swagger page with its own
inline bootstrap) and Django's admin are left out.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_BASE_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "font-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
_EXEMPT_PREFIXES = ("/v1/", "/admin/")


def content_security_policy(
    *, remote_images: bool = False, form_targets: list[str] | None = None
) -> str:
    """The policy; `form_targets` are origins a form on the page may end up at (the OAuth
    consent page redirects to the client's redirect URI after its POST)."""
    policy = dict(_BASE_POLICY)
    if remote_images:
        policy["img-src"] = "'self' data: https: http:"
    if form_targets:
        policy["form-action"] = " ".join(["'self'", *form_targets])
    return "; ".join(f"{name} {value}" for name, value in policy.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.default = content_security_policy()
        self.with_images = content_security_policy(remote_images=True)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(_EXEMPT_PREFIXES) or "Content-Security-Policy" in response:
            return response
        allowed = getattr(request, "allow_remote_images", False)
        response["Content-Security-Policy"] = self.with_images if allowed else self.default
        return response
