"""What django-oauth-toolkit needs from us: the scopes a grant may carry, how a grant names its
Agent, and recognisable token formats. The protocol itself is the toolkit's.

A grant is for one Agent: the consent page adds `agent:<agent id>` to the scopes the member
picked, so the Agent travels with the authorization code, the access token and every refreshed
token without a table of our own beside the toolkit's.
"""

import secrets

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import BaseScopes

from apps.api.scopes import ALL_SCOPES, OWNER_SCOPES

AGENT_SCOPE_PREFIX = "agent:"
ACCESS_TOKEN_PREFIX = "oat_"
REFRESH_TOKEN_PREFIX = "ort_"

# Every permission of contract 5.3 except minting API keys: a key made through a connected
# application would outlive the revocation of its grant.
GRANTABLE_SCOPES: dict[str, str] = {
    name: text for name, text in ALL_SCOPES.items() if name != "api_keys:create"
}
# Asked for when a client names no scope: reading, nothing an owner alone may grant.
DEFAULT_SCOPES = sorted(
    name for name in GRANTABLE_SCOPES if name.endswith(":read") and name not in OWNER_SCOPES
)


def agent_scope(agent_id: str) -> str:
    return f"{AGENT_SCOPE_PREFIX}{agent_id}"


def split_grant_scopes(scopes: list[str] | str) -> tuple[str | None, list[str]]:
    """(the Agent id a grant names or None, its permissions)."""
    items = scopes.split() if isinstance(scopes, str) else list(scopes)
    agents = [
        item[len(AGENT_SCOPE_PREFIX) :] for item in items if item.startswith(AGENT_SCOPE_PREFIX)
    ]
    permissions = sorted(item for item in items if not item.startswith(AGENT_SCOPE_PREFIX))
    return (agents[0] if len(agents) == 1 else None), permissions


def access_token_generator(request) -> str:
    # A prefix /v1 can recognise, to refuse these tokens with a message saying what they are.
    return f"{ACCESS_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def refresh_token_generator(request) -> str:
    return f"{REFRESH_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def is_oauth_token(raw: str) -> bool:
    return raw.startswith((ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX))


class AgentScopes(BaseScopes):
    def get_all_scopes(self):
        return GRANTABLE_SCOPES

    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        return list(GRANTABLE_SCOPES)

    def get_default_scopes(self, application=None, request=None, *args, **kwargs):
        return DEFAULT_SCOPES


class AgentGrantValidator(OAuth2Validator):
    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        """Permissions we know, plus at most one `agent:` scope (the consent page adds it)."""
        agent_id, permissions = split_grant_scopes(scopes)
        agent_items = [item for item in scopes if item.startswith(AGENT_SCOPE_PREFIX)]
        if len(agent_items) > 1 or (agent_items and not agent_id):
            return False
        return super().validate_scopes(client_id, permissions, client, request, *args, **kwargs)
