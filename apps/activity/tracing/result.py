"""What recording a request's spans came to: how many were recorded, how many wait, how many
were rejected and the first reasons (the OTLP partial success)."""

from dataclasses import dataclass, field


@dataclass
class SpansResult:
    recorded: int = 0
    waiting: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, count: int, message: str) -> None:
        self.rejected += count
        if len(self.errors) < 5:
            self.errors.append(message)

    @property
    def message(self) -> str:
        return " ".join(self.errors)
