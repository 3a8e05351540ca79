"""Placeholder: filled in by its author."""

__all__: list[str] = []
