"""The notification pipeline between the engine and the notifiers, and on-call's actions on alerts."""
