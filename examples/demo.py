"""`make demo`: the main job, offline. For now, fit() on real standard-library text."""

from __future__ import annotations

import logging
import runpy
from pathlib import Path

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    runpy.run_path(str(Path(__file__).with_name("fit_stdlib.py")), run_name="__main__")
