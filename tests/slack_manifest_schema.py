"""Slack's app manifest, as its reference documents it (https://api.slack.com/reference/manifests), as a
JSON Schema (draft 7) for the parts herowatch's manifest uses: the required keys, the lengths, the
patterns, no unknown keys, and the rules the reference states in words:

- ``display_information.name`` is required, at most 35 characters; ``description`` at most 140;
  ``long_description`` from 174 to 4000 (the App Settings page refuses a shorter one);
  ``background_color`` a 3- or 6-digit hex colour;
- ``features.bot_user.display_name`` is required, at most 80 characters of a-z, 0-9, ``-``, ``_``, ``.``;
- a slash command has a ``command`` (a leading ``/``, at most 32 characters) and a ``description``
  (at most 2000); ``usage_hint`` at most 1000; its ``url`` is required unless Socket Mode is on;
- ``settings.interactivity.is_enabled`` is required; its ``request_url`` is required when it is enabled
  and Socket Mode is off; request URLs are https;
- ``oauth_config.scopes.bot`` holds at most 255 scopes.

Written for these tests from the reference's tables; not a copy of another project's schema.
"""

from __future__ import annotations

from typing import Any

HTTPS = {"type": "string", "pattern": "^https://[^\\s]+$", "maxLength": 2000}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


SLASH_COMMAND = _object(
    {
        "command": {"type": "string", "pattern": "^/[^\\s]+$", "maxLength": 32},
        "description": {"type": "string", "minLength": 1, "maxLength": 2000},
        "usage_hint": {"type": "string", "maxLength": 1000},
        "should_escape": {"type": "boolean"},
        "url": HTTPS,
    },
    ("command", "description"),
)

SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    **_object(
        {
            "_metadata": _object(
                {"major_version": {"type": "integer"}, "minor_version": {"type": "integer"}}
            ),
            "display_information": _object(
                {
                    "name": {"type": "string", "minLength": 1, "maxLength": 35},
                    "description": {"type": "string", "maxLength": 140},
                    "long_description": {"type": "string", "minLength": 174, "maxLength": 4000},
                    "background_color": {"type": "string", "pattern": "^#([0-9a-fA-F]{3}){1,2}$"},
                },
                ("name",),
            ),
            "features": _object(
                {
                    "bot_user": _object(
                        {
                            "display_name": {"type": "string", "maxLength": 80, "pattern": "^[a-z0-9_.-]+$"},
                            "always_online": {"type": "boolean"},
                        },
                        ("display_name",),
                    ),
                    "slash_commands": {"type": "array", "items": SLASH_COMMAND, "maxItems": 50},
                }
            ),
            "oauth_config": _object(
                {
                    "scopes": _object(
                        {
                            "bot": {
                                "type": "array",
                                "items": {"type": "string"},
                                "maxItems": 255,
                                "uniqueItems": True,
                            }
                        }
                    )
                }
            ),
            "settings": _object(
                {
                    "interactivity": _object(
                        {"is_enabled": {"type": "boolean"}, "request_url": HTTPS}, ("is_enabled",)
                    ),
                    "org_deploy_enabled": {"type": "boolean"},
                    "socket_mode_enabled": {"type": "boolean"},
                    "token_rotation_enabled": {"type": "boolean"},
                }
            ),
        },
        ("display_information",),
    ),
    # without Socket Mode, Slack must be told where to send commands and clicks
    "if": {
        "not": {
            "properties": {"settings": {"properties": {"socket_mode_enabled": {"const": True}}}},
            "required": ["settings"],
        }
    },
    "then": {
        "properties": {
            "features": {"properties": {"slash_commands": {"items": {"required": ["url"]}}}},
            "settings": {
                "properties": {
                    "interactivity": {
                        "if": {"properties": {"is_enabled": {"const": True}}},
                        "then": {"required": ["request_url"]},
                    }
                }
            },
        }
    },
}
