import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

REFERENCE = ROOT / "xlcalc" / "data" / "reference"  # published records, copied into the repo with their sources


def published_records() -> dict:
    """The published records (xlcalc/data/reference/published.json) by id."""
    import json

    return {r["id"]: r for r in json.loads((REFERENCE / "published.json").read_text(encoding="utf-8"))}
