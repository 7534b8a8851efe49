from django.http import HttpRequest

from apps.usage.banner import credit_banner


def credit_limit(request: HttpRequest) -> dict:
    """`credit_banner` for the console layout: the workspace's credit-limit warning, if any.
    A page that has fresher figures (the Usage page) passes its own `credit_banner`."""
    workspace = getattr(request, "workspace", None)
    if workspace is None:
        return {}
    return {"credit_banner": credit_banner(workspace=workspace)}
