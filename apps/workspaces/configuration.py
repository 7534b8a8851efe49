"""An Agent's configuration: its fields, their rules, snapshots and differences.

Pure functions, no I/O: the services validate with them, the revision history stores
`snapshot()` and the console shows `differences()`.
"""

import difflib
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from apps.common.errors import BadRequest
from apps.workspaces.models import Agent, Effort

# The versioned fields, in the order the API and the console show them.
CONFIGURATION_FIELDS = (
    "name",
    "description",
    "instructions",
    "model_id",
    "effort",
    "knowledge_search_enabled",
    "allowed_origins",
)

MAX_NAME = 120
MAX_DESCRIPTION = 1000
MAX_INSTRUCTIONS = 32_000
MAX_MODEL_ID = 128
MAX_ORIGINS = 50
MAX_ORIGIN_LENGTH = 255
EFFORTS = tuple(Effort.values)

# Provider model names: "gpt-4.1-mini", "claude-sonnet-4@20250514", "openai/o4-mini",
# "accounts/fireworks/models/llama-v3p1-8b", "gemini-2.5-flash:latest". No spaces.
MODEL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
_HOST_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def snapshot(agent: Agent) -> dict:
    """Every configuration field of `agent`, as stored in a revision."""
    return {
        "name": agent.name,
        "description": agent.description,
        "instructions": agent.instructions,
        "model_id": agent.model_id,
        "effort": agent.effort,
        "knowledge_search_enabled": agent.knowledge_search_enabled,
        "allowed_origins": list(agent.allowed_origins),
    }


def changed_fields(before: dict, after: dict) -> list[str]:
    return [field for field in CONFIGURATION_FIELDS if before.get(field) != after.get(field)]


def _text(field: str, value, *, max_length: int, required: bool = False) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{field}: must be a string.")
    if "\x00" in value:
        raise BadRequest(f"{field}: must not contain NUL characters.")
    if required and not value.strip():
        raise BadRequest(f"{field}: must not be blank.")
    if len(value) > max_length:
        raise BadRequest(f"{field}: at most {max_length} characters (got {len(value)}).")
    return value.strip() if required else value


def normalize_origin(raw: str) -> str:
    """`scheme://host[:port]` in lower case without a default port, or BadRequest."""
    if not isinstance(raw, str):
        raise BadRequest("allowed_origins: every item must be a string.")
    value = raw.strip()
    if not value or len(value) > MAX_ORIGIN_LENGTH:
        raise BadRequest(
            f"allowed_origins: an origin must have 1 to {MAX_ORIGIN_LENGTH} characters."
        )
    if "*" in value:
        raise BadRequest(
            f"allowed_origins: wildcards are not allowed ({value!r}); list each origin."
        )
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise BadRequest(f"allowed_origins: {value!r} is not an origin.") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        raise BadRequest(
            f"allowed_origins: {value!r} must look like https://example.com "
            "(http or https, a host, an optional port)."
        )
    if parts.username is not None or parts.password is not None:
        raise BadRequest(f"allowed_origins: {value!r} must not contain user information.")
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.endswith(("?", "#")):
        raise BadRequest(
            f"allowed_origins: {value!r} has a path, query or fragment; an origin is only "
            "scheme://host[:port]."
        )
    host = (parts.hostname or "").removesuffix(".")  # one root dot: "example.com."
    if ":" in host:
        try:
            host_part = f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            raise BadRequest(f"allowed_origins: {value!r} has an invalid IPv6 address.") from None
    else:
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise BadRequest(f"allowed_origins: {value!r} has an invalid host name.") from None
        if not host or not all(_HOST_LABEL.fullmatch(label) for label in host.split(".")):
            raise BadRequest(f"allowed_origins: {value!r} has an invalid host name.")
        host_part = host
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host_part}:{port}"
    return f"{parts.scheme}://{host_part}"


def _origins(value) -> list[str]:
    if not isinstance(value, list):
        raise BadRequest("allowed_origins: must be an array of origins.")
    if len(value) > MAX_ORIGINS:
        raise BadRequest(f"allowed_origins: at most {MAX_ORIGINS} origins.")
    normalized: list[str] = []
    for item in value:
        origin = normalize_origin(item)
        if origin not in normalized:
            normalized.append(origin)
    return normalized


def _model_id(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest("model_id: must be a string or null.")
    value = value.strip()
    if not value or len(value) > MAX_MODEL_ID or not MODEL_ID_PATTERN.fullmatch(value):
        raise BadRequest(
            f"model_id: 1 to {MAX_MODEL_ID} characters of letters, digits and . _ : / @ + - "
            "(for example gpt-4.1-mini), or null for the runtime's default."
        )
    return value


def _effort(value) -> str | None:
    if value is None or value in EFFORTS:
        return value
    raise BadRequest(f"effort: must be one of {', '.join(EFFORTS)}, or null.")


def _boolean(field: str, value) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"{field}: must be true or false.")
    return value


def clean(changes: dict) -> dict:
    """Validate and normalize the configuration fields present in `changes`.

    The API's serializers check JSON types first; this is the one place the rules live, so
    the console's forms and the services get the same answers.
    """
    unknown = sorted(set(changes) - set(CONFIGURATION_FIELDS))
    if unknown:
        raise BadRequest(f"{unknown[0]}: not a configuration field.")
    cleaned: dict = {}
    for field, value in changes.items():
        if field == "name":
            cleaned[field] = _text(field, value, max_length=MAX_NAME, required=True)
        elif field == "description":
            cleaned[field] = _text(field, value, max_length=MAX_DESCRIPTION).strip()
        elif field == "instructions":
            cleaned[field] = _text(field, value, max_length=MAX_INSTRUCTIONS)
        elif field == "model_id":
            cleaned[field] = _model_id(value)
        elif field == "effort":
            cleaned[field] = _effort(value)
        elif field == "knowledge_search_enabled":
            cleaned[field] = _boolean(field, value)
        else:
            cleaned[field] = _origins(value)
    return cleaned


# --- differences, for the console's revision history --------------------------------------


@dataclass(frozen=True)
class FieldDifference:
    field: str
    before: object
    after: object
    # For instructions and description: unified-diff lines ("+", "-", " " or "@" first).
    lines: tuple[str, ...] = ()


def differences(before: dict | None, after: dict) -> list[FieldDifference]:
    """What changed from `before` (None for the first revision) to `after`, field by field."""
    result = []
    for field in CONFIGURATION_FIELDS:
        old = before.get(field) if before is not None else None
        new = after.get(field)
        if before is not None and old == new:
            continue
        if before is None and new in (None, "", []):
            continue
        lines: tuple[str, ...] = ()
        if field in ("instructions", "description"):
            lines = tuple(
                line
                for line in difflib.unified_diff(
                    (old or "").splitlines(), (new or "").splitlines(), lineterm="", n=2
                )
                if not line.startswith(("---", "+++"))
            )
        result.append(FieldDifference(field=field, before=old, after=new, lines=lines))
    return result
