"""Render reports to HTML with Jinja2 (autoescaped), and to PDF where a converter exists.

PDF is optional: headless Chromium (``--print-to-pdf``) when it is installed, else WeasyPrint
when importable, else none and the caller says so. The HTML is self-contained (inline CSS and
SVG), so it prints the same from any browser.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from medmon.moments import display_time
from medmon.monitor.governance.current import CURRENT_SCORE_NAME
from medmon.monitor.governance.reports.committee import CommitteeReport
from medmon.monitor.governance.reports.plan_document import PlanDocument
from medmon.monitor.plan.privacy import scrub_plan_secrets

CHROMIUM_CANDIDATES = (
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "chromium",
    "chromium-browser",
    "google-chrome",
)


def _f3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _minutes(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f} min" if value < 120 else f"{value / 60:.1f} h"


def decision(passed: bool | None, conclusive: bool | None) -> Markup:
    """Pass, fail or no data, saying when the interval does not yet support the call."""
    if passed is None:
        return Markup('<span class="undecided">no data</span>')
    word, css = ("pass", "pass") if passed else ("fail", "fail")
    tail = "" if conclusive else ' <span class="undecided">(interval straddles a threshold)</span>'
    return Markup(f'<span class="{css}">{word}</span>{tail}')


def environment(tz: str = "UTC") -> Environment:
    """The report templates' environment; its ``dt`` filter writes moments in the plan's display zone."""
    env = Environment(
        loader=PackageLoader("medmon.monitor.governance.reports", "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(f3=_f3, usd=_usd, dt=lambda v: display_time(v, tz, missing="-"), minutes=_minutes)
    env.globals["decision"] = decision
    return env


def render_committee(report: CommitteeReport) -> str:
    """The committee report as one self-contained HTML page."""
    template = environment(report.plan.display_timezone).get_template("committee.html.j2")
    passing = sum(1 for t in report.tasks if t.passed)
    html = template.render(
        r=report,
        plan=report.plan,
        generated_at=report.generated_at,
        passing=passing,
        production_cost=sum(c.cost_usd for c in report.costs),
        simulated=report.plan.deployment.model.startswith("medmon-simulator"),
        current_name=CURRENT_SCORE_NAME,
    )
    return scrub_plan_secrets(html, report.plan)  # a secret quoted in any stored text never reaches paper


def render_plan_document(document: PlanDocument) -> str:
    """The monitoring plan document as one self-contained HTML page."""
    template = environment(document.plan.display_timezone).get_template("plan_document.html.j2")
    html = template.render(
        d=document,
        plan=document.plan,
        generated_at=document.generated_at,
        simulated=document.plan.deployment.model.startswith("medmon-simulator"),
    )
    return scrub_plan_secrets(html, document.plan)


def find_chromium() -> str | None:
    for candidate in CHROMIUM_CANDIDATES:
        found = (
            shutil.which(candidate)
            if not candidate.startswith("/")
            else (candidate if Path(candidate).exists() else None)
        )
        if found:
            return found
    return None


def to_pdf(html_path: Path, pdf_path: Path, *, timeout_s: float = 120.0) -> Path | None:
    """Print the HTML to PDF with the first converter available; None when there is none."""
    chromium = find_chromium()
    if chromium is not None:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf_path}",
            html_path.resolve().as_uri(),
        ]
        done = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False)
        if done.returncode == 0 and pdf_path.exists() and pdf_path.stat().st_size > 0:
            return pdf_path
    if importlib.util.find_spec("weasyprint") is not None:
        import weasyprint  # optional; only imported when installed

        weasyprint.HTML(filename=str(html_path)).write_pdf(str(pdf_path))
        return pdf_path
    return None


def render_safety_event(document: dict[str, Any], generated_at: datetime) -> str:
    """A safety event (``medmon.monitor.governance.safety.event_document``) as one printable HTML page."""
    template = environment().get_template("safety_event.html.j2")
    return template.render(
        e=document,
        generated_at=generated_at,
        simulated=str(document["evidence"]["model"]["requested"]).startswith("medmon-simulator"),
    )
