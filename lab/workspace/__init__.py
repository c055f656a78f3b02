"""Measuring and tuning what the workspace index gives a request (docs/workspace.md)."""
