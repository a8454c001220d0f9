"""The programs of a device run: per spec and size environment its probe, its behaviour
kernels and the verifier's predictions, and the one translation unit that holds them all.

The profiled child processes (:mod:`threadmap.gpu.execute`) rebuild the same items from the
vector legality of the parent's verifier run, so their source, and so the cached module, is
the parent's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from threadmap.api import load, spec_files, verify_spec
from threadmap.errors import SpecError, ThreadmapError
from threadmap.gpu.behave import BehaviourProgram, behaviour_program
from threadmap.gpu.probe import NotProbed, ProbeProgram, probe_program, translation_unit
from threadmap.model import KernelModel, build_model
from threadmap.report.model import SpecErrorEntry, SpecRun


def spec_models(path: Path, sizes: Mapping[str, int] | None) -> list[KernelModel]:
    """Every size environment of the spec at ``path`` (``sizes`` override its own), bound."""
    loaded = load(path, sizes)
    return [build_model(loaded, env) for env in loaded.envs]


@dataclass
class Item:
    """One spec at one size environment, with everything the device suite runs for it."""

    path: str
    model: KernelModel
    probe: ProbeProgram
    behaviour: BehaviourProgram | None
    why_not: str | None        # why there is no behaviour kernel
    verified: SpecRun | None   # the verifier's predictions (None in a profiled child)


def build_programs(paths: Sequence[str | Path], *, sizes: Mapping[str, int] | None = None,
                   first_env: bool = False, errors: list[SpecErrorEntry] | None = None,
                   legal_map: Mapping[str, Mapping[str, bool]] | None = None) -> list[Item]:
    """Probe and behaviour programs (and the verifier's run, for the predictions) of every spec
    and size environment under ``paths``.  With ``legal_map`` (:func:`legal_map` of an earlier
    build: what a profiled child process gets) the verifier is not run again and the sources
    come out identical, so the compiled module is reused."""
    items: list[Item] = []
    for f in spec_files(paths):
        try:
            ms = spec_models(f, sizes)
            for m in ms[:1] if first_env else ms:
                key = f"{f}|{json_sizes(m)}"
                if legal_map is not None:
                    run = None
                    legal = {(int(k.split(":")[0]), k.split(":")[1]): v for k, v in legal_map.get(key, {}).items()}
                else:
                    run = verify_spec(m.loaded, sizes=m.env)[0]
                    legal = {(r.stage, r.side): bool(r.summary.declared_legal) for r in run.results
                             if r.check == "vectorize" and r.stage is not None and r.side is not None
                             and hasattr(r.summary, "declared_legal")}
                prog = probe_program(m)
                try:
                    beh, why = behaviour_program(m, prog, legal), None
                except NotProbed as e:
                    beh, why = None, str(e)
                items.append(Item(str(f), m, prog, beh, why, run))
        except (SpecError, ThreadmapError) as e:
            if errors is None:
                raise
            errors.append(SpecErrorEntry(path=str(f), message=str(e)))
    return items


def legal_map(items: Sequence[Item]) -> dict[str, dict[str, bool]]:
    """Per item (``path|sizes``), the vector legality its behaviour kernel was built with."""
    out: dict[str, dict[str, bool]] = {}
    for it in items:
        d = out.setdefault(f"{it.path}|{json_sizes(it.model)}", {})
        for r in it.verified.results if it.verified is not None else []:
            if r.check == "vectorize" and r.stage is not None and r.side is not None \
                    and hasattr(r.summary, "declared_legal"):
                d[f"{r.stage}:{r.side}"] = bool(r.summary.declared_legal)
    return out


def suite_source(items: Sequence[Item]) -> str:
    """One translation unit: every probe, every behaviour kernel."""
    return translation_unit([it.probe for it in items],
                            device_only=[it.behaviour.source for it in items if it.behaviour is not None])


def json_sizes(m: KernelModel) -> str:
    """The model's sizes as the key the parent and its profiled children agree on."""
    return json.dumps(dict(sorted(m.env.items())))
