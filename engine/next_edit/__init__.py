"""Next-edit suggestions: the one home of the feature inside the engine.

    suggest.py      next_edit(): proposals from the user's recent edits, scored by the model
    replay.py       edit patterns read from the history (rename, added argument, substitution
                    and rewrite, inserted line, added or deleted token)
    parse_check.py  the document's grammar: no edit that breaks code that parses, and no
                    replay into strings and comments

The JSONL front end is infill_lsp/next_edit_batch.py and the LSP one
infill_lsp/handlers/next_edit.py; the training recipe is lab/training/edits.py and the
benchmarks lab/evaluation/next_edit.py (synthetic tasks) and lab/evaluation/real_edits.py
(real release diffs).
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
