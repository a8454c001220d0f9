"""Where the compilers and headers are, and how programs are built and cached.

The CUTLASS/CuTe headers come from the PyPI package ``nvidia-cutlass``
(``cutlass_library/source/include``); nvcc from ``PATH`` or ``/usr/local/cuda``.  Host programs
are compiled as plain C++ (``nvcc -x c++ -std=c++17``) and cached by the hash of their source
and flags under :func:`cache_dir`; device code is compiled by CuPy (its own cache, keyed by
source and options) or, without a GPU, checked with ``nvcc -x cu`` for each architecture.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from threadmap.errors import ThreadmapError

#: options every compile of the headers needs (CuTe is C++17; its constexpr helpers are
#: called from device code)
CXX_STD = "-std=c++17"
DEVICE_OPTIONS = (CXX_STD, "--expt-relaxed-constexpr", "-w")
#: the architectures CI compiles the generated kernels for (Ampere, Hopper)
ARCHS = ("sm_80", "sm_90")


class ToolchainError(ThreadmapError):
    """nvcc, the headers or CuPy are missing or a compile failed."""


def include_dir() -> Path:
    """The folder holding ``threadmap_probe.h`` and ``threadmap_spec.h`` (``threadmap gpu
    --include-dir``, ``threadmap spec-header --include-dir``)."""
    return Path(__file__).resolve().parent / "include"


def cutlass_include() -> Path | None:
    """The CUTLASS/CuTe include folder: ``$THREADMAP_CUTLASS_INCLUDE``, else the installed
    ``nvidia-cutlass`` package's (found without importing it: only its headers are used)."""
    env = os.environ.get("THREADMAP_CUTLASS_INCLUDE")
    if not env:
        return default_cutlass_include()
    inc = Path(env)
    return inc if (inc / "cute" / "tensor.hpp").exists() else None


#: where the CUDA tools live when they are not on PATH
TOOL_DIRS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")


def find_tool(name: str) -> str | None:
    """A CUDA tool (nvcc, cuobjdump, nvdisasm, ncu, compute-sanitizer): on PATH, else in
    TOOL_DIRS, else in an NVIDIA tool wheel's ``bin``."""
    found = shutil.which(name)
    if found:
        return found
    for d in [*map(Path, TOOL_DIRS), *wheel_tool_dirs()]:
        p = d / name
        if p.exists():
            return str(p)
    return None


def wheel_tool_dirs() -> list[Path]:
    """The ``bin`` folders of NVIDIA's PyPI tool wheels (``nvidia-cuda-cuobjdump`` puts
    cuobjdump and nvdisasm in ``nvidia/cu13/bin``), found without importing them."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(p for root in spec.submodule_search_locations for p in Path(str(root)).glob("cu*/bin")
                  if p.is_dir())


def nvcc() -> str | None:
    return find_tool("nvcc")


def require() -> tuple[str, Path]:
    """nvcc and the CUTLASS include folder, or a ToolchainError saying which is missing."""
    exe = nvcc()
    if exe is None:
        raise ToolchainError("nvcc not found (install the CUDA toolkit or put nvcc on PATH)")
    inc = cutlass_include()
    if inc is None:
        raise ToolchainError("the CUTLASS headers are missing: pip install nvidia-cutlass")
    return exe, inc


def cache_dir() -> Path:
    """``$THREADMAP_CACHE`` or, when it is unset or empty, ``~/.cache/threadmap``; created when
    missing (an empty value once meant the current directory, which filled with cache files)."""
    d = Path(os.environ.get("THREADMAP_CACHE") or Path.home() / ".cache" / "threadmap")
    try:
        d.mkdir(parents=True, exist_ok=True)
        if not os.access(d, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as e:
        raise ToolchainError(f"the compile cache {d} (THREADMAP_CACHE) is not a usable directory: "
                             f"{e.strerror or e}") from None
    return d


def forget(path: Path) -> None:
    """Drop a cached output that turned out unusable (it is rebuilt on the next call)."""
    try:
        path.unlink()
    except OSError:
        pass


def cutlass_version(inc: Path) -> str:
    """``major.minor.patch`` from ``cutlass/version.h`` (part of every cache key)."""
    import re
    try:
        text = (inc / "cutlass" / "version.h").read_text()
    except OSError:
        return "?"
    got = dict(re.findall(r"#define CUTLASS_(MAJOR|MINOR|PATCH) (\d+)", text))
    return ".".join(got.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH"))


@contextmanager
def using_cutlass_include(inc: Path | None) -> Iterator[None]:
    """``$THREADMAP_CUTLASS_INCLUDE`` set to ``inc`` for the block (and the processes started
    in it), then as it was; ``None`` changes nothing."""
    if inc is None:
        yield
        return
    old = os.environ.get("THREADMAP_CUTLASS_INCLUDE")
    os.environ["THREADMAP_CUTLASS_INCLUDE"] = str(inc)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("THREADMAP_CUTLASS_INCLUDE", None)
        else:
            os.environ["THREADMAP_CUTLASS_INCLUDE"] = old


def default_cutlass_include() -> Path | None:
    """The installed ``nvidia-cutlass`` package's include folder (``$THREADMAP_CUTLASS_INCLUDE``
    aside)."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    inc = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    return inc if (inc / "cute" / "tensor.hpp").exists() else None


@functools.lru_cache(maxsize=8)
def _tree_hash(inc: Path) -> str:
    """A hash of every file under ``inc`` (its path and content): tells two header trees of
    one version apart (a checkout between releases, a patched copy)."""
    h = hashlib.sha256()
    for p in _regular_files(inc):
        h.update(str(p.relative_to(inc)).encode() + b"\0")
        try:
            h.update(p.read_bytes())
        except OSError as e:  # a file that cannot be read cannot be included either: named, not skipped
            h.update(f"unreadable: {e.strerror}".encode())
    return h.hexdigest()[:10]


def _regular_files(root: Path) -> list[Path]:
    """The regular files under ``root``, links followed (a tree of links to another is hashed
    by what they reach), each folder once (a link back up is no loop); broken links, FIFOs and
    devices left out (no compiler reads them as headers)."""
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
            entries = list(os.scandir(d))
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        for e in entries:
            try:
                if e.is_dir():  # follows links
                    stack.append(Path(e.path))
                elif e.is_file():
                    out.append(Path(e.path))
            except OSError:  # a link loop or a vanished entry
                continue
    return sorted(out)


def cutlass_identity(inc: Path) -> str:
    """The identity of a header tree in cache keys and the sweep's store: its version for the
    installed package's headers, and the version with a hash of the files (``3.8.0+1a2b3c4d5e``)
    for any other tree (``$THREADMAP_CUTLASS_INCLUDE``, ``sweep --cutlass-include``), whose
    version alone may not tell it from the installed one."""
    default = default_cutlass_include()
    version = cutlass_version(inc)
    if default is not None and inc.resolve() == default.resolve():
        return version
    return f"{version}+{_tree_hash(inc.resolve())}"


def _key(source: str, flags: Sequence[str], inc: Path) -> str:
    """A cache key of a compile: the source, the flags (include folders left out: the same
    headers may sit elsewhere on another machine), the CUTLASS version and threadmap's own
    headers."""
    kept = [f for f in flags if not f.startswith("-I")]
    # a source may include any of them
    headers = "".join(h.read_text() for h in sorted(include_dir().glob("*.h")))
    return hashlib.sha256("\0".join([source, " ".join(kept), cutlass_identity(inc), headers]).encode()).hexdigest()[:24]


def _run(cmd: Sequence[str], what: str, timeout: float = 1800) -> None:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what}: nvcc ran past {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise ToolchainError(f"{what} failed:\n{proc.stderr[-6000:]}")


@contextmanager
def entry_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on one cache entry (the file ``PATH.lock``, ``flock``): processes
    building the same entry at once (pytest-xdist workers, parallel runs) compile it once;
    the others wait and reuse the output.  The lock goes with the descriptor, so a killed
    builder never leaves it held."""
    import fcntl  # POSIX: the CUDA toolchain's platforms
    fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _cached(kind: str, ext: str, source: str, flags: list[str], mode: list[str], what: str,
            keyed: str | None = None) -> Path:
    """Compile ``source`` with ``nvcc flags mode SRC -o OUT`` once; later calls with the same
    source, flags and headers return the cached output (written atomically).  A build holds
    the entry's lock, so a concurrent call waits for it instead of compiling the same again.
    ``keyed``: what the key hashes instead of ``source`` (the source and the headers it
    includes), where that is more than the text compiled."""
    exe, inc = require()
    key = _key(source if keyed is None else keyed, flags, inc)
    out = cache_dir() / f"{kind}_{key}{ext}"
    if out.exists():
        return out
    with entry_lock(cache_dir() / f"{kind}_{key}"):
        if out.exists():  # built by the process we waited for
            return out
        src = cache_dir() / f"{kind}_{key}.{'cpp' if mode[:2] == ['-x', 'c++'] else 'cu'}"
        src.write_text(source)
        tmp = cache_dir() / f"{kind}_{key}.tmp{os.getpid()}{ext}"
        _run([exe, *flags, *mode, str(src), "-o", str(tmp)], f"compiling {src}{what}")
        tmp.replace(out)
    return out


def run_cached(build: Callable[[], Path], args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run the cached program ``build()`` returns with ``args``; a damaged cached binary (one
    that cannot be executed) is dropped and built again, once."""
    binary = build()
    try:
        return subprocess.run([str(binary), *args], capture_output=True, text=True)
    except OSError:
        with entry_lock(binary.with_suffix("")):
            forget(binary)
        return subprocess.run([str(build()), *args], capture_output=True, text=True)


def _gencode(archs: Sequence[str]) -> list[str]:
    """nvcc's -gencode of each architecture; ``sm_80+ptx`` also embeds its PTX (what a newer
    GPU's driver compiles when the program launches a kernel there)."""
    out = []
    for a in archs:
        real = a.removesuffix("+ptx")
        virtual = f"compute_{real[3:]}"
        out.append(f"-gencode=arch={virtual},code=[{real},{virtual}]" if a.endswith("+ptx")
                   else f"-gencode=arch={virtual},code={real}")
    return out


def build_host(source: str, *, defines: Sequence[str] = (), opt: str = "-O1", archs: Sequence[str] = ()) -> Path:
    """Compile ``source`` as a host program against the headers; the cached binary.  With
    ``archs`` the source is compiled as CUDA (``-x cu``) for those architectures as well, so
    one compile both checks the device code and gives the host program."""
    _, inc = require()
    flags = [CXX_STD, opt, "-w", f"-I{inc}", f"-I{include_dir()}", *(f"-D{d}" for d in defines)]
    if archs:
        # the architectures' device compiles run in parallel (one nvcc thread each)
        flags += ["--expt-relaxed-constexpr", *_gencode(archs), f"--threads={len(archs)}"]
    return _cached("host", "", source, flags, ["-x", "cu" if archs else "c++"],
                   f" for {', '.join(archs)}" if archs else "")


def build_program(source: str, gencode: Sequence[tuple[str, str]], opt: str = "-O2") -> Path:
    """``source`` compiled to a CUDA executable (cudart linked statically) for the
    ``(virtual, real)`` architecture pairs of ``gencode``: ``("compute_80", "sm_90")`` builds
    an sm_80 kernel's PTX into SASS an H200 runs.  Cached by hash; the executable."""
    _, inc = require()
    flags = [CXX_STD, opt, "--expt-relaxed-constexpr", "-w", f"-I{inc}", f"-I{include_dir()}",
             *(f"-gencode=arch={v},code={r}" for v, r in gencode), f"--threads={max(1, len(gencode))}"]
    return _cached("prog", "", source, flags, ["-x", "cu"], f" for {', '.join(r for _, r in gencode)}")


def check_device(source: str, archs: Sequence[str] = ARCHS) -> Path:
    """Compile ``source``'s device code for every architecture (``-x cu``; no GPU needed);
    cached by hash.  Returns the object file."""
    _, inc = require()
    flags = [*DEVICE_OPTIONS, f"-I{inc}", f"-I{include_dir()}", *_gencode(archs), f"--threads={len(archs)}"]
    return _cached("dev", ".o", source, flags, ["-x", "cu", "-c"], f" for {', '.join(archs)}")


def build_cubin(source: str, arch: str) -> Path:
    """``source`` compiled to a cubin for one architecture (``sm_90``), cached by hash: CuPy
    loads it, cuobjdump reads its SASS."""
    _, inc = require()
    flags = [*DEVICE_OPTIONS, "-lineinfo", f"-I{inc}", f"-I{include_dir()}", f"-arch={arch}"]
    return _cached("cubin", ".cubin", source, flags, ["-x", "cu", "--cubin"], f" for {arch}")


def sass_widths(cubin: Path, kernel: str) -> dict[str, list[int]]:
    """The access widths (bits) of a kernel's global and shared loads and stores in its SASS
    (the whole file disassembled and cached, the kernel picked by its exact name, every
    architecture it holds): ``{"LDG": [128], "STS": [32], ...}``; empty when cuobjdump is absent
    or cannot read the file.
    Not ``cuobjdump -fun``: which names it accepts differs between cuobjdump releases."""
    from threadmap.gpu.sass import parse_sass

    if find_tool("cuobjdump") is None:
        return {}
    try:
        kernels = parse_sass(disassemble(cubin), names={kernel})  # that kernel's lines alone
    except ToolchainError:  # no such file, or one cuobjdump cannot read: no widths, as without it
        return {}
    out: dict[str, set[int]] = {}
    for k in kernels:
        if k.name == kernel:
            for m in k.memory():
                if m.opcode in ("LDGSTS", "LDG", "STG", "LDS", "STS"):
                    out.setdefault(m.opcode, set()).add(m.bits)
    return {op: sorted(v) for op, v in out.items()}


def parse_sass_widths(sass: str) -> dict[str, list[int]]:
    """The widths (bits) of the LDG, STG, LDS, STS and LDGSTS (``cp.async``) instructions of SASS
    text, by opcode; whole opcodes only (``LDGDEPBAR`` and ``LDSM`` are none of them), and not
    the never-executed ones (``@!PT LDS RZ, [RZ]``: padding ptxas puts beside LDGSTS on sm_90).
    Lines are read by :mod:`threadmap.gpu.sass` (with or without their ``/*addr*/``)."""
    import re

    from threadmap.gpu.sass import access_bits, parse_instruction

    out: dict[str, set[int]] = {}
    for line in sass.splitlines():
        ins = parse_instruction(0, re.sub(r"^\s*/\*[0-9a-f]+\*/", "", line).split("/*")[0])
        if ins is not None and ins.guard != "!PT" and ins.opcode in ("LDGSTS", "LDG", "STG", "LDS", "STS"):
            out.setdefault(ins.opcode, set()).add(access_bits(ins.opcode, ins.modifiers))
    return {k: sorted(v) for k, v in out.items()}


#: suffixes compiled from source by :func:`build_user_cubin`; other files are read by cuobjdump
SOURCE_SUFFIXES = (".cu",)


#: ``#include "x.h"`` or ``<x.h>`` (the file's folder is on the include path: both find it there)
_LOCAL_INCLUDE = r'^\s*#\s*include\s*["<]([^">]+)[">]'


def local_headers(path: Path) -> list[Path]:
    """The headers ``path`` includes (``#include "..."`` or ``<...>``) found beside the including
    file or beside ``path`` (``-I<its folder>``), and theirs, in the order met: their
    text is part of a user cubin's cache key, so changing one compiles again."""
    import re

    here = path.resolve().parent
    seen: list[Path] = []
    todo = [path.resolve()]
    while todo:
        cur = todo.pop(0)
        try:
            text = cur.read_text(errors="replace")
        except OSError:
            continue
        for name in re.findall(_LOCAL_INCLUDE, text, flags=re.M):
            for d in (cur.parent, here):
                h = (d / name).resolve()
                if h.is_file():
                    if h not in seen and h != path.resolve():
                        seen.append(h)
                        todo.append(h)
                    break
    return seen


def build_user_cubin(path: Path, arch: str, extra: Sequence[str] = ()) -> Path:
    """A user's ``.cu`` file compiled to a cubin as a kernel author builds it (``nvcc -O3
    -std=c++17 --expt-relaxed-constexpr -arch=ARCH -I<its folder> -I<CUTLASS>``), cached by
    the hash of the file, the local headers it includes (:func:`local_headers`) and the flags.
    Compiler messages name the user's file, not the cached copy nvcc compiled."""
    import re

    _, inc = require()
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ToolchainError(f"{path}: cannot read the kernel source ({e})") from None
    here = path.resolve().parent
    # the headers are keyed, not compiled: nvcc reads them through -I<its folder>
    keyed = source + "".join(f"\0{h}\0{h.read_text(errors='replace')}" for h in local_headers(path))
    flags = [CXX_STD, "-O3", "--expt-relaxed-constexpr", "-w", f"-arch={arch}", f"-I{here}", f"-I{inc}",
             f"-I{include_dir()}", *extra]
    try:
        return _cached("user", ".cubin", source, flags, ["-x", "cu", "--cubin"], f" for {arch}", keyed=keyed)
    except ToolchainError as e:
        copy = re.escape(str(cache_dir() / "user_")) + r"[0-9a-f]{24}\.cu"
        raise ToolchainError(re.sub(copy, lambda _: str(path), str(e))) from None


def disassemble(path: Path) -> str:
    """``cuobjdump -sass`` of a cubin, object or executable (every embedded cubin), cached by
    the hash of the file's bytes."""
    try:
        with path.open("rb") as f:  # in chunks: an executable may be large
            digest = hashlib.file_digest(f, "sha256").hexdigest()[:24]
    except OSError as e:
        raise ToolchainError(f"{path}: cannot read it ({e.strerror or e})") from None
    cached = cache_dir() / f"sass_{digest}.txt"
    if cached.exists():
        return cached.read_text()
    text = _cuobjdump(path)
    tmp = cached.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(cached)
    return text


def _cuobjdump(path: Path) -> str:
    exe = find_tool("cuobjdump")
    if exe is None:
        raise ToolchainError("cuobjdump not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, "
                             "or put the CUDA toolkit's bin on PATH)")
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is not None:  # cuobjdump -sass runs nvdisasm; NVIDIA's wheels ship them apart
        env["NVDISASM_PATH"] = str(Path(nvdisasm).parent)
        env["PATH"] = os.pathsep.join([str(Path(nvdisasm).parent), env.get("PATH", "")])
    try:
        proc = subprocess.run([exe, "-sass", str(path)], capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"cuobjdump ran past 600 s on {path}") from None
    if proc.returncode != 0:
        raise ToolchainError(f"cuobjdump cannot read {path}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def demangle(names: Sequence[str]) -> list[str]:
    """C++ names demangled by ``c++filt`` (binutils); the names unchanged where it is absent."""
    exe = shutil.which("c++filt")
    if exe is None or not names:
        return list(names)
    proc = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60)
    out = proc.stdout.splitlines()
    return out if proc.returncode == 0 and len(out) == len(names) else list(names)
