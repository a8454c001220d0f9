"""The LDGSTS probe's counters per case, as the JSON the tests read.

    python tools/gpu/ldgsts/collect.py NCU_CSV OUT_JSON [--only NAME]

NCU_CSV: ``ncu --csv`` of ``ldgsts_probe cases.txt`` (run.sh); the launches are the cases of
cases.py in order (``--only``: the run cases.py was limited to).  Per case: the per-lane table
and, per executed LDGSTS instruction, the shared wavefronts, bank conflicts and global sectors
Nsight Compute counted.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import RUNS  # noqa: E402

WAVEFRONTS = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"
SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
INSTRUCTIONS = "smsp__sass_inst_executed_op_ldgsts.sum"


def main(src: str, out: str, only: str = "all") -> None:
    with open(src) as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    head = rows[0]
    i_id, i_name, i_value = head.index("ID"), head.index("Metric Name"), head.index("Metric Value")
    per: dict[int, dict[str, float]] = {}
    for r in rows[1:]:
        per.setdefault(int(r[i_id]), {})[r[i_name]] = float(r[i_value].replace(",", ""))
    out_cases = []
    for i, c in enumerate(RUNS[only]()):
        d = per[i]
        # a limited run's cases also say what each iteration issues (the full run's format is kept)
        seq = {} if only == "all" else {"step": c.step, "more": [[list(g), list(s)] for g, s in c.more],
                                        "wait": c.wait}
        out_cases.append({"name": c.name, "bytes": c.bytes, "cache": "cg" if c.cg else "ca", "zfill": c.zfill,
                          "warps": c.warps, "grid": c.grid, "iters": c.iters,
                          "global": list(c.gofs), "shared": list(c.sofs), "pred": list(c.pred),
                          "instructions": d[INSTRUCTIONS], "wavefronts": d[WAVEFRONTS],
                          "bank_conflicts": d[CONFLICTS], "global_ld_sectors": d[SECTORS],
                          **seq})
    device = json.dumps("NVIDIA H200 (sm_90), Nsight Compute --clock-control none")
    lines = ",\n".join(json.dumps(c, separators=(",", ":")) for c in out_cases)
    Path(out).write_text(f'{{"device": {device},\n"cases": [\n{lines}\n]}}\n')  # one case per line


if __name__ == "__main__":
    args = sys.argv[1:]
    only = "all"
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    main(args[0], args[1], only)
