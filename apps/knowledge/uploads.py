"""Streaming size limit for knowledge uploads.

Django parses multipart bodies through upload handlers while it reads them. This handler
refuses a body whose declared length is already too large before reading a byte of it, and
otherwise counts the file's bytes as they arrive and stops at the first chunk past the limit,
so a 50 MB body is never read, let alone held in memory. Files go to a temporary file on disk
(TemporaryFileUploadHandler), which storage then moves into place.
"""

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from apps.common.errors import PayloadTooLarge

# Room for the multipart framing and the small `name` field around the file itself.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


def too_large_message(limit: int) -> str:
    size = f"{limit / (1024 * 1024):g} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return f"The file is larger than the {size} limit."


class LimitedUploadHandler(TemporaryFileUploadHandler):
    def __init__(self, request=None, *, max_bytes: int | None = None) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes or settings.KNOWLEDGE_MAX_UPLOAD_BYTES

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.max_bytes + MULTIPART_OVERHEAD_BYTES:
            raise PayloadTooLarge(too_large_message(self.max_bytes))
        return None

    def receive_data_chunk(self, raw_data, start):
        if start + len(raw_data) > self.max_bytes:
            if self.file is not None:
                self.file.close()  # the temporary file is deleted on close
            raise PayloadTooLarge(too_large_message(self.max_bytes))
        return super().receive_data_chunk(raw_data, start)


def limit_uploads(request) -> None:
    """Install the limited handler on a Django HttpRequest before its body is parsed."""
    request.upload_handlers = [LimitedUploadHandler(request)]
