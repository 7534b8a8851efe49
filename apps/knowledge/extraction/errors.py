"""The two exceptions the extraction library raises.

Both carry text meant for people: the pipeline stores it as a document's ``error_message``.
Never put a path, a stack trace or a library's own message in them.
"""

from __future__ import annotations


class UnsupportedType(Exception):
    """The bytes are not of a kind we extract; ``detected`` names what they really are."""

    def __init__(self, detected: str) -> None:
        self.detected = detected
        super().__init__(f"Unsupported file type: {detected}.")


class ExtractionFailed(Exception):
    """Extraction of a supported kind failed; ``str(exc)`` is a short human message."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


DAMAGED = "The file is damaged and could not be read."
