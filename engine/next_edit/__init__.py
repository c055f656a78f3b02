"""Next-edit suggestions: the one home of the feature inside the engine.

    suggest.py   next_edit(): proposals from the user's recent edits, scored by the model
    replay.py    edit patterns read from the history (rename, added argument, substitution)

The JSONL front end is infill_lsp/next_edit_batch.py and the LSP one
infill_lsp/handlers/next_edit.py; the training recipe is lab/training/edits.py and the
benchmark lab/evaluation/next_edit.py.
"""
from engine.next_edit.suggest import (
    HistoryEntry,
    NextEditLimits,
    NextEditResult,
    SuggestedEdit,
    apply_edits,
    history_ids,
    line_starts,
    next_edit,
    normalize_history,
    offset_of,
    position_of,
    window_bounds,
)

__all__ = ["HistoryEntry", "NextEditLimits", "NextEditResult", "SuggestedEdit", "apply_edits", "history_ids", "line_starts", "next_edit", "normalize_history", "offset_of", "position_of", "window_bounds"]
