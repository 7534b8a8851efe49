"""Where uploaded files live: the folder MEDIA_ROOT on this machine ("filesystem", the
default), or an S3-compatible bucket ("s3", through django-storages and boto3) that every web
process and worker on every machine reads — the scale-out topology of docs/operations.md.

    STORAGE_BACKEND      filesystem | s3
    S3_BUCKET            the bucket (required with s3)
    S3_ENDPOINT_URL      a server other than AWS (MinIO, Ceph, Garage, ...); empty for AWS
    S3_REGION            the bucket's region; empty for boto3's default
    S3_PREFIX            keys under this prefix (e.g. "agent-console"); empty for the root
    S3_ADDRESSING_STYLE  auto | path | virtual (many self-hosted servers need path)

Credentials come from boto3's usual chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a
profile, or the machine's role; they never appear in these settings.
"""

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

BACKENDS = ("filesystem", "s3")
ADDRESSING_STYLES = ("auto", "path", "virtual")


def _choice(environ: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    value = (environ.get(name) or default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def default_storage_settings(environ: Mapping[str, str], *, memory_limit: int) -> dict[str, Any]:
    """STORAGES["default"] from the environment; `memory_limit` bytes of a downloaded object
    are held in memory, the rest spooled to a temporary file."""
    if _choice(environ, "STORAGE_BACKEND", "filesystem", BACKENDS) == "filesystem":
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    bucket = (environ.get("S3_BUCKET") or "").strip()
    if not bucket:
        raise ImproperlyConfigured("STORAGE_BACKEND=s3 needs S3_BUCKET (the bucket's name)")
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": environ.get("S3_ENDPOINT_URL") or None,
            "region_name": environ.get("S3_REGION") or None,
            "location": (environ.get("S3_PREFIX") or "").strip("/"),
            "addressing_style": _choice(environ, "S3_ADDRESSING_STYLE", "auto", ADDRESSING_STYLES),
            # Objects stay private (no ACL): the console streams a file to a member of its
            # workspace, never a public link. Two uploads of one name never overwrite.
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
            "max_memory_size": memory_limit,
        },
    }
