"""The wire shapes, each declared once as a typed msgspec definition (no Django): the state file of
STATE.md (state/) and the API bodies of API.md (api.py)."""
