"""Run the memstore demo on the embedded SQLite default: `python scripts/demo.py [URL]`.

The same as `memstore demo [--url URL]`, errors included (one line, exit 1).
"""

import sys

from memstore.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["demo", *(["--url", sys.argv[1]] if len(sys.argv) > 1 else [])]))
