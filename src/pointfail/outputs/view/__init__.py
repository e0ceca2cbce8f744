"""``pointfail view``: a per-sample failure browser for a study, as a static site.

Three pages, all working from ``file://`` (no server, no network) and from any static host:

* **study page** (``index.html``): the failure-profile chart (each bar segment links to exactly its
  samples), the headline table, the failure composition and judge agreement, all from the same
  computation as the committed tables;
* **sample list** (``list.html``): filters by model, benchmark, outcome, failure mode, judge status,
  category, language, target-size quartile and "models disagree", with counts that follow the other
  filters; sorting by miss distance; paging; keyboard navigation; the filter state in the URL hash;
* **sample page** (``sample.html``): the annotated image (target tinted, every parsed point and box,
  the primary point marked, the coordinate frame named), the instruction as sent, the raw reply with
  the parsed span highlighted, parse flags, outcome and geometry, every judge attempt with its raw
  reply, the oracle's detail, the same sample under every model, previous/next within the filter.

Public API::

    build_site(study_dir, out_dir=None, *, image_roots=(), with_images=True, log=None) -> SiteResult
    serve(site_dir, *, port=0, open_browser=True) -> None

Annotations follow ``pointfail.running.judges.render`` (the judge's drawing rules); the segment colours,
patterns and labels come from ``pointfail.outputs.view.style`` and are shared with ``pointfail report``.
"""

from __future__ import annotations

from pointfail.outputs.view.serve import serve
from pointfail.outputs.view.site import SiteResult, build_site, default_out_dir

__all__ = ["SiteResult", "build_site", "default_out_dir", "serve"]
