"""`python -m infill_lsp ...` = `infill lsp ...` (handy where the console script is not on PATH)."""
import sys

from .server import main

sys.exit(main(sys.argv[1:]))
