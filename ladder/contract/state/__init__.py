"""The offline state file of STATE.md, declared once: its shapes (`shapes`), decoding with validation
(`decode`), msgspec's errors in STATE.md's words (`errors`), and writing it back (`encode`).

No Django: the offline resolver, the state import and the gateway share it.
"""
