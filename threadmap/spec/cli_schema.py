"""The JSON Schema of spec format v1, printed by ``threadmap schema``.

Editors use it for completion and validation of spec files, e.g. with the YAML language
server: put ``# yaml-language-server: $schema=./spec.schema.json`` on the first line of a
spec after ``threadmap schema > spec.schema.json`` (see ``specs/README.md``).  The schema
describes the *structure* only; names, references, thread counts and sizes are checked by
:func:`threadmap.spec.load.load_spec`.
"""

from __future__ import annotations

import json
from typing import Any

from threadmap.spec.schema import Spec

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "urn:threadmap:spec:v1"


def schema_dict() -> dict[str, Any]:
    """The JSON Schema of :class:`threadmap.spec.schema.Spec` (field names as written in
    spec files, e.g. ``copy``), with ``$schema``, ``$id`` and ``title``."""
    body = Spec.model_json_schema(by_alias=True, mode="validation")
    head = {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "threadmap spec v1",
        "description": "A kernel's thread mapping for threadmap verify: element type, threads "
                       "per CTA, named sizes, grid, tensors (CuTe layouts) and stages. "
                       "Documented in specs/README.md.",
    }
    body.pop("title", None)
    body.pop("description", None)
    return {**head, **body}


def schema_json() -> str:
    """:func:`schema_dict` as indented JSON text (with a trailing newline)."""
    return json.dumps(schema_dict(), indent=2) + "\n"
