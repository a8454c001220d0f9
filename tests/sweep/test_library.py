"""The kernels CUTLASS's generator makes, grouped: the counts are the manifest's own."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from click.testing import CliRunner

from tests.sweep.conftest import KERNELS
from threadmap.cli import main
from threadmap.sweep.library import SweepError, configuration_key, counts, generate, group


def manifest_ops(kernels: str) -> list[tuple[str, Any]]:
    """The generator's manifest filled as the brief of ``python -m cutlass_library.generator``
    fills it, read without threadmap: (kind name, Operation)."""
    from cutlass_library import generator as g
    from cutlass_library.library import OperationKindNames
    from cutlass_library.manifest import Manifest

    args = g.define_parser().parse_args(["--architectures", "80", "--kernels", kernels, "--cuda-version", "12.8"])
    m = Manifest(args)
    g.GenerateSM80(m, args.cuda_version)
    return [(OperationKindNames[kind], op) for kind, by_cc in m.operations.items() for by_name in by_cc.values()
            for ops in by_name.values() for op in ops]


@pytest.mark.parametrize("kernels", [KERNELS, "cutlass_tensorop_f16_s16816gemm_f16_*_align8"])
def test_the_groups_partition_the_manifests_kernels(kernels: str) -> None:
    ours = generate(("80",), kernels)
    theirs = manifest_ops(kernels)
    assert sorted(op.procedural_name() for _, op in ours) == sorted(op.procedural_name() for _, op in theirs)
    configs = group(ours)
    # every kernel in exactly one configuration, and its kind's counts add up
    names = [k for c in configs for k in c.kernels]
    assert sorted(names) == sorted(op.procedural_name() for _, op in theirs)
    by_kind = Counter(kind for kind, _ in theirs)
    assert {c.kind: c.kernels for c in counts(configs)} == dict(by_kind)
    assert {c.kind: c.configurations for c in counts(configs)} == dict(Counter(c.kind for c in configs))
    # kernels of one configuration have one key; two configurations never share one
    ops = {op.procedural_name(): (kind, op) for kind, op in theirs}
    keys = {c.key for c in configs}
    assert len(keys) == len(configs)
    for c in configs:
        assert {configuration_key(*ops[k])[0] for k in c.kernels} == {c.key}


def test_a_configuration_stands_for_kernels_that_differ_in_their_epilogue_only() -> None:
    """The f16-output and f32-output kernels of one tile share their mainloop's configuration;
    the grouped kernel of the same tile is another kernel template, another configuration."""
    configs = group(generate(("80",), KERNELS))
    shared = [c for c in configs if len(c.kernels) > 1]
    assert len(shared) == 1 and len(configs) == 6
    f = json.loads(shared[0].key)
    assert f["family"] == "universal" and f["stages"] == 4 and f["align_a"] == f["align_b"] == 8
    assert sorted(shared[0].kernels) == ["cutlass_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8",
                                         "cutlass_tensorop_s16816gemm_f16_128x128_32x4_tn_align8"]


@pytest.mark.parametrize("argv, says", [
    (["--architectures", "75"], "--architectures 75"),
    (["--architectures", "sm80x"], "sm80x is not one of them"),
    (["--kernels", "cutlass_no_such_kernel_anywhere"], "matches no kernel"),
    (["--kernels", " "], "give a filter"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], says: str, tmp_path: Any) -> None:
    r = CliRunner().invoke(main, ["sweep", *argv, "--db", str(tmp_path / "s.db")])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("threadmap: error: ") and says in lines[0], r.stderr


def test_a_filter_the_cuda_version_empties_names_the_version(tmp_path: Any) -> None:
    """The generator makes the sparse GEMMs from CUDA 11.1 on: told 11.0, the filter matches
    nothing, and the line says under which version (the default's matches, the oracle)."""
    assert generate(("80",), "*spgemm*")
    assert not generate(("80",), "*spgemm*", "11.0")
    r = CliRunner().invoke(main, ["sweep", "--kernels", "*spgemm*", "--cuda-version", "11.0", "--count",
                                  "--db", str(tmp_path / "s.db")])
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert "matches no kernel of sm80 for --cuda-version 11.0" in line, line


def test_an_unknown_architecture_is_refused_before_the_generator_runs() -> None:
    with pytest.raises(SweepError, match="GenerateSM80"):
        generate(("90",))
