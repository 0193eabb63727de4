"""The fleet of a run: one series per GPU or per host, instead of one aggregate per run.

- ``frame``: what a source reads of a fleet metric in one poll (``FleetFrame``), checked at the boundary;
- ``units``: how a fleet metric's values are written for people;
- ``score``: the robust comparison of each member with the fleet (distance from the median in MADs);
- ``hints``: the odd members named on an alert (or the verdict that none stands out);
- ``straggler``: per poll, which member drifted away from the fleet compared with its own past.

All of it is pure: data in, data out. Storage is ``monitor.storage.raster``; the engine glue is
``monitor.engine.fleet``.
"""
