"""Run the memstore demo on the embedded SQLite default: `python scripts/demo.py [URL]`."""

import sys

from memstore.cli.demo_story import main

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
