"""Former home of the copy atoms, tiled copies and tiled MMAs, kept so that
``threadmap.layout.tiled`` still imports: the names now live in
:mod:`threadmap.layout.atom.copy_traits`, :mod:`threadmap.layout.atom.copy_atom` and
:mod:`threadmap.layout.atom.mma_atom`."""

from threadmap.layout.atom.copy_atom import *  # noqa: F401,F403
from threadmap.layout.atom.copy_atom import __all__ as _copy_atom_all
from threadmap.layout.atom.copy_traits import *  # noqa: F401,F403
from threadmap.layout.atom.copy_traits import __all__ as _copy_traits_all
from threadmap.layout.atom.mma_atom import *  # noqa: F401,F403
from threadmap.layout.atom.mma_atom import __all__ as _mma_atom_all
from threadmap.layout.atom.tile_ops import make_compact_layout
from threadmap.layout.layout import make_fragment_like

__all__ = [*_copy_atom_all, *_copy_traits_all, *_mma_atom_all, "make_compact_layout",
           "make_fragment_like"]
