"""The package version, importable from any room without importing the package."""

__version__ = "0.1.0"
