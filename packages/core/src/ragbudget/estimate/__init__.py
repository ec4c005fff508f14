"""The default counter's model: a dependency-free token estimate calibrated on real text.

The facade of the estimate: `estimate_tokens(text, target)` counts `text` as the `target`
encoding's tokenizer would, within the bounds docs/estimator.md measures; `TARGETS` names the
targets and `DEFAULT_TARGET` the one that is safe for both cl100k and o200k (the larger
count). `ragbudget.EstimateCounter` wraps it as a `TokenCounter`; most callers want that.

The model's parts are private modules of this folder (`_model` combines them; `_text` reads
words and classes, `_floor` and `_pieces` bound what the model does not recognise, `_segments`
spells unknown words, `_blocks` prices characters no token holds alone), and its calibrated
tables are one versioned data file, `DATA_FILE` (format `DATA_VERSION`), written by
`tools/estimator/calibrate.py --fit` and read once, on first use.
"""

from __future__ import annotations

from ragbudget.estimate._data import FILE as DATA_FILE
from ragbudget.estimate._data import VERSION as DATA_VERSION
from ragbudget.estimate._model import DEFAULT_TARGET, TARGETS, clear_caches, estimate_tokens

__all__ = [
    "DATA_FILE",
    "DATA_VERSION",
    "DEFAULT_TARGET",
    "TARGETS",
    "clear_caches",
    "estimate_tokens",
]
