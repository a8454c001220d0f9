"""The behaviour kernels' memory accesses as inline PTX: one load or store of exactly the
width the spec declares, in global or shared memory (``tm_ld_<space><bytes>``,
``tm_st_<space><bytes>``).  Included once per translation unit by
:func:`threadmap.gpu.probe.translation_unit`, before the behaviour kernels."""

from __future__ import annotations


def io_helpers() -> str:
    """``tm_ld_<space><B>`` / ``tm_st_<space><B>``: one access of B bytes as inline PTX, so nvcc
    can neither merge nor split it (the kernel issues exactly the width the spec declares),
    nor drop a load whose value is never used (a stage run alone for its counters)."""
    regs = {1: (["h"], "u8", "unsigned short"), 2: (["h"], "u16", "unsigned short"), 4: (["r"], "b32", "unsigned"),
            8: (["r"] * 2, "v2.b32", "unsigned"), 16: (["r"] * 4, "v4.b32", "unsigned")}
    out = ["__device__ __forceinline__ unsigned tm_saddr(const void* p) "
           "{ return (unsigned)__cvta_generic_to_shared(p); }"]
    for space, addr, cons in (("global", "p", "l"), ("shared", "tm_saddr(p)", "r")):
        for nbytes, (rs, ty, ctype) in regs.items():
            n = len(rs)
            names = ", ".join(f"%{k}" for k in range(n))
            vals = "{" + names + "}" if n > 1 else names
            lo = ", ".join(f'"={c}"(v[{k}])' for k, c in enumerate(rs))
            out.append(f"__device__ __forceinline__ void tm_ld_{space}{nbytes}(unsigned char* p, void* dst) {{ "
                       f"{ctype} v[{n}]; asm volatile(\"ld.{space}.{ty} {vals}, [%{n}];\" : {lo} : "
                       f"\"{cons}\"({addr}) : \"memory\"); memcpy(dst, v, {nbytes}); }}")
            sv = ", ".join(f"%{k + 1}" for k in range(n))
            svals = "{" + sv + "}" if n > 1 else sv
            si = ", ".join(f'"{c}"(v[{k}])' for k, c in enumerate(rs))
            out.append(f"__device__ __forceinline__ void tm_st_{space}{nbytes}(unsigned char* p, const void* src) {{ "
                       f"{ctype} v[{n}] = {{}}; memcpy(v, src, {nbytes}); asm volatile(\"st.{space}.{ty} [%0], "
                       f"{svals};\" :: \"{cons}\"({addr}), {si} : \"memory\"); }}")
    return "\n".join(out) + "\n"


HELPERS = io_helpers()
