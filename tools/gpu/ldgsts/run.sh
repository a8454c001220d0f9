#!/usr/bin/env bash
# On the H200: build the LDGSTS probe, run every case under Nsight Compute, keep the counters.
#   tools/gpu/ldgsts/run.sh OUTDIR                 # every case -> OUTDIR/ldgsts_h200.json
#   tools/gpu/ldgsts/run.sh OUTDIR --only vector   # vector_run() -> OUTDIR/ldgsts_h200_vector.json
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:?OUTDIR}" && out=$(cd "$1" && pwd)
only=all
[ "${2:-}" = "--only" ] && only=${3:?NAME}
json=ldgsts_h200.json
[ "$only" = all ] || json=ldgsts_h200_$only.json
export PATH=$PATH:/usr/local/cuda/bin
nvcc -O3 -arch=sm_90 -o "$out/ldgsts_probe" "$here/ldgsts_probe.cu" || exit 1
python3 "$here/cases.py" --only "$only" > "$out/cases.txt" || exit 1
ncu --query-metrics --chip gh100 > "$out/metrics.txt" 2>&1 || true
want="smsp__sass_inst_executed_op_ldgsts smsp__inst_executed_op_ldgsts
smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts l1tex__data_bank_writes_pipe_lsu_mem_shared_op_ldgsts
l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st
l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__t_requests_pipe_lsu_mem_global_op_ld
l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts
l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass
l1tex__t_sector_hit_rate l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss
l1tex__data_pipe_lsu_wavefronts l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld
smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared smsp__l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts"
metrics=""
for m in $want; do
  if grep -qE "^$m( |$)" "$out/metrics.txt"; then
    case $m in *hit_rate) metrics="$metrics,$m.pct" ;; *) metrics="$metrics,$m.sum" ;; esac
  else echo "not on this chip: $m" >> "$out/missing.txt"; fi
done
metrics=${metrics#,}
[ -n "$metrics" ] || metrics="smsp__sass_inst_executed_op_ldgsts.sum,smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
echo "$metrics" > "$out/used.txt"
cd "$out" && ./ldgsts_probe cases.txt > plain.txt 2>&1; echo "plain rc=$?"; tail -2 plain.txt
ncu --clock-control none --csv --metrics "$metrics" ./ldgsts_probe cases.txt > ncu.csv 2> ncu.err
echo "ncu rc=$?"
wc -l ncu.csv
python3 "$here/collect.py" "$out/ncu.csv" "$out/$json" --only "$only" && echo "wrote $out/$json"
if [ "$only" != all ]; then
  # per SASS instruction (which piece of a sequence costs what): the Source page of the sequences
  timeout 150 ncu --clock-control none --section SourceCounters --kernel-name regex:probe_seq \
    -o "$out/source" -f ./ldgsts_probe cases.txt > source.log 2>&1 &&
    ncu -i "$out/source.ncu-rep" --page source --print-source sass --csv > source.csv 2>> source.log
  echo "source rc=$? $(wc -l < source.csv 2>/dev/null) lines"
fi
