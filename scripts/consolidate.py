"""Run the consolidation job: `python scripts/consolidate.py --once`.

Same as `memstore consolidate`.

Every option of `memstore consolidate --help` applies; exit code 0 on success.
"""

import sys

from memstore.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["consolidate", *sys.argv[1:]]))
