"""The Slack stand-in's file upload methods: ``files.getUploadURLExternal`` (an absolute loopback
``upload_url``), the upload itself (``receive_upload``, called for ``POST /upload/<file_id>``) and
``files.completeUploadExternal`` (shares the files as a message, in a thread with ``thread_ts``).

A mixin of ``SlackStandin`` (tests/standins/slack/server.py), next to ``MessageMethods``."""

from __future__ import annotations

import itertools
from typing import Any

from tests.standins.slack.checks import json_field
from tests.standins.slack.messages import MessageMethods
from tests.standins.slack.records import SlackError, StoredMessage, Upload


class FileMethods(MessageMethods):
    """Built on ``MessageMethods``: a shared file is a message, stored and threaded like the others."""

    # the state, set up by SlackStandin.__init__ (``url`` is its property)
    url: str
    uploads: dict[str, Upload]
    _file_ids: itertools.count[int]

    def _m_files_getUploadURLExternal(self, body: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        try:
            filename, length = str(body["filename"]), int(body["length"])
        except (KeyError, ValueError):
            raise SlackError("invalid_arguments") from None
        file_id = f"F{next(self._file_ids):08d}"
        self.uploads[file_id] = Upload(file_id, filename, length, body.get("alt_txt"))
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, body: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        files = json_field(body.get("files"))
        if not isinstance(files, list) or not files:
            raise SlackError("invalid_arguments")
        channel = self._channel(body, "channel_id") if body.get("channel_id") else None
        parent = None
        if channel and body.get("thread_ts"):
            parent = self._messages.get((channel, str(body["thread_ts"])))
            if parent is None:
                raise SlackError("thread_not_found")
        shared = []
        for f in files:
            up = self.uploads.get(str(f.get("id")))
            if up is None or up.data is None:
                raise SlackError("file_not_found")
            up.title, up.channel, up.thread_ts = f.get("title") or up.filename, channel, body.get("thread_ts")
            shared.append(
                {
                    "id": up.file_id,
                    "name": up.filename,
                    "title": up.title,
                    "size": len(up.data),
                    "mimetype": "image/png" if up.filename.endswith(".png") else "application/octet-stream",
                }
            )
        if channel:
            msg = StoredMessage(
                channel,
                self._next_ts(),
                str(body.get("initial_comment") or ""),
                None,
                None,
                self.bot_user,
                thread_ts=parent.ts if parent else None,
                files=shared,
            )
            self._store(msg, parent)
        return {"files": shared}

    def receive_upload(self, file_id: str, data: bytes) -> None:
        with self._lock:
            up = self.uploads.get(file_id)
            if up is None:
                raise KeyError(file_id)
            up.data = data
