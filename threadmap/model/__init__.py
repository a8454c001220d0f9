"""spec -> model: a loaded spec bound to a size environment (tensors, partitions, stages)."""

from threadmap.model.kernel import (
    CopyModel,
    Expectation,
    KernelModel,
    SideModel,
    StageModel,
    TensorModel,
    build_model,
)
from threadmap.model.partition import LocalPartition

__all__ = ["CopyModel", "Expectation", "KernelModel", "LocalPartition", "SideModel", "StageModel",
           "TensorModel", "build_model"]
