"""The dashboard in a real browser (headless Chromium): each view renders the figures of a
snapshot, a job page shows its diagnosis, HTML in a name stays text, and the time slider of a
simulation run moves the views. One browser for the module; skipped without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from dashboard_cluster import HTML_NAME, write
from dashboard_serving import serving

from pyvolcano.dashboard.run_views import ReportSource
from pyvolcano.dashboard.sources import SnapshotSource
from pyvolcano.runtime.registry import default_registry


@pytest.fixture(scope="module")
def snapshot_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = write(tmp_path_factory.mktemp("browser") / "cluster.yaml")
    with serving(SnapshotSource(path, default_registry())) as url:
        yield url


def _open(page: Any, url: str, view: str) -> None:
    page.goto(f"{url}/#/{view}")
    _wait_view(page, view.split("/")[0])


def _wait_view(page: Any, view: str) -> None:
    # Selectors, not wait_for_function: the page's CSP forbids the eval that one needs.
    page.wait_for_selector(f'body[data-view="{view}"]', state="attached")


def test_the_queues_view_shows_allocated_and_deserved_gpus(page: Any, snapshot_url: str) -> None:
    _open(page, snapshot_url, "queues")
    gpu = page.locator('tr[data-queue="train"] [data-resource="nvidia.com/gpu"]')
    assert gpu.locator("span.allocated").text_content() == "16"
    assert gpu.locator("span.deserved").text_content() == "28"
    assert gpu.locator("svg.bar rect.alloc").count() == 1
    assert page.locator('tr[data-queue="infer"] td.running').text_content() == "1"


def test_the_jobs_view_sorts_and_filters(page: Any, snapshot_url: str) -> None:
    _open(page, snapshot_url, "jobs")
    assert page.locator("table.jobs tbody tr").count() == 4
    page.click('th[data-sort="name"]')
    names = page.locator("table.jobs tbody tr td:nth-child(3)").all_text_contents()
    assert names == sorted(names)
    page.click('th[data-sort="name"]')
    assert page.locator("table.jobs tbody tr td:nth-child(3)").all_text_contents() == sorted(names, reverse=True)
    page.fill("#job-filter", "big")
    assert page.locator("table.jobs tbody tr").count() == 1
    assert page.locator("table.jobs tbody tr").get_attribute("data-key") == "train/big"
    assert page.locator("table.jobs tbody tr .reason").text_content() == "Queue.OverDeserved"


def test_a_job_page_shows_its_diagnosis(page: Any, snapshot_url: str) -> None:
    _open(page, snapshot_url, "job/train/big")
    assert page.locator('dd[data-field="reason"]').text_content() == "Queue.OverDeserved"
    assert "deserved share" in page.locator('dd[data-field="hint"]').text_content()
    assert page.locator('table.figures tr[data-resource="nvidia.com/gpu"] td.short').text_content() == "12"
    assert "would not help" in page.locator("#preemption").text_content()
    assert page.locator("#job-view section:has(h2:text('Events')) tbody tr").count() == 1


def test_a_name_with_html_in_it_is_shown_as_text(page: Any, snapshot_url: str) -> None:
    _open(page, snapshot_url, "jobs")
    link = page.get_by_role("link", name=HTML_NAME)
    assert link.text_content() == HTML_NAME
    assert page.locator("main img").count() == 0
    link.click()
    _wait_view(page, "job")
    page.wait_for_selector(".job-name")
    assert page.locator(".job-name").text_content() == HTML_NAME
    _open(page, snapshot_url, "job/train/big")  # the Event's message carries the same markup
    assert HTML_NAME in page.locator("#job-view td.message").text_content()
    assert page.locator("img").count() == 0


def test_the_nodes_view_is_a_gpu_map_by_rack(page: Any, snapshot_url: str) -> None:
    _open(page, snapshot_url, "nodes")
    assert page.locator("section.group h2").all_text_contents() == ["rack-a ‹ spine tier 1", "rack-b ‹ spine tier 1"]
    assert page.locator('[data-node="g3"] .gpu-figure').text_content() == "3/8 GPU"
    assert page.locator('[data-node="g3"] g.gpu').count() == 8
    assert page.locator('[data-node="g3"] rect.gpu-used').count() == 3
    assert page.locator("#gpu-allocated").text_content() == "19 of 32"


@pytest.fixture(scope="module")
def report_url(example_run: tuple[Path, dict]) -> Iterator[str]:
    with serving(ReportSource(example_run[0])) as url:
        yield url


def _slide(page: Any, t: float) -> None:
    before = page.evaluate("document.body.dataset.rendered")
    page.evaluate("(t) => { const s = document.getElementById('time'); s.value = String(t); "
                  "s.dispatchEvent(new Event('change')); }", t)
    page.wait_for_selector(f'body:not([data-rendered="{before}"])', state="attached")


def test_the_time_slider_moves_the_views_through_the_run(page: Any, report_url: str) -> None:
    _open(page, report_url, "timeline")
    assert page.locator("#timeline-view svg.chart").count() == 3
    page.click("#nav-jobs")
    _wait_view(page, "jobs")
    assert page.locator("table.jobs tbody tr").count() == 3  # the busiest moment (61 s): three jobs submitted
    _slide(page, 700)
    assert page.locator("table.jobs tbody tr").count() == 5  # the end of the run: all five jobs
    _slide(page, 50)
    keys = {r.get_attribute("data-key") for r in page.locator("table.jobs tbody tr").all()}
    assert keys == {"default/frame-render", "default/stencil-mpi"}
    assert page.locator('tr[data-key="default/stencil-mpi"] td.phase').text_content() == "Running"
    page.click("#nav-nodes")
    _wait_view(page, "nodes")
    _slide(page, 100)
    assert page.locator('[data-node="gpu-2"] .gpu-figure').text_content() == "2/4 GPU"
    _slide(page, 700)
    assert page.locator('[data-node="gpu-2"] .gpu-figure').text_content() == "0/4 GPU"


def test_a_job_page_lists_the_claims_and_pvs_of_a_volume_diagnosis(page: Any, tmp_path: Path) -> None:
    import yaml

    from builders import claims, hostnode, local_pv, pod, podgroup, pvc, queue, storage_class

    docs = [queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"), local_pv("small", "n1", size="1Gi"),
            pvc("data"), podgroup("g"), pod("p", "g", volumes=claims("data"))]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    with serving(SnapshotSource(path, default_registry())) as url:
        _open(page, url, "job/ns/g")
        assert page.locator('dd[data-field="reason"]').text_content() == "Volume.NoMatchingPV"
        assert page.locator('#claims tr[data-claim="ns/data"] td').nth(2).text_content() == "WaitForFirstConsumer"
        row = page.locator('#claims tr[data-pv="small"] td')
        assert row.nth(4).text_content() == "on n1"
        assert row.nth(5).text_content() == "too small (1Gi)"


def _time_in_url(page: Any) -> float:
    return float(parse_qs(urlparse(page.url).query)["t"][0])


def _job_keys(page: Any) -> set[str | None]:
    return {r.get_attribute("data-key") for r in page.locator("table.jobs tbody tr").all()}


def test_a_run_opens_at_its_busiest_moment_and_puts_it_in_the_url(page: Any, report_url: str,
                                                                  example_run: tuple[Path, dict]) -> None:
    busiest = ReportSource(example_run[0]).busiest
    _open(page, report_url, "nodes")
    assert _time_in_url(page) == busiest.t
    assert page.locator("#gpu-allocated").text_content().startswith(f"{busiest.value:g} of ")
    assert page.locator("#time").input_value() == f"{busiest.t:g}"
    _slide(page, 700)  # the end of the run: the cluster is empty
    assert page.locator("#gpu-allocated").text_content().startswith("0 of ")
    page.click("#busiest")
    page.wait_for_selector(f'#gpu-allocated:text-matches("^{busiest.value:g} of ")')
    assert _time_in_url(page) == busiest.t


def test_the_page_honours_t_from_the_url_and_a_reload_keeps_it(page: Any, report_url: str) -> None:
    page.goto(f"{report_url}/?t=50#/jobs")
    _wait_view(page, "jobs")
    assert _job_keys(page) == {"default/frame-render", "default/stencil-mpi"}
    assert page.locator("#time").input_value() == "50"
    page.reload()
    _wait_view(page, "jobs")
    assert _job_keys(page) == {"default/frame-render", "default/stencil-mpi"}
    assert _time_in_url(page) == 50


def test_a_t_out_of_the_run_is_clamped_and_one_that_is_no_number_opens_the_busiest_moment(
        page: Any, report_url: str, example_run: tuple[Path, dict]) -> None:
    source = ReportSource(example_run[0])
    page.goto(f"{report_url}/?t=1e9#/jobs")
    _wait_view(page, "jobs")
    assert _time_in_url(page) == source.end and len(_job_keys(page)) == 5
    page.goto(f"{report_url}/?t=soon#/jobs")
    _wait_view(page, "jobs")
    assert _time_in_url(page) == source.busiest.t


def test_moving_the_slider_replaces_t_in_the_url_without_adding_history(page: Any, report_url: str) -> None:
    page.goto(f"{report_url}/?t=50#/nodes")
    _wait_view(page, "nodes")
    depth = page.evaluate("history.length")
    _slide(page, 100)
    assert _time_in_url(page) == 100 and page.evaluate("history.length") == depth
    page.reload()
    _wait_view(page, "nodes")
    assert page.locator('[data-node="gpu-2"] .gpu-figure').text_content() == "2/4 GPU"
    page.click("#nav-jobs")  # moving between views keeps the instant
    _wait_view(page, "jobs")
    assert _time_in_url(page) == 100


def test_reservations_in_the_view_models_are_drawn_on_the_gpu_map_and_the_job_page(page: Any, report_url: str) -> None:
    def with_reservation(route: Any) -> None:
        response = route.fetch()
        body = response.json()
        if "/api/nodes" in route.request.url:
            body["reservations"] = [{"job": "default/big", "nodes": ["gpu-2"], "start": "2026-01-01T01:00:00Z"}]
        else:
            body["reservation"] = {"nodes": ["gpu-1", "gpu-2"], "start": "2026-01-01T01:00:00Z", "reason": None}
        route.fulfill(response=response, json=body)

    page.route("**/api/nodes?*", with_reservation)
    page.route("**/api/job?*", with_reservation)
    _open(page, report_url, "nodes")
    assert page.locator('[data-node="gpu-2"]').get_attribute("data-reserved-for") == "default/big"
    assert page.locator('[data-node="gpu-1"]').get_attribute("data-reserved-for") is None
    assert "reserves 1 node(s)" in page.locator('#reservations li[data-job="default/big"]').text_content()
    _open(page, report_url, "job/default/frame-render")
    assert page.locator('#reservation dd[data-field="nodes"]').text_content() == "gpu-1, gpu-2"


def test_a_job_page_lists_the_resource_claims_and_devices_of_a_dra_diagnosis(page: Any, tmp_path: Path) -> None:
    import yaml

    from builders import device_class, gpu_slice, hostnode, pod, podgroup, queue, resource_claim, with_claims

    docs = [queue("q"), hostnode("n1"), hostnode("n2"), device_class(), gpu_slice("n1", 2), gpu_slice("n2", 1),
            resource_claim("four", count=4), podgroup("g"), with_claims(pod("p", "g"), "four")]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    with serving(SnapshotSource(path, default_registry())) as url:
        _open(page, url, "job/ns/g")
        assert page.locator('dd[data-field="reason"]').text_content() == "NodeFit.NoDevices"
        claim = page.locator('#device-claims tr[data-device-claim="ns/four"] td')
        assert claim.nth(1).text_content() == "not allocated"
        row = page.locator('#device-claims tr[data-request="gpus"] td')
        assert [row.nth(i).text_content() for i in range(1, 6)] == ["gpu", "4", "3", "3", "n1 (2)"]
