"""The Slack stand-in's former module: it is now the package tests/standins/slack/ (split by purpose).
This name only re-exports it, for branches written before the split; import ``tests.standins.slack``."""

from tests.standins.slack import (  # noqa: F401
    ALL_SCOPES,
    DEFAULT_TOKEN,
    MEMBERSHIP,
    SCOPE_OF,
    UPLOAD,
    Call,
    Fault,
    SlackError,
    SlackStandin,
    StoredMessage,
    Upload,
)
