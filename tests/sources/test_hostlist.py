"""A Slurm job's nodes feed the Prometheus queries and the fleet hints (#43): its ``hosts`` label, in
Slurm's host list notation, becomes ``{hosts:hosts}``, a regular expression of each of its hosts, so
that a job's GPUs (dcgm-exporter's ``Hostname``) and hosts (node-exporter's ``instance``) are selected
without a job-to-GPU mapping, and the fleet hints name the job's own nodes."""

from __future__ import annotations

import re

import pytest

from monitor.config.loader import parse_config
from monitor.sources.base import Target
from monitor.sources.hostlist import HostListError, expand
from monitor.sources.prometheus_config import template_values
from monitor.sources.prometheus_fleet import fleet_texts
from monitor.sources.prometheus_templates import TemplateError, render


def test_slurm_host_lists_expand_as_slurm_writes_them():
    assert expand("vm") == ["vm"]
    assert expand("node[01-04,07]") == ["node01", "node02", "node03", "node04", "node07"]
    assert expand("gpu-a[8-10],login1") == ["gpu-a8", "gpu-a9", "gpu-a10", "login1"]
    assert expand("rack[1-2]-n[1-2]") == ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    for bad in ("node[01-", "node[a-b]", "node[4-1]"):
        with pytest.raises(HostListError):
            expand(bad)
    with pytest.raises(HostListError, match="more than"):
        expand("n[1-100000]")


CONFIG = """
watch:
  - name: hero-slurm
    slurm: {jobs: "hero-*"}
    prometheus:
      url: http://127.0.0.1:9
      selectors:
        pod_selector: 'Hostname=~"{hosts:hosts}"'
        node_selector: 'instance=~"({hosts:hosts}):9100"'
      fleet: {}
"""


def test_a_jobs_nodes_select_its_gpus_and_hosts_for_the_fleet():
    watch = parse_config(CONFIG, "t.yaml").watch[0]
    run = "slurm:hw/4242"
    target = Target(
        watch.name, watch.prometheus, {}, {run: {"hosts": "gpu[01-02],big.node"}}, {run: "hero-70b"}
    )
    values = template_values(target, run, "hero-70b")
    fragments = {n: render(t, values) for n, t in watch.prometheus.all_selectors().items()}
    texts = fleet_texts(watch.prometheus, values, fragments)
    sm = texts["fleet:sm_active"]
    assert 'Hostname=~"gpu01|gpu02|big\\\\.node"' in sm, sm
    pattern = re.search(r'Hostname=~"([^"]+)"', sm).group(1).replace("\\\\", "\\")
    assert all(re.fullmatch(pattern, h) for h in ("gpu01", "gpu02", "big.node"))
    assert not any(re.fullmatch(pattern, h) for h in ("gpu03", "bigXnode", "gpu011"))
    assert 'instance=~"(gpu01|gpu02|big\\\\.node):9100"' in texts["fleet:net_rx"]
    # a run without hosts (not yet scheduled), or a list that is not one: its queries say why
    with pytest.raises(TemplateError, match="hosts"):
        render('Hostname=~"{hosts:hosts}"', {"run": "x"})
    with pytest.raises(TemplateError, match="brackets|range"):
        render('Hostname=~"{hosts:hosts}"', {"hosts": "n[1-"})
