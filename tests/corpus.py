"""Where the shared corpus of real documents is read from (in place, never copied).

Default `../shared/corpus` beside the project; `CORPUS_DIR` overrides it. A test that needs a
missing corpus skips with a reason starting with `SKIP_REASON`, and the run's summary counts them.
"""

import os
from pathlib import Path

CORPUS_DIR = Path(
    os.environ.get("CORPUS_DIR") or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)
SKIP_REASON = "corpus not available"
