"""The ``herowatch`` command line."""
