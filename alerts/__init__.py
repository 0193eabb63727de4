"""herowatch's alerting library: alert model, lifecycle, routing and delivery.

It imports nothing from ``monitor``: it knows about labels, states and notifications,
not about training runs or where their data comes from.
"""
