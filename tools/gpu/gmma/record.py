"""Turn the H200's wgmma probe output into the record the tests read, with the model's verdict.

    python tools/gpu/gmma/record.py RUN_DIR [NCU_CSV]
        # RUN_DIR holds wgmma_out.bin, memcheck_summary.json; NCU_CSV (default RUN_DIR/gmma_ncu.csv): the
        # tensor core's shared-memory wavefronts and bank conflicts of every case (run.sh's ncu run)

Writes docs/hardware/gmma/wgmma_h200.json: per case its status, the SHA-256 of the measured D
(64 x N f32, row-major bytes), and how many of D's elements differ from the model's prediction
(``cases.predicted``), and the same for each thread's accumulator registers (128 x N/2, the GMMA
atom's CLayout: ``cases.predicted_registers``); the tests recompute the predictions and compare
them with the measured hashes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, predicted, predicted_registers, probe_cases  # noqa: E402
from probe_io import STATUS, read_results  # noqa: E402

RECORD = HERE.parents[2] / "docs" / "hardware" / "gmma" / "wgmma_h200.json"


GMMA_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum"
GMMA_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum"


def read_ncu(path: Path) -> dict[int, dict[str, float]]:
    """Nsight Compute's --csv metrics by launch (one launch per case, in order)."""
    if not path.exists():
        return {}
    rows = list(csv.reader(line for line in path.read_text().splitlines() if line.startswith('"')))
    head = {h: i for i, h in enumerate(rows[0])}
    out: dict[int, dict[str, float]] = {}
    for r in rows[1:]:
        out.setdefault(int(r[head["ID"]]), {})[r[head["Metric Name"]]] = float(r[head["Metric Value"]].replace(",", ""))
    return out


def main(run: Path, ncu_csv: Path | None = None) -> None:
    ncu = read_ncu(ncu_csv or run / "gmma_ncu.csv")
    results = read_results(run / "wgmma_out.bin", probe_cases())
    out: dict[str, object] = {}
    differ = 0
    for i, (c, r) in enumerate(zip(CASES, results)):
        d = r["D"]
        pred = predicted(c)
        n_diff = int((d != pred).sum()) if r["status"] == 0 else -1
        differ += n_diff != 0
        out[c.id] = {"status": STATUS.get(r["status"], str(r["status"])), "n": c.n, "dtype": c.dtype,
                     "alter": c.alter, "sha256_D": hashlib.sha256(d.astype("<f4").tobytes()).hexdigest(),
                     "sha256_registers": hashlib.sha256(r["raw"].astype("<f4").tobytes()).hexdigest(),
                     "elements_differing_from_model": n_diff,
                     "registers_differing_from_clayout": int((r["raw"] != predicted_registers(c)).sum())
                     if r["status"] == 0 else -1}
        if i in ncu:
            out[c.id]["gmma_wavefronts"] = int(ncu[i][GMMA_WAVEFRONTS])      # type: ignore[index]
            out[c.id]["gmma_bank_conflicts"] = int(ncu[i][GMMA_CONFLICTS])   # type: ignore[index]
    memcheck = json.loads((run / "memcheck_summary.json").read_text()) if (run / "memcheck_summary.json").exists() \
        else None
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps({"device": "NVIDIA H200 (sm_90a)", "cases": out, "memcheck": memcheck},
                                 indent=1) + "\n")
    print(f"{len(out)} cases, {differ} differ from the model; record in {RECORD}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
