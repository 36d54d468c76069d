"""Reads: rows → the domain's values and the pages' figures. A read never writes."""
