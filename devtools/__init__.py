"""Development tools: processes that `make run`, the tests and the benchmarks start beside the product.

Outside the product: nothing of `ladder`, `ladder_client` or `omniroute` imports them, and the wheel
built from pyproject.toml leaves them out (import-linter's `fakeupstream-outside` contract and
tests/test_wheel.py keep it so).
"""
