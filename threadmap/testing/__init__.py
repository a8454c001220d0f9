"""threadmap in your own test suite: hypothesis strategies for CuTe and CUTLASS objects
(:mod:`threadmap.testing.strategies`) and assertion helpers whose failures read like the
command line's report (:mod:`threadmap.testing.assertions`).

The strategies need hypothesis (``pip install 'threadmap[testing]'``); the assertions need
nothing beyond threadmap.
"""
