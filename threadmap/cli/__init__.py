"""The ``threadmap`` command line, a thin layer over :mod:`threadmap.api`.

One module per command group: :mod:`~threadmap.cli.verify` (verify, prove),
:mod:`~threadmap.cli.calculators` (layout, threadmap), :mod:`~threadmap.cli.simulate`
(simulate, show), :mod:`~threadmap.cli.gpu` (gpu, diff), :mod:`~threadmap.cli.serve`
(serve), :mod:`~threadmap.cli.reference` (spec-header, schema, examples),
:mod:`~threadmap.cli.sweep` (sweep); what they share is
in :mod:`~threadmap.cli.common`.  The console script is :func:`entry`.

Exit status: 0 everything passes; 1 findings; 2 invalid input (a spec, an option, a path:
one line per problem, ``FILE:LINE:COL: field.path: message`` for specs); 3 an internal
error (one line naming the spec or command).  No traceback reaches the user.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from threadmap.cli.calculators import layout_cmd, threadmap_cmd
from threadmap.cli.common import UsageError, fail
from threadmap.cli.gpu import diff_cmd, gpu_cmd
from threadmap.cli.reference import examples_cmd, schema_cmd, spec_header_cmd
from threadmap.cli.serve import serve_cmd
from threadmap.cli.simulate import show_cmd, simulate_cmd
from threadmap.cli.sweep import sweep_cmd
from threadmap.cli.verify import prove_cmd, verify_cmd
from threadmap.errors import ThreadmapError

__all__ = ["UsageError", "entry", "main"]


class Group(click.Group):
    """Maps every error to its exit status: ThreadmapError 2, anything unexpected 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except ThreadmapError as e:
            fail(str(e))
        except (RecursionError, MemoryError) as e:
            fail(f"input too large or nested too deeply ({type(e).__name__})")
        except BrokenPipeError:
            sys.exit(0)
        except Exception as e:  # noqa: BLE001 - the promise: exit 3 with one line, never a traceback
            sub = ctx.invoked_subcommand or "threadmap"
            fail(f"internal error in '{sub}': {type(e).__name__}: {e}", 3)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="threadmap")
def main() -> None:
    """threadmap: simulate and verify CUTLASS/CuTe thread maps.

    \b
    Examples:
      threadmap verify specs/cute_transpose/row_smem.yaml
      threadmap verify specs/ --check-expected --format json
      threadmap layout "(4,8):(8,1)" logical_divide "(2,4)"
      threadmap threadmap PitchLinearStripminedThreadMap 64x64 128 4 --thread 50
    """


# in the order of the old single module (``threadmap --help`` lists them sorted anyway)
for _cmd in (layout_cmd, threadmap_cmd, verify_cmd, prove_cmd, gpu_cmd, diff_cmd, simulate_cmd, show_cmd,
             serve_cmd, spec_header_cmd, schema_cmd, examples_cmd, sweep_cmd):
    main.add_command(_cmd)


def entry() -> None:
    """Console-script entry point: never lets a traceback reach the user."""
    try:
        main(standalone_mode=False)
    except click.exceptions.NoSuchOption as e:
        fail(e.format_message())
    except click.ClickException as e:
        click.echo(f"threadmap: error: {e.format_message()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except ThreadmapError as e:
        fail(str(e))
    except BrokenPipeError:
        os._exit(0)
