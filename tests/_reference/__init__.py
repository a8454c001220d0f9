"""The check enumerations and the simulator as they were before the per-block rewrite
(commit 6837e95), kept verbatim (only their imports point here and nothing is registered) as
the oracle of ``tests/test_enumeration_differential.py``.  Known difference: the old dataflow
routed the values of the last real thread of a padded CTA through a padding row (so dropped
them); the differential tests compare padded kernels with the pure-Python definition instead.
"""
