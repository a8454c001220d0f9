"""Drawings of access tables: terminal grids (:mod:`threadmap.render.text`) and SVG
(:mod:`threadmap.render.svg`), for ``threadmap show``."""

from threadmap.render.common import (
    CUTE_TV_COLORS,
    BankInstruction,
    RenderError,
    SectorInstruction,
    TileView,
    bank_instruction,
    sector_instruction,
    tile_view,
    warp_instructions,
)
from threadmap.render.gmma import gmma_svg, gmma_text
from threadmap.render.pipeline import pipeline_svg, pipeline_text
from threadmap.render.svg import heatmap_svg, page_svg, tile_svg
from threadmap.render.text import access_map, bank_map, sector_map, tile_grid

__all__ = [
    "pipeline_svg", "pipeline_text", "gmma_svg", "gmma_text",
    "CUTE_TV_COLORS",
    "BankInstruction",
    "RenderError",
    "SectorInstruction",
    "TileView",
    "access_map",
    "bank_instruction",
    "bank_map",
    "heatmap_svg",
    "page_svg",
    "sector_instruction",
    "sector_map",
    "tile_grid",
    "tile_svg",
    "tile_view",
    "warp_instructions",
]
