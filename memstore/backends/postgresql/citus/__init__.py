"""Distributing the schema on a Citus cluster: the plan, the catalog, and applying it.

:func:`citus_plan` only builds text (:mod:`.plan`); :func:`citus_status` reads
the coordinator's catalog (:mod:`.status`); :func:`apply_citus` runs the plan in
one transaction on a database that has the ``citus`` extension, and changes
nothing otherwise (:mod:`.apply`).
"""

from memstore.backends.postgresql.citus.apply import apply_citus
from memstore.backends.postgresql.citus.errors import (
    CitusLayoutConflict,
    CitusNotInstalled,
    CitusNoWorkers,
    SchemaNotDistributable,
)
from memstore.backends.postgresql.citus.plan import (
    COLOCATION_ANCHOR,
    TRIGGERS,
    CitusPlan,
    citus_plan,
)
from memstore.backends.postgresql.citus.status import (
    CitusNode,
    CitusStatus,
    CitusTable,
    citus_status,
)

__all__ = [
    "COLOCATION_ANCHOR",
    "TRIGGERS",
    "CitusLayoutConflict",
    "CitusNoWorkers",
    "CitusNode",
    "CitusNotInstalled",
    "CitusPlan",
    "CitusStatus",
    "CitusTable",
    "SchemaNotDistributable",
    "apply_citus",
    "citus_plan",
    "citus_status",
]
