"""The behaviour kernels' memory accesses as inline PTX: one load or store of exactly the
width the spec declares, in global or shared memory (``tm_ld_<space><bytes>``,
``tm_st_<space><bytes>``), and ``cp.async`` global -> shared (``tm_cp_async_<ca|cg><bytes>``,
with commit and wait).  Included once per translation unit by
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
    out += cp_async_helpers()
    return "\n".join(out) + "\n"


#: bytes one ``cp.async`` may move per thread: ``.ca`` 4, 8 or 16; ``.cg`` 16 only (PTX ISA)
CP_ASYNC_BYTES = {"ca": (4, 8, 16), "cg": (16,)}


def cp_async_op(copy_op: str) -> tuple[str, bool]:
    """The PTX cache operator of an ``SM80_CP_ASYNC_*`` copy operation (``ca`` for
    CACHEALWAYS, ``cg`` for CACHEGLOBAL) and whether it is the zero-fill form (``_ZFILL``)."""
    base = copy_op.split("<", 1)[0]
    return ("cg" if "CACHEGLOBAL" in base else "ca"), base.endswith("_ZFILL")


def cp_async_helpers() -> list[str]:
    """``tm_cp_async_<ca|cg><B>(smem, gmem)``: one ``cp.async`` of B bytes global -> shared
    (``LDGSTS``), issued by the lanes that call it (CuTe's ``SM80_CP_ASYNC_*`` under
    ``copy_if``, CUTLASS's ``cp_async`` with ``@p``); ``..._zfill(smem, gmem, src_bytes)``: the
    zero-fill form every lane issues, reading ``src_bytes`` (0 or B) and zero-filling the rest
    (``SM80_CP_ASYNC_*_ZFILL``, CUTLASS's ``cp_async_zfill``); ``tm_cp_async_wait_all()``:
    ``cp.async.commit_group`` then ``cp.async.wait_group 0``, before anything reads the
    destination.  cp.async needs sm_80; below it the helpers trap."""
    out = []
    guard = ("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800", "#else", "  __trap();", "#endif")
    for cache, sizes in CP_ASYNC_BYTES.items():
        for nbytes in sizes:
            out += [f"__device__ __forceinline__ void tm_cp_async_{cache}{nbytes}(unsigned char* s, "
                    "const unsigned char* g) {",
                    guard[0],
                    f'  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes};" :: '
                    '"r"(tm_saddr(s)), "l"(g) : "memory");',
                    *guard[1:], "}",
                    f"__device__ __forceinline__ void tm_cp_async_{cache}{nbytes}_zfill(unsigned char* s, "
                    "const unsigned char* g, int src_bytes) {",
                    guard[0],
                    f'  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;" :: '
                    '"r"(tm_saddr(s)), "l"(g), "r"(src_bytes) : "memory");',
                    *guard[1:], "}"]
    out += ["__device__ __forceinline__ void tm_cp_async_wait_all() {",
            guard[0],
            '  asm volatile("cp.async.commit_group;\\n\\tcp.async.wait_group 0;" ::: "memory");',
            *guard[1:], "}"]
    return out


HELPERS = io_helpers()
