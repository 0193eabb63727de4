"""The weekly hero-run report: where the GPU-hours went, which incidents cost them, which rules cried wolf.

``build.build_report`` is a pure function of what storage holds and a time (no clock of its own);
``render_md``, ``render_html`` and the JSON of ``model.Report`` show it; ``schedule`` sends it.
"""
