"""``threadmap spec-header`` (the C++ header that writes specs), ``threadmap schema`` (the
spec files' JSON Schema) and ``threadmap examples`` (the calculators on the tutorials'
examples)."""

from __future__ import annotations

import json

import click

from threadmap.cli.common import UsageError, require_cutlass


@click.command("spec-header")
@click.option("--include-dir", is_flag=True, help="print the folder of threadmap_spec.h (for -I) and exit")
@click.option("--cutlass-include", is_flag=True,
              help="print the CUTLASS/CuTe include folder threadmap uses ($THREADMAP_CUTLASS_INCLUDE, else the "
                   "nvidia-cutlass package's) and exit")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the header itself (or the folder); json: {include_dir, cutlass_include, header, text}")
def spec_header_cmd(include_dir: bool, cutlass_include: bool, fmt: str) -> None:
    """Print the C++ header that writes a spec from your real CuTe/CUTLASS objects.

    \b
      nvcc -std=c++17 -x c++ -I$(threadmap spec-header --include-dir) -I<cutlass>/include \\
           my_spec.cpp -o my_spec && ./my_spec > my_kernel.yaml && threadmap verify my_kernel.yaml

    In the program: threadmap::Spec s("name"); s.element<float>().threads(256).grid(gx, gy);
    s.tensor("x", layout, threadmap::global).copy(tiled_copy, threadmap::tile("x", tile_shape,
    "bx", "by"), "sA").barrier() ...; s.print();  The header's comment documents every call.
    Compiling it needs the CUTLASS/CuTe headers: pip install 'threadmap[cxx]'.
    """
    from threadmap.gpu.toolchain import cutlass_include as cutlass_inc
    from threadmap.gpu.toolchain import include_dir as inc_dir

    header = inc_dir() / "threadmap_spec.h"
    cutlass = cutlass_inc()
    if include_dir and cutlass_include:
        raise UsageError("give --include-dir or --cutlass-include, not both")
    if fmt == "json":
        click.echo(json.dumps({"include_dir": str(inc_dir()), "cutlass_include": cutlass and str(cutlass),
                               "header": str(header), "text": header.read_text()}, indent=2))
    elif cutlass_include:
        click.echo(str(require_cutlass()))
    elif include_dir:
        click.echo(str(inc_dir()))
    else:
        click.echo(header.read_text(), nl=False)


@click.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of spec files (for editor autocompletion)."""
    from threadmap.spec.cli_schema import schema_json

    click.echo(schema_json(), nl=False)


EXAMPLES: list[tuple[str, list[str]]] = [
    ("complement from the CuTe notes", ["layout", "(2,2):(1,6)", "complement", "24"]),
    ("coalesce", ["layout", "(2,(1,6)):(1,(6,2))", "coalesce"]),
    ("logical_divide of a row-major 4x8 by a 2x4 tile", ["layout", "(4,8):(8,1)", "logical_divide", "(2,4)"]),
    ("the sgemm_2 copy partition: raked_product of threads (32,8):(8,1) and values (4,1)",
     ["layout", "(32,8):(8,1)", "raked_product", "(4,1):(1,0)"]),
    ("a row-major 4x8 (GenRowMajor gives stride (N,1)) as print_layout draws it",
     ["layout", "(4,8):(8,1)", "show"]),
    ("PitchLinearStripminedThreadMap<64x64, 128, 4>, thread 50",
     ["threadmap", "PitchLinearStripminedThreadMap", "64x64", "128", "4", "--thread", "50"]),
]


@click.command("examples")
@click.pass_context
def examples_cmd(ctx: click.Context) -> None:
    """Run the calculators on examples from the CuTe and CUTLASS tutorials."""
    main = ctx.find_root().command  # the ``threadmap`` group, whose commands the examples run
    for title, argv in EXAMPLES:
        click.echo(f"\n# {title}\n$ threadmap " + " ".join(f'"{a}"' if any(c in a for c in "(),:") else a
                                                        for a in argv))
        main.main(args=argv, standalone_mode=False)


