"""``smem_ptr_flag_bits<B>`` (``cute/pointer_flagged.hpp``): the offset of the GMMA shared-memory
layout atoms, an integer 0 of a distinct type, as in C++."""

from __future__ import annotations

from threadmap.errors import LayoutError

__all__ = ["SmemPtrFlag"]


class SmemPtrFlag(int):
    """``smem_ptr_flag_bits<B>``: an unset shared-memory pointer of B-bit elements, used as
    the offset of the GMMA layout atoms.  It derives from ``Int<0>`` in C++: it is the
    integer 0 here, printed as ``smem_ptr[Bb](unset)``."""

    bits: int

    def __new__(cls, bits: int = 1) -> SmemPtrFlag:
        if not isinstance(bits, int) or isinstance(bits, bool) or not 0 < bits <= 1 << 20:
            raise LayoutError(f"smem_ptr_flag_bits<{bits!r}>: the element width must be a "
                              "positive integer")
        obj = super().__new__(cls, 0)
        obj.bits = int(bits)
        return obj

    def __str__(self) -> str:
        return f"smem_ptr[{self.bits}b](unset)"

    def __repr__(self) -> str:
        return f"SmemPtrFlag({self.bits})"

    def __eq__(self, o: object) -> bool:
        if isinstance(o, SmemPtrFlag):
            return o.bits == self.bits
        return int.__eq__(self, o)  # type: ignore[no-any-return]

    __hash__ = int.__hash__
