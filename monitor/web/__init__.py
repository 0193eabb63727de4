"""The HTTP side: the status API and the on-call dashboard, assembled into one app by ``web.app``."""
