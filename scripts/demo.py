"""Run the memstore demo on the embedded SQLite default: `python scripts/demo.py`."""

import asyncio
import sys

from memstore.demo import run_demo

if __name__ == "__main__":
    asyncio.run(run_demo(sys.argv[1] if len(sys.argv) > 1 else None))
