"""The wire shapes of STATE.md and API.md as typed msgspec definitions; no Django."""
