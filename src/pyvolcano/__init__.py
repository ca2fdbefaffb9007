"""pyvolcano: a Volcano-compatible batch scheduler for Kubernetes, in Python."""

__version__ = "0.1.0"
__all__ = ["__version__"]
