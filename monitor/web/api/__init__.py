"""The HTTP status API (FastAPI)."""
