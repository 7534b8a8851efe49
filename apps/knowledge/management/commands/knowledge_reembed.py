"""Embed again every chunk whose vectors another model or windowing made."""

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from apps.knowledge import embedding_jobs, embeddings


class Command(BaseCommand):
    help = (
        "Re-embed every chunk whose vectors were made by another embedding model or windowing "
        "(run after changing KNOWLEDGE_EMBEDDING_MODEL). Search keeps serving meanwhile: each "
        "chunk keeps its old vectors until its new ones are written. Safe to stop and run again."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=None, help="chunks per transaction (default: 4)"
        )

    def handle(self, *args, **options) -> None:
        if options["batch_size"] is not None and options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        total = embedding_jobs.chunks_to_reembed()
        if not total:
            self.stdout.write(f"Every embedded chunk is up to date ({embeddings.embedding_key()}).")
            return
        self.stdout.write(f"Re-embedding {total:,} chunks with {embeddings.embedding_key()}.")
        started = time.monotonic()
        interactive = sys.stderr.isatty()

        def progress(done: int) -> None:
            elapsed = max(time.monotonic() - started, 1e-6)
            rate = done / elapsed
            left = max(total - done, 0) / rate if rate else 0
            width = 30
            filled = int(width * min(done / total, 1))
            line = (
                f"[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} chunks, "
                f"{rate:.1f}/s, {left:.0f} s left"
            )
            if interactive:
                self.stderr.write("\r" + line, ending="")
            elif done == total or done % 500 < (options["batch_size"] or 4):
                self.stderr.write(line)

        done = embedding_jobs.chunks_reembed(batch_size=options["batch_size"], progress=progress)
        if interactive:
            self.stderr.write("")
        self.stdout.write(f"Re-embedded {done:,} chunks in {time.monotonic() - started:.1f} s.")
