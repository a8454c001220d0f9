"""CUTLASS 2.x thread maps, with the names of the C++ headers."""

from threadmap.cutlass.pitch_linear_thread_map import (
    THREAD_MAPS,
    PitchLinear2DThreadTileStripminedThreadMap,
    PitchLinearShape,
    PitchLinearStridedWarpRakedThreadMap,
    PitchLinearStripminedThreadMap,
    PitchLinearThreadMap,
    PitchLinearTilePolicyStripminedThreadContiguous,
    PitchLinearTilePolicyStripminedThreadStrided,
    PitchLinearWarpRakedThreadMap,
    PitchLinearWarpStripedThreadMap,
    TransposePitchLinearThreadMap,
    TransposePitchLinearThreadMap2DThreadTile,
    TransposePitchLinearThreadMapSimt,
)

__all__ = [
    "THREAD_MAPS",
    "PitchLinear2DThreadTileStripminedThreadMap",
    "PitchLinearShape",
    "PitchLinearStridedWarpRakedThreadMap",
    "PitchLinearStripminedThreadMap",
    "PitchLinearThreadMap",
    "PitchLinearTilePolicyStripminedThreadContiguous",
    "PitchLinearTilePolicyStripminedThreadStrided",
    "PitchLinearWarpRakedThreadMap",
    "PitchLinearWarpStripedThreadMap",
    "TransposePitchLinearThreadMap",
    "TransposePitchLinearThreadMap2DThreadTile",
    "TransposePitchLinearThreadMapSimt",
]
