"""Where the repository's files are, for tests that read them (manifests, sources, READMEs)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
CRDS = MANIFESTS / "crds"
