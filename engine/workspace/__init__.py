"""The user's repository as context: an index of the workspace's source lines (index.py),
which files it may hold (files.py), and what a request retrieves from it (retrieve.py)."""
from .files import Limits
from .index import IndexReport, WorkspaceIndex, WorkspaceRefused, forget_index, too_broad
from .retrieve import Draft, WorkspaceContext

__all__ = ["Draft", "IndexReport", "Limits", "WorkspaceContext", "WorkspaceIndex", "WorkspaceRefused", "forget_index", "too_broad"]
