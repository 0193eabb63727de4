"""herowatch's Slack app, the door on-call uses from Slack: the Acknowledge / Silence buttons on alert
messages (``clicks``), the ``/herowatch`` command (``commands``: status, ack, silence, report, help, with
its answers in ``status_blocks`` and ``report``), both through the HTTP endpoint (monitor/web/api/slack.py)
or over Socket Mode (``socket_mode``: a websocket herowatch opens to Slack, no inbound port), and the
app manifest that creates the Slack app in one step (``manifest``). Every action goes through
``monitor.delivery.oncall``."""
