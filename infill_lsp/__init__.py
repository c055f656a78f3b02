"""Front ends that speak to editors: the language server (`infill lsp`, see server.py)."""
