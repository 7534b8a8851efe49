"""The OpenAPI document as drf-spectacular generates it, made once per test process: the
matrices that walk it at collection (every write, every scope) would each spend a second or
more of CPU making it again, in every xdist process. Read it; never change it."""

from functools import cache


@cache
def generated_document() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)
