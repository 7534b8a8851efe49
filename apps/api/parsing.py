"""Strict request bodies: malformed JSON and oversized bodies never reach a view."""

import orjson
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from apps.common.errors import PayloadTooLarge


class StrictJsonParser(BaseParser):
    media_type = "application/json"
    max_bytes_setting = "API_MAX_JSON_BODY_BYTES"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = getattr(settings, self.max_bytes_setting)
        if stream is None:
            raise ParseError("The request body is empty; send a JSON object.")
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise PayloadTooLarge(f"The JSON body is larger than {limit} bytes.")
        if not body.strip():
            raise ParseError("The request body is empty; send a JSON object.")
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"Malformed JSON: {exc}") from None


class IngestJsonParser(StrictJsonParser):
    max_bytes_setting = "API_MAX_INGEST_BODY_BYTES"
